//! Constants of the BLS12-381 base field Fp.

/// p as little-endian 64-bit limbs (as `ic_bls12_381` stores it); deliberately a
/// different representation from the byte constant the decoder compares against.
pub(crate) const MODULUS_LIMBS: [u64; 6] = [
    0xb9fe_ffff_ffff_aaab,
    0x1eab_fffe_b153_ffff,
    0x6730_d2a0_f6b0_f624,
    0x6477_4b84_f385_12bf,
    0x4b1b_a7b6_434b_acd7,
    0x1a01_11ea_397f_e69a,
];
