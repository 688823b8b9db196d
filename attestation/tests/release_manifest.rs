//! The verifier's `identity.release_manifests` reads the measurement from the image's own
//! `release-manifest.json` (written by image/build): `sev_snp.launch_digest`, one name on
//! both sides. The fixture is a real manifest of an image build (testdata/image/README.md).

use attestation::policy::load_release_manifest;
use std::path::Path;

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/image/release-manifest.json")
}

#[test]
fn reads_the_launch_digest_of_a_real_image_manifest() {
    let path = fixture();
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("fixture")).expect("JSON");
    assert_eq!(json["schema"], "sovereign-node/release-manifest/v1");
    let digest = json["sev_snp"]["launch_digest"]
        .as_str()
        .expect("the fixture has a launch digest");
    let loaded = load_release_manifest(&path).expect("load");
    assert_eq!(loaded.len(), 1);
    assert_eq!(hex::encode(&loaded[0]), digest);
    assert_eq!(loaded[0].len(), 48);
}

fn load_text(text: &str) -> Result<Vec<Vec<u8>>, String> {
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
