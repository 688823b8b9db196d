//! Non-interactive distributed key generation (Groth, "Non-interactive distributed key
//! generation and key resharing", 2021) at the Internet Computer's parameters, on
//! `ic_bls12_381`: the replica's NI-DKG workload, written independently from the paper.
//!
//! - [`keys`]: receivers' forward-secure key pairs (proof of possession, key update).
//! - [`dealing`]: dealing creation (secrets on the CPU, constant-time arithmetic only).
//! - [`verify`]: phased dealing verification (deserialisation, ciphertext integrity,
//!   chunking proof, sharing proof) over the batches of [`batch::BatchOps`], which a GPU
//!   backend can implement; [`batch::CpuBatchOps`] is the CPU one.
//! - [`decrypt`]: a receiver's share decryption.
//! - [`encoding`]: the dealing's bytes (the IC's size, `96t + 848n + 7600`) and the
//!   self-contained dealing file.
//!
//! [`deal`] and [`verify`] are the entry points of the `gpu-crypto nidkg` subcommands.

pub mod batch;
pub mod component;
pub mod dealing;
pub mod decrypt;
pub mod encoding;
pub mod error;
pub mod keys;
pub mod msm;
pub mod oracle;
pub mod params;
pub mod verify;

pub use batch::{BatchOps, CpuBatchOps, PairingBatch};
pub use component::Component;
pub use dealing::{Dealing, create_dealing};
pub use decrypt::decrypt_share;
pub use encoding::DealingFile;
pub use error::{BackendError, ChunkingCheck, DealError, DecryptError, SharingCheck, VerifyError};
pub use keys::{ReceiverPublicKey, ReceiverSecretKey, generate_receiver_key};
pub use params::{ThresholdKind, dealing_size};
pub use verify::{PhaseTimes, Report, verify_dealing};

use ic_bls12_381::Scalar;
use rand::{CryptoRng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// A uniformly random scalar (512 random bits reduced modulo the group order).
pub fn random_scalar<R: RngCore + CryptoRng>(rng: &mut R) -> Scalar {
    let mut wide = [0u8; 64];
    rng.fill_bytes(&mut wide);
    Scalar::from_bytes_wide(&wide)
}

/// Epoch of the dealings [`deal`] creates.
pub const DEMO_EPOCH: u32 = 1;

/// The associated data of [`deal`]'s dealings: names the seed, n and the threshold kind.
pub fn demo_associated_data(n: usize, kind: ThresholdKind, seed: u64) -> Vec<u8> {
    format!(
        "sovereign-node nidkg demo dealing n={n} threshold={} seed={seed}",
        kind.name()
    )
    .into_bytes()
}

/// A complete, reproducible DKG setup from a seed: `n` receivers' key pairs and one
/// dealing to them with the IC's threshold of `kind`, for [`DEMO_EPOCH`].
pub struct DemoSetup {
    /// Receivers' public keys.
    pub public_keys: Vec<ReceiverPublicKey>,
    /// Receivers' secret keys.
    pub secret_keys: Vec<ReceiverSecretKey>,
    /// The dealing.
    pub dealing: Dealing,
    /// The dealing file (context and dealing bytes).
    pub file: DealingFile,
}

impl DemoSetup {
    /// Builds the setup deterministically from `seed`.
    pub fn new(n: usize, kind: ThresholdKind, seed: u64) -> Result<Self, DealError> {
        let t = kind.threshold(n);
        encoding::check_shape(n, t).map_err(|_| DealError::Shape { n, t })?;
        let associated_data = demo_associated_data(n, kind, seed);
        let mut key_rng = ChaCha20Rng::seed_from_u64(seed);
        let (public_keys, secret_keys): (Vec<_>, Vec<_>) = (0..n)
            .map(|i| generate_receiver_key(&mut key_rng, &(i as u32).to_be_bytes()))
            .unzip();
        let keys: Vec<_> = public_keys.iter().map(|k| k.key).collect();
        let mut deal_rng = ChaCha20Rng::seed_from_u64(seed ^ 0x6465_616c_6572_0001);
        let dealing = create_dealing(&mut deal_rng, &keys, t, DEMO_EPOCH, &associated_data, None)?;
        let file = DealingFile {
            epoch: DEMO_EPOCH,
            associated_data,
            receiver_keys: keys.iter().map(|k| k.to_compressed()).collect(),
            t,
            dealing: dealing.to_bytes(),
        };
        Ok(DemoSetup {
            public_keys,
            secret_keys,
            dealing,
            file,
        })
    }
}

/// A dealing file for `n` receivers at the IC's high threshold (`2f + 1`), reproducible
/// from `seed` (receivers' keys and the dealing's randomness both derive from it).
pub fn deal(n: usize, seed: u64) -> Result<Vec<u8>, DealError> {
    Ok(DemoSetup::new(n, ThresholdKind::High, seed)?
        .file
        .to_bytes())
}

/// Verifies a dealing file on the CPU with all rayon threads.
pub fn verify(file: &[u8]) -> Result<Report, VerifyError> {
    verify_with(&CpuBatchOps::rayon(), file)
}

/// Verifies a dealing file with the given backend.
pub fn verify_with<B: BatchOps + ?Sized>(ops: &B, file: &[u8]) -> Result<Report, VerifyError> {
    let parsed = DealingFile::parse(file)?;
    verify_dealing(
        ops,
        &parsed.receiver_keys,
        parsed.t,
        parsed.epoch,
        &parsed.associated_data,
        &parsed.dealing,
    )
}

/// Verifies a dealing file against the receivers' registered keys: a file whose receiver
/// keys differ is rejected with [`VerifyError::WrongReceiverKey`] before any curve work.
pub fn verify_against<B: BatchOps + ?Sized>(
    ops: &B,
    file: &[u8],
    registered_keys: &[[u8; 48]],
) -> Result<Report, VerifyError> {
    let parsed = DealingFile::parse(file)?;
    if parsed.receiver_keys.len() != registered_keys.len() {
        return Err(VerifyError::Header(
            "receiver count differs from the registry",
        ));
    }
    if let Some(index) = parsed
        .receiver_keys
        .iter()
        .zip(registered_keys)
        .position(|(a, b)| a != b)
    {
        return Err(VerifyError::WrongReceiverKey { index });
    }
    verify_dealing(
        ops,
        registered_keys,
        parsed.t,
        parsed.epoch,
        &parsed.associated_data,
        &parsed.dealing,
    )
}
