//! Compiles gpu-crypto's kernels with NVRTC for the given architectures into a cubin cache
//! directory (gpu-crypto's format) and prints what it wrote as JSON.

use clap::Parser;
use std::path::PathBuf;

#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// Cache directory to write (the image's GPU_CRYPTO_KERNEL_CACHE).
    #[arg(long)]
    out: PathBuf,
    /// GPU architectures, e.g. sm_90 sm_120.
    #[arg(long = "arch", required = true)]
    archs: Vec<String>,
    /// CUDA driver API version the cache entries are keyed by (cuDriverGetVersion).
    #[arg(long)]
    driver_version: i32,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let done = image_tools::kernels::precompile(&cli.out, &cli.archs, cli.driver_version)?;
    println!("{}", serde_json::to_string_pretty(&done)?);
    Ok(())
}
