//! XID errors from the kernel log.
//!
//! The NVIDIA driver writes every Xid to the kernel log as
//! `NVRM: Xid (PCI:0000:01:00): 31, pid=..., ...` (NVIDIA's "XID Errors" guide). The agent
//! follows `/dev/kmsg` on a thread of its own and counts Xids per (PCI address, xid); the GPU
//! collector attributes them through each GPU's PCI bus id. The kernel log rather than NVML
//! events keeps NVML out of the daemon ([`crate::nvml_child`]).
//!
//! The watcher is not a [`super::Collector`]: it has no pass of its own to time or fail.
//! It follows the log continuously (a pass would miss records between cycles or block on
//! the device), and its counts are part of each GPU's sample, attributed by the GPU
//! collector, so an unreadable log shows on the GPUs rather than as a collector of its own.
//!
//! The daemon counts from its start, as the counters of a restarted exporter do: counting the
//! whole ring buffer again after each restart would make `increase()` see every old Xid anew.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, ErrorKind, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

/// The kernel log device.
pub const KMSG: &str = "/dev/kmsg";

/// One Xid line of the kernel log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XidEvent {
    /// `dddd:bb:dd` (domain, bus, device; lowercase hex), as [`pci_address`] writes it.
    pub pci_address: String,
    /// The Xid: NVIDIA's number for the kind of error.
    pub xid: u64,
}

/// `NVRM: Xid (PCI:0000:08:00): 31, ...` (older drivers: `NVRM: Xid (0000:01:00): 13, ...`).
pub fn parse_xid(message: &str) -> Option<XidEvent> {
    let rest = &message[message.find("NVRM: Xid (")? + "NVRM: Xid (".len()..];
    let (address, rest) = rest.split_once("): ")?;
    let address = address.strip_prefix("PCI:").unwrap_or(address);
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    Some(XidEvent {
        pci_address: pci_address(address)?,
        xid: rest.get(..digits)?.parse().ok()?,
    })
}

/// A PCI address as `dddd:bb:dd`, from the kernel log's `0000:08:00` or NVML's
/// `00000000:08:00.0` (any case, function optional): one key for both sources.
pub fn pci_address(text: &str) -> Option<String> {
    let text = text.split_once('.').map_or(text, |(a, _)| a);
    let mut parts = text.split(':');
    let (domain, bus, device) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let hex = |s: &str, max: usize| {
        (!s.is_empty() && s.len() <= max)
            .then(|| u32::from_str_radix(s, 16).ok())
            .flatten()
    };
    Some(format!(
        "{:04x}:{:02x}:{:02x}",
        hex(domain, 8)?,
        hex(bus, 2)?,
        hex(device, 2)?
    ))
}

/// The message of one `/dev/kmsg` record, `PRIORITY,SEQUENCE,MICROSECONDS,FLAGS[,...];TEXT`
/// (Documentation/ABI/testing/dev-kmsg); continuation lines (` KEY=VALUE`) have none.
pub fn kmsg_message(record: &str) -> Option<&str> {
    if record.starts_with(' ') {
        return None;
    }
    record
        .split_once(';')
        .map(|(_, text)| text.trim_end_matches('\n'))
}

/// (PCI address, xid) -> count.
type Counts = BTreeMap<(String, u64), u64>;

/// Counts the Xids of the kernel log, following it on a thread.
#[derive(Clone, Default)]
pub struct XidWatcher {
    counts: Arc<Mutex<Counts>>,
    /// Why the log cannot be read (or stopped being read), if so.
    error: Arc<Mutex<Option<String>>>,
}

impl XidWatcher {
    /// Follows the kernel log at `path` (normally [`KMSG`]) on a thread, from the next
    /// record on: the agent counts the Xids since it started (docs/node-agent.md). Failing to
    /// open it is recorded, not fatal: the GPU collector reports it.
    pub fn start(path: &Path) -> XidWatcher {
        let watcher = XidWatcher::default();
        let opened = std::fs::File::open(path).and_then(|mut file| {
            // /dev/kmsg: SEEK_END moves past the last record.
            file.seek(SeekFrom::End(0))?;
            Ok(file)
        });
        match opened {
            Ok(file) => {
                let w = watcher.clone();
                let spawned =
                    std::thread::Builder::new()
                        .name("kmsg-xid".into())
                        .spawn(move || {
                            let reason = w.follow(file);
                            tracing::warn!(%reason, "kernel log no longer read; XID counts stop");
                            w.set_error(reason);
                        });
                if let Err(e) = spawned {
                    watcher.set_error(format!("cannot start the kernel log thread: {e}"));
                }
            }
            Err(e) => {
                let reason = format!("{}: {e}", path.display());
                tracing::warn!(%reason, "kernel log unreadable; XID errors not counted");
                watcher.set_error(reason);
            }
        }
        watcher
    }

    /// Reads records until the end of `log` (a fixture file; the device never ends) or an
    /// error other than the kernel's "records were overwritten" (EPIPE), and says why it
    /// stopped.
    pub fn follow(&self, log: impl Read) -> String {
        // /dev/kmsg returns one whole record per read; records are at most a few kB.
        let mut reader = BufReader::with_capacity(16 * 1024, log);
        let mut record = String::new();
        loop {
            record.clear();
            match reader.read_line(&mut record) {
                Ok(0) => return "end of the kernel log".into(),
                Ok(_) => {
                    if let Some(event) = kmsg_message(&record).and_then(parse_xid) {
                        tracing::error!(pci = %event.pci_address, xid = event.xid, "NVIDIA Xid in the kernel log");
                        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
                        *counts.entry((event.pci_address, event.xid)).or_default() += 1;
                    }
                }
                Err(e)
                    if e.kind() == ErrorKind::BrokenPipe || e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return format!("reading the kernel log: {e}"),
            }
        }
    }

    fn set_error(&self, reason: String) {
        *self.error.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason);
    }

    /// Why the log cannot be read (or stopped being read); `None` while it is read.
    pub(crate) fn error(&self) -> Option<String> {
        self.error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// (xid, count) of the GPU at `pci_bus_id` (NVML's form or the kernel's).
    pub fn counts_for(&self, pci_bus_id: &str) -> Vec<(u64, u64)> {
        let Some(key) = pci_address(pci_bus_id) else {
            return Vec::new();
        };
        self.counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|((address, _), _)| *address == key)
            .map(|((_, xid), n)| (*xid, *n))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kernel log records around real Xid reports (testdata/kmsg/README.md).
    const LOG: &str = include_str!("../../testdata/kmsg/xid-records.kmsg");

    #[test]
    fn xid_lines_of_real_reports_parse() {
        let cases = [
            (
                "NVRM: Xid (PCI:0000:08:00): 31, pid=169800, name=chrome, Ch 00000023, intr 00000000. MMU Fault: ENGINE CE0 HUBCLIENT_HSCE0 faulted @ 0x0_0abe0000. Fault is of type FAULT_PTE ACCESS_TYPE_VIRT_READ",
                "0000:08:00",
                31,
            ),
            (
                "NVRM: Xid (PCI:0000:00:05): 43, pid=1045242, name=pt_main_thread, Ch 00000008",
                "0000:00:05",
                43,
            ),
            (
                "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus",
                "0000:44:00",
                79,
            ),
            (
                "NVRM: Xid (PCI:0000:00:08): 94, pid='<unknown>', name=<unknown>, Contained: SM (0x1). RST: No, D-RST: No",
                "0000:00:08",
                94,
            ),
            (
                "NVRM: Xid (PCI:0000:01:00): 32, Channel ID 00000000 intr 00004000",
                "0000:01:00",
                32,
            ),
        ];
        for (line, address, xid) in cases {
            assert_eq!(
                parse_xid(line),
                Some(XidEvent {
                    pci_address: address.into(),
                    xid
                }),
                "{line}"
            );
        }
        for not_xid in [
            "NVRM: GPU at PCI:0000:08:00: GPU-UID",
            "NVRM: Xid (PCI:0000:08:00): , no number",
            "NVRM: Xid (PCI:zz:08:00): 31, bad address",
            "NVRM: Xid (PCI:0000:08:00",
            "",
        ] {
            assert_eq!(parse_xid(not_xid), None, "{not_xid}");
        }
    }

    #[test]
    fn nvml_and_kernel_addresses_share_one_key() {
        assert_eq!(
            pci_address("00000000:3B:00.0").as_deref(),
            Some("0000:3b:00")
        );
        assert_eq!(pci_address("0000:3b:00").as_deref(), Some("0000:3b:00"));
        assert_eq!(pci_address("0001:C1:1f.7").as_deref(), Some("0001:c1:1f"));
        for bad in [
            "",
            "3b:00",
            "0000:3b:00:00",
            "0000:3bb:00",
            "0000::00",
            "x:3b:00",
        ] {
            assert_eq!(pci_address(bad), None, "{bad}");
        }
    }

    #[test]
    fn kmsg_records_are_counted_per_gpu_and_xid() {
        let watcher = XidWatcher::default();
        assert_eq!(watcher.follow(LOG.as_bytes()), "end of the kernel log");
        // The fixture's Xids: 0000:00:05 twice xid 43; 0000:00:07 xid 31; 0000:08:00 xid 31
        // twice; continuation lines and other messages ignored.
        assert_eq!(watcher.counts_for("00000000:00:05.0"), vec![(43, 2)]);
        assert_eq!(watcher.counts_for("00000000:00:07.0"), vec![(31, 1)]);
        assert_eq!(watcher.counts_for("0000:08:00"), vec![(31, 2)]);
        assert_eq!(watcher.counts_for("00000000:01:00.0"), vec![]);
        assert_eq!(watcher.counts_for("not an address"), vec![]);
    }

    #[test]
    fn an_unreadable_log_is_a_reported_reason() {
        let dir = tempfile::tempdir().unwrap();
        let watcher = XidWatcher::start(&dir.path().join("kmsg"));
        let error = watcher.error().unwrap();
        assert!(
            error.contains("kmsg") && error.contains("No such file"),
            "{error}"
        );
        assert_eq!(watcher.counts_for("0000:08:00"), vec![]);
    }

    #[test]
    fn a_started_watcher_counts_only_what_follows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kmsg");
        std::fs::write(&path, LOG).unwrap();
        let finished = |watcher: &XidWatcher| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while watcher.error().is_none() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            watcher.error()
        };
        // The whole log, read directly, holds two Xids of that GPU.
        let whole = XidWatcher::default();
        let reason = whole.follow(std::fs::File::open(&path).unwrap());
        assert_eq!(reason, "end of the kernel log");
        assert_eq!(whole.counts_for("0000:08:00"), vec![(31, 2)]);
        // Started on it, the thread reads to the end from now on: what the log held before
        // is not counted.
        let now = XidWatcher::start(&path);
        assert_eq!(finished(&now).as_deref(), Some("end of the kernel log"));
        assert_eq!(now.counts_for("0000:08:00"), vec![]);
    }
}
