//! Non-interactive distributed key generation (Groth, "Non-interactive distributed key
//! generation and key resharing", 2021) at the Internet Computer's parameters, on
//! `ic_bls12_381`: the replica's NI-DKG workload, written independently from the paper.
//!
//! - [`keys`]: receivers' forward-secure key pairs (proof of possession, key update).
//! - [`dealing`]: dealing creation (secrets on the CPU, constant-time arithmetic only).
//! - [`verify`]: phased dealing verification (deserialisation, ciphertext integrity,
//!   chunking proof, sharing proof) over the batches of [`batch::BatchOps`], which a GPU
//!   backend can implement; [`batch::CpuBatchOps`] is the CPU one.
//! - [`combined`]: many dealings in one call with a verdict each, the equations of each
//!   optionally combined by random coefficients (the same verdict, fewer operations).
//! - [`decrypt`]: a receiver's share decryption.
//! - [`ic_cbor`]: the IC's serde_cbor encodings of dealings, receiver keys and proofs of
//!   possession; [`oracle`] and [`params`]: the IC's random oracles and system parameters,
//!   so that dealings are the replica's, byte for byte.
//! - [`encoding`]: the verifier's element stream of a dealing and the dealing file (the
//!   IC's dealing bytes with their context).
//!
//! [`deal`] and [`verify`] are the entry points of the `gpu-crypto nidkg` subcommands.

#![warn(missing_docs)]

pub mod batch;
pub mod combined;
pub mod component;
pub mod dealing;
pub mod decrypt;
pub mod encoding;
pub mod error;
pub mod ic_cbor;
pub mod keys;
pub mod msm;
pub mod oracle;
pub mod params;
pub mod random;
pub mod verify;

pub use batch::{BatchOps, CpuBatchOps, PairingBatch};
pub use combined::{BatchReport, Checks, DealingInput, verify_batch};
pub use component::Component;
pub use dealing::{Dealing, create_dealing};
pub use decrypt::decrypt_share;
pub use encoding::DealingFile;
pub use error::{BackendError, ChunkingCheck, DealError, DecryptError, SharingCheck, VerifyError};
pub use keys::{ReceiverPublicKey, ReceiverSecretKey, generate_receiver_key};
pub use params::{ThresholdKind, dealing_size};
pub use random::random_scalar;
pub use verify::{PhaseTimes, Report, verify_dealing};

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// Epoch of the dealings [`deal`] creates.
pub const DEMO_EPOCH: u32 = 1;

/// Dealer index of the dealings [`deal`] creates.
pub const DEMO_DEALER_INDEX: u32 = 0;

/// The associated data of a dealing in the IC: the dealer's index, 4 bytes big-endian
/// (what `verify_dealing` passes to `verify_zk_proofs`).
pub fn dealer_associated_data(dealer_index: u32) -> Vec<u8> {
    dealer_index.to_be_bytes().to_vec()
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
        let associated_data = dealer_associated_data(DEMO_DEALER_INDEX);
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
    verify_file_dealing(ops, &parsed, &parsed.receiver_keys)
}

fn verify_file_dealing<B: BatchOps + ?Sized>(
    ops: &B,
    file: &DealingFile,
    receiver_keys: &[[u8; 48]],
) -> Result<Report, VerifyError> {
    let stream = checked_stream(&file.dealing, receiver_keys.len(), file.t)?;
    verify_dealing(
        ops,
        receiver_keys,
        file.t,
        file.epoch,
        &file.associated_data,
        &stream,
    )
}

/// The element stream of the IC's dealing bytes, refused unless its shape is the
/// context's: the IC's `verify_public_coefficients_match_threshold` and its check that
/// every receiver has a ciphertext row.
fn checked_stream(dealing: &[u8], n: usize, t: usize) -> Result<Vec<u8>, VerifyError> {
    let (rows, coefficients, stream) = ic_cbor::dealing_stream(dealing)?;
    if coefficients != t {
        return Err(VerifyError::ThresholdMismatch {
            expected: t,
            actual: coefficients,
        });
    }
    if rows != n {
        return Err(VerifyError::ReceiverCount {
            expected: n,
            actual: rows,
        });
    }
    Ok(stream)
}

/// The context the IC verifies a dealing under (`verify_dealing`'s arguments).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IcContext {
    /// The dealer's index; its 4 big-endian bytes are the associated data.
    pub dealer_index: u32,
    /// The threshold: the number of public coefficients.
    pub threshold: usize,
    /// The epoch the shares are encrypted for.
    pub epoch: u32,
}

/// Verifies a dealing in the IC's CBOR encoding under `context`, with the receivers'
/// keys (compressed G1, in index order `0..n`), as the replica's `verify_dealing` does.
pub fn verify_ic<B: BatchOps + ?Sized>(
    ops: &B,
    dealing: &[u8],
    receiver_keys: &[[u8; 48]],
    context: &IcContext,
) -> Result<Report, VerifyError> {
    let stream = checked_stream(dealing, receiver_keys.len(), context.threshold)?;
    verify_dealing(
        ops,
        receiver_keys,
        context.threshold,
        context.epoch,
        &dealer_associated_data(context.dealer_index),
        &stream,
    )
}

/// One dealing in the IC's CBOR encoding, with what it is verified under.
#[derive(Clone, Copy, Debug)]
pub struct IcDealing<'a> {
    /// The dealing, serde_cbor.
    pub dealing: &'a [u8],
    /// Receivers' keys (compressed G1, in index order).
    pub receiver_keys: &'a [[u8; 48]],
    /// Dealer index, threshold and epoch.
    pub context: &'a IcContext,
}

/// Verifies many IC dealings in one call ([`combined::verify_batch`]): one verdict per
/// dealing, in order; a bad dealing never fails another.
pub fn verify_ic_batch<B: BatchOps + ?Sized>(
    ops: &B,
    dealings: &[IcDealing<'_>],
    checks: Checks,
) -> BatchReport {
    // Each dealing's element stream and associated data, or why it has none.
    type Prepared = Result<(Vec<u8>, Vec<u8>), VerifyError>;
    let prepared: Vec<Prepared> = dealings
        .iter()
        .map(|d| {
            let stream = checked_stream(d.dealing, d.receiver_keys.len(), d.context.threshold)?;
            Ok((stream, dealer_associated_data(d.context.dealer_index)))
        })
        .collect();
    let inputs: Vec<DealingInput<'_>> = dealings
        .iter()
        .zip(&prepared)
        .filter_map(|(d, p)| {
            let (stream, associated_data) = p.as_ref().ok()?;
            Some(DealingInput {
                receiver_keys: d.receiver_keys,
                t: d.context.threshold,
                epoch: d.context.epoch,
                associated_data,
                stream,
            })
        })
        .collect();
    let mut report = verify_batch(ops, &inputs, checks);
    let mut verdicts = std::mem::take(&mut report.verdicts).into_iter();
    report.verdicts = prepared
        .into_iter()
        .map(|p| match p {
            // One verdict per input; a missing one is no verdict, never an acceptance.
            Ok(_) => verdicts.next().unwrap_or_else(|| {
                Err(VerifyError::Backend(BackendError {
                    operation: "verify_batch",
                    reason: "no verdict for a dealing".into(),
                }))
            }),
            Err(e) => Err(e),
        })
        .collect();
    report
}

/// Verifies a receiver key's proof of possession (the IC's encodings of each) for
/// `associated_data`; `Ok(false)` when the proof is wrong.
pub fn verify_pop(
    key: &[u8; 48],
    pop: &ic_cbor::EncodedPop,
    associated_data: &[u8],
) -> Result<bool, VerifyError> {
    let point = |bytes: &[u8; 48], component| {
        Option::<ic_bls12_381::G1Affine>::from(ic_bls12_381::G1Affine::from_compressed(bytes))
            .ok_or(VerifyError::Deserialize {
                component,
                index: 0,
            })
    };
    let scalar = |bytes: &[u8; 32]| {
        encoding::scalar_from_be(bytes).ok_or(VerifyError::Deserialize {
            component: Component::ReceiverKey,
            index: 0,
        })
    };
    let public = ReceiverPublicKey {
        key: point(key, Component::ReceiverKey)?,
        pop_key: point(&pop.pop_key, Component::ReceiverKey)?,
        pop_challenge: scalar(&pop.challenge)?,
        pop_response: scalar(&pop.response)?,
    };
    Ok(public.verify_pop(associated_data))
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
    verify_file_dealing(ops, &parsed, registered_keys)
}
