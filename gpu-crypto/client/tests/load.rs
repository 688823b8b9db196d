//! The client against the real built libgpu_crypto.so, and its reported CPU fallbacks.

use gpu_crypto::{
    BackendChoice, BlsItem, BlsScheme, DomainSeparator, Engine, EngineError, G1Affine,
    G1Projective, G2Affine, MsmInput, PairingProducts, Policy, Scalar,
};
use gpu_crypto_client::{Client, ClientError, ClientStatus};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::path::Path;
use std::process::Command;

mod common;

use common::built_cdylib;

fn random_point(rng: &mut ChaCha20Rng) -> G1Affine {
    G1Affine::from(G1Affine::generator() * nidkg::random_scalar(rng))
}

/// Every operation through `client` equals the in-process CPU reference on random data.
fn assert_matches_cpu(client: &Client, seed: u64) {
    let reference = Engine::cpu_only();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);

    let mut compressed: Vec<[u8; 48]> = gpu_crypto::corpus::g1_decompress_corpus()
        .iter()
        .map(|e| e.bytes)
        .collect();
    compressed.extend((0..16).map(|_| random_point(&mut rng).to_compressed()));
    compressed.extend((0..16).map(|_| {
        let mut b = [0u8; 48];
        rng.fill(&mut b[..]);
        b
    }));
    assert_eq!(
        client.g1_decompress(&compressed).expect("decompress"),
        reference.g1_decompress(&compressed).expect("reference")
    );

    let g2: Vec<[u8; 96]> = gpu_crypto::corpus::g2_decompress_corpus()
        .iter()
        .map(|e| e.bytes)
        .collect();
    assert_eq!(
        client.g2_decompress(&g2).expect("g2 decompress"),
        reference.g2_decompress(&g2).expect("reference")
    );

    let points: Vec<G1Affine> = (0..40).map(|_| random_point(&mut rng)).collect();
    let scalars: Vec<Scalar> = (0..40).map(|_| nidkg::random_scalar(&mut rng)).collect();
    let msms = [
        MsmInput {
            points: &points[..0],
            scalars: &scalars[..0],
        },
        MsmInput {
            points: &points[..1],
            scalars: &scalars[..1],
        },
        MsmInput {
            points: &points[1..],
            scalars: &scalars[1..],
        },
    ];
    assert_eq!(
        client.g1_msm_batch(&msms).expect("msm"),
        reference.g1_msm_batch(&msms).expect("reference")
    );

    // Shared-base 8-bit MSMs with adversarial rows and bases: 255 everywhere, all zero, the
    // identity, a duplicate, a base beside its negation; against the engine and the naive sum.
    let mut bases: Vec<G1Affine> = points[..21].to_vec();
    bases[2] = G1Affine::identity();
    bases[5] = bases[4];
    bases[7] = -bases[6];
    let rows = 4;
    let mut u8_scalars = vec![0u8; rows * bases.len()];
    rng.fill(&mut u8_scalars[..]);
    u8_scalars[..bases.len()].fill(255);
    u8_scalars[bases.len()..2 * bases.len()].fill(0);
    let got = client
        .g1_msm_shared_u8(&bases, &u8_scalars, rows)
        .expect("msm shared u8");
    assert_eq!(
        got,
        reference
            .g1_msm_shared_u8(&bases, &u8_scalars, rows)
            .expect("reference")
    );
    for (k, row) in u8_scalars.chunks_exact(bases.len()).enumerate() {
        let naive: G1Projective = bases
            .iter()
            .zip(row)
            .map(|(p, &s)| p * Scalar::from(u64::from(s)))
            .sum();
        assert_eq!(got[k], naive, "row {k}");
    }
    assert!(
        client
            .g1_msm_shared_u8(&bases, &[], 0)
            .expect("no rows")
            .is_empty()
    );
    assert_eq!(
        client.g1_msm_shared_u8(&[], &[], 2).expect("no bases"),
        vec![G1Projective::identity(); 2]
    );

    struct Case {
        signature: [u8; 48],
        public_key: [u8; 96],
        message: Vec<u8>,
        scheme: BlsScheme,
    }
    let cases: Vec<Case> = (0..10)
        .map(|i| {
            let scheme = BlsScheme::ALL[i % 2];
            let secret = nidkg::random_scalar(&mut rng);
            let message = vec![i as u8; i];
            let h = gpu_crypto::cpu::hash_message_to_g1(scheme, &message);
            let mut signature = G1Affine::from(h * secret).to_compressed();
            let public_key = G2Affine::from(G2Affine::generator() * secret).to_compressed();
            if i % 3 == 1 {
                signature[5] ^= 1;
            }
            Case {
                signature,
                public_key,
                message,
                // Every fourth item is checked under the other scheme: invalid.
                scheme: if i % 4 == 3 {
                    BlsScheme::ALL[(i + 1) % 2]
                } else {
                    scheme
                },
            }
        })
        .collect();
    let items: Vec<BlsItem<'_>> = cases
        .iter()
        .map(|c| BlsItem {
            signature: &c.signature,
            public_key: &c.public_key,
            message: &c.message,
            scheme: c.scheme,
        })
        .collect();
    let verdicts = client.bls_verify_batch(&items).expect("verify");
    assert_eq!(
        verdicts,
        reference.bls_verify_batch(&items).expect("reference")
    );
    assert!(verdicts.iter().any(Result::is_ok) && verdicts.iter().any(Result::is_err));

    let chunks: Vec<Vec<u8>> = [0usize, 3, 64, 5000]
        .iter()
        .map(|&n| {
            let mut c = vec![0u8; n];
            rng.fill(&mut c[..]);
            c
        })
        .collect();
    let slices: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
    let separator = DomainSeparator::new("ic-state-chunk").expect("separator");
    assert_eq!(
        client.sha256_chunks(&separator, &slices).expect("sha256"),
        reference
            .sha256_chunks(&separator, &slices)
            .expect("reference")
    );

    // Products of pairings: e(aP, Q) e(-aP, Q) is the identity, e(aP, Q) e(P, Q) is not.
    let table = vec![
        G2Affine::generator(),
        G2Affine::from(G2Affine::generator() * nidkg::random_scalar(&mut rng)),
    ];
    let products: Vec<Vec<(G1Affine, usize)>> = (0..4)
        .map(|k| {
            let p = random_point(&mut rng);
            let q = if k % 2 == 0 { -p } else { p };
            vec![(p, k % 2), (q, k % 2)]
        })
        .chain([Vec::new()])
        .collect();
    let input = PairingProducts {
        g2: &table,
        products: &products,
    };
    let verdicts = client
        .pairing_products_are_identity(input)
        .expect("pairing products");
    assert_eq!(verdicts, vec![true, false, true, false, true]);
    assert_eq!(
        verdicts,
        reference
            .pairing_products_are_identity(input)
            .expect("reference")
    );
}

#[test]
fn loaded_library_matches_the_cpu_path() {
    let path = built_cdylib();
    let client = Client::open_path(&path, &Policy::cpu_only()).expect("open");
    assert_eq!(
        client.status(),
        &ClientStatus::Loaded {
            path: path.clone(),
            abi_version: gpu_crypto_api::abi::ABI_VERSION
        }
    );
    assert_matches_cpu(&client, 1);

    let report: serde_json::Value =
        serde_json::from_str(&client.report_json().expect("report")).expect("JSON");
    assert_eq!(report["gpu"]["state"], "not_requested");
    // The library's counters saw the calls (they live in the library, not in this process's
    // CPU engine): one call each of G1 decompression, G2 decompression and pairing products,
    // on the CPU.
    let stats: serde_json::Value =
        serde_json::from_str(&client.stats_json().expect("stats")).expect("JSON");
    for operation in ["decompress", "decompress_g2", "pairing_products"] {
        let counter = stats["operations"]
            .as_array()
            .expect("operations")
            .iter()
            .find(|c| c["operation"] == operation && c["executed"] == "cpu")
            .unwrap_or_else(|| panic!("{operation} counter"));
        assert_eq!(counter["calls"], 1, "{operation}");
    }
}

#[test]
fn loaded_library_under_the_auto_policy_matches_the_cpu_path() {
    // Crossovers of 1: every batch goes to the GPU where the library has a usable one
    // and an implementation of the operation.
    let mut policy = Policy::auto();
    for op in gpu_crypto::Operation::ALL {
        policy.operation_mut(op).gpu_min_batch = 1;
    }
    let client = Client::open_path(&built_cdylib(), &policy).expect("open");
    assert_matches_cpu(&client, 4);
    let report: serde_json::Value =
        serde_json::from_str(&client.report_json().expect("report")).expect("JSON");
    let stats = client.stats_json().expect("stats");
    eprintln!("report: {report}\nstats: {stats}");
    if report["gpu"]["state"] == "ready" {
        let stats: serde_json::Value = serde_json::from_str(&stats).expect("JSON");
        let on_gpu: u64 = stats["operations"]
            .as_array()
            .expect("operations")
            .iter()
            .filter(|c| c["executed"] == "gpu")
            .map(|c| c["calls"].as_u64().unwrap_or(0))
            .sum();
        assert!(on_gpu > 0, "a ready GPU ran nothing: {stats}");
    }
}

#[test]
fn msm_length_mismatch_is_refused_before_the_library_call() {
    let client = Client::open_path(&built_cdylib(), &Policy::cpu_only()).expect("open");
    let points = [G1Affine::generator()];
    let err = client
        .g1_msm_batch(&[MsmInput {
            points: &points,
            scalars: &[],
        }])
        .expect_err("length mismatch");
    assert!(
        matches!(
            err,
            ClientError::LengthMismatch {
                points: 1,
                scalars: 0
            }
        ),
        "{err}"
    );
}

#[test]
fn msm_shared_u8_length_mismatch_is_the_engine_error_on_both_backends() {
    let bases = [G1Affine::generator(); 3];
    let library = Client::open_path(&built_cdylib(), &Policy::cpu_only()).expect("open");
    let fallback = Client::open_path(
        Path::new("/nonexistent/libgpu_crypto.so"),
        &Policy::cpu_only(),
    )
    .expect("fallback client");
    for client in [&library, &fallback] {
        let err = client
            .g1_msm_shared_u8(&bases, &[1u8; 5], 2)
            .expect_err("5 scalars for 2 rows of 3 bases");
        assert!(
            matches!(
                err,
                ClientError::Engine(EngineError::ScalarCountMismatch {
                    op: gpu_crypto::Operation::MsmSharedU8,
                    rows: 2,
                    bases: 3,
                    scalars: 5,
                })
            ),
            "{err}"
        );
    }
}

#[test]
fn missing_library_falls_back_to_the_cpu_with_the_reason() {
    let missing = Path::new("/nonexistent/dir/libgpu_crypto.so");
    let client = Client::open_path(missing, &Policy::auto()).expect("fallback client");
    let ClientStatus::CpuFallback { reason } = client.status() else {
        panic!("expected a CPU fallback, got {:?}", client.status());
    };
    assert!(
        reason.contains("cannot load /nonexistent/dir/libgpu_crypto.so"),
        "{reason}"
    );
    assert!(
        reason.contains("No such file"),
        "loader error kept: {reason}"
    );
    assert_matches_cpu(&client, 2);
}

#[test]
fn a_file_that_is_not_a_library_falls_back_with_the_loader_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = dir.path().join("libgpu_crypto.so");
    std::fs::write(&text, "this is not an ELF shared object\n").expect("write");
    let client = Client::open_path(&text, &Policy::auto()).expect("fallback client");
    let ClientStatus::CpuFallback { reason } = client.status() else {
        panic!("expected a CPU fallback, got {:?}", client.status());
    };
    assert!(reason.starts_with("cannot load"), "{reason}");
    assert!(
        reason.contains("invalid ELF header") || reason.contains("file too short"),
        "the loader's own words: {reason}"
    );
}

#[test]
fn a_library_with_another_abi_version_falls_back() {
    // A C compiler is a build prerequisite (README), so its absence is a failure.
    Command::new("cc")
        .arg("--version")
        .output()
        .expect("a C compiler (cc) to build the wrong-ABI library");
    let dir = tempfile::tempdir().expect("tempdir");
    let source = dir.path().join("old.c");
    std::fs::write(
        &source,
        "#include <stdint.h>\nuint32_t gpu_crypto_abi_version(void) { return 999; }\n",
    )
    .expect("write");
    let library = dir.path().join("libold.so");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(&source)
        .status()
        .expect("run cc");
    assert!(status.success(), "cc failed");
    let client = Client::open_path(&library, &Policy::auto()).expect("fallback client");
    let ClientStatus::CpuFallback { reason } = client.status() else {
        panic!("expected a CPU fallback, got {:?}", client.status());
    };
    assert!(
        reason.contains(&format!(
            "ABI version 999, this client needs {}",
            gpu_crypto_api::abi::ABI_VERSION
        )),
        "{reason}"
    );
}

#[test]
fn a_gpu_pinned_policy_is_never_served_by_the_fallback() {
    let policy = Policy::with_backend(BackendChoice::Gpu);
    let err = Client::open_path(Path::new("/nonexistent/libgpu_crypto.so"), &policy)
        .err()
        .expect("no quiet CPU fallback for a pinned GPU");
    assert!(matches!(err, ClientError::GpuRequired { .. }), "{err}");

    // The real library with a pinned GPU: starts where a GPU is usable, else refuses.
    match Client::open_path(&built_cdylib(), &policy) {
        Ok(client) => {
            assert!(
                Engine::new(policy).is_ok(),
                "library accepted a GPU this process cannot use"
            );
            assert!(matches!(client.status(), ClientStatus::Loaded { .. }));
        }
        Err(ClientError::EngineNew { reason, .. }) => {
            assert!(reason.contains("GPU"), "{reason}");
        }
        Err(other) => panic!("unexpected error: {other}"),
    }
}
