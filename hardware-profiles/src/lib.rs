//! Hardware profiles of sovereign-node machines.
//!
//! A profile (a TOML file, `profiles/*.toml`) says how to recognise a machine
//! (`[match]`), what must hold for the node to be ready (`[require]`), which crypto path
//! and crossover each operation uses (`[crypto]`, converted to [`gpu_crypto_api::policy::Policy`]),
//! the replica's thread pools with their CPU sets (`[pools]`) and the cost inputs
//! (`[cost]`). The schema is documented in `hardware-profiles/README.md`.
//!
//! # Public API (stable names; the node agent builds on them)
//!
//! - [`ProfileSet::embedded`], [`ProfileSet::load_dir`], [`ProfileSet::embedded_with_overrides`],
//!   [`ProfileSet::from_sources`]: load and validate; a bad file fails with
//!   [`ProfileError`] naming `file:line:column` and the reason ([`InvalidKind`]).
//! - [`ProfileSet::select`]`(&MachineFacts, Option<Pin>) -> Result<Selection, SelectError>`:
//!   the pinned profile (a non-matching one only with `force`), else the matching profile
//!   with the most `[match]` criteria (ties: first name in byte order), else the
//!   development default. [`Selection::explain`] gives the choice and every [`Mismatch`].
//! - [`Selection::readiness`]`(&MachineFacts) -> Readiness`: refuses ready when a required
//!   capability is missing, with reasons.
//! - [`Profile::crypto_policy`] -> [`gpu_crypto_api::policy::Policy`]; [`Profile::runtime_config`] and
//!   [`Selection::runtime_config`]`(&MachineFacts)` -> [`RuntimeConfig`], written with
//!   [`RuntimeConfig::write_atomic`] (schema: docs/runtime-config.md).
//! - [`MachineFacts`] (with [`CpuFacts`], [`SevSnpFacts`], [`GpuInventory`], [`GpuFacts`]):
//!   what the node agent's probe fills in; every unknown value is a [`Fact::Unknown`]
//!   carrying the reason.

#![warn(missing_docs)]

pub mod cpulist;
pub mod error;
pub mod facts;
pub mod mismatch;
pub mod profile;
pub mod runtime;
pub mod select;
pub mod set;

pub use cpulist::{CpuListError, CpuSet};
pub use error::{InvalidKind, Location, ProfileError, SelectError};
pub use facts::{
    CpuFacts, CpuFeatures, Fact, GpuFacts, GpuInventory, MachineFacts, NvmlStatus, PciDevice,
    SevSnpFacts, SevSnpState,
};
pub use profile::{
    CostInputs, CountRange, GpuRequirement, MatchCriteria, ModelPattern, PoolKind, Profile,
    Requirements, ThreadPool, ThreadPools,
};
pub use runtime::{PoolConfig, RUNTIME_CONFIG_SCHEMA_VERSION, RuntimeConfig};
pub use select::{
    Assessment, Candidate, Mismatch, Pin, Readiness, ReadinessCheck, SelectedBy, Selection, assess,
};
pub use set::ProfileSet;
