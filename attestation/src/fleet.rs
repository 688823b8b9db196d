//! `attest fleet`: fetch fresh evidence from every node agent concurrently and verify it.
//!
//! Each request gets its own random nonce, so a recorded answer cannot be replayed; a node
//! that answers 429 or 503 is asked again within the per-node deadline, each time with a new
//! nonce ([`crate::retry`]). Plain HTTP is
//! enough for integrity: the bundle is bound to the nonce and signed by AMD-rooted hardware, and
//! it carries nothing secret. A node that does not answer is reported, never fatal.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::bundle::{Bundle, verify_bundle};
use crate::nodes::{NodeEntry, NodeList};
use crate::policy::Policy;
use crate::report::Verdict;
use crate::retry::{Evidence, EvidenceClient, RetryPolicy, evidence_client, fetch_evidence};
use crate::snp::amd::ChainVerifier;

pub use crate::retry::MAX_BUNDLE_BYTES;

/// What a fleet check concluded about one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    /// Every check passed.
    Admitted,
    /// Some check failed.
    Rejected,
    /// No answer, a transport error, an HTTP error status, or a timeout.
    Unreachable,
    /// An answer that is not a bundle.
    BadEvidence,
}

/// The outcome of one node's check.
#[derive(Debug, Clone, Serialize)]
pub struct NodeResult {
    /// The node's name in NODES.toml.
    pub name: String,
    /// The node agent's base URL.
    pub url: String,
    /// Admitted, rejected, unreachable or with bad evidence.
    pub status: NodeStatus,
    /// Why the node was unreachable, its evidence unusable, or the failed checks.
    pub reason: String,
    /// Time from the first request to the verdict, milliseconds.
    pub elapsed_ms: u64,
    /// Every check, when the node's evidence was verified.
    pub verdict: Option<Verdict>,
}

/// How a fleet check runs.
#[derive(Debug, Clone, Copy)]
pub struct FleetOptions {
    /// Nodes queried at once.
    pub concurrency: usize,
    /// Per node: the deadline of all its tries together, requests and bodies (a busy node
    /// is asked again within it, see [`crate::retry`]).
    pub timeout: Duration,
    /// Verification time (Unix seconds).
    pub now: u64,
}

/// Query every node (at most `concurrency` at a time) and verify what comes back.
pub async fn run(
    nodes: &NodeList,
    policy: Arc<Policy>,
    chains: Arc<ChainVerifier>,
    opts: FleetOptions,
) -> Vec<NodeResult> {
    let client = evidence_client(opts.timeout);
    let semaphore = Arc::new(tokio::sync::Semaphore::new(opts.concurrency.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for (i, node) in nodes.node.iter().cloned().enumerate() {
        let client = client.clone();
        let semaphore = semaphore.clone();
        let policy = policy.clone();
        let chains = chains.clone();
        tasks.spawn(async move {
            let _permit = semaphore.acquire_owned().await;
            (i, query_node(&client, node, policy, chains, opts).await)
        });
    }
    let mut results: Vec<Option<NodeResult>> = vec![None; nodes.node.len()];
    while let Some(joined) = tasks.join_next().await {
        if let Ok((i, r)) = joined
            && let Some(slot) = results.get_mut(i)
        {
            *slot = Some(r);
        }
    }
    results
        .into_iter()
        .zip(&nodes.node)
        .map(|(r, node)| {
            r.unwrap_or_else(|| NodeResult {
                name: node.name.clone(),
                url: node.url.clone(),
                status: NodeStatus::Unreachable,
                reason: "query task failed".into(),
                elapsed_ms: 0,
                verdict: None,
            })
        })
        .collect()
}

async fn query_node(
    client: &EvidenceClient,
    node: NodeEntry,
    policy: Arc<Policy>,
    chains: Arc<ChainVerifier>,
    opts: FleetOptions,
) -> NodeResult {
    let start = Instant::now();
    let result = |status, reason: String, verdict| NodeResult {
        name: node.name.clone(),
        url: node.url.clone(),
        status,
        reason,
        elapsed_ms: start.elapsed().as_millis() as u64,
        verdict,
    };
    let expected = match node.expected() {
        Ok(e) => e,
        Err(e) => return result(NodeStatus::BadEvidence, e.to_string(), None),
    };
    let retry = RetryPolicy::within(opts.timeout);
    let Evidence { nonce, body, .. } = match fetch_evidence(client, &node.url, &retry).await {
        Ok(evidence) => evidence,
        Err(e) => return result(NodeStatus::Unreachable, e.to_string(), None),
    };
    let bundle = match Bundle::from_json(&body) {
        Ok(b) => b,
        Err(e) => return result(NodeStatus::BadEvidence, e.to_string(), None),
    };
    let verdict = tokio::task::spawn_blocking(move || {
        verify_bundle(&bundle, &nonce, &policy, &chains, opts.now, &expected)
    })
    .await;
    match verdict {
        Err(e) => result(
            NodeStatus::BadEvidence,
            format!("verification task failed: {e}"),
            None,
        ),
        Ok(v) if v.admitted => result(NodeStatus::Admitted, String::new(), Some(v)),
        Ok(v) => {
            let failed: Vec<String> = v.failed().map(|c| c.name.clone()).collect();
            result(
                NodeStatus::Rejected,
                format!("failed: {}", failed.join(", ")),
                Some(v),
            )
        }
    }
}

/// One line per node for people.
pub fn table(results: &[NodeResult]) -> String {
    let name_w = results
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = format!("{:name_w$}  {:11}  {:>7}  reason\n", "node", "status", "ms");
    for r in results {
        let status = match r.status {
            NodeStatus::Admitted => "ADMITTED",
            NodeStatus::Rejected => "REJECTED",
            NodeStatus::Unreachable => "UNREACHABLE",
            NodeStatus::BadEvidence => "BAD",
        };
        out.push_str(&format!(
            "{:name_w$}  {status:11}  {:>7}  {}\n",
            r.name, r.elapsed_ms, r.reason
        ));
    }
    let admitted = results
        .iter()
        .filter(|r| r.status == NodeStatus::Admitted)
        .count();
    out.push_str(&format!("{admitted}/{} nodes admitted\n", results.len()));
    out
}
