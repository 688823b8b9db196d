fn main() -> anyhow::Result<()> {
    anyhow::bail!("node-agent: not built yet")
}
