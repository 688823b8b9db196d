//! CPU sets in the kernel's cpulist syntax ("0-3,8,10-11"), as in
//! /sys/devices/system/cpu/online and `taskset -c`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

/// Highest CPU id accepted; the kernel's NR_CPUS maximum is 8192.
pub const MAX_CPU_ID: u32 = 8191;

/// A set of logical CPU ids.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuSet(BTreeSet<u32>);

/// Why a cpulist does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuListError {
    /// The list names no CPU.
    #[error("empty CPU list")]
    Empty,
    /// An item (quoted) that is neither `N` nor `N-M`.
    #[error("`{0}` is not a CPU id or range")]
    BadItem(String),
    /// A range `N-M` (quoted) with `M < N`.
    #[error("range `{0}` ends before it starts")]
    Reversed(String),
    /// A CPU id above [`MAX_CPU_ID`].
    #[error("CPU id {0} is above the kernel's maximum {MAX_CPU_ID}")]
    TooLarge(u32),
}

impl CpuSet {
    /// The empty set.
    pub fn new() -> Self {
        CpuSet::default()
    }

    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the set names no CPU.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: u32) -> bool {
        self.0.contains(&cpu)
    }

    /// Adds `cpu` (no effect when present).
    pub fn insert(&mut self, cpu: u32) {
        self.0.insert(cpu);
    }

    /// The highest CPU id; `None` for the empty set.
    pub fn max(&self) -> Option<u32> {
        self.0.last().copied()
    }

    /// The CPU ids in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().copied()
    }

    /// The CPUs in both sets.
    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.intersection(&other.0).copied().collect())
    }

    /// The CPUs of `self` that are not in `other`.
    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.difference(&other.0).copied().collect())
    }

    /// Whether every CPU of `self` is in `other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.0.is_subset(&other.0)
    }

    /// The CPU ids in ascending order.
    pub fn to_vec(&self) -> Vec<u32> {
        self.0.iter().copied().collect()
    }
}

impl FromIterator<u32> for CpuSet {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        CpuSet(iter.into_iter().collect())
    }
}

fn parse_id(text: &str, item: &str) -> Result<u32, CpuListError> {
    let id: u32 = text
        .trim()
        .parse()
        .map_err(|_| CpuListError::BadItem(item.to_string()))?;
    if id > MAX_CPU_ID {
        return Err(CpuListError::TooLarge(id));
    }
    Ok(id)
}

impl FromStr for CpuSet {
    type Err = CpuListError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        if text.is_empty() {
            return Err(CpuListError::Empty);
        }
        let mut set = BTreeSet::new();
        for item in text.split(',') {
            let item = item.trim();
            match item.split_once('-') {
                Some((first, last)) => {
                    let (first, last) = (parse_id(first, item)?, parse_id(last, item)?);
                    if last < first {
                        return Err(CpuListError::Reversed(item.to_string()));
                    }
                    set.extend(first..=last);
                }
                None => {
                    set.insert(parse_id(item, item)?);
                }
            }
        }
        Ok(CpuSet(set))
    }
}

/// Canonical cpulist: ascending, runs of two or more as ranges.
impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut ids = self.0.iter().copied().peekable();
        let mut first_item = true;
        while let Some(start) = ids.next() {
            let mut end = start;
            while ids.peek() == Some(&(end + 1)) {
                end += 1;
                ids.next();
            }
            if !first_item {
                f.write_str(",")?;
            }
            first_item = false;
            if end == start {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
        }
        Ok(())
    }
}

impl Serialize for CpuSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CpuSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kernel_cpulists() {
        let set: CpuSet = "0-3,8,10-11".parse().unwrap();
        assert_eq!(set.to_vec(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(set.to_string(), "0-3,8,10-11");
        assert_eq!("5\n".parse::<CpuSet>().unwrap().to_vec(), vec![5]);
        assert_eq!("1,0".parse::<CpuSet>().unwrap().to_string(), "0-1");
    }

    #[test]
    fn rejects_malformed_lists() {
        assert_eq!("".parse::<CpuSet>(), Err(CpuListError::Empty));
        assert_eq!(
            "3-1".parse::<CpuSet>(),
            Err(CpuListError::Reversed("3-1".into()))
        );
        assert_eq!(
            "0-3,x".parse::<CpuSet>(),
            Err(CpuListError::BadItem("x".into()))
        );
        assert_eq!(
            "0,,1".parse::<CpuSet>(),
            Err(CpuListError::BadItem("".into()))
        );
        assert_eq!("9000".parse::<CpuSet>(), Err(CpuListError::TooLarge(9000)));
    }
}
