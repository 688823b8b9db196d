//! Host side of batch G1 decompression: the batch moves in segments, each staged into
//! pinned memory, uploaded, decompressed and downloaded on one of two streams in turn, so
//! one segment's copies and staging overlap another's kernel (and the last wave of one
//! kernel overlaps the first of the next), while the host decodes finished segments.
//! Batches of up to `LATENCY_KERNEL_MAX_POINTS` run the latency kernel instead of the
//! throughput one.

use super::memory::{DeviceBuffer, PinnedBuffer, align_device, driver};
use super::{GpuBackend, GpuError, Worker};
use cudarc::driver::{CudaContext, CudaStream, LaunchConfig, PushKernelArg, result, sys};
use gpu_crypto_api::DecodeError;
use ic_bls12_381::G1Affine;
use rayon::prelude::*;
use std::sync::{Arc, Mutex};

const THREADS: u32 = 128;
/// The latency kernel's block: one point on 2 warps (kernels/ops/g1_decompress_latency.cu).
const LATENCY_THREADS: u32 = 64;

/// Batches of at most this many points run the latency kernel. Both kernels' time is one
/// point's latency while the batch leaves schedulers idle; the latency kernel's block
/// occupies 2 warps per point (the throughput kernel: 4 per 128), so once the batch fills
/// the schedulers it falls behind. Measured end to end on the H200 (docs/benchmarks.md,
/// docs/results/decompress-small-batch-h200): latency kernel 1.422 / 1.889 ms at 3,072 /
/// 4,096 points against 1.582 / 1.636 ms for the throughput kernel.
pub const LATENCY_KERNEL_MAX_POINTS: usize = 3072;

/// Which kernel decompresses a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecompressKernel {
    /// kernels/ops/g1_decompress_latency.cu: one point over two warps (square root on one,
    /// the subgroup test beside it), in a residue number system.
    Latency,
    /// kernels/ops/g1_decompress.cu: one thread per point.
    Throughput,
}

impl DecompressKernel {
    /// The kernel the backend uses for a batch of `points`.
    pub fn for_batch(points: usize) -> DecompressKernel {
        if points <= LATENCY_KERNEL_MAX_POINTS {
            DecompressKernel::Latency
        } else {
            DecompressKernel::Throughput
        }
    }

    pub(crate) fn function(self, gpu: &GpuBackend) -> &cudarc::driver::CudaFunction {
        match self {
            DecompressKernel::Latency => &gpu.kernels.g1_decompress_latency,
            DecompressKernel::Throughput => &gpu.kernels.g1_decompress,
        }
    }

    /// Launch shape for `points` points.
    pub(crate) fn config(self, points: u32) -> LaunchConfig {
        let (grid, block) = match self {
            DecompressKernel::Latency => (points, LATENCY_THREADS),
            DecompressKernel::Throughput => (points.div_ceil(THREADS), THREADS),
        };
        LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        }
    }
}

impl GpuBackend {
    /// [`GpuBackend::g1_decompress`] with the kernel chosen by the caller instead of by the
    /// batch size (tests and benchmarks compare both kernels at every size).
    pub fn g1_decompress_with(
        &self,
        points: &[[u8; 48]],
        kernel: DecompressKernel,
    ) -> Result<Vec<Result<G1Affine, DecodeError>>, GpuError> {
        if points.is_empty() {
            return Ok(Vec::new());
        }
        let mut w = self.worker();
        let result = run_with(self, &mut w, points, kernel);
        if result.is_err() {
            w.quiesce();
        }
        result
    }
}
/// Poison of the code bytes: not a valid code, so an unwritten item is caught.
pub(crate) const CODE_POISON: u8 = 0xff;
/// Items above which the host-side conversion runs on all cores: about 0.3 us per item
/// (two field elements into Montgomery form), so 448 items took 0.15 ms on one core.
pub(crate) const PARALLEL_CONVERT: usize = 128;

/// A worker's decompression buffers, shared by the G1 and G2 pipelines (one call at a
/// time per worker).
pub(crate) struct DecompressBuffers {
    pub(crate) host_in: PinnedBuffer,
    pub(crate) host_out: PinnedBuffer,
    pub(crate) device: DeviceBuffer,
    /// The second stream of the segment pipeline (the worker's stream is the first);
    /// created on the first batch of more than one segment.
    pub(crate) second: Option<Arc<CudaStream>>,
}

impl DecompressBuffers {
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> DecompressBuffers {
        DecompressBuffers {
            host_in: PinnedBuffer::new(ctx),
            host_out: PinnedBuffer::new(ctx),
            device: DeviceBuffer::new(ctx),
            second: None,
        }
    }
}

pub(crate) fn convert(
    code: u8,
    encoding: &[u8],
) -> Result<Result<G1Affine, DecodeError>, GpuError> {
    if code == 0 {
        let bytes: &[u8; 96] = encoding
            .try_into()
            .map_err(|_| GpuError::BadOutput("short encoding".into()))?;
        // The GPU did every check from_compressed does; only re-read its output.
        Option::<G1Affine>::from(G1Affine::from_uncompressed_unchecked(bytes))
            .map(Ok)
            .ok_or_else(|| GpuError::BadOutput("kernel returned a malformed encoding".into()))
    } else {
        DecodeError::from_code(code).map(Err).ok_or_else(|| {
            GpuError::BadOutput(format!("result code {code:#04x} (unwritten or unknown)"))
        })
    }
}

/// Points per pipeline segment: the host decodes segment k's results while the GPU works
/// on the segments after it. Small batches are one segment (no extra synchronisation).
/// 2^16 points are about two waves of the kernel on an H200 (132 SMs x 256 threads); the
/// two streams let the next segment's kernel fill the SMs that the current one's last
/// wave leaves idle, and the last segment's host decoding (after the GPU is done) is short.
const SEGMENT: usize = 1 << 16;

pub(crate) fn run(
    gpu: &GpuBackend,
    w: &mut Worker,
    points: &[[u8; 48]],
) -> Result<Vec<Result<G1Affine, DecodeError>>, GpuError> {
    run_with(gpu, w, points, DecompressKernel::for_batch(points.len()))
}

fn run_with(
    gpu: &GpuBackend,
    w: &mut Worker,
    points: &[[u8; 48]],
    kernel: DecompressKernel,
) -> Result<Vec<Result<G1Affine, DecodeError>>, GpuError> {
    let result = run_segments(gpu, w, points, kernel);
    if result.is_err() {
        // The caller quiesces the worker's stream; the second one is ours to drain.
        if let Some(s) = &w.dec.second {
            let _ = s.synchronize();
        }
    }
    result
}

fn run_segments(
    gpu: &GpuBackend,
    w: &mut Worker,
    points: &[[u8; 48]],
    kernel: DecompressKernel,
) -> Result<Vec<Result<G1Affine, DecodeError>>, GpuError> {
    let n = points.len();
    if n == 0 {
        return Ok(Vec::new());
    }
    // Device offsets are 64-bit, but the kernel indexes points with 32-bit integers.
    u32::try_from(n).map_err(|_| GpuError::InputTooLarge(format!("{n} points in one batch")))?;
    let in_bytes = 48 * n;
    let enc_bytes = 96 * n;
    let out_bytes = enc_bytes + n;
    let out_offset = align_device(in_bytes);
    w.dec.host_in.ensure(in_bytes)?;
    w.dec.host_out.ensure(out_bytes)?;
    w.dec.device.ensure(out_offset + out_bytes)?;

    let d_in = w.dec.device.ptr();
    let d_out = d_in + out_offset as u64;
    let d_codes = d_out + enc_bytes as u64;
    gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;

    // Stage, then enqueue, every segment (upload, poison, launch, download, event) on the
    // two streams in turn; then decode the segments on the host in order as their events
    // complete. Staging segment k+1 overlaps the GPU's work on segment k.
    let segments: Vec<(usize, usize)> = (0..n)
        .step_by(SEGMENT)
        .map(|start| (start, (n - start).min(SEGMENT)))
        .collect();
    let streams = if segments.len() > 1 {
        let second = match &w.dec.second {
            Some(s) => s.clone(),
            None => {
                let s = gpu.ctx.new_stream().map_err(driver("cuStreamCreate"))?;
                w.dec.second = Some(s.clone());
                s
            }
        };
        [w.stream.clone(), second]
    } else {
        [w.stream.clone(), w.stream.clone()]
    };
    let mut done = Vec::with_capacity(segments.len());
    for (k, &(start, len)) in segments.iter().enumerate() {
        let stream = &streams[k % 2];
        let staged = &mut w.dec.host_in.slice_mut(in_bytes)[48 * start..48 * (start + len)];
        let src = points[start..start + len].as_flattened();
        if len >= PARALLEL_CONVERT {
            staged
                .par_chunks_mut(48 * 4096)
                .zip(src.par_chunks(48 * 4096))
                .for_each(|(dst, src)| dst.copy_from_slice(src));
        } else {
            staged.copy_from_slice(src);
        }
        let len32 = len as u32; // <= SEGMENT
        let seg_in = d_in + (48 * start) as u64;
        let seg_out = d_out + (96 * start) as u64;
        let seg_codes = d_codes + start as u64;
        // SAFETY: device ranges lie inside `device` (ensured above); host ranges inside the
        // pinned buffers, which stay untouched by the host until the segment's event (or
        // the stream) has completed.
        unsafe {
            result::memcpy_htod_async(
                seg_in,
                &w.dec.host_in.slice(in_bytes)[48 * start..48 * (start + len)],
                stream.cu_stream(),
            )
            .map_err(driver("upload points"))?;
            if segments.len() == 1 {
                // Encodings and codes are contiguous: one memset poisons both (an
                // unwritten code is 0xff, which no kernel writes).
                result::memset_d8_async(seg_out, CODE_POISON, 97 * len, stream.cu_stream())
                    .map_err(driver("poison output"))?;
            } else {
                result::memset_d8_async(seg_out, 0xa5, 96 * len, stream.cu_stream())
                    .map_err(driver("poison output"))?;
                result::memset_d8_async(seg_codes, CODE_POISON, len, stream.cu_stream())
                    .map_err(driver("poison codes"))?;
            }
            stream
                .launch_builder(kernel.function(gpu))
                .arg(&seg_in)
                .arg(&len32)
                .arg(&seg_out)
                .arg(&seg_codes)
                .launch(kernel.config(len32))
                .map_err(driver("launch g1_decompress"))?;
            let host_out = w.dec.host_out.slice_mut(out_bytes);
            if segments.len() == 1 {
                // One download of encodings and codes (contiguous on both sides).
                result::memcpy_dtoh_async(host_out, d_out, stream.cu_stream())
                    .map_err(driver("download results"))?;
            } else {
                let (host_enc, host_codes) = host_out.split_at_mut(enc_bytes);
                result::memcpy_dtoh_async(
                    &mut host_enc[96 * start..96 * (start + len)],
                    seg_out,
                    stream.cu_stream(),
                )
                .map_err(driver("download results"))?;
                result::memcpy_dtoh_async(
                    &mut host_codes[start..start + len],
                    seg_codes,
                    stream.cu_stream(),
                )
                .map_err(driver("download codes"))?;
            }
        }
        done.push(
            gpu.ctx
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
                .and_then(|e| e.record(stream).map(|_| e))
                .map_err(driver("record segment event"))?,
        );
    }

    // A malformed kernel output fails the whole call; it is noted rather than collected
    // item by item so the results are written once, straight into their final vector.
    let bad_output: Mutex<Option<GpuError>> = Mutex::new(None);
    let decode = |(&code, encoding): (&u8, &[u8])| match convert(code, encoding) {
        Ok(item) => item,
        Err(e) => {
            let mut slot = bad_output.lock().unwrap_or_else(|p| p.into_inner());
            slot.get_or_insert(e);
            Err(DecodeError::NotCompressed) // discarded with the whole vector below
        }
    };
    let mut results = Vec::with_capacity(n);
    if let [event] = &done[..]
        && n >= PARALLEL_CONVERT
    {
        // One segment: the host threads start now, while the kernel runs, and each waits
        // for the event itself before decoding its share, so waking the pool (about
        // 0.1 ms, as long as decoding 448 items on one core) overlaps the GPU's work.
        let base = w.dec.host_out.slice(out_bytes).as_ptr() as usize;
        let share = n.div_ceil(rayon::current_num_threads()).max(16);
        let parts: Vec<Result<Vec<_>, GpuError>> = (0..n.div_ceil(share))
            .into_par_iter()
            .map(|part| {
                event.synchronize().map_err(driver("g1_decompress"))?;
                // SAFETY: the download into these bytes completed with the event; they
                // lie inside host_out, which nothing writes until this call returns.
                let out = unsafe { std::slice::from_raw_parts(base as *const u8, out_bytes) };
                let (encodings, codes) = out.split_at(enc_bytes);
                let (start, end) = (part * share, ((part + 1) * share).min(n));
                Ok(codes[start..end]
                    .iter()
                    .zip(encodings[96 * start..96 * end].chunks_exact(96))
                    .map(decode)
                    .collect())
            })
            .collect();
        for part in parts {
            results.extend(part?);
        }
    } else {
        for (&(start, len), event) in segments.iter().zip(&done) {
            event.synchronize().map_err(driver("g1_decompress"))?;
            let out = w.dec.host_out.slice(out_bytes);
            let (encodings, codes) = out.split_at(enc_bytes);
            let codes = &codes[start..start + len];
            let encodings = &encodings[96 * start..96 * (start + len)];
            if len >= PARALLEL_CONVERT {
                results.par_extend(
                    codes
                        .par_iter()
                        .zip(encodings.par_chunks_exact(96))
                        .map(decode),
                );
            } else {
                results.extend(codes.iter().zip(encodings.chunks_exact(96)).map(decode));
            }
        }
    }
    match bad_output.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(results),
    }
}
