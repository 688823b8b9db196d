//! The replica's hooks (`gpu_crypto_client::hooks`) driven in the call pattern of the IC's
//! type crate and `verify_zk_proofs` on IC-format dealings: decode the receivers' keys and
//! the dealing's points in one batch per group, the chunking proof's MSMs, the ciphertext
//! integrity's pairing products, and the state manager's chunk hashes. Every hook answer
//! is compared with `ic_bls12_381` on the CPU; where a hook says "run the CPU path", the
//! test runs the reference as the type crate would run its own code, and checks that the
//! answer was counted with its reason.
//!
//! Without a GPU (CI) the library loads, reports its GPU unusable, and every hook answers
//! `RunCpu`, counted as `gpu_unusable`. The GPU-only assertions are ignored tests.

use gpu_crypto::{Engine, G1Affine, G1Projective, G2Affine, Policy, Scalar};
use gpu_crypto_client::hooks::{Hook, HookStats, Hooks, Offload, Outcome, PointRejected};
use nidkg::encoding::EncodedElements;
use nidkg::{DemoSetup, ThresholdKind};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use common::built_cdylib;

/// Every operation on `auto` with a crossover of 1: the GPU for every batch where one is
/// usable.
fn every_batch_to_the_gpu() -> Policy {
    let mut policy = Policy::auto();
    for op in gpu_crypto::Operation::ALL {
        policy.operation_mut(op).gpu_min_batch = 1;
    }
    policy
}

fn gpu_ready(hooks: &Hooks) -> bool {
    hooks.status().contains("GPU ready")
}

fn random_g1(rng: &mut ChaCha20Rng) -> G1Affine {
    G1Affine::from(G1Affine::generator() * nidkg::random_scalar(rng))
}

fn random_g2(rng: &mut ChaCha20Rng) -> G2Affine {
    G2Affine::from(G2Affine::generator() * nidkg::random_scalar(rng))
}

/// What the type crate's own `deserialize` answers: a point, or its one error value.
fn reference_g1(bytes: &[u8]) -> Option<G1Affine> {
    let bytes: &[u8; 48] = bytes.try_into().ok()?;
    Option::from(G1Affine::from_compressed(bytes))
}

fn reference_g2(bytes: &[u8]) -> Option<G2Affine> {
    let bytes: &[u8; 96] = bytes.try_into().ok()?;
    Option::from(G2Affine::from_compressed(bytes))
}

fn naive_msm(points: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
    points.iter().zip(scalars).map(|(p, s)| p * s).sum()
}

fn reference_pairing_products(g2: &[G2Affine], products: &[Vec<(G1Affine, usize)>]) -> Vec<bool> {
    products
        .iter()
        .map(|pairs| {
            let prepared: Vec<ic_bls12_381::G2Prepared> = pairs
                .iter()
                .map(|(_, i)| ic_bls12_381::G2Prepared::from(g2[*i]))
                .collect();
            let terms: Vec<(&G1Affine, &ic_bls12_381::G2Prepared)> = pairs
                .iter()
                .zip(&prepared)
                .map(|((p, _), q)| (p, q))
                .collect();
            ic_bls12_381::multi_miller_loop(&terms).final_exponentiation()
                == ic_bls12_381::Gt::identity()
        })
        .collect()
}

/// What one pass of the call pattern saw: the hook answers that carried a result.
#[derive(Default)]
struct Served {
    done: usize,
    cpu: usize,
}

impl Served {
    /// The type crate's shape: the hook's result where it has one, else its own code.
    fn take<T: PartialEq + std::fmt::Debug>(
        &mut self,
        what: &str,
        answer: Offload<T>,
        reference: impl FnOnce() -> T,
    ) -> T {
        let expected = reference();
        match answer {
            Offload::Done(value) => {
                assert_eq!(
                    value, expected,
                    "{what}: the hook differs from ic_bls12_381"
                );
                self.done += 1;
                value
            }
            Offload::RunCpu => {
                self.cpu += 1;
                expected
            }
            Offload::Failed(e) => panic!("{what}: {e}"),
        }
    }
}

/// Per-item decoding results as the type crate maps them: the point, or its error.
fn as_type_crate<P: Copy>(results: &[Result<P, PointRejected>]) -> Vec<Option<P>> {
    results.iter().map(|r| r.as_ref().ok().copied()).collect()
}

/// The deserialisation phase of `verify_zk_proofs`: every G1 point (receivers' keys first)
/// and every G2 point of the dealing in one batch each.
fn decode_dealing(
    hooks: &Hooks,
    served: &mut Served,
    elements: &EncodedElements,
) -> (Vec<G1Affine>, Vec<G2Affine>) {
    let g1 = served.take(
        "G1 batch",
        match hooks.g1_batch_deserialize(&elements.g1) {
            Offload::Done(items) => Offload::Done(as_type_crate(&items)),
            Offload::RunCpu => Offload::RunCpu,
            Offload::Failed(e) => Offload::Failed(e),
        },
        || elements.g1.iter().map(|b| reference_g1(b)).collect(),
    );
    let g2 = served.take(
        "G2 batch",
        match hooks.g2_batch_deserialize(&elements.g2) {
            Offload::Done(items) => Offload::Done(as_type_crate(&items)),
            Offload::RunCpu => Offload::RunCpu,
            Offload::Failed(e) => Offload::Failed(e),
        },
        || elements.g2.iter().map(|b| reference_g2(b)).collect(),
    );
    let g1: Option<Vec<G1Affine>> = g1.into_iter().collect();
    let g2: Option<Vec<G2Affine>> = g2.into_iter().collect();
    (
        g1.expect("a valid dealing's G1 points decode"),
        g2.expect("a valid dealing's G2 points decode"),
    )
}

/// The chunking proof's and ciphertext integrity's batches over the decoded dealing: `n`
/// MSMs over the 16 randomizers, one MSM over the receivers' keys, 32 shared-base 8-bit
/// MSMs over the `16n` chunk ciphertexts, 16 products of three pairings.
fn verify_shape(
    hooks: &Hooks,
    served: &mut Served,
    n: usize,
    g1: &[G1Affine],
    g2: &[G2Affine],
    rng: &mut ChaCha20Rng,
) {
    let keys = &g1[..n];
    // Layout after the keys: R (16), S (16), then the 16n chunk ciphertexts.
    let rr = &g1[n..n + 16];
    let ss = &g1[n + 16..n + 32];
    let chunks = &g1[n + 32..n + 32 + 16 * n];
    let zz = &g2[g2.len() - 17..g2.len() - 1];

    let scalars: Vec<Vec<Scalar>> = (0..n)
        .map(|_| (0..16).map(|_| nidkg::random_scalar(rng)).collect())
        .collect();
    let msms: Vec<(&[G1Affine], &[Scalar])> = scalars.iter().map(|s| (rr, s.as_slice())).collect();
    served.take(
        "n MSMs over the randomizers",
        hooks.g1_muln_affine_vartime_batch(&msms),
        || msms.iter().map(|(p, s)| naive_msm(p, s)).collect(),
    );

    let z_r: Vec<Scalar> = (0..n).map(|_| nidkg::random_scalar(rng)).collect();
    served.take(
        "MSM over the receivers' keys",
        hooks.g1_muln_affine_vartime(keys, &z_r),
        || naive_msm(keys, &z_r),
    );

    let mut challenges = vec![0u8; 32 * chunks.len()];
    rng.fill(&mut challenges[..]);
    challenges[..chunks.len()].fill(255);
    served.take(
        "32 shared-base 8-bit MSMs",
        hooks.g1_muln_affine_shared_u8_vartime(chunks, &challenges, 32),
        || {
            challenges
                .chunks_exact(chunks.len())
                .map(|row| {
                    let row: Vec<Scalar> =
                        row.iter().map(|&e| Scalar::from(u64::from(e))).collect();
                    naive_msm(chunks, &row)
                })
                .collect()
        },
    );

    // e(R_j, id) e(S_j, h) e(-g1, Z_j): table [id, h, Z_0..Z_15]; the last product is made
    // the identity (e(P, Q) e(-P, Q)) so both verdicts occur.
    let mut table = vec![random_g2(rng), random_g2(rng)];
    table.extend_from_slice(zz);
    let minus_g1 = -G1Affine::generator();
    let mut products: Vec<Vec<(G1Affine, usize)>> = (0..16)
        .map(|j| vec![(rr[j], 0), (ss[j], 1), (minus_g1, 2 + j)])
        .collect();
    products.push(vec![(rr[0], 1), (-rr[0], 1), (G1Affine::identity(), 0)]);
    let verdicts = served.take(
        "ciphertext integrity",
        hooks.pairing_products_are_identity(&table, &products),
        || reference_pairing_products(&table, &products),
    );
    assert_eq!(verdicts.last(), Some(&true));

    let data: Vec<Vec<u8>> = [0usize, 1, 4096, 1 << 20]
        .iter()
        .map(|&len| {
            let mut chunk = vec![0u8; len];
            rng.fill(&mut chunk[..]);
            chunk
        })
        .collect();
    let slices: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
    served.take(
        "state chunk hashes",
        hooks.state_chunk_hashes(&slices),
        || {
            slices
                .iter()
                .map(|c| {
                    let mut h = Sha256::new();
                    h.update([14u8]);
                    h.update(b"ic-state-chunk");
                    h.update(c);
                    h.finalize().into()
                })
                .collect()
        },
    );
}

/// One dealing through the whole call pattern: 7 hook calls.
const CALLS_PER_DEALING: u64 = 7;

fn drive_dealing(hooks: &Hooks, n: usize, seed: u64) -> Served {
    let setup = DemoSetup::new(n, ThresholdKind::High, seed).expect("dealing");
    let stream = setup.dealing.to_element_stream();
    let keys = setup.file.receiver_keys.clone();
    let elements = EncodedElements::split(&keys, setup.file.t, &stream).expect("split");
    let mut served = Served::default();
    let (g1, g2) = decode_dealing(hooks, &mut served, &elements);
    assert_eq!(g1.len(), 18 * n + 101);
    assert_eq!(g2.len(), setup.file.t + 17);
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    verify_shape(hooks, &mut served, n, &g1, &g2, &mut rng);
    served
}

/// Fresh random and adversarial decoding batches: the corpora (non-canonical coordinates,
/// points outside the subgroup, every flag combination, the identity with stray bits),
/// random points and bytes, and encodings of the wrong length, each result at its index.
fn drive_adversarial_decoding(hooks: &Hooks, seed: u64) -> Served {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut g1: Vec<Vec<u8>> = gpu_crypto::corpus::g1_decompress_corpus()
        .iter()
        .map(|e| e.bytes.to_vec())
        .collect();
    g1.extend((0..64).map(|_| random_g1(&mut rng).to_compressed().to_vec()));
    g1.push(G1Affine::identity().to_compressed().to_vec());
    for len in [0usize, 47, 49, 96] {
        let at = rng.gen_range(0..g1.len());
        g1.insert(at, vec![0x80; len]);
    }
    let mut g2: Vec<Vec<u8>> = gpu_crypto::corpus::g2_decompress_corpus()
        .iter()
        .map(|e| e.bytes.to_vec())
        .collect();
    g2.extend((0..8).map(|_| random_g2(&mut rng).to_compressed().to_vec()));
    g2.push(G2Affine::identity().to_compressed().to_vec());
    g2.insert(3, vec![0xc0; 48]);

    let reference_codes = Engine::cpu_only();
    let mut served = Served::default();
    let answer = hooks.g1_batch_deserialize(&g1);
    if let Offload::Done(items) = &answer {
        assert_codes_match(items, &g1, |b: &[u8; 48]| {
            reference_codes.g1_decompress(&[*b]).expect("cpu")[0]
        });
    }
    served.take("adversarial G1", map_done(answer), || {
        g1.iter().map(|b| reference_g1(b)).collect()
    });
    let answer = hooks.g2_batch_deserialize(&g2);
    if let Offload::Done(items) = &answer {
        assert_codes_match(items, &g2, |b: &[u8; 96]| {
            reference_codes.g2_decompress(&[*b]).expect("cpu")[0]
        });
    }
    served.take("adversarial G2", map_done(answer), || {
        g2.iter().map(|b| reference_g2(b)).collect()
    });
    served
}

fn map_done<P: Copy>(answer: Offload<Vec<Result<P, PointRejected>>>) -> Offload<Vec<Option<P>>> {
    match answer {
        Offload::Done(items) => Offload::Done(as_type_crate(&items)),
        Offload::RunCpu => Offload::RunCpu,
        Offload::Failed(e) => Offload::Failed(e),
    }
}

/// The reason of every rejection is the engine's, and a wrong length is named as such.
fn assert_codes_match<P: PartialEq + std::fmt::Debug, const N: usize>(
    items: &[Result<P, PointRejected>],
    inputs: &[Vec<u8>],
    reference: impl Fn(&[u8; N]) -> Result<P, gpu_crypto::DecodeError>,
) {
    assert_eq!(items.len(), inputs.len());
    for (i, (item, bytes)) in items.iter().zip(inputs).enumerate() {
        match <&[u8; N]>::try_from(bytes.as_slice()) {
            Err(_) => assert_eq!(
                item,
                &Err(PointRejected::WrongLength {
                    len: bytes.len(),
                    expected: N
                }),
                "item {i}"
            ),
            Ok(b) => assert_eq!(item, &reference(b).map_err(PointRejected::from), "item {i}"),
        }
    }
}

/// Calls of one adversarial decoding pass: one G1 and one G2 batch.
const CALLS_PER_ADVERSARIAL_PASS: u64 = 2;

fn assert_all_counted_as(stats: &HookStats, outcome: Outcome, calls: u64) {
    let total: u64 = Hook::ALL.into_iter().map(|h| stats.cpu_calls(h)).sum();
    assert_eq!(stats.total(outcome), calls, "{stats:?}");
    assert_eq!(total, calls, "every call ran the CPU path: {stats:?}");
    assert_eq!(stats.total(Outcome::Gpu), 0, "{stats:?}");
}

#[test]
fn without_a_gpu_every_hook_runs_the_cpu_path_and_counts_it() {
    let hooks = Hooks::open(Some(&built_cdylib()), &every_batch_to_the_gpu());
    let status = hooks.status();
    assert!(status.starts_with("open: "), "{status}");
    let mut served = drive_dealing(&hooks, 4, 1);
    let adversarial = drive_adversarial_decoding(&hooks, 2);
    served.done += adversarial.done;
    served.cpu += adversarial.cpu;
    let stats = hooks.stats();
    eprintln!("{}", serde_json::to_string_pretty(&stats).expect("json"));
    let calls = CALLS_PER_DEALING + CALLS_PER_ADVERSARIAL_PASS;
    if gpu_ready(&hooks) {
        // On a GPU machine the same pass is served by the GPU (checked against the CPU
        // in `Served::take`).
        assert_eq!(stats.total(Outcome::Gpu), calls, "{stats:?}");
        assert_eq!(served.done as u64, calls);
    } else {
        assert_eq!(served.cpu as u64, calls);
        assert_all_counted_as(&stats, Outcome::GpuUnusable, calls);
        for hook in Hook::ALL {
            assert!(
                stats.calls(hook, Outcome::GpuUnusable) > 0,
                "{hook}: {stats:?}"
            );
        }
    }
}

#[test]
fn a_cpu_policy_runs_every_hook_on_the_callers_cpu_path() {
    let hooks = Hooks::open(Some(&built_cdylib()), &Policy::cpu_only());
    assert!(
        hooks.status().contains("GPU not requested"),
        "{}",
        hooks.status()
    );
    let served = drive_dealing(&hooks, 4, 3);
    assert_eq!(served.done, 0);
    assert_all_counted_as(&hooks.stats(), Outcome::PolicyCpu, CALLS_PER_DEALING);
}

#[test]
fn a_missing_library_disables_the_hooks_with_the_reason() {
    let hooks = Hooks::open(
        Some(Path::new("/nonexistent/libgpu_crypto.so")),
        &every_batch_to_the_gpu(),
    );
    assert!(
        hooks.status().starts_with("disabled: cannot load"),
        "{}",
        hooks.status()
    );
    let served = drive_dealing(&hooks, 4, 4);
    assert_eq!(served.done, 0);
    assert_all_counted_as(&hooks.stats(), Outcome::Disabled, CALLS_PER_DEALING);
}

#[test]
fn a_gpu_pinned_policy_without_a_gpu_disables_the_hooks_instead_of_failing_calls() {
    let policy = Policy::with_backend(gpu_crypto::BackendChoice::Gpu);
    let hooks = Hooks::open(Some(&built_cdylib()), &policy);
    if gpu_ready(&hooks) {
        return;
    }
    assert!(
        hooks.status().starts_with("disabled: "),
        "{}",
        hooks.status()
    );
    assert!(hooks.status().contains("GPU"), "{}", hooks.status());
    drive_dealing(&hooks, 4, 5);
    assert_all_counted_as(&hooks.stats(), Outcome::Disabled, CALLS_PER_DEALING);
}

#[test]
fn empty_batches_run_the_callers_code() {
    let hooks = Hooks::open(Some(&built_cdylib()), &every_batch_to_the_gpu());
    let none: [[u8; 48]; 0] = [];
    assert_eq!(hooks.g1_batch_deserialize(&none), Offload::RunCpu);
    assert_eq!(hooks.g1_muln_affine_vartime(&[], &[]), Offload::RunCpu);
    assert_eq!(hooks.state_chunk_hashes(&[]), Offload::RunCpu);
    let stats = hooks.stats();
    assert_eq!(stats.total(Outcome::Empty), 3, "{stats:?}");
}

/// The process-wide hooks as the replica opens them: a child process of this test binary
/// (so that its environment is set before the first hook call and no other test shares
/// it) runs `process_wide_hooks_child`.
#[test]
fn the_process_wide_hooks_open_once_from_the_environment_and_dump_their_counters() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("runtime-config.json");
    let crypto = serde_json::to_value(every_batch_to_the_gpu()).expect("policy");
    let document = serde_json::json!({"schema_version": 3, "crypto": crypto});
    std::fs::write(&config, document.to_string()).expect("write config");
    let stats_dir = dir.path().join("stats");
    std::fs::create_dir(&stats_dir).expect("stats dir");
    let run = |with_config: bool| {
        let mut child = Command::new(std::env::current_exe().expect("exe"));
        child
            .args(["--exact", "process_wide_hooks_child", "--include-ignored"])
            .args(["--nocapture", "--test-threads", "1"])
            .env("HOOKS_TEST_CHILD", "1")
            .env("GPU_CRYPTO_LIB", built_cdylib())
            .env("GPU_CRYPTO_HOOKS_STATS_DIR", &stats_dir)
            .env_remove("SOVEREIGN_RUNTIME_CONFIG");
        if with_config {
            child.env("SOVEREIGN_RUNTIME_CONFIG", &config);
        }
        let out = child.output().expect("run child");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "child failed:\n{text}");
        text
    };
    let opened = run(true);
    assert!(opened.contains("hooks status: open: "), "{opened}");
    let unset = run(false);
    assert!(
        unset.contains("hooks status: disabled: SOVEREIGN_RUNTIME_CONFIG is not set"),
        "{unset}"
    );
    let dumps: Vec<PathBuf> = std::fs::read_dir(&stats_dir)
        .expect("read stats dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(dumps.len(), 2, "one counter file per process: {dumps:?}");
    for dump in dumps {
        let stats: HookStats =
            serde_json::from_str(&std::fs::read_to_string(&dump).expect("read")).expect("json");
        let calls: u64 = stats.counts.iter().map(|c| c.calls).sum();
        assert_eq!(calls, 2, "{}: {stats:?}", dump.display());
    }
}

#[test]
#[ignore = "run by the_process_wide_hooks_open_once_from_the_environment_and_dump_their_counters"]
fn process_wide_hooks_child() {
    if std::env::var_os("HOOKS_TEST_CHILD").is_none() {
        return;
    }
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    let points = [random_g1(&mut rng).to_compressed()];
    let answer = gpu_crypto_client::hooks::g1_batch_deserialize(&points);
    let hashed = gpu_crypto_client::hooks::state_chunk_hashes(&[b"chunk".as_slice()]);
    let stats = gpu_crypto_client::hooks::stats();
    println!("hooks status: {}", stats.status);
    assert_eq!(stats.counts.iter().map(|c| c.calls).sum::<u64>(), 2);
    if !stats.status.contains("GPU ready") {
        assert_eq!(answer, Offload::RunCpu);
        assert_eq!(hashed, Offload::RunCpu);
    }
}

/// The IC's published dealing (n = 4, threshold 2) decoded through the hooks.
#[test]
#[cfg_attr(
    ic_testdata_absent,
    ignore = "needs ../shared/testdata/ic-nidkg (the IC's published NI-DKG data)"
)]
fn the_ics_published_dealing_decodes_through_the_hooks_as_on_the_cpu() {
    let dir = ic_data::dir();
    let read = |name: &str| {
        let path = dir.join(name);
        nidkg::ic_cbor::bytes_of_file(
            &std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
        )
    };
    let keys: Vec<[u8; 48]> = (0..4)
        .map(|i| nidkg::ic_cbor::receiver_key(&read(&format!("nidkg_dealing_pk{i}.hex"))).unwrap())
        .collect();
    let (rows, t, stream) = nidkg::ic_cbor::dealing_stream(&read("nidkg_dealing.hex")).unwrap();
    assert_eq!((rows, t), (4, 2));
    let elements = EncodedElements::split(&keys, t, &stream).expect("split");
    for policy in [every_batch_to_the_gpu(), Policy::cpu_only()] {
        let hooks = Hooks::open(Some(&built_cdylib()), &policy);
        let mut served = Served::default();
        let (g1, g2) = decode_dealing(&hooks, &mut served, &elements);
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        verify_shape(&hooks, &mut served, 4, &g1, &g2, &mut rng);
        let stats = hooks.stats();
        let counted: u64 = stats.counts.iter().map(|c| c.calls).sum();
        assert_eq!(counted, CALLS_PER_DEALING, "{stats:?}");
    }
}

#[path = "../../nidkg/tests/ic_data/mod.rs"]
mod ic_data;

#[test]
#[ignore = "needs a CUDA GPU: every hook served by the GPU, bit-exact with ic_bls12_381"]
fn on_a_gpu_every_hook_is_served_and_matches_the_cpu() {
    let hooks = Hooks::open(Some(&built_cdylib()), &every_batch_to_the_gpu());
    assert!(gpu_ready(&hooks), "{}", hooks.status());
    for (n, seed) in [(4, 21), (13, 22), (28, 23)] {
        let served = drive_dealing(&hooks, n, seed);
        assert_eq!(served.done as u64, CALLS_PER_DEALING, "n = {n}");
    }
    let served = drive_adversarial_decoding(&hooks, 24);
    assert_eq!(served.done as u64, CALLS_PER_ADVERSARIAL_PASS);
    let stats = hooks.stats();
    assert_eq!(
        stats.total(Outcome::Gpu),
        3 * CALLS_PER_DEALING + CALLS_PER_ADVERSARIAL_PASS
    );
}

#[test]
#[ignore = "needs a CUDA GPU: crossovers and unserved inputs route to the caller's CPU path"]
fn on_a_gpu_small_batches_and_unserved_inputs_run_the_callers_code() {
    let mut policy = every_batch_to_the_gpu();
    policy.decompress.gpu_min_batch = 1000;
    let hooks = Hooks::open(Some(&built_cdylib()), &policy);
    assert!(gpu_ready(&hooks), "{}", hooks.status());
    let mut rng = ChaCha20Rng::seed_from_u64(31);
    let points: Vec<[u8; 48]> = (0..10)
        .map(|_| random_g1(&mut rng).to_compressed())
        .collect();
    assert_eq!(hooks.g1_batch_deserialize(&points), Offload::RunCpu);
    assert_eq!(
        hooks
            .stats()
            .calls(Hook::G1Deserialize, Outcome::BelowCrossover),
        1
    );

    // Lengths that differ: the type crate's own contract decides.
    let bases: Vec<G1Affine> = (0..3).map(|_| random_g1(&mut rng)).collect();
    let scalars = [nidkg::random_scalar(&mut rng)];
    assert_eq!(
        hooks.g1_muln_affine_vartime(&bases, &scalars),
        Offload::RunCpu
    );

    // A curve point outside the subgroup (the type crate's deserialize_unchecked can make
    // one): the library refuses it, the caller's code computes.
    let outside = gpu_crypto::corpus::g1_decompress_corpus()
        .into_iter()
        .find(|e| e.expected == Err(gpu_crypto::DecodeError::NotInSubgroup))
        .expect("corpus has a point outside the subgroup");
    let point: G1Affine =
        Option::from(G1Affine::from_compressed_unchecked(&outside.bytes)).expect("on the curve");
    let scalars: Vec<Scalar> = (0..3).map(|_| nidkg::random_scalar(&mut rng)).collect();
    let mixed = [bases[0], point, bases[2]];
    assert_eq!(
        hooks.g1_muln_affine_vartime(&mixed, &scalars),
        Offload::RunCpu
    );
    let stats = hooks.stats();
    assert_eq!(
        stats.calls(Hook::G1MulnAffineVartime, Outcome::UnservedInput),
        2,
        "{stats:?}"
    );
}
