//! The registry follows a node's life: re-key, configuration update and retirement, each
//! taken only from verified evidence and refused from then on where it moves past an
//! identity or a bundle; and every tampering with the file is found against the governing
//! body's last signed head, by `registry check --signer` and by `registry nodes`, which
//! gives `attest fleet` nothing from a registry that does not verify; and an older
//! registry put back with its older signed head, or a fork of it, is found against the
//! governing body's witness of the last head it verified.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use attestation::fleet::{FleetOptions, NodeStatus};
use attestation::nodes::NodeList;
use attestation::test_source::test_measurement;
use ed25519_dalek::SigningKey;
use provisioning::registry::{
    Decision, Record, Registry, RegistryError, TransitionError, head_path,
};
use provisioning::witness::{self, WitnessError};
use sha2::{Digest, Sha256};

mod common;
use common::{Agents, enrol, enrol_with, now};

const BIN: &str = env!("CARGO_BIN_EXE_provision");

/// The governing body's key.
fn gb() -> SigningKey {
    SigningKey::from_bytes(&[9; 32])
}

fn gb_pub() -> String {
    hex::encode(gb().verifying_key().to_bytes())
}

/// `provision` with `--registry` and, for the commands that check the signed head,
/// `--witness` (the registry's witness, outside its directory).
fn provision(args: &[&str], registry: &Path) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args).arg("--registry").arg(registry);
    if args[0] == "registry" && !args.contains(&"--witness") {
        cmd.arg("--witness").arg(witness_of(registry));
    }
    cmd.output().unwrap()
}

/// The witness the tests keep for `registry`: one file per registry under the build's
/// temporary directory, outside the registry's own.
fn witness_of(registry: &Path) -> PathBuf {
    let name = hex::encode(Sha256::digest(registry.as_os_str().as_encoded_bytes()));
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("registry-witness")
        .join(format!("{name}.json"))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `provision keygen` in `dir`: the key file and the public key (hex).
fn keygen(dir: &Path) -> (PathBuf, String) {
    let key = dir.join("gb.key");
    let out = Command::new(BIN)
        .args(["keygen", "--out"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let public = std::fs::read_to_string(dir.join("gb.key.pub")).unwrap();
    (key, public.trim().to_string())
}

/// The governing body signs the head and records it in its witness, as `registry sign`.
fn sign(registry: &Path) {
    let signed = sign_head_only(registry);
    witness::write(&witness_of(registry), registry, &signed).unwrap();
}

/// A head signed with the governing body's key where its witness is not kept (another
/// machine, or a copy of the key): the witness does not move.
fn sign_head_only(registry: &Path) -> provisioning::registry::SignedHead {
    Registry::open(registry)
        .unwrap()
        .sign_head(&gb(), &head_path(registry))
        .unwrap()
}

/// `registry nodes` with the governing body's key, parsed as `attest fleet` parses it.
fn nodes(registry: &Path) -> NodeList {
    let out = provision(&["registry", "nodes", "--signer", &gb_pub()], registry);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    NodeList::parse(&String::from_utf8_lossy(&out.stdout), "NODES.toml").unwrap()
}

// Each transition opens the registry for one statement: an open registry holds its lock,
// which the next enrolment would wait for.

fn rekey(registry: &Path, seq: u64) -> Result<Record, TransitionError> {
    Registry::open(registry).unwrap().rekey(seq, "TCB update")
}

fn config_update(registry: &Path, seq: u64) -> Result<Record, TransitionError> {
    Registry::open(registry)
        .unwrap()
        .config_update(seq, "re-plan")
}

fn refused(result: Result<Record, TransitionError>, want: &str) {
    match result {
        Err(e @ TransitionError::Refused { .. }) => {
            assert!(e.to_string().contains(want), "{want}: {e}")
        }
        other => panic!("{want}: {other:?}"),
    }
}

fn refused_by(e: &Record, want: &str) {
    assert_eq!(e.decision, Decision::Refuse, "{want}: {:?}", e.reasons);
    assert!(
        e.reasons.iter().any(|r| r.contains(want)),
        "{want}: {:?}",
        e.reasons
    );
}

/// The policy `agents.policy(seed, true)` with another measurement on its allow-list.
fn policy_without_test_measurement(agents: &Agents, seed: u8) -> PathBuf {
    let text = std::fs::read_to_string(agents.policy(seed, true)).unwrap();
    let other = text.replace(&hex::encode(test_measurement()), &"ab".repeat(48));
    assert_ne!(other, text);
    let path = agents.dir.path().join(format!("policy-{seed}-other.toml"));
    std::fs::write(&path, other).unwrap();
    path
}

#[test]
fn a_rekey_takes_the_same_chips_verified_new_key_and_retires_the_old_one() {
    let agents = Agents::new();
    let registry = agents.registry();
    let policy = agents.policy(7, true);
    let node_a = agents.start(7, "key-a");
    let a = enrol(&node_a, "node-a", &policy, &registry).unwrap().record;
    assert_eq!(a.decision, Decision::Admit, "{:?}", a.reasons);
    let key_a = a.node_public_key.clone().unwrap();

    // The new identity's enrolment: verified, refused only because the chip is registered.
    let node_b = agents.start(7, "key-b");
    let b = enrol(&node_b, "node-a", &policy, &registry).unwrap().record;
    refused_by(&b, "is already registered under node key");
    // Another chip under a registered key: verified, but that chip is no registered node.
    let moved = enrol(
        &agents.start(8, "key-a"),
        "x",
        &agents.policy(8, true),
        &registry,
    )
    .unwrap()
    .record;
    refused_by(&moved, "chip id changed");
    refused(rekey(&registry, moved.seq), "is not a registered node");
    // A key another registered chip has: a node key belongs to one chip.
    let c = enrol(
        &agents.start(8, "key-8"),
        "node-c",
        &agents.policy(8, true),
        &registry,
    )
    .unwrap()
    .record;
    assert_eq!(c.decision, Decision::Admit, "{:?}", c.reasons);
    let taken = enrol(&agents.start(7, "key-8"), "node-a", &policy, &registry)
        .unwrap()
        .record;
    refused_by(&taken, "chip id changed");
    refused(rekey(&registry, taken.seq), "is registered with chip id");
    // The new key with a measurement the policy does not allow: its evidence failed.
    let other = policy_without_test_measurement(&agents, 7);
    let bad = enrol(&node_b, "node-a", &other, &registry).unwrap().record;
    refused_by(&bad, "check snp.identity.measurement failed");
    refused(
        rekey(&registry, bad.seq),
        "not an enrolment whose evidence verified",
    );
    // A third key, enrolled before the re-key below: its evidence will predate the node.
    let stale = enrol(&agents.start(7, "key-c"), "node-a", &policy, &registry)
        .unwrap()
        .record;
    refused_by(&stale, "is already registered under node key");
    refused(
        Registry::open(&registry).unwrap().rekey(b.seq, " "),
        "needs a reason",
    );

    let r = rekey(&registry, b.seq).unwrap();
    assert_eq!(r.decision, Decision::Rekey);
    assert_eq!(r.node_public_key, b.node_public_key);
    assert_eq!(r.chip_id, a.chip_id);
    assert_eq!(
        (r.supersedes, r.evidence_record),
        (Some(a.seq), Some(b.seq))
    );
    assert_eq!(r.name, "node-a");
    assert_eq!(r.reason.as_deref(), Some("TCB update"));
    refused(rekey(&registry, b.seq), "already used");
    refused(
        rekey(&registry, stale.seq),
        "predates the node's current record",
    );

    // The old key is refused from then on: on its own chip and on any other.
    let again = enrol(&node_a, "node-a", &policy, &registry).unwrap().record;
    refused_by(&again, &format!("retired: node key {key_a} was retired"));
    refused(rekey(&registry, again.seq), "was retired");
    let elsewhere = enrol(
        &agents.start(9, "key-a"),
        "y",
        &agents.policy(9, true),
        &registry,
    )
    .unwrap()
    .record;
    refused_by(
        &elsewhere,
        &format!("retired: node key {key_a} was retired"),
    );

    // attest fleet is given the new key.
    sign(&registry);
    let list = nodes(&registry);
    let a_now = list.node.iter().find(|n| n.name == "node-a").unwrap();
    assert_eq!(a_now.node_public_key, b.node_public_key);
    assert_eq!(a_now.url, node_b);
    assert!(
        list.node
            .iter()
            .all(|n| n.node_public_key.as_deref() != Some(&key_a))
    );
}

#[test]
fn a_configuration_update_supersedes_the_bundle_and_attest_fleet_refuses_the_old_one() {
    let agents = Agents::new();
    let registry = agents.registry();
    let policy = agents.policy(7, true);
    let old_url = agents.start(7, "key-a");
    let a = enrol(&old_url, "node-01", &policy, &registry)
        .unwrap()
        .record;
    assert_eq!(a.decision, Decision::Admit, "{:?}", a.reasons);
    let (old, signer) = agents.binding("node-01");

    // The re-planned bundle, applied by the same node (same chip, same key).
    let new_bundle = agents.replan().join("node-01");
    let new = sn_config::Bundle::load_dir(&new_bundle, &[])
        .unwrap()
        .digest();
    assert_ne!(new, old);
    let new_url = agents.start_with(7, "key-a", (new, signer));
    // Without the plan's bundle the new digest was checked against nothing.
    let unplanned = enrol_with(&new_url, "node-01", &policy, &registry, None, true)
        .unwrap()
        .record;
    refused_by(&unplanned, "duplicate");
    refused(
        config_update(&registry, unplanned.seq),
        "not checked against a plan bundle",
    );
    // Another key is a re-key, not a configuration update.
    let other_key = enrol_with(
        &agents.start_with(7, "key-z", (new, signer)),
        "node-01",
        &policy,
        &registry,
        Some(&new_bundle),
        true,
    )
    .unwrap()
    .record;
    refused(
        config_update(&registry, other_key.seq),
        "not the node's current key",
    );
    let planned = enrol_with(
        &new_url,
        "node-01",
        &policy,
        &registry,
        Some(&new_bundle),
        true,
    )
    .unwrap()
    .record;
    refused_by(&planned, "duplicate");

    let u = config_update(&registry, planned.seq).unwrap();
    assert_eq!(u.decision, Decision::ConfigUpdate);
    assert_eq!(u.config_digest, Some(hex::encode(new)));
    assert_eq!(u.node_public_key, a.node_public_key);
    assert_eq!(
        (u.supersedes, u.evidence_record),
        (Some(a.seq), Some(planned.seq))
    );
    refused(config_update(&registry, planned.seq), "already used");

    // The superseded bundle is refused from then on: no rollback.
    let back = enrol_with(
        &old_url,
        "node-01",
        &policy,
        &registry,
        Some(&agents.bundle("node-01")),
        true,
    )
    .unwrap()
    .record;
    refused_by(&back, "duplicate");
    refused(config_update(&registry, back.seq), "rollback");
    refused(rekey(&registry, back.seq), "not a re-key");
    // Nor by a re-key: a new key running the superseded bundle.
    let back = enrol_with(
        &agents.start_with(7, "key-r", (old, signer)),
        "node-01",
        &policy,
        &registry,
        Some(&agents.bundle("node-01")),
        true,
    )
    .unwrap()
    .record;
    refused_by(&back, "is already registered under node key");
    refused(rekey(&registry, back.seq), "a rollback");
    // A re-key that changes the configuration to one no plan bundle was checked against.
    let unplanned = enrol_with(
        &agents.start_with(7, "key-s", agents.binding("node-02")),
        "node-01",
        &policy,
        &registry,
        None,
        true,
    )
    .unwrap()
    .record;
    refused_by(&unplanned, "is already registered under node key");
    refused(
        rekey(&registry, unplanned.seq),
        "not checked against a plan bundle",
    );

    // NODES.toml pins the current digest: attest fleet admits the node running it and
    // rejects the same node still running the superseded one.
    sign(&registry);
    let mut list = nodes(&registry);
    assert_eq!(list.node.len(), 1);
    assert_eq!(list.node[0].config_digest, Some(hex::encode(new)));
    assert_eq!(list.node[0].url, new_url);
    let fleet = |list: &NodeList| {
        let policy = Arc::new(attestation::policy::Policy::load(&policy).unwrap());
        let chains = Arc::new(attestation::ChainVerifier::new(policy.trust_store()));
        let opts = FleetOptions {
            concurrency: 1,
            timeout: Duration::from_secs(30),
            now: now(),
        };
        let results = agents
            .runtime
            .block_on(attestation::fleet::run(list, policy, chains, opts));
        results.into_iter().next().unwrap()
    };
    let current = fleet(&list);
    assert_eq!(current.status, NodeStatus::Admitted, "{}", current.reason);
    list.node[0].url = old_url;
    let superseded = fleet(&list);
    assert_eq!(superseded.status, NodeStatus::Rejected);
    assert!(
        superseded.reason.contains("config.bundle_digest"),
        "{}",
        superseded.reason
    );
}

#[test]
fn a_retired_node_is_not_listed_and_refused_from_then_on() {
    let agents = Agents::new();
    let registry = agents.registry();
    let policy = agents.policy(7, true);
    let node_a = agents.start(7, "key-a");
    let a = enrol(&node_a, "node-a", &policy, &registry).unwrap().record;
    let b = enrol(
        &agents.start(8, "key-b"),
        "node-b",
        &agents.policy(8, true),
        &registry,
    )
    .unwrap()
    .record;
    assert_eq!((a.decision, b.decision), (Decision::Admit, Decision::Admit));
    let (key, signer) = keygen(agents.dir.path());
    let retire = |node: &str, reason: &str| {
        let k = key.to_str().unwrap();
        provision(
            &[
                "registry", "retire", "--node", node, "--reason", reason, "--key", k,
            ],
            &registry,
        )
    };

    // The registry has records but no signed head yet: a transition refuses it.
    let out = retire("node-a", "decommissioned");
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(stderr(&out).contains("no signed head"), "{}", stderr(&out));
    let k = key.to_str().unwrap();
    let out = provision(&["registry", "sign", "--key", k], &registry);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(stderr(&out).contains("--initial"), "{}", stderr(&out));
    let out = provision(&["registry", "sign", "--initial", "--key", k], &registry);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = provision(&["registry", "sign", "--initial", "--key", k], &registry);
    assert_eq!(out.status.code(), Some(2), "a second first signing");

    // Refused transitions record nothing.
    let before = std::fs::read(&registry).unwrap();
    assert_eq!(retire("node-x", "decommissioned").status.code(), Some(1));
    assert_eq!(retire("node-a", " ").status.code(), Some(1));
    assert_eq!(std::fs::read(&registry).unwrap(), before);

    let out = retire("node-a", "decommissioned");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reg = Registry::open(&registry).unwrap();
    let r = reg.records().last().unwrap().clone();
    assert_eq!(r.decision, Decision::Retire);
    assert_eq!((r.name.as_str(), r.supersedes), ("node-a", Some(a.seq)));
    assert_eq!(r.reason.as_deref(), Some("decommissioned"));
    let current: Vec<&str> = reg.admitted().map(|r| r.name.as_str()).collect();
    assert_eq!(current, ["node-b"]);
    drop(reg);
    // The transition signed the new head.
    let out = provision(&["registry", "check", "--signer", &signer], &registry);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = provision(&["registry", "nodes", "--signer", &signer], &registry);
    let list = NodeList::parse(&String::from_utf8_lossy(&out.stdout), "NODES.toml").unwrap();
    let listed: Vec<&str> = list.node.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(listed, ["node-b"]);

    // Its chip and key are refused, and no transition brings it back.
    let again = enrol(&node_a, "node-a", &policy, &registry).unwrap().record;
    refused_by(&again, "retired: chip id");
    refused_by(&again, "retired: node key");
    refused(rekey(&registry, again.seq), "is not a registered node");
    let new_key = enrol(&agents.start(7, "key-n"), "node-a", &policy, &registry)
        .unwrap()
        .record;
    refused_by(&new_key, "retired: chip id");
    assert_eq!(retire("node-a", "again").status.code(), Some(1));
}

// Tampering, against a registry of three records whose head the governing body signed.

fn record(name: &str, decision: Decision, id: u8) -> Record {
    Record {
        seq: 0,
        prev_sha256: String::new(),
        time: "2026-12-01T00:00:00Z".into(),
        unix_time: 1_796_083_200,
        decision,
        name: name.into(),
        node_url: format!("http://{name}:9420"),
        chip_id: Some(hex::encode([id; 64])),
        node_public_key: Some(hex::encode([id; 32])),
        measurement: Some(hex::encode(test_measurement())),
        evidence_source: Some("test".into()),
        nonce: hex::encode([id; 32]),
        policy: "policy.toml".into(),
        policy_sha256: hex::encode([1; 32]),
        verify_unix_time: Some(1_796_083_200),
        config_digest: Some(hex::encode([2; 32])),
        config_signer: Some(hex::encode([3; 32])),
        planned_config_digest: Some(hex::encode([2; 32])),
        lab_policy: None,
        waived: None,
        reasons: match decision {
            Decision::Refuse => vec!["unreachable: connection refused".into()],
            _ => Vec::new(),
        },
        reason: None,
        supersedes: None,
        evidence_record: None,
        entry_sha256: String::new(),
    }
}

fn write(registry: &Path, records: &[Record]) {
    let mut reg = Registry::open(registry).unwrap();
    for r in records {
        reg.append(r.clone()).unwrap();
    }
}

fn three() -> [Record; 3] {
    [
        record("node-01", Decision::Admit, 1),
        record("node-02", Decision::Refuse, 2),
        record("node-03", Decision::Admit, 3),
    ]
}

/// A registry of [`three`] records, its head signed.
fn signed_registry() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("registry.jsonl");
    write(&registry, &three());
    sign(&registry);
    (dir, registry)
}

fn lines(registry: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(registry).unwrap();
    text.lines().map(|l| format!("{l}\n")).collect()
}

/// What the library's check of the signed head says.
fn check_head(registry: &Path) -> Result<u64, RegistryError> {
    let signer = gb().verifying_key().to_bytes();
    let reg = Registry::open(registry)?;
    Ok(reg.check_head(&head_path(registry), &signer, false)?.signed)
}

/// `registry check --signer` and `registry nodes` both refuse the registry with status 5
/// and say why; the library says the same.
fn detected(registry: &Path, why: &str) {
    let lib = check_head(registry).unwrap_err().to_string();
    assert!(lib.contains(why), "{why}: {lib}");
    for command in ["check", "nodes"] {
        let out = provision(&["registry", command, "--signer", &gb_pub()], registry);
        assert_eq!(out.status.code(), Some(5), "{command}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(why),
            "{command}, {why}: {}",
            stderr(&out)
        );
        assert!(out.stdout.is_empty() || command == "check");
    }
}

#[test]
fn an_intact_signed_registry_passes_check_and_nodes() {
    let (_dir, registry) = signed_registry();
    assert_eq!(check_head(&registry).unwrap(), 3);
    let out = provision(&["registry", "check", "--signer", &gb_pub()], &registry);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("3 record(s), 2 registered"));
    let listed: Vec<String> = nodes(&registry).node.into_iter().map(|n| n.name).collect();
    assert_eq!(listed, ["node-01", "node-03"]);
    // Without the governing body's key there is no list.
    let out = provision(&["registry", "nodes"], &registry);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

#[test]
fn a_truncated_last_record_is_detected() {
    let (_dir, registry) = signed_registry();
    let pristine = std::fs::read_to_string(&registry).unwrap();
    // Cut at the line boundary: the chain is intact, the signed head is not there.
    let l = lines(&registry);
    std::fs::write(&registry, l[..2].concat()).unwrap();
    detected(
        &registry,
        "the file has 2 record(s), the signed head covers 3",
    );
    // Cut inside the line: a torn write.
    std::fs::write(&registry, &pristine[..pristine.len() - 10]).unwrap();
    detected(
        &registry,
        ":3: registry integrity: the last line is not terminated",
    );
}

#[test]
fn an_emptied_file_is_detected() {
    let (_dir, registry) = signed_registry();
    std::fs::write(&registry, "").unwrap();
    detected(
        &registry,
        "the file has 0 record(s), the signed head covers 3",
    );
}

#[test]
fn a_deleted_record_in_the_middle_is_detected() {
    let (_dir, registry) = signed_registry();
    let l = lines(&registry);
    std::fs::write(&registry, [l[0].as_str(), l[2].as_str()].concat()).unwrap();
    detected(
        &registry,
        ":2: registry integrity: seq 2 where 1 was expected",
    );
}

#[test]
fn an_edited_record_is_detected() {
    let (_dir, registry) = signed_registry();
    let pristine = std::fs::read_to_string(&registry).unwrap();
    // Edited in place: the line's own hash no longer matches.
    let edited = pristine.replacen("\"decision\":\"refuse\"", "\"decision\":\"admit\"", 1);
    assert_ne!(edited, pristine);
    std::fs::write(&registry, &edited).unwrap();
    detected(
        &registry,
        ":2: registry integrity: entry_sha256 does not match",
    );
    // The last record replaced by an edited one with its hashes recomputed: the chain
    // holds, the signed head's line is not there.
    std::fs::write(
        &registry,
        pristine
            .lines()
            .take(2)
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    )
    .unwrap();
    let mut forged = three()[2].clone();
    forged.node_public_key = Some(hex::encode([0xee; 32]));
    write(&registry, &[forged]);
    detected(&registry, "line 3 has SHA-256");
    detected(&registry, "the registry was rewritten");
}

#[test]
fn a_forged_appended_record_is_detected() {
    let (_dir, registry) = signed_registry();
    write(&registry, &[record("intruder", Decision::Admit, 0xee)]);
    detected(
        &registry,
        "1 record(s) from seq 3 on are not covered by the signed head",
    );
    // Reviewing and signing it is what makes it part of the registry.
    sign(&registry);
    assert_eq!(check_head(&registry).unwrap(), 4);
}

#[test]
fn a_full_rewrite_is_detected() {
    let (_dir, registry) = signed_registry();
    // A consistent chain of as many records, other content.
    std::fs::remove_file(&registry).unwrap();
    let mut other = three();
    other[1] = record("node-02", Decision::Admit, 0xee);
    write(&registry, &other);
    detected(&registry, "the registry was rewritten");
    // And one with more records than were signed.
    std::fs::remove_file(&registry).unwrap();
    other[0].name = "node-00".into();
    write(&registry, &other);
    write(&registry, &[record("node-04", Decision::Admit, 4)]);
    detected(&registry, "the registry was rewritten");
}

#[test]
fn a_head_not_signed_by_the_governing_body_is_detected() {
    let (_dir, registry) = signed_registry();
    let head = head_path(&registry);
    let genuine = std::fs::read_to_string(&head).unwrap();
    // Signed by another key, which names itself.
    let other = SigningKey::from_bytes(&[5; 32]);
    Registry::open(&registry)
        .unwrap()
        .sign_head(&other, &head)
        .unwrap();
    detected(&registry, "not the governing body's key");
    // Signed by another key under the governing body's name.
    let mut forged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&head).unwrap()).unwrap();
    forged["signer"] = gb_pub().into();
    std::fs::write(&head, forged.to_string()).unwrap();
    detected(&registry, "the signature does not verify");
    // The governing body's signature over another record count (hiding a truncation).
    let mut moved: serde_json::Value = serde_json::from_str(&genuine).unwrap();
    moved["records"] = 2.into();
    std::fs::write(&head, moved.to_string()).unwrap();
    std::fs::write(&registry, lines(&registry)[..2].concat()).unwrap();
    detected(&registry, "the signature does not verify");
}

#[test]
fn a_missing_head_is_detected() {
    let (_dir, registry) = signed_registry();
    std::fs::remove_file(head_path(&registry)).unwrap();
    detected(&registry, "no signed head at");
    // `sign` does not quietly start over either.
    let dir = tempfile::tempdir().unwrap();
    let (key, _) = keygen(dir.path());
    let out = provision(
        &["registry", "sign", "--key", key.to_str().unwrap()],
        &registry,
    );
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the head was removed"),
        "{}",
        stderr(&out)
    );
    assert!(!head_path(&registry).exists());
}

// Rollback and forks, against the governing body's witness of the last head it verified.

fn check(registry: &Path) -> Output {
    provision(&["registry", "check", "--signer", &gb_pub()], registry)
}

/// `registry check` and `registry nodes` refuse with status 5 and say `why`.
fn refused_against_witness(registry: &Path, why: &str) {
    for command in ["check", "nodes"] {
        let out = provision(&["registry", command, "--signer", &gb_pub()], registry);
        assert_eq!(out.status.code(), Some(5), "{command}: {}", stderr(&out));
        assert!(stderr(&out).contains(why), "{command}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{command}");
    }
}

/// The library's witness check of `registry` (its signed head verified first).
fn witness_check(registry: &Path) -> Result<witness::Outcome, WitnessError> {
    let reg = Registry::open(registry).unwrap();
    let signer = gb().verifying_key().to_bytes();
    let checked = reg
        .check_head(&head_path(registry), &signer, false)
        .unwrap();
    witness::check(&reg, &checked.head, &witness_of(registry), false, &signer)
}

#[test]
fn a_rollback_to_an_older_signed_state_is_refused() {
    let (_dir, registry) = signed_registry();
    let head = head_path(&registry);
    let old = (
        std::fs::read(&registry).unwrap(),
        std::fs::read(&head).unwrap(),
    );
    write(&registry, &[record("node-04", Decision::Admit, 4)]);
    sign(&registry);
    assert_eq!(check(&registry).status.code(), Some(0));
    // The older registry and its older head, both genuine: the chain and the signature
    // verify, only the witness shows that the governing body has seen more.
    std::fs::write(&registry, &old.0).unwrap();
    std::fs::write(&head, &old.1).unwrap();
    assert_eq!(check_head(&registry).unwrap(), 3);
    refused_against_witness(&registry, "rollback: the signed head of");
    refused_against_witness(&registry, "covers 3 record(s), the witness");
    assert!(matches!(
        witness_check(&registry),
        Err(WitnessError::Rollback {
            signed: 3,
            witnessed: 4,
            ..
        })
    ));
}

#[test]
fn a_fork_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("registry.jsonl");
    write(&registry, &three()[..2]);
    sign(&registry);
    let two = (
        std::fs::read(&registry).unwrap(),
        std::fs::read(head_path(&registry)).unwrap(),
    );
    write(&registry, &three()[2..]);
    sign(&registry);
    assert_eq!(check(&registry).status.code(), Some(0));
    // Back to two records, then another history signed on top of it where the witness is
    // not kept: as many records and more, validly signed, not the ones witnessed.
    std::fs::write(&registry, &two.0).unwrap();
    std::fs::write(head_path(&registry), &two.1).unwrap();
    write(
        &registry,
        &[
            record("node-09", Decision::Admit, 9),
            record("node-10", Decision::Admit, 10),
        ],
    );
    sign_head_only(&registry);
    assert_eq!(check_head(&registry).unwrap(), 4);
    refused_against_witness(&registry, "fork: record 3 of");
    assert!(matches!(
        witness_check(&registry),
        Err(WitnessError::Fork { records: 3, .. })
    ));
}

#[test]
fn normal_growth_is_accepted_and_moves_the_witness() {
    let (_dir, registry) = signed_registry();
    write(
        &registry,
        &[
            record("node-04", Decision::Admit, 4),
            record("node-05", Decision::Refuse, 5),
        ],
    );
    sign_head_only(&registry);
    let out = check(&registry);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("5 record(s), 3 registered"), "{stdout}");
    assert!(stdout.contains("(3 record(s))"), "{stdout}");
    // The check recorded the head it verified.
    assert_eq!(
        witness_check(&registry).unwrap(),
        witness::Outcome::Extends(5)
    );
    let w: witness::Witness =
        serde_json::from_slice(&std::fs::read(witness_of(&registry)).unwrap()).unwrap();
    assert_eq!(w.records, 5);
}

#[test]
fn a_missing_witness_is_refused_unless_overridden() {
    let (_dir, registry) = signed_registry();
    std::fs::remove_file(witness_of(&registry)).unwrap();
    refused_against_witness(&registry, "no witness at");
    // The override is explicit and said in the output; it starts the witness.
    let out = provision(
        &["registry", "check", "--signer", &gb_pub(), "--no-witness"],
        &registry,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("NO WITNESS (--no-witness)"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(stderr(&out).contains("NOT checked for a rollback"));
    assert_eq!(
        witness_check(&registry).unwrap(),
        witness::Outcome::Extends(3)
    );
    // Once there is a witness the override cannot skip it.
    let out = provision(
        &["registry", "check", "--signer", &gb_pub(), "--no-witness"],
        &registry,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is always checked"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_witness_beside_the_registry_or_not_signed_is_refused() {
    let (dir, registry) = signed_registry();
    // Where a restore of the registry's directory would put it back too.
    let beside = dir.path().join("sub/witness.json");
    let out = provision(
        &[
            "registry",
            "check",
            "--signer",
            &gb_pub(),
            "--witness",
            beside.to_str().unwrap(),
            "--no-witness",
        ],
        &registry,
    );
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("inside the registry's directory"),
        "{}",
        stderr(&out)
    );
    // A witness whose head the governing body did not sign (moved back by hand).
    let path = witness_of(&registry);
    let mut w: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    w["records"] = 2.into();
    std::fs::write(&path, w.to_string()).unwrap();
    refused_against_witness(
        &registry,
        "the witnessed head: the signature does not verify",
    );
}
