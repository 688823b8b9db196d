//! Host side of batch G2 decompression (kernels/ops/g2_decompress.cu), the same pipeline
//! as G1's (decompress.rs): the batch moves in segments, each staged into pinned memory,
//! uploaded, decompressed and downloaded on one of two streams in turn, while the host
//! decodes finished segments. Outputs are poisoned before each launch, so an unwritten
//! result is an error, never an answer.

use super::decompress::{CODE_POISON, PARALLEL_CONVERT};
use super::memory::{align_device, driver};
use super::{GpuBackend, GpuError, Worker};
use cudarc::driver::{LaunchConfig, PushKernelArg, result, sys};
use gpu_crypto_api::DecodeError;
use ic_bls12_381::G2Affine;
use rayon::prelude::*;
use std::sync::Mutex;

const THREADS: u32 = 128;
/// Bytes of one compressed point (input) and of one uncompressed point (output).
const IN: usize = 96;
const OUT: usize = 192;

/// Points per pipeline segment. A G2 point costs the kernel more than twice a G1 point, so
/// half of G1's segment keeps a segment's kernel in the milliseconds while a batch of 2^16
/// points (8.5 ms end to end on the H200) still overlaps one segment's transfers and host
/// decoding with the other's kernel.
const SEGMENT: usize = 1 << 15;

/// One kernel result: the uncompressed encoding (code 0) or the rejection's code.
pub(crate) fn convert(
    code: u8,
    encoding: &[u8],
) -> Result<Result<G2Affine, DecodeError>, GpuError> {
    if code == 0 {
        let bytes: &[u8; OUT] = encoding
            .try_into()
            .map_err(|_| GpuError::BadOutput("short G2 encoding".into()))?;
        // The GPU did every check from_compressed does; only re-read its output.
        Option::<G2Affine>::from(G2Affine::from_uncompressed_unchecked(bytes))
            .map(Ok)
            .ok_or_else(|| GpuError::BadOutput("kernel returned a malformed G2 encoding".into()))
    } else {
        DecodeError::from_code(code).map(Err).ok_or_else(|| {
            GpuError::BadOutput(format!("result code {code:#04x} (unwritten or unknown)"))
        })
    }
}

pub(crate) fn run(
    gpu: &GpuBackend,
    w: &mut Worker,
    points: &[[u8; 96]],
) -> Result<Vec<Result<G2Affine, DecodeError>>, GpuError> {
    let result = run_segments(gpu, w, points);
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
    points: &[[u8; 96]],
) -> Result<Vec<Result<G2Affine, DecodeError>>, GpuError> {
    let n = points.len();
    if n == 0 {
        return Ok(Vec::new());
    }
    // Device offsets are 64-bit, but the kernel indexes points with 32-bit integers.
    u32::try_from(n).map_err(|_| GpuError::InputTooLarge(format!("{n} points in one batch")))?;
    let in_bytes = IN * n;
    let enc_bytes = OUT * n;
    let out_bytes = enc_bytes + n;
    let out_offset = align_device(in_bytes);
    w.dec.host_in.ensure(in_bytes)?;
    w.dec.host_out.ensure(out_bytes)?;
    w.dec.device.ensure(out_offset + out_bytes)?;

    let d_in = w.dec.device.ptr();
    let d_out = d_in + out_offset as u64;
    let d_codes = d_out + enc_bytes as u64;
    gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;

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
        let staged = &mut w.dec.host_in.slice_mut(in_bytes)[IN * start..IN * (start + len)];
        let src = points[start..start + len].as_flattened();
        if len >= PARALLEL_CONVERT {
            staged
                .par_chunks_mut(IN * 4096)
                .zip(src.par_chunks(IN * 4096))
                .for_each(|(dst, src)| dst.copy_from_slice(src));
        } else {
            staged.copy_from_slice(src);
        }
        let len32 = len as u32; // <= SEGMENT
        let seg_in = d_in + (IN * start) as u64;
        let seg_out = d_out + (OUT * start) as u64;
        let seg_codes = d_codes + start as u64;
        let config = LaunchConfig {
            grid_dim: (len32.div_ceil(THREADS), 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: device ranges lie inside `device` (ensured above); host ranges inside the
        // pinned buffers, which stay untouched by the host until the segment's event (or
        // the stream) has completed.
        unsafe {
            result::memcpy_htod_async(
                seg_in,
                &w.dec.host_in.slice(in_bytes)[IN * start..IN * (start + len)],
                stream.cu_stream(),
            )
            .map_err(driver("upload points"))?;
            result::memset_d8_async(seg_out, 0xa5, OUT * len, stream.cu_stream())
                .map_err(driver("poison output"))?;
            result::memset_d8_async(seg_codes, CODE_POISON, len, stream.cu_stream())
                .map_err(driver("poison codes"))?;
            stream
                .launch_builder(&gpu.kernels.g2_decompress)
                .arg(&seg_in)
                .arg(&len32)
                .arg(&seg_out)
                .arg(&seg_codes)
                .launch(config)
                .map_err(driver("launch g2_decompress"))?;
            let host_out = w.dec.host_out.slice_mut(out_bytes);
            let (host_enc, host_codes) = host_out.split_at_mut(enc_bytes);
            result::memcpy_dtoh_async(
                &mut host_enc[OUT * start..OUT * (start + len)],
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
    for (&(start, len), event) in segments.iter().zip(&done) {
        event.synchronize().map_err(driver("g2_decompress"))?;
        let out = w.dec.host_out.slice(out_bytes);
        let (encodings, codes) = out.split_at(enc_bytes);
        let codes = &codes[start..start + len];
        let encodings = &encodings[OUT * start..OUT * (start + len)];
        if len >= PARALLEL_CONVERT {
            results.par_extend(
                codes
                    .par_iter()
                    .zip(encodings.par_chunks_exact(OUT))
                    .map(decode),
            );
        } else {
            results.extend(codes.iter().zip(encodings.chunks_exact(OUT)).map(decode));
        }
    }
    match bad_output.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(results),
    }
}
