//! Raw device and pinned host buffers that grow on demand and are reused across calls.
//! The backend tracks stream ordering itself (one worker owns its buffers and streams),
//! so cudarc's per-allocation event tracking is not used.

use super::error::GpuError;
use cudarc::driver::{CudaContext, DriverError, result, sys};
use std::sync::Arc;

/// `v` rounded up to 256 bytes: where the parts of one device buffer start (the alignment
/// cudaMalloc gives a buffer, which every kernel's vector loads may assume).
pub(crate) fn align_device(v: usize) -> usize {
    v.div_ceil(256) * 256
}

pub(crate) fn driver(what: &'static str) -> impl Fn(DriverError) -> GpuError {
    move |e| GpuError::Driver(format!("{what}: {e}"))
}

/// Device memory; contents are unspecified after `ensure` grows it.
pub(crate) struct DeviceBuffer {
    ctx: Arc<CudaContext>,
    ptr: sys::CUdeviceptr,
    bytes: usize,
}

impl DeviceBuffer {
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> DeviceBuffer {
        DeviceBuffer {
            ctx: ctx.clone(),
            ptr: 0,
            bytes: 0,
        }
    }

    /// Makes room for `bytes`, reallocating (1.25x headroom) when too small.
    pub(crate) fn ensure(&mut self, bytes: usize) -> Result<(), GpuError> {
        if bytes <= self.bytes {
            return Ok(());
        }
        self.release();
        let want = bytes.saturating_add(bytes / 4).max(4096);
        self.ctx.bind_to_thread().map_err(driver("bind context"))?;
        // SAFETY: plain allocation; freed in release().
        self.ptr = unsafe { result::malloc_sync(want) }.map_err(driver("cuMemAlloc"))?;
        self.bytes = want;
        Ok(())
    }

    pub(crate) fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    pub(crate) fn capacity(&self) -> usize {
        self.bytes
    }

    fn release(&mut self) {
        if self.ptr != 0 {
            let _ = self.ctx.bind_to_thread();
            // SAFETY: allocated by malloc_sync; callers synchronise their streams before
            // growing a buffer, and Drop runs after the owning worker's streams are idle.
            let _ = unsafe { result::free_sync(self.ptr) };
            self.ptr = 0;
            self.bytes = 0;
        }
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        self.release();
    }
}

/// Page-locked host memory, so copies run asynchronously at full bus speed.
pub(crate) struct PinnedBuffer {
    ctx: Arc<CudaContext>,
    ptr: *mut u8,
    bytes: usize,
}

// SAFETY: the buffer is owned memory; access is serialised by the worker that owns it.
unsafe impl Send for PinnedBuffer {}

impl PinnedBuffer {
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> PinnedBuffer {
        PinnedBuffer {
            ctx: ctx.clone(),
            ptr: std::ptr::null_mut(),
            bytes: 0,
        }
    }

    pub(crate) fn ensure(&mut self, bytes: usize) -> Result<(), GpuError> {
        if bytes <= self.bytes {
            return Ok(());
        }
        self.release();
        let want = bytes.saturating_add(bytes / 4).max(4096);
        self.ctx.bind_to_thread().map_err(driver("bind context"))?;
        // SAFETY: plain page-locked allocation (no write-combining: the host reads results).
        let p = unsafe { result::malloc_host(want, 0) }.map_err(driver("cuMemHostAlloc"))?;
        self.ptr = p as *mut u8;
        self.bytes = want;
        Ok(())
    }

    /// The first `len` bytes. The caller has synchronised every copy touching them.
    pub(crate) fn slice(&self, len: usize) -> &[u8] {
        assert!(len <= self.bytes, "pinned buffer overrun");
        if len == 0 {
            return &[];
        }
        // SAFETY: ptr is valid for self.bytes bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, len) }
    }

    pub(crate) fn slice_mut(&mut self, len: usize) -> &mut [u8] {
        assert!(len <= self.bytes, "pinned buffer overrun");
        if len == 0 {
            return &mut [];
        }
        // SAFETY: ptr is valid for self.bytes bytes and uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, len) }
    }

    fn release(&mut self) {
        if !self.ptr.is_null() {
            let _ = self.ctx.bind_to_thread();
            // SAFETY: allocated by malloc_host.
            let _ = unsafe { result::free_host(self.ptr as *mut std::ffi::c_void) };
            self.ptr = std::ptr::null_mut();
            self.bytes = 0;
        }
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        self.release();
    }
}
