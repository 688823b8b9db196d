use crate::engine::BlsItem;
use crate::error::VerifyError;

pub fn bls_verify_batch(items: &[BlsItem<'_>]) -> Vec<Result<(), VerifyError>> {
    let _ = items;
    todo!("CPU reference: bls verify")
}
