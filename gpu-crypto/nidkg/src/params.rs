//! Protocol parameters (the Internet Computer's values for Groth's NI-DKG) and the
//! forward-secure encryption's public system parameters.

use ic_bls12_381::hash_to_curve::{ExpandMsgXmd, HashToCurve};
use ic_bls12_381::{G2Affine, G2Prepared, G2Projective};
use sha2::Sha256;
use std::sync::OnceLock;

/// Chunks per share: a scalar (< 2^255) is split into 16 big-endian chunks of 16 bits.
pub const NUM_CHUNKS: usize = 16;
/// Bits per chunk.
pub const CHUNK_BITS: u32 = 16;
/// Chunks lie in `[0, CHUNK_SIZE)`.
pub const CHUNK_SIZE: u64 = 1 << CHUNK_BITS;
/// Parallel repetitions of the chunking proof (the paper's `l`).
pub const NUM_ZK_REPETITIONS: usize = 32;
/// Bits per chunking-proof challenge: ceil(256 / 32), so each challenge is one byte.
pub const CHALLENGE_BITS: u32 = 8;
/// Largest chunking-proof challenge.
pub const CHALLENGE_MAX: u64 = (1 << CHALLENGE_BITS) - 1;
/// Epoch bits of the forward-secure tree (2^32 epochs).
pub const LAMBDA_T: usize = 32;
/// Hash bits appended to the epoch to form a ciphertext's identity.
pub const LAMBDA_H: usize = 256;

/// Largest supported number of receivers. The IC's subnets have at most a few hundred
/// nodes; the chunking proof's range bound `Z` below must stay far below 2^64.
pub const MAX_RECEIVERS: usize = 1024;

/// Which of the IC's two thresholds a dealing uses for `n` receivers, `f = (n - 1) / 3`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ThresholdKind {
    /// `f + 1` (the random beacon's key).
    Low,
    /// `2f + 1` (the subnet's threshold signing key).
    High,
}

impl ThresholdKind {
    /// The threshold (number of public coefficients) for `n` receivers.
    pub fn threshold(self, n: usize) -> usize {
        let f = n.saturating_sub(1) / 3;
        match self {
            ThresholdKind::Low => f + 1,
            ThresholdKind::High => 2 * f + 1,
        }
    }

    /// Lower-case name (`low`, `high`).
    pub fn name(self) -> &'static str {
        match self {
            ThresholdKind::Low => "low",
            ThresholdKind::High => "high",
        }
    }
}

/// The chunking proof's bound `S = n * m * (CHUNK_SIZE - 1) * CHALLENGE_MAX`, the largest
/// value of `sum_ij e_ijk * s_ij` for honest chunks (m = 16 chunks per receiver).
pub fn chunking_bound_s(n: usize) -> u64 {
    n as u64 * NUM_CHUNKS as u64 * (CHUNK_SIZE - 1) * CHALLENGE_MAX
}

/// The chunking proof's response bound `Z = 2 * l * S`: responses `z_s` must be below it.
pub fn chunking_bound_z(n: usize) -> u64 {
    2 * NUM_ZK_REPETITIONS as u64 * chunking_bound_s(n)
}

/// Size in bytes of one dealing in the IC's encoding: `96t + 848n + 7600`.
pub fn dealing_size(n: usize, t: usize) -> usize {
    96 * t + 848 * n + 7600
}

/// Public parameters of the forward-secure (binary-tree) encryption: the IC's
/// independent G2 generators, hashed to G2 under the IC's domain separation tag. Derived
/// once per process; verification itself never hashes to a curve.
pub struct SysParams {
    /// `f_0`.
    pub f0: G2Affine,
    /// `f_1 .. f_{LAMBDA_T}`: one per epoch bit.
    pub f_tree: Vec<G2Affine>,
    /// One per hash bit of a ciphertext's identity.
    pub f_hash: Vec<G2Affine>,
    /// `h`, the base of the second randomizer.
    pub h: G2Affine,
    /// `h` prepared for pairings (the integrity check pairs against it 16 times).
    pub h_prepared: G2Prepared,
    /// The identity's generators summed by bytes ([`SysParams::identity_point`]).
    identity_windows: OnceLock<IdentityWindows>,
}

/// Domain separation tag of the IC's system parameters (RFC 9380 hash-to-curve, SHA-256,
/// SSWU): `f0`, `f1` .. `f32`, `f_h0` .. `f_h255` and `h` are the hashed labels.
pub const SYS_PARAMS_DST: &[u8] = b"DFX01-with-BLS12381G2_XMD:SHA-256_SSWU_RO_";

fn hash_g2(label: &str) -> G2Affine {
    let p = <G2Projective as HashToCurve<ExpandMsgXmd<Sha256>>>::hash_to_curve(
        label.as_bytes(),
        SYS_PARAMS_DST,
    );
    G2Affine::from(p)
}

impl SysParams {
    /// The process-wide parameters (derived on first use, about 290 hashes to G2).
    pub fn get() -> &'static SysParams {
        static PARAMS: OnceLock<SysParams> = OnceLock::new();
        PARAMS.get_or_init(|| {
            let h = hash_g2("h");
            SysParams {
                f0: hash_g2("f0"),
                f_tree: (1..=LAMBDA_T).map(|i| hash_g2(&format!("f{i}"))).collect(),
                f_hash: (0..LAMBDA_H).map(|i| hash_g2(&format!("f_h{i}"))).collect(),
                h,
                h_prepared: G2Prepared::from(h),
                identity_windows: OnceLock::new(),
            }
        })
    }

    /// `f_0 + sum_{i: bit_i = 1} f_i` over the epoch bits and the hash bits of an identity
    /// (the "ftau" of the paper): the G2 point a ciphertext's first randomizer is bound to.
    /// Summed by bytes of the identity from precomputed windows (built on first use): 36
    /// additions instead of one per set bit (about 144). Epoch and hash are public, so the table lookups
    /// reveal nothing.
    pub fn identity_point(&self, epoch: u32, hash_bits: &[u8; 32]) -> G2Projective {
        let windows = self
            .identity_windows
            .get_or_init(|| IdentityWindows::new(self));
        let tree = (0..LAMBDA_T / 8)
            .map(|w| (0..8).fold(0u8, |v, m| v | (u8::from(epoch_bit(epoch, 8 * w + m)) << m)));
        tree.chain(hash_bits.iter().copied())
            .zip(&windows.0)
            .fold(G2Projective::from(self.f0), |acc, (v, window)| {
                acc.add_mixed(&window[usize::from(v)])
            })
    }
}

/// The identity's generators (`f_1 .. f_32`, then the 256 hash generators) in windows of
/// eight; entry `v` of a window is the sum of the generators whose bit is set in `v`
/// (bit `m` for the window's `m`-th generator). 36 windows of 256 points, about 1.7 MB,
/// built on first use.
pub(crate) struct IdentityWindows(Vec<Box<[G2Affine; 256]>>);

impl IdentityWindows {
    fn new(params: &SysParams) -> Self {
        const { assert!(LAMBDA_T.is_multiple_of(8) && LAMBDA_H == 256) };
        let generators: Vec<&G2Affine> = params.f_tree.iter().chain(&params.f_hash).collect();
        IdentityWindows(generators.chunks(8).map(subset_sums).collect())
    }
}

/// `out[v] = sum_{m: bit m of v} g[m]`, each from a smaller subset by one addition.
fn subset_sums(g: &[&G2Affine]) -> Box<[G2Affine; 256]> {
    let mut sums = vec![G2Projective::identity(); 256];
    for v in 1..256usize {
        let low = v.trailing_zeros() as usize;
        sums[v] = sums[v & (v - 1)].add_mixed(g[low]);
    }
    let mut out = Box::new([G2Affine::identity(); 256]);
    G2Projective::batch_normalize(&sums, &mut out[..]);
    out
}

/// Bit `i` of the epoch's path in the tree, most significant first (`i < LAMBDA_T`).
pub fn epoch_bit(epoch: u32, i: usize) -> bool {
    (epoch >> (LAMBDA_T - 1 - i)) & 1 == 1
}

/// Bit `k` of a 256-bit hash, least significant bit of each byte first.
pub fn hash_bit(hash: &[u8; 32], k: usize) -> bool {
    (hash[k / 8] >> (k % 8)) & 1 == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_are_the_ics() {
        assert_eq!(ThresholdKind::Low.threshold(13), 5);
        assert_eq!(ThresholdKind::High.threshold(13), 9);
        assert_eq!(ThresholdKind::Low.threshold(28), 10);
        assert_eq!(ThresholdKind::High.threshold(28), 19);
        assert_eq!(ThresholdKind::Low.threshold(40), 14);
        assert_eq!(ThresholdKind::High.threshold(40), 27);
    }

    #[test]
    fn bounds_fit_in_u64_at_the_largest_n() {
        let z = chunking_bound_z(MAX_RECEIVERS) as u128;
        let s = chunking_bound_s(MAX_RECEIVERS) as u128;
        assert!(z + s < 1u128 << 63);
    }

    /// The identity by byte windows is the sum over set bits, for extreme and random
    /// epochs and hashes.
    #[test]
    fn identity_point_by_windows_is_the_sum_over_set_bits() {
        let params = SysParams::get();
        let by_bits = |epoch: u32, hash: &[u8; 32]| {
            let tree = (0..LAMBDA_T)
                .filter(|i| epoch_bit(epoch, *i))
                .map(|i| params.f_tree[i]);
            let bits = (0..LAMBDA_H)
                .filter(|k| hash_bit(hash, *k))
                .map(|k| params.f_hash[k]);
            tree.chain(bits)
                .fold(G2Projective::from(params.f0), |acc, f| acc + f)
        };
        let mut cases = vec![(0, [0u8; 32]), (u32::MAX, [0xff; 32]), (1, [0x80; 32])];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..8 {
            let mut hash = [0u8; 32];
            for b in hash.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
            cases.push(((x >> 32) as u32, hash));
        }
        for (epoch, hash) in cases {
            assert_eq!(
                params.identity_point(epoch, &hash),
                by_bits(epoch, &hash),
                "epoch {epoch}, hash {hash:?}"
            );
        }
    }

    #[test]
    fn epoch_bits_are_msb_first() {
        assert!(epoch_bit(0x8000_0000, 0));
        assert!(!epoch_bit(0x8000_0000, 1));
        assert!(epoch_bit(1, LAMBDA_T - 1));
    }
}
