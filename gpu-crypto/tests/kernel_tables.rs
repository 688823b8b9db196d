//! The constant tables baked into the CUDA sources, checked on the CPU (no GPU needed):
//! the square root's sliding-window steps must rebuild (p+1)/4, and the exponent the
//! kernels embed must be (p+1)/4 of the modulus the CPU path uses.

use gpu_crypto::cpu::P_BYTES;

const FP_SQRT: &str = include_str!("../../kernels/ff/fp_sqrt.cuh");
const PARAMS: &str = include_str!("../../kernels/ff/bls12_381_params.cuh");

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
