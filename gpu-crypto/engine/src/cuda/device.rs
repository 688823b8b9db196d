//! The opened device: its CUDA context and the kernel functions loaded on it, which every
//! operation launches from.

use super::error::GpuError;
use super::functions::Kernels;
use super::memory::driver;
use cudarc::driver::CudaContext;
use cudarc::driver::sys::CUctx_flags;
use std::sync::Arc;

/// How a host thread waits for the GPU (the context's scheduling flag).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuWait {
    /// The thread sleeps until the GPU signals: a wait costs no host CPU, and a wake-up of
    /// some microseconds. The default: the GPU is in the node to free host CPU.
    Block,
    /// The thread polls: the lowest latency, and a host core busy for the whole wait.
    Spin,
}

impl GpuWait {
    fn flag(self) -> CUctx_flags {
        match self {
            GpuWait::Block => CUctx_flags::CU_CTX_SCHED_BLOCKING_SYNC,
            GpuWait::Spin => CUctx_flags::CU_CTX_SCHED_SPIN,
        }
    }
}

/// Sets how every host thread of `ctx` waits for its GPU work.
pub(crate) fn set_wait(ctx: &CudaContext, wait: GpuWait) -> Result<(), GpuError> {
    ctx.set_flags(wait.flag()).map_err(driver("cuCtxSetFlags"))
}

/// A device with its kernels loaded: what the operations need of the backend.
pub(crate) struct Device {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) kernels: Kernels,
    /// The architecture the kernels were built for, e.g. "sm_90".
    pub(crate) arch: String,
}

/// A CUDA context on one device, before any program is loaded.
pub(crate) struct Context {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) name: String,
    /// e.g. "sm_90".
    pub(crate) arch: String,
    /// As `cuDriverGetVersion` says it, e.g. 13000.
    pub(crate) driver_version: i32,
}

impl Context {
    /// Creates a context on CUDA device `device`; `NoDevice` when there is no driver or no
    /// such device.
    pub(crate) fn open(device: usize) -> Result<Context, GpuError> {
        // SAFETY: only probes whether libcuda can be opened.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(GpuError::NoDevice(
                "libcuda.so (NVIDIA driver) was not found on the library path".into(),
            ));
        }
        let count = CudaContext::device_count()
            .map_err(|e| GpuError::NoDevice(format!("cuInit/cuDeviceGetCount: {e}")))?;
        if count <= 0 || device >= count as usize {
            return Err(GpuError::NoDevice(format!(
                "device {device} requested, {count} CUDA device(s) present"
            )));
        }
        let ctx = CudaContext::new(device)
            .map_err(|e| GpuError::NoDevice(format!("device {device}: {e}")))?;
        // SAFETY: buffers are raw allocations ordered by the owning worker's streams.
        unsafe { ctx.disable_event_tracking() };
        set_wait(&ctx, GpuWait::Block)?;
        let name = ctx.name().map_err(driver("cuDeviceGetName"))?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(driver("compute capability"))?;
        let arch = format!("sm_{major}{minor}");
        let mut driver_version = 0;
        // SAFETY: valid out-pointer; libcuda is loaded.
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver_version) }
            .result()
            .map_err(driver("cuDriverGetVersion"))?;
        Ok(Context {
            ctx,
            name,
            arch,
            driver_version,
        })
    }

    /// e.g. "NVIDIA H200 (sm_90, driver 13.0)".
    pub(crate) fn describe(&self) -> String {
        let v = self.driver_version;
        let (drv_major, drv_minor) = (v / 1000, (v % 1000) / 10);
        format!(
            "{} ({}, driver {drv_major}.{drv_minor})",
            self.name, self.arch
        )
    }
}
