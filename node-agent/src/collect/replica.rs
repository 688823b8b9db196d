//! The replica's health, read from its own Prometheus endpoint. Metric names are the IC
//! replica's (dfinity/ic): artifact_pool_consensus_height_stat (rs/artifact_pool/src/
//! consensus_pool.rs), state_manager_latest_certified_height and
//! state_manager_checkpoint_op_duration_seconds (rs/state_manager/src/lib.rs),
//! consensus_batch_height (rs/consensus/src/consensus/metrics.rs), crypto_duration_seconds
//! with domain="ni_dkg" (rs/crypto/internal/logmon/src/metrics.rs), ic_replica_info
//! (rs/replica/src/main.rs).
//!
//! The replica is "up" only when the page is the replica's: it carries ic_replica_info or
//! one of the replica's height families. Any other page that parses (a Prometheus server's
//! own /metrics on the same port, another exporter) is "not the replica's metrics", with
//! what the page is instead.

use super::{Collector, Reading};
use crate::clock::Clock;
use crate::metric_family::{FamilyWriter, flag, one, opt};
use crate::snapshot::ReplicaStatus;
use crate::snapshot::{HistogramTotals, ReplicaHealth};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use prometheus_client::registry::Unit;
use prometheus_parse::{Sample, Scrape, Value};
use std::fmt;
use std::time::Duration;

/// Why the replica's health could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReplicaScrapeError {
    /// The configured URL does not parse or is not `http://`.
    #[error("invalid replica metrics URL {url:?}: {detail}")]
    Url {
        /// The configured URL.
        url: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The request failed (connection refused, reset) or the body could not be read.
    #[error("GET {url}: {detail}")]
    Http {
        /// The URL requested.
        url: String,
        /// The client's error.
        detail: String,
    },
    /// No complete answer within the scrape timeout.
    #[error("GET {url}: timed out after {seconds} s")]
    Timeout {
        /// The URL requested.
        url: String,
        /// The scrape timeout, seconds.
        seconds: f64,
    },
    /// The endpoint answered with a status other than success.
    #[error("GET {url}: HTTP status {status}")]
    Status {
        /// The URL requested.
        url: String,
        /// The HTTP status code.
        status: u16,
    },
    /// The page is not in the Prometheus text format; the parser's message.
    #[error("replica metrics page does not parse: {0}")]
    Parse(String),
    /// The page parses but carries none of the replica's families.
    #[error("not the replica's metrics: {url} serves {found}")]
    NoReplicaMetrics {
        /// The URL the page was served at.
        url: String,
        /// What the page is instead ([`not_the_replica`]).
        found: String,
    },
}

fn value(s: &Sample) -> Option<f64> {
    match s.value {
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => Some(v),
        _ => None,
    }
}

fn find<'a>(
    samples: &'a [Sample],
    metric: &str,
    labels: &[(&str, &str)],
) -> impl Iterator<Item = &'a Sample> {
    let metric = metric.to_string();
    let labels: Vec<(String, String)> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    samples.iter().filter(move |s| {
        s.metric == metric
            && labels
                .iter()
                .all(|(k, v)| s.labels.get(k) == Some(v.as_str()))
    })
}

/// `<name>_sum` and `<name>_count` per value of `by`, among samples with `labels`.
fn histogram_totals(
    samples: &[Sample],
    name: &str,
    labels: &[(&str, &str)],
    by: &str,
) -> Vec<HistogramTotals> {
    let mut out: Vec<HistogramTotals> = Vec::new();
    for (suffix, is_sum) in [("_sum", true), ("_count", false)] {
        for s in find(samples, &format!("{name}{suffix}"), labels) {
            let (Some(label), Some(v)) = (s.labels.get(by), value(s)) else {
                continue;
            };
            let entry = match out.iter().position(|h| h.label == label) {
                Some(i) => &mut out[i],
                None => {
                    out.push(HistogramTotals {
                        label: label.to_string(),
                        ..HistogramTotals::default()
                    });
                    let last = out.len() - 1;
                    &mut out[last]
                }
            };
            if is_sum {
                entry.sum_seconds += v;
            } else {
                entry.count += v;
            }
        }
    }
    out.sort_by(|a, b| a.label.cmp(&b.label));
    out
}

/// Families only the replica exports: its version gauge and its height families.
pub const REPLICA_FAMILIES: [&str; 4] = [
    "ic_replica_info",
    "artifact_pool_consensus_height_stat",
    "state_manager_latest_certified_height",
    "consensus_batch_height",
];

/// `None` when the page is the replica's (it has a family of [`REPLICA_FAMILIES`]);
/// otherwise what the page is instead.
pub fn not_the_replica(text: &str) -> Option<String> {
    let names: std::collections::BTreeSet<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split(['{', ' ']).next())
        .collect();
    if REPLICA_FAMILIES.iter().any(|f| names.contains(f)) {
        return None;
    }
    let has_prefix = |p: &str| names.iter().any(|n| n.starts_with(p));
    Some(if names.is_empty() {
        "a page without samples".to_string()
    } else if names.contains("prometheus_build_info") || has_prefix("prometheus_") {
        format!(
            "a Prometheus server's own metrics ({} series names, prometheus_*), none of {}",
            names.len(),
            REPLICA_FAMILIES.join(", ")
        )
    } else {
        format!(
            "{} series names (first: {}), none of {}",
            names.len(),
            names.iter().next().unwrap(),
            REPLICA_FAMILIES.join(", ")
        )
    })
}

/// Health figures from a replica metrics page (Prometheus text format).
pub fn parse_page(text: &str) -> Result<ReplicaHealth, ReplicaScrapeError> {
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .map_err(|e| ReplicaScrapeError::Parse(e.to_string()))?;
    let samples = &scrape.samples;
    let gauge = |metric: &str, labels: &[(&str, &str)]| {
        find(samples, metric, labels)
            .filter_map(value)
            .reduce(f64::max)
    };
    let health = ReplicaHealth {
        finalized_height: gauge(
            "artifact_pool_consensus_height_stat",
            &[
                ("pool_type", "validated"),
                ("stat", "max"),
                ("type", "finalization"),
            ],
        ),
        certified_height: gauge("state_manager_latest_certified_height", &[]),
        batch_height: gauge("consensus_batch_height", &[]),
        checkpoint_ops: histogram_totals(
            samples,
            "state_manager_checkpoint_op_duration_seconds",
            &[],
            "op",
        ),
        ni_dkg_ops: histogram_totals(
            samples,
            "crypto_duration_seconds",
            &[("domain", "ni_dkg"), ("scope", "full"), ("result", "ok")],
            "method_name",
        ),
    };
    Ok(health)
}

/// Scrapes the replica's endpoint over plain HTTP.
pub struct ReplicaScraper {
    url: String,
    uri: hyper::Uri,
    timeout: Duration,
    client: Client<hyper_util::client::legacy::connect::HttpConnector, Empty<bytes::Bytes>>,
}

impl ReplicaScraper {
    /// A scraper of `url` (`http://` only) whose requests time out after `timeout`. Err
    /// when the URL does not parse or is not plain HTTP.
    pub fn new(url: &str, timeout: Duration) -> Result<ReplicaScraper, ReplicaScrapeError> {
        let uri: hyper::Uri =
            url.parse()
                .map_err(|e: hyper::http::uri::InvalidUri| ReplicaScrapeError::Url {
                    url: url.to_string(),
                    detail: e.to_string(),
                })?;
        if uri.scheme_str() != Some("http") {
            return Err(ReplicaScrapeError::Url {
                url: url.to_string(),
                detail: "only http:// is supported".into(),
            });
        }
        Ok(ReplicaScraper {
            url: url.to_string(),
            uri,
            timeout,
            client: Client::builder(TokioExecutor::new()).build_http(),
        })
    }

    /// The URL scraped.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// GETs the page, within the timeout; Err on a failed request, a status other than
    /// success, a body that is not UTF-8, or the timeout.
    pub(crate) async fn fetch(&self) -> Result<String, ReplicaScrapeError> {
        let http = |detail: String| ReplicaScrapeError::Http {
            url: self.url.clone(),
            detail,
        };
        let work = async {
            let resp = self
                .client
                .get(self.uri.clone())
                .await
                .map_err(|e| http(format!("{e:#}")))?;
            let status = resp.status();
            if !status.is_success() {
                return Err(ReplicaScrapeError::Status {
                    url: self.url.clone(),
                    status: status.as_u16(),
                });
            }
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| http(e.to_string()))?
                .to_bytes();
            String::from_utf8(body.to_vec()).map_err(|e| http(format!("body is not UTF-8: {e}")))
        };
        tokio::time::timeout(self.timeout, work)
            .await
            .map_err(|_| ReplicaScrapeError::Timeout {
                url: self.url.clone(),
                seconds: self.timeout.as_secs_f64(),
            })?
    }

    /// Fetches and parses; a page that is not the replica's is an error that says what the
    /// page is ([`not_the_replica`]).
    pub async fn scrape(&self) -> Result<ReplicaHealth, ReplicaScrapeError> {
        let text = self.fetch().await?;
        scrape_page(&self.url, &text)
    }
}

/// Parses `text`, served at `url`, when it is the replica's page.
pub fn scrape_page(url: &str, text: &str) -> Result<ReplicaHealth, ReplicaScrapeError> {
    let health = parse_page(text)?;
    if let Some(found) = not_the_replica(text) {
        return Err(ReplicaScrapeError::NoReplicaMetrics {
            url: url.to_string(),
            found,
        });
    }
    Ok(health)
}

/// Where the replica's metrics come from.
pub enum ReplicaSource {
    /// The replica's endpoint, scraped over HTTP.
    Http(Box<ReplicaScraper>),
    /// Pages recorded from a replica, replayed in order (the last one repeats).
    Recorded {
        /// The recorded pages, Prometheus text format.
        pages: Vec<String>,
        /// Index of the page the next pass reads.
        next: usize,
    },
}

/// The replica collector (`replica`) for one pass: the source, the URL it is configured
/// under, and the runtime that runs an HTTP scrape from the collection thread.
pub struct ReplicaCollector<'a> {
    /// Where the page comes from.
    pub source: &'a mut ReplicaSource,
    /// The configured metrics URL (a recorded page is checked as if served there).
    pub url: &'a str,
    /// Runs the async scrape to completion.
    pub runtime: &'a tokio::runtime::Runtime,
}

impl Collector for ReplicaCollector<'_> {
    fn name(&self) -> &'static str {
        "replica"
    }

    fn collect(&mut self, _clock: &dyn Clock) -> Result<Reading, String> {
        let health = match self.source {
            ReplicaSource::Http(scraper) => self
                .runtime
                .block_on(scraper.scrape())
                .map_err(|e| e.to_string())?,
            ReplicaSource::Recorded { pages, next } => {
                let i = (*next).min(pages.len().saturating_sub(1));
                *next += 1;
                let page = pages.get(i).ok_or("no recorded replica page")?;
                scrape_page(self.url, page).map_err(|e| e.to_string())?
            }
        };
        Ok(Reading::Replica(health))
    }
}

/// The replica collector's metric families.
pub fn encode_metrics(replica: &ReplicaStatus, families: &mut FamilyWriter) -> fmt::Result {
    families.gauge(
        "sovereign_replica_up",
        "Whether the replica's metrics endpoint answered and parsed.",
        None,
        &one(vec![], flag(replica.up)),
    )?;
    if let Some(health) = &replica.health {
        families.gauge(
            "sovereign_replica_finalized_height",
            "Highest finalized block height in the replica's validated pool.",
            None,
            &opt(vec![], health.finalized_height),
        )?;
        families.gauge(
            "sovereign_replica_certified_height",
            "Height of the replica's latest certified state.",
            None,
            &opt(vec![], health.certified_height),
        )?;
        families.gauge(
            "sovereign_replica_certification_lag_blocks",
            "Finalized height minus certified height.",
            None,
            &opt(vec![], health.certification_lag_blocks()),
        )?;
        families.counter(
            "sovereign_replica_checkpoint_op_duration",
            "Time the replica spent in checkpoint operations, by op.",
            Some(Unit::Seconds),
            &health
                .checkpoint_ops
                .iter()
                .map(|op| (vec![("op", op.label.clone())], op.sum_seconds))
                .collect::<Vec<_>>(),
        )?;
        families.counter(
            "sovereign_replica_checkpoint_ops",
            "Checkpoint operations the replica ran, by op.",
            None,
            &health
                .checkpoint_ops
                .iter()
                .map(|op| (vec![("op", op.label.clone())], op.count))
                .collect::<Vec<_>>(),
        )?;
        families.counter(
            "sovereign_replica_ni_dkg_duration",
            "Time the replica spent in NI-DKG crypto calls, by method.",
            Some(Unit::Seconds),
            &health
                .ni_dkg_ops
                .iter()
                .map(|op| (vec![("method", op.label.clone())], op.sum_seconds))
                .collect::<Vec<_>>(),
        )?;
        families.counter(
            "sovereign_replica_ni_dkg_calls",
            "NI-DKG crypto calls of the replica, by method.",
            None,
            &health
                .ni_dkg_ops
                .iter()
                .map(|op| (vec![("method", op.label.clone())], op.count))
                .collect::<Vec<_>>(),
        )?;
    }
    Ok(())
}
