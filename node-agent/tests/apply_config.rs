//! `node-agent apply-config` as the image's configuration service runs it, and the agent
//! coming up on what it wrote: the plan's node name and bundle on /v1/status, or NOT
//! READY with the refusal's reason on /readyz, /v1/status and the sd_notify status,
//! without exiting (no restart loop). Bundles are written by sn-config's writer, the code
//! `provision plan` and `provision flash` use.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_node-agent");

fn key() -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&[7; 32])
}

/// The image's kernel command line as image/build writes it: the signer pinned.
fn production_cmdline() -> String {
    format!(
        "console=ttyS0 root=/dev/mapper/root ro sn.config_signer={}",
        hex::encode(key().verifying_key().to_bytes())
    )
}

fn node_config(profile: &str) -> sn_config::NodeConfig {
    sn_config::NodeConfig::parse(
        format!(
            r#"schema = "sovereign-node/node-config/v2"
subnet = "lab-1"
name = "node-07"
hostname = "node-07"
profile = "{profile}"
collect_interval_seconds = 1.0

[network]
ipv6_address = "fd00:5e::17/64"
ipv6_gateway = "fd00:5e::1"
ipv4_address = "10.0.2.17/24"
ipv4_gateway = "10.0.2.2"
dns = ["10.0.2.3"]

[operator]
name = "operator-a"
ssh_keys = []
"#
        )
        .as_bytes(),
    )
    .unwrap()
}

struct Setup {
    tmp: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        Setup {
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    /// The partition file: `bytes` padded with zeros to 1 MiB.
    fn partition(&self, bytes: &[u8]) -> PathBuf {
        let mut region = bytes.to_vec();
        region.resize(1 << 20, 0);
        let p = self.path("sn-config");
        std::fs::write(&p, region).unwrap();
        p
    }

    fn apply(&self, from: &Path, cmdline: &str) -> Output {
        let c = self.path("cmdline");
        std::fs::write(&c, cmdline).unwrap();
        Command::new(BIN)
            .args(["apply-config", "--from"])
            .arg(from)
            .arg("--to")
            .arg(self.path("run/sovereign-config"))
            .arg("--cmdline")
            .arg(&c)
            .output()
            .unwrap()
    }

    fn status(&self) -> serde_json::Value {
        serde_json::from_slice(
            &std::fs::read(self.path("run/sovereign-config/status.json")).unwrap(),
        )
        .unwrap()
    }
}

#[test]
fn apply_config_exit_status_and_records() {
    let s = Setup::new();
    let bundle = sn_config::Bundle::sign(&node_config("development"), None, &key()).unwrap();
    let archive = bundle.archive().unwrap();
    let signer = hex::encode(key().verifying_key().to_bytes());

    let out = s.apply(
        &s.partition(&archive),
        &format!("quiet sn.config_signer={signer}"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("node node-07"), "{stdout}");
    assert_eq!(s.status()["state"], "applied");
    assert_eq!(s.status()["bundle_digest"], hex::encode(bundle.digest()));
    let net =
        std::fs::read_to_string(s.path("run/sovereign-config/network/10-sovereign-node.network"))
            .unwrap();
    assert!(
        net.contains("Address=10.0.2.17/24\nGateway=10.0.2.2\n"),
        "{net}"
    );

    // A flipped byte in node.toml: exit 1, the member named on stderr and in the record.
    let mut bad = archive.clone();
    let text = String::from_utf8_lossy(&archive).into_owned();
    let at = text.find("name = \"node-07\"").unwrap();
    bad[at + 9] ^= 1;
    let out = s.apply(&s.partition(&bad), &production_cmdline());
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("node.toml"), "{stderr}");
    let st = s.status();
    assert_eq!(st["state"], "failed");
    assert_eq!(st["error_kind"], "checksum_mismatch");
    assert_eq!(st["member"], "node.toml");
    assert!(!s.path("run/sovereign-config/node.toml").exists());

    // Another signer pinned on the kernel command line.
    let other = hex::encode(
        ed25519_dalek::SigningKey::from_bytes(&[8; 32])
            .verifying_key()
            .to_bytes(),
    );
    let out = s.apply(&s.partition(&archive), &format!("sn.config_signer={other}"));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(s.status()["error_kind"], "wrong_signer");

    // The bundle re-signed by a foreign key, under the image's command line: refused.
    let foreign = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
    let resigned = sn_config::Bundle::sign(bundle.node(), None, &foreign).unwrap();
    assert_eq!(
        resigned.digest(),
        bundle.digest(),
        "same content, other signer"
    );
    let out = s.apply(
        &s.partition(&resigned.archive().unwrap()),
        &production_cmdline(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(s.status()["error_kind"], "wrong_signer");
    assert!(!s.path("run/sovereign-config/node.toml").exists());

    // Nothing pinned: no bundle is applied, whoever signed it, and the record says why.
    for partition in [archive.clone(), Vec::new()] {
        let out = s.apply(&s.partition(&partition), "console=ttyS0 quiet");
        assert_eq!(out.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("no configuration signer is pinned"),
            "{stderr}"
        );
        assert_eq!(s.status()["state"], "failed");
        assert_eq!(s.status()["error_kind"], "no_pinned_signer");
        assert!(!s.path("run/sovereign-config/node.toml").exists());
    }

    // A second pin added to the image's: refused unless the boot is a test boot.
    let test_key = hex::encode(
        ed25519_dalek::SigningKey::from_bytes(&[10; 32])
            .verifying_key()
            .to_bytes(),
    );
    let added = format!("{} sn.config_signer={test_key}", production_cmdline());
    let out = s.apply(&s.partition(&archive), &added);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(s.status()["error_kind"], "bad_signature_file");
    let out = s.apply(&s.partition(&archive), &format!("{added} sn.evidence=test"));
    assert!(out.status.success());
    assert_eq!(s.status()["state"], "applied");

    // All zeros: the documented default, exit 0.
    let out = s.apply(&s.partition(&[]), &production_cmdline());
    assert!(out.status.success());
    assert_eq!(s.status()["state"], "default");
}

#[test]
fn nothing_pinned_makes_the_node_not_ready_and_the_agent_stays_up() {
    let s = Setup::new();
    let bundle = sn_config::Bundle::sign(&node_config("development"), None, &key()).unwrap();
    let out = s.apply(&s.partition(&bundle.archive().unwrap()), "console=ttyS0");
    assert_eq!(out.status.code(), Some(1));
    let dir = s.path("run/sovereign-config");
    let root = fixture_root("ci-2core").display().to_string();
    let mut agent = Agent::start(
        TEST_CONFIG,
        &["--root", &root, "--node-config", dir.to_str().unwrap()],
        None,
    );
    let ready = agent.messages.last().unwrap().clone();
    assert!(ready.contains("READY=1"), "{ready:?}");
    assert!(
        ready.contains("node NOT ready: configuration refused")
            && ready.contains("no configuration signer is pinned"),
        "{ready:?}"
    );
    let (code, body) = agent.get("/readyz");
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("no configuration signer is pinned"), "{body}");
    let status: serde_json::Value = serde_json::from_str(&agent.get("/v1/status").1).unwrap();
    let c = &status["node"]["configuration"];
    assert_eq!(c["state"], "failed", "{c}");
    assert_eq!(c["error_kind"], "no_pinned_signer");
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(agent.get("/healthz").0, 200);
    assert!(agent.terminate().success());
}

#[test]
fn the_agent_runs_the_applied_configuration_and_names_the_node() {
    let s = Setup::new();
    let mut node = node_config("development");
    node.offload = Some(sn_config::NodeOffload {
        benchmark: "measured on a lab machine, 2026-12-03".into(),
        dkg_round_dealings: 26,
        host_cpu_seconds_per_dkg_round: 4.25,
        burst_threads_freed: 3,
        steady_threads_freed: 0.5,
    });
    let bundle = sn_config::Bundle::sign(&node, None, &key()).unwrap();
    let out = s.apply(
        &s.partition(&bundle.archive().unwrap()),
        &production_cmdline(),
    );
    assert!(out.status.success());
    let dir = s.path("run/sovereign-config");
    let root = fixture_root("ci-2core").display().to_string();
    let agent = Agent::start(
        TEST_CONFIG,
        &["--root", &root, "--node-config", dir.to_str().unwrap()],
        None,
    );
    let ready = agent.messages.last().unwrap();
    assert!(ready.contains("node ready"), "{ready:?}");
    let status: serde_json::Value = serde_json::from_str(&agent.get("/v1/status").1).unwrap();
    let c = &status["node"]["configuration"];
    assert_eq!(c["state"], "applied", "{c}");
    assert_eq!(c["node"], "node-07");
    assert_eq!(c["subnet"], "lab-1");
    assert_eq!(c["bundle_digest"], hex::encode(bundle.digest()));
    assert_eq!(c["offload"]["host_cpu_seconds_per_dkg_round"], 4.25);
    assert_eq!(status["node"]["profile"], "development");
    // The plan's offload figures, exported beside the offloaded CPU-seconds counter.
    let (code, metrics) = agent.get("/metrics");
    assert_eq!(code, 200);
    for line in [
        "sovereign_planned_offload_host_cpu_per_dkg_round_seconds{benchmark=\"measured on a lab machine, 2026-12-03\",dealings=\"26\"} 4.25",
        "sovereign_planned_offload_threads{load=\"burst\"} 3",
        "sovereign_planned_offload_threads{load=\"steady\"} 0.5",
        "sovereign_crypto_offloaded_cpu_seconds_total ",
    ] {
        assert!(metrics.contains(line), "{line} not in\n{metrics}");
    }
}

#[test]
fn a_refused_configuration_makes_the_node_not_ready_and_the_agent_stays_up() {
    let s = Setup::new();
    let bundle = sn_config::Bundle::sign(&node_config("development"), None, &key()).unwrap();
    // A symlink member appended: the host tries to point ic.json5 elsewhere.
    let mut archive = bundle.archive().unwrap();
    archive.truncate(archive.len() - 1024);
    let mut h = tar::Header::new_ustar();
    h.set_path("ic.json5").unwrap();
    h.set_entry_type(tar::EntryType::Symlink);
    h.set_link_name("/etc/shadow").unwrap();
    h.set_size(0);
    h.set_cksum();
    archive.extend_from_slice(h.as_bytes());
    archive.extend_from_slice(&[0; 1024]);
    let out = s.apply(&s.partition(&archive), &production_cmdline());
    assert_eq!(out.status.code(), Some(1));

    let dir = s.path("run/sovereign-config");
    let root = fixture_root("ci-2core").display().to_string();
    let mut agent = Agent::start(
        TEST_CONFIG,
        &["--root", &root, "--node-config", dir.to_str().unwrap()],
        None,
    );
    // READY=1 is sent (the service is up, systemd does not restart it) with the reason.
    let ready = agent.messages.last().unwrap().clone();
    assert!(ready.contains("READY=1"), "{ready:?}");
    assert!(
        ready.contains("node NOT ready: configuration refused") && ready.contains("ic.json5"),
        "{ready:?}"
    );
    let (code, body) = agent.get("/readyz");
    assert_eq!(code, 503, "{body}");
    assert!(
        body.contains("symbolic link") && body.contains("ic.json5"),
        "{body}"
    );
    let status: serde_json::Value = serde_json::from_str(&agent.get("/v1/status").1).unwrap();
    assert_eq!(status["ready"], false);
    let c = &status["node"]["configuration"];
    assert_eq!(c["state"], "failed", "{c}");
    assert_eq!(c["error_kind"], "not_regular_file");
    assert_eq!(c["member"], "ic.json5");
    // Still serving a while later.
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(agent.get("/healthz").0, 200);
    assert!(agent.terminate().success());

    // No record at all (apply-config never ran): not ready either, never defaults.
    let agent = Agent::start(
        TEST_CONFIG,
        &[
            "--root",
            &root,
            "--node-config",
            s.path("nowhere").to_str().unwrap(),
        ],
        None,
    );
    let (code, body) = agent.get("/readyz");
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("did apply-config run?"), "{body}");
}
