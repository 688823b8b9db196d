//! The configuration contract run from both sides: archives written by `provision`'s own
//! plan and flash code, read by the node's `apply-config` code (sn-config), honest and
//! attacked member by member. Attacks start from the honest archive and change or append
//! single tar entries, as a host with write access to the partition would.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ed25519_dalek::SigningKey;
use sn_config::Bundle;
use sn_config::apply::{ApplyError, ApplyState, ApplyStatus, apply, node_files};

fn key() -> SigningKey {
    SigningKey::from_bytes(&[7; 32])
}

/// What the image's kernel command line pins: the plan's signer.
fn pinned() -> [[u8; 32]; 1] {
    [key().verifying_key().to_bytes()]
}

/// The plan's bundles for the shipped example subnet, signed by `key`.
fn plan_bundles(key: &SigningKey) -> Vec<Bundle> {
    let subnet = provisioning::subnet::Subnet::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sovereign-subnet-13.toml"),
        &Default::default(),
    )
    .unwrap();
    provisioning::plan::bundles(&subnet, &provisioning::plan::plan(&subnet).unwrap(), key).unwrap()
}

fn node01() -> Bundle {
    plan_bundles(&key()).remove(0)
}

/// Every regular file under `dir`, relative path -> bytes; anything else fails the test.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            let rel = e
                .path()
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if t.is_dir() {
                walk(root, &e.path(), out);
            } else {
                assert!(t.is_file(), "{rel} is not a regular file");
                out.insert(rel, std::fs::read(e.path()).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

struct Node {
    tmp: tempfile::TempDir,
}

impl Node {
    fn new() -> Node {
        Node {
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    fn out(&self) -> PathBuf {
        self.tmp.path().join("run/sovereign-config")
    }

    /// apply-config over `bytes` written as the partition, padded to 16 MiB with zeros.
    fn apply(&self, bytes: &[u8], pinned: &[[u8; 32]]) -> Result<ApplyStatus, ApplyError> {
        let part = self.tmp.path().join("sn-config.part");
        let mut region = bytes.to_vec();
        region.resize(sn_config::PARTITION_BYTES as usize, 0);
        std::fs::write(&part, &region).unwrap();
        apply(&part, &self.out(), pinned).map(|a| a.status)
    }

    /// A refused partition: the error's kind and member, and the failure record in DIR
    /// (and nothing else there).
    fn refused(&self, bytes: &[u8], pinned: &[[u8; 32]]) -> (String, Option<String>, String) {
        let err = match self.apply(bytes, pinned) {
            Err(ApplyError::Refused { error, .. }) => error,
            other => panic!("expected a refusal, got {other:?}"),
        };
        let files = tree(&self.out());
        assert_eq!(
            files.keys().collect::<Vec<_>>(),
            ["status.json"],
            "a refused partition leaves only the failure record"
        );
        let status = ApplyStatus::read(&self.out()).unwrap();
        assert_eq!(status.state, ApplyState::Failed);
        assert_eq!(status.error_kind.as_deref(), Some(err.kind()));
        assert_eq!(status.reason.as_deref(), Some(err.to_string().as_str()));
        assert_eq!(status.member.as_deref(), err.member());
        (err.kind().to_string(), status.member, err.to_string())
    }
}

/// The archive without its end-of-archive marker (two zero blocks).
fn without_end(archive: &[u8]) -> Vec<u8> {
    assert!(archive.len() >= 1024 && archive[archive.len() - 1024..].iter().all(|&b| b == 0));
    archive[..archive.len() - 1024].to_vec()
}

/// A ustar header with a raw name (no normalisation), type, size and link target.
fn header(name: &[u8], kind: u8, size: u64, link: &[u8]) -> [u8; 512] {
    let mut h = tar::Header::new_ustar();
    h.set_size(size);
    h.set_mode(0o644);
    h.set_mtime(0);
    h.set_uid(0);
    h.set_gid(0);
    {
        let old = h.as_old_mut();
        old.name[..name.len()].copy_from_slice(name);
        old.linkname[..link.len()].copy_from_slice(link);
        old.linkflag[0] = kind;
    }
    h.set_cksum();
    *h.as_bytes()
}

/// The honest archive with one more entry appended (header, data, padding, end marker).
fn appended(archive: &[u8], name: &[u8], kind: u8, data: &[u8], link: &[u8]) -> Vec<u8> {
    let mut out = without_end(archive);
    out.extend_from_slice(&header(name, kind, data.len() as u64, link));
    out.extend_from_slice(data);
    out.resize(out.len().div_ceil(512) * 512, 0);
    out.extend_from_slice(&[0; 1024]);
    out
}

/// Offset of the data of member `name` in `archive`.
fn data_offset(archive: &[u8], name: &str) -> usize {
    let mut a = tar::Archive::new(archive);
    for e in a.entries().unwrap() {
        let e = e.unwrap();
        if e.path_bytes().as_ref() == name.as_bytes() {
            return e.raw_file_position() as usize;
        }
    }
    panic!("no member {name}");
}

fn flipped(archive: &[u8], offset: usize) -> Vec<u8> {
    let mut a = archive.to_vec();
    a[offset] ^= 0x01;
    a
}

#[test]
fn an_honest_bundle_gives_exactly_the_plans_files() {
    let bundle = node01();
    let node = Node::new();
    let status = node.apply(&bundle.archive().unwrap(), &pinned()).unwrap();
    assert_eq!(status.state, ApplyState::Applied);
    assert_eq!(status.node.as_deref(), Some("node-01"));
    assert_eq!(status.subnet.as_deref(), Some("sovereign-eu-1"));
    assert_eq!(
        status.bundle_digest.as_deref(),
        Some(hex::encode(bundle.digest()).as_str())
    );
    assert_eq!(
        status.signer.as_deref(),
        Some(hex::encode(key().verifying_key().to_bytes()).as_str())
    );
    let mut want = node_files(&bundle).unwrap();
    assert_eq!(status.files, want.keys().cloned().collect::<Vec<_>>());
    let mut got = tree(&node.out());
    let status_json = got.remove("status.json").unwrap();
    assert_eq!(
        serde_json::from_slice::<ApplyStatus>(&status_json).unwrap(),
        status
    );
    assert_eq!(got, want);

    // What those files say, from the plan: node-01's address, the subnet's gateway and DNS.
    assert_eq!(want.remove("hostname").unwrap(), b"node-01\n");
    let net = String::from_utf8(want.remove("network/10-sovereign-node.network").unwrap()).unwrap();
    for line in [
        "[Match]",
        "Type=ether",
        "Name=!lo",
        "Address=2001:db8:5e1::11/64",
        "Gateway=2001:db8:5e1::1",
        "DNS=2001:db8:5e1::53",
        "DNS=2001:db8:5e2::53",
        "IPv6AcceptRA=no",
    ] {
        assert!(net.lines().any(|l| l == line), "{line} missing from\n{net}");
    }
    assert_eq!(
        want.remove("node.toml").unwrap(),
        bundle.members()["node.toml"]
    );
    assert!(
        String::from_utf8(want.remove("authorized_keys").unwrap())
            .unwrap()
            .starts_with("ssh-ed25519 ")
    );
    assert!(want.is_empty(), "{:?}", want.keys());
}

#[test]
fn the_replica_configuration_travels_when_the_plan_has_one() {
    let node_cfg = node01().node().clone();
    let bundle = Bundle::sign(&node_cfg, Some(b"{ registry_client: {} }\n"), &key()).unwrap();
    let node = Node::new();
    node.apply(&bundle.archive().unwrap(), &pinned()).unwrap();
    assert_eq!(
        std::fs::read(node.out().join("ic.json5")).unwrap(),
        b"{ registry_client: {} }\n"
    );
    // Not UTF-8: refused at signing already.
    let err = Bundle::sign(&node_cfg, Some(&[0xff, 0xfe]), &key()).unwrap_err();
    assert_eq!(err.member(), Some("ic.json5"));
}

#[test]
fn a_flipped_byte_anywhere_is_refused_naming_what_it_hit() {
    let archive = node01().archive().unwrap();
    let node = Node::new();
    // In node.toml's data: its checksum no longer matches.
    let at = data_offset(&archive, "node.toml") + 20;
    let (kind, member, msg) = node.refused(&flipped(&archive, at), &pinned());
    assert_eq!(kind, "checksum_mismatch", "{msg}");
    assert_eq!(member.as_deref(), Some("node.toml"));
    // In SHA256SUMS: the signature no longer verifies.
    let at = data_offset(&archive, "SHA256SUMS") + 3;
    let (kind, member, msg) = node.refused(&flipped(&archive, at), &pinned());
    assert_eq!(kind, "bad_signature", "{msg}");
    assert_eq!(member.as_deref(), Some("SHA256SUMS.sig"));
    // In the signature itself (a hex digit changed to another).
    let at = data_offset(&archive, "SHA256SUMS.sig");
    let sig_text = String::from_utf8_lossy(&archive[at..at + 400]).into_owned();
    let pos = at + sig_text.find("signature = \"").unwrap() + 13;
    let mut bad = archive.clone();
    bad[pos] = if bad[pos] == b'0' { b'1' } else { b'0' };
    let (kind, _, msg) = node.refused(&bad, &pinned());
    assert_eq!(kind, "bad_signature", "{msg}");
    // In a header: the tar header checksum fails.
    let (kind, _, msg) = node.refused(&flipped(&archive, 3), &pinned());
    assert_eq!(kind, "damaged_archive", "{msg}");
    // In the padding after a member, and after the archive: bytes no checksum covers.
    let sums_end = data_offset(&archive, "SHA256SUMS") + node01().sums().len();
    let (kind, _, msg) = node.refused(&flipped(&archive, sums_end + 1), &pinned());
    assert_eq!(kind, "uncovered_data", "{msg}");
    let mut trailing = archive.clone();
    trailing.resize(archive.len() + 4096, 0);
    trailing[archive.len() + 100] = b'x';
    let (kind, _, msg) = node.refused(&trailing, &pinned());
    assert_eq!(kind, "uncovered_data", "{msg}");
}

#[test]
fn every_member_that_is_not_a_regular_file_of_the_schema_is_refused_by_name() {
    let archive = node01().archive().unwrap();
    let node = Node::new();
    // (member name, tar type flag, content, link target, error kind, member named)
    type Case<'a> = (&'a [u8], u8, &'a [u8], &'a [u8], &'a str, &'a str);
    let cases: [Case; 11] = [
        (
            b"extra.toml",
            b'0',
            b"x = 1\n",
            b"",
            "unknown_member",
            "extra.toml",
        ),
        (
            b"agent.toml",
            b'0',
            b"listen = \"0.0.0.0:1\"\n",
            b"",
            "unknown_member",
            "agent.toml",
        ),
        (
            b"ic.json5",
            b'2',
            b"",
            b"/etc/shadow",
            "not_regular_file",
            "ic.json5",
        ),
        (
            b"ic.json5",
            b'1',
            b"",
            b"node.toml",
            "not_regular_file",
            "ic.json5",
        ),
        (b"ic.json5", b'3', b"", b"", "not_regular_file", "ic.json5"),
        (b"ic.json5", b'4', b"", b"", "not_regular_file", "ic.json5"),
        (b"ic.json5", b'6', b"", b"", "not_regular_file", "ic.json5"),
        (b"profiles", b'5', b"", b"", "not_regular_file", "profiles"),
        (
            b"../ic.json5",
            b'0',
            b"{}",
            b"",
            "unsafe_name",
            "../ic.json5",
        ),
        (b"/ic.json5", b'0', b"{}", b"", "unsafe_name", "/ic.json5"),
        (
            b"network/a.network",
            b'0',
            b"",
            b"",
            "unsafe_name",
            "network/a.network",
        ),
    ];
    for (name, kind, data, link, want_kind, want_member) in cases {
        let bad = appended(&archive, name, kind, data, link);
        let (got_kind, member, msg) = node.refused(&bad, &pinned());
        assert_eq!(got_kind, want_kind, "{want_member}: {msg}");
        assert_eq!(member.as_deref(), Some(want_member), "{msg}");
        assert!(msg.contains(want_member), "{msg}");
    }
    // A pax header or GNU long name would rename the next member: refused as such.
    for kind in [b'x', b'g', b'L'] {
        let bad = appended(&archive, b"ic.json5", kind, b"30 path=node.toml\n", b"");
        let (got_kind, _, msg) = node.refused(&bad, &pinned());
        assert_eq!(got_kind, "not_regular_file", "{msg}");
    }
}

#[test]
fn a_duplicate_or_oversize_member_is_refused() {
    let archive = node01().archive().unwrap();
    let node = Node::new();
    let (kind, member, msg) = node.refused(
        &appended(&archive, b"node.toml", b'0', b"name = \"node-02\"\n", b""),
        &pinned(),
    );
    assert_eq!(kind, "duplicate_member", "{msg}");
    assert_eq!(member.as_deref(), Some("node.toml"));
    // ic.json5 one byte over its limit.
    let big = vec![b' '; (sn_config::member_limit("ic.json5") + 1) as usize];
    let (kind, member, msg) =
        node.refused(&appended(&archive, b"ic.json5", b'0', &big, b""), &pinned());
    assert_eq!(kind, "oversize_member", "{msg}");
    assert_eq!(member.as_deref(), Some("ic.json5"));
    // A header that claims more data than the partition holds: refused before reading.
    let mut claim = without_end(&archive);
    claim.extend_from_slice(&header(b"ic.json5", b'0', 20 << 20, b""));
    let (kind, _, msg) = node.refused(&claim, &pinned());
    assert_eq!(kind, "oversize_member", "{msg}");
}

#[test]
fn a_member_missing_from_the_archive_or_unlisted_is_refused() {
    let bundle = node01();
    let node = Node::new();
    // An archive of the signature and the sums alone (node.toml dropped).
    let mut files = bundle.files();
    files.remove("node.toml");
    let (kind, member, msg) = node.refused(&writer_archive(&files), &pinned());
    assert_eq!(kind, "missing_member", "{msg}");
    assert_eq!(member.as_deref(), Some("node.toml"));
    // An ic.json5 the signer never listed, in the writer's order and headers.
    let mut files = bundle.files();
    files.insert("ic.json5".into(), b"{}".to_vec());
    let (kind, _, msg) = node.refused(&writer_archive(&files), &pinned());
    assert_eq!(kind, "bad_checksum_list", "{msg}");
    assert!(msg.contains("ic.json5"), "{msg}");
}

/// An archive of `files` with the writer's header bytes, in the writer's member order
/// (byte order of the names: the sums, the signature, then the content members).
fn writer_archive(files: &std::collections::BTreeMap<String, Vec<u8>>) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, bytes) in files {
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
    builder.into_inner().unwrap()
}

#[test]
fn a_bundle_signed_by_another_key_is_refused_where_the_signer_is_pinned() {
    let archive = node01().archive().unwrap();
    let node = Node::new();
    let ours = key().verifying_key().to_bytes();
    let other = SigningKey::from_bytes(&[8; 32]).verifying_key().to_bytes();
    let (kind, member, msg) = node.refused(&archive, &[other]);
    assert_eq!(kind, "wrong_signer", "{msg}");
    assert_eq!(member.as_deref(), Some("SHA256SUMS.sig"));
    assert!(msg.contains(&hex::encode(ours)), "{msg}");
    node.apply(&archive, &[other, ours]).unwrap();
    // The pins come from the measured kernel command line.
    let cmdline = format!(
        "console=ttyS0 sn.config_signer={},{} quiet",
        hex::encode(other),
        hex::encode(ours)
    );
    assert_eq!(
        sn_config::apply::pinned_signers(&cmdline).unwrap(),
        vec![other, ours]
    );
    assert!(sn_config::apply::pinned_signers("sn.config_signer=abc").is_err());
    assert!(
        sn_config::apply::pinned_signers("root=/dev/vda")
            .unwrap()
            .is_empty()
    );
    // A host that re-signs a changed bundle with its own key: valid signature, wrong signer.
    let mut node_cfg = node01().node().clone();
    node_cfg.network.ipv6_address = "2001:db8:bad::1/64".into();
    let forged = Bundle::sign(&node_cfg, None, &SigningKey::from_bytes(&[9; 32])).unwrap();
    let (kind, _, msg) = node.refused(&forged.archive().unwrap(), &[ours]);
    assert_eq!(kind, "wrong_signer", "{msg}");
}

#[test]
fn an_empty_or_absent_partition_is_the_documented_default() {
    let node = Node::new();
    let status = node.apply(&[], &pinned()).unwrap();
    assert_eq!(status.state, ApplyState::Default);
    assert!(status.reason.as_deref().unwrap().contains("all zeros"));
    assert_eq!(
        tree(&node.out()).keys().collect::<Vec<_>>(),
        ["status.json"]
    );
    let absent = node.tmp.path().join("no-such-partition");
    let a = apply(&absent, &node.out(), &pinned()).unwrap();
    assert_eq!(a.status.state, ApplyState::Default);
    assert!(a.status.reason.unwrap().contains("does not exist"));
}

#[test]
fn a_second_apply_replaces_the_first_atomically_and_leaves_nothing_behind() {
    let bundles = plan_bundles(&key());
    let node = Node::new();
    let with_replica = Bundle::sign(bundles[0].node(), Some(b"{}\n"), &key()).unwrap();
    node.apply(&with_replica.archive().unwrap(), &pinned())
        .unwrap();
    assert!(node.out().join("ic.json5").exists());
    // node-02's bundle: exactly its files, nothing left of node-01's (no ic.json5).
    let status = node
        .apply(&bundles[1].archive().unwrap(), &pinned())
        .unwrap();
    assert_eq!(status.node.as_deref(), Some("node-02"));
    let mut got = tree(&node.out());
    got.remove("status.json");
    assert_eq!(got, node_files(&bundles[1]).unwrap());
    // A refused partition replaces it with the failure record alone: nothing of node-02
    // stays to be mistaken for the current configuration.
    node.refused(&flipped(&bundles[1].archive().unwrap(), 3), &pinned());
    // No temporary directories are left next to DIR.
    let siblings: Vec<_> = std::fs::read_dir(node.out().parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(siblings, ["sovereign-config"]);
}

#[test]
fn a_refusal_or_a_bad_directory_never_half_applies() {
    let node = Node::new();
    let bundle = node01();
    node.apply(&bundle.archive().unwrap(), &pinned()).unwrap();
    let before = tree(&node.out());
    // DIR's parent is a file: nothing can be written, the error says so; the previous
    // result (elsewhere) is untouched.
    let blocked = node.tmp.path().join("blocked");
    std::fs::write(&blocked, "").unwrap();
    let part = node.tmp.path().join("p");
    std::fs::write(&part, bundle.archive().unwrap()).unwrap();
    let err = apply(&part, &blocked.join("sovereign-config"), &pinned()).unwrap_err();
    assert!(matches!(err, ApplyError::Write(_)), "{err}");
    assert_eq!(tree(&node.out()), before);
}

#[test]
fn flash_output_applied_by_apply_config_gives_exactly_the_plans_files() {
    use provisioning::flash::{Destination, Silent, flash};
    use provisioning::image::write_test_image;
    use provisioning::target::SystemView;
    let tmp = tempfile::tempdir().unwrap();
    let release = tmp.path().join("release");
    std::fs::create_dir(&release).unwrap();
    // The bundle directory as `provision plan --out` writes it, loaded as flash loads it.
    let bundle_dir = tmp.path().join("plan/node-01");
    node01().write_dir(&bundle_dir).unwrap();
    let bundle = Bundle::load_dir(&bundle_dir, &[]).unwrap();
    let manifest = write_test_image(&release, 2 << 20, 16 << 20, &[bundle.signer()]).unwrap();
    let target = tmp.path().join("node-01.img");
    flash(
        &release.join("disk.img"),
        &manifest,
        &bundle,
        &Destination::File {
            path: target.clone(),
        },
        &SystemView::host(),
        &Silent,
    )
    .unwrap();
    // The node reads its sn-config partition: the same byte range of the disk.
    let disk = std::fs::read(&target).unwrap();
    let range = manifest.config_range();
    let partition = tmp.path().join("sn-config");
    std::fs::write(&partition, &disk[range.start as usize..range.end as usize]).unwrap();
    let out = tmp.path().join("run/sovereign-config");
    let a = apply(&partition, &out, &[key().verifying_key().to_bytes()]).unwrap();
    assert_eq!(a.status.state, ApplyState::Applied);
    assert_eq!(
        a.status.bundle_digest.as_deref(),
        Some(hex::encode(node01().digest()).as_str())
    );
    let mut got = tree(&out);
    got.remove("status.json");
    assert_eq!(got, node_files(&node01()).unwrap());
}
