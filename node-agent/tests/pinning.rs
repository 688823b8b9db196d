//! Pinning for real: a child process (this test binary, re-run as a workload) starts
//! named threads; the pinner sets their affinity; /proc shows the result. Then drift is
//! provoked and detected, and a restarted workload is re-pinned.

use hardware_profiles::CpuSet;
use node_agent::pinning::{Pinner, PoolPlan, thread_ids, thread_state};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

const CHILD_ENV: &str = "NODE_AGENT_PINNING_WORKLOAD";

/// The workload: threads named like the replica's pools, alive until stdin closes.
#[test]
#[ignore = "helper: run by pinning_follows_profile_sets as a child process"]
fn pinning_workload() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let names = ["consensus-0", "consensus-1", "execution-0", "unrelated"];
    // std names a thread from inside it, once it runs: wait until every one has started.
    let started = std::sync::Arc::new(std::sync::Barrier::new(names.len() + 1));
    for name in names {
        let started = started.clone();
        std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                started.wait();
                // Wake often so the scheduler moves the thread onto its new CPUs.
                loop {
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
            .unwrap();
    }
    started.wait();
    println!("ready");
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    std::process::exit(0);
}

struct Workload {
    child: Child,
    _stdin: ChildStdin,
}

impl Workload {
    fn start() -> Workload {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "pinning_workload",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "workload ended early"
            );
            // libtest may print "test pinning_workload ... " on the same line.
            if line.trim_end().ends_with("ready") {
                break;
            }
        }
        Workload {
            child,
            _stdin: stdin,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// (tid, allowed CPUs) of the workload's thread with this name.
fn thread(pid: u32, name: &str) -> (u32, CpuSet) {
    let proc_root = Path::new("/proc");
    let mut seen = Vec::new();
    for tid in thread_ids(proc_root, pid).unwrap() {
        let s = thread_state(proc_root, pid, tid).unwrap();
        if s.name == name {
            return (tid, s.allowed);
        }
        seen.push(s.name);
    }
    panic!("no thread {name} in {pid}: {seen:?}");
}

#[test]
fn pinning_follows_profile_sets() {
    let online: CpuSet = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let cpus: Vec<u32> = online.iter().collect();
    // CI has 2 CPUs: consensus on {first}, execution on {second}.
    let first = cpus[0];
    let second = *cpus.get(1).unwrap_or(&first);
    let consensus = CpuSet::from_iter([first]);
    let execution = CpuSet::from_iter([second]);
    let pools = vec![
        PoolPlan::new("consensus", consensus.clone(), &["^consensus-".to_string()]).unwrap(),
        PoolPlan::new("execution", execution.clone(), &["^execution-".to_string()]).unwrap(),
    ];
    let mut pinner = Pinner::new(pools, Path::new("/proc"), None);

    let w = Workload::start();
    let before = thread(w.pid(), "unrelated").1;
    let status = pinner.sync(w.pid()).clone();
    assert_eq!(status.replica_pid, Some(w.pid()));
    assert_eq!(status.errors_total, 0, "{:?}", status.last_error);
    assert_eq!(status.pools[0].threads, 2);
    assert_eq!(status.pools[1].threads, 1);
    assert_eq!(status.pools[0].drifted_threads, 0);
    // Read back from /proc: each pool's threads on its set, the others untouched.
    assert_eq!(thread(w.pid(), "consensus-0").1, consensus);
    assert_eq!(thread(w.pid(), "consensus-1").1, consensus);
    assert_eq!(thread(w.pid(), "execution-0").1, execution);
    assert_eq!(thread(w.pid(), "unrelated").1, before);
    // And through the kernel's own call, not only /proc's text.
    let (tid, _) = thread(w.pid(), "execution-0");
    let got = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(tid as i32)).unwrap();
    for cpu in online.iter() {
        assert_eq!(
            got.is_set(cpu as usize).unwrap(),
            cpu == second,
            "cpu {cpu}"
        );
    }

    // Let the threads run on their new CPUs, then a second pass finds no drift.
    std::thread::sleep(Duration::from_millis(100));
    let status = pinner.sync(w.pid()).clone();
    assert_eq!(status.pools[0].drifted_threads, 0, "{status:?}");
    assert_eq!(status.pools[1].drifted_threads, 0, "{status:?}");

    // Someone widens a pinned thread's affinity: reported as drift, then corrected.
    if online.len() > 1 {
        let (tid, _) = thread(w.pid(), "consensus-1");
        node_agent::pinning::set_thread_affinity(tid, &online).unwrap();
        assert_eq!(thread(w.pid(), "consensus-1").1, online);
        let status = pinner.sync(w.pid()).clone();
        assert_eq!(status.pools[0].drifted_threads, 1, "{status:?}");
        assert_eq!(thread(w.pid(), "consensus-1").1, consensus);
    }

    // The replica restarts: the new process is found and pinned again.
    drop(w);
    let w2 = Workload::start();
    let status = pinner.sync(w2.pid()).clone();
    assert_eq!(status.reapplied_total, 1);
    assert_eq!(status.pools[0].threads, 2);
    assert_eq!(thread(w2.pid(), "consensus-0").1, consensus);
    assert_eq!(thread(w2.pid(), "execution-0").1, execution);

    // A pid that does not exist: inactive with a reason, counted as an error.
    drop(w2);
    let status = pinner.sync(u32::MAX - 1).clone();
    assert!(status.inactive_reason.is_some());
    assert!(status.errors_total >= 1);
}
