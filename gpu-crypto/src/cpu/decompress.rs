use crate::error::DecodeError;
use ic_bls12_381::G1Affine;

pub fn g1_decompress(points: &[[u8; 48]]) -> Vec<Result<G1Affine, DecodeError>> {
    let _ = points;
    todo!("CPU reference: decompress")
}
