//! BLS12-381 and SHA-256 batch operations for the Internet Computer replica, on the GPU
//! (CUDA) or the CPU, bit-exact with `ic_bls12_381` and the IC's state-manifest format.
//!
//! One entry point, [`Engine`], built from a [`Policy`]. Batches return one result per
//! item; a failed call returns an [`EngineError`] and never a partial result.

pub mod corpus;
pub mod cpu;
pub mod cuda;
mod engine;
pub mod error;
pub mod ffi;
pub mod manifest;
pub mod policy;
pub mod selftest;
pub mod stats;

pub use engine::{
    BlsItem, BlsScheme, DomainSeparator, Engine, EngineReport, GpuStatus, MsmInput, OperationPath,
};
pub use error::{DecodeError, EngineError, VerifyError};
pub use ic_bls12_381::{G1Affine, G1Projective, G2Affine, Scalar};
pub use policy::{BackendChoice, Fallback, Operation, OperationPolicy, Policy};
