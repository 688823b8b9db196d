//! The replica's side of the runtime configuration: the file the node agent writes
//! (`hardware_profiles::RuntimeConfig::write_atomic`) gives back the profile's policy.

use gpu_crypto_client::{ClientError, policy_from_runtime_config};
use hardware_profiles::{Profile, ProfileSet};

#[test]
fn every_embedded_profile_round_trips_through_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runtime-config.json");
    let mut seen = 0;
    for (file, source) in ProfileSet::embedded_sources() {
        let profile = Profile::parse(file, source).unwrap();
        profile.runtime_config().write_atomic(&path).unwrap();
        assert_eq!(
            policy_from_runtime_config(&path).unwrap(),
            profile.crypto_policy(),
            "{file}"
        );
        seen += 1;
    }
    assert!(seen >= 6);
}

#[test]
fn a_bad_file_is_an_error_naming_the_file_and_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runtime-config.json");
    let reason = |text: &str| {
        std::fs::write(&path, text).unwrap();
        match policy_from_runtime_config(&path).unwrap_err() {
            ClientError::RuntimeConfig { path: p, reason } => {
                assert_eq!(p, path);
                reason
            }
            other => panic!("{other}"),
        }
    };
    assert!(reason("{").contains("not JSON"));
    assert!(reason(r#"{"crypto": {}}"#).contains("schema_version"));
    assert!(reason(r#"{"schema_version": 1, "crypto": {}}"#).contains("schema_version 1"));
    assert!(reason(r#"{"schema_version": 4, "crypto": {}}"#).contains("schema_version 4"));
    assert!(reason(r#"{"schema_version": 3}"#).contains("no crypto"));
    assert!(reason(r#"{"schema_version": 3, "crypto": {"decompress": 3}}"#).contains("crypto:"));
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(
        policy_from_runtime_config(&path),
        Err(ClientError::RuntimeConfig { .. })
    ));
}
