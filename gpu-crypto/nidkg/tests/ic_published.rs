//! The IC's own published NI-DKG data (`../shared/testdata/ic-nidkg/` beside the project,
//! or `IC_NIDKG_TESTDATA`): its dealing verifies under the parameters of the IC's
//! `test_can_parse_deserialized_dealing` (n = 4, threshold 2, epoch 5, dealer 0), its key
//! and proof of possession verify with `ic-crypto-kgen-assoc-data`, and any change of one
//! component or of the context is rejected with the reason named.

use nidkg::{Checks, CpuBatchOps, IcContext, IcDealing, VerifyError, ic_cbor};

mod ic_data;

fn read(name: &str) -> Vec<u8> {
    let path = ic_data::dir().join(name);
    let contents = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    ic_cbor::bytes_of_file(&contents)
}

fn receiver_keys() -> Vec<[u8; 48]> {
    (0..4)
        .map(|i| ic_cbor::receiver_key(&read(&format!("nidkg_dealing_pk{i}.hex"))).unwrap())
        .collect()
}

const CONTEXT: IcContext = IcContext {
    dealer_index: 0,
    threshold: 2,
    epoch: 5,
};

fn verify(dealing: &[u8], keys: &[[u8; 48]], context: &IcContext) -> Result<(), VerifyError> {
    nidkg::verify_ic(&CpuBatchOps::single_thread(), dealing, keys, context).map(|_| ())
}

#[test]
#[cfg_attr(
    ic_testdata_absent,
    ignore = "needs ../shared/testdata/ic-nidkg (the IC's published NI-DKG data)"
)]
fn the_ics_published_dealing_verifies() {
    let dealing = read("nidkg_dealing.hex");
    let keys = receiver_keys();
    verify(&dealing, &keys, &CONTEXT).unwrap();
    let one = IcDealing {
        dealing: &dealing,
        receiver_keys: &keys,
        context: &CONTEXT,
    };
    for checks in [Checks::Exact, Checks::Combined] {
        let report = nidkg::verify_ic_batch(&CpuBatchOps::rayon(), &[one; 3], checks);
        assert_eq!(report.verdicts, [Ok(()), Ok(()), Ok(())], "{checks:?}");
    }
}

#[test]
#[cfg_attr(
    ic_testdata_absent,
    ignore = "needs ../shared/testdata/ic-nidkg (the IC's published NI-DKG data)"
)]
fn the_ics_published_proof_of_possession_verifies() {
    let key = ic_cbor::receiver_key(&read("nidkg_pk.hex")).unwrap();
    let pop = ic_cbor::pop(&read("nidkg_pop.hex")).unwrap();
    assert!(nidkg::verify_pop(&key, &pop, b"ic-crypto-kgen-assoc-data").unwrap());
    assert!(!nidkg::verify_pop(&key, &pop, b"ic-crypto-kgen-assoc-datb").unwrap());
    let mut other = pop;
    other.response[31] ^= 1;
    assert!(!nidkg::verify_pop(&key, &other, b"ic-crypto-kgen-assoc-data").unwrap_or(false));
    // Another receiver's key under this proof.
    let key0 = receiver_keys()[0];
    assert!(!nidkg::verify_pop(&key0, &pop, b"ic-crypto-kgen-assoc-data").unwrap());
}

#[test]
#[cfg_attr(
    ic_testdata_absent,
    ignore = "needs ../shared/testdata/ic-nidkg (the IC's published NI-DKG data)"
)]
fn the_published_dealing_under_a_wrong_context_is_rejected() {
    let dealing = read("nidkg_dealing.hex");
    let keys = receiver_keys();
    let wrong_dealer = IcContext {
        dealer_index: 1,
        ..CONTEXT
    };
    assert!(matches!(
        verify(&dealing, &keys, &wrong_dealer),
        Err(VerifyError::CiphertextIntegrity { .. })
    ));
    let wrong_epoch = IcContext {
        epoch: 6,
        ..CONTEXT
    };
    assert!(matches!(
        verify(&dealing, &keys, &wrong_epoch),
        Err(VerifyError::CiphertextIntegrity { .. })
    ));
    let wrong_threshold = IcContext {
        threshold: 3,
        ..CONTEXT
    };
    assert!(matches!(
        verify(&dealing, &keys, &wrong_threshold),
        Err(VerifyError::ThresholdMismatch {
            expected: 3,
            actual: 2
        })
    ));
    let mut swapped = keys.clone();
    swapped.swap(1, 2);
    assert!(matches!(
        verify(&dealing, &swapped, &CONTEXT),
        Err(VerifyError::ChunkingProof(_))
    ));
    assert!(matches!(
        verify(&dealing, &keys[..3], &CONTEXT),
        Err(VerifyError::ReceiverCount {
            expected: 3,
            actual: 4
        })
    ));
}

/// Every element of the dealing, changed one at a time (one bit of its last byte), is
/// rejected; nothing is accepted and nothing is reported unusable.
#[test]
#[cfg_attr(
    ic_testdata_absent,
    ignore = "needs ../shared/testdata/ic-nidkg (the IC's published NI-DKG data)"
)]
fn every_single_component_corruption_is_rejected() {
    let dealing = read("nidkg_dealing.hex");
    let keys = receiver_keys();
    let (n, t, stream) = ic_cbor::dealing_stream(&dealing).unwrap();
    let mut offset = 0;
    let mut rejected = 0;
    let mut corrupted = Vec::new();
    for (kind, component, count) in nidkg::encoding::dealing_layout(n, t) {
        for index in 0..count {
            let at = offset + (index + 1) * kind.size() - 1;
            let mut bad = stream.clone();
            bad[at] ^= 1;
            let bad = ic_cbor::dealing_to_cbor(&bad, n, t);
            let result = verify(&bad, &keys, &CONTEXT);
            let err = result.expect_err(&format!("{component}[{index}] changed was accepted"));
            assert!(!err.is_unusable_input(), "{component}[{index}]: {err}");
            corrupted.push((format!("{component}[{index}]"), bad, err));
            rejected += 1;
        }
        offset += kind.size() * count;
    }
    // All of them in one batch, with the combined checks: the same verdict each.
    let batch: Vec<IcDealing<'_>> = corrupted
        .iter()
        .map(|(_, dealing, _)| IcDealing {
            dealing,
            receiver_keys: &keys,
            context: &CONTEXT,
        })
        .collect();
    let report = nidkg::verify_ic_batch(&CpuBatchOps::rayon(), &batch, Checks::Combined);
    for ((what, _, exact), combined) in corrupted.iter().zip(&report.verdicts) {
        assert_eq!(combined.as_ref().err(), Some(exact), "{what}");
    }
    assert_eq!(
        rejected,
        16 * 3 + 16 * n + 1 + 32 * 2 + (n + 1) + 1 + n + 32 + 1 + 5 + t
    );
}

#[test]
#[cfg_attr(
    ic_testdata_absent,
    ignore = "needs ../shared/testdata/ic-nidkg (the IC's published NI-DKG data)"
)]
fn our_encoding_of_the_published_dealing_is_the_ics_bytes() {
    let dealing = read("nidkg_dealing.hex");
    let (n, t, stream) = ic_cbor::dealing_stream(&dealing).unwrap();
    assert_eq!(ic_cbor::dealing_to_cbor(&stream, n, t), dealing);
    let key = read("nidkg_dealing_pk0.hex");
    assert_eq!(
        ic_cbor::receiver_key_to_cbor(&ic_cbor::receiver_key(&key).unwrap()),
        key
    );
    let pop = read("nidkg_pop.hex");
    assert_eq!(ic_cbor::pop_to_cbor(&ic_cbor::pop(&pop).unwrap()), pop);
}
