//! Verifying many dealings in one call, each with its own verdict, and optionally with each
//! dealing's equations combined: the verdict of [`crate::verify`] in fewer operations.
//!
//! A batch gathers the same work of every dealing into one call of each [`BatchOps`]
//! operation (one G1 and one G2 decompression batch for all dealings, one pairing batch,
//! one MSM batch), so a GPU backend sees batches as large as the block or the DKG round.
//! A dealing that fails never fails its neighbours: its verdict is its own. The host work
//! of each dealing between the batches (parsing its stream, its oracles, its equations)
//! runs on the current rayon pool, one task per dealing: install a pool of one thread to
//! keep a verification on one thread.
//!
//! With [`Checks::Combined`], per dealing:
//!
//! - the 16 integrity products `P_j = e(R_j, id) e(S_j, h) e(-g1, Z_j)` become one,
//!   `e(sum rho_j R_j, id) e(sum rho_j S_j, h) e(-g1, sum rho_j Z_j) = prod P_j^rho_j`;
//! - the chunking proof's `n + 2` G1 equations and the sharing proof's two G1 equations
//!   become one MSM, `sum_e rho_e E_e == 0`, where the 32 shared-base MSMs of the chunks
//!   equation enter as `sum_ij s_ij C_ij` (`sum_k x^k T_k` regrouped: no coefficient
//!   needed, the same sum);
//! - the sharing proof's G2 equation and every deterministic check (encodings, subgroup
//!   membership, response ranges) are unchanged.
//!
//! The coefficients `rho` are 128-bit integers from ChaCha20 seeded by the operating
//! system, drawn after every dealing of the call is decoded. Every point is in the
//! prime-order subgroup (checked when decoded), so each equation's value lies in a group of
//! prime order `r > 2^254`; if some value `E_e` is not the identity, the combination
//! vanishes for at most one value of `rho_e` modulo `r` once the others are fixed, so with
//! probability at most `2^-128`. A combination that does not vanish re-runs the dealing's
//! exact checks, which name the failing component; the set of accepted dealings is the
//! exact verifier's except with probability at most `2^-128` per dealing
//! (docs/nidkg.md, "Combined checks").

use crate::batch::{BatchOps, PairingBatch, join};
use crate::encoding::EncodedElements;
use crate::error::{BackendError, VerifyError};
use crate::params::{NUM_CHUNKS, SysParams};
use crate::verify::{
    self, ChunkingTerms, DecodedDealing, G1Equation, PhaseTimes, SharingTerms, exactly,
};
use ic_bls12_381::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use std::time::Instant;

/// How each dealing's equations are checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checks {
    /// Every equation on its own, as the IC's verifier does.
    Exact,
    /// The equations combined by random coefficients (module docs); a failing combination
    /// re-runs the exact checks to name the component.
    Combined,
}

/// One dealing to verify, with its context.
#[derive(Clone, Copy, Debug)]
pub struct DealingInput<'a> {
    /// Receivers' keys, compressed, in receiver order.
    pub receiver_keys: &'a [[u8; 48]],
    /// Threshold.
    pub t: usize,
    /// Epoch the dealing is encrypted for.
    pub epoch: u32,
    /// Associated data (the dealer's index, in the IC).
    pub associated_data: &'a [u8],
    /// The dealing's element stream ([`crate::encoding`]).
    pub stream: &'a [u8],
}

/// The verdicts of a batch, in input order, and what the batch took.
#[derive(Debug)]
pub struct BatchReport {
    /// One verdict per dealing.
    pub verdicts: Vec<Result<(), VerifyError>>,
    /// Wall time of each phase, over the whole batch.
    pub phases: PhaseTimes,
    /// Backend that ran the batches.
    pub backend: String,
}

/// Verifies every dealing of `inputs`; each verdict is that dealing's alone.
pub fn verify_batch<B: BatchOps + ?Sized>(
    ops: &B,
    inputs: &[DealingInput<'_>],
    checks: Checks,
) -> BatchReport {
    let _ = SysParams::get();
    let mut phases = PhaseTimes::default();
    let start = Instant::now();
    let mut state: Vec<Result<DecodedDealing, VerifyError>> = decode_all(ops, inputs);
    phases.deserialize = start.elapsed();
    match checks {
        Checks::Exact => exact_all(ops, inputs, &mut state, &mut phases),
        Checks::Combined => {
            match Coefficients::from_os().and_then(|a| Ok([a, Coefficients::from_os()?])) {
                Ok(rho) => combined_all(ops, inputs, &mut state, rho, &mut phases),
                Err(e) => fail_pending(&mut state, &e),
            }
        }
    }
    BatchReport {
        verdicts: state.into_iter().map(|s| s.map(|_| ())).collect(),
        phases,
        backend: ops.name(),
    }
}

/// Phase 1 for every dealing: one G1 and one G2 decompression batch for all of them.
fn decode_all<B: BatchOps + ?Sized>(
    ops: &B,
    inputs: &[DealingInput<'_>],
) -> Vec<Result<DecodedDealing, VerifyError>> {
    let split: Vec<Result<EncodedElements, VerifyError>> = inputs
        .par_iter()
        .map(|d| EncodedElements::split(d.receiver_keys, d.t, d.stream))
        .collect();
    let encoded: Vec<&EncodedElements> = split.iter().filter_map(|s| s.as_ref().ok()).collect();
    let g1: Vec<[u8; 48]> = encoded.iter().flat_map(|e| e.g1.iter().copied()).collect();
    let g2: Vec<[u8; 96]> = encoded.iter().flat_map(|e| e.g2.iter().copied()).collect();
    let decompressed = match join(ops, || ops.g1_decompress(&g1), || ops.g2_decompress(&g2)) {
        (Ok(a), Ok(b)) => Ok((a, b)),
        (Err(e), _) | (_, Err(e)) => Err(e),
    };
    let (g1, g2) = match decompressed {
        Ok((a, b)) if a.len() == g1.len() && b.len() == g2.len() => (a, b),
        Ok((a, b)) => {
            let e = BackendError {
                operation: "decompress",
                reason: format!(
                    "{} G1 and {} G2 results for {} and {} points",
                    a.len(),
                    b.len(),
                    g1.len(),
                    g2.len()
                ),
            };
            return split
                .into_iter()
                .map(|s| s.and(Err(e.clone().into())))
                .collect();
        }
        Err(e) => {
            return split
                .into_iter()
                .map(|s| s.and(Err(e.clone().into())))
                .collect();
        }
    };
    // Each dealing's points start where the previous dealing's end.
    let mut starts = (0, 0);
    let slices: Vec<(usize, usize)> = split
        .iter()
        .map(|s| {
            let at = starts;
            if let Ok(e) = s {
                starts = (at.0 + e.g1.len(), at.1 + e.g2.len());
            }
            at
        })
        .collect();
    split
        .into_par_iter()
        .zip(slices)
        .map(|(s, (at1, at2))| {
            let e = s?;
            let g1 = g1[at1..at1 + e.g1.len()].to_vec();
            let g2 = g2[at2..at2 + e.g2.len()].to_vec();
            verify::decode(&e, g1, g2)
        })
        .collect()
}

/// Every decoded dealing through the exact checks, one dealing after another.
fn exact_all<B: BatchOps + ?Sized>(
    ops: &B,
    inputs: &[DealingInput<'_>],
    state: &mut [Result<DecodedDealing, VerifyError>],
    phases: &mut PhaseTimes,
) {
    for (input, s) in inputs.iter().zip(state.iter_mut()) {
        if let Ok(d) = s {
            let mut one = PhaseTimes::default();
            if let Err(e) = exact_checks(ops, input, d, &mut one) {
                *s = Err(e);
            }
            *phases += one;
        }
    }
}

/// The exact integrity, chunking and sharing checks of one decoded dealing.
fn exact_checks<B: BatchOps + ?Sized>(
    ops: &B,
    input: &DealingInput<'_>,
    d: &DecodedDealing,
    phases: &mut PhaseTimes,
) -> Result<(), VerifyError> {
    let start = Instant::now();
    verify::check_integrity(ops, &d.dealing, input.epoch, input.associated_data)?;
    phases.integrity += start.elapsed();
    exact_proofs(ops, d, phases)
}

fn exact_proofs<B: BatchOps + ?Sized>(
    ops: &B,
    d: &DecodedDealing,
    phases: &mut PhaseTimes,
) -> Result<(), VerifyError> {
    let start = Instant::now();
    verify::check_chunking(ops, &d.receiver_keys, &d.dealing)?;
    phases.chunking += start.elapsed();
    let start = Instant::now();
    verify::check_sharing(ops, &d.receiver_keys, &d.dealing)?;
    phases.sharing += start.elapsed();
    Ok(())
}

/// Every decoded dealing through the combined checks, each operation batched over them.
/// The integrity check and the proofs read the same decoded dealings, so they run at once
/// where the backend overlaps its batches, and so do the G1 and G2 MSMs within each (a
/// nested pair runs at once where the overlap pool has a thread free, else one after the
/// other); their verdicts apply in the exact verifier's order (integrity first), so a
/// dealing failing both is named by its integrity check. Overlapped, the phase times
/// overlap too: their sum exceeds the wall time.
fn combined_all<B: BatchOps + ?Sized>(
    ops: &B,
    inputs: &[DealingInput<'_>],
    state: &mut [Result<DecodedDealing, VerifyError>],
    [mut rho_integrity, mut rho_proofs]: [Coefficients; 2],
    phases: &mut PhaseTimes,
) {
    let decoded = &*state;
    let ((integrity, integrity_time), (proofs, proof_phases)) = join(
        ops,
        || {
            let start = Instant::now();
            let verdicts = combined_integrity(ops, inputs, decoded, &mut rho_integrity);
            (verdicts, start.elapsed())
        },
        || {
            let mut times = PhaseTimes::default();
            let verdicts = combined_proofs(ops, decoded, &mut rho_proofs, &mut times);
            (verdicts, times)
        },
    );
    let start = Instant::now();
    settle(state, integrity, |d, i| {
        verify::check_integrity(ops, &d.dealing, inputs[i].epoch, inputs[i].associated_data)
    });
    phases.integrity = integrity_time + start.elapsed();
    let start = Instant::now();
    settle(state, proofs, |d, _| {
        exact_proofs(ops, d, &mut PhaseTimes::default())
    });
    phases.chunking += proof_phases.chunking + start.elapsed();
    phases.sharing += proof_phases.sharing;
}

/// What a combined check said of each pending dealing: `Ok(true)` held, `Ok(false)` did
/// not (the exact checks then name why), `Err` no verdict.
type Combined = Vec<Option<Result<bool, VerifyError>>>;

/// Applies combined verdicts: a failed combination runs `exact`, which must fail.
fn settle(
    state: &mut [Result<DecodedDealing, VerifyError>],
    verdicts: Combined,
    exact: impl Fn(&DecodedDealing, usize) -> Result<(), VerifyError>,
) {
    for (i, (s, verdict)) in state.iter_mut().zip(verdicts).enumerate() {
        let Ok(d) = s else { continue };
        let error = match verdict {
            None | Some(Ok(true)) => continue,
            Some(Err(e)) => e,
            // A combination of equations that all hold is the identity whatever the
            // coefficients: if the exact checks pass, the backend contradicted itself.
            Some(Ok(false)) => exact(d, i).err().unwrap_or_else(|| {
                BackendError {
                    operation: "combined_checks",
                    reason: "a combined check failed while every exact check holds".into(),
                }
                .into()
            }),
        };
        *s = Err(error);
    }
}

/// The integrity products of every pending dealing, combined into one product each, and
/// those of a batch into one (below); each dealing's own product runs only where the
/// batch's fails, so that a bad dealing never fails its neighbours.
fn combined_integrity<B: BatchOps + ?Sized>(
    ops: &B,
    inputs: &[DealingInput<'_>],
    state: &[Result<DecodedDealing, VerifyError>],
    rho: &mut Coefficients,
) -> Combined {
    let pending: Vec<(usize, &DecodedDealing)> = pending(state, None);
    if pending.is_empty() {
        return (0..state.len()).map(|_| None).collect();
    }
    let sides = match integrity_sides(ops, inputs, &pending, rho) {
        Ok(s) => s,
        Err(e) => return all_pending(state, Err(e)),
    };
    let per_dealing = || {
        ops.pairing_products_are_identity(&sides.per_dealing())
            .and_then(|r| exactly("pairing_products", pending.len(), r))
    };
    let ok = match pending.len() {
        1 => per_dealing(),
        m => ops
            .pairing_products_are_identity(&sides.whole_batch())
            .and_then(|r| exactly("pairing_products", 1, r))
            .and_then(|all| {
                if all[0] {
                    Ok(vec![true; m])
                } else {
                    per_dealing()
                }
            }),
    };
    let mut verdicts: Combined = (0..state.len()).map(|_| None).collect();
    for (k, (i, _)) in pending.iter().enumerate() {
        verdicts[*i] = Some(match &ok {
            Ok(ok) => Ok(ok[k]),
            Err(e) => Err(e.clone().into()),
        });
    }
    verdicts
}

/// Each pending dealing's combined integrity product
/// `e(sum rho_j R_j, id) e(sum rho_j S_j, h) e(-g1, sum rho_j Z_j)`, by its three sides.
struct IntegritySides {
    /// `sum rho_j R_j` and `sum rho_j S_j`, per dealing.
    g1: Vec<[G1Affine; 2]>,
    /// The dealing's identity and `sum rho_j Z_j`.
    g2: Vec<[G2Affine; 2]>,
}

/// The sides of every pending dealing's product: two G1 MSMs and one G2 MSM per dealing,
/// each in one batch over the dealings.
fn integrity_sides<B: BatchOps + ?Sized>(
    ops: &B,
    inputs: &[DealingInput<'_>],
    pending: &[(usize, &DecodedDealing)],
    rho: &mut Coefficients,
) -> Result<IntegritySides, VerifyError> {
    let mut g1_msms = Vec::with_capacity(2 * pending.len());
    let mut g2_msms = Vec::with_capacity(pending.len());
    for (_, d) in pending {
        let c = &d.dealing.ciphertext;
        let coefficients = rho.take(NUM_CHUNKS);
        g1_msms.push((c.rr.clone(), coefficients.clone()));
        g1_msms.push((c.ss.clone(), coefficients.clone()));
        g2_msms.push((c.zz.clone(), coefficients));
    }
    // The identities are host work: computed while the G2 MSM runs.
    let ((g1_sums, ids), z_sums) = join(
        ops,
        || {
            let sums = ops.g1_msm(&g1_msms);
            let ids: Vec<G2Projective> = pending
                .par_iter()
                .map(|(i, d)| {
                    let input = &inputs[*i];
                    verify::integrity_identity(&d.dealing, input.epoch, input.associated_data)
                })
                .collect();
            (sums, ids)
        },
        || ops.g2_msm(&g2_msms),
    );
    let g1_sums = exactly("g1_msm", g1_msms.len(), g1_sums?)?;
    let z_sums = exactly("g2_msm", g2_msms.len(), z_sums?)?;
    let g2: Vec<G2Projective> = ids
        .into_iter()
        .zip(z_sums)
        .flat_map(|(a, b)| [a, b])
        .collect();
    Ok(IntegritySides {
        g1: pairs(&normalized_g1(&g1_sums)),
        g2: pairs(&normalized_g2(&g2)),
    })
}

impl IntegritySides {
    /// One product per dealing.
    fn per_dealing(&self) -> PairingBatch {
        let mut batch = PairingBatch {
            g2: vec![SysParams::get().h],
            products: Vec::with_capacity(self.g1.len()),
        };
        for ([a, b], [id, z]) in self.g1.iter().zip(&self.g2) {
            let base = batch.g2.len();
            batch.g2.extend_from_slice(&[*id, *z]);
            batch.products.push(vec![
                (*a, base),
                (*b, 0),
                (-G1Affine::generator(), base + 1),
            ]);
        }
        batch
    }

    /// The product of every dealing's product, whose shared sides are summed:
    /// `prod_d e(A_d, id_d) * e(sum_d B_d, h) * e(-g1, sum_d Z_d)`, one Miller loop per
    /// dealing and two more, one final exponentiation. The dealings' coefficients are
    /// independent, so a product that is not the identity in some dealing leaves this
    /// one the identity with probability at most `2^-128` (docs/nidkg.md).
    fn whole_batch(&self) -> PairingBatch {
        let b: G1Projective = self.g1.iter().map(|[_, b]| G1Projective::from(b)).sum();
        let z: G2Projective = self.g2.iter().map(|[_, z]| G2Projective::from(z)).sum();
        let mut batch = PairingBatch {
            g2: vec![SysParams::get().h, G2Affine::from(z)],
            products: vec![vec![(G1Affine::from(b), 0), (-G1Affine::generator(), 1)]],
        };
        for ([a, _], [id, _]) in self.g1.iter().zip(&self.g2) {
            batch.products[0].push((*a, batch.g2.len()));
            batch.g2.push(*id);
        }
        batch
    }
}

fn normalized_g1(points: &[G1Projective]) -> Vec<G1Affine> {
    let mut out = vec![G1Affine::identity(); points.len()];
    G1Projective::batch_normalize(points, &mut out);
    out
}

fn normalized_g2(points: &[G2Projective]) -> Vec<G2Affine> {
    let mut out = vec![G2Affine::identity(); points.len()];
    G2Projective::batch_normalize(points, &mut out);
    out
}

/// `[a0, b0, a1, b1, ..]` as `[[a0, b0], [a1, b1], ..]`.
fn pairs<T: Copy>(flat: &[T]) -> Vec<[T; 2]> {
    flat.chunks_exact(2).map(|p| [p[0], p[1]]).collect()
}

/// The chunking and sharing proofs of every pending dealing: one recombination batch, one
/// MSM batch (one combined G1 equation per dealing), and one batch of the G2 equations. A
/// deterministic check that fails (a response out of range, a recombination that is not
/// a point) is that dealing's verdict.
fn combined_proofs<B: BatchOps + ?Sized>(
    ops: &B,
    state: &[Result<DecodedDealing, VerifyError>],
    rho: &mut Coefficients,
    phases: &mut PhaseTimes,
) -> Combined {
    let start = Instant::now();
    let mut verdicts: Combined = (0..state.len()).map(|_| None).collect();
    // The deterministic range checks first: a dealing out of range fails by name.
    let chunking: Vec<Option<ChunkingTerms>> = state
        .par_iter()
        .zip(verdicts.par_iter_mut())
        .map(|(s, verdict)| {
            let d = s.as_ref().ok()?;
            ChunkingTerms::new(&d.receiver_keys, &d.dealing)
                .map_err(|e| *verdict = Some(Err(e)))
                .ok()
        })
        .collect();
    let sharing_start = Instant::now();
    let sharing = match sharing_terms_all(ops, state, &mut verdicts) {
        Ok(s) => s,
        Err(e) => return fail_rest(state, verdicts, e),
    };
    phases.sharing += sharing_start.elapsed();
    let pending = pending(state, Some(&verdicts));
    let coefficients: Vec<EquationCoefficients> = pending
        .iter()
        .map(|(_, d)| EquationCoefficients::draw(rho, d.receiver_keys.len()))
        .collect();
    let (equations, g2_equations): (Vec<G1Equation>, Vec<_>) = pending
        .par_iter()
        .zip(coefficients)
        .map(|((i, d), rho)| {
            let (Some(c), Some(s)) = (&chunking[*i], &sharing[*i]) else {
                unreachable!("every pending dealing has its terms")
            };
            (
                combined_g1_equation(d, c, s, &rho),
                verify::coefficients_equation(&d.dealing, s),
            )
        })
        .unzip();
    let (g1, g2) = join(ops, || ops.g1_msm(&equations), || ops.g2_msm(&g2_equations));
    let results = g1
        .and_then(|r| exactly("g1_msm", equations.len(), r))
        .and_then(|g1| Ok((g1, exactly("g2_msm", g2_equations.len(), g2?)?)));
    let (g1, g2) = match results {
        Ok(r) => r,
        Err(e) => return fail_rest(state, verdicts, e.into()),
    };
    for (((i, _), g1), g2) in pending.iter().zip(g1).zip(g2) {
        verdicts[*i] = Some(Ok(bool::from(g1.is_identity() & g2.is_identity())));
    }
    phases.chunking += start.elapsed().saturating_sub(phases.sharing);
    verdicts
}

/// The sharing terms of every pending dealing, from one recombination batch; a dealing
/// whose terms cannot be formed gets its verdict in `verdicts`.
fn sharing_terms_all<B: BatchOps + ?Sized>(
    ops: &B,
    state: &[Result<DecodedDealing, VerifyError>],
    verdicts: &mut Combined,
) -> Result<Vec<Option<SharingTerms>>, VerifyError> {
    let pending = pending(state, Some(&*verdicts));
    let rows: Vec<&[G1Affine]> = pending
        .iter()
        .flat_map(|(_, d)| verify::recombination_rows(&d.dealing))
        .collect();
    let combined = ops.g1_recombine_chunks(&rows)?;
    let combined = exactly("g1_recombine_chunks", rows.len(), combined)?;
    // Each dealing's `n + 1` rows start where the previous dealing's end.
    let mut start = 0;
    let mine: Vec<(usize, &DecodedDealing, &[G1Projective])> = pending
        .iter()
        .map(|(i, d)| {
            let rows = d.receiver_keys.len() + 1;
            start += rows;
            (*i, *d, &combined[start - rows..start])
        })
        .collect();
    let formed: Vec<(usize, Result<SharingTerms, VerifyError>)> = mine
        .into_par_iter()
        .map(|(i, d, rows)| {
            let terms = SharingTerms::from_recombined(&d.receiver_keys, &d.dealing, rows.to_vec());
            (i, terms)
        })
        .collect();
    let mut terms: Vec<Option<SharingTerms>> = (0..state.len()).map(|_| None).collect();
    for (i, formed) in formed {
        match formed {
            Ok(t) => terms[i] = Some(t),
            Err(e) => verdicts[i] = Some(Err(e)),
        }
    }
    Ok(terms)
}

/// `sum_e rho_e E_e` over the chunking proof's `n + 2` and the sharing proof's two G1
/// equations, as one MSM whose result must be the identity.
fn combined_g1_equation(
    d: &DecodedDealing,
    chunking: &ChunkingTerms,
    sharing: &SharingTerms,
    rho: &EquationCoefficients,
) -> G1Equation {
    let (c, p) = (&d.dealing.ciphertext, &d.dealing.chunking);
    let mut eq = LinearCombination::default();
    // Randomizers, receiver i: sum_j R_j s_ij - g1 z_r,i + D_{i+1}; the shared bases R_j
    // and g1 take the sum of their scalars.
    let rho_i = &rho.randomizers;
    let mut r_scalars = vec![Scalar::zero(); NUM_CHUNKS];
    let mut g1_scalar = Scalar::zero();
    for (i, s_i) in chunking.s.chunks(NUM_CHUNKS).enumerate() {
        for (acc, s_ij) in r_scalars.iter_mut().zip(s_i) {
            *acc += rho_i[i] * s_ij;
        }
        g1_scalar -= rho_i[i] * p.z_r[i];
        eq.term(p.dd[i + 1], rho_i[i]);
    }
    eq.terms(&c.rr, &r_scalars, Scalar::one());
    eq.term(G1Affine::generator(), g1_scalar);
    // Blinders: sum_k B_k x^k - g1 z_beta + D_0.
    let rho_b = rho.blinders;
    eq.equation(verify::blinders_equation(&d.dealing, chunking), rho_b);
    eq.term(p.dd[0], rho_b);
    // Chunks: sum_ij s_ij C_ij + sum_k C_k x^k + (the rest) + Y.
    let rho_c = rho.chunks;
    for (row, s_i) in c.cc.iter().zip(chunking.s.chunks(NUM_CHUNKS)) {
        eq.terms(row, s_i, rho_c);
    }
    eq.terms(&p.cc, &chunking.xpow, rho_c);
    eq.equation(
        verify::chunks_equation_rest(&d.receiver_keys, &d.dealing, chunking),
        rho_c,
    );
    eq.term(p.yy, rho_c);
    // The sharing proof's two G1 equations.
    let [rho_randomizer, rho_ciphertexts] = rho.sharing;
    eq.equation(
        verify::randomizer_equation(&d.dealing, sharing),
        rho_randomizer,
    );
    eq.equation(
        verify::ciphertexts_equation(&d.receiver_keys, &d.dealing, sharing),
        rho_ciphertexts,
    );
    eq.into_equation()
}

/// The coefficients of one dealing's combined G1 equation, drawn in the call's order
/// before the equations are formed (in parallel).
struct EquationCoefficients {
    /// One per receiver: the chunking proof's randomizer equations.
    randomizers: Vec<Scalar>,
    /// The chunking proof's blinder equation.
    blinders: Scalar,
    /// The chunking proof's chunks equation.
    chunks: Scalar,
    /// The sharing proof's randomizer and ciphertexts equations.
    sharing: [Scalar; 2],
}

impl EquationCoefficients {
    fn draw(rho: &mut Coefficients, receivers: usize) -> Self {
        EquationCoefficients {
            randomizers: rho.take(receivers),
            blinders: rho.next(),
            chunks: rho.next(),
            sharing: [rho.next(), rho.next()],
        }
    }
}

/// Bases and scalars of one MSM, built from equations scaled by coefficients.
#[derive(Default)]
struct LinearCombination {
    bases: Vec<G1Affine>,
    scalars: Vec<Scalar>,
}

impl LinearCombination {
    fn term(&mut self, base: G1Affine, scalar: Scalar) {
        self.bases.push(base);
        self.scalars.push(scalar);
    }

    fn terms(&mut self, bases: &[G1Affine], scalars: &[Scalar], factor: Scalar) {
        self.bases.extend_from_slice(bases);
        self.scalars.extend(scalars.iter().map(|s| s * factor));
    }

    fn equation(&mut self, (bases, scalars): G1Equation, factor: Scalar) {
        self.terms(&bases, &scalars, factor);
    }

    fn into_equation(self) -> G1Equation {
        (self.bases, self.scalars)
    }
}

/// The dealings still without a verdict (in `state`, and in `verdicts` where given), with
/// their index.
fn pending<'a>(
    state: &'a [Result<DecodedDealing, VerifyError>],
    verdicts: Option<&Combined>,
) -> Vec<(usize, &'a DecodedDealing)> {
    state
        .iter()
        .enumerate()
        .filter(|(i, _)| verdicts.is_none_or(|v| v[*i].is_none()))
        .filter_map(|(i, s)| s.as_ref().ok().map(|d| (i, d)))
        .collect()
}

/// The same combined verdict for every pending dealing (a whole-call error).
fn all_pending(
    state: &[Result<DecodedDealing, VerifyError>],
    verdict: Result<bool, VerifyError>,
) -> Combined {
    state
        .iter()
        .map(|s| s.as_ref().ok().map(|_| verdict.clone()))
        .collect()
}

/// `verdicts` with every dealing still pending given `e` (a whole-call error): the
/// verdicts already reached stand.
fn fail_rest(
    state: &[Result<DecodedDealing, VerifyError>],
    mut verdicts: Combined,
    e: VerifyError,
) -> Combined {
    let rest: Vec<usize> = pending(state, Some(&verdicts))
        .iter()
        .map(|(i, _)| *i)
        .collect();
    for i in rest {
        verdicts[i] = Some(Err(e.clone()));
    }
    verdicts
}

/// Every pending dealing gets `e`: no verdict without the coefficients.
fn fail_pending(state: &mut [Result<DecodedDealing, VerifyError>], e: &BackendError) {
    for s in state.iter_mut().filter(|s| s.is_ok()) {
        *s = Err(e.clone().into());
    }
}

/// A stream of combination coefficients: 128-bit integers from ChaCha20 seeded by the
/// operating system, one stream per check of a call (the integrity check's, the proofs'),
/// seeded after the dealings are decoded.
struct Coefficients(ChaCha20Rng);

impl Coefficients {
    fn from_os() -> Result<Coefficients, BackendError> {
        ChaCha20Rng::from_rng(rand::rngs::OsRng)
            .map(Coefficients)
            .map_err(|e| BackendError {
                operation: "combined_checks",
                reason: format!("no operating-system randomness for the coefficients: {e}"),
            })
    }

    fn next(&mut self) -> Scalar {
        Scalar::from_raw([self.0.next_u64(), self.0.next_u64(), 0, 0])
    }

    fn take(&mut self, count: usize) -> Vec<Scalar> {
        (0..count).map(|_| self.next()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::Coefficients;

    /// 128-bit coefficients, fresh per call: constant or short ones would let errors in
    /// two equations cancel.
    #[test]
    fn coefficients_are_128_bit_and_fresh() {
        let draw = || {
            let mut rho = Coefficients::from_os().unwrap();
            rho.take(1000)
        };
        let (a, b) = (draw(), draw());
        assert_ne!(a, b, "two calls drew the same coefficients");
        let mut seen = std::collections::HashSet::new();
        let mut top_bit = false;
        for s in &a {
            let le = s.to_bytes();
            assert!(le[16..].iter().all(|&x| x == 0), "more than 128 bits");
            top_bit |= le[15] & 0x80 != 0;
            assert!(seen.insert(le), "a repeated coefficient");
        }
        assert!(top_bit, "no coefficient of 1000 uses bit 127");
    }
}
