//! A dealing: public coefficients of a random polynomial, its shares encrypted chunk by
//! chunk to the receivers under forward-secure encryption, and the two zero-knowledge
//! proofs (chunking and sharing) of Groth's NI-DKG. Creation works on secrets (the
//! polynomial, the shares, the encryption randomness) with `ic_bls12_381`'s
//! constant-time arithmetic only, on the CPU.

use crate::component::Component;
use crate::encoding::{ElementKind, dealing_layout, scalar_to_be};
use crate::error::DealError;
use crate::oracle::{
    DOMAIN_CHUNKING_CHALLENGE, DOMAIN_CHUNKING_ORACLE, DOMAIN_CIPHERTEXT_NODE,
    DOMAIN_SHARING_CHALLENGE, DOMAIN_SHARING_INSTANCE, HashedMap, hash_bytes, hash_g1,
    hash_g1_matrix, hash_g1_vector, hash_g2, hash_int, hash_scalar, hash_small_int, hash_vector,
    random_oracle, random_oracle_to_scalar,
};
use crate::params::{
    CHUNK_BITS, NUM_CHUNKS, NUM_ZK_REPETITIONS, SysParams, chunking_bound_s, chunking_bound_z,
    dealing_size,
};
use crate::random::random_scalar;
use ic_bls12_381::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use rand::{CryptoRng, Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// Forward-secure ciphertext of all receivers' chunks (the paper's `(C, R, S, Z)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ciphertext {
    /// `R_j = g1^{r_j}`, one per chunk row.
    pub rr: Vec<G1Affine>,
    /// `S_j = g1^{s_j}`.
    pub ss: Vec<G1Affine>,
    /// `Z_j = id^{r_j} h^{s_j}` in G2, `id` the identity point of epoch and hash.
    pub zz: Vec<G2Affine>,
    /// `C_ij = y_i^{r_j} g1^{m_ij}`: `cc[i][j]`, receiver `i`, chunk `j`.
    pub cc: Vec<Vec<G1Affine>>,
}

/// Proof that every encrypted chunk lies in a small range (paper section 6.5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkingProof {
    /// `y_0`.
    pub y0: G1Affine,
    /// `B_k = g1^{beta_k}`.
    pub bb: Vec<G1Affine>,
    /// `C_k = y_0^{beta_k} g1^{sigma_k}`.
    pub cc: Vec<G1Affine>,
    /// `D_i = g1^{delta_i}`, `i = 0..=n`.
    pub dd: Vec<G1Affine>,
    /// `Y = y_0^{delta_0} prod_i y_i^{delta_i}`.
    pub yy: G1Affine,
    /// `z_r,i`, one per receiver.
    pub z_r: Vec<Scalar>,
    /// `z_s,k`, one per repetition, each below `Z`.
    pub z_s: Vec<Scalar>,
    /// `z_beta`.
    pub z_beta: Scalar,
}

/// Proof that the combined ciphertexts encrypt the polynomial's evaluations (section 6.4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharingProof {
    /// `F = g1^rho`.
    pub ff: G1Affine,
    /// `A = g2^alpha`.
    pub aa: G2Affine,
    /// `Y = (prod_i y_i^{x^i})^rho g1^alpha`.
    pub yy: G1Affine,
    /// `z_r`.
    pub z_r: Scalar,
    /// `z_alpha`.
    pub z_alpha: Scalar,
}

/// A dealing for `n` receivers with threshold `t`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dealing {
    /// `A_k = g2^{a_k}`, `k = 0..t`.
    pub public_coefficients: Vec<G2Affine>,
    /// The encrypted shares.
    pub ciphertext: Ciphertext,
    /// Chunking proof.
    pub chunking: ChunkingProof,
    /// Sharing proof.
    pub sharing: SharingProof,
}

impl Dealing {
    /// Number of receivers.
    pub fn n(&self) -> usize {
        self.ciphertext.cc.len()
    }

    /// Threshold.
    pub fn t(&self) -> usize {
        self.public_coefficients.len()
    }

    /// The IC's encoding (serde_cbor, [`crate::ic_cbor`]).
    pub fn to_bytes(&self) -> Vec<u8> {
        crate::ic_cbor::dealing_to_cbor(&self.to_element_stream(), self.n(), self.t())
    }

    /// The verifier's element stream, `96t + 848n + 7600` bytes: the IC's fields in the
    /// IC's order, concatenated.
    pub fn to_element_stream(&self) -> Vec<u8> {
        let (n, t) = (self.n(), self.t());
        let mut out = Vec::with_capacity(dealing_size(n, t));
        let c = &self.ciphertext;
        let p = &self.chunking;
        let s = &self.sharing;
        for (kind, component, count) in dealing_layout(n, t) {
            for i in 0..count {
                match kind {
                    ElementKind::G1 => {
                        let point = match component {
                            Component::CiphertextR => c.rr[i],
                            Component::CiphertextS => c.ss[i],
                            Component::CiphertextChunk => c.cc[i / NUM_CHUNKS][i % NUM_CHUNKS],
                            Component::ChunkingY0 => p.y0,
                            Component::ChunkingB => p.bb[i],
                            Component::ChunkingC => p.cc[i],
                            Component::ChunkingD => p.dd[i],
                            Component::ChunkingY => p.yy,
                            Component::SharingF => s.ff,
                            Component::SharingY => s.yy,
                            other => unreachable!("{other} is not a G1 field"),
                        };
                        out.extend_from_slice(&point.to_compressed());
                    }
                    ElementKind::G2 => {
                        let point = match component {
                            Component::PublicCoefficient => self.public_coefficients[i],
                            Component::CiphertextZ => c.zz[i],
                            Component::SharingA => s.aa,
                            other => unreachable!("{other} is not a G2 field"),
                        };
                        out.extend_from_slice(&point.to_compressed());
                    }
                    ElementKind::Scalar => {
                        let scalar = match component {
                            Component::ChunkingZr => p.z_r[i],
                            Component::ChunkingZs => p.z_s[i],
                            Component::ChunkingZbeta => p.z_beta,
                            Component::SharingZr => s.z_r,
                            Component::SharingZalpha => s.z_alpha,
                            other => unreachable!("{other} is not a scalar field"),
                        };
                        out.extend_from_slice(&scalar_to_be(&scalar));
                    }
                }
            }
        }
        debug_assert_eq!(out.len(), dealing_size(n, t));
        out
    }

    /// Rebuilds a dealing from decoded element lists in layout order (G1 without the
    /// receiver keys). The lists must have the layout's lengths.
    pub(crate) fn from_elements(
        n: usize,
        t: usize,
        g1: &[G1Affine],
        g2: &[G2Affine],
        scalars: &[Scalar],
    ) -> Dealing {
        let (mut g1, mut g2, mut sc) = (g1.iter(), g2.iter(), scalars.iter());
        let mut take1 = |k: usize| -> Vec<G1Affine> { g1.by_ref().take(k).copied().collect() };
        let public_coefficients: Vec<G2Affine> = g2.by_ref().take(t).copied().collect();
        let rr = take1(NUM_CHUNKS);
        let ss = take1(NUM_CHUNKS);
        let zz: Vec<G2Affine> = g2.by_ref().take(NUM_CHUNKS).copied().collect();
        let flat = take1(NUM_CHUNKS * n);
        let cc = flat.chunks(NUM_CHUNKS).map(<[G1Affine]>::to_vec).collect();
        let y0 = take1(1)[0];
        let bb = take1(NUM_ZK_REPETITIONS);
        let pcc = take1(NUM_ZK_REPETITIONS);
        let dd = take1(n + 1);
        let yy = take1(1)[0];
        let z_r: Vec<Scalar> = sc.by_ref().take(n).copied().collect();
        let z_s: Vec<Scalar> = sc.by_ref().take(NUM_ZK_REPETITIONS).copied().collect();
        let z_beta = *sc.next().expect("layout");
        let ff = take1(1)[0];
        let aa = *g2.next().expect("layout");
        let syy = take1(1)[0];
        let sz_r = *sc.next().expect("layout");
        let z_alpha = *sc.next().expect("layout");
        Dealing {
            public_coefficients,
            ciphertext: Ciphertext { rr, ss, zz, cc },
            chunking: ChunkingProof {
                y0,
                bb,
                cc: pcc,
                dd,
                yy,
                z_r,
                z_s,
                z_beta,
            },
            sharing: SharingProof {
                ff,
                aa,
                yy: syy,
                z_r: sz_r,
                z_alpha,
            },
        }
    }
}

/// The 256 hash bits of a ciphertext's node identity (oracle 1 of 5, the IC's
/// `extend_tau`).
pub fn ciphertext_identity_hash(
    cc: &[Vec<G1Affine>],
    rr: &[G1Affine],
    ss: &[G1Affine],
    epoch: u32,
    associated_data: &[u8],
) -> [u8; 32] {
    let map = HashedMap::new()
        .with("ciphertext-chunks", hash_g1_matrix(cc))
        .with("randomizers-r", hash_g1_vector(rr))
        .with("randomizers-s", hash_g1_vector(ss))
        .with("epoch", hash_int(u64::from(epoch)))
        .with("associated-data", hash_bytes(associated_data));
    random_oracle(DOMAIN_CIPHERTEXT_NODE, &map.unique_hash())
}

/// The chunking proof's first challenge: `e[(i * 16 + j) * 32 + k]`, 8 bits each, drawn
/// from ChaCha20 seeded by oracle 2 of 5 (one 32-bit word per challenge, its low byte).
pub fn chunking_first_challenge(
    public_keys: &[G1Affine],
    ciphertext: &Ciphertext,
    y0: &G1Affine,
    bb: &[G1Affine],
    cc: &[G1Affine],
) -> Vec<u8> {
    let instance = HashedMap::new()
        .with("g1-generator", hash_g1(&G1Affine::generator()))
        .with("public-keys", hash_g1_vector(public_keys))
        .with("ciphertext-chunks", hash_g1_matrix(&ciphertext.cc))
        .with("randomizers-r", hash_g1_vector(&ciphertext.rr));
    let first_move = HashedMap::new()
        .with("y0", hash_g1(y0))
        .with("bb", hash_g1_vector(bb))
        .with("cc", hash_g1_vector(cc));
    let map = HashedMap::new()
        .with("instance", instance.unique_hash())
        .with("first-move", first_move.unique_hash())
        .with(
            "number-of-parallel-repetitions",
            hash_int(NUM_ZK_REPETITIONS as u64),
        );
    let seed = random_oracle(DOMAIN_CHUNKING_ORACLE, &map.unique_hash());
    let mut rng = ChaCha20Rng::from_seed(seed);
    (0..public_keys.len() * NUM_CHUNKS * NUM_ZK_REPETITIONS)
        .map(|_| {
            let mut byte = [0u8; 1];
            rng.fill_bytes(&mut byte);
            byte[0]
        })
        .collect()
}

/// The chunking proof's second challenge `x` (oracle 3 of 5): it hashes every first
/// challenge (as the IC's nested vectors of integers) and the second move.
pub fn chunking_second_challenge(
    e: &[u8],
    z_s: &[Scalar],
    dd: &[G1Affine],
    yy: &G1Affine,
) -> Scalar {
    let per_chunk = e.chunks(NUM_ZK_REPETITIONS);
    let chunk_digests: Vec<_> = per_chunk
        .map(|e_ij| hash_vector(e_ij.iter().map(|&v| hash_small_int(v))))
        .collect();
    let first_challenge = hash_vector(
        chunk_digests
            .chunks(NUM_CHUNKS)
            .map(|row| hash_vector(row.iter().copied())),
    );
    let second_move = HashedMap::new()
        .with("z_s", hash_vector(z_s.iter().map(hash_scalar)))
        .with("dd", hash_g1_vector(dd))
        .with("yy", hash_g1(yy));
    let map = HashedMap::new()
        .with("first-challenge", first_challenge)
        .with("second-move", second_move.unique_hash());
    random_oracle_to_scalar(DOMAIN_CHUNKING_CHALLENGE, &map.unique_hash())
}

/// The sharing proof's instance hash `x` (oracle 4 of 5).
pub fn sharing_instance_hash(
    public_keys: &[G1Affine],
    public_coefficients: &[G2Affine],
    combined_r: &G1Affine,
    combined_c: &[G1Affine],
) -> Scalar {
    // "g2-enerator" is the IC's key, letter for letter.
    let map = HashedMap::new()
        .with("g1-generator", hash_g1(&G1Affine::generator()))
        .with("g2-enerator", hash_g2(&G2Affine::generator()))
        .with("public-keys", hash_g1_vector(public_keys))
        .with(
            "public-coefficients",
            hash_vector(public_coefficients.iter().map(hash_g2)),
        )
        .with("combined-randomizers", hash_g1(combined_r))
        .with("combined-ciphertext", hash_g1_vector(combined_c));
    random_oracle_to_scalar(DOMAIN_SHARING_INSTANCE, &map.unique_hash())
}

/// The sharing proof's challenge `x'` (oracle 5 of 5).
pub fn sharing_challenge(x: &Scalar, ff: &G1Affine, aa: &G2Affine, yy: &G1Affine) -> Scalar {
    let first_move = HashedMap::new()
        .with("blinder-g1", hash_g1(ff))
        .with("blinder-g2", hash_g2(aa))
        .with("blinded-instance", hash_g1(yy));
    let map = HashedMap::new()
        .with("instance-hash", hash_scalar(x))
        .with("first-move", first_move.unique_hash());
    random_oracle_to_scalar(DOMAIN_SHARING_CHALLENGE, &map.unique_hash())
}

/// `x, x^2, .., x^count`.
pub fn powers(x: &Scalar, count: usize) -> Vec<Scalar> {
    let mut out = Vec::with_capacity(count);
    let mut acc = *x;
    for _ in 0..count {
        out.push(acc);
        acc *= x;
    }
    out
}

/// The 16 big-endian 16-bit chunks of a scalar.
fn chunks_of(s: &Scalar) -> [u64; NUM_CHUNKS] {
    let be = scalar_to_be(s);
    std::array::from_fn(|j| u16::from_be_bytes([be[2 * j], be[2 * j + 1]]) as u64)
}

/// `sum_j 2^(16 (15 - j)) * values[j]` in the scalar field.
fn recombine_scalars(values: &[Scalar]) -> Scalar {
    let shift = Scalar::from(1u64 << CHUNK_BITS);
    values.iter().fold(Scalar::zero(), |acc, v| acc * shift + v)
}

/// `sum_j 2^(16 (15 - j)) * points[j]`.
fn recombine_points(points: &[G1Affine]) -> G1Projective {
    points.iter().fold(G1Projective::identity(), |mut acc, p| {
        for _ in 0..CHUNK_BITS {
            acc = acc.double();
        }
        acc.add_mixed(p)
    })
}

/// Creates a dealing of `secret` (a fresh random secret when `None`) for `receivers`
/// with threshold `t`, encrypted for `epoch` and bound to `associated_data`. Receiver
/// `i` (0-based) gets the share `p(i + 1)`.
pub fn create_dealing<R: RngCore + CryptoRng>(
    rng: &mut R,
    receivers: &[G1Affine],
    t: usize,
    epoch: u32,
    associated_data: &[u8],
    secret: Option<Scalar>,
) -> Result<Dealing, DealError> {
    check_receivers(receivers, t)?;
    let (public_coefficients, shares) = share_polynomial(rng, receivers.len(), t, secret);
    let chunks: Vec<[u64; NUM_CHUNKS]> = shares.iter().map(chunks_of).collect();
    let (ciphertext, r) = encrypt_chunks(rng, receivers, &chunks, epoch, associated_data);
    let chunking = prove_chunking(rng, receivers, &ciphertext, &r, &chunks);
    let sharing = prove_sharing(
        rng,
        receivers,
        &public_coefficients,
        &ciphertext,
        &r,
        &shares,
    );
    Ok(Dealing {
        public_coefficients,
        ciphertext,
        chunking,
        sharing,
    })
}

/// The dealing's public inputs: a shape the encoding allows, and every receiver key a
/// valid point of the prime-order subgroup other than the identity.
fn check_receivers(receivers: &[G1Affine], t: usize) -> Result<(), DealError> {
    let n = receivers.len();
    if crate::encoding::check_shape(n, t).is_err() {
        return Err(DealError::Shape { n, t });
    }
    if let Some(index) = receivers
        .iter()
        .position(|y| bool::from(y.is_identity() | !y.is_torsion_free() | !y.is_on_curve()))
    {
        return Err(DealError::ReceiverKey { index });
    }
    Ok(())
}

/// The polynomial of degree `t - 1` (random coefficients, the constant `secret` when
/// given): its public coefficients `g2^{a_k}` and the `n` shares `p(1), .., p(n)` (secret).
fn share_polynomial<R: RngCore + CryptoRng>(
    rng: &mut R,
    n: usize,
    t: usize,
    secret: Option<Scalar>,
) -> (Vec<G2Affine>, Vec<Scalar>) {
    let g2 = G2Projective::generator();
    let mut coefficients: Vec<Scalar> = (0..t).map(|_| random_scalar(rng)).collect();
    if let Some(s) = secret {
        coefficients[0] = s;
    }
    let public_coefficients: Vec<G2Affine> = coefficients
        .iter()
        .map(|a| G2Affine::from(g2 * a))
        .collect();
    let shares: Vec<Scalar> = (1..=n as u64)
        .map(|i| {
            let x = Scalar::from(i);
            coefficients
                .iter()
                .rev()
                .fold(Scalar::zero(), |acc, a| acc * x + a)
        })
        .collect();
    (public_coefficients, shares)
}

/// Forward-secure encryption of every chunk of every receiver for `epoch`: the
/// ciphertext, and the encryption randomness `r` the proofs need (secret).
fn encrypt_chunks<R: RngCore + CryptoRng>(
    rng: &mut R,
    receivers: &[G1Affine],
    chunks: &[[u64; NUM_CHUNKS]],
    epoch: u32,
    associated_data: &[u8],
) -> (Ciphertext, Vec<Scalar>) {
    let g1 = G1Projective::generator();
    let sys = SysParams::get();
    let r: Vec<Scalar> = (0..NUM_CHUNKS).map(|_| random_scalar(rng)).collect();
    let s: Vec<Scalar> = (0..NUM_CHUNKS).map(|_| random_scalar(rng)).collect();
    let rr: Vec<G1Affine> = r.iter().map(|r| G1Affine::from(g1 * r)).collect();
    let ss: Vec<G1Affine> = s.iter().map(|s| G1Affine::from(g1 * s)).collect();
    let cc: Vec<Vec<G1Affine>> = receivers
        .iter()
        .zip(chunks)
        .map(|(y, m)| {
            let row: Vec<G1Projective> = r
                .iter()
                .zip(m)
                .map(|(r_j, m_ij)| y * r_j + g1 * Scalar::from(*m_ij))
                .collect();
            let mut affine = vec![G1Affine::identity(); NUM_CHUNKS];
            G1Projective::batch_normalize(&row, &mut affine);
            affine
        })
        .collect();
    let hash = ciphertext_identity_hash(&cc, &rr, &ss, epoch, associated_data);
    let id = sys.identity_point(epoch, &hash);
    let zz: Vec<G2Affine> = r
        .iter()
        .zip(&s)
        .map(|(r_j, s_j)| G2Affine::from(id * r_j + sys.h * s_j))
        .collect();
    (Ciphertext { rr, ss, zz, cc }, r)
}

fn prove_chunking<R: RngCore + CryptoRng>(
    rng: &mut R,
    receivers: &[G1Affine],
    ciphertext: &Ciphertext,
    r: &[Scalar],
    chunks: &[[u64; NUM_CHUNKS]],
) -> ChunkingProof {
    let n = receivers.len();
    let l = NUM_ZK_REPETITIONS;
    let g1 = G1Projective::generator();
    let bound_s = chunking_bound_s(n) as i128;
    let bound_z = chunking_bound_z(n) as i128;

    // y0 is any group element whose use the prover chooses; a fresh random one.
    let y0 = G1Affine::from(g1 * random_scalar(rng));
    let beta: Vec<Scalar> = (0..l).map(|_| random_scalar(rng)).collect();
    let bb: Vec<G1Affine> = beta.iter().map(|b| G1Affine::from(g1 * b)).collect();

    // Rejection sampling: sigma_k uniform in [-S, Z - 1] until every response is in [0, Z).
    let (cc, e, z_s) = loop {
        let sigma: Vec<i128> = (0..l)
            .map(|_| rng.gen_range(0..(bound_z + bound_s) as u64) as i128 - bound_s)
            .collect();
        let cc: Vec<G1Affine> = beta
            .iter()
            .zip(&sigma)
            .map(|(b, s)| G1Affine::from(y0 * b + g1 * scalar_from_i128(*s)))
            .collect();
        let e = chunking_first_challenge(receivers, ciphertext, &y0, &bb, &cc);
        let mut z: Vec<i128> = sigma.clone();
        for (ij, m) in chunks.iter().flatten().enumerate() {
            for (k, z_k) in z.iter_mut().enumerate() {
                *z_k += e[ij * l + k] as i128 * *m as i128;
            }
        }
        if z.iter().all(|z_k| (0..bound_z).contains(z_k)) {
            let z_s: Vec<Scalar> = z.iter().map(|z_k| Scalar::from(*z_k as u64)).collect();
            break (cc, e, z_s);
        }
    };

    let delta: Vec<Scalar> = (0..=n).map(|_| random_scalar(rng)).collect();
    let dd: Vec<G1Affine> = delta.iter().map(|d| G1Affine::from(g1 * d)).collect();
    let yy = receivers
        .iter()
        .zip(&delta[1..])
        .fold(y0 * delta[0], |acc, (y, d)| acc + y * d);
    let yy = G1Affine::from(yy);
    let x = chunking_second_challenge(&e, &z_s, &dd, &yy);
    let xpow = powers(&x, l);
    let challenges = ChallengePowers::new(&xpow);

    // z_r,i = delta_i + sum_j r_j * (sum_k e_ijk x^k).
    let z_r: Vec<Scalar> = (0..n)
        .map(|i| {
            (0..NUM_CHUNKS).fold(delta[i + 1], |acc, j| {
                let ij = i * NUM_CHUNKS + j;
                acc + r[j] * challenges.eval(&e[ij * l..(ij + 1) * l])
            })
        })
        .collect();
    let z_beta = beta
        .iter()
        .zip(&xpow)
        .fold(delta[0], |acc, (b, x_k)| acc + b * x_k);
    ChunkingProof {
        y0,
        bb,
        cc,
        dd,
        yy,
        z_r,
        z_s,
        z_beta,
    }
}

/// The powers `x, .., x^l` of the chunking proof's second challenge as integers, to
/// evaluate `sum_k e_k x^(k+1)` for each chunk's 32 challenges (`16 n` evaluations per
/// dealing) with one modular reduction each instead of two field products per term.
pub(crate) struct ChallengePowers {
    limbs: Vec<[u64; 4]>,
}

impl ChallengePowers {
    pub(crate) fn new(xpow: &[Scalar]) -> Self {
        let limbs = xpow
            .iter()
            .map(|x| {
                let le = x.to_bytes();
                std::array::from_fn(|l| {
                    u64::from_le_bytes(le[8 * l..8 * l + 8].try_into().expect("8 bytes"))
                })
            })
            .collect();
        ChallengePowers { limbs }
    }

    /// `sum_k e_k x^(k+1)` for one chunk's challenges (at most `l` = 32 of them). Each
    /// limb column sums at most 32 products below `2^72`, so a `u128` holds it; the
    /// integer (below `2^270`) is reduced once.
    pub(crate) fn eval(&self, e: &[u8]) -> Scalar {
        debug_assert!(e.len() <= self.limbs.len());
        let mut columns = [0u128; 4];
        for (e_k, x_k) in e.iter().zip(&self.limbs) {
            for (column, limb) in columns.iter_mut().zip(x_k) {
                *column += u128::from(*e_k) * u128::from(*limb);
            }
        }
        let mut wide = [0u8; 64];
        let mut carry = 0u128;
        for (l, column) in columns.iter().enumerate() {
            let v = column + carry;
            wide[8 * l..8 * l + 8].copy_from_slice(&(v as u64).to_le_bytes());
            carry = v >> 64;
        }
        wide[32..48].copy_from_slice(&carry.to_le_bytes());
        Scalar::from_bytes_wide(&wide)
    }
}

fn scalar_from_i128(v: i128) -> Scalar {
    let magnitude = Scalar::from(v.unsigned_abs() as u64);
    if v < 0 { -magnitude } else { magnitude }
}

fn prove_sharing<R: RngCore + CryptoRng>(
    rng: &mut R,
    receivers: &[G1Affine],
    public_coefficients: &[G2Affine],
    ciphertext: &Ciphertext,
    r: &[Scalar],
    shares: &[Scalar],
) -> SharingProof {
    let g1 = G1Projective::generator();
    let combined_r = G1Affine::from(recombine_points(&ciphertext.rr));
    let combined_c: Vec<G1Affine> = ciphertext
        .cc
        .iter()
        .map(|row| G1Affine::from(recombine_points(row)))
        .collect();
    let r_combined = recombine_scalars(r);
    let x = sharing_instance_hash(receivers, public_coefficients, &combined_r, &combined_c);
    let xpow = powers(&x, receivers.len());

    let alpha = random_scalar(rng);
    let rho = random_scalar(rng);
    let ff = G1Affine::from(g1 * rho);
    let aa = G2Affine::from(G2Projective::generator() * alpha);
    let keys_x = receivers
        .iter()
        .zip(&xpow)
        .fold(G1Projective::identity(), |acc, (y, x_i)| acc + y * x_i);
    let yy = G1Affine::from(keys_x * rho + g1 * alpha);
    let challenge = sharing_challenge(&x, &ff, &aa, &yy);
    let z_r = r_combined * challenge + rho;
    let shares_x = shares
        .iter()
        .zip(&xpow)
        .fold(Scalar::zero(), |acc, (s, x_i)| acc + s * x_i);
    let z_alpha = shares_x * challenge + alpha;
    SharingProof {
        ff,
        aa,
        yy,
        z_r,
        z_alpha,
    }
}

#[cfg(test)]
mod tests {
    use super::{ChallengePowers, powers};
    use ic_bls12_381::Scalar;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    fn by_field_products(e: &[u8], xpow: &[Scalar]) -> Scalar {
        e.iter().zip(xpow).fold(Scalar::zero(), |acc, (e_k, x_k)| {
            acc + Scalar::from(u64::from(*e_k)) * x_k
        })
    }

    /// The one-reduction evaluation is the field's: random challenges, all-255 rows (the
    /// largest column sums) and `x = -1` (every power near the modulus).
    #[test]
    fn challenge_polynomial_matches_field_arithmetic() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let mut xs = vec![-Scalar::one(), Scalar::one(), Scalar::from(u64::MAX)];
        xs.extend((0..20).map(|_| crate::random_scalar(&mut rng)));
        for x in xs {
            let xpow = powers(&x, 32);
            let table = ChallengePowers::new(&xpow);
            let mut rows = vec![vec![255u8; 32], vec![0u8; 32], vec![1u8; 5]];
            rows.extend((0..10).map(|_| (0..32).map(|_| rng.r#gen::<u8>()).collect()));
            for e in rows {
                assert_eq!(
                    table.eval(&e),
                    by_field_products(&e, &xpow),
                    "x {x:?}, e {e:?}"
                );
            }
        }
    }
}
