//! `gpu-crypto`: run each operation on files, for cross-checks by anyone.
fn main() -> anyhow::Result<()> {
    anyhow::bail!("CLI not built yet")
}
