//! `node.toml`: the node's identity and network (and the plan's offload figures, which the
//! agent only reports), the one settings member of a bundle. Nothing here can change what
//! the node trusts (key location, evidence source, state directory, listeners): those come
//! from the measured image only.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::members::NODE_CONFIG;

/// `schema` of node.toml.
pub const NODE_CONFIG_SCHEMA: &str = "sovereign-node/node-config/v2";

/// Bounds of `collect_interval_seconds`.
pub const COLLECT_INTERVAL_RANGE: (f64, f64) = (1.0, 3600.0);

/// node.toml: what a node takes from its bundle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// Always [`NODE_CONFIG_SCHEMA`].
    pub schema: String,
    /// The subnet's name.
    pub subnet: String,
    /// The node's name in the plan (shown on /v1/status and the dashboard, recorded at
    /// enrolment).
    pub name: String,
    /// Written to /etc/hostname: one RFC 1123 host name.
    pub hostname: String,
    /// The hardware profile the agent is pinned to (one of the image's profiles).
    pub profile: String,
    /// The agent's collector interval; absent: the image's setting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collect_interval_seconds: Option<f64>,
    /// The node's addresses, gateways and name servers.
    pub network: NodeNetwork,
    /// Who operates the node, and the SSH keys that may log in.
    pub operator: NodeOperator,
    /// What the plan computed the GPU takes off this node's host; absent where the plan
    /// had no GPU-assisted figures for the node's profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offload: Option<NodeOffload>,
}

/// node.toml's `[offload]`: the plan's figures of the host work the GPU takes off a node of
/// its profile, from the profile's benchmark (CPU path minus GPU-assisted path). The agent
/// exports them beside the CPU-seconds it counts offloaded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeOffload {
    /// Where the benchmark was measured (machine, date, command), as the plan prints it.
    pub benchmark: String,
    /// Dealing verifications in one DKG round (`2n`).
    pub dkg_round_dealings: u64,
    /// Host CPU seconds one DKG round's verifications no longer cost.
    pub host_cpu_seconds_per_dkg_round: f64,
    /// Threads at the peak without the GPU minus with it (negative: the GPU mode needs more).
    pub burst_threads_freed: i64,
    /// Threads busy on average without the GPU minus with it.
    pub steady_threads_freed: f64,
}

/// node.toml's `[network]`: static addressing, as text (parsed by [`NodeConfig::addresses`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeNetwork {
    /// Address with prefix length, e.g. "2001:db8:0:1::11/64".
    pub ipv6_address: String,
    /// The IPv6 default gateway, e.g. "2001:db8:0:1::1".
    pub ipv6_gateway: String,
    /// IPv4 address with prefix length, e.g. "192.0.2.11/24".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv4_address: Option<String>,
    /// The IPv4 default gateway; only with `ipv4_address`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv4_gateway: Option<String>,
    /// Name server addresses (IPv6 or IPv4).
    pub dns: Vec<String>,
}

/// node.toml's `[operator]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeOperator {
    /// The node operator's name (same rules as node names).
    pub name: String,
    /// OpenSSH public keys of the node's operator (one line each).
    pub ssh_keys: Vec<String>,
}

impl NodeOffload {
    /// Finite figures, a benchmark named in one line of printable text.
    fn validate(&self) -> Result<(), ConfigError> {
        if self.benchmark.is_empty()
            || self.benchmark.len() > 512
            || self.benchmark.chars().any(char::is_control)
        {
            return Err(invalid(
                "offload.benchmark",
                "is not 1 to 512 bytes of one line of text",
            ));
        }
        for (field, value) in [
            (
                "offload.host_cpu_seconds_per_dkg_round",
                self.host_cpu_seconds_per_dkg_round,
            ),
            ("offload.steady_threads_freed", self.steady_threads_freed),
        ] {
            if !value.is_finite() {
                return Err(invalid(field, format!("{value} is not a finite number")));
            }
        }
        Ok(())
    }
}

/// The parsed addresses of [`NodeNetwork`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addresses {
    /// [`NodeNetwork::ipv6_address`] with its prefix length.
    pub ipv6: ipnet::Ipv6Net,
    /// [`NodeNetwork::ipv6_gateway`].
    pub ipv6_gateway: Ipv6Addr,
    /// [`NodeNetwork::ipv4_address`] with its prefix length.
    pub ipv4: Option<ipnet::Ipv4Net>,
    /// [`NodeNetwork::ipv4_gateway`].
    pub ipv4_gateway: Option<Ipv4Addr>,
    /// [`NodeNetwork::dns`].
    pub dns: Vec<IpAddr>,
}

fn invalid(field: &str, reason: impl std::fmt::Display) -> ConfigError {
    ConfigError::Invalid {
        member: NODE_CONFIG.to_string(),
        reason: format!("{field}: {reason}"),
    }
}

/// Names (node, subnet, operator, profile): 1 to 64 of `A-Z a-z 0-9 . _ -`, not starting
/// with `.` or `-`, so they are safe in file names, unit names and logs.
fn check_name(field: &str, value: &str) -> Result<(), ConfigError> {
    let ok = !value.is_empty()
        && value.len() <= 64
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        && !value.starts_with(['.', '-']);
    if ok {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!("{value:?} is not 1-64 of A-Z a-z 0-9 . _ - (not starting with . or -)"),
        ))
    }
}

/// RFC 1123 host name: dot-separated labels of 1-63 `a-z 0-9 -`, no leading or trailing
/// `-`, at most 253 bytes.
fn check_hostname(value: &str) -> Result<(), ConfigError> {
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if value.len() <= 253 && value.split('.').all(label_ok) {
        Ok(())
    } else {
        Err(invalid(
            "hostname",
            format!("{value:?} is not an RFC 1123 host name (lowercase)"),
        ))
    }
}

impl NodeConfig {
    /// Parses and validates node.toml; every error names the field.
    pub fn parse(bytes: &[u8]) -> Result<NodeConfig, ConfigError> {
        let text = std::str::from_utf8(bytes).map_err(|e| ConfigError::Invalid {
            member: NODE_CONFIG.into(),
            reason: format!("not UTF-8: {e}"),
        })?;
        let config: NodeConfig = toml::from_str(text).map_err(|e| ConfigError::Invalid {
            member: NODE_CONFIG.into(),
            reason: e.to_string(),
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every field: the schema, names and host name, the collector interval's
    /// bounds, the addresses and the operator's SSH keys. Errors name the field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.schema != NODE_CONFIG_SCHEMA {
            return Err(invalid(
                "schema",
                format!("{:?}, expected {NODE_CONFIG_SCHEMA:?}", self.schema),
            ));
        }
        check_name("subnet", &self.subnet)?;
        check_name("name", &self.name)?;
        check_name("profile", &self.profile)?;
        check_name("operator.name", &self.operator.name)?;
        check_hostname(&self.hostname)?;
        if let Some(s) = self.collect_interval_seconds {
            let (lo, hi) = COLLECT_INTERVAL_RANGE;
            if !(s.is_finite() && (lo..=hi).contains(&s)) {
                return Err(invalid(
                    "collect_interval_seconds",
                    format!("{s} is not within {lo}..={hi}"),
                ));
            }
        }
        self.addresses()?;
        if let Some(offload) = &self.offload {
            offload.validate()?;
        }
        for (i, key) in self.operator.ssh_keys.iter().enumerate() {
            if key.contains(['\n', '\r']) {
                return Err(invalid(
                    &format!("operator.ssh_keys[{i}]"),
                    "contains a line break",
                ));
            }
            ssh_key::PublicKey::from_openssh(key)
                .map_err(|e| invalid(&format!("operator.ssh_keys[{i}]"), e))?;
        }
        Ok(())
    }

    /// The network section's addresses, parsed.
    pub fn addresses(&self) -> Result<Addresses, ConfigError> {
        let n = &self.network;
        let ipv6: ipnet::Ipv6Net = n
            .ipv6_address
            .parse()
            .map_err(|e| invalid("network.ipv6_address", format!("{:?}: {e}", n.ipv6_address)))?;
        let ipv6_gateway: Ipv6Addr = n
            .ipv6_gateway
            .parse()
            .map_err(|e| invalid("network.ipv6_gateway", format!("{:?}: {e}", n.ipv6_gateway)))?;
        let ipv4 = n
            .ipv4_address
            .as_deref()
            .map(|a| {
                a.parse::<ipnet::Ipv4Net>()
                    .map_err(|e| invalid("network.ipv4_address", format!("{a:?}: {e}")))
            })
            .transpose()?;
        let ipv4_gateway = n
            .ipv4_gateway
            .as_deref()
            .map(|a| {
                a.parse::<Ipv4Addr>()
                    .map_err(|e| invalid("network.ipv4_gateway", format!("{a:?}: {e}")))
            })
            .transpose()?;
        if ipv4_gateway.is_some() && ipv4.is_none() {
            return Err(invalid(
                "network.ipv4_gateway",
                "set without network.ipv4_address",
            ));
        }
        let mut dns = Vec::new();
        for (i, d) in n.dns.iter().enumerate() {
            dns.push(
                d.parse::<IpAddr>()
                    .map_err(|e| invalid(&format!("network.dns[{i}]"), format!("{d:?}: {e}")))?,
            );
        }
        Ok(Addresses {
            ipv6,
            ipv6_gateway,
            ipv4,
            ipv4_gateway,
            dns,
        })
    }

    /// The canonical node.toml text.
    pub fn to_toml(&self) -> String {
        // Serialising plain strings, numbers and string lists cannot fail.
        toml::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A valid node.toml without `[offload]`.
    const NODE: &str = include_str!("../tests/data/node.toml");

    fn with_offload(section: &str) -> Result<NodeConfig, ConfigError> {
        NodeConfig::parse(format!("{NODE}\n[offload]\n{section}").as_bytes())
    }

    #[test]
    fn offload_figures_round_trip_and_are_optional() {
        assert_eq!(NodeConfig::parse(NODE.as_bytes()).unwrap().offload, None);
        let node = with_offload(
            "benchmark = \"measured on AMD EPYC (16 CPU threads) + NVIDIA H200\"\n\
             dkg_round_dealings = 26\nhost_cpu_seconds_per_dkg_round = 4.5\n\
             burst_threads_freed = 3\nsteady_threads_freed = 0.25\n",
        )
        .unwrap();
        let offload = node.offload.clone().unwrap();
        assert_eq!(offload.dkg_round_dealings, 26);
        assert_eq!(offload.host_cpu_seconds_per_dkg_round, 4.5);
        assert_eq!(offload.burst_threads_freed, 3);
        let text = toml::to_string(&node).unwrap();
        assert_eq!(NodeConfig::parse(text.as_bytes()).unwrap(), node);
    }

    #[test]
    fn offload_figures_that_are_not_numbers_or_one_line_are_refused() {
        let figures =
            "dkg_round_dealings = 26\nburst_threads_freed = 3\nsteady_threads_freed = 0.25\n";
        for (section, field) in [
            (
                format!("benchmark = \"b\"\nhost_cpu_seconds_per_dkg_round = nan\n{figures}"),
                "offload.host_cpu_seconds_per_dkg_round",
            ),
            (
                format!("benchmark = \"a\\nb\"\nhost_cpu_seconds_per_dkg_round = 1.0\n{figures}"),
                "offload.benchmark",
            ),
            (
                format!("benchmark = \"\"\nhost_cpu_seconds_per_dkg_round = 1.0\n{figures}"),
                "offload.benchmark",
            ),
        ] {
            let err = with_offload(&section).unwrap_err().to_string();
            assert!(err.contains(field), "{section}: {err}");
        }
        let unknown = with_offload("benchmark = \"b\"\nthreads = 1\n").unwrap_err();
        assert!(unknown.to_string().contains("unknown field"), "{unknown}");
    }
}
