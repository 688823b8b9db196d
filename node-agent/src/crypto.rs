//! The agent's own crypto engine, built from the profile's policy, and the known-answer
//! selftest it runs at start so the crypto path the node reports is proven, not assumed.
//! Where an operation may run on the GPU, the selftest sends a batch large enough to be
//! routed there and compares it with the CPU reference item by item.

use crate::snapshot::SelftestResult;
use gpu_crypto::{
    BackendChoice, BlsItem, BlsScheme, DomainSeparator, Engine, G1Affine, G1Projective, G2Affine,
    GpuStatus, MsmInput, Operation, Scalar, VerifyError,
};

const SEPARATOR: &str = "sovereign-node-selftest";
/// SHA-256(len || "sovereign-node-selftest" || "abc") and of the empty chunk (python hashlib).
const SHA_ABC: &str = "c726891aae3d8121fb7a7521e9123d5b1e221443867f8934a6387fcf9d56fdfb";
const SHA_EMPTY: &str = "754502c9b567b180d8c9afe84d0ec2ad6ba1de5c27b0a7d93e8a639371739466";
/// The compressed BLS12-381 G1 generator (zkcrypto/IETF serialisation).
const G1_GENERATOR: &str = "97f1d3a73197d7942695638c4fa9ac0fc3688c4f9774b905a14e3a3f171bac586c55e83ff97a1aeffb3af00adb22c6bb";

struct Checks(Vec<String>, bool);

impl Checks {
    fn check(&mut self, ok: bool, what: impl Into<String>) {
        let what = what.into();
        if ok {
            self.0.push(format!("ok: {what}"));
        } else {
            self.1 = false;
            self.0.push(format!("FAILED: {what}"));
        }
    }
}

/// How many items a selftest batch of `op` needs so the engine routes it to the GPU
/// (1 item where the operation runs on the CPU: the known answers are enough).
fn batch_for(engine: &Engine, op: Operation) -> usize {
    let gpu_ready = matches!(engine.gpu_status(), GpuStatus::Ready { .. });
    let p = engine.policy().operation(op);
    if gpu_ready && p.backend != BackendChoice::Cpu {
        p.gpu_min_batch.max(1)
    } else {
        1
    }
}

/// Runs the selftest through `engine` (its stats count these calls like any other).
pub fn selftest(engine: &Engine) -> SelftestResult {
    let reference = Engine::cpu_only();
    let mut c = Checks(Vec::new(), true);

    // SHA-256 with the IC's length-prefixed domain separator.
    match DomainSeparator::new(SEPARATOR) {
        Ok(sep) => {
            let n = batch_for(engine, Operation::Sha256).max(2);
            let mut chunks: Vec<Vec<u8>> = vec![b"abc".to_vec(), Vec::new()];
            chunks.extend((2..n).map(|i| vec![(i % 251) as u8; 1 + i % 4096]));
            let refs: Vec<&[u8]> = chunks.iter().map(|v| v.as_slice()).collect();
            match (
                engine.sha256_chunks(&sep, &refs),
                reference.sha256_chunks(&sep, &refs),
            ) {
                (Ok(got), Ok(want)) => {
                    c.check(
                        got.first().map(hex::encode).as_deref() == Some(SHA_ABC)
                            && got.get(1).map(hex::encode).as_deref() == Some(SHA_EMPTY),
                        "sha256: known answers",
                    );
                    c.check(
                        got == want,
                        format!("sha256: {n} chunks equal the CPU reference"),
                    );
                }
                (Err(e), _) | (_, Err(e)) => c.check(false, format!("sha256: {e}")),
            }
        }
        Err(e) => c.check(false, format!("sha256: {e}")),
    }

    // G1 decompression: the generator decodes to itself; a flipped flag is rejected.
    let g = G1Affine::generator();
    let mut encodings = vec![g.to_compressed(), {
        let mut bad = g.to_compressed();
        bad[0] &= 0x7f; // compression flag cleared
        bad
    }];
    let n = batch_for(engine, Operation::Decompress).max(2);
    let mut p = G1Projective::from(g);
    for _ in 2..n {
        p += g;
        encodings.push(G1Affine::from(p).to_compressed());
    }
    c.check(
        hex::encode(g.to_compressed()) == G1_GENERATOR,
        "decompress: generator encoding is the known one",
    );
    match (
        engine.g1_decompress(&encodings),
        reference.g1_decompress(&encodings),
    ) {
        (Ok(got), Ok(want)) => {
            c.check(
                matches!(got.first(), Some(Ok(x)) if *x == g) && matches!(got.get(1), Some(Err(_))),
                "decompress: generator accepted, bad flag rejected",
            );
            c.check(
                got == want,
                format!("decompress: {n} items equal the CPU reference"),
            );
        }
        (Err(e), _) | (_, Err(e)) => c.check(false, format!("decompress: {e}")),
    }

    // MSM: sum(i * (i*G)) for i = 1..=n equals (sum i^2) * G.
    let n = batch_for(engine, Operation::Msm).max(3);
    let mut points = Vec::with_capacity(n);
    let mut p = G1Projective::from(g);
    for _ in 0..n {
        points.push(G1Affine::from(p));
        p += g;
    }
    let scalars: Vec<Scalar> = (1..=n as u64).map(Scalar::from).collect();
    // n <= a few thousand: the sum of squares fits in u64 by far.
    let sum_sq: u64 = (1..=n as u64).map(|i| i * i).sum();
    let expected = G1Affine::from(g * Scalar::from(sum_sq));
    let input = [MsmInput {
        points: &points,
        scalars: &scalars,
    }];
    match (engine.g1_msm_batch(&input), reference.g1_msm_batch(&input)) {
        (Ok(got), Ok(want)) => {
            c.check(
                got.first().map(G1Affine::from) == Some(expected),
                format!("msm: {n} points, known answer"),
            );
            c.check(got == want, "msm: equals the CPU reference");
        }
        (Err(e), _) | (_, Err(e)) => c.check(false, format!("msm: {e}")),
    }

    // BLS: a signature made here verifies; the same signature on another message fails.
    let sk = Scalar::from(0x5eed_u64);
    let pk = G2Affine::from(G2Affine::generator() * sk).to_compressed();
    let n = batch_for(engine, Operation::BlsVerify).max(2);
    let messages: Vec<Vec<u8>> = (0..n)
        .map(|i| format!("selftest message {i}").into_bytes())
        .collect();
    let sig0 = G1Affine::from(
        gpu_crypto::cpu::hash_message_to_g1(BlsScheme::Threshold, &messages[0]) * sk,
    )
    .to_compressed();
    let items: Vec<BlsItem> = messages
        .iter()
        .map(|m| BlsItem {
            signature: &sig0,
            public_key: &pk,
            message: m,
            scheme: BlsScheme::Threshold,
        })
        .collect();
    match (
        engine.bls_verify_batch(&items),
        reference.bls_verify_batch(&items),
    ) {
        (Ok(got), Ok(want)) => {
            c.check(
                matches!(got.first(), Some(Ok(())))
                    && matches!(got.get(1), Some(Err(VerifyError::Invalid))),
                "bls_verify: valid signature accepted, wrong message rejected",
            );
            c.check(
                got == want,
                format!("bls_verify: {n} verdicts equal the CPU reference"),
            );
        }
        (Err(e), _) | (_, Err(e)) => c.check(false, format!("bls_verify: {e}")),
    }

    SelftestResult {
        passed: c.1,
        checks: c.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_engine_passes_and_counts() {
        let engine = Engine::cpu_only();
        let r = selftest(&engine);
        assert!(r.passed, "{:#?}", r.checks);
        assert_eq!(r.checks.len(), 9, "{:#?}", r.checks);
        let stats = engine.stats();
        let cpu_calls: u64 = stats.operations.iter().map(|o| o.calls).sum();
        assert_eq!(cpu_calls, 4);
    }
}
