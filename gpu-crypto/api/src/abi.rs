//! The codes of the C ABI of `libgpu_crypto.so` (`gpu-crypto/engine/include/gpu_crypto.h`,
//! `docs/c-abi.md`): its version, the return codes of every entry point, the per-item
//! verification codes and the BLS scheme codes. The library writes them; the replica's
//! client reads them.

use crate::error::{DecodeError, VerifyError};
use crate::operation::BlsScheme;

/// Version of this ABI. Bumped on any incompatible change of a signature, a code or a layout.
pub const ABI_VERSION: u32 = 1;

/// Return codes of every `int32_t` entry point (`gpu_crypto_status` in the header).
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Success; every output was written.
    Ok = 0,
    /// A required pointer is NULL.
    NullPointer = 1,
    /// A length is out of range (its byte size overflows, or lengths disagree).
    Length = 2,
    /// The policy JSON, the domain separator or another argument is invalid.
    InvalidArgument = 3,
    /// An MSM input point is not a valid uncompressed G1 point of the subgroup.
    InvalidPoint = 4,
    /// An MSM scalar is not below the group order r.
    InvalidScalar = 5,
    /// The caller's buffer is too small; the required size was reported.
    BufferTooSmall = 6,
    /// The policy pins this operation to the GPU and the GPU is unusable.
    GpuUnavailable = 7,
    /// The GPU failed and the policy forbids recomputing on the CPU.
    GpuFailed = 8,
    /// The policy pins this operation to the GPU, which has no implementation of it.
    NoGpuImplementation = 9,
    /// A bug: a panic inside the library, caught at the boundary.
    Internal = 10,
}

impl Status {
    /// Every status, in code order (0 to 10).
    pub const ALL: [Status; 11] = [
        Status::Ok,
        Status::NullPointer,
        Status::Length,
        Status::InvalidArgument,
        Status::InvalidPoint,
        Status::InvalidScalar,
        Status::BufferTooSmall,
        Status::GpuUnavailable,
        Status::GpuFailed,
        Status::NoGpuImplementation,
        Status::Internal,
    ];

    /// The status with this return code; `None` for a code the library never returns.
    pub fn from_code(code: i32) -> Option<Status> {
        Status::ALL.into_iter().find(|s| *s as i32 == code)
    }
}

/// Per-item code of `gpu_crypto_bls_verify_batch` for a signature that does not verify.
pub const VERIFY_INVALID: u8 = 1;
/// Per-item code base: `VERIFY_SIGNATURE_DECODE + DecodeError::code()` for a bad signature.
pub const VERIFY_SIGNATURE_DECODE: u8 = 0x10;
/// Per-item code base: `VERIFY_PUBLIC_KEY_DECODE + DecodeError::code()` for a bad public key.
pub const VERIFY_PUBLIC_KEY_DECODE: u8 = 0x20;

/// The per-item code of a verification verdict (0: valid).
pub fn verify_code(verdict: &Result<(), VerifyError>) -> u8 {
    match verdict {
        Ok(()) => 0,
        Err(VerifyError::Invalid) => VERIFY_INVALID,
        Err(VerifyError::Signature(e)) => VERIFY_SIGNATURE_DECODE + e.code(),
        Err(VerifyError::PublicKey(e)) => VERIFY_PUBLIC_KEY_DECODE + e.code(),
    }
}

/// The verdict of a per-item verification code; `None` for a code this ABI never writes.
pub fn verdict_of_code(code: u8) -> Option<Result<(), VerifyError>> {
    match code {
        0 => Some(Ok(())),
        VERIFY_INVALID => Some(Err(VerifyError::Invalid)),
        c if c > VERIFY_PUBLIC_KEY_DECODE => DecodeError::from_code(c - VERIFY_PUBLIC_KEY_DECODE)
            .map(|e| Err(VerifyError::PublicKey(e))),
        c if c > VERIFY_SIGNATURE_DECODE => DecodeError::from_code(c - VERIFY_SIGNATURE_DECODE)
            .map(|e| Err(VerifyError::Signature(e))),
        _ => None,
    }
}

/// BLS scheme code of `gpu_crypto_bls_verify_batch` for [`BlsScheme::Threshold`].
pub const SCHEME_THRESHOLD: u32 = 0;
/// BLS scheme code of `gpu_crypto_bls_verify_batch` for [`BlsScheme::MultiSig`].
pub const SCHEME_MULTI_SIG: u32 = 1;

/// The scheme of an ABI scheme code.
pub fn scheme_of_code(code: u32) -> Option<BlsScheme> {
    match code {
        SCHEME_THRESHOLD => Some(BlsScheme::Threshold),
        SCHEME_MULTI_SIG => Some(BlsScheme::MultiSig),
        _ => None,
    }
}

/// The ABI code of a scheme.
pub fn scheme_code(scheme: BlsScheme) -> u32 {
    match scheme {
        BlsScheme::Threshold => SCHEME_THRESHOLD,
        BlsScheme::MultiSig => SCHEME_MULTI_SIG,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_codes_round_trip() {
        let mut verdicts = vec![Ok(()), Err(VerifyError::Invalid)];
        for e in DecodeError::ALL {
            verdicts.push(Err(VerifyError::Signature(e)));
            verdicts.push(Err(VerifyError::PublicKey(e)));
        }
        for v in verdicts {
            assert_eq!(verdict_of_code(verify_code(&v)), Some(v));
        }
        for unused in [2u8, 0x10, 0x16, 0x20, 0x26, 0xff] {
            assert_eq!(verdict_of_code(unused), None, "code {unused}");
        }
    }

    #[test]
    fn status_codes_round_trip() {
        for s in Status::ALL {
            assert_eq!(Status::from_code(s as i32), Some(s));
        }
        assert_eq!(Status::from_code(11), None);
    }
}
