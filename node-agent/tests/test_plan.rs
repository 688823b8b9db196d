//! `scripts/test` picks up an installed tool: with a `promtool` on PATH its plan
//! (`--print-plan`) runs the tests that need promtool; without one it skips them. The tool
//! here is a script that only exits 0: what is checked is the detection, not promtool.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The absolute path of `name` on this process's PATH.
fn which(name: &str) -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join(name))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| panic!("{name} on PATH"))
}

/// A directory with the few programs the script uses before it plans (and nothing else, so
/// that a promtool installed on this machine is not found through it).
fn base_tools(dir: &Path) -> PathBuf {
    let tools = dir.join("tools");
    std::fs::create_dir(&tools).unwrap();
    for name in ["dirname", "mktemp", "rm", "grep"] {
        std::os::unix::fs::symlink(which(name), tools.join(name)).unwrap();
    }
    tools
}

/// A directory holding `names`, each an executable script that exits 0.
fn fake_tools(dir: &Path, names: &[&str]) -> PathBuf {
    let fake = dir.join(format!("fake-{}", names.join("-")));
    std::fs::create_dir(&fake).unwrap();
    for name in names {
        let path = fake.join(name);
        std::fs::write(&path, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    fake
}

/// `scripts/test --print-plan` under `path`: "run" or "skip" for each requirement.
fn plan(path: &[&Path]) -> Vec<(String, String)> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/test");
    let out = Command::new(which("bash"))
        .arg(script)
        .arg("--print-plan")
        .env("PATH", std::env::join_paths(path).unwrap())
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| {
            let (verdict, req) = l.split_once('\t').unwrap_or_else(|| panic!("{stdout}"));
            (req.to_string(), verdict.to_string())
        })
        .collect()
}

fn verdict(plan: &[(String, String)], requirement: &str) -> String {
    plan.iter()
        .find(|(r, _)| r == requirement)
        .unwrap_or_else(|| panic!("{requirement:?} not in the plan {plan:?}"))
        .1
        .clone()
}

#[test]
fn the_plan_runs_the_promtool_tests_only_where_promtool_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let tools = base_tools(dir.path());

    let without = plan(&[&tools]);
    assert_eq!(verdict(&without, "needs promtool"), "skip", "{without:?}");
    assert!(without.iter().all(|(_, v)| v == "skip"), "{without:?}");

    let promtool = fake_tools(dir.path(), &["promtool"]);
    let with = plan(&[&tools, &promtool]);
    assert_eq!(verdict(&with, "needs promtool"), "run", "{with:?}");
    // The rule tests need amtool as well, the fleet test Prometheus: still skipped.
    assert_eq!(verdict(&with, "needs promtool and amtool"), "skip");
    assert_eq!(verdict(&with, "needs prometheus and promtool"), "skip");
    assert_eq!(verdict(&with, "needs chromium"), "skip");

    let both = fake_tools(dir.path(), &["promtool", "amtool"]);
    let with_both = plan(&[&tools, &both]);
    assert_eq!(verdict(&with_both, "needs promtool and amtool"), "run");
}
