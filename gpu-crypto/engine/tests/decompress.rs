//! G1/G2 decompression against `ic_bls12_381` (the accept set and points must be
//! identical) and against blst as an independent implementation, on the adversarial
//! corpus and on random inputs; and the corpus files against their generator.

use blst::{BLST_ERROR, blst_p1_affine, blst_p2_affine};
use gpu_crypto::corpus::{self, CorpusEntry};
use gpu_crypto::cpu;
use gpu_crypto::{DecodeError, Engine, G1Affine, G2Affine};
use proptest::prelude::*;
use std::collections::BTreeSet;

/// blst's verdict: `Ok(uncompressed bytes)` or `Err` with blst's coarser reason.
fn blst_g1(bytes: &[u8; 48]) -> Result<[u8; 96], BlstReject> {
    let mut affine = blst_p1_affine::default();
    // SAFETY: blst reads 48 bytes of a compressed G1 encoding.
    let err = unsafe { blst::blst_p1_uncompress(&mut affine, bytes.as_ptr()) };
    match err {
        BLST_ERROR::BLST_SUCCESS => {}
        BLST_ERROR::BLST_BAD_ENCODING => return Err(BlstReject::BadEncoding),
        BLST_ERROR::BLST_POINT_NOT_ON_CURVE => return Err(BlstReject::NotOnCurve),
        // blst's decoder itself refuses x = 0 (the order-3 points (0, +-2)).
        BLST_ERROR::BLST_POINT_NOT_IN_GROUP => return Err(BlstReject::NotInGroup),
        other => panic!("unexpected blst error {other:?}"),
    }
    // SAFETY: `affine` is a valid blst affine point.
    if !unsafe { blst::blst_p1_affine_in_g1(&affine) } {
        return Err(BlstReject::NotInGroup);
    }
    let mut out = [0u8; 96];
    // SAFETY: blst writes 96 bytes.
    unsafe { blst::blst_p1_affine_serialize(out.as_mut_ptr(), &affine) };
    Ok(out)
}

fn blst_g2(bytes: &[u8; 96]) -> Result<[u8; 192], BlstReject> {
    let mut affine = blst_p2_affine::default();
    // SAFETY: blst reads 96 bytes of a compressed G2 encoding.
    let err = unsafe { blst::blst_p2_uncompress(&mut affine, bytes.as_ptr()) };
    match err {
        BLST_ERROR::BLST_SUCCESS => {}
        BLST_ERROR::BLST_BAD_ENCODING => return Err(BlstReject::BadEncoding),
        BLST_ERROR::BLST_POINT_NOT_ON_CURVE => return Err(BlstReject::NotOnCurve),
        // blst's decoder itself refuses x = 0 (the order-3 points (0, +-2)).
        BLST_ERROR::BLST_POINT_NOT_IN_GROUP => return Err(BlstReject::NotInGroup),
        other => panic!("unexpected blst error {other:?}"),
    }
    // SAFETY: `affine` is a valid blst affine point.
    if !unsafe { blst::blst_p2_affine_in_g2(&affine) } {
        return Err(BlstReject::NotInGroup);
    }
    let mut out = [0u8; 192];
    // SAFETY: blst writes 192 bytes.
    unsafe { blst::blst_p2_affine_serialize(out.as_mut_ptr(), &affine) };
    Ok(out)
}

/// blst folds the first three of our reasons into one error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlstReject {
    BadEncoding,
    NotOnCurve,
    NotInGroup,
}

fn blst_class(e: DecodeError) -> BlstReject {
    match e {
        DecodeError::NotCompressed | DecodeError::BadInfinity | DecodeError::NonCanonical => {
            BlstReject::BadEncoding
        }
        DecodeError::NotOnCurve => BlstReject::NotOnCurve,
        DecodeError::NotInSubgroup => BlstReject::NotInGroup,
    }
}

/// Our verdict, `ic_bls12_381`'s accept set and point, and blst's verdict must agree.
fn check_g1(bytes: &[u8; 48]) -> Result<G1Affine, DecodeError> {
    let ours = cpu::g1_decompress_one(bytes);
    let ic: Option<G1Affine> = G1Affine::from_compressed(bytes).into();
    assert_eq!(
        ours.ok(),
        ic,
        "accept set or point differs from ic_bls12_381 on {}",
        hex::encode(bytes)
    );
    let theirs = blst_g1(bytes);
    match (&ours, &theirs) {
        (Ok(p), Ok(b)) => assert_eq!(&p.to_uncompressed(), b, "point differs from blst"),
        (Err(e), Err(b)) => assert_eq!(
            blst_class(*e),
            *b,
            "reason class differs from blst on {}",
            hex::encode(bytes)
        ),
        _ => panic!(
            "accept differs from blst on {}: ours {ours:?}, blst {theirs:?}",
            hex::encode(bytes)
        ),
    }
    ours
}

fn check_g2(bytes: &[u8; 96]) -> Result<G2Affine, DecodeError> {
    let ours = cpu::g2_decompress_one(bytes);
    let ic: Option<G2Affine> = G2Affine::from_compressed(bytes).into();
    assert_eq!(
        ours.ok(),
        ic,
        "G2 accept set or point differs from ic_bls12_381 on {}",
        hex::encode(bytes)
    );
    let theirs = blst_g2(bytes);
    match (&ours, &theirs) {
        (Ok(p), Ok(b)) => assert_eq!(&p.to_uncompressed(), b, "G2 point differs from blst"),
        (Err(e), Err(b)) => assert_eq!(
            blst_class(*e),
            *b,
            "G2 reason class differs from blst on {}",
            hex::encode(bytes)
        ),
        _ => panic!(
            "G2 accept differs from blst on {}: ours {ours:?}, blst {theirs:?}",
            hex::encode(bytes)
        ),
    }
    ours
}

#[test]
fn corpus_verdicts_match_ic_bls12_381_blst_and_intent() {
    let corpus = corpus::g1_decompress_corpus();
    assert!(
        corpus.len() > 700,
        "corpus unexpectedly small: {}",
        corpus.len()
    );
    let mut reasons_seen = BTreeSet::new();
    let mut accepted = 0;
    for entry in &corpus {
        let ours = check_g1(&entry.bytes);
        assert_eq!(
            ours, entry.expected,
            "{}: ours vs generated expectation",
            entry.label
        );
        if let Some(intended) = entry.intended {
            assert_eq!(
                ours.map(|_| ()),
                intended,
                "{}: not the case it was built for",
                entry.label
            );
        }
        match ours {
            Ok(_) => accepted += 1,
            Err(e) => {
                reasons_seen.insert(e.code());
            }
        }
    }
    assert!(accepted >= 34, "too few valid entries: {accepted}");
    let all: BTreeSet<u8> = DecodeError::ALL.iter().map(|e| e.code()).collect();
    assert_eq!(
        reasons_seen, all,
        "corpus must exercise every rejection reason"
    );
}

#[test]
fn g2_corpus_verdicts_match_ic_bls12_381_blst_and_intent() {
    let corpus = corpus::g2_decompress_corpus();
    assert!(
        corpus.len() > 1000,
        "G2 corpus unexpectedly small: {}",
        corpus.len()
    );
    let mut reasons_seen = BTreeSet::new();
    let mut accepted = 0;
    for entry in &corpus {
        let ours = check_g2(&entry.bytes);
        assert_eq!(
            ours, entry.expected,
            "{}: ours vs generated expectation",
            entry.label
        );
        if let Some(intended) = entry.intended {
            assert_eq!(
                ours.map(|_| ()),
                intended,
                "{}: not the case it was built for",
                entry.label
            );
        }
        match ours {
            Ok(_) => accepted += 1,
            Err(e) => {
                reasons_seen.insert(e.code());
            }
        }
    }
    assert!(accepted >= 34, "too few valid G2 entries: {accepted}");
    let all: BTreeSet<u8> = DecodeError::ALL.iter().map(|e| e.code()).collect();
    assert_eq!(
        reasons_seen, all,
        "the G2 corpus must exercise every rejection reason"
    );
    // The square root's special inputs are there: points of the twist whose y has a zero
    // coordinate (x^3 + 4(u + 1) in Fp).
    let special = corpus
        .iter()
        .filter(|e| {
            let mut enc = e.bytes;
            enc[0] = (enc[0] & 0x1f) | 0x80;
            Option::<G2Affine>::from(G2Affine::from_compressed_unchecked(&enc)).is_some_and(|p| {
                let u = p.to_uncompressed();
                u[96..144].iter().all(|&b| b == 0) || u[144..].iter().all(|&b| b == 0)
            })
        })
        .count();
    assert!(
        special >= 8,
        "only {special} entries with a real or imaginary y"
    );
}

#[test]
fn g2_batch_paths_equal_single_decodes() {
    let corpus = corpus::g2_decompress_corpus();
    let bytes: Vec<[u8; 96]> = corpus.iter().map(|e| e.bytes).collect();
    let expected: Vec<_> = corpus.iter().map(|e| e.expected).collect();
    assert_eq!(cpu::g2_decompress(&bytes), expected);
    for chunk in bytes.chunks(5).zip(expected.chunks(5)) {
        assert_eq!(cpu::g2_decompress(chunk.0), chunk.1);
    }
    let engine = Engine::cpu_only();
    assert_eq!(engine.g2_decompress(&bytes).expect("cpu engine"), expected);
    assert_eq!(engine.g2_decompress(&[]).expect("cpu engine"), vec![]);
}

#[test]
fn batch_paths_equal_single_decodes() {
    let corpus = corpus::g1_decompress_corpus();
    let bytes: Vec<[u8; 48]> = corpus.iter().map(|e| e.bytes).collect();
    let expected: Vec<_> = corpus.iter().map(|e| e.expected).collect();
    // The parallel path (whole corpus), the sequential path (short batches), and the engine.
    assert_eq!(cpu::g1_decompress(&bytes), expected);
    for chunk in bytes.chunks(5).zip(expected.chunks(5)) {
        assert_eq!(cpu::g1_decompress(chunk.0), chunk.1);
    }
    let engine = Engine::cpu_only();
    assert_eq!(engine.g1_decompress(&bytes).expect("cpu engine"), expected);
    assert_eq!(engine.g1_decompress(&[]).expect("cpu engine"), vec![]);
}

fn testdata(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/decompress")
        .join(name)
}

/// The files are the generator's output; `GPU_CRYPTO_REGENERATE_CORPUS=1` rewrites them.
#[test]
fn corpus_files_match_generator() {
    let corpus = corpus::g1_decompress_corpus();
    let g2 = corpus::g2_decompress_corpus();
    let files = [
        ("corpus.txt", corpus::corpus_file(&corpus)),
        ("expected.txt", corpus::expected_file(&corpus)),
        ("g2-corpus.txt", corpus::g2_corpus_file(&g2)),
        ("g2-expected.txt", corpus::g2_expected_file(&g2)),
    ];
    for (name, generated) in files {
        let path = testdata(name);
        if std::env::var_os("GPU_CRYPTO_REGENERATE_CORPUS").is_some() {
            std::fs::write(&path, &generated).expect("write corpus file");
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (regenerate with GPU_CRYPTO_REGENERATE_CORPUS=1)",
                path.display()
            )
        });
        assert!(
            on_disk == generated,
            "{} drifted from the generator; regenerate with GPU_CRYPTO_REGENERATE_CORPUS=1",
            path.display()
        );
    }
}

#[test]
fn corpus_is_deterministic_and_lines_are_well_formed() {
    let a = corpus::g1_decompress_corpus();
    let b = corpus::g1_decompress_corpus();
    assert_eq!(corpus::corpus_file(&a), corpus::corpus_file(&b));
    let entry: &CorpusEntry = &a[0];
    let line = corpus::expected_line(&entry.expected);
    assert!(line.starts_with("ok ") && line.len() == 3 + 192, "{line}");
    for line in corpus::expected_file(&a).lines() {
        let ok = line
            .strip_prefix("ok ")
            .is_some_and(|h| h.len() == 192 && hex::decode(h).is_ok());
        let err = line
            .strip_prefix("err ")
            .is_some_and(|w| DecodeError::ALL.iter().any(|e| e.reason_word() == w));
        assert!(ok || err, "malformed expected line {line:?}");
    }
    for line in corpus::corpus_file(&a).lines() {
        assert_eq!(line.len(), 96);
    }
}

/// The verdict a crafted case was built for (`Ok(())`: a valid point).
type Intended = Result<(), DecodeError>;

/// The G2 decoder on crafted cases: both coordinates non-canonical, each flag
/// combination, infinity with stray bits in either half, and valid keys.
#[test]
fn g2_crafted_cases_match_ic_bls12_381_and_blst() {
    use gpu_crypto::cpu::P_BYTES;
    let valid =
        G2Affine::from(G2Affine::generator() * gpu_crypto::Scalar::from(7u64)).to_compressed();
    let identity = G2Affine::identity().to_compressed();
    let mut cases: Vec<([u8; 96], Option<Intended>)> =
        vec![(valid, Some(Ok(()))), (identity, Some(Ok(())))];
    for flags in 0u8..8 {
        let mut enc = valid;
        enc[0] = (enc[0] & 0x1f) | (flags << 5);
        cases.push((enc, None));
        let mut enc = identity;
        enc[0] = (enc[0] & 0x1f) | (flags << 5);
        cases.push((enc, None));
    }
    for bit in [5usize, 8, 200, 383, 384, 500, 767] {
        let mut enc = identity;
        enc[bit / 8] |= 0x80 >> (bit % 8);
        cases.push((enc, Some(Err(DecodeError::BadInfinity))));
    }
    // c1 = p (in the flagged half), c0 = p, and both.
    let mut c1_p = valid;
    c1_p[..48].copy_from_slice(&P_BYTES);
    c1_p[0] |= 0x80;
    cases.push((c1_p, Some(Err(DecodeError::NonCanonical))));
    let mut c0_p = valid;
    c0_p[48..].copy_from_slice(&P_BYTES);
    cases.push((c0_p, Some(Err(DecodeError::NonCanonical))));
    let mut sort_flipped = valid;
    sort_flipped[0] ^= 0x20;
    cases.push((sort_flipped, Some(Ok(()))));
    let mut seen = BTreeSet::new();
    for (enc, intended) in &cases {
        let ours = check_g2(enc);
        if let Some(intended) = intended {
            assert_eq!(ours.map(|_| ()), *intended, "{}", hex::encode(enc));
        }
        seen.insert(ours.err().map(|e| e.code()).unwrap_or(0));
    }
    // Random x: almost always off the curve or outside G2.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..64 {
        let mut enc = [0u8; 96];
        for b in enc.iter_mut() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *b = state as u8;
        }
        enc[0] = (enc[0] & 0x0f) | 0x80;
        enc[48] &= 0x0f;
        seen.insert(check_g2(&enc).err().map(|e| e.code()).unwrap_or(0));
    }
    assert!(
        seen.is_superset(&[0, 1, 2, 3, 4, 5].into_iter().collect()),
        "{seen:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_bytes_agree(bytes in proptest::array::uniform32(any::<u8>()), tail in proptest::array::uniform16(any::<u8>())) {
        let mut enc = [0u8; 48];
        enc[..32].copy_from_slice(&bytes);
        enc[32..].copy_from_slice(&tail);
        let _ = check_g1(&enc);
        // The same bytes with the compression flag forced and infinity cleared reach
        // the square root and subgroup checks.
        enc[0] = (enc[0] | 0x80) & !0x40;
        let _ = check_g1(&enc);
    }

    #[test]
    fn bit_flips_of_valid_points_agree(scalar in any::<u64>(), bit in 0usize..384) {
        let point = G1Affine::from(G1Affine::generator() * gpu_crypto::Scalar::from(scalar));
        let mut enc = point.to_compressed();
        prop_assert!(check_g1(&enc).is_ok());
        enc[bit / 8] ^= 0x80 >> (bit % 8);
        let _ = check_g1(&enc);
    }

    #[test]
    fn g2_bit_flips_agree(scalar in any::<u64>(), bit in 0usize..768) {
        let point = G2Affine::from(G2Affine::generator() * gpu_crypto::Scalar::from(scalar));
        let mut enc = point.to_compressed();
        prop_assert!(check_g2(&enc).is_ok());
        enc[bit / 8] ^= 0x80 >> (bit % 8);
        let _ = check_g2(&enc);
    }
}
