//! Modules of the `gpu-crypto` binary.

pub(crate) mod bench;
mod cpu_clock;
pub(crate) mod input;
pub(crate) mod nidkg;
mod nidkg_bench;
pub(crate) mod ops;
pub(crate) mod progress;
pub(crate) mod selftest;
mod timeline;
