//! Enrolment end to end against running node agents: the agent's own router and evidence
//! wiring (`node_agent::compose::attestation_service` with `source = "test"`) served on
//! 127.0.0.1, the real HTTP client, the attestation library's verifier, and the registry.

use std::path::Path;

use attestation::test_source::{TestSigner, test_measurement};
use provisioning::registry::{Decision, Registry, verify_chain};

mod common;
use common::{Agents, enrol, enrol_with, only_test_root};

const BIN: &str = env!("CARGO_BIN_EXE_provision");

#[test]
fn enrolment_admits_refuses_and_audits_every_decision() {
    let agents = Agents::new();
    let registry = agents.registry();
    let trusting = agents.policy(7, true);
    let signer = TestSigner::from_seed([7; 32]).unwrap();
    let node_a = agents.start(7, "key-a");

    // Admitted: the record carries the report's chip id and measurement and the node key.
    let a = enrol(&node_a, "node-a", &trusting, &registry).unwrap();
    let v = a.verdict.as_ref().unwrap();
    assert!(v.admitted, "{}", v.to_table());
    assert_eq!(a.record.decision, Decision::Admit);
    assert_eq!(
        a.record.chip_id.as_deref(),
        Some(hex::encode(signer.chip_id).as_str())
    );
    assert_eq!(
        a.record.measurement.as_deref(),
        Some(hex::encode(test_measurement()).as_str())
    );
    assert_eq!(a.record.evidence_source.as_deref(), Some("test"));
    assert_eq!(a.record.nonce.len(), 64);
    assert!(a.record.reasons.is_empty());
    // The configuration the node runs, the plan's, the verification time and the policy.
    let (digest, config_signer) = agents.binding("node-01");
    assert_eq!(a.record.config_digest, Some(hex::encode(digest)));
    assert_eq!(a.record.planned_config_digest, Some(hex::encode(digest)));
    assert_eq!(a.record.config_signer, Some(hex::encode(config_signer)));
    assert!(a.record.verify_unix_time.is_some());
    // The recorded digest covers the policy text and the test root file it names.
    let policy = attestation::policy::Policy::load(&trusting).unwrap();
    assert_eq!(policy.referenced_files.len(), 1);
    assert_eq!(a.record.policy_sha256, hex::encode(policy.sha256));
    {
        use sha2::Digest as _;
        let text_only = sha2::Sha256::digest(std::fs::read(&trusting).unwrap());
        assert_ne!(a.record.policy_sha256, hex::encode(text_only));
    }
    only_test_root(&a.record.lab_policy);
    let key_a = a.record.node_public_key.clone().unwrap();

    // The same node again: a duplicate, refused and recorded.
    let dup = enrol(&node_a, "node-a", &trusting, &registry).unwrap();
    assert_eq!(dup.record.decision, Decision::Refuse);
    assert!(
        dup.record.reasons[0].starts_with("duplicate"),
        "{:?}",
        dup.record.reasons
    );
    assert_ne!(
        dup.record.nonce, a.record.nonce,
        "every request takes a fresh nonce"
    );

    // The same node key on another chip (seed 8, trusted too): the chip id changed.
    let other_chip = agents.start(8, "key-a");
    // A policy names one test root: chip 8's evidence is verified under its own root.
    let trusting8 = agents.policy(8, true);
    let changed = enrol(&other_chip, "node-a-moved", &trusting8, &registry).unwrap();
    assert!(
        changed.verdict.as_ref().unwrap().admitted,
        "the evidence itself verifies"
    );
    assert_eq!(changed.record.decision, Decision::Refuse);
    assert!(
        changed
            .record
            .reasons
            .iter()
            .any(|r| r.starts_with("chip id changed")),
        "{:?}",
        changed.record.reasons
    );

    // The same chip under a new node key: the chip is already registered.
    let new_key = agents.start(7, "key-b");
    let rekeyed = enrol(&new_key, "node-b", &trusting, &registry).unwrap();
    assert_eq!(rekeyed.record.decision, Decision::Refuse);
    assert!(
        rekeyed
            .record
            .reasons
            .iter()
            .any(|r| r.contains("is already registered under node key") && r.contains(&key_a)),
        "{:?}",
        rekeyed.record.reasons
    );

    // A policy that does not trust the test root: refused, with the failed checks.
    let strict = agents.policy(7, false);
    let refused = enrol(&agents.start(9, "key-c"), "node-c", &strict, &registry).unwrap();
    assert_eq!(
        refused.record.lab_policy, None,
        "an AMD-only policy can admit"
    );
    assert_eq!(refused.record.decision, Decision::Refuse);
    assert!(!refused.verdict.as_ref().unwrap().admitted);
    assert!(
        refused
            .record
            .reasons
            .iter()
            .any(|r| r.contains("evidence.source") || r.contains("snp.chain.ark_pinned")),
        "{:?}",
        refused.record.reasons
    );

    // An agent that does not answer: refused and recorded too.
    let gone = enrol("http://127.0.0.1:9", "node-gone", &trusting, &registry).unwrap();
    assert_eq!(gone.record.decision, Decision::Refuse);
    assert!(
        gone.record.reasons[0].contains("unreachable"),
        "{:?}",
        gone.record.reasons
    );

    // Six decisions, one line each, chained; one admitted node.
    let reg = Registry::open(&registry).unwrap();
    assert_eq!(reg.records().len(), 6);
    assert_eq!(reg.admitted().count(), 1);
    let seqs: Vec<u64> = reg.records().iter().map(|r| r.seq).collect();
    assert_eq!(seqs, [0, 1, 2, 3, 4, 5]);
    assert_eq!(reg.head(), gone.registry_head);
    drop(reg);

    // `registry nodes` gives attest fleet a NODES.toml pinning chip id and node key, and
    // `attest fleet`'s own parser reads it (once the governing body signed the head).
    let gb = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
    Registry::open(&registry)
        .unwrap()
        .sign_head(&gb, &provisioning::registry::head_path(&registry))
        .unwrap();
    // This test's registry has no witness yet: the explicit override starts one.
    let witness = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(BIN)
        .args(["registry", "nodes", "--registry"])
        .arg(&registry)
        .arg("--signer")
        .arg(hex::encode(gb.verifying_key().to_bytes()))
        .arg("--witness")
        .arg(witness.path().join("witness.json"))
        .arg("--no-witness")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let nodes =
        attestation::nodes::NodeList::parse(&String::from_utf8_lossy(&out.stdout), "NODES.toml")
            .unwrap();
    assert_eq!(nodes.node.len(), 1);
    assert_eq!(
        nodes.node[0].node_public_key.as_deref(),
        Some(key_a.as_str())
    );
    assert_eq!(
        nodes.node[0].config_digest.as_deref(),
        Some(hex::encode(digest).as_str())
    );
    assert_eq!(nodes.node[0].url, node_a);
}

#[test]
fn a_node_that_does_not_run_the_plans_configuration_is_refused_and_recorded() {
    let agents = Agents::new();
    let registry = agents.registry();
    let policy = agents.policy(7, true);
    let plan01 = agents.bundle("node-01");
    let enrol_01 = |url: &str, name: &str| {
        enrol_with(url, name, &policy, &registry, Some(&plan01), true).unwrap()
    };
    let failed = |e: &provisioning::enroll::Enrolment, check: &str| {
        assert_eq!(e.record.decision, Decision::Refuse);
        assert!(
            e.record.reasons.iter().any(|r| r.contains(check)),
            "{check}: {:?}",
            e.record.reasons
        );
    };
    // Another node's bundle (node-02's, same signer).
    let e = enrol_01(
        &agents.start_with(7, "k2", agents.binding("node-02")),
        "node-01",
    );
    failed(&e, "config.bundle_digest");
    assert_eq!(
        e.record.config_digest,
        Some(hex::encode(agents.binding("node-02").0))
    );
    // No bundle at all (image default or a refused partition).
    let e = enrol_01(&agents.start_with(7, "k3", ([0; 32], [0; 32])), "node-01");
    failed(&e, "config.signer");
    // The plan's digest but another signer: not pinned, and not the plan's.
    let other = ed25519_dalek::SigningKey::from_bytes(&[9; 32])
        .verifying_key()
        .to_bytes();
    let e = enrol_01(
        &agents.start_with(7, "k4", (agents.binding("node-01").0, other)),
        "node-01",
    );
    failed(&e, "config.signer");
    failed(&e, "not the plan's signer");
    // The plan's bundle: admitted.
    let e = enrol_01(&agents.start(7, "k5"), "node-01");
    assert_eq!(e.record.decision, Decision::Admit, "{:?}", e.record.reasons);
    let reg = Registry::open(&registry).unwrap();
    assert_eq!(reg.records().len(), 4);
    assert_eq!(reg.admitted().count(), 1);
}

#[test]
fn a_policy_without_allow_list_tcb_gpu_count_or_signer_is_refused_unless_lab() {
    let agents = Agents::new();
    let registry = agents.registry();
    let node = agents.start(7, "key-a");
    let ark = TestSigner::from_seed([7; 32]).unwrap().ark_pem();
    std::fs::write(agents.dir.path().join("ark.pem"), ark).unwrap();
    let all = ["identity", "tcb", "vmpl", "gpu", "config"];
    let plan = agents.bundle("node-01");
    for (i, leave_out) in all.iter().enumerate() {
        let sections: Vec<&str> = all.iter().copied().filter(|s| s != leave_out).collect();
        let path = agents.dir.path().join(format!("incomplete-{i}.toml"));
        std::fs::write(
            &path,
            format!(
                "{}[trust]\ntest_root_ark = \"ark.pem\"\n",
                agents.policy_sections(&sections)
            ),
        )
        .unwrap();
        let err = enrol_with(&node, "node-01", &path, &registry, Some(&plan), false).unwrap_err();
        assert_eq!(err.exit_code(), 2, "{err}");
        let want = match *leave_out {
            "identity" => "measurement allow-list",
            "tcb" => "TCB minimum",
            "vmpl" => "guest_policy.vmpl",
            "gpu" => "gpu.count",
            _ => "config.signers",
        };
        assert!(err.to_string().contains(want), "{err}");
        assert!(err.to_string().contains("trust.test_root_ark"), "{err}");
        assert!(err.to_string().contains("--lab-policy"), "{err}");
        assert!(
            !registry.exists(),
            "a refused policy decides nothing and records nothing"
        );
    }
    // Complete but for its test root: a lab policy, refused the same way.
    let err = enrol_with(
        &node,
        "node-01",
        &agents.policy(7, true),
        &registry,
        Some(&plan),
        false,
    )
    .unwrap_err();
    assert_eq!(err.exit_code(), 2, "{err}");
    assert!(err.to_string().contains("trust.test_root_ark"), "{err}");
    assert!(!registry.exists());
    // No plan bundle: refused the same way.
    let err = enrol_with(
        &node,
        "node-01",
        &agents.policy(7, true),
        &registry,
        None,
        false,
    )
    .unwrap_err();
    assert!(err.to_string().contains("--bundle"), "{err}");

    // The lab override: decided, and the record says under what.
    let lab = agents.dir.path().join("incomplete-0.toml");
    let e = enrol_with(&node, "node-01", &lab, &registry, None, true).unwrap();
    let lacking = e.record.lab_policy.clone().unwrap();
    assert!(
        lacking.iter().any(|l| l.contains("measurement allow-list")),
        "{lacking:?}"
    );
    assert!(
        lacking.iter().any(|l| l.contains("--bundle")),
        "{lacking:?}"
    );
    let line = std::fs::read_to_string(&registry).unwrap();
    assert!(line.contains("\"lab_policy\":["), "{line}");
    assert!(verify_chain(&line).is_ok());

    // The binary prints it loudly.
    let out = std::process::Command::new(BIN)
        .args(["enroll", "--node", &node, "--lab-policy", "--policy"])
        .arg(&lab)
        .arg("--registry")
        .arg(&registry)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("LAB POLICY"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_tampered_registry_is_detected_and_nothing_is_appended() {
    let agents = Agents::new();
    let registry = agents.registry();
    let trusting = agents.policy(7, true);
    let node = agents.start(7, "key-a");
    enrol(&node, "node-a", &trusting, &registry).unwrap();
    enrol("http://127.0.0.1:9", "gone", &trusting, &registry).unwrap();
    let pristine = std::fs::read_to_string(&registry).unwrap();
    assert!(verify_chain(&pristine).is_ok());

    // Change a recorded decision.
    let edited = pristine.replacen("\"decision\":\"refuse\"", "\"decision\":\"admit\"", 1);
    assert_ne!(edited, pristine);
    std::fs::write(&registry, &edited).unwrap();
    let err = enrol(&node, "node-a", &trusting, &registry).unwrap_err();
    assert_eq!(err.exit_code(), 5, "{err}");
    assert!(err.to_string().contains(":2: registry integrity"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&registry).unwrap(),
        edited,
        "nothing appended"
    );

    // Change the first line: its own hash and its successor's prev_sha256 disagree.
    let edited = pristine.replacen("\"name\":\"node-a\"", "\"name\":\"node-z\"", 1);
    std::fs::write(&registry, &edited).unwrap();
    let err = Registry::open(&registry).err().unwrap();
    assert!(err.to_string().contains(":1: registry integrity"), "{err}");

    // Remove the first line.
    let second = pristine.split_once('\n').unwrap().1;
    std::fs::write(&registry, second).unwrap();
    assert!(Registry::open(&registry).is_err());
    // A torn last line (a write cut short).
    std::fs::write(&registry, &pristine[..pristine.len() - 5]).unwrap();
    let err = Registry::open(&registry).err().unwrap();
    assert!(err.to_string().contains("not terminated"), "{err}");

    // The binary reports a broken chain with exit status 5, an intact signed one with 0.
    let gb = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
    let signer = hex::encode(gb.verifying_key().to_bytes());
    let witness = tempfile::tempdir().unwrap();
    let check = || {
        std::process::Command::new(BIN)
            .args(["registry", "check", "--signer", &signer, "--registry"])
            .arg(&registry)
            .arg("--witness")
            .arg(witness.path().join("witness.json"))
            .arg("--no-witness")
            .output()
            .unwrap()
    };
    assert_eq!(check().status.code(), Some(5));
    std::fs::write(&registry, &pristine).unwrap();
    let reg = Registry::open(&registry).unwrap();
    reg.sign_head(&gb, &provisioning::registry::head_path(&registry))
        .unwrap();
    drop(reg);
    let out = check();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("2 record(s), 1 registered, chain intact")
    );
}

#[test]
fn the_enroll_command_exits_0_when_admitted_and_1_when_refused() {
    let agents = Agents::new();
    let registry = agents.registry();
    let node = agents.start(7, "key-a");
    let run_with = |policy: &Path, lab: bool| {
        let mut cmd = std::process::Command::new(BIN);
        cmd.args(["enroll", "--node", &node, "--name", "node-a", "--policy"])
            .arg(policy)
            .arg("--registry")
            .arg(&registry)
            .arg("--bundle")
            .arg(agents.bundle("node-01"));
        if lab {
            cmd.arg("--lab-policy");
        }
        cmd.output().unwrap()
    };
    let run = |policy: &Path| run_with(policy, false);
    let out = run(&agents.policy(7, false));
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("REFUSED node-a"));
    // The test root makes it a lab policy: unusable without the override, admitted with it.
    let out = run(&agents.policy(7, true));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("trust.test_root_ark"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run_with(&agents.policy(7, true), true);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("ADMITTED node-a"));
    let out = run(Path::new("/nonexistent/policy.toml"));
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn an_unwaived_gap_is_refused_and_waivers_are_recorded() {
    let agents = Agents::new();
    let registry = agents.registry();
    let node = agents.start(7, "key-a");
    let plan = agents.bundle("node-01");
    // The test policy without its `[waive]` table: each check left without its value is
    // named, and nothing is decided.
    let policy = agents.policy(7, true);
    let unwaived = agents.dir.path().join("unwaived.toml");
    let text = std::fs::read_to_string(&policy).unwrap();
    assert!(text.contains(common::WAIVERS));
    std::fs::write(&unwaived, text.replace(common::WAIVERS, "")).unwrap();
    let err = enrol_with(&node, "node-01", &unwaived, &registry, Some(&plan), false).unwrap_err();
    assert_eq!(err.exit_code(), 2, "{err}");
    for check in [
        "trust.crl for snp.chain.crl",
        "tcb.min_firmware for snp.tcb.firmware",
        "snp.policy.abi",
        "snp.policy.guest_svn",
        "config.image_signer",
    ] {
        assert!(err.to_string().contains(check), "{check}: {err}");
    }
    assert!(!registry.exists());
    // With them, the decision records what it was taken without.
    let r = enrol(&node, "node-01", &policy, &registry).unwrap().record;
    assert_eq!(r.decision, Decision::Admit, "{:?}", r.reasons);
    let waived = r.waived.unwrap();
    assert_eq!(waived.len(), 5, "{waived:?}");
    assert!(
        waived.contains(&"snp.chain.crl: test chain: no CRL".to_string()),
        "{waived:?}"
    );
}
