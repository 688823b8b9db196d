//! Compiles gpu-crypto's kernels with NVRTC for the given architectures into a precompiled
//! kernel directory (gpu-crypto's `GPU_CRYPTO_PRECOMPILED_KERNELS` format) and prints what it
//! wrote as JSON.

use clap::Parser;
use std::path::PathBuf;

#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// Directory to write (the image's GPU_CRYPTO_PRECOMPILED_KERNELS).
    #[arg(long)]
    out: PathBuf,
    /// GPU architectures, e.g. sm_90 sm_120.
    #[arg(long = "arch", required = true)]
    archs: Vec<String>,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let done = image_tools::kernels::precompile(&cli.out, &cli.archs)?;
    println!("{}", serde_json::to_string_pretty(&done)?);
    Ok(())
}
