//! The node's reader of the configuration partition, from the host's side: only a signer
//! the measured kernel command line pins is accepted (nothing pinned accepts nothing), and
//! the archive is accepted only byte for byte as the writer makes it, so a bundle has one
//! partition image under its digest. Each attack starts from the honest archive.

use std::path::Path;

use ed25519_dalek::SigningKey;
use sn_config::apply::{ApplyError, ApplyState, ApplyStatus, apply, pinned_signers};
use sn_config::archive::{Partition, read_partition, read_partition_any_signer};
use sn_config::{Bundle, ConfigError, NodeConfig};

fn key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

fn node() -> NodeConfig {
    NodeConfig::parse(include_bytes!("data/node.toml")).unwrap()
}

fn bundle(signer: &SigningKey) -> Bundle {
    Bundle::sign(&node(), Some(b"{ replica: true }\n"), signer).unwrap()
}

/// The command line image/build writes, pinning `signer`.
fn production_cmdline(signer: &SigningKey) -> String {
    format!(
        "console=ttyS0 root=/dev/mapper/root rootfstype=squashfs ro roothash={} sn.config_signer={}",
        "ab".repeat(32),
        hex::encode(signer.verifying_key().to_bytes())
    )
}

fn write_partition(dir: &Path, bytes: &[u8]) -> std::path::PathBuf {
    let mut region = bytes.to_vec();
    region.resize(1 << 20, 0);
    let p = dir.join("sn-config");
    std::fs::write(&p, region).unwrap();
    p
}

fn refusal(result: Result<sn_config::apply::Applied, ApplyError>) -> ConfigError {
    match result {
        Err(ApplyError::Refused { error, .. }) => error,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_partition_re_signed_by_a_foreign_key_is_refused_under_the_production_cmdline() {
    let tmp = tempfile::tempdir().unwrap();
    let ours = key(7);
    let pinned = pinned_signers(&production_cmdline(&ours)).unwrap();
    assert_eq!(pinned, [ours.verifying_key().to_bytes()]);
    let out = tmp.path().join("run/sovereign-config");

    // The honest bundle applies.
    let honest = bundle(&ours).archive().unwrap();
    let a = apply(&write_partition(tmp.path(), &honest), &out, &pinned).unwrap();
    assert_eq!(a.status.state, ApplyState::Applied);

    // The same members, SHA256SUMS.sig replaced by a foreign key's valid signature.
    let foreign = bundle(&key(9));
    assert_eq!(foreign.digest(), bundle(&ours).digest());
    let err = refusal(apply(
        &write_partition(tmp.path(), &foreign.archive().unwrap()),
        &out,
        &pinned,
    ));
    assert_eq!(err.kind(), "wrong_signer", "{err}");
    assert_eq!(err.member(), Some("SHA256SUMS.sig"));
    let status = ApplyStatus::read(&out).unwrap();
    assert_eq!(status.state, ApplyState::Failed);
    assert_eq!(status.error_kind.as_deref(), Some("wrong_signer"));
    assert!(!out.join("node.toml").exists());
}

#[test]
fn nothing_pinned_applies_no_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run/sovereign-config");
    let cmdline = "console=ttyS0 root=/dev/mapper/root ro";
    let pinned = pinned_signers(cmdline).unwrap();
    assert!(pinned.is_empty());
    let archive = bundle(&key(7)).archive().unwrap();
    // A valid bundle, an empty partition, no partition: all refused, named.
    for from in [
        write_partition(tmp.path(), &archive),
        write_partition(tmp.path(), &[]),
        tmp.path().join("absent"),
    ] {
        let err = refusal(apply(&from, &out, &pinned));
        assert!(matches!(err, ConfigError::NoPinnedSigner), "{err}");
        assert_eq!(err.kind(), "no_pinned_signer");
        let status = ApplyStatus::read(&out).unwrap();
        assert_eq!(status.state, ApplyState::Failed);
        assert!(
            status
                .reason
                .as_deref()
                .unwrap()
                .contains("no configuration signer is pinned"),
            "{status:?}"
        );
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
    }
    // The lower layers refuse the same way.
    assert!(matches!(
        read_partition(&archive, &[]),
        Err(ConfigError::NoPinnedSigner)
    ));
    let files = bundle(&key(7)).files();
    assert!(matches!(
        Bundle::verify(files.clone(), &[]),
        Err(ConfigError::NoPinnedSigner)
    ));
    // Host-side tools (provision verify) read the signer and report it.
    match read_partition_any_signer(&archive).unwrap() {
        Partition::Bundle { bundle, .. } => {
            assert_eq!(bundle.signer(), key(7).verifying_key().to_bytes())
        }
        Partition::Empty => panic!("empty"),
    }
}

#[test]
fn only_a_test_boot_may_add_a_signer_to_the_images() {
    let ours = hex::encode(key(7).verifying_key().to_bytes());
    let test = hex::encode(key(8).verifying_key().to_bytes());
    let twice = format!("ro sn.config_signer={ours} sn.config_signer={test}");
    let err = pinned_signers(&twice).unwrap_err();
    assert!(err.to_string().contains("appears 2 times"), "{err}");
    let test_boot = format!("{twice} sn.evidence=test");
    assert_eq!(
        pinned_signers(&test_boot).unwrap(),
        [
            key(7).verifying_key().to_bytes(),
            key(8).verifying_key().to_bytes()
        ]
    );
    assert!(pinned_signers("sn.config_signer=").is_err());
}

/// The header of the member at `index` (0: SHA256SUMS) and its offset in `archive`.
fn header_offset(archive: &[u8], index: usize) -> usize {
    let mut at = 0;
    for _ in 0..index {
        let h = tar::Header::from_byte_slice(&archive[at..at + 512]);
        at += 512 + (h.size().unwrap() as usize).div_ceil(512) * 512;
    }
    at
}

/// `archive` with `edit` applied to one member's header and the header checksum recomputed
/// (as a host forging a variant would).
fn tweaked(archive: &[u8], index: usize, edit: impl Fn(&mut [u8; 512])) -> Vec<u8> {
    let at = header_offset(archive, index);
    let mut bytes: [u8; 512] = archive[at..at + 512].try_into().unwrap();
    edit(&mut bytes);
    let mut header = tar::Header::from_byte_slice(&bytes).clone();
    header.set_cksum();
    let mut out = archive.to_vec();
    out[at..at + 512].copy_from_slice(header.as_bytes());
    out
}

fn put(bytes: &mut [u8; 512], at: usize, value: &[u8]) {
    bytes[at..at + value.len()].copy_from_slice(value);
}

#[test]
fn every_header_byte_the_writer_does_not_set_is_refused() {
    let signer = key(7);
    let pinned = [signer.verifying_key().to_bytes()];
    let archive = bundle(&signer).archive().unwrap();
    assert!(matches!(
        read_partition(&archive, &pinned).unwrap(),
        Partition::Bundle { .. }
    ));
    // The writer's header, for reference: mode 0644, uid/gid 0, mtime 0, no owner names.
    let h = &archive[..512];
    assert_eq!(&h[100..108], b"0000644\0");
    assert_eq!(&h[265..297], &[0u8; 32]);

    type Edit = Box<dyn Fn(&mut [u8; 512])>;
    let cases: Vec<(&str, &str, Edit)> = vec![
        ("mode 0755", "mode", Box::new(|b| put(b, 100, b"0000755\0"))),
        (
            "mode with S_IFREG",
            "mode",
            Box::new(|b| put(b, 100, b"0100644\0")),
        ),
        (
            "mode, space-terminated",
            "mode",
            Box::new(|b| put(b, 100, b"000644 \0")),
        ),
        ("uid 1000", "uid", Box::new(|b| put(b, 108, b"0001750\0"))),
        ("gid 1000", "gid", Box::new(|b| put(b, 116, b"0001750\0"))),
        (
            "mtime 1",
            "mtime",
            Box::new(|b| put(b, 136, b"00000000001\0")),
        ),
        (
            "uname root",
            "owner name (uname)",
            Box::new(|b| put(b, 265, b"root")),
        ),
        (
            "gname root",
            "group name (gname)",
            Box::new(|b| put(b, 297, b"root")),
        ),
        (
            "devmajor 1",
            "device major",
            Box::new(|b| put(b, 329, b"0000001\0")),
        ),
        (
            "devminor 1",
            "device minor",
            Box::new(|b| put(b, 337, b"0000001\0")),
        ),
        (
            "a link name on a file",
            "link name",
            Box::new(|b| put(b, 157, b"x")),
        ),
        ("header padding", "header padding", Box::new(|b| b[511] = 1)),
        (
            "a byte after the name's NUL",
            "name",
            Box::new(|b| b[99] = b'x'),
        ),
        // " 0000000123\0": the same size, octal with a leading space.
        (
            "size with a leading space",
            "size",
            Box::new(|b| b[124] = b' '),
        ),
    ];
    for index in 0..3 {
        for (what, field, edit) in &cases {
            let bad = tweaked(&archive, index, edit);
            assert_ne!(bad, archive, "{what}: no change");
            let err = read_partition(&bad, &pinned).unwrap_err();
            assert_eq!(
                err.kind(),
                "noncanonical_header",
                "{what} (member {index}): {err}"
            );
            assert!(
                err.to_string().contains(&format!("{field} differs")),
                "{what} (member {index}): {err}"
            );
        }
    }

    // The checksum written another way (same value, GNU tar's "%06o\0 "): refused too.
    let at = header_offset(&archive, 0);
    let mut bad = archive.clone();
    let value = tar::Header::from_byte_slice(&archive[at..at + 512])
        .cksum()
        .unwrap();
    bad[at + 148..at + 156].copy_from_slice(format!("{value:06o}\0 ").as_bytes());
    assert_ne!(bad, archive);
    let err = read_partition(&bad, &pinned).unwrap_err();
    assert_eq!(err.kind(), "noncanonical_header", "{err}");
    assert!(err.to_string().contains("checksum differs"), "{err}");
}

#[test]
fn members_out_of_the_writers_order_are_refused() {
    let signer = key(7);
    let pinned = [signer.verifying_key().to_bytes()];
    let b = bundle(&signer);
    let files = b.files();
    // SHA256SUMS.sig before SHA256SUMS, each header otherwise exactly the writer's.
    let mut builder = tar::Builder::new(Vec::new());
    for name in ["SHA256SUMS.sig", "SHA256SUMS", "ic.json5", "node.toml"] {
        let bytes = &files[name];
        let mut h = tar::Header::new_ustar();
        h.set_path(name).unwrap();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o644);
        h.set_uid(0);
        h.set_gid(0);
        h.set_mtime(0);
        h.set_entry_type(tar::EntryType::Regular);
        h.set_cksum();
        builder.append(&h, bytes.as_slice()).unwrap();
    }
    let reordered = builder.into_inner().unwrap();
    assert_eq!(reordered.len(), b.archive().unwrap().len());
    let err = read_partition(&reordered, &pinned).unwrap_err();
    assert_eq!(err.kind(), "noncanonical_header", "{err}");
    assert!(err.to_string().contains("member order"), "{err}");
}
