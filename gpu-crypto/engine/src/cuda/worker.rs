//! The worker pool: each worker has its own CUDA stream and buffers, and a call borrows one
//! for its duration, so concurrent callers run on different streams; the only shared lock
//! guards the idle list.

use super::buffers::{BlsBuffers, DecompressBuffers, MsmBuffers, ShaBuffers};
use super::error::GpuError;
use super::memory::driver;
use cudarc::driver::{CudaContext, CudaStream};
use std::sync::{Arc, Condvar, Mutex};

/// Number of workers (stream sets with their own buffers); `GPU_CRYPTO_GPU_WORKERS` overrides.
const DEFAULT_WORKERS: usize = 8;

pub(crate) struct Worker {
    /// Upload, launch and download stream of single-segment work (decompression).
    pub(crate) stream: Arc<CudaStream>,
    pub(crate) dec: DecompressBuffers,
    pub(crate) sha: ShaBuffers,
    pub(crate) msm: MsmBuffers,
    pub(crate) bls: BlsBuffers,
}

impl Worker {
    fn new(ctx: &Arc<CudaContext>) -> Result<Worker, GpuError> {
        Ok(Worker {
            stream: ctx.new_stream().map_err(driver("cuStreamCreate"))?,
            dec: DecompressBuffers::new(ctx),
            sha: ShaBuffers::new(ctx),
            msm: MsmBuffers::new(ctx),
            bls: BlsBuffers::new(ctx),
        })
    }

    /// After a failed call: waits for (or abandons) whatever the call left queued, so the
    /// next call never reuses a buffer a stale copy still touches.
    pub(crate) fn quiesce(&mut self) {
        let _ = self.stream.synchronize();
        self.sha.quiesce();
        self.bls.quiesce();
    }
}

pub(crate) struct Pool {
    idle: Mutex<Vec<Worker>>,
    returned: Condvar,
}

impl Pool {
    /// `GPU_CRYPTO_GPU_WORKERS` workers (default 8) on `ctx`.
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> Result<Pool, GpuError> {
        let workers = std::env::var("GPU_CRYPTO_GPU_WORKERS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or(DEFAULT_WORKERS);
        let mut idle = Vec::with_capacity(workers);
        for _ in 0..workers {
            idle.push(Worker::new(ctx)?);
        }
        Ok(Pool {
            idle: Mutex::new(idle),
            returned: Condvar::new(),
        })
    }

    /// How many workers the pool holds when none is borrowed.
    pub(crate) fn size(&self) -> usize {
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Borrows an idle worker, waiting for one if all are busy.
    pub(crate) fn worker(&self) -> WorkerGuard<'_> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(w) = idle.pop() {
                return WorkerGuard {
                    pool: self,
                    worker: Some(w),
                };
            }
            idle = self.returned.wait(idle).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// Returns its worker to the pool on drop (also on error paths).
pub(crate) struct WorkerGuard<'a> {
    pool: &'a Pool,
    worker: Option<Worker>,
}

impl std::ops::Deref for WorkerGuard<'_> {
    type Target = Worker;
    fn deref(&self) -> &Worker {
        self.worker.as_ref().expect("worker present until drop")
    }
}

impl std::ops::DerefMut for WorkerGuard<'_> {
    fn deref_mut(&mut self) -> &mut Worker {
        self.worker.as_mut().expect("worker present until drop")
    }
}

impl Drop for WorkerGuard<'_> {
    fn drop(&mut self) {
        if let Some(w) = self.worker.take() {
            let mut idle = self.pool.idle.lock().unwrap_or_else(|p| p.into_inner());
            idle.push(w);
            self.pool.returned.notify_one();
        }
    }
}
