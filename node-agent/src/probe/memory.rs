use super::read;
use hardware_profiles::Fact;
use std::path::Path;

/// `MemTotal` of /proc/meminfo, in bytes.
pub fn probe_memory(root: &Path) -> Fact<u64> {
    let text = match read(root, "/proc/meminfo") {
        Ok(text) => text,
        Err(reason) => return Fact::Unknown(reason),
    };
    parse_mem_total(&text).map_or_else(
        || Fact::unknown("/proc/meminfo: no parsable `MemTotal: <n> kB` line"),
        Fact::Known,
    )
}

fn parse_mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line.trim_start_matches("MemTotal:").split_whitespace();
    let kib: u64 = words.next()?.parse().ok()?;
    // The kernel's "kB" is KiB.
    match words.next() {
        Some("kB") => kib.checked_mul(1024),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::parse_mem_total;

    #[test]
    fn mem_total_in_bytes() {
        assert_eq!(
            parse_mem_total("MemTotal:       24576000 kB\nMemFree: 1 kB\n"),
            Some(24_576_000 * 1024)
        );
        assert_eq!(parse_mem_total("MemTotal: 12 MB\n"), None);
        assert_eq!(parse_mem_total("MemFree: 1 kB\n"), None);
        assert_eq!(parse_mem_total("MemTotal: x kB\n"), None);
    }
}
