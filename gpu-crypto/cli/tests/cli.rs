//! The `gpu-crypto` CLI end to end, run as a process.

use gpu_crypto::{BlsScheme, DecodeError, Engine, G1Affine, G2Affine, Policy, Scalar};
use ic_state_manifest::{self as manifest, ManifestVersion};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_gpu-crypto");

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run gpu-crypto")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs and insists on success, showing stderr otherwise.
/// The command exited with `code`; otherwise fails showing what it printed.
fn assert_exit(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}{}",
        stdout(out),
        stderr(out)
    );
}

fn run_ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "gpu-crypto {args:?} failed: {}",
        stderr(&out)
    );
    stdout(&out)
}

fn testdata(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../engine/testdata")
        .join(relative)
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write test input");
    path.to_str().expect("UTF-8 temp path").to_string()
}

/// Whether `--backend auto` finds a usable GPU on this machine (from the CLI's own report).
fn gpu_ready() -> bool {
    let report: serde_json::Value =
        serde_json::from_str(&run_ok(&["status"])).expect("status prints JSON");
    report["gpu"]["state"] == "ready"
}

fn scalar_hex(s: &Scalar) -> String {
    let mut be = s.to_bytes();
    be.reverse();
    hex::encode(be)
}

#[test]
fn decompress_corpus_matches_expected_line_for_line() {
    let corpus = testdata("decompress/corpus.txt");
    let expected = std::fs::read_to_string(testdata("decompress/expected.txt"))
        .expect("testdata/decompress/expected.txt");
    let corpus = corpus.to_str().expect("UTF-8 path");
    let got = run_ok(&["decompress", corpus, "--backend", "cpu"]);
    let expected_lines: Vec<&str> = expected.lines().collect();
    let got_lines: Vec<&str> = got.lines().collect();
    for (i, (g, e)) in got_lines.iter().zip(&expected_lines).enumerate() {
        assert_eq!(g, e, "line {}", i + 1);
    }
    assert_eq!(got_lines.len(), expected_lines.len(), "line count");
    assert_eq!(got, expected, "byte-identical output");

    // The same bytes from the auto policy, whichever backend it picks here.
    assert_eq!(run_ok(&["decompress", corpus]), expected, "--backend auto");
}

#[test]
#[ignore = "needs a GPU: runs the CLI with --backend gpu"]
fn decompress_corpus_on_the_gpu_matches_expected() {
    assert!(gpu_ready(), "this test needs a usable GPU");
    let corpus = testdata("decompress/corpus.txt");
    let expected = std::fs::read_to_string(testdata("decompress/expected.txt"))
        .expect("testdata/decompress/expected.txt");
    let corpus = corpus.to_str().expect("UTF-8 path");
    assert_eq!(
        run_ok(&["--backend", "gpu", "decompress", corpus]),
        expected,
        "--backend gpu"
    );
}

#[test]
fn decompress_g2_corpus_matches_expected_line_for_line() {
    let corpus = testdata("decompress/g2-corpus.txt");
    let expected = std::fs::read_to_string(testdata("decompress/g2-expected.txt"))
        .expect("testdata/decompress/g2-expected.txt");
    let corpus = corpus.to_str().expect("UTF-8 path");
    let got = run_ok(&["decompress", "--group", "g2", corpus, "--backend", "cpu"]);
    let expected_lines: Vec<&str> = expected.lines().collect();
    let got_lines: Vec<&str> = got.lines().collect();
    for (i, (g, e)) in got_lines.iter().zip(&expected_lines).enumerate() {
        assert_eq!(g, e, "line {}", i + 1);
    }
    assert_eq!(got_lines.len(), expected_lines.len(), "line count");
    assert_eq!(got, expected, "byte-identical output");
    assert_eq!(
        run_ok(&["decompress", "--group", "g2", corpus]),
        expected,
        "--backend auto"
    );
    // Every reason and valid points are in the file.
    for word in [
        "ok ",
        "err not-compressed",
        "err bad-infinity",
        "err non-canonical",
    ] {
        assert!(
            expected.contains(word),
            "{word} missing from the expected output"
        );
    }
}

#[test]
#[ignore = "needs a GPU: runs the CLI with --backend gpu"]
fn decompress_g2_corpus_on_the_gpu_matches_expected() {
    assert!(gpu_ready(), "this test needs a usable GPU");
    let corpus = testdata("decompress/g2-corpus.txt");
    let expected = std::fs::read_to_string(testdata("decompress/g2-expected.txt"))
        .expect("testdata/decompress/g2-expected.txt");
    let corpus = corpus.to_str().expect("UTF-8 path");
    assert_eq!(
        run_ok(&["--backend", "gpu", "decompress", "--group", "g2", corpus]),
        expected,
        "--backend gpu"
    );
}

#[test]
fn decompress_g2_answers_every_line_including_bad_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let g = hex::encode(G2Affine::generator().to_compressed());
    let neg = hex::encode((-G2Affine::generator()).to_compressed());
    let not_compressed = format!("1{}", &g[1..]); // clears the compression flag
    let mut infinity_stray = hex::encode(G2Affine::identity().to_compressed());
    infinity_stray.replace_range(191.., "1"); // the last bit of x.c0
    let p_hex = "1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab";
    let c0_is_p = format!("{}{p_hex}", &g[..96]);
    let g1 = hex::encode(G1Affine::generator().to_compressed());
    let input = format!(
        "{g}\n{neg}\nzz\n\n{not_compressed}\n{infinity_stray}\n{c0_is_p}\n{g1}\n{g}00\n{}\n",
        hex::encode(G2Affine::identity().to_compressed())
    );
    let path = write(dir.path(), "points.txt", &input);
    let out = run_ok(&["decompress", "--group", "g2", &path, "--backend", "cpu"]);
    let ok = |p: G2Affine| format!("ok {}", hex::encode(p.to_uncompressed()));
    let expected = [
        ok(G2Affine::generator()),
        ok(-G2Affine::generator()),
        "err bad-hex".into(),
        "err bad-hex".into(),
        "err not-compressed".into(),
        "err bad-infinity".into(),
        "err non-canonical".into(),
        "err bad-hex".into(), // a G1 point is 96 hex digits, not 192
        "err bad-hex".into(),
        ok(G2Affine::identity()),
    ];
    assert_eq!(out.lines().collect::<Vec<_>>(), expected);
    // A G2 point given as G1 is a bad line too.
    assert_eq!(
        run_ok(&["decompress", &path, "--backend", "cpu"])
            .lines()
            .next(),
        Some("err bad-hex")
    );
}

#[test]
fn decompress_answers_every_line_including_bad_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let g = hex::encode(G1Affine::generator().to_compressed());
    let not_compressed = format!("1{}", &g[1..]); // clears the compression flag
    let input = format!("{g}\nzz\n\n{}\n{g}  \r\n{not_compressed}\n{g}00\n", &g[2..]);
    let path = write(dir.path(), "points.txt", &input);
    let out = run_ok(&["decompress", &path, "--backend", "cpu"]);
    let ok = format!(
        "ok {}",
        hex::encode(G1Affine::generator().to_uncompressed())
    );
    let expected = [
        ok.as_str(),
        "err bad-hex",
        "err bad-hex",
        "err bad-hex",
        ok.as_str(),
        "err not-compressed",
        "err bad-hex",
    ];
    assert_eq!(out.lines().collect::<Vec<_>>(), expected);

    // No final newline: the same answers; an empty file: no answers.
    let path = write(dir.path(), "one.txt", &g);
    assert_eq!(
        run_ok(&["decompress", &path, "--backend", "cpu"]),
        format!("{ok}\n")
    );
    let path = write(dir.path(), "empty.txt", "");
    assert_eq!(run_ok(&["decompress", &path, "--backend", "cpu"]), "");

    // `-` reads standard input.
    let mut child = Command::new(BIN)
        .args(["decompress", "-", "--backend", "cpu"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn gpu-crypto");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), input.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success());
    assert_eq!(stdout(&out).lines().collect::<Vec<_>>(), expected);
}

#[test]
fn msm_of_a_generated_file_equals_the_engine() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let n = 40;
    let points: Vec<G1Affine> = (0..n)
        .map(|_| G1Affine::from(G1Affine::generator() * nidkg::random_scalar(&mut rng)))
        .collect();
    let mut scalars: Vec<Scalar> = (0..n).map(|_| nidkg::random_scalar(&mut rng)).collect();
    scalars[3] = Scalar::zero();
    scalars[4] = -Scalar::one();
    let input: String = points
        .iter()
        .zip(&scalars)
        .map(|(p, s)| format!("{} {}\n", hex::encode(p.to_compressed()), scalar_hex(s)))
        .collect();
    let path = write(dir.path(), "msm.txt", &input);

    let engine = Engine::cpu_only();
    let sum = engine.g1_msm(&points, &scalars).expect("engine msm");
    let expected = format!("{}\n", hex::encode(G1Affine::from(sum).to_compressed()));
    assert_eq!(run_ok(&["msm", &path, "--backend", "cpu"]), expected);
    assert_eq!(run_ok(&["msm", &path]), expected, "--backend auto");

    // The empty MSM is the identity.
    let path = write(dir.path(), "empty.txt", "");
    assert_eq!(
        run_ok(&["msm", &path, "--backend", "cpu"]),
        format!("{}\n", hex::encode(G1Affine::identity().to_compressed()))
    );
}

#[test]
fn msm_bad_lines_fail_with_their_line_numbers_and_print_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let g = hex::encode(G1Affine::generator().to_compressed());
    let one = scalar_hex(&Scalar::one());
    let r = "73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001";
    // The smallest x with the compression flag that has no point on the curve.
    let off_curve = (1u8..=255)
        .map(|x| {
            let mut bytes = [0u8; 48];
            bytes[0] = 0x80;
            bytes[47] = x;
            bytes
        })
        .find(|b| gpu_crypto::corpus::reference_verdict(b) == Err(DecodeError::NotOnCurve))
        .expect("an x off the curve");
    let input = format!(
        "{g} {one}\n{g}x {one}\n{g} {r}\n{} {one}\n{g}\n{g} {one}\n",
        hex::encode(off_curve)
    );
    let path = write(dir.path(), "bad.txt", &input);
    let out = run(&["msm", &path, "--backend", "cpu"]);
    assert!(!out.status.success(), "bad input must fail");
    assert!(out.stdout.is_empty(), "no result printed: {}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("4 bad input lines"), "{err}");
    assert!(
        err.contains("line 2: the point is not 96 hex digits"),
        "{err}"
    );
    assert!(
        err.contains("line 3: the scalar is not below the group order r"),
        "{err}"
    );
    assert!(err.contains("line 4: invalid point"), "{err}");
    assert!(err.contains("not-on-curve"), "{err}");
    assert!(err.contains("line 5: expected 2 fields"), "{err}");
    assert!(
        !err.contains("line 1:") && !err.contains("line 6:"),
        "{err}"
    );
}

fn sign(rng: &mut ChaCha20Rng, scheme: BlsScheme, message: &[u8]) -> (String, String) {
    let secret = nidkg::random_scalar(rng);
    let h = gpu_crypto::cpu::hash_message_to_g1(scheme, message);
    let signature = G1Affine::from(h * secret).to_compressed();
    let public_key = G2Affine::from(G2Affine::generator() * secret).to_compressed();
    (hex::encode(signature), hex::encode(public_key))
}

#[test]
fn verify_answers_each_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let (sig_a, pk_a) = sign(&mut rng, BlsScheme::Threshold, b"hello");
    let (sig_b, pk_b) = sign(&mut rng, BlsScheme::Threshold, b"");
    let mut not_compressed = sig_a.clone();
    not_compressed.replace_range(0..1, "1");
    let input = format!(
        "{sig_a} {pk_a} {}\n\
         {sig_a} {pk_a} {}\n\
         {sig_b} {pk_b} -\n\
         {sig_a} {pk_a}\n\
         {not_compressed} {pk_a} {}\n\
         {sig_a} {pk_b} {}\n\
         {sig_a} {pk_a} zz\n",
        hex::encode(b"hello"),
        hex::encode(b"hellp"),
        hex::encode(b"hello"),
        hex::encode(b"hello"),
    );
    let path = write(dir.path(), "sigs.txt", &input);
    let out = run_ok(&["verify", &path, "--backend", "cpu"]);
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "ok",
            "err invalid-signature",
            "ok",
            "err bad-line",
            "err signature-not-compressed",
            "err invalid-signature",
            "err bad-line",
        ]
    );
    assert_eq!(run_ok(&["verify", &path]), out, "--backend auto");
    // The same signatures checked under the multi-signature tag do not verify.
    let multi = run_ok(&["verify", &path, "--backend", "cpu", "--scheme", "multi-sig"]);
    assert_eq!(multi.lines().next(), Some("err invalid-signature"));

    let (sig_m, pk_m) = sign(&mut rng, BlsScheme::MultiSig, b"share");
    let path = write(
        dir.path(),
        "multi.txt",
        &format!("{sig_m} {pk_m} {}\n", hex::encode(b"share")),
    );
    assert_eq!(run_ok(&["verify", &path, "--scheme", "multi-sig"]), "ok\n");
    assert_eq!(run_ok(&["verify", &path]), "err invalid-signature\n");
}

#[test]
fn manifest_commands_agree_with_the_library() {
    let dir = tempfile::tempdir().expect("tempdir");
    let checkpoint = dir.path().join("checkpoint");
    std::fs::create_dir_all(checkpoint.join("canister_states/00")).expect("mkdir");
    std::fs::write(checkpoint.join("system_metadata.pbuf"), vec![7u8; 887]).expect("write");
    let mut big = vec![0u8; (1 << 20) + 5];
    ChaCha20Rng::seed_from_u64(3).fill(&mut big[..]);
    std::fs::write(checkpoint.join("canister_states/00/heap.bin"), &big).expect("write");
    std::fs::write(checkpoint.join("canister_states/00/empty"), b"").expect("write");

    let engine = Engine::new(Policy::cpu_only()).expect("cpu engine");
    let computed = manifest::compute(&engine, &checkpoint, ManifestVersion::CURRENT)
        .expect("library computes the manifest");
    let root = hex::encode(computed.root_hash().expect("root hash"));
    let checkpoint = checkpoint.to_str().expect("UTF-8 path");

    let out = run(&["manifest", checkpoint, "--backend", "cpu"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json = stdout(&out);
    assert_eq!(
        manifest::Manifest::from_json(&json).expect("CLI prints manifest JSON"),
        computed
    );
    assert!(
        stderr(&out).contains(&format!("root hash: {root}")),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        run_ok(&["manifest", checkpoint, "--root-hash", "--backend", "cpu"]),
        format!("{root}\n")
    );

    let json_path = write(dir.path(), "manifest.json", &json);
    assert_eq!(run_ok(&["manifest-hash", &json_path]), format!("{root}\n"));

    // Other versions hash differently; each agrees with the library.
    for version in [0u64, 1, 2] {
        let v = ManifestVersion::from_number(version).expect("version");
        let expected = manifest::compute(&engine, Path::new(checkpoint), v)
            .and_then(|m| m.root_hash())
            .expect("library root hash");
        let got = run_ok(&[
            "manifest",
            checkpoint,
            "--version",
            &version.to_string(),
            "--root-hash",
        ]);
        assert_eq!(
            got,
            format!("{}\n", hex::encode(expected)),
            "version {version}"
        );
    }

    // A manifest whose file hash does not match its chunks is refused unless asked.
    let mut broken = computed.clone();
    broken.files[0].hash = [0u8; 32];
    let broken_path = write(dir.path(), "broken.json", &broken.to_json());
    let out = run(&["manifest-hash", &broken_path]);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    assert!(stderr(&out).contains("does not match"), "{}", stderr(&out));
    assert_eq!(
        run_ok(&["manifest-hash", &broken_path, "--unvalidated"]),
        format!(
            "{}\n",
            hex::encode(broken.root_hash_unvalidated().expect("unvalidated hash"))
        )
    );
}

#[test]
fn backend_gpu_without_a_gpu_fails_with_the_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let g = hex::encode(G1Affine::generator().to_compressed());
    let path = write(dir.path(), "points.txt", &format!("{g}\n"));
    let commands = [
        &["--backend", "gpu", "status"][..],
        &["decompress", path.as_str(), "--backend", "gpu"][..],
        &["--backend", "gpu", "selftest", "--size", "2"][..],
    ];
    if gpu_ready() {
        // A usable GPU: `status` pins every operation, so it may only fail for an
        // operation the GPU backend lacks; never for an unusable GPU.
        for args in commands {
            let out = run(args);
            let said = format!("{}{}", stdout(&out), stderr(&out));
            assert!(!said.contains("unusable"), "{args:?}: {said}");
            assert!(
                out.status.success() || said.contains("no GPU implementation"),
                "{args:?}: {said}"
            );
        }
        eprintln!("a GPU is usable: checked that --backend gpu starts instead");
        return;
    }
    for args in commands {
        let out = run(args);
        assert!(!out.status.success(), "{args:?} must fail without a GPU");
        assert!(out.stdout.is_empty(), "{args:?}");
        let err = stderr(&out);
        assert!(
            err.contains("the GPU backend is required but unusable"),
            "{args:?}: the reason names the GPU: {err}"
        );
    }
}

/// `--backend cpu` opens no GPU, so no command says a word of one; under `auto` without a
/// usable GPU the engine says it once (the commands then run on the CPU).
#[test]
fn gpu_unusable_is_said_only_where_a_gpu_was_wanted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let g = hex::encode(G1Affine::generator().to_compressed());
    let path = write(dir.path(), "points.txt", &format!("{g}\n"));
    for args in [
        &["--backend", "cpu", "status"][..],
        &["--backend", "cpu", "decompress", path.as_str()],
        &["--backend", "cpu", "selftest", "--size", "2"],
    ] {
        let out = run(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            !err.contains("GPU unusable") && !err.contains("WARN"),
            "{args:?}: {err}"
        );
    }
    if !gpu_ready() {
        let out = run(&["decompress", path.as_str()]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(
            stderr(&out).matches("GPU unusable").count(),
            1,
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn backend_flag_is_accepted_before_and_after_the_subcommand() {
    let before = run_ok(&["--backend", "cpu", "status"]);
    let after = run_ok(&["status", "--backend", "cpu"]);
    assert_eq!(before, after);
    let report: serde_json::Value = serde_json::from_str(&before).expect("JSON");
    assert_eq!(report["gpu"]["state"], "not_requested");
    for op in report["operations"].as_array().expect("operations") {
        assert_eq!(op["backend"], "cpu", "{op}");
    }
    let out = run(&["status", "--backend", "tpu"]);
    assert!(!out.status.success());
}

#[test]
fn policy_file_gives_full_control() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut policy = Policy::cpu_only();
    policy.msm.gpu_min_batch = 12345;
    let text = toml::to_string(&policy).expect("policy as TOML");
    let path = write(dir.path(), "policy.toml", &text);
    let report: serde_json::Value =
        serde_json::from_str(&run_ok(&["status", "--policy", &path])).expect("JSON");
    assert_eq!(report["operations"][2]["operation"], "msm");
    assert_eq!(report["operations"][2]["gpu_min_batch"], 12345);

    let out = run(&["status", "--policy", &path, "--backend", "cpu"]);
    assert!(!out.status.success(), "--policy and --backend conflict");

    let bad = write(dir.path(), "bad.toml", "fallback = \"sometimes\"\n");
    let out = run(&["status", "--policy", &bad]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("parsing the policy"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn selftest_passes_on_cpu() {
    let out = run(&["selftest", "--backend", "cpu", "--size", "24"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    for op in ["decompress", "msm", "bls_verify", "sha256"] {
        assert!(text.contains(&format!("PASS {op}:")), "{op}: {text}");
    }
    assert!(text.contains("\"state\": \"not_requested\""), "{text}");
    assert!(text.ends_with("selftest PASS\n"), "{text}");
}

/// With a usable GPU, the auto policy runs the batches above the crossovers there,
/// compared item by item with the CPU reference.
#[test]
#[ignore = "needs a GPU: the auto selftest runs its large batches there"]
fn selftest_auto_passes_on_the_gpu() {
    assert!(gpu_ready(), "this test needs a usable GPU");
    let out = run(&["selftest", "--size", "300"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    assert!(text.contains("\"state\": \"ready\""), "{text}");
    eprintln!("{text}");
}

/// `nidkg deal` says what it does and about how long first, then writes a dealing file that
/// `nidkg verify` accepts (exit 0); a changed byte in the dealing is rejected naming a
/// component (exit 1); a truncated file is unusable input (exit 2: one line on standard
/// error naming the file, nothing else); every verdict says where each batch ran;
/// `--backend gpu` either verifies on the GPU or, without a usable GPU, gives no verdict
/// (exit 3).
#[test]
fn nidkg_deal_then_verify_with_the_documented_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dealing.bin");
    let file_arg = file.to_str().unwrap();
    let out = run(&[
        "nidkg", "deal", "--n", "13", "--seed", "7", "--out", file_arg,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "{}", stdout(&out));
    // Not a terminal: no progress at all.
    assert!(
        !stderr(&out).contains("nidkg deal: a dealing for"),
        "{}",
        stderr(&out)
    );
    let out = run(&["--backend", "cpu", "nidkg", "verify", file_arg]);
    assert_exit(&out, 0);
    assert!(
        stdout(&out).starts_with("accepted n=13 t="),
        "{}",
        stdout(&out)
    );
    // n = 13: 18n + 101 = 335 G1 points, 16 pairing products, all on the CPU.
    let routes = stderr(&out);
    for line in [
        "decompress: policy cpu (gpu from 256), ran cpu 1 call(s) 335 item(s)",
        "pairing_products: policy cpu (gpu from 512), ran cpu 1 call(s) 16 item(s)",
        "msm_shared_u8: policy cpu (gpu from 4096), ran cpu 1 call(s) 6656 item(s)",
    ] {
        assert!(routes.contains(line), "{line:?} not in\n{routes}");
    }

    let bytes = std::fs::read(&file).unwrap();
    // The last byte belongs to the dealing's final scalar (the sharing proof's response).
    let mut changed = bytes.clone();
    *changed.last_mut().unwrap() ^= 0x01;
    let changed_file = dir.path().join("changed.bin");
    std::fs::write(&changed_file, &changed).unwrap();
    let out = run(&["nidkg", "verify", changed_file.to_str().unwrap()]);
    assert_exit(&out, 1);
    assert!(stdout(&out).starts_with("rejected "), "{}", stdout(&out));

    // Cut in its CBOR, and cut short of what the header implies; under the default backend
    // (auto) too: unusable input opens no GPU, so no word of one.
    let truncated_file = dir.path().join("truncated.bin");
    let truncated = truncated_file.to_str().unwrap();
    for keep in [bytes.len() - 10, bytes.len() / 2] {
        std::fs::write(&truncated_file, &bytes[..keep]).unwrap();
        for backend in ["auto", "cpu"] {
            let out = run(&["--backend", backend, "nidkg", "verify", truncated]);
            let (said, err) = (stdout(&out), stderr(&out));
            assert_eq!(out.status.code(), Some(2), "{said}{err}");
            assert!(said.is_empty(), "{keep} bytes, {backend}: stdout {said}");
            let prefix = format!("gpu-crypto: error: {truncated}: unusable input: ");
            assert!(err.starts_with(&prefix), "{keep} bytes, {backend}: {err}");
            assert_eq!(err.lines().count(), 1, "{keep} bytes, {backend}: {err}");
            assert_eq!(err.matches("unusable input").count(), 1, "{err}");
        }
    }
    // Half a file: the header's length says what is missing.
    let err = stderr(&run(&["nidkg", "verify", truncated]));
    let short = format!("{} bytes where the header implies ", bytes.len() / 2);
    assert!(err.contains(&short), "{err}");

    let out = run(&["--backend", "gpu", "nidkg", "verify", file_arg]);
    assert_verified_on_the_gpu_or_no_verdict(&out);
}

/// `nidkg timeline` verifies the file's dealing (here twice per call, in one batch) and
/// prints the median call's batches with their thread CPU, the verifier's host work outside
/// them and per batch the medians; a changed dealing is an error, never a timeline. Under
/// the GPU suite's offload policy file it runs on the GPU, or without one says why.
#[test]
fn nidkg_timeline_accounts_for_an_accepted_dealing_and_refuses_a_rejected_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dealing.bin");
    let file_arg = file.to_str().unwrap();
    run_ok(&[
        "nidkg", "deal", "--n", "4", "--seed", "3", "--out", file_arg,
    ]);
    let timeline = |policy: &[&str], file: &str| {
        let mut args = policy.to_vec();
        args.extend(["nidkg", "timeline", "--calls", "2", "--batch", "2", file]);
        run(&args)
    };
    let out = timeline(&["--backend", "cpu"], file_arg);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(
        text.starts_with("timeline of 2 combined verification(s) of 2 dealing(s) in "),
        "{text}"
    );
    for line in [
        "median call: wall ",
        "caller  g1_decompress (",
        "caller  pairing_products (1 products, 4 pairs)",
        "outside the batches, on the calling thread: wall ",
        "medians over the 2 calls",
        "the call (host CPU: process)",
    ] {
        assert!(text.contains(line), "{line:?} not in\n{text}");
    }

    let mut changed = std::fs::read(&file).unwrap();
    *changed.last_mut().unwrap() ^= 0x01;
    let changed_file = dir.path().join("changed.bin");
    std::fs::write(&changed_file, &changed).unwrap();
    let out = timeline(&["--backend", "cpu"], changed_file.to_str().unwrap());
    assert_exit(&out, 1);
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("the dealing was not accepted: "),
        "{}",
        stderr(&out)
    );

    let policy = write(
        dir.path(),
        "offload-policy.toml",
        include_str!("../../device/suite/offload-policy.toml"),
    );
    let out = timeline(&["--policy", &policy], file_arg);
    if gpu_ready() {
        assert_exit(&out, 0);
        assert!(
            stderr(&out).contains("msm_g2: policy gpu (gpu from 1), ran gpu "),
            "{}",
            stderr(&out)
        );
    } else {
        assert_exit(&out, 1);
        assert!(stderr(&out).contains("GPU"), "{}", stderr(&out));
    }
}

/// Under `--backend gpu`: accepted with the decoding on the GPU, or, without a usable GPU,
/// no verdict (exit 3) saying why.
fn assert_verified_on_the_gpu_or_no_verdict(out: &Output) {
    match out.status.code() {
        Some(0) => assert!(
            stderr(out).contains("decompress: policy gpu (gpu from 256), ran gpu 1 call(s)"),
            "{}",
            stderr(out)
        ),
        Some(3) => assert!(
            stdout(out).starts_with("no verdict: ") && stdout(out).contains("GPU"),
            "{}",
            stdout(out)
        ),
        other => panic!("exit {other:?}: {}{}", stdout(out), stderr(out)),
    }
}

#[path = "../../nidkg/tests/ic_data/mod.rs"]
mod ic_data;

/// `nidkg verify-ic` on the IC's own dealing and keys (hex text, as published): accepted
/// under the IC's context (exit 0) on the CPU and, where a GPU is usable, on the GPU;
/// rejected under another epoch or dealer naming the integrity check (exit 1); a key file
/// that is not a key is unusable (exit 2). `verify-pop` accepts the published proof.
#[test]
#[cfg_attr(
    ic_testdata_absent,
    ignore = "needs ../shared/testdata/ic-nidkg (the IC's published NI-DKG data)"
)]
fn nidkg_verify_ic_on_the_ics_published_dealing() {
    let data = ic_data::dir();
    let path = |name: &str| data.join(name).to_str().unwrap().to_string();
    let dealing = path("nidkg_dealing.hex");
    let keys: Vec<String> = (0..4)
        .map(|i| path(&format!("nidkg_dealing_pk{i}.hex")))
        .collect();
    let verify_ic = |backend: &str, epoch: &str, dealer: &str, key0: &str| {
        let mut args = vec![
            "--backend",
            backend,
            "nidkg",
            "verify-ic",
            "--dealing",
            &dealing,
        ];
        for (i, k) in keys.iter().enumerate() {
            args.extend(["--receiver-key", if i == 0 { key0 } else { k }]);
        }
        args.extend([
            "--threshold",
            "2",
            "--epoch",
            epoch,
            "--dealer-index",
            dealer,
        ]);
        run(&args)
    };
    let out = verify_ic("cpu", "5", "0", &keys[0]);
    assert_exit(&out, 0);
    assert!(
        stdout(&out).starts_with("accepted n=4 t=2 epoch=5"),
        "{}",
        stdout(&out)
    );
    for (epoch, dealer) in [("6", "0"), ("5", "1")] {
        let out = verify_ic("cpu", epoch, dealer, &keys[0]);
        assert_exit(&out, 1);
        assert!(
            stdout(&out).starts_with("rejected ciphertext_integrity["),
            "{}",
            stdout(&out)
        );
    }
    let out = verify_ic("cpu", "5", "0", &path("nidkg_pop.hex"));
    assert_exit(&out, 2);
    assert!(out.stdout.is_empty(), "{}", stdout(&out));
    assert!(
        stderr(&out).starts_with(&format!(
            "gpu-crypto: error: {} (receiver key 0): unusable input: ",
            path("nidkg_pop.hex")
        )),
        "{}",
        stderr(&out)
    );
    let out = verify_ic("gpu", "5", "0", &keys[0]);
    assert_verified_on_the_gpu_or_no_verdict(&out);
    let pop = |ad: &str| {
        run(&[
            "nidkg",
            "verify-pop",
            "--key",
            &path("nidkg_pk.hex"),
            "--pop",
            &path("nidkg_pop.hex"),
            "--associated-data",
            ad,
        ])
    };
    assert_eq!(pop("ic-crypto-kgen-assoc-data").status.code(), Some(0));
    assert_eq!(pop("another context").status.code(), Some(1));
}

/// `--help` ends with the exit statuses every command uses.
#[test]
fn help_lists_the_exit_statuses() {
    let help = run_ok(&["--help"]);
    let statuses = help
        .split("Exit status:")
        .nth(1)
        .expect("an Exit status section");
    for code in ["0 ", "1 ", "2 ", "3 "] {
        assert!(
            statuses.lines().any(|l| l.trim_start().starts_with(code)),
            "{code}: {statuses}"
        );
    }
}

/// Long work shows progress on a terminal and nothing elsewhere: `nidkg deal` under a
/// pseudo-terminal (util-linux `script`, part of every Debian system) prints its start line
/// and draws its spinner with the elapsed time; through a pipe, standard error has only the
/// line naming the file written.
#[test]
fn progress_is_drawn_on_a_terminal_only() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("dealing.bin");
    let command = format!("{BIN} nidkg deal --n 4 --seed 1 --out {}", out.display());
    let tty = std::process::Command::new("script")
        .args(["-qefc", &command, "/dev/null"])
        .output()
        .expect("util-linux script (a pseudo-terminal for the command)");
    assert!(tty.status.success(), "{}", stdout(&tty));
    let drawn = String::from_utf8_lossy(&tty.stdout);
    assert!(
        drawn.contains("nidkg deal: a dealing for 4 receivers"),
        "{drawn}"
    );
    assert!(
        drawn.contains("[00:00:"),
        "no spinner on a terminal: {drawn:?}"
    );
    let piped = run(&[
        "nidkg",
        "deal",
        "--n",
        "4",
        "--seed",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(piped.status.success(), "{}", stderr(&piped));
    // Standard error is the file written alone: no start line, no spinner.
    let said = stderr(&piped);
    assert!(
        said.lines().count() == 1 && said.starts_with("wrote "),
        "progress without a terminal: {said:?}"
    );
}
