//! What may be flashed: a whole block device that nothing uses, or a regular file. Refused:
//! the disk holding the running system's root filesystem, a device any of whose partitions
//! (or device-mapper/md devices built on them) is mounted or used as swap, a partition
//! (the image is a whole GPT disk), the image file itself, and a file that backs a loop
//! device. Every check reads /proc and /sys under roots the caller gives, so the checks are
//! tested against fixture trees.

use std::collections::BTreeSet;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use thiserror::Error;

#[derive(Debug, Error)]
pub enum TargetError {
    #[error("refusing {target}: {reason}")]
    Refused { target: PathBuf, reason: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Where the system's /proc and /sys are ("/proc", "/sys" on a real machine).
#[derive(Debug, Clone)]
pub struct SystemView {
    pub proc_root: PathBuf,
    pub sys_root: PathBuf,
}

impl SystemView {
    pub fn host() -> SystemView {
        SystemView {
            proc_root: PathBuf::from("/proc"),
            sys_root: PathBuf::from("/sys"),
        }
    }
}

/// The target as found on the machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetKind {
    /// A block device with its (major, minor) number.
    BlockDevice { major: u32, minor: u32 },
    /// A regular file (device and inode, to recognise the image itself).
    File { dev: u64, ino: u64 },
    /// Nothing there yet: a file will be created.
    Missing,
}

#[derive(Debug, Clone)]
pub struct Target {
    pub path: PathBuf,
    pub kind: TargetKind,
}

impl Target {
    /// Looks at `path` without opening it for writing.
    pub fn inspect(path: &Path) -> Result<Target, TargetError> {
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Target {
                    path: path.to_owned(),
                    kind: TargetKind::Missing,
                });
            }
            Err(source) => {
                return Err(TargetError::Io {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        let kind = if meta.file_type().is_block_device() {
            let rdev = meta.rdev();
            TargetKind::BlockDevice {
                major: nix::sys::stat::major(rdev) as u32,
                minor: nix::sys::stat::minor(rdev) as u32,
            }
        } else if meta.is_file() {
            TargetKind::File {
                dev: meta.dev(),
                ino: meta.ino(),
            }
        } else {
            return Err(TargetError::Refused {
                target: path.to_owned(),
                reason: "neither a block device nor a regular file".into(),
            });
        };
        Ok(Target {
            path: path.to_owned(),
            kind,
        })
    }
}

/// Every refusal rule; `image` is the image about to be written.
pub fn check_target(target: &Target, image: &Path, view: &SystemView) -> Result<(), TargetError> {
    let refuse = |reason: String| TargetError::Refused {
        target: target.path.clone(),
        reason,
    };
    match target.kind {
        TargetKind::Missing => Ok(()),
        TargetKind::File { dev, ino } => {
            if let Ok(m) = std::fs::metadata(image)
                && (m.dev(), m.ino()) == (dev, ino)
            {
                return Err(refuse("it is the image file itself".into()));
            }
            let sys = Sysfs(&view.sys_root);
            if let Some(loop_dev) = sys.loop_backed_by(&target.path) {
                return Err(refuse(format!(
                    "it backs the loop device /dev/{loop_dev}; detach it first (losetup -d)"
                )));
            }
            Ok(())
        }
        TargetKind::BlockDevice { major, minor } => {
            check_block_device(&target.path, (major, minor), view).map_err(refuse)
        }
    }
}

/// The block-device rules, returning the reason for a refusal.
pub fn check_block_device(
    path: &Path,
    devnum: (u32, u32),
    view: &SystemView,
) -> Result<(), String> {
    let sys = Sysfs(&view.sys_root);
    let name = sys.name_of(devnum).ok_or_else(|| {
        format!(
            "block device {}:{} is not in {}/dev/block; cannot tell what it is",
            devnum.0,
            devnum.1,
            view.sys_root.display()
        )
    })?;
    if sys.is_partition(&name) {
        let disk = sys.disk_of(&name).unwrap_or_else(|| "its disk".into());
        return Err(format!(
            "/dev/{name} is a partition of /dev/{disk}; the image is a whole GPT disk: flash /dev/{disk}"
        ));
    }
    let mounts = Mounts::read(view)?;
    if let Some(root) = mounts.root_device(&sys) {
        let root_disks = sys.base_disks(&root);
        if root_disks.contains(&name) {
            return Err(format!(
                "/dev/{name} holds the running system's root filesystem (/ is on /dev/{root})"
            ));
        }
    }
    // The disk, its partitions and whatever is stacked on any of them.
    let mut in_use_names = BTreeSet::new();
    let mut todo = vec![name.clone()];
    todo.extend(sys.partitions_of(&name));
    while let Some(n) = todo.pop() {
        if in_use_names.insert(n.clone()) {
            todo.extend(sys.holders_of(&n));
        }
    }
    for n in &in_use_names {
        let devnum = sys.devnum_of(n);
        let dev_path = format!("/dev/{n}");
        let same = |source: &str| {
            source == dev_path
                || Path::new(source) == path
                || sys.name_of_dev_path(source) == Some(n.clone())
        };
        for m in &mounts.mountinfo {
            if Some(m.devnum) == devnum || same(&m.source) {
                return Err(format!(
                    "/dev/{n} is mounted at {} (mountinfo); unmount it first",
                    m.mount_point
                ));
            }
        }
        for (source, point) in &mounts.mounts {
            if same(source) {
                return Err(format!(
                    "/dev/{n} is mounted at {point} (mounts); unmount it first"
                ));
            }
        }
        for swap in &mounts.swaps {
            if same(swap) {
                return Err(format!("/dev/{n} is in use as swap; swapoff it first"));
            }
        }
        if n != &name && !sys.is_partition(n) {
            return Err(format!(
                "/dev/{n} (device-mapper, md, ...) is built on /dev/{name}; remove it first"
            ));
        }
    }
    Ok(())
}

struct MountInfo {
    devnum: (u32, u32),
    mount_point: String,
    source: String,
}

/// /proc/self/mountinfo, /proc/mounts and /proc/swaps.
struct Mounts {
    mountinfo: Vec<MountInfo>,
    mounts: Vec<(String, String)>,
    swaps: Vec<String>,
}

impl Mounts {
    fn read(view: &SystemView) -> Result<Mounts, String> {
        let read = |rel: &str, required: bool| -> Result<String, String> {
            let path = view.proc_root.join(rel);
            match std::fs::read_to_string(&path) {
                Ok(t) => Ok(t),
                Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => {
                    Ok(String::new())
                }
                // Without the mount table nothing can be ruled out: refuse.
                Err(e) => Err(format!(
                    "cannot read {} to rule out a mounted device: {e}",
                    path.display()
                )),
            }
        };
        let mountinfo = read("self/mountinfo", true)?
            .lines()
            .filter_map(parse_mountinfo_line)
            .collect();
        let mounts = read("mounts", true)?
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                Some((unescape(f.next()?), unescape(f.next()?)))
            })
            .collect();
        let swaps = read("swaps", false)?
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().next().map(unescape))
            .collect();
        Ok(Mounts {
            mountinfo,
            mounts,
            swaps,
        })
    }

    /// The block device name of the root filesystem ("/"), by number or by source path.
    fn root_device(&self, sys: &Sysfs<'_>) -> Option<String> {
        let root = self.mountinfo.iter().rev().find(|m| m.mount_point == "/")?;
        sys.name_of(root.devnum)
            .or_else(|| sys.name_of_dev_path(&root.source))
    }
}

/// `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw` -> (98:0, /mnt2, /dev/root).
fn parse_mountinfo_line(line: &str) -> Option<MountInfo> {
    let (head, tail) = line.split_once(" - ")?;
    let mut fields = head.split_whitespace();
    let devnum = fields.nth(2)?;
    let (major, minor) = devnum.split_once(':')?;
    let mount_point = unescape(fields.nth(1)?);
    let source = unescape(tail.split_whitespace().nth(1)?);
    Some(MountInfo {
        devnum: (major.parse().ok()?, minor.parse().ok()?),
        mount_point,
        source,
    })
}

/// The kernel writes space, tab, newline and backslash in mount fields as octal escapes.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| b == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                let v = d.iter().fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'));
                out.push(v as u8);
                i += 4;
            }
            None => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Block devices as /sys shows them.
struct Sysfs<'a>(&'a Path);

impl Sysfs<'_> {
    fn class(&self, name: &str) -> PathBuf {
        self.0.join("class/block").join(name)
    }

    fn name_of(&self, (major, minor): (u32, u32)) -> Option<String> {
        let link = self.0.join(format!("dev/block/{major}:{minor}"));
        let dir = std::fs::canonicalize(link).ok()?;
        Some(dir.file_name()?.to_string_lossy().into_owned())
    }

    /// "/dev/sda2" -> "sda2" when /sys knows such a block device.
    fn name_of_dev_path(&self, source: &str) -> Option<String> {
        let resolved = std::fs::canonicalize(source).unwrap_or_else(|_| PathBuf::from(source));
        let name = resolved
            .strip_prefix("/dev")
            .ok()?
            .to_string_lossy()
            .into_owned();
        (!name.is_empty() && !name.contains('/') && self.class(&name).exists()).then_some(name)
    }

    fn devnum_of(&self, name: &str) -> Option<(u32, u32)> {
        let text = std::fs::read_to_string(self.class(name).join("dev")).ok()?;
        let (a, b) = text.trim().split_once(':')?;
        Some((a.parse().ok()?, b.parse().ok()?))
    }

    fn is_partition(&self, name: &str) -> bool {
        self.class(name).join("partition").exists()
    }

    fn disk_of(&self, partition: &str) -> Option<String> {
        let dir = std::fs::canonicalize(self.class(partition)).ok()?;
        Some(dir.parent()?.file_name()?.to_string_lossy().into_owned())
    }

    fn partitions_of(&self, disk: &str) -> Vec<String> {
        let Ok(dir) = std::fs::canonicalize(self.class(disk)) else {
            return Vec::new();
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .filter(|e| e.path().join("partition").exists())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    }

    fn listed(&self, name: &str, sub: &str) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.class(name).join(sub)) else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    }

    fn holders_of(&self, name: &str) -> Vec<String> {
        self.listed(name, "holders")
    }

    /// The whole disks under `name`: through device-mapper/md slaves, then partition -> disk.
    fn base_disks(&self, name: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let mut todo = vec![name.to_string()];
        let mut seen = BTreeSet::new();
        while let Some(n) = todo.pop() {
            if !seen.insert(n.clone()) {
                continue;
            }
            let slaves = self.listed(&n, "slaves");
            if !slaves.is_empty() {
                todo.extend(slaves);
            } else if self.is_partition(&n) {
                out.extend(self.disk_of(&n));
            } else {
                out.insert(n);
            }
        }
        out
    }

    /// The loop device whose backing file is `file`, if any.
    fn loop_backed_by(&self, file: &Path) -> Option<String> {
        let want = std::fs::canonicalize(file).ok()?;
        let entries = std::fs::read_dir(self.0.join("class/block")).ok()?;
        entries.filter_map(Result::ok).find_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let backing = std::fs::read_to_string(e.path().join("loop/backing_file")).ok()?;
            (Path::new(backing.trim()) == want).then_some(name)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_fields_and_escapes() {
        let m = parse_mountinfo_line(
            r"36 35 98:0 /mnt1 /mnt\040two rw,noatime master:1 - ext3 /dev/root rw,errors=continue",
        )
        .expect("parses");
        assert_eq!(m.devnum, (98, 0));
        assert_eq!(m.mount_point, "/mnt two");
        assert_eq!(m.source, "/dev/root");
        assert!(parse_mountinfo_line("garbage").is_none());
        assert_eq!(unescape(r"a\134b\011"), "a\\b\t");
        assert_eq!(unescape(r"\12"), r"\12");
    }
}
