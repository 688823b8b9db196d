//! Host side of the shared-base MSMs with 8-bit scalars (kernels in
//! `kernels/msm/g1_msm_shared_u8.cu`, design in docs/msm.md): `rows` MSMs over one set of
//! bases, result `k` = `sum_p scalars[k * n + p] * bases[p]` (the NI-DKG chunking proof's 32
//! MSMs of 16n points). One upload of the bases (once per call, however many rows) and of
//! the scalar bytes, two launches (bit-plane subset sums, then one combine per row), one
//! download of one Jacobian point per row, converted to affine with one shared inversion.
//!
//! The bases cross as the generic MSM stages them (msm.rs: ic_bls12_381's Montgomery limbs
//! where the probed layout allows, else encodings converted by `msm_load_points`), in the
//! worker's MSM buffers (a worker runs one call at a time).

use super::device::Device;
use super::error::GpuError;
use super::marks::StreamMarks;
use super::memory::{align_device, driver};
use super::msm::{self, JACOBIAN_BYTES, POINT_BYTES, Staging};
use super::worker::Worker;
use blst::{blst_p1, blst_p1_affine};
use cudarc::driver::{LaunchConfig, PushKernelArg, result};
use ic_bls12_381::{G1Affine, G1Projective};
use rayon::prelude::*;

/// Must equal U8_PLANE_THREADS_MAX in the kernel source.
pub(crate) const PLANE_THREADS_MAX: u32 = 128;
const PLANE_THREADS_MIN: u32 = 32;
/// Bit planes per row: the scalars' width.
const PLANES: usize = 8;
const XYZZ_BYTES: usize = 4 * 48;
/// Bases of one call: the kernels index them with 32-bit integers, and the chunking
/// proof needs 16 * 40 = 640; 2^20 keeps the base upload at 96 MiB.
pub(crate) const MAX_BASES: usize = 1 << 20;
/// Rows of one call (8 blocks each in one grid dimension).
pub(crate) const MAX_ROWS: usize = 1 << 20;
/// Scalar bytes of one call (rows * bases): 256 MiB.
pub(crate) const MAX_SCALAR_BYTES: usize = 1 << 28;
/// Bases above which host staging runs on all cores.
const PARALLEL_STAGING: usize = 4096;

/// Threads per plane block for `n` bases: about four bases per thread (each thread's chain
/// of mixed additions, then log2(threads) tree levels), a power of two within
/// [PLANE_THREADS_MIN, PLANE_THREADS_MAX].
pub(crate) fn plane_threads(n: usize) -> u32 {
    let want = n.div_ceil(4).clamp(1, PLANE_THREADS_MAX as usize);
    (want.next_power_of_two() as u32).clamp(PLANE_THREADS_MIN, PLANE_THREADS_MAX)
}

/// Checks a call's shape, bounds and thread count (a power of two from
/// `PLANE_THREADS_MIN` to `PLANE_THREADS_MAX`); `InputTooLarge` for what the kernels do not
/// take.
pub(crate) fn check_call(
    n: usize,
    scalars: usize,
    rows: usize,
    threads: u32,
) -> Result<(), GpuError> {
    check_shape(n, scalars, rows)?;
    if !threads.is_power_of_two() || !(PLANE_THREADS_MIN..=PLANE_THREADS_MAX).contains(&threads) {
        return Err(GpuError::InputTooLarge(format!(
            "{threads} threads per plane block"
        )));
    }
    Ok(())
}

/// Checks the shape and the bounds; `InputTooLarge` for what the kernels do not take.
pub(crate) fn check_shape(n: usize, scalars: usize, rows: usize) -> Result<(), GpuError> {
    if rows.checked_mul(n) != Some(scalars) {
        return Err(GpuError::InputTooLarge(format!(
            "{scalars} scalars for {rows} rows of {n} bases"
        )));
    }
    if n > MAX_BASES || rows > MAX_ROWS || scalars > MAX_SCALAR_BYTES {
        return Err(GpuError::InputTooLarge(format!(
            "{rows} rows of {n} bases: at most {MAX_ROWS} rows, {MAX_BASES} bases and \
             {MAX_SCALAR_BYTES} scalars in one call"
        )));
    }
    Ok(())
}

/// Device layout of one call: bases, scalars (row-major bytes), plane sums, results; the
/// pinned input mirrors the first two.
struct Layout {
    n: usize,
    rows: usize,
    off_scalars: usize,
    in_bytes: usize,
    off_planes: usize,
    off_out: usize,
    out_bytes: usize,
}

impl Layout {
    fn new(n: usize, rows: usize) -> Layout {
        let off_scalars = align_device(POINT_BYTES * n);
        let in_bytes = off_scalars + rows * n;
        let off_planes = align_device(in_bytes);
        let off_out = align_device(off_planes + XYZZ_BYTES * PLANES * rows);
        Layout {
            n,
            rows,
            off_scalars,
            in_bytes,
            off_planes,
            off_out,
            out_bytes: JACOBIAN_BYTES * rows,
        }
    }
}

/// `rows` MSMs of 8-bit scalars over `bases` (result `k` = `sum_p scalars[k * n + p] *
/// bases[p]`) with `threads` threads per plane block; the caller checked the call
/// ([`check_call`]).
pub(crate) fn run(
    gpu: &Device,
    w: &mut Worker,
    bases: &[G1Affine],
    scalars: &[u8],
    rows: usize,
    threads: u32,
) -> Result<Vec<G1Projective>, GpuError> {
    let n = bases.len();
    let t_start = std::time::Instant::now();
    let staging = msm::staging(gpu, w)?;
    let layout = Layout::new(n, rows);
    w.msm.host_in.ensure(layout.in_bytes)?;
    w.msm.host_out.ensure(layout.out_bytes)?;
    w.msm.device.ensure(layout.off_out + layout.out_bytes)?;
    stage(w, bases, scalars, staging, &layout);

    let t_staged = t_start.elapsed().as_secs_f64();
    gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;
    // Timing events (GPU_CRYPTO_MSM_PROFILE=1 only).
    let mut marks = StreamMarks::new(msm::profile_enabled());
    launch(gpu, w, staging, &layout, threads, &mut marks)?;
    let t_launched = t_start.elapsed().as_secs_f64();
    w.stream.synchronize().map_err(driver("g1 msm shared u8"))?;
    let t_gpu = t_start.elapsed().as_secs_f64();
    let jacobians = w
        .msm
        .host_out
        .slice(layout.out_bytes)
        .chunks_exact(JACOBIAN_BYTES)
        .map(msm::jacobian_from_gpu)
        .collect::<Result<Vec<blst_p1>, GpuError>>()?;
    let out = to_projective(&jacobians);
    if marks.enabled() {
        eprintln!(
            "msm shared u8 profile: {rows} x {n}, {threads} threads, {staging:?}: host ms from the call's start: staged {:.3}, launched {:.3}, GPU done {:.3}, converted {:.3}; GPU ms: {}",
            t_staged * 1e3,
            t_launched * 1e3,
            t_gpu * 1e3,
            t_start.elapsed().as_secs_f64() * 1e3,
            marks.report()
        );
    }
    out
}

/// Writes the bases in the staging form and the scalar bytes into the pinned input (sized
/// for `layout`), the identity's scalars zero in every row: its staged bytes are not a
/// point, and it adds nothing to any sum, so no kernel adds it.
fn stage(w: &mut Worker, bases: &[G1Affine], scalars: &[u8], staging: Staging, layout: &Layout) {
    let n = layout.n;
    let host = w.msm.host_in.slice_mut(layout.in_bytes);
    let (host_bases, host_rest) = host.split_at_mut(layout.off_scalars);
    let host_scalars = &mut host_rest[..layout.rows * n];
    let stage = |(p, pd): (&G1Affine, &mut [u8])| msm::stage_point(p, staging, pd);
    if n >= PARALLEL_STAGING {
        bases
            .par_iter()
            .zip(host_bases.par_chunks_exact_mut(POINT_BYTES))
            .for_each(stage);
    } else {
        bases
            .iter()
            .zip(host_bases.chunks_exact_mut(POINT_BYTES))
            .for_each(stage);
    }
    host_scalars.copy_from_slice(scalars);
    let identities: Vec<usize> = (0..n)
        .filter(|&p| bool::from(bases[p].is_identity()))
        .collect();
    if !identities.is_empty() {
        for row in host_scalars.chunks_exact_mut(n) {
            for &p in &identities {
                row[p] = 0;
            }
        }
    }
}

/// Queues on the worker's stream: the uploads, the results' poison, the points' conversion
/// (encoded staging only), the plane and combine kernels, and the results' download; the
/// caller synchronises.
fn launch(
    gpu: &Device,
    w: &mut Worker,
    staging: Staging,
    layout: &Layout,
    threads: u32,
    marks: &mut StreamMarks,
) -> Result<(), GpuError> {
    let (n, rows) = (layout.n, layout.rows);
    let stream = w.stream.clone();
    let cu = stream.cu_stream();
    marks.mark(&stream, "start");
    let base = w.msm.device.ptr();
    let (d_bases, d_scalars, d_planes, d_out) = (
        base,
        base + layout.off_scalars as u64,
        base + layout.off_planes as u64,
        base + layout.off_out as u64,
    );
    let n32 = n as u32;
    let (in_bytes, out_bytes) = (layout.in_bytes, layout.out_bytes);
    let host = w.msm.host_in.slice(in_bytes);
    // SAFETY: the device ranges lie inside the worker's MSM device buffer (ensured by `run`
    // for the whole layout) and the host ranges inside its pinned buffers; the pinned input
    // is not written and the pinned output not read before `run` synchronises the stream.
    // msm_load_points takes (points, u32 n), msm_u8_planes (bases, u32 n, scalars, planes)
    // and msm_u8_combine (planes, out): device pointers and u32s, as pushed.
    unsafe {
        result::memcpy_htod_async(d_bases, &host[..POINT_BYTES * n], cu)
            .map_err(driver("upload bases"))?;
        result::memcpy_htod_async(d_scalars, &host[layout.off_scalars..in_bytes], cu)
            .map_err(driver("upload scalars"))?;
        // Poison: an unwritten result is not a canonical field element.
        result::memset_d8_async(d_out, 0xff, out_bytes, cu).map_err(driver("poison results"))?;
        marks.mark(&stream, "upload");
        if staging == Staging::Encoded {
            stream
                .launch_builder(&gpu.kernels.msm.load_points)
                .arg(&d_bases)
                .arg(&n32)
                .launch(LaunchConfig {
                    grid_dim: (n32.div_ceil(128), 1, 1),
                    block_dim: (128, 1, 1),
                    shared_mem_bytes: 0,
                })
                .map_err(driver("launch msm_load_points"))?;
        }
        let k = &gpu.kernels.msm_u8;
        stream
            .launch_builder(&k.planes)
            .arg(&d_bases)
            .arg(&n32)
            .arg(&d_scalars)
            .arg(&d_planes)
            .launch(LaunchConfig {
                grid_dim: ((rows * PLANES) as u32, 1, 1),
                block_dim: (threads, 1, 1),
                shared_mem_bytes: 0,
            })
            .map_err(driver("launch msm_u8_planes"))?;
        marks.mark(&stream, "planes");
        stream
            .launch_builder(&k.combine)
            .arg(&d_planes)
            .arg(&d_out)
            .launch(LaunchConfig {
                grid_dim: (rows as u32, 1, 1),
                block_dim: (PLANES as u32, 1, 1),
                shared_mem_bytes: 0,
            })
            .map_err(driver("launch msm_u8_combine"))?;
        marks.mark(&stream, "combine");
        result::memcpy_dtoh_async(w.msm.host_out.slice_mut(out_bytes), d_out, cu)
            .map_err(driver("download results"))?;
    }
    marks.mark(&stream, "download");
    Ok(())
}

/// Jacobian points from the GPU as ic_bls12_381 points: affine through one shared
/// inversion (blst's batch conversion; the identity, Z = 0, becomes the point at infinity),
/// then checked to be on the curve.
pub(super) fn to_projective(points: &[blst_p1]) -> Result<Vec<G1Projective>, GpuError> {
    let mut affine = vec![blst_p1_affine::default(); points.len()];
    // blst walks consecutive points from the first pointer when the next one is NULL.
    let ptrs: [*const blst_p1; 2] = [points.as_ptr(), std::ptr::null()];
    // SAFETY: `affine` holds points.len() outputs; `ptrs` names the contiguous input.
    unsafe { blst::blst_p1s_to_affine(affine.as_mut_ptr(), ptrs.as_ptr(), points.len()) };
    affine
        .iter()
        .map(|a| {
            let mut bytes = [0u8; 96];
            // SAFETY: blst writes 96 bytes for an uncompressed G1 point.
            unsafe { blst::blst_p1_affine_serialize(bytes.as_mut_ptr(), a) };
            Option::<G1Affine>::from(G1Affine::from_uncompressed_unchecked(&bytes))
                .filter(|p| bool::from(p.is_on_curve()))
                .map(G1Projective::from)
                .ok_or_else(|| GpuError::BadOutput("MSM result is not on the curve".into()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plane_threads_are_powers_of_two_within_bounds() {
        assert_eq!(plane_threads(1), 32);
        assert_eq!(plane_threads(208), 64);
        assert_eq!(plane_threads(448), 128);
        assert_eq!(plane_threads(640), 128);
        assert_eq!(plane_threads(MAX_BASES), 128);
    }

    #[test]
    fn shapes_outside_the_bounds_are_refused() {
        assert!(check_shape(13, 26, 2).is_ok());
        assert!(check_shape(0, 0, 5).is_ok());
        assert!(check_shape(5, 0, 0).is_ok());
        assert!(matches!(
            check_shape(13, 25, 2),
            Err(GpuError::InputTooLarge(_))
        ));
        assert!(matches!(
            check_shape(MAX_BASES + 1, MAX_BASES + 1, 1),
            Err(GpuError::InputTooLarge(_))
        ));
        assert!(matches!(
            check_shape(1, MAX_ROWS + 1, MAX_ROWS + 1),
            Err(GpuError::InputTooLarge(_))
        ));
        assert!(matches!(
            check_shape(1 << 10, 1 << 29, 1 << 19),
            Err(GpuError::InputTooLarge(_))
        ));
        assert!(matches!(
            check_shape(usize::MAX, 0, 2),
            Err(GpuError::InputTooLarge(_))
        ));
    }

    /// blst's batch conversion handles the identity among other points and the whole
    /// path returns ic_bls12_381's points.
    #[test]
    fn jacobian_batch_converts_with_the_identity() {
        let g = G1Projective::generator();
        let want = [g, G1Projective::identity(), g.double() + g];
        let blst_points: Vec<blst_p1> = want
            .iter()
            .map(|p| {
                let mut affine = blst_p1_affine::default();
                let mut out = blst_p1::default();
                let bytes = G1Affine::from(p).to_uncompressed();
                // SAFETY: 96 readable bytes of a valid encoding; initialised outputs.
                unsafe {
                    assert_eq!(
                        blst::blst_p1_deserialize(&mut affine, bytes.as_ptr()),
                        blst::BLST_ERROR::BLST_SUCCESS
                    );
                    blst::blst_p1_from_affine(&mut out, &affine);
                    // A Jacobian Z other than one: double then compare with 2P below.
                    blst::blst_p1_double(&mut out, &out);
                }
                out
            })
            .collect();
        let got = to_projective(&blst_points).expect("convert");
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(*g, w.double());
        }
    }
}
