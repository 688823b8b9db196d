//! Provisioning for a sovereign subnet: the operator plans the subnet (capacity, DKG and
//! checkpoint timing, cost) and gets one configuration bundle per node, flashes each node's
//! disk so that a wrong or cut-short write is never reported as success, and the governing
//! body enrols each node only after its attestation evidence verifies.
//!
//! * [`subnet`]: `SUBNET.toml`, validated with file:line:column errors.
//! * [`bench`]: the `gpu-crypto bench --json` document the planner takes its costs from.
//! * [`plan`]: thread budgets, DKG and checkpoint timing, cost (formulas in
//!   docs/operator-guide.md).
//! * The node's configuration bundle and its archive: the `sn-config` crate
//!   (provisioning/sn-config), shared with the node.
//! * [`image`]: the release manifest and the disk image's GPT.
//! * [`target`]: refusing mounted devices and the running system's disk.
//! * [`flash`]: write, sync, read back and compare; `verify` for later re-checks.
//! * [`registry`]: the governing body's append-only, hash-chained registry.
//! * [`witness`]: the governing body's record of the last registry head it verified, so
//!   that an older registry put back with its older signed head is refused.
//! * [`enroll`]: fetch evidence with a fresh nonce, verify, decide, record.
//! * [`exit`]: the exit statuses of `provision`, one per kind of failure.

#![warn(missing_docs)]

pub mod bench;
pub mod enroll;
pub mod exit;
pub mod flash;
pub mod image;
pub mod plan;
pub mod registry;
pub mod subnet;
pub mod target;
pub mod witness;

pub use hardware_profiles::Location;
