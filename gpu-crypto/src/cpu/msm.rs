use crate::engine::MsmInput;
use ic_bls12_381::G1Projective;

pub fn g1_msm_batch(msms: &[MsmInput<'_>]) -> Vec<G1Projective> {
    let _ = msms;
    todo!("CPU reference: msm")
}
