//! The constant tables baked into the CUDA sources, checked on the CPU (no GPU needed):
//! the square root's sliding-window steps must rebuild (p+1)/4, the exponent the kernels
//! embed must be (p+1)/4 of the modulus the CPU path uses, and the residue number system's
//! tables (ff/fp_rns_tables.cuh) must be what their generator writes; the per-lane constants
//! of the product, the zero test and the conversions are also re-derived here from their
//! defining congruences (the residues of M^2, b and BETA mod p and the CRT words need
//! integers wider than 128 bits: the generator checks them, and the GPU tests use them);
//! and the G2 subgroup test's psi constants must be what their generator derives.

use gpu_crypto::cpu::P_BYTES;

const FP_SQRT: &str = include_str!("../../../kernels/ff/fp_sqrt.cuh");
const PARAMS: &str = include_str!("../../../kernels/ff/bls12_381_params.cuh");
const RNS: &str = include_str!("../../../kernels/ff/fp_rns_tables.cuh");

/// Little-endian 32-bit limbs, wide enough for 384-bit values and a shift.
type Limbs = [u32; 13];

fn shl_add(a: &mut Limbs, shift: u32, add: u32) {
    assert!(shift < 32);
    if shift > 0 {
        let mut carry = 0u32;
        for l in a.iter_mut() {
            let next = *l >> (32 - shift);
            *l = (*l << shift) | carry;
            carry = next;
        }
        assert_eq!(carry, 0, "overflow");
    }
    let mut c = add as u64;
    for l in a.iter_mut() {
        c += *l as u64;
        *l = c as u32;
        c >>= 32;
    }
}

/// The numbers inside `{ ... }` after `name`, in order.
fn table(src: &str, name: &str) -> Vec<u32> {
    let at = src.find(name).unwrap_or_else(|| panic!("{name} not found"));
    let open = at + src[at..].find('{').expect("{");
    let close = open + src[open..].find('}').expect("}");
    src[open + 1..close]
        .split(',')
        .map(|t| t.trim().trim_end_matches('u'))
        .filter(|t| !t.is_empty())
        .map(|t| u32::from_str_radix(t.trim_start_matches("0x"), 16).expect(t))
        .collect()
}

fn define(src: &str, name: &str) -> u32 {
    let line = src
        .lines()
        .find(|l| l.starts_with(&format!("#define {name} ")))
        .unwrap_or_else(|| panic!("#define {name}"));
    line.split_whitespace().nth(2).unwrap().parse().unwrap()
}

fn sqrt_exponent_from_modulus() -> Limbs {
    let mut p = [0u32; 13];
    for (i, chunk) in P_BYTES.rchunks(4).enumerate() {
        p[i] = u32::from_be_bytes(chunk.try_into().unwrap());
    }
    // (p + 1) / 4: p + 1 has no carry out of the low limb (p ends in 0xaaab).
    p[0] += 1;
    let mut out = [0u32; 13];
    for i in 0..13 {
        let hi = if i + 1 < 13 { p[i + 1] } else { 0 };
        out[i] = (p[i] >> 2) | (hi << 30);
    }
    out
}

#[test]
fn embedded_sqrt_exponent_is_p_plus_one_over_four() {
    let mut embedded = [0u32; 13];
    let limbs = table(PARAMS, "FP_SQRT_EXP[FP_LIMBS]");
    assert_eq!(limbs.len(), 12);
    embedded[..12].copy_from_slice(&limbs);
    assert_eq!(embedded, sqrt_exponent_from_modulus());
}

#[test]
fn sqrt_window_steps_rebuild_the_exponent() {
    let steps = table(FP_SQRT, "FP_SQRT_W3[FP_SQRT_W3_STEPS]");
    assert_eq!(steps.len() as u32, define(FP_SQRT, "FP_SQRT_W3_STEPS"));
    let mut acc: Limbs = [0; 13];
    acc[0] = define(FP_SQRT, "FP_SQRT_W3_LEADING");
    for &s in &steps {
        let (squarings, digit) = (s >> 3, s & 7);
        assert!(
            [1, 3, 5, 7].contains(&digit),
            "digit {digit} has no precomputed power"
        );
        shl_add(&mut acc, squarings, digit);
    }
    assert_eq!(acc, sqrt_exponent_from_modulus());
    // ec/g1_sswu.cuh's fp_pow_pm3div4 walks the same steps without the last product by a:
    // that is (p - 3) / 4 only if the last digit is 1.
    assert_eq!(steps.last().map(|s| s & 7), Some(1));
}

fn mul_mod(a: u64, b: u64, m: u64) -> u64 {
    ((a as u128 * b as u128) % m as u128) as u64
}

fn pow_mod(mut a: u64, mut e: u64, m: u64) -> u64 {
    let mut r = 1;
    a %= m;
    while e > 0 {
        if e & 1 == 1 {
            r = mul_mod(r, a, m);
        }
        a = mul_mod(a, a, m);
        e >>= 1;
    }
    r
}

/// Deterministic for n < 2^32 (Miller-Rabin with bases 2, 7, 61).
fn is_prime(n: u64) -> bool {
    if n < 2 || n.is_multiple_of(2) {
        return n == 2;
    }
    let (mut d, mut s) = (n - 1, 0);
    while d % 2 == 0 {
        d /= 2;
        s += 1;
    }
    [2u64, 7, 61].iter().all(|&a| {
        if a % n == 0 {
            return true;
        }
        let mut x = pow_mod(a, d, n);
        if x == 1 || x == n - 1 {
            return true;
        }
        (1..s).any(|_| {
            x = mul_mod(x, x, n);
            x == n - 1
        })
    })
}

/// p mod m, from the CPU path's modulus.
fn p_mod(m: u64) -> u64 {
    P_BYTES.iter().fold(0, |acc, &b| (acc * 256 + b as u64) % m)
}

#[test]
fn rns_tables_are_what_their_generator_writes() {
    // The generator also models the product lane by lane and checks every bound with
    // Python integers; --check fails when the committed tables differ from its output.
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../kernels/ff/fp_rns_tables.py"
    );
    let out = std::process::Command::new("python3")
        .args([script, "--check"])
        .output()
        .expect("python3 (needed to check kernels/ff/fp_rns_tables.cuh)");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The psi endomorphism's constants of the G2 subgroup test (ec/g2_subgroup.cuh) are their
/// definitions (u + 1)^-((p-1)/3) and (u + 1)^-((p-1)/2), recomputed by the generator.
#[test]
fn g2_psi_constants_match_their_definitions() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../kernels/ec/g2_psi_constants.py"
    );
    let out = std::process::Command::new("python3")
        .args([script, "--check"])
        .output()
        .expect("python3 (needed to check kernels/ec/g2_subgroup.cuh)");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn rns_lane_constants_satisfy_their_congruences() {
    let n = define(RNS, "RNS_N") as usize;
    let w = define(RNS, "RNS_W");
    let m: Vec<u64> = table(RNS, "RNS_M[").iter().map(|&x| x as u64).collect();
    let c = table(RNS, "RNS_C[");
    let f: Vec<u64> = table(RNS, "RNS_F[").iter().map(|&x| x as u64).collect();
    let (k0, k1, k2) = (
        table(RNS, "RNS_K0["),
        table(RNS, "RNS_K1["),
        table(RNS, "RNS_K2["),
    );
    let row = table(RNS, "RNS_ROW[");
    let (b, b2) = (&m[..n], &m[n..]);
    assert_eq!(m.len(), 2 * n);
    assert_eq!(row.len(), 2 * n * n);
    for (l, &ml) in m.iter().enumerate() {
        assert!(is_prime(ml), "m_{l} = {ml} is not prime");
        assert_eq!((1u64 << w) - ml, c[l] as u64);
        assert!(c[l] < 1 << 11, "c_{l} too large for the two-fold reduction");
        assert!(m[..l].iter().all(|&x| x != ml), "m_{l} repeated");
    }
    let prod_mod = |set: &[u64], skip: usize, x: u64| {
        set.iter()
            .enumerate()
            .filter(|&(i, _)| i != skip)
            .fold(1, |acc, (_, &v)| mul_mod(acc, v, x))
    };
    let mut signs = Vec::new();
    for i in 0..n {
        let mi = b[i];
        assert_eq!(mi % 4, 3, "base B primes are 3 mod 4");
        // f_i^2 = e_i (-p^-1 (M/m_i)^-1): f_i^2 (-p) (M/m_i) = e_i = +-1.
        let e = mul_mod(
            mul_mod(mul_mod(f[i], f[i], mi), mi - p_mod(mi), mi),
            prod_mod(b, i, mi),
            mi,
        );
        assert!(e == 1 || e == mi - 1, "lane {i}: f^2 is not +-k");
        signs.push(e == 1);
        assert_eq!((k0[i], k1[i]), (0, 0));
        assert_eq!(
            k2[i] as u64,
            mul_mod(mi - prod_mod(b2, usize::MAX, mi), f[i], mi)
        );
        for j in 0..n {
            let want = mul_mod(prod_mod(b2, j, mi), f[i], mi);
            assert_eq!(row[i * n + j] as u64, want, "lane {i}, weight {j}");
        }
    }
    let negatives = signs.iter().filter(|&&s| !s).count() as u64;
    for (j, &mj) in b2.iter().enumerate() {
        let l = n + j;
        let pm = p_mod(mj);
        assert_eq!(
            mul_mod(f[l], prod_mod(b2, j, mj), mj),
            1,
            "lane {l}: f = (M'/m')^-1"
        );
        let big_m = prod_mod(b, usize::MAX, mj);
        assert_eq!(
            mul_mod(mul_mod(k1[l] as u64, f[l], mj), big_m, mj),
            1,
            "lane {l}: k1"
        );
        // The sign fix: sum over e_i = -1 of m_i (p m_i^-1 f) = (#negative) p f.
        assert_eq!(
            k0[l] as u64,
            mul_mod(negatives % mj * pm % mj, f[l], mj),
            "lane {l}: k0"
        );
        assert_eq!(k2[l], 0);
        for (i, &mi) in b.iter().enumerate() {
            // row m_i = e_i p f (mod m'_j).
            let lhs = mul_mod(row[l * n + i] as u64, mi, mj);
            let pf = mul_mod(pm, f[l], mj);
            assert_eq!(
                lhs,
                if signs[i] { pf } else { (mj - pf) % mj },
                "lane {l}, weight {i}"
            );
        }
    }
    // Per-lane constants of plain integers: 2^(32k), 1, p, and the zero test's (p f)^-1.
    let (pow32, one, pmod, zero) = (
        table(RNS, "RNS_POW32["),
        table(RNS, "RNS_ONE["),
        table(RNS, "RNS_PMOD["),
        table(RNS, "RNS_ZERO["),
    );
    for (l, &ml) in m.iter().enumerate() {
        for k in 0..12 {
            assert_eq!(pow32[l * 12 + k] as u64, pow_mod(2, 32 * k as u64, ml));
        }
        assert_eq!(one[l] as u64, f[l]);
        let pf = mul_mod(p_mod(ml), f[l], ml);
        assert_eq!(pmod[l] as u64, pf);
        assert_eq!(mul_mod(zero[l] as u64, pf, ml), 1);
    }
    // The CRT inverses of base B: (f_i M/m_i)^-1.
    let crt_inv = table(RNS, "RNS_CRT_INV[");
    for (i, &mi) in b.iter().enumerate() {
        assert_eq!(
            mul_mod(mul_mod(crt_inv[i] as u64, f[i], mi), prod_mod(b, i, mi), mi),
            1
        );
    }
}
