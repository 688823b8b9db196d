//! Dealings end to end: honest dealings are accepted and decrypt to the polynomial's
//! evaluations; every corrupted component is rejected and named.

use ic_bls12_381::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use nidkg::params::{NUM_CHUNKS, NUM_ZK_REPETITIONS, chunking_bound_z};
use nidkg::{
    BatchOps, ChunkingCheck, CpuBatchOps, DecryptError, DemoSetup, SharingCheck, ThresholdKind,
    VerifyError, create_dealing, decrypt_share, generate_receiver_key, verify_against, verify_with,
};
use nidkg::{Component, DealingFile};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use std::sync::OnceLock;

/// A change made to a dealing to corrupt it.
type Mutation = Box<dyn Fn(&mut nidkg::Dealing)>;

/// One n = 13 high-threshold setup shared by the tests (creating it costs seconds).
fn setup13() -> &'static DemoSetup {
    static SETUP: OnceLock<DemoSetup> = OnceLock::new();
    SETUP.get_or_init(|| DemoSetup::new(13, ThresholdKind::High, 42).expect("valid shape"))
}

fn verify_file(file: &DealingFile) -> Result<nidkg::Report, VerifyError> {
    verify_with(&CpuBatchOps::single_thread(), &file.to_bytes())
}

/// The file with its dealing replaced by `dealing`'s encoding.
fn with_dealing(dealing: &nidkg::Dealing) -> DealingFile {
    let mut file = setup13().file.clone();
    file.dealing = dealing.to_bytes();
    file
}

/// Overwrites the dealing's element stream at `at` with `bytes`, keeping the IC's encoding.
fn patch(file: &mut DealingFile, at: usize, bytes: &[u8]) {
    let (n, t, mut stream) = nidkg::ic_cbor::dealing_stream(&file.dealing).unwrap();
    stream[at..at + bytes.len()].copy_from_slice(bytes);
    file.dealing = nidkg::ic_cbor::dealing_to_cbor(&stream, n, t);
}

fn bump_g1(p: &mut G1Affine) {
    *p = G1Affine::from(G1Projective::from(*p) + G1Projective::generator());
}

fn bump_g2(p: &mut G2Affine) {
    *p = G2Affine::from(G2Projective::from(*p) + G2Projective::generator());
}

#[test]
fn honest_dealings_at_n13_are_accepted_on_one_and_all_threads() {
    for kind in [ThresholdKind::Low, ThresholdKind::High] {
        let setup = DemoSetup::new(13, kind, 7).unwrap();
        let bytes = setup.file.to_bytes();
        for ops in [CpuBatchOps::single_thread(), CpuBatchOps::rayon()] {
            let report = verify_with(&ops, &bytes).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
            assert_eq!(report.n, 13);
            assert_eq!(report.t, kind.threshold(13));
            assert_eq!(report.g1_points, 18 * 13 + 101);
            assert_eq!(report.g2_points, kind.threshold(13) + 17);
            assert_eq!(report.backend, ops.name());
        }
    }
}

#[test]
fn dealing_size_is_the_ics() {
    let setup = setup13();
    let t = setup.file.t;
    let elements = |file: &DealingFile| nidkg::ic_cbor::dealing_stream(&file.dealing).unwrap();
    let (n, coefficients, stream) = elements(&setup.file);
    assert_eq!((n, coefficients), (13, t));
    assert_eq!(stream.len(), 96 * t + 848 * 13 + 7600);
    assert_eq!(stream.len(), nidkg::dealing_size(13, t));
    let low = DemoSetup::new(4, ThresholdKind::Low, 1).unwrap();
    assert_eq!(elements(&low.file).2.len(), 96 * 2 + 848 * 4 + 7600);
}

#[test]
fn dealings_are_deterministic_in_the_seed() {
    let a = nidkg::deal(4, 9).unwrap();
    let b = nidkg::deal(4, 9).unwrap();
    let c = nidkg::deal(4, 10).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert!(nidkg::verify(&a).is_ok());
    assert!(nidkg::verify(&c).is_ok());
}

#[test]
fn receivers_decrypt_the_polynomial_evaluations() {
    let setup = setup13();
    let d = &setup.dealing;
    let ad = &setup.file.associated_data;
    for (i, key) in setup.secret_keys.iter().enumerate() {
        let share = decrypt_share(key, d, i, setup.file.epoch, ad).unwrap();
        // g2^share == sum_k A_k (i + 1)^k: the share is p(i + 1).
        let x = Scalar::from(i as u64 + 1);
        let expect = d
            .public_coefficients
            .iter()
            .rev()
            .fold(G2Projective::identity(), |acc, a| acc * x + a);
        assert_eq!(G2Projective::generator() * share, expect, "receiver {i}");
    }
}

fn lagrange_at_zero(points: &[(u64, Scalar)]) -> Scalar {
    points.iter().fold(Scalar::zero(), |acc, (xi, yi)| {
        let l = points
            .iter()
            .filter(|(xj, _)| xj != xi)
            .fold(Scalar::one(), |l, (xj, _)| {
                let xi = Scalar::from(*xi);
                let xj = Scalar::from(*xj);
                l * xj * (xj - xi).invert().unwrap()
            });
        acc + l * yi
    })
}

#[test]
fn any_threshold_of_decrypted_shares_recovers_the_secret() {
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let (pks, sks): (Vec<_>, Vec<_>) = (0..7)
        .map(|_| generate_receiver_key(&mut rng, b"reg"))
        .unzip();
    let keys: Vec<G1Affine> = pks.iter().map(|k| k.key).collect();
    let secret = Scalar::from(0x5ec2e7u64);
    let t = ThresholdKind::High.threshold(7);
    let d = create_dealing(&mut rng, &keys, t, 3, b"dkg-7", Some(secret)).unwrap();
    assert_eq!(
        d.public_coefficients[0],
        G2Affine::from(G2Projective::generator() * secret)
    );
    let shares: Vec<(u64, Scalar)> = [6usize, 1, 4, 2, 0]
        .iter()
        .take(t)
        .map(|&i| {
            (
                i as u64 + 1,
                decrypt_share(&sks[i], &d, i, 3, b"dkg-7").unwrap(),
            )
        })
        .collect();
    assert_eq!(lagrange_at_zero(&shares), secret);
    // Fewer than t shares interpolate to something else.
    assert_ne!(lagrange_at_zero(&shares[..t - 1]), secret);
}

#[test]
fn proof_of_possession_binds_the_registration_context() {
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let (pk, _) = generate_receiver_key(&mut rng, b"node-3");
    assert!(pk.verify_pop(b"node-3"));
    assert!(!pk.verify_pop(b"node-4"));
    let mut forged = pk;
    forged.pop_response += Scalar::one();
    assert!(!forged.verify_pop(b"node-3"));
}

#[test]
fn key_update_erases_past_epochs_and_keeps_later_ones() {
    let mut rng = ChaCha20Rng::seed_from_u64(12);
    let (pk, mut sk) = generate_receiver_key(&mut rng, b"r");
    let keys = [pk.key];
    let (e0, e1, e2) = (7u32, 0xFFFF_FFFE, 0xFFFF_FFFF);
    let dealings: Vec<_> = [e0, e1, e2]
        .iter()
        .map(|&e| create_dealing(&mut rng, &keys, 1, e, b"ad", None).unwrap())
        .collect();
    let expected = |d: &nidkg::Dealing| d.public_coefficients[0];
    let g2_of = |s: Scalar| G2Affine::from(G2Projective::generator() * s);
    assert_eq!(
        g2_of(decrypt_share(&sk, &dealings[0], 0, e0, b"ad").unwrap()),
        expected(&dealings[0])
    );

    sk.update_to(e1, &mut rng);
    assert_eq!(sk.current_epoch(), e1);
    assert_eq!(sk.node_count(), 2, "the leaf and its right sibling");
    assert_eq!(
        decrypt_share(&sk, &dealings[0], 0, e0, b"ad"),
        Err(DecryptError::ExpiredKey { epoch: e0 })
    );
    for (d, e) in dealings[1..].iter().zip([e1, e2]) {
        assert_eq!(
            g2_of(decrypt_share(&sk, d, 0, e, b"ad").unwrap()),
            expected(d)
        );
    }
    sk.update_to(e2, &mut rng);
    assert_eq!(sk.node_count(), 1);
    assert!(decrypt_share(&sk, &dealings[1], 0, e1, b"ad").is_err());
    assert_eq!(
        g2_of(decrypt_share(&sk, &dealings[2], 0, e2, b"ad").unwrap()),
        expected(&dealings[2])
    );
}

#[test]
fn every_ciphertext_row_is_checked() {
    for row in 0..NUM_CHUNKS {
        let mut d = setup13().dealing.clone();
        bump_g2(&mut d.ciphertext.zz[row]);
        assert_eq!(
            verify_file(&with_dealing(&d)),
            Err(VerifyError::CiphertextIntegrity { row }),
            "row {row}"
        );
    }
}

#[test]
fn ciphertext_binds_chunks_randomizers_epoch_and_context() {
    let base = &setup13().dealing;
    let mutations: Vec<(&str, Mutation)> = vec![
        ("chunk", Box::new(|d| bump_g1(&mut d.ciphertext.cc[5][9]))),
        ("r", Box::new(|d| bump_g1(&mut d.ciphertext.rr[3]))),
        ("s", Box::new(|d| bump_g1(&mut d.ciphertext.ss[15]))),
    ];
    for (name, mutate) in mutations {
        let mut d = base.clone();
        mutate(&mut d);
        assert!(
            matches!(
                verify_file(&with_dealing(&d)),
                Err(VerifyError::CiphertextIntegrity { .. })
            ),
            "{name}"
        );
    }
    let mut file = setup13().file.clone();
    file.epoch += 1;
    assert!(matches!(
        verify_file(&file),
        Err(VerifyError::CiphertextIntegrity { .. })
    ));
    let mut file = setup13().file.clone();
    file.associated_data.push(0);
    assert!(matches!(
        verify_file(&file),
        Err(VerifyError::CiphertextIntegrity { .. })
    ));
}

#[test]
fn every_chunking_proof_component_is_checked() {
    let base = &setup13().dealing;
    let n = 13;
    let mut cases: Vec<(String, Mutation)> = vec![
        ("y0".into(), Box::new(|d| bump_g1(&mut d.chunking.y0))),
        ("yy".into(), Box::new(|d| bump_g1(&mut d.chunking.yy))),
        (
            "z_beta".into(),
            Box::new(|d| d.chunking.z_beta += Scalar::one()),
        ),
    ];
    for k in [0, 17, NUM_ZK_REPETITIONS - 1] {
        cases.push((
            format!("bb[{k}]"),
            Box::new(move |d| bump_g1(&mut d.chunking.bb[k])),
        ));
        cases.push((
            format!("cc[{k}]"),
            Box::new(move |d| bump_g1(&mut d.chunking.cc[k])),
        ));
        cases.push((
            format!("z_s[{k}]"),
            Box::new(move |d| d.chunking.z_s[k] += Scalar::one()),
        ));
    }
    for i in [0, 6, n] {
        cases.push((
            format!("dd[{i}]"),
            Box::new(move |d| bump_g1(&mut d.chunking.dd[i])),
        ));
    }
    for i in [0, n - 1] {
        cases.push((
            format!("z_r[{i}]"),
            Box::new(move |d| d.chunking.z_r[i] += Scalar::one()),
        ));
    }
    for (name, mutate) in cases {
        let mut d = base.clone();
        mutate(&mut d);
        assert!(
            matches!(
                verify_file(&with_dealing(&d)),
                Err(VerifyError::ChunkingProof(_))
            ),
            "{name}: {:?}",
            verify_file(&with_dealing(&d))
        );
    }
    // A response at the bound is out of range, by index.
    let mut d = base.clone();
    d.chunking.z_s[9] = Scalar::from(chunking_bound_z(n));
    assert_eq!(
        verify_file(&with_dealing(&d)),
        Err(VerifyError::ChunkingProof(ChunkingCheck::ResponseRange(9)))
    );
    let mut d = base.clone();
    d.chunking.z_s[0] = -Scalar::one();
    assert_eq!(
        verify_file(&with_dealing(&d)),
        Err(VerifyError::ChunkingProof(ChunkingCheck::ResponseRange(0)))
    );
}

#[test]
fn every_sharing_proof_component_is_checked() {
    let base = &setup13().dealing;
    let cases: Vec<(&str, Mutation, Option<SharingCheck>)> = vec![
        ("ff", Box::new(|d| bump_g1(&mut d.sharing.ff)), None),
        ("aa", Box::new(|d| bump_g2(&mut d.sharing.aa)), None),
        ("yy", Box::new(|d| bump_g1(&mut d.sharing.yy)), None),
        (
            "z_r",
            Box::new(|d| d.sharing.z_r += Scalar::one()),
            Some(SharingCheck::Randomizer),
        ),
        (
            "z_alpha",
            Box::new(|d| d.sharing.z_alpha += Scalar::one()),
            Some(SharingCheck::Coefficients),
        ),
        (
            "A_0",
            Box::new(|d| bump_g2(&mut d.public_coefficients[0])),
            None,
        ),
        (
            "A_last",
            Box::new(|d| bump_g2(d.public_coefficients.last_mut().unwrap())),
            None,
        ),
    ];
    for (name, mutate, check) in cases {
        let mut d = base.clone();
        mutate(&mut d);
        let result = verify_file(&with_dealing(&d));
        match check {
            Some(c) => assert_eq!(result, Err(VerifyError::SharingProof(c)), "{name}"),
            None => assert!(
                matches!(result, Err(VerifyError::SharingProof(_))),
                "{name}: {result:?}"
            ),
        }
    }
}

/// A compressed G1 encoding of a curve point outside the prime-order subgroup.
fn g1_outside_subgroup() -> [u8; 48] {
    for x in 1u8..=255 {
        let mut b = [0u8; 48];
        b[0] = 0x80;
        b[47] = x;
        if G1Affine::from_compressed_unchecked(&b).is_some().into()
            && G1Affine::from_compressed(&b).is_none().into()
        {
            return b;
        }
    }
    unreachable!("small x values give points outside the subgroup")
}

/// A compressed G2 encoding of a twist point outside the prime-order subgroup.
fn g2_outside_subgroup() -> [u8; 96] {
    for x in 1u8..=255 {
        let mut b = [0u8; 96];
        b[0] = 0x80;
        b[95] = x;
        if G2Affine::from_compressed_unchecked(&b).is_some().into()
            && G2Affine::from_compressed(&b).is_none().into()
        {
            return b;
        }
    }
    unreachable!("small x values give points outside the subgroup")
}

/// Byte offset of element `index` of `component` in the dealing encoding.
fn offset_of(n: usize, t: usize, component: Component, index: usize) -> usize {
    let mut at = 0;
    for (kind, c, count) in nidkg::encoding::dealing_layout(n, t) {
        if c == component {
            assert!(index < count);
            return at + index * kind.size();
        }
        at += kind.size() * count;
    }
    unreachable!()
}

#[test]
fn points_outside_the_subgroup_are_rejected_by_component() {
    let setup = setup13();
    let (n, t) = (13, setup.file.t);
    let bad1 = g1_outside_subgroup();
    let bad2 = g2_outside_subgroup();
    let g1_cases = [
        (Component::CiphertextR, 4),
        (Component::CiphertextS, 0),
        (Component::CiphertextChunk, 16 * 12 + 15),
        (Component::ChunkingY0, 0),
        (Component::ChunkingB, 31),
        (Component::ChunkingC, 2),
        (Component::ChunkingD, n),
        (Component::ChunkingY, 0),
        (Component::SharingF, 0),
        (Component::SharingY, 0),
    ];
    for (component, index) in g1_cases {
        let mut file = setup.file.clone();
        let at = offset_of(n, t, component, index);
        patch(&mut file, at, &bad1);
        assert_eq!(
            verify_file(&file),
            Err(VerifyError::Deserialize { component, index }),
            "{component}[{index}]"
        );
    }
    let g2_cases = [
        (Component::PublicCoefficient, t - 1),
        (Component::CiphertextZ, 7),
        (Component::SharingA, 0),
    ];
    for (component, index) in g2_cases {
        let mut file = setup.file.clone();
        let at = offset_of(n, t, component, index);
        patch(&mut file, at, &bad2);
        assert_eq!(
            verify_file(&file),
            Err(VerifyError::Deserialize { component, index }),
            "{component}[{index}]"
        );
    }
    let mut file = setup.file.clone();
    file.receiver_keys[3] = bad1;
    assert_eq!(
        verify_file(&file),
        Err(VerifyError::Deserialize {
            component: Component::ReceiverKey,
            index: 3
        })
    );
}

#[test]
fn malformed_encodings_are_rejected_by_component() {
    let setup = setup13();
    let (n, t) = (13, setup.file.t);
    // Not a point (x not on the curve / flag bits wrong).
    let mut file = setup.file.clone();
    let at = offset_of(n, t, Component::ChunkingB, 5);
    patch(&mut file, at, &[0xff; 48]);
    assert_eq!(
        verify_file(&file),
        Err(VerifyError::Deserialize {
            component: Component::ChunkingB,
            index: 5
        })
    );
    // A scalar not below the group order.
    for (component, index) in [
        (Component::ChunkingZr, 12),
        (Component::ChunkingZs, 31),
        (Component::ChunkingZbeta, 0),
        (Component::SharingZr, 0),
        (Component::SharingZalpha, 0),
    ] {
        let mut file = setup.file.clone();
        let at = offset_of(n, t, component, index);
        patch(&mut file, at, &[0xff; 32]);
        assert_eq!(
            verify_file(&file),
            Err(VerifyError::Deserialize { component, index }),
            "{component}[{index}]"
        );
    }
}

#[test]
fn wrong_receiver_keys_are_rejected() {
    let setup = setup13();
    let registered: Vec<[u8; 48]> = setup.file.receiver_keys.clone();
    let mut rng = ChaCha20Rng::seed_from_u64(99);
    let (other, _) = generate_receiver_key(&mut rng, b"x");
    let mut file = setup.file.clone();
    file.receiver_keys[8] = other.key.to_compressed();
    // Against the registry: named before any curve work.
    assert_eq!(
        verify_against(&CpuBatchOps::single_thread(), &file.to_bytes(), &registered),
        Err(VerifyError::WrongReceiverKey { index: 8 })
    );
    // Self-contained: the chunking proof's instance includes the keys, so it fails.
    assert!(matches!(
        verify_file(&file),
        Err(VerifyError::ChunkingProof(_))
    ));
    // The honest file passes against the registry.
    assert!(
        verify_against(
            &CpuBatchOps::single_thread(),
            &setup.file.to_bytes(),
            &registered
        )
        .is_ok()
    );
}

#[test]
fn unusable_inputs_are_named_as_such() {
    let bytes = setup13().file.to_bytes();
    let ops = CpuBatchOps::single_thread();
    for cut in [0, 10, 24, bytes.len() - 1] {
        let err = verify_with(&ops, &bytes[..cut]).unwrap_err();
        assert!(err.is_unusable_input(), "truncated to {cut}: {err}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    let err = verify_with(&ops, &longer).unwrap_err();
    assert!(
        matches!(err, VerifyError::Encoding(_)),
        "trailing byte: {err}"
    );
    let mut magic = bytes.clone();
    magic[0] ^= 1;
    assert!(matches!(
        verify_with(&ops, &magic),
        Err(VerifyError::Header(_))
    ));
    let mut shape = bytes.clone();
    shape[12..16].copy_from_slice(&14u32.to_be_bytes()); // t = 14 > n = 13
    assert!(matches!(
        verify_with(&ops, &shape),
        Err(VerifyError::Shape { n: 13, t: 14 })
    ));
    let mut huge = bytes;
    huge[8..12].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(matches!(
        verify_with(&ops, &huge),
        Err(VerifyError::Shape { .. })
    ));
}

#[test]
fn dealing_creation_rejects_bad_receiver_keys_and_shapes() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let keys = vec![G1Affine::generator(), G1Affine::identity()];
    assert_eq!(
        create_dealing(&mut rng, &keys, 1, 1, b"", None).unwrap_err(),
        nidkg::DealError::ReceiverKey { index: 1 }
    );
    assert_eq!(
        create_dealing(&mut rng, &keys[..1], 2, 1, b"", None).unwrap_err(),
        nidkg::DealError::Shape { n: 1, t: 2 }
    );
}

/// n = 28 and 40 at both thresholds (one set of receivers per n).
#[test]
fn honest_dealings_at_n28_and_n40_are_accepted() {
    for n in [28, 40] {
        let mut rng = ChaCha20Rng::seed_from_u64(n as u64);
        let keys: Vec<G1Affine> = (0..n)
            .map(|i| {
                generate_receiver_key(&mut rng, &(i as u32).to_be_bytes())
                    .0
                    .key
            })
            .collect();
        for kind in [ThresholdKind::Low, ThresholdKind::High] {
            let t = kind.threshold(n);
            let dealing = create_dealing(&mut rng, &keys, t, 5, b"round", None).unwrap();
            let file = DealingFile {
                epoch: 5,
                associated_data: b"round".to_vec(),
                receiver_keys: keys.iter().map(G1Affine::to_compressed).collect(),
                t,
                dealing: dealing.to_bytes(),
            };
            let stream = nidkg::ic_cbor::dealing_stream(&file.dealing).unwrap().2;
            assert_eq!(stream.len(), 96 * t + 848 * n + 7600);
            let report = verify_with(&CpuBatchOps::rayon(), &file.to_bytes())
                .unwrap_or_else(|e| panic!("n = {n} {kind:?}: {e}"));
            assert_eq!((report.n, report.t), (n, t));
        }
    }
}

/// `DemoSetup`'s dealings are the IC's: their bytes verify through `verify_ic` under the
/// IC's context (dealer 0, the setup's epoch and threshold) at n = 4 and both thresholds,
/// and not under another dealer index.
#[test]
fn demo_dealings_verify_as_the_ics_under_their_context() {
    for kind in [ThresholdKind::Low, ThresholdKind::High] {
        let setup = DemoSetup::new(4, kind, 3).unwrap();
        let context = nidkg::IcContext {
            dealer_index: nidkg::DEMO_DEALER_INDEX,
            threshold: setup.file.t,
            epoch: setup.file.epoch,
        };
        let ops = CpuBatchOps::single_thread();
        let keys = &setup.file.receiver_keys;
        nidkg::verify_ic(&ops, &setup.file.dealing, keys, &context)
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        let other = nidkg::IcContext {
            dealer_index: 1,
            ..context
        };
        assert!(matches!(
            nidkg::verify_ic(&ops, &setup.file.dealing, keys, &other),
            Err(VerifyError::CiphertextIntegrity { .. })
        ));
    }
}
