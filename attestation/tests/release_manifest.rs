//! The verifier's `identity.release_manifests` reads the measurement and the pinned
//! configuration signers from the image's own `release-manifest.json` (written by
//! image/build): `sev_snp.launch_digest` and `config.signers`, one name on both sides. The
//! fixture is a real manifest of an image build (testdata/image/README.md) from an image
//! built without a pinned signer: it is refused for that, and the same manifest with a
//! `config.signers` list, as image/build writes it, is read.

use attestation::policy::load_release_manifest;
use std::path::Path;

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/image/release-manifest.json")
}

/// The public key of the Ed25519 test vector 1 of RFC 8032.
const SIGNER: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";

fn fixture_json() -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(fixture()).expect("fixture")).expect("JSON")
}

#[test]
fn a_real_image_manifest_without_pinned_signers_is_refused() {
    let json = fixture_json();
    assert_eq!(json["schema"], "sovereign-node/release-manifest/v1");
    assert!(
        json.get("config").is_none(),
        "the fixture predates config.signers"
    );
    let e = load_release_manifest(&fixture()).expect_err("no pinned signer");
    assert!(e.to_string().contains("no config.signers"), "{e}");
}

#[test]
fn reads_the_launch_digest_and_the_pinned_signer() {
    let mut json = fixture_json();
    let digest = json["sev_snp"]["launch_digest"]
        .as_str()
        .expect("the fixture has a launch digest")
        .to_string();
    json["config"] = serde_json::json!({ "signers": [SIGNER] });
    let loaded = load_text(&json.to_string()).expect("load");
    assert_eq!(loaded.launch_digests.len(), 1);
    assert_eq!(hex::encode(&loaded.launch_digests[0]), digest);
    assert_eq!(loaded.launch_digests[0].len(), 48);
    assert_eq!(loaded.config_signers, vec![hex_key(SIGNER)]);
}

#[test]
fn pinned_signers_must_be_ed25519_keys() {
    let mut json = fixture_json();
    for bad in [
        serde_json::json!([]),
        serde_json::json!(["abcd"]),
        serde_json::json!([7]),
        serde_json::json!("not a list"),
        // 32 bytes, but not a point on the curve
        serde_json::json!(["02".repeat(31) + "80"]),
    ] {
        json["config"] = serde_json::json!({ "signers": bad });
        let e = load_text(&json.to_string()).expect_err("bad signers");
        assert!(e.contains("config.signers"), "{bad}: {e}");
    }
}

fn hex_key(h: &str) -> [u8; 32] {
    hex::decode(h).expect("hex").try_into().expect("32 bytes")
}

fn load_text(text: &str) -> Result<attestation::policy::ReleaseManifest, String> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("release-manifest.json");
    std::fs::write(&path, text).expect("write");
    load_release_manifest(&path).map_err(|e| e.to_string())
}

#[test]
fn a_manifest_without_a_digest_is_an_error_with_its_reason() {
    // image/build --no-ovmf writes null and says why.
    let e = load_text(
        r#"{"sev_snp": {"launch_digest": null, "reason": "no OVMF AmdSevX64 firmware was given"}}"#,
    )
    .expect_err("null digest");
    assert!(e.contains("launch_digest is null"), "{e}");
    assert!(e.contains("no OVMF AmdSevX64 firmware"), "{e}");
    // The old, never-written name is not read.
    let e = load_text(&format!(
        r#"{{"expected_measurement": "{}"}}"#,
        "ab".repeat(48)
    ))
    .expect_err("old name");
    assert!(e.contains("no sev_snp section"), "{e}");
    let e = load_text(&format!(
        r#"{{"sev_snp": {{"expected_measurement": "{}"}}}}"#,
        "ab".repeat(48)
    ))
    .expect_err("old name under sev_snp");
    assert!(e.contains("no sev_snp.launch_digest"), "{e}");
    for bad in [
        r#"{"sev_snp": {"launch_digest": "abcd"}}"#,
        r#"{"sev_snp": {"launch_digest": 7}}"#,
        r#"{"sev_snp": {"launch_digest": []}}"#,
        r#"{"sev_snp": {"launch_digest": "zz"}}"#,
    ] {
        assert!(load_text(bad).is_err(), "{bad} accepted");
    }
}
