//! The bridge to blst: points cross as their standard uncompressed encodings (so no
//! assumption about either library's internal representation), and blst's Pippenger
//! runs single-threaded (for rayon over many MSMs) or on blst's own thread pool.
//!
//! Every `unsafe` block is a call into blst's C API with buffers whose sizes are fixed
//! by the types or computed by blst itself.

use blst::{
    BLST_ERROR, blst_fp12, blst_p1, blst_p1_affine, blst_p1s_mult_pippenger,
    blst_p1s_mult_pippenger_scratch_sizeof, blst_p2, blst_p2_affine, blst_p2s_mult_pippenger,
    blst_p2s_mult_pippenger_scratch_sizeof,
};
use ic_bls12_381::{G1Affine, G1Projective, G2Affine, G2Projective};

/// `None` only if blst rejects a valid `ic_bls12_381` point, which would be a bug in one
/// of the libraries; callers then compute with `ic_bls12_381` alone.
pub(crate) fn g1_to_blst(p: &G1Affine) -> Option<blst_p1_affine> {
    let bytes = p.to_uncompressed();
    let mut out = blst_p1_affine::default();
    // SAFETY: blst reads 96 bytes for an uncompressed G1 encoding (bit 7 of byte 0 is
    // clear in `to_uncompressed`), and `bytes` is 96 bytes long.
    let err = unsafe { blst::blst_p1_deserialize(&mut out, bytes.as_ptr()) };
    (err == BLST_ERROR::BLST_SUCCESS).then_some(out)
}

pub(crate) fn g2_to_blst(p: &G2Affine) -> Option<blst_p2_affine> {
    let bytes = p.to_uncompressed();
    let mut out = blst_p2_affine::default();
    // SAFETY: as above, with 192 bytes for G2.
    let err = unsafe { blst::blst_p2_deserialize(&mut out, bytes.as_ptr()) };
    (err == BLST_ERROR::BLST_SUCCESS).then_some(out)
}

pub(crate) fn g1_from_blst(p: &blst_p1) -> Option<G1Projective> {
    let mut bytes = [0u8; 96];
    // SAFETY: blst writes exactly 96 bytes for a serialized (uncompressed) G1 point.
    unsafe { blst::blst_p1_serialize(bytes.as_mut_ptr(), p) };
    // blst's result of G1 inputs is in G1; the on-curve check still guards the bridge.
    Option::<G1Affine>::from(G1Affine::from_uncompressed_unchecked(&bytes)).map(G1Projective::from)
}

pub(crate) fn g2_from_blst(p: &blst_p2) -> Option<G2Projective> {
    let mut bytes = [0u8; 192];
    // SAFETY: blst writes exactly 192 bytes for a serialized (uncompressed) G2 point.
    unsafe { blst::blst_p2_serialize(bytes.as_mut_ptr(), p) };
    Option::<G2Affine>::from(G2Affine::from_uncompressed_unchecked(&bytes)).map(G2Projective::from)
}

/// Defines `$name(points, scalars, nbits)`: `sum(scalars[i] * points[i])` on the calling
/// thread with blst's Pippenger for one group.
macro_rules! msm_one_thread {
    ($(#[$doc:meta])* $name:ident, $affine:ty, $point:ty, $scratch_sizeof:path, $pippenger:path) => {
        $(#[$doc])*
        pub(crate) fn $name(points: &[$affine], scalars: &[u8], nbits: usize) -> Option<$point> {
            let n = points.len();
            if scalars.len() != n * nbits.div_ceil(8) || nbits == 0 {
                return None;
            }
            let mut out = <$point>::default();
            if n == 0 {
                return Some(out);
            }
            // SAFETY: blst computes the scratch size it needs for n points; the point and
            // scalar arrays are contiguous (blst's "second pointer is null" convention) and
            // hold n entries each, checked above.
            unsafe {
                let words = $scratch_sizeof(n).div_ceil(8);
                let mut scratch = vec![0u64; words.max(1)];
                let p = [points.as_ptr(), std::ptr::null()];
                let s = [scalars.as_ptr(), std::ptr::null()];
                $pippenger(&mut out, p.as_ptr(), n, s.as_ptr(), nbits, scratch.as_mut_ptr());
            }
            Some(out)
        }
    };
}

msm_one_thread!(
    /// `sum(scalars[i] * points[i])` in G1 on the calling thread. `scalars` holds one
    /// little-endian `nbits.div_ceil(8)`-byte scalar per point; `None` if the lengths
    /// disagree. The empty sum is the identity (blst's all-zero point).
    p1_msm_one_thread,
    blst_p1_affine,
    blst_p1,
    blst_p1s_mult_pippenger_scratch_sizeof,
    blst_p1s_mult_pippenger
);

msm_one_thread!(
    /// The G2 counterpart of [`p1_msm_one_thread`].
    p2_msm_one_thread,
    blst_p2_affine,
    blst_p2,
    blst_p2s_mult_pippenger_scratch_sizeof,
    blst_p2s_mult_pippenger
);

/// `sum(scalars[i] * points[i])` on blst's thread pool (its tiled multi-threaded
/// Pippenger). blst's pool deadlocks on zero points, so the empty sum is answered here.
pub(crate) fn p1_msm_threaded(
    points: &[blst_p1_affine],
    scalars: &[u8],
    nbits: usize,
) -> Option<blst_p1> {
    use blst::MultiPoint;
    if scalars.len() != points.len() * nbits.div_ceil(8) || nbits == 0 {
        return None;
    }
    if points.is_empty() {
        return Some(blst_p1::default());
    }
    Some(points.mult(scalars, nbits))
}

/// `scalar * point` for a little-endian scalar of `nbits` bits.
pub(crate) fn p1_mult(point: &blst_p1_affine, scalar: &[u8], nbits: usize) -> Option<blst_p1> {
    if scalar.len() != nbits.div_ceil(8) || nbits == 0 {
        return None;
    }
    let mut projective = blst_p1::default();
    let mut out = blst_p1::default();
    // SAFETY: blst reads nbits.div_ceil(8) scalar bytes, which `scalar` holds.
    unsafe {
        blst::blst_p1_from_affine(&mut projective, point);
        blst::blst_p1_mult(&mut out, &projective, scalar.as_ptr(), nbits);
    }
    Some(out)
}

/// Pairs per Miller loop task where one product is spread over the pool's threads: each
/// task pays its own 63 squarings in GT (shared by all pairs of one loop), so a task must
/// hold enough pairs for that to be small beside them (a DKG round's combined integrity
/// check is one product of `2n + 2` pairs).
const PAIRS_PER_TASK: usize = 8;

/// Whether `prod_i e(ps[i], qs[i])` is the identity of GT: multi-Miller loops on the
/// calling thread (the C function, not the crate's wrapper, which spreads the loop over
/// blst's own pool), a long product in tasks of at least [`PAIRS_PER_TASK`] pairs on the
/// current rayon pool, their product, and one final exponentiation. blst's loop
/// special-cases the point at infinity only for a single pair, so callers leave out pairs
/// with an identity point (each contributes 1). `None` if the lengths differ; the empty
/// product is the identity.
pub(crate) fn pairing_product_is_one(qs: &[blst_p2_affine], ps: &[blst_p1_affine]) -> Option<bool> {
    use rayon::prelude::*;
    if qs.len() != ps.len() {
        return None;
    }
    if qs.is_empty() {
        return Some(true);
    }
    let tasks = (qs.len() / PAIRS_PER_TASK).clamp(1, rayon::current_num_threads());
    let per_task = qs.len().div_ceil(tasks);
    let miller = qs
        .par_chunks(per_task)
        .zip(ps.par_chunks(per_task))
        .map(|(q, p)| miller_loop(q, p))
        .reduce_with(|a, b| a * b)
        .expect("at least one pair");
    let mut out = blst_fp12::default();
    // SAFETY: both are owned fp12 values.
    unsafe {
        blst::blst_final_exp(&mut out, &miller);
        Some(blst::blst_fp12_is_one(&out))
    }
}

/// `prod_i f_{q_i}(p_i)` before the final exponentiation; `qs` and `ps` of one length, at
/// least one.
fn miller_loop(qs: &[blst_p2_affine], ps: &[blst_p1_affine]) -> blst_fp12 {
    let q_ptrs = [qs.as_ptr(), std::ptr::null()];
    let p_ptrs = [ps.as_ptr(), std::ptr::null()];
    let mut miller = blst_fp12::default();
    // SAFETY: both arrays are contiguous and hold `qs.len()` points (blst's "second
    // pointer is null" convention; the caller passes equal lengths); the output is owned.
    unsafe {
        blst::blst_miller_loop_n(&mut miller, q_ptrs.as_ptr(), p_ptrs.as_ptr(), qs.len());
    }
    miller
}
