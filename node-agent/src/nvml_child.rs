//! NVML in short-lived child processes (`node-agent nvml`, hidden; see [`crate::child`]).
//!
//! `nvmlInit` maps libcuda, and the two keep about 19 MB resident for the rest of the
//! process's life: an anonymous mapping of 16.9 MB appears at init and neither
//! `nvmlShutdown` nor `malloc_trim` returns it (measured on the H200,
//! docs/results/nvml-init-cost-h200). A daemon that opened NVML once
//! could not stay within its 30 MB, and an NVML call hanging in the driver would stall its
//! collector.
//! So `node-agent run` never initialises NVML itself: the probe at start, each telemetry
//! sample and each GPU attestation are answered by a child that exits afterwards; a child
//! that hangs is killed at its timeout and the failure is reported like any NVML error.

use crate::nvml::NvmlSampler;
use crate::snapshot::GpuSample;
use attestation::bundle::GpuFailure;
use attestation::nvidia::GpuEvidence;
use hardware_profiles::GpuInventory;
use serde::{Deserialize, Serialize};
use std::process::Command;
use std::time::Duration;

/// The probe (every GPU's identity and CC state).
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);
/// One telemetry sample; well under the collection interval.
const SAMPLE_TIMEOUT: Duration = Duration::from_secs(10);
/// A CC attestation report and certificate chain per GPU, unless the attestation limits
/// set another deadline ([`NvmlChild::with_evidence_timeout`]).
const EVIDENCE_TIMEOUT: Duration = Duration::from_secs(30);

/// What the daemon asks (JSON on the child's standard input).
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "request", rename_all = "snake_case")]
pub(crate) enum Request {
    Probe,
    Sample,
    /// Evidence over a verifier nonce (64 hex digits).
    Evidence {
        nonce: String,
    },
}

/// What the child answers (JSON on its standard output).
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub(crate) enum Answer {
    Inventory {
        inventory: GpuInventory,
    },
    Samples {
        gpus: Vec<GpuSample>,
    },
    Evidence {
        gpus: Vec<GpuEvidence>,
        failures: Vec<GpuFailure>,
    },
    /// NVML could not answer (no driver, a failing call): the reason.
    Failed {
        reason: String,
    },
}

/// The child's side: answers `request` with NVML in this process.
pub(crate) fn answer(request: Request) -> Answer {
    let failed = |reason: String| Answer::Failed { reason };
    match request {
        // NVML's part only: the daemon lists the PCI bus itself (`probe::probe_gpus`).
        Request::Probe => Answer::Inventory {
            inventory: crate::nvml::inventory(Vec::new()),
        },
        Request::Sample => match NvmlSampler::open() {
            Ok(mut sampler) => match sampler.sample() {
                Ok(gpus) => Answer::Samples { gpus },
                Err(e) => failed(e),
            },
            Err(e) => failed(format!("NVML: {e}")),
        },
        Request::Evidence { nonce } => {
            let mut bytes = [0u8; 32];
            match hex::decode_to_slice(&nonce, &mut bytes) {
                Ok(()) => match attestation::collect::collect_gpus(&bytes) {
                    Ok((gpus, failures)) => Answer::Evidence { gpus, failures },
                    Err(e) => failed(e.to_string()),
                },
                Err(e) => failed(format!("nonce {nonce:?}: {e}")),
            }
        }
    }
}

/// The hidden `node-agent nvml` subcommand.
pub fn child_main() -> anyhow::Result<()> {
    crate::child::serve_json(answer)
}

/// How the daemon starts an NVML child: normally this executable with `nvml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvmlChild {
    program: std::path::PathBuf,
    args: Vec<String>,
    /// An evidence child still running after this is killed.
    evidence_timeout: Duration,
}

impl NvmlChild {
    /// `node-agent nvml` of the running executable.
    pub fn this_executable() -> Result<NvmlChild, String> {
        Ok(NvmlChild {
            program: crate::child::this_executable_path("nvml")?,
            args: vec!["nvml".into()],
            evidence_timeout: EVIDENCE_TIMEOUT,
        })
    }

    /// Any command that speaks the protocol (tests).
    pub fn command(program: impl Into<std::path::PathBuf>, args: &[&str]) -> NvmlChild {
        NvmlChild {
            program: program.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            evidence_timeout: EVIDENCE_TIMEOUT,
        }
    }

    /// The same child, killed when GPU evidence takes longer than `timeout`.
    pub fn with_evidence_timeout(mut self, timeout: Duration) -> NvmlChild {
        self.evidence_timeout = timeout;
        self
    }

    fn ask(&self, request: &Request, timeout: Duration) -> Result<Answer, String> {
        let mut command = Command::new(&self.program);
        command.args(&self.args);
        crate::child::exchange_json(&mut command, request, timeout, "NVML answer")
            .map_err(|e| format!("the NVML process {e}"))
    }

    /// Every GPU's facts as NVML gives them (no PCI list); `Err` only when the child itself failed (NVML failing inside it is
    /// an inventory that says so).
    pub fn probe(&self) -> Result<GpuInventory, String> {
        match self.ask(&Request::Probe, PROBE_TIMEOUT)? {
            Answer::Inventory { inventory } => Ok(inventory),
            Answer::Failed { reason } => Err(reason),
            other => Err(unexpected(&other)),
        }
    }

    /// One telemetry sample of every GPU.
    pub fn sample(&self) -> Result<Vec<GpuSample>, String> {
        match self.ask(&Request::Sample, SAMPLE_TIMEOUT)? {
            Answer::Samples { gpus } => Ok(gpus),
            Answer::Failed { reason } => Err(reason),
            other => Err(unexpected(&other)),
        }
    }
}

impl attestation::collect::GpuCollector for NvmlChild {
    fn collect(&self, nonce: &[u8; 32]) -> Result<(Vec<GpuEvidence>, Vec<GpuFailure>), String> {
        let request = Request::Evidence {
            nonce: hex::encode(nonce),
        };
        match self.ask(&request, self.evidence_timeout) {
            Ok(Answer::Evidence { gpus, failures }) => Ok((gpus, failures)),
            Ok(Answer::Failed { reason }) => Err(format!("GPU evidence: {reason}")),
            Ok(other) => Err(format!("GPU evidence: {}", unexpected(&other))),
            Err(e) => Err(format!("GPU evidence: {e}")),
        }
    }
}

/// GPU evidence when no NVML child can be started: every collection fails with the reason.
pub struct Unreachable(pub String);

impl attestation::collect::GpuCollector for Unreachable {
    fn collect(&self, _nonce: &[u8; 32]) -> Result<(Vec<GpuEvidence>, Vec<GpuFailure>), String> {
        Err(format!("GPU evidence: NVML unreachable: {}", self.0))
    }
}

fn unexpected(answer: &Answer) -> String {
    let kind = match answer {
        Answer::Inventory { .. } => "inventory",
        Answer::Samples { .. } => "samples",
        Answer::Evidence { .. } => "evidence",
        Answer::Failed { .. } => "failed",
    };
    format!("the NVML process answered the wrong request ({kind})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use attestation::collect::GpuCollector;

    /// A child that answers with `json` whatever it is asked.
    fn answering(json: &str) -> NvmlChild {
        NvmlChild::command(
            "sh",
            &["-c", &format!("cat >/dev/null; printf '%s' '{json}'")],
        )
    }

    #[test]
    fn recorded_h200_samples_cross_the_process_boundary_unchanged() {
        let recorded: Vec<Vec<GpuSample>> =
            serde_json::from_str(include_str!("../testdata/gpu/h200-nvml-samples.json")).unwrap();
        let gpus = recorded[0].clone();
        let json = serde_json::to_string(&Answer::Samples { gpus: gpus.clone() }).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("answer.json");
        std::fs::write(&file, json).unwrap();
        let child = NvmlChild::command(
            "sh",
            &["-c", &format!("cat >/dev/null; cat {}", file.display())],
        );
        assert_eq!(child.sample().unwrap(), gpus);
    }

    #[test]
    fn the_request_reaches_the_child_as_json() {
        let dir = tempfile::tempdir().unwrap();
        let seen = dir.path().join("request.json");
        let child = NvmlChild::command(
            "sh",
            &[
                "-c",
                &format!(
                    "cat > {}; printf '%s' '{{\"answer\":\"failed\",\"reason\":\"no driver\"}}'",
                    seen.display()
                ),
            ],
        );
        let nonce = [7u8; 32];
        assert_eq!(
            child.collect(&nonce).unwrap_err(),
            "GPU evidence: no driver"
        );
        let request: Request =
            serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
        match request {
            Request::Evidence { nonce: hex_nonce } => assert_eq!(hex_nonce, hex::encode(nonce)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn failures_of_nvml_and_of_the_child_are_errors_with_the_reason() {
        assert_eq!(
            answering(r#"{"answer":"failed","reason":"NVML: a libloading error occurred"}"#)
                .sample()
                .unwrap_err(),
            "NVML: a libloading error occurred"
        );
        let wrong = answering(r#"{"answer":"samples","gpus":[]}"#)
            .probe()
            .unwrap_err();
        assert!(wrong.contains("wrong request (samples)"), "{wrong}");
        let garbage = answering("hello").sample().unwrap_err();
        assert!(
            garbage.starts_with("the NVML process (pid")
                && garbage.contains("printed no NVML answer"),
            "{garbage}"
        );
        let crashed = NvmlChild::command("sh", &["-c", "exit 134"])
            .sample()
            .unwrap_err();
        assert!(crashed.contains("failed: exit status: 134"), "{crashed}");
    }

    /// The child's own answers: with an NVIDIA driver, an inventory of its GPUs and their
    /// samples; without one (CI, development machines), failures naming NVML and an
    /// absent inventory. The same test asserts what each kind of machine must answer.
    #[test]
    fn the_child_answers_with_nvml_or_names_its_absence() {
        if std::path::Path::new("/dev/nvidiactl").exists() {
            match answer(Request::Probe) {
                Answer::Inventory { inventory } => {
                    assert!(!inventory.gpus.is_empty(), "{inventory:?}")
                }
                other => panic!("{other:?}"),
            }
            match answer(Request::Sample) {
                Answer::Samples { gpus } => assert!(!gpus.is_empty()),
                other => panic!("{other:?}"),
            }
            return;
        }
        match answer(Request::Sample) {
            Answer::Failed { reason } => assert!(reason.starts_with("NVML: "), "{reason}"),
            other => panic!("{other:?}"),
        }
        match answer(Request::Probe) {
            Answer::Inventory { inventory } => assert!(inventory.gpus.is_empty(), "{inventory:?}"),
            other => panic!("{other:?}"),
        }
        match answer(Request::Evidence {
            nonce: "00".repeat(32),
        }) {
            Answer::Failed { reason } => assert!(reason.contains("NVML"), "{reason}"),
            other => panic!("{other:?}"),
        }
        match answer(Request::Evidence { nonce: "zz".into() }) {
            Answer::Failed { reason } => assert!(reason.starts_with("nonce \"zz\""), "{reason}"),
            other => panic!("{other:?}"),
        }
    }
}
