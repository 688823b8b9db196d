//! Deterministic adversarial corpora for 48-byte compressed G1 and 96-byte compressed G2
//! decoding ([`g1_decompress_corpus`], [`g2_decompress_corpus`]), shared by the CPU, GPU and
//! CLI tests: every flag combination on every kind of x, x >= p (in either coordinate for
//! G2), x with no square root, curve points outside the prime-order subgroup, infinity
//! encodings with each stray bit, valid points with both sort-flag values, and seeded
//! random bytes.
//!
//! Each entry's expected verdict is computed at generation from `ic_bls12_381` (its
//! `from_compressed` decides accept and the point; the rejection reason follows the
//! precedence documented on [`DecodeError`], see [`reference_verdict`]). Entries built to
//! hit one case also carry that `intended` verdict, an independent check that the
//! corpus covers what it claims to.
//!
//! `testdata/decompress/corpus.txt` and `expected.txt` are [`corpus_file`] and
//! [`expected_file`] of the G1 corpus, `g2-corpus.txt` and `g2-expected.txt`
//! [`g2_corpus_file`] and [`g2_expected_file`] of the G2 corpus (a test keeps them
//! identical).

use crate::field::MODULUS_LIMBS;
use ff::Field;
use gpu_crypto_api::DecodeError;
use group::Curve;
use ic_bls12_381::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::ops::Mul;

/// Seed of every random choice in the corpus; changing it changes the files.
pub const CORPUS_SEED: [u8; 32] = *b"sovereign-node g1 corpus seed v1";

const COMPRESSION: u8 = 0x80;
const INFINITY: u8 = 0x40;
const SORT: u8 = 0x20;

/// One corpus entry.
#[derive(Debug, Clone)]
pub struct CorpusEntry {
    /// What the entry is, e.g. `x=p+1 flags=0x80`.
    pub label: String,
    /// The 48-byte compressed encoding to decode.
    pub bytes: [u8; 48],
    /// `ic_bls12_381`'s verdict, computed at generation ([`reference_verdict`]).
    pub expected: Result<G1Affine, DecodeError>,
    /// For entries built to hit one case: the verdict they were built for (`Ok(())`:
    /// a valid point). `None` for random bytes.
    pub intended: Option<Result<(), DecodeError>>,
}

/// `ic_bls12_381`'s verdict on `bytes`: `from_compressed` decides accept and the point;
/// a rejection gets the first reason, in [`DecodeError`]'s precedence, that
/// `ic_bls12_381`'s own decoding steps show.
pub fn reference_verdict(bytes: &[u8; 48]) -> Result<G1Affine, DecodeError> {
    verdict(
        bytes[0],
        G1Affine::from_compressed(bytes).into(),
        || {
            let mut x = *bytes;
            x[0] &= 0x1f;
            limbs_below_modulus(&x)
        },
        || Option::<G1Affine>::from(G1Affine::from_compressed_unchecked(bytes)).is_some(),
    )
}

/// A verdict in [`DecodeError`]'s precedence, for G1 and G2 alike: the point `decoded`
/// (`from_compressed`'s) if there is one, else the first failing check of the flags,
/// then `canonical` (every coordinate below p), then `on_curve` (unchecked decoding
/// succeeds), else not in the subgroup.
fn verdict<A>(
    flags: u8,
    decoded: Option<A>,
    canonical: impl FnOnce() -> bool,
    on_curve: impl FnOnce() -> bool,
) -> Result<A, DecodeError> {
    if let Some(point) = decoded {
        return Ok(point);
    }
    if flags & COMPRESSION == 0 {
        return Err(DecodeError::NotCompressed);
    }
    if flags & INFINITY != 0 {
        // from_compressed accepts the infinity flag only with no sort flag and x = 0.
        return Err(DecodeError::BadInfinity);
    }
    if !canonical() {
        return Err(DecodeError::NonCanonical);
    }
    if !on_curve() {
        return Err(DecodeError::NotOnCurve);
    }
    Err(DecodeError::NotInSubgroup)
}

/// `x < p` for a big-endian field element, by multi-limb subtraction.
fn limbs_below_modulus(x: &[u8; 48]) -> bool {
    let mut borrow = 0u64;
    for (i, modulus_limb) in MODULUS_LIMBS.iter().enumerate() {
        let start = 48 - 8 * (i + 1);
        let mut limb = [0u8; 8];
        limb.copy_from_slice(&x[start..start + 8]);
        let (d1, b1) = u64::from_be_bytes(limb).overflowing_sub(*modulus_limb);
        let (_, b2) = d1.overflowing_sub(borrow);
        borrow = u64::from(b1 || b2);
    }
    borrow == 1
}

/// The line the CLI prints for a verdict: `ok <192 hex uncompressed>` or `err <reason>`.
pub fn expected_line(verdict: &Result<G1Affine, DecodeError>) -> String {
    match verdict {
        Ok(point) => format!("ok {}", hex::encode(point.to_uncompressed())),
        Err(e) => format!("err {}", e.reason_word()),
    }
}

/// The CLI's input format: 96 hex characters per line.
pub fn corpus_file(entries: &[CorpusEntry]) -> String {
    entries
        .iter()
        .map(|e| hex::encode(e.bytes) + "\n")
        .collect()
}

/// The CLI's expected output, one [`expected_line`] per entry.
pub fn expected_file(entries: &[CorpusEntry]) -> String {
    entries
        .iter()
        .map(|e| expected_line(&e.expected) + "\n")
        .collect()
}

/// The corpus, identical on every call.
pub fn g1_decompress_corpus() -> Vec<CorpusEntry> {
    let mut rng = ChaCha20Rng::from_seed(CORPUS_SEED);
    let mut corpus = Corpus::new(|label, bytes, intended| CorpusEntry {
        label,
        expected: reference_verdict(&bytes),
        bytes,
        intended,
    });
    let valid_points = valid_points::<G1Projective>(&mut rng);
    corpus.push_valid(valid_points.iter().map(|p| p.to_compressed()));
    corpus.push_infinity(G1Affine::identity().to_compressed());
    g1_push_non_canonical(&mut corpus, &mut rng);
    let xs = g1_x_kinds(&mut rng);
    corpus.push_both_sorts("no square root", &xs.no_root[..12], DecodeError::NotOnCurve);
    corpus.push_both_sorts(
        "on curve, not in G1",
        &xs.off_subgroup[..13],
        DecodeError::NotInSubgroup,
    );
    let mut valid_x = valid_points[1].to_compressed();
    valid_x[0] &= 0x1f;
    let p = field_bytes_from_limbs(&MODULUS_LIMBS);
    corpus.push_flag_combinations([
        ("valid x", valid_x, Ok(())),
        ("x=0", [0u8; 48], Err(DecodeError::NotInSubgroup)),
        ("x=p", p, Err(DecodeError::NonCanonical)),
        (
            "x without root",
            xs.no_root[0],
            Err(DecodeError::NotOnCurve),
        ),
        (
            "x off subgroup",
            xs.off_subgroup[1],
            Err(DecodeError::NotInSubgroup),
        ),
    ]);
    // Seeded random bytes: as they come, and with only the compression flag forced
    // (which reaches the later checks far more often).
    corpus.push_random(&mut rng, |_, _| {});
    corpus.entries
}

/// x >= p (bits 381..383 are flags, so every 381-bit x >= p is reachable) with both sort
/// flags, and x = p - 1.
fn g1_push_non_canonical<E>(corpus: &mut Corpus<48, E>, rng: &mut ChaCha20Rng) {
    for (label, x) in &at_least_p(rng, "x=", "x random", 4) {
        corpus.push_non_canonical(label, *x);
    }
    let mut enc = field_bytes_from_limbs(&MODULUS_LIMBS);
    enc[47] -= 1;
    enc[0] |= COMPRESSION;
    corpus.push("x=p-1".into(), enc, None);
}

/// x with no square root of x^3 + 4, and on-curve x outside the subgroup, found by trying
/// small and then random x with ic_bls12_381's unchecked decoding; x = 0 first among the
/// latter: (0, +-2) are points of order 3, on the curve but not in G1.
fn g1_x_kinds(rng: &mut ChaCha20Rng) -> XKinds<48> {
    let mut xs = XKinds::new(|enc: &[u8; 48]| {
        Option::<G1Affine>::from(G1Affine::from_compressed_unchecked(enc))
            .map(|p| bool::from(p.is_torsion_free()))
    });
    for small in 1u8..=64 {
        let mut x = [0u8; 48];
        x[47] = small;
        xs.classify(x);
    }
    while xs.no_root.len() < 12 || xs.off_subgroup.len() < 12 {
        let mut x = [0u8; 48];
        rng.fill_bytes(&mut x);
        x[0] &= 0x0f; // below p
        xs.classify(x);
    }
    xs.off_subgroup.insert(0, [0u8; 48]);
    xs
}

/// The verdict an entry was built for (`Ok(())`: a valid point); `None` for random bytes.
type Intended = Option<Result<(), DecodeError>>;

/// The entries of one corpus (`N`-byte encodings) as they are built, shared by the G1 and
/// G2 corpora: `entry` makes one entry with its reference verdict.
struct Corpus<const N: usize, E> {
    entries: Vec<E>,
    entry: fn(String, [u8; N], Intended) -> E,
}

impl<const N: usize, E> Corpus<N, E> {
    fn new(entry: fn(String, [u8; N], Intended) -> E) -> Corpus<N, E> {
        Corpus {
            entries: Vec::new(),
            entry,
        }
    }

    fn push(&mut self, label: String, bytes: [u8; N], intended: Intended) {
        self.entries.push((self.entry)(label, bytes, intended));
    }

    /// Valid points with both sort-flag values: flipping the sort flag of a valid encoding
    /// gives the negated point, also valid.
    fn push_valid(&mut self, encodings: impl Iterator<Item = [u8; N]>) {
        for (i, enc) in encodings.enumerate() {
            self.push(format!("valid#{i}"), enc, Some(Ok(())));
            let mut flipped = enc;
            flipped[0] ^= SORT;
            self.push(
                format!("valid#{i} sort-flag flipped"),
                flipped,
                Some(Ok(())),
            );
        }
    }

    /// The identity, infinity with each stray bit (flags other than compression and
    /// infinity, and every x bit), and infinity without the compression flag.
    fn push_infinity(&mut self, identity: [u8; N]) {
        self.push("identity".into(), identity, Some(Ok(())));
        for bit in 0..8 * N {
            let (byte, mask) = (bit / 8, 0x80u8 >> (bit % 8));
            if byte == 0 && (mask == COMPRESSION || mask == INFINITY) {
                continue;
            }
            let mut enc = identity;
            enc[byte] |= mask;
            self.push(
                format!("infinity with stray bit {bit}"),
                enc,
                Some(Err(DecodeError::BadInfinity)),
            );
        }
        let mut no_compression = identity;
        no_compression[0] &= !COMPRESSION;
        self.push(
            "infinity without compression flag".into(),
            no_compression,
            Some(Err(DecodeError::NotCompressed)),
        );
    }

    /// Each canonical x (flags clear) compressed, with both sort-flag values, built for
    /// `intended`.
    fn push_both_sorts(&mut self, name: &str, xs: &[[u8; N]], intended: DecodeError) {
        for (i, x) in xs.iter().enumerate() {
            for sort in [0, SORT] {
                let mut enc = *x;
                enc[0] |= COMPRESSION | sort;
                self.push(
                    format!("{name} #{i} flags={:#04x}", enc[0] & 0xe0),
                    enc,
                    Some(Err(intended)),
                );
            }
        }
    }

    /// A non-canonical x with the compression flag and each sort flag (its own flag bits
    /// replaced), built for `NonCanonical`.
    fn push_non_canonical(&mut self, name: &str, x: [u8; N]) {
        for sort in [0, SORT] {
            let mut enc = x;
            enc[0] = (enc[0] & 0x1f) | COMPRESSION | sort;
            self.push(
                format!("{name} flags={:#04x}", enc[0] & 0xe0),
                enc,
                Some(Err(DecodeError::NonCanonical)),
            );
        }
    }

    /// All 8 flag combinations on each kind of x; `when_plain` is the verdict with only
    /// the compression flag.
    fn push_flag_combinations(&mut self, kinds: [(&str, [u8; N], Result<(), DecodeError>); 5]) {
        for (name, x, when_plain) in kinds {
            for flags in 0u8..8 {
                let flags = flags << 5;
                let mut enc = x;
                enc[0] = (enc[0] & 0x1f) | flags;
                let x_is_zero = x.iter().all(|&b| b == 0);
                let intended = if flags & COMPRESSION == 0 {
                    Err(DecodeError::NotCompressed)
                } else if flags & INFINITY != 0 {
                    if flags & SORT == 0 && x_is_zero {
                        Ok(())
                    } else {
                        Err(DecodeError::BadInfinity)
                    }
                } else {
                    when_plain
                };
                self.push(format!("{name} flags={flags:#04x}"), enc, Some(intended));
            }
        }
    }

    /// 128 seeded random encodings as they come, then 128 with the compression flag forced
    /// and the infinity flag cleared (the sort flag cleared in about half), each of those
    /// then passed through `adjust` with its index.
    fn push_random(&mut self, rng: &mut ChaCha20Rng, adjust: impl Fn(usize, &mut [u8; N])) {
        for i in 0..128 {
            let mut enc = [0u8; N];
            rng.fill_bytes(&mut enc);
            self.push(format!("random bytes #{i}"), enc, None);
        }
        for i in 0..128 {
            let mut enc = [0u8; N];
            rng.fill_bytes(&mut enc);
            enc[0] = (enc[0] & !INFINITY) | COMPRESSION;
            if rng.gen_bool(0.5) {
                enc[0] &= !SORT;
            }
            adjust(i, &mut enc);
            self.push(format!("random compressed #{i}"), enc, None);
        }
    }
}

/// Valid points of G1 or G2: the generator, 14 seeded random points and -2 times the
/// generator.
fn valid_points<G: Curve + Mul<Scalar, Output = G>>(rng: &mut ChaCha20Rng) -> Vec<G::AffineRepr> {
    let mut points = vec![G::generator().to_affine()];
    for _ in 0..14 {
        points.push(G::random(&mut *rng).to_affine());
    }
    points.push((G::generator() * -Scalar::ONE.double()).to_affine());
    points
}

/// Field elements `>= p` (bits 381..383 of an encoding are flags, so every 381-bit value
/// `>= p` is reachable), labelled `{fixed}p` and so on: p, p + 1, p + 2^64, 2^381 - 1,
/// then `randoms` seeded random values (`{random} >= p #i`).
fn at_least_p(
    rng: &mut ChaCha20Rng,
    fixed: &str,
    random: &str,
    randoms: usize,
) -> Vec<(String, [u8; 48])> {
    let p = field_bytes_from_limbs(&MODULUS_LIMBS);
    let mut out: Vec<(String, [u8; 48])> = vec![
        (format!("{fixed}p"), p),
        (format!("{fixed}p+1"), add_small(&p, 1)),
        (format!("{fixed}p+2^64"), add_at_limb(&p, 1, 1)),
        (format!("{fixed}2^381-1"), [0xff; 48]),
    ];
    for i in 0..randoms {
        let mut x = [0u8; 48];
        rng.fill_bytes(&mut x);
        // Top byte above p's (0x1a), the rest random.
        x[0] = 0x1b + (i as u8);
        out.push((format!("{random} >= p #{i}"), x));
    }
    out
}

/// Canonical x values (flags clear) sorted by what unchecked decoding makes of them.
struct XKinds<const N: usize> {
    /// No square root: not the x of any point on the curve.
    no_root: Vec<[u8; N]>,
    /// On the curve, outside the prime-order subgroup.
    off_subgroup: Vec<[u8; N]>,
    /// Unchecked decoding of a compressed encoding: `None` when it has no point, else
    /// whether the point is torsion-free.
    torsion_free: fn(&[u8; N]) -> Option<bool>,
}

impl<const N: usize> XKinds<N> {
    fn new(torsion_free: fn(&[u8; N]) -> Option<bool>) -> XKinds<N> {
        XKinds {
            no_root: Vec::new(),
            off_subgroup: Vec::new(),
            torsion_free,
        }
    }

    /// Sorts `x` into `no_root` or `off_subgroup` (points of the subgroup go nowhere).
    fn classify(&mut self, x: [u8; N]) {
        let mut enc = x;
        enc[0] |= COMPRESSION;
        match (self.torsion_free)(&enc) {
            None => self.no_root.push(x),
            Some(false) => self.off_subgroup.push(x),
            Some(true) => {}
        }
    }
}

fn field_bytes_from_limbs(limbs: &[u64; 6]) -> [u8; 48] {
    let mut out = [0u8; 48];
    for (i, limb) in limbs.iter().enumerate() {
        let start = 48 - 8 * (i + 1);
        out[start..start + 8].copy_from_slice(&limb.to_be_bytes());
    }
    out
}

/// `x + v` on a big-endian 48-byte integer (wrapping; only used below 2^381).
fn add_small(x: &[u8; 48], v: u8) -> [u8; 48] {
    let mut out = *x;
    let mut carry = u16::from(v);
    for byte in out.iter_mut().rev() {
        let s = u16::from(*byte) + carry;
        *byte = s as u8;
        carry = s >> 8;
    }
    out
}

/// `x + v * 2^(64 * limb)` on a big-endian 48-byte integer.
fn add_at_limb(x: &[u8; 48], limb: usize, v: u8) -> [u8; 48] {
    let mut out = *x;
    let mut carry = u16::from(v);
    for byte in out[..48 - 8 * limb].iter_mut().rev() {
        let s = u16::from(*byte) + carry;
        *byte = s as u8;
        carry = s >> 8;
    }
    out
}

/// Seed of the G2 corpus's random choices; changing it changes the G2 files.
pub const G2_CORPUS_SEED: [u8; 32] = *b"sovereign-node g2 corpus seed v1";

/// One entry of the 96-byte compressed G2 corpus ([`g2_decompress_corpus`]).
#[derive(Debug, Clone)]
pub struct G2CorpusEntry {
    /// What the entry is, e.g. `x.c0=p flags=0x80`.
    pub label: String,
    /// The 96-byte compressed encoding to decode.
    pub bytes: [u8; 96],
    /// `ic_bls12_381`'s verdict, computed at generation ([`g2_reference_verdict`]).
    pub expected: Result<G2Affine, DecodeError>,
    /// For entries built to hit one case: the verdict they were built for. `None` for
    /// random bytes.
    pub intended: Option<Result<(), DecodeError>>,
}

/// `ic_bls12_381`'s verdict on a compressed G2 encoding: `G2Affine::from_compressed`
/// decides accept and the point; a rejection gets the first reason, in [`DecodeError`]'s
/// precedence, that its decoding steps show (either coordinate `>= p` is non-canonical).
pub fn g2_reference_verdict(bytes: &[u8; 96]) -> Result<G2Affine, DecodeError> {
    verdict(
        bytes[0],
        G2Affine::from_compressed(bytes).into(),
        || {
            let mut c1 = [0u8; 48];
            let mut c0 = [0u8; 48];
            c1.copy_from_slice(&bytes[..48]);
            c0.copy_from_slice(&bytes[48..]);
            c1[0] &= 0x1f;
            limbs_below_modulus(&c1) && limbs_below_modulus(&c0)
        },
        || Option::<G2Affine>::from(G2Affine::from_compressed_unchecked(bytes)).is_some(),
    )
}

/// The line the CLI prints for a G2 verdict: `ok <384 hex uncompressed>` or `err <reason>`.
pub fn g2_expected_line(verdict: &Result<G2Affine, DecodeError>) -> String {
    match verdict {
        Ok(point) => format!("ok {}", hex::encode(point.to_uncompressed())),
        Err(e) => format!("err {}", e.reason_word()),
    }
}

/// The CLI's G2 input format: 192 hex characters per line.
pub fn g2_corpus_file(entries: &[G2CorpusEntry]) -> String {
    entries
        .iter()
        .map(|e| hex::encode(e.bytes) + "\n")
        .collect()
}

/// The CLI's expected G2 output, one [`g2_expected_line`] per entry.
pub fn g2_expected_file(entries: &[G2CorpusEntry]) -> String {
    entries
        .iter()
        .map(|e| g2_expected_line(&e.expected) + "\n")
        .collect()
}

/// x = (c0, c1) as the encoding's 96 bytes (c1 first), flags clear.
fn g2_x_bytes(c0: &[u8; 48], c1: &[u8; 48]) -> [u8; 96] {
    let mut out = [0u8; 96];
    out[..48].copy_from_slice(c1);
    out[48..].copy_from_slice(c0);
    out
}

/// The G2 corpus, identical on every call: every flag combination on every kind of x,
/// either coordinate `>= p`, x with no square root, points of the twist outside G2
/// (random x with a root, and x with x.c1 = 0 or with a real right-hand side, where the
/// square root and the sort flag take their special branches), infinity with each stray
/// bit, valid points with both sort-flag values, and seeded random bytes.
pub fn g2_decompress_corpus() -> Vec<G2CorpusEntry> {
    let mut rng = ChaCha20Rng::from_seed(G2_CORPUS_SEED);
    let mut corpus = Corpus::new(|label, bytes, intended| G2CorpusEntry {
        label,
        expected: g2_reference_verdict(&bytes),
        bytes,
        intended,
    });
    let valid_points = valid_points::<G2Projective>(&mut rng);
    corpus.push_valid(valid_points.iter().map(|p| p.to_compressed()));
    corpus.push_infinity(G2Affine::identity().to_compressed());
    let valid_enc = valid_points[1].to_compressed();
    g2_push_non_canonical(&mut corpus, &mut rng, &valid_enc);
    let xs = g2_x_kinds(&mut rng);
    corpus.push_both_sorts("no square root", &xs.no_root[..24], DecodeError::NotOnCurve);
    corpus.push_both_sorts(
        "on the twist, not in G2",
        &xs.off_subgroup,
        DecodeError::NotInSubgroup,
    );
    let mut valid_x = valid_enc;
    valid_x[0] &= 0x1f;
    let mut p_x = g2_x_bytes(&[0u8; 48], &field_bytes_from_limbs(&MODULUS_LIMBS));
    p_x[0] &= 0x1f;
    corpus.push_flag_combinations([
        ("valid x", valid_x, Ok(())),
        ("x=0", [0u8; 96], g2_plain_verdict(&[0u8; 96])),
        ("x.c1=p", p_x, Err(DecodeError::NonCanonical)),
        (
            "x without root",
            xs.no_root[0],
            Err(DecodeError::NotOnCurve),
        ),
        (
            "x off subgroup",
            xs.off_subgroup[0],
            Err(DecodeError::NotInSubgroup),
        ),
    ]);
    corpus.push_random(&mut rng, |i, enc| {
        // Half of them below p in both coordinates, so they reach the curve checks.
        if i % 2 == 0 {
            enc[0] &= 0xef;
            enc[48] &= 0x0f;
        }
    });
    corpus.entries
}

/// Either coordinate >= p, the other canonical (zero, small, a valid point's: the c0 of
/// `valid_enc`) or not, with both sort flags; then both coordinates p - 1 or one of them.
fn g2_push_non_canonical<E>(
    corpus: &mut Corpus<96, E>,
    rng: &mut ChaCha20Rng,
    valid_enc: &[u8; 96],
) {
    let mut valid_c0 = [0u8; 48];
    valid_c0.copy_from_slice(&valid_enc[48..]);
    let mut small = [0u8; 48];
    small[47] = 1;
    let canonical: [(&str, [u8; 48]); 3] = [("0", [0u8; 48]), ("1", small), ("valid", valid_c0)];
    for (label, b) in &at_least_p(rng, "", "random", 2) {
        for (other, c) in &canonical {
            corpus.push_non_canonical(&format!("x.c1={label} x.c0={other}"), g2_x_bytes(c, b));
            corpus.push_non_canonical(&format!("x.c1={other} x.c0={label}"), g2_x_bytes(b, c));
        }
        let mut enc = g2_x_bytes(b, b);
        enc[0] = (enc[0] & 0x1f) | COMPRESSION;
        corpus.push(
            format!("x.c1=x.c0={label}"),
            enc,
            Some(Err(DecodeError::NonCanonical)),
        );
    }
    let mut p_minus_one = field_bytes_from_limbs(&MODULUS_LIMBS);
    p_minus_one[47] -= 1;
    for (c0, c1, label) in [
        (&p_minus_one, &[0u8; 48], "x.c0=p-1"),
        (&[0u8; 48], &p_minus_one, "x.c1=p-1"),
        (&p_minus_one, &p_minus_one, "x.c0=x.c1=p-1"),
    ] {
        let mut enc = g2_x_bytes(c0, c1);
        enc[0] |= COMPRESSION;
        corpus.push(label.into(), enc, None);
    }
}

/// No square root, and on the twist but outside G2: small x in Fp (x.c1 = 0), small x.c1
/// with x.c0 = 0, then random x; then x with x^3 + 4(u + 1) in Fp (its imaginary part
/// cancels: the square root's input has a1 = 0, and the root is real or imaginary).
fn g2_x_kinds(rng: &mut ChaCha20Rng) -> XKinds<96> {
    let mut xs = XKinds::new(|enc: &[u8; 96]| {
        Option::<G2Affine>::from(G2Affine::from_compressed_unchecked(enc))
            .map(|p| bool::from(p.is_torsion_free()))
    });
    for v in 0u8..=24 {
        let mut c = [0u8; 48];
        c[47] = v;
        xs.classify(g2_x_bytes(&c, &[0u8; 48]));
        if v > 0 {
            xs.classify(g2_x_bytes(&[0u8; 48], &c));
        }
    }
    while xs.no_root.len() < 24 || xs.off_subgroup.len() < 40 {
        let mut c0 = [0u8; 48];
        let mut c1 = [0u8; 48];
        rng.fill_bytes(&mut c0);
        rng.fill_bytes(&mut c1);
        c0[0] &= 0x0f;
        c1[0] &= 0x0f;
        xs.classify(g2_x_bytes(&c0, &c1));
    }
    xs.off_subgroup.extend(g2_real_rhs_x(rng, 8));
    xs
}

/// The verdict on a canonical x with only the compression flag set, as `Result<(), _>`.
fn g2_plain_verdict(x: &[u8; 96]) -> Result<(), DecodeError> {
    let mut enc = *x;
    enc[0] |= COMPRESSION;
    g2_reference_verdict(&enc).map(drop)
}

/// `count` canonical x = a + b u on the twist, outside G2, whose x^3 + 4(u + 1) lies in
/// Fp: Im(x^3) = 3 a^2 b - b^3 = -4, i.e. a^2 = (b^3 - 4) / (3 b), for random b (blst's
/// Fp arithmetic).
fn g2_real_rhs_x(rng: &mut ChaCha20Rng, count: usize) -> Vec<[u8; 96]> {
    use blst::blst_fp;
    let small = |v: u64| {
        let mut r = blst_fp::default();
        let limbs = [v, 0, 0, 0, 0, 0];
        // SAFETY: blst reads six limbs and writes one field element.
        unsafe { blst::blst_fp_from_uint64(&mut r, limbs.as_ptr()) };
        r
    };
    let (three, four) = (small(3), small(4));
    let mut out = Vec::new();
    while out.len() < count {
        let mut b_bytes = [0u8; 48];
        rng.fill_bytes(&mut b_bytes);
        b_bytes[0] &= 0x0f; // below p
        let mut b = blst_fp::default();
        let (mut b2, mut b3, mut num) =
            (blst_fp::default(), blst_fp::default(), blst_fp::default());
        let (mut den, mut den_inv, mut a2) =
            (blst_fp::default(), blst_fp::default(), blst_fp::default());
        let mut a = blst_fp::default();
        let mut a_bytes = [0u8; 48];
        // SAFETY: every blst call reads and writes valid, distinct field elements.
        let root = unsafe {
            blst::blst_fp_from_bendian(&mut b, b_bytes.as_ptr());
            blst::blst_fp_sqr(&mut b2, &b);
            blst::blst_fp_mul(&mut b3, &b2, &b);
            blst::blst_fp_sub(&mut num, &b3, &four); // b^3 - 4
            blst::blst_fp_mul(&mut den, &three, &b);
            blst::blst_fp_inverse(&mut den_inv, &den); // 1 / (3b)
            blst::blst_fp_mul(&mut a2, &num, &den_inv);
            let root = blst::blst_fp_sqrt(&mut a, &a2);
            blst::blst_bendian_from_fp(a_bytes.as_mut_ptr(), &a);
            root
        };
        if !root || b_bytes.iter().all(|&v| v == 0) {
            continue;
        }
        let x = g2_x_bytes(&a_bytes, &b_bytes);
        let mut enc = x;
        enc[0] |= COMPRESSION;
        match Option::<G2Affine>::from(G2Affine::from_compressed_unchecked(&enc)) {
            Some(p) if !bool::from(p.is_torsion_free()) => out.push(x),
            _ => {}
        }
    }
    out
}
