//! Replica CPU pinning as its own reconcile loop: on its own thread, each interval, it finds
//! the replica process and brings its threads back onto their pools' CPU sets. Telemetry
//! only reads the outcome of the last pass ([`PinningBoard`]), so a slow /proc walk never
//! delays a snapshot and a stalled telemetry source never delays pinning.

use crate::clock::Clock;
use crate::metric_family::{FamilyWriter, flag, one};
use crate::pinning::{Pinner, locate_replica};
use crate::snapshot::{CollectorStatus, PinningStatus};
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// How the loop finds the replica process.
pub enum ReplicaProcess {
    /// The process with this comm in the unit's cgroup directory (where systemd runs the
    /// node), else in /proc.
    Locate {
        /// The replica unit's cgroup directory; `None` where systemd does not run the node.
        unit_cgroup: Option<PathBuf>,
        /// The replica's /proc/<pid>/comm.
        process_name: String,
    },
    /// A known pid (tests).
    Pid(u32),
}

/// The outcome of the last pass: the pinning status, and the pass as a collector run (the
/// `pinning` collector's up, duration and error in the telemetry).
#[derive(Debug, Clone, PartialEq)]
pub struct PinningReport {
    /// What the pinner did in the pass.
    pub status: PinningStatus,
    /// None until the first pass.
    pub run: Option<CollectorStatus>,
}

/// Where the loop publishes its last pass and the collectors read it.
#[derive(Clone)]
pub struct PinningBoard(Arc<Mutex<PinningReport>>);

impl PinningBoard {
    fn new(report: PinningReport) -> PinningBoard {
        PinningBoard(Arc::new(Mutex::new(report)))
    }

    pub(crate) fn latest(&self) -> PinningReport {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn publish(&self, report: PinningReport) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = report;
    }
}

/// The reconcile loop's state: the pinner, how to find the replica, and the board.
pub struct PinningLoop {
    pinner: Pinner,
    process: ReplicaProcess,
    proc_root: PathBuf,
    clock: Arc<dyn Clock>,
    last_success: Option<f64>,
    board: PinningBoard,
}

impl PinningLoop {
    pub(crate) fn new(
        pinner: Pinner,
        process: ReplicaProcess,
        clock: Arc<dyn Clock>,
    ) -> PinningLoop {
        let board = PinningBoard::new(PinningReport {
            status: pinner.status().clone(),
            run: None,
        });
        PinningLoop {
            pinner,
            process,
            proc_root: PathBuf::from("/proc"),
            clock,
            last_success: None,
            board,
        }
    }

    /// Where this loop's passes appear.
    pub fn board(&self) -> PinningBoard {
        self.board.clone()
    }

    /// One pass: checks the slice, finds the replica, pins its threads, and publishes the
    /// outcome. A pass that recorded a new error is a failed run with that error.
    pub fn reconcile(&mut self) -> PinningReport {
        let start = self.clock.monotonic_seconds();
        let pid = match &self.process {
            ReplicaProcess::Pid(pid) => Some(*pid),
            ReplicaProcess::Locate {
                unit_cgroup,
                process_name,
            } => locate_replica(unit_cgroup.as_deref(), process_name, &self.proc_root),
        };
        let errors_before = self.pinner.status().errors_total;
        self.pinner.check_slice();
        let status = match pid {
            Some(pid) => self.pinner.sync(pid).clone(),
            None => self
                .pinner
                .replica_absent("the replica is not running")
                .clone(),
        };
        let error = (status.errors_total > errors_before)
            .then(|| status.last_error.clone().unwrap_or_default());
        if let Some(e) = &error {
            tracing::debug!(error = %e, "pinning pass failed");
        } else {
            self.last_success = Some(self.clock.unix_seconds());
        }
        let report = PinningReport {
            status,
            run: Some(CollectorStatus {
                name: "pinning".into(),
                up: error.is_none(),
                duration_seconds: (self.clock.monotonic_seconds() - start).max(0.0),
                last_success_unix_seconds: self.last_success,
                error,
            }),
        };
        self.board.publish(report.clone());
        report
    }
}

/// The pinning loop's metric families.
pub fn encode_metrics(pinning: &PinningStatus, families: &mut FamilyWriter) -> fmt::Result {
    families.gauge(
        "sovereign_pinning_active",
        "Whether the agent pins the replica's thread pools to the profile's CPU sets.",
        None,
        &one(
            vec![],
            flag(pinning.enabled && pinning.inactive_reason.is_none()),
        ),
    )?;
    families.gauge(
        "sovereign_pinning_threads",
        "Replica threads matched to each pool.",
        None,
        &pinning
            .pools
            .iter()
            .map(|x| {
                (
                    vec![("pool", x.pool.clone()), ("cpus", x.cpus.clone())],
                    x.threads as f64,
                )
            })
            .collect::<Vec<_>>(),
    )?;
    families.gauge(
        "sovereign_pinning_drifted_threads",
        "Threads allowed on, or last run on, a CPU outside their pool's set.",
        None,
        &pinning
            .pools
            .iter()
            .map(|x| (vec![("pool", x.pool.clone())], x.drifted_threads as f64))
            .collect::<Vec<_>>(),
    )?;
    families.counter(
        "sovereign_pinning_reapplied",
        "Times the pins were re-applied to a new replica process.",
        None,
        &one(vec![], pinning.reapplied_total as f64),
    )?;
    families.counter(
        "sovereign_pinning_errors",
        "Failed affinity or slice updates.",
        None,
        &one(vec![], pinning.errors_total as f64),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::pinning::PoolPlan;
    use hardware_profiles::cpulist::CpuSet;

    fn pinning_loop(process: ReplicaProcess) -> PinningLoop {
        let cpus: CpuSet = "0".parse().unwrap();
        let pools = vec![PoolPlan::new("crypto", cpus, &["^no-such-thread$".into()]).unwrap()];
        let pinner = Pinner::new(pools, std::path::Path::new("/proc"), None);
        PinningLoop::new(pinner, process, Arc::new(ManualClock::new(100.0)))
    }

    #[test]
    fn the_board_shows_no_run_before_the_first_pass_and_each_pass_after() {
        let mut l = pinning_loop(ReplicaProcess::Pid(std::process::id()));
        let board = l.board();
        let before = board.latest();
        assert_eq!(before.run, None);
        assert!(before.status.enabled);

        let report = l.reconcile();
        assert_eq!(board.latest(), report);
        let run = report.run.unwrap();
        assert_eq!(run.name, "pinning");
        assert!(run.up, "{run:?}");
        assert_eq!(run.last_success_unix_seconds, Some(100.0));
        assert_eq!(report.status.replica_pid, Some(std::process::id()));
    }

    #[test]
    fn a_replica_that_is_not_running_is_reported_as_inactive() {
        let mut l = pinning_loop(ReplicaProcess::Locate {
            unit_cgroup: None,
            process_name: "no-such-replica-process".into(),
        });
        let report = l.reconcile();
        assert_eq!(
            report.status.inactive_reason.as_deref(),
            Some("the replica is not running")
        );
        assert!(report.run.unwrap().up);
    }
}
