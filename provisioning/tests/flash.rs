//! Flashing against genuine GPT images built here (the `gpt` crate): sparse-file targets,
//! a byte flipped after writing, a write cut short by a real file-size limit, the refusal
//! rules against fixture /proc and /sys trees, and real loop devices (root only): the checks
//! on the opened descriptor, exclusive opens, mounts, serial and size pins, and a read-back
//! that sees the device rather than the page cache.

use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use provisioning::flash::{Destination, FlashError, Silent, config_region, flash, verify_target};
use provisioning::image::{ReleaseManifest, config_partition_of, write_test_image};
use provisioning::target::{
    DeviceFacts, Expect, SystemView, TargetError, check_block_device, check_facts, device_serials,
};
use sha2::{Digest, Sha256};
use sn_config::Bundle;

const BIN: &str = env!("CARGO_BIN_EXE_provision");

fn example_bundle(dir: &Path) -> PathBuf {
    let subnet = provisioning::subnet::Subnet::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sovereign-subnet-13.toml"),
        &Default::default(),
    )
    .unwrap();
    let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
    let bundles =
        provisioning::plan::bundles(&subnet, &provisioning::plan::plan(&subnet).unwrap(), &key)
            .unwrap();
    let path = dir.join("node-01");
    bundles[0].write_dir(&path).unwrap();
    path
}

struct Fixture {
    dir: tempfile::TempDir,
    manifest: ReleaseManifest,
    bundle: Bundle,
}

impl Fixture {
    /// `provision verify --image IMAGE --target TARGET`, as an operator runs it.
    fn verify_with_the_binary(&self) -> std::process::Output {
        Command::new(BIN)
            .args(["verify", "--image"])
            .arg(self.image())
            .arg("--target")
            .arg(self.target())
            .output()
            .unwrap()
    }

    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let image_dir = dir.path().join("release");
        std::fs::create_dir(&image_dir).unwrap();
        // 3 MiB of seeded root, a 16 MiB config partition: a 21 MiB disk.
        let bundle = Bundle::load_dir(&example_bundle(dir.path()), &[]).unwrap();
        let manifest = write_test_image(&image_dir, 3 << 20, 16 << 20, &[bundle.signer()]).unwrap();
        Fixture {
            dir,
            manifest,
            bundle,
        }
    }

    fn image(&self) -> PathBuf {
        self.dir.path().join("release/disk.img")
    }

    fn target(&self) -> PathBuf {
        self.dir.path().join("target.img")
    }

    fn flash(&self) -> Result<provisioning::flash::Verified, FlashError> {
        self.flash_to(&Destination::File {
            path: self.target(),
        })
    }

    fn flash_to(&self, dest: &Destination) -> Result<provisioning::flash::Verified, FlashError> {
        flash(
            &self.image(),
            &self.manifest,
            &self.bundle,
            dest,
            &SystemView::host(),
            &Silent,
        )
    }
}

fn flip(path: &Path, offset: u64) {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut byte = [0u8];
    f.seek(SeekFrom::Start(offset)).unwrap();
    std::io::Read::read_exact(&mut f, &mut byte).unwrap();
    f.seek(SeekFrom::Start(offset)).unwrap();
    f.write_all(&[byte[0] ^ 0x01]).unwrap();
}

#[test]
fn the_test_image_is_a_genuine_gpt_disk_matching_its_manifest() {
    let fx = Fixture::new();
    let (offset, size) = config_partition_of(&fx.image()).unwrap();
    assert_eq!(size, 16 << 20);
    assert_eq!(offset % (1 << 20), 0, "1 MiB aligned");
    assert_eq!(fx.manifest.config_range(), offset..offset + size);
    let bytes = std::fs::read(fx.image()).unwrap();
    assert_eq!(bytes.len() as u64, fx.manifest.disk_image.size);
    assert_eq!(
        hex::encode(Sha256::digest(&bytes)),
        fx.manifest.disk_image.sha256
    );
    // Protective MBR signature and the GPT header signature at LBA 1.
    assert_eq!(&bytes[510..512], &[0x55, 0xaa]);
    assert_eq!(&bytes[512..520], b"EFI PART");
    // The configuration partition is all zeros as released.
    assert!(
        bytes[offset as usize..(offset + size) as usize]
            .iter()
            .all(|&b| b == 0)
    );
}

#[test]
fn flash_to_a_sparse_file_verifies_and_stays_sparse() {
    let fx = Fixture::new();
    let v = fx.flash().unwrap();
    assert_eq!(v.image_sha256, fx.manifest.disk_image.sha256);
    assert_eq!(v.node_name, "node-01");
    let meta = std::fs::metadata(fx.target()).unwrap();
    assert_eq!(meta.len(), fx.manifest.disk_image.size);
    // Zero blocks were not written: the file holds fewer blocks than its length.
    use std::os::unix::fs::MetadataExt;
    assert!(
        meta.blocks() * 512 < meta.len(),
        "{} blocks for {} bytes",
        meta.blocks(),
        meta.len()
    );
    // The partition holds exactly the bundle's deterministic archive, padded with zeros.
    let region = config_region(&fx.bundle, &fx.manifest).unwrap();
    let bytes = std::fs::read(fx.target()).unwrap();
    let r = fx.manifest.config_range();
    assert_eq!(&bytes[r.start as usize..r.end as usize], &region[..]);
    assert_eq!(v.config_sha256, hex::encode(Sha256::digest(&region)));
    // `tar` (GNU) reads the partition: the ustar archive is a standard one.
    let part = fx.dir.path().join("part.tar");
    std::fs::write(&part, &region).unwrap();
    let out = Command::new("tar").arg("-tvf").arg(&part).output().unwrap();
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{listing}");
    let names: Vec<&str> = listing
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap())
        .collect();
    assert_eq!(names, ["SHA256SUMS", "SHA256SUMS.sig", "node.toml"]);
    assert!(
        listing.lines().all(|l| l.starts_with("-rw-r--r-- 0/0")),
        "{listing}"
    );

    // Re-verifiable later, with and without the bundle.
    verify_target(&fx.target(), &fx.manifest, None, &Silent).unwrap();
    verify_target(
        &fx.target(),
        &fx.manifest,
        Some(Sha256::digest(&region).into()),
        &Silent,
    )
    .unwrap();
}

#[test]
fn a_flipped_byte_anywhere_fails_verify() {
    let fx = Fixture::new();
    fx.flash().unwrap();
    let r = fx.manifest.config_range();
    let pristine = std::fs::read(fx.target()).unwrap();
    // In the root partition, in the backup GPT at the end, in the archive (a header, a
    // member's content, a member's block padding) and in the zero padding after the archive.
    for (offset, expect) in [
        ((2 << 20) + 12345, "image SHA-256"),
        (fx.manifest.disk_image.size - 100, "image SHA-256"),
        (r.start + 10, "configuration partition"),
        (
            r.start + 512 + 3,
            "signature over SHA256SUMS does not verify",
        ),
        // SHA256SUMS is 76 bytes: its block's padding is not covered by any checksum.
        (r.start + 512 + 400, "padding after member \"SHA256SUMS\""),
        (r.end - 1, "after the archive's last member"),
    ] {
        std::fs::write(fx.target(), &pristine).unwrap();
        flip(&fx.target(), offset);
        let err = verify_target(&fx.target(), &fx.manifest, None, &Silent).unwrap_err();
        assert_eq!(err.exit_code(), 1, "{err}");
        assert!(err.to_string().contains(expect), "offset {offset}: {err}");
    }
    // The binary says so with exit status 1.
    std::fs::write(fx.target(), &pristine).unwrap();
    flip(&fx.target(), 4096);
    let out = fx.verify_with_the_binary();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("verification failed"));
}

#[test]
fn a_write_cut_short_by_a_file_size_limit_is_a_failure_and_verify_says_so() {
    let fx = Fixture::new();
    let bundle_dir = fx.dir.path().join("node-01");
    // ulimit -f 4096 is 2 MiB (dash counts 512-byte blocks) or 4 MiB (bash: 1024), far
    // below the 21 MiB image. The kernel
    // refuses the write past the limit (EFBIG); provision ignores SIGXFSZ to report it.
    let script = format!(
        "ulimit -f 4096; exec \"{BIN}\" flash --image \"{}\" --to-file \"{}\" --node \"{}\"",
        fx.image().display(),
        fx.target().display(),
        bundle_dir.display()
    );
    let out = Command::new("sh").arg("-c").arg(&script).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(4),
        "stdout {} stderr {stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        stderr.contains("writing") && stderr.contains("too large"),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("verified"));

    // What was left behind does not pass verification.
    let out = fx.verify_with_the_binary();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_image_that_does_not_match_its_manifest_is_refused_before_writing() {
    let fx = Fixture::new();
    flip(&fx.image(), (2 << 20) + 7);
    let err = fx.flash().unwrap_err();
    assert_eq!(err.exit_code(), 2, "{err}");
    assert!(
        err.to_string().contains("!= manifest disk_image.sha256"),
        "{err}"
    );
    // The file this run created is removed again: nothing was written.
    assert!(!fx.target().exists());
    // A manifest whose partition is not where the GPT says.
    let mut bad = fx.manifest.clone();
    bad.disk_image.config_partition.offset_bytes += 512;
    let err = provisioning::image::check_image(&fx.image(), &bad, &|_| {}).unwrap_err();
    assert!(
        err.to_string().contains("GPT partition sn-config is at"),
        "{err}"
    );
}

#[test]
fn the_image_itself_and_a_bad_bundle_are_refused() {
    let fx = Fixture::new();
    let err = fx
        .flash_to(&Destination::File { path: fx.image() })
        .unwrap_err();
    assert_eq!(err.exit_code(), 3);
    assert!(err.to_string().contains("the image file itself"), "{err}");

    let dir = fx.dir.path().join("node-01");
    std::fs::write(dir.join("id_ed25519"), "secret").unwrap();
    let err = Bundle::load_dir(&dir, &[]).unwrap_err();
    assert!(
        err.to_string().contains("not part of a node bundle"),
        "{err}"
    );
    std::fs::remove_file(dir.join("id_ed25519")).unwrap();
    std::fs::write(dir.join("node.toml"), "schema = \"x\"\n").unwrap();
    let err = Bundle::load_dir(&dir, &[]).unwrap_err();
    assert_eq!(err.kind(), "checksum_mismatch", "{err}");
}

// ---- refusal rules against fixture trees ----

/// A /sys with disks sda (partitions sda1, sda2; dm-0 on sda2), sdb (partition sdb1) and vda.
fn fixture_sys(root: &Path) {
    let block = root.join("sys/devices/block");
    let class = root.join("sys/class/block");
    let dev = root.join("sys/dev/block");
    for d in [&block, &class, &dev] {
        std::fs::create_dir_all(d).unwrap();
    }
    let disk = |name: &str, devnum: &str| {
        let d = block.join(name);
        std::fs::create_dir_all(d.join("holders")).unwrap();
        std::fs::create_dir_all(d.join("slaves")).unwrap();
        std::fs::write(d.join("dev"), format!("{devnum}\n")).unwrap();
        std::os::unix::fs::symlink(&d, class.join(name)).unwrap();
        std::os::unix::fs::symlink(&d, dev.join(devnum)).unwrap();
        d
    };
    let part = |disk: &Path, name: &str, devnum: &str| {
        let d = disk.join(name);
        std::fs::create_dir_all(d.join("holders")).unwrap();
        std::fs::write(d.join("dev"), format!("{devnum}\n")).unwrap();
        std::fs::write(d.join("partition"), "1\n").unwrap();
        std::os::unix::fs::symlink(&d, class.join(name)).unwrap();
        std::os::unix::fs::symlink(&d, dev.join(devnum)).unwrap();
        d
    };
    let sda = disk("sda", "8:0");
    part(&sda, "sda1", "8:1");
    let sda2 = part(&sda, "sda2", "8:2");
    let sdb = disk("sdb", "8:16");
    part(&sdb, "sdb1", "8:17");
    disk("vda", "254:0");
    let dm = disk("dm-0", "253:0");
    std::fs::create_dir_all(sda2.join("holders/dm-0")).unwrap();
    std::fs::create_dir_all(dm.join("slaves/sda2")).unwrap();
}

fn view(root: &Path, mountinfo: &str, mounts: &str, swaps: &str) -> SystemView {
    let proc_root = root.join("proc");
    std::fs::create_dir_all(proc_root.join("self")).unwrap();
    std::fs::write(proc_root.join("self/mountinfo"), mountinfo).unwrap();
    std::fs::write(proc_root.join("mounts"), mounts).unwrap();
    std::fs::write(proc_root.join("swaps"), swaps).unwrap();
    SystemView {
        proc_root,
        sys_root: root.join("sys"),
        udev_data: root.join("run/udev/data"),
    }
}

const SWAPS_HEADER: &str = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";

/// Root on dm-0 (LUKS/LVM on sda2), /boot on sda1; sdb1 mounted at /mnt/usb stick (escaped).
const MOUNTINFO: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 253:0 / / rw,relatime - ext4 /dev/mapper/root rw
28 27 8:1 / /boot rw,relatime - vfat /dev/sda1 rw
29 27 8:17 / /mnt/usb\\040stick rw,relatime - ext4 /dev/sdb1 rw
";

#[test]
fn refuses_the_running_systems_disk_a_mounted_device_and_a_partition() {
    let tmp = tempfile::tempdir().unwrap();
    fixture_sys(tmp.path());
    let v = view(tmp.path(), MOUNTINFO, "", SWAPS_HEADER);
    let check = |dev: &str, num| check_block_device(Path::new(dev), num, &v);

    let err = check("/dev/sda", (8, 0)).unwrap_err();
    assert!(
        err.contains("holds the running system's root filesystem (/ is on /dev/dm-0)"),
        "{err}"
    );
    let err = check("/dev/sdb", (8, 16)).unwrap_err();
    assert!(
        err.contains("/dev/sdb1 is mounted at /mnt/usb stick (mountinfo)"),
        "{err}"
    );
    let err = check("/dev/sdb1", (8, 17)).unwrap_err();
    assert!(err.contains("is a partition of /dev/sdb"), "{err}");
    // vda is idle: allowed.
    check("/dev/vda", (254, 0)).unwrap();
    // A device /sys does not know is refused, not assumed safe.
    let err = check("/dev/sdz", (8, 224)).unwrap_err();
    assert!(err.contains("cannot tell what it is"), "{err}");
}

#[test]
fn refuses_by_proc_mounts_and_swaps_alone_and_without_a_mount_table() {
    let tmp = tempfile::tempdir().unwrap();
    fixture_sys(tmp.path());
    // Root elsewhere; sdb1 mounted by source path only (e.g. a btrfs anonymous 0:NN number).
    let mountinfo =
        "27 1 254:0 / / rw - ext4 /dev/vda rw\n30 27 0:45 / /data rw - btrfs /dev/sdb1 rw\n";
    let v = view(tmp.path(), mountinfo, "", SWAPS_HEADER);
    let err = check_block_device(Path::new("/dev/sdb"), (8, 16), &v).unwrap_err();
    assert!(
        err.contains("/dev/sdb1 is mounted at /data (mountinfo)"),
        "{err}"
    );

    let mountinfo = "27 1 254:0 / / rw - ext4 /dev/vda rw\n";
    let v = view(
        tmp.path(),
        mountinfo,
        "/dev/sdb1 /media/x ext4 rw 0 0\n",
        SWAPS_HEADER,
    );
    let err = check_block_device(Path::new("/dev/sdb"), (8, 16), &v).unwrap_err();
    assert!(err.contains("mounted at /media/x (mounts)"), "{err}");

    let v = view(
        tmp.path(),
        mountinfo,
        "",
        &format!("{SWAPS_HEADER}/dev/sdb1 partition 1048572 0 -2\n"),
    );
    let err = check_block_device(Path::new("/dev/sdb"), (8, 16), &v).unwrap_err();
    assert!(err.contains("in use as swap"), "{err}");

    // The root disk itself is refused as the system disk when / is on vda directly.
    let v = view(tmp.path(), mountinfo, "", SWAPS_HEADER);
    let err = check_block_device(Path::new("/dev/vda"), (254, 0), &v).unwrap_err();
    assert!(err.contains("running system's root filesystem"), "{err}");
    // sda: its sda2 carries dm-0 (not mounted here): still refused, something is built on it.
    let err = check_block_device(Path::new("/dev/sda"), (8, 0), &v).unwrap_err();
    assert!(
        err.contains("/dev/dm-0 (device-mapper, md, ...) is built on /dev/sda"),
        "{err}"
    );
    check_block_device(Path::new("/dev/sdb"), (8, 16), &v).unwrap();

    // No mount table at all: nothing can be ruled out.
    std::fs::remove_file(tmp.path().join("proc/self/mountinfo")).unwrap();
    let err = check_block_device(Path::new("/dev/sdb"), (8, 16), &v).unwrap_err();
    assert!(err.contains("cannot read"), "{err}");
}

#[test]
fn a_file_backing_a_loop_device_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("backing.img");
    std::fs::write(&file, b"x").unwrap();
    let loop_dir = tmp.path().join("sys/class/block/loop3/loop");
    std::fs::create_dir_all(&loop_dir).unwrap();
    std::fs::write(
        loop_dir.join("backing_file"),
        format!("{}\n", std::fs::canonicalize(&file).unwrap().display()),
    )
    .unwrap();
    let v = view(tmp.path(), "", "", SWAPS_HEADER);
    let err = provisioning::target::open_file(&file, Path::new("/nonexistent"), &v).unwrap_err();
    assert!(matches!(err, TargetError::Refused { .. }));
    assert!(
        err.to_string().contains("backs the loop device /dev/loop3"),
        "{err}"
    );
    // Through another name (a hard link) it is the same file: still refused.
    let link = tmp.path().join("link.img");
    std::fs::hard_link(&file, &link).unwrap();
    let err = provisioning::target::open_file(&link, Path::new("/nonexistent"), &v).unwrap_err();
    assert!(err.to_string().contains("/dev/loop3"), "{err}");
}

#[test]
fn target_takes_only_block_devices_and_to_file_only_regular_files() {
    let fx = Fixture::new();
    // --target on a regular file: refused, and the file is untouched.
    std::fs::write(fx.target(), b"keep me").unwrap();
    let err = fx
        .flash_to(&Destination::Device {
            path: fx.target(),
            expect: Expect::default(),
        })
        .unwrap_err();
    assert_eq!(err.exit_code(), 3, "{err}");
    assert!(
        err.to_string()
            .contains("a regular file; a file is written only with --to-file"),
        "{err}"
    );
    assert_eq!(std::fs::read(fx.target()).unwrap(), b"keep me");
    // --target on a character device or a directory: refused.
    for (path, what) in [("/dev/null", "neither a block device"), ("/tmp", "")] {
        let err = fx
            .flash_to(&Destination::Device {
                path: PathBuf::from(path),
                expect: Expect::default(),
            })
            .unwrap_err();
        assert!(err.to_string().contains(what), "{path}: {err}");
    }
    // --to-file on a character device (also through a symlink): refused.
    let link = fx.dir.path().join("null-link");
    std::os::unix::fs::symlink("/dev/null", &link).unwrap();
    for path in [PathBuf::from("/dev/null"), link] {
        let err = fx.flash_to(&Destination::File { path }).unwrap_err();
        assert_eq!(err.exit_code(), 3, "{err}");
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }
    // The binary names the same reasons.
    let out = Command::new(BIN)
        .args(["flash", "--image"])
        .arg(fx.image())
        .arg("--node")
        .arg(fx.dir.path().join("node-01"))
        .arg("--target")
        .arg(fx.target())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("only with --to-file"));
}

#[test]
fn to_file_never_writes_through_a_symbolic_link() {
    let fx = Fixture::new();
    // A link to a regular file the operator keeps: refused, the file untouched.
    let victim = fx.dir.path().join("precious.txt");
    std::fs::write(&victim, b"keep me").unwrap();
    let link = fx.dir.path().join("link-to-precious");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let err = fx
        .flash_to(&Destination::File { path: link.clone() })
        .unwrap_err();
    assert_eq!(err.exit_code(), 3, "{err}");
    assert!(
        matches!(err, FlashError::Target(TargetError::Refused { .. })),
        "{err:?}"
    );
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    // A dangling link: refused too, and nothing is created where it points.
    let nowhere = fx.dir.path().join("not-there.img");
    let dangling = fx.dir.path().join("dangling");
    std::os::unix::fs::symlink(&nowhere, &dangling).unwrap();
    let err = fx
        .flash_to(&Destination::File { path: dangling })
        .unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert!(!nowhere.exists());
    // The binary says the same.
    let out = Command::new(BIN)
        .args(["flash", "--image"])
        .arg(fx.image())
        .arg("--node")
        .arg(fx.dir.path().join("node-01"))
        .arg("--to-file")
        .arg(&link)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("symbolic link"), "{stderr}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
}

#[test]
fn to_file_on_a_directory_is_a_refusal_not_an_io_error() {
    let fx = Fixture::new();
    let dir = fx.dir.path().join("a-directory");
    std::fs::create_dir(&dir).unwrap();
    let err = fx
        .flash_to(&Destination::File { path: dir.clone() })
        .unwrap_err();
    assert!(
        matches!(err, FlashError::Target(TargetError::Refused { .. })),
        "{err:?}"
    );
    assert_eq!(err.exit_code(), 3, "{err}");
    assert!(err.to_string().contains("is a directory"), "{err}");
    assert!(dir.is_dir());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
}

#[test]
fn device_facts_are_checked_against_the_pins_and_the_image() {
    let facts = DeviceFacts {
        name: "sdb".into(),
        devnum: (8, 16),
        size: 1 << 30,
        logical_block_size: 512,
        serials: vec![("udev ID_SERIAL_SHORT".into(), "S5GXNX0R123".into())],
    };
    let pins = |serial: Option<&str>, size: Option<u64>| Expect {
        serial: serial.map(str::to_string),
        size,
    };
    check_facts(&facts, 1 << 29, &pins(None, None)).unwrap();
    check_facts(&facts, 1 << 29, &pins(Some("S5GXNX0R123"), Some(1 << 30))).unwrap();
    let err = check_facts(&facts, 1 << 29, &pins(Some("S5GXNX0R999"), None)).unwrap_err();
    assert_eq!(
        err,
        "/dev/sdb has serial \"S5GXNX0R123\" (udev ID_SERIAL_SHORT), --expect-serial says \"S5GXNX0R999\""
    );
    let err = check_facts(&facts, 1 << 29, &pins(None, Some(1 << 31))).unwrap_err();
    assert_eq!(
        err,
        "/dev/sdb has 1073741824 bytes, --expect-size says 2147483648"
    );
    let err = check_facts(&facts, 1 << 31, &pins(None, None)).unwrap_err();
    assert!(err.contains("the image needs 2147483648"), "{err}");
    let no_serial = DeviceFacts {
        serials: Vec::new(),
        ..facts.clone()
    };
    let err = check_facts(&no_serial, 1, &pins(Some("X"), None)).unwrap_err();
    assert!(err.contains("reports no serial number"), "{err}");
    let four_k = DeviceFacts {
        logical_block_size: 4096,
        ..facts
    };
    let err = check_facts(&four_k, 1, &pins(None, None)).unwrap_err();
    assert!(err.contains("4096-byte logical blocks"), "{err}");
}

#[test]
fn serial_numbers_come_from_sysfs_and_the_udev_database() {
    let tmp = tempfile::tempdir().unwrap();
    fixture_sys(tmp.path());
    let v = view(tmp.path(), "", "", SWAPS_HEADER);
    std::fs::create_dir_all(tmp.path().join("sys/devices/block/vda/device")).unwrap();
    std::fs::write(
        tmp.path().join("sys/devices/block/vda/device/serial"),
        "VIRTIO-7\n",
    )
    .unwrap();
    std::fs::create_dir_all(&v.udev_data).unwrap();
    std::fs::write(
        v.udev_data.join("b8:16"),
        "S:disk/by-id/ata-X\nE:ID_SERIAL=Samsung_SSD_870_S5GXNX0R123\nE:ID_SERIAL_SHORT=S5GXNX0R123\n",
    )
    .unwrap();
    assert_eq!(
        device_serials("vda", (254, 0), &v),
        [("sysfs device/serial".to_string(), "VIRTIO-7".to_string())]
    );
    assert_eq!(
        device_serials("sdb", (8, 16), &v),
        [
            (
                "udev ID_SERIAL_SHORT".to_string(),
                "S5GXNX0R123".to_string()
            ),
            (
                "udev ID_SERIAL".to_string(),
                "Samsung_SSD_870_S5GXNX0R123".to_string()
            )
        ]
    );
    assert!(device_serials("sda", (8, 0), &v).is_empty());
}

// ---- real loop devices (root) ----

/// A loop device over a fresh sparse file of `bytes`, detached when dropped.
struct Loop {
    device: PathBuf,
    backing: PathBuf,
}

impl Loop {
    fn new(dir: &Path, name: &str, bytes: u64) -> Loop {
        let backing = dir.join(name);
        std::fs::File::create(&backing)
            .unwrap()
            .set_len(bytes)
            .unwrap();
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&backing)
            .output()
            .expect("losetup runs");
        assert!(
            out.status.success(),
            "losetup: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let device = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string());
        Loop { device, backing }
    }

    fn dest(&self, expect: Expect) -> Destination {
        Destination::Device {
            path: self.device.clone(),
            expect,
        }
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.device).status();
    }
}

#[test]
#[ignore = "needs root and loop devices: losetup"]
fn flash_to_a_loop_device_writes_checks_and_reads_back_the_device() {
    let fx = Fixture::new();
    let lo = Loop::new(
        fx.dir.path(),
        "disk.raw",
        fx.manifest.disk_image.size + (1 << 20),
    );
    let v = fx.flash_to(&lo.dest(Expect::default())).unwrap();
    assert_eq!(v.node_name, "node-01");
    verify_target(&lo.device, &fx.manifest, None, &Silent).unwrap();
    // The backing file holds exactly what the device was given.
    let raw = std::fs::read(&lo.backing).unwrap();
    let size = fx.manifest.disk_image.size as usize;
    let image = std::fs::read(fx.image()).unwrap();
    let r = fx.manifest.config_range();
    assert_eq!(raw[..r.start as usize], image[..r.start as usize]);
    assert_eq!(raw[r.end as usize..size], image[r.end as usize..]);
    assert_eq!(
        raw[r.start as usize..r.end as usize],
        config_region(&fx.bundle, &fx.manifest).unwrap()[..]
    );
    // The backing file is refused as a --to-file target while the loop device uses it.
    let err = fx
        .flash_to(&Destination::File {
            path: lo.backing.clone(),
        })
        .unwrap_err();
    assert_eq!(err.exit_code(), 3, "{err}");
    // A block device is refused as --to-file: devices get the device checks.
    let err = fx
        .flash_to(&Destination::File {
            path: lo.device.clone(),
        })
        .unwrap_err();
    assert!(err.to_string().contains("it is a block device"), "{err}");
    // A sector overwritten through the device fails verify.
    {
        let d = std::fs::OpenOptions::new()
            .write(true)
            .open(&lo.device)
            .unwrap();
        std::os::unix::fs::FileExt::write_all_at(&d, &[0xa5u8; 512], 2 << 20).unwrap();
        d.sync_all().unwrap();
    }
    let err = verify_target(&lo.device, &fx.manifest, None, &Silent).unwrap_err();
    assert_eq!(err.exit_code(), 1, "{err}");
}

#[test]
#[ignore = "needs root and loop devices: losetup"]
fn the_read_back_sees_the_device_not_the_page_cache() {
    let fx = Fixture::new();
    let lo = Loop::new(fx.dir.path(), "disk.raw", fx.manifest.disk_image.size);
    fx.flash_to(&lo.dest(Expect::default())).unwrap();
    // Fill the device's page cache with a buffered read, then change the medium underneath
    // it (the loop device's backing file): the cached pages are now stale.
    let offset = (2 << 20) + 4096;
    let mut cached = vec![0u8; 4096];
    let dev = std::fs::File::open(&lo.device).unwrap();
    std::os::unix::fs::FileExt::read_exact_at(&dev, &mut cached, offset).unwrap();
    let backing = std::fs::OpenOptions::new()
        .write(true)
        .open(&lo.backing)
        .unwrap();
    let changed: Vec<u8> = cached.iter().map(|b| b ^ 0xff).collect();
    std::os::unix::fs::FileExt::write_all_at(&backing, &changed, offset).unwrap();
    backing.sync_all().unwrap();
    let mut again = vec![0u8; 4096];
    std::os::unix::fs::FileExt::read_exact_at(&dev, &mut again, offset).unwrap();
    assert_eq!(
        again, cached,
        "precondition: a buffered read still returns the cached (stale) sector"
    );
    // verify reads with O_DIRECT and sees the change.
    let err = verify_target(&lo.device, &fx.manifest, None, &Silent).unwrap_err();
    assert!(err.to_string().contains("image SHA-256"), "{err}");
}

#[test]
#[ignore = "needs root and loop devices: losetup, mkfs.ext4, mount"]
fn a_device_that_is_in_use_is_refused_on_the_opened_descriptor() {
    let fx = Fixture::new();
    let lo = Loop::new(fx.dir.path(), "disk.raw", 64 << 20);
    // Held exclusively by another opener (as a mount or dm would): the kernel says EBUSY.
    {
        let _held = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_EXCL)
            .open(&lo.device)
            .unwrap();
        let err = fx.flash_to(&lo.dest(Expect::default())).unwrap_err();
        assert_eq!(err.exit_code(), 3, "{err}");
        assert!(err.to_string().contains("EBUSY"), "{err}");
    }
    // Mounted: refused, naming the mount point (found by device number in mountinfo).
    let mnt = fx.dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let ok = |c: &mut Command| {
        let o = c.output().unwrap();
        assert!(
            o.status.success(),
            "{:?}: {}",
            c,
            String::from_utf8_lossy(&o.stderr)
        );
    };
    ok(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&lo.device));
    ok(Command::new("mount").arg(&lo.device).arg(&mnt));
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let unmount = Unmount(mnt.clone());
    let err = fx.flash_to(&lo.dest(Expect::default())).unwrap_err();
    assert_eq!(err.exit_code(), 3, "{err}");
    assert!(
        err.to_string()
            .contains(&format!("is mounted at {}", mnt.display())),
        "{err}"
    );
    drop(unmount);
    // Unmounted, the same device is accepted.
    fx.flash_to(&lo.dest(Expect::default())).unwrap();
}

#[test]
#[ignore = "needs root and loop devices: losetup"]
fn serial_and_size_pins_and_a_small_device_are_refused_before_writing() {
    let fx = Fixture::new();
    let bytes = fx.manifest.disk_image.size + (1 << 20);
    let lo = Loop::new(fx.dir.path(), "disk.raw", bytes);
    let untouched = || std::fs::read(&lo.backing).unwrap().iter().all(|&b| b == 0);
    let err = fx
        .flash_to(&lo.dest(Expect {
            serial: None,
            size: Some(bytes + 512),
        }))
        .unwrap_err();
    assert_eq!(err.exit_code(), 3, "{err}");
    assert!(
        err.to_string().contains(&format!(
            "has {bytes} bytes, --expect-size says {}",
            bytes + 512
        )),
        "{err}"
    );
    // A loop device has no serial number: a serial pin cannot match it.
    let err = fx
        .flash_to(&lo.dest(Expect {
            serial: Some("S5GXNX0R123".into()),
            size: None,
        }))
        .unwrap_err();
    assert!(
        err.to_string().contains("reports no serial number"),
        "{err}"
    );
    assert!(untouched());
    // The exact size pin is accepted.
    fx.flash_to(&lo.dest(Expect {
        serial: None,
        size: Some(bytes),
    }))
    .unwrap();
    // A device smaller than the image is refused before writing.
    let small = Loop::new(fx.dir.path(), "small.raw", 1 << 20);
    let err = fx.flash_to(&small.dest(Expect::default())).unwrap_err();
    assert_eq!(err.exit_code(), 3, "{err}");
    assert!(err.to_string().contains("the image needs"), "{err}");
    assert!(
        std::fs::read(&small.backing)
            .unwrap()
            .iter()
            .all(|&b| b == 0)
    );
}
