//! The agent as a process: the systemd notify protocol (READY, STATUS, WATCHDOG,
//! STOPPING) through a real notify socket, and `node-agent check`'s exit status. The
//! dashboard in headless Chromium is in tests/browser.rs.

mod common;

use common::*;
use std::process::Command;
use std::time::Duration;

fn ci_root() -> String {
    fixture_root("ci-2core").display().to_string()
}

#[test]
fn run_speaks_sd_notify_and_serves() {
    // A 1 s watchdog: the agent must ping at about 0.5 s.
    let mut agent = Agent::start(TEST_CONFIG, &["--root", &ci_root()], Some(1_000_000));
    let ready = agent.messages.last().unwrap().clone();
    assert!(ready.contains("READY=1\n"), "{ready:?}");
    assert!(
        ready.contains("profile development; node ready"),
        "{ready:?}"
    );
    // STATUS lines came before READY (probe, selftest).
    assert!(
        agent
            .messages
            .iter()
            .any(|m| m.contains("STATUS=running the crypto selftest"))
    );
    agent.wait_for("WATCHDOG=1", Duration::from_secs(3));
    agent.wait_for("WATCHDOG=1", Duration::from_secs(3));

    let (code, body) = agent.get("/healthz");
    assert_eq!((code, body.as_str()), (200, "ok\n"));
    let (code, body) = agent.get("/readyz");
    assert_eq!(code, 200, "{body}");
    // The replica's runtime configuration is in systemd's RuntimeDirectory=, readable
    // by the replica's own parser, and says what the profile chose.
    let written = std::fs::read_to_string(agent.dir().join("runtime-config.json")).unwrap();
    let runtime = hardware_profiles::RuntimeConfig::from_json(&written).unwrap();
    assert_eq!(runtime.profile, "development");
    let status: serde_json::Value = serde_json::from_str(&agent.get("/v1/status").1).unwrap();
    let file = &status["node"]["runtime_config_file"];
    assert_eq!(file["written"], true, "{file}");
    assert!(
        file["origin"]
            .as_str()
            .unwrap()
            .contains("RuntimeDirectory="),
        "{file}"
    );
    assert!(
        status["node"]["image"]["absent_reason"]
            .as_str()
            .unwrap()
            .contains("not running from the sovereign-node image"),
        "{status}"
    );
    let (code, body) = agent.get("/metrics");
    assert_eq!(code, 200);
    assert!(
        body.contains("sovereign_crypto_selftest_passed 1"),
        "{body}"
    );
    // The collectors keep running: the cycle count grows.
    let cycle = |body: &str| {
        serde_json::from_str::<serde_json::Value>(body).unwrap()["cycle"]
            .as_u64()
            .unwrap()
    };
    let first = cycle(&agent.get("/v1/status").1);
    std::thread::sleep(Duration::from_millis(700));
    assert!(cycle(&agent.get("/v1/status").1) > first);

    let status = agent.terminate();
    assert!(status.success(), "{status}");
    agent.wait_for("STOPPING=1", Duration::from_secs(2));
}

#[test]
fn unwritable_runtime_config_makes_the_node_not_ready() {
    // A path under a regular file can never be created, whoever runs the test.
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "").unwrap();
    let config = format!(
        "runtime_config = \"{}/runtime-config.json\"\n{TEST_CONFIG}",
        blocker.display()
    );
    let agent = Agent::start(&config, &["--root", &ci_root()], None);
    let ready = agent.messages.last().unwrap();
    assert!(ready.contains("node NOT ready"), "{ready:?}");
    let (code, body) = agent.get("/readyz");
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("runtime-config.json"), "{body}");
    let (_, metrics) = agent.get("/metrics");
    assert!(
        metrics
            .contains("sovereign_readiness_check_passed{requirement=\"runtime_config_written\"} 0"),
        "{metrics}"
    );
}

#[test]
fn check_exit_status_follows_readiness() {
    let bin = env!("CARGO_BIN_EXE_node-agent");
    let out = Command::new(bin)
        .args(["check", "--root", &ci_root()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("profile: development (development_default)"),
        "{text}"
    );
    assert!(text.trim_end().ends_with("node is FIT"), "{text}");

    let out = Command::new(bin)
        .args([
            "check",
            "--root",
            &ci_root(),
            "--profile",
            "sovereign-node!",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("FAIL"), "{text}");
    assert!(text.trim_end().ends_with("node is NOT FIT"), "{text}");

    // A profile that does not match, without force: refused with the mismatches.
    let out = Command::new(bin)
        .args(["check", "--root", &ci_root(), "--profile", "sovereign-node"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not match"), "{err}");

    // Unknown configuration keys are refused.
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("bad.toml");
    std::fs::write(&cfg, "listen = \"127.0.0.1:1\"\ncollect_interval = 3\n").unwrap();
    let out = Command::new(bin)
        .args(["check", "--root", &ci_root(), "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("collect_interval"));
}
