//! The crypto selftest shared by the `gpu-crypto selftest` command and the node agent:
//! seeded data through an engine and through the CPU reference, compared item by item, plus
//! checks against what the data was built to be (valid points decode to themselves,
//! corrupted signatures are rejected with the expected reason, MSMs equal the naive sum,
//! digests equal `sha2`'s), so the test has teeth even when both sides run on the CPU.
//!
//! [`run`] returns a [`SelftestReport`] (the API crate's type), which serialises to JSON and
//! back for callers that run the selftest in a child process.

use crate::{
    BackendChoice, BlsItem, BlsScheme, DecodeError, DomainSeparator, Engine, G1Affine,
    G1Projective, G2Affine, G2Projective, GpuStatus, MsmInput, Operation, PairingProducts, Scalar,
    VerifyError,
};
pub use gpu_crypto_api::selftest::{OperationCheck, SelftestReport};
use ic_bls12_381::hash_to_curve::{ExpandMsgXmd, HashToCurve};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};

/// Runs every operation through `engine` and the CPU reference. `items(op)` sets the size
/// of each operation's data (the node agent makes it at least the operation's GPU
/// crossover, so that the batches really run where the node will run them). `not_run`
/// lists operations the engine cannot run, with the reason: each is a failure.
pub fn run(
    engine: &Engine,
    not_run: &[(Operation, String)],
    items: impl Fn(Operation) -> usize,
    seed: u64,
) -> SelftestReport {
    let reference = Engine::cpu_only();
    let mut operations = Vec::with_capacity(Operation::ALL.len());
    for op in Operation::ALL {
        // Each operation's data comes from its own generator, so that leaving one out
        // does not change the others.
        let mut rng = ChaCha20Rng::seed_from_u64(seed ^ ((op as u64) << 56));
        let size = items(op);
        let check = if let Some((_, reason)) = not_run.iter().find(|(o, _)| *o == op) {
            let mut check = OperationCheck::new(op);
            check
                .problems
                .push(format!("not run on the chosen backend: {reason}"));
            check
        } else {
            match op {
                Operation::Decompress => check_decompress(engine, &reference, &mut rng, size),
                Operation::DecompressG2 => check_decompress_g2(engine, &reference, &mut rng, size),
                Operation::Msm => check_msm(engine, &reference, &mut rng, size),
                Operation::MsmSharedU8 => check_msm_shared_u8(engine, &reference, &mut rng, size),
                Operation::MsmG2 => check_msm_g2(engine, &reference, &mut rng, size),
                Operation::PairingProducts => {
                    check_pairing_products(engine, &reference, &mut rng, size)
                }
                Operation::BlsVerify => check_bls(engine, &reference, &mut rng, size),
                Operation::Sha256 => check_sha256(engine, &reference, &mut rng, size),
            }
        };
        operations.push(check);
    }
    SelftestReport {
        seed,
        engine: engine.report(),
        passed: operations.iter().all(OperationCheck::passed),
        operations,
        stats: engine.stats(),
    }
}

/// The batch size from which `engine` routes `op` to its GPU, when it would (GPU ready and
/// the operation not pinned to the CPU); None when `op` runs on the CPU.
pub fn gpu_batch(engine: &Engine, op: Operation) -> Option<usize> {
    let gpu_ready = matches!(engine.gpu_status(), GpuStatus::Ready { .. });
    let p = engine.policy().operation(op);
    (gpu_ready && p.backend != BackendChoice::Cpu).then_some(p.gpu_min_batch.max(1))
}

fn random_point(rng: &mut ChaCha20Rng) -> G1Affine {
    G1Affine::from(G1Affine::generator() * nidkg::random_scalar(rng))
}

/// What a compressed encoding was built to decode to, where the builder knows.
enum Expect<P> {
    Point(P),
    Reject(DecodeError),
    /// Random bytes: the reference decides; only the two engines are compared.
    Unknown,
}

fn decompress_inputs(rng: &mut ChaCha20Rng, size: usize) -> Vec<([u8; 48], Expect<G1Affine>)> {
    let mut inputs = Vec::new();
    inputs.push((
        G1Affine::identity().to_compressed(),
        Expect::Point(G1Affine::identity()),
    ));
    for i in 0..size {
        let p = random_point(rng);
        let bytes = p.to_compressed();
        inputs.push((bytes, Expect::Point(p)));
        match i % 8 {
            0 => {
                let mut b = bytes;
                b[0] &= 0x7f;
                inputs.push((b, Expect::Reject(DecodeError::NotCompressed)));
            }
            1 => {
                let mut b = bytes;
                b[0] |= 0x40;
                inputs.push((b, Expect::Reject(DecodeError::BadInfinity)));
            }
            2 => {
                // x = 2^381 - 1 > p with the compression flag alone.
                let mut b = [0xffu8; 48];
                b[0] = 0x9f;
                inputs.push((b, Expect::Reject(DecodeError::NonCanonical)));
            }
            _ => {
                // A random x below p: mostly off the curve or outside the subgroup.
                let mut b = [0u8; 48];
                rng.fill(&mut b[..]);
                b[0] = 0x80 | (b[0] & 0x20) | (b[0] % 0x1a);
                inputs.push((b, Expect::Unknown));
            }
        }
    }
    // The adversarial corpus, with the verdicts `ic_bls12_381` gave at generation.
    for entry in crate::corpus::g1_decompress_corpus() {
        let expect = match entry.expected {
            Ok(p) => Expect::Point(p),
            Err(e) => Expect::Reject(e),
        };
        inputs.push((entry.bytes, expect));
    }
    inputs
}

fn g2_decompress_inputs(rng: &mut ChaCha20Rng, size: usize) -> Vec<([u8; 96], Expect<G2Affine>)> {
    let mut inputs: Vec<([u8; 96], Expect<G2Affine>)> = (0..size)
        .map(|_| {
            let p = G2Affine::from(G2Affine::generator() * nidkg::random_scalar(rng));
            (p.to_compressed(), Expect::Point(p))
        })
        .collect();
    for entry in crate::corpus::g2_decompress_corpus() {
        let expect = match entry.expected {
            Ok(p) => Expect::Point(p),
            Err(e) => Expect::Reject(e),
        };
        inputs.push((entry.bytes, expect));
    }
    inputs
}

/// `call` on the engine and on the reference, each expected to give `items` results; a
/// failed call or a wrong count is recorded and gives `None`.
fn on_both<T>(
    check: &mut OperationCheck,
    engine: &Engine,
    reference: &Engine,
    items: usize,
    call: impl Fn(&Engine) -> Result<Vec<T>, crate::EngineError>,
) -> Option<(Vec<T>, Vec<T>)> {
    match (call(engine), call(reference)) {
        (Ok(got), Ok(want)) if got.len() == items && want.len() == items => Some((got, want)),
        (Ok(got), Ok(want)) => {
            check.problems.push(format!(
                "{} and {} results for {items} inputs",
                got.len(),
                want.len()
            ));
            None
        }
        (Err(e), _) | (_, Err(e)) => {
            check.problems.push(format!("call failed: {e}"));
            None
        }
    }
}

/// Compares the engine's decoding with the reference's, item by item, and the reference
/// with how each input was built.
fn compare_decoded<P: PartialEq + std::fmt::Debug, const N: usize>(
    mut check: OperationCheck,
    inputs: &[([u8; N], Expect<P>)],
    decode: impl Fn(&Engine, &[[u8; N]]) -> Result<Vec<Result<P, DecodeError>>, crate::EngineError>,
    engine: &Engine,
    reference: &Engine,
) -> OperationCheck {
    let bytes: Vec<[u8; N]> = inputs.iter().map(|(b, _)| *b).collect();
    check.items = bytes.len();
    let Some((got, want)) = on_both(&mut check, engine, reference, bytes.len(), |e| {
        decode(e, &bytes)
    }) else {
        return check;
    };
    for (i, ((input, expect), (g, w))) in inputs.iter().zip(got.iter().zip(&want)).enumerate() {
        if g != w {
            check.problems.push(format!(
                "item {i} ({}): engine {g:?}, reference {w:?}",
                hex::encode(input)
            ));
        }
        let as_built = match expect {
            Expect::Point(p) => w.as_ref() == Ok(p),
            Expect::Reject(e) => w.as_ref().err() == Some(e),
            Expect::Unknown => true,
        };
        if !as_built {
            check.problems.push(format!(
                "item {i} ({}): reference {w:?} differs from how the input was built",
                hex::encode(input)
            ));
        }
    }
    check
}

fn check_decompress(
    engine: &Engine,
    reference: &Engine,
    rng: &mut ChaCha20Rng,
    size: usize,
) -> OperationCheck {
    compare_decoded(
        OperationCheck::new(Operation::Decompress),
        &decompress_inputs(rng, size),
        |e, b| e.g1_decompress(b),
        engine,
        reference,
    )
}

fn check_decompress_g2(
    engine: &Engine,
    reference: &Engine,
    rng: &mut ChaCha20Rng,
    size: usize,
) -> OperationCheck {
    compare_decoded(
        OperationCheck::new(Operation::DecompressG2),
        &g2_decompress_inputs(rng, size),
        |e, b| e.g2_decompress(b),
        engine,
        reference,
    )
}

/// 32 rows (the chunking proof's repetitions) over `size / 32` shared bases with 8-bit
/// scalars, with an identity base, a base and its negation, a repeated base, an all-zero
/// row and an all-255 row; the first rows also against the naive sum.
fn check_msm_shared_u8(
    engine: &Engine,
    reference: &Engine,
    rng: &mut ChaCha20Rng,
    size: usize,
) -> OperationCheck {
    const ROWS: usize = 32;
    let mut check = OperationCheck::new(Operation::MsmSharedU8);
    let n = (size / ROWS).max(8);
    let mut bases: Vec<G1Affine> = (0..n).map(|_| random_point(rng)).collect();
    bases[0] = G1Affine::identity();
    bases[1] = -bases[2];
    bases[3] = bases[4];
    let mut scalars = vec![0u8; ROWS * n];
    rng.fill(&mut scalars[..]);
    scalars[..n].fill(0);
    scalars[n..2 * n].fill(u8::MAX);
    check.items = scalars.len();
    let Some((got, want)) = on_both(&mut check, engine, reference, ROWS, |e| {
        e.g1_msm_shared_u8(&bases, &scalars, ROWS)
    }) else {
        return check;
    };
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        if g != w {
            check.problems.push(format!(
                "row {k}: engine {}, reference {}",
                hex::encode(G1Affine::from(g).to_compressed()),
                hex::encode(G1Affine::from(w).to_compressed())
            ));
        }
    }
    for (k, w) in want.iter().enumerate().take(3) {
        let naive: G1Projective = bases
            .iter()
            .zip(&scalars[k * n..(k + 1) * n])
            .map(|(p, s)| G1Projective::from(p) * Scalar::from(u64::from(*s)))
            .sum();
        if *w != naive {
            check
                .problems
                .push(format!("row {k}: reference differs from the naive sum"));
        }
    }
    check
}

/// `size` products of three pairs over a shared G2 table, built so that even products
/// are the identity of GT (`e(aP, bQ) e(-abP, Q) e(0, bQ)`) and odd ones are not (`ab + 1`).
fn check_pairing_products(
    engine: &Engine,
    reference: &Engine,
    rng: &mut ChaCha20Rng,
    size: usize,
) -> OperationCheck {
    let mut check = OperationCheck::new(Operation::PairingProducts);
    let table_len = size.clamp(1, 8);
    let b: Vec<Scalar> = (0..table_len).map(|_| nidkg::random_scalar(rng)).collect();
    let mut g2 = vec![G2Affine::generator()];
    g2.extend(b.iter().map(|b| G2Affine::from(G2Affine::generator() * b)));
    let mut products = Vec::with_capacity(size + 1);
    let mut expect = Vec::with_capacity(size + 1);
    for k in 0..size {
        let j = k % table_len;
        let a = nidkg::random_scalar(rng);
        let mut ab = a * b[j];
        if k % 2 == 1 {
            ab += Scalar::one();
        }
        products.push(vec![
            (G1Affine::from(G1Affine::generator() * a), 1 + j),
            (G1Affine::from(G1Affine::generator() * -ab), 0),
            (G1Affine::identity(), 1 + j),
        ]);
        expect.push(k % 2 == 0);
    }
    // The empty product is 1.
    products.push(Vec::new());
    expect.push(true);
    check.items = products.len();
    let input = PairingProducts {
        g2: &g2,
        products: &products,
    };
    let Some((got, want)) = on_both(&mut check, engine, reference, products.len(), |e| {
        e.pairing_products_are_identity(input)
    }) else {
        return check;
    };
    if got != want {
        check
            .problems
            .push(format!("engine {got:?}, reference {want:?}"));
    }
    if want != expect {
        check
            .problems
            .push("reference differs from how the products were built".to_string());
    }
    check
}

fn check_msm(
    engine: &Engine,
    reference: &Engine,
    rng: &mut ChaCha20Rng,
    size: usize,
) -> OperationCheck {
    let msms = msm_cases(rng, size, random_point, G1Affine::identity());
    let call = |e: &Engine, inputs: &[MsmInput<'_>]| e.g1_msm_batch(inputs);
    let show = |p: &G1Projective| hex::encode(G1Affine::from(p).to_compressed());
    let ops = (call, crate::cpu::g1_msm_naive, show);
    check_msms(Operation::Msm, (engine, reference), &msms, ops)
}

/// MSMs of 0, 1, 2, `size / 2` and `size` random points with random scalars, and in every
/// MSM of at least 8 points the edge cases a bucket method or a scalar split must get
/// right: a zero scalar, the identity, a point and its negation, a repeated point, the
/// scalar -1.
fn msm_cases<A: Copy + std::ops::Neg<Output = A>>(
    rng: &mut ChaCha20Rng,
    size: usize,
    random: impl Fn(&mut ChaCha20Rng) -> A,
    identity: A,
) -> Vec<(Vec<A>, Vec<Scalar>)> {
    let mut msms = Vec::new();
    for n in [0, 1, 2, size / 2, size] {
        let mut points: Vec<A> = (0..n).map(|_| random(rng)).collect();
        let mut scalars: Vec<Scalar> = (0..n).map(|_| nidkg::random_scalar(rng)).collect();
        if n >= 8 {
            scalars[0] = Scalar::zero();
            points[1] = identity;
            points[2] = -points[3];
            points[4] = points[5];
            scalars[6] = -Scalar::one();
        }
        msms.push((points, scalars));
    }
    msms
}

/// `msms` through the engine (`call`) and the reference: each engine result against the
/// reference's, and each reference result against the naive sum (`naive`); `show` prints
/// a result.
fn check_msms<A, P: PartialEq>(
    op: Operation,
    (engine, reference): (&Engine, &Engine),
    msms: &[(Vec<A>, Vec<Scalar>)],
    (call, naive, show): (
        impl Fn(&Engine, &[MsmInput<'_, A>]) -> Result<Vec<P>, crate::EngineError>,
        impl Fn(&[A], &[Scalar]) -> P,
        impl Fn(&P) -> String,
    ),
) -> OperationCheck {
    let mut check = OperationCheck::new(op);
    let inputs: Vec<MsmInput<'_, A>> = msms
        .iter()
        .map(|(points, scalars)| MsmInput { points, scalars })
        .collect();
    check.items = msms.iter().map(|(p, _)| p.len()).sum();
    let Some((got, want)) = on_both(&mut check, engine, reference, msms.len(), |e| {
        call(e, &inputs)
    }) else {
        return check;
    };
    for (i, ((points, scalars), (g, w))) in msms.iter().zip(got.iter().zip(&want)).enumerate() {
        if g != w {
            check.problems.push(format!(
                "msm {i} ({} points): engine {}, reference {}",
                points.len(),
                show(g),
                show(w)
            ));
        }
        if *w != naive(points, scalars) {
            check.problems.push(format!(
                "msm {i} ({} points): reference differs from the naive sum",
                points.len()
            ));
        }
    }
    check
}

fn random_g2_point(rng: &mut ChaCha20Rng) -> G2Affine {
    G2Affine::from(G2Affine::generator() * nidkg::random_scalar(rng))
}

fn check_msm_g2(
    engine: &Engine,
    reference: &Engine,
    rng: &mut ChaCha20Rng,
    size: usize,
) -> OperationCheck {
    let msms = msm_cases(rng, size, random_g2_point, G2Affine::identity());
    let call = |e: &Engine, inputs: &[MsmInput<'_, G2Affine>]| e.g2_msm_batch(inputs);
    let show = |p: &G2Projective| hex::encode(G2Affine::from(p).to_compressed());
    let ops = (call, crate::cpu::g2_msm_naive, show);
    check_msms(Operation::MsmG2, (engine, reference), &msms, ops)
}

struct BlsCase {
    scheme: BlsScheme,
    signature: [u8; 48],
    public_key: [u8; 96],
    message: Vec<u8>,
    expect: Result<(), VerifyError>,
}

fn bls_cases(rng: &mut ChaCha20Rng, size: usize) -> Vec<BlsCase> {
    let mut cases = Vec::with_capacity(size);
    for i in 0..size {
        let mut scheme = BlsScheme::ALL[i % BlsScheme::ALL.len()];
        let secret = nidkg::random_scalar(rng);
        let len = rng.gen_range(0..100);
        let mut message = vec![0u8; len];
        rng.fill(&mut message[..]);
        let hashed = <G1Projective as HashToCurve<ExpandMsgXmd<Sha256>>>::hash_to_curve(
            &message,
            scheme.dst(),
        );
        let mut signature = G1Affine::from(hashed * secret).to_compressed();
        let mut public_key = G2Affine::from(G2Affine::generator() * secret).to_compressed();
        let mut expect = Ok(());
        match i % 7 {
            1 => {
                message.push(0x01);
                expect = Err(VerifyError::Invalid);
            }
            3 => {
                signature[0] &= 0x7f;
                expect = Err(VerifyError::Signature(DecodeError::NotCompressed));
            }
            5 => {
                public_key[0] |= 0x40;
                expect = Err(VerifyError::PublicKey(DecodeError::BadInfinity));
            }
            6 => {
                // Signed under the other scheme's tag.
                scheme = BlsScheme::ALL[(i + 1) % BlsScheme::ALL.len()];
                expect = Err(VerifyError::Invalid);
            }
            _ => {}
        }
        cases.push(BlsCase {
            scheme,
            signature,
            public_key,
            message,
            expect,
        });
    }
    cases
}

fn check_bls(
    engine: &Engine,
    reference: &Engine,
    rng: &mut ChaCha20Rng,
    size: usize,
) -> OperationCheck {
    let mut check = OperationCheck::new(Operation::BlsVerify);
    let cases = bls_cases(rng, size);
    let items: Vec<BlsItem<'_>> = cases
        .iter()
        .map(|c| BlsItem {
            signature: &c.signature,
            public_key: &c.public_key,
            message: &c.message,
            scheme: c.scheme,
        })
        .collect();
    check.items = items.len();
    let Some((got, want)) = on_both(&mut check, engine, reference, items.len(), |e| {
        e.bls_verify_batch(&items)
    }) else {
        return check;
    };
    for (i, (case, (g, w))) in cases.iter().zip(got.iter().zip(&want)).enumerate() {
        if g != w {
            check
                .problems
                .push(format!("item {i}: engine {g:?}, reference {w:?}"));
        }
        if *w != case.expect {
            check.problems.push(format!(
                "item {i}: reference {w:?}, built to be {:?}",
                case.expect
            ));
        }
    }
    check
}

fn check_sha256(
    engine: &Engine,
    reference: &Engine,
    rng: &mut ChaCha20Rng,
    size: usize,
) -> OperationCheck {
    let mut check = OperationCheck::new(Operation::Sha256);
    // Lengths around the 64-byte block and padding boundaries, two full 1 MiB state
    // chunks, and random lengths.
    let mut lengths = vec![0, 1, 55, 56, 63, 64, 65, 119, 120, 1 << 20, 1 << 20];
    lengths.extend((0..size).map(|_| rng.gen_range(0..4096)));
    let chunks: Vec<Vec<u8>> = lengths
        .iter()
        .map(|&len| {
            let mut c = vec![0u8; len];
            rng.fill(&mut c[..]);
            c
        })
        .collect();
    let slices: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
    check.items = slices.len();
    let separator = match DomainSeparator::new("ic-state-chunk") {
        Ok(s) => s,
        Err(e) => {
            check.problems.push(format!("domain separator: {e}"));
            return check;
        }
    };
    let Some((got, want)) = on_both(&mut check, engine, reference, slices.len(), |e| {
        e.sha256_chunks(&separator, &slices)
    }) else {
        return check;
    };
    for (i, (chunk, (g, w))) in slices.iter().zip(got.iter().zip(&want)).enumerate() {
        if g != w {
            check.problems.push(format!(
                "chunk {i} ({} bytes): engine {}, reference {}",
                chunk.len(),
                hex::encode(g),
                hex::encode(w)
            ));
        }
        let direct: [u8; 32] = Sha256::new()
            .chain_update(separator.prefix())
            .chain_update(chunk)
            .finalize()
            .into();
        if *w != direct {
            check.problems.push(format!(
                "chunk {i} ({} bytes): reference differs from sha2",
                chunk.len()
            ));
        }
    }
    check
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_crypto_api::stats::Executed;

    #[test]
    fn cpu_engine_passes_counts_and_round_trips_through_json() {
        let engine = Engine::cpu_only();
        let report = run(&engine, &[], |_| 8, 1);
        assert!(report.passed, "{report:#?}");
        assert_eq!(report.operations.len(), Operation::ALL.len());
        // Every operation ran on the CPU (the reference engine's calls are not counted here).
        let calls = |on: Executed| -> u64 {
            report
                .stats
                .operations
                .iter()
                .filter(|o| o.executed == on)
                .map(|o| o.calls)
                .sum()
        };
        assert!(calls(Executed::Cpu) >= 4, "{:?}", report.stats);
        assert_eq!(calls(Executed::Gpu), 0, "{:?}", report.stats);
        let json = serde_json::to_string(&report).unwrap();
        let back: SelftestReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, report);
        assert_eq!(report.execution_lines().len(), Operation::ALL.len());
    }

    #[test]
    fn an_operation_not_run_fails_the_selftest() {
        let engine = Engine::cpu_only();
        let report = run(
            &engine,
            &[(Operation::Msm, "no GPU implementation".into())],
            |_| 2,
            1,
        );
        assert!(!report.passed);
        let msm = report
            .operations
            .iter()
            .find(|c| c.operation == Operation::Msm)
            .unwrap();
        assert!(msm.line().starts_with("FAIL msm:"), "{}", msm.line());
        assert!(msm.problems[0].contains("no GPU implementation"));
    }
}
