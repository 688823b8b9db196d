//! The snapshot in the OpenMetrics text format (prometheus-client's encoder), base units.
//!
//! Info-style metrics are gauges with value 1 named `*_info`, not the OpenMetrics `info`
//! type, so that Prometheus' classic text parser (and `promtool check metrics`) accept them.

use crate::metric_family::{FamilyWriter, one};
use crate::snapshot::Snapshot;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::registry::Registry;
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

fn encode_snapshot(s: &Snapshot, encoder: &mut DescriptorEncoder) -> fmt::Result {
    let mut f = FamilyWriter::new(encoder);
    f.gauge(
        "sovereign_agent_info",
        "The node agent's version.",
        None,
        &one(vec![("version", s.agent_version.clone())], 1.0),
    )?;
    crate::collect::encode_metrics(&s.collectors, &mut f)?;
    crate::assessment::encode_metrics(&s.node, &mut f)?;
    crate::selftest_child::encode_metrics(&s.crypto, &mut f)?;
    crate::collect::gpu::encode_metrics(&s.gpus, &mut f)?;
    if let Some(e) = &s.cpu_energy {
        crate::collect::rapl::encode_metrics(e, &mut f)?;
    }
    crate::pinning_loop::encode_metrics(&s.pinning, &mut f)?;
    crate::collect::replica::encode_metrics(&s.replica, &mut f)?;
    crate::cost::encode_metrics(&s.cost, &mut f)
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
