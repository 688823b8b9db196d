//! The C ABI: called directly through the rlib (same code as the cdylib), and from a C
//! program compiled against include/gpu_crypto.h and linked with the built
//! libgpu_crypto.so (when `cc` is present).

use gpu_crypto::ffi::{self, GpuCryptoEngine, Status};
use gpu_crypto::{
    BlsItem, BlsScheme, DecodeError, DomainSeparator, Engine, G1Affine, G1Projective, G2Affine,
    MsmInput, PairingProducts, Scalar,
};
use gpu_crypto_api::abi;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::ffi::{CStr, CString, c_char};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::ptr;

/// An engine handle freed on drop.
struct Handle(*mut GpuCryptoEngine);

impl Handle {
    fn new(policy: &str) -> Handle {
        let policy = CString::new(policy).expect("policy");
        let mut err = [0 as c_char; 256];
        // SAFETY: a NUL-terminated policy and a writable error buffer.
        let engine =
            unsafe { ffi::gpu_crypto_engine_new(policy.as_ptr(), err.as_mut_ptr(), err.len()) };
        // SAFETY: on failure the library wrote a NUL-terminated reason into `err`, which
        // was zeroed before, so the string ends inside the buffer either way.
        assert!(!engine.is_null(), "engine_new failed: {:?}", unsafe {
            CStr::from_ptr(err.as_ptr())
        });
        Handle(engine)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: a live handle, freed once.
        unsafe { ffi::gpu_crypto_engine_free(self.0) }
    }
}

fn last_error() -> String {
    let mut required = 0;
    // SAFETY: size query with a NULL buffer.
    let code = unsafe { ffi::gpu_crypto_last_error(ptr::null_mut(), 0, &mut required) };
    assert_eq!(code, Status::BufferTooSmall as i32);
    let mut buf = vec![0 as c_char; required];
    // SAFETY: `required` writable bytes.
    let code = unsafe { ffi::gpu_crypto_last_error(buf.as_mut_ptr(), buf.len(), ptr::null_mut()) };
    assert_eq!(code, Status::Ok as i32);
    // SAFETY: NUL-terminated by the library.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

fn random_point(rng: &mut ChaCha20Rng) -> G1Affine {
    G1Affine::from(G1Affine::generator() * nidkg::random_scalar(rng))
}

#[test]
fn version_and_engine_creation() {
    assert_eq!(ffi::gpu_crypto_abi_version(), ffi::ABI_VERSION);
    // SAFETY: a NULL policy is allowed (the auto policy), and with no error buffer the
    // library writes nothing.
    let _auto = Handle(unsafe { ffi::gpu_crypto_engine_new(ptr::null(), ptr::null_mut(), 0) });
    assert!(!_auto.0.is_null(), "NULL policy is the auto policy");

    // Invalid JSON: NULL, the reason in the caller's buffer, truncated to fit.
    let bad = CString::new("{\"decompress\": 1}").unwrap();
    let mut err = [0x55 as c_char; 16];
    // SAFETY: valid string and buffer.
    let engine = unsafe { ffi::gpu_crypto_engine_new(bad.as_ptr(), err.as_mut_ptr(), err.len()) };
    assert!(engine.is_null());
    // SAFETY: NUL-terminated within the buffer.
    let message = unsafe { CStr::from_ptr(err.as_ptr()) }.to_str().unwrap();
    assert_eq!(message, "invalid policy ");
    assert!(
        last_error().starts_with("invalid policy JSON"),
        "{}",
        last_error()
    );

    // Pinned to a GPU that cannot be used: refused with the reason.
    let gpu = CString::new("\"gpu\"").unwrap();
    let mut err = [0 as c_char; 512];
    // SAFETY: valid string and buffer.
    let engine = unsafe { ffi::gpu_crypto_engine_new(gpu.as_ptr(), err.as_mut_ptr(), err.len()) };
    if Engine::new(gpu_crypto::Policy::with_backend(
        gpu_crypto::BackendChoice::Gpu,
    ))
    .is_ok()
    {
        assert!(!engine.is_null());
        // SAFETY: a live handle, freed once.
        unsafe { ffi::gpu_crypto_engine_free(engine) };
    } else {
        assert!(engine.is_null());
        // SAFETY: NUL-terminated.
        let message = unsafe { CStr::from_ptr(err.as_ptr()) }.to_string_lossy();
        assert!(message.contains("GPU"), "{message}");
    }
}

#[test]
fn decompress_matches_the_engine_and_checks_pointers() {
    let handle = Handle::new("\"cpu\"");
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let mut inputs: Vec<[u8; 48]> = gpu_crypto::corpus::g1_decompress_corpus()
        .iter()
        .map(|e| e.bytes)
        .collect();
    inputs.extend((0..20).map(|_| random_point(&mut rng).to_compressed()));
    let n = inputs.len();
    let mut out = vec![[0xaau8; 96]; n];
    let mut codes = vec![0xaau8; n];
    // SAFETY: sizes as documented.
    let code = unsafe {
        ffi::gpu_crypto_g1_decompress(
            handle.0,
            inputs.as_ptr().cast(),
            n,
            out.as_mut_ptr().cast(),
            codes.as_mut_ptr(),
        )
    };
    assert_eq!(code, Status::Ok as i32);
    let reference = Engine::cpu_only()
        .g1_decompress(&inputs)
        .expect("reference");
    let mut rejected = 0;
    for (i, r) in reference.iter().enumerate() {
        match r {
            Ok(p) => {
                assert_eq!(codes[i], 0, "item {i}");
                assert_eq!(out[i], p.to_uncompressed(), "item {i}");
            }
            Err(e) => {
                rejected += 1;
                assert_eq!(codes[i], e.code(), "item {i}");
                assert_eq!(out[i], [0u8; 96], "item {i}: zero for a rejected item");
            }
        }
    }
    assert!(rejected > 0 && rejected < n, "the corpus has both kinds");

    // NULL input with n > 0, NULL engine: errors, outputs untouched.
    let mut codes = vec![0xaau8; 2];
    let mut out = vec![[0xaau8; 96]; 2];
    for (engine, input) in [
        (handle.0.cast_const(), ptr::null::<u8>()),
        (ptr::null(), inputs.as_ptr().cast()),
    ] {
        // SAFETY: NULLs are what is checked; other pointers valid.
        let code = unsafe {
            ffi::gpu_crypto_g1_decompress(
                engine,
                input,
                2,
                out.as_mut_ptr().cast(),
                codes.as_mut_ptr(),
            )
        };
        assert_eq!(code, Status::NullPointer as i32);
        assert_eq!(codes, [0xaa, 0xaa]);
        assert!(out.iter().all(|p| *p == [0xaa; 96]));
    }
    // n overflowing the byte size of the buffers.
    // SAFETY: rejected before any access.
    let code = unsafe {
        ffi::gpu_crypto_g1_decompress(
            handle.0,
            inputs.as_ptr().cast(),
            usize::MAX / 8,
            out.as_mut_ptr().cast(),
            codes.as_mut_ptr(),
        )
    };
    assert_eq!(code, Status::Length as i32);
    // n = 0 with NULL buffers is an empty batch.
    // SAFETY: nothing is accessed.
    let code = unsafe {
        ffi::gpu_crypto_g1_decompress(handle.0, ptr::null(), 0, ptr::null_mut(), ptr::null_mut())
    };
    assert_eq!(code, Status::Ok as i32);
}

#[test]
fn g2_decompress_matches_the_engine_and_checks_pointers() {
    let handle = Handle::new("\"cpu\"");
    let inputs: Vec<[u8; 96]> = gpu_crypto::corpus::g2_decompress_corpus()
        .iter()
        .map(|e| e.bytes)
        .collect();
    let n = inputs.len();
    let mut out = vec![[0xaau8; 192]; n];
    let mut codes = vec![0xaau8; n];
    // SAFETY: sizes as documented.
    let code = unsafe {
        ffi::gpu_crypto_g2_decompress(
            handle.0,
            inputs.as_ptr().cast(),
            n,
            out.as_mut_ptr().cast(),
            codes.as_mut_ptr(),
        )
    };
    assert_eq!(code, Status::Ok as i32);
    let reference = Engine::cpu_only()
        .g2_decompress(&inputs)
        .expect("reference");
    let mut rejected = 0;
    for (i, r) in reference.iter().enumerate() {
        match r {
            Ok(p) => {
                assert_eq!(codes[i], 0, "item {i}");
                assert_eq!(out[i], p.to_uncompressed(), "item {i}");
            }
            Err(e) => {
                rejected += 1;
                assert_eq!(codes[i], e.code(), "item {i}");
                assert_eq!(out[i], [0u8; 192], "item {i}: zero for a rejected item");
            }
        }
    }
    assert!(rejected > 0 && rejected < n, "the corpus has both kinds");

    let mut codes = vec![0xaau8; 2];
    let mut out = vec![[0xaau8; 192]; 2];
    // SAFETY: NULL input with n > 0 is what is checked; other pointers valid.
    let code = unsafe {
        ffi::gpu_crypto_g2_decompress(
            handle.0,
            ptr::null(),
            2,
            out.as_mut_ptr().cast(),
            codes.as_mut_ptr(),
        )
    };
    assert_eq!(code, Status::NullPointer as i32);
    assert_eq!(codes, [0xaa, 0xaa]);
    assert!(out.iter().all(|p| *p == [0xaa; 192]));
    // SAFETY: rejected before any access.
    let code = unsafe {
        ffi::gpu_crypto_g2_decompress(
            handle.0,
            inputs.as_ptr().cast(),
            usize::MAX / 16,
            out.as_mut_ptr().cast(),
            codes.as_mut_ptr(),
        )
    };
    assert_eq!(code, Status::Length as i32);
    // SAFETY: nothing is accessed.
    let code = unsafe {
        ffi::gpu_crypto_g2_decompress(handle.0, ptr::null(), 0, ptr::null_mut(), ptr::null_mut())
    };
    assert_eq!(code, Status::Ok as i32);
}

#[test]
fn msm_batch_matches_the_engine_and_rejects_bad_inputs_whole() {
    let handle = Handle::new("\"cpu\"");
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let lengths = [0usize, 1, 5, 33];
    let total: usize = lengths.iter().sum();
    let points: Vec<G1Affine> = (0..total).map(|_| random_point(&mut rng)).collect();
    let scalars: Vec<Scalar> = (0..total).map(|_| nidkg::random_scalar(&mut rng)).collect();
    let point_bytes: Vec<[u8; 96]> = points.iter().map(G1Affine::to_uncompressed).collect();
    let mut scalar_bytes: Vec<[u8; 32]> = scalars
        .iter()
        .map(|s| {
            let mut be = s.to_bytes();
            be.reverse();
            be
        })
        .collect();
    let mut out = vec![[0u8; 96]; lengths.len()];
    // SAFETY: sizes as documented.
    let code = unsafe {
        ffi::gpu_crypto_g1_msm_batch(
            handle.0,
            point_bytes.as_ptr().cast(),
            scalar_bytes.as_ptr().cast(),
            lengths.as_ptr(),
            lengths.len(),
            out.as_mut_ptr().cast(),
            ptr::null_mut(),
        )
    };
    assert_eq!(code, Status::Ok as i32, "{}", last_error());
    let mut start = 0;
    for (j, &len) in lengths.iter().enumerate() {
        let naive: G1Projective = points[start..start + len]
            .iter()
            .zip(&scalars[start..start + len])
            .map(|(p, s)| G1Projective::from(p) * s)
            .sum();
        assert_eq!(out[j], G1Affine::from(naive).to_uncompressed(), "msm {j}");
        start += len;
    }
    let engine_results = Engine::cpu_only()
        .g1_msm_batch(&[MsmInput {
            points: &points[6..39],
            scalars: &scalars[6..39],
        }])
        .expect("engine");
    assert_eq!(out[3], G1Affine::from(engine_results[0]).to_uncompressed());

    // A scalar equal to r, then a point off the curve: whole-call errors with the index.
    let r_be: [u8; 32] =
        hex::decode("73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001")
            .unwrap()
            .try_into()
            .unwrap();
    scalar_bytes[7] = r_be;
    let mut out = vec![[0xeeu8; 96]; lengths.len()];
    let mut error_index = usize::MAX;
    // SAFETY: sizes as documented.
    let code = unsafe {
        ffi::gpu_crypto_g1_msm_batch(
            handle.0,
            point_bytes.as_ptr().cast(),
            scalar_bytes.as_ptr().cast(),
            lengths.as_ptr(),
            lengths.len(),
            out.as_mut_ptr().cast(),
            &mut error_index,
        )
    };
    assert_eq!(code, Status::InvalidScalar as i32);
    assert_eq!(error_index, 7);
    assert!(out.iter().all(|p| *p == [0xee; 96]), "outputs untouched");
    let mut bad_points = point_bytes.clone();
    bad_points[20][95] ^= 1;
    let mut out = vec![[0xeeu8; 96]; lengths.len()];
    let mut error_index = usize::MAX;
    // SAFETY: sizes as documented.
    let code = unsafe {
        ffi::gpu_crypto_g1_msm_batch(
            handle.0,
            bad_points.as_ptr().cast(),
            scalar_bytes.as_ptr().cast(),
            lengths.as_ptr(),
            lengths.len(),
            out.as_mut_ptr().cast(),
            &mut error_index,
        )
    };
    assert_eq!(code, Status::InvalidPoint as i32);
    assert_eq!(error_index, 20, "points are checked before scalars");
    assert!(last_error().contains("point 20"), "{}", last_error());
    assert!(out.iter().all(|p| *p == [0xee; 96]), "outputs untouched");
}

/// `gpu_crypto_g1_msm_shared_u8` on the CPU engine.
fn msm_shared_u8(
    handle: &Handle,
    bases: &[[u8; 96]],
    scalars: &[u8],
    rows: usize,
    out: &mut [[u8; 96]],
    error_index: &mut usize,
) -> i32 {
    // SAFETY: bases.len() * 96 and scalars.len() readable bytes; `out` holds what the
    // callers pass for `rows` (the tests size it so, or make the call fail first).
    unsafe {
        ffi::gpu_crypto_g1_msm_shared_u8(
            handle.0,
            bases.as_ptr().cast(),
            bases.len(),
            scalars.as_ptr(),
            scalars.len(),
            rows,
            out.as_mut_ptr().cast(),
            error_index,
        )
    }
}

#[test]
fn msm_shared_u8_matches_the_reference_and_rejects_bad_inputs_whole() {
    let handle = Handle::new("\"cpu\"");
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let (n, rows) = (37usize, 6usize);
    let mut bases: Vec<G1Affine> = (0..n).map(|_| random_point(&mut rng)).collect();
    // Adversarial bases: the identity, a duplicate, and a base beside its negation.
    bases[3] = G1Affine::identity();
    bases[9] = bases[8];
    bases[11] = -bases[10];
    let mut scalars = vec![0u8; n * rows];
    rng.fill(&mut scalars[..]);
    scalars[..n].fill(255); // row 0: 255 everywhere
    scalars[n..2 * n].fill(0); // row 1: all zero
    let base_bytes: Vec<[u8; 96]> = bases.iter().map(G1Affine::to_uncompressed).collect();
    let mut out = vec![[0u8; 96]; rows];
    let mut error_index = usize::MAX;
    let code = msm_shared_u8(
        &handle,
        &base_bytes,
        &scalars,
        rows,
        &mut out,
        &mut error_index,
    );
    assert_eq!(code, Status::Ok as i32, "{}", last_error());
    for k in 0..rows {
        let row = &scalars[k * n..(k + 1) * n];
        let naive: G1Projective = bases
            .iter()
            .zip(row)
            .map(|(p, &s)| G1Projective::from(p) * Scalar::from(u64::from(s)))
            .sum();
        assert_eq!(out[k], G1Affine::from(naive).to_uncompressed(), "row {k}");
        let reference = nidkg::msm::msm_shared_bases_u8(&bases, row);
        assert_eq!(
            out[k],
            G1Affine::from(reference).to_uncompressed(),
            "row {k}"
        );
    }
    assert_eq!(out[1], G1Affine::identity().to_uncompressed());

    // No rows; no bases (every row is the identity).
    let code = msm_shared_u8(&handle, &base_bytes, &[], 0, &mut [], &mut error_index);
    assert_eq!(code, Status::Ok as i32, "{}", last_error());
    let mut out = vec![[0u8; 96]; 2];
    let code = msm_shared_u8(&handle, &[], &[], 2, &mut out, &mut error_index);
    assert_eq!(code, Status::Ok as i32, "{}", last_error());
    assert!(
        out.iter()
            .all(|p| *p == G1Affine::identity().to_uncompressed())
    );

    // Whole-call errors leave the outputs untouched: a scalar count that is not
    // rows * bases, then a base off the curve (with its index).
    let mut out = vec![[0xeeu8; 96]; rows];
    let code = msm_shared_u8(
        &handle,
        &base_bytes,
        &scalars[..n * rows - 1],
        rows,
        &mut out,
        &mut error_index,
    );
    assert_eq!(code, Status::Length as i32);
    assert!(last_error().contains("scalars"), "{}", last_error());
    assert!(out.iter().all(|p| *p == [0xee; 96]), "outputs untouched");
    let mut bad = base_bytes.clone();
    bad[20][95] ^= 1;
    let mut error_index = usize::MAX;
    let code = msm_shared_u8(&handle, &bad, &scalars, rows, &mut out, &mut error_index);
    assert_eq!(code, Status::InvalidPoint as i32);
    assert_eq!(error_index, 20);
    assert!(out.iter().all(|p| *p == [0xee; 96]), "outputs untouched");
    // NULL scalars with a length.
    // SAFETY: the library checks the NULL pointer before reading.
    let code = unsafe {
        ffi::gpu_crypto_g1_msm_shared_u8(
            handle.0,
            base_bytes.as_ptr().cast(),
            n,
            ptr::null(),
            n * rows,
            rows,
            out.as_mut_ptr().cast(),
            ptr::null_mut(),
        )
    };
    assert_eq!(code, Status::NullPointer as i32);
}

/// Products built to be the identity (`e(aP, bQ) e(-abP, Q)`) and not (`ab + 1`), an empty
/// product and one with an identity point, through the C entry against the engine; then a
/// bad point and an index outside the table fail the whole call with outputs untouched.
#[test]
fn pairing_products_match_the_engine_and_reject_bad_inputs_whole() {
    let handle = Handle::new("\"cpu\"");
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let b: Vec<Scalar> = (0..3).map(|_| nidkg::random_scalar(&mut rng)).collect();
    let mut g2 = vec![G2Affine::generator()];
    g2.extend(b.iter().map(|b| G2Affine::from(G2Affine::generator() * b)));
    let mut products: Vec<Vec<(G1Affine, usize)>> = Vec::new();
    let mut expected = Vec::new();
    for k in 0..6 {
        let j = k % 3;
        let a = nidkg::random_scalar(&mut rng);
        let ab = a * b[j]
            + if k % 2 == 1 {
                Scalar::one()
            } else {
                Scalar::zero()
            };
        products.push(vec![
            (G1Affine::from(G1Affine::generator() * a), 1 + j),
            (G1Affine::from(G1Affine::generator() * -ab), 0),
        ]);
        expected.push(k % 2 == 0);
    }
    products.push(Vec::new());
    expected.push(true);
    products.push(vec![(G1Affine::identity(), 2)]);
    expected.push(true);

    let call = |g2: &[[u8; 192]], products: &[Vec<([u8; 96], usize)>], out: &mut [u8]| {
        let lengths: Vec<usize> = products.iter().map(Vec::len).collect();
        let g1: Vec<[u8; 96]> = products.iter().flatten().map(|(p, _)| *p).collect();
        let index: Vec<usize> = products.iter().flatten().map(|(_, i)| *i).collect();
        let mut error_index = usize::MAX;
        // SAFETY: sizes as documented.
        let code = unsafe {
            ffi::gpu_crypto_pairing_products_are_identity(
                handle.0,
                g2.as_ptr().cast(),
                g2.len(),
                g1.as_ptr().cast(),
                index.as_ptr(),
                lengths.as_ptr(),
                lengths.len(),
                out.as_mut_ptr(),
                &mut error_index,
            )
        };
        (code, error_index)
    };
    let g2_bytes: Vec<[u8; 192]> = g2.iter().map(G2Affine::to_uncompressed).collect();
    let encoded: Vec<Vec<([u8; 96], usize)>> = products
        .iter()
        .map(|p| p.iter().map(|(g, i)| (g.to_uncompressed(), *i)).collect())
        .collect();
    let mut out = vec![0xeeu8; products.len()];
    let (code, _) = call(&g2_bytes, &encoded, &mut out);
    assert_eq!(code, Status::Ok as i32, "{}", last_error());
    let verdicts: Vec<bool> = out.iter().map(|v| *v == 1).collect();
    assert!(out.iter().all(|v| *v <= 1), "{out:?}");
    assert_eq!(verdicts, expected);
    let engine = Engine::cpu_only()
        .pairing_products_are_identity(PairingProducts {
            g2: &g2,
            products: &products,
        })
        .expect("engine");
    assert_eq!(verdicts, engine);

    // A G1 point off the curve (pair 3 of the flattened list), then a G2 point off the
    // twist, then an index past the table.
    let mut bad = encoded.clone();
    bad[1][1].0[95] ^= 1;
    let mut out = vec![0xeeu8; products.len()];
    let (code, error_index) = call(&g2_bytes, &bad, &mut out);
    assert_eq!(code, Status::InvalidPoint as i32);
    assert_eq!(error_index, 3);
    assert!(out.iter().all(|v| *v == 0xee), "outputs untouched");
    let mut bad_g2 = g2_bytes.clone();
    bad_g2[2][191] ^= 1;
    let (code, error_index) = call(&bad_g2, &encoded, &mut out);
    assert_eq!(code, Status::InvalidPoint as i32);
    assert_eq!(error_index, 2);
    assert!(last_error().contains("G2 point 2"), "{}", last_error());
    let mut bad = encoded.clone();
    bad[0][0].1 = g2.len();
    let (code, _) = call(&g2_bytes, &bad, &mut out);
    assert_eq!(code, Status::InvalidArgument as i32);
    assert!(
        last_error().contains("names G2 point 4"),
        "{}",
        last_error()
    );
    assert!(out.iter().all(|v| *v == 0xee), "outputs untouched");
}

#[test]
fn bls_verify_and_sha256_match_the_engine() {
    let handle = Handle::new("\"cpu\"");
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    struct Case {
        signature: [u8; 48],
        public_key: [u8; 96],
        message: Vec<u8>,
    }
    let mut cases = Vec::new();
    for i in 0..12 {
        let secret = nidkg::random_scalar(&mut rng);
        let message = format!("message {i}").into_bytes();
        let h = gpu_crypto::cpu::hash_message_to_g1(BlsScheme::MultiSig, &message);
        let mut signature = G1Affine::from(h * secret).to_compressed();
        let mut public_key = G2Affine::from(G2Affine::generator() * secret).to_compressed();
        let mut message = message;
        match i % 4 {
            1 => message.push(b'!'),
            2 => signature[0] &= 0x7f,
            3 => public_key[0] |= 0x40,
            _ => {}
        }
        cases.push(Case {
            signature,
            public_key,
            message,
        });
    }
    let signatures: Vec<[u8; 48]> = cases.iter().map(|c| c.signature).collect();
    let public_keys: Vec<[u8; 96]> = cases.iter().map(|c| c.public_key).collect();
    let messages: Vec<*const u8> = cases.iter().map(|c| c.message.as_ptr()).collect();
    let lens: Vec<usize> = cases.iter().map(|c| c.message.len()).collect();
    let mut codes = vec![0xeeu8; cases.len()];
    // SAFETY: sizes as documented.
    let code = unsafe {
        ffi::gpu_crypto_bls_verify_batch(
            handle.0,
            signatures.as_ptr().cast(),
            public_keys.as_ptr().cast(),
            messages.as_ptr(),
            lens.as_ptr(),
            cases.len(),
            abi::SCHEME_MULTI_SIG,
            codes.as_mut_ptr(),
        )
    };
    assert_eq!(code, Status::Ok as i32, "{}", last_error());
    let items: Vec<BlsItem<'_>> = cases
        .iter()
        .map(|c| BlsItem {
            signature: &c.signature,
            public_key: &c.public_key,
            message: &c.message,
            scheme: BlsScheme::MultiSig,
        })
        .collect();
    let reference = Engine::cpu_only()
        .bls_verify_batch(&items)
        .expect("reference");
    let expected: Vec<u8> = reference.iter().map(abi::verify_code).collect();
    assert_eq!(codes, expected);
    assert_eq!(&codes[..4], &[0, 1, 0x11, 0x22]);

    // SHA-256 with the chunk separator.
    let chunks: Vec<Vec<u8>> = [0usize, 1, 64, 1000, 1 << 20]
        .iter()
        .map(|&len| {
            let mut c = vec![0u8; len];
            rng.fill(&mut c[..]);
            c
        })
        .collect();
    let pointers: Vec<*const u8> = chunks.iter().map(|c| c.as_ptr()).collect();
    let lens: Vec<usize> = chunks.iter().map(Vec::len).collect();
    let mut out = vec![[0u8; 32]; chunks.len()];
    let ds = b"ic-state-chunk";
    // SAFETY: sizes as documented.
    let code = unsafe {
        ffi::gpu_crypto_sha256_chunks(
            handle.0,
            ds.as_ptr(),
            ds.len(),
            pointers.as_ptr(),
            lens.as_ptr(),
            chunks.len(),
            out.as_mut_ptr().cast(),
        )
    };
    assert_eq!(code, Status::Ok as i32, "{}", last_error());
    let slices: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
    let reference = Engine::cpu_only()
        .sha256_chunks(&DomainSeparator::new("ic-state-chunk").unwrap(), &slices)
        .expect("reference");
    assert_eq!(out, reference);

    // A separator of 256 bytes does not fit its length byte.
    let long = [b'a'; 256];
    // SAFETY: sizes as documented; rejected before any output.
    let code = unsafe {
        ffi::gpu_crypto_sha256_chunks(
            handle.0,
            long.as_ptr(),
            long.len(),
            pointers.as_ptr(),
            lens.as_ptr(),
            chunks.len(),
            out.as_mut_ptr().cast(),
        )
    };
    assert_eq!(code, Status::InvalidArgument as i32);
    assert_eq!(out, reference, "outputs untouched");
}

#[test]
fn report_json_size_protocol() {
    let handle = Handle::new("\"cpu\"");
    let mut required = 0usize;
    // SAFETY: size query.
    let code =
        unsafe { ffi::gpu_crypto_engine_report_json(handle.0, ptr::null_mut(), 0, &mut required) };
    assert_eq!(code, Status::BufferTooSmall as i32);
    let mut small = vec![0x55 as c_char; required - 1];
    // SAFETY: a buffer of required - 1 bytes.
    let code = unsafe {
        ffi::gpu_crypto_engine_report_json(handle.0, small.as_mut_ptr(), small.len(), &mut required)
    };
    assert_eq!(code, Status::BufferTooSmall as i32);
    assert!(small.iter().all(|&b| b == 0x55), "untouched when too small");
    let mut buf = vec![0 as c_char; required];
    // SAFETY: `required` bytes.
    let code = unsafe {
        ffi::gpu_crypto_engine_report_json(handle.0, buf.as_mut_ptr(), buf.len(), ptr::null_mut())
    };
    assert_eq!(code, Status::Ok as i32);
    // SAFETY: NUL-terminated.
    let json = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap();
    let expected = serde_json::to_string(&Engine::cpu_only().report()).unwrap();
    assert_eq!(json, expected);
}

/// The built libgpu_crypto.so: next to this test binary (target/<profile>/deps) or one
/// level up, where cargo places the package's cdylib.
fn built_cdylib() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let deps = exe.parent()?;
    [
        deps.join("libgpu_crypto.so"),
        deps.parent()?.join("libgpu_crypto.so"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

#[test]
fn c_program_against_the_header_and_the_built_library() {
    let Some(library) = built_cdylib() else {
        panic!(
            "libgpu_crypto.so not found next to {:?}",
            std::env::current_exe()
        );
    };
    // A C compiler is a build prerequisite (README), so its absence is a failure.
    Command::new("cc")
        .arg("--version")
        .output()
        .expect("a C compiler (cc) to build the C ABI program");
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = dir.path().join("abi_smoke");
    let lib_dir = library.parent().expect("library dir");
    let compile = Command::new("cc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(manifest_dir.join("tests/c/abi_smoke.c"))
        .arg("-I")
        .arg(manifest_dir.join("include"))
        .arg("-L")
        .arg(lib_dir)
        .arg("-lgpu_crypto")
        .output()
        .expect("run cc");
    assert!(
        compile.status.success(),
        "cc failed:\n{}",
        String::from_utf8_lossy(&compile.stderr)
    );
    let run = Command::new(&exe)
        .env("LD_LIBRARY_PATH", lib_dir)
        .output()
        .expect("run the C program");
    assert!(
        run.status.success(),
        "C program failed:\n{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&run.stdout), "C ABI OK\n");
}

/// The value of `#define NAME <n>u` or of the enum entry `NAME = <n>` in the header.
fn header_value(header: &str, name: &str) -> u64 {
    header
        .lines()
        .find_map(|line| {
            let line = line.trim();
            let rest = line
                .strip_prefix("#define ")
                .unwrap_or(line)
                .strip_prefix(name)?;
            let value = rest.trim_start_matches([' ', '=']);
            let digits: String = value
                .chars()
                .take_while(char::is_ascii_alphanumeric)
                .collect();
            let digits = digits.trim_end_matches('u');
            match digits.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).ok(),
                None => digits.parse().ok(),
            }
        })
        .unwrap_or_else(|| panic!("{name} not found in gpu_crypto.h"))
}

#[test]
fn header_constants_match_the_rust() {
    let header =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("include/gpu_crypto.h"))
            .expect("include/gpu_crypto.h");
    assert_eq!(
        header_value(&header, "GPU_CRYPTO_ABI_VERSION"),
        u64::from(ffi::ABI_VERSION)
    );
    let statuses = [
        ("GPU_CRYPTO_OK", Status::Ok),
        ("GPU_CRYPTO_ERR_NULL_POINTER", Status::NullPointer),
        ("GPU_CRYPTO_ERR_LENGTH", Status::Length),
        ("GPU_CRYPTO_ERR_INVALID_ARGUMENT", Status::InvalidArgument),
        ("GPU_CRYPTO_ERR_INVALID_POINT", Status::InvalidPoint),
        ("GPU_CRYPTO_ERR_INVALID_SCALAR", Status::InvalidScalar),
        ("GPU_CRYPTO_ERR_BUFFER_TOO_SMALL", Status::BufferTooSmall),
        ("GPU_CRYPTO_ERR_GPU_UNAVAILABLE", Status::GpuUnavailable),
        ("GPU_CRYPTO_ERR_GPU_FAILED", Status::GpuFailed),
        (
            "GPU_CRYPTO_ERR_NO_GPU_IMPLEMENTATION",
            Status::NoGpuImplementation,
        ),
        ("GPU_CRYPTO_ERR_INTERNAL", Status::Internal),
    ];
    assert_eq!(
        statuses.len(),
        Status::ALL.len(),
        "every status is in the header"
    );
    for (name, status) in statuses {
        assert_eq!(header_value(&header, name), status as u64, "{name}");
    }
    let decode = [
        (
            "GPU_CRYPTO_DECODE_NOT_COMPRESSED",
            DecodeError::NotCompressed,
        ),
        ("GPU_CRYPTO_DECODE_BAD_INFINITY", DecodeError::BadInfinity),
        ("GPU_CRYPTO_DECODE_NON_CANONICAL", DecodeError::NonCanonical),
        ("GPU_CRYPTO_DECODE_NOT_ON_CURVE", DecodeError::NotOnCurve),
        (
            "GPU_CRYPTO_DECODE_NOT_IN_SUBGROUP",
            DecodeError::NotInSubgroup,
        ),
    ];
    assert_eq!(decode.len(), DecodeError::ALL.len());
    for (name, e) in decode {
        assert_eq!(header_value(&header, name), u64::from(e.code()), "{name}");
    }
    assert_eq!(header_value(&header, "GPU_CRYPTO_DECODE_OK"), 0);
    assert_eq!(header_value(&header, "GPU_CRYPTO_VERIFY_OK"), 0);
    for (name, value) in [
        ("GPU_CRYPTO_VERIFY_INVALID", abi::VERIFY_INVALID),
        (
            "GPU_CRYPTO_VERIFY_SIGNATURE_DECODE",
            abi::VERIFY_SIGNATURE_DECODE,
        ),
        (
            "GPU_CRYPTO_VERIFY_PUBLIC_KEY_DECODE",
            abi::VERIFY_PUBLIC_KEY_DECODE,
        ),
    ] {
        assert_eq!(header_value(&header, name), u64::from(value), "{name}");
    }
    assert_eq!(
        header_value(&header, "GPU_CRYPTO_SCHEME_THRESHOLD"),
        u64::from(abi::SCHEME_THRESHOLD)
    );
    assert_eq!(
        header_value(&header, "GPU_CRYPTO_SCHEME_MULTI_SIG"),
        u64::from(abi::SCHEME_MULTI_SIG)
    );
}
