//! Host side of the G2 MSMs (kernel in `kernels/msm/g2_msm.cu`, design in docs/msm.md): many
//! MSMs with full scalars over points of the prime-order subgroup in one launch. Each scalar
//! is split into four 64-bit digits in base `|z|` (the endomorphism `psi` multiplies by `z`
//! on G2), each MSM's bases into chunks of at most [`BASES_PER_BLOCK`] (one block each); one
//! upload, one launch, one download of one Jacobian partial sum per chunk, which the host
//! adds per MSM and converts to affine with one shared inversion.
//!
//! Every base must lie in G2 (the kernel's digits rely on `psi(P) = [z]P`): the engine's
//! callers pass decoded points, which `from_compressed` or the GPU's decompression checked.

use super::device::Device;
use super::error::GpuError;
use super::memory::{align_device, driver};
use super::msm::fp_from_gpu;
use super::worker::Worker;
use crate::input::MsmInput;
use blst::{blst_fp2, blst_p2, blst_p2_affine};
use cudarc::driver::{LaunchConfig, PushKernelArg, result};
use ic_bls12_381::{G2Affine, G2Projective, Scalar};

/// Must equal G2_MSM_BASES_PER_BLOCK in the kernel source: four terms per base, one warp
/// each, so each warp's chain is one 64-bit multiplication long.
pub(crate) const BASES_PER_BLOCK: usize = 4;
/// Threads of one block: one warp per term.
const THREADS: u32 = 32 * (BASES_PER_BLOCK * DIGITS) as u32;
/// Digits per scalar: `r < |z|^4`.
const DIGITS: usize = 4;
/// Bytes of one base (ic_bls12_381's uncompressed encoding).
const BASE_BYTES: usize = 192;
/// Bytes of one Jacobian partial sum (three Fp2 coordinates, Montgomery limbs).
const JACOBIAN_BYTES: usize = 288;
/// Bases of one call (all MSMs together): 2^20 keeps the upload at 224 MiB.
pub(crate) const MAX_BASES: usize = 1 << 20;

/// `|z|`, the absolute value of the (negative) BLS parameter.
const Z_ABS: u64 = 0xd201_0000_0001_0000;

/// The digits `d0..d3` (each below `|z|`) of `s = d0 + d1 |z| + d2 |z|^2 + d3 |z|^3`.
pub(crate) fn gls_digits(s: &Scalar) -> [u64; DIGITS] {
    let bytes = s.to_bytes();
    let mut limbs = [0u64; 4];
    for (limb, chunk) in limbs.iter_mut().zip(bytes.chunks_exact(8)) {
        *limb = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
    }
    let mut digits = [0u64; DIGITS];
    for d in digits.iter_mut() {
        // limbs /= |z|, d = the remainder: long division from the top limb.
        let mut rem: u128 = 0;
        for limb in limbs.iter_mut().rev() {
            let cur = (rem << 64) | u128::from(*limb);
            *limb = (cur / u128::from(Z_ABS)) as u64;
            rem = cur % u128::from(Z_ABS);
        }
        *d = rem as u64;
    }
    digits
}

/// What one call uploads: every MSM's non-identity bases with their digits, and the chunk
/// table (chunk `b` covers bases `chunks[b]..chunks[b + 1]`, belonging to MSM `owner[b]`).
struct Staged {
    bases: Vec<u8>,
    digits: Vec<u64>,
    chunks: Vec<u32>,
    owner: Vec<usize>,
}

fn stage(msms: &[MsmInput<'_, G2Affine>]) -> Result<Staged, GpuError> {
    let mut s = Staged {
        bases: Vec::new(),
        digits: Vec::new(),
        chunks: vec![0],
        owner: Vec::new(),
    };
    for (m, msm) in msms.iter().enumerate() {
        let mut in_chunk = 0;
        for (p, k) in msm.points.iter().zip(msm.scalars) {
            // The identity and zero scalars add nothing; the kernel never meets them.
            if bool::from(p.is_identity()) || *k == Scalar::zero() {
                continue;
            }
            s.bases.extend_from_slice(&p.to_uncompressed());
            s.digits.extend_from_slice(&gls_digits(k));
            in_chunk += 1;
            if in_chunk == BASES_PER_BLOCK {
                close_chunk(&mut s, m)?;
                in_chunk = 0;
            }
        }
        if in_chunk > 0 {
            close_chunk(&mut s, m)?;
        }
    }
    Ok(s)
}

fn close_chunk(s: &mut Staged, msm: usize) -> Result<(), GpuError> {
    let end = u32::try_from(s.digits.len() / DIGITS)
        .map_err(|_| GpuError::InputTooLarge("G2 MSM bases".into()))?;
    s.chunks.push(end);
    s.owner.push(msm);
    Ok(())
}

/// Checks the bounds of a call; `InputTooLarge` for what the kernel does not take.
pub(crate) fn check_shape(msms: &[MsmInput<'_, G2Affine>]) -> Result<(), GpuError> {
    let bases: usize = msms.iter().map(|m| m.points.len()).sum();
    if bases > MAX_BASES {
        return Err(GpuError::InputTooLarge(format!(
            "{bases} G2 MSM bases: at most {MAX_BASES} in one call"
        )));
    }
    Ok(())
}

/// Device layout: bases, digits, chunk table, partial sums.
struct Layout {
    off_digits: usize,
    off_chunks: usize,
    off_out: usize,
    end: usize,
}

impl Layout {
    fn new(s: &Staged) -> Layout {
        let off_digits = align_device(BASE_BYTES * (s.digits.len() / DIGITS));
        let off_chunks = align_device(off_digits + 8 * s.digits.len());
        let off_out = align_device(off_chunks + 4 * s.chunks.len());
        let end = off_out + JACOBIAN_BYTES * s.owner.len();
        Layout {
            off_digits,
            off_chunks,
            off_out,
            end,
        }
    }
}

/// `sum_i scalars[i] * points[i]` for each MSM; the points must lie in G2 and each MSM's
/// slices have equal lengths (the engine checks).
pub(crate) fn run(
    gpu: &Device,
    w: &mut Worker,
    msms: &[MsmInput<'_, G2Affine>],
) -> Result<Vec<G2Projective>, GpuError> {
    check_shape(msms)?;
    let staged = stage(msms)?;
    if staged.owner.is_empty() {
        return Ok(vec![G2Projective::identity(); msms.len()]);
    }
    let layout = Layout::new(&staged);
    upload_and_launch(gpu, w, &staged, &layout)?;
    w.stream.synchronize().map_err(driver("g2 msm"))?;
    let partials = w
        .msm
        .host_out
        .slice(JACOBIAN_BYTES * staged.owner.len())
        .chunks_exact(JACOBIAN_BYTES)
        .map(jacobian_from_gpu)
        .collect::<Result<Vec<blst_p2>, GpuError>>()?;
    let sums = sum_per_msm(&partials, &staged.owner, msms.len());
    to_projective(&sums)
}

/// Stages the call in the worker's pinned input, queues the upload, the results' poison,
/// the kernel and the download on its stream; the caller synchronises.
fn upload_and_launch(
    gpu: &Device,
    w: &mut Worker,
    s: &Staged,
    layout: &Layout,
) -> Result<(), GpuError> {
    let out_bytes = JACOBIAN_BYTES * s.owner.len();
    w.msm.host_in.ensure(layout.off_out)?;
    w.msm.host_out.ensure(out_bytes)?;
    w.msm.device.ensure(layout.end)?;
    let host = w.msm.host_in.slice_mut(layout.off_out);
    host[..s.bases.len()].copy_from_slice(&s.bases);
    for (dst, d) in host[layout.off_digits..].chunks_exact_mut(8).zip(&s.digits) {
        dst.copy_from_slice(&d.to_le_bytes());
    }
    for (dst, c) in host[layout.off_chunks..].chunks_exact_mut(4).zip(&s.chunks) {
        dst.copy_from_slice(&c.to_le_bytes());
    }
    gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;
    let stream = w.stream.clone();
    let cu = stream.cu_stream();
    let base = w.msm.device.ptr();
    let d_digits = base + layout.off_digits as u64;
    let d_chunks = base + layout.off_chunks as u64;
    let d_out = base + layout.off_out as u64;
    let blocks = s.owner.len() as u32;
    // SAFETY: the device ranges lie inside the worker's MSM device buffer and the host
    // ranges inside its pinned buffers (both ensured above for the whole layout); neither
    // pinned buffer is touched again before `run` synchronises the stream. g2_msm_blocks
    // takes (bases, digits, chunks, out): four device pointers, as pushed.
    unsafe {
        let host = w.msm.host_in.slice(layout.off_out);
        result::memcpy_htod_async(base, &host[..layout.off_out], cu)
            .map_err(driver("upload G2 MSM"))?;
        // Poison: an unwritten partial sum is not a canonical field element.
        result::memset_d8_async(d_out, 0xff, out_bytes, cu).map_err(driver("poison results"))?;
        stream
            .launch_builder(&gpu.kernels.g2_msm)
            .arg(&base)
            .arg(&d_digits)
            .arg(&d_chunks)
            .arg(&d_out)
            .launch(LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: 0,
            })
            .map_err(driver("launch g2_msm_blocks"))?;
        result::memcpy_dtoh_async(w.msm.host_out.slice_mut(out_bytes), d_out, cu)
            .map_err(driver("download G2 MSM"))?;
    }
    Ok(())
}

/// A partial sum as blst's Jacobian point: the kernel's layout (x, y, z, each c0 then c1,
/// Montgomery limbs with blst's R) read coordinate by coordinate, each checked canonical.
fn jacobian_from_gpu(b: &[u8]) -> Result<blst_p2, GpuError> {
    let bad = || GpuError::BadOutput("G2 MSM partial sum is not a canonical field element".into());
    let fp2 = |at: usize| -> Result<blst_fp2, GpuError> {
        Ok(blst_fp2 {
            fp: [
                fp_from_gpu(&b[at..at + 48]).ok_or_else(bad)?,
                fp_from_gpu(&b[at + 48..at + 96]).ok_or_else(bad)?,
            ],
        })
    };
    Ok(blst_p2 {
        x: fp2(0)?,
        y: fp2(96)?,
        z: fp2(192)?,
    })
}

/// The partial sums of each MSM added (chunks of one MSM are consecutive).
fn sum_per_msm(partials: &[blst_p2], owner: &[usize], msms: usize) -> Vec<blst_p2> {
    let mut sums = vec![blst_p2::default(); msms];
    for (p, &m) in partials.iter().zip(owner) {
        // SAFETY: blst point arithmetic on initialised values; in-place use is allowed, and
        // add_or_double handles equal inputs and the identity.
        unsafe { blst::blst_p2_add_or_double(&mut sums[m], &sums[m], p) };
    }
    sums
}

/// Jacobian sums as ic_bls12_381 points: affine through one shared inversion (the
/// identity, Z = 0, becomes the point at infinity), then checked to be on the curve.
fn to_projective(points: &[blst_p2]) -> Result<Vec<G2Projective>, GpuError> {
    let mut affine = vec![blst_p2_affine::default(); points.len()];
    let ptrs: [*const blst_p2; 2] = [points.as_ptr(), std::ptr::null()];
    // SAFETY: `affine` holds points.len() outputs; `ptrs` names the contiguous input
    // (blst walks consecutive points from the first pointer when the next one is NULL).
    unsafe { blst::blst_p2s_to_affine(affine.as_mut_ptr(), ptrs.as_ptr(), points.len()) };
    affine
        .iter()
        .map(|a| {
            let mut bytes = [0u8; 192];
            // SAFETY: blst writes 192 bytes for an uncompressed G2 point.
            unsafe { blst::blst_p2_affine_serialize(bytes.as_mut_ptr(), a) };
            Option::<G2Affine>::from(G2Affine::from_uncompressed_unchecked(&bytes))
                .filter(|p| bool::from(p.is_on_curve()))
                .map(G2Projective::from)
                .ok_or_else(|| GpuError::BadOutput("G2 MSM result is not on the curve".into()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use rand::SeedableRng;

    /// The digits recombine to the scalar and each is below |z|, at the edges and at random.
    #[test]
    fn gls_digits_recombine_to_the_scalar() {
        let z = Scalar::from(Z_ABS);
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(11);
        let mut scalars = vec![
            Scalar::zero(),
            Scalar::one(),
            -Scalar::one(),
            z,
            z - Scalar::one(),
            z * z,
            z * z * z,
        ];
        scalars.extend((0..200).map(|_| Scalar::random(&mut rng)));
        for s in scalars {
            let d = gls_digits(&s);
            assert!(d.iter().all(|&d| d < Z_ABS), "{d:x?}");
            let back = d
                .iter()
                .rev()
                .fold(Scalar::zero(), |acc, &d| acc * z + Scalar::from(d));
            assert_eq!(back, s);
        }
    }

    /// Identity bases and zero scalars are left out; chunks never exceed the block's bases
    /// and never mix MSMs.
    #[test]
    fn staging_skips_what_adds_nothing_and_chunks_per_msm() {
        let g = G2Affine::generator();
        let id = G2Affine::identity();
        let many = vec![g; BASES_PER_BLOCK + 3];
        let ones = vec![Scalar::one(); many.len()];
        let (first, first_scalars) = ([g, id, g], [Scalar::one(), Scalar::one(), Scalar::zero()]);
        let input = |points, scalars| MsmInput { points, scalars };
        let msms = [
            input(&first[..], &first_scalars[..]),
            input(&[], &[]),
            input(&many, &ones),
        ];
        let s = stage(&msms).unwrap();
        assert_eq!(s.owner, [0, 2, 2]);
        assert_eq!(
            s.chunks,
            [0, 1, 1 + BASES_PER_BLOCK as u32, 4 + BASES_PER_BLOCK as u32]
        );
        assert_eq!(s.digits.len(), DIGITS * (1 + many.len()));
        assert_eq!(s.bases.len(), BASE_BYTES * (1 + many.len()));
    }
}
