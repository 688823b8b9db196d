//! The node's Ed25519 identity key: the key whose public half the SNP report binds in
//! REPORT_DATA and which signs every evidence bundle.
//!
//! On SEV-SNP the key is **sealed**: derived inside the guest, at every start, from the SNP
//! derived key (`MSG_KEY_REQ` through `/dev/sev-guest`), rooted in the chip's VCEK and mixing
//! in the launch measurement, the guest policy, the platform's committed TCB and the VMPL.
//! Only this image, launched with this policy, on this chip, at this TCB derives it; it is
//! never written anywhere, so the host has nothing to copy and cannot plant a key of its own.
//! A new image (a new measurement), a new launch policy or a committed firmware update is a
//! new identity, which the governing body enrols again (docs/threat-model.md).
//!
//! The test evidence source and development runs have no SNP firmware to derive from: they
//! keep an **unsealed** key in a file, labelled as such in its first lines, written
//! atomically (temporary file, fsync, rename, directory fsync). The verifier refuses test
//! evidence unless the policy names the test root.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use ed25519_dalek::SigningKey;
use ed25519_dalek::pkcs8::{DecodePrivateKey as _, EncodePrivateKey as _};
use hkdf::Hkdf;
use sha2::Sha256;
use thiserror::Error;
use zeroize::{Zeroize, Zeroizing};

/// Why the node key could not be derived or loaded.
#[derive(Debug, Error)]
pub enum IdentityError {
    /// Not an SEV-SNP guest: no guest device.
    #[error("no SEV-SNP guest device: {path} is absent (not running in an SEV-SNP guest)")]
    NoSevGuestDevice {
        /// The device path.
        path: &'static str,
    },
    /// The guest device exists but cannot be opened.
    #[error("opening {path}: {source}")]
    SevGuestOpen {
        /// The device path.
        path: &'static str,
        /// The open error.
        source: std::io::Error,
    },
    /// The report read for the committed TCB failed.
    #[error("SNP_GET_REPORT (to read the committed TCB) failed: {0}")]
    Report(String),
    /// The firmware refused the key request.
    #[error("SNP_GET_DERIVED_KEY failed: {0}")]
    DerivedKey(String),
    /// HKDF could not expand the derived key.
    #[error("HKDF-SHA256 expand: {0}")]
    Kdf(String),
    /// The unsealed key file is unreadable, malformed or cannot be written.
    #[error("unsealed node key {path}: {message}")]
    KeyFile {
        /// The key file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

#[cfg(feature = "collect")]
const SEV_GUEST: &str = "/dev/sev-guest";

/// GUEST_FIELD_SELECT bits of `MSG_KEY_REQ` (SEV-SNP firmware ABI): what the firmware mixes
/// into the derived key besides the root key and the VMPL.
pub mod field {
    /// The guest policy.
    pub const GUEST_POLICY: u64 = 1 << 0;
    /// The image id of the ID block.
    pub const IMAGE_ID: u64 = 1 << 1;
    /// The family id of the ID block.
    pub const FAMILY_ID: u64 = 1 << 2;
    /// The launch measurement.
    pub const MEASUREMENT: u64 = 1 << 3;
    /// The guest SVN.
    pub const GUEST_SVN: u64 = 1 << 4;
    /// The TCB version of the request.
    pub const TCB_VERSION: u64 = 1 << 5;
}

/// What the node identity mixes in: the launch measurement (the image, its kernel command
/// line and initrd), the guest policy (a debug or migratable launch of the same image gets
/// another key) and the TCB (a key derived at a TCB cannot be derived by older firmware).
pub const NODE_IDENTITY_FIELDS: u64 = field::GUEST_POLICY | field::MEASUREMENT | field::TCB_VERSION;

/// ROOT_KEY_SELECT 0: the chip-unique VCEK (1 would be the migration agent's VMRK).
pub const ROOT_KEY_VCEK: u32 = 0;

/// HKDF-SHA256 salt and info: the Ed25519 seed is bound to this purpose and version, so the
/// same derived key used for anything else gives an unrelated value.
pub const HKDF_SALT: &[u8] = b"sovereign-node/node-identity/v1";
/// HKDF-SHA256 info (see [`HKDF_SALT`]).
pub const HKDF_INFO: &[u8] = b"Ed25519 signing key seed";

/// An `MSG_KEY_REQ` (message version 1) as the guest sends it to the firmware.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRequest {
    /// ROOT_KEY_SELECT: which root key the firmware derives from ([`ROOT_KEY_VCEK`]).
    pub root_key_select: u32,
    /// GUEST_FIELD_SELECT: the [`field`] bits mixed in.
    pub guest_field_select: u64,
    /// The VMPL mixed in; at least the requester's.
    pub vmpl: u32,
    /// GUEST_SVN to mix in; must not exceed the guest's.
    pub guest_svn: u32,
    /// TCB_VERSION to mix in (raw 64-bit TCB_VERSION); must not exceed the committed TCB.
    pub tcb_version: u64,
}

impl KeyRequest {
    /// Size of the version-1 request structure.
    pub const LEN: usize = 32;

    /// The node identity's request: VCEK root, [`NODE_IDENTITY_FIELDS`], the guest's VMPL
    /// and the platform's committed TCB (the highest TCB the firmware accepts here, and one
    /// only a firmware update committed on purpose changes).
    pub fn node_identity(vmpl: u32, committed_tcb: u64) -> KeyRequest {
        KeyRequest {
            root_key_select: ROOT_KEY_VCEK,
            guest_field_select: NODE_IDENTITY_FIELDS,
            vmpl,
            guest_svn: 0,
            tcb_version: committed_tcb,
        }
    }

    /// The request's bytes (SEV-SNP ABI, MSG_KEY_REQ): 0x00 ROOT_KEY_SELECT (u32),
    /// 0x04 reserved, 0x08 GUEST_FIELD_SELECT (u64), 0x10 VMPL (u32), 0x14 GUEST_SVN (u32),
    /// 0x18 TCB_VERSION (u64), little-endian.
    pub fn to_bytes(&self) -> [u8; KeyRequest::LEN] {
        let mut b = [0u8; KeyRequest::LEN];
        b[0x00..0x04].copy_from_slice(&self.root_key_select.to_le_bytes());
        b[0x08..0x10].copy_from_slice(&self.guest_field_select.to_le_bytes());
        b[0x10..0x14].copy_from_slice(&self.vmpl.to_le_bytes());
        b[0x14..0x18].copy_from_slice(&self.guest_svn.to_le_bytes());
        b[0x18..0x20].copy_from_slice(&self.tcb_version.to_le_bytes());
        b
    }

    #[cfg(feature = "collect")]
    /// The same request for the `sev` crate, which copies these fields, in this order, into
    /// the `#[repr(C)]` structure its SNP_GET_DERIVED_KEY ioctl passes to the firmware.
    pub fn to_sev(&self) -> sev::firmware::guest::DerivedKey {
        sev::firmware::guest::DerivedKey::new(
            self.root_key_select != ROOT_KEY_VCEK,
            sev::firmware::guest::GuestFieldSelect(self.guest_field_select),
            self.vmpl,
            self.guest_svn,
            self.tcb_version,
            None,
        )
    }
}

/// The node's Ed25519 key from a 32-byte SNP derived key: HKDF-SHA256 with this purpose's
/// salt and info gives the Ed25519 seed.
pub fn node_key_from_derived_key(derived: &[u8; 32]) -> Result<SigningKey, IdentityError> {
    let mut seed = Zeroizing::new([0u8; 32]);
    let mut prk = Zeroizing::new([0u8; 32]);
    hkdf_seed(derived, &mut prk, &mut seed)?;
    Ok(SigningKey::from_bytes(&seed))
}

/// HKDF-SHA256 of `derived` into `seed`, the pseudorandom key passing through `prk`, which
/// is wiped before this returns. `Hkdf::new` would drop the extracted PRK unwiped; taking
/// it from `extract` lets it be wiped. The HMAC state keyed with it, inside `Hkdf`, has no
/// wipe and cannot be reached.
fn hkdf_seed(
    derived: &[u8; 32],
    prk: &mut [u8; 32],
    seed: &mut [u8; 32],
) -> Result<(), IdentityError> {
    let (mut extracted, hk) = Hkdf::<Sha256>::extract(Some(HKDF_SALT), derived);
    prk.copy_from_slice(extracted.as_slice());
    extracted.as_mut_slice().zeroize();
    let expanded = hk
        .expand(HKDF_INFO, seed)
        .map_err(|e| IdentityError::Kdf(e.to_string()));
    prk.zeroize();
    expanded
}

/// A sealed node key and the request it was derived with (reported in the status).
pub struct SealedKey {
    /// The node's Ed25519 key.
    pub key: SigningKey,
    /// The request it was derived with.
    pub request: KeyRequest,
}

#[cfg(feature = "collect")]
/// Derives the sealed node key through `/dev/sev-guest`: one report (for the committed TCB),
/// then `MSG_KEY_REQ`. The same image, policy, chip and TCB give the same key at every start.
pub fn derive_sealed_node_key(vmpl: u32) -> Result<SealedKey, IdentityError> {
    if !Path::new(SEV_GUEST).exists() {
        return Err(IdentityError::NoSevGuestDevice { path: SEV_GUEST });
    }
    let mut fw =
        sev::firmware::guest::Firmware::open().map_err(|source| IdentityError::SevGuestOpen {
            path: SEV_GUEST,
            source,
        })?;
    let report = fw
        .get_report(None, Some([0u8; 64]), Some(vmpl))
        .map_err(|e| IdentityError::Report(e.to_string()))?;
    let report = crate::snp::raw::AttestationReport::parse(&report)
        .map_err(|e| IdentityError::Report(e.to_string()))?;
    let request = KeyRequest::node_identity(vmpl, report.committed_tcb());
    let derived = Zeroizing::new(
        fw.get_derived_key(Some(1), request.to_sev())
            .map_err(|e| IdentityError::DerivedKey(e.to_string()))?,
    );
    Ok(SealedKey {
        key: node_key_from_derived_key(&derived)?,
        request,
    })
}

/// First lines of an unsealed key file: what it is, for anyone who finds it on a disk.
pub const UNSEALED_LABEL: &str = "\
# UNSEALED sovereign-node identity key (test evidence source or development run).
# Anyone who can read this file can sign as this node. A node on SEV-SNP never writes
# its key: it derives it from the SNP derived key at every start.
";

/// Whether [`load_or_create_unsealed_key`] found the key or made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyFileOrigin {
    /// The file held a key.
    Loaded,
    /// There was no file: a new key was written.
    Created,
}

/// The unsealed Ed25519 key in `path` (PKCS#8 PEM after the label), created (0600, written
/// atomically) when absent. A file that exists but does not parse is an error, never
/// replaced: it may be a key someone enrolled.
pub fn load_or_create_unsealed_key(
    path: &Path,
) -> Result<(SigningKey, KeyFileOrigin), IdentityError> {
    let err = |message: String| IdentityError::KeyFile {
        path: path.to_owned(),
        message,
    };
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let text = Zeroizing::new(text);
            // PEM starts at its BEGIN line; the label (and nothing else) precedes it.
            let pem = text
                .find("-----BEGIN")
                .and_then(|at| text.get(at..))
                .ok_or_else(|| err("no PEM private key in the file".into()))?;
            let key = SigningKey::from_pkcs8_pem(pem).map_err(|e| err(e.to_string()))?;
            Ok((key, KeyFileOrigin::Loaded))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = SigningKey::generate(&mut rand::rngs::OsRng);
            let pem = key
                .to_pkcs8_pem(ed25519_dalek::pkcs8::spki::der::pem::LineEnding::LF)
                .map_err(|e| err(e.to_string()))?;
            let text = Zeroizing::new(format!("{UNSEALED_LABEL}{}", pem.as_str()));
            write_private_file(path, text.as_bytes()).map_err(|e| err(e.to_string()))?;
            Ok((key, KeyFileOrigin::Created))
        }
        Err(e) => Err(err(e.to_string())),
    }
}

/// Writes a new file readable only by its owner, atomically: a temporary file in the same
/// directory (0600), fsync, rename onto `path`, fsync of the directory. Fails if `path`
/// exists, so a key is never replaced; a crash leaves either no file or the whole file.
pub fn write_private_file(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    if std::fs::symlink_metadata(path).is_ok() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "exists; not replaced",
        ));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("no file name"))?
        .to_string_lossy();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    // A temporary file left by a crashed earlier run of this process id is stale.
    let _ = std::fs::remove_file(&tmp);
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(contents)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_identity_request_has_the_abi_layout() {
        let req = KeyRequest::node_identity(0, 0x1b00_0000_0000_0004);
        assert_eq!(req.guest_field_select, 0b10_1001);
        assert_eq!(
            hex::encode(req.to_bytes()),
            concat!(
                "00000000",         // ROOT_KEY_SELECT: 0 = VCEK
                "00000000",         // reserved
                "2900000000000000", // GUEST_FIELD_SELECT: policy, measurement, TCB
                "00000000",         // VMPL 0
                "00000000",         // GUEST_SVN 0
                "040000000000001b", // TCB_VERSION (committed), little-endian
            )
        );
        // The sev crate's request carries the same values in the same fields.
        #[cfg(feature = "collect")]
        {
            let sev = req.to_sev();
            assert_eq!(sev.get_root_key_select(), 0);
            assert_eq!(sev.guest_field_select.0, req.guest_field_select);
            assert!(sev.guest_field_select.get_measurement());
            assert!(sev.guest_field_select.get_guest_policy());
            assert!(sev.guest_field_select.get_tcb_version());
            assert!(!sev.guest_field_select.get_image_id());
            assert_eq!(
                (sev.vmpl, sev.guest_svn, sev.tcb_version),
                (0, 0, 0x1b00_0000_0000_0004)
            );
            assert_eq!(sev.launch_mit_vector, None);
        }
    }

    /// The extracted PRK does not outlive the derivation.
    #[test]
    fn the_hkdf_pseudorandom_key_is_wiped_and_the_seed_is_the_vectors() {
        let derived: [u8; 32] = std::array::from_fn(|i| i as u8);
        let (mut prk, mut seed) = ([0xa5u8; 32], [0u8; 32]);
        hkdf_seed(&derived, &mut prk, &mut seed).unwrap();
        assert_eq!(prk, [0u8; 32], "the PRK is left in memory");
        assert_eq!(
            hex::encode(seed),
            "11dae2fa3d72347f13ffc47b233f32287deec418a820d75e370802b1d2d162c1"
        );
    }

    /// Vectors computed independently of this crate: HKDF-SHA256 with Python's hmac module,
    /// the Ed25519 public key with OpenSSL (`openssl pkey -pubout` on the PKCS#8 seed).
    #[test]
    fn derived_key_to_node_key_vectors() {
        for (derived, seed, public) in [
            (
                "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
                "11dae2fa3d72347f13ffc47b233f32287deec418a820d75e370802b1d2d162c1",
                "1d1363f8103562e49899967df7cd84eb0f0548693b2d54987366d0ba404a04f2",
            ),
            (
                "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
                "541797387d4fd9d1e2972b2d1d4d727d6e6dc8b336b716ead5f7e891c45b516b",
                "155758b7d29856a40f628d83e9b85271d674c1abe1a534a2717e3c09a861b1e4",
            ),
        ] {
            let derived: [u8; 32] = hex::decode(derived).unwrap().try_into().unwrap();
            let key = node_key_from_derived_key(&derived).unwrap();
            assert_eq!(hex::encode(key.to_bytes()), seed);
            assert_eq!(hex::encode(key.verifying_key().to_bytes()), public);
            // Every start derives the same key from the same firmware answer.
            assert_eq!(
                node_key_from_derived_key(&derived).unwrap().to_bytes(),
                key.to_bytes()
            );
        }
        // One bit of the derived key (another image, policy, chip or TCB) is another node.
        let mut a = [7u8; 32];
        let k1 = node_key_from_derived_key(&a).unwrap().verifying_key();
        a[31] ^= 1;
        assert_ne!(node_key_from_derived_key(&a).unwrap().verifying_key(), k1);
    }

    #[test]
    fn the_unsealed_key_is_labelled_private_written_whole_and_reloaded() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("node-key.pem");
        let (key, origin) = load_or_create_unsealed_key(&path).unwrap();
        assert_eq!(origin, KeyFileOrigin::Created);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("# UNSEALED sovereign-node identity key"),
            "{text}"
        );
        assert!(text.contains("-----BEGIN PRIVATE KEY-----"), "{text}");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // Nothing but the key is left in the directory (no temporary file).
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["node-key.pem"]);
        // A restart loads the same key.
        let (again, origin) = load_or_create_unsealed_key(&path).unwrap();
        assert_eq!(origin, KeyFileOrigin::Loaded);
        assert_eq!(again.to_bytes(), key.to_bytes());
        // A key file without the label (written by an earlier version) still loads.
        let bare = dir.path().join("bare.pem");
        let pem = text.get(text.find("-----BEGIN").unwrap()..).unwrap();
        std::fs::write(&bare, pem).unwrap();
        assert_eq!(
            load_or_create_unsealed_key(&bare).unwrap().0.to_bytes(),
            key.to_bytes()
        );
    }

    #[test]
    fn a_damaged_key_file_is_an_error_and_is_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("node-key.pem");
        load_or_create_unsealed_key(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        // What a non-atomic writer interrupted halfway would have left.
        let cut = &text[..text.len() / 2];
        std::fs::write(&path, cut).unwrap();
        let err = load_or_create_unsealed_key(&path).err().unwrap();
        assert!(err.to_string().contains("node-key.pem"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), cut);
        // write_private_file never replaces an existing file.
        let e = write_private_file(&path, b"other").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), cut);
        // A stale temporary file of an earlier crash does not stop a new write.
        let fresh = dir.path().join("fresh.pem");
        let stale = dir
            .path()
            .join(format!(".fresh.pem.tmp-{}", std::process::id()));
        std::fs::write(&stale, b"half a key").unwrap();
        write_private_file(&fresh, b"whole").unwrap();
        assert_eq!(std::fs::read(&fresh).unwrap(), b"whole");
        assert!(!stale.exists());
        // A directory that does not exist: an error, and nothing is left behind.
        assert!(write_private_file(&dir.path().join("no/such/dir/key"), b"x").is_err());
    }

    #[cfg(feature = "collect")]
    #[test]
    #[ignore = "needs an SEV-SNP guest: /dev/sev-guest"]
    fn the_sealed_key_is_the_same_at_every_derivation_on_this_guest() {
        let a = derive_sealed_node_key(0).unwrap();
        let b = derive_sealed_node_key(0).unwrap();
        assert_eq!(a.key.verifying_key(), b.key.verifying_key());
        assert_eq!(a.request, b.request);
        assert_eq!(a.request.guest_field_select, NODE_IDENTITY_FIELDS);
    }
}
