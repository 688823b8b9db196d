//! Variable-time multi-scalar multiplication on `ic_bls12_381` (which has none): bucket
//! (Pippenger) MSMs for public scalars only. Never call these with a secret scalar: their
//! running time depends on the scalars' digits.

use ic_bls12_381::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};

/// A projective group the MSMs run over (G1 or G2 of `ic_bls12_381`).
pub trait MsmGroup: Copy + Send + Sync {
    /// The affine form the bases come in.
    type Affine: Copy + Sync;
    /// The identity.
    fn identity() -> Self;
    /// `self + rhs`.
    fn add(&self, rhs: &Self) -> Self;
    /// `self + rhs` for an affine `rhs` (cheaper).
    fn add_mixed(&self, rhs: &Self::Affine) -> Self;
    /// `2 * self`.
    fn double(&self) -> Self;
}

macro_rules! impl_msm_group {
    ($proj:ty, $affine:ty) => {
        impl MsmGroup for $proj {
            type Affine = $affine;
            fn identity() -> Self {
                <$proj>::identity()
            }
            fn add(&self, rhs: &Self) -> Self {
                <$proj>::add(self, rhs)
            }
            fn add_mixed(&self, rhs: &Self::Affine) -> Self {
                <$proj>::add_mixed(self, rhs)
            }
            fn double(&self) -> Self {
                <$proj>::double(self)
            }
        }
    };
}
impl_msm_group!(G1Projective, G1Affine);
impl_msm_group!(G2Projective, G2Affine);

/// Scalars of the group order are below 2^255.
const SCALAR_BITS: usize = 255;

/// Window width for an MSM of `n` points with full scalars (about log2(n) - 2, at least 2).
fn window_bits(n: usize) -> usize {
    match n {
        0..=3 => 2,
        4..=15 => 3,
        16..=63 => 4,
        64..=255 => 5,
        256..=1023 => 6,
        1024..=4095 => 7,
        _ => 8,
    }
}

/// The `width`-bit digit of a little-endian scalar starting at bit `at`.
fn digit(le: &[u8; 32], at: usize, width: usize) -> usize {
    let mut v = 0u64;
    let first = at / 8;
    for (i, byte) in le.iter().skip(first).take(3).enumerate() {
        v |= (*byte as u64) << (8 * i);
    }
    ((v >> (at % 8)) & ((1 << width) - 1)) as usize
}

/// Adds the buckets as `sum_d d * bucket[d - 1]` with two running sums.
fn reduce_buckets<G: MsmGroup>(buckets: &[G]) -> G {
    let mut running = G::identity();
    let mut total = G::identity();
    for b in buckets.iter().rev() {
        running = running.add(b);
        total = total.add(&running);
    }
    total
}

/// `sum_i scalars[i] * bases[i]` (extra elements of the longer slice are ignored):
/// unsigned-window Pippenger over the scalars' 255 bits.
pub fn msm_vartime<G: MsmGroup>(bases: &[G::Affine], scalars: &[Scalar]) -> G {
    msm_by_windows(bases, scalars, false)
}

/// `sum_i digit_w(scalar_i) * bases[i]` for the `c`-bit window `w`, by buckets.
fn window_sum<G: MsmGroup>(bases: &[G::Affine], le: &[[u8; 32]], w: usize, c: usize) -> G {
    let mut buckets = vec![G::identity(); (1 << c) - 1];
    for (base, s) in bases.iter().zip(le) {
        let d = digit(s, w * c, c);
        if d != 0 {
            buckets[d - 1] = buckets[d - 1].add_mixed(base);
        }
    }
    reduce_buckets(&buckets)
}

/// [`msm_vartime`] with its windows spread over rayon's pool: each window's bucket sum on a
/// task of its own, then one pass of doublings to combine them. The same sum; worth it for
/// the few, expensive points of the sharing proof's G2 MSM, whose windows would otherwise
/// run one after another on one thread.
pub fn msm_vartime_parallel<G: MsmGroup>(bases: &[G::Affine], scalars: &[Scalar]) -> G {
    msm_by_windows(bases, scalars, true)
}

/// Every window's bucket sum (on rayon's pool when `parallel`), then Horner over the
/// windows from the top.
fn msm_by_windows<G: MsmGroup>(bases: &[G::Affine], scalars: &[Scalar], parallel: bool) -> G {
    use rayon::prelude::*;
    let n = bases.len().min(scalars.len());
    if n == 0 {
        return G::identity();
    }
    let c = window_bits(n);
    let le: Vec<[u8; 32]> = scalars[..n].iter().map(Scalar::to_bytes).collect();
    let windows = SCALAR_BITS.div_ceil(c);
    let sum = |w: usize| window_sum::<G>(&bases[..n], &le, w, c);
    let sums: Vec<G> = if parallel {
        (0..windows).into_par_iter().map(sum).collect()
    } else {
        (0..windows).map(sum).collect()
    };
    let mut acc = G::identity();
    for sum in sums.iter().rev() {
        for _ in 0..c {
            acc = acc.double();
        }
        acc = acc.add(sum);
    }
    acc
}

/// Multiples `1..=15` of each base, affine: the table [`msm_with_table`] walks.
pub struct SharedBaseTable {
    /// `multiples[15 * p + d - 1] = d * bases[p]`.
    multiples: Vec<G1Affine>,
    bases: usize,
}

impl SharedBaseTable {
    /// Builds the table (15 points per base, one batch inversion).
    pub fn new(bases: &[G1Affine]) -> Self {
        let mut projective = Vec::with_capacity(15 * bases.len());
        for base in bases {
            let mut acc = G1Projective::from(base);
            projective.push(acc);
            for _ in 1..15 {
                acc = acc.add_mixed(base);
                projective.push(acc);
            }
        }
        let mut multiples = vec![G1Affine::identity(); projective.len()];
        G1Projective::batch_normalize(&projective, &mut multiples);
        SharedBaseTable {
            multiples,
            bases: bases.len(),
        }
    }
}

/// `sum_p scalars[p] * bases[p]` over a [`SharedBaseTable`] (Straus, 4-bit windows: 64
/// windows of four doublings and one table addition per base). Cheaper than a bucket MSM
/// for a few bases reused by many MSMs: the table is built once per batch.
pub fn msm_with_table(table: &SharedBaseTable, scalars: &[Scalar]) -> G1Projective {
    let le: Vec<[u8; 32]> = scalars
        .iter()
        .take(table.bases)
        .map(Scalar::to_bytes)
        .collect();
    let mut acc = G1Projective::identity();
    for w in (0..64).rev() {
        for _ in 0..4 {
            acc = acc.double();
        }
        for (p, s) in le.iter().enumerate() {
            let d = ((s[w / 2] >> (4 * (w % 2))) & 15) as usize;
            if d != 0 {
                acc = acc.add_mixed(&table.multiples[15 * p + d - 1]);
            }
        }
    }
    acc
}

/// One MSM with 8-bit scalars over bases shared by a batch (`row[p] * bases[p]`): one
/// 8-bit bucket window for long rows, two 4-bit windows for short ones (fewer bucket
/// additions below about 450 points).
pub fn msm_shared_bases_u8(bases: &[G1Affine], row: &[u8]) -> G1Projective {
    let n = bases.len().min(row.len());
    if n < 446 {
        let mut high = [G1Projective::identity(); 15];
        let mut low = [G1Projective::identity(); 15];
        for (base, &s) in bases[..n].iter().zip(row) {
            let (h, l) = ((s >> 4) as usize, (s & 15) as usize);
            if h != 0 {
                high[h - 1] = high[h - 1].add_mixed(base);
            }
            if l != 0 {
                low[l - 1] = low[l - 1].add_mixed(base);
            }
        }
        let mut acc = reduce_buckets(&high);
        for _ in 0..4 {
            acc = acc.double();
        }
        acc + reduce_buckets(&low)
    } else {
        let mut buckets = vec![G1Projective::identity(); 255];
        for (base, &s) in bases[..n].iter().zip(row) {
            if s != 0 {
                buckets[s as usize - 1] = buckets[s as usize - 1].add_mixed(base);
            }
        }
        reduce_buckets(&buckets)
    }
}

/// The baseline the IC's generic MSM represents for this batch: a 4-bit-window Pippenger
/// over the full 256-bit scalar (64 windows, 15 buckets each, four doublings per window)
/// applied to scalars that are only 8 bits wide, so 62 of the 64 windows hold no digit
/// but still pay their bucket reduction and doublings.
pub fn msm_4bit_full_width(bases: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
    let n = bases.len().min(scalars.len());
    let le: Vec<[u8; 32]> = scalars[..n].iter().map(Scalar::to_bytes).collect();
    let mut acc = G1Projective::identity();
    for w in (0..64).rev() {
        for _ in 0..4 {
            acc = acc.double();
        }
        let mut buckets = [G1Projective::identity(); 15];
        for (base, s) in bases[..n].iter().zip(&le) {
            let d = ((s[w / 2] >> (4 * (w % 2))) & 15) as usize;
            if d != 0 {
                buckets[d - 1] = buckets[d - 1].add_mixed(base);
            }
        }
        acc += reduce_buckets(&buckets);
    }
    acc
}

/// `sum_i scalars[i] * bases[i]` one constant-time scalar multiplication at a time:
/// the only multi-scalar path `ic_bls12_381` itself offers.
pub fn msm_naive(bases: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
    bases
        .iter()
        .zip(scalars)
        .fold(G1Projective::identity(), |acc, (p, s)| acc + p * s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngCore, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    fn points(n: usize, rng: &mut ChaCha20Rng) -> Vec<G1Affine> {
        (0..n)
            .map(|_| G1Affine::from(G1Projective::generator() * crate::random::random_scalar(rng)))
            .collect()
    }

    #[test]
    fn full_scalar_msm_matches_naive() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        for n in [0, 1, 2, 5, 17, 70] {
            let bases = points(n, &mut rng);
            let mut scalars: Vec<Scalar> = (0..n)
                .map(|_| crate::random::random_scalar(&mut rng))
                .collect();
            if n > 1 {
                scalars[1] = -Scalar::one(); // the largest scalar
            }
            let expect = msm_naive(&bases, &scalars);
            assert_eq!(
                msm_vartime::<G1Projective>(&bases, &scalars),
                expect,
                "n = {n}"
            );
            assert_eq!(
                msm_vartime_parallel::<G1Projective>(&bases, &scalars),
                expect,
                "n = {n}"
            );
            let table = SharedBaseTable::new(&bases);
            assert_eq!(msm_with_table(&table, &scalars), expect, "n = {n}");
        }
    }

    #[test]
    fn g2_msm_matches_naive() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let bases: Vec<G2Affine> = (0..9)
            .map(|_| {
                G2Affine::from(G2Projective::generator() * crate::random::random_scalar(&mut rng))
            })
            .collect();
        let scalars: Vec<Scalar> = (0..9)
            .map(|_| crate::random::random_scalar(&mut rng))
            .collect();
        let expect = bases
            .iter()
            .zip(&scalars)
            .fold(G2Projective::identity(), |acc, (p, s)| acc + p * s);
        assert_eq!(msm_vartime::<G2Projective>(&bases, &scalars), expect);
        assert_eq!(
            msm_vartime_parallel::<G2Projective>(&bases, &scalars),
            expect
        );
    }

    #[test]
    fn small_scalar_msms_match_naive() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        for n in [1, 16, 208, 640] {
            let bases = points(n, &mut rng);
            let mut row = vec![0u8; n];
            rng.fill_bytes(&mut row);
            row[0] = 255;
            let scalars: Vec<Scalar> = row.iter().map(|&s| Scalar::from(s as u64)).collect();
            let expect = msm_naive(&bases, &scalars);
            assert_eq!(msm_shared_bases_u8(&bases, &row), expect, "n = {n}");
            assert_eq!(msm_4bit_full_width(&bases, &scalars), expect, "n = {n}");
        }
    }
}
