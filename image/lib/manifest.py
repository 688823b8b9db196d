#!/usr/bin/env python3
"""Writes image/build's JSON documents (standard library only).

  manifest.py inputs  ...   the optional inputs, installed in the image
  manifest.py release ...   release-manifest.json (schema sovereign-node/release-manifest/v1)
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys

SCHEMA = "sovereign-node/release-manifest/v1"


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def release_env():
    env = {}
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(here, "release.env")) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            k, v = line.split("=", 1)
            env[k] = v.strip('"')
    return env


def optional_inputs(a):
    def one(name, path, sha, what):
        entry = {"name": name, "what": what, "present": bool(path)}
        if path:
            entry.update(sha256=sha.lower(), size=os.path.getsize(path))
        return entry

    return [
        one("replica", a.replica, a.replica_sha256,
            "GPU-patched IC replica, installed as /opt/ic/bin/replica"),
        one("nvidia-driver", a.nvidia_driver, a.nvidia_driver_sha256,
            "NVIDIA driver tree (kernel modules for the image's kernel and user-space libraries), unpacked at /"),
    ]


def tool_version(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        text = (out.stdout or out.stderr).strip().splitlines()
        return text[0] if text else "unknown"
    except OSError as e:
        return f"unavailable: {e}"


def cmd_inputs(a):
    env = release_env()
    doc = {
        "version": env["IMAGE_VERSION"],
        "source_date_epoch": int(env["SOURCE_DATE_EPOCH"]),
        "optional_inputs": optional_inputs(a),
    }
    json.dump(doc, sys.stdout, indent=2)
    sys.stdout.write("\n")


def cmd_release(a):
    env = release_env()
    out, work = a.out, a.work

    def artifact(name, file, what):
        path = os.path.join(out, file)
        return {"name": name, "file": file, "sha256": sha256_file(path),
                "size": os.path.getsize(path), "what": what}

    with open(os.path.join(out, "cmdline.txt")) as f:
        cmdline = f.read()
    with open(os.path.join(work, "kernel-version")) as f:
        kver = f.read().strip()
    with open(os.path.join(work, "kernels.json")) as f:
        kernels = json.load(f)

    artifacts = [
        artifact("kernel", "vmlinuz", f"Linux {kver} (Debian), for measured direct boot"),
        artifact("initrd", "initrd.img", "dracut initrd: systemd, dm-verity root from the command line"),
        artifact("cmdline", "cmdline.txt", "kernel command line (no trailing newline), with the verity root hash"),
        artifact("rootfs", "rootfs.squashfs", "root filesystem (squashfs, read-only)"),
        artifact("rootfs-verity", "rootfs.verity", "dm-verity hash tree of rootfs.squashfs"),
        artifact("package-lock", "packages.lock", "exact Debian packages of the root filesystem"),
    ]
    if os.path.exists(os.path.join(out, "OVMF.amdsev.fd")):
        artifacts.append(artifact("ovmf", "OVMF.amdsev.fd",
                                  "OVMF AmdSevX64 firmware the host launches the guest with (measured; not in the disk image)"))

    disk = os.path.join(out, "disk.img")
    disk_image = {
        "file": "disk.img",
        "sha256": sha256_file(disk),
        "size": os.path.getsize(disk),
        "partition_table": "gpt",
        "disk_guid": env["DISK_GUID"],
        "partitions": [
            {"name": "sn-root", "partuuid": env["ROOT_PARTUUID"], "content": "rootfs.squashfs"},
            {"name": "sn-verity", "partuuid": env["VERITY_PARTUUID"], "content": "rootfs.verity"},
            {"name": "sn-config", "partuuid": env["CONFIG_PARTUUID"], "content": "zeros"},
            {"name": "sn-data", "partuuid": env["DATA_PARTUUID"], "content": "empty ext4"},
        ],
        "config_partition": {
            "name": "sn-config",
            "offset_bytes": a.config_offset,
            "size_bytes": a.config_size,
            "format": "ustar archive padded with zeros; all zeros = no configuration",
        },
        "data_partition": {
            "name": "sn-data",
            "offset_bytes": a.data_offset,
            "size_bytes": a.data_size,
            "filesystem": "ext4",
            "filesystem_uuid": env["DATA_FS_UUID"],
            "mount_point": "/var/lib/sovereign-node",
            "format": "empty ext4 as built; the node's persistent state (node key, agent state)",
        },
    }

    launch_path = os.path.join(work, "launch.json")
    measured_files = {
        "kernel_sha256": sha256_file(os.path.join(out, "vmlinuz")),
        "initrd_sha256": sha256_file(os.path.join(out, "initrd.img")),
        "cmdline_sha256": hashlib.sha256(cmdline.encode()).hexdigest(),
    }
    if a.ovmf:
        with open(launch_path) as f:
            launch = json.load(f)
        sev_snp = {"launch_digest": launch["launch_digest"], **{k: v for k, v in launch.items() if k != "launch_digest"}}
        sev_snp["computed_with"] = "sev crate 8.0.0 measurement module (image/tools launch-digest)"
    else:
        sev_snp = {
            "launch_digest": None,
            "reason": "no OVMF AmdSevX64 firmware was given (image/build --ovmf FILE --ovmf-sha256 HEX): "
                      "the launch digest covers the firmware, so it cannot be computed without it. "
                      "Debian 12 and 13 ship no AmdSevX64 build; see docs/image.md.",
            "vcpus": int(env["SNP_VCPUS"]),
            "vcpu_type": env["SNP_VCPU_TYPE"],
            "guest_features": env["SNP_GUEST_FEATURES"],
            "vmm_type": "QEMU",
            "ovmf_sha256": None,
            **measured_files,
        }

    ovmf_input = {"name": "ovmf-amdsev", "what": "OVMF AmdSevX64 firmware (measured; not in the disk image)",
                  "present": bool(a.ovmf)}
    if a.ovmf:
        ovmf_input.update(sha256=a.ovmf_sha256.lower(), size=os.path.getsize(a.ovmf))
    ovmf_build = os.path.join(work, "ovmf-build-info.json")
    if os.path.exists(ovmf_build):
        with open(ovmf_build) as f:
            info = json.load(f)
        info.pop("cache_key", None)
        ovmf_input.update(what="OVMF AmdSevX64 firmware built by image/ovmf/build from Debian's edk2 source package "
                               "(measured; shipped as the OVMF.amdsev.fd artifact, not in the disk image)",
                          built_from=info)

    with open(os.path.join(out, "packages.lock")) as f:
        packages = [l.strip() for l in f if l.strip() and not l.startswith("#")]

    doc = {
        "schema": SCHEMA,
        "version": env["IMAGE_VERSION"],
        "source_date_epoch": int(env["SOURCE_DATE_EPOCH"]),
        "artifacts": artifacts,
        "disk_image": disk_image,
        "config": {
            "signers": [a.config_signer],
            "pinned_by": "kernel command line sn.config_signer= (measured)",
            "what": "Ed25519 keys whose signature a node accepts on its configuration bundle",
        },
        "verity": {"root_hash": a.roothash, "salt": env["VERITY_SALT"], "uuid": env["VERITY_UUID"],
                   "hash": "sha256", "data_block_size": 4096, "hash_block_size": 4096},
        "inputs": {
            "debian": {"suite": env["DEBIAN_SUITE"],
                       "lock_file": "packages.lock", "lock_sha256": sha256_file(os.path.join(out, "packages.lock")),
                       "packages": packages},
            "cargo_lock_sha256": sha256_file(os.path.join(a.repo, "Cargo.lock")),
            "optional": [ovmf_input] + optional_inputs(a),
        },
        "contents": {
            "kernel_version": kver,
            "node_agent_sha256": sha256_file(os.path.join(work, "payload/usr/bin/node-agent")),
            "libgpu_crypto_sha256": sha256_file(os.path.join(work, "payload/usr/lib/sovereign-node/libgpu_crypto.so")),
            "cubins": kernels,
        },
        "tools": {
            "mmdebstrap": tool_version(["mmdebstrap", "--version"]),
            "mksquashfs": tool_version(["mksquashfs", "-version"]),
            "veritysetup": tool_version(["veritysetup", "--version"]),
            "sfdisk": tool_version(["sfdisk", "--version"]),
            "rustc": tool_version(["rustc", "--version"]),
            "cargo": tool_version(["cargo", "--version"]),
            "nvrtc": kernels.get("nvrtc_version"),
            "nvrtc_wheel": env["NVRTC_WHEEL"],
        },
        "sev_snp": sev_snp,
    }
    json.dump(doc, sys.stdout, indent=2)
    sys.stdout.write("\n")


def main():
    p = argparse.ArgumentParser(description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("inputs", "release"):
        s = sub.add_parser(name)
        for opt in ("--replica", "--replica-sha256", "--nvidia-driver", "--nvidia-driver-sha256"):
            s.add_argument(opt, default="")
        if name == "release":
            s.add_argument("--out", required=True)
            s.add_argument("--work", required=True)
            s.add_argument("--roothash", required=True)
            s.add_argument("--config-signer", required=True)
            s.add_argument("--config-offset", type=int, required=True)
            s.add_argument("--config-size", type=int, required=True)
            s.add_argument("--data-offset", type=int, required=True)
            s.add_argument("--data-size", type=int, required=True)
            s.add_argument("--ovmf", default="")
            s.add_argument("--ovmf-sha256", default="")
            s.add_argument("--repo", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    a = p.parse_args()
    {"inputs": cmd_inputs, "release": cmd_release}[a.cmd](a)


if __name__ == "__main__":
    main()
