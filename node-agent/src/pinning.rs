//! Places the replica's thread pools on the profile's CPU sets: the slice's
//! `AllowedCPUs=` through systemd (when systemd runs the node) bounds the whole replica,
//! and per-thread affinity (`sched_setaffinity`) puts each pool's threads, recognised by
//! name, on their own set. Re-applied when the replica restarts; drift is reported.

use crate::snapshot::{PinningStatus, PoolPinning};
use hardware_profiles::cpulist::CpuSet;
use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum PinningError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: cannot parse: {detail}")]
    Parse { path: PathBuf, detail: String },
    #[error("sched_setaffinity(tid {tid}, {cpus}): {source}")]
    Affinity {
        tid: u32,
        cpus: String,
        source: nix::errno::Errno,
    },
    #[error("systemctl set-property {slice} AllowedCPUs={cpus}: {detail}")]
    Slice {
        slice: String,
        cpus: String,
        detail: String,
    },
    #[error("pool {pool}: pattern {pattern:?}: {source}")]
    Pattern {
        pool: String,
        pattern: String,
        source: regex::Error,
    },
}

/// One pool: its CPU set (from the profile) and the thread names that belong to it.
#[derive(Debug, Clone)]
pub struct PoolPlan {
    pub pool: String,
    pub cpus: CpuSet,
    pub patterns: Vec<Regex>,
}

impl PoolPlan {
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
    pub tid: u32,
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
pub fn process_start_time(proc_root: &Path, pid: u32) -> Result<u64, PinningError> {
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

/// Finds the replica's pid: systemd's MainPID of the unit when systemd runs the node,
/// else the process whose comm is `process_name`.
pub fn locate_replica(unit: &str, process_name: &str, proc_root: &Path) -> Option<u32> {
    if sd_notify::booted().unwrap_or(false) {
        let out = Command::new("systemctl")
            .args(["show", "--property=MainPID", "--value", unit])
            .output()
            .ok()?;
        let pid: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().ok()?;
        return (pid != 0).then_some(pid);
    }
    let mut found: Vec<u32> = std::fs::read_dir(proc_root)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|pid: &u32| {
            std::fs::read_to_string(proc_root.join(pid.to_string()).join("comm"))
                .map(|c| c.trim_end() == process_name)
                .unwrap_or(false)
        })
        .collect();
    found.sort_unstable();
    found.first().copied()
}

/// Keeps the replica's threads on their pools' CPU sets across restarts.
pub struct Pinner {
    pools: Vec<PoolPlan>,
    proc_root: PathBuf,
    /// Set the slice's AllowedCPUs= through systemd (None: systemd is not the manager).
    slice: Option<String>,
    /// (pid, start time) of the replica process pinned last.
    current: Option<(u32, u64)>,
    /// Threads of the current process already pinned once (drift is judged on these).
    known: BTreeSet<u32>,
    status: PinningStatus,
}

impl Pinner {
    /// `slice`: Some only where systemd manages the node (the caller checks).
    pub fn new(pools: Vec<PoolPlan>, proc_root: &Path, slice: Option<String>) -> Pinner {
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
            current: None,
            known: BTreeSet::new(),
        }
    }

    pub fn status(&self) -> &PinningStatus {
        &self.status
    }

    fn record_error(&mut self, e: &PinningError) {
        tracing::warn!(error = %e, "pinning");
        self.status.errors_total += 1;
        self.status.last_error = Some(e.to_string());
    }

    /// The replica is not running: nothing to pin.
    pub fn replica_absent(&mut self, reason: &str) -> &PinningStatus {
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

    fn apply_slice(&mut self) {
        let Some(slice) = self.slice.clone() else {
            return;
        };
        let union: CpuSet = self.pools.iter().flat_map(|p| p.cpus.iter()).collect();
        if union.is_empty() {
            return;
        }
        let cpus = union.to_string();
        let result = Command::new("systemctl")
            .args([
                "set-property",
                "--runtime",
                &slice,
                &format!("AllowedCPUs={cpus}"),
            ])
            .output();
        let err = match result {
            Ok(out) if out.status.success() => {
                self.status.slice_allowed_cpus = Some(cpus);
                return;
            }
            Ok(out) => String::from_utf8_lossy(&out.stderr).trim().to_string(),
            Err(e) => e.to_string(),
        };
        let e = PinningError::Slice {
            slice,
            cpus,
            detail: err,
        };
        self.record_error(&e);
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
            self.apply_slice();
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
pub fn plan_from_runtime(
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
}
