//! Messages hashed to BLS12-381 G1 on the GPU: RFC 9380 `hash_to_curve` with
//! expand_message_xmd over SHA-256 and the simplified SWU map (suite
//! `BLS12381G1_XMD:SHA-256_SSWU_RO_`), two threads per message (kernels/ops/hash_to_g1.cu).
//! The points equal ic_bls12_381's `HashToCurve<ExpandMsgXmd<Sha256>>` for G1 (what
//! `cpu::hash_message_to_g1` calls), for any message and tag: tests/gpu_hash_to_g1.rs.

use super::device::Device;
use super::error::GpuError;
use super::memory::{align_device, driver};
use super::worker::Worker;
use cudarc::driver::{CudaStream, LaunchConfig, PushKernelArg, result};
use ic_bls12_381::G1Affine;
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::sync::Arc;

/// A point as `G1Affine::to_uncompressed`.
pub(crate) const POINT_BYTES: usize = 96;
/// Per message: message offset, message length, tag offset, tag length (u32 each).
const RECORD_BYTES: usize = 16;
/// Messages per block: a few thousand spread over every SM. Each block runs two warps, the
/// first mapping u0 and the second u1 of its 32 messages (kernels/ops/hash_to_g1.cu).
const MESSAGES_PER_BLOCK: u32 = 32;
/// Longer tags are replaced by `SHA-256("H2C-OVERSIZE-DST-" || tag)` (RFC 9380 section
/// 5.3.3), as ic_bls12_381 does.
const MAX_DST_BYTES: usize = 255;
const OVERSIZE_DST_SALT: &[u8] = b"H2C-OVERSIZE-DST-";
/// Poison of the output: the compression flag set, which no uncompressed encoding has.
const OUTPUT_POISON: u8 = 0xff;

/// The tag expand_message_xmd uses for `dst`.
fn effective_dst(dst: &[u8]) -> Cow<'_, [u8]> {
    if dst.len() > MAX_DST_BYTES {
        let mut h = Sha256::new();
        h.update(OVERSIZE_DST_SALT);
        h.update(dst);
        Cow::Owned(h.finalize().to_vec())
    } else {
        Cow::Borrowed(dst)
    }
}

/// A hash launched on the worker's hash stream, not yet waited for.
pub(crate) struct Pending {
    n: usize,
    stream: Option<Arc<CudaStream>>,
}

/// Stages the messages and queues upload, launch and download on the worker's own hash
/// stream (not the worker's main stream, so that the signatures' decompression runs on the
/// GPU at the same time); `finish` waits. Until then the BLS buffers are the hash's.
pub(crate) fn enqueue(
    gpu: &Device,
    w: &mut Worker,
    messages: &[(&[u8], &[u8])],
) -> Result<Pending, GpuError> {
    let n = messages.len();
    if n == 0 {
        return Ok(Pending { n, stream: None });
    }
    // Distinct tags once (the BLS schemes use two), then the messages.
    let mut tags: Vec<Cow<'_, [u8]>> = Vec::new();
    let mut tag_of = Vec::with_capacity(n);
    for (dst, _) in messages {
        let tag = effective_dst(dst);
        let k = match tags.iter().position(|t| *t == tag) {
            Some(k) => k,
            None => {
                tags.push(tag);
                tags.len() - 1
            }
        };
        tag_of.push(k);
    }
    let tag_bytes: usize = tags.iter().map(|t| t.len()).sum();
    let message_bytes: usize = messages.iter().map(|(_, m)| m.len()).sum();
    let data_len = tag_bytes + message_bytes;
    if u32::try_from(data_len).is_err() || u32::try_from(RECORD_BYTES * n).is_err() {
        return Err(GpuError::InputTooLarge(format!(
            "{n} messages of {message_bytes} bytes in one call"
        )));
    }
    let records_len = RECORD_BYTES * n;
    let data_off = align_device(records_len);
    let in_bytes = data_off + data_len;
    let out_off = align_device(in_bytes);
    let out_bytes = POINT_BYTES * n;
    w.bls.host_in.ensure(in_bytes)?;
    w.bls.host_out.ensure(out_bytes)?;
    w.bls.device.ensure(out_off + out_bytes)?;
    {
        let host = w.bls.host_in.slice_mut(in_bytes);
        let (records, data) = host.split_at_mut(data_off);
        let mut at = 0usize;
        let mut tag_at = Vec::with_capacity(tags.len());
        for t in &tags {
            data[at..at + t.len()].copy_from_slice(t);
            tag_at.push(at);
            at += t.len();
        }
        for ((record, (_, message)), &k) in records[..records_len]
            .chunks_exact_mut(RECORD_BYTES)
            .zip(messages)
            .zip(&tag_of)
        {
            data[at..at + message.len()].copy_from_slice(message);
            // Every value fits in u32 (checked above).
            let fields = [at, message.len(), tag_at[k], tags[k].len()];
            for (out, v) in record.chunks_exact_mut(4).zip(fields) {
                out.copy_from_slice(&(v as u32).to_le_bytes());
            }
            at += message.len();
        }
    }
    gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;
    let stream = match &w.bls.hash_stream {
        Some(s) => s.clone(),
        None => {
            let s = gpu.ctx.new_stream().map_err(driver("cuStreamCreate"))?;
            w.bls.hash_stream = Some(s.clone());
            s
        }
    };
    let base = w.bls.device.ptr();
    let (d_records, d_data, d_out) = (base, base + data_off as u64, base + out_off as u64);
    let n32 = n as u32;
    // SAFETY: device ranges inside `device` (ensured above), host ranges inside the pinned
    // buffers, untouched until `finish` synchronises the stream; arguments match the
    // kernel.
    let queued = unsafe {
        let cu = stream.cu_stream();
        result::memcpy_htod_async(d_records, w.bls.host_in.slice(in_bytes), cu)
            .map_err(driver("upload messages"))
            .and_then(|()| {
                result::memset_d8_async(d_out, OUTPUT_POISON, out_bytes, cu)
                    .map_err(driver("poison points"))
            })
            .and_then(|()| {
                stream
                    .launch_builder(&gpu.kernels.bls.hash_to_g1)
                    .arg(&d_data)
                    .arg(&d_records)
                    .arg(&n32)
                    .arg(&d_out)
                    .launch(LaunchConfig {
                        grid_dim: (n32.div_ceil(MESSAGES_PER_BLOCK), 1, 1),
                        block_dim: (2 * MESSAGES_PER_BLOCK, 1, 1),
                        shared_mem_bytes: 0,
                    })
                    .map(|_| ())
                    .map_err(driver("launch hash_to_g1"))
            })
            .and_then(|()| {
                result::memcpy_dtoh_async(w.bls.host_out.slice_mut(out_bytes), d_out, cu)
                    .map_err(driver("download points"))
            })
    };
    if let Err(e) = queued {
        // Nothing may still use the buffers when the error is returned.
        let _ = stream.synchronize();
        return Err(e);
    }
    Ok(Pending {
        n,
        stream: Some(stream),
    })
}

/// Waits for an enqueued hash and checks that every output is a well-formed encoding of a
/// point on the curve (an unwritten or corrupted output is `GpuError::BadOutput`); `keep`
/// picks what the caller needs of each (the encoding for staging, or the decoded point).
/// Always call it (also when other work failed in between): it is what makes the BLS
/// buffers free again (`Worker::quiesce` also waits for the stream after a failure).
pub(crate) fn finish<T: Send>(
    w: &mut Worker,
    pending: Pending,
    keep: impl Fn([u8; POINT_BYTES], G1Affine) -> T + Sync,
) -> Result<Vec<T>, GpuError> {
    let Some(stream) = pending.stream else {
        return Ok(Vec::new());
    };
    stream.synchronize().map_err(driver("hash_to_g1"))?;
    let out_bytes = POINT_BYTES * pending.n;
    w.bls
        .host_out
        .slice(out_bytes)
        .par_chunks_exact(POINT_BYTES)
        .with_min_len(64)
        .map(|c| {
            let enc: [u8; POINT_BYTES] = c
                .try_into()
                .map_err(|_| GpuError::BadOutput("short point".into()))?;
            match Option::<G1Affine>::from(G1Affine::from_uncompressed_unchecked(&enc)) {
                Some(p) if bool::from(p.is_on_curve()) => Ok(keep(enc, p)),
                _ => Err(GpuError::BadOutput(
                    "hash_to_g1: output is no point on the curve (unwritten?)".into(),
                )),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_tags_are_hashed_as_rfc_9380_says() {
        let short = [7u8; 255];
        assert_eq!(&*effective_dst(&short), &short[..]);
        let long = [7u8; 256];
        let mut h = Sha256::new();
        h.update(b"H2C-OVERSIZE-DST-");
        h.update(long);
        assert_eq!(&*effective_dst(&long), &h.finalize()[..]);
    }
}
