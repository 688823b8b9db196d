//! How the engine picks the BLS verification strategy (runs on CI, GPU or not): the
//! crossover counts distinct (scheme, message) pairs, so same-message batches
//! (certification shares) stay on the CPU path, which combines them into two pairings,
//! while distinct-message batches from the crossover go to the GPU where one is usable.
//! Verdicts are the CPU path's whichever way a batch goes.

use gpu_crypto::{
    BackendChoice, BlsItem, BlsScheme, Engine, G2Affine, GpuStatus, Operation, Policy, cpu,
};
use gpu_crypto_api::policy::bls_distinct_messages;
use gpu_crypto_api::stats::Executed;

fn item<'a>(
    sig: &'a [u8; 48],
    pk: &'a [u8; 96],
    message: &'a [u8],
    scheme: BlsScheme,
) -> BlsItem<'a> {
    BlsItem {
        signature: sig,
        public_key: pk,
        message,
        scheme,
    }
}

#[test]
fn distinct_messages_count_scheme_and_message() {
    let (sig, pk) = ([0u8; 48], [0u8; 96]);
    assert_eq!(bls_distinct_messages(&[]), 0);
    let same: Vec<BlsItem> = (0..28)
        .map(|_| item(&sig, &pk, b"root", BlsScheme::Threshold))
        .collect();
    assert_eq!(bls_distinct_messages(&same), 1);
    // The same bytes under the other scheme hash to another point.
    let mixed = [
        item(&sig, &pk, b"root", BlsScheme::Threshold),
        item(&sig, &pk, b"root", BlsScheme::MultiSig),
        item(&sig, &pk, b"", BlsScheme::MultiSig),
        item(&sig, &pk, b"", BlsScheme::MultiSig),
    ];
    assert_eq!(bls_distinct_messages(&mixed), 3);
    let messages: Vec<[u8; 8]> = (0..300u64).map(|i| i.to_le_bytes()).collect();
    let distinct: Vec<BlsItem> = messages
        .iter()
        .map(|m| item(&sig, &pk, m, BlsScheme::MultiSig))
        .collect();
    assert_eq!(bls_distinct_messages(&distinct), 300);
}

/// Signed items: secret keys 1..=n, public keys k * g2, signatures k * H(m).
fn signed(messages: &[Vec<u8>]) -> Vec<([u8; 48], [u8; 96])> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let sk = gpu_crypto::Scalar::from(i as u64 + 1);
            let h = cpu::hash_message_to_g1(BlsScheme::Threshold, m);
            (
                gpu_crypto::G1Affine::from(h * sk).to_compressed(),
                G2Affine::from(G2Affine::generator() * sk).to_compressed(),
            )
        })
        .collect()
}

fn executed(engine: &Engine) -> Vec<(Executed, u64)> {
    engine
        .stats()
        .operations
        .iter()
        .filter(|c| c.operation == Operation::BlsVerify && c.calls > 0)
        .map(|c| (c.executed, c.items))
        .collect()
}

#[test]
fn same_message_batches_stay_on_the_cpu_and_distinct_ones_follow_the_crossover() {
    let mut policy = Policy::cpu_only();
    policy.bls_verify.backend = BackendChoice::Auto;
    policy.bls_verify.gpu_min_batch = 8;
    let engine = Engine::new(policy).expect("auto never fails to build");
    let gpu_ready = matches!(engine.gpu_status(), GpuStatus::Ready { .. });
    if !gpu_ready {
        eprintln!(
            "no usable GPU ({:?}): every batch must run on the CPU",
            engine.gpu_status()
        );
    }

    // 28 shares of one message: one distinct message, below the crossover of 8.
    let shared: Vec<Vec<u8>> = (0..28).map(|_| b"certified state".to_vec()).collect();
    let keys = signed(&shared);
    let items: Vec<BlsItem> = keys
        .iter()
        .zip(&shared)
        .map(|((s, p), m)| item(s, p, m, BlsScheme::Threshold))
        .collect();
    let got = engine.bls_verify_batch(&items).expect("verify");
    assert_eq!(got, cpu::bls_verify_batch(&items));
    assert!(got.iter().all(|v| v.is_ok()));
    assert_eq!(executed(&engine), vec![(Executed::Cpu, 28)]);

    // 12 distinct messages, one signature corrupted: the GPU where usable.
    let distinct: Vec<Vec<u8>> = (0..12u8).map(|i| vec![i; 3]).collect();
    let mut keys = signed(&distinct);
    keys[5].0 = keys[6].0;
    let items: Vec<BlsItem> = keys
        .iter()
        .zip(&distinct)
        .map(|((s, p), m)| item(s, p, m, BlsScheme::Threshold))
        .collect();
    let got = engine.bls_verify_batch(&items).expect("verify");
    assert_eq!(got, cpu::bls_verify_batch(&items));
    assert_eq!(got.iter().filter(|v| v.is_err()).count(), 1);
    let want_backend = if gpu_ready {
        Executed::Gpu
    } else {
        Executed::Cpu
    };
    let runs = executed(&engine);
    assert!(
        runs.contains(&(want_backend, 12))
            || (want_backend == Executed::Cpu && runs == vec![(Executed::Cpu, 40)]),
        "{runs:?}"
    );
}
