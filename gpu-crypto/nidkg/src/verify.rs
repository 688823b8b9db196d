//! Dealing verification in four phases, each gathering its work into the batches of
//! [`BatchOps`]:
//!
//! 1. deserialisation: one batch of `18n + 101` G1 and one of `t + 17` G2 decompressions
//!    with subgroup checks (receiver keys included), and `n + 35` scalar range checks;
//! 2. ciphertext integrity: 16 products of three pairings;
//! 3. chunking proof: `n` MSMs over the 16 randomizers (plus the generator) with full
//!    scalars, 32 MSMs over the `16n` chunks with 8-bit scalars, two closing MSMs;
//! 4. sharing proof: `n + 1` chunk recombinations, one G2 MSM over the `t` public
//!    coefficients, three G1 MSMs.
//!
//! The first failing check names the component; phases after it do not run.

use crate::batch::{BatchOps, PairingBatch};
use crate::dealing::{
    ChallengePowers, Dealing, chunking_first_challenge, chunking_second_challenge,
    ciphertext_identity_hash, powers, sharing_challenge, sharing_instance_hash,
};
use crate::encoding::{ElementKind, EncodedElements, scalar_from_be};
use crate::error::{BackendError, ChunkingCheck, SharingCheck, VerifyError};
use crate::params::{NUM_CHUNKS, NUM_ZK_REPETITIONS, SysParams, chunking_bound_z};
use ic_bls12_381::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use std::time::{Duration, Instant};

/// Wall time of each verification phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseTimes {
    /// Splitting the bytes, decompressing and subgroup-checking every point, scalars.
    pub deserialize: Duration,
    /// The 16 three-pair multipairings.
    pub integrity: Duration,
    /// The chunking proof.
    pub chunking: Duration,
    /// The sharing proof.
    pub sharing: Duration,
}

impl PhaseTimes {
    /// Sum of the phases.
    pub fn total(&self) -> Duration {
        self.deserialize + self.integrity + self.chunking + self.sharing
    }
}

/// Phase by phase, for the time of several verifications.
impl std::ops::AddAssign for PhaseTimes {
    fn add_assign(&mut self, other: PhaseTimes) {
        self.deserialize += other.deserialize;
        self.integrity += other.integrity;
        self.chunking += other.chunking;
        self.sharing += other.sharing;
    }
}

/// What an accepted dealing was and what verifying it took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// Receivers.
    pub n: usize,
    /// Threshold.
    pub t: usize,
    /// Epoch the dealing is encrypted for.
    pub epoch: u32,
    /// Backend that ran the batches.
    pub backend: String,
    /// G1 points decompressed (`18n + 101`).
    pub g1_points: usize,
    /// G2 points decompressed (`t + 17`).
    pub g2_points: usize,
    /// Per-phase wall time.
    pub phases: PhaseTimes,
}

/// A dealing whose elements all decoded, with its receivers' keys.
#[derive(Clone, Debug)]
pub struct DecodedDealing {
    /// Receivers' public keys.
    pub receiver_keys: Vec<G1Affine>,
    /// The dealing.
    pub dealing: Dealing,
}

/// A backend's results, checked to be one per item: a short answer must never read as
/// "nothing failed".
pub(crate) fn exactly<T>(
    operation: &'static str,
    expected: usize,
    results: Vec<T>,
) -> Result<Vec<T>, BackendError> {
    if results.len() == expected {
        Ok(results)
    } else {
        Err(BackendError {
            operation,
            reason: format!("{} results for {expected} items", results.len()),
        })
    }
}

/// Phase 1: splits and decodes; every point subgroup-checked, every scalar range-checked.
pub fn deserialize<B: BatchOps + ?Sized>(
    ops: &B,
    receiver_keys: &[[u8; 48]],
    t: usize,
    dealing: &[u8],
) -> Result<DecodedDealing, VerifyError> {
    let encoded = EncodedElements::split(receiver_keys, t, dealing)?;
    let g1 = ops.g1_decompress(&encoded.g1)?;
    let g2 = ops.g2_decompress(&encoded.g2)?;
    decode(&encoded, g1, g2)
}

/// The dealing of `encoded` from its points' decompressions (`None`: not a point of the
/// subgroup); the first failure in encoding order (receiver keys first) is the error.
pub(crate) fn decode(
    encoded: &EncodedElements,
    g1: Vec<Option<G1Affine>>,
    g2: Vec<Option<G2Affine>>,
) -> Result<DecodedDealing, VerifyError> {
    let n = encoded.n;
    let g1 = exactly("g1_decompress", encoded.g1.len(), g1)?;
    let g2 = exactly("g2_decompress", encoded.g2.len(), g2)?;
    let failure = |kind: ElementKind, flat: usize| {
        let (component, index) = encoded.locate(kind, flat);
        VerifyError::Deserialize { component, index }
    };
    let g1: Vec<G1Affine> = g1
        .into_iter()
        .enumerate()
        .map(|(i, p)| p.ok_or_else(|| failure(ElementKind::G1, i)))
        .collect::<Result<_, _>>()?;
    let g2: Vec<G2Affine> = g2
        .into_iter()
        .enumerate()
        .map(|(i, p)| p.ok_or_else(|| failure(ElementKind::G2, i)))
        .collect::<Result<_, _>>()?;
    let scalars: Vec<Scalar> = encoded
        .scalars
        .iter()
        .enumerate()
        .map(|(i, s)| scalar_from_be(s).ok_or_else(|| failure(ElementKind::Scalar, i)))
        .collect::<Result<_, _>>()?;
    let dealing = Dealing::from_elements(n, encoded.t, &g1[n..], &g2, &scalars);
    Ok(DecodedDealing {
        receiver_keys: g1[..n].to_vec(),
        dealing,
    })
}

/// The G2 point every integrity product pairs the `R_j` with: the ciphertext's node
/// identity for `epoch` (oracle 1 of 5).
pub(crate) fn integrity_identity(
    dealing: &Dealing,
    epoch: u32,
    associated_data: &[u8],
) -> G2Projective {
    let c = &dealing.ciphertext;
    let hash = ciphertext_identity_hash(&c.cc, &c.rr, &c.ss, epoch, associated_data);
    SysParams::get().identity_point(epoch, &hash)
}

/// Phase 2: `e(R_j, id) e(S_j, h) e(-g1, Z_j) = 1` for every chunk row `j`.
pub fn check_integrity<B: BatchOps + ?Sized>(
    ops: &B,
    dealing: &Dealing,
    epoch: u32,
    associated_data: &[u8],
) -> Result<(), VerifyError> {
    let c = &dealing.ciphertext;
    let neg_g1 = -G1Affine::generator();
    let mut batch = PairingBatch {
        g2: Vec::with_capacity(NUM_CHUNKS + 2),
        products: Vec::with_capacity(NUM_CHUNKS),
    };
    batch.g2.push(G2Affine::from(integrity_identity(
        dealing,
        epoch,
        associated_data,
    )));
    batch.g2.push(SysParams::get().h);
    for j in 0..NUM_CHUNKS {
        batch.g2.push(c.zz[j]);
        batch
            .products
            .push(vec![(c.rr[j], 0), (c.ss[j], 1), (neg_g1, 2 + j)]);
    }
    let ok = exactly(
        "pairing_products",
        NUM_CHUNKS,
        ops.pairing_products_are_identity(&batch)?,
    )?;
    match ok.iter().position(|ok| !ok) {
        Some(row) => Err(VerifyError::CiphertextIntegrity { row }),
        None => Ok(()),
    }
}

/// What the chunking proof's equations take from the dealing: its responses in range, the
/// two challenges, and each chunk's challenge polynomial.
pub(crate) struct ChunkingTerms {
    /// The first challenge, 8 bits per (receiver, chunk, repetition).
    pub e: Vec<u8>,
    /// `x, x^2, .., x^32`: powers of the second challenge.
    pub xpow: Vec<Scalar>,
    /// `s_ij = sum_k e_ijk x^k`, at `i * 16 + j`.
    pub s: Vec<Scalar>,
    /// `sum_k z_s,k x^k`.
    pub z_s_x: Scalar,
}

impl ChunkingTerms {
    /// Checks the responses' range (`z_s,k < Z`, as integers) and derives the challenges.
    pub(crate) fn new(
        receiver_keys: &[G1Affine],
        dealing: &Dealing,
    ) -> Result<ChunkingTerms, VerifyError> {
        let n = receiver_keys.len();
        let l = NUM_ZK_REPETITIONS;
        let p = &dealing.chunking;
        for (k, z) in p.z_s.iter().enumerate() {
            let le = z.to_bytes();
            let small = le[8..].iter().all(|b| *b == 0);
            let value = u64::from_le_bytes(le[..8].try_into().expect("8 bytes"));
            if !small || value >= chunking_bound_z(n) {
                return Err(VerifyError::ChunkingProof(ChunkingCheck::ResponseRange(k)));
            }
        }
        let e = chunking_first_challenge(receiver_keys, &dealing.ciphertext, &p.y0, &p.bb, &p.cc);
        let x = chunking_second_challenge(&e, &p.z_s, &p.dd, &p.yy);
        let xpow = powers(&x, l);
        let challenges = ChallengePowers::new(&xpow);
        let s = e.chunks(l).map(|e_ij| challenges.eval(e_ij)).collect();
        let z_s_x = p
            .z_s
            .iter()
            .zip(&xpow)
            .fold(Scalar::zero(), |acc, (z, x_k)| acc + z * x_k);
        Ok(ChunkingTerms { e, xpow, s, z_s_x })
    }
}

/// `sum_k B_k x^k - g1 z_beta` (plus `D_0`, which the callers add).
pub(crate) fn blinders_equation(dealing: &Dealing, terms: &ChunkingTerms) -> G1Equation {
    let p = &dealing.chunking;
    let mut eq = (p.bb.clone(), terms.xpow.clone());
    eq.0.push(G1Affine::generator());
    eq.1.push(-p.z_beta);
    eq
}

/// The chunks equation without `sum_k (T_k + C_k) x^k`: `- sum_i y_i z_r,i - y0 z_beta
/// - g1 sum_k z_s,k x^k` (plus `Y`, which the callers add).
pub(crate) fn chunks_equation_rest(
    receiver_keys: &[G1Affine],
    dealing: &Dealing,
    terms: &ChunkingTerms,
) -> G1Equation {
    let p = &dealing.chunking;
    let mut eq = (
        receiver_keys.to_vec(),
        Vec::with_capacity(receiver_keys.len() + 2),
    );
    eq.1.extend(p.z_r.iter().map(|z| -z));
    eq.0.extend_from_slice(&[p.y0, G1Affine::generator()]);
    eq.1.extend_from_slice(&[-p.z_beta, -terms.z_s_x]);
    eq
}

/// Bases and scalars whose MSM must equal a given point.
pub(crate) type G1Equation = (Vec<G1Affine>, Vec<Scalar>);

/// Phase 3: the chunking proof.
pub fn check_chunking<B: BatchOps + ?Sized>(
    ops: &B,
    receiver_keys: &[G1Affine],
    dealing: &Dealing,
) -> Result<(), VerifyError> {
    let terms = ChunkingTerms::new(receiver_keys, dealing)?;
    check_randomizers(ops, dealing, &terms, receiver_keys.len())?;
    let t_k = chunk_sums(ops, dealing, &terms)?;
    let p = &dealing.chunking;
    // sum_k B_k x^k - g1 z_beta + D_0 == 0, and
    // sum_k (T_k + C_k) x^k + (the rest) + Y == 0.
    let mut chunk_eq = (t_k, terms.xpow.clone());
    let rest = chunks_equation_rest(receiver_keys, dealing, &terms);
    chunk_eq.0.extend(rest.0);
    chunk_eq.1.extend(rest.1);
    let blinders = blinders_equation(dealing, &terms);
    let closing = exactly("g1_msm", 2, ops.g1_msm(&[blinders, chunk_eq])?)?;
    if !bool::from(closing[0].add_mixed(&p.dd[0]).is_identity()) {
        return Err(VerifyError::ChunkingProof(ChunkingCheck::Blinders));
    }
    if !bool::from(closing[1].add_mixed(&p.yy).is_identity()) {
        return Err(VerifyError::ChunkingProof(ChunkingCheck::Chunks));
    }
    Ok(())
}

/// `n` MSMs over the shared bases (R_0..R_15, g1):
/// `sum_j R_j s_ij - g1 z_r,i + D_{i+1} == 0` for each receiver `i`.
fn check_randomizers<B: BatchOps + ?Sized>(
    ops: &B,
    dealing: &Dealing,
    terms: &ChunkingTerms,
    n: usize,
) -> Result<(), VerifyError> {
    let p = &dealing.chunking;
    let mut bases = dealing.ciphertext.rr.clone();
    bases.push(G1Affine::generator());
    let mut scalars = Vec::with_capacity(n * (NUM_CHUNKS + 1));
    for (i, s_i) in terms.s.chunks(NUM_CHUNKS).enumerate() {
        scalars.extend_from_slice(s_i);
        scalars.push(-p.z_r[i]);
    }
    let per_receiver = exactly("g1_msm_shared", n, ops.g1_msm_shared(&bases, &scalars, n)?)?;
    for (i, v) in per_receiver.iter().enumerate() {
        if !bool::from(v.add_mixed(&p.dd[i + 1]).is_identity()) {
            return Err(VerifyError::ChunkingProof(ChunkingCheck::Randomizers(i)));
        }
    }
    Ok(())
}

/// The 32 MSMs over the `16n` chunks with the 8-bit challenges, `T_k = sum_ij e_ijk
/// C_ij`, returned as `T_k + C_k` (the proof's `C_k`) in affine form.
fn chunk_sums<B: BatchOps + ?Sized>(
    ops: &B,
    dealing: &Dealing,
    terms: &ChunkingTerms,
) -> Result<Vec<G1Affine>, VerifyError> {
    let l = NUM_ZK_REPETITIONS;
    let chunk_bases: Vec<G1Affine> = dealing.ciphertext.cc.iter().flatten().copied().collect();
    let mut rows = vec![0u8; l * chunk_bases.len()];
    for ij in 0..chunk_bases.len() {
        for k in 0..l {
            rows[k * chunk_bases.len() + ij] = terms.e[ij * l + k];
        }
    }
    let t_k = exactly(
        "g1_msm_shared_u8",
        l,
        ops.g1_msm_shared_u8(&chunk_bases, &rows, l)?,
    )?;
    let with_cc: Vec<G1Projective> = t_k
        .iter()
        .zip(&dealing.chunking.cc)
        .map(|(t, cc)| t.add_mixed(cc))
        .collect();
    let mut sums = vec![G1Affine::identity(); l];
    G1Projective::batch_normalize(&with_cc, &mut sums);
    Ok(sums)
}

/// What the sharing proof's equations take from the dealing: the recombined randomizer
/// and ciphertexts and the two challenges.
pub(crate) struct SharingTerms {
    pub combined_r: G1Affine,
    pub combined_c: Vec<G1Affine>,
    /// `x'`.
    pub challenge: Scalar,
    /// `x, x^2, .., x^n`.
    pub xpow: Vec<Scalar>,
}

impl SharingTerms {
    /// Recombines the chunks (`n + 1` recombinations) and derives the challenges.
    pub(crate) fn new<B: BatchOps + ?Sized>(
        ops: &B,
        receiver_keys: &[G1Affine],
        dealing: &Dealing,
    ) -> Result<SharingTerms, VerifyError> {
        let combined = ops.g1_recombine_chunks(&recombination_rows(dealing))?;
        SharingTerms::from_recombined(receiver_keys, dealing, combined)
    }

    /// The terms from the recombinations of [`recombination_rows`], in their order.
    pub(crate) fn from_recombined(
        receiver_keys: &[G1Affine],
        dealing: &Dealing,
        combined: Vec<G1Projective>,
    ) -> Result<SharingTerms, VerifyError> {
        let n = receiver_keys.len();
        let s = &dealing.sharing;
        let combined = exactly("g1_recombine_chunks", n + 1, combined)?;
        let mut combined_affine = vec![G1Affine::identity(); n + 1];
        G1Projective::batch_normalize(&combined, &mut combined_affine);
        let combined_r = combined_affine[n];
        combined_affine.truncate(n);
        let x = sharing_instance_hash(
            receiver_keys,
            &dealing.public_coefficients,
            &combined_r,
            &combined_affine,
        );
        Ok(SharingTerms {
            combined_r,
            combined_c: combined_affine,
            challenge: sharing_challenge(&x, &s.ff, &s.aa, &s.yy),
            xpow: powers(&x, n),
        })
    }
}

/// The `n + 1` rows the sharing proof recombines: each receiver's 16 chunks, then the 16
/// randomizers.
pub(crate) fn recombination_rows(dealing: &Dealing) -> Vec<&[G1Affine]> {
    let c = &dealing.ciphertext;
    let mut rows: Vec<&[G1Affine]> = c.cc.iter().map(Vec::as_slice).collect();
    rows.push(&c.rr);
    rows
}

/// `sum_k A_k (sum_i i^k x^i) x' + A - g2 z_alpha` (receiver `i` evaluates at `i`).
pub(crate) fn coefficients_equation(
    dealing: &Dealing,
    terms: &SharingTerms,
) -> (Vec<G2Affine>, Vec<Scalar>) {
    let s = &dealing.sharing;
    let t = dealing.public_coefficients.len();
    let mut ik_xi: Vec<Scalar> = terms.xpow.clone();
    let mut scalars = Vec::with_capacity(t + 2);
    for _ in 0..t {
        let sum = ik_xi.iter().fold(Scalar::zero(), |acc, v| acc + v);
        scalars.push(sum * terms.challenge);
        for (i, v) in ik_xi.iter_mut().enumerate() {
            *v *= Scalar::from(i as u64 + 1);
        }
    }
    let mut bases = dealing.public_coefficients.clone();
    bases.extend_from_slice(&[s.aa, G2Affine::generator()]);
    scalars.extend_from_slice(&[Scalar::one(), -s.z_alpha]);
    (bases, scalars)
}

/// `R x' + F - g1 z_r`.
pub(crate) fn randomizer_equation(dealing: &Dealing, terms: &SharingTerms) -> G1Equation {
    let s = &dealing.sharing;
    (
        vec![terms.combined_r, s.ff, G1Affine::generator()],
        vec![terms.challenge, Scalar::one(), -s.z_r],
    )
}

/// `sum_i C_i x^i x' + Y - sum_i y_i x^i z_r - g1 z_alpha`.
pub(crate) fn ciphertexts_equation(
    receiver_keys: &[G1Affine],
    dealing: &Dealing,
    terms: &SharingTerms,
) -> G1Equation {
    let s = &dealing.sharing;
    let n = receiver_keys.len();
    let mut eq = (terms.combined_c.clone(), Vec::with_capacity(2 * n + 2));
    eq.1.extend(terms.xpow.iter().map(|x_i| x_i * terms.challenge));
    eq.0.extend_from_slice(receiver_keys);
    eq.1.extend(terms.xpow.iter().map(|x_i| -(x_i * s.z_r)));
    eq.0.extend_from_slice(&[s.yy, G1Affine::generator()]);
    eq.1.extend_from_slice(&[Scalar::one(), -s.z_alpha]);
    eq
}

/// Phase 4: the sharing proof.
pub fn check_sharing<B: BatchOps + ?Sized>(
    ops: &B,
    receiver_keys: &[G1Affine],
    dealing: &Dealing,
) -> Result<(), VerifyError> {
    let terms = SharingTerms::new(ops, receiver_keys, dealing)?;
    let g1_results = exactly(
        "g1_msm",
        2,
        ops.g1_msm(&[
            randomizer_equation(dealing, &terms),
            ciphertexts_equation(receiver_keys, dealing, &terms),
        ])?,
    )?;
    if !bool::from(g1_results[0].is_identity()) {
        return Err(VerifyError::SharingProof(SharingCheck::Randomizer));
    }
    let g2_results = exactly(
        "g2_msm",
        1,
        ops.g2_msm(&[coefficients_equation(dealing, &terms)])?,
    )?;
    if !bool::from(g2_results[0].is_identity()) {
        return Err(VerifyError::SharingProof(SharingCheck::Coefficients));
    }
    if !bool::from(g1_results[1].is_identity()) {
        return Err(VerifyError::SharingProof(SharingCheck::Ciphertexts));
    }
    Ok(())
}

/// Verifies a dealing for `receiver_keys` (compressed, in receiver order) with threshold
/// `t`, encrypted for `epoch` under `associated_data`: all four phases, timed.
pub fn verify_dealing<B: BatchOps + ?Sized>(
    ops: &B,
    receiver_keys: &[[u8; 48]],
    t: usize,
    epoch: u32,
    associated_data: &[u8],
    dealing: &[u8],
) -> Result<Report, VerifyError> {
    // Derive the system parameters outside the timed phases (once per process).
    let _ = SysParams::get();
    let mut phases = PhaseTimes::default();
    let start = Instant::now();
    let decoded = deserialize(ops, receiver_keys, t, dealing)?;
    phases.deserialize = start.elapsed();

    let start = Instant::now();
    check_integrity(ops, &decoded.dealing, epoch, associated_data)?;
    phases.integrity = start.elapsed();

    let start = Instant::now();
    check_chunking(ops, &decoded.receiver_keys, &decoded.dealing)?;
    phases.chunking = start.elapsed();

    let start = Instant::now();
    check_sharing(ops, &decoded.receiver_keys, &decoded.dealing)?;
    phases.sharing = start.elapsed();

    let n = receiver_keys.len();
    Ok(Report {
        n,
        t,
        epoch,
        backend: ops.name(),
        g1_points: 18 * n + 101,
        g2_points: t + 17,
        phases,
    })
}
