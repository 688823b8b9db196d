//! CPU-path throughput through the engine (`Policy::cpu_only()`), at the IC's shapes:
//! NI-DKG with n = 13, 28, 40 nodes (n*16 points per MSM, 32 MSMs per batch), large
//! MSMs (2^16, 2^20 points), BLS batches (distinct messages 64/256, one message signed
//! by 28/100 nodes), and SHA-256 of 1 MiB state chunks.
//!
//! `cargo bench -p gpu-crypto --bench cpu` (small sample sizes: minutes on 2 cores).

use criterion::{
    BatchSize, BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use ff::Field;
use gpu_crypto::{
    BlsItem, BlsScheme, DomainSeparator, Engine, G1Affine, G1Projective, MsmInput, Policy, Scalar,
    cpu,
};
use group::Group;
use ic_bls12_381::G2Affine;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::hint::black_box;
use std::time::Duration;

const IC_NODE_COUNTS: [usize; 3] = [13, 28, 40];

fn engine() -> Engine {
    Engine::new(Policy::cpu_only()).expect("cpu-only engine")
}

/// `n` distinct points: a random start plus multiples of the generator (one addition
/// each, so 2^20 points take about a second to make).
fn points(n: usize, rng: &mut ChaCha20Rng) -> Vec<G1Affine> {
    let mut acc = G1Projective::random(&mut *rng);
    let step = G1Projective::generator();
    let projective: Vec<G1Projective> = (0..n)
        .map(|_| {
            acc += step;
            acc
        })
        .collect();
    let mut affine = vec![G1Affine::identity(); n];
    G1Projective::batch_normalize(&projective, &mut affine);
    affine
}

fn scalars(n: usize, rng: &mut ChaCha20Rng) -> Vec<Scalar> {
    (0..n).map(|_| Scalar::random(&mut *rng)).collect()
}

fn decompress(c: &mut Criterion) {
    let engine = engine();
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let mut group = c.benchmark_group("decompress");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    for n in IC_NODE_COUNTS {
        let count = n * 16;
        let encoded: Vec<[u8; 48]> = points(count, &mut rng)
            .iter()
            .map(G1Affine::to_compressed)
            .collect();
        group.throughput(Throughput::Elements(count as u64));
        group.bench_with_input(
            BenchmarkId::new("g1_points", count),
            &encoded,
            |b, encoded| b.iter(|| engine.g1_decompress(black_box(encoded)).expect("cpu")),
        );
    }
    group.finish();
}

fn msm(c: &mut Criterion) {
    let engine = engine();
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let mut group = c.benchmark_group("msm");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .measurement_time(Duration::from_secs(4));
    let sizes: Vec<usize> = IC_NODE_COUNTS
        .iter()
        .map(|n| n * 16)
        .chain([1 << 16, 1 << 20])
        .collect();
    for count in sizes {
        if count == 1 << 20 {
            group.measurement_time(Duration::from_secs(20));
        }
        let p = points(count, &mut rng);
        let s = scalars(count, &mut rng);
        group.throughput(Throughput::Elements(count as u64));
        group.bench_function(BenchmarkId::new("g1_points", count), |b| {
            b.iter(|| engine.g1_msm(black_box(&p), black_box(&s)).expect("cpu"))
        });
    }
    group.finish();
}

fn msm_batch(c: &mut Criterion) {
    let engine = engine();
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let mut group = c.benchmark_group("msm_batch");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .measurement_time(Duration::from_secs(4));
    for n in IC_NODE_COUNTS {
        let count = n * 16;
        // 32 MSMs of n*16 points with uniform 255-bit scalars over distinct bases: the
        // count of a dealing's chunking-proof MSMs, not their shape (8-bit scalars, shared
        // bases; the nidkg crate's benches measure that).
        let data: Vec<(Vec<G1Affine>, Vec<Scalar>)> = (0..32)
            .map(|_| (points(count, &mut rng), scalars(count, &mut rng)))
            .collect();
        let inputs: Vec<MsmInput<'_>> = data
            .iter()
            .map(|(p, s)| MsmInput {
                points: p,
                scalars: s,
            })
            .collect();
        group.throughput(Throughput::Elements(32 * count as u64));
        group.bench_function(BenchmarkId::new("32_msms_of", count), |b| {
            b.iter(|| engine.g1_msm_batch(black_box(&inputs)).expect("cpu"))
        });
    }
    group.finish();
}

struct SignedItem {
    signature: [u8; 48],
    public_key: [u8; 96],
    message: Vec<u8>,
}

fn signed_batch(n: usize, same_message: bool, rng: &mut ChaCha20Rng) -> Vec<SignedItem> {
    let shared: Vec<u8> = (0..32).map(|_| rng.r#gen()).collect();
    (0..n)
        .map(|_| {
            let message = if same_message {
                shared.clone()
            } else {
                (0..32).map(|_| rng.r#gen()).collect()
            };
            let sk = Scalar::random(&mut *rng);
            let signature =
                G1Affine::from(cpu::hash_message_to_g1(BlsScheme::Threshold, &message) * sk);
            SignedItem {
                signature: signature.to_compressed(),
                public_key: G2Affine::from(G2Affine::generator() * sk).to_compressed(),
                message,
            }
        })
        .collect()
}

fn bls_verify(c: &mut Criterion) {
    let engine = engine();
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let mut group = c.benchmark_group("bls_verify_batch");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .measurement_time(Duration::from_secs(4));
    for (name, n, same) in [
        ("distinct_messages", 64, false),
        ("distinct_messages", 256, false),
        ("same_message", 28, true),
        ("same_message", 100, true),
    ] {
        let batch = signed_batch(n, same, &mut rng);
        let items: Vec<BlsItem<'_>> = batch
            .iter()
            .map(|s| BlsItem {
                signature: &s.signature,
                public_key: &s.public_key,
                message: &s.message,
                scheme: BlsScheme::Threshold,
            })
            .collect();
        assert!(
            engine
                .bls_verify_batch(&items)
                .expect("cpu")
                .iter()
                .all(|v| v.is_ok())
        );
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(BenchmarkId::new(name, n), |b| {
            b.iter(|| engine.bls_verify_batch(black_box(&items)).expect("cpu"))
        });
    }
    group.finish();
}

fn sha256_chunks(c: &mut Criterion) {
    let engine = engine();
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let separator = DomainSeparator::new("ic-state-chunk").expect("short separator");
    let mut group = c.benchmark_group("sha256_chunks");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .measurement_time(Duration::from_secs(4));
    const MIB: usize = 1 << 20;
    let mut data = vec![0u8; 256 * MIB];
    rng.fill(&mut data[..]);
    for count in [16usize, 256] {
        let chunks: Vec<&[u8]> = data.chunks(MIB).take(count).collect();
        group.throughput(Throughput::Bytes((count * MIB) as u64));
        group.bench_function(BenchmarkId::new("1MiB_chunks", count), |b| {
            b.iter_batched(
                || (),
                |_| {
                    engine
                        .sha256_chunks(&separator, black_box(&chunks))
                        .expect("cpu")
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    decompress,
    msm,
    msm_batch,
    bls_verify,
    sha256_chunks
);
criterion_main!(benches);
