//! NI-DKG CPU measurements as JSON rows (one object per line on stdout):
//!
//! - `verify`: one dealing verification at n = 13, 28, 40 (high threshold, and low), on
//!   one thread and on all rayon threads, with the per-phase split;
//! - `create`: one dealing creation (one thread);
//! - `verify_combined`: the same dealings through `verify_batch` with the combined checks;
//! - `dkg_round`: verifying the 2n dealings of a DKG round (n at each threshold), either
//!   one after another with all threads inside each, or dealings spread over the threads
//!   with one thread each, or as one `verify_batch` call (exact or combined checks);
//! - `msm_32x16n`: the chunking proof's 32 MSMs of 16n points with 8-bit scalars over
//!   shared bases: this crate's bucket MSM, the 4-bit full-width baseline (64 windows),
//!   blst with 8-bit and 255-bit scalars, and one constant-time multiplication per point.
//!
//! `cargo bench -p nidkg --bench nidkg_json [-- quick] [skip-rounds] [n=K]` (`quick`:
//! fewer samples; `skip-rounds`: no DKG-round rows; `n=K`: size K only).

mod common;

use common::{SmallScalarBatch, Threads, blst_msm_one_thread, blst_msm_threaded, from_blst, ops};
use ic_bls12_381::{G1Projective, Scalar};
use nidkg::msm::{msm_4bit_full_width, msm_naive, msm_shared_bases_u8};
use nidkg::params::NUM_ZK_REPETITIONS;
use nidkg::{
    Checks, DealingFile, DealingInput, PhaseTimes, ThresholdKind, verify_batch, verify_with,
};
use rayon::prelude::*;
use serde::Serialize;
use std::time::{Duration, Instant};

#[derive(Serialize)]
struct Row {
    bench: &'static str,
    variant: String,
    n: usize,
    t: Option<usize>,
    threads: String,
    samples: usize,
    median_ms: f64,
    min_ms: f64,
    /// Process CPU time (all threads) per run, median.
    cpu_median_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    phases_median_ms: Option<Phases>,
}

#[derive(Serialize)]
struct Phases {
    deserialize: f64,
    integrity: f64,
    chunking: f64,
    sharing: f64,
}

/// A named MSM implementation and the threads it runs on.
type Variant<'a> = (&'static str, Threads, Box<dyn Fn() + Sync + 'a>);

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// CPU time of the whole process (all threads): on a shared machine, what the work
/// cost regardless of how long other processes held the cores.
fn process_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

thread_local! {
    static CPU_SAMPLES: std::cell::RefCell<Vec<Duration>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` once to warm up, then until `budget` has passed and at least `min` samples.
/// Returns wall times; the process CPU times of the same runs go to `CPU_SAMPLES`.
fn sample<T>(min: usize, budget: Duration, mut f: impl FnMut() -> T) -> Vec<Duration> {
    std::hint::black_box(f());
    let start = Instant::now();
    let mut out = Vec::new();
    let mut cpu = Vec::new();
    while out.len() < min || start.elapsed() < budget {
        let c = process_cpu_time();
        let t = Instant::now();
        std::hint::black_box(f());
        out.push(t.elapsed());
        cpu.push(process_cpu_time() - c);
    }
    CPU_SAMPLES.with(|s| *s.borrow_mut() = cpu);
    out
}

fn last_cpu_median_ms() -> f64 {
    CPU_SAMPLES.with(|s| ms(median(s.borrow().clone())))
}

fn emit(row: Row) {
    println!("{}", serde_json::to_string(&row).expect("serialisable"));
}

fn timing_row(
    bench: &'static str,
    variant: String,
    n: usize,
    t: Option<usize>,
    threads: String,
    samples: Vec<Duration>,
) {
    let min = *samples.iter().min().expect("samples");
    let count = samples.len();
    emit(Row {
        bench,
        variant,
        n,
        t,
        threads,
        samples: count,
        median_ms: ms(median(samples)),
        min_ms: ms(min),
        cpu_median_ms: last_cpu_median_ms(),
        phases_median_ms: None,
    });
}

/// Parsed dealing files and their element streams, for `verify_batch`.
fn batch_inputs(files: &[Vec<u8>]) -> Vec<(DealingFile, Vec<u8>)> {
    files
        .iter()
        .map(|f| {
            let file = DealingFile::parse(f).expect("dealing file");
            let (_, _, stream) = nidkg::ic_cbor::dealing_stream(&file.dealing).expect("stream");
            (file, stream)
        })
        .collect()
}

/// `verify_batch` of every prepared dealing; every one must be accepted.
fn verify_all(prepared: &[(DealingFile, Vec<u8>)], threads: Threads, checks: Checks) {
    let inputs: Vec<DealingInput<'_>> = prepared
        .iter()
        .map(|(f, stream)| DealingInput {
            receiver_keys: &f.receiver_keys,
            t: f.t,
            epoch: f.epoch,
            associated_data: &f.associated_data,
            stream,
        })
        .collect();
    let report = common::run_on(threads, || verify_batch(&ops(threads), &inputs, checks));
    assert!(report.verdicts.iter().all(Result::is_ok), "honest dealings");
}

/// How long each measurement samples.
#[derive(Clone, Copy)]
struct Sampling {
    min_samples: usize,
    budget: Duration,
    /// Samples of a whole DKG round.
    round_samples: usize,
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let skip_rounds = std::env::args().any(|a| a == "skip-rounds");
    let (min_samples, budget) = if quick {
        (3, Duration::from_millis(300))
    } else {
        (10, Duration::from_secs(3))
    };
    // `n=K` measures one size only.
    let only: Option<usize> = std::env::args().find_map(|a| a.strip_prefix("n=")?.parse().ok());
    let sizes: Vec<usize> = [13usize, 28, 40]
        .into_iter()
        .filter(|n| only.is_none_or(|k| k == *n))
        .collect();
    let sampling = Sampling {
        min_samples,
        budget,
        // A round verifies 2n dealings (seconds at n = 40): fewer samples.
        round_samples: if quick { 1 } else { 3 },
    };
    for &n in &sizes {
        bench_dealings(n, sampling);
    }
    for &n in &sizes {
        bench_msm(n, sampling);
    }
    if !skip_rounds {
        for &n in &sizes {
            bench_round(n, sampling);
        }
    }
}

/// `create`, `verify` and `verify_combined` rows for one dealing at each threshold.
fn bench_dealings(n: usize, s: Sampling) {
    let keys = common::receivers(n, n as u64);
    for kind in [ThresholdKind::High, ThresholdKind::Low] {
        let t = kind.threshold(n);
        let create = sample(s.min_samples.min(3), s.budget, || {
            common::dealing_file(&keys, kind, 1)
        });
        timing_row("create", kind.name().into(), n, Some(t), "1".into(), create);
        let file = common::dealing_file(&keys, kind, 0);
        for threads in [Threads::One, Threads::All] {
            bench_verify(&file, kind, n, threads, s);
        }
        let prepared = batch_inputs(std::slice::from_ref(&file));
        for threads in [Threads::One, Threads::All] {
            let samples = sample(s.min_samples, s.budget, || {
                verify_all(&prepared, threads, Checks::Combined)
            });
            timing_row(
                "verify_combined",
                kind.name().into(),
                n,
                Some(t),
                threads.label(),
                samples,
            );
        }
    }
}

/// The `verify` row of one dealing file on `threads`, with the per-phase medians.
fn bench_verify(file: &[u8], kind: ThresholdKind, n: usize, threads: Threads, s: Sampling) {
    let backend = ops(threads);
    let mut phases: Vec<PhaseTimes> = Vec::new();
    let totals = sample(s.min_samples, s.budget, || {
        let report = verify_with(&backend, file).expect("honest dealing");
        phases.push(report.phases);
        report
    });
    phases.remove(0); // the warm-up run
    let pick = |f: fn(&PhaseTimes) -> Duration| ms(median(phases.iter().map(f).collect()));
    let min = *totals.iter().min().expect("samples");
    emit(Row {
        bench: "verify",
        variant: kind.name().into(),
        n,
        t: Some(kind.threshold(n)),
        threads: threads.label(),
        samples: totals.len(),
        median_ms: ms(median(totals)),
        min_ms: ms(min),
        cpu_median_ms: last_cpu_median_ms(),
        phases_median_ms: Some(Phases {
            deserialize: pick(|p| p.deserialize),
            integrity: pick(|p| p.integrity),
            chunking: pick(|p| p.chunking),
            sharing: pick(|p| p.sharing),
        }),
    });
}

/// The `msm_32x16n` rows at size `n`, after every implementation is checked against the
/// bucket MSM.
fn bench_msm(n: usize, s: Sampling) {
    let batch = SmallScalarBatch::new(n, 7);
    let wide = check_msm_implementations(&batch);
    let row_scalars: Vec<Vec<Scalar>> = (0..NUM_ZK_REPETITIONS)
        .map(|k| batch.row_scalars(k))
        .collect();
    let mut variants = ours_and_ic_variants(&batch, &row_scalars);
    variants.extend(blst_variants(&batch, &wide));
    for (name, threads, f) in variants {
        let samples = sample(s.min_samples, s.budget, &f);
        timing_row("msm_32x16n", name.into(), n, None, threads.label(), samples);
    }
    // One constant-time multiplication per point: slow, a single sample.
    let naive = sample(1, Duration::ZERO, || {
        for s in &row_scalars {
            std::hint::black_box(msm_naive(&batch.bases, s));
        }
    });
    timing_row(
        "msm_32x16n",
        "ic_bls12_381-ct-mul-per-point".into(),
        n,
        None,
        "1".into(),
        naive,
    );
}

/// Checks the 4-bit baseline and blst (8-bit and 255-bit scalars) against the bucket MSM
/// on every row; returns the rows widened to 255-bit scalars for blst.
fn check_msm_implementations(batch: &SmallScalarBatch) -> Vec<Vec<u8>> {
    let l = NUM_ZK_REPETITIONS;
    let reference: Vec<G1Projective> = (0..l)
        .map(|k| msm_shared_bases_u8(&batch.bases, batch.row(k)))
        .collect();
    let check = |got: Vec<G1Projective>, what: &str| {
        assert_eq!(got, reference, "{what} disagrees with the bucket MSM");
    };
    check(
        (0..l)
            .map(|k| msm_4bit_full_width(&batch.bases, &batch.row_scalars(k)))
            .collect(),
        "4-bit full width",
    );
    check(
        (0..l)
            .map(|k| from_blst(&blst_msm_one_thread(&batch.blst_bases, batch.row(k), 8)))
            .collect(),
        "blst 8-bit",
    );
    let wide: Vec<Vec<u8>> = (0..l).map(|k| common::widen(batch.row(k))).collect();
    check(
        (0..l)
            .map(|k| from_blst(&blst_msm_threaded(&batch.blst_bases, &wide[k], 255)))
            .collect(),
        "blst 255-bit",
    );
    wide
}

/// This crate's bucket MSM and the 4-bit full-width baseline, on one thread and on all.
fn ours_and_ic_variants<'a>(
    batch: &'a SmallScalarBatch,
    row_scalars: &'a [Vec<Scalar>],
) -> Vec<Variant<'a>> {
    let l = NUM_ZK_REPETITIONS;
    vec![
        (
            "nidkg-bucket-u8",
            Threads::One,
            Box::new(move || {
                for k in 0..l {
                    std::hint::black_box(msm_shared_bases_u8(&batch.bases, batch.row(k)));
                }
            }),
        ),
        (
            "nidkg-bucket-u8",
            Threads::All,
            Box::new(move || {
                (0..l).into_par_iter().for_each(|k| {
                    std::hint::black_box(msm_shared_bases_u8(&batch.bases, batch.row(k)));
                })
            }),
        ),
        (
            "ic-4bit-64-windows",
            Threads::One,
            Box::new(move || {
                for s in row_scalars {
                    std::hint::black_box(msm_4bit_full_width(&batch.bases, s));
                }
            }),
        ),
        (
            "ic-4bit-64-windows",
            Threads::All,
            Box::new(move || {
                row_scalars.par_iter().for_each(|s| {
                    std::hint::black_box(msm_4bit_full_width(&batch.bases, s));
                })
            }),
        ),
    ]
}

/// blst with 8-bit and with 255-bit (`wide`) scalars, on one thread and on its own pool.
fn blst_variants<'a>(batch: &'a SmallScalarBatch, wide: &'a [Vec<u8>]) -> Vec<Variant<'a>> {
    let l = NUM_ZK_REPETITIONS;
    vec![
        (
            "blst-8bit",
            Threads::One,
            Box::new(move || {
                for k in 0..l {
                    std::hint::black_box(blst_msm_one_thread(&batch.blst_bases, batch.row(k), 8));
                }
            }),
        ),
        (
            "blst-8bit-blst-pool",
            Threads::All,
            Box::new(move || {
                for k in 0..l {
                    std::hint::black_box(blst_msm_threaded(&batch.blst_bases, batch.row(k), 8));
                }
            }),
        ),
        (
            "blst-255bit",
            Threads::One,
            Box::new(move || {
                for w in wide {
                    std::hint::black_box(blst_msm_one_thread(&batch.blst_bases, w, 255));
                }
            }),
        ),
        (
            "blst-255bit-blst-pool",
            Threads::All,
            Box::new(move || {
                for w in wide {
                    std::hint::black_box(blst_msm_threaded(&batch.blst_bases, w, 255));
                }
            }),
        ),
    ]
}

/// The `dkg_round` rows: the 2n dealings of one round at size `n`, verified each way.
fn bench_round(n: usize, s: Sampling) {
    let round = common::round(n);
    let sequential = sample(s.round_samples, s.budget, || {
        for f in &round.files {
            verify_with(&ops(Threads::All), f).expect("honest dealing");
        }
    });
    timing_row(
        "dkg_round",
        "sequential-dealings-rayon-inside".into(),
        n,
        None,
        Threads::All.label(),
        sequential,
    );
    let spread = sample(s.round_samples, s.budget, || {
        round.files.par_iter().for_each(|f| {
            verify_with(&ops(Threads::One), f).expect("honest dealing");
        })
    });
    timing_row(
        "dkg_round",
        "dealings-over-threads-1t-each".into(),
        n,
        None,
        Threads::All.label(),
        spread,
    );
    bench_round_batches(&round.files, n, s);
    let one = sample(1, Duration::ZERO, || {
        for f in &round.files {
            verify_with(&ops(Threads::One), f).expect("honest dealing");
        }
    });
    timing_row(
        "dkg_round",
        "sequential-1t".into(),
        n,
        None,
        "1".into(),
        one,
    );
}

/// A round's dealings as one `verify_batch` call, exact and combined checks, on all
/// threads and on one.
fn bench_round_batches(files: &[Vec<u8>], n: usize, s: Sampling) {
    let prepared = batch_inputs(files);
    for (variant, checks) in [
        ("one-batch-exact", Checks::Exact),
        ("one-batch-combined", Checks::Combined),
    ] {
        for threads in [Threads::All, Threads::One] {
            let samples = sample(s.round_samples, s.budget, || {
                verify_all(&prepared, threads, checks)
            });
            timing_row(
                "dkg_round",
                variant.into(),
                n,
                None,
                threads.label(),
                samples,
            );
        }
    }
}
