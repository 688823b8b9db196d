//! The gpu-crypto engine: BLS12-381 and SHA-256 batch operations for the Internet Computer
//! replica, on the GPU (CUDA) or the CPU, bit-exact with `ic_bls12_381`.
//!
//! One entry point, [`Engine`], built from a [`Policy`]. Batches return one result per
//! item; a failed call returns an [`EngineError`] and never a partial result. The types it
//! shares with its users (policy, operations, errors, reports) live in `gpu_crypto_api` and
//! are re-exported here.
//!
//! [`NidkgBatchOps`] serves the `nidkg` verifier's batches from an engine.
//!
//! Modules: [`cpu`] (the reference paths every GPU result is judged against), [`corpus`]
//! (the adversarial decoding corpus of the tests and the selftest), [`selftest`], [`ffi`]
//! (the C ABI of `libgpu_crypto.so`), [`kernels`] (precompilation of the GPU programs for an
//! image) and [`gpu`] (one GPU kernel path at a time, for this crate's GPU tests and
//! benches). The CUDA backend itself is private: other crates reach the GPU through
//! [`Engine`].

#![warn(missing_docs)]

pub mod corpus;
mod counters;
pub mod cpu;
mod cuda;
mod engine;
pub mod ffi;
mod field;
pub mod gpu;
mod input;
pub mod kernels;
mod nidkg_batch;
pub mod selftest;

pub use cuda::GpuWait;
pub use engine::Engine;
pub use gpu_crypto_api::{
    BackendChoice, BlsItem, BlsScheme, DecodeError, DomainSeparator, EngineError, EngineReport,
    Fallback, GpuStatus, KernelLoadCount, Operation, OperationPath, OperationPolicy, Policy,
    VerifyError,
};
pub use ic_bls12_381::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
pub use input::{MsmInput, PairingProducts, check_shared_u8_shape};
pub use nidkg_batch::{NIDKG_OPERATIONS, NidkgBatchOps};
