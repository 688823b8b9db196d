//! Writing metric families for the /metrics page: each part of the snapshot describes its
//! own families (`encode_metrics` beside what it measures) through a [`FamilyWriter`], and
//! `exposition` puts them on the page in a fixed order.

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Unit;
use std::fmt;

/// One sample's label pairs: (label name, value).
pub type Labels = Vec<(&'static str, String)>;

/// Writes metric families: each family's descriptor once, then one sample per label set;
/// a family without samples is left out.
pub struct FamilyWriter<'e, 'a> {
    encoder: &'e mut DescriptorEncoder<'a>,
}

impl<'e, 'a> FamilyWriter<'e, 'a> {
    /// A writer of families into `encoder` (the /metrics page's collector).
    pub fn new(encoder: &'e mut DescriptorEncoder<'a>) -> FamilyWriter<'e, 'a> {
        FamilyWriter { encoder }
    }

    /// A gauge family `name` with `help` and `unit`, one sample per label set.
    pub fn gauge(
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

    /// A counter family `name` with `help` and `unit`, one sample per label set (samples
    /// named with the `_total` suffix).
    pub fn counter(
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

/// 1 for true, 0 for false.
pub fn flag(v: bool) -> f64 {
    if v { 1.0 } else { 0.0 }
}

/// One sample.
pub fn one(labels: Labels, v: f64) -> Vec<(Labels, f64)> {
    vec![(labels, v)]
}

/// One sample where there is a value, none otherwise.
pub fn opt(labels: Labels, v: Option<f64>) -> Vec<(Labels, f64)> {
    v.map(|v| vec![(labels, v)]).unwrap_or_default()
}

/// The unit `watts` (prometheus-client names no unit for power).
pub fn watts() -> Unit {
    Unit::Other("watts".to_string())
}

/// The unit `hertz` (prometheus-client names no unit for frequency).
pub fn hertz() -> Unit {
    Unit::Other("hertz".to_string())
}
