//! Prints the expected SEV-SNP launch digest of measured direct boot as JSON.

use clap::Parser;
use image_tools::launch::{LaunchInputs, measure, read_cmdline};
use std::path::PathBuf;

/// Expected SEV-SNP launch digest (OVMF AmdSevX64, kernel, initrd, command line; QEMU).
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// OVMF AmdSevX64 firmware (carries the SEV kernel-hashes table).
    #[arg(long)]
    ovmf: PathBuf,
    #[arg(long)]
    kernel: PathBuf,
    #[arg(long)]
    initrd: PathBuf,
    /// File holding the kernel command line (one line).
    #[arg(long)]
    cmdline_file: PathBuf,
    #[arg(long)]
    vcpus: u32,
    /// QEMU CPU model, e.g. EPYC-v4, EPYC-Genoa.
    #[arg(long)]
    vcpu_type: String,
    /// SEV_FEATURES (hex with 0x, or decimal).
    #[arg(long, default_value = "0x1")]
    guest_features: String,
}

fn parse_u64(s: &str) -> anyhow::Result<u64> {
    Ok(match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16)?,
        None => s.parse()?,
    })
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let inputs = LaunchInputs {
        cmdline: read_cmdline(&cli.cmdline_file)?,
        ovmf: cli.ovmf,
        kernel: cli.kernel,
        initrd: cli.initrd,
        vcpus: cli.vcpus,
        vcpu_type: cli.vcpu_type,
        guest_features: parse_u64(&cli.guest_features)
            .map_err(|e| anyhow::anyhow!("--guest-features {:?}: {e}", cli.guest_features))?,
    };
    let m = measure(&inputs)?;
    println!("{}", serde_json::to_string_pretty(&m)?);
    Ok(())
}
