//! What may be flashed, decided on the descriptor that is then written: `open_device` opens a
//! block device once, exclusively (`O_EXCL`: the kernel refuses it while it is mounted, used
//! as swap or held by device-mapper/md), and checks that descriptor (`fstat`: a block
//! device; its size; not the disk under the running system's root filesystem; neither it nor
//! any of its partitions mounted or in swap; nothing stacked on it; the serial and size the
//! operator expects). `open_file` opens a regular file (only ever asked for with
//! `--to-file`) and refuses the image itself and a file backing a loop device. Every rule
//! reads /proc and /sys under roots the caller gives, so the rules are tested against
//! fixture trees as well as real loop devices.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom};
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use thiserror::Error;

/// Sector size of the image's GPT; a device with another logical block size would not find it.
pub const IMAGE_SECTOR: u64 = 512;

/// Why a target was not opened for writing.
#[derive(Debug, Error)]
pub enum TargetError {
    /// A rule refuses the target; nothing was written.
    #[error("refusing {target}: {reason}")]
    Refused {
        /// The device or file.
        target: PathBuf,
        /// The rule it breaks, with what was found.
        reason: String,
    },
    /// Opening or inspecting the target failed.
    #[error("{path}: {source}")]
    Io {
        /// The device or file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
}

/// Where the system's /proc, /sys and udev database are ("/proc", "/sys", "/run/udev/data").
#[derive(Debug, Clone)]
pub struct SystemView {
    /// Where /proc is (the mount table and swaps).
    pub proc_root: PathBuf,
    /// Where /sys is (block devices, partitions, holders, loop backing files).
    pub sys_root: PathBuf,
    /// Where the udev database is (serial numbers).
    pub udev_data: PathBuf,
}

impl SystemView {
    /// The running system's own: /proc, /sys, /run/udev/data.
    pub fn host() -> SystemView {
        SystemView {
            proc_root: PathBuf::from("/proc"),
            sys_root: PathBuf::from("/sys"),
            udev_data: PathBuf::from("/run/udev/data"),
        }
    }
}

/// What the operator pins a device by (`--expect-serial`, `--expect-size`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expect {
    /// The serial number the device must report.
    pub serial: Option<String>,
    /// The device's size in bytes.
    pub size: Option<u64>,
}

/// What the checks established about an opened block device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceFacts {
    /// Kernel name (`sdb`, `nvme1n1`, `loop3`).
    pub name: String,
    /// (major, minor) device number.
    pub devnum: (u32, u32),
    /// Size in bytes, through the opened descriptor.
    pub size: u64,
    /// Logical block size in bytes, from /sys.
    pub logical_block_size: u64,
    /// Serial numbers /sys and udev report, as (source, value).
    pub serials: Vec<(String, String)>,
}

/// An opened, checked target: write and read back through `file` only.
#[derive(Debug)]
pub struct OpenTarget {
    /// The path it was opened by.
    pub path: PathBuf,
    /// The one descriptor the checks were made on.
    pub file: File,
    /// A device (with its facts) or a file.
    pub kind: OpenKind,
}

/// What kind of target was opened.
#[derive(Debug)]
pub enum OpenKind {
    /// A whole block device, opened `O_EXCL`, switched to `O_DIRECT` after the checks.
    Device(DeviceFacts),
    /// A regular file; `created` when this open made it (removed again if flashing stops
    /// before writing).
    File {
        /// Whether this open created the file.
        created: bool,
    },
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> TargetError + '_ {
    move |source| TargetError::Io {
        path: path.to_owned(),
        source,
    }
}

fn devnum_of_rdev(rdev: u64) -> (u32, u32) {
    (
        nix::sys::stat::major(rdev) as u32,
        nix::sys::stat::minor(rdev) as u32,
    )
}

/// Opens `path` once as a whole block device and checks that descriptor. `image` is the
/// image about to be written (the device must hold it).
pub fn open_device(
    path: &Path,
    image_size: u64,
    expect: &Expect,
    view: &SystemView,
) -> Result<OpenTarget, TargetError> {
    let file = open_exclusive(path, view)?;
    let meta = file.metadata().map_err(io_error(path))?;
    let ft = meta.file_type();
    if !ft.is_block_device() {
        let what = if ft.is_file() {
            "a regular file; a file is written only with --to-file"
        } else if ft.is_dir() {
            "a directory"
        } else {
            "neither a block device nor a regular file"
        };
        return Err(refused(path)(format!("it is {what}")));
    }
    let devnum = devnum_of_rdev(meta.rdev());
    check_block_device(path, devnum, view).map_err(refused(path))?;
    let facts = device_facts(path, &file, devnum, view)?;
    check_facts(&facts, image_size, expect).map_err(refused(path))?;
    // The rest goes through the device, not the page cache: write-through on every block,
    // and the read-back sees what the device returns.
    fcntl(file.as_fd(), FcntlArg::F_SETFL(OFlag::O_DIRECT))
        .map_err(|e| io_error(path)(std::io::Error::other(format!("setting O_DIRECT: {e}"))))?;
    Ok(OpenTarget {
        path: path.to_owned(),
        file,
        kind: OpenKind::Device(facts),
    })
}

/// [`TargetError::Refused`] for `path`, from its reason.
fn refused(path: &Path) -> impl Fn(String) -> TargetError + '_ {
    move |reason| TargetError::Refused {
        target: path.to_owned(),
        reason,
    }
}

/// Opens `path` read-write with `O_EXCL`; the kernel's EBUSY is refused with who holds the
/// device, where /proc and /sys tell.
fn open_exclusive(path: &Path, view: &SystemView) -> Result<File, TargetError> {
    // O_NONBLOCK: opening a FIFO or a device with open side effects must not hang; the
    // descriptor is refused later unless it is a block device. O_EXCL on a block device:
    // the kernel refuses it (EBUSY) while it is mounted, in swap or claimed by dm/md.
    let opened = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc_flags(
            OFlag::O_EXCL | OFlag::O_NONBLOCK | OFlag::O_NOCTTY,
        ))
        .open(path);
    match opened {
        Ok(f) => Ok(f),
        Err(e) if e.raw_os_error() == Some(nix::libc::EBUSY) => {
            // Say who holds it where /proc and /sys tell; the kernel's refusal stands either way.
            let detail = std::fs::metadata(path)
                .ok()
                .filter(|m| m.file_type().is_block_device())
                .and_then(|m| check_block_device(path, devnum_of_rdev(m.rdev()), view).err());
            Err(refused(path)(match detail {
                Some(reason) => reason,
                None => "the kernel refuses an exclusive open (EBUSY): it is mounted, in swap, \
                         or held by device-mapper, md or another program"
                    .into(),
            }))
        }
        Err(e) => Err(io_error(path)(e)),
    }
}

/// The opened block device `devnum`'s name, size (through `file`), logical block size and
/// serial numbers, from /sys and udev.
fn device_facts(
    path: &Path,
    file: &File,
    devnum: (u32, u32),
    view: &SystemView,
) -> Result<DeviceFacts, TargetError> {
    let sys = Sysfs(&view.sys_root);
    let name = sys.name_of(devnum).ok_or_else(|| {
        refused(path)(format!(
            "block device {}:{} is not in /sys",
            devnum.0, devnum.1
        ))
    })?;
    let size = (&*file).seek(SeekFrom::End(0)).map_err(io_error(path))?;
    let logical_block_size = sys.logical_block_size(&name).ok_or_else(|| {
        refused(path)(format!(
            "cannot read the logical block size of /dev/{name} from {}",
            sys.class(&name).join("queue/logical_block_size").display()
        ))
    })?;
    Ok(DeviceFacts {
        serials: device_serials(&name, devnum, view),
        name,
        devnum,
        size,
        logical_block_size,
    })
}

fn libc_flags(flags: OFlag) -> i32 {
    flags.bits() | nix::libc::O_CLOEXEC
}

/// The device against the image and the operator's pins; the reason names what differs.
pub fn check_facts(facts: &DeviceFacts, image_size: u64, expect: &Expect) -> Result<(), String> {
    let name = &facts.name;
    if let Some(want) = expect.size
        && want != facts.size
    {
        return Err(format!(
            "/dev/{name} has {} bytes, --expect-size says {want}",
            facts.size
        ));
    }
    if let Some(want) = &expect.serial
        && !facts.serials.iter().any(|(_, have)| have == want.trim())
    {
        return Err(if facts.serials.is_empty() {
            format!(
                "--expect-serial {want:?}: /dev/{name} reports no serial number (none in /sys or the udev database)"
            )
        } else {
            let have: Vec<String> = facts
                .serials
                .iter()
                .map(|(src, v)| format!("{v:?} ({src})"))
                .collect();
            format!(
                "/dev/{name} has serial {}, --expect-serial says {want:?}",
                have.join(", ")
            )
        });
    }
    if facts.logical_block_size != IMAGE_SECTOR {
        return Err(format!(
            "/dev/{name} has {}-byte logical blocks; the image's GPT is laid out in {IMAGE_SECTOR}-byte sectors and would not be found",
            facts.logical_block_size
        ));
    }
    if facts.size < image_size {
        return Err(format!(
            "/dev/{name} has {} bytes, the image needs {image_size}",
            facts.size
        ));
    }
    Ok(())
}

/// The serial numbers of a whole disk: /sys (`device/serial`, `serial`, `device/wwid`,
/// `wwid`) and udev's `ID_SERIAL_SHORT` / `ID_SERIAL`, as `lsblk -o SERIAL` shows them.
pub fn device_serials(name: &str, devnum: (u32, u32), view: &SystemView) -> Vec<(String, String)> {
    let sys = Sysfs(&view.sys_root);
    let mut out: Vec<(String, String)> = Vec::new();
    let mut add = |source: String, value: &str| {
        let v = value.trim();
        if !v.is_empty() && !out.iter().any(|(_, have)| have == v) {
            out.push((source, v.to_string()));
        }
    };
    for rel in ["device/serial", "serial", "device/wwid", "wwid"] {
        if let Ok(v) = std::fs::read_to_string(sys.class(name).join(rel)) {
            add(format!("sysfs {rel}"), &v);
        }
    }
    let udev = view.udev_data.join(format!("b{}:{}", devnum.0, devnum.1));
    if let Ok(text) = std::fs::read_to_string(udev) {
        for key in ["ID_SERIAL_SHORT", "ID_SERIAL"] {
            if let Some(v) = text
                .lines()
                .find_map(|l| l.strip_prefix("E:")?.strip_prefix(key)?.strip_prefix('='))
            {
                add(format!("udev {key}"), v);
            }
        }
    }
    out
}

/// Opens (or creates) the regular file `path` for `--to-file` and checks that descriptor:
/// a regular file, not the image, not backing a loop device. The last component is never
/// followed (`O_NOFOLLOW`): a symbolic link there is refused, not written through, and so is
/// a directory.
pub fn open_file(path: &Path, image: &Path, view: &SystemView) -> Result<OpenTarget, TargetError> {
    let refuse = |reason: String| TargetError::Refused {
        target: path.to_owned(),
        reason,
    };
    let flags = libc_flags(OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_NOFOLLOW);
    // What an open error says about the path itself, when it is a refusal rather than I/O.
    let refusal_of = |e: &std::io::Error| match e.raw_os_error() {
        Some(nix::libc::ELOOP) => Some(refuse(
            "it is a symbolic link, not a regular file (--to-file never writes through a link)"
                .into(),
        )),
        Some(nix::libc::EISDIR) => Some(refuse(
            "it is a directory, not a regular file (--to-file names the image file to write)"
                .into(),
        )),
        _ => None,
    };
    let (file, created) = match OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(flags)
        .open(path)
    {
        Ok(f) => (f, true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let f = match OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(flags)
                .open(path)
            {
                Ok(f) => f,
                Err(e) => return Err(refusal_of(&e).unwrap_or_else(|| io_error(path)(e))),
            };
            (f, false)
        }
        Err(e) => return Err(refusal_of(&e).unwrap_or_else(|| io_error(path)(e))),
    };
    let meta = file.metadata().map_err(io_error(path))?;
    let ft = meta.file_type();
    if ft.is_block_device() {
        return Err(refuse(
            "it is a block device; flash a device with --target, which checks it".into(),
        ));
    }
    if !ft.is_file() {
        return Err(refuse("it is not a regular file".into()));
    }
    let id = (meta.dev(), meta.ino());
    if let Ok(m) = std::fs::metadata(image)
        && (m.dev(), m.ino()) == id
    {
        return Err(refuse("it is the image file itself".into()));
    }
    if let Some(loop_dev) = Sysfs(&view.sys_root).loop_backed_by(id) {
        return Err(refuse(format!(
            "it backs the loop device /dev/{loop_dev}; detach it first (losetup -d)"
        )));
    }
    fcntl(file.as_fd(), FcntlArg::F_SETFL(OFlag::empty()))
        .map_err(|e| io_error(path)(std::io::Error::other(format!("clearing O_NONBLOCK: {e}"))))?;
    Ok(OpenTarget {
        path: path.to_owned(),
        file,
        kind: OpenKind::File { created },
    })
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

    /// The loop device whose backing file is the file `(dev, ino)`, if any.
    fn loop_backed_by(&self, id: (u64, u64)) -> Option<String> {
        let entries = std::fs::read_dir(self.0.join("class/block")).ok()?;
        entries.filter_map(Result::ok).find_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let backing = std::fs::read_to_string(e.path().join("loop/backing_file")).ok()?;
            let m = std::fs::metadata(backing.trim()).ok()?;
            ((m.dev(), m.ino()) == id).then_some(name)
        })
    }

    fn logical_block_size(&self, name: &str) -> Option<u64> {
        std::fs::read_to_string(self.class(name).join("queue/logical_block_size"))
            .ok()?
            .trim()
            .parse()
            .ok()
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
