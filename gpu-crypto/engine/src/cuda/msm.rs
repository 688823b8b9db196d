//! Host side of the batched G1 Pippenger MSM (kernels in `kernels/msm/g1_msm.cu`, design in
//! docs/msm.md): one upload of every MSM's points and scalars, in chunks for large batches
//! (each chunk staged on the host and uploaded on a copy stream while the GPU sorts and adds
//! the chunk before into the buckets), one launch sequence for the whole batch, one
//! download of each window's partial sums. The host adds the partial
//! sums and combines the windows with blst: a few hundred additions per MSM, a serial chain
//! that CPU cores run far faster than one GPU thread.
//!
//! Points and scalars cross in ic_bls12_381's own Montgomery form where that form can be
//! read without converting (see [`PointLayout`] and [`raw_scalars_usable`]): copying 128
//! bytes per point instead of three Montgomery reductions per point on the host.

use super::device::Device;
use super::error::GpuError;
use super::functions::MsmKernels;
use super::launch::{blocks, launch_1d};
use super::marks::StreamMarks;
use super::memory::{align_device, driver};
use super::worker::Worker;
use crate::input::MsmInput;
use blst::{blst_fp, blst_p1};
use cudarc::driver::{CudaStream, LaunchArgs, LaunchConfig, PushKernelArg, result, sys};
use ic_bls12_381::{G1Affine, G1Projective, Scalar};
use rayon::prelude::*;
use std::mem::{MaybeUninit, size_of};
use std::sync::{Arc, OnceLock};

/// Must equal SCAN_TILE in the kernel source.
const SCAN_TILE: usize = 256 * 8;
const REDUCE_THREADS_MAX: u32 = 128;
/// Blocks of REDUCE_THREADS_MAX threads of msm_reduce that fit one SM (about 250 registers
/// a thread): the reduction is a latency-bound chain per thread, so its threads should fit
/// in one wave (device run 3 measured two waves of 2^16 threads at 2.8 ms, docs/msm.md).
const REDUCE_BLOCKS_PER_SM: usize = 2;
/// Reduction threads when the SM count is unknown (unit tests): one wave on an H200.
const REDUCE_DEFAULT_THREADS: usize = 1 << 15;
/// Blocks of 128 threads of msm_accumulate per SM (its `__launch_bounds__(128, 3)`).
const ACCUMULATE_BLOCKS_PER_SM: usize = 3;
const ACCUMULATE_BLOCK: u32 = 128;
/// Accumulation threads when the SM count is unknown (unit tests): one wave on an H200.
const ACCUMULATE_DEFAULT_THREADS: usize = 132 * ACCUMULATE_BLOCKS_PER_SM * 128;
/// Fewest sorted entries per accumulation thread: below that, small batches would spend
/// more on adding the parts of buckets cut across slices than they save.
const MIN_SLICE: usize = 4;
/// Batches above this many points cross in chunks: each chunk is staged on the host and
/// uploaded while the GPU sorts and accumulates the one before.
const PIPELINE_MIN_POINTS: usize = 1 << 18;
/// At most this many chunks after the first (each costs a sort pass over all buckets and a
/// bucket reload).
const PIPELINE_MAX_CHUNKS: usize = 8;
/// The first chunk is small, so the GPU starts after staging 2^16 points rather than a
/// full chunk; the host then stages the next chunks faster than the GPU adds them.
const PIPELINE_FIRST_CHUNK: usize = 1 << 16;
/// Points per unit of host staging work (one rayon task).
const PIECE: usize = 4096;
/// Points above which host staging runs on all cores.
const PARALLEL_STAGING: usize = 2 * PIECE;
/// Widest window: 2^15 buckets per window keep the bucket array small and the sort's
/// histogram in L2 for the largest MSMs.
const MAX_WINDOW_BITS: u32 = 16;
/// Window width above 2^19 points.
const LARGE_WINDOW_BITS: u32 = 16;
/// Upper bound on the bucket array of one call (2^(c-1) buckets per window per MSM).
const MAX_BUCKET_BYTES: usize = 1 << 31;
const FP_BYTES: usize = 48;
pub(super) const POINT_BYTES: usize = 2 * FP_BYTES;
const SCALAR_BYTES: usize = 32;
const BUCKET_BYTES: usize = 4 * FP_BYTES;
pub(super) const JACOBIAN_BYTES: usize = 3 * FP_BYTES;

// A Scalar is one [u64; 4] field (ic_bls12_381 0.10: `Scalar(pub(crate) [u64; 4])`); a size
// of 32 bytes leaves no room for padding, so all of its bytes are that field's.
const _: () = assert!(size_of::<Scalar>() == SCALAR_BYTES);

/// Byte offsets of the Montgomery limbs of x and y inside ic_bls12_381's `G1Affine`
/// (`{ x: Fp, y: Fp, infinity: Choice }`, default Rust layout, so not guaranteed by the
/// language). Found once per process by [`probe_point_layout`]; with them a point's 96
/// field bytes are copied as they are (Montgomery form with R = 2^384, exactly the kernels'
/// 12 x 32-bit limbs) instead of being encoded and decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PointLayout {
    x: usize,
    y: usize,
}

/// Where ic_bls12_381 keeps x and y inside a `G1Affine`, probed on first use; `None` when
/// the probe did not find them (points then cross as encodings).
static POINT_LAYOUT: OnceLock<Option<PointLayout>> = OnceLock::new();

/// How points and scalars cross to the GPU in one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Staging {
    /// Points: ic_bls12_381's Montgomery limbs, copied; scalars likewise (converted on the GPU).
    Montgomery(PointLayout),
    /// Points as uncompressed encodings, scalars as `to_bytes` (no assumption about
    /// ic_bls12_381's memory; three Montgomery reductions per point on the host).
    Encoded,
}

/// Window width c for MSMs of up to `n` points: wide windows mean fewer windows, so fewer
/// bucket additions (n per window), at the price of more buckets to reduce (2^(c-1) per
/// window). Measured on the H200 with the slice-balanced accumulation (window sweeps of the
/// MSM bench, `GPU_MSM_BENCH_SWEEP=1`; docs/msm.md): log2(n) - 2 up to 2^16 points, 14 at 2^17 to 2^19 (at 2^18, 13, 14 and
/// 16 overlap within the runs' spread, 15 is slower), 16 above (at 2^20 16 beat 13, 14 and
/// 15 by 7-19 %, at 2^22 14 and 15 by 14-18 %).
pub(crate) fn window_bits(n: usize) -> u32 {
    if let Some(c) = std::env::var("GPU_CRYPTO_MSM_WINDOW_BITS")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|c| (4..=MAX_WINDOW_BITS).contains(c))
    {
        return c;
    }
    let log = usize::BITS - n.max(1).saturating_sub(1).leading_zeros();
    if log <= 19 {
        log.saturating_sub(2).clamp(8, 14)
    } else {
        LARGE_WINDOW_BITS
    }
}

/// ceil(256 / c) windows whose widths (c - 1 for the lowest `narrow_windows`, c for the
/// rest) sum to 256: scalars are below 2^255, so the top window's carry-adjusted signed digit
/// never exceeds 2^(c-1), and its digits spread over all its buckets.
pub(crate) fn window_count(c: u32) -> u32 {
    256u32.div_ceil(c)
}

fn narrow_windows(c: u32) -> u32 {
    c * window_count(c) - 256
}

fn window_width(w: u32, c: u32) -> u32 {
    if w < narrow_windows(c) { c - 1 } else { c }
}

/// Layout of one launch: the sizes, and byte offsets into the device buffer (`off`).
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
    /// Accumulation threads that fill one wave of the device (the spill area holds one
    /// partial bucket per thread).
    accumulate_threads: usize,
    /// Reduction: buckets per thread, threads per block, blocks per window.
    seg_len: u32,
    reduce_block: u32,
    blocks_per_window: u32,
    partials: usize,
    /// Points per pipeline chunk (chunks end on piece boundaries, so one may exceed this by
    /// less than PIECE); `n` when the batch crosses in one piece of work.
    chunk_target: usize,
    off: Offsets,
}

/// Byte offsets of a launch's areas in the device buffer; the input part (up to
/// `in_bytes`) mirrors the pinned host buffer.
struct Offsets {
    scalars: usize,
    starts_in: usize,
    points: usize,
    in_bytes: usize,
    counts: usize,
    starts: usize,
    cursor: usize,
    tile_sums: usize,
    sorted: usize,
    buckets: usize,
    spills: usize,
    spill_buckets: usize,
    partials: usize,
    device_bytes: usize,
}

/// Buckets of a batch of `msms` MSMs with c-bit windows.
fn bucket_count(msms: usize, c: u32) -> u128 {
    ((msms as u128) * (window_count(c) as u128)) << (c - 1)
}

/// The window width of a batch of `msms` MSMs of at most `largest` points: many MSMs in
/// one batch multiply the buckets, so the windows narrow until the bucket array fits
/// MAX_BUCKET_BYTES (a batch of thousands of tiny MSMs would otherwise ask for gigabytes).
fn batch_window_bits(msms: usize, largest: usize) -> u32 {
    let mut c = window_bits(largest);
    while c > 4 && bucket_count(msms, c) > (MAX_BUCKET_BYTES / BUCKET_BYTES) as u128 {
        c -= 1;
    }
    c
}

/// The batch's bucket count, after checking that the buckets fit MAX_BUCKET_BYTES and
/// that buckets and sort entries fit the kernels' 32-bit indices (`InputTooLarge` if not).
fn checked_buckets(n: usize, msms: usize, c: u32) -> Result<usize, GpuError> {
    let windows = window_count(c);
    let half = 1u32 << (c - 1);
    let too_large = || {
        GpuError::InputTooLarge(format!(
            "{n} points in {msms} MSMs exceed the kernels' 32-bit indices"
        ))
    };
    if bucket_count(msms, c) * BUCKET_BYTES as u128 > MAX_BUCKET_BYTES as u128 {
        return Err(GpuError::InputTooLarge(format!(
            "{msms} MSMs in one batch need more than {MAX_BUCKET_BYTES} bytes of buckets"
        )));
    }
    let buckets = msms
        .checked_mul(windows as usize * half as usize)
        .filter(|&k| k < u32::MAX as usize)
        .ok_or_else(too_large)?;
    n.checked_mul(windows as usize)
        .filter(|&e| e < u32::MAX as usize && n < (1 << 31))
        .ok_or_else(too_large)?;
    Ok(buckets)
}

/// The reduction's shape for `all_windows` windows of `half` buckets and about
/// `reduce_threads` threads: (buckets per thread, threads per block, blocks per window),
/// with a power-of-two thread count per window.
fn reduction(reduce_threads: usize, all_windows: usize, half: u32) -> (u32, u32, u32) {
    let mut threads = (reduce_threads / all_windows.max(1)).clamp(1, half as usize);
    threads = 1 << (usize::BITS - 1 - threads.leading_zeros()); // power of two
    let seg_len = half / threads as u32;
    let reduce_block = (threads as u32).min(REDUCE_THREADS_MAX);
    let blocks_per_window = threads as u32 / reduce_block;
    (seg_len, reduce_block, blocks_per_window)
}

impl Offsets {
    /// Scalars and the MSM start table first: they cross (and are sorted) before the
    /// points. `entries`: sort entries of the largest chunk; `spill_threads`: accumulation
    /// threads (one spilled bucket each); `partials`: the reduction's partial sums.
    fn new(
        n: usize,
        msms: usize,
        buckets: usize,
        tiles: usize,
        entries: usize,
        spill_threads: usize,
        partials: usize,
    ) -> Offsets {
        let scalars = 0;
        let starts_in = align_device(scalars + SCALAR_BYTES * n);
        let points = align_device(starts_in + 4 * (msms + 1));
        let in_bytes = points + POINT_BYTES * n;
        let counts = align_device(in_bytes);
        let starts = align_device(counts + 4 * buckets);
        let cursor = align_device(starts + 4 * buckets);
        let tile_sums = align_device(cursor + 4 * buckets);
        let sorted = align_device(tile_sums + 4 * tiles);
        let bucket_area = align_device(sorted + 4 * entries);
        let spills = align_device(bucket_area + BUCKET_BYTES * buckets);
        let spill_buckets = align_device(spills + BUCKET_BYTES * spill_threads);
        let partials_at = align_device(spill_buckets + 4 * spill_threads);
        Offsets {
            scalars,
            starts_in,
            points,
            in_bytes,
            counts,
            starts,
            cursor,
            tile_sums,
            sorted,
            buckets: bucket_area,
            spills,
            spill_buckets,
            partials: partials_at,
            device_bytes: partials_at + JACOBIAN_BYTES * partials,
        }
    }
}

impl Plan {
    /// `reduce_threads` and `accumulate_threads`: about how many threads of msm_reduce and
    /// msm_accumulate the device runs in one wave.
    fn new(
        msms: &[MsmInput<'_>],
        reduce_threads: usize,
        accumulate_threads: usize,
    ) -> Result<Plan, GpuError> {
        let n: usize = msms.iter().map(|m| m.points.len()).sum();
        let largest = msms.iter().map(|m| m.points.len()).max().unwrap_or(0);
        let c = batch_window_bits(msms.len(), largest);
        let windows = window_count(c);
        let half = 1u32 << (c - 1);
        let buckets = checked_buckets(n, msms.len(), c)?;
        let chunk_target = if n > PIPELINE_MIN_POINTS {
            PIPELINE_MIN_POINTS.max(n.div_ceil(PIPELINE_MAX_CHUNKS))
        } else {
            n
        };
        // Sort entries of the largest chunk (one chunk's sort is consumed before the next).
        let entries = n.min(chunk_target + PIECE) * windows as usize;
        let all_windows = msms.len() * windows as usize;
        let (seg_len, reduce_block, blocks_per_window) =
            reduction(reduce_threads, all_windows, half);
        let tiles = buckets.div_ceil(SCAN_TILE);
        let accumulate_threads = accumulate_threads.max(1);
        let partials = all_windows * blocks_per_window as usize;
        let off = Offsets::new(
            n,
            msms.len(),
            buckets,
            tiles,
            entries,
            accumulate_threads,
            partials,
        );
        Ok(Plan {
            n,
            msms: msms.len(),
            c,
            windows,
            narrow: narrow_windows(c),
            half,
            buckets,
            tiles,
            accumulate_threads,
            seg_len,
            reduce_block,
            blocks_per_window,
            partials,
            chunk_target,
            off,
        })
    }

    /// Sorted entries per accumulation thread for a chunk of `count` points, and the
    /// threads: about one wave, each with the same number of entries (the chunk has at most
    /// count * windows entries; zero digits have none).
    fn slices(&self, count: usize) -> (u32, usize) {
        let entries = count * self.windows as usize;
        let slice = entries.div_ceil(self.accumulate_threads).max(MIN_SLICE);
        (slice as u32, entries.div_ceil(slice))
    }
}

/// The raw bytes of a scalar: ic_bls12_381's four little-endian u64 limbs of a * 2^256 mod r.
fn scalar_limbs(s: &Scalar) -> &[u8; SCALAR_BYTES] {
    // SAFETY: Scalar is exactly 32 bytes of one [u64; 4] field (asserted at compile time
    // above), so every byte is initialised; [u8; 32] has alignment 1.
    unsafe { &*(s as *const Scalar as *const [u8; SCALAR_BYTES]) }
}

/// a * 2^-256 mod r of a 256-bit little-endian integer below r (one Montgomery reduction):
/// the host reference of `msm_scalars_from_mont`, used to check the raw form.
fn scalar_from_montgomery(raw: &[u8; SCALAR_BYTES]) -> [u8; SCALAR_BYTES] {
    const R: [u64; 4] = [
        0xffff_ffff_0000_0001,
        0x53bd_a402_fffe_5bfe,
        0x3339_d808_09a1_d805,
        0x73ed_a753_299d_7d48,
    ];
    const R_INV_NEG: u64 = 0xffff_fffe_ffff_ffff; // -r^-1 mod 2^64
    let mut t = [0u64; 4];
    for (limb, b) in t.iter_mut().zip(raw.chunks_exact(8)) {
        let mut w = [0u8; 8];
        w.copy_from_slice(b);
        *limb = u64::from_le_bytes(w);
    }
    for _ in 0..4 {
        let m = t[0].wrapping_mul(R_INV_NEG);
        let mut c = (u128::from(m) * u128::from(R[0]) + u128::from(t[0])) >> 64;
        for j in 1..4 {
            c += u128::from(m) * u128::from(R[j]) + u128::from(t[j]);
            t[j - 1] = c as u64;
            c >>= 64;
        }
        t[3] = c as u64;
    }
    let mut out = [0u8; SCALAR_BYTES];
    for (b, limb) in out.chunks_exact_mut(8).zip(t) {
        b.copy_from_slice(&limb.to_le_bytes());
    }
    out
}

/// Whether a scalar's raw bytes are the Montgomery form the GPU kernel converts (checked
/// once per process on sample values against `Scalar::to_bytes`).
fn raw_scalars_usable() -> bool {
    static USABLE: OnceLock<bool> = OnceLock::new();
    *USABLE.get_or_init(|| {
        let big = Scalar::from_raw([
            0x0123_4567_89ab_cdef,
            0xfedc_ba98_7654_3210,
            0x0f1e_2d3c_4b5a_6978,
            0x1234_5678_9abc_def0,
        ]);
        let samples = [Scalar::zero(), Scalar::one(), -Scalar::one(), big, big.square()];
        let ok = samples
            .iter()
            .all(|s| scalar_from_montgomery(scalar_limbs(s)) == s.to_bytes());
        if !ok {
            tracing::warn!("ic_bls12_381 Scalar is not in the expected Montgomery form; MSM scalars cross as to_bytes()");
        }
        ok
    })
}

/// Montgomery limbs (blst's, R = 2^384) of a 48-byte big-endian field element.
fn montgomery_bytes(be: &[u8]) -> [u8; FP_BYTES] {
    let mut fp = blst_fp::default();
    // SAFETY: blst reads 48 bytes; callers pass 48-byte coordinates of to_uncompressed.
    unsafe { blst::blst_fp_from_bendian(&mut fp, be.as_ptr()) };
    let mut out = [0u8; FP_BYTES];
    for (b, limb) in out.chunks_exact_mut(8).zip(fp.l) {
        b.copy_from_slice(&limb.to_le_bytes());
    }
    out
}

/// Finds where x and y sit inside a `G1Affine`. The struct has padding bytes (next to its
/// `Choice`), which Rust may not read, so sample points travel to the GPU and back as
/// untyped bytes (written by the DMA engine, the copy is ordinary initialised memory) and
/// are compared there with their Montgomery coordinates at every 8-byte offset. A layout
/// is accepted only if x and y are found at one offset each, for every sample.
fn probe_point_layout(gpu: &Device, w: &mut Worker) -> Result<Option<PointLayout>, GpuError> {
    let size = size_of::<G1Affine>();
    if !size.is_multiple_of(8) || size < POINT_BYTES {
        return Ok(None);
    }
    let g = G1Affine::generator();
    let samples = [g, -g, G1Affine::from(G1Projective::generator().double())];
    let bytes = samples.len() * size;
    w.msm.device.ensure(bytes)?;
    w.msm.host_out.ensure(bytes)?;
    gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;
    // SAFETY: a view of the samples' memory as possibly-uninitialised bytes (no byte is read
    // on the host); it lives until the synchronisation below.
    let raw: &[MaybeUninit<u8>] =
        unsafe { std::slice::from_raw_parts(samples.as_ptr() as *const MaybeUninit<u8>, bytes) };
    let stream = w.stream.clone();
    // SAFETY: the device buffer holds `bytes`; both copies finish before the reads below.
    unsafe {
        result::memcpy_htod_async(w.msm.device.ptr(), raw, stream.cu_stream())
            .map_err(driver("upload layout probe"))?;
        result::memcpy_dtoh_async(
            w.msm.host_out.slice_mut(bytes),
            w.msm.device.ptr(),
            stream.cu_stream(),
        )
        .map_err(driver("download layout probe"))?;
    }
    stream.synchronize().map_err(driver("layout probe"))?;
    let back = w.msm.host_out.slice(bytes);
    let records: Vec<&[u8]> = back.chunks_exact(size).collect();
    type Coords = ([u8; FP_BYTES], [u8; FP_BYTES]);
    let coords: Vec<Coords> = samples
        .iter()
        .map(|p| {
            let u = p.to_uncompressed();
            (
                montgomery_bytes(&u[..FP_BYTES]),
                montgomery_bytes(&u[FP_BYTES..]),
            )
        })
        .collect();
    let find = |pick: fn(&Coords) -> &[u8; FP_BYTES]| {
        let hits: Vec<usize> = (0..=size - FP_BYTES)
            .step_by(8)
            .filter(|&o| {
                records
                    .iter()
                    .zip(&coords)
                    .all(|(r, c)| r[o..o + FP_BYTES] == pick(c)[..])
            })
            .collect();
        (hits.len() == 1).then(|| hits[0])
    };
    let layout = match (find(|c| &c.0), find(|c| &c.1)) {
        (Some(x), Some(y)) if x.abs_diff(y) >= FP_BYTES => Some(PointLayout { x, y }),
        _ => None,
    };
    match layout {
        Some(l) => tracing::debug!(?l, size, "G1Affine layout probed"),
        None => tracing::warn!(
            size,
            "x and y of ic_bls12_381's G1Affine not found; MSM points cross as encodings"
        ),
    }
    Ok(layout)
}

pub(super) fn staging(gpu: &Device, w: &mut Worker) -> Result<Staging, GpuError> {
    if std::env::var("GPU_CRYPTO_MSM_STAGING").as_deref() == Ok("encoded") || !raw_scalars_usable()
    {
        return Ok(Staging::Encoded);
    }
    let layout = match POINT_LAYOUT.get() {
        Some(l) => *l,
        None => {
            let l = probe_point_layout(gpu, w)?;
            *POINT_LAYOUT.get_or_init(|| l)
        }
    };
    Ok(layout.map_or(Staging::Encoded, Staging::Montgomery))
}

/// A run of at most PIECE points of one MSM and its first global index.
struct Piece<'a> {
    points: &'a [G1Affine],
    scalars: &'a [Scalar],
    first: usize,
}

fn pieces<'a>(msms: &[MsmInput<'a>]) -> Vec<Piece<'a>> {
    let mut out = Vec::new();
    let mut first = 0;
    for m in msms {
        for (points, scalars) in m.points.chunks(PIECE).zip(m.scalars.chunks(PIECE)) {
            out.push(Piece {
                points,
                scalars,
                first,
            });
            first += points.len();
        }
    }
    out
}

/// Consecutive runs of pieces of at least `first` points for the first run and `target`
/// for the others (the last may be shorter): the pipeline's chunks, as (first piece, end
/// piece, first point, points).
fn chunks(pieces: &[Piece<'_>], first: usize, target: usize) -> Vec<(usize, usize, usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < pieces.len() {
        let want = if out.is_empty() { first } else { target };
        let mut end = start;
        let mut points = 0;
        while end < pieces.len() && points < want.max(1) {
            points += pieces[end].points.len();
            end += 1;
        }
        out.push((start, end, pieces[start].first, points));
        start = end;
    }
    out
}

/// The staging area as an address that rayon's workers may share: each writes only the
/// bytes of its own pieces, which are disjoint.
#[derive(Clone, Copy)]
struct Area(usize);

impl Area {
    /// # Safety
    /// `[offset, offset + len)` must be inside the area, which outlives `'a`, and be
    /// accessed by no one else meanwhile.
    unsafe fn slice<'a>(self, offset: usize, len: usize) -> &'a mut [u8] {
        // SAFETY: per the caller.
        unsafe { std::slice::from_raw_parts_mut((self.0 + offset) as *mut u8, len) }
    }
}

/// Writes one point's 96 bytes in the staging form: its Montgomery x and y as they are in
/// memory, or its uncompressed encoding (for `msm_load_points`). The identity's bytes are
/// not a point: callers give it a zero scalar.
pub(super) fn stage_point(p: &G1Affine, staging: Staging, pd: &mut [u8]) {
    match staging {
        Staging::Montgomery(layout) => {
            let base = p as *const G1Affine as *const u8;
            assert!(pd.len() >= POINT_BYTES, "staging slot of a point");
            // SAFETY: the probe found x and y, fields of every G1Affine, at these offsets:
            // 48 initialised bytes each, inside the struct; `pd` holds 96 bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(base.add(layout.x), pd.as_mut_ptr(), FP_BYTES);
                std::ptr::copy_nonoverlapping(
                    base.add(layout.y),
                    pd.as_mut_ptr().add(FP_BYTES),
                    FP_BYTES,
                );
            }
        }
        Staging::Encoded => pd[..POINT_BYTES].copy_from_slice(&p.to_uncompressed()),
    }
}

/// Writes the pieces' scalars at `scalars + 32 * first` (zero for the identity, so no
/// kernel ever meets the identity) and points at `points + 96 * first`, in the staging
/// form, in one pass over the inputs; on all cores when there are many points.
///
/// # Safety
/// Both areas must hold every piece's range, and nothing else may access those ranges
/// meanwhile.
unsafe fn stage(pieces: &[Piece<'_>], n: usize, staging: Staging, scalars: Area, points: Area) {
    let one = |piece: &Piece<'_>| {
        let len = piece.points.len();
        // SAFETY: the pieces' ranges are disjoint and inside the areas (the caller's contract).
        let (sd, pd) = unsafe {
            (
                scalars.slice(SCALAR_BYTES * piece.first, SCALAR_BYTES * len),
                points.slice(POINT_BYTES * piece.first, POINT_BYTES * len),
            )
        };
        for (((p, s), sd), pd) in piece
            .points
            .iter()
            .zip(piece.scalars)
            .zip(sd.chunks_exact_mut(SCALAR_BYTES))
            .zip(pd.chunks_exact_mut(POINT_BYTES))
        {
            stage_point(p, staging, pd);
            if bool::from(p.is_identity()) {
                sd.fill(0);
            } else {
                match staging {
                    Staging::Montgomery(_) => sd.copy_from_slice(scalar_limbs(s)),
                    Staging::Encoded => sd.copy_from_slice(&s.to_bytes()),
                }
            }
        }
    };
    if n >= PARALLEL_STAGING {
        pieces.par_iter().for_each(one);
    } else {
        pieces.iter().for_each(one);
    }
}

/// Threads of msm_reduce and of msm_accumulate that fit one wave of the device (the
/// defaults if the SM count cannot be read).
fn wave_threads(gpu: &Device) -> (usize, usize) {
    static THREADS: OnceLock<(usize, usize)> = OnceLock::new();
    *THREADS.get_or_init(|| {
        let sms = gpu
            .ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .ok()
            .and_then(|sms| usize::try_from(sms).ok())
            .filter(|&sms| sms > 0);
        match sms {
            Some(sms) => (
                sms * REDUCE_BLOCKS_PER_SM * REDUCE_THREADS_MAX as usize,
                sms * ACCUMULATE_BLOCKS_PER_SM * ACCUMULATE_BLOCK as usize,
            ),
            None => (REDUCE_DEFAULT_THREADS, ACCUMULATE_DEFAULT_THREADS),
        }
    })
}

/// MSMs of one launch sequence: msm_reduce's grid has one row per (MSM, window), at most
/// 65,535, and windows are at least 4 bits wide (64 windows). Larger batches (the sharing
/// proof's chunk recombinations of a DKG round: 2n(n + 1) MSMs of 16 points) run as
/// consecutive launch sequences.
const MAX_MSMS_PER_LAUNCH: usize = MAX_GRID_Y / 64;

/// The CUDA limit of a grid's second dimension.
const MAX_GRID_Y: usize = 65_535;

pub(crate) fn run(
    gpu: &Device,
    w: &mut Worker,
    msms: &[MsmInput<'_>],
) -> Result<Vec<G1Projective>, GpuError> {
    let mut out = Vec::with_capacity(msms.len());
    for group in msms.chunks(MAX_MSMS_PER_LAUNCH) {
        out.extend(run_group(gpu, w, group)?);
    }
    Ok(out)
}

fn run_group(
    gpu: &Device,
    w: &mut Worker,
    msms: &[MsmInput<'_>],
) -> Result<Vec<G1Projective>, GpuError> {
    let result = run_staged(gpu, w, msms);
    if result.is_err()
        && let Some(s) = &w.msm.points_stream
    {
        // The worker's quiesce waits for its own stream; the upload stream may still be
        // reading the staging buffer.
        let _ = s.synchronize();
    }
    result
}

/// Device addresses of the areas of `Plan` in the worker's device buffer, and the sizes
/// the kernels take as 32-bit integers.
struct DeviceAreas {
    scalars: u64,
    starts_in: u64,
    points: u64,
    counts: u64,
    starts: u64,
    cursor: u64,
    tile_sums: u64,
    sorted: u64,
    buckets: u64,
    spills: u64,
    spill_buckets: u64,
    partials: u64,
    msms: u32,
    buckets_len: u32,
    tiles: u32,
}

impl DeviceAreas {
    fn new(base: u64, plan: &Plan) -> DeviceAreas {
        let at = |off: usize| base + off as u64;
        DeviceAreas {
            scalars: at(plan.off.scalars),
            starts_in: at(plan.off.starts_in),
            points: at(plan.off.points),
            counts: at(plan.off.counts),
            starts: at(plan.off.starts),
            cursor: at(plan.off.cursor),
            tile_sums: at(plan.off.tile_sums),
            sorted: at(plan.off.sorted),
            buckets: at(plan.off.buckets),
            spills: at(plan.off.spills),
            spill_buckets: at(plan.off.spill_buckets),
            partials: at(plan.off.partials),
            msms: plan.msms as u32,
            buckets_len: plan.buckets as u32,
            tiles: plan.tiles as u32,
        }
    }
}

/// The arguments msm_histogram and msm_scatter both begin with: the digits of the chunk
/// of `count` points from global index `first`, in the batch's windows.
struct DigitArgs {
    scalars: u64,
    first: u32,
    count: u32,
    starts_in: u64,
    msms: u32,
    c: u32,
    windows: u32,
    narrow: u32,
}

impl DigitArgs {
    fn push<'a>(&'a self, launch: &mut LaunchArgs<'a>) {
        launch
            .arg(&self.scalars)
            .arg(&self.first)
            .arg(&self.count)
            .arg(&self.starts_in)
            .arg(&self.msms)
            .arg(&self.c)
            .arg(&self.windows)
            .arg(&self.narrow);
    }
}

/// One chunk of the batch (the `index`th): `count` points from global index `first`.
#[derive(Clone, Copy)]
struct Chunk {
    index: usize,
    first: usize,
    count: usize,
}

/// One call's launch sequence on the worker: its plan, streams, device areas and kernels.
struct Launches<'a> {
    plan: &'a Plan,
    k: &'a MsmKernels,
    d: DeviceAreas,
    stream: Arc<CudaStream>,
    copy: Arc<CudaStream>,
    staging: Staging,
    marks: StreamMarks,
}

impl<'a> Launches<'a> {
    /// Sizes the worker's MSM buffers for `plan` (`out_bytes` of partial sums), binds the
    /// context, and marks the call's start on the worker's stream.
    fn new(
        gpu: &'a Device,
        w: &mut Worker,
        plan: &'a Plan,
        staging: Staging,
        out_bytes: usize,
    ) -> Result<Launches<'a>, GpuError> {
        w.msm.host_in.ensure(plan.off.in_bytes)?;
        w.msm.host_out.ensure(out_bytes)?;
        w.msm.device.ensure(plan.off.device_bytes)?;
        let copy = w.msm.points_stream()?;
        gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;
        let mut run = Launches {
            plan,
            k: &gpu.kernels.msm,
            d: DeviceAreas::new(w.msm.device.ptr(), plan),
            stream: w.stream.clone(),
            copy,
            staging,
            // Timing events (GPU_CRYPTO_MSM_PROFILE=1 only).
            marks: StreamMarks::new(profile_enabled()),
        };
        run.marks.mark(&run.stream, "start");
        Ok(run)
    }

    /// Per chunk: stage on the host (the GPU meanwhile works on the chunk before), upload
    /// on the copy stream, then on the worker's stream: wait for the upload, sort the
    /// chunk's digits into buckets, add its points to the buckets. Returns the host
    /// seconds from `t_start` to the last chunk staged.
    ///
    /// # Safety
    /// `area` must be the pinned input buffer, holding `plan`'s input areas, and nothing
    /// else may access it until the worker's stream is synchronised.
    unsafe fn stream_chunks(
        &mut self,
        pieces: &[Piece<'_>],
        chunks: &[(usize, usize, usize, usize)],
        area: usize,
        t_start: std::time::Instant,
    ) -> Result<f64, GpuError> {
        let plan = self.plan;
        let mut t_staged = 0.0;
        for (index, &(p0, p1, first, count)) in chunks.iter().enumerate() {
            let chunk = Chunk {
                index,
                first,
                count,
            };
            // SAFETY: the chunk's scalar and point ranges lie in the pinned buffer's areas
            // of `plan` (the caller's contract); no copy reads them before their upload is
            // issued below.
            unsafe {
                stage(
                    &pieces[p0..p1],
                    count,
                    self.staging,
                    Area(area + plan.off.scalars),
                    Area(area + plan.off.points),
                );
            }
            t_staged = t_start.elapsed().as_secs_f64();
            // SAFETY: the chunk's ranges were fully written just above.
            unsafe { self.upload_chunk(area, chunk)? };
            self.sort_chunk(chunk)?;
            self.accumulate_chunk(chunk)?;
        }
        Ok(t_staged)
    }
}

/// The batch's MSMs: the buffers sized for the plan, then per chunk staged, uploaded,
/// sorted and accumulated, then reduced, downloaded and combined on the host.
fn run_staged(
    gpu: &Device,
    w: &mut Worker,
    msms: &[MsmInput<'_>],
) -> Result<Vec<G1Projective>, GpuError> {
    let (reduce_wave, accumulate_wave) = wave_threads(gpu);
    let plan = Plan::new(msms, reduce_wave, accumulate_wave)?;
    if plan.n == 0 {
        return Ok(vec![G1Projective::identity(); msms.len()]);
    }
    if plan.msms * plan.windows as usize > MAX_GRID_Y {
        return Err(GpuError::InputTooLarge(format!(
            "{} MSMs of {} windows in one launch",
            plan.msms, plan.windows
        )));
    }
    let t_start = std::time::Instant::now();
    let staging = staging(gpu, w)?;
    let out_bytes = JACOBIAN_BYTES * plan.partials;
    let mut run = Launches::new(gpu, w, &plan, staging, out_bytes)?;

    let host = w.msm.host_in.slice_mut(plan.off.in_bytes);
    let pieces = pieces(msms);
    let chunks = chunks(
        &pieces,
        plan.chunk_target.min(PIPELINE_FIRST_CHUNK.max(plan.n / 64)),
        plan.chunk_target,
    );
    run.upload_starts(msms, host)?;
    // From here on the staging buffer is only reached through this address (disjoint
    // pieces, written by rayon's workers), never through `host` again.
    let area = host.as_mut_ptr() as usize;
    run.clear(out_bytes)?;
    // SAFETY: `area` is the pinned input, sized for `plan` above and reached by nothing
    // else until the synchronisation below.
    let t_staged = unsafe { run.stream_chunks(&pieces, &chunks, area, t_start)? };
    run.reduce_and_download(w.msm.host_out.slice_mut(out_bytes))?;
    run.stream.synchronize().map_err(driver("g1 msm"))?;
    let t_gpu = t_start.elapsed().as_secs_f64();
    let out = combine_partials(w.msm.host_out.slice(out_bytes), &plan);
    let t_end = t_start.elapsed().as_secs_f64();
    let times = Times {
        staged: t_staged,
        gpu: t_gpu,
        end: t_end,
    };
    log_call(&plan, chunks.len(), staging, times, &run.marks);
    out
}

/// Host seconds from a call's start: last chunk staged, GPU done, windows combined.
#[derive(Clone, Copy)]
struct Times {
    staged: f64,
    gpu: f64,
    end: f64,
}

/// The call's debug log line, and its profile on standard error when
/// `GPU_CRYPTO_MSM_PROFILE=1`.
fn log_call(plan: &Plan, chunks: usize, staging: Staging, t: Times, marks: &StreamMarks) {
    tracing::debug!(
        points = plan.n,
        msms = plan.msms,
        window_bits = plan.c,
        chunks,
        ?staging,
        staged_ms = t.staged * 1e3,
        gpu_done_ms = t.gpu * 1e3,
        total_ms = t.end * 1e3,
        "g1 msm"
    );
    if marks.enabled() {
        eprintln!(
            "msm profile: {} points in {} MSMs, c={}, {} chunk(s), {:?}: host ms from the call's start: last chunk staged {:.3}, GPU done {:.3}, combined {:.3}; GPU ms: {}",
            plan.n,
            plan.msms,
            plan.c,
            chunks,
            staging,
            t.staged * 1e3,
            t.gpu * 1e3,
            t.end * 1e3,
            marks.report()
        );
    }
}

impl Launches<'_> {
    /// Writes the MSM start table into the staging buffer and uploads it, first, on the
    /// copy stream.
    fn upload_starts(&self, msms: &[MsmInput<'_>], host: &mut [u8]) -> Result<(), GpuError> {
        let plan = self.plan;
        let mut start = 0u32;
        for (b, m) in msms.iter().enumerate() {
            host[plan.off.starts_in + 4 * b..plan.off.starts_in + 4 * b + 4]
                .copy_from_slice(&start.to_le_bytes());
            start += m.points.len() as u32;
        }
        let last = plan.off.starts_in + 4 * msms.len();
        host[last..last + 4].copy_from_slice(&start.to_le_bytes());
        // SAFETY: device ranges follow `plan` inside `device` (ensured by the caller); the
        // host range is not written again before the final synchronisation.
        unsafe {
            result::memcpy_htod_async(
                self.d.starts_in,
                &host[plan.off.starts_in..last + 4],
                self.copy.cu_stream(),
            )
            .map_err(driver("upload MSM offsets"))?;
        }
        Ok(())
    }

    /// Poisons the partial sums and clears the buckets, on the worker's stream.
    fn clear(&self, out_bytes: usize) -> Result<(), GpuError> {
        let cu = self.stream.cu_stream();
        // SAFETY: the ranges lie inside `device` (Plan's offsets, ensured by the caller).
        unsafe {
            // Poison: an unwritten partial sum is not a canonical field element.
            result::memset_d8_async(self.d.partials, 0xff, out_bytes, cu)
                .map_err(driver("poison partial sums"))?;
            // Every bucket starts as the identity (all zero): msm_accumulate writes only the
            // buckets that have entries.
            result::memset_d8_async(self.d.buckets, 0, BUCKET_BYTES * self.plan.buckets, cu)
                .map_err(driver("clear buckets"))?;
        }
        Ok(())
    }

    /// Uploads the chunk's scalars and points on the copy stream; the worker's stream
    /// waits for them.
    ///
    /// # Safety
    /// The chunk's ranges of the staging buffer at `area` must be fully written and not
    /// written again before the final synchronisation.
    unsafe fn upload_chunk(&mut self, area: usize, chunk: Chunk) -> Result<(), GpuError> {
        let plan = self.plan;
        let (first, count) = (chunk.first, chunk.count);
        let srange = plan.off.scalars + SCALAR_BYTES * first
            ..plan.off.scalars + SCALAR_BYTES * (first + count);
        let prange =
            plan.off.points + POINT_BYTES * first..plan.off.points + POINT_BYTES * (first + count);
        let ccu = self.copy.cu_stream();
        // SAFETY: the ranges were fully written (the caller's contract; the chunk's pieces
        // are contiguous in global order); the device ranges mirror them.
        unsafe {
            let src = std::slice::from_raw_parts((area + srange.start) as *const u8, srange.len());
            result::memcpy_htod_async(self.d.scalars + (SCALAR_BYTES * first) as u64, src, ccu)
                .map_err(driver("upload scalars"))?;
            let src = std::slice::from_raw_parts((area + prange.start) as *const u8, prange.len());
            result::memcpy_htod_async(self.d.points + (POINT_BYTES * first) as u64, src, ccu)
                .map_err(driver("upload points"))?;
        }
        self.stream
            .join(&self.copy)
            .map_err(driver("wait for the upload"))?;
        self.marks
            .mark(&self.stream, format_args!("wait{}", chunk.index));
        Ok(())
    }

    /// Converts the chunk's scalars (or points) on the GPU, then sorts its digits into
    /// buckets: histogram, the three-pass scan of the counts, scatter.
    fn sort_chunk(&mut self, chunk: Chunk) -> Result<(), GpuError> {
        let (plan, k, d, stream) = (self.plan, self.k, &self.d, &self.stream);
        let (first, count) = (chunk.first, chunk.count);
        let count32 = count as u32;
        let d_chunk_scalars = d.scalars + (SCALAR_BYTES * first) as u64;
        let d_chunk_points = d.points + (POINT_BYTES * first) as u64;
        let digits = DigitArgs {
            scalars: d.scalars,
            first: first as u32,
            count: count32,
            starts_in: d.starts_in,
            msms: d.msms,
            c: plan.c,
            windows: plan.windows,
            narrow: plan.narrow,
        };
        // SAFETY: every device range lies inside `device` (Plan's offsets, ensured by the
        // caller); kernel arguments match the kernels' signatures. The sort buffers of the
        // chunk before are consumed by its accumulation, earlier on the same stream.
        unsafe {
            match self.staging {
                Staging::Montgomery(_) => {
                    stream
                        .launch_builder(&k.scalars_from_mont)
                        .arg(&d_chunk_scalars)
                        .arg(&count32)
                        .launch(launch_1d(count, 256))
                        .map_err(driver("launch msm_scalars_from_mont"))?;
                }
                Staging::Encoded => {
                    stream
                        .launch_builder(&k.load_points)
                        .arg(&d_chunk_points)
                        .arg(&count32)
                        .launch(launch_1d(count, 128))
                        .map_err(driver("launch msm_load_points"))?;
                }
            }
            result::memset_d8_async(d.counts, 0, 4 * plan.buckets, stream.cu_stream())
                .map_err(driver("clear counts"))?;
            let mut histogram = stream.launch_builder(&k.histogram);
            digits.push(&mut histogram);
            histogram
                .arg(&d.counts)
                .launch(launch_1d(count, 256))
                .map_err(driver("launch msm_histogram"))?;
            stream
                .launch_builder(&k.scan_tiles)
                .arg(&d.counts)
                .arg(&d.buckets_len)
                .arg(&d.starts)
                .arg(&d.tile_sums)
                .launch(blocks(d.tiles, 256))
                .map_err(driver("launch msm_scan_tiles"))?;
            stream
                .launch_builder(&k.scan_tile_sums)
                .arg(&d.tile_sums)
                .arg(&d.tiles)
                .launch(blocks(1, 256))
                .map_err(driver("launch msm_scan_tile_sums"))?;
            stream
                .launch_builder(&k.scan_add)
                .arg(&d.starts)
                .arg(&d.cursor)
                .arg(&d.buckets_len)
                .arg(&d.tile_sums)
                .launch(launch_1d(plan.buckets, 256))
                .map_err(driver("launch msm_scan_add"))?;
            let mut scatter = stream.launch_builder(&k.scatter);
            digits.push(&mut scatter);
            scatter
                .arg(&d.cursor)
                .arg(&d.sorted)
                .launch(launch_1d(count, 256))
                .map_err(driver("launch msm_scatter"))?;
        }
        self.marks
            .mark(&self.stream, format_args!("sort{}", chunk.index));
        Ok(())
    }

    /// Adds the chunk's sorted points into the buckets (resuming them after the first
    /// chunk), then merges the buckets cut across accumulation slices.
    fn accumulate_chunk(&mut self, chunk: Chunk) -> Result<(), GpuError> {
        let (plan, k, d, stream) = (self.plan, self.k, &self.d, &self.stream);
        let resume = u32::from(chunk.index > 0);
        let (slice, threads) = plan.slices(chunk.count);
        // SAFETY: as for the sort; the sorted entries are the chunk's, written before on
        // the same stream.
        unsafe {
            stream
                .launch_builder(&k.accumulate)
                .arg(&d.points)
                .arg(&d.sorted)
                .arg(&d.starts)
                .arg(&d.cursor)
                .arg(&d.buckets_len)
                .arg(&slice)
                .arg(&resume)
                .arg(&d.buckets)
                .arg(&d.spills)
                .arg(&d.spill_buckets)
                .launch(launch_1d(threads, ACCUMULATE_BLOCK))
                .map_err(driver("launch msm_accumulate"))?;
        }
        self.marks
            .mark(&self.stream, format_args!("accumulate{}", chunk.index));
        // SAFETY: as above.
        unsafe {
            self.stream
                .launch_builder(&k.merge)
                .arg(&d.cursor)
                .arg(&d.buckets_len)
                .arg(&slice)
                .arg(&d.spill_buckets)
                .arg(&d.spills)
                .arg(&d.buckets)
                .launch(launch_1d(threads, 128))
                .map_err(driver("launch msm_merge"))?;
        }
        self.marks
            .mark(&self.stream, format_args!("merge{}", chunk.index));
        Ok(())
    }

    /// Sums each window's buckets (msm_reduce) and downloads the partial sums into `host`.
    fn reduce_and_download(&mut self, host: &mut [u8]) -> Result<(), GpuError> {
        let (plan, d) = (self.plan, &self.d);
        // SAFETY: as for the chunks; the host output range is not read before the
        // synchronisation.
        unsafe {
            self.stream
                .launch_builder(&self.k.reduce)
                .arg(&d.buckets)
                .arg(&plan.half)
                .arg(&plan.seg_len)
                .arg(&d.partials)
                .launch(LaunchConfig {
                    grid_dim: (plan.blocks_per_window, plan.msms as u32 * plan.windows, 1),
                    block_dim: (plan.reduce_block, 1, 1),
                    shared_mem_bytes: 0,
                })
                .map_err(driver("launch msm_reduce"))?;
            self.marks.mark(&self.stream, "reduce");
            result::memcpy_dtoh_async(host, d.partials, self.stream.cu_stream())
                .map_err(driver("download partial sums"))?;
        }
        self.marks.mark(&self.stream, "download");
        Ok(())
    }
}

/// Each MSM's result from its windows' partial sums (MSMs in parallel when there are
/// several, else the windows of the one MSM).
fn combine_partials(partials: &[u8], plan: &Plan) -> Result<Vec<G1Projective>, GpuError> {
    let per_msm = JACOBIAN_BYTES * plan.windows as usize * plan.blocks_per_window as usize;
    if plan.msms > 1 {
        partials
            .par_chunks_exact(per_msm)
            .map(|chunk| combine_windows(chunk, plan, false))
            .collect()
    } else {
        partials
            .chunks_exact(per_msm)
            .map(|chunk| combine_windows(chunk, plan, true))
            .collect()
    }
}

/// `GPU_CRYPTO_MSM_PROFILE=1` prints each call's host/GPU time split (bench diagnostics).
pub(super) fn profile_enabled() -> bool {
    std::env::var_os("GPU_CRYPTO_MSM_PROFILE").is_some_and(|v| v == "1")
}

/// The 48 little-endian bytes of a Montgomery-form field element from the GPU as blst's
/// (also Montgomery, R = 2^384); `None` unless canonical (below p), which also catches an
/// unwritten (poisoned) result.
pub(super) fn fp_from_gpu(b: &[u8]) -> Option<blst_fp> {
    let mut l = [0u64; 6];
    for (limb, bytes) in l.iter_mut().zip(b.chunks_exact(8)) {
        *limb = u64::from_le_bytes(bytes.try_into().ok()?);
    }
    // l < p, comparing from the most significant limb.
    let below =
        l.iter().rev().cmp(crate::field::MODULUS_LIMBS.iter().rev()) == std::cmp::Ordering::Less;
    below.then_some(blst_fp { l })
}

pub(super) fn jacobian_from_gpu(b: &[u8]) -> Result<blst_p1, GpuError> {
    let bad = || GpuError::BadOutput("MSM partial sum is not a canonical field element".into());
    Ok(blst_p1 {
        x: fp_from_gpu(&b[0..48]).ok_or_else(bad)?,
        y: fp_from_gpu(&b[48..96]).ok_or_else(bad)?,
        z: fp_from_gpu(&b[96..144]).ok_or_else(bad)?,
    })
}

/// The sum of one window's partial sums (one per reduction block).
fn window_sum(window: &[u8]) -> Result<blst_p1, GpuError> {
    let mut acc = blst_p1::default();
    for part in window.chunks_exact(JACOBIAN_BYTES) {
        let p = jacobian_from_gpu(part)?;
        // SAFETY: blst point arithmetic on initialised values; in-place use is allowed, and
        // add_or_double handles equal inputs and the identity.
        unsafe { blst::blst_p1_add_or_double(&mut acc, &acc, &p) };
    }
    Ok(acc)
}

/// sum over windows w of 2^(offset of w) * (window w's sum), by Horner from the top. The
/// window sums are independent: `parallel` computes them on all cores (one big MSM);
/// batches run one MSM per core instead.
fn combine_windows(chunk: &[u8], plan: &Plan, parallel: bool) -> Result<G1Projective, GpuError> {
    let per_window = JACOBIAN_BYTES * plan.blocks_per_window as usize;
    let sums: Vec<blst_p1> = if parallel && plan.blocks_per_window > 1 {
        chunk
            .par_chunks_exact(per_window)
            .map(window_sum)
            .collect::<Result<_, _>>()?
    } else {
        chunk
            .chunks_exact(per_window)
            .map(window_sum)
            .collect::<Result<_, _>>()?
    };
    let mut acc = blst_p1::default();
    for (w, sum) in sums.iter().enumerate().rev() {
        // Window w starts window_width(w) bits below window w + 1.
        for _ in 0..window_width(w as u32, plan.c) {
            // SAFETY: blst point arithmetic on initialised values; in-place use is allowed.
            unsafe { blst::blst_p1_double(&mut acc, &acc) };
        }
        // SAFETY: as above.
        unsafe { blst::blst_p1_add_or_double(&mut acc, &acc, sum) };
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
        let plan = Plan::new(
            &vec![one; 32],
            REDUCE_DEFAULT_THREADS,
            ACCUMULATE_DEFAULT_THREADS,
        )
        .expect("32 MSMs");
        assert_eq!(plan.c, 8);
        let plan = Plan::new(
            &vec![one; 20_000],
            REDUCE_DEFAULT_THREADS,
            ACCUMULATE_DEFAULT_THREADS,
        )
        .expect("20k MSMs");
        assert!(plan.c < 8, "c={}", plan.c);
        assert!(plan.buckets * BUCKET_BYTES <= MAX_BUCKET_BYTES);
        assert!(matches!(
            Plan::new(
                &vec![one; 1_000_000],
                REDUCE_DEFAULT_THREADS,
                ACCUMULATE_DEFAULT_THREADS
            ),
            Err(GpuError::InputTooLarge(_))
        ));
    }

    /// The host reference of msm_scalars_from_mont inverts ic_bls12_381's raw form, and
    /// the raw form is what this crate version keeps (or the GPU path uses to_bytes).
    #[test]
    fn raw_scalar_limbs_convert_to_canonical_bytes() {
        use ff::Field;
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
        assert!(raw_scalars_usable(), "ic_bls12_381 Scalar layout changed");
        for _ in 0..1000 {
            let s = Scalar::random(&mut rng);
            assert_eq!(scalar_from_montgomery(scalar_limbs(&s)), s.to_bytes());
        }
        let minus_one = -Scalar::ONE;
        assert_eq!(scalar_from_montgomery(scalar_limbs(&minus_one)), R_MINUS_1);
    }

    #[test]
    fn montgomery_bytes_of_one_is_r_mod_p() {
        let mut one = [0u8; 48];
        one[47] = 1;
        let m = montgomery_bytes(&one);
        // R mod p = 0x15f65ec3...0002fffd (kernels' FP_ONE), little-endian bytes.
        assert_eq!(&m[..8], &0x7609_0000_0002_fffd_u64.to_le_bytes());
        assert_eq!(&m[40..], &0x15f6_5ec3_fa80_e493_u64.to_le_bytes());
    }

    /// Pipeline chunks cover every point once, in order, end on piece boundaries (never
    /// inside a piece, so never inside an MSM's piece) and reach the target size.
    #[test]
    fn chunks_cover_the_batch_in_order() {
        let g = G1Affine::generator();
        let points = vec![g; 300_000];
        let scalars = vec![Scalar::one(); 300_000];
        let sizes = [0usize, 100_000, 5, 0, 170_000, 29_995];
        let mut at = 0;
        let msms: Vec<MsmInput<'_>> = sizes
            .iter()
            .map(|&len| {
                let m = MsmInput {
                    points: &points[at..at + len],
                    scalars: &scalars[at..at + len],
                };
                at += len;
                m
            })
            .collect();
        let pieces = pieces(&msms);
        assert!(
            pieces
                .iter()
                .all(|p| !p.points.is_empty() && p.points.len() <= PIECE)
        );
        for (head, target) in [
            (1usize, 1usize),
            (PIECE, PIECE),
            (1 << 16, 50_000),
            (1 << 16, 1 << 18),
            (1 << 30, 1 << 30),
        ] {
            let c = chunks(&pieces, head, target);
            let mut next = 0;
            for (i, &(p0, p1, first, count)) in c.iter().enumerate() {
                let want = if i == 0 { head } else { target };
                assert_eq!(first, next);
                assert_eq!(
                    count,
                    pieces[p0..p1].iter().map(|p| p.points.len()).sum::<usize>()
                );
                assert!(i + 1 == c.len() || count >= want);
                assert!(count < want.max(1) + PIECE);
                next += count;
            }
            assert_eq!(next, 300_000);
        }
        let plan =
            Plan::new(&msms, REDUCE_DEFAULT_THREADS, ACCUMULATE_DEFAULT_THREADS).expect("plan");
        assert_eq!(plan.chunk_target, 1 << 18);
        let small = Plan::new(
            &msms[..2],
            REDUCE_DEFAULT_THREADS,
            ACCUMULATE_DEFAULT_THREADS,
        )
        .expect("plan");
        assert_eq!(small.chunk_target, 100_000);
    }

    /// Accumulation slices: equal slices that cover a chunk's largest possible number of
    /// entries with at most one wave of threads, never fewer than MIN_SLICE entries each.
    #[test]
    fn accumulation_slices_cover_the_entries_within_one_wave() {
        let g = G1Affine::generator();
        let points = vec![g; 5000];
        let scalars = vec![Scalar::one(); 5000];
        let m = MsmInput {
            points: &points,
            scalars: &scalars,
        };
        let plan = Plan::new(&[m], REDUCE_DEFAULT_THREADS, 1000).expect("plan");
        for count in [1usize, 3, 100, 4096, 5000, 1 << 18, (1 << 22) + 7] {
            let (slice, threads) = plan.slices(count);
            let entries = count * plan.windows as usize;
            assert!(slice as usize >= MIN_SLICE);
            assert!(threads * slice as usize >= entries, "count {count}");
            assert!((threads - 1) * (slice as usize) < entries, "count {count}");
            assert!(threads <= plan.accumulate_threads, "count {count}");
        }
    }

    #[test]
    fn window_bits_grow_with_size_within_bounds() {
        assert_eq!(window_bits(1), 8);
        assert_eq!(window_bits(448), 8);
        assert_eq!(window_bits(1 << 12), 10);
        assert_eq!(window_bits(1 << 16), 14);
        assert_eq!(window_bits(1 << 18), 14);
        assert_eq!(window_bits((1 << 18) + 1), 14);
        assert_eq!(window_bits(1 << 19), 14);
        assert_eq!(window_bits((1 << 19) + 1), 16);
        assert_eq!(window_bits(1 << 24), 16);
    }
}
