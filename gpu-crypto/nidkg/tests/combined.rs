//! Batches of dealings and the combined checks: one verdict per dealing, a bad dealing never
//! fails its neighbours, and the combined checks reach the exact checks' verdict (the same
//! component named) on honest dealings and on every single element replaced by another
//! valid element.

use std::sync::Mutex;

use ic_bls12_381::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use nidkg::encoding::{ElementKind, dealing_layout, scalar_from_be};
use nidkg::{
    BackendError, BatchOps, Checks, Component, CpuBatchOps, DealingInput, DemoSetup, PairingBatch,
    ThresholdKind, VerifyError, ic_cbor, verify_batch,
};

struct Case {
    keys: Vec<[u8; 48]>,
    t: usize,
    epoch: u32,
    associated_data: Vec<u8>,
    stream: Vec<u8>,
}

impl Case {
    fn demo(n: usize, kind: ThresholdKind, seed: u64) -> Case {
        let setup = DemoSetup::new(n, kind, seed).expect("valid shape");
        let (_, t, stream) = ic_cbor::dealing_stream(&setup.file.dealing).unwrap();
        Case {
            keys: setup.file.receiver_keys.clone(),
            t,
            epoch: setup.file.epoch,
            associated_data: setup.file.associated_data.clone(),
            stream,
        }
    }

    fn input<'a>(&'a self, stream: &'a [u8]) -> DealingInput<'a> {
        DealingInput {
            receiver_keys: &self.keys,
            t: self.t,
            epoch: self.epoch,
            associated_data: &self.associated_data,
            stream,
        }
    }
}

/// The CPU backend with the verifier's independent batches issued at once
/// (`BatchOps::overlap_pool`), as a GPU engine runs them: the integrity check beside the
/// proofs, and within each the G1 MSM beside the G2 MSM, on a pool of three threads. It
/// records how many products each pairing batch asked for.
struct Overlapping(CpuBatchOps, rayon::ThreadPool, Mutex<Vec<usize>>);

impl Overlapping {
    fn new() -> Overlapping {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        Overlapping(CpuBatchOps::single_thread(), pool, Mutex::default())
    }

    /// The product counts of the pairing batches since the last call.
    fn pairing_batches(&self) -> Vec<usize> {
        std::mem::take(&mut self.2.lock().unwrap())
    }
}

impl BatchOps for Overlapping {
    fn name(&self) -> String {
        format!("{} overlapped", self.0.name())
    }
    fn overlap_pool(&self) -> Option<&rayon::ThreadPool> {
        Some(&self.1)
    }
    fn g1_decompress(&self, points: &[[u8; 48]]) -> Result<Vec<Option<G1Affine>>, BackendError> {
        self.0.g1_decompress(points)
    }
    fn g2_decompress(&self, points: &[[u8; 96]]) -> Result<Vec<Option<G2Affine>>, BackendError> {
        self.0.g2_decompress(points)
    }
    fn g1_msm_shared_u8(
        &self,
        bases: &[G1Affine],
        scalars: &[u8],
        rows: usize,
    ) -> Result<Vec<G1Projective>, BackendError> {
        self.0.g1_msm_shared_u8(bases, scalars, rows)
    }
    fn g1_msm_shared(
        &self,
        bases: &[G1Affine],
        scalars: &[Scalar],
        rows: usize,
    ) -> Result<Vec<G1Projective>, BackendError> {
        self.0.g1_msm_shared(bases, scalars, rows)
    }
    fn g1_msm(
        &self,
        msms: &[(Vec<G1Affine>, Vec<Scalar>)],
    ) -> Result<Vec<G1Projective>, BackendError> {
        self.0.g1_msm(msms)
    }
    fn g2_msm(
        &self,
        msms: &[(Vec<G2Affine>, Vec<Scalar>)],
    ) -> Result<Vec<G2Projective>, BackendError> {
        self.0.g2_msm(msms)
    }
    fn g1_recombine_chunks(&self, rows: &[&[G1Affine]]) -> Result<Vec<G1Projective>, BackendError> {
        self.0.g1_recombine_chunks(rows)
    }
    fn pairing_products_are_identity(
        &self,
        batch: &PairingBatch,
    ) -> Result<Vec<bool>, BackendError> {
        self.2.lock().unwrap().push(batch.products.len());
        self.0.pairing_products_are_identity(batch)
    }
}

fn verdicts(
    ops: &dyn BatchOps,
    inputs: &[DealingInput<'_>],
    checks: Checks,
) -> Vec<Result<(), VerifyError>> {
    verify_batch(ops, inputs, checks).verdicts
}

/// `stream` with element `index` of `kind` (at byte `at`) replaced by another valid
/// element: a point plus the generator, a scalar plus one.
fn replaced(stream: &[u8], kind: ElementKind, at: usize) -> Vec<u8> {
    let mut out = stream.to_vec();
    let size = kind.size();
    let bytes = &stream[at..at + size];
    let new: Vec<u8> = match kind {
        ElementKind::G1 => {
            let p = G1Affine::from_compressed(bytes.try_into().unwrap()).unwrap();
            G1Affine::from(G1Projective::from(p) + G1Projective::generator())
                .to_compressed()
                .to_vec()
        }
        ElementKind::G2 => {
            let p = G2Affine::from_compressed(bytes.try_into().unwrap()).unwrap();
            G2Affine::from(G2Projective::from(p) + G2Projective::generator())
                .to_compressed()
                .to_vec()
        }
        ElementKind::Scalar => {
            let s = scalar_from_be(bytes.try_into().unwrap()).unwrap() + Scalar::one();
            let mut be = s.to_bytes();
            be.reverse();
            be.to_vec()
        }
    };
    out[at..at + size].copy_from_slice(&new);
    out
}

/// The first and the last element of every component of the dealing replaced, one at a
/// time (every element is the exact checks' own test, tests/dealing.rs and
/// tests/ic_published.rs).
fn replacements(case: &Case) -> Vec<(Component, usize, Vec<u8>)> {
    let n = case.keys.len();
    let mut out = Vec::new();
    let mut offset = 0;
    for (kind, component, count) in dealing_layout(n, case.t) {
        let mut indices = vec![0, count - 1];
        indices.dedup();
        for index in indices {
            out.push((
                component,
                index,
                replaced(&case.stream, kind, offset + index * kind.size()),
            ));
        }
        offset += kind.size() * count;
    }
    out
}

#[test]
fn honest_dealings_are_accepted_by_both_checks_alone_and_in_a_batch() {
    let cases = [
        Case::demo(4, ThresholdKind::High, 1),
        Case::demo(4, ThresholdKind::Low, 2),
        Case::demo(13, ThresholdKind::High, 3),
    ];
    let inputs: Vec<_> = cases.iter().map(|c| c.input(&c.stream)).collect();
    for ops in [CpuBatchOps::single_thread(), CpuBatchOps::rayon()] {
        for checks in [Checks::Exact, Checks::Combined] {
            for input in &inputs {
                assert_eq!(verdicts(&ops, &[*input], checks), [Ok(())], "{checks:?}");
            }
            assert!(
                verdicts(&ops, &inputs, checks).iter().all(Result::is_ok),
                "{checks:?}"
            );
        }
    }
}

/// The same verdict, component for component, for elements of every component of an
/// n = 4 dealing replaced by another valid element: each replacement is one dealing of one
/// batch.
#[test]
fn combined_checks_name_what_the_exact_checks_name() {
    let case = Case::demo(4, ThresholdKind::High, 7);
    let replacements = replacements(&case);
    let inputs: Vec<_> = replacements.iter().map(|(_, _, s)| case.input(s)).collect();
    let exact = verdicts(&CpuBatchOps::rayon(), &inputs, Checks::Exact);
    let overlapped = Overlapping::new();
    for ops in [&CpuBatchOps::rayon() as &dyn BatchOps, &overlapped] {
        let combined = verdicts(ops, &inputs, Checks::Combined);
        for (((component, index, _), e), c) in replacements.iter().zip(&exact).zip(&combined) {
            let e = e.as_ref().expect_err(&format!(
                "{component}[{index}] replaced: accepted by the exact checks"
            ));
            assert!(!e.is_unusable_input(), "{component}[{index}]: {e}");
            assert_eq!(
                c.as_ref().err(),
                Some(e),
                "{}: {component}[{index}]",
                ops.name()
            );
        }
    }
    // Two per component, one for the scalars and points that come one to a component.
    assert_eq!(exact.len(), 2 * 18 - 8);
}

#[test]
fn a_bad_dealing_fails_alone_and_is_named() {
    let case = Case::demo(13, ThresholdKind::High, 11);
    let replacements = replacements(&case);
    // A chunking-proof blinder and a sharing-proof response, among honest dealings, and a
    // stream of the wrong length.
    let pick = |want: Component| {
        replacements
            .iter()
            .find(|(c, _, _)| *c == want)
            .map(|(_, _, s)| s.clone())
            .unwrap()
    };
    let bad_chunking = pick(Component::ChunkingB);
    let bad_sharing = pick(Component::SharingZalpha);
    let bad_ciphertext = pick(Component::CiphertextZ);
    let short = case.stream[..case.stream.len() - 1].to_vec();
    let streams = [
        &case.stream,
        &bad_chunking,
        &case.stream,
        &short,
        &case.stream,
        &bad_sharing,
        &bad_ciphertext,
    ];
    let inputs: Vec<_> = streams.iter().map(|s| case.input(s)).collect();
    let overlapped = Overlapping::new();
    let backends = [&CpuBatchOps::rayon() as &dyn BatchOps, &overlapped];
    // Each dealing's host work is a task of the current pool: one thread, and four.
    let pools = [1, 4].map(|threads| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    });
    for (pool, ops, checks) in pools.iter().flat_map(|p| {
        backends
            .iter()
            .flat_map(move |o| [(p, *o, Checks::Exact), (p, *o, Checks::Combined)])
    }) {
        let v = pool.install(|| verdicts(ops, &inputs, checks));
        assert!(
            v[0].is_ok() && v[2].is_ok() && v[4].is_ok(),
            "{checks:?}: {v:?}"
        );
        assert!(
            matches!(v[1], Err(VerifyError::ChunkingProof(_))),
            "{checks:?}: {:?}",
            v[1]
        );
        assert!(
            matches!(v[3], Err(VerifyError::Length { .. })),
            "{checks:?}: {:?}",
            v[3]
        );
        assert!(
            matches!(v[5], Err(VerifyError::SharingProof(_))),
            "{checks:?}: {:?}",
            v[5]
        );
        assert!(
            matches!(v[6], Err(VerifyError::CiphertextIntegrity { .. })),
            "{checks:?}: {:?}",
            v[6]
        );
    }
}

/// The combined integrity check of a batch is one pairing product while every dealing's
/// holds; one bad ciphertext among honest dealings costs each dealing its own product,
/// then the exact check of the bad one (16 products), and fails only that one.
#[test]
fn a_batch_pairs_once_unless_a_ciphertext_is_bad() {
    let case = Case::demo(4, ThresholdKind::High, 13);
    let bad = replacements(&case)
        .into_iter()
        .find(|(c, _, _)| *c == Component::CiphertextR)
        .map(|(_, _, s)| s)
        .unwrap();
    let ops = Overlapping::new();
    let honest = [case.input(&case.stream); 3];
    assert!(
        verdicts(&ops, &honest, Checks::Combined)
            .iter()
            .all(Result::is_ok)
    );
    assert_eq!(ops.pairing_batches(), [1]);
    assert_eq!(verdicts(&ops, &honest[..1], Checks::Combined), [Ok(())]);
    assert_eq!(ops.pairing_batches(), [1]);

    let mixed = [
        case.input(&case.stream),
        case.input(&bad),
        case.input(&case.stream),
    ];
    let v = verdicts(&ops, &mixed, Checks::Combined);
    assert!(v[0].is_ok() && v[2].is_ok(), "{v:?}");
    assert!(
        matches!(v[1], Err(VerifyError::CiphertextIntegrity { .. })),
        "{v:?}"
    );
    assert_eq!(ops.pairing_batches(), [1, 3, 16]);
}
