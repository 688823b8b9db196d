//! CPU identity, features and topology from /proc/cpuinfo and /sys/devices/system.

use super::{read, read_value};
use hardware_profiles::{CpuFacts, CpuFeatures, CpuSet, Fact};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One `processor` block of /proc/cpuinfo: `key: value` lines, keys trimmed.
type Block = BTreeMap<String, String>;

fn parse_cpuinfo(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut block = Block::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            if !block.is_empty() {
                blocks.push(std::mem::take(&mut block));
            }
            continue;
        }
        if let Some((key, value)) = line.split_once(':') {
            block.insert(key.trim().to_string(), value.trim().to_string());
        }
    }
    if !block.is_empty() {
        blocks.push(block);
    }
    blocks
        .into_iter()
        .filter(|b| b.contains_key("processor"))
        .collect()
}

fn field<T: std::str::FromStr>(block: Option<&Block>, key: &str) -> Fact<T> {
    let Some(block) = block else {
        return Fact::unknown("/proc/cpuinfo has no processor entry");
    };
    match block.get(key) {
        Some(value) => match value.parse() {
            Ok(parsed) => Fact::Known(parsed),
            Err(_) => Fact::Unknown(format!("/proc/cpuinfo: `{key}` is `{value}`")),
        },
        None => Fact::Unknown(format!("/proc/cpuinfo: no `{key}` field")),
    }
}

/// The flags of the first processor (empty when /proc/cpuinfo is unreadable).
pub(crate) fn first_flags(root: &Path) -> Vec<String> {
    let Ok(text) = read(root, "/proc/cpuinfo") else {
        return Vec::new();
    };
    flags_of(parse_cpuinfo(&text).first())
}

fn flags_of(block: Option<&Block>) -> Vec<String> {
    let mut flags: Vec<String> = block
        .and_then(|b| b.get("flags"))
        .map(|f| f.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    flags.sort();
    flags.dedup();
    flags
}

/// The CPU facts under `root`: vendor, model, online CPUs, cores, sockets, NUMA nodes and
/// flags, from /proc/cpuinfo and /sys.
pub fn probe_cpu(root: &Path) -> CpuFacts {
    let (blocks, cpuinfo_error) = match read(root, "/proc/cpuinfo") {
        Ok(text) => (parse_cpuinfo(&text), None),
        Err(reason) => (Vec::new(), Some(reason)),
    };
    let first = blocks.first();
    let unreadable = |fact: Fact<String>| match (&cpuinfo_error, fact) {
        (Some(reason), _) => Fact::Unknown(reason.clone()),
        (None, fact) => fact,
    };
    let flags = flags_of(first);
    let has = |flag: &str| flags.binary_search_by(|f| f.as_str().cmp(flag)).is_ok();
    let features = CpuFeatures {
        sha_ni: has("sha_ni"),
        adx: has("adx"),
        bmi2: has("bmi2"),
        avx2: has("avx2"),
        avx512f: has("avx512f"),
        avx512ifma: has("avx512ifma"),
        vaes: has("vaes"),
    };

    let online_cpus = online_cpus(root, &blocks);
    let (physical_cores, sockets) = match online_cpus.known() {
        Some(online) => core_topology(root, online, &blocks),
        None => {
            let reason = format!("online CPUs unknown ({online_cpus})");
            (Fact::Unknown(reason.clone()), Fact::Unknown(reason))
        }
    };
    let numa_nodes = read_value(root, "/sys/devices/system/node/online", |text| {
        text.parse::<CpuSet>().ok().map(|nodes| nodes.len() as u32)
    });

    CpuFacts {
        vendor: unreadable(field(first, "vendor_id")),
        model_name: unreadable(field(first, "model name")),
        family: field(first, "cpu family"),
        model: field(first, "model"),
        online_cpus,
        physical_cores,
        sockets,
        numa_nodes,
        hypervisor: has("hypervisor"),
        features,
        flags,
    }
}

/// /sys/devices/system/cpu/online; without it, the `processor` ids of /proc/cpuinfo
/// (which lists online CPUs only).
fn online_cpus(root: &Path, blocks: &[Block]) -> Fact<CpuSet> {
    match read_value(root, "/sys/devices/system/cpu/online", |text| {
        text.parse::<CpuSet>().ok()
    }) {
        Fact::Known(set) => Fact::Known(set),
        Fact::Unknown(sysfs_reason) => {
            let ids: Option<CpuSet> = blocks
                .iter()
                .map(|b| b.get("processor").and_then(|p| p.parse::<u32>().ok()))
                .collect();
            match ids {
                Some(set) if !set.is_empty() => Fact::Known(set),
                _ => Fact::Unknown(format!(
                    "{sysfs_reason}; /proc/cpuinfo lists no processor ids"
                )),
            }
        }
    }
}

/// Physical cores = distinct (package, core) pairs of the online CPUs; sockets = distinct
/// packages. From sysfs topology, else from the `physical id`/`core id` of /proc/cpuinfo.
fn core_topology(root: &Path, online: &CpuSet, blocks: &[Block]) -> (Fact<u32>, Fact<u32>) {
    let sysfs: Result<BTreeSet<(u32, u32)>, String> = online
        .iter()
        .map(|cpu| {
            let dir = format!("/sys/devices/system/cpu/cpu{cpu}/topology");
            let package = read_value(root, &format!("{dir}/physical_package_id"), |t| {
                t.parse::<u32>().ok()
            });
            let core = read_value(root, &format!("{dir}/core_id"), |t| t.parse::<u32>().ok());
            match (package, core) {
                (Fact::Known(package), Fact::Known(core)) => Ok((package, core)),
                (Fact::Unknown(reason), _) | (_, Fact::Unknown(reason)) => Err(reason),
            }
        })
        .collect();
    let pairs = match sysfs {
        Ok(pairs) => Ok(pairs),
        Err(sysfs_reason) => {
            let from_cpuinfo: Option<BTreeSet<(u32, u32)>> = blocks
                .iter()
                .map(|b| {
                    let package = b.get("physical id")?.parse().ok()?;
                    let core = b.get("core id")?.parse().ok()?;
                    Some((package, core))
                })
                .collect();
            match from_cpuinfo {
                Some(pairs) if !pairs.is_empty() => Ok(pairs),
                _ => Err(format!(
                    "{sysfs_reason}; /proc/cpuinfo has no `physical id`/`core id`"
                )),
            }
        }
    };
    match pairs {
        Ok(pairs) => {
            let packages: BTreeSet<u32> = pairs.iter().map(|(p, _)| *p).collect();
            (
                Fact::Known(pairs.len() as u32),
                Fact::Known(packages.len() as u32),
            )
        }
        Err(reason) => (Fact::Unknown(reason.clone()), Fact::Unknown(reason)),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_cpuinfo;

    #[test]
    fn blocks_without_processor_are_dropped() {
        let blocks = parse_cpuinfo("processor\t: 0\nflags\t\t: a b\n\nprocessor : 1\n\nfoo: bar\n");
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0]["flags"], "a b");
    }
}
