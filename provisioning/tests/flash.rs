//! Flashing against genuine GPT images built here (the `gpt` crate): sparse-file targets,
//! a byte flipped after writing, a write cut short by a real file-size limit, a loop device
//! where the machine allows one, and the refusal rules against fixture /proc and /sys trees.

use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use provisioning::flash::{FlashError, Silent, config_region, flash, verify_target};
use provisioning::image::{ReleaseManifest, config_partition_of, write_test_image};
use provisioning::target::{SystemView, TargetError, check_block_device};
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
    let bundles = provisioning::plan::bundles(&subnet, &key).unwrap();
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
        let manifest = write_test_image(&image_dir, 3 << 20, 16 << 20).unwrap();
        let bundle = Bundle::load_dir(&example_bundle(dir.path()), &[]).unwrap();
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
        flash(
            &self.image(),
            &self.manifest,
            &self.bundle,
            &self.target(),
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
        "ulimit -f 4096; exec \"{BIN}\" flash --image \"{}\" --target \"{}\" --node \"{}\"",
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
    assert!(!fx.target().exists() || std::fs::metadata(fx.target()).unwrap().len() == 0);
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
    let err = flash(
        &fx.image(),
        &fx.manifest,
        &fx.bundle,
        &fx.image(),
        &SystemView::host(),
        &Silent,
    )
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
    let target = provisioning::target::Target::inspect(&file).unwrap();
    let err =
        provisioning::target::check_target(&target, Path::new("/nonexistent"), &v).unwrap_err();
    assert!(matches!(err, TargetError::Refused { .. }));
    assert!(
        err.to_string().contains("backs the loop device /dev/loop3"),
        "{err}"
    );
}

/// A real loop device, where the machine lets us attach one (root, loop driver): flash,
/// verify, flip a byte through the device, verify fails. Skips with the reason otherwise.
#[test]
fn flash_to_a_loop_device_where_available() {
    let fx = Fixture::new();
    let backing = fx.dir.path().join("loop-backing.img");
    let f = std::fs::File::create(&backing).unwrap();
    f.set_len(fx.manifest.disk_image.size + (1 << 20)).unwrap();
    drop(f);
    let out = match Command::new("losetup")
        .args(["--find", "--show"])
        .arg(&backing)
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            eprintln!("SKIP: loop device test: losetup not runnable: {e}");
            return;
        }
    };
    if !out.status.success() {
        eprintln!(
            "SKIP: loop device test: losetup failed (not root or no loop driver): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return;
    }
    let device = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string());
    struct Detach(PathBuf);
    impl Drop for Detach {
        fn drop(&mut self) {
            let _ = Command::new("losetup").arg("-d").arg(&self.0).status();
        }
    }
    let _detach = Detach(device.clone());

    let v = flash(
        &fx.image(),
        &fx.manifest,
        &fx.bundle,
        &device,
        &SystemView::host(),
        &Silent,
    )
    .unwrap();
    assert_eq!(v.node_name, "node-01");
    // The backing file now holds the image, as seen through the device.
    verify_target(&device, &fx.manifest, None, &Silent).unwrap();
    // Flashing the backing file directly is refused while the loop device uses it.
    let err = flash(
        &fx.image(),
        &fx.manifest,
        &fx.bundle,
        &backing,
        &SystemView::host(),
        &Silent,
    )
    .unwrap_err();
    assert_eq!(err.exit_code(), 3, "{err}");
    {
        let mut d = std::fs::OpenOptions::new()
            .write(true)
            .open(&device)
            .unwrap();
        // Flip a whole sector in the root partition (block devices take sector writes).
        d.seek(SeekFrom::Start(2 << 20)).unwrap();
        d.write_all(&[0xa5u8; 512]).unwrap();
        d.sync_all().unwrap();
    }
    let err = verify_target(&device, &fx.manifest, None, &Silent).unwrap_err();
    assert_eq!(err.exit_code(), 1, "{err}");
    // A device smaller than the image is refused before writing.
    let small = fx.dir.path().join("small.img");
    std::fs::File::create(&small)
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    let out = Command::new("losetup")
        .args(["--find", "--show"])
        .arg(&small)
        .output()
        .unwrap();
    let small_dev = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string());
    let _detach_small = Detach(small_dev.clone());
    let err = flash(
        &fx.image(),
        &fx.manifest,
        &fx.bundle,
        &small_dev,
        &SystemView::host(),
        &Silent,
    )
    .unwrap_err();
    assert!(matches!(err, FlashError::TooSmall { .. }), "{err}");
    assert_eq!(err.exit_code(), 4);
}
