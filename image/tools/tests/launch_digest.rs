//! The launch digest: a known answer from the sev crate's own test vector (through this
//! crate's wrapper), and an independent cross-check against `sev-snp-measure` (Python).
//!
//! The cross-check is ignored unless asked for (`--include-ignored`): it needs
//! `sev-snp-measure`, found through `$SEV_SNP_MEASURE` (image/check-digest and CI install it).

use image_tools::launch::{LaunchInputs, measure, read_cmdline};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The last 4 KiB of an OVMF AmdSevX64 build (SEV metadata, kernel-hashes section, reset
/// vector), from the sev crate 8.0.0's tests (testdata/README.md).
fn amdsev_suffix() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/ovmf_AmdSev_suffix.bin")
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn known_answer_of_the_sev_crate_test_vector() {
    // sev 8.0.0 tests/measurement.rs `test_snp_ovmf_hash_full_snp_only`.
    let m = measure(&LaunchInputs {
        ovmf: amdsev_suffix(),
        kernel: "/dev/null".into(),
        initrd: "/dev/null".into(),
        cmdline: "console=ttyS0 loglevel=7".into(),
        vcpus: 1,
        vcpu_type: "EPYC-v4".into(),
        guest_features: 0x1,
    })
    .unwrap();
    assert_eq!(
        m.ovmf_gctx_hash,
        "086e2e9149ebf45abdc3445fba5b2da8270bdbb04094d7a2c37faaa4b24af3aa16aff8c374c2a55c467a50da6d466b74"
    );
    assert_eq!(
        m.launch_digest,
        "6d287813eb5222d770f75005c664e34c204f385ce832cc2ce7d0d6f354454362f390ef83a92046c042e706363b4b08fa"
    );
    assert_eq!(m.launch_digest.len(), 96, "48 bytes");
}

#[test]
fn every_input_changes_the_digest() {
    let dir = tempfile::tempdir().unwrap();
    let base = LaunchInputs {
        ovmf: amdsev_suffix(),
        kernel: write(dir.path(), "k", b"kernel"),
        initrd: write(dir.path(), "i", b"initrd"),
        cmdline: "console=ttyS0 roothash=00".into(),
        vcpus: 8,
        vcpu_type: "EPYC-v4".into(),
        guest_features: 0x1,
    };
    let d0 = measure(&base).unwrap().launch_digest;
    let variants = [
        LaunchInputs {
            kernel: write(dir.path(), "k2", b"kernel!"),
            ..base.clone()
        },
        LaunchInputs {
            initrd: write(dir.path(), "i2", b"initrd!"),
            ..base.clone()
        },
        LaunchInputs {
            cmdline: "console=ttyS0 roothash=01".into(),
            ..base.clone()
        },
        LaunchInputs {
            vcpus: 9,
            ..base.clone()
        },
        LaunchInputs {
            vcpu_type: "EPYC-Genoa".into(),
            ..base.clone()
        },
        LaunchInputs {
            guest_features: 0x21,
            ..base.clone()
        },
    ];
    for (i, v) in variants.iter().enumerate() {
        assert_ne!(
            measure(v).unwrap().launch_digest,
            d0,
            "variant {i} did not change the digest"
        );
    }
}

#[test]
fn bad_inputs_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let ok = LaunchInputs {
        ovmf: amdsev_suffix(),
        kernel: write(dir.path(), "k", b"kernel"),
        initrd: write(dir.path(), "i", b"initrd"),
        cmdline: "x".into(),
        vcpus: 1,
        vcpu_type: "EPYC-v4".into(),
        guest_features: 0x1,
    };
    let no_hashes_table = write(dir.path(), "not-ovmf", &[0u8; 4096]);
    for (what, bad) in [
        (
            "unknown vCPU type",
            LaunchInputs {
                vcpu_type: "Pentium".into(),
                ..ok.clone()
            },
        ),
        (
            "zero vCPUs",
            LaunchInputs {
                vcpus: 0,
                ..ok.clone()
            },
        ),
        (
            "missing kernel",
            LaunchInputs {
                kernel: dir.path().join("absent"),
                ..ok.clone()
            },
        ),
        (
            "firmware without SEV metadata",
            LaunchInputs {
                ovmf: no_hashes_table,
                ..ok.clone()
            },
        ),
    ] {
        assert!(measure(&bad).is_err(), "{what} was accepted");
    }
    let two_lines = write(dir.path(), "c", b"a\nb\n");
    assert!(read_cmdline(&two_lines).is_err());
    let one_line = write(dir.path(), "c1", b"console=ttyS0\n");
    assert_eq!(read_cmdline(&one_line).unwrap(), "console=ttyS0");
}

#[test]
#[ignore = "needs sev-snp-measure: set SEV_SNP_MEASURE (image/check-digest installs it)"]
fn matches_sev_snp_measure() {
    let tool = std::env::var_os("SEV_SNP_MEASURE")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .expect("SEV_SNP_MEASURE names the sev-snp-measure executable");
    let dir = tempfile::tempdir().unwrap();
    // Kernel and initrd of realistic sizes with non-trivial content.
    let kernel: Vec<u8> = (0..3_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let initrd: Vec<u8> = (0..1_000_003u32)
        .map(|i| (i.wrapping_mul(40_503) >> 7) as u8)
        .collect();
    let kernel = write(dir.path(), "vmlinuz", &kernel);
    let initrd = write(dir.path(), "initrd.img", &initrd);
    let cases = [
        (1, "EPYC-v4", 0x1u64, "console=ttyS0 loglevel=7"),
        (
            8,
            "EPYC-v4",
            0x1,
            "console=ttyS0 root=/dev/mapper/root ro roothash=0123456789abcdef",
        ),
        (64, "EPYC-Genoa", 0x1, "console=ttyS0"),
        (4, "EPYC-Milan", 0x21, "a b c"),
    ];
    for (vcpus, vcpu_type, features, cmdline) in cases {
        let ours = measure(&LaunchInputs {
            ovmf: amdsev_suffix(),
            kernel: kernel.clone(),
            initrd: initrd.clone(),
            cmdline: cmdline.into(),
            vcpus,
            vcpu_type: vcpu_type.into(),
            guest_features: features,
        })
        .unwrap();
        let out = Command::new(&tool)
            .args(["--mode", "snp", "--output-format", "hex"])
            .arg("--vcpus")
            .arg(vcpus.to_string())
            .args(["--vcpu-type", vcpu_type])
            .arg("--guest-features")
            .arg(format!("{features:#x}"))
            .arg("--ovmf")
            .arg(amdsev_suffix())
            .arg("--kernel")
            .arg(&kernel)
            .arg("--initrd")
            .arg(&initrd)
            .args(["--append", cmdline])
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", tool.display()));
        assert!(
            out.status.success(),
            "sev-snp-measure failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let theirs = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert_eq!(
            ours.launch_digest, theirs,
            "vcpus {vcpus} {vcpu_type} features {features:#x} cmdline {cmdline:?}"
        );
    }
}
