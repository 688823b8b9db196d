//! GPU-vs-CPU bench runner (`harness = false`), run on the GPU machine by
//! `gpu-crypto/device/run.sh`. Every GPU result is compared with the CPU's before a
//! figure is printed; the CPU side uses every host core (rayon) in the same run.
//!
//! Prints, last, a table: decompression and SHA-256 throughput per batch size, the
//! crossover batch size per operation, the 448-point end-to-end latency, 2^20-point
//! decompression rate, and SHA-256 over device-resident chunks and from pinned host
//! memory against the measured host-to-device bandwidth.
//! `GPU_BENCH_QUICK=1` shrinks every size (a smoke run).

mod timing;

use gpu_crypto::gpu::bench::{
    ShaKernel, ShaThroughput, decompress_breakdown, decompress_kernels, fp_chain_latency,
    h2d_bandwidth, sha256_device_resident, sha256_from_pinned,
};
use gpu_crypto::gpu::{DecompressKernel, GpuBackend, LATENCY_KERNEL_MAX_POINTS};
use gpu_crypto::{G1Affine, G1Projective};
use group::Group;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use std::time::Instant;
use timing::{time, time_spread};

const IC_PREFIX: &[u8] = b"\x0eic-state-chunk";

fn random_points(n: usize) -> Vec<[u8; 48]> {
    let per = n.div_ceil(64).max(1);
    let mut all: Vec<[u8; 48]> = (0..64u64)
        .into_par_iter()
        .flat_map_iter(|t| {
            let mut r = ChaCha20Rng::seed_from_u64(t);
            let step = G1Projective::random(&mut r);
            let mut acc = G1Projective::random(&mut r);
            let proj: Vec<G1Projective> = (0..per)
                .map(|_| {
                    acc += step;
                    acc
                })
                .collect();
            let mut aff = vec![G1Affine::identity(); per];
            G1Projective::batch_normalize(&proj, &mut aff);
            aff.into_iter().map(|p| p.to_compressed())
        })
        .collect();
    all.truncate(n);
    all
}

// The CPU side is the crate's own CPU path (rayon over every core).
use gpu_crypto::cpu::{g1_decompress as cpu_decompress, sha256_prefixed as cpu_sha};

struct Row {
    op: &'static str,
    n: usize,
    gpu_s: f64,
    cpu_s: f64,
    unit: &'static str,
    per_item: f64,
}

fn crossover(rows: &[Row], op: &str) -> String {
    let r: Vec<&Row> = rows.iter().filter(|r| r.op == op).collect();
    match r.iter().position(|r| r.gpu_s < r.cpu_s) {
        None => "GPU never faster in the sizes measured".into(),
        Some(0) => format!("GPU faster from the smallest size measured ({})", r[0].n),
        Some(i) => format!(
            "between {} (CPU faster) and {} (GPU faster)",
            r[i - 1].n,
            r[i].n
        ),
    }
}

/// SHA-256 kernel variants (the cp.async pipeline's depth and wait) against the production
/// kernel, over the same device-resident chunks; every digest is checked.
fn sha_kernel_variants(gpu: &GpuBackend, chunks: usize) -> anyhow::Result<()> {
    let variants = [
        (
            ShaKernel::Production,
            "production (3 stages, waits for blocks k and k+1)",
        ),
        (
            ShaKernel::Defines("#define SHA256_WAIT_CURRENT_BLOCK\n"),
            "3 stages, waits for block k only",
        ),
        (
            ShaKernel::Defines("#define SHA256_STAGES 4\n#define SHA256_WAIT_CURRENT_BLOCK\n"),
            "4 stages, waits for block k only",
        ),
        (
            ShaKernel::Defines("#define SHA256_STAGES 2\n#define SHA256_WAIT_CURRENT_BLOCK\n"),
            "2 stages, waits for block k only",
        ),
        (
            ShaKernel::RegisterPrefetch,
            "register prefetch (no cp.async)",
        ),
    ];
    print_sha_variants(gpu, &variants, chunks)
}

/// Times each SHA-256 kernel variant over `chunks` device-resident 1 MiB chunks and prints
/// it; any digest that differs from the CPU's is an error.
fn print_sha_variants(
    gpu: &GpuBackend,
    variants: &[(ShaKernel, &str)],
    chunks: usize,
) -> anyhow::Result<()> {
    for &(variant, what) in variants {
        let v = sha256_device_resident(gpu, variant, chunks, 1 << 20, IC_PREFIX, 5)
            .map_err(|e| anyhow::anyhow!("device-resident ({what}): {e}"))?;
        anyhow::ensure!(
            v.mismatches == 0,
            "device-resident ({what}): {} mismatches",
            v.mismatches
        );
        println!(
            "sha256 device-resident {} x 1 MiB, {what}: {:.2} ms median ({:.2}-{:.2}), {:.1} GB/s; all digests equal the CPU's",
            v.chunks,
            v.seconds.median * 1e3,
            v.seconds.min * 1e3,
            v.seconds.max * 1e3,
            v.gbps()
        );
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let quick = std::env::var("GPU_BENCH_QUICK").as_deref() == Ok("1");
    // GPU_BENCH_VARIANTS=0: only the production kernels (no benchmark variants).
    let variants = std::env::var("GPU_BENCH_VARIANTS").as_deref() != Ok("0");
    let threads = rayon::current_num_threads();
    let gpu = open_gpu()?;
    println!("CPU: {threads} rayon threads");
    let mut rows = Vec::new();

    // GPU_BENCH_ONLY=sha-kernels: only SHA-256 kernel variants over device-resident chunks.
    if std::env::var("GPU_BENCH_ONLY").as_deref() == Ok("sha-kernels") {
        return sha_kernel_variants(&gpu, if quick { 512 } else { 16384 });
    }

    // G1 decompression, host bytes -> host results (engine-level call).
    let max_log = if quick { 12 } else { 20 };
    let all_points = random_points(1 << max_log);
    print_fp_chains(&gpu)?;
    let (latency_448, rate_max) = bench_decompress(&gpu, &all_points, max_log, &mut rows)?;
    bench_decompress_kernels(&gpu, &all_points, max_log, variants)?;
    bench_decompress_breakdown(&gpu, &all_points)?;

    // GPU_BENCH_ONLY=decompress: stop after the decompression figures.
    if std::env::var("GPU_BENCH_ONLY").as_deref() == Ok("decompress") {
        print_rows(&rows, threads);
        print_decompress_figures(&rows, latency_448, max_log, rate_max);
        return Ok(());
    }

    bench_sha_pageable(&gpu, quick, &mut rows)?;
    let dr = bench_sha_device_resident(&gpu, quick, variants)?;
    let h2d = bench_h2d(&gpu)?;
    if !quick {
        bench_sha_device_resident_32768(&gpu)?;
    }
    let pn = bench_sha_from_pinned(&gpu, quick, h2d)?;

    print_rows(&rows, threads);
    print_decompress_figures(&rows, latency_448, max_log, rate_max);
    print_sha_figures(&rows, &dr, &pn, h2d);
    Ok(())
}

/// Opens GPU 0 and prints what it is and how its programs were loaded.
fn open_gpu() -> anyhow::Result<GpuBackend> {
    let t0 = Instant::now();
    let gpu = GpuBackend::open(0).map_err(|e| anyhow::anyhow!("GPU unusable: {e}"))?;
    println!(
        "device: {}  (open {:.2} s)",
        gpu.describe(),
        t0.elapsed().as_secs_f64()
    );
    for l in gpu.program_loads() {
        println!(
            "  program {}: {} in {:.2} s",
            l.program, l.source, l.seconds
        );
    }
    Ok(gpu)
}

/// Latency of dependent chains of field operations (one warp): what bounds small batches.
fn print_fp_chains(gpu: &GpuBackend) -> anyhow::Result<()> {
    for (name, ns) in
        fp_chain_latency(gpu, 4096, 5).map_err(|e| anyhow::anyhow!("fp chains: {e}"))?
    {
        println!("fp chain {name:<22}: {ns:>8.1} ns per dependent step");
    }
    Ok(())
}

/// End-to-end decompression, GPU against CPU, over every batch size up to 2^`max_log`;
/// returns the 448-point GPU latency and the 2^`max_log`-point GPU rate.
fn bench_decompress(
    gpu: &GpuBackend,
    all_points: &[[u8; 48]],
    max_log: u32,
    rows: &mut Vec<Row>,
) -> anyhow::Result<(f64, f64)> {
    let mut sizes: Vec<usize> = vec![
        1, 4, 16, 64, 128, 256, 448, 1024, 2048, 3072, 4096, 6144, 8192, 16384, 65536,
    ];
    // Both sides of the kernel switch.
    sizes.extend([LATENCY_KERNEL_MAX_POINTS, LATENCY_KERNEL_MAX_POINTS + 1]);
    sizes.sort_unstable();
    sizes.dedup();
    sizes.push(1 << max_log);
    sizes.retain(|&n| n <= 1 << max_log);
    let mut latency_448 = 0.0;
    let mut rate_max = 0.0;
    for &n in &sizes {
        let pts = &all_points[..n];
        let reps = (65536 / n).clamp(2, 50);
        let (g, c) = bench_decompress_batch(gpu, pts, reps)?;
        if n == 448 {
            latency_448 = g;
            decompress_spread_448(gpu, pts);
        }
        if n == 1 << max_log {
            rate_max = n as f64 / g;
        }
        rows.push(Row {
            op: "decompress",
            n,
            gpu_s: g,
            cpu_s: c,
            unit: "points/s",
            per_item: n as f64 / g,
        });
    }
    Ok((latency_448, rate_max))
}

/// One batch size end to end, GPU and CPU, results compared; around the kernel switch,
/// the other kernel too. Returns the GPU and CPU seconds.
fn bench_decompress_batch(
    gpu: &GpuBackend,
    pts: &[[u8; 48]],
    reps: usize,
) -> anyhow::Result<(f64, f64)> {
    let n = pts.len();
    let (g, gout) = time(reps, || gpu.g1_decompress(pts));
    let gout = gout.map_err(|e| anyhow::anyhow!("GPU decompress: {e}"))?;
    let (c, cout) = time(if n >= 65536 { 1 } else { reps }, || cpu_decompress(pts));
    let mismatches = gout.iter().zip(&cout).filter(|(g, c)| g != c).count();
    anyhow::ensure!(mismatches == 0, "decompress n={n}: {mismatches} mismatches");
    println!(
        "decompress n={n:>8}: GPU {:>10.3} ms ({:>11.0} pts/s)  CPU {:>10.3} ms ({:>9.0} pts/s)  all {n} equal  [{:?} kernel]",
        g * 1e3,
        n as f64 / g,
        c * 1e3,
        n as f64 / c,
        DecompressKernel::for_batch(n)
    );
    // Around the switch, the other kernel end to end too (the switch's evidence).
    if (448..=16384).contains(&n) {
        let other = match DecompressKernel::for_batch(n) {
            DecompressKernel::Latency => DecompressKernel::Throughput,
            DecompressKernel::Throughput => DecompressKernel::Latency,
        };
        let (o, oout) = time(reps, || gpu.g1_decompress_with(pts, other));
        let oout = oout.map_err(|e| anyhow::anyhow!("GPU decompress ({other:?}): {e}"))?;
        anyhow::ensure!(
            oout == cout,
            "decompress n={n} ({other:?}): differs from the CPU"
        );
        println!(
            "decompress n={n:>8}: GPU {:>10.3} ms with the {other:?} kernel instead (switch at {LATENCY_KERNEL_MAX_POINTS}); all {n} equal",
            o * 1e3
        );
    }
    Ok((g, c))
}

/// The spread of the target figure (448 points end to end), not only its median.
fn decompress_spread_448(gpu: &GpuBackend, pts: &[[u8; 48]]) {
    let [lo, med, hi] = time_spread(500, || {
        let _ = gpu.g1_decompress(pts);
    });
    println!(
        "decompress n=     448: GPU end to end over 500 calls: fastest {:.3} ms, median {:.3} ms, slowest {:.3} ms",
        lo * 1e3,
        med * 1e3,
        hi * 1e3
    );
}

/// Kernel-only decompression time on device-resident points: the production kernel
/// and the benchmark variants (other formulas, other register budgets), each checked.
fn bench_decompress_kernels(
    gpu: &GpuBackend,
    all_points: &[[u8; 48]],
    max_log: u32,
    variants: bool,
) -> anyhow::Result<()> {
    for &n in &[32usize, 448, 2048, 4096, 8192, 16384, 1 << max_log] {
        if n > all_points.len() {
            continue;
        }
        let reps = if n >= 1 << 20 { 5 } else { 20 };
        for k in decompress_kernels(gpu, &all_points[..n], reps, variants)
            .map_err(|e| anyhow::anyhow!("decompression kernels: {e}"))?
        {
            anyhow::ensure!(
                k.mismatches == 0,
                "{} n={n}: {} items differ from the CPU",
                k.function,
                k.mismatches
            );
            println!(
                "decompress kernel {:<32} n={n:>8}: {:>9.3} ms median ({:.3}-{:.3}), {:>11.0} pts/s; all {n} equal the CPU",
                k.function,
                k.seconds.median * 1e3,
                k.seconds.min * 1e3,
                k.seconds.max * 1e3,
                k.points_per_second()
            );
        }
    }
    Ok(())
}

/// Where a single-segment decompression's time goes, stage by stage.
fn bench_decompress_breakdown(gpu: &GpuBackend, all_points: &[[u8; 48]]) -> anyhow::Result<()> {
    for &n in &[448usize, 65536] {
        if n > all_points.len() {
            continue;
        }
        let b = decompress_breakdown(gpu, &all_points[..n], 20)
            .map_err(|e| anyhow::anyhow!("decompress breakdown: {e}"))?;
        println!(
            "decompress breakdown n={n:>6} (medians, ms): stage {:.3}  upload {:.3}  poison {:.3}  kernel {:.3}  download {:.3}  decode {:.3}  | sequential total {:.3}; all {n} equal the CPU",
            b.stage.median * 1e3,
            b.upload.median * 1e3,
            b.poison.median * 1e3,
            b.kernel.median * 1e3,
            b.download.median * 1e3,
            b.decode.median * 1e3,
            b.total.median * 1e3,
        );
    }
    Ok(())
}

/// `chunks` pseudo-random 1 MiB chunks (xorshift, one seed per chunk).
fn random_chunks(chunks: usize) -> Vec<Vec<u8>> {
    (0..chunks)
        .into_par_iter()
        .map(|i| {
            let mut x = (i as u64 + 7).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let mut v = vec![0u8; 1 << 20];
            for w in v.chunks_exact_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                w.copy_from_slice(&x.to_le_bytes());
            }
            v
        })
        .collect()
}

/// SHA-256 of 1 MiB chunks from ordinary (pageable) host memory, engine-level call.
fn bench_sha_pageable(gpu: &GpuBackend, quick: bool, rows: &mut Vec<Row>) -> anyhow::Result<()> {
    let max_chunks = if quick { 64 } else { 4096 };
    let data = random_chunks(max_chunks);
    let refs: Vec<&[u8]> = data.iter().map(|c| c.as_slice()).collect();
    for &n in &[1usize, 4, 16, 64, 128, 256, 512, 1024, 4096] {
        if n > max_chunks {
            continue;
        }
        let reps = if n >= 1024 { 3 } else { 5 };
        let (g, gout) = time(reps, || gpu.sha256_prefixed(IC_PREFIX, &refs[..n]));
        let gout = gout.map_err(|e| anyhow::anyhow!("GPU sha256: {e}"))?;
        let (c, cout) = time(reps, || cpu_sha(IC_PREFIX, &refs[..n]));
        anyhow::ensure!(gout == cout, "sha256 n={n}: digests differ");
        let gb = (n << 20) as f64 / 1e9;
        println!(
            "sha256 x 1 MiB n={n:>5}: GPU {:>9.2} ms ({:>6.2} GB/s)  CPU {:>9.2} ms ({:>6.2} GB/s)  all {n} equal",
            g * 1e3,
            gb / g,
            c * 1e3,
            gb / c
        );
        rows.push(Row {
            op: "sha256",
            n,
            gpu_s: g,
            cpu_s: c,
            unit: "GB/s",
            per_item: gb / g,
        });
    }
    Ok(())
}

/// The SHA-256 kernel over device-resident chunks: the benchmark variants (when
/// `variants`), then the production kernel, whose result is returned.
fn bench_sha_device_resident(
    gpu: &GpuBackend,
    quick: bool,
    variants: bool,
) -> anyhow::Result<ShaThroughput> {
    let resident_chunks = if quick { 512 } else { 16384 };
    let sha_variants = if variants {
        &[
            (ShaKernel::AluAdds, "all adds on the ALU"),
            (ShaKernel::ShrOnFma, "schedule shifts on the FMA pipe too"),
            (
                ShaKernel::RegisterPrefetch,
                "register prefetch (no cp.async)",
            ),
        ][..]
    } else {
        &[][..]
    };
    print_sha_variants(gpu, sha_variants, resident_chunks)?;
    let dr = sha256_device_resident(
        gpu,
        ShaKernel::Production,
        resident_chunks,
        1 << 20,
        IC_PREFIX,
        5,
    )
    .map_err(|e| anyhow::anyhow!("device-resident: {e}"))?;
    anyhow::ensure!(
        dr.mismatches == 0,
        "device-resident: {} mismatches",
        dr.mismatches
    );
    println!(
        "sha256 device-resident {} x 1 MiB: {:.2} ms median ({:.2}-{:.2}), {:.1} GB/s; all digests equal the CPU's",
        dr.chunks,
        dr.seconds.median * 1e3,
        dr.seconds.min * 1e3,
        dr.seconds.max * 1e3,
        dr.gbps()
    );
    Ok(dr)
}

/// Host-to-device bandwidth from pinned memory (GB/s), the bound for streamed hashing.
fn bench_h2d(gpu: &GpuBackend) -> anyhow::Result<f64> {
    let (h2d, h2d_t) = h2d_bandwidth(gpu, 1 << 30, 5).map_err(|e| anyhow::anyhow!("h2d: {e}"))?;
    println!(
        "H2D pinned 1 GiB copies: {:.2} GB/s (median {:.2} ms, {:.2}-{:.2})",
        h2d,
        h2d_t.median * 1e3,
        h2d_t.min * 1e3,
        h2d_t.max * 1e3
    );
    Ok(h2d)
}

/// The production SHA-256 kernel over 32768 device-resident chunks.
fn bench_sha_device_resident_32768(gpu: &GpuBackend) -> anyhow::Result<()> {
    let big = sha256_device_resident(gpu, ShaKernel::Production, 32768, 1 << 20, IC_PREFIX, 3)
        .map_err(|e| anyhow::anyhow!("device-resident 32768: {e}"))?;
    anyhow::ensure!(
        big.mismatches == 0,
        "device-resident 32768: {} mismatches",
        big.mismatches
    );
    println!(
        "sha256 device-resident {} x 1 MiB (two warps per scheduler): {:.2} ms median, {:.1} GB/s; all digests equal the CPU's",
        big.chunks,
        big.seconds.median * 1e3,
        big.gbps()
    );
    Ok(())
}

/// SHA-256 streamed from pinned host memory, against the H2D bandwidth `h2d` (GB/s).
fn bench_sha_from_pinned(gpu: &GpuBackend, quick: bool, h2d: f64) -> anyhow::Result<ShaThroughput> {
    let pinned_chunks = if quick { 256 } else { 16384 };
    let pn = sha256_from_pinned(gpu, pinned_chunks, 1 << 20, IC_PREFIX, 256, 16, 3)
        .map_err(|e| anyhow::anyhow!("from pinned: {e}"))?;
    anyhow::ensure!(
        pn.mismatches == 0,
        "from pinned: {} mismatches",
        pn.mismatches
    );
    println!(
        "sha256 from pinned host {} x 1 MiB: {:.2} ms median, {:.2} GB/s = {:.0}% of H2D; all digests equal the CPU's",
        pn.chunks,
        pn.seconds.median * 1e3,
        pn.gbps(),
        100.0 * pn.gbps() / h2d
    );
    Ok(pn)
}

/// The end of the figure table: the SHA-256 figures.
fn print_sha_figures(rows: &[Row], dr: &ShaThroughput, pn: &ShaThroughput, h2d: f64) {
    println!(
        "| sha256 (1 MiB chunks) crossover | {} |",
        crossover(rows, "sha256")
    );
    println!(
        "| sha256 device-resident {} x 1 MiB | {:.1} GB/s |",
        dr.chunks,
        dr.gbps()
    );
    println!(
        "| sha256 from pinned host {} x 1 MiB | {:.2} GB/s |",
        pn.chunks,
        pn.gbps()
    );
    println!("| H2D bandwidth (pinned, 1 GiB) | {:.2} GB/s |", h2d);
    println!("| from-pinned / H2D | {:.0}% |", 100.0 * pn.gbps() / h2d);
}

/// The GPU-vs-CPU table of every row measured.
fn print_rows(rows: &[Row], threads: usize) {
    println!();
    println!("| operation | batch | GPU | CPU ({threads} threads) | GPU/CPU speed |");
    println!("|---|---|---|---|---|");
    for r in rows {
        let (g, c) = if r.unit == "GB/s" {
            (
                format!("{:.2} GB/s", r.per_item),
                format!("{:.2} GB/s", (r.n << 20) as f64 / 1e9 / r.cpu_s),
            )
        } else {
            (
                format!("{:.0} pts/s", r.per_item),
                format!("{:.0} pts/s", r.n as f64 / r.cpu_s),
            )
        };
        println!(
            "| {} | {} | {} | {} | {:.2}x |",
            r.op,
            r.n,
            g,
            c,
            r.cpu_s / r.gpu_s
        );
    }
}

/// The start of the figure table: the decompression figures.
fn print_decompress_figures(rows: &[Row], latency_448: f64, max_log: u32, rate_max: f64) {
    println!();
    println!("| figure | value |");
    println!("|---|---|");
    println!(
        "| decompress crossover | {} |",
        crossover(rows, "decompress")
    );
    println!(
        "| decompress 448 points, host bytes -> host results | {:.3} ms |",
        latency_448 * 1e3
    );
    println!(
        "| decompress 2^{max_log} points | {:.0} points/s |",
        rate_max
    );
}
