//! `attest`: the governing body's verifier.
fn main() -> anyhow::Result<()> {
    anyhow::bail!("attest: not built yet")
}
