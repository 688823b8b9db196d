//! Side-by-side G1 MSM bench (`harness = false`), run on the GPU machine by
//! `gpu-crypto/device/msm/run.sh`, all in one process run on the same inputs:
//! * this project's GPU MSM (`GpuBackend::g1_msm_batch`), end to end from `ic_bls12_381`
//!   points and scalars in pageable memory to a `G1Projective`;
//! * sppark's GPU MSM, through the peer driver `sppark_peer` (gpu-crypto/device/msm/
//!   sppark_peer.cu, built on the device by build_peer.sh), given the same points as blst
//!   affines and the same scalars in a file, timed inside the driver from pinned host
//!   buffers (its best mode in ../shared/anchors-h200.md); `MSM_PEER_BIN` names it;
//! * blst's multi-threaded Pippenger (`<[blst_p1_affine] as MultiPoint>::mult`, what
//!   `p1_affines::mult` calls) on all host cores, on the same points already converted;
//! * the crate's CPU path (`cpu::g1_msm_batch`, end to end from `ic_bls12_381` types), for
//!   the crossover;
//! * the chunking proof's batch (32 MSMs over one set of 16n bases with 8-bit scalars, n =
//!   13, 28, 40): ours (`GpuBackend::g1_msm_shared_u8`), sppark called once per MSM with
//!   the scalars widened to 32 bytes, blst with 8-bit scalars, and the IC's algorithm (a
//!   4-bit Pippenger over the full scalar width, `nidkg::msm::msm_4bit_full_width`) with
//!   one MSM per rayon task.
//!
//! Every result is compared with blst's (or the CPU path's) before its time is printed.
//! Prints, last, the table with the ratios. `GPU_BENCH_QUICK=1` shrinks the sizes;
//! `GPU_MSM_BENCH_SWEEP=1` also times other window widths and the encoded staging.

mod timing;

use blst::{MultiPoint, blst_p1, blst_p1_affine};
use ff::Field;
use gpu_crypto::gpu::GpuBackend;
use gpu_crypto::{G1Affine, G1Projective, MsmInput, Scalar, cpu};
use group::Group;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;
use timing::time;

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

fn to_blst(p: &G1Affine) -> blst_p1_affine {
    let bytes = p.to_uncompressed();
    let mut out = blst_p1_affine::default();
    // SAFETY: blst reads the 96 bytes of an uncompressed encoding.
    let err = unsafe { blst::blst_p1_deserialize(&mut out, bytes.as_ptr()) };
    assert_eq!(
        err,
        blst::BLST_ERROR::BLST_SUCCESS,
        "blst rejects a valid point"
    );
    out
}

fn blst_encoding(p: &blst_p1) -> [u8; 96] {
    let mut out = [0u8; 96];
    // SAFETY: blst writes 96 bytes.
    unsafe { blst::blst_p1_serialize(out.as_mut_ptr(), p) };
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Writes the sppark driver's input file: u64 n, n blst affines, then the 32-byte scalars
/// (n of them, or rows * n for `--rows`).
fn write_peer_inputs(path: &str, points: &[blst_p1_affine], scalars: &[u8]) {
    let mut f = std::io::BufWriter::with_capacity(1 << 24, std::fs::File::create(path).unwrap());
    f.write_all(&(points.len() as u64).to_le_bytes()).unwrap();
    for p in points {
        for limb in p.x.l.iter().chain(p.y.l.iter()) {
            f.write_all(&limb.to_le_bytes()).unwrap();
        }
    }
    f.write_all(scalars).unwrap();
    f.flush().unwrap();
}

struct PeerRow {
    median_ms: f64,
    min_ms: f64,
    max_ms: f64,
    result: String,
}

/// Runs the sppark driver with `args` and parses its result lines (`sppark k=v ...`).
fn run_peer_lines(bin: &str, args: &[String]) -> Vec<BTreeMap<String, String>> {
    let out = match std::process::Command::new(bin).args(args).output() {
        Ok(o) => o,
        Err(e) => {
            println!("sppark peer not run ({bin}: {e})");
            return Vec::new();
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        println!("sppark peer failed: {}", out.status);
    }
    stdout
        .lines()
        .filter(|l| l.starts_with("sppark "))
        .map(|line| {
            line.split_whitespace()
                .filter_map(|t| t.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn peer_row(kv: &BTreeMap<String, String>) -> PeerRow {
    let num = |k: &str| {
        kv.get(k)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    PeerRow {
        median_ms: num("median_ms"),
        min_ms: num("min_ms"),
        max_ms: num("max_ms"),
        result: kv.get("result").cloned().unwrap_or_default(),
    }
}

/// sppark over the first 2^log entries for each of `logs` (log2 -> row).
fn run_peer(bin: &str, inputs: &str, reps: usize, logs: &[usize]) -> BTreeMap<usize, PeerRow> {
    let mut args = vec![inputs.to_string(), reps.to_string()];
    args.extend(logs.iter().map(|l| l.to_string()));
    run_peer_lines(bin, &args)
        .iter()
        .filter_map(|kv| Some((kv.get("log2")?.parse().ok()?, peer_row(kv))))
        .collect()
}

/// sppark called once per row over shared bases: the inputs hold the bases and `rows`
/// scalar rows; the row's result is every MSM's encoding, comma-separated.
fn run_peer_shared(bin: &str, inputs: &str, rows: usize, reps: usize) -> Option<PeerRow> {
    let args = [
        "--rows".to_string(),
        rows.to_string(),
        inputs.to_string(),
        reps.to_string(),
    ];
    run_peer_lines(bin, &args).first().map(peer_row)
}

/// An 8-bit scalar as sppark's 32-byte little-endian integer.
fn u256_le(b: u8) -> [u8; 32] {
    let mut out = [0u8; 32];
    out[0] = b;
    out
}

/// The chunking proof's count of MSMs per dealing.
const SHARED_ROWS: usize = 32;

struct SharedRow {
    per: usize,
    ours: f64,
    ic: f64,
    blst: f64,
    /// The CPU path's results, encoded and comma-separated (as the peer prints them).
    want: String,
}

fn set_env(key: &str, value: Option<&str>) {
    // SAFETY: the bench's main thread is the only one reading or writing the environment
    // while this runs (rayon's workers never touch it).
    unsafe {
        match value {
            Some(v) => std::env::set_var(key, v),
            None => std::env::remove_var(key),
        }
    }
}

/// One more call with GPU_CRYPTO_MSM_PROFILE=1: prints the host/GPU time split.
fn profile_once(gpu: &GpuBackend, msms: &[MsmInput<'_>]) {
    set_env("GPU_CRYPTO_MSM_PROFILE", Some("1"));
    let _ = gpu.g1_msm_batch(msms);
    set_env("GPU_CRYPTO_MSM_PROFILE", None);
}

struct Row {
    log: usize,
    ours: f64,
    blst: f64,
    cpu_path: Option<f64>,
}

/// The inputs every MSM here draws on: 2^max_log points and scalars, and the same points
/// and scalars as blst takes them.
struct Inputs {
    points: Vec<G1Affine>,
    scalars: Vec<Scalar>,
    blst_points: Vec<blst_p1_affine>,
    scalar_bytes: Vec<u8>,
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
    let inputs = make_inputs(max_log);
    let peer_inputs =
        std::env::var("MSM_PEER_INPUTS").unwrap_or_else(|_| "/tmp/msm-peer-inputs.bin".into());
    let peer_bin = std::env::var("MSM_PEER_BIN").unwrap_or_else(|_| "./sppark_peer".into());
    let t = Instant::now();
    write_peer_inputs(&peer_inputs, &inputs.blst_points, &inputs.scalar_bytes);
    println!(
        "peer inputs written to {peer_inputs} in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let crossover = probe_crossover(&gpu, &inputs);
    let logs: Vec<usize> = [12usize, 16, 18, 20, 22]
        .into_iter()
        .filter(|&l| l <= max_log)
        .collect();
    let mut rows = Vec::new();
    let mut want_enc = BTreeMap::new();
    for &log in &logs {
        let (row, want) = bench_single_msm(&gpu, &inputs, log);
        want_enc.insert(log, want);
        rows.push(row);
    }
    // The chunking proof's batch at n = 13, 28, 40: 32 MSMs over one set of 16n bases with
    // 8-bit scalars. Ours is the bit-plane kernel; the peers get the same bases and scalars.
    let mut shared_rows = Vec::new();
    let mut shared_peer_inputs = Vec::new();
    for n in [13usize, 28, 40] {
        let (row, wide_bytes) = bench_shared_msm(&gpu, &inputs, n);
        shared_peer_inputs.push((row.per, wide_bytes));
        shared_rows.push(row);
    }
    if sweep {
        println!("sweep (ours only, each result compared with blst's):");
        for &log in logs.iter().filter(|&&l| l >= 18) {
            sweep_msm(&gpu, &inputs, log, &want_enc[&log]);
        }
    }
    let (peer, shared_peer) = run_sppark(
        &peer_bin,
        &peer_inputs,
        &inputs,
        &logs,
        &want_enc,
        &shared_peer_inputs,
    );
    print_single_table(&rows, &peer);
    print_shared_table(&shared_rows, &shared_peer);
    match crossover {
        Some(n) => println!(
            "crossover: ours faster than the CPU path from {n} points (single MSM, 2^6..2^12)"
        ),
        None => println!("crossover: ours not faster than the CPU path up to 2^12 points"),
    }
}

/// 2^max_log distinct points and uniform scalars, and their blst forms.
fn make_inputs(max_log: usize) -> Inputs {
    let n_max = 1usize << max_log;
    let t = Instant::now();
    let points = random_points(n_max, 1);
    let scalars = random_scalars(n_max, 2);
    let blst_points: Vec<blst_p1_affine> = points.par_iter().map(to_blst).collect();
    let scalar_bytes: Vec<u8> = scalars.iter().flat_map(|s| s.to_bytes()).collect();
    println!(
        "inputs: 2^{max_log} distinct points and uniform scalars in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    Inputs {
        points,
        scalars,
        blst_points,
        scalar_bytes,
    }
}

/// The first `n` points and scalars as one MSM.
fn first_msm(inputs: &Inputs, n: usize) -> [MsmInput<'_>; 1] {
    [MsmInput {
        points: &inputs.points[..n],
        scalars: &inputs.scalars[..n],
    }]
}

/// Crossover against the engine's CPU path: the smallest single-MSM size the GPU wins.
fn probe_crossover(gpu: &GpuBackend, inputs: &Inputs) -> Option<usize> {
    let mut crossover = None;
    for log in 6..=12 {
        let n = 1usize << log;
        let m = first_msm(inputs, n);
        let (c, want) = time(9, || cpu::g1_msm_batch(&m));
        let (g, got) = time(9, || gpu.g1_msm_batch(&m));
        assert_eq!(
            got.expect("GPU MSM"),
            want,
            "2^{log}: GPU differs from CPU path"
        );
        println!(
            "crossover probe 2^{log}: ours {:.3} ms, cpu path {:.3} ms",
            g * 1e3,
            c * 1e3
        );
        if crossover.is_none() && g < c {
            crossover = Some(n);
        }
    }
    crossover
}

/// One MSM of 2^log points: blst, ours, and (up to 2^20) the CPU path, each compared with
/// blst's result; returns the row and blst's result encoded.
fn bench_single_msm(gpu: &GpuBackend, inputs: &Inputs, log: usize) -> (Row, String) {
    let n = 1usize << log;
    let m = first_msm(inputs, n);
    let (blst_reps, ours_reps) = match log {
        ..=16 => (5, 10),
        17..=20 => (3, 7),
        _ => (1, 5),
    };
    let (blst_s, want) = time(blst_reps, || {
        inputs.blst_points[..n].mult(&inputs.scalar_bytes[..32 * n], 255)
    });
    let want_bytes = blst_encoding(&want);
    let want_point = G1Projective::from(
        Option::<G1Affine>::from(G1Affine::from_uncompressed(&want_bytes))
            .expect("blst result decodes"),
    );
    let want_hex = hex(&want_bytes);
    let (ours_s, got) = time(ours_reps, || gpu.g1_msm_batch(&m));
    assert_eq!(
        got.expect("GPU MSM")[0],
        want_point,
        "2^{log}: ours differs from blst"
    );
    let cpu_path = (log <= 20).then(|| {
        let (s, out) = time(1, || cpu::g1_msm_batch(&m));
        assert_eq!(out[0], want_point, "2^{log}: CPU path differs from blst");
        s * 1e3
    });
    println!(
        "2^{log}: ours {:.3} ms, blst 16 threads {:.3} ms ({:.1}x){}",
        ours_s * 1e3,
        blst_s * 1e3,
        blst_s / ours_s,
        cpu_path
            .map(|c| format!(", cpu path {c:.3} ms"))
            .unwrap_or_default()
    );
    profile_once(gpu, &m);
    let row = Row {
        log,
        ours: ours_s * 1e3,
        blst: blst_s * 1e3,
        cpu_path,
    };
    (row, want_hex)
}

/// 32 MSMs over the first 16n points with random 8-bit scalars: ours, the IC's algorithm
/// and blst, each compared with the CPU path; returns the row and the scalars widened to
/// sppark's 32 bytes.
fn bench_shared_msm(gpu: &GpuBackend, inputs: &Inputs, n: usize) -> (SharedRow, Vec<u8>) {
    let per = 16 * n;
    let bases = &inputs.points[..per];
    let mut rng = ChaCha20Rng::seed_from_u64(3 + n as u64);
    let mut scalars = vec![0u8; SHARED_ROWS * per];
    rng.fill_bytes(&mut scalars);
    let want = cpu::g1_msm_shared_u8(bases, &scalars, SHARED_ROWS);
    let (ours, got) = time(30, || gpu.g1_msm_shared_u8(bases, &scalars, SHARED_ROWS));
    assert_eq!(got.expect("GPU shared-base MSM"), want, "32 x {per}: ours");
    let wide: Vec<Vec<Scalar>> = scalars
        .chunks_exact(per)
        .map(|row| row.iter().map(|&b| Scalar::from(u64::from(b))).collect())
        .collect();
    let (ic, got) = time(3, || {
        wide.par_iter()
            .map(|row| nidkg::msm::msm_4bit_full_width(bases, row))
            .collect::<Vec<_>>()
    });
    assert_eq!(got, want, "32 x {per}: the IC's algorithm");
    let (blst_s, got) = time(10, || {
        scalars
            .chunks_exact(per)
            .map(|row| inputs.blst_points[..per].mult(row, 8))
            .collect::<Vec<_>>()
    });
    let got: Vec<String> = got.iter().map(|p| hex(&blst_encoding(p))).collect();
    let want_hex: Vec<String> = want
        .iter()
        .map(|p| hex(&G1Affine::from(p).to_uncompressed()))
        .collect();
    assert_eq!(got, want_hex, "32 x {per}: blst");
    println!(
        "32 x {per} shared bases, 8-bit scalars: ours {:.3} ms, IC 4-bit {:.3} ms, blst {:.3} ms",
        ours * 1e3,
        ic * 1e3,
        blst_s * 1e3
    );
    let wide_bytes: Vec<u8> = scalars.iter().flat_map(|&b| u256_le(b)).collect();
    let row = SharedRow {
        per,
        ours: ours * 1e3,
        ic: ic * 1e3,
        blst: blst_s * 1e3,
        want: want_hex.join(","),
    };
    (row, wide_bytes)
}

/// Ours at 2^log under other window widths and the encoded staging, each result compared
/// with blst's (`want`, encoded).
fn sweep_msm(gpu: &GpuBackend, inputs: &Inputs, log: usize, want: &str) {
    let n = 1usize << log;
    let m = first_msm(inputs, n);
    let check = |got: Result<Vec<G1Projective>, _>| {
        let g = G1Affine::from(got.expect("GPU MSM")[0]);
        assert_eq!(&hex(&g.to_uncompressed()), want, "sweep 2^{log}");
    };
    // The default widths are 14 at 2^18 and 16 above (window_bits).
    let widths: &[&str] = match log {
        18 => &["13", "15", "16"],
        _ => &["14", "15"],
    };
    let mut variants: Vec<(String, &str, &str)> = widths
        .iter()
        .map(|c| (format!("c={c}"), "GPU_CRYPTO_MSM_WINDOW_BITS", *c))
        .collect();
    variants.push((
        "encoded staging".into(),
        "GPU_CRYPTO_MSM_STAGING",
        "encoded",
    ));
    for (what, key, value) in variants {
        set_env(key, Some(value));
        let (s, got) = time(5, || gpu.g1_msm_batch(&m));
        check(got);
        println!("  2^{log} {what}: {:.3} ms", s * 1e3);
        set_env(key, None);
    }
}

/// sppark last, in its own process (its own CUDA context); ours keeps its buffers. Returns
/// its single-MSM rows (log2 -> row, each checked against blst's) and its shared-base rows
/// (16n -> row).
fn run_sppark(
    peer_bin: &str,
    peer_inputs: &str,
    inputs: &Inputs,
    logs: &[usize],
    want_enc: &BTreeMap<usize, String>,
    shared_peer_inputs: &[(usize, Vec<u8>)],
) -> (BTreeMap<usize, PeerRow>, BTreeMap<usize, PeerRow>) {
    let peer = run_peer(peer_bin, peer_inputs, 7, logs);
    for (log, row) in &peer {
        if let Some(want) = want_enc.get(log) {
            assert_eq!(&row.result, want, "2^{log}: sppark differs from blst");
        }
    }
    let _ = std::fs::remove_file(peer_inputs);
    let mut shared_peer = BTreeMap::new();
    for (per, scalars) in shared_peer_inputs {
        write_peer_inputs(peer_inputs, &inputs.blst_points[..*per], scalars);
        if let Some(row) = run_peer_shared(peer_bin, peer_inputs, SHARED_ROWS, 7) {
            shared_peer.insert(*per, row);
        }
    }
    let _ = std::fs::remove_file(peer_inputs);
    (peer, shared_peer)
}

/// A peer's median and range, or `-` where it has none.
fn peer_ms(p: Option<&PeerRow>) -> String {
    p.map(|p| format!("{:.2} ({:.2}-{:.2})", p.median_ms, p.min_ms, p.max_ms))
        .unwrap_or_else(|| "-".into())
}

/// The single-MSM table.
fn print_single_table(rows: &[Row], peer: &BTreeMap<usize, PeerRow>) {
    println!();
    println!(
        "| MSM | ours ms (end to end from ic_bls12_381 types) | sppark ms (pinned blst affines) | blst ms (16 threads, blst affines) | CPU path ms (end to end) | blst / ours | sppark / ours |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in rows {
        let p = peer.get(&r.log);
        println!(
            "| 2^{} | {:.2} | {} | {:.1} | {} | {:.1}x | {} |",
            r.log,
            r.ours,
            peer_ms(p),
            r.blst,
            r.cpu_path
                .map(|c| format!("{c:.1}"))
                .unwrap_or_else(|| "-".into()),
            r.blst / r.ours,
            p.map(|p| format!("{:.2}x", p.median_ms / r.ours))
                .unwrap_or_else(|| "-".into()),
        );
    }
}

/// The shared-base table; each sppark result is checked against the CPU path's first.
fn print_shared_table(shared_rows: &[SharedRow], shared_peer: &BTreeMap<usize, PeerRow>) {
    println!();
    println!(
        "| 32 MSMs over 16n shared bases, 8-bit scalars | ours ms | sppark ms (32 calls, pinned) | blst ms (8-bit, 16 threads per MSM) | IC 4-bit full width ms (16 threads, one MSM each) | sppark / ours | blst / ours | IC / ours |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for r in shared_rows {
        let p = shared_peer.get(&r.per);
        if let Some(p) = p {
            assert_eq!(p.result, r.want, "32 x {}: sppark differs", r.per);
        }
        println!(
            "| n = {} (32 x {}) | {:.3} | {} | {:.2} | {:.2} | {} | {:.1}x | {:.1}x |",
            r.per / 16,
            r.per,
            r.ours,
            peer_ms(p),
            r.blst,
            r.ic,
            p.map(|p| format!("{:.1}x", p.median_ms / r.ours))
                .unwrap_or_else(|| "-".into()),
            r.blst / r.ours,
            r.ic / r.ours,
        );
    }
}
