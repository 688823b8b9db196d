//! The `attest` binary: outputs and exit codes (0 admitted, 1 rejected, 2 unusable input).

use std::process::Command;

use attestation::collect::{Attester, GpuSource, SnpSource};
use attestation::test_source::TestSigner;

fn sev(path: &str) -> String {
    format!("{}/testdata/sev/{path}", env!("CARGO_MANIFEST_DIR"))
}

fn attest(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_attest"))
        .args(args)
        .output()
        .expect("run attest");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn verify_report_with_snpguest_style_files() {
    let t = ["--time", "2026-11-29T00:00:00Z"];
    // go-sev-guest: debug allowed -> rejected, with the failing check named in the JSON.
    let (code, out, _) = attest(
        &[
            &[
                "verify-report",
                "--report",
                &sev("go-sev-guest/attestation.bin"),
                "--vcek",
                &sev("go-sev-guest/vcek.testcer"),
                "--json",
            ][..],
            &t,
        ]
        .concat(),
    );
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let failed: Vec<&str> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["outcome"] == "fail")
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(failed, vec!["snp.policy.debug"]);
    // trustee with a certs dir holding cert_chain.pem -> admitted, table output.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        sev("go-sev-guest/ask_ark_milan.pem"),
        dir.path().join("cert_chain.pem"),
    )
    .unwrap();
    let (code, out, _) = attest(
        &[
            &[
                "verify-report",
                "--report",
                &sev("trustee/test-report.bin"),
                "--vcek",
                &sev("trustee/test-vcek.der"),
                "--certs",
                dir.path().to_str().unwrap(),
            ][..],
            &t,
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("PASS  snp.report.signature") && out.contains("ADMITTED"),
        "{out}"
    );
    // The sev crate's hex report.
    let (code, out, _) = attest(
        &[
            &[
                "verify-report",
                "--report",
                &sev("sev-crate/report_milan.hex"),
                "--vcek",
                &sev("sev-crate/vcek_milan.der"),
            ][..],
            &t,
        ]
        .concat(),
    );
    assert!(out.contains("PASS  snp.report.signature"), "{out}");
    assert!(code == 0 || code == 1);
    // Unusable input: missing file, bad time, empty certs dir.
    assert_eq!(
        attest(&[
            "verify-report",
            "--report",
            "/nonexistent",
            "--vcek",
            &sev("trustee/test-vcek.der")
        ])
        .0,
        2
    );
    assert_eq!(
        attest(&[
            "verify-report",
            "--report",
            &sev("trustee/test-report.bin"),
            "--vcek",
            &sev("trustee/test-vcek.der"),
            "--time",
            "yesterday"
        ])
        .0,
        2
    );
    let empty = tempfile::tempdir().unwrap();
    assert_eq!(
        attest(&[
            "verify-report",
            "--report",
            &sev("trustee/test-report.bin"),
            "--vcek",
            &sev("trustee/test-vcek.der"),
            "--certs",
            empty.path().to_str().unwrap()
        ])
        .0,
        2
    );
    // A VCEK file that is not a certificate is a failed check, not unusable input.
    let (code, out, _) = attest(&[
        "verify-report",
        "--report",
        &sev("trustee/test-report.bin"),
        "--vcek",
        &sev("trustee/test-report.bin"),
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAIL  snp.chain.vcek_parse"), "{out}");
}

#[test]
fn verify_bundle_from_the_test_source() {
    let dir = tempfile::tempdir().unwrap();
    let signer = TestSigner::from_seed([8; 32]).unwrap();
    std::fs::write(dir.path().join("test-ark.pem"), signer.ark_pem()).unwrap();
    let attester = Attester {
        node_key: ed25519_dalek::SigningKey::from_bytes(&[4; 32]),
        snp: SnpSource::Test(Box::new(signer)),
        gpu: GpuSource::None,
        config: attestation::bundle::ConfigBinding::NONE,
    };
    let nonce = [0x5A; 32];
    let bundle = attester.attest(&nonce).unwrap();
    let evidence = dir.path().join("bundle.json");
    std::fs::write(&evidence, serde_json::to_vec(&bundle).unwrap()).unwrap();
    std::fs::write(
        dir.path().join("policy.toml"),
        "[trust]\ntest_root_ark = \"test-ark.pem\"\n[guest_policy]\nvmpl = [0]\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("amd-only.toml"),
        "[guest_policy]\nvmpl = [0]\n",
    )
    .unwrap();
    let ev = evidence.to_str().unwrap();
    let policy = dir.path().join("policy.toml");
    let amd_only = dir.path().join("amd-only.toml");
    let n = hex::encode(nonce);
    let (code, out, _) = attest(&[
        "verify",
        "--evidence",
        ev,
        "--policy",
        policy.to_str().unwrap(),
        "--nonce",
        &n,
    ]);
    assert_eq!(code, 0, "{out}");
    let (code, out, _) = attest(&[
        "verify",
        "--evidence",
        ev,
        "--policy",
        amd_only.to_str().unwrap(),
        "--nonce",
        &n,
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAIL  snp.chain.ark_pinned"), "{out}");
    let (code, out, _) = attest(&[
        "verify",
        "--evidence",
        ev,
        "--policy",
        policy.to_str().unwrap(),
        "--nonce",
        &"00".repeat(32),
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAIL  binding.nonce"), "{out}");
    // Unusable: bad nonce, bad policy, not a bundle.
    assert_eq!(
        attest(&[
            "verify",
            "--evidence",
            ev,
            "--policy",
            policy.to_str().unwrap(),
            "--nonce",
            "abc"
        ])
        .0,
        2
    );
    std::fs::write(
        dir.path().join("bad.toml"),
        "[guest_policy]\nunknown_knob = 1\n",
    )
    .unwrap();
    assert_eq!(
        attest(&[
            "verify",
            "--evidence",
            ev,
            "--policy",
            dir.path().join("bad.toml").to_str().unwrap(),
            "--nonce",
            &n
        ])
        .0,
        2
    );
    assert_eq!(
        attest(&[
            "verify",
            "--evidence",
            policy.to_str().unwrap(),
            "--policy",
            policy.to_str().unwrap(),
            "--nonce",
            &n
        ])
        .0,
        2
    );
}

#[test]
fn fleet_with_no_reachable_node_reports_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    std::fs::write(
        dir.path().join("nodes.toml"),
        format!("[[node]]\nname = \"gone\"\nurl = \"http://{dead}\"\n"),
    )
    .unwrap();
    std::fs::write(dir.path().join("policy.toml"), "").unwrap();
    let (code, out, _) = attest(&[
        "fleet",
        "--nodes",
        dir.path().join("nodes.toml").to_str().unwrap(),
        "--policy",
        dir.path().join("policy.toml").to_str().unwrap(),
        "--timeout-ms",
        "2000",
        // An empty policy is a lab policy: refused unless said so explicitly.
        "--lab-policy",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("UNREACHABLE") && out.contains("0/1 nodes admitted"),
        "{out}"
    );
}

#[test]
fn test_evidence_command_round_trips_through_verify() {
    let dir = tempfile::tempdir().unwrap();
    let d = |f: &str| dir.path().join(f).to_str().unwrap().to_owned();
    let nonce = "ab".repeat(32);
    let (code, out, err) = attest(&[
        "test-evidence",
        "--seed",
        &d("seed"),
        "--node-key",
        &d("node.key"),
        "--nonce",
        &nonce,
        "--ark-out",
        &d("ark.pem"),
    ]);
    assert_eq!(code, 0, "{err}");
    std::fs::write(d("bundle.json"), out).unwrap();
    std::fs::write(d("policy.toml"), "[trust]\ntest_root_ark = \"ark.pem\"\n").unwrap();
    let (code, out, _) = attest(&[
        "verify",
        "--evidence",
        &d("bundle.json"),
        "--policy",
        &d("policy.toml"),
        "--nonce",
        &nonce,
        "--json",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("\"admitted\": true"), "{out}");
}

#[test]
fn fleet_refuses_a_test_root_policy_and_incomplete_node_entries_unless_lab() {
    let dir = tempfile::tempdir().unwrap();
    let d = |f: &str| dir.path().join(f).to_str().unwrap().to_owned();
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let signer = hex::encode(
        ed25519_dalek::SigningKey::from_bytes(&[1; 32])
            .verifying_key()
            .to_bytes(),
    );
    let complete = format!(
        "[identity]\nmeasurements = [\"{}\"]\n[tcb.milan]\nbootloader = 0\ntee = 0\nsnp = 0\nmicrocode = 0\n[guest_policy]\nvmpl = [0]\nallow_smt = true\nallow_cxl = true\nrequire_single_socket = false\nrequire_aes_256_xts = false\nrequire_rapl_disabled = false\nrequire_ciphertext_hiding = false\n[waive]\n\"snp.chain.crl\" = \"offline\"\n\"snp.tcb.firmware\" = \"test\"\n\"snp.policy.abi\" = \"test\"\n\"snp.policy.guest_svn\" = \"test\"\n\"config.image_signer\" = \"no manifest\"\n[gpu]\ncount = 0\n[config]\nsigners = [\"{signer}\"]\n",
        "ab".repeat(48)
    );
    std::fs::write(d("policy.toml"), &complete).unwrap();
    std::fs::write(
        d("ark.pem"),
        attestation::test_source::TestSigner::from_seed([3; 32])
            .unwrap()
            .ark_pem(),
    )
    .unwrap();
    std::fs::write(
        d("lab.toml"),
        format!("{complete}[trust]\ntest_root_ark = \"ark.pem\"\n"),
    )
    .unwrap();
    let entry = format!("[[node]]\nname = \"n1\"\nurl = \"http://{dead}\"\n");
    let full = format!(
        "{entry}chip_id = \"{}\"\nnode_public_key = \"{signer}\"\nconfig_digest = \"{}\"\n",
        "11".repeat(64),
        "22".repeat(32)
    );
    std::fs::write(d("bare.toml"), &entry).unwrap();
    std::fs::write(d("full.toml"), &full).unwrap();
    let fleet = |nodes: &str, policy: &str, lab: bool| {
        let (nodes, policy) = (d(nodes), d(policy));
        let mut args = vec![
            "fleet",
            "--nodes",
            &nodes,
            "--policy",
            &policy,
            "--timeout-ms",
            "2000",
        ];
        if lab {
            args.push("--lab-policy");
        }
        attest(&args)
    };
    // Complete policy, complete entry: queried (unreachable, so rejected).
    let (code, out, err) = fleet("full.toml", "policy.toml", false);
    assert_eq!(code, 1, "{out}{err}");
    // A test root makes it a lab policy.
    let (code, _, err) = fleet("full.toml", "lab.toml", false);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("trust.test_root_ark"), "{err}");
    assert!(err.contains("--lab-policy"), "{err}");
    // An entry without what was registered for it.
    let (code, _, err) = fleet("bare.toml", "policy.toml", false);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("node n1's registered chip_id, node_public_key, config_digest"),
        "{err}"
    );
    // The lab override runs it, loudly.
    let (code, out, err) = fleet("bare.toml", "lab.toml", true);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("LAB POLICY"), "{err}");
}

/// `attest --help` ends with the exit statuses.
#[test]
fn help_lists_the_exit_statuses() {
    let (code, out, _) = attest(&["--help"]);
    assert_eq!(code, 0, "{out}");
    for status in ["0 admitted", "1 rejected", "2 unusable input"] {
        assert!(out.contains(status), "{status:?} not in\n{out}");
    }
}

/// Evidence that is not a bundle (a truncated download) is unusable input: exit 2, one
/// line on standard error naming the file, nothing on standard output.
#[test]
fn verify_of_a_truncated_bundle_names_the_file_once_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let d = |f: &str| dir.path().join(f).to_str().unwrap().to_owned();
    let nonce = "cd".repeat(32);
    let (code, bundle, err) = attest(&[
        "test-evidence",
        "--seed",
        &d("seed"),
        "--node-key",
        &d("node.key"),
        "--nonce",
        &nonce,
        "--ark-out",
        &d("ark.pem"),
    ]);
    assert_eq!(code, 0, "{err}");
    std::fs::write(d("truncated.json"), &bundle[..bundle.len() / 2]).unwrap();
    std::fs::write(d("policy.toml"), "[trust]\ntest_root_ark = \"ark.pem\"\n").unwrap();
    let (code, out, err) = attest(&[
        "verify",
        "--evidence",
        &d("truncated.json"),
        "--policy",
        &d("policy.toml"),
        "--nonce",
        &nonce,
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.is_empty(), "stdout: {out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(err.matches(&d("truncated.json")).count(), 1, "{err}");
    assert!(err.starts_with("attest: unusable input: "), "{err}");
}
