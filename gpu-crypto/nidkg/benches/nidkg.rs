//! Criterion benches of NI-DKG dealing verification (whole and per phase, one thread and
//! all rayon threads) and of the chunking proof's 32 x 16n small-scalar MSM batch.
//! `cargo bench -p nidkg --bench nidkg`; JSON rows: the `nidkg_json` bench.

mod common;

use common::{SmallScalarBatch, Threads, blst_msm_one_thread, ops};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use nidkg::msm::{msm_4bit_full_width, msm_shared_bases_u8};
use nidkg::params::NUM_ZK_REPETITIONS;
use nidkg::verify::{check_chunking, check_integrity, check_sharing, deserialize};
use nidkg::{DealingFile, ThresholdKind, verify_with};
use std::time::Duration;

fn verification(c: &mut Criterion) {
    let mut group = c.benchmark_group("nidkg_verify");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    for n in [13usize, 28, 40] {
        let keys = common::receivers(n, n as u64);
        let bytes = common::dealing_file(&keys, ThresholdKind::High, 0);
        let file = DealingFile::parse(&bytes).unwrap();
        for threads in [Threads::One, Threads::All] {
            let backend = ops(threads);
            let label = format!("n{n}-{}t", threads.label());
            group.bench_function(BenchmarkId::new("dealing", &label), |b| {
                b.iter(|| verify_with(&backend, &bytes).unwrap())
            });
            group.bench_function(BenchmarkId::new("deserialize", &label), |b| {
                b.iter(|| {
                    deserialize(&backend, &file.receiver_keys, file.t, &file.dealing).unwrap()
                })
            });
            let decoded =
                deserialize(&backend, &file.receiver_keys, file.t, &file.dealing).unwrap();
            group.bench_function(BenchmarkId::new("integrity", &label), |b| {
                b.iter(|| {
                    check_integrity(
                        &backend,
                        &decoded.dealing,
                        file.epoch,
                        &file.associated_data,
                    )
                    .unwrap()
                })
            });
            group.bench_function(BenchmarkId::new("chunking", &label), |b| {
                b.iter(|| {
                    check_chunking(&backend, &decoded.receiver_keys, &decoded.dealing).unwrap()
                })
            });
            group.bench_function(BenchmarkId::new("sharing", &label), |b| {
                b.iter(|| {
                    check_sharing(&backend, &decoded.receiver_keys, &decoded.dealing).unwrap()
                })
            });
        }
    }
    group.finish();
}

fn small_scalar_msm(c: &mut Criterion) {
    let mut group = c.benchmark_group("nidkg_msm_32x16n");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    for n in [13usize, 28, 40] {
        let batch = SmallScalarBatch::new(n, 7);
        let l = NUM_ZK_REPETITIONS;
        let scalars: Vec<Vec<_>> = (0..l).map(|k| batch.row_scalars(k)).collect();
        group.bench_function(BenchmarkId::new("nidkg-bucket-u8-1t", n), |b| {
            b.iter(|| {
                (0..l)
                    .map(|k| msm_shared_bases_u8(&batch.bases, batch.row(k)))
                    .collect::<Vec<_>>()
            })
        });
        group.bench_function(BenchmarkId::new("ic-4bit-64-windows-1t", n), |b| {
            b.iter(|| {
                scalars
                    .iter()
                    .map(|s| msm_4bit_full_width(&batch.bases, s))
                    .collect::<Vec<_>>()
            })
        });
        group.bench_function(BenchmarkId::new("blst-8bit-1t", n), |b| {
            b.iter(|| {
                (0..l)
                    .map(|k| blst_msm_one_thread(&batch.blst_bases, batch.row(k), 8))
                    .collect::<Vec<_>>()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, verification, small_scalar_msm);
criterion_main!(benches);
