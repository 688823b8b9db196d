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
    let tags = Tags::of(messages);
    let layout = Layout::new(&tags, messages)?;
    w.bls.host_in.ensure(layout.in_bytes)?;
    w.bls.host_out.ensure(layout.out_bytes)?;
    w.bls.device.ensure(layout.out_off + layout.out_bytes)?;
    stage(
        w.bls.host_in.slice_mut(layout.in_bytes),
        &layout,
        &tags,
        messages,
    );
    gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;
    let stream = hash_stream(gpu, w)?;
    if let Err(e) = queue(gpu, w, &stream, &layout, n) {
        // Nothing may still use the buffers when the error is returned.
        let _ = stream.synchronize();
        return Err(e);
    }
    Ok(Pending {
        n,
        stream: Some(stream),
    })
}

/// The distinct tags of a call (the BLS schemes use two), each once, and each message's.
struct Tags<'a> {
    tags: Vec<Cow<'a, [u8]>>,
    /// Index into `tags` of each message's tag.
    tag_of: Vec<usize>,
}

impl<'a> Tags<'a> {
    fn of(messages: &[(&'a [u8], &[u8])]) -> Tags<'a> {
        let mut tags: Vec<Cow<'a, [u8]>> = Vec::new();
        let mut tag_of = Vec::with_capacity(messages.len());
        for &(dst, _) in messages {
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
        Tags { tags, tag_of }
    }
}

/// Where a call's data lives: the records, then the tags and messages (the pinned input
/// and the device buffer alike), then the points on the device.
struct Layout {
    records_len: usize,
    data_off: usize,
    in_bytes: usize,
    out_off: usize,
    out_bytes: usize,
}

impl Layout {
    /// `InputTooLarge` when an offset or length would not fit the kernel's u32 fields.
    fn new(tags: &Tags<'_>, messages: &[(&[u8], &[u8])]) -> Result<Layout, GpuError> {
        let n = messages.len();
        let tag_bytes: usize = tags.tags.iter().map(|t| t.len()).sum();
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
        Ok(Layout {
            records_len,
            data_off,
            in_bytes,
            out_off: align_device(in_bytes),
            out_bytes: POINT_BYTES * n,
        })
    }
}

/// Writes the tags, then each message and its record, into `host` (the layout's input).
fn stage(host: &mut [u8], layout: &Layout, tags: &Tags<'_>, messages: &[(&[u8], &[u8])]) {
    let (records, data) = host.split_at_mut(layout.data_off);
    let mut at = 0usize;
    let mut tag_at = Vec::with_capacity(tags.tags.len());
    for t in &tags.tags {
        data[at..at + t.len()].copy_from_slice(t);
        tag_at.push(at);
        at += t.len();
    }
    for ((record, (_, message)), &k) in records[..layout.records_len]
        .chunks_exact_mut(RECORD_BYTES)
        .zip(messages)
        .zip(&tags.tag_of)
    {
        data[at..at + message.len()].copy_from_slice(message);
        // Every value fits in u32 (checked by Layout::new).
        let fields = [at, message.len(), tag_at[k], tags.tags[k].len()];
        for (out, v) in record.chunks_exact_mut(4).zip(fields) {
            out.copy_from_slice(&(v as u32).to_le_bytes());
        }
        at += message.len();
    }
}

/// The worker's hash stream, created on first use.
fn hash_stream(gpu: &Device, w: &mut Worker) -> Result<Arc<CudaStream>, GpuError> {
    Ok(match &w.bls.hash_stream {
        Some(s) => s.clone(),
        None => {
            let s = gpu.ctx.new_stream().map_err(driver("cuStreamCreate"))?;
            w.bls.hash_stream = Some(s.clone());
            s
        }
    })
}

/// Queues on `stream`: the staged input's upload, the points' poison, `hash_to_g1` over
/// the `n` messages and the points' download.
fn queue(
    gpu: &Device,
    w: &mut Worker,
    stream: &Arc<CudaStream>,
    layout: &Layout,
    n: usize,
) -> Result<(), GpuError> {
    let base = w.bls.device.ptr();
    let (d_records, d_data, d_out) = (
        base,
        base + layout.data_off as u64,
        base + layout.out_off as u64,
    );
    let (in_bytes, out_bytes) = (layout.in_bytes, layout.out_bytes);
    let n32 = n as u32;
    // SAFETY: the device ranges lie inside the worker's BLS device buffer and the host
    // ranges inside its pinned buffers (both ensured by `enqueue` for `layout`), untouched
    // until `finish` (or `enqueue`, after an error) synchronises the stream; hash_to_g1
    // takes (data, records, u32 n, out): device pointers and a u32, as pushed.
    unsafe {
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
    }
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
