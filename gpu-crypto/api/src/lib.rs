//! The shared vocabulary of gpu-crypto, apart from its engine: what the hardware profiles,
//! the subnet planner, the replica's client and the node agent need to speak about crypto
//! work without linking CUDA or curve arithmetic.
//!
//! - [`operation`]: the batch operations, the IC's BLS schemes, a BLS item as bytes;
//! - [`domain_separator`]: the prefix hashed before each SHA-256 chunk;
//! - [`policy`]: which backend runs each operation, the crossovers, the fallback rule;
//! - [`error`]: per-item errors and the error of a whole call;
//! - [`stats`], [`report`], [`selftest`]: what an engine reports about its work;
//! - [`abi`]: the codes of the C ABI of `libgpu_crypto.so`;
//! - [`bench`](mod@bench): the benchmark document of `gpu-crypto bench --json`;
//! - [`runtime_config`]: the replica's runtime configuration file.

#![warn(missing_docs)]

pub mod abi;
pub mod bench;
pub mod domain_separator;
pub mod error;
pub mod operation;
pub mod policy;
pub mod report;
pub mod runtime_config;
pub mod selftest;
pub mod stats;

pub use domain_separator::DomainSeparator;
pub use error::{DecodeError, EngineError, VerifyError};
pub use operation::{BlsItem, BlsScheme, Operation};
pub use policy::{BackendChoice, Fallback, OperationPolicy, Policy};
pub use report::{EngineReport, GpuStatus, KernelLoadCount, OperationPath};
