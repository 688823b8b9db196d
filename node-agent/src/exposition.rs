//! The snapshot in the OpenMetrics text format (prometheus-client's encoder), base units.
//!
//! Info-style metrics are gauges with value 1 named `*_info`, not the OpenMetrics `info`
//! type, so that Prometheus' classic text parser (and `promtool check metrics`) accept them.

use crate::snapshot::Snapshot;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};
use std::fmt;
use std::sync::Arc;

/// The content type of `encode`'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The content type of `to_classic_text`'s output (Prometheus text format 0.0.4).
pub const CLASSIC_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The OpenMetrics page in the classic Prometheus text format, for clients that do not
/// ask for OpenMetrics (curl, `promtool check metrics`): a counter family `x` whose
/// samples are `x_total` is described as `x_total`, and `# UNIT` and `# EOF` are dropped.
/// Prometheus itself asks for OpenMetrics and gets `encode`'s output unchanged.
pub fn to_classic_text(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    let mut help: Option<(&str, &str)> = None;
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, text) = rest.split_once(' ').unwrap_or((rest, ""));
            help = Some((name, text));
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "untyped"));
            let family = if kind == "counter" {
                format!("{name}_total")
            } else {
                name.to_string()
            };
            if let Some((help_name, text)) = help.take()
                && help_name == name
            {
                out.push_str(&format!("# HELP {family} {text}\n"));
            }
            out.push_str(&format!("# TYPE {family} {kind}\n"));
        } else if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

type Labels = Vec<(&'static str, String)>;

/// One metric family being written: its descriptor once, then one sample per label set.
struct Family<'e, 'a> {
    encoder: &'e mut DescriptorEncoder<'a>,
}

impl<'a> Family<'_, 'a> {
    fn gauge(
        &mut self,
        name: &str,
        help: &str,
        unit: Option<Unit>,
        samples: &[(Labels, f64)],
    ) -> fmt::Result {
        if samples.is_empty() {
            return Ok(());
        }
        let mut metric =
            self.encoder
                .encode_descriptor(name, help, unit.as_ref(), MetricType::Gauge)?;
        for (labels, value) in samples {
            ConstGauge::new(*value).encode(metric.encode_family(labels)?)?;
        }
        Ok(())
    }

    fn counter(
        &mut self,
        name: &str,
        help: &str,
        unit: Option<Unit>,
        samples: &[(Labels, f64)],
    ) -> fmt::Result {
        if samples.is_empty() {
            return Ok(());
        }
        let mut metric =
            self.encoder
                .encode_descriptor(name, help, unit.as_ref(), MetricType::Counter)?;
        for (labels, value) in samples {
            ConstCounter::new(*value).encode(metric.encode_family(labels)?)?;
        }
        Ok(())
    }
}

fn b(v: bool) -> f64 {
    if v { 1.0 } else { 0.0 }
}

fn one(labels: Labels, v: f64) -> Vec<(Labels, f64)> {
    vec![(labels, v)]
}

fn opt(labels: Labels, v: Option<f64>) -> Vec<(Labels, f64)> {
    v.map(|v| vec![(labels, v)]).unwrap_or_default()
}

fn encode_snapshot(s: &Snapshot, encoder: &mut DescriptorEncoder) -> fmt::Result {
    let mut f = Family { encoder };
    let w = || Unit::Other("watts".to_string());
    let hz = || Unit::Other("hertz".to_string());

    // Agent and collectors.
    f.gauge(
        "sovereign_agent_info",
        "The node agent's version.",
        None,
        &one(vec![("version", s.agent_version.clone())], 1.0),
    )?;
    f.gauge(
        "sovereign_collector_up",
        "Whether the collector's last run read its source without error.",
        None,
        &s.collectors
            .iter()
            .map(|c| (vec![("collector", c.name.clone())], b(c.up)))
            .collect::<Vec<_>>(),
    )?;
    f.gauge(
        "sovereign_collector_scrape_duration",
        "How long the collector's last run took.",
        Some(Unit::Seconds),
        &s.collectors
            .iter()
            .map(|c| (vec![("collector", c.name.clone())], c.duration_seconds))
            .collect::<Vec<_>>(),
    )?;
    f.gauge(
        "sovereign_collector_last_success_timestamp",
        "Unix time of the collector's last successful run.",
        Some(Unit::Seconds),
        &s.collectors
            .iter()
            .filter_map(|c| {
                c.last_success_unix_seconds
                    .map(|t| (vec![("collector", c.name.clone())], t))
            })
            .collect::<Vec<_>>(),
    )?;

    // Profile and readiness.
    let n = &s.node;
    f.gauge(
        "sovereign_profile_info",
        "The hardware profile the agent runs the node with, and how it was chosen.",
        None,
        &one(
            vec![
                ("profile", n.profile.clone()),
                ("selection", n.selection.clone()),
            ],
            1.0,
        ),
    )?;
    f.gauge(
        "sovereign_profile_mismatches",
        "Differences between the machine and the selected profile.",
        None,
        &one(vec![], n.mismatches.len() as f64),
    )?;
    f.gauge(
        "sovereign_node_ready",
        "Whether the node is fit to run the replica under its profile (readiness).",
        None,
        &one(vec![], b(n.ready)),
    )?;
    f.gauge(
        "sovereign_readiness_check_passed",
        "Result of each readiness check.",
        None,
        &n.readiness
            .iter()
            .map(|c| (vec![("requirement", c.requirement.clone())], b(c.satisfied)))
            .collect::<Vec<_>>(),
    )?;
    f.gauge(
        "sovereign_image_info",
        "The sovereign-node image version the node runs (absent off the image).",
        None,
        &n.image
            .version
            .iter()
            .map(|v| (vec![("version", v.clone())], 1.0))
            .collect::<Vec<_>>(),
    )?;
    f.gauge(
        "sovereign_image_optional_input_present",
        "Whether the image was built with the optional input (replica, NVIDIA driver).",
        None,
        &n.image
            .optional_inputs
            .iter()
            .map(|i| (vec![("input", i.name.clone())], b(i.present)))
            .collect::<Vec<_>>(),
    )?;
    f.gauge(
        "sovereign_sev_snp_active",
        "Whether SEV-SNP protects this node (from the probe).",
        None,
        &one(vec![], b(n.sev_snp.active)),
    )?;
    f.gauge(
        "sovereign_sev_guest_device_present",
        "Whether /dev/sev-guest (attestation reports) is present.",
        None,
        &one(vec![], b(n.sev_snp.guest_device)),
    )?;

    // Crypto paths and counts.
    let c = &s.crypto;
    let gpu_state = match &c.report.gpu {
        gpu_crypto::GpuStatus::NotRequested => ("not_requested", String::new()),
        gpu_crypto::GpuStatus::Unusable { .. } => ("unusable", String::new()),
        gpu_crypto::GpuStatus::Ready { device } => ("ready", device.clone()),
    };
    f.gauge(
        "sovereign_crypto_gpu_info",
        "State of the crypto engine's GPU backend.",
        None,
        &one(
            vec![
                ("state", gpu_state.0.to_string()),
                ("device", gpu_state.1),
                (
                    "fallback",
                    match c.report.fallback {
                        gpu_crypto::Fallback::Never => "never",
                        gpu_crypto::Fallback::RecomputeOnCpu => "recompute_on_cpu",
                    }
                    .to_string(),
                ),
            ],
            1.0,
        ),
    )?;
    f.gauge(
        "sovereign_crypto_path_info",
        "Backend policy of each operation and the batch size from which the GPU serves it.",
        None,
        &c.report
            .operations
            .iter()
            .map(|o| {
                (
                    vec![
                        ("operation", o.operation.name().to_string()),
                        ("backend", o.backend.name().to_string()),
                        ("gpu_min_batch", o.gpu_min_batch.to_string()),
                    ],
                    1.0,
                )
            })
            .collect::<Vec<_>>(),
    )?;
    f.gauge(
        "sovereign_crypto_selftest_passed",
        "Whether the crypto engine's known-answer selftest passed at start.",
        None,
        &one(vec![], b(c.selftest.passed)),
    )?;
    let ops = |items: bool| {
        c.stats
            .operations
            .iter()
            .map(|o| {
                (
                    vec![
                        ("operation", o.operation.name().to_string()),
                        (
                            "executed",
                            match o.executed {
                                gpu_crypto_api::stats::Executed::Cpu => "cpu",
                                gpu_crypto_api::stats::Executed::Gpu => "gpu",
                            }
                            .to_string(),
                        ),
                    ],
                    if items { o.items } else { o.calls } as f64,
                )
            })
            .collect::<Vec<_>>()
    };
    f.counter(
        "sovereign_crypto_calls",
        "Batch calls of the agent's crypto engine, by where they ran.",
        None,
        &ops(false),
    )?;
    f.counter(
        "sovereign_crypto_items",
        "Items (points, signatures, chunks) processed, by where they ran.",
        None,
        &ops(true),
    )?;
    let reasons = |v: &[gpu_crypto_api::stats::ReasonCount]| {
        v.iter()
            .map(|r| {
                (
                    vec![
                        ("operation", r.operation.name().to_string()),
                        ("reason", r.reason.clone()),
                    ],
                    r.count as f64,
                )
            })
            .collect::<Vec<_>>()
    };
    f.counter(
        "sovereign_crypto_fallbacks",
        "CPU recomputations after a failed GPU call, by reason.",
        None,
        &reasons(&c.stats.fallbacks),
    )?;
    f.counter(
        "sovereign_crypto_gpu_errors",
        "Failed GPU calls, by reason (recomputed on the CPU or not).",
        None,
        &reasons(&c.stats.gpu_errors),
    )?;
    f.counter(
        "sovereign_crypto_offloaded_cpu",
        "CPU time the GPU saved: GPU items times the configured CPU cost per item.",
        Some(Unit::Seconds),
        &one(vec![], c.offloaded_cpu_seconds),
    )?;
    f.counter(
        "sovereign_crypto_kernel_loads",
        "GPU programs the selftest's engine obtained at start, by outcome (precompiled, cache, compiled, skipped_*, refused_cached_only) and reason kind.",
        None,
        &c.kernel_loads
            .iter()
            .map(|k| {
                (
                    vec![("outcome", k.outcome.clone()), ("reason", k.reason.clone())],
                    k.count as f64,
                )
            })
            .collect::<Vec<_>>(),
    )?;

    // GPUs.
    let per_gpu = |get: &dyn Fn(&crate::snapshot::GpuSample) -> Option<f64>| {
        s.gpus
            .iter()
            .filter_map(|g| get(g).map(|v| (vec![("gpu", g.index.to_string())], v)))
            .collect::<Vec<_>>()
    };
    f.gauge(
        "sovereign_gpu_info",
        "GPUs NVML reports.",
        None,
        &s.gpus
            .iter()
            .map(|g| {
                (
                    vec![
                        ("gpu", g.index.to_string()),
                        ("name", g.name.clone()),
                        ("uuid", g.uuid.clone()),
                        ("driver_version", g.driver_version.clone()),
                    ],
                    1.0,
                )
            })
            .collect::<Vec<_>>(),
    )?;
    f.gauge(
        "sovereign_gpu_cc_mode_enabled",
        "Whether NVIDIA confidential-computing mode is on.",
        None,
        &per_gpu(&|g| g.cc_enabled.map(b)),
    )?;
    f.gauge(
        "sovereign_gpu_power",
        "GPU power draw.",
        Some(w()),
        &per_gpu(&|g| g.power_watts),
    )?;
    f.counter(
        "sovereign_gpu_energy",
        "GPU energy since the driver loaded (NVML counter).",
        Some(Unit::Joules),
        &per_gpu(&|g| g.energy_joules),
    )?;
    f.gauge(
        "sovereign_gpu_temperature",
        "GPU core temperature.",
        Some(Unit::Celsius),
        &per_gpu(&|g| g.temperature_celsius),
    )?;
    f.gauge(
        "sovereign_gpu_utilization",
        "Fraction of the last sample period the GPU was busy (NVML utilisation).",
        Some(Unit::Other("ratio".to_string())),
        &s.gpus
            .iter()
            .flat_map(|g| {
                [
                    ("gpu", g.utilization_gpu_ratio),
                    ("memory", g.utilization_memory_ratio),
                ]
                .into_iter()
                .filter_map(|(kind, v)| {
                    v.map(|v| {
                        (
                            vec![("gpu", g.index.to_string()), ("kind", kind.to_string())],
                            v,
                        )
                    })
                })
            })
            .collect::<Vec<_>>(),
    )?;
    f.gauge(
        "sovereign_gpu_memory_used",
        "GPU memory in use.",
        Some(Unit::Bytes),
        &per_gpu(&|g| g.memory_used_bytes.map(|v| v as f64)),
    )?;
    f.gauge(
        "sovereign_gpu_memory_total",
        "GPU memory installed.",
        Some(Unit::Bytes),
        &per_gpu(&|g| g.memory_total_bytes.map(|v| v as f64)),
    )?;
    f.gauge(
        "sovereign_gpu_clock",
        "Current GPU clocks.",
        Some(hz()),
        &s.gpus
            .iter()
            .flat_map(|g| {
                [
                    ("graphics", g.clock_graphics_hertz),
                    ("sm", g.clock_sm_hertz),
                    ("memory", g.clock_memory_hertz),
                ]
                .into_iter()
                .filter_map(|(clock, v)| {
                    v.map(|v| {
                        (
                            vec![("gpu", g.index.to_string()), ("clock", clock.to_string())],
                            v,
                        )
                    })
                })
            })
            .collect::<Vec<_>>(),
    )?;
    f.gauge(
        "sovereign_gpu_throttle_reason_active",
        "Clock throttle reasons NVML reports as active (absent: none).",
        None,
        &s.gpus
            .iter()
            .flat_map(|g| {
                g.throttle_reasons_active.iter().map(|r| {
                    (
                        vec![("gpu", g.index.to_string()), ("reason", r.clone())],
                        1.0,
                    )
                })
            })
            .collect::<Vec<_>>(),
    )?;
    f.counter(
        "sovereign_gpu_ecc_errors",
        "ECC memory errors since the driver loaded (NVML volatile counters).",
        None,
        &s.gpus
            .iter()
            .flat_map(|g| {
                [
                    ("corrected", g.ecc_corrected_errors_total),
                    ("uncorrected", g.ecc_uncorrected_errors_total),
                ]
                .into_iter()
                .filter_map(|(kind, v)| {
                    v.map(|v| {
                        (
                            vec![("gpu", g.index.to_string()), ("type", kind.to_string())],
                            v as f64,
                        )
                    })
                })
            })
            .collect::<Vec<_>>(),
    )?;
    f.counter(
        "sovereign_gpu_xid_errors",
        "NVIDIA Xid errors of the GPU in the kernel log since the agent started.",
        None,
        &s.gpus
            .iter()
            .flat_map(|g| {
                g.xid_errors.iter().map(|(xid, n)| {
                    (
                        vec![("gpu", g.index.to_string()), ("xid", xid.to_string())],
                        *n as f64,
                    )
                })
            })
            .collect::<Vec<_>>(),
    )?;

    // CPU energy.
    if let Some(e) = &s.cpu_energy {
        f.counter(
            "sovereign_cpu_package_energy",
            "CPU package energy (RAPL) since the agent started.",
            Some(Unit::Joules),
            &one(vec![], e.joules_total),
        )?;
        f.gauge(
            "sovereign_cpu_package_power",
            "CPU package power over the last collection interval (RAPL).",
            Some(w()),
            &opt(vec![], e.power_watts),
        )?;
    }

    // Pinning.
    let p = &s.pinning;
    f.gauge(
        "sovereign_pinning_active",
        "Whether the agent pins the replica's thread pools to the profile's CPU sets.",
        None,
        &one(vec![], b(p.enabled && p.inactive_reason.is_none())),
    )?;
    f.gauge(
        "sovereign_pinning_threads",
        "Replica threads matched to each pool.",
        None,
        &p.pools
            .iter()
            .map(|x| {
                (
                    vec![("pool", x.pool.clone()), ("cpus", x.cpus.clone())],
                    x.threads as f64,
                )
            })
            .collect::<Vec<_>>(),
    )?;
    f.gauge(
        "sovereign_pinning_drifted_threads",
        "Threads allowed on, or last run on, a CPU outside their pool's set.",
        None,
        &p.pools
            .iter()
            .map(|x| (vec![("pool", x.pool.clone())], x.drifted_threads as f64))
            .collect::<Vec<_>>(),
    )?;
    f.counter(
        "sovereign_pinning_reapplied",
        "Times the pins were re-applied to a new replica process.",
        None,
        &one(vec![], p.reapplied_total as f64),
    )?;
    f.counter(
        "sovereign_pinning_errors",
        "Failed affinity or slice updates.",
        None,
        &one(vec![], p.errors_total as f64),
    )?;

    // Replica.
    let r = &s.replica;
    f.gauge(
        "sovereign_replica_up",
        "Whether the replica's metrics endpoint answered and parsed.",
        None,
        &one(vec![], b(r.up)),
    )?;
    if let Some(h) = &r.health {
        f.gauge(
            "sovereign_replica_finalized_height",
            "Highest finalized block height in the replica's validated pool.",
            None,
            &opt(vec![], h.finalized_height),
        )?;
        f.gauge(
            "sovereign_replica_certified_height",
            "Height of the replica's latest certified state.",
            None,
            &opt(vec![], h.certified_height),
        )?;
        f.gauge(
            "sovereign_replica_certification_lag_blocks",
            "Finalized height minus certified height.",
            None,
            &opt(vec![], h.certification_lag_blocks()),
        )?;
        f.counter(
            "sovereign_replica_checkpoint_op_duration",
            "Time the replica spent in checkpoint operations, by op.",
            Some(Unit::Seconds),
            &h.checkpoint_ops
                .iter()
                .map(|o| (vec![("op", o.label.clone())], o.sum_seconds))
                .collect::<Vec<_>>(),
        )?;
        f.counter(
            "sovereign_replica_checkpoint_ops",
            "Checkpoint operations the replica ran, by op.",
            None,
            &h.checkpoint_ops
                .iter()
                .map(|o| (vec![("op", o.label.clone())], o.count))
                .collect::<Vec<_>>(),
        )?;
        f.counter(
            "sovereign_replica_ni_dkg_duration",
            "Time the replica spent in NI-DKG crypto calls, by method.",
            Some(Unit::Seconds),
            &h.ni_dkg_ops
                .iter()
                .map(|o| (vec![("method", o.label.clone())], o.sum_seconds))
                .collect::<Vec<_>>(),
        )?;
        f.counter(
            "sovereign_replica_ni_dkg_calls",
            "NI-DKG crypto calls of the replica, by method.",
            None,
            &h.ni_dkg_ops
                .iter()
                .map(|o| (vec![("method", o.label.clone())], o.count))
                .collect::<Vec<_>>(),
        )?;
    }

    // Cost.
    let k = &s.cost;
    f.gauge(
        "sovereign_cost_eur_per_hour",
        "Running cost of the node: amortised purchase plus energy at the configured price.",
        None,
        &[
            (vec![("part", "capex".to_string())], k.capex_eur_per_hour),
            (vec![("part", "energy".to_string())], k.energy_eur_per_hour),
            (vec![("part", "total".to_string())], k.eur_per_hour),
        ],
    )?;
    f.gauge(
        "sovereign_node_power",
        "Node power the cost is computed from (measured sources plus configured unmeasured).",
        Some(w()),
        &one(vec![("sources", k.power_sources.join("+"))], k.power_watts),
    )?;
    f.counter(
        "sovereign_node_energy",
        "Energy accounted since the agent started.",
        Some(Unit::Joules),
        &one(vec![], k.energy_joules_total),
    )?;
    f.gauge(
        "sovereign_cost_joules_per_certified_block",
        "Energy per certified block since the agent first saw the replica.",
        None,
        &opt(vec![], k.joules_per_certified_block),
    )?;
    f.gauge(
        "sovereign_cost_eur_per_certified_block",
        "Cost (capex share plus energy) per certified block since the agent first saw the replica.",
        None,
        &opt(vec![], k.eur_per_certified_block),
    )?;
    Ok(())
}

/// Encodes one snapshot. Registered with a registry, it encodes whatever snapshot the
/// closure returns at scrape time.
#[derive(Debug)]
struct SnapshotCollector(Arc<Snapshot>);

impl Collector for SnapshotCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        encode_snapshot(&self.0, &mut encoder)
    }
}

/// The whole /metrics page for a snapshot.
pub fn encode(snapshot: &Arc<Snapshot>) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(SnapshotCollector(Arc::clone(snapshot))));
    let mut out = String::with_capacity(16 * 1024);
    // Writing to a String cannot fail; an encoder error would be a bug in a metric name.
    if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &registry) {
        tracing::error!(error = %e, "encoding metrics failed");
    }
    out
}
