//! Modules of the `gpu-crypto` binary.

pub mod input;
pub mod ops;
pub mod selftest;
