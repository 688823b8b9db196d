//! Shared by the test binaries that compare backends: opening the device once (or failing
//! with the reason), and the ic_bls12_381-based references and inputs they compare on.
#![allow(dead_code)]

use gpu_crypto::gpu::GpuBackend;
use gpu_crypto::{BlsItem, BlsScheme, DecodeError, G1Affine, G1Projective, G2Affine, Scalar};
use group::Group;
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::sync::{Arc, OnceLock};

/// The opened GPU. Only tests marked `#[ignore = "needs a GPU: ..."]` call this, so a
/// machine without a usable GPU runs them only when asked to (`--include-ignored`), and
/// then they fail with the reason instead of passing without doing their work.
pub(crate) fn gpu() -> Arc<GpuBackend> {
    static GPU: OnceLock<Result<Arc<GpuBackend>, String>> = OnceLock::new();
    let r = GPU.get_or_init(|| GpuBackend::open(0).map(Arc::new).map_err(|e| e.to_string()));
    match r {
        Ok(g) => g.clone(),
        Err(reason) => panic!("this test needs a usable GPU: {reason}"),
    }
}

/// An engine with every operation of a dealing verification on the GPU and no CPU
/// fallback: a GPU error fails the call.
pub(crate) fn nidkg_gpu_engine() -> gpu_crypto::Engine {
    use gpu_crypto::{BackendChoice, Engine, Fallback, NIDKG_OPERATIONS, Policy};
    gpu();
    let mut policy = Policy::cpu_only();
    for op in NIDKG_OPERATIONS {
        policy.operation_mut(op).backend = BackendChoice::Gpu;
    }
    policy.fallback = Fallback::Never;
    Engine::new(policy).expect("GPU engine")
}

/// Whether `engine` ran operation `op` on `on` at least once.
pub(crate) fn ran(
    engine: &gpu_crypto::Engine,
    op: gpu_crypto::Operation,
    on: gpu_crypto_api::stats::Executed,
) -> bool {
    engine
        .stats()
        .operations
        .iter()
        .any(|c| c.operation == op && c.executed == on && c.calls > 0)
}

/// The NVRTC version found at run time. Only tests marked `#[ignore = "needs NVRTC: ..."]`
/// call this; without NVRTC they fail with the reason.
pub(crate) fn nvrtc() -> (i32, i32) {
    match gpu_crypto::kernels::nvrtc_version() {
        Ok(v) => v,
        Err(e) => panic!("this test needs NVRTC: {e}"),
    }
}

pub(crate) fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

/// The modulus p, big-endian.
pub(crate) const P_BE: [u8; 48] = [
    0x1a, 0x01, 0x11, 0xea, 0x39, 0x7f, 0xe6, 0x9a, 0x4b, 0x1b, 0xa7, 0xb6, 0x43, 0x4b, 0xac, 0xd7,
    0x64, 0x77, 0x4b, 0x84, 0xf3, 0x85, 0x12, 0xbf, 0x67, 0x30, 0xd2, 0xa0, 0xf6, 0xb0, 0xf6, 0x24,
    0x1e, 0xab, 0xff, 0xfe, 0xb1, 0x53, 0xff, 0xff, 0xb9, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xaa, 0xab,
];

/// Reference decompression with `DecodeError`'s precedence, built on ic_bls12_381 alone
/// (`from_compressed_unchecked` and `is_torsion_free`), and checked against
/// `from_compressed`'s accept set.
pub(crate) fn reference_decompress(b: &[u8; 48]) -> Result<G1Affine, DecodeError> {
    let compressed = b[0] & 0x80 != 0;
    let infinity = b[0] & 0x40 != 0;
    let sort = b[0] & 0x20 != 0;
    let mut x = *b;
    x[0] &= 0x1f;
    let r = if !compressed {
        Err(DecodeError::NotCompressed)
    } else if infinity {
        if sort || x.iter().any(|&v| v != 0) {
            Err(DecodeError::BadInfinity)
        } else {
            Ok(G1Affine::identity())
        }
    } else if x >= P_BE {
        Err(DecodeError::NonCanonical)
    } else {
        match Option::<G1Affine>::from(G1Affine::from_compressed_unchecked(b)) {
            None => Err(DecodeError::NotOnCurve),
            Some(p) if !bool::from(p.is_torsion_free()) => Err(DecodeError::NotInSubgroup),
            Some(p) => Ok(p),
        }
    };
    let accepted = Option::<G1Affine>::from(G1Affine::from_compressed(b));
    assert_eq!(accepted, r.ok(), "reference disagrees with from_compressed");
    r
}

/// Compressed encodings of random points of G1.
pub(crate) fn valid_points(rng: &mut impl RngCore, n: usize) -> Vec<[u8; 48]> {
    let step = G1Projective::random(&mut *rng);
    let mut acc = G1Projective::random(&mut *rng);
    let mut proj = Vec::with_capacity(n);
    for _ in 0..n {
        acc += step;
        proj.push(acc);
    }
    let mut affine = vec![G1Affine::identity(); n];
    G1Projective::batch_normalize(&proj, &mut affine);
    affine.iter().map(|p| p.to_compressed()).collect()
}

/// Encodings with a canonical x that pass the flags: about half have no square root,
/// nearly all the others are curve points outside the subgroup.
pub(crate) fn random_x(rng: &mut impl RngCore, flags: u8) -> [u8; 48] {
    let mut b = [0u8; 48];
    loop {
        rng.fill_bytes(&mut b);
        b[0] &= 0x1f;
        if b < P_BE {
            break;
        }
    }
    b[0] |= flags;
    b
}

/// The adversarial corpus: every flag combination over x = 0, a valid x, x = p, x = p + 1,
/// the largest 381-bit x, no-square-root and non-subgroup x; infinity with stray bits;
/// random bytes. Each item is tagged with what it exercises.
pub(crate) fn adversarial(rng: &mut ChaCha20Rng) -> Vec<(String, [u8; 48])> {
    let mut out = Vec::new();
    let valid = valid_points(rng, 8);
    let mut p_plus_1 = P_BE;
    p_plus_1[47] += 1;
    let mut max = [0xffu8; 48];
    max[0] = 0x1f;
    let mut no_sqrt = None;
    let mut non_subgroup = None;
    while no_sqrt.is_none() || non_subgroup.is_none() {
        let b = random_x(rng, 0x80);
        match reference_decompress(&b) {
            Err(DecodeError::NotOnCurve) => no_sqrt = no_sqrt.or(Some(b)),
            Err(DecodeError::NotInSubgroup) => non_subgroup = non_subgroup.or(Some(b)),
            _ => {}
        }
    }
    let xs: Vec<(&str, [u8; 48])> = vec![
        ("x=0", [0u8; 48]),
        ("valid-x", valid[0]),
        ("x=p", P_BE),
        ("x=p+1", p_plus_1),
        ("x=2^381-1", max),
        ("no-sqrt-x", no_sqrt.unwrap_or([0u8; 48])),
        ("non-subgroup-x", non_subgroup.unwrap_or([0u8; 48])),
    ];
    for (name, x) in &xs {
        for flags in 0u8..8 {
            let mut b = *x;
            b[0] = (b[0] & 0x1f) | (flags << 5);
            out.push((format!("{name} flags={:03b}", flags), b));
        }
    }
    for i in 0..48 {
        for bit in [0x01u8, 0x80] {
            let mut b = [0u8; 48];
            b[0] = 0xc0;
            if i == 0 {
                b[0] |= bit & 0x1f;
            } else {
                b[i] = bit;
            }
            out.push((format!("infinity stray byte {i} bit {bit:#x}"), b));
        }
    }
    for v in &valid {
        out.push(("valid".into(), *v));
        let mut flipped = *v;
        flipped[0] ^= 0x20;
        out.push(("valid with sort flipped".into(), flipped));
    }
    for _ in 0..256 {
        let mut b = [0u8; 48];
        rng.fill_bytes(&mut b);
        out.push(("random bytes".into(), b));
        b[0] |= 0x80;
        b[0] &= !0x40;
        out.push(("random compressed".into(), b));
    }
    for _ in 0..64 {
        let flags = if rng.r#gen::<bool>() { 0x80 } else { 0xa0 };
        out.push(("random canonical x".into(), random_x(rng, flags)));
    }
    out
}

pub(crate) fn cpu_sha256(prefix: &[u8], chunk: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(prefix);
    h.update(chunk);
    h.finalize().into()
}

/// An owned BLS batch item (the engine takes borrowed ones: [`items`]).
#[derive(Clone)]
pub(crate) struct Owned {
    pub(crate) signature: [u8; 48],
    pub(crate) public_key: [u8; 96],
    pub(crate) message: Vec<u8>,
    pub(crate) scheme: BlsScheme,
}

pub(crate) fn items(batch: &[Owned]) -> Vec<BlsItem<'_>> {
    batch
        .iter()
        .map(|o| BlsItem {
            signature: &o.signature,
            public_key: &o.public_key,
            message: &o.message,
            scheme: o.scheme,
        })
        .collect()
}

/// A fresh seed from the OS unless `var` names one, printed so that a failure can be
/// replayed.
pub(crate) fn fresh_rng(var: &str, what: &str) -> ChaCha20Rng {
    let seed = std::env::var(var)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().next_u64());
    eprintln!("{what}: seed {seed} ({var}={seed} replays it)");
    rng(seed)
}

/// Products of pairings with the verdict each was built to have: a table of G2 points
/// b_j * Q (index 0 is Q, index 1 repeats index 2, the last is the identity) and products
/// of one to five pairs whose exponents cancel on Q (the identity of GT) or miss by one,
/// some with identity points, plus the empty product and a product of one identity pair.
pub(crate) struct PairingCases {
    pub g2: Vec<G2Affine>,
    pub(crate) products: Vec<Vec<(G1Affine, usize)>>,
    pub(crate) expected: Vec<bool>,
}

pub(crate) fn pairing_cases(rng: &mut (impl Rng + rand::CryptoRng), count: usize) -> PairingCases {
    let b: Vec<Scalar> = (0..6).map(|_| nidkg::random_scalar(rng)).collect();
    let mut g2 = vec![G2Affine::generator()];
    g2.extend(b.iter().map(|b| G2Affine::from(G2Affine::generator() * b)));
    g2[1] = g2[2];
    let b_of = |i: usize| if i == 1 { b[1] } else { b[i - 1] };
    let identity_index = g2.len();
    g2.push(G2Affine::identity());

    let mut products: Vec<Vec<(G1Affine, usize)>> = Vec::new();
    let mut expected = Vec::new();
    for k in 0..count {
        // sum_i a_i b_{j_i} cancelled by one term on Q: the identity, unless nudged.
        let terms = 1 + k % 4;
        let mut pairs = Vec::with_capacity(terms + 2);
        let mut total = Scalar::zero();
        for _ in 0..terms {
            let j = rng.gen_range(1..identity_index);
            let a = nidkg::random_scalar(rng);
            total += a * b_of(j);
            pairs.push((G1Affine::from(G1Affine::generator() * a), j));
        }
        let off = k % 3 == 1;
        if off {
            total += Scalar::one();
        }
        pairs.push((G1Affine::from(G1Affine::generator() * -total), 0));
        if k % 5 == 0 {
            pairs.insert(0, (G1Affine::identity(), rng.gen_range(0..g2.len())));
        }
        if k % 7 == 3 {
            let p = G1Affine::from(G1Affine::generator() * nidkg::random_scalar(rng));
            pairs.push((p, identity_index));
        }
        products.push(pairs);
        expected.push(!off);
    }
    products.push(Vec::new());
    expected.push(true);
    products.push(vec![(G1Affine::identity(), 3)]);
    expected.push(true);
    PairingCases {
        g2,
        products,
        expected,
    }
}
