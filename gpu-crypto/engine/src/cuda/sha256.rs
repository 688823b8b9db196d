//! Host side of batch SHA-256(prefix || chunk).
//!
//! A batch is cut into segments (at most `SEGMENT_DATA` bytes, `SEGMENT_CHUNKS` chunks).
//! Each segment is gathered into one of two pinned staging buffers (by all cores for large
//! segments), uploaded with one copy into a device slot, hashed by its own launch and its
//! digests copied back, all on that slot's stream. A SHA-256 chain is sequential, so one
//! GPU thread hashes a whole chunk and a launch over few chunks runs long; the slots keep
//! many launches in flight at once while the next segment is gathered and uploaded.

use super::device::Device;
use super::error::GpuError;
use super::memory::driver;
use super::worker::Worker;
use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig, PushKernelArg, result};
use rayon::prelude::*;

pub(crate) const SEGMENT_DATA: usize = 64 << 20;
pub(crate) const SEGMENT_CHUNKS: usize = 4096;
/// Device slots (and streams) per worker: launches in flight.
const DEVICE_SLOTS: usize = 16;
/// Longest prefix the kernel accepts (its shared-memory copy).
pub(crate) const MAX_PREFIX: usize = 1024;
/// Bytes the kernel may read past a chunk's end (its 16-byte vector loads).
pub(crate) const TAIL_PAD: usize = 64;
pub(crate) const THREADS: u32 = 64;
const DIGEST_POISON: u8 = 0xa5;
/// Gather segments above this size with all cores.
const PARALLEL_GATHER: usize = 4 << 20;

/// Byte layout of a segment, identical in the staging buffer and the device slot:
/// offsets (u64) | lengths (u32) | prefix | digests | data (16-byte aligned chunks).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    pub(crate) lens: usize,
    pub(crate) prefix: usize,
    pub(crate) digests: usize,
    pub(crate) data: usize,
}

pub(crate) const LAYOUT: Layout = Layout {
    lens: 8 * SEGMENT_CHUNKS,
    prefix: 12 * SEGMENT_CHUNKS,
    digests: 12 * SEGMENT_CHUNKS + MAX_PREFIX,
    data: 12 * SEGMENT_CHUNKS + MAX_PREFIX + 32 * SEGMENT_CHUNKS,
};

pub(crate) fn padded(len: usize) -> usize {
    len.div_ceil(16) * 16
}

/// Chunk index ranges of the segments.
fn segments(chunks: &[&[u8]]) -> Result<Vec<std::ops::Range<usize>>, GpuError> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut bytes = 0;
    for (i, c) in chunks.iter().enumerate() {
        let p = padded(c.len());
        if c.len() > SEGMENT_DATA || u32::try_from(c.len()).is_err() {
            return Err(GpuError::InputTooLarge(format!(
                "chunk {i} is {} bytes; the GPU path takes chunks up to {SEGMENT_DATA}",
                c.len()
            )));
        }
        if i > start && (bytes + p > SEGMENT_DATA || i - start == SEGMENT_CHUNKS) {
            out.push(start..i);
            start = i;
            bytes = 0;
        }
        bytes += p;
    }
    out.push(start..chunks.len());
    Ok(out)
}

/// Writes one segment into `buf` (laid out as `LAYOUT`); returns the bytes to upload.
pub(crate) fn gather(buf: &mut [u8], prefix: &[u8], chunks: &[&[u8]]) -> usize {
    let (meta, data) = buf.split_at_mut(LAYOUT.data);
    let mut offset = 0usize;
    for (i, c) in chunks.iter().enumerate() {
        meta[8 * i..8 * i + 8].copy_from_slice(&(offset as u64).to_le_bytes());
        let l = LAYOUT.lens + 4 * i;
        meta[l..l + 4].copy_from_slice(&(c.len() as u32).to_le_bytes());
        offset += padded(c.len());
    }
    meta[LAYOUT.prefix..LAYOUT.prefix + prefix.len()].copy_from_slice(prefix);
    let mut parts = Vec::with_capacity(chunks.len());
    let mut rest = &mut data[..offset];
    for c in chunks {
        let (head, tail) = rest.split_at_mut(padded(c.len()));
        parts.push(&mut head[..c.len()]);
        rest = tail;
    }
    if offset >= PARALLEL_GATHER {
        parts
            .into_par_iter()
            .zip(chunks.par_iter())
            .for_each(|(dst, src)| dst.copy_from_slice(src));
    } else {
        for (dst, src) in parts.into_iter().zip(chunks) {
            dst.copy_from_slice(src);
        }
    }
    LAYOUT.data + offset
}

/// Queues the hash of one uploaded segment on `stream`: poison its digests, launch.
/// `base` is the device address of the segment's layout.
///
/// # Safety
/// `base` must point to a device buffer holding a gathered segment of `count` chunks plus
/// `TAIL_PAD` readable bytes after its data.
pub(crate) unsafe fn launch_segment(
    gpu: &Device,
    stream: &CudaStream,
    base: u64,
    count: usize,
    prefix_len: usize,
) -> Result<(), GpuError> {
    let args = KernelArgs {
        data: base + LAYOUT.data as u64,
        offsets: base,
        lens: base + LAYOUT.lens as u64,
        count,
        prefix: base + LAYOUT.prefix as u64,
        prefix_len,
        digests: base + LAYOUT.digests as u64,
    };
    // SAFETY: per the function's contract.
    unsafe { launch(gpu, &gpu.kernels.sha256_prefixed, stream, &args) }
}

/// Device addresses of one launch's inputs and outputs.
pub(crate) struct KernelArgs {
    pub(crate) data: u64,
    pub(crate) offsets: u64,
    pub(crate) lens: u64,
    pub(crate) count: usize,
    pub(crate) prefix: u64,
    pub(crate) prefix_len: usize,
    pub(crate) digests: u64,
}

/// Poisons the digests, then launches the kernel.
///
/// # Safety
/// Every address must be valid for what the kernel reads or writes (see the kernel).
pub(crate) unsafe fn launch(
    gpu: &Device,
    kernel: &CudaFunction,
    stream: &CudaStream,
    a: &KernelArgs,
) -> Result<(), GpuError> {
    let _ = gpu;
    let n = a.count as u32;
    let prefix_len = a.prefix_len as u32;
    let one = 1u32;
    // SAFETY: per the function's contract.
    unsafe {
        result::memset_d8_async(a.digests, DIGEST_POISON, 32 * a.count, stream.cu_stream())
            .map_err(driver("poison digests"))?;
        stream
            .launch_builder(kernel)
            .arg(&a.data)
            .arg(&a.offsets)
            .arg(&a.lens)
            .arg(&n)
            .arg(&a.prefix)
            .arg(&prefix_len)
            .arg(&a.digests)
            .arg(&one)
            .launch(LaunchConfig {
                grid_dim: (n.div_ceil(THREADS), 1, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: 0,
            })
            .map_err(driver("launch sha256_prefixed"))?;
    }
    Ok(())
}

/// Splits downloaded digests, rejecting any left at the poison value.
pub(crate) fn collect_digests(bytes: &[u8]) -> Result<Vec<[u8; 32]>, GpuError> {
    bytes
        .chunks_exact(32)
        .enumerate()
        .map(|(i, d)| {
            if d.iter().all(|&b| b == DIGEST_POISON) {
                return Err(GpuError::BadOutput(format!("digest {i} was not written")));
            }
            let mut out = [0u8; 32];
            out.copy_from_slice(d);
            Ok(out)
        })
        .collect()
}

pub(crate) fn run(
    gpu: &Device,
    w: &mut Worker,
    prefix: &[u8],
    chunks: &[&[u8]],
) -> Result<Vec<[u8; 32]>, GpuError> {
    if prefix.len() > MAX_PREFIX {
        return Err(GpuError::InputTooLarge(format!(
            "prefix of {} bytes; the GPU path takes up to {MAX_PREFIX}",
            prefix.len()
        )));
    }
    let segs = segments(chunks)?;
    gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;
    let sha = &mut w.sha;
    sha.digests.ensure(32 * chunks.len())?;
    let mut used_slots = 0;
    for (s, range) in segs.iter().enumerate() {
        let seg = &chunks[range.clone()];
        let data_bytes: usize = seg.iter().map(|c| padded(c.len())).sum();
        let p = s % 2;
        if let Some(ev) = &sha.staged[p] {
            ev.synchronize()
                .map_err(driver("wait for staging buffer"))?;
        }
        sha.staging[p].ensure(LAYOUT.data + data_bytes)?;
        let upload = gather(
            sha.staging[p].slice_mut(LAYOUT.data + data_bytes),
            prefix,
            seg,
        );
        let slot_index = s % DEVICE_SLOTS;
        used_slots = used_slots.max(slot_index + 1);
        let (stream, base) = {
            let slot = sha.slot(slot_index)?;
            // Stream order protects a reused slot; only a reallocation must wait for it.
            if slot.device.capacity() < upload + TAIL_PAD {
                slot.stream.synchronize().map_err(driver("slot reuse"))?;
            }
            slot.device.ensure(upload + TAIL_PAD)?;
            (slot.stream.clone(), slot.device.ptr())
        };
        // SAFETY: the staging bytes stay untouched until the `staged` event fires; the
        // device slot holds `upload + TAIL_PAD` bytes.
        unsafe {
            result::memcpy_htod_async(base, sha.staging[p].slice(upload), stream.cu_stream())
                .map_err(driver("upload segment"))?;
        }
        let ev = match sha.staged[p].take() {
            Some(ev) => ev,
            None => sha.ctx.new_event(None).map_err(driver("cuEventCreate"))?,
        };
        ev.record(&stream).map_err(driver("cuEventRecord"))?;
        sha.staged[p] = Some(ev);
        // SAFETY: the slot holds the gathered segment; the digest range lies within the
        // pinned digest buffer, read only after every slot stream is synchronised.
        unsafe {
            launch_segment(gpu, &stream, base, seg.len(), prefix.len())?;
            let host =
                &mut sha.digests.slice_mut(32 * chunks.len())[32 * range.start..32 * range.end];
            result::memcpy_dtoh_async(host, base + LAYOUT.digests as u64, stream.cu_stream())
                .map_err(driver("download digests"))?;
        }
    }
    for slot in &sha.slots[..used_slots] {
        slot.stream
            .synchronize()
            .map_err(driver("sha256_prefixed"))?;
    }
    collect_digests(sha.digests.slice(32 * chunks.len()))
}
