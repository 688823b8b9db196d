//! The operator guide's flow through the `provision` binary: plan the example subnet with
//! bundles, make a test image, flash a node to a file, verify it; and the exit statuses.

use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_provision");

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A test release (disk.img and its manifest pinning `signer`, hex or KEY.pub) in
/// DIR/release.
fn test_image(dir: &Path, signer: &str) -> std::path::PathBuf {
    let release = dir.join("release");
    let o = run(&[
        "test-image",
        "--out",
        release.to_str().unwrap(),
        "--root-mib",
        "2",
        "--config-signer",
        signer,
    ]);
    assert!(o.status.success(), "{}", text(&o));
    release
}

#[test]
fn plan_flash_and_verify_as_the_operator_guide_does() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sovereign-subnet-13.toml");
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("plan-out");
    // The operator's signing key: private (0600) and its public half for the policy.
    let key = tmp.path().join("subnet-signing-key.pem");
    let o = run(&["keygen", "--out", key.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let public = std::fs::read_to_string(tmp.path().join("subnet-signing-key.pem.pub")).unwrap();
    assert_eq!(public.trim().len(), 64);
    assert!(text(&o).contains(public.trim()), "{}", text(&o));
    // A second keygen never replaces the key.
    let o = run(&["keygen", "--out", key.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    // --out without --signing-key is a usage error: no unsigned bundles.
    let o = run(&[
        "plan",
        example.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = run(&[
        "plan",
        example.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--signing-key",
        key.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains(public.trim()), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("subnet sovereign-eu-1: n = 13 nodes"),
        "{stdout}"
    );
    assert!(
        stdout.contains("profile sovereign-node (13 node(s))"),
        "{stdout}"
    );
    assert!(
        stdout.contains("h200-lab-measured.json"),
        "the stand-in figures name their file: {stdout}"
    );
    let digests = std::fs::read_to_string(out_dir.join("bundle-digests.txt")).unwrap();
    for i in 1..=13 {
        let dir = out_dir.join(format!("node-{i:02}"));
        let bundle = sn_config::Bundle::load_dir(&dir, &[]).unwrap();
        assert_eq!(hex::encode(bundle.signer()), public.trim());
        assert!(digests.contains(&format!("{}  node-{i:02}\n", hex::encode(bundle.digest()))));
    }
    assert_eq!(
        std::fs::read_to_string(out_dir.join("plan.txt")).unwrap(),
        stdout
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("plan.json")).unwrap()).unwrap();
    assert_eq!(json["n"], 13);

    // An image that pins another signer: flashing refuses the bundle its node would refuse.
    let other = test_image(
        tmp.path(),
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
    );
    let o = run(&[
        "flash",
        "--image",
        other.join("disk.img").to_str().unwrap(),
        "--to-file",
        tmp.path().join("refused.img").to_str().unwrap(),
        "--node",
        out_dir.join("node-01").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("which the image does not pin"),
        "{}",
        text(&o)
    );
    assert!(!tmp.path().join("refused.img").exists());
    let release = test_image(
        tmp.path(),
        tmp.path()
            .join("subnet-signing-key.pem.pub")
            .to_str()
            .unwrap(),
    );
    let image = release.join("disk.img");
    let target = tmp.path().join("node-01.img");
    // `provision VERB --image IMAGE --to-file TARGET --node BUNDLE`.
    let on_target = |verb: &str, node: &str| {
        run(&[
            verb,
            "--image",
            image.to_str().unwrap(),
            "--to-file",
            target.to_str().unwrap(),
            "--node",
            out_dir.join(node).to_str().unwrap(),
        ])
    };
    let o = on_target("flash", "node-01");
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("flashed and verified"),
        "{}",
        text(&o)
    );
    let o = on_target("verify", "node-01");
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("node node-01"),
        "{}",
        text(&o)
    );
    // Against another node's bundle the partition does not match.
    let o = on_target("verify", "node-02");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

#[test]
fn invalid_input_exits_2_with_file_line_and_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("subnet.toml");
    std::fs::write(&bad, "[subnet]\nname = \"x\"\nblock_time = 1\n").unwrap();
    let o = run(&["plan", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let t = text(&o);
    assert!(
        t.contains("subnet.toml:3:1: unknown field `block_time`"),
        "{t}"
    );

    let o = run(&["plan", "/nonexistent.toml"]);
    assert_eq!(o.status.code(), Some(2));
    // Each missing input is named by the argument it came from.
    let o = run(&[
        "flash",
        "--image",
        "/nonexistent/disk.img",
        "--to-file",
        "/tmp/x",
        "--node",
        "/nonexistent",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("--image /nonexistent/disk.img: No such file or directory"),
        "{t}"
    );
    assert!(!t.contains("release-manifest.json"), "{t}");
    let image_dir = tmp.path().join("release");
    std::fs::create_dir(&image_dir).unwrap();
    std::fs::write(image_dir.join("disk.img"), b"").unwrap();
    let image = image_dir.join("disk.img");
    let o = run(&[
        "flash",
        "--image",
        image.to_str().unwrap(),
        "--to-file",
        "/tmp/x",
        "--node",
        "/nonexistent",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("the release manifest next to --image") && t.contains("--manifest"),
        "{t}"
    );
    // Neither or both destinations: clap's usage error.
    let o = run(&["flash", "--image", "x", "--node", "y"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--target") && text(&o).contains("--to-file"));
    let o = run(&[
        "flash",
        "--image",
        "x",
        "--node",
        "y",
        "--target",
        "a",
        "--to-file",
        "b",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = run(&[
        "flash",
        "--image",
        "x",
        "--node",
        "y",
        "--to-file",
        "b",
        "--expect-serial",
        "S",
    ]);
    assert_eq!(o.status.code(), Some(2), "--expect-serial needs --target");
    let o = run(&["plan"]);
    assert_eq!(o.status.code(), Some(2), "clap's usage error");
}

#[test]
fn keygen_help_describes_out() {
    let o = run(&["keygen", "--help"]);
    assert!(o.status.success(), "{}", text(&o));
    let help = text(&o);
    let out = help
        .lines()
        .find(|l| l.trim_start().starts_with("--out <KEY>"))
        .unwrap_or_else(|| panic!("{help}"));
    assert!(
        out.contains("private key") && out.contains("KEY.pub"),
        "{help}"
    );
}

#[test]
fn flash_with_a_missing_bundle_names_it_once() {
    let tmp = tempfile::tempdir().unwrap();
    let release = test_image(
        tmp.path(),
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
    );
    let missing = tmp.path().join("no-such-bundle");
    let o = run(&[
        "flash",
        "--image",
        release.join("disk.img").to_str().unwrap(),
        "--node",
        missing.to_str().unwrap(),
        "--to-file",
        tmp.path().join("x.img").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert_eq!(
        t.trim_end(),
        format!(
            "provision: error: --node {}: No such file or directory (os error 2)",
            missing.display()
        ),
        "{t}"
    );
    assert!(!tmp.path().join("x.img").exists(), "nothing is written");
}

#[test]
fn plan_reports_every_unknown_key_in_line_order() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let bench = examples.join("../benchmarks/h200-lab-measured.json");
    let subnet = std::fs::read_to_string(examples.join("sovereign-subnet-13.toml"))
        .unwrap()
        .replace(
            "\"../benchmarks/h200-lab-measured.json\"",
            &format!("{bench:?}"),
        )
        .replacen("[network]\n", "[network]\nzz = 1\n", 1)
        .replacen("[[node]]\n", "[[node]]\naa = 2\n", 1);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("subnet.toml");
    std::fs::write(&file, &subnet).unwrap();
    let o = run(&["plan", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    let line = |exact: &str| subnet.lines().position(|l| l == exact).unwrap() + 1;
    let zz = t
        .find(&format!(
            "subnet.toml:{}:1: unknown field `zz` in [network]",
            line("zz = 1")
        ))
        .unwrap_or_else(|| panic!("{t}"));
    let aa = t
        .find(&format!(
            "subnet.toml:{}:1: unknown field `aa` in [[node]]",
            line("aa = 2")
        ))
        .unwrap_or_else(|| panic!("{t}"));
    assert!(zz < aa, "in line order: {t}");
    assert!(t.contains("2 problem(s)"), "{t}");
}
