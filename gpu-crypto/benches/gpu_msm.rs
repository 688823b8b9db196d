//! GPU-vs-CPU G1 MSM bench runner (`harness = false`), run on the GPU machine by
//! `gpu-crypto/device/msm/run.sh`. End to end from `ic_bls12_381` types on both sides:
//! the GPU path (`GpuBackend::g1_msm_batch`) and the CPU path (`cpu::g1_msm_batch`: blst's
//! multi-threaded Pippenger, or one single-threaded Pippenger per MSM over rayon for
//! batches), in the same process. Every GPU result is compared with the CPU's before its
//! figure is printed. Prints, last, a table with the ratios and the crossover.
//! `GPU_BENCH_QUICK=1` shrinks the sizes (a smoke run); `GPU_MSM_BENCH_SWEEP=1` also times
//! several window widths (via GPU_CRYPTO_MSM_WINDOW_BITS).

use ff::Field;
use gpu_crypto::cuda::GpuBackend;
use gpu_crypto::{G1Affine, G1Projective, MsmInput, Scalar, cpu};
use group::Group;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Median of `reps` timed calls after one untimed warm-up call (whose result is returned).
fn time<T>(reps: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let out = f();
    let mut samples = Vec::new();
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        let _ = f();
        samples.push(t.elapsed().as_secs_f64());
    }
    (median(samples), out)
}

/// Distinct random points, generated in parallel chunks (start + j * step per chunk).
fn random_points(n: usize, seed: u64) -> Vec<G1Affine> {
    let chunk = 4096;
    let mut out = vec![G1Affine::identity(); n];
    out.par_chunks_mut(chunk).enumerate().for_each(|(c, dst)| {
        let mut rng = ChaCha20Rng::seed_from_u64(seed ^ ((c as u64) << 20));
        let step = G1Projective::random(&mut rng);
        let mut acc = G1Projective::random(&mut rng);
        let proj: Vec<G1Projective> = (0..dst.len())
            .map(|_| {
                acc += step;
                acc
            })
            .collect();
        G1Projective::batch_normalize(&proj, dst);
    });
    out
}

fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; n];
    out.par_chunks_mut(4096).enumerate().for_each(|(c, dst)| {
        let mut rng = ChaCha20Rng::seed_from_u64(seed ^ 0x5ca1ab1e ^ ((c as u64) << 20));
        for s in dst {
            *s = Scalar::random(&mut rng);
        }
    });
    out
}

struct Row {
    what: String,
    gpu_ms: f64,
    cpu_ms: f64,
}

fn compare(
    gpu: &GpuBackend,
    msms: &[MsmInput<'_>],
    gpu_reps: usize,
    cpu_reps: usize,
) -> (f64, f64) {
    let (cpu_s, want) = time(cpu_reps, || cpu::g1_msm_batch(msms));
    let (gpu_s, got) = time(gpu_reps, || gpu.g1_msm_batch(msms));
    let got = got.unwrap_or_else(|e| panic!("GPU MSM failed: {e}"));
    assert_eq!(got, want, "GPU MSM differs from the CPU path");
    (gpu_s * 1e3, cpu_s * 1e3)
}

/// One more call with GPU_CRYPTO_MSM_PROFILE=1: prints the host staging / GPU / combine split.
fn profile_once(gpu: &GpuBackend, msms: &[MsmInput<'_>]) {
    // SAFETY: as in set_window.
    unsafe { std::env::set_var("GPU_CRYPTO_MSM_PROFILE", "1") };
    let _ = gpu.g1_msm_batch(msms);
    // SAFETY: as in set_window.
    unsafe { std::env::remove_var("GPU_CRYPTO_MSM_PROFILE") };
}

fn set_window(c: Option<u32>) {
    // SAFETY: the bench's main thread is the only one reading or writing the environment
    // (rayon's workers never touch it).
    unsafe {
        match c {
            Some(c) => std::env::set_var("GPU_CRYPTO_MSM_WINDOW_BITS", c.to_string()),
            None => std::env::remove_var("GPU_CRYPTO_MSM_WINDOW_BITS"),
        }
    }
}

fn main() {
    let quick = std::env::var("GPU_BENCH_QUICK").as_deref() == Ok("1");
    let sweep = std::env::var("GPU_MSM_BENCH_SWEEP").as_deref() == Ok("1");
    let gpu = match GpuBackend::open(0) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("skipped: no usable GPU ({e})");
            return;
        }
    };
    println!(
        "device: {}; host threads (rayon): {}",
        gpu.describe(),
        rayon::current_num_threads()
    );
    let max_log = if quick { 16 } else { 22 };
    let t = Instant::now();
    let all_points = random_points(1 << max_log, 1);
    let all_scalars = random_scalars(1 << max_log, 2);
    println!(
        "inputs: 2^{max_log} points and scalars in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let mut rows = Vec::new();
    // Crossover: the smallest single-MSM size at which the GPU beats the CPU path.
    let mut crossover = None;
    for log in 6..=14 {
        let n = 1usize << log;
        let m = [MsmInput {
            points: &all_points[..n],
            scalars: &all_scalars[..n],
        }];
        let (g, c) = compare(&gpu, &m, 15, 15);
        println!("crossover probe 2^{log}: gpu {g:.3} ms, cpu {c:.3} ms");
        if crossover.is_none() && g < c {
            crossover = Some(n);
        }
    }
    for log in [12usize, 16, 18, 20, 22] {
        if log > max_log {
            continue;
        }
        let n = 1usize << log;
        let m = [MsmInput {
            points: &all_points[..n],
            scalars: &all_scalars[..n],
        }];
        let (gpu_reps, cpu_reps) = match log {
            ..=16 => (10, 5),
            17..=20 => (5, 2),
            _ => (3, 1),
        };
        let (g, c) = compare(&gpu, &m, gpu_reps, cpu_reps);
        println!(
            "2^{log}: gpu {g:.2} ms, cpu {c:.2} ms, cpu/gpu {:.1}x",
            c / g
        );
        profile_once(&gpu, &m);
        rows.push(Row {
            what: format!("1 MSM of 2^{log}"),
            gpu_ms: g,
            cpu_ms: c,
        });
    }
    // NI-DKG shape: 32 MSMs of n*16 points for n = 13, 28 (448 points), 40.
    for per in [13 * 16, 448, 40 * 16] {
        let msms: Vec<MsmInput<'_>> = (0..32)
            .map(|i| MsmInput {
                points: &all_points[i * per..(i + 1) * per],
                scalars: &all_scalars[i * per..(i + 1) * per],
            })
            .collect();
        let (g, c) = compare(&gpu, &msms, 30, 30);
        println!(
            "32 x {per}: gpu {g:.3} ms, cpu {c:.3} ms, cpu/gpu {:.1}x",
            c / g
        );
        profile_once(&gpu, &msms);
        rows.push(Row {
            what: format!("32 MSMs x {per}"),
            gpu_ms: g,
            cpu_ms: c,
        });
    }
    if sweep {
        println!("window sweep (GPU only, compared with the CPU result once):");
        for (what, log, batch) in [
            ("2^16", 16usize, 1usize),
            ("2^20", 20, 1),
            ("32x448", 0, 32),
        ] {
            if log > max_log {
                continue;
            }
            let per = if batch == 1 { 1usize << log } else { 448 };
            let msms: Vec<MsmInput<'_>> = (0..batch)
                .map(|i| MsmInput {
                    points: &all_points[i * per..(i + 1) * per],
                    scalars: &all_scalars[i * per..(i + 1) * per],
                })
                .collect();
            let want = cpu::g1_msm_batch(&msms);
            // Narrow windows at large n make buckets of thousands of points: skip them.
            let widths: &[u32] = match log {
                0 => &[6, 7, 8, 9, 10, 11, 12],
                16 => &[10, 11, 12, 13, 14, 15, 16],
                _ => &[13, 14, 15, 16],
            };
            for &c in widths {
                set_window(Some(c));
                let (s, got) = time(5, || gpu.g1_msm_batch(&msms));
                assert_eq!(got.expect("GPU MSM"), want, "{what} c={c}");
                println!("  {what} c={c}: {:.3} ms", s * 1e3);
            }
            set_window(None);
        }
    }
    println!();
    println!(
        "| MSM (end to end from ic_bls12_381 types) | GPU ms | CPU ms (blst, all host cores) | CPU/GPU |"
    );
    println!("|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {:.3} | {:.3} | {:.1}x |",
            r.what,
            r.gpu_ms,
            r.cpu_ms,
            r.cpu_ms / r.gpu_ms
        );
    }
    match crossover {
        Some(n) => {
            println!("crossover: GPU faster from {n} points (single MSM, powers of two 2^6..2^14)")
        }
        None => println!("crossover: GPU not faster up to 2^14 points"),
    }
}
