//! The CUDA backend one kernel path at a time, without the engine's policy, counters or
//! CPU fallback: for this crate's GPU tests (which force each kernel choice and compare it
//! with the CPU) and its GPU benches. The node, the replica and the tools use
//! [`crate::Engine`] and [`crate::kernels`] instead.

#[cfg(feature = "bench")]
pub use crate::cuda::bench;
pub use crate::cuda::{
    BlsGpuStrategy, DecompressKernel, G2_LATENCY_KERNEL_MAX_POINTS, G2DecompressKernel, GpuBackend,
    GpuError, LATENCY_KERNEL_MAX_POINTS,
};
