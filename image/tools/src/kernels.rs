//! Kernels precompiled for the image: gpu-crypto's read-only precompiled directory
//! (`GPU_CRYPTO_PRECOMPILED_KERNELS`), keyed by source, architecture and NVRTC version, so a
//! node loads them on any driver supporting that CUDA version and never compiles at boot.
//! The engine owns the directory's layout; this is its public entry.

pub use gpu_crypto::kernels::{Cubin, PrecompileError, Precompiled, precompile};
