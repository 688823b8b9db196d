//! Places the replica's thread pools on the profile's CPU sets. Two layers:
//!
//! * the slice's `AllowedCPUs=` bounds the whole replica. The agent does not set it: it has
//!   no access to systemd's bus. `sovereign-replica-cpus.service` (root, oneshot, after the
//!   agent reported READY=1) runs `node-agent set-replica-cpus`, which reads the runtime
//!   configuration the agent wrote and calls `systemctl set-property` once, with a timeout.
//!   The agent reads the slice's effective `cpuset.cpus` from the cgroup tree and reports a
//!   difference from the profile as a pinning error;
//! * per-thread affinity (`sched_setaffinity`, CAP_SYS_NICE) puts each pool's threads,
//!   recognised by name, on their own set. Re-applied when the replica restarts; drift is
//!   reported.

use crate::snapshot::{PinningStatus, PoolPinning};
use hardware_profiles::cpulist::CpuSet;
use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Why a pinning step failed.
#[derive(Debug, thiserror::Error)]
pub enum PinningError {
    /// A file of /proc or of the cgroup tree could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The read's error.
        source: std::io::Error,
    },
    /// A /proc file did not have the expected form.
    #[error("{path}: cannot parse: {detail}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What was wrong with it.
        detail: String,
    },
    /// `sched_setaffinity` refused a thread's CPU set.
    #[error("sched_setaffinity(tid {tid}, {cpus}): {source}")]
    Affinity {
        /// The thread.
        tid: u32,
        /// The CPU set, as a list.
        cpus: String,
        /// The system call's error.
        source: nix::errno::Errno,
    },
    /// `systemctl set-property` did not set the slice's `AllowedCPUs=`.
    #[error("systemctl set-property {slice} AllowedCPUs={cpus}: {detail}")]
    Slice {
        /// The slice unit.
        slice: String,
        /// The CPU set, as a list.
        cpus: String,
        /// Why it failed: systemctl's status and stderr, or a timeout.
        detail: String,
    },
    /// The slice's effective CPU set is not the union of the pools' sets.
    #[error("{slice}: AllowedCPUs is {actual:?} ({path}), the profile's pools need {expected}")]
    SliceMismatch {
        /// The slice unit.
        slice: String,
        /// The slice's `cpuset.cpus` file.
        path: PathBuf,
        /// What the file holds.
        actual: String,
        /// The union of the pools' CPU sets, as a list.
        expected: String,
    },
    /// A pool's thread-name pattern is not a valid regular expression.
    #[error("pool {pool}: pattern {pattern:?}: {source}")]
    Pattern {
        /// The pool.
        pool: String,
        /// The pattern.
        pattern: String,
        /// The regex compiler's error.
        source: regex::Error,
    },
}

/// One pool: its CPU set (from the profile) and the thread names that belong to it.
#[derive(Debug, Clone)]
pub struct PoolPlan {
    pub(crate) pool: String,
    pub(crate) cpus: CpuSet,
    pub(crate) patterns: Vec<Regex>,
}

impl PoolPlan {
    /// The plan of pool `pool`: its CPU set and its thread-name patterns, compiled. Err
    /// when a pattern is not a valid regular expression.
    pub fn new(pool: &str, cpus: CpuSet, patterns: &[String]) -> Result<PoolPlan, PinningError> {
        let patterns = patterns
            .iter()
            .map(|p| {
                Regex::new(p).map_err(|source| PinningError::Pattern {
                    pool: pool.to_string(),
                    pattern: p.clone(),
                    source,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(PoolPlan {
            pool: pool.to_string(),
            cpus,
            patterns,
        })
    }
}

/// One thread as /proc shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadState {
    /// The thread id.
    pub tid: u32,
    /// The thread's name (/proc/<pid>/task/<tid>/comm, at most 15 bytes).
    pub name: String,
    /// `Cpus_allowed_list` of /proc/<pid>/task/<tid>/status.
    pub allowed: CpuSet,
    /// Field 39 ("processor") of /proc/<pid>/task/<tid>/stat: the CPU it last ran on.
    pub last_cpu: u32,
}

fn read(path: &Path) -> Result<String, PinningError> {
    std::fs::read_to_string(path).map_err(|source| PinningError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// Start time of a process (field 22 of /proc/<pid>/stat): with the pid, it identifies
/// one process even when the kernel reuses its pid.
pub(crate) fn process_start_time(proc_root: &Path, pid: u32) -> Result<u64, PinningError> {
    let path = proc_root.join(pid.to_string()).join("stat");
    let text = read(&path)?;
    let fields = stat_fields(&path, &text)?;
    // fields[0] is field 3 (state); field 22 is fields[19].
    parse_field(&path, &fields, 22)
}

/// The fields after the `(comm)` of a stat line (comm may hold spaces and parentheses).
fn stat_fields<'a>(path: &Path, text: &'a str) -> Result<Vec<&'a str>, PinningError> {
    let after = text.rfind(')').ok_or_else(|| PinningError::Parse {
        path: path.to_path_buf(),
        detail: "no ')' after comm".into(),
    })?;
    Ok(text[after + 1..].split_whitespace().collect())
}

fn parse_field(path: &Path, fields: &[&str], field: usize) -> Result<u64, PinningError> {
    // Field numbering of proc(5) starts at 1 with pid, 2 comm, 3 state (fields[0]).
    fields
        .get(field - 3)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| PinningError::Parse {
            path: path.to_path_buf(),
            detail: format!("field {field} missing or not a number"),
        })
}

/// Reads one thread's name, allowed CPUs and last CPU.
pub fn thread_state(proc_root: &Path, pid: u32, tid: u32) -> Result<ThreadState, PinningError> {
    let dir = proc_root
        .join(pid.to_string())
        .join("task")
        .join(tid.to_string());
    let name = read(&dir.join("comm"))?.trim_end_matches('\n').to_string();
    let status_path = dir.join("status");
    let status = read(&status_path)?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .ok_or_else(|| PinningError::Parse {
            path: status_path.clone(),
            detail: "no Cpus_allowed_list".into(),
        })?;
    let allowed: CpuSet = list.trim().parse().map_err(|e| PinningError::Parse {
        path: status_path.clone(),
        detail: format!("Cpus_allowed_list {list:?}: {e}"),
    })?;
    let stat_path = dir.join("stat");
    let stat = read(&stat_path)?;
    let fields = stat_fields(&stat_path, &stat)?;
    let last_cpu = parse_field(&stat_path, &fields, 39)? as u32;
    Ok(ThreadState {
        tid,
        name,
        allowed,
        last_cpu,
    })
}

/// Thread ids of a process.
pub fn thread_ids(proc_root: &Path, pid: u32) -> Result<Vec<u32>, PinningError> {
    let dir = proc_root.join(pid.to_string()).join("task");
    let entries = std::fs::read_dir(&dir).map_err(|source| PinningError::Read {
        path: dir.clone(),
        source,
    })?;
    let mut tids: Vec<u32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    Ok(tids)
}

/// Sets one thread's affinity.
pub fn set_thread_affinity(tid: u32, cpus: &CpuSet) -> Result<(), PinningError> {
    let err = |source| PinningError::Affinity {
        tid,
        cpus: cpus.to_string(),
        source,
    };
    let mut set = nix::sched::CpuSet::new();
    for cpu in cpus.iter() {
        set.set(cpu as usize).map_err(err)?;
    }
    let pid = i32::try_from(tid).map_err(|_| err(nix::errno::Errno::ESRCH))?;
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(pid), &set).map_err(err)
}

/// The cgroup directory of a slice, relative to the cgroup root: systemd nests
/// `a-b-c.slice` as `a.slice/a-b.slice/a-b-c.slice` (`-.slice` is the root itself).
pub(crate) fn slice_cgroup_path(slice: &str) -> PathBuf {
    let stem = slice.strip_suffix(".slice").unwrap_or(slice);
    let mut path = PathBuf::new();
    if stem.is_empty() || stem == "-" {
        return path;
    }
    let parts: Vec<&str> = stem.split('-').collect();
    for i in 1..=parts.len() {
        path.push(format!("{}.slice", parts[..i].join("-")));
    }
    path
}

/// Finds the replica's pid. Where systemd runs the node, `unit_cgroup` is the unit's
/// cgroup directory: the replica is the process there whose comm is `process_name` (read
/// from the cgroup tree: the agent has no access to systemd's bus). Else the lowest pid
/// with that comm in `proc_root`.
pub(crate) fn locate_replica(
    unit_cgroup: Option<&Path>,
    process_name: &str,
    proc_root: &Path,
) -> Option<u32> {
    let comm_is = |pid: &u32| {
        std::fs::read_to_string(proc_root.join(pid.to_string()).join("comm"))
            .map(|c| c.trim_end() == process_name)
            .unwrap_or(false)
    };
    let mut found: Vec<u32> = match unit_cgroup {
        Some(dir) => std::fs::read_to_string(dir.join("cgroup.procs"))
            .ok()?
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .filter(comm_is)
            .collect(),
        None => std::fs::read_dir(proc_root)
            .ok()?
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .filter(comm_is)
            .collect(),
    };
    found.sort_unstable();
    found.first().copied()
}

/// The union of the CPU sets of the runtime configuration's pools: the slice's
/// `AllowedCPUs=`. None when no pool has a CPU set.
pub fn slice_cpus(runtime: &hardware_profiles::runtime::RuntimeConfig) -> Option<CpuSet> {
    let union: CpuSet = runtime
        .pools
        .values()
        .flat_map(|p| p.cpus.iter().copied())
        .collect();
    (!union.is_empty()).then_some(union)
}

/// How long `systemctl set-property` may take before it is killed.
pub const SYSTEMCTL_TIMEOUT: Duration = Duration::from_secs(20);

/// `systemctl set-property --runtime SLICE AllowedCPUs=CPUS`, killed after `timeout`.
/// Run by `node-agent set-replica-cpus` in its own root oneshot unit, never by the agent.
pub fn set_slice_cpus(slice: &str, cpus: &CpuSet, timeout: Duration) -> Result<(), PinningError> {
    let cpus_text = cpus.to_string();
    let err = |detail: String| PinningError::Slice {
        slice: slice.to_string(),
        cpus: cpus_text.clone(),
        detail,
    };
    let mut child = Command::new("systemctl")
        .args([
            "set-property",
            "--runtime",
            slice,
            &format!("AllowedCPUs={cpus_text}"),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| err(format!("starting systemctl: {e}")))?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                if status.success() {
                    return Ok(());
                }
                let mut stderr = String::new();
                if let Some(mut pipe) = child.stderr.take() {
                    use std::io::Read as _;
                    let _ = pipe.read_to_string(&mut stderr);
                }
                return Err(err(format!("{status}: {}", stderr.trim())));
            }
            Ok(None) if started.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(err(format!("no answer within {timeout:?}; killed")));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(err(format!("waiting for systemctl: {e}"))),
        }
    }
}

/// Where the agent reads the slice's effective CPU set: `cpuset.cpus` of its cgroup.
#[derive(Debug, Clone)]
pub struct SliceCheck {
    /// The slice unit (`sovereign-replica.slice`).
    pub slice: String,
    /// The slice's cgroup directory (e.g. /sys/fs/cgroup/sovereign.slice/sovereign-replica.slice).
    pub cgroup: PathBuf,
}

/// Keeps the replica's threads on their pools' CPU sets across restarts.
pub struct Pinner {
    pools: Vec<PoolPlan>,
    proc_root: PathBuf,
    /// Check the slice's AllowedCPUs= (None: systemd is not the manager).
    slice: Option<SliceCheck>,
    /// The slice's cpuset.cpus read last (a mismatch is recorded once per value).
    slice_seen: Option<String>,
    /// (pid, start time) of the replica process pinned last.
    current: Option<(u32, u64)>,
    /// Threads of the current process already pinned once (drift is judged on these).
    known: BTreeSet<u32>,
    status: PinningStatus,
}

impl Pinner {
    /// `slice`: Some only where systemd manages the node (the caller checks).
    pub fn new(pools: Vec<PoolPlan>, proc_root: &Path, slice: Option<SliceCheck>) -> Pinner {
        Pinner {
            status: PinningStatus {
                enabled: true,
                inactive_reason: Some("the replica has not been seen yet".into()),
                pools: pools
                    .iter()
                    .map(|p| PoolPinning {
                        pool: p.pool.clone(),
                        cpus: p.cpus.to_string(),
                        threads: 0,
                        drifted_threads: 0,
                    })
                    .collect(),
                ..PinningStatus::default()
            },
            pools,
            proc_root: proc_root.to_path_buf(),
            slice,
            slice_seen: None,
            current: None,
            known: BTreeSet::new(),
        }
    }

    pub(crate) fn status(&self) -> &PinningStatus {
        &self.status
    }

    fn record_error(&mut self, e: &PinningError) {
        tracing::warn!(error = %e, "pinning");
        self.status.errors_total += 1;
        self.status.last_error = Some(e.to_string());
    }

    /// The replica is not running: nothing to pin.
    pub(crate) fn replica_absent(&mut self, reason: &str) -> &PinningStatus {
        self.status.replica_pid = None;
        self.status.inactive_reason = Some(reason.to_string());
        for p in &mut self.status.pools {
            p.threads = 0;
            p.drifted_threads = 0;
        }
        &self.status
    }

    fn pool_of(&self, name: &str) -> Option<usize> {
        self.pools
            .iter()
            .position(|p| p.patterns.iter().any(|re| re.is_match(name)))
    }

    /// Reads the slice's effective CPU set and compares it with the union of the pools'
    /// sets. Not set yet (no cgroup, empty `cpuset.cpus`): reported as not set, no error;
    /// another set: an error, recorded once per value read.
    pub(crate) fn check_slice(&mut self) {
        let Some(check) = self.slice.clone() else {
            return;
        };
        let expected: CpuSet = self.pools.iter().flat_map(|p| p.cpus.iter()).collect();
        if expected.is_empty() {
            return;
        }
        let path = check.cgroup.join("cpuset.cpus");
        let actual = std::fs::read_to_string(&path)
            .map(|t| t.trim().to_string())
            .unwrap_or_default();
        if actual.is_empty() {
            self.status.slice_allowed_cpus = None;
            self.slice_seen = None;
            return;
        }
        self.status.slice_allowed_cpus = Some(actual.clone());
        let matches = actual.parse::<CpuSet>().is_ok_and(|set| set == expected);
        if !matches && self.slice_seen.as_deref() != Some(actual.as_str()) {
            let e = PinningError::SliceMismatch {
                slice: check.slice,
                path,
                actual: actual.clone(),
                expected: expected.to_string(),
            };
            self.record_error(&e);
        }
        self.slice_seen = Some(actual);
    }

    /// Pins every thread of `pid` that belongs to a pool and reports drift: a thread
    /// already pinned in an earlier pass that is now allowed on, or last ran on, a CPU
    /// outside its pool's set. A new process (pid or start time changed) is re-pinned.
    pub fn sync(&mut self, pid: u32) -> &PinningStatus {
        let start = match process_start_time(&self.proc_root, pid) {
            Ok(start) => start,
            Err(e) => {
                self.record_error(&e);
                return self.replica_absent("the replica process could not be read");
            }
        };
        if self.current != Some((pid, start)) {
            if self.current.is_some() {
                self.status.reapplied_total += 1;
                tracing::info!(pid, "new replica process: re-applying CPU pins");
            }
            self.current = Some((pid, start));
            self.known.clear();
        }
        self.status.replica_pid = Some(pid);
        self.status.inactive_reason = None;
        let tids = match thread_ids(&self.proc_root, pid) {
            Ok(t) => t,
            Err(e) => {
                self.record_error(&e);
                return self.replica_absent("the replica's threads could not be read");
            }
        };
        let mut threads = vec![0u64; self.pools.len()];
        let mut drifted = vec![0u64; self.pools.len()];
        let mut seen = BTreeSet::new();
        let mut errors = Vec::new();
        for tid in tids {
            // A thread may exit between listing and reading: skip it quietly.
            let Ok(state) = thread_state(&self.proc_root, pid, tid) else {
                continue;
            };
            let Some(pool) = self.pool_of(&state.name) else {
                continue;
            };
            let target = &self.pools[pool].cpus;
            threads[pool] += 1;
            seen.insert(tid);
            let outside = !state.allowed.is_subset(target) || !target.contains(state.last_cpu);
            if self.known.contains(&tid) && outside {
                drifted[pool] += 1;
            }
            if state.allowed != *target
                && let Err(e) = set_thread_affinity(tid, target)
            {
                errors.push(e);
            }
        }
        for e in &errors {
            self.record_error(e);
        }
        self.known = seen;
        for (i, p) in self.status.pools.iter_mut().enumerate() {
            p.threads = threads[i];
            p.drifted_threads = drifted[i];
        }
        &self.status
    }
}

/// Pools of the runtime configuration that have a CPU set and a thread-name pattern.
pub(crate) fn plan_from_runtime(
    runtime: &hardware_profiles::runtime::RuntimeConfig,
    patterns: &BTreeMap<String, Vec<String>>,
) -> Result<Vec<PoolPlan>, PinningError> {
    let mut plans = Vec::new();
    for (kind, pool) in &runtime.pools {
        if pool.cpus.is_empty() {
            continue;
        }
        let name = kind.name();
        let Some(p) = patterns.get(name) else {
            continue;
        };
        plans.push(PoolPlan::new(name, pool.cpus.iter().copied().collect(), p)?);
    }
    Ok(plans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_survive_odd_comm() {
        let text = "42 (a) b (c)) S 1 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 3 0 777 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 17 5 0 0 0 0 0\n";
        let p = Path::new("stat");
        let f = stat_fields(p, text).unwrap();
        assert_eq!(f[0], "S");
        assert_eq!(parse_field(p, &f, 22).unwrap(), 777);
        assert_eq!(parse_field(p, &f, 39).unwrap(), 5);
        assert!(parse_field(p, &f, 60).is_err());
        assert!(stat_fields(p, "no paren").is_err());
    }

    #[test]
    fn slice_paths_nest_like_systemd() {
        assert_eq!(
            slice_cgroup_path("sovereign-replica.slice"),
            PathBuf::from("sovereign.slice/sovereign-replica.slice")
        );
        assert_eq!(
            slice_cgroup_path("system.slice"),
            PathBuf::from("system.slice")
        );
        assert_eq!(
            slice_cgroup_path("a-b-c.slice"),
            PathBuf::from("a.slice/a-b.slice/a-b-c.slice")
        );
        assert_eq!(slice_cgroup_path("-.slice"), PathBuf::new());
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn replica_found_by_name_in_its_units_cgroup() {
        let dir = tempfile::tempdir().unwrap();
        let proc_root = dir.path().join("proc");
        let unit = dir.path().join("cg/ic-replica.service");
        for (pid, comm) in [(7, "sh"), (12, "replica"), (30, "replica"), (40, "replica")] {
            write(&proc_root.join(format!("{pid}/comm")), &format!("{comm}\n"));
        }
        // 40 is a replica outside the unit: not ours.
        write(&unit.join("cgroup.procs"), "30\n7\n12\n");
        assert_eq!(locate_replica(Some(&unit), "replica", &proc_root), Some(12));
        write(&unit.join("cgroup.procs"), "7\n");
        assert_eq!(locate_replica(Some(&unit), "replica", &proc_root), None);
        // No cgroup (unit not started): not running.
        let absent = dir.path().join("cg/other.service");
        assert_eq!(locate_replica(Some(&absent), "replica", &proc_root), None);
        // Without systemd: the lowest pid with the name anywhere.
        assert_eq!(locate_replica(None, "replica", &proc_root), Some(12));
    }

    #[test]
    fn slice_check_reports_unset_match_and_mismatch_once() {
        let dir = tempfile::tempdir().unwrap();
        let cgroup = dir.path().join("sovereign.slice/sovereign-replica.slice");
        let pools = vec![
            PoolPlan::new("consensus", "0".parse().unwrap(), &["^c".into()]).unwrap(),
            PoolPlan::new("execution", "2-3".parse().unwrap(), &["^e".into()]).unwrap(),
        ];
        let check = SliceCheck {
            slice: "sovereign-replica.slice".into(),
            cgroup: cgroup.clone(),
        };
        let mut pinner = Pinner::new(pools, Path::new("/proc"), Some(check));
        // Not realised yet: not set, no error.
        pinner.check_slice();
        assert_eq!(pinner.status().slice_allowed_cpus, None);
        assert_eq!(pinner.status().errors_total, 0);
        write(&cgroup.join("cpuset.cpus"), "\n");
        pinner.check_slice();
        assert_eq!(pinner.status().slice_allowed_cpus, None);
        write(&cgroup.join("cpuset.cpus"), "0,2-3\n");
        pinner.check_slice();
        assert_eq!(pinner.status().slice_allowed_cpus.as_deref(), Some("0,2-3"));
        assert_eq!(pinner.status().errors_total, 0);
        write(&cgroup.join("cpuset.cpus"), "0-3\n");
        pinner.check_slice();
        pinner.check_slice();
        let status = pinner.status();
        assert_eq!(status.slice_allowed_cpus.as_deref(), Some("0-3"));
        assert_eq!(status.errors_total, 1, "recorded once per value read");
        let error = status.last_error.as_deref().unwrap();
        assert!(
            error.contains("\"0-3\"") && error.contains("need 0,2-3"),
            "{error}"
        );
    }

    #[test]
    fn slice_cpus_is_the_union_of_pool_sets() {
        use hardware_profiles::runtime::PoolConfig;
        let profiles = hardware_profiles::ProfileSet::embedded().unwrap();
        let mut runtime = profiles.profiles()[0].runtime_config();
        runtime.pools.clear();
        assert_eq!(slice_cpus(&runtime), None);
        let mut kinds = hardware_profiles::PoolKind::ALL.iter();
        runtime.pools.insert(
            *kinds.next().unwrap(),
            PoolConfig {
                threads: 1,
                cpus: vec![4, 1],
            },
        );
        runtime.pools.insert(
            *kinds.next().unwrap(),
            PoolConfig {
                threads: 1,
                cpus: vec![],
            },
        );
        runtime.pools.insert(
            *kinds.next().unwrap(),
            PoolConfig {
                threads: 1,
                cpus: vec![2],
            },
        );
        assert_eq!(slice_cpus(&runtime).unwrap().to_string(), "1-2,4");
    }
}
