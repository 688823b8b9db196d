//! The SEV-SNP `ATTESTATION_REPORT` (SNP ABI spec 56860, table "ATTESTATION_REPORT Structure"),
//! read field by field from the raw 1184 bytes the firmware returns.
//!
//! The verifier never re-encodes a struct: the report signature is checked over the raw bytes
//! `0x000..0x2A0` exactly as they arrived, and every accessor reads at a fixed offset of a
//! fixed-size array, so no input can make this module panic.

use thiserror::Error;

/// Size of an `ATTESTATION_REPORT` (0x4A0).
pub const REPORT_SIZE: usize = 0x4A0;
/// The signature covers bytes `0x000..0x2A0`.
pub const SIGNED_LEN: usize = 0x2A0;
/// ECDSA P-384 with SHA-384, the only signature algorithm the ABI defines.
pub const SIG_ALGO_ECDSA_P384_SHA384: u32 = 1;
/// Report versions this verifier knows the layout of (SNP ABI 1.51 .. 1.58).
pub const SUPPORTED_VERSIONS: std::ops::RangeInclusive<u32> = 2..=5;

mod off {
    pub(super) const VERSION: usize = 0x00;
    pub(super) const GUEST_SVN: usize = 0x04;
    pub(super) const POLICY: usize = 0x08;
    pub(super) const FAMILY_ID: usize = 0x10;
    pub(super) const IMAGE_ID: usize = 0x20;
    pub(super) const VMPL: usize = 0x30;
    pub(super) const SIG_ALGO: usize = 0x34;
    pub(super) const CURRENT_TCB: usize = 0x38;
    pub(super) const PLATFORM_INFO: usize = 0x40;
    pub(super) const FLAGS: usize = 0x48;
    pub(super) const REPORT_DATA: usize = 0x50;
    pub(super) const MEASUREMENT: usize = 0x90;
    pub(super) const HOST_DATA: usize = 0xC0;
    pub(super) const ID_KEY_DIGEST: usize = 0xE0;
    pub(super) const AUTHOR_KEY_DIGEST: usize = 0x110;
    pub(super) const REPORT_ID: usize = 0x140;
    pub(super) const REPORT_ID_MA: usize = 0x160;
    pub(super) const REPORTED_TCB: usize = 0x180;
    pub(super) const CPUID_FAM: usize = 0x188;
    pub(super) const CPUID_MOD: usize = 0x189;
    pub(super) const CPUID_STEP: usize = 0x18A;
    pub(super) const CHIP_ID: usize = 0x1A0;
    pub(super) const COMMITTED_TCB: usize = 0x1E0;
    pub(super) const CURRENT_VERSION: usize = 0x1E8;
    pub(super) const COMMITTED_VERSION: usize = 0x1EC;
    pub(super) const LAUNCH_TCB: usize = 0x1F0;
    pub(super) const LAUNCH_MIT_VECTOR: usize = 0x1F8;
    pub(super) const CURRENT_MIT_VECTOR: usize = 0x200;
    pub(super) const SIG_R: usize = 0x2A0;
    pub(super) const SIG_S: usize = 0x2E8;
    pub(super) const SIG_RESERVED: usize = 0x330;
}

/// Length of R and S fields (little-endian, only the low 48 bytes may be non-zero for P-384).
pub const SIG_COMPONENT_LEN: usize = 72;

/// Why bytes are not an attestation report.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ReportError {
    /// Not exactly [`REPORT_SIZE`] bytes.
    #[error("attestation report is {actual} bytes, expected {REPORT_SIZE}")]
    Size {
        /// The length given.
        actual: usize,
    },
    /// Hex text that does not decode.
    #[error("report is not valid hex: {0}")]
    Hex(String),
}

/// Which key signed the report (flags bits 4:2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SigningKey {
    /// Chip endorsement key (per chip and TCB).
    Vcek,
    /// Loaded endorsement key (per cloud provider).
    Vlek,
    /// No key: the report is unsigned.
    None,
    /// A value the ABI reserves.
    Reserved(u8),
}

impl std::fmt::Display for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SigningKey::Vcek => write!(f, "VCEK"),
            SigningKey::Vlek => write!(f, "VLEK"),
            SigningKey::None => write!(f, "none"),
            SigningKey::Reserved(v) => write!(f, "reserved({v})"),
        }
    }
}

/// Guest policy (the 64-bit `POLICY` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuestPolicy(pub u64);

impl GuestPolicy {
    /// SMT allowed (bit 16).
    pub const SMT: u64 = 1 << 16;
    /// Must be one: the firmware refuses a policy with it clear.
    pub const RESERVED_MBO: u64 = 1 << 17;
    /// A migration agent is allowed (bit 18).
    pub const MIGRATE_MA: u64 = 1 << 18;
    /// Debugging allowed (bit 19).
    pub const DEBUG: u64 = 1 << 19;
    /// The guest runs on a single socket only (bit 20).
    pub const SINGLE_SOCKET: u64 = 1 << 20;
    /// CXL memory may be populated (bit 21).
    pub const CXL_ALLOW: u64 = 1 << 21;
    /// AES-256-XTS memory encryption required (bit 22).
    pub const MEM_AES_256_XTS: u64 = 1 << 22;
    /// RAPL must be disabled (bit 23).
    pub const RAPL_DIS: u64 = 1 << 23;
    /// Ciphertext hiding required (bit 24).
    pub const CIPHERTEXT_HIDING: u64 = 1 << 24;
    /// Page swap disabled (bit 25).
    pub const PAGE_SWAP_DISABLE: u64 = 1 << 25;
    /// Bits 63:26 are reserved and must be zero.
    pub const RESERVED_MBZ: u64 = !((1u64 << 26) - 1);

    /// The minimum firmware ABI minor version the guest requires (bits 7:0).
    pub fn abi_minor(self) -> u8 {
        self.0.to_le_bytes()[0]
    }
    /// The minimum firmware ABI major version the guest requires (bits 15:8).
    pub fn abi_major(self) -> u8 {
        self.0.to_le_bytes()[1]
    }
    /// Whether `bit` (one of the constants above) is set.
    pub fn has(self, bit: u64) -> bool {
        self.0 & bit != 0
    }
}

/// Firmware version triple as the report stores it (build, minor, major, reserved).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FirmwareVersion {
    /// Major version.
    pub major: u8,
    /// Minor version.
    pub minor: u8,
    /// Build number.
    pub build: u8,
}

impl std::fmt::Display for FirmwareVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{} build {}", self.major, self.minor, self.build)
    }
}

/// A raw, size-checked attestation report with accessors at the ABI offsets.
#[derive(Clone, PartialEq, Eq)]
pub struct AttestationReport {
    raw: Box<[u8; REPORT_SIZE]>,
}

impl std::fmt::Debug for AttestationReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AttestationReport")
            .field("version", &self.version())
            .field("policy", &format_args!("{:#x}", self.policy().0))
            .field("measurement", &hex::encode(self.measurement()))
            .finish_non_exhaustive()
    }
}

impl AttestationReport {
    /// Accepts exactly [`REPORT_SIZE`] bytes; anything else is a typed error.
    pub fn parse(bytes: &[u8]) -> Result<AttestationReport, ReportError> {
        let raw: [u8; REPORT_SIZE] = bytes.try_into().map_err(|_| ReportError::Size {
            actual: bytes.len(),
        })?;
        Ok(AttestationReport { raw: Box::new(raw) })
    }

    /// Hex text (as the `sev` crate's test data and some tools store it), whitespace ignored.
    pub fn parse_hex(text: &str) -> Result<AttestationReport, ReportError> {
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let bytes = hex::decode(compact).map_err(|e| ReportError::Hex(e.to_string()))?;
        AttestationReport::parse(&bytes)
    }

    /// The raw 1184 bytes.
    pub fn as_bytes(&self) -> &[u8; REPORT_SIZE] {
        &self.raw
    }

    /// The exact bytes the signature covers.
    pub fn signed_bytes(&self) -> &[u8] {
        self.raw.get(..SIGNED_LEN).unwrap_or(&[])
    }

    fn array<const N: usize>(&self, offset: usize) -> [u8; N] {
        let mut out = [0u8; N];
        if let Some(src) = self.raw.get(offset..offset + N) {
            out.copy_from_slice(src);
        }
        out
    }

    fn byte(&self, offset: usize) -> u8 {
        self.raw.get(offset).copied().unwrap_or(0)
    }

    fn u32_at(&self, offset: usize) -> u32 {
        u32::from_le_bytes(self.array(offset))
    }

    fn u64_at(&self, offset: usize) -> u64 {
        u64::from_le_bytes(self.array(offset))
    }

    /// VERSION: the report format version.
    pub fn version(&self) -> u32 {
        self.u32_at(off::VERSION)
    }
    /// GUEST_SVN: the guest's security version.
    pub fn guest_svn(&self) -> u32 {
        self.u32_at(off::GUEST_SVN)
    }
    /// POLICY: the guest policy the launch set.
    pub fn policy(&self) -> GuestPolicy {
        GuestPolicy(self.u64_at(off::POLICY))
    }
    /// FAMILY_ID from the ID block.
    pub fn family_id(&self) -> [u8; 16] {
        self.array(off::FAMILY_ID)
    }
    /// IMAGE_ID from the ID block.
    pub fn image_id(&self) -> [u8; 16] {
        self.array(off::IMAGE_ID)
    }
    /// VMPL the report was requested from.
    pub fn vmpl(&self) -> u32 {
        self.u32_at(off::VMPL)
    }
    /// SIGNATURE_ALGO (1: ECDSA P-384 with SHA-384).
    pub fn signature_algo(&self) -> u32 {
        self.u32_at(off::SIG_ALGO)
    }
    /// CURRENT_TCB: the platform's current TCB (raw 64 bits).
    pub fn current_tcb(&self) -> u64 {
        self.u64_at(off::CURRENT_TCB)
    }
    /// PLATFORM_INFO: the platform's SMT, TSME and other state bits.
    pub fn platform_info(&self) -> u64 {
        self.u64_at(off::PLATFORM_INFO)
    }
    /// The flags word (AUTHOR_KEY_EN, MASK_CHIP_KEY, SIGNING_KEY).
    pub fn flags(&self) -> u32 {
        self.u32_at(off::FLAGS)
    }
    /// AUTHOR_KEY_EN: the ID block was signed with an author key too.
    pub fn author_key_en(&self) -> bool {
        self.flags() & 1 != 0
    }
    /// MASK_CHIP_KEY: the chip id is masked (all zeros).
    pub fn mask_chip_key(&self) -> bool {
        self.flags() & 2 != 0
    }
    /// SIGNING_KEY: which key signed the report.
    pub fn signing_key(&self) -> SigningKey {
        match ((self.flags() >> 2) & 0b111) as u8 {
            0 => SigningKey::Vcek,
            1 => SigningKey::Vlek,
            7 => SigningKey::None,
            other => SigningKey::Reserved(other),
        }
    }
    /// REPORT_DATA: the 64 bytes the guest asked to bind.
    pub fn report_data(&self) -> [u8; 64] {
        self.array(off::REPORT_DATA)
    }
    /// MEASUREMENT: the launch digest.
    pub fn measurement(&self) -> [u8; 48] {
        self.array(off::MEASUREMENT)
    }
    /// HOST_DATA the host supplied at launch.
    pub fn host_data(&self) -> [u8; 32] {
        self.array(off::HOST_DATA)
    }
    /// ID_KEY_DIGEST: SHA-384 of the ID block's signing key.
    pub fn id_key_digest(&self) -> [u8; 48] {
        self.array(off::ID_KEY_DIGEST)
    }
    /// AUTHOR_KEY_DIGEST: SHA-384 of the author key.
    pub fn author_key_digest(&self) -> [u8; 48] {
        self.array(off::AUTHOR_KEY_DIGEST)
    }
    /// REPORT_ID: the guest context's id.
    pub fn report_id(&self) -> [u8; 32] {
        self.array(off::REPORT_ID)
    }
    /// REPORT_ID_MA: the migration agent's report id.
    pub fn report_id_ma(&self) -> [u8; 32] {
        self.array(off::REPORT_ID_MA)
    }
    /// REPORTED_TCB: the TCB the VCEK was derived for (raw 64 bits).
    pub fn reported_tcb(&self) -> u64 {
        self.u64_at(off::REPORTED_TCB)
    }
    /// CPUID family, model and stepping (report version 3 and later; zero before).
    pub fn cpuid(&self) -> Option<(u8, u8, u8)> {
        (self.version() >= 3).then(|| {
            (
                self.byte(off::CPUID_FAM),
                self.byte(off::CPUID_MOD),
                self.byte(off::CPUID_STEP),
            )
        })
    }
    /// CHIP_ID: the chip's unique id (zeros when masked; Turin uses the first 8 bytes).
    pub fn chip_id(&self) -> [u8; 64] {
        self.array(off::CHIP_ID)
    }
    /// COMMITTED_TCB: the TCB the firmware cannot roll back past (raw 64 bits).
    pub fn committed_tcb(&self) -> u64 {
        self.u64_at(off::COMMITTED_TCB)
    }
    fn firmware_at(&self, offset: usize) -> FirmwareVersion {
        FirmwareVersion {
            build: self.byte(offset),
            minor: self.byte(offset + 1),
            major: self.byte(offset + 2),
        }
    }
    /// CURRENT_BUILD, CURRENT_MINOR, CURRENT_MAJOR: the running SEV firmware.
    pub fn current_firmware(&self) -> FirmwareVersion {
        self.firmware_at(off::CURRENT_VERSION)
    }
    /// COMMITTED_BUILD, COMMITTED_MINOR, COMMITTED_MAJOR: the committed SEV firmware.
    pub fn committed_firmware(&self) -> FirmwareVersion {
        self.firmware_at(off::COMMITTED_VERSION)
    }
    /// LAUNCH_TCB: the TCB at the guest's launch (raw 64 bits).
    pub fn launch_tcb(&self) -> u64 {
        self.u64_at(off::LAUNCH_TCB)
    }
    /// Mitigation vectors (report version 5 and later).
    pub fn mit_vectors(&self) -> Option<(u64, u64)> {
        (self.version() >= 5).then(|| {
            (
                self.u64_at(off::LAUNCH_MIT_VECTOR),
                self.u64_at(off::CURRENT_MIT_VECTOR),
            )
        })
    }

    /// Signature R and S converted to big-endian 48-byte scalars, or the reason they are
    /// malformed (bytes above the P-384 width are not zero).
    pub fn signature_rs(&self) -> Result<([u8; 48], [u8; 48]), String> {
        let r: [u8; SIG_COMPONENT_LEN] = self.array(off::SIG_R);
        let s: [u8; SIG_COMPONENT_LEN] = self.array(off::SIG_S);
        let mut out = ([0u8; 48], [0u8; 48]);
        for (name, le, be) in [("R", &r, &mut out.0), ("S", &s, &mut out.1)] {
            let (low, high) = le.split_at(48);
            if high.iter().any(|b| *b != 0) {
                return Err(format!("signature {name} has non-zero bytes above 48"));
            }
            for (dst, src) in be.iter_mut().zip(low.iter().rev()) {
                *dst = *src;
            }
        }
        Ok(out)
    }

    /// Reserved regions (offset, length) that must be zero for this report's version.
    pub fn reserved_regions(&self) -> Vec<(usize, usize)> {
        let v = self.version();
        let mut regions = vec![(0x4C, 4), (0x1EB, 1), (0x1EF, 1)];
        if v >= 3 {
            regions.push((0x18B, 0x1A0 - 0x18B));
        } else {
            regions.push((0x188, 0x1A0 - 0x188));
        }
        if v >= 5 {
            regions.push((0x208, SIGNED_LEN - 0x208));
        } else {
            regions.push((0x1F8, SIGNED_LEN - 0x1F8));
        }
        regions.push((off::SIG_RESERVED, REPORT_SIZE - off::SIG_RESERVED));
        regions
    }

    /// The first non-zero byte in a reserved region (offset, value), if any. Flags bits 31:5
    /// are reserved too.
    pub fn first_nonzero_reserved(&self) -> Option<(usize, u8)> {
        if self.flags() >> 5 != 0 {
            return Some((off::FLAGS, self.byte(off::FLAGS)));
        }
        for (start, len) in self.reserved_regions() {
            if let Some(region) = self.raw.get(start..start + len)
                && let Some(pos) = region.iter().position(|b| *b != 0)
            {
                return Some((start + pos, region.get(pos).copied().unwrap_or(0)));
            }
        }
        None
    }
}

/// Writable view used by the test evidence source to build reports field by field.
#[derive(Clone)]
pub struct ReportBuilder {
    raw: Box<[u8; REPORT_SIZE]>,
}

impl Default for ReportBuilder {
    fn default() -> Self {
        ReportBuilder {
            raw: Box::new([0u8; REPORT_SIZE]),
        }
    }
}

impl ReportBuilder {
    /// A builder starting from `report`'s bytes.
    pub fn from_report(report: &AttestationReport) -> ReportBuilder {
        ReportBuilder {
            raw: report.raw.clone(),
        }
    }
    fn put(&mut self, offset: usize, bytes: &[u8]) -> &mut Self {
        if let Some(dst) = self.raw.get_mut(offset..offset + bytes.len()) {
            dst.copy_from_slice(bytes);
        }
        self
    }
    /// Write arbitrary bytes at an offset (tests use this for malformed reports).
    pub fn bytes(&mut self, offset: usize, bytes: &[u8]) -> &mut Self {
        self.put(offset, bytes)
    }
    /// Sets VERSION.
    pub fn version(&mut self, v: u32) -> &mut Self {
        self.put(off::VERSION, &v.to_le_bytes())
    }
    /// Sets GUEST_SVN.
    pub fn guest_svn(&mut self, v: u32) -> &mut Self {
        self.put(off::GUEST_SVN, &v.to_le_bytes())
    }
    /// Sets POLICY.
    pub fn policy(&mut self, v: u64) -> &mut Self {
        self.put(off::POLICY, &v.to_le_bytes())
    }
    /// Sets FAMILY_ID.
    pub fn family_id(&mut self, v: [u8; 16]) -> &mut Self {
        self.put(off::FAMILY_ID, &v)
    }
    /// Sets IMAGE_ID.
    pub fn image_id(&mut self, v: [u8; 16]) -> &mut Self {
        self.put(off::IMAGE_ID, &v)
    }
    /// Sets VMPL.
    pub fn vmpl(&mut self, v: u32) -> &mut Self {
        self.put(off::VMPL, &v.to_le_bytes())
    }
    /// Sets SIGNATURE_ALGO.
    pub fn signature_algo(&mut self, v: u32) -> &mut Self {
        self.put(off::SIG_ALGO, &v.to_le_bytes())
    }
    /// Sets CURRENT_TCB.
    pub fn current_tcb(&mut self, v: u64) -> &mut Self {
        self.put(off::CURRENT_TCB, &v.to_le_bytes())
    }
    /// Sets PLATFORM_INFO.
    pub fn platform_info(&mut self, v: u64) -> &mut Self {
        self.put(off::PLATFORM_INFO, &v.to_le_bytes())
    }
    /// Sets the flags word.
    pub fn flags(&mut self, v: u32) -> &mut Self {
        self.put(off::FLAGS, &v.to_le_bytes())
    }
    /// Sets REPORT_DATA.
    pub fn report_data(&mut self, v: [u8; 64]) -> &mut Self {
        self.put(off::REPORT_DATA, &v)
    }
    /// Sets MEASUREMENT.
    pub fn measurement(&mut self, v: [u8; 48]) -> &mut Self {
        self.put(off::MEASUREMENT, &v)
    }
    /// Sets HOST_DATA.
    pub fn host_data(&mut self, v: [u8; 32]) -> &mut Self {
        self.put(off::HOST_DATA, &v)
    }
    /// Sets ID_KEY_DIGEST.
    pub fn id_key_digest(&mut self, v: [u8; 48]) -> &mut Self {
        self.put(off::ID_KEY_DIGEST, &v)
    }
    /// Sets AUTHOR_KEY_DIGEST.
    pub fn author_key_digest(&mut self, v: [u8; 48]) -> &mut Self {
        self.put(off::AUTHOR_KEY_DIGEST, &v)
    }
    /// Sets REPORT_ID.
    pub fn report_id(&mut self, v: [u8; 32]) -> &mut Self {
        self.put(off::REPORT_ID, &v)
    }
    /// Sets REPORTED_TCB.
    pub fn reported_tcb(&mut self, v: u64) -> &mut Self {
        self.put(off::REPORTED_TCB, &v.to_le_bytes())
    }
    /// Sets the CPUID family, model and stepping.
    pub fn cpuid(&mut self, family: u8, model: u8, stepping: u8) -> &mut Self {
        self.put(off::CPUID_FAM, &[family, model, stepping])
    }
    /// Sets CHIP_ID.
    pub fn chip_id(&mut self, v: [u8; 64]) -> &mut Self {
        self.put(off::CHIP_ID, &v)
    }
    /// Sets COMMITTED_TCB.
    pub fn committed_tcb(&mut self, v: u64) -> &mut Self {
        self.put(off::COMMITTED_TCB, &v.to_le_bytes())
    }
    /// Sets the current SEV firmware version.
    pub fn current_firmware(&mut self, v: FirmwareVersion) -> &mut Self {
        self.put(off::CURRENT_VERSION, &[v.build, v.minor, v.major])
    }
    /// Sets the committed SEV firmware version.
    pub fn committed_firmware(&mut self, v: FirmwareVersion) -> &mut Self {
        self.put(off::COMMITTED_VERSION, &[v.build, v.minor, v.major])
    }
    /// Sets LAUNCH_TCB.
    pub fn launch_tcb(&mut self, v: u64) -> &mut Self {
        self.put(off::LAUNCH_TCB, &v.to_le_bytes())
    }
    /// Store R and S (big-endian scalars) as the report's little-endian 72-byte fields.
    pub fn signature(&mut self, r_be: &[u8; 48], s_be: &[u8; 48]) -> &mut Self {
        let mut r = [0u8; SIG_COMPONENT_LEN];
        let mut s = [0u8; SIG_COMPONENT_LEN];
        for (dst, src) in r.iter_mut().zip(r_be.iter().rev()) {
            *dst = *src;
        }
        for (dst, src) in s.iter_mut().zip(s_be.iter().rev()) {
            *dst = *src;
        }
        self.put(off::SIG_R, &r);
        self.put(off::SIG_S, &s)
    }
    /// The bytes the signature covers (`0x000..0x2A0`).
    pub fn signed_bytes(&self) -> &[u8] {
        self.raw.get(..SIGNED_LEN).unwrap_or(&[])
    }
    /// The report as built.
    pub fn build(&self) -> AttestationReport {
        AttestationReport {
            raw: self.raw.clone(),
        }
    }
}
