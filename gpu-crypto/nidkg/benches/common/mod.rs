//! Inputs and the blst peer shared by the NI-DKG benches.

#![allow(dead_code)]

use blst::{
    MultiPoint, blst_p1, blst_p1_affine, blst_p1_compress, blst_p1_deserialize,
    blst_p1s_mult_pippenger, blst_p1s_mult_pippenger_scratch_sizeof,
};
use ic_bls12_381::{G1Affine, G1Projective, Scalar};
use nidkg::params::{NUM_CHUNKS, NUM_ZK_REPETITIONS};
use nidkg::{CpuBatchOps, Dealing, DealingFile, ReceiverPublicKey, ThresholdKind};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

/// The chunking proof's MSM batch for `n` receivers: 16n bases, 32 rows of 8-bit scalars.
pub(crate) struct SmallScalarBatch {
    pub bases: Vec<G1Affine>,
    /// Row-major: `rows[k * bases.len() + p]`.
    pub rows: Vec<u8>,
    pub blst_bases: Vec<blst_p1_affine>,
}

impl SmallScalarBatch {
    pub(crate) fn new(n: usize, seed: u64) -> Self {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let projective: Vec<G1Projective> = (0..NUM_CHUNKS * n)
            .map(|_| G1Projective::generator() * nidkg::random_scalar(&mut rng))
            .collect();
        let mut bases = vec![G1Affine::identity(); projective.len()];
        G1Projective::batch_normalize(&projective, &mut bases);
        let mut rows = vec![0u8; NUM_ZK_REPETITIONS * bases.len()];
        rng.fill_bytes(&mut rows);
        let blst_bases = bases.iter().map(to_blst).collect();
        SmallScalarBatch {
            bases,
            rows,
            blst_bases,
        }
    }

    pub(crate) fn row(&self, k: usize) -> &[u8] {
        &self.rows[k * self.bases.len()..(k + 1) * self.bases.len()]
    }

    pub(crate) fn row_scalars(&self, k: usize) -> Vec<Scalar> {
        self.row(k)
            .iter()
            .map(|&s| Scalar::from(s as u64))
            .collect()
    }
}

pub(crate) fn to_blst(p: &G1Affine) -> blst_p1_affine {
    let mut out = blst_p1_affine::default();
    // SAFETY: a 96-byte uncompressed encoding is what blst_p1_deserialize reads.
    let rc = unsafe { blst_p1_deserialize(&mut out, p.to_uncompressed().as_ptr()) };
    assert_eq!(rc, blst::BLST_ERROR::BLST_SUCCESS);
    out
}

pub(crate) fn from_blst(p: &blst_p1) -> G1Projective {
    let mut bytes = [0u8; 48];
    // SAFETY: blst_p1_compress writes 48 bytes.
    unsafe { blst_p1_compress(bytes.as_mut_ptr(), p) };
    G1Affine::from_compressed(&bytes).unwrap().into()
}

/// blst's Pippenger on the calling thread (`nbits`-bit little-endian scalars).
pub(crate) fn blst_msm_one_thread(
    points: &[blst_p1_affine],
    scalars: &[u8],
    nbits: usize,
) -> blst_p1 {
    assert_eq!(scalars.len(), points.len() * nbits.div_ceil(8));
    // SAFETY: the scratch has the size blst asks for; a null second pointer tells blst
    // that points and scalars are contiguous arrays of `points.len()` elements.
    unsafe {
        let words = blst_p1s_mult_pippenger_scratch_sizeof(points.len()).div_ceil(8);
        let mut scratch = vec![0u64; words];
        let p = [points.as_ptr(), std::ptr::null()];
        let s = [scalars.as_ptr(), std::ptr::null()];
        let mut out = blst_p1::default();
        blst_p1s_mult_pippenger(
            &mut out,
            p.as_ptr(),
            points.len(),
            s.as_ptr(),
            nbits,
            scratch.as_mut_ptr(),
        );
        out
    }
}

/// blst's multi-threaded Pippenger (its own thread pool).
pub(crate) fn blst_msm_threaded(
    points: &[blst_p1_affine],
    scalars: &[u8],
    nbits: usize,
) -> blst_p1 {
    points.mult(scalars, nbits)
}

/// The 32 rows' scalars widened to 32-byte little-endian 255-bit scalars (the generic
/// full-width path).
pub(crate) fn widen(row: &[u8]) -> Vec<u8> {
    row.iter()
        .flat_map(|&s| {
            let mut b = [0u8; 32];
            b[0] = s;
            b
        })
        .collect()
}

/// Receivers and `count` distinct dealings to them (dealers' seeds 0..count), half at
/// each threshold when `mixed`, for a DKG round.
pub(crate) struct Round {
    pub n: usize,
    pub files: Vec<Vec<u8>>,
}

pub(crate) fn receivers(n: usize, seed: u64) -> Vec<ReceiverPublicKey> {
    (0..n)
        .into_par_iter()
        .map(|i| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed.wrapping_mul(1000) + i as u64);
            nidkg::generate_receiver_key(&mut rng, &(i as u32).to_be_bytes()).0
        })
        .collect()
}

pub(crate) fn dealing_file(
    keys: &[ReceiverPublicKey],
    kind: ThresholdKind,
    dealer: u64,
) -> Vec<u8> {
    let n = keys.len();
    let t = kind.threshold(n);
    let ad = format!("bench dkg n={n} dealer={dealer} {}", kind.name()).into_bytes();
    let points: Vec<G1Affine> = keys.iter().map(|k| k.key).collect();
    let mut rng = ChaCha20Rng::seed_from_u64(0xdea1 + dealer);
    let dealing: Dealing = nidkg::create_dealing(&mut rng, &points, t, 1, &ad, None).unwrap();
    DealingFile {
        epoch: 1,
        associated_data: ad,
        receiver_keys: points.iter().map(G1Affine::to_compressed).collect(),
        t,
        dealing: dealing.to_bytes(),
    }
    .to_bytes()
}

/// A DKG round: each of the n receivers deals once at each threshold (2n dealings).
pub(crate) fn round(n: usize) -> Round {
    let keys = receivers(n, n as u64);
    let files = (0..2 * n as u64)
        .into_par_iter()
        .map(|d| {
            let kind = if d % 2 == 0 {
                ThresholdKind::Low
            } else {
                ThresholdKind::High
            };
            dealing_file(&keys, kind, d)
        })
        .collect();
    Round { n, files }
}

pub(crate) fn ops(threads: Threads) -> CpuBatchOps {
    match threads {
        Threads::One => CpuBatchOps::single_thread(),
        Threads::All => CpuBatchOps::rayon(),
    }
}

/// Runs `f` on one thread (a pool of one, so that the rayon tasks `verify_batch` spawns stay
/// on it) or on the global pool.
pub(crate) fn run_on<R: Send>(threads: Threads, f: impl FnOnce() -> R + Send) -> R {
    static ONE: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();
    match threads {
        Threads::One => ONE
            .get_or_init(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .build()
                    .expect("a pool of one thread")
            })
            .install(f),
        Threads::All => f(),
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Threads {
    One,
    All,
}

impl Threads {
    pub(crate) fn label(self) -> String {
        match self {
            Threads::One => "1".into(),
            Threads::All => rayon::current_num_threads().to_string(),
        }
    }
}
