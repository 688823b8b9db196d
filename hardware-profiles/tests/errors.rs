//! Every class of bad profile fails with the file, the line, the column and the reason.

use hardware_profiles::{InvalidKind, Profile, ProfileError, ProfileSet};

/// A valid profile; the line numbers in the tests below refer to this text.
const BASE: &str = r#"name = "test-node"
description = "test"

[match]
cpu_vendor = "AuthenticAMD"
logical_cpus = { min = 16, max = 16 }

[require]
gpu = "required"
[crypto]
fallback = "never"
decompress = { backend = "auto", gpu_min_batch = 256 }
decompress_g2 = { backend = "auto" }
msm = { backend = "auto", gpu_min_batch = 4096 }
msm_shared_u8 = { backend = "auto" }
msm_g2 = { backend = "auto" }
pairing_products = { backend = "cpu" }
bls_verify = { backend = "auto" }
checkpoint_hashing = { backend = "gpu", gpu_min_batch = 64 }

[pools]
consensus = { threads = 2, cpus = "0-1" }
execution = { threads = 6, cpus = "2-7" }
query = { threads = 2, cpus = "8,9" }
idkg = { threads = 1, cpus = "10" }
checkpoint = { threads = 1 }
p2p_http = { threads = 4, cpus = "12-13" }

[cost]
capex_eur = 1000.0
amortisation_months = 36
power_price_eur_per_kwh = 0.25
expected_watts = 500.0
"#;

/// BASE with line `line` (1-based) replaced by `replacement`.
fn with_line(line: usize, replacement: &str) -> String {
    let mut lines: Vec<&str> = BASE.lines().collect();
    lines[line - 1] = replacement;
    lines.join("\n") + "\n"
}

fn invalid(text: &str) -> (String, usize, usize, InvalidKind, String) {
    match Profile::parse("bad.toml", text) {
        Err(ProfileError::Invalid {
            location,
            kind,
            reason,
        }) => (location.file, location.line, location.column, kind, reason),
        other => panic!("expected an invalid-profile error, got {other:?}"),
    }
}

#[track_caller]
fn assert_invalid(
    text: &str,
    line: usize,
    column: usize,
    kind: InvalidKind,
    reason_contains: &str,
) {
    let (file, got_line, got_column, got_kind, reason) = invalid(text);
    assert_eq!(file, "bad.toml");
    assert_eq!(
        (got_line, got_column, got_kind),
        (line, column, kind),
        "reason: {reason}"
    );
    assert!(
        reason.contains(reason_contains),
        "reason `{reason}` lacks `{reason_contains}`"
    );
}

#[test]
fn base_is_valid() {
    let profile = Profile::parse("base.toml", BASE).unwrap();
    assert_eq!(profile.name, "test-node");
    assert_eq!(
        profile.pools.query.cpus.as_ref().unwrap().to_string(),
        "8-9"
    );
    assert!(profile.pools.checkpoint.cpus.is_none());
    // bls_verify without gpu_min_batch takes the gpu-crypto default.
    assert_eq!(
        profile.crypto_policy().bls_verify.gpu_min_batch,
        gpu_crypto_api::policy::defaults::BLS_VERIFY_GPU_MIN_BATCH
    );
}

#[test]
fn unknown_key() {
    let text = with_line(9, "gpu = \"required\"\ngpu_count = 2");
    assert_invalid(
        &text,
        10,
        1,
        InvalidKind::UnknownKey,
        "unknown field `gpu_count`",
    );
    let text = with_line(23, "execution = { threads = 6, cpu = \"2-7\" }");
    assert_invalid(
        &text,
        23,
        28,
        InvalidKind::UnknownKey,
        "unknown field `cpu`",
    );
}

#[test]
fn wrong_type() {
    let text = with_line(23, "execution = { threads = \"six\", cpus = \"2-7\" }");
    assert_invalid(
        &text,
        23,
        25,
        InvalidKind::WrongType,
        "invalid type: string",
    );
    let text = with_line(14, "msm = { backend = \"fpga\", gpu_min_batch = 4096 }");
    assert_invalid(
        &text,
        14,
        19,
        InvalidKind::WrongType,
        "unknown variant `fpga`",
    );
}

#[test]
fn missing_key() {
    let text = with_line(32, "");
    let (_, line, _, kind, reason) = invalid(&text);
    assert_eq!(kind, InvalidKind::MissingKey);
    assert!(
        reason.contains("missing field `power_price_eur_per_kwh`"),
        "{reason}"
    );
    assert_eq!(line, 29, "points at the [cost] table");
}

#[test]
fn syntax_error() {
    let text = with_line(12, "decompress = { backend = \"auto\", gpu_min_batch = 256");
    // toml notices the unclosed table where the next line starts.
    let (_, line, _, kind, _) = invalid(&text);
    assert_eq!((line, kind), (13, InvalidKind::Syntax));
}

#[test]
fn overlapping_cpu_sets() {
    let text = with_line(24, "query = { threads = 2, cpus = \"7-8\" }");
    assert_invalid(
        &text,
        24,
        31,
        InvalidKind::CpuOverlap,
        "pools.query.cpus `7-8` overlaps pools.execution.cpus `2-7` on CPUs 7",
    );
}

#[test]
fn cpu_set_beyond_the_machine() {
    let text = with_line(27, "p2p_http = { threads = 5, cpus = \"12-16\" }");
    assert_invalid(
        &text,
        27,
        34,
        InvalidKind::CpuBeyondMachine,
        "names CPU 16, but the profile's machine has at most 16 logical CPUs (0-15)",
    );
}

#[test]
fn pinned_cpus_need_a_machine_size() {
    let text = with_line(6, "");
    assert_invalid(
        &text,
        4,
        1,
        InvalidKind::Inconsistent,
        "[match] logical_cpus has no max",
    );
}

#[test]
fn pool_size_must_match_cpu_set() {
    let text = with_line(23, "execution = { threads = 8, cpus = \"2-7\" }");
    assert_invalid(
        &text,
        23,
        35,
        InvalidKind::PoolSizeMismatch,
        "pools.execution: 8 threads on 6 CPUs (2-7)",
    );
    // The P2P/HTTP pool may oversubscribe its CPUs, but not leave some unused.
    let text = with_line(27, "p2p_http = { threads = 1, cpus = \"12-13\" }");
    assert_invalid(
        &text,
        27,
        34,
        InvalidKind::PoolSizeMismatch,
        "1 threads cannot use 2 CPUs",
    );
}

#[test]
fn thresholds_out_of_range() {
    let text = with_line(12, "decompress = { backend = \"auto\", gpu_min_batch = 0 }");
    assert_invalid(
        &text,
        12,
        50,
        InvalidKind::OutOfRange,
        "crypto.decompress.gpu_min_batch 0 is outside 1..=16777216",
    );
    let text = with_line(14, "msm = { backend = \"auto\", gpu_min_batch = 16777217 }");
    assert_invalid(
        &text,
        14,
        43,
        InvalidKind::OutOfRange,
        "16777217 is outside",
    );
    let text = with_line(31, "amortisation_months = 0");
    assert_invalid(
        &text,
        31,
        23,
        InvalidKind::OutOfRange,
        "amortisation_months 0",
    );
    let text = with_line(32, "power_price_eur_per_kwh = -0.1");
    assert_invalid(
        &text,
        32,
        27,
        InvalidKind::OutOfRange,
        "power_price_eur_per_kwh -0.1",
    );
    let text = with_line(24, "query = { threads = 0, cpus = \"8,9\" }");
    assert_invalid(
        &text,
        24,
        21,
        InvalidKind::OutOfRange,
        "threads 0 is outside 1..=1024",
    );
    let text = with_line(6, "logical_cpus = { min = 17, max = 16 }");
    assert_invalid(
        &text,
        6,
        16,
        InvalidKind::OutOfRange,
        "min 17 is above max 16",
    );
}

#[test]
fn bad_values() {
    let text = with_line(24, "query = { threads = 2, cpus = \"8-x\" }");
    assert_invalid(
        &text,
        24,
        31,
        InvalidKind::BadSyntaxValue,
        "`8-x` is not a CPU id or range",
    );
    let text = with_line(
        5,
        "cpu_vendor = \"AuthenticAMD\"\ncpu_model = \"AMD [EPYC\"",
    );
    assert_invalid(
        &text,
        6,
        13,
        InvalidKind::BadSyntaxValue,
        "pattern `AMD [EPYC`",
    );
    let text = with_line(1, "name = \"Test Node\"");
    assert_invalid(
        &text,
        1,
        8,
        InvalidKind::BadSyntaxValue,
        "profile name `Test Node`",
    );
}

#[test]
fn contradictory_settings() {
    let text = with_line(9, "gpu = \"off\"");
    assert_invalid(
        &text,
        12,
        26,
        InvalidKind::Inconsistent,
        "crypto.decompress.backend = \"auto\" but require.gpu is \"off\"",
    );
    let text = with_line(9, "gpu = \"preferred\"\ngpu_cc = true");
    assert_invalid(
        &text,
        10,
        10,
        InvalidKind::Inconsistent,
        "gpu_cc = true needs gpu = \"required\"",
    );
}

#[test]
fn set_level_errors_name_the_file() {
    let renamed = BASE.replace("name = \"test-node\"", "name = \"development\"");
    let sources = ProfileSet::embedded_sources()
        .map(|(file, text)| (file.to_string(), text.to_string()))
        .chain([("dup.toml".to_string(), renamed)]);
    match ProfileSet::from_sources(sources) {
        Err(ProfileError::DuplicateName {
            location,
            name,
            first_file,
        }) => {
            assert_eq!((location.file.as_str(), location.line), ("dup.toml", 1));
            assert_eq!(name, "development");
            assert_eq!(first_file, "development.toml");
        }
        other => panic!("expected a duplicate-name error, got {other:?}"),
    }

    let second_default = ProfileSet::embedded_sources()
        .find(|(file, _)| *file == "development.toml")
        .map(|(_, text)| text.replace("name = \"development\"", "name = \"dev-two\""))
        .unwrap();
    let sources = ProfileSet::embedded_sources()
        .map(|(file, text)| (file.to_string(), text.to_string()))
        .chain([("dev-two.toml".to_string(), second_default)]);
    let err = ProfileSet::from_sources(sources).unwrap_err();
    assert!(matches!(err, ProfileError::SecondDefault { .. }), "{err}");
    assert!(err.to_string().starts_with("dev-two.toml:4:23:"), "{err}");
}

#[test]
fn load_dir_reports_the_bad_file_by_path() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.toml"), BASE).unwrap();
    std::fs::write(
        dir.path().join("worse.toml"),
        BASE.replace("test-node", "other-node").replace(
            "threads = 2, cpus = \"0-1\"",
            "threads = 2, cpus = \"0-1\", nice = 5",
        ),
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a profile").unwrap();
    let err = ProfileSet::load_dir(dir.path()).unwrap_err();
    let expected = format!("{}:22:", dir.path().join("worse.toml").display());
    assert!(err.to_string().starts_with(&expected), "{err}");
    assert_eq!(err.kind(), Some(InvalidKind::UnknownKey));
}
