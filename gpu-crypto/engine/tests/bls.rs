//! BLS batch verification: real IC mainnet signatures, the hash to G1 against blst's,
//! valid and corrupted batches (distinct messages and same-message batches of 28 and
//! 100) with per-item verdicts cross-checked against blst's `min_sig` verification,
//! invalid encodings, and the identity rules of the replica.

mod gpu_common;

use blst::BLST_ERROR;
use blst::min_sig::{PublicKey, SecretKey, Signature};
use gpu_common::{Owned, items};
use gpu_crypto::{BlsScheme, DecodeError, Engine, G1Affine, G2Affine, Scalar, VerifyError, cpu};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn verify(batch: &[Owned]) -> Vec<Result<(), VerifyError>> {
    let via_cpu = cpu::bls_verify_batch(&items(batch));
    let via_engine = Engine::cpu_only()
        .bls_verify_batch(&items(batch))
        .expect("cpu engine");
    assert_eq!(via_cpu, via_engine);
    via_cpu
}

fn secret_key(rng: &mut ChaCha20Rng) -> SecretKey {
    let mut ikm = [0u8; 32];
    rng.fill(&mut ikm);
    SecretKey::key_gen(&ikm, &[]).expect("32 bytes of key material")
}

/// An item signed by blst (an implementation independent of ours).
fn signed(rng: &mut ChaCha20Rng, message: Vec<u8>, scheme: BlsScheme) -> (Owned, SecretKey) {
    let sk = secret_key(rng);
    let item = Owned {
        signature: sk.sign(&message, scheme.dst(), &[]).to_bytes(),
        public_key: sk.sk_to_pk().to_bytes(),
        message,
        scheme,
    };
    (item, sk)
}

fn random_message(rng: &mut ChaCha20Rng) -> Vec<u8> {
    let len = rng.gen_range(0..80);
    (0..len).map(|_| rng.r#gen()).collect()
}

/// blst's `min_sig` verdict for one item (group checks on both points).
fn blst_verdict(item: &Owned) -> BLST_ERROR {
    let Ok(sig) = Signature::from_bytes(&item.signature) else {
        return BLST_ERROR::BLST_BAD_ENCODING;
    };
    let Ok(pk) = PublicKey::from_bytes(&item.public_key) else {
        return BLST_ERROR::BLST_BAD_ENCODING;
    };
    sig.verify(true, &item.message, item.scheme.dst(), &[], &pk, true)
}

/// Our verdicts must equal the expected ones, and blst must agree item by item (no
/// identity points in these batches, where blst's rules differ; see below).
fn assert_verdicts(batch: &[Owned], expected: &[Result<(), VerifyError>]) {
    let ours = verify(batch);
    assert_eq!(ours.len(), batch.len());
    for (i, ((item, got), want)) in batch.iter().zip(&ours).zip(expected).enumerate() {
        assert_eq!(got, want, "item {i}");
        let blst_ok = blst_verdict(item) == BLST_ERROR::BLST_SUCCESS;
        assert_eq!(
            got.is_ok(),
            blst_ok,
            "item {i}: blst min_sig disagrees ({:?})",
            blst_verdict(item)
        );
    }
}

/// Real threshold signatures of the IC mainnet (certificates: the message is
/// `"\x0Dic-state-root" || root hash`), as published in the test suite of DFINITY's
/// `ic-verify-bls-signature` crate and copied into EdjCase.ICP's BLS tests
/// (`DefaultBlsCryptographyTests.cs`). The first key is the IC root key.
const IC_MAINNET_VECTORS: [(&str, &str, &str); 2] = [
    (
        "814c0e6ec71fab583b08bd81373c255c3c371b2e84863c98a4f1e08b74235d14fb5d9c0cd546d9685f913a0c0b2cc5341583bf4b4392e467db96d65b9bb4cb717112f8472e0d5a4d14505ffd7484b01291091c5f87b98883463f98091a0baaae",
        "0d69632d73746174652d726f6f74e6c01e909b4923345ce5970962bcfe3004bfd8474a21dae28f50692502f46d90",
        "ace9fcdd9bc977e05d6328f889dc4e7c99114c737a494653cb27a1f55c06f4555e0f160980af5ead098acc195010b2f7",
    ),
    (
        "9933e1f89e8a3c4d7fdcccdbd518089e2bd4d8180a261f18d9c247a52768ebce98dc7328a39814a8f911086a1dd50cbe015e2a53b7bf78b55288893daa15c346640e8831d72a12bdedd979d28470c34823b8d1c3f4795d9c3984a247132e94fe",
        "0d69632d73746174652d726f6f74b294b418b11ebe5dd7dd1dcb099e4e0372b9a42aef7a7a37fb4f25667d705ea9",
        "89a2be21b5fa8ac9fab1527e041327ce899d7da971436a1f2165393947b4d942365bfe5488710e61a619ba48388a21b1",
    ),
];

fn mainnet_item(i: usize, scheme: BlsScheme) -> Owned {
    let (pk, msg, sig) = IC_MAINNET_VECTORS[i];
    Owned {
        signature: hex::decode(sig).unwrap().try_into().unwrap(),
        public_key: hex::decode(pk).unwrap().try_into().unwrap(),
        message: hex::decode(msg).unwrap(),
        scheme,
    }
}

#[test]
fn ic_mainnet_certificate_signatures_verify_under_the_threshold_scheme() {
    let good: Vec<Owned> = (0..2)
        .map(|i| mainnet_item(i, BlsScheme::Threshold))
        .collect();
    assert_verdicts(&good, &[Ok(()), Ok(())]);
    // The multi-signature tag, a changed message, and swapped signatures all fail.
    let mut bad: Vec<Owned> = (0..2)
        .map(|i| mainnet_item(i, BlsScheme::MultiSig))
        .collect();
    let mut changed = mainnet_item(0, BlsScheme::Threshold);
    changed.message[20] ^= 1;
    bad.push(changed);
    let mut swapped = mainnet_item(1, BlsScheme::Threshold);
    swapped.signature = mainnet_item(0, BlsScheme::Threshold).signature;
    bad.push(swapped);
    assert_verdicts(&bad, &[Err(VerifyError::Invalid); 4]);
}

#[test]
fn hash_to_g1_equals_blst_for_both_schemes() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    for scheme in BlsScheme::ALL {
        for _ in 0..8 {
            let message = random_message(&mut rng);
            let sk = secret_key(&mut rng);
            // Sign with ic_bls12_381 and our hash; blst signs with its own hash_to_curve.
            let mut le = sk.to_bytes();
            le.reverse();
            let scalar = Scalar::from_bytes(&le).unwrap();
            let ours = G1Affine::from(cpu::hash_message_to_g1(scheme, &message) * scalar);
            assert_eq!(
                ours.to_compressed(),
                sk.sign(&message, scheme.dst(), &[]).to_bytes()
            );
        }
    }
}

#[test]
fn empty_single_and_small_batches() {
    assert_eq!(verify(&[]), vec![]);
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    for n in 1..=6 {
        let batch: Vec<Owned> = (0..n)
            .map(|i| signed(&mut rng, vec![i as u8; i], BlsScheme::ALL[i % 2]).0)
            .collect();
        assert_verdicts(&batch, &vec![Ok(()); n]);
    }
}

/// How one item of a batch is spoiled.
#[derive(Debug, Clone, Copy)]
enum Spoil {
    /// A valid signature of another message under the same key.
    OtherMessageSignature,
    /// The message changed after signing.
    WrongMessage,
    /// Another key.
    WrongKey,
    /// The right signature under the other scheme's tag.
    WrongScheme,
    /// Compression flag cleared on the signature.
    SignatureNotCompressed,
    /// Public key x.c0 >= p.
    PublicKeyNonCanonical,
    /// Signature: an on-curve point outside G1.
    SignatureNotInSubgroup,
}

fn spoil(
    item: &mut Owned,
    sk: &SecretKey,
    how: Spoil,
    rng: &mut ChaCha20Rng,
) -> Result<(), VerifyError> {
    match how {
        Spoil::OtherMessageSignature => {
            let mut other = item.message.clone();
            other.push(1);
            item.signature = sk.sign(&other, item.scheme.dst(), &[]).to_bytes();
            Err(VerifyError::Invalid)
        }
        Spoil::WrongMessage => {
            item.message.push(0x55);
            Err(VerifyError::Invalid)
        }
        Spoil::WrongKey => {
            item.public_key = secret_key(rng).sk_to_pk().to_bytes();
            Err(VerifyError::Invalid)
        }
        Spoil::WrongScheme => {
            item.scheme = match item.scheme {
                BlsScheme::Threshold => BlsScheme::MultiSig,
                BlsScheme::MultiSig => BlsScheme::Threshold,
            };
            Err(VerifyError::Invalid)
        }
        Spoil::SignatureNotCompressed => {
            item.signature[0] &= 0x7f;
            Err(VerifyError::Signature(DecodeError::NotCompressed))
        }
        Spoil::PublicKeyNonCanonical => {
            item.public_key[48..].copy_from_slice(&cpu::P_BYTES);
            Err(VerifyError::PublicKey(DecodeError::NonCanonical))
        }
        Spoil::SignatureNotInSubgroup => {
            // (0, 2) has order 3: on the curve, not in G1.
            let mut enc = [0u8; 48];
            enc[0] = 0x80;
            item.signature = enc;
            Err(VerifyError::Signature(DecodeError::NotInSubgroup))
        }
    }
}

const SPOILS: [Spoil; 7] = [
    Spoil::OtherMessageSignature,
    Spoil::WrongMessage,
    Spoil::WrongKey,
    Spoil::WrongScheme,
    Spoil::SignatureNotCompressed,
    Spoil::PublicKeyNonCanonical,
    Spoil::SignatureNotInSubgroup,
];

/// A batch of `n` items (distinct messages unless `same_message`), with `bad` items
/// spoiled at random positions; checks every verdict.
fn run_batch(seed: u64, n: usize, bad: usize, same_message: bool) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let shared = random_message(&mut rng);
    let mut batch = Vec::with_capacity(n);
    let mut keys = Vec::with_capacity(n);
    for i in 0..n {
        let message = if same_message {
            shared.clone()
        } else {
            random_message(&mut rng)
        };
        let scheme = if same_message {
            BlsScheme::Threshold
        } else {
            BlsScheme::ALL[i % 2]
        };
        let (item, sk) = signed(&mut rng, message, scheme);
        batch.push(item);
        keys.push(sk);
    }
    let mut expected = vec![Ok(()); n];
    let mut positions: Vec<usize> = (0..n).collect();
    for k in 0..bad.min(n) {
        let j = rng.gen_range(k..n);
        positions.swap(k, j);
        let p = positions[k];
        let how = SPOILS[rng.gen_range(0..SPOILS.len())];
        expected[p] = spoil(&mut batch[p], &keys[p], how, &mut rng);
    }
    assert_verdicts(&batch, &expected);
}

#[test]
fn distinct_message_batches_name_exactly_the_bad_items() {
    for (seed, n, bad) in [
        (10, 40, 0),
        (11, 40, 1),
        (12, 33, 5),
        (13, 24, 24),
        (14, 17, 9),
    ] {
        run_batch(seed, n, bad, false);
    }
}

#[test]
fn same_message_batches_of_28_and_100() {
    for (seed, n, bad) in [
        (20, 28, 0),
        (21, 28, 1),
        (22, 28, 4),
        (23, 100, 0),
        (24, 100, 3),
    ] {
        run_batch(seed, n, bad, true);
    }
}

#[test]
fn swapped_signatures_fail_both_items() {
    let mut rng = ChaCha20Rng::seed_from_u64(30);
    let mut batch: Vec<Owned> = (0..12)
        .map(|_| {
            let message = random_message(&mut rng);
            signed(&mut rng, message, BlsScheme::MultiSig).0
        })
        .collect();
    let (a, b) = (3, 8);
    let sig_a = batch[a].signature;
    batch[a].signature = batch[b].signature;
    batch[b].signature = sig_a;
    let mut expected = vec![Ok(()); 12];
    expected[a] = Err(VerifyError::Invalid);
    expected[b] = Err(VerifyError::Invalid);
    assert_verdicts(&batch, &expected);
    // Mixed groups: one message shared by six items (two of them spoiled) plus
    // singletons, in one batch.
    let shared = b"one message, many signers".to_vec();
    let mut keys = Vec::new();
    let mut batch = Vec::new();
    for i in 0..14 {
        let message = if i % 2 == 0 && i < 12 {
            shared.clone()
        } else {
            random_message(&mut rng)
        };
        let (item, sk) = signed(&mut rng, message, BlsScheme::Threshold);
        batch.push(item);
        keys.push(sk);
    }
    let mut expected = vec![Ok(()); 14];
    expected[2] = spoil(&mut batch[2], &keys[2], Spoil::WrongKey, &mut rng);
    expected[10] = spoil(
        &mut batch[10],
        &keys[10],
        Spoil::OtherMessageSignature,
        &mut rng,
    );
    expected[5] = spoil(&mut batch[5], &keys[5], Spoil::WrongMessage, &mut rng);
    assert_verdicts(&batch, &expected);
}

/// The replica decodes with `from_compressed` (the identity is a valid encoding) and
/// checks `e(sig, -g2) * e(H(m), pk) == 1` with no identity test, so the identity
/// signature under the identity key verifies for every message there, and we must
/// agree. blst refuses the identity key: a documented difference between blst and the
/// replica, not between us and the replica.
#[test]
fn identity_points_follow_the_replica() {
    let mut rng = ChaCha20Rng::seed_from_u64(40);
    let identity_sig = G1Affine::identity().to_compressed();
    let identity_pk = G2Affine::identity().to_compressed();
    let (real, _) = signed(&mut rng, b"message".to_vec(), BlsScheme::Threshold);
    let cases = [
        (identity_sig, identity_pk, Ok(())),
        (identity_sig, real.public_key, Err(VerifyError::Invalid)),
        (real.signature, identity_pk, Err(VerifyError::Invalid)),
    ];
    // Alone (item-by-item path) and inside a larger batch (combination path).
    let mut batch: Vec<Owned> = cases
        .iter()
        .map(|(s, p, _)| Owned {
            signature: *s,
            public_key: *p,
            message: b"message".to_vec(),
            scheme: BlsScheme::Threshold,
        })
        .collect();
    let expected: Vec<_> = cases.iter().map(|c| c.2).collect();
    assert_eq!(verify(&batch), expected);
    for _ in 0..10 {
        let message = random_message(&mut rng);
        batch.push(signed(&mut rng, message, BlsScheme::MultiSig).0);
    }
    let got = verify(&batch);
    assert_eq!(got[..3], expected[..]);
    assert!(got[3..].iter().all(|v| v.is_ok()));
    // The replica's exact check agrees on the identity pair.
    let h = cpu::hash_message_to_g1(BlsScheme::Threshold, b"message");
    assert!(cpu::verify_one(
        &G1Affine::identity(),
        &G2Affine::identity(),
        &h
    ));
    // blst refuses it (BLST_VERIFY_FAIL from its infinity-key check in 0.3.17).
    assert_ne!(blst_verdict(&batch[0]), BLST_ERROR::BLST_SUCCESS);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn random_batches_match_blst_item_by_item(seed in any::<u64>(), n in 0usize..20, bad in 0usize..20, same in any::<bool>()) {
        run_batch(seed, n, bad.min(n), same);
    }
}
