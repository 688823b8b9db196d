//! BLS signature batch verification as the replica verifies: signatures in G1 and public
//! keys in G2 decoded with `from_compressed` (subgroup-checked; the identity is
//! accepted, as the replica accepts it), the message hashed to G1 with RFC 9380
//! `hash_to_curve` under the scheme's tag, and `e(sig, g2) == e(H(m), pk)` checked as
//! `e(sig, -g2) * e(H(m), pk) == 1` (the IC's `verify_bls_signature`).
//!
//! Batches are checked with random linear combinations (independent 128-bit scalars
//! from a ChaCha20 generator seeded by the OS): items sharing a message add up into one
//! pairing `e(H(m), sum r_i*pk_i)`, all signatures into one `e(sum r_i*sig_i, -g2)`,
//! and one multi-Miller loop with a single final exponentiation decides the lot. A
//! failed combination is bisected until single items, which get the exact check; so
//! every "invalid" verdict is exact and every "valid" verdict holds except with
//! probability at most 2^-128 per combination checked. Decoded public keys are cached
//! (as the replica caches them).

use super::blst_convert::{
    g1_from_blst, g1_to_blst, g2_from_blst, g2_to_blst, p1_msm_one_thread, p1_mult,
    p2_msm_one_thread,
};
use super::decompress::{g1_decompress_one, g2_decompress_one};
use blst::{blst_p1_affine, blst_p2_affine};
use gpu_crypto_api::{BlsItem, BlsScheme};
use gpu_crypto_api::{DecodeError, VerifyError};
use ic_bls12_381::hash_to_curve::{ExpandMsgXmd, HashToCurve};
use ic_bls12_381::{
    G1Affine, G1Projective, G2Affine, G2Prepared, Gt, MillerLoopResult, multi_miller_loop,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

/// Batches with at most this many decodable items are verified item by item (in
/// parallel): a combination saves nothing at this size.
const PER_ITEM_MAX: usize = 4;

/// Bits of the random combination scalars.
const RANDOM_BITS: usize = 128;

/// Miller-loop terms per rayon task when one combination has many terms.
const MILLER_TERMS_PER_TASK: usize = 8;

/// Decoded public keys kept; past this the cache starts over (node keys are few and
/// stable, so it refills at once).
const PUBLIC_KEY_CACHE_MAX: usize = 4096;

/// Successfully decoded public keys by encoding, as the replica's
/// `G2Affine::deserialize_cached`: decoding a G2 key (square root in Fp2 and subgroup
/// check) costs about as much as a pairing, and the same node keys recur every round.
static PUBLIC_KEY_CACHE: LazyLock<Mutex<HashMap<[u8; 96], G2Affine>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// [`g2_decompress_one`] through [`PUBLIC_KEY_CACHE`]. Rejections are not cached (they
/// are cheap to repeat and must not crowd out keys).
fn decode_public_key(bytes: &[u8; 96]) -> Result<G2Affine, DecodeError> {
    let cached = PUBLIC_KEY_CACHE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(bytes)
        .copied();
    if let Some(key) = cached {
        return Ok(key);
    }
    let key = g2_decompress_one(bytes)?;
    let mut cache = PUBLIC_KEY_CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if cache.len() >= PUBLIC_KEY_CACHE_MAX {
        cache.clear();
    }
    cache.insert(*bytes, key);
    Ok(key)
}

static NEG_G2_PREPARED: LazyLock<G2Prepared> =
    LazyLock::new(|| G2Prepared::from(-G2Affine::generator()));

/// `H(m)` in G1 as the replica computes it for `scheme` (`G1Projective::hash(dst, m)`).
pub fn hash_message_to_g1(scheme: BlsScheme, message: &[u8]) -> G1Affine {
    let point = <G1Projective as HashToCurve<ExpandMsgXmd<sha2::Sha256>>>::hash_to_curve(
        message,
        scheme.dst(),
    );
    G1Affine::from(point)
}

/// The exact single check: `e(sig, -g2) * e(H(m), pk) == 1`.
pub fn verify_one(signature: &G1Affine, public_key: &G2Affine, message_point: &G1Affine) -> bool {
    let pk = G2Prepared::from(*public_key);
    let result = multi_miller_loop(&[(signature, &NEG_G2_PREPARED), (message_point, &pk)]);
    result.final_exponentiation() == Gt::identity()
}

/// One verdict per item, in order; the empty batch gives an empty vector.
pub fn bls_verify_batch(items: &[BlsItem<'_>]) -> Vec<Result<(), VerifyError>> {
    if items.is_empty() {
        return Vec::new();
    }
    let decoded: Vec<Result<(G1Affine, G2Affine), VerifyError>> = items
        .par_iter()
        .with_min_len(4)
        .map(|item| {
            let sig = g1_decompress_one(item.signature).map_err(VerifyError::Signature)?;
            let pk = decode_public_key(item.public_key).map_err(VerifyError::PublicKey)?;
            Ok((sig, pk))
        })
        .collect();

    // Decodable items, grouped by what is hashed: (scheme, message).
    let mut group_of_message: HashMap<(BlsScheme, &[u8]), usize> = HashMap::new();
    let mut messages: Vec<(BlsScheme, &[u8])> = Vec::new();
    let mut valid: Vec<Candidate> = Vec::new();
    for (index, (item, decoded)) in items.iter().zip(&decoded).enumerate() {
        if let Ok((signature, public_key)) = decoded {
            let key = (item.scheme, item.message);
            let group = *group_of_message.entry(key).or_insert_with(|| {
                messages.push(key);
                messages.len() - 1
            });
            valid.push(Candidate {
                index,
                group,
                signature: *signature,
                public_key: *public_key,
            });
        }
    }
    let hashes: Vec<G1Affine> = messages
        .par_iter()
        .map(|(scheme, message)| hash_message_to_g1(*scheme, message))
        .collect();

    let valid_verdicts = if valid.len() <= PER_ITEM_MAX {
        verify_each(&valid, &hashes)
    } else {
        match Combination::new(valid, &hashes) {
            Ok(combination) => combination.verify_all(),
            Err(valid) => {
                tracing::warn!(
                    items = valid.len(),
                    "no random combination possible (OS randomness or blst bridge failed); verifying item by item"
                );
                verify_each(&valid, &hashes)
            }
        }
    };

    let mut verdicts: Vec<Result<(), VerifyError>> =
        decoded.into_iter().map(|d| d.map(|_| ())).collect();
    for (index, ok) in valid_verdicts {
        if let Some(v) = verdicts.get_mut(index) {
            *v = if ok {
                Ok(())
            } else {
                Err(VerifyError::Invalid)
            };
        }
    }
    verdicts
}

/// A decodable item: its index in the batch and the group of its message.
#[derive(Clone, Copy)]
struct Candidate {
    index: usize,
    group: usize,
    signature: G1Affine,
    public_key: G2Affine,
}

fn verify_each(valid: &[Candidate], hashes: &[G1Affine]) -> Vec<(usize, bool)> {
    valid
        .par_iter()
        .map(|c| {
            let ok = hashes
                .get(c.group)
                .is_some_and(|h| verify_one(&c.signature, &c.public_key, h));
            (c.index, ok)
        })
        .collect()
}

/// Everything a combined check over any subset of the candidates needs, computed once.
struct Combination<'h> {
    candidates: Vec<Candidate>,
    hashes: &'h [G1Affine],
    /// Candidates per message group over the whole batch.
    group_sizes: Vec<usize>,
    /// The random scalar of each candidate, little-endian.
    randoms: Vec<[u8; RANDOM_BITS / 8]>,
    blst_signatures: Vec<blst_p1_affine>,
    blst_public_keys: Vec<blst_p2_affine>,
    /// For candidates alone in their group: `r_i * H(m_i)` and `pk_i` prepared, so a
    /// combination pays no G2 arithmetic for them.
    alone: Vec<Option<(G1Affine, G2Prepared)>>,
}

impl<'h> Combination<'h> {
    /// `Err` gives the candidates back when no combination can be formed.
    fn new(candidates: Vec<Candidate>, hashes: &'h [G1Affine]) -> Result<Self, Vec<Candidate>> {
        let Ok(mut rng) = ChaCha20Rng::from_rng(rand::rngs::OsRng) else {
            return Err(candidates);
        };
        let randoms: Vec<[u8; RANDOM_BITS / 8]> = candidates
            .iter()
            .map(|_| {
                loop {
                    // A zero scalar would drop its item from every check.
                    let r: u128 = rng.r#gen();
                    if r != 0 {
                        break r.to_le_bytes();
                    }
                }
            })
            .collect();
        let mut group_sizes = vec![0usize; hashes.len()];
        for c in &candidates {
            if let Some(size) = group_sizes.get_mut(c.group) {
                *size += 1;
            }
        }
        let blst_signatures: Option<Vec<_>> = candidates
            .par_iter()
            .map(|c| g1_to_blst(&c.signature))
            .collect();
        let blst_public_keys: Option<Vec<_>> = candidates
            .par_iter()
            .map(|c| g2_to_blst(&c.public_key))
            .collect();
        let (Some(blst_signatures), Some(blst_public_keys)) = (blst_signatures, blst_public_keys)
        else {
            return Err(candidates);
        };
        let alone: Option<Vec<Option<(G1Affine, G2Prepared)>>> = candidates
            .par_iter()
            .zip(&randoms)
            .map(|(c, r)| {
                if group_sizes.get(c.group) != Some(&1) {
                    return Some(None);
                }
                let hash = g1_to_blst(hashes.get(c.group)?)?;
                let scaled = g1_from_blst(&p1_mult(&hash, r, RANDOM_BITS)?)?;
                Some(Some((
                    G1Affine::from(scaled),
                    G2Prepared::from(c.public_key),
                )))
            })
            .collect();
        let Some(alone) = alone else {
            return Err(candidates);
        };
        Ok(Combination {
            candidates,
            hashes,
            group_sizes,
            randoms,
            blst_signatures,
            blst_public_keys,
            alone,
        })
    }

    /// (batch index, verdict) for every candidate.
    fn verify_all(&self) -> Vec<(usize, bool)> {
        let all: Vec<usize> = (0..self.candidates.len()).collect();
        self.bisect(&all)
    }

    /// Verdicts for the candidates at `positions` (indices into `self.candidates`).
    fn bisect(&self, positions: &[usize]) -> Vec<(usize, bool)> {
        if positions.len() <= 2 {
            return positions.par_iter().map(|&p| self.exact(p)).collect();
        }
        if self.check(positions) == Some(true) {
            return positions
                .iter()
                .filter_map(|&p| self.candidates.get(p).map(|c| (c.index, true)))
                .collect();
        }
        let (left, right) = positions.split_at(positions.len() / 2);
        let (mut left, right) = rayon::join(|| self.bisect(left), || self.bisect(right));
        left.extend(right);
        left
    }

    fn exact(&self, position: usize) -> (usize, bool) {
        let Some(c) = self.candidates.get(position) else {
            return (usize::MAX, false);
        };
        let ok = self
            .hashes
            .get(c.group)
            .is_some_and(|h| verify_one(&c.signature, &c.public_key, h));
        (c.index, ok)
    }

    /// The combined check over `positions`; `None` if the blst bridge failed (the
    /// caller then bisects down to exact checks).
    fn check(&self, positions: &[usize]) -> Option<bool> {
        // sum r_i * sig_i, paired with -g2.
        let mut points = Vec::with_capacity(positions.len());
        let mut scalars = Vec::with_capacity(positions.len() * RANDOM_BITS / 8);
        for &p in positions {
            points.push(*self.blst_signatures.get(p)?);
            scalars.extend_from_slice(self.randoms.get(p)?);
        }
        let signature_sum = g1_from_blst(&p1_msm_one_thread(&points, &scalars, RANDOM_BITS)?)?;

        // One term per message: alone in the batch, the precomputed (r*H(m), pk);
        // otherwise (H(m), sum r_i * pk_i) over the group's members in `positions`.
        let mut alone_terms: Vec<&(G1Affine, G2Prepared)> = Vec::new();
        let mut shared: HashMap<usize, Vec<usize>> = HashMap::new();
        for &p in positions {
            let c = self.candidates.get(p)?;
            match self.alone.get(p)? {
                Some(term) if self.group_sizes.get(c.group) == Some(&1) => alone_terms.push(term),
                _ => shared.entry(c.group).or_default().push(p),
            }
        }
        let shared: Vec<(usize, Vec<usize>)> = shared.into_iter().collect();
        let shared_terms: Option<Vec<(G1Affine, G2Prepared)>> = shared
            .par_iter()
            .map(|(group, members)| {
                let mut points = Vec::with_capacity(members.len());
                let mut scalars = Vec::with_capacity(members.len() * RANDOM_BITS / 8);
                for &p in members {
                    points.push(*self.blst_public_keys.get(p)?);
                    scalars.extend_from_slice(self.randoms.get(p)?);
                }
                let key_sum = g2_from_blst(&p2_msm_one_thread(&points, &scalars, RANDOM_BITS)?)?;
                Some((
                    *self.hashes.get(*group)?,
                    G2Prepared::from(G2Affine::from(key_sum)),
                ))
            })
            .collect();
        let shared_terms = shared_terms?;

        let signature_sum = G1Affine::from(signature_sum);
        let mut terms: Vec<(&G1Affine, &G2Prepared)> =
            Vec::with_capacity(1 + alone_terms.len() + shared_terms.len());
        terms.push((&signature_sum, &NEG_G2_PREPARED));
        terms.extend(alone_terms.iter().map(|(g1, g2)| (g1, g2)));
        terms.extend(shared_terms.iter().map(|(g1, g2)| (g1, g2)));
        let miller = terms
            .par_chunks(MILLER_TERMS_PER_TASK)
            .map(multi_miller_loop)
            .reduce(MillerLoopResult::default, |a, b| a + b);
        Some(miller.final_exponentiation() == Gt::identity())
    }
}
