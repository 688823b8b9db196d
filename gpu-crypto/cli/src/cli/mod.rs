//! Modules of the `gpu-crypto` binary.

pub mod bench;
pub mod input;
pub mod nidkg;
mod nidkg_bench;
pub mod ops;
pub mod progress;
pub mod selftest;
