//! The two-stream segment pipeline of batch decompression, for the G1 kernels
//! (decompress.rs) and the G2 kernel (g2_decompress.rs): the batch moves in segments, each
//! staged into pinned memory, uploaded, decompressed and downloaded on one of two streams
//! in turn, so one segment's copies and staging overlap another's kernel (and the last wave
//! of one kernel overlaps the first of the next), while the host decodes finished
//! segments. Outputs are poisoned before each launch, so an unwritten result is an error,
//! never an answer.

use super::device::Device;
use super::error::GpuError;
use super::memory::{align_device, driver};
use super::worker::Worker;
use cudarc::driver::{
    CudaEvent, CudaFunction, CudaStream, LaunchConfig, PushKernelArg, result, sys,
};
use gpu_crypto_api::DecodeError;
use rayon::prelude::*;
use std::sync::{Arc, Mutex};

/// Poison of the code bytes: not a valid code, so an unwritten item is caught.
pub(crate) const CODE_POISON: u8 = 0xff;
/// Items above which the host-side conversion runs on all cores: about 0.3 us per item
/// (two field elements into Montgomery form), so 448 items took 0.15 ms on one core.
pub(crate) const PARALLEL_CONVERT: usize = 128;

/// One result of a kernel: the point, its rejection, or a malformed output.
pub(crate) type Convert<P> = fn(u8, &[u8]) -> Result<Result<P, DecodeError>, GpuError>;

/// A decompression kernel as the pipeline drives it. The kernel takes
/// `(input, points, output, codes)`: `points` compressed points of `IN` bytes in, one
/// uncompressed encoding of `output` bytes and one result code per point out.
pub(crate) struct Kernel<'a, P> {
    pub(crate) function: &'a CudaFunction,
    /// Launch shape for a segment of that many points.
    pub(crate) config: &'a dyn Fn(u32) -> LaunchConfig,
    /// The launch's error context ("launch g1_decompress").
    pub(crate) launch: &'static str,
    /// The wait's error context ("g1_decompress").
    pub(crate) wait: &'static str,
    /// Bytes of one uncompressed point.
    pub(crate) output: usize,
    /// Points per segment.
    pub(crate) segment: usize,
    /// A batch of one segment: one poison and one download of encodings and codes together,
    /// and the host threads start decoding while the kernel runs.
    pub(crate) fuse_single_segment: bool,
    pub(crate) convert: Convert<P>,
}

/// Where a batch lies: the input, then the encodings and the codes, in the worker's
/// decompression buffers.
#[derive(Clone, Copy)]
struct Areas {
    input: usize,
    output: usize,
    in_bytes: usize,
    enc_bytes: usize,
    out_bytes: usize,
    d_in: u64,
    d_out: u64,
    d_codes: u64,
}

/// The points `start..start + len` of the batch.
#[derive(Clone, Copy)]
struct Segment {
    start: usize,
    len: usize,
}

/// Decompresses `points` with `kernel`; one result per point.
pub(crate) fn run<P: Send, const IN: usize>(
    gpu: &Device,
    w: &mut Worker,
    kernel: &Kernel<'_, P>,
    points: &[[u8; IN]],
) -> Result<Vec<Result<P, DecodeError>>, GpuError> {
    let result = run_segments(gpu, w, kernel, points);
    if result.is_err() {
        // The caller quiesces the worker's stream; the second one is ours to drain.
        if let Some(s) = &w.dec.second {
            let _ = s.synchronize();
        }
    }
    result
}

fn run_segments<P: Send, const IN: usize>(
    gpu: &Device,
    w: &mut Worker,
    kernel: &Kernel<'_, P>,
    points: &[[u8; IN]],
) -> Result<Vec<Result<P, DecodeError>>, GpuError> {
    let n = points.len();
    if n == 0 {
        return Ok(Vec::new());
    }
    // Device offsets are 64-bit, but the kernel indexes points with 32-bit integers.
    u32::try_from(n).map_err(|_| GpuError::InputTooLarge(format!("{n} points in one batch")))?;
    let areas = ensure_areas(w, IN, kernel.output, n)?;
    gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;

    // Stage, then enqueue, every segment (upload, poison, launch, download, event) on the
    // two streams in turn; then decode the segments on the host in order as their events
    // complete. Staging segment k+1 overlaps the GPU's work on segment k.
    let segments: Vec<Segment> = (0..n)
        .step_by(kernel.segment)
        .map(|start| Segment {
            start,
            len: (n - start).min(kernel.segment),
        })
        .collect();
    let streams = streams(gpu, w, segments.len() > 1)?;
    let fused = kernel.fuse_single_segment && segments.len() == 1;
    let mut done = Vec::with_capacity(segments.len());
    for (k, &segment) in segments.iter().enumerate() {
        let stream = &streams[k % 2];
        stage(w, &areas, points, segment);
        // SAFETY: the areas lie inside the buffers (ensured above); the staged range is not
        // written again until the segment's event (or the stream) has completed.
        unsafe { enqueue(w, &areas, kernel, stream, segment, fused)? };
        done.push(record(gpu, stream)?);
    }
    if fused && n >= PARALLEL_CONVERT {
        decode_while_running(w, &areas, kernel, n, &done[0])
    } else {
        decode_segments(w, &areas, kernel, n, &segments, &done)
    }
}

/// Grows the worker's buffers for `n` points and lays the batch out in them.
fn ensure_areas(w: &mut Worker, input: usize, output: usize, n: usize) -> Result<Areas, GpuError> {
    let in_bytes = input * n;
    let enc_bytes = output * n;
    let out_bytes = enc_bytes + n;
    let out_offset = align_device(in_bytes);
    w.dec.host_in.ensure(in_bytes)?;
    w.dec.host_out.ensure(out_bytes)?;
    w.dec.device.ensure(out_offset + out_bytes)?;
    let d_in = w.dec.device.ptr();
    let d_out = d_in + out_offset as u64;
    Ok(Areas {
        input,
        output,
        in_bytes,
        enc_bytes,
        out_bytes,
        d_in,
        d_out,
        d_codes: d_out + enc_bytes as u64,
    })
}

/// The two streams segments alternate on: the worker's and its second one (created on the
/// first batch of more than one segment), or the worker's twice.
fn streams(gpu: &Device, w: &mut Worker, two: bool) -> Result<[Arc<CudaStream>; 2], GpuError> {
    if !two {
        return Ok([w.stream.clone(), w.stream.clone()]);
    }
    let second = match &w.dec.second {
        Some(s) => s.clone(),
        None => {
            let s = gpu.ctx.new_stream().map_err(driver("cuStreamCreate"))?;
            w.dec.second = Some(s.clone());
            s
        }
    };
    Ok([w.stream.clone(), second])
}

/// Copies the segment's points into the pinned input buffer (on all cores for a large one).
fn stage<const IN: usize>(w: &mut Worker, a: &Areas, points: &[[u8; IN]], s: Segment) {
    let staged = &mut w.dec.host_in.slice_mut(a.in_bytes)[IN * s.start..IN * (s.start + s.len)];
    let src = points[s.start..s.start + s.len].as_flattened();
    if s.len >= PARALLEL_CONVERT {
        staged
            .par_chunks_mut(IN * 4096)
            .zip(src.par_chunks(IN * 4096))
            .for_each(|(dst, src)| dst.copy_from_slice(src));
    } else {
        staged.copy_from_slice(src);
    }
}

/// Queues the segment's upload, poison, launch and download on `stream`.
///
/// # Safety
/// The segment's host ranges must stay untouched by the host until the segment's event (or
/// the stream) has completed.
unsafe fn enqueue<P>(
    w: &mut Worker,
    a: &Areas,
    kernel: &Kernel<'_, P>,
    stream: &CudaStream,
    s: Segment,
    fused: bool,
) -> Result<(), GpuError> {
    let (start, len) = (s.start, s.len);
    let len32 = len as u32; // <= the segment size
    let seg_in = a.d_in + (a.input * start) as u64;
    let seg_out = a.d_out + (a.output * start) as u64;
    let seg_codes = a.d_codes + start as u64;
    let cu = stream.cu_stream();
    // SAFETY: device ranges lie inside `device` (ensured by the caller); host ranges inside
    // the pinned buffers, which the caller leaves alone until the segment completes.
    unsafe {
        result::memcpy_htod_async(
            seg_in,
            &w.dec.host_in.slice(a.in_bytes)[a.input * start..a.input * (start + len)],
            cu,
        )
        .map_err(driver("upload points"))?;
        if fused {
            // Encodings and codes are contiguous: one memset poisons both (an unwritten
            // code is 0xff, which no kernel writes).
            result::memset_d8_async(seg_out, CODE_POISON, (a.output + 1) * len, cu)
                .map_err(driver("poison output"))?;
        } else {
            result::memset_d8_async(seg_out, 0xa5, a.output * len, cu)
                .map_err(driver("poison output"))?;
            result::memset_d8_async(seg_codes, CODE_POISON, len, cu)
                .map_err(driver("poison codes"))?;
        }
        stream
            .launch_builder(kernel.function)
            .arg(&seg_in)
            .arg(&len32)
            .arg(&seg_out)
            .arg(&seg_codes)
            .launch((kernel.config)(len32))
            .map_err(driver(kernel.launch))?;
        let host_out = w.dec.host_out.slice_mut(a.out_bytes);
        if fused {
            // One download of encodings and codes (contiguous on both sides).
            result::memcpy_dtoh_async(host_out, a.d_out, cu).map_err(driver("download results"))?;
        } else {
            let (host_enc, host_codes) = host_out.split_at_mut(a.enc_bytes);
            result::memcpy_dtoh_async(
                &mut host_enc[a.output * start..a.output * (start + len)],
                seg_out,
                cu,
            )
            .map_err(driver("download results"))?;
            result::memcpy_dtoh_async(&mut host_codes[start..start + len], seg_codes, cu)
                .map_err(driver("download codes"))?;
        }
    }
    Ok(())
}

/// An event recorded on `stream` after the segment's work.
fn record(gpu: &Device, stream: &Arc<CudaStream>) -> Result<CudaEvent, GpuError> {
    gpu.ctx
        .new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
        .and_then(|e| e.record(stream).map(|_| e))
        .map_err(driver("record segment event"))
}

/// A malformed kernel output fails the whole call; it is noted rather than collected item
/// by item so the results are written once, straight into their final vector.
struct Decoder<P> {
    convert: Convert<P>,
    bad_output: Mutex<Option<GpuError>>,
}

impl<P> Decoder<P> {
    fn new(convert: Convert<P>) -> Decoder<P> {
        Decoder {
            convert,
            bad_output: Mutex::new(None),
        }
    }

    fn decode(&self, (&code, encoding): (&u8, &[u8])) -> Result<P, DecodeError> {
        match (self.convert)(code, encoding) {
            Ok(item) => item,
            Err(e) => {
                let mut slot = self.bad_output.lock().unwrap_or_else(|p| p.into_inner());
                slot.get_or_insert(e);
                Err(DecodeError::NotCompressed) // discarded with the whole vector below
            }
        }
    }

    fn finish(
        self,
        results: Vec<Result<P, DecodeError>>,
    ) -> Result<Vec<Result<P, DecodeError>>, GpuError> {
        match self
            .bad_output
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
        {
            Some(e) => Err(e),
            None => Ok(results),
        }
    }
}

/// One segment of many points: the host threads start now, while the kernel runs, and
/// each waits for the event itself before decoding its share, so waking the pool (about
/// 0.1 ms, as long as decoding 448 items on one core) overlaps the GPU's work.
fn decode_while_running<P: Send>(
    w: &Worker,
    a: &Areas,
    kernel: &Kernel<'_, P>,
    n: usize,
    event: &CudaEvent,
) -> Result<Vec<Result<P, DecodeError>>, GpuError> {
    let decoder = Decoder::new(kernel.convert);
    let (out_bytes, enc_bytes, output, wait) = (a.out_bytes, a.enc_bytes, a.output, kernel.wait);
    let base = w.dec.host_out.slice(out_bytes).as_ptr() as usize;
    let share = n.div_ceil(rayon::current_num_threads()).max(16);
    let parts: Vec<Result<Vec<_>, GpuError>> = (0..n.div_ceil(share))
        .into_par_iter()
        .map(|part| {
            event.synchronize().map_err(driver(wait))?;
            // SAFETY: the download into these bytes completed with the event; they lie
            // inside host_out, which nothing writes until this call returns.
            let out = unsafe { std::slice::from_raw_parts(base as *const u8, out_bytes) };
            let (encodings, codes) = out.split_at(enc_bytes);
            let (start, end) = (part * share, ((part + 1) * share).min(n));
            Ok(codes[start..end]
                .iter()
                .zip(encodings[output * start..output * end].chunks_exact(output))
                .map(|item| decoder.decode(item))
                .collect())
        })
        .collect();
    let mut results = Vec::with_capacity(n);
    for part in parts {
        results.extend(part?);
    }
    decoder.finish(results)
}

/// Decodes the segments in order as their events complete (each on all cores when large).
fn decode_segments<P: Send>(
    w: &Worker,
    a: &Areas,
    kernel: &Kernel<'_, P>,
    n: usize,
    segments: &[Segment],
    done: &[CudaEvent],
) -> Result<Vec<Result<P, DecodeError>>, GpuError> {
    let decoder = Decoder::new(kernel.convert);
    let output = a.output;
    let mut results = Vec::with_capacity(n);
    for (&Segment { start, len }, event) in segments.iter().zip(done) {
        event.synchronize().map_err(driver(kernel.wait))?;
        let out = w.dec.host_out.slice(a.out_bytes);
        let (encodings, codes) = out.split_at(a.enc_bytes);
        let codes = &codes[start..start + len];
        let encodings = &encodings[output * start..output * (start + len)];
        if len >= PARALLEL_CONVERT {
            results.par_extend(
                codes
                    .par_iter()
                    .zip(encodings.par_chunks_exact(output))
                    .map(|item| decoder.decode(item)),
            );
        } else {
            results.extend(
                codes
                    .iter()
                    .zip(encodings.chunks_exact(output))
                    .map(|item| decoder.decode(item)),
            );
        }
    }
    decoder.finish(results)
}
