//! Host side of batch G1 decompression: one contiguous upload of the 48-byte encodings,
//! one launch, one download of the 96-byte uncompressed encodings and the codes.

use super::memory::{DeviceBuffer, PinnedBuffer, driver};
use super::{GpuBackend, GpuError, Worker};
use crate::error::DecodeError;
use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg, result};
use ic_bls12_381::G1Affine;
use rayon::prelude::*;
use std::sync::Arc;

const THREADS: u32 = 128;
/// Poison of the code bytes: not a valid code, so an unwritten item is caught.
const CODE_POISON: u8 = 0xff;
/// Items above which the host-side conversion runs on all cores.
const PARALLEL_CONVERT: usize = 4096;

pub(crate) struct DecompressBuffers {
    host_in: PinnedBuffer,
    host_out: PinnedBuffer,
    device: DeviceBuffer,
}

impl DecompressBuffers {
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> DecompressBuffers {
        DecompressBuffers {
            host_in: PinnedBuffer::new(ctx),
            host_out: PinnedBuffer::new(ctx),
            device: DeviceBuffer::new(ctx),
        }
    }
}

fn round_up(v: usize, to: usize) -> usize {
    v.div_ceil(to) * to
}

fn convert(code: u8, encoding: &[u8]) -> Result<Result<G1Affine, DecodeError>, GpuError> {
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

pub(crate) fn run(
    gpu: &GpuBackend,
    w: &mut Worker,
    points: &[[u8; 48]],
) -> Result<Vec<Result<G1Affine, DecodeError>>, GpuError> {
    let n = points.len();
    let n32 = u32::try_from(n)
        .map_err(|_| GpuError::InputTooLarge(format!("{n} points in one batch")))?;
    let in_bytes = 48 * n;
    let enc_bytes = 96 * n;
    let out_bytes = enc_bytes + n;
    let out_offset = round_up(in_bytes, 256);
    w.dec.host_in.ensure(in_bytes)?;
    w.dec.host_out.ensure(out_bytes)?;
    w.dec.device.ensure(out_offset + out_bytes)?;

    w.dec
        .host_in
        .slice_mut(in_bytes)
        .copy_from_slice(points.as_flattened());
    let stream = w.stream.clone();
    let d_in = w.dec.device.ptr();
    let d_out = d_in + out_offset as u64;
    let d_codes = d_out + enc_bytes as u64;
    gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;
    // SAFETY: device ranges lie inside `device` (ensured above); host ranges inside the
    // pinned buffers, which stay untouched until the stream is synchronised below.
    unsafe {
        result::memcpy_htod_async(d_in, w.dec.host_in.slice(in_bytes), stream.cu_stream())
            .map_err(driver("upload points"))?;
        result::memset_d8_async(d_out, 0xa5, enc_bytes, stream.cu_stream())
            .map_err(driver("poison output"))?;
        result::memset_d8_async(d_codes, CODE_POISON, n, stream.cu_stream())
            .map_err(driver("poison codes"))?;
        stream
            .launch_builder(&gpu.kernels.g1_decompress)
            .arg(&d_in)
            .arg(&n32)
            .arg(&d_out)
            .arg(&d_codes)
            .launch(LaunchConfig {
                grid_dim: (n32.div_ceil(THREADS), 1, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: 0,
            })
            .map_err(driver("launch g1_decompress"))?;
        result::memcpy_dtoh_async(
            w.dec.host_out.slice_mut(out_bytes),
            d_out,
            stream.cu_stream(),
        )
        .map_err(driver("download results"))?;
    }
    stream.synchronize().map_err(driver("g1_decompress"))?;

    let out = w.dec.host_out.slice(out_bytes);
    let (encodings, codes) = out.split_at(enc_bytes);
    if n >= PARALLEL_CONVERT {
        codes
            .par_iter()
            .zip(encodings.par_chunks_exact(96))
            .map(|(&c, e)| convert(c, e))
            .collect()
    } else {
        codes
            .iter()
            .zip(encodings.chunks_exact(96))
            .map(|(&c, e)| convert(c, e))
            .collect()
    }
}
