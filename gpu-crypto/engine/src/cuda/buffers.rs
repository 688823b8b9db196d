//! The device and pinned buffers a worker keeps for each operation, grown on demand and
//! reused by the worker's next calls (one call at a time per worker).

use super::error::GpuError;
use super::memory::{DeviceBuffer, PinnedBuffer, driver};
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};
use std::sync::Arc;

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

pub(crate) struct Slot {
    pub(crate) stream: Arc<CudaStream>,
    pub(crate) device: DeviceBuffer,
}

/// The SHA-256 pipeline's device slots (a stream and a buffer each) and staging.
pub(crate) struct ShaBuffers {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) slots: Vec<Slot>,
    pub(crate) staging: [PinnedBuffer; 2],
    pub(crate) staged: [Option<CudaEvent>; 2],
    pub(crate) digests: PinnedBuffer,
}

impl ShaBuffers {
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> ShaBuffers {
        ShaBuffers {
            ctx: ctx.clone(),
            slots: Vec::new(),
            staging: [PinnedBuffer::new(ctx), PinnedBuffer::new(ctx)],
            staged: [None, None],
            digests: PinnedBuffer::new(ctx),
        }
    }

    pub(crate) fn quiesce(&mut self) {
        for slot in &self.slots {
            let _ = slot.stream.synchronize();
        }
    }

    pub(crate) fn slot(&mut self, i: usize) -> Result<&mut Slot, GpuError> {
        while self.slots.len() <= i {
            let stream = self.ctx.new_stream().map_err(driver("cuStreamCreate"))?;
            self.slots.push(Slot {
                stream,
                device: DeviceBuffer::new(&self.ctx),
            });
        }
        Ok(&mut self.slots[i])
    }
}

pub(crate) struct MsmBuffers {
    ctx: Arc<CudaContext>,
    // Also the buffers of the shared-base 8-bit MSM (a worker runs one call at a time).
    pub(crate) host_in: PinnedBuffer,
    pub(crate) host_out: PinnedBuffer,
    pub(crate) device: DeviceBuffer,
    /// Uploads the points while the worker's stream sorts the scalars (created on first use).
    pub(crate) points_stream: Option<Arc<CudaStream>>,
}

impl MsmBuffers {
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> MsmBuffers {
        MsmBuffers {
            ctx: ctx.clone(),
            host_in: PinnedBuffer::new(ctx),
            host_out: PinnedBuffer::new(ctx),
            device: DeviceBuffer::new(ctx),
            points_stream: None,
        }
    }

    pub(crate) fn points_stream(&mut self) -> Result<Arc<CudaStream>, GpuError> {
        if let Some(s) = &self.points_stream {
            return Ok(s.clone());
        }
        let s = self.ctx.new_stream().map_err(driver("cuStreamCreate"))?;
        self.points_stream = Some(s.clone());
        Ok(s)
    }
}

/// Shared with hash_to_g1.rs, which runs before the combination stages its items.
pub(crate) struct BlsBuffers {
    pub(crate) host_in: PinnedBuffer,
    pub(crate) host_out: PinnedBuffer,
    pub(crate) device: DeviceBuffer,
    /// hash_to_g1's stream, created on first use: the hash runs beside the signatures'
    /// decompression on the worker's main stream.
    pub(crate) hash_stream: Option<Arc<CudaStream>>,
}

impl BlsBuffers {
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> BlsBuffers {
        BlsBuffers {
            host_in: PinnedBuffer::new(ctx),
            host_out: PinnedBuffer::new(ctx),
            device: DeviceBuffer::new(ctx),
            hash_stream: None,
        }
    }

    /// After a failed call: the hashing stream may still be downloading into `host_out`.
    pub(crate) fn quiesce(&self) {
        if let Some(s) = &self.hash_stream {
            let _ = s.synchronize();
        }
    }
}
