//! `SUBNET.toml`: the subnet, its network, operators, nodes and the benchmark file per
//! hardware profile. Every problem is reported with `file:line:column` and the reason, all
//! of them at once, in the file's order. The schema is in docs/operator-guide.md.
//!
//! Parsing reads the document into raw sections, reporting every unknown key and every
//! value missing or of the wrong type; checks what did read; and builds the subnet only
//! when nothing at all was reported. A value that did not read is left out of the checks,
//! and so is every check that needs it (a node's operator when an operator did not read),
//! so that one mistake is reported once.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::ops::Range;
use std::path::{Path, PathBuf};

use hardware_profiles::{Location, Profile, ProfileSet};
use serde::Deserialize as _;
use serde::de::DeserializeOwned;
use thiserror::Error;
use toml::Spanned;
use toml::de::{DeTable, DeValue, ValueDeserializer};

use crate::bench::BenchFile;

/// One problem in a subnet file.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{location}: {reason}")]
pub struct Invalid {
    /// Where in the file: `file:line:column`.
    pub location: Location,
    /// What is wrong there.
    pub reason: String,
}

/// Why a subnet file did not load.
#[derive(Debug, Error)]
pub enum SubnetError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The subnet file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// Every problem found in the file, in the file's order.
    #[error("{} problem(s):\n{}", .0.len(), .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<Invalid>),
}

/// A validated subnet.
#[derive(Debug, Clone)]
pub struct Subnet {
    /// The subnet file it was read from.
    pub file: PathBuf,
    /// The subnet's name (a DNS label).
    pub name: String,
    /// b: seconds per block.
    pub block_time_seconds: f64,
    /// L: blocks after the summary block; a DKG interval is L + 1 blocks.
    pub dkg_interval_length: u64,
    /// d: NI-DKG dealings included (and verified) per block.
    pub dkg_dealings_per_block: u64,
    /// T: NI-DKG transcripts per interval.
    pub dkg_transcripts_per_interval: u64,
    /// S: GiB of replicated state hashed at a checkpoint.
    pub state_size_gib: f64,
    /// H: seconds within which a checkpoint must be hashed.
    pub checkpoint_hash_target_seconds: f64,
    /// The attestation verifier's http(s) URL, written into every node's bundle.
    pub verifier_endpoint: String,
    /// `[network]`: what every node's addressing shares.
    pub network: Network,
    /// `[[operator]]`: the node operators.
    pub operators: Vec<Operator>,
    /// `[[node]]`, in the file's order; n is their number.
    pub nodes: Vec<Node>,
    /// The profiles the nodes use, by name.
    pub profiles: BTreeMap<String, Profile>,
    /// Benchmark per profile name (path as resolved, document).
    pub benchmarks: BTreeMap<String, (PathBuf, BenchFile)>,
}

/// The subnet's `[network]`.
#[derive(Debug, Clone)]
pub struct Network {
    /// The prefix every node address and the gateway are inside.
    pub ipv6_prefix: ipnet::Ipv6Net,
    /// The nodes' IPv6 default gateway.
    pub ipv6_gateway: Ipv6Addr,
    /// The IPv4 default gateway of nodes with an IPv4 address.
    pub ipv4_gateway: Option<Ipv4Addr>,
    /// Name server addresses.
    pub dns: Vec<String>,
    /// The node agent's port (`/v1/attestation`).
    pub agent_port: u16,
}

/// One `[[operator]]`.
#[derive(Debug, Clone)]
pub struct Operator {
    /// The operator's name, as nodes refer to it.
    pub name: String,
    /// OpenSSH public keys that may log in to the operator's nodes.
    pub ssh_keys: Vec<String>,
}

/// One `[[node]]`.
#[derive(Debug, Clone)]
pub struct Node {
    /// The node's name, unique in the subnet; also its host name.
    pub name: String,
    /// The hardware profile it is pinned to.
    pub profile: String,
    /// The name of its `[[operator]]`.
    pub operator: String,
    /// Its IPv6 address, inside the prefix (the prefix gives the length).
    pub ipv6_address: Ipv6Addr,
    /// Its IPv4 address with prefix length, if it has one.
    pub ipv4_address: Option<ipnet::Ipv4Net>,
}

/// The default of `network.agent_port`: the node agent's listener.
const DEFAULT_AGENT_PORT: u16 = 9420;
/// The default of `subnet.dkg_transcripts_per_interval`.
const DEFAULT_TRANSCRIPTS_PER_INTERVAL: u64 = 2;

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

    /// Validates `text`, the contents of `path` (relative paths in it are resolved against
    /// its directory). A subnet only when the file has no problem at all.
    pub fn parse(
        text: &str,
        path: &Path,
        bench_overrides: &BTreeMap<String, PathBuf>,
    ) -> Result<Subnet, SubnetError> {
        let mut problems = Problems::default();
        let subnet = match DeTable::parse(text) {
            // Past a syntax error the document's structure is a guess: that error alone.
            Err(e) => {
                problems.toml(&e, 0..0);
                None
            }
            Ok(doc) => {
                let raw = RawSubnetFile::read(&doc, &mut problems);
                let base = path.parent().unwrap_or(Path::new("."));
                check(&raw, path, base, bench_overrides, &mut problems)
            }
        };
        problems.into_result(subnet, &path.display().to_string(), text)
    }
}

/// The problems found, each at its byte span in the file (`0..0`: the file as a whole).
#[derive(Default)]
struct Problems(Vec<(Range<usize>, String)>);

impl Problems {
    fn at(&mut self, span: Range<usize>, reason: impl Into<String>) {
        self.0.push((span, reason.into()));
    }

    fn toml(&mut self, e: &toml::de::Error, fallback: Range<usize>) {
        self.at(e.span().unwrap_or(fallback), e.message().trim());
    }

    /// `value` when nothing was found; otherwise every problem, in the file's order.
    fn into_result<T>(self, value: Option<T>, file: &str, text: &str) -> Result<T, SubnetError> {
        let mut found = self.0;
        match value {
            Some(value) if found.is_empty() => Ok(value),
            _ => {
                // A stable sort: problems at one place stay in the order they were found.
                found.sort_by_key(|(span, _)| span.start);
                Err(SubnetError::Invalid(
                    found
                        .into_iter()
                        .map(|(span, reason)| Invalid {
                            location: Location::of_span(file, text, span),
                            reason,
                        })
                        .collect(),
                ))
            }
        }
    }
}

/// One table of the document, read key by key. Asking for a key makes it known, so that
/// `finish` reports every other key as unknown.
struct TableReader<'d, 'i> {
    /// The table as its fields are named: `subnet` (in `subnet.name`); "" for the root.
    name: &'static str,
    /// The table as the file writes it: `[subnet]`, `[[node]]`; "" for the root.
    header: &'static str,
    span: Range<usize>,
    table: &'d DeTable<'i>,
    known: Vec<&'static str>,
}

impl<'d, 'i> TableReader<'d, 'i> {
    fn root(doc: &'d Spanned<DeTable<'i>>) -> Self {
        TableReader {
            name: "",
            header: "",
            span: doc.span(),
            table: doc.get_ref(),
            known: Vec::new(),
        }
    }

    /// `value` as the table `header`; a problem if it is something else.
    fn of(
        name: &'static str,
        header: &'static str,
        value: &'d Spanned<DeValue<'i>>,
        p: &mut Problems,
    ) -> Option<Self> {
        let DeValue::Table(table) = value.get_ref() else {
            p.at(
                value.span(),
                format!(
                    "{header}: expected a table, found {}",
                    value.get_ref().type_str()
                ),
            );
            return None;
        };
        Some(TableReader {
            name,
            header,
            span: value.span(),
            table,
            known: Vec::new(),
        })
    }

    fn get(&mut self, key: &'static str) -> Option<&'d Spanned<DeValue<'i>>> {
        self.known.push(key);
        let table = self.table;
        table
            .iter()
            .find(|(k, _)| k.get_ref() == key)
            .map(|(_, v)| v)
    }

    /// The value of `key`; a problem if it is missing or of the wrong type.
    fn required<T: DeserializeOwned>(
        &mut self,
        key: &'static str,
        p: &mut Problems,
    ) -> Option<Spanned<T>> {
        match self.get(key) {
            Some(value) => self.read(key, value, p),
            None => {
                p.at(
                    self.span.clone(),
                    format!("missing field `{key}`{}", self.place()),
                );
                None
            }
        }
    }

    /// The value of `key` if present; a problem if it is of the wrong type.
    fn optional<T: DeserializeOwned>(&mut self, key: &'static str, p: &mut Problems) -> Given<T> {
        match self.get(key) {
            None => Given::No,
            Some(value) => self
                .read(key, value, p)
                .map_or(Given::Unreadable, Given::Yes),
        }
    }

    fn read<T: DeserializeOwned>(
        &self,
        key: &str,
        value: &Spanned<DeValue<'i>>,
        p: &mut Problems,
    ) -> Option<Spanned<T>> {
        match Spanned::<T>::deserialize(ValueDeserializer::from(value.clone())) {
            Ok(v) => Some(v),
            Err(e) => {
                let field = match self.name {
                    "" => key.to_string(),
                    table => format!("{table}.{key}"),
                };
                p.at(
                    e.span().unwrap_or(value.span()),
                    format!("{field}: {}", e.message().trim()),
                );
                None
            }
        }
    }

    /// The table `key`, named `[key]`; a problem if it is missing or not a table.
    fn required_table(&mut self, key: &'static str, p: &mut Problems) -> Option<Self> {
        let Some(value) = self.get(key) else {
            p.at(0..0, format!("missing table [{key}]"));
            return None;
        };
        TableReader::of(key, header_of(key), value, p)
    }

    /// The table `key` if present; `Err` (a problem) if it is not a table.
    fn optional_table(&mut self, key: &'static str, p: &mut Problems) -> Result<Option<Self>, ()> {
        match self.get(key) {
            None => Ok(None),
            Some(value) => TableReader::of(key, header_of(key), value, p)
                .map(Some)
                .ok_or(()),
        }
    }

    /// The array of tables `[[key]]` (none when absent).
    fn tables(&mut self, key: &'static str, p: &mut Problems) -> Entries<Self> {
        let header = array_header_of(key);
        let mut entries = Entries::default();
        let Some(value) = self.get(key) else {
            return entries;
        };
        let DeValue::Array(array) = value.get_ref() else {
            p.at(
                value.span(),
                format!(
                    "{header}: expected an array of tables, found {}",
                    value.get_ref().type_str()
                ),
            );
            entries.complete = false;
            return entries;
        };
        for item in array.iter() {
            entries.push(TableReader::of(key, header, item, p));
        }
        entries
    }

    /// Reports every key that was not asked for.
    fn finish(self, p: &mut Problems) {
        for (key, _) in self.table.iter() {
            if !self.known.contains(&key.get_ref().as_ref()) {
                let expected: Vec<String> = self.known.iter().map(|k| format!("`{k}`")).collect();
                p.at(
                    key.span(),
                    format!(
                        "unknown field `{}`{}, expected one of {}",
                        key.get_ref(),
                        self.place(),
                        expected.join(", ")
                    ),
                );
            }
        }
    }

    /// " in [subnet]" and the like; "" for the root.
    fn place(&self) -> String {
        match self.header {
            "" => String::new(),
            header => format!(" in {header}"),
        }
    }
}

fn header_of(key: &'static str) -> &'static str {
    match key {
        "subnet" => "[subnet]",
        "network" => "[network]",
        "benchmarks" => "[benchmarks]",
        _ => "a table",
    }
}

fn array_header_of(key: &'static str) -> &'static str {
    match key {
        "operator" => "[[operator]]",
        "node" => "[[node]]",
        _ => "an array of tables",
    }
}

/// The entries of a section that read. `complete` is false when some did not (their
/// problems are reported): checks across entries then skip what would only be reported
/// because an entry is missing (a name that nodes refer to, a benchmark).
#[derive(Debug)]
struct Entries<T> {
    read: Vec<T>,
    complete: bool,
}

impl<T> Default for Entries<T> {
    fn default() -> Self {
        Entries {
            read: Vec::new(),
            complete: true,
        }
    }
}

impl<T> Entries<T> {
    fn push(&mut self, entry: Option<T>) {
        match entry {
            Some(entry) => self.read.push(entry),
            None => self.complete = false,
        }
    }

    fn map<U>(self, mut f: impl FnMut(T) -> Option<U>) -> Entries<U> {
        let mut out = Entries {
            read: Vec::new(),
            complete: self.complete,
        };
        for entry in self.read {
            out.push(f(entry));
        }
        out
    }
}

/// An optional key's value.
#[derive(Debug)]
enum Given<T> {
    No,
    Yes(Spanned<T>),
    /// Given, but of the wrong type (its problem is reported).
    Unreadable,
}

impl<T> Given<T> {
    fn value(&self) -> Option<&Spanned<T>> {
        match self {
            Given::Yes(v) => Some(v),
            Given::No | Given::Unreadable => None,
        }
    }
}

/// The document's sections, as far as they read. A value that did not read is `None` (or
/// [`Given::Unreadable`]); its problem is reported, and checks that need it are skipped.
#[derive(Debug)]
struct RawSubnetFile {
    subnet: Option<RawSubnet>,
    network: Option<RawNetwork>,
    benchmarks: Entries<RawBenchmark>,
    operators: Entries<RawOperator>,
    nodes: Entries<RawNode>,
}

#[derive(Debug)]
struct RawSubnet {
    name: Option<Spanned<String>>,
    block_time_seconds: Option<Spanned<f64>>,
    dkg_interval_length: Option<Spanned<u64>>,
    dkg_dealings_per_block: Option<Spanned<u64>>,
    dkg_transcripts_per_interval: Given<u64>,
    state_size_gib: Option<Spanned<f64>>,
    checkpoint_hash_target_seconds: Option<Spanned<f64>>,
    verifier_endpoint: Option<Spanned<String>>,
    profiles_dir: Given<String>,
}

#[derive(Debug)]
struct RawNetwork {
    ipv6_prefix: Option<Spanned<String>>,
    ipv6_gateway: Option<Spanned<String>>,
    ipv4_gateway: Given<String>,
    dns: Option<Spanned<Vec<String>>>,
    agent_port: Given<u16>,
}

/// `[benchmarks]`: `PROFILE = "FILE"`.
#[derive(Debug)]
struct RawBenchmark {
    profile: String,
    file: Spanned<String>,
}

/// An operator; read when its name did (nodes refer to it by name).
#[derive(Debug)]
struct RawOperator {
    name: Spanned<String>,
    ssh_keys: Option<Vec<Spanned<String>>>,
}

/// A node; read when its name did (every problem of a node names it).
#[derive(Debug)]
struct RawNode {
    name: Spanned<String>,
    profile: Option<Spanned<String>>,
    operator: Option<Spanned<String>>,
    ipv6_address: Option<Spanned<String>>,
    ipv4_address: Option<Spanned<String>>,
}

impl RawSubnetFile {
    fn read(doc: &Spanned<DeTable<'_>>, p: &mut Problems) -> RawSubnetFile {
        let mut root = TableReader::root(doc);
        let raw = RawSubnetFile {
            subnet: root
                .required_table("subnet", p)
                .map(|t| RawSubnet::read(t, p)),
            network: root
                .required_table("network", p)
                .map(|t| RawNetwork::read(t, p)),
            benchmarks: match root.optional_table("benchmarks", p) {
                Ok(None) => Entries::default(),
                Ok(Some(t)) => RawBenchmark::read_all(t, p),
                Err(()) => Entries {
                    read: Vec::new(),
                    complete: false,
                },
            },
            operators: root.tables("operator", p).map(|t| RawOperator::read(t, p)),
            nodes: root.tables("node", p).map(|t| RawNode::read(t, p)),
        };
        root.finish(p);
        raw
    }
}

impl RawSubnet {
    fn read(mut t: TableReader<'_, '_>, p: &mut Problems) -> RawSubnet {
        let raw = RawSubnet {
            name: t.required("name", p),
            block_time_seconds: t.required("block_time_seconds", p),
            dkg_interval_length: t.required("dkg_interval_length", p),
            dkg_dealings_per_block: t.required("dkg_dealings_per_block", p),
            dkg_transcripts_per_interval: t.optional("dkg_transcripts_per_interval", p),
            state_size_gib: t.required("state_size_gib", p),
            checkpoint_hash_target_seconds: t.required("checkpoint_hash_target_seconds", p),
            verifier_endpoint: t.required("verifier_endpoint", p),
            profiles_dir: t.optional("profiles_dir", p),
        };
        t.finish(p);
        raw
    }
}

impl RawNetwork {
    fn read(mut t: TableReader<'_, '_>, p: &mut Problems) -> RawNetwork {
        let raw = RawNetwork {
            ipv6_prefix: t.required("ipv6_prefix", p),
            ipv6_gateway: t.required("ipv6_gateway", p),
            ipv4_gateway: t.optional("ipv4_gateway", p),
            dns: t.required("dns", p),
            agent_port: t.optional("agent_port", p),
        };
        t.finish(p);
        raw
    }
}

impl RawBenchmark {
    /// Every key is a profile name, so none is unknown here.
    fn read_all(t: TableReader<'_, '_>, p: &mut Problems) -> Entries<RawBenchmark> {
        let mut entries = Entries::default();
        for (profile, value) in t.table.iter() {
            let file = t.read(profile.get_ref(), value, p);
            entries.push(file.map(|file| RawBenchmark {
                profile: profile.get_ref().to_string(),
                file,
            }));
        }
        entries
    }
}

impl RawOperator {
    fn read(mut t: TableReader<'_, '_>, p: &mut Problems) -> Option<RawOperator> {
        let name = t.required("name", p);
        let ssh_keys = t.required::<Vec<Spanned<String>>>("ssh_keys", p);
        t.finish(p);
        Some(RawOperator {
            name: name?,
            ssh_keys: ssh_keys.map(Spanned::into_inner),
        })
    }
}

impl RawNode {
    fn read(mut t: TableReader<'_, '_>, p: &mut Problems) -> Option<RawNode> {
        let name = t.required("name", p);
        let profile = t.required("profile", p);
        let operator = t.required("operator", p);
        let ipv6_address = t.required("ipv6_address", p);
        let ipv4_address = t.optional("ipv4_address", p).value().cloned();
        t.finish(p);
        Some(RawNode {
            name: name?,
            profile,
            operator,
            ipv6_address,
            ipv4_address,
        })
    }
}

/// Checks every section that read, then builds the subnet from them; `None` where a part
/// is missing (its problem is reported).
fn check(
    raw: &RawSubnetFile,
    path: &Path,
    base: &Path,
    bench_overrides: &BTreeMap<String, PathBuf>,
    p: &mut Problems,
) -> Option<Subnet> {
    if let Some(s) = &raw.subnet {
        check_subnet(s, p);
    }
    let profiles = raw.subnet.as_ref().and_then(|s| load_profiles(s, base, p));
    let network = raw.network.as_ref().map(|n| check_network(n, p));
    let (operators, operator_names) = check_operators(&raw.operators, p);
    let rules = NodeRules {
        profiles: profiles.as_ref(),
        network: network.as_ref(),
        operators: operator_names.as_ref(),
    };
    let (nodes, used_profiles) = check_nodes(&raw.nodes, &rules, p);
    let benchmarks = load_benchmarks(
        &raw.benchmarks.read,
        profiles.as_ref(),
        base,
        bench_overrides,
        p,
    );
    if raw.benchmarks.complete {
        check_benchmarked(&used_profiles, &benchmarks, p);
    }
    let parts = Parts {
        network: network?.into_network()?,
        operators,
        nodes,
        profiles: used_profiles
            .into_iter()
            .map(|(name, (profile, _))| (name, profile))
            .collect(),
        benchmarks,
    };
    assemble(raw.subnet.as_ref()?, path, parts)
}

/// `[subnet]`: its name, its figures within their ranges, the verifier's URL.
fn check_subnet(s: &RawSubnet, p: &mut Problems) {
    if let Some(name) = &s.name
        && !valid_name(name.get_ref())
    {
        p.at(name.span(), name_rule("subnet.name"));
    }
    let figures = [
        (&s.block_time_seconds, 600.0, "subnet.block_time_seconds"),
        (&s.state_size_gib, 1_048_576.0, "subnet.state_size_gib"),
        (
            &s.checkpoint_hash_target_seconds,
            86_400.0,
            "subnet.checkpoint_hash_target_seconds",
        ),
    ];
    for (value, hi, what) in figures {
        positive_up_to(value.as_ref(), hi, what, p);
    }
    let counts = [
        (
            &s.dkg_interval_length,
            1_000_000,
            "subnet.dkg_interval_length",
        ),
        (
            &s.dkg_dealings_per_block,
            1000,
            "subnet.dkg_dealings_per_block",
        ),
    ];
    for (value, hi, what) in counts {
        count_within(value.as_ref(), 1, hi, what, p);
    }
    count_within(
        s.dkg_transcripts_per_interval.value(),
        1,
        16,
        "subnet.dkg_transcripts_per_interval",
        p,
    );
    if let Some(endpoint) = &s.verifier_endpoint {
        check_verifier_endpoint(endpoint, p);
    }
}

/// `what` in `(0, hi]`.
fn positive_up_to(v: Option<&Spanned<f64>>, hi: f64, what: &str, p: &mut Problems) {
    let Some(v) = v else { return };
    let x = *v.get_ref();
    if !(x > 0.0 && x <= hi) {
        p.at(v.span(), format!("{what} = {x} is outside (0, {hi}]"));
    }
}

/// `what` in `lo..=hi`.
fn count_within(v: Option<&Spanned<u64>>, lo: u64, hi: u64, what: &str, p: &mut Problems) {
    let Some(v) = v else { return };
    let x = *v.get_ref();
    if !(lo..=hi).contains(&x) {
        p.at(v.span(), format!("{what} = {x} is outside {lo}..={hi}"));
    }
}

fn check_verifier_endpoint(endpoint: &Spanned<String>, p: &mut Problems) {
    let url = endpoint.get_ref();
    let valid = url.parse::<hyper::Uri>().is_ok_and(|uri| {
        matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some()
    });
    if !valid {
        p.at(
            endpoint.span(),
            format!("subnet.verifier_endpoint {url:?} is not an http(s) URL with a host"),
        );
    }
}

/// The embedded profiles, with the subnet's own directory over them; unknown when that
/// directory did not read or load.
fn load_profiles(s: &RawSubnet, base: &Path, p: &mut Problems) -> Option<ProfileSet> {
    let (set, span) = match &s.profiles_dir {
        Given::Unreadable => return None,
        Given::No => (ProfileSet::embedded().map_err(|e| e.to_string()), 0..0),
        Given::Yes(dir) => (
            ProfileSet::embedded_with_overrides(&base.join(dir.get_ref()))
                .map_err(|e| e.to_string()),
            dir.span(),
        ),
    };
    set.map_err(|e| p.at(span, format!("hardware profiles: {e}")))
        .ok()
}

/// `[network]` as checked: each part where it read and is valid.
struct CheckedNetwork {
    prefix: Option<ipnet::Ipv6Net>,
    gateway: Option<Ipv6Addr>,
    ipv4_gateway: Option<Ipv4Addr>,
    /// Whether the file gives `ipv4_gateway` (valid or not).
    ipv4_gateway_given: bool,
    dns: Option<Vec<String>>,
    agent_port: u16,
}

impl CheckedNetwork {
    fn into_network(self) -> Option<Network> {
        Some(Network {
            ipv6_prefix: self.prefix?,
            ipv6_gateway: self.gateway?,
            ipv4_gateway: self.ipv4_gateway,
            dns: self.dns?,
            agent_port: self.agent_port,
        })
    }
}

fn check_network(n: &RawNetwork, p: &mut Problems) -> CheckedNetwork {
    let prefix = n.ipv6_prefix.as_ref().and_then(|v| {
        parse_or_report::<ipnet::Ipv6Net>(v, p, |e| {
            format!("network.ipv6_prefix: {e} (expected e.g. 2001:db8::/64)")
        })
    });
    let gateway = n
        .ipv6_gateway
        .as_ref()
        .and_then(|v| parse_or_report::<Ipv6Addr>(v, p, |e| format!("network.ipv6_gateway: {e}")));
    if let (Some(prefix), Some(gateway), Some(given)) = (prefix, gateway, &n.ipv6_gateway)
        && !prefix.contains(&gateway)
    {
        p.at(
            given.span(),
            format!("network.ipv6_gateway {gateway} is not in {prefix}"),
        );
    }
    let ipv4_gateway = n
        .ipv4_gateway
        .value()
        .and_then(|v| parse_or_report::<Ipv4Addr>(v, p, |e| format!("network.ipv4_gateway: {e}")));
    if let Some(dns) = &n.dns {
        check_dns(dns, p);
    }
    CheckedNetwork {
        prefix,
        gateway,
        ipv4_gateway,
        ipv4_gateway_given: !matches!(n.ipv4_gateway, Given::No),
        dns: n.dns.as_ref().map(|d| d.get_ref().clone()),
        agent_port: n
            .agent_port
            .value()
            .map_or(DEFAULT_AGENT_PORT, |p| *p.get_ref()),
    }
}

fn check_dns(dns: &Spanned<Vec<String>>, p: &mut Problems) {
    if dns.get_ref().is_empty() {
        p.at(dns.span(), "network.dns: at least one DNS server");
    }
    for d in dns.get_ref() {
        if d.parse::<IpAddr>().is_err() {
            p.at(
                dns.span(),
                format!("network.dns: {d:?} is not an IP address"),
            );
        }
    }
}

/// `value` parsed as `T`; a problem saying `why` (of the parse error) if it does not.
fn parse_or_report<T: std::str::FromStr>(
    value: &Spanned<String>,
    p: &mut Problems,
    why: impl FnOnce(T::Err) -> String,
) -> Option<T> {
    value
        .get_ref()
        .parse::<T>()
        .map_err(|e| p.at(value.span(), why(e)))
        .ok()
}

/// The operators, and their names when every operator read (nodes refer to them).
fn check_operators(
    operators: &Entries<RawOperator>,
    p: &mut Problems,
) -> (Vec<Operator>, Option<BTreeSet<String>>) {
    let mut names = BTreeSet::new();
    let checked = operators
        .read
        .iter()
        .map(|op| check_operator(op, &mut names, p))
        .collect();
    (checked, operators.complete.then_some(names))
}

fn check_operator(op: &RawOperator, names: &mut BTreeSet<String>, p: &mut Problems) -> Operator {
    let name = op.name.get_ref();
    if !valid_name(name) {
        p.at(op.name.span(), name_rule("operator.name"));
    }
    if !names.insert(name.clone()) {
        p.at(
            op.name.span(),
            format!("operator {name:?} is defined twice"),
        );
    }
    let keys = op.ssh_keys.as_deref().unwrap_or_default();
    if op.ssh_keys.as_ref().is_some_and(Vec::is_empty) {
        p.at(op.name.span(), format!("operator {name:?} has no ssh_keys"));
    }
    for key in keys {
        if let Err(e) = ssh_key::PublicKey::from_openssh(key.get_ref()) {
            p.at(
                key.span(),
                format!("operator {name:?}: not an OpenSSH public key: {e}"),
            );
        }
    }
    Operator {
        name: name.clone(),
        ssh_keys: keys
            .iter()
            .map(|k| k.get_ref().trim().to_string())
            .collect(),
    }
}

/// What a node is checked against, each part only where it read.
struct NodeRules<'a> {
    profiles: Option<&'a ProfileSet>,
    network: Option<&'a CheckedNetwork>,
    /// The operators' names; `None` when an operator did not read.
    operators: Option<&'a BTreeSet<String>>,
}

/// The nodes' names and addresses so far, for duplicates.
#[derive(Default)]
struct Seen {
    names: BTreeSet<String>,
    addresses: BTreeSet<Ipv6Addr>,
}

/// A profile the nodes use, and where the first of them names it.
type UsedProfiles = BTreeMap<String, (Profile, Range<usize>)>;

fn check_nodes(
    nodes: &Entries<RawNode>,
    rules: &NodeRules<'_>,
    p: &mut Problems,
) -> (Vec<Node>, UsedProfiles) {
    if nodes.read.is_empty() && nodes.complete {
        p.at(0..0, "no [[node]]: a subnet needs nodes");
    }
    let mut seen = Seen::default();
    let mut used = UsedProfiles::new();
    let mut checked = Vec::new();
    for node in &nodes.read {
        check_node_name(node, &mut seen, p);
        if let Some(wanted) = &node.profile
            && let Some(found) = node_profile(node, wanted, rules.profiles, p)
        {
            used.entry(wanted.get_ref().clone())
                .or_insert_with(|| (found.clone(), wanted.span()));
        }
        if let Some(operator) = &node.operator {
            check_node_operator(node, operator, rules.operators, p);
        }
        let address = node_address(node, rules.network, &mut seen, p);
        let ipv4_address = node_ipv4(node, rules.network, p);
        if let (Some(profile), Some(operator), Some(ipv6_address)) =
            (&node.profile, &node.operator, address)
        {
            checked.push(Node {
                name: node.name.get_ref().clone(),
                profile: profile.get_ref().clone(),
                operator: operator.get_ref().clone(),
                ipv6_address,
                ipv4_address,
            });
        }
    }
    (checked, used)
}

fn check_node_name(node: &RawNode, seen: &mut Seen, p: &mut Problems) {
    let name = node.name.get_ref();
    if !valid_name(name) {
        p.at(node.name.span(), name_rule("node.name"));
    }
    if !seen.names.insert(name.clone()) {
        p.at(node.name.span(), format!("node {name:?} is defined twice"));
    }
}

/// The node's hardware profile; `None` if unknown (a problem when the profiles are known).
fn node_profile<'a>(
    node: &RawNode,
    wanted: &Spanned<String>,
    profiles: Option<&'a ProfileSet>,
    p: &mut Problems,
) -> Option<&'a Profile> {
    let set = profiles?;
    let found = set.get(wanted.get_ref());
    if found.is_none() {
        let names: Vec<&str> = set.profiles().iter().map(|p| p.name.as_str()).collect();
        p.at(
            wanted.span(),
            format!(
                "node {:?}: no hardware profile {:?} (profiles: {})",
                node.name.get_ref(),
                wanted.get_ref(),
                names.join(", ")
            ),
        );
    }
    found
}

fn check_node_operator(
    node: &RawNode,
    operator: &Spanned<String>,
    operators: Option<&BTreeSet<String>>,
    p: &mut Problems,
) {
    if operators.is_some_and(|names| !names.contains(operator.get_ref())) {
        p.at(
            operator.span(),
            format!(
                "node {:?}: no [[operator]] named {:?}",
                node.name.get_ref(),
                operator.get_ref()
            ),
        );
    }
}

/// The node's IPv6 address: in the prefix, not its network address, not the gateway, not
/// another node's.
fn node_address(
    node: &RawNode,
    network: Option<&CheckedNetwork>,
    seen: &mut Seen,
    p: &mut Problems,
) -> Option<Ipv6Addr> {
    let name = node.name.get_ref();
    let given = node.ipv6_address.as_ref()?;
    let span = given.span();
    let a = parse_or_report::<Ipv6Addr>(given, p, |e| {
        format!("node {name:?}: ipv6_address: {e} (expected an address without prefix length)")
    })?;
    if let Some(prefix) = network.and_then(|n| n.prefix) {
        if !prefix.contains(&a) {
            p.at(
                span.clone(),
                format!("node {name:?}: {a} is not in {prefix}"),
            );
        } else if a == prefix.network() {
            p.at(
                span.clone(),
                format!("node {name:?}: {a} is the prefix's network address"),
            );
        }
    }
    if network.and_then(|n| n.gateway) == Some(a) {
        p.at(span.clone(), format!("node {name:?}: {a} is the gateway"));
    }
    if !seen.addresses.insert(a) {
        p.at(span, format!("node {name:?}: address {a} is used twice"));
    }
    Some(a)
}

/// The node's IPv4 address, if it has one; the network must then give an IPv4 gateway.
fn node_ipv4(
    node: &RawNode,
    network: Option<&CheckedNetwork>,
    p: &mut Problems,
) -> Option<ipnet::Ipv4Net> {
    let name = node.name.get_ref();
    let given = node.ipv4_address.as_ref()?;
    let a = parse_or_report::<ipnet::Ipv4Net>(given, p, |e| {
        format!("node {name:?}: ipv4_address: {e} (expected e.g. 192.0.2.11/24)")
    })?;
    if network.is_some_and(|n| !n.ipv4_gateway_given) {
        p.at(
            given.span(),
            format!("node {name:?}: ipv4_address without network.ipv4_gateway"),
        );
    }
    Some(a)
}

/// The benchmark per profile: the file's `[benchmarks]`, with `--bench` overrides over it.
fn load_benchmarks(
    entries: &[RawBenchmark],
    profiles: Option<&ProfileSet>,
    base: &Path,
    overrides: &BTreeMap<String, PathBuf>,
    p: &mut Problems,
) -> BTreeMap<String, (PathBuf, BenchFile)> {
    let mut loaded = BTreeMap::new();
    for entry in entries {
        if unknown_profile(profiles, &entry.profile) {
            p.at(
                entry.file.span(),
                format!("benchmarks: no hardware profile {:?}", entry.profile),
            );
        } else if !overrides.contains_key(&entry.profile)
            && let Some(found) = file_benchmark(entry, base, p)
        {
            loaded.insert(entry.profile.clone(), found);
        }
    }
    for (profile, file) in overrides {
        if let Some(found) = override_benchmark(profile, file, profiles, p) {
            loaded.insert(profile.clone(), found);
        }
    }
    loaded
}

fn file_benchmark(
    entry: &RawBenchmark,
    base: &Path,
    p: &mut Problems,
) -> Option<(PathBuf, BenchFile)> {
    let resolved = base.join(entry.file.get_ref());
    BenchFile::load(&resolved)
        .map_err(|e| {
            p.at(
                entry.file.span(),
                format!("benchmarks.{}: {e}", entry.profile),
            )
        })
        .ok()
        .map(|doc| (resolved, doc))
}

/// `--bench PROFILE=FILE`: not in the file, so its problems are the file's as a whole.
fn override_benchmark(
    profile: &str,
    file: &Path,
    profiles: Option<&ProfileSet>,
    p: &mut Problems,
) -> Option<(PathBuf, BenchFile)> {
    if unknown_profile(profiles, profile) {
        p.at(
            0..0,
            format!("--bench {profile}=...: no hardware profile {profile:?}"),
        );
        return None;
    }
    match BenchFile::load(file) {
        Ok(doc) => Some((file.to_owned(), doc)),
        Err(e) => {
            p.at(0..0, format!("--bench {profile}={}: {e}", file.display()));
            None
        }
    }
}

/// Known not to be a profile (unknowable when the profiles did not load).
fn unknown_profile(profiles: Option<&ProfileSet>, name: &str) -> bool {
    profiles.is_some_and(|set| set.get(name).is_none())
}

/// Every profile a node uses has a benchmark; the problem is at the first such node.
fn check_benchmarked(
    used: &UsedProfiles,
    benchmarks: &BTreeMap<String, (PathBuf, BenchFile)>,
    p: &mut Problems,
) {
    for (profile, (_, span)) in used {
        if !benchmarks.contains_key(profile) {
            p.at(
                span.clone(),
                format!(
                    "no benchmark for profile {profile:?}: add it to [benchmarks] or pass --bench {profile}=FILE"
                ),
            );
        }
    }
}

/// What the subnet is built from besides `[subnet]`, each part checked.
struct Parts {
    network: Network,
    operators: Vec<Operator>,
    nodes: Vec<Node>,
    profiles: BTreeMap<String, Profile>,
    benchmarks: BTreeMap<String, (PathBuf, BenchFile)>,
}

fn assemble(s: &RawSubnet, path: &Path, parts: Parts) -> Option<Subnet> {
    Some(Subnet {
        file: path.to_owned(),
        name: s.name.as_ref()?.get_ref().clone(),
        block_time_seconds: *s.block_time_seconds.as_ref()?.get_ref(),
        dkg_interval_length: *s.dkg_interval_length.as_ref()?.get_ref(),
        dkg_dealings_per_block: *s.dkg_dealings_per_block.as_ref()?.get_ref(),
        dkg_transcripts_per_interval: s
            .dkg_transcripts_per_interval
            .value()
            .map_or(DEFAULT_TRANSCRIPTS_PER_INTERVAL, |t| *t.get_ref()),
        state_size_gib: *s.state_size_gib.as_ref()?.get_ref(),
        checkpoint_hash_target_seconds: *s.checkpoint_hash_target_seconds.as_ref()?.get_ref(),
        verifier_endpoint: s.verifier_endpoint.as_ref()?.get_ref().clone(),
        network: parts.network,
        operators: parts.operators,
        nodes: parts.nodes,
        profiles: parts.profiles,
        benchmarks: parts.benchmarks,
    })
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
