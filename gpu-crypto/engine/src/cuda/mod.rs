//! CUDA backend on cudarc: the driver API and NVRTC are loaded at run time, so a machine
//! without CUDA builds and runs the CPU path, and [`GpuBackend::open`] says why it cannot.
//!
//! Design (docs/gpu.md has the whole story):
//! * `open` compiles every kernel once for the device's architecture with NVRTC (or loads
//!   the cubin from the on-disk cache, see [`kernel_cache`]) before the engine reports ready.
//! * A pool of workers, each with its own CUDA streams, pinned staging buffers and device
//!   buffers (grown on demand, then reused). A call borrows one worker for its duration, so
//!   concurrent callers run on different streams; the only shared lock guards the idle list.
//! * Each batch is staged into pinned memory and uploaded with one copy; outputs are
//!   poisoned before the launch and checked after it, so an unwritten result is an error.
//!
//! Modules, from the bottom up: `error` ([`GpuError`]), `sources`, `launch` (launch
//! shapes), `marks` (profiling events); `memory` (device and pinned buffers), `compile`;
//! `kernel_cache`, `functions` (the kernel functions of the loaded programs), `buffers` (a
//! worker's buffers per operation), `device` (the context and its kernels); `load` (how a
//! program's module is obtained), `worker` (a worker's stream and buffers, the pool); the
//! operations (`segments`, the two-stream pipeline under `decompress` and `g2_decompress`;
//! `sha256`; `msm` under `msm_shared_u8`, `msm_g2` and `recombine`; `hash_to_g1` and `decompress` under `bls`);
//! `backend` ([`GpuBackend`] and its public operations); and, with the `bench` feature,
//! `bench` (single-kernel measurements for `benches/gpu.rs`). No module here imports this
//! one: each names the siblings it uses.

mod backend;
#[cfg(feature = "bench")]
pub mod bench;
mod bls;
mod buffers;
pub(crate) mod compile;
mod decompress;
mod device;
mod error;
mod functions;
mod g2_decompress;
mod hash_to_g1;
pub mod kernel_cache;
mod launch;
mod load;
mod marks;
mod memory;
mod msm;
mod msm_g2;
mod msm_shared_u8;
mod recombine;
mod segments;
mod sha256;
pub(crate) mod sources;
mod worker;

pub use backend::GpuBackend;
pub use bls::BlsGpuStrategy;
pub use decompress::{DecompressKernel, LATENCY_KERNEL_MAX_POINTS};
pub use device::GpuWait;
pub use error::GpuError;
pub use g2_decompress::{G2_LATENCY_KERNEL_MAX_POINTS, G2DecompressKernel};
