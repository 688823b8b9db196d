//! `SUBNET.toml`: the subnet, its network, operators, nodes and the benchmark file per
//! hardware profile. Every problem is reported with `file:line:column` and the reason, all
//! of them at once. The schema is in docs/operator-guide.md.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

use hardware_profiles::{Location, Profile, ProfileSet};
use serde::Deserialize;
use thiserror::Error;
use toml::Spanned;

use crate::bench::BenchFile;

/// One problem in a subnet file.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{location}: {reason}")]
pub struct Invalid {
    pub location: Location,
    pub reason: String,
}

#[derive(Debug, Error)]
pub enum SubnetError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} problem(s):\n{}", .0.len(), .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<Invalid>),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSubnetFile {
    subnet: RawSubnet,
    network: RawNetwork,
    #[serde(default)]
    benchmarks: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    operator: Vec<RawOperator>,
    #[serde(default)]
    node: Vec<RawNode>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSubnet {
    name: Spanned<String>,
    block_time_seconds: Spanned<f64>,
    dkg_interval_length: Spanned<u64>,
    dkg_dealings_per_block: Spanned<u64>,
    #[serde(default)]
    dkg_transcripts_per_interval: Option<Spanned<u64>>,
    state_size_gib: Spanned<f64>,
    checkpoint_hash_target_seconds: Spanned<f64>,
    verifier_endpoint: Spanned<String>,
    #[serde(default)]
    profiles_dir: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNetwork {
    ipv6_prefix: Spanned<String>,
    ipv6_gateway: Spanned<String>,
    #[serde(default)]
    ipv4_gateway: Option<Spanned<String>>,
    dns: Spanned<Vec<String>>,
    #[serde(default)]
    agent_port: Option<Spanned<u16>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOperator {
    name: Spanned<String>,
    ssh_keys: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNode {
    name: Spanned<String>,
    profile: Spanned<String>,
    operator: Spanned<String>,
    ipv6_address: Spanned<String>,
    #[serde(default)]
    ipv4_address: Option<Spanned<String>>,
}

/// A validated subnet.
#[derive(Debug, Clone)]
pub struct Subnet {
    pub file: PathBuf,
    pub name: String,
    pub block_time_seconds: f64,
    pub dkg_interval_length: u64,
    pub dkg_dealings_per_block: u64,
    pub dkg_transcripts_per_interval: u64,
    pub state_size_gib: f64,
    pub checkpoint_hash_target_seconds: f64,
    pub verifier_endpoint: String,
    pub network: Network,
    pub operators: Vec<Operator>,
    pub nodes: Vec<Node>,
    /// The profiles the nodes use, by name.
    pub profiles: BTreeMap<String, Profile>,
    /// Benchmark per profile name (path as resolved, document).
    pub benchmarks: BTreeMap<String, (PathBuf, BenchFile)>,
}

#[derive(Debug, Clone)]
pub struct Network {
    pub ipv6_prefix: ipnet::Ipv6Net,
    pub ipv6_gateway: Ipv6Addr,
    pub ipv4_gateway: Option<Ipv4Addr>,
    pub dns: Vec<String>,
    pub agent_port: u16,
}

#[derive(Debug, Clone)]
pub struct Operator {
    pub name: String,
    pub ssh_keys: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Node {
    pub name: String,
    pub profile: String,
    pub operator: String,
    pub ipv6_address: Ipv6Addr,
    pub ipv4_address: Option<ipnet::Ipv4Net>,
}

impl Subnet {
    /// The subnet size n: the number of nodes.
    pub fn n(&self) -> u64 {
        self.nodes.len() as u64
    }

    /// Loads and validates `path`; `bench_overrides` (profile -> file) replace the file's
    /// `[benchmarks]` entries.
    pub fn load(
        path: &Path,
        bench_overrides: &BTreeMap<String, PathBuf>,
    ) -> Result<Subnet, SubnetError> {
        let text = std::fs::read_to_string(path).map_err(|source| SubnetError::Io {
            path: path.to_owned(),
            source,
        })?;
        Subnet::parse(&text, path, bench_overrides)
    }

    pub fn parse(
        text: &str,
        path: &Path,
        bench_overrides: &BTreeMap<String, PathBuf>,
    ) -> Result<Subnet, SubnetError> {
        let file = path.display().to_string();
        let base = path.parent().unwrap_or(Path::new("."));
        let at = |span: std::ops::Range<usize>| Location::of_span(&file, text, span);
        let raw: RawSubnetFile = toml::from_str(text).map_err(|e| {
            SubnetError::Invalid(vec![Invalid {
                location: at(e.span().unwrap_or(0..0)),
                reason: e.message().trim().to_string(),
            }])
        })?;
        let mut errors = Vec::new();
        let mut err = |span: std::ops::Range<usize>, reason: String| {
            errors.push(Invalid {
                location: at(span),
                reason,
            })
        };

        let s = &raw.subnet;
        if !valid_name(s.name.get_ref()) {
            err(s.name.span(), name_rule("subnet.name"));
        }
        let range = |v: &Spanned<f64>,
                     lo: f64,
                     hi: f64,
                     what: &str,
                     err: &mut dyn FnMut(std::ops::Range<usize>, String)| {
            let x = *v.get_ref();
            if !(x > lo && x <= hi) {
                err(v.span(), format!("{what} = {x} is outside ({lo}, {hi}]"));
            }
        };
        range(
            &s.block_time_seconds,
            0.0,
            600.0,
            "subnet.block_time_seconds",
            &mut err,
        );
        range(
            &s.state_size_gib,
            0.0,
            1_048_576.0,
            "subnet.state_size_gib",
            &mut err,
        );
        range(
            &s.checkpoint_hash_target_seconds,
            0.0,
            86_400.0,
            "subnet.checkpoint_hash_target_seconds",
            &mut err,
        );
        let count = |v: &Spanned<u64>,
                     lo: u64,
                     hi: u64,
                     what: &str,
                     err: &mut dyn FnMut(std::ops::Range<usize>, String)| {
            let x = *v.get_ref();
            if !(lo..=hi).contains(&x) {
                err(v.span(), format!("{what} = {x} is outside {lo}..={hi}"));
            }
        };
        count(
            &s.dkg_interval_length,
            1,
            1_000_000,
            "subnet.dkg_interval_length",
            &mut err,
        );
        count(
            &s.dkg_dealings_per_block,
            1,
            1000,
            "subnet.dkg_dealings_per_block",
            &mut err,
        );
        if let Some(t) = &s.dkg_transcripts_per_interval {
            count(t, 1, 16, "subnet.dkg_transcripts_per_interval", &mut err);
        }
        let endpoint = s.verifier_endpoint.get_ref();
        match endpoint.parse::<hyper::Uri>() {
            Ok(uri)
                if matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some() => {}
            _ => err(
                s.verifier_endpoint.span(),
                format!("subnet.verifier_endpoint {endpoint:?} is not an http(s) URL with a host"),
            ),
        }

        // Profiles: the embedded set, with the subnet's own directory over it.
        let profiles = match &s.profiles_dir {
            None => ProfileSet::embedded().map_err(|e| e.to_string()),
            Some(dir) => ProfileSet::embedded_with_overrides(&base.join(dir.get_ref()))
                .map_err(|e| e.to_string()),
        };
        let profiles = match profiles {
            Ok(p) => Some(p),
            Err(e) => {
                let span = s.profiles_dir.as_ref().map_or(0..0, Spanned::span);
                err(span, format!("hardware profiles: {e}"));
                None
            }
        };

        let n = &raw.network;
        let prefix = match n.ipv6_prefix.get_ref().parse::<ipnet::Ipv6Net>() {
            Ok(p) => Some(p),
            Err(e) => {
                err(
                    n.ipv6_prefix.span(),
                    format!("network.ipv6_prefix: {e} (expected e.g. 2001:db8::/64)"),
                );
                None
            }
        };
        let gateway = match n.ipv6_gateway.get_ref().parse::<Ipv6Addr>() {
            Ok(g) => {
                if let Some(p) = prefix
                    && !p.contains(&g)
                {
                    err(
                        n.ipv6_gateway.span(),
                        format!("network.ipv6_gateway {g} is not in {p}"),
                    );
                }
                Some(g)
            }
            Err(e) => {
                err(n.ipv6_gateway.span(), format!("network.ipv6_gateway: {e}"));
                None
            }
        };
        let ipv4_gateway =
            n.ipv4_gateway
                .as_ref()
                .and_then(|g| match g.get_ref().parse::<Ipv4Addr>() {
                    Ok(a) => Some(a),
                    Err(e) => {
                        err(g.span(), format!("network.ipv4_gateway: {e}"));
                        None
                    }
                });
        if n.dns.get_ref().is_empty() {
            err(n.dns.span(), "network.dns: at least one DNS server".into());
        }
        for d in n.dns.get_ref() {
            if d.parse::<std::net::IpAddr>().is_err() {
                err(
                    n.dns.span(),
                    format!("network.dns: {d:?} is not an IP address"),
                );
            }
        }
        let agent_port = n.agent_port.as_ref().map_or(9420, |p| *p.get_ref());

        let mut operators = Vec::new();
        let mut operator_names = BTreeSet::new();
        for op in &raw.operator {
            let name = op.name.get_ref();
            if !valid_name(name) {
                err(op.name.span(), name_rule("operator.name"));
            }
            if !operator_names.insert(name.clone()) {
                err(
                    op.name.span(),
                    format!("operator {name:?} is defined twice"),
                );
            }
            if op.ssh_keys.is_empty() {
                err(op.name.span(), format!("operator {name:?} has no ssh_keys"));
            }
            for key in &op.ssh_keys {
                if let Err(e) = ssh_key::PublicKey::from_openssh(key.get_ref()) {
                    err(
                        key.span(),
                        format!("operator {name:?}: not an OpenSSH public key: {e}"),
                    );
                }
            }
            operators.push(Operator {
                name: name.clone(),
                ssh_keys: op
                    .ssh_keys
                    .iter()
                    .map(|k| k.get_ref().trim().to_string())
                    .collect(),
            });
        }

        let mut nodes = Vec::new();
        let mut node_names = BTreeSet::new();
        let mut addresses = BTreeSet::new();
        let mut used_profiles = BTreeMap::new();
        if raw.node.is_empty() {
            err(0..0, "no [[node]]: a subnet needs nodes".into());
        }
        for node in &raw.node {
            let name = node.name.get_ref();
            if !valid_name(name) {
                err(node.name.span(), name_rule("node.name"));
            }
            if !node_names.insert(name.clone()) {
                err(node.name.span(), format!("node {name:?} is defined twice"));
            }
            let profile_name = node.profile.get_ref();
            if let Some(set) = &profiles {
                match set.get(profile_name) {
                    Some(p) => {
                        used_profiles.insert(profile_name.clone(), p.clone());
                    }
                    None => err(
                        node.profile.span(),
                        format!(
                            "node {name:?}: no hardware profile {profile_name:?} (profiles: {})",
                            set.profiles()
                                .iter()
                                .map(|p| p.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ),
                }
            }
            if !operator_names.contains(node.operator.get_ref()) {
                err(
                    node.operator.span(),
                    format!(
                        "node {name:?}: no [[operator]] named {:?}",
                        node.operator.get_ref()
                    ),
                );
            }
            let address = match node.ipv6_address.get_ref().parse::<Ipv6Addr>() {
                Ok(a) => {
                    if let Some(p) = prefix {
                        if !p.contains(&a) {
                            err(
                                node.ipv6_address.span(),
                                format!("node {name:?}: {a} is not in {p}"),
                            );
                        } else if a == p.network() {
                            err(
                                node.ipv6_address.span(),
                                format!("node {name:?}: {a} is the prefix's network address"),
                            );
                        }
                    }
                    if Some(a) == gateway {
                        err(
                            node.ipv6_address.span(),
                            format!("node {name:?}: {a} is the gateway"),
                        );
                    }
                    if !addresses.insert(a) {
                        err(
                            node.ipv6_address.span(),
                            format!("node {name:?}: address {a} is used twice"),
                        );
                    }
                    Some(a)
                }
                Err(e) => {
                    err(
                        node.ipv6_address.span(),
                        format!(
                            "node {name:?}: ipv6_address: {e} (expected an address without prefix length)"
                        ),
                    );
                    None
                }
            };
            let ipv4 = node.ipv4_address.as_ref().and_then(|v| {
                match v.get_ref().parse::<ipnet::Ipv4Net>() {
                    Ok(a) => {
                        if ipv4_gateway.is_none() {
                            err(
                                v.span(),
                                format!("node {name:?}: ipv4_address without network.ipv4_gateway"),
                            );
                        }
                        Some(a)
                    }
                    Err(e) => {
                        err(
                            v.span(),
                            format!(
                                "node {name:?}: ipv4_address: {e} (expected e.g. 192.0.2.11/24)"
                            ),
                        );
                        None
                    }
                }
            });
            if let Some(a) = address {
                nodes.push(Node {
                    name: name.clone(),
                    profile: profile_name.clone(),
                    operator: node.operator.get_ref().clone(),
                    ipv6_address: a,
                    ipv4_address: ipv4,
                });
            }
        }

        let mut benchmarks = BTreeMap::new();
        for (profile, file) in &raw.benchmarks {
            if profiles
                .as_ref()
                .is_some_and(|set| set.get(profile).is_none())
            {
                err(
                    file.span(),
                    format!("benchmarks: no hardware profile {profile:?}"),
                );
                continue;
            }
            if bench_overrides.contains_key(profile) {
                continue;
            }
            let resolved = base.join(file.get_ref());
            match BenchFile::load(&resolved) {
                Ok(doc) => {
                    benchmarks.insert(profile.clone(), (resolved, doc));
                }
                Err(e) => err(file.span(), format!("benchmarks.{profile}: {e}")),
            }
        }
        for (profile, resolved) in bench_overrides {
            if profiles
                .as_ref()
                .is_some_and(|set| set.get(profile).is_none())
            {
                err(
                    0..0,
                    format!("--bench {profile}=...: no hardware profile {profile:?}"),
                );
                continue;
            }
            match BenchFile::load(resolved) {
                Ok(doc) => {
                    benchmarks.insert(profile.clone(), (resolved.clone(), doc));
                }
                Err(e) => err(
                    0..0,
                    format!("--bench {profile}={}: {e}", resolved.display()),
                ),
            }
        }
        for profile in used_profiles.keys() {
            if !benchmarks.contains_key(profile) {
                err(
                    0..0,
                    format!(
                        "no benchmark for profile {profile:?}: add it to [benchmarks] or pass --bench {profile}=FILE"
                    ),
                );
            }
        }

        if !errors.is_empty() {
            return Err(SubnetError::Invalid(errors));
        }
        let (Some(prefix), Some(gateway)) = (prefix, gateway) else {
            return Err(SubnetError::Invalid(vec![]));
        };
        Ok(Subnet {
            file: path.to_owned(),
            name: s.name.get_ref().clone(),
            block_time_seconds: *s.block_time_seconds.get_ref(),
            dkg_interval_length: *s.dkg_interval_length.get_ref(),
            dkg_dealings_per_block: *s.dkg_dealings_per_block.get_ref(),
            dkg_transcripts_per_interval: s
                .dkg_transcripts_per_interval
                .as_ref()
                .map_or(2, |t| *t.get_ref()),
            state_size_gib: *s.state_size_gib.get_ref(),
            checkpoint_hash_target_seconds: *s.checkpoint_hash_target_seconds.get_ref(),
            verifier_endpoint: endpoint.clone(),
            network: Network {
                ipv6_prefix: prefix,
                ipv6_gateway: gateway,
                ipv4_gateway,
                dns: n.dns.get_ref().clone(),
                agent_port,
            },
            operators,
            nodes,
            profiles: used_profiles,
            benchmarks,
        })
    }
}

/// Lowercase letters, digits and '-', starting with a letter, at most 63 (a DNS label).
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && name.len() <= 63
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

fn name_rule(field: &str) -> String {
    format!(
        "{field}: lowercase letters, digits and '-', starting with a letter, at most 63 characters"
    )
}
