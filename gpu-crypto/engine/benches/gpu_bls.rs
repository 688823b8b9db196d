//! BLS batch verification bench (`harness = false`), run on the GPU machine by
//! `gpu-crypto/device/bls/run.sh`, all in one process on the same signatures:
//! * this project's GPU path (`GpuBackend::bls_verify_batch`: random combination; and the
//!   exact per-item strategy), end to end from compressed bytes and messages to verdicts;
//! * the crate's CPU path (`cpu::bls_verify_batch`, ic_bls12_381 + blst MSMs on rayon);
//! * blst's `min_sig::Signature::verify_multiple_aggregate_signatures` (the IC's shape:
//!   signatures in G1) on its own thread pool (all host cores), from compressed signature
//!   bytes (decoded on all cores inside the timing, group check in the call), public keys
//!   decoded beforehand (our paths cache decoded keys too), fresh random scalars of 64 and
//!   of 128 bits; the better of the two is blst's best.
//!
//! Every verdict vector is checked before a time is printed. Medians of timed calls after
//! one warm-up call. `GPU_BENCH_QUICK=1` shrinks the sizes; `GPU_CRYPTO_BLS_PROFILE=1`
//! makes every GPU call print its phases (decode + hash, staging, combination, bisection).
//! Prints the table last.

mod timing;

use blst::min_sig::{PublicKey, SecretKey, Signature};
use blst::{BLST_ERROR, blst_scalar};
use gpu_crypto::gpu::{BlsGpuStrategy, GpuBackend};
use gpu_crypto::{BlsItem, BlsScheme, VerifyError, cpu};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use std::time::Instant;
use timing::time;

struct Batch {
    signatures: Vec<[u8; 48]>,
    public_keys: Vec<[u8; 96]>,
    messages: Vec<Vec<u8>>,
    /// Decoded public keys for blst (the per-key decoding is outside its timing).
    blst_public_keys: Vec<PublicKey>,
}

const SCHEME: BlsScheme = BlsScheme::MultiSig;

/// One signer's compressed signature and key, message, and decoded key.
type Signer = ([u8; 48], [u8; 96], Vec<u8>, PublicKey);

/// `n` valid signatures by `n` signers, on distinct messages or all on one message.
fn make_batch(n: usize, seed: u64, same_message: bool) -> Batch {
    let rows: Vec<Signer> = (0..n)
        .into_par_iter()
        .map(|i| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed ^ ((i as u64) << 16));
            let mut ikm = [0u8; 32];
            rng.fill(&mut ikm);
            let sk = SecretKey::key_gen(&ikm, &[]).expect("key material");
            let message = if same_message {
                b"certified state root".to_vec()
            } else {
                let mut m = vec![0u8; 32];
                rng.fill_bytes(&mut m);
                m
            };
            let sig = sk.sign(&message, SCHEME.dst(), &[]).to_bytes();
            let pk = sk.sk_to_pk();
            (sig, pk.to_bytes(), message, pk)
        })
        .collect();
    let mut b = Batch {
        signatures: Vec::with_capacity(n),
        public_keys: Vec::with_capacity(n),
        messages: Vec::with_capacity(n),
        blst_public_keys: Vec::with_capacity(n),
    };
    for (s, p, m, pk) in rows {
        b.signatures.push(s);
        b.public_keys.push(p);
        b.messages.push(m);
        b.blst_public_keys.push(pk);
    }
    b
}

fn items(b: &Batch) -> Vec<BlsItem<'_>> {
    (0..b.signatures.len())
        .map(|i| BlsItem {
            signature: &b.signatures[i],
            public_key: &b.public_keys[i],
            message: &b.messages[i],
            scheme: SCHEME,
        })
        .collect()
}

fn all_ok(v: &[Result<(), VerifyError>]) -> bool {
    v.iter().all(|r| r.is_ok())
}

/// blst's batch verification, from compressed signatures, with `bits`-bit random scalars.
fn blst_verify(b: &Batch, bits: usize) -> bool {
    let sigs: Vec<Signature> = b
        .signatures
        .par_iter()
        .map(|s| Signature::from_bytes(s).expect("valid signature encoding"))
        .collect();
    let mut rng = ChaCha20Rng::from_entropy();
    let rands: Vec<blst_scalar> = (0..sigs.len())
        .map(|_| {
            let mut s = blst_scalar::default();
            let mut bytes = [0u8; 32];
            rng.fill_bytes(&mut bytes[..bits / 8]);
            // SAFETY: 32 little-endian bytes into a blst scalar.
            unsafe { blst::blst_scalar_from_lendian(&mut s, bytes.as_ptr()) };
            s
        })
        .collect();
    let msgs: Vec<&[u8]> = b.messages.iter().map(|m| m.as_slice()).collect();
    let pks: Vec<&PublicKey> = b.blst_public_keys.iter().collect();
    let sig_refs: Vec<&Signature> = sigs.iter().collect();
    Signature::verify_multiple_aggregate_signatures(
        &msgs,
        SCHEME.dst(),
        &pks,
        false,
        &sig_refs,
        true,
        &rands,
        bits,
    ) == BLST_ERROR::BLST_SUCCESS
}

struct Row {
    what: String,
    /// The best of the three combination strategies (or the GPU engine's own call).
    gpu_ms: f64,
    one_ms: Option<f64>,
    split_ms: Option<f64>,
    quarter_ms: Option<f64>,
    per_item_ms: Option<f64>,
    cpu_ms: f64,
    blst64_ms: Option<f64>,
    blst128_ms: Option<f64>,
    n: usize,
}

impl Row {
    /// A row with only the GPU and the CPU path measured (`seconds`).
    fn gpu_and_cpu(what: String, n: usize, gpu: f64, cpu: f64) -> Row {
        Row {
            what,
            gpu_ms: gpu * 1e3,
            one_ms: None,
            split_ms: None,
            quarter_ms: None,
            per_item_ms: None,
            cpu_ms: cpu * 1e3,
            blst64_ms: None,
            blst128_ms: None,
            n,
        }
    }
}

fn main() {
    let quick = std::env::var("GPU_BENCH_QUICK").as_deref() == Ok("1");
    let gpu = match GpuBackend::open(0) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("skipped: no usable GPU ({e})");
            return;
        }
    };
    println!(
        "device: {}; host threads (rayon): {}; programs: {:?}",
        gpu.describe(),
        rayon::current_num_threads(),
        gpu.program_loads()
    );
    let mut rows = Vec::new();
    let distinct: &[usize] = if quick {
        &[16, 64, 256, 1024, 4096]
    } else {
        // 65,536 is left out to keep the run short (docs/results/crossover-bls-verify-h200 has it).
        &[64, 256, 512, 1024, 2048, 4096, 16384]
    };
    for n in [1024usize, 4096, 16384] {
        bench_hash_to_g1(&gpu, n);
    }
    for &n in distinct {
        let b = bench_distinct(&gpu, n, &mut rows);
        // Invalid items: one, and 1% of the batch, at random positions.
        if n == 4096 || (quick && n == 1024) {
            for bad in [1usize, n / 100] {
                rows.push(bench_invalid(&gpu, &b, bad));
            }
        }
    }
    for n in [28usize, 100] {
        rows.push(bench_same_message(&gpu, n));
    }
    print_table(&rows);
}

/// Hashing alone: the GPU kernel against ic_bls12_381 (the CPU path) and blst on all
/// host cores, on `n` 32-byte messages as in the batches.
fn bench_hash_to_g1(gpu: &GpuBackend, n: usize) {
    let mut rng = ChaCha20Rng::seed_from_u64(n as u64);
    let messages: Vec<Vec<u8>> = (0..n)
        .map(|_| {
            let mut m = vec![0u8; 32];
            rng.fill_bytes(&mut m);
            m
        })
        .collect();
    let tagged: Vec<(&[u8], &[u8])> = messages.iter().map(|m| (SCHEME.dst(), &m[..])).collect();
    let (g, points) = time(5, || gpu.hash_to_g1(&tagged).expect("GPU hash"));
    let (c, want) = time(3, || {
        messages
            .par_iter()
            .map(|m| cpu::hash_message_to_g1(SCHEME, m))
            .collect::<Vec<_>>()
    });
    assert_eq!(points, want, "GPU and CPU hashes differ");
    let (b, _) = time(3, || {
        messages
            .par_iter()
            .map(|m| blst_hash_to_g1(m))
            .collect::<Vec<_>>()
    });
    println!(
        "hash to G1 {n}: GPU {:.3} ms, ic_bls12_381 on all cores {:.3} ms, blst on all cores {:.3} ms (points equal)",
        g * 1e3,
        c * 1e3,
        b * 1e3
    );
}

/// blst's hash of one message to G1 under the scheme's tag.
fn blst_hash_to_g1(m: &[u8]) -> blst::blst_p1 {
    let mut p = blst::blst_p1::default();
    // SAFETY: blst reads the message and tag slices and writes one point.
    unsafe {
        blst::blst_hash_to_g1(
            &mut p,
            m.as_ptr(),
            m.len(),
            SCHEME.dst().as_ptr(),
            SCHEME.dst().len(),
            std::ptr::null(),
            0,
        )
    };
    p
}

/// A valid batch of `n` signatures on distinct messages through every GPU strategy, the
/// CPU path and blst (64- and 128-bit scalars); pushes its row and returns the batch.
fn bench_distinct(gpu: &GpuBackend, n: usize, rows: &mut Vec<Row>) -> Batch {
    let t = Instant::now();
    let b = make_batch(n, n as u64, false);
    let it = items(&b);
    let reps = match n {
        65536.. => 2,
        16384.. => 3,
        _ => 5,
    };
    println!("distinct {n}: inputs in {:.1} s", t.elapsed().as_secs_f64());
    let strategy = |s: BlsGpuStrategy| {
        let (secs, v) = time(reps, || {
            gpu.bls_verify_batch_with(&it, s).expect("GPU verify")
        });
        assert!(all_ok(&v), "GPU rejected a valid batch of {n}");
        secs
    };
    let one_s = strategy(BlsGpuStrategy::RandomCombination);
    let split_s = strategy(BlsGpuStrategy::RandomCombinationSplit);
    let quarter_s = strategy(BlsGpuStrategy::RandomCombinationQuarters);
    let (default_s, v) = time(reps, || gpu.bls_verify_batch(&it).expect("GPU verify"));
    assert!(all_ok(&v), "GPU rejected a valid batch of {n}");
    let gpu_s = one_s.min(split_s).min(quarter_s);
    let per_item = if n <= 16384 {
        let (s, v) = time(reps, || {
            gpu.bls_verify_batch_with(&it, BlsGpuStrategy::PerItem)
                .expect("GPU verify")
        });
        assert!(all_ok(&v));
        Some(s)
    } else {
        None
    };
    let (cpu_s, v) = time(reps, || cpu::bls_verify_batch(&it));
    assert!(all_ok(&v), "CPU rejected a valid batch of {n}");
    let (b64, ok) = time(reps, || blst_verify(&b, 64));
    assert!(ok, "blst rejected a valid batch of {n}");
    let (b128, ok) = time(reps, || blst_verify(&b, 128));
    assert!(ok, "blst rejected a valid batch of {n}");
    println!(
        "distinct {n}: GPU one thread/item {:.3} ms, two threads/item {:.3} ms, four threads/item {:.3} ms, default choice {:.3} ms, per-item strategy {}, CPU path {:.3} ms, blst 64-bit {:.3} ms, 128-bit {:.3} ms",
        one_s * 1e3,
        split_s * 1e3,
        quarter_s * 1e3,
        default_s * 1e3,
        per_item.map_or("-".into(), |s| format!("{:.3} ms", s * 1e3)),
        cpu_s * 1e3,
        b64 * 1e3,
        b128 * 1e3
    );
    rows.push(Row {
        what: format!("distinct messages, {n}"),
        gpu_ms: gpu_s * 1e3,
        one_ms: Some(one_s * 1e3),
        split_ms: Some(split_s * 1e3),
        quarter_ms: Some(quarter_s * 1e3),
        per_item_ms: per_item.map(|s| s * 1e3),
        cpu_ms: cpu_s * 1e3,
        blst64_ms: Some(b64 * 1e3),
        blst128_ms: Some(b128 * 1e3),
        n,
    });
    b
}

/// `b` with `bad` messages spoiled at random positions, GPU against the CPU path.
fn bench_invalid(gpu: &GpuBackend, b: &Batch, bad: usize) -> Row {
    let n = b.signatures.len();
    let mut spoiled = Batch {
        signatures: b.signatures.clone(),
        public_keys: b.public_keys.clone(),
        messages: b.messages.clone(),
        blst_public_keys: Vec::new(),
    };
    let mut rng = ChaCha20Rng::seed_from_u64(bad as u64);
    for _ in 0..bad {
        let p = rng.gen_range(0..n);
        spoiled.messages[p].push(1);
    }
    let it = items(&spoiled);
    let (s, v) = time(3, || gpu.bls_verify_batch(&it).expect("GPU verify"));
    let want = cpu::bls_verify_batch(&it);
    assert_eq!(v, want, "GPU and CPU verdicts differ");
    let (c, _) = time(3, || cpu::bls_verify_batch(&it));
    let rejected = want.iter().filter(|r| r.is_err()).count();
    println!(
        "distinct {n}, {rejected} invalid: GPU {:.3} ms, CPU path {:.3} ms (verdicts equal)",
        s * 1e3,
        c * 1e3
    );
    Row::gpu_and_cpu(
        format!("distinct messages, {n}, {rejected} invalid"),
        n,
        s,
        c,
    )
}

/// `n` signature shares on one message, GPU against the CPU path.
fn bench_same_message(gpu: &GpuBackend, n: usize) -> Row {
    let b = make_batch(n, 1000 + n as u64, true);
    let it = items(&b);
    let (g, v) = time(7, || gpu.bls_verify_batch(&it).expect("GPU verify"));
    assert!(all_ok(&v));
    let (c, v) = time(7, || cpu::bls_verify_batch(&it));
    assert!(all_ok(&v));
    println!(
        "same message {n}: GPU {:.3} ms, CPU path {:.3} ms",
        g * 1e3,
        c * 1e3
    );
    Row::gpu_and_cpu(format!("same message, {n} shares"), n, g, c)
}

/// The table of every row measured.
fn print_table(rows: &[Row]) {
    println!();
    println!(
        "| batch | GPU ms (best; default strategy for rows without a split) | one / two / four threads per item | GPU per item | CPU path ms | blst ms (64-bit / 128-bit) | GPU signatures/s | GPU vs best blst |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for r in rows {
        let best = match (r.blst64_ms, r.blst128_ms) {
            (Some(a), Some(b)) => Some(a.min(b)),
            _ => None,
        };
        println!(
            "| {} | {:.3} | {} | {} | {:.3} | {} | {:.0} | {} |",
            r.what,
            r.gpu_ms,
            match (r.one_ms, r.split_ms, r.quarter_ms) {
                (Some(a), Some(b), Some(c)) => format!("{a:.3} / {b:.3} / {c:.3}"),
                _ => "-".into(),
            },
            r.per_item_ms.map_or("-".into(), |v| format!("{v:.3}")),
            r.cpu_ms,
            match (r.blst64_ms, r.blst128_ms) {
                (Some(a), Some(b)) => format!("{a:.3} / {b:.3}"),
                _ => "-".into(),
            },
            r.n as f64 / (r.gpu_ms / 1e3),
            best.map_or("-".into(), |b| format!("{:.2}x", b / r.gpu_ms)),
        );
    }
}
