//! Host side of the batched G1 Pippenger MSM (kernels in `kernels/msm/g1_msm.cu`, design in
//! docs/msm.md): one staging copy and one upload of every MSM's points and scalars, one
//! launch sequence for the whole batch, one download of each window's partial sums. The
//! host adds the partial sums and combines the windows with blst: a few hundred additions
//! per MSM, a serial chain that one CPU core runs far faster than one GPU thread.

use super::memory::{DeviceBuffer, PinnedBuffer, driver};
use super::{GpuBackend, GpuError, Worker};
use crate::engine::MsmInput;
use blst::{blst_fp, blst_p1};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, LaunchConfig, PushKernelArg, result};
use ic_bls12_381::{G1Affine, G1Projective};
use rayon::prelude::*;
use std::sync::Arc;

/// Must equal SCAN_TILE in the kernel source.
const SCAN_TILE: usize = 256 * 8;
const REDUCE_THREADS_MAX: u32 = 128;
/// The reduction aims for about this many threads over all windows of the batch.
const REDUCE_TARGET_THREADS: usize = 1 << 16;
/// Points per staged upload: each group's copy overlaps the next group's host conversion.
const UPLOAD_GROUP: usize = 1 << 16;
/// Points above which the host conversion runs on all cores.
const PARALLEL_CONVERT: usize = 2048;
/// Widest window: 2^15 buckets per window keep the bucket array small and the sort's
/// histogram in L2 for the largest MSMs.
const MAX_WINDOW_BITS: u32 = 16;
/// Upper bound on the bucket array of one call (2^(c-1) buckets per window per MSM).
const MAX_BUCKET_BYTES: usize = 1 << 31;
const ALIGN: usize = 256;
const POINT_BYTES: usize = 96;
const SCALAR_BYTES: usize = 32;
const BUCKET_BYTES: usize = 4 * 48;
const JACOBIAN_BYTES: usize = 3 * 48;

pub(crate) struct MsmKernels {
    load_points: CudaFunction,
    histogram: CudaFunction,
    scatter: CudaFunction,
    scan_tiles: CudaFunction,
    scan_tile_sums: CudaFunction,
    scan_add: CudaFunction,
    accumulate: CudaFunction,
    reduce: CudaFunction,
}

impl MsmKernels {
    pub(crate) fn load(module: &Arc<CudaModule>) -> Result<MsmKernels, GpuError> {
        let f = |name: &str| {
            module
                .load_function(name)
                .map_err(|e| GpuError::Driver(format!("cuModuleGetFunction {name}: {e}")))
        };
        Ok(MsmKernels {
            load_points: f("msm_load_points")?,
            histogram: f("msm_histogram")?,
            scatter: f("msm_scatter")?,
            scan_tiles: f("msm_scan_tiles")?,
            scan_tile_sums: f("msm_scan_tile_sums")?,
            scan_add: f("msm_scan_add")?,
            accumulate: f("msm_accumulate")?,
            reduce: f("msm_reduce")?,
        })
    }
}

pub(crate) struct MsmBuffers {
    host_in: PinnedBuffer,
    host_out: PinnedBuffer,
    device: DeviceBuffer,
}

impl MsmBuffers {
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> MsmBuffers {
        MsmBuffers {
            host_in: PinnedBuffer::new(ctx),
            host_out: PinnedBuffer::new(ctx),
            device: DeviceBuffer::new(ctx),
        }
    }
}

/// Window width c for MSMs of up to `n` points: about log2(n) - 2 (8 to 16): wide windows
/// keep buckets short (a bucket's additions are one thread's serial chain), at the price of
/// more buckets to reduce (2^(c-1) per window). Measured on the H200: docs/msm.md.
pub fn window_bits(n: usize) -> u32 {
    if let Some(c) = std::env::var("GPU_CRYPTO_MSM_WINDOW_BITS")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|c| (4..=MAX_WINDOW_BITS).contains(c))
    {
        return c;
    }
    let log = usize::BITS - n.max(1).saturating_sub(1).leading_zeros();
    log.saturating_sub(2).clamp(8, MAX_WINDOW_BITS)
}

/// ceil(256 / c) windows whose widths (c - 1 for the lowest `narrow_windows`, c for the
/// rest) sum to 256: scalars are below 2^255, so the top window's carry-adjusted signed digit
/// never exceeds 2^(c-1), and its digits spread over all its buckets.
pub fn window_count(c: u32) -> u32 {
    256u32.div_ceil(c)
}

fn narrow_windows(c: u32) -> u32 {
    c * window_count(c) - 256
}

fn window_width(w: u32, c: u32) -> u32 {
    if w < narrow_windows(c) { c - 1 } else { c }
}

/// Layout of one launch: byte offsets into the device buffer and the sizes.
struct Plan {
    n: usize,
    msms: usize,
    c: u32,
    windows: u32,
    narrow: u32,
    half: u32,
    /// Buckets over the whole batch.
    buckets: usize,
    tiles: usize,
    /// Reduction: buckets per thread, threads per block, blocks per window.
    seg_len: u32,
    reduce_block: u32,
    blocks_per_window: u32,
    partials: usize,
    off_points: usize,
    off_scalars: usize,
    off_starts_in: usize,
    in_bytes: usize,
    off_counts: usize,
    off_starts: usize,
    off_cursor: usize,
    off_tile_sums: usize,
    off_sorted: usize,
    off_buckets: usize,
    off_partials: usize,
    device_bytes: usize,
}

/// Buckets of a batch of `msms` MSMs with c-bit windows.
fn bucket_count(msms: usize, c: u32) -> u128 {
    ((msms as u128) * (window_count(c) as u128)) << (c - 1)
}

fn round_up(v: usize, to: usize) -> usize {
    v.div_ceil(to) * to
}

impl Plan {
    fn new(msms: &[MsmInput<'_>]) -> Result<Plan, GpuError> {
        let n: usize = msms.iter().map(|m| m.points.len()).sum();
        let largest = msms.iter().map(|m| m.points.len()).max().unwrap_or(0);
        // Many MSMs in one batch multiply the buckets: narrow the windows until the bucket
        // array fits MAX_BUCKET_BYTES (a batch of thousands of tiny MSMs would otherwise
        // ask for gigabytes).
        let mut c = window_bits(largest);
        while c > 4 && bucket_count(msms.len(), c) > (MAX_BUCKET_BYTES / BUCKET_BYTES) as u128 {
            c -= 1;
        }
        let windows = window_count(c);
        let half = 1u32 << (c - 1);
        let too_large = || {
            GpuError::InputTooLarge(format!(
                "{n} points in {} MSMs exceed the kernels' 32-bit indices",
                msms.len()
            ))
        };
        if bucket_count(msms.len(), c) * BUCKET_BYTES as u128 > MAX_BUCKET_BYTES as u128 {
            return Err(GpuError::InputTooLarge(format!(
                "{} MSMs in one batch need more than {MAX_BUCKET_BYTES} bytes of buckets",
                msms.len()
            )));
        }
        let buckets = msms
            .len()
            .checked_mul(windows as usize * half as usize)
            .filter(|&k| k < u32::MAX as usize)
            .ok_or_else(too_large)?;
        let entries = n
            .checked_mul(windows as usize)
            .filter(|&e| e < u32::MAX as usize && n < (1 << 31))
            .ok_or_else(too_large)?;
        let all_windows = msms.len() * windows as usize;
        let mut threads = (REDUCE_TARGET_THREADS / all_windows.max(1)).clamp(1, half as usize);
        threads = 1 << (usize::BITS - 1 - threads.leading_zeros()); // power of two
        let seg_len = half / threads as u32;
        let reduce_block = (threads as u32).min(REDUCE_THREADS_MAX);
        let blocks_per_window = threads as u32 / reduce_block;
        let partials = all_windows * blocks_per_window as usize;
        let tiles = buckets.div_ceil(SCAN_TILE);

        let off_points = 0;
        let off_scalars = round_up(off_points + POINT_BYTES * n, ALIGN);
        let off_starts_in = round_up(off_scalars + SCALAR_BYTES * n, ALIGN);
        let in_bytes = off_starts_in + 4 * (msms.len() + 1);
        let off_counts = round_up(in_bytes, ALIGN);
        let off_starts = round_up(off_counts + 4 * buckets, ALIGN);
        let off_cursor = round_up(off_starts + 4 * buckets, ALIGN);
        let off_tile_sums = round_up(off_cursor + 4 * buckets, ALIGN);
        let off_sorted = round_up(off_tile_sums + 4 * tiles, ALIGN);
        let off_buckets = round_up(off_sorted + 4 * entries, ALIGN);
        let off_partials = round_up(off_buckets + BUCKET_BYTES * buckets, ALIGN);
        let device_bytes = off_partials + JACOBIAN_BYTES * partials;
        Ok(Plan {
            n,
            msms: msms.len(),
            c,
            windows,
            narrow: narrow_windows(c),
            half,
            buckets,
            tiles,
            seg_len,
            reduce_block,
            blocks_per_window,
            partials,
            off_points,
            off_scalars,
            off_starts_in,
            in_bytes,
            off_counts,
            off_starts,
            off_cursor,
            off_tile_sums,
            off_sorted,
            off_buckets,
            off_partials,
            device_bytes,
        })
    }
}

fn fill(p: &G1Affine, s: &ic_bls12_381::Scalar, pd: &mut [u8], sd: &mut [u8]) {
    pd.copy_from_slice(&p.to_uncompressed());
    if bool::from(p.is_identity()) {
        sd.fill(0);
    } else {
        sd.copy_from_slice(&s.to_bytes());
    }
}

/// Stages points as 96-byte uncompressed encodings and scalars as 32 little-endian bytes
/// (the identity gets a zero scalar, so the kernels never meet it) and uploads them in
/// groups of about UPLOAD_GROUP points, so each group's copy overlaps the next group's
/// conversion on the host.
///
/// # Safety
/// `d_base` must hold `plan.in_bytes` bytes laid out as `plan` says; the caller must not
/// touch `host` again until `stream` has been synchronised.
unsafe fn stage_and_upload(
    msms: &[MsmInput<'_>],
    plan: &Plan,
    host: &mut [u8],
    d_base: u64,
    stream: cudarc::driver::sys::CUstream,
) -> Result<(), GpuError> {
    let (points_area, rest) = host.split_at_mut(plan.off_scalars);
    let (scalars_area, starts_area) = rest.split_at_mut(plan.off_starts_in - plan.off_scalars);
    let mut start = 0u32;
    for (b, m) in msms.iter().enumerate() {
        starts_area[4 * b..4 * b + 4].copy_from_slice(&start.to_le_bytes());
        start += m.points.len() as u32;
    }
    starts_area[4 * msms.len()..4 * msms.len() + 4].copy_from_slice(&start.to_le_bytes());
    let starts_bytes = 4 * (msms.len() + 1);
    // SAFETY: the device range is inside the caller's buffer; the host range stays unwritten.
    unsafe {
        result::memcpy_htod_async(
            d_base + plan.off_starts_in as u64,
            &starts_area[..starts_bytes],
            stream,
        )
    }
    .map_err(driver("upload MSM offsets"))?;

    // Pieces of at most UPLOAD_GROUP points of one MSM, in the global point order.
    let mut pieces: Vec<(&[G1Affine], &[ic_bls12_381::Scalar])> = Vec::new();
    for m in msms {
        for (p, s) in m
            .points
            .chunks(UPLOAD_GROUP)
            .zip(m.scalars.chunks(UPLOAD_GROUP))
        {
            pieces.push((p, s));
        }
    }
    let mut points_rest = &mut points_area[..POINT_BYTES * plan.n];
    let mut scalars_rest = &mut scalars_area[..SCALAR_BYTES * plan.n];
    let mut uploaded = 0usize;
    let mut group = Vec::new();
    let mut group_points = 0usize;
    let last = pieces.len().saturating_sub(1);
    for (i, (p, s)) in pieces.into_iter().enumerate() {
        let (pd, pr) = std::mem::take(&mut points_rest).split_at_mut(POINT_BYTES * p.len());
        let (sd, sr) = std::mem::take(&mut scalars_rest).split_at_mut(SCALAR_BYTES * p.len());
        points_rest = pr;
        scalars_rest = sr;
        group_points += p.len();
        group.push((p, s, pd, sd));
        if group_points < UPLOAD_GROUP && i != last {
            continue;
        }
        let convert =
            |(p, s, pd, sd): &mut (&[G1Affine], &[ic_bls12_381::Scalar], &mut [u8], &mut [u8])| {
                if p.len() >= PARALLEL_CONVERT {
                    p.par_iter()
                        .zip(s.par_iter())
                        .zip(pd.par_chunks_exact_mut(POINT_BYTES))
                        .zip(sd.par_chunks_exact_mut(SCALAR_BYTES))
                        .with_min_len(256)
                        .for_each(|(((p, s), pd), sd)| fill(p, s, pd, sd));
                } else {
                    for (((p, s), pd), sd) in p
                        .iter()
                        .zip(s.iter())
                        .zip(pd.chunks_exact_mut(POINT_BYTES))
                        .zip(sd.chunks_exact_mut(SCALAR_BYTES))
                    {
                        fill(p, s, pd, sd);
                    }
                }
            };
        if group.len() > 1 && group_points >= PARALLEL_CONVERT {
            group.par_iter_mut().for_each(convert);
        } else {
            group.iter_mut().for_each(convert);
        }
        // The group's encodings are contiguous in the pinned buffer (split off in order).
        let (p_ptr, s_ptr) = (group[0].2.as_ptr(), group[0].3.as_ptr());
        // SAFETY: the group's slices were split off one allocation consecutively, so the
        // ranges [p_ptr, p_ptr + 96 * group_points) and [s_ptr, ...) are inside it and
        // initialised; the device offsets follow `plan`.
        unsafe {
            let pts = std::slice::from_raw_parts(p_ptr, POINT_BYTES * group_points);
            let scs = std::slice::from_raw_parts(s_ptr, SCALAR_BYTES * group_points);
            result::memcpy_htod_async(
                d_base + (plan.off_points + POINT_BYTES * uploaded) as u64,
                pts,
                stream,
            )
            .map_err(driver("upload points"))?;
            result::memcpy_htod_async(
                d_base + (plan.off_scalars + SCALAR_BYTES * uploaded) as u64,
                scs,
                stream,
            )
            .map_err(driver("upload scalars"))?;
        }
        uploaded += group_points;
        group.clear();
        group_points = 0;
    }
    Ok(())
}

fn launch_1d(n: usize, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((n as u32).div_ceil(threads).max(1), 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

pub(crate) fn run(
    gpu: &GpuBackend,
    w: &mut Worker,
    msms: &[MsmInput<'_>],
) -> Result<Vec<G1Projective>, GpuError> {
    let plan = Plan::new(msms)?;
    if plan.n == 0 {
        return Ok(vec![G1Projective::identity(); msms.len()]);
    }
    let k = &gpu.kernels.msm;
    let out_bytes = JACOBIAN_BYTES * plan.partials;
    w.msm.host_in.ensure(plan.in_bytes)?;
    w.msm.host_out.ensure(out_bytes)?;
    w.msm.device.ensure(plan.device_bytes)?;
    gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;
    let t_stage = std::time::Instant::now();
    let base = w.msm.device.ptr();
    // SAFETY: the device buffer holds plan.device_bytes; host_in is not touched again
    // before the stream is synchronised below.
    unsafe {
        stage_and_upload(
            msms,
            &plan,
            w.msm.host_in.slice_mut(plan.in_bytes),
            base,
            w.stream.cu_stream(),
        )?;
    }
    let stage_s = t_stage.elapsed().as_secs_f64();
    let t_gpu = std::time::Instant::now();

    let stream = w.stream.clone();
    let at = |off: usize| base + off as u64;
    let (d_points, d_scalars, d_starts_in) = (
        at(plan.off_points),
        at(plan.off_scalars),
        at(plan.off_starts_in),
    );
    let (d_counts, d_starts, d_cursor, d_tile_sums) = (
        at(plan.off_counts),
        at(plan.off_starts),
        at(plan.off_cursor),
        at(plan.off_tile_sums),
    );
    let (d_sorted, d_buckets, d_partials) = (
        at(plan.off_sorted),
        at(plan.off_buckets),
        at(plan.off_partials),
    );
    let n32 = plan.n as u32;
    let msms32 = plan.msms as u32;
    let buckets32 = plan.buckets as u32;
    let tiles32 = plan.tiles as u32;
    // SAFETY: every device range lies inside `device` (Plan's offsets, ensured above) and
    // every host range inside the pinned buffers, untouched until the stream is
    // synchronised below. Kernel arguments match the kernels' signatures.
    unsafe {
        let cu = stream.cu_stream();
        result::memset_d8_async(d_counts, 0, 4 * plan.buckets, cu)
            .map_err(driver("clear counts"))?;
        // Poison: an unwritten partial sum is not a canonical field element.
        result::memset_d8_async(d_partials, 0xff, out_bytes, cu)
            .map_err(driver("poison partial sums"))?;
        stream
            .launch_builder(&k.load_points)
            .arg(&d_points)
            .arg(&n32)
            .launch(launch_1d(plan.n, 128))
            .map_err(driver("launch msm_load_points"))?;
        stream
            .launch_builder(&k.histogram)
            .arg(&d_scalars)
            .arg(&n32)
            .arg(&d_starts_in)
            .arg(&msms32)
            .arg(&plan.c)
            .arg(&plan.windows)
            .arg(&plan.narrow)
            .arg(&d_counts)
            .launch(launch_1d(plan.n, 256))
            .map_err(driver("launch msm_histogram"))?;
        stream
            .launch_builder(&k.scan_tiles)
            .arg(&d_counts)
            .arg(&buckets32)
            .arg(&d_starts)
            .arg(&d_tile_sums)
            .launch(LaunchConfig {
                grid_dim: (tiles32, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            })
            .map_err(driver("launch msm_scan_tiles"))?;
        stream
            .launch_builder(&k.scan_tile_sums)
            .arg(&d_tile_sums)
            .arg(&tiles32)
            .launch(LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            })
            .map_err(driver("launch msm_scan_tile_sums"))?;
        stream
            .launch_builder(&k.scan_add)
            .arg(&d_starts)
            .arg(&d_cursor)
            .arg(&buckets32)
            .arg(&d_tile_sums)
            .launch(launch_1d(plan.buckets, 256))
            .map_err(driver("launch msm_scan_add"))?;
        stream
            .launch_builder(&k.scatter)
            .arg(&d_scalars)
            .arg(&n32)
            .arg(&d_starts_in)
            .arg(&msms32)
            .arg(&plan.c)
            .arg(&plan.windows)
            .arg(&plan.narrow)
            .arg(&d_cursor)
            .arg(&d_sorted)
            .launch(launch_1d(plan.n, 256))
            .map_err(driver("launch msm_scatter"))?;
        stream
            .launch_builder(&k.accumulate)
            .arg(&d_points)
            .arg(&d_sorted)
            .arg(&d_starts)
            .arg(&d_cursor)
            .arg(&buckets32)
            .arg(&d_buckets)
            .launch(launch_1d(plan.buckets, 128))
            .map_err(driver("launch msm_accumulate"))?;
        stream
            .launch_builder(&k.reduce)
            .arg(&d_buckets)
            .arg(&plan.half)
            .arg(&plan.seg_len)
            .arg(&d_partials)
            .launch(LaunchConfig {
                grid_dim: (plan.blocks_per_window, plan.msms as u32 * plan.windows, 1),
                block_dim: (plan.reduce_block, 1, 1),
                shared_mem_bytes: 0,
            })
            .map_err(driver("launch msm_reduce"))?;
        result::memcpy_dtoh_async(w.msm.host_out.slice_mut(out_bytes), d_partials, cu)
            .map_err(driver("download partial sums"))?;
    }
    stream.synchronize().map_err(driver("g1 msm"))?;
    let gpu_s = t_gpu.elapsed().as_secs_f64();
    let t_combine = std::time::Instant::now();
    let partials = w.msm.host_out.slice(out_bytes);
    let per_msm = JACOBIAN_BYTES * plan.windows as usize * plan.blocks_per_window as usize;
    let combine = |chunk: &[u8]| combine_windows(chunk, &plan);
    let out = if plan.msms > 1 {
        partials.par_chunks_exact(per_msm).map(combine).collect()
    } else {
        partials.chunks_exact(per_msm).map(combine).collect()
    };
    tracing::debug!(
        points = plan.n,
        msms = plan.msms,
        window_bits = plan.c,
        stage_upload_ms = stage_s * 1e3,
        gpu_ms = gpu_s * 1e3,
        combine_ms = t_combine.elapsed().as_secs_f64() * 1e3,
        "g1 msm"
    );
    if profile_enabled() {
        eprintln!(
            "msm profile: {} points in {} MSMs, c={}: stage+upload issue {:.3} ms, then upload rest+kernels+download {:.3} ms, combine {:.3} ms",
            plan.n,
            plan.msms,
            plan.c,
            stage_s * 1e3,
            gpu_s * 1e3,
            t_combine.elapsed().as_secs_f64() * 1e3
        );
    }
    out
}

/// `GPU_CRYPTO_MSM_PROFILE=1` prints each call's host/GPU time split (bench diagnostics).
fn profile_enabled() -> bool {
    std::env::var_os("GPU_CRYPTO_MSM_PROFILE").is_some_and(|v| v == "1")
}

/// The 48 little-endian bytes of a Montgomery-form field element from the GPU as blst's
/// (also Montgomery, R = 2^384); `None` unless canonical (below p), which also catches an
/// unwritten (poisoned) result.
fn fp_from_gpu(b: &[u8]) -> Option<blst_fp> {
    const P: [u64; 6] = [
        0xb9fe_ffff_ffff_aaab,
        0x1eab_fffe_b153_ffff,
        0x6730_d2a0_f6b0_f624,
        0x6477_4b84_f385_12bf,
        0x4b1b_a7b6_434b_acd7,
        0x1a01_11ea_397f_e69a,
    ];
    let mut l = [0u64; 6];
    for (limb, bytes) in l.iter_mut().zip(b.chunks_exact(8)) {
        *limb = u64::from_le_bytes(bytes.try_into().ok()?);
    }
    // l < p, comparing from the most significant limb.
    let below = l.iter().rev().cmp(P.iter().rev()) == std::cmp::Ordering::Less;
    below.then_some(blst_fp { l })
}

fn jacobian_from_gpu(b: &[u8]) -> Result<blst_p1, GpuError> {
    let bad = || GpuError::BadOutput("MSM partial sum is not a canonical field element".into());
    Ok(blst_p1 {
        x: fp_from_gpu(&b[0..48]).ok_or_else(bad)?,
        y: fp_from_gpu(&b[48..96]).ok_or_else(bad)?,
        z: fp_from_gpu(&b[96..144]).ok_or_else(bad)?,
    })
}

/// sum over windows w of 2^(c*w) * (sum of window w's partial sums), by Horner from the top.
fn combine_windows(chunk: &[u8], plan: &Plan) -> Result<G1Projective, GpuError> {
    let per_window = JACOBIAN_BYTES * plan.blocks_per_window as usize;
    let mut acc = blst_p1::default();
    for (w, window) in chunk.chunks_exact(per_window).enumerate().rev() {
        // Window w starts window_width(w) bits below window w + 1.
        for _ in 0..window_width(w as u32, plan.c) {
            // SAFETY: blst point arithmetic on initialised values; in-place use is allowed.
            unsafe { blst::blst_p1_double(&mut acc, &acc) };
        }
        for part in window.chunks_exact(JACOBIAN_BYTES) {
            let p = jacobian_from_gpu(part)?;
            // SAFETY: as above; add_or_double handles equal inputs and the identity.
            unsafe { blst::blst_p1_add_or_double(&mut acc, &acc, &p) };
        }
    }
    let mut bytes = [0u8; 96];
    // SAFETY: blst writes 96 bytes for an uncompressed G1 point.
    unsafe { blst::blst_p1_serialize(bytes.as_mut_ptr(), &acc) };
    let affine = Option::<G1Affine>::from(G1Affine::from_uncompressed_unchecked(&bytes))
        .filter(|p| bool::from(p.is_on_curve()))
        .ok_or_else(|| GpuError::BadOutput("MSM result is not on the curve".into()))?;
    Ok(G1Projective::from(affine))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// r - 1, little-endian: the largest scalar.
    const R_MINUS_1: [u8; 32] = [
        0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xfe, 0x5b, 0xfe, 0xff, 0x02, 0xa4, 0xbd,
        0x53, 0x05, 0xd8, 0xa1, 0x09, 0x08, 0xd8, 0x39, 0x33, 0x48, 0x7d, 0x9d, 0x29, 0x53, 0xa7,
        0xed, 0x73,
    ];

    #[test]
    fn r_minus_1_is_scalar_minus_one() {
        assert_eq!((-ic_bls12_381::Scalar::one()).to_bytes(), R_MINUS_1);
    }

    /// The kernels' window layout: widths sum to 256, every width fits the buckets, and the
    /// top window of the largest scalar leaves room for the carry (digit <= 2^(c-1)) while
    /// still using a large share of its buckets (no pile-up in a few buckets).
    #[test]
    fn windows_cover_256_bits_and_the_top_window_is_full() {
        for c in 4..=MAX_WINDOW_BITS {
            let w = window_count(c);
            let widths: Vec<u32> = (0..w).map(|i| window_width(i, c)).collect();
            assert_eq!(widths.iter().sum::<u32>(), 256, "c={c}");
            assert!(widths.iter().all(|&x| x == c || x == c - 1), "c={c}");
            let top = widths[w as usize - 1];
            assert_eq!(top, c, "c={c}: the top window is a full one");
            let top_raw = {
                let v = u32::from_le_bytes(R_MINUS_1[28..32].try_into().unwrap());
                v >> (32 - top)
            };
            assert!(top_raw < 1 << (c - 1), "c={c}: carry would overflow");
            assert!(top_raw > 1 << (c - 3), "c={c}: top window uses few buckets");
        }
    }

    #[test]
    fn many_tiny_msms_get_narrower_windows_or_an_error() {
        let points = [G1Affine::generator()];
        let scalars = [ic_bls12_381::Scalar::one()];
        let one = MsmInput {
            points: &points,
            scalars: &scalars,
        };
        let plan = Plan::new(&vec![one; 32]).expect("32 MSMs");
        assert_eq!(plan.c, 8);
        let plan = Plan::new(&vec![one; 20_000]).expect("20k MSMs");
        assert!(plan.c < 8, "c={}", plan.c);
        assert!(plan.buckets * BUCKET_BYTES <= MAX_BUCKET_BYTES);
        assert!(matches!(
            Plan::new(&vec![one; 1_000_000]),
            Err(GpuError::InputTooLarge(_))
        ));
    }

    #[test]
    fn window_bits_grow_with_size_within_bounds() {
        assert_eq!(window_bits(1), 8);
        assert_eq!(window_bits(448), 8);
        assert_eq!(window_bits(1 << 12), 10);
        assert_eq!(window_bits(1 << 16), 14);
        assert_eq!(window_bits(1 << 24), 16);
    }
}
