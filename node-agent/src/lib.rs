//! The sovereign-node agent: probes the machine, selects its hardware profile, checks
//! readiness, proves the crypto path, pins the replica's thread pools, and serves health,
//! status and Prometheus telemetry (GPU, SEV-SNP, crypto paths, replica health, cost).

#![warn(missing_docs)]

pub mod assessment;
pub mod child;
pub mod clock;
pub mod collect;
pub mod compose;
pub mod cost;
pub mod exposition;
pub mod history;
pub mod kernel_cmdline;
pub mod listeners;
pub mod metric_family;
pub mod node_config;
pub mod nvml;
pub mod nvml_child;
pub mod pinning;
pub mod pinning_loop;
pub mod probe;
pub mod routes;
pub mod selftest_child;
pub mod settings;
pub mod snapshot;
