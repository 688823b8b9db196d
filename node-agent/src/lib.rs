//! The sovereign-node agent.

pub mod probe;
