//! The C ABI of `libgpu_crypto.so`, declared in `include/gpu_crypto.h` and described in
//! `docs/c-abi.md`; the replica reaches it through the `gpu-crypto-client` crate.
//!
//! Every entry point catches panics (none crosses the boundary), checks pointers and
//! lengths, and writes its outputs only after the whole call has succeeded: a call that
//! returns an error leaves every output buffer untouched. The reason for the last error on
//! the calling thread is kept for `gpu_crypto_last_error`.

use crate::{
    BackendChoice, BlsItem, DecodeError, DomainSeparator, Engine, EngineError, G1Affine, G2Affine,
    MsmInput, PairingProducts, Policy, Scalar,
};
pub use gpu_crypto_api::abi::{ABI_VERSION, Status};
use gpu_crypto_api::abi::{scheme_of_code, verify_code};
use rayon::prelude::*;
use std::cell::RefCell;
use std::ffi::{CStr, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The opaque engine handle (`gpu_crypto_engine` in C).
pub struct GpuCryptoEngine {
    engine: Engine,
}

/// A failed call: its status and the reason kept for `gpu_crypto_last_error`.
struct Failure {
    status: Status,
    message: String,
    /// The index of the offending input item, where one is to blame.
    index: Option<usize>,
}

impl Failure {
    fn new(status: Status, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
            index: None,
        }
    }

    fn at(mut self, index: usize) -> Failure {
        self.index = Some(index);
        self
    }
}

impl From<EngineError> for Failure {
    fn from(e: EngineError) -> Failure {
        let status = match &e {
            EngineError::LengthMismatch { .. } | EngineError::ScalarCountMismatch { .. } => {
                Status::Length
            }
            EngineError::GpuUnavailable { .. } => Status::GpuUnavailable,
            EngineError::GpuFailed { .. } | EngineError::GpuWait { .. } => Status::GpuFailed,
            EngineError::NoGpuImplementation { .. } => Status::NoGpuImplementation,
            EngineError::PairingIndex { .. }
            | EngineError::DomainSeparatorTooLong { .. }
            | EngineError::Policy(_) => Status::InvalidArgument,
        };
        Failure::new(status, e.to_string())
    }
}

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

fn set_last_error(message: String) {
    LAST_ERROR.with(|last| *last.borrow_mut() = message);
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic payload".to_string());
    format!("internal error (panic caught at the C boundary): {text}")
}

/// Runs one entry point: catches panics and records the reason of any failure.
fn entry(call: impl FnOnce() -> Result<(), Failure>) -> i32 {
    let failure = match catch_unwind(AssertUnwindSafe(call)) {
        Ok(Ok(())) => return Status::Ok as i32,
        Ok(Err(failure)) => failure,
        Err(payload) => Failure::new(Status::Internal, panic_message(payload.as_ref())),
    };
    set_last_error(failure.message);
    failure.status as i32
}

/// The byte size of `len` items of `T`, if it fits what a slice may span.
fn byte_size<T>(len: usize) -> Option<usize> {
    len.checked_mul(size_of::<T>())
        .filter(|&bytes| bytes <= isize::MAX as usize)
}

/// # Safety
/// When `len > 0`, `ptr` must point to `len` readable, initialised `T` that stay valid and
/// unmodified for `'a`.
unsafe fn input<'a, T>(ptr: *const T, len: usize, what: &str) -> Result<&'a [T], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Failure::new(
            Status::NullPointer,
            format!("{what} is NULL with a length of {len}"),
        ));
    }
    if byte_size::<T>(len).is_none() {
        return Err(Failure::new(
            Status::Length,
            format!("{what}: {len} items overflow the address space"),
        ));
    }
    // SAFETY: non-null, size checked, validity promised by the caller.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// # Safety
/// When `len > 0`, `ptr` must point to `len` writable `T`, not overlapping any input.
unsafe fn output<'a, T>(ptr: *mut T, len: usize, what: &str) -> Result<&'a mut [T], Failure> {
    if len == 0 {
        return Ok(&mut []);
    }
    if ptr.is_null() {
        return Err(Failure::new(
            Status::NullPointer,
            format!("{what} is NULL with a length of {len}"),
        ));
    }
    if byte_size::<T>(len).is_none() {
        return Err(Failure::new(
            Status::Length,
            format!("{what}: {len} items overflow the address space"),
        ));
    }
    // SAFETY: non-null, size checked, validity promised by the caller.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, len) })
}

/// # Safety
/// `engine` must be NULL or a live handle from `gpu_crypto_engine_new`.
unsafe fn engine_ref<'a>(engine: *const GpuCryptoEngine) -> Result<&'a Engine, Failure> {
    // SAFETY: a live handle per the caller's contract.
    match unsafe { engine.as_ref() } {
        Some(handle) => Ok(&handle.engine),
        None => Err(Failure::new(
            Status::NullPointer,
            "the engine handle is NULL",
        )),
    }
}

/// Copies `text` and a terminating NUL into `buf` if it fits; always reports the size.
///
/// # Safety
/// `buf` must be NULL or point to `buf_len` writable bytes; `required` NULL or writable.
unsafe fn write_c_string(
    text: &str,
    buf: *mut c_char,
    buf_len: usize,
    required: *mut usize,
) -> Result<(), Failure> {
    let needed = text.len() + 1;
    // SAFETY: NULL or writable per the caller's contract.
    if let Some(required) = unsafe { required.as_mut() } {
        *required = needed;
    }
    if buf.is_null() || buf_len < needed {
        return Err(Failure::new(
            Status::BufferTooSmall,
            format!("the buffer holds {buf_len} bytes; {needed} are required"),
        ));
    }
    // SAFETY: buf is non-null with at least `needed` writable bytes.
    let out = unsafe { output(buf.cast::<u8>(), needed, "buffer") }?;
    out[..text.len()].copy_from_slice(text.as_bytes());
    out[text.len()] = 0;
    Ok(())
}

/// The version of this ABI; callers check it before any other call.
#[unsafe(no_mangle)]
pub extern "C" fn gpu_crypto_abi_version() -> u32 {
    ABI_VERSION
}

/// Parses a policy: NULL or empty is the `auto` policy; a JSON string `"cpu"`, `"gpu"` or
/// `"auto"` is that backend for every operation; otherwise a full `Policy` object.
fn parse_policy(text: Option<&str>) -> Result<Policy, String> {
    let text = text.map(str::trim).unwrap_or("");
    if text.is_empty() {
        return Ok(Policy::auto());
    }
    if let Ok(backend) = serde_json::from_str::<BackendChoice>(text) {
        return Ok(Policy::with_backend(backend));
    }
    serde_json::from_str::<Policy>(text).map_err(|e| format!("invalid policy JSON: {e}"))
}

/// Creates an engine from a policy (see `parse_policy`). Returns NULL on failure with the
/// reason, NUL-terminated and truncated to fit, in `err` (when `err` is non-NULL and
/// `err_len > 0`).
///
/// # Safety
/// `policy_json` must be NULL or a NUL-terminated string; `err` NULL or `err_len` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gpu_crypto_engine_new(
    policy_json: *const c_char,
    err: *mut c_char,
    err_len: usize,
) -> *mut GpuCryptoEngine {
    let created = catch_unwind(AssertUnwindSafe(|| -> Result<Engine, String> {
        let text = if policy_json.is_null() {
            None
        } else {
            // SAFETY: a NUL-terminated string per the caller's contract.
            let raw = unsafe { CStr::from_ptr(policy_json) };
            Some(
                raw.to_str()
                    .map_err(|e| format!("the policy is not UTF-8: {e}"))?,
            )
        };
        let policy = parse_policy(text)?;
        Engine::new(policy).map_err(|e| e.to_string())
    }));
    let message = match created {
        Ok(Ok(engine)) => return Box::into_raw(Box::new(GpuCryptoEngine { engine })),
        Ok(Err(message)) => message,
        Err(payload) => panic_message(payload.as_ref()),
    };
    if !err.is_null() && err_len > 0 {
        let n = message.len().min(err_len - 1);
        // SAFETY: err has err_len writable bytes per the caller's contract; n < err_len.
        unsafe {
            std::ptr::copy_nonoverlapping(message.as_ptr(), err.cast::<u8>(), n);
            *err.add(n) = 0;
        }
    }
    set_last_error(message);
    std::ptr::null_mut()
}

/// Frees an engine. NULL is ignored.
///
/// # Safety
/// `engine` must be NULL or a handle from `gpu_crypto_engine_new` not yet freed, and no
/// other call may be using it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gpu_crypto_engine_free(engine: *mut GpuCryptoEngine) {
    if engine.is_null() {
        return;
    }
    // SAFETY: a live handle from Box::into_raw, freed once, per the caller's contract.
    let _ = catch_unwind(AssertUnwindSafe(|| drop(unsafe { Box::from_raw(engine) })));
}

/// Copies the reason of the calling thread's last failed call (NUL-terminated) into `buf`;
/// see `write_c_string` for the size protocol.
///
/// # Safety
/// `buf` must be NULL or `buf_len` writable bytes; `required` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gpu_crypto_last_error(
    buf: *mut c_char,
    buf_len: usize,
    required: *mut usize,
) -> i32 {
    let text = LAST_ERROR.with(|last| last.borrow().clone());
    // Not through `entry`: a too-small buffer must not overwrite the message it reports.
    match catch_unwind(AssertUnwindSafe(|| unsafe {
        // SAFETY: forwarded caller contract.
        write_c_string(&text, buf, buf_len, required)
    })) {
        Ok(Ok(())) => Status::Ok as i32,
        Ok(Err(failure)) => failure.status as i32,
        Err(_) => Status::Internal as i32,
    }
}

/// The engine report (backend per operation and why, GPU status) as JSON.
///
/// # Safety
/// `engine` a live handle; `buf` NULL or `buf_len` writable bytes; `required` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gpu_crypto_engine_report_json(
    engine: *const GpuCryptoEngine,
    buf: *mut c_char,
    buf_len: usize,
    required: *mut usize,
) -> i32 {
    entry(|| {
        // SAFETY: forwarded caller contract.
        let engine = unsafe { engine_ref(engine) }?;
        let json = serde_json::to_string(&engine.report())
            .map_err(|e| Failure::new(Status::Internal, e.to_string()))?;
        // SAFETY: forwarded caller contract.
        unsafe { write_c_string(&json, buf, buf_len, required) }
    })
}

/// The engine's counters (calls and items per backend, fallbacks, GPU errors) as JSON.
///
/// # Safety
/// As `gpu_crypto_engine_report_json`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gpu_crypto_engine_stats_json(
    engine: *const GpuCryptoEngine,
    buf: *mut c_char,
    buf_len: usize,
    required: *mut usize,
) -> i32 {
    entry(|| {
        // SAFETY: forwarded caller contract.
        let engine = unsafe { engine_ref(engine) }?;
        let json = serde_json::to_string(&engine.stats())
            .map_err(|e| Failure::new(Status::Internal, e.to_string()))?;
        // SAFETY: forwarded caller contract.
        unsafe { write_c_string(&json, buf, buf_len, required) }
    })
}

/// Decompresses `n` points of 48 bytes; writes `n * 96` bytes of uncompressed points (zero
/// for a rejected item) and `n` codes (0 valid, else `DecodeError::code`).
///
/// # Safety
/// `engine` a live handle; `input` `n * 48` readable bytes; `out_uncompressed` `n * 96` and
/// `out_codes` `n` writable bytes, overlapping no input.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gpu_crypto_g1_decompress(
    engine: *const GpuCryptoEngine,
    input_compressed: *const u8,
    n: usize,
    out_uncompressed: *mut u8,
    out_codes: *mut u8,
) -> i32 {
    entry(|| {
        // SAFETY: `engine` is NULL or a live handle (the caller's contract).
        let engine = unsafe { engine_ref(engine) }?;
        // SAFETY: `input_compressed` points to `n` readable items that stay unmodified during
        // the call (the caller's contract); `input` rejects NULL and overflowing lengths.
        let points = unsafe { input(input_compressed.cast::<[u8; 48]>(), n, "input") }?;
        // SAFETY: `out_uncompressed` points to `n` writable items overlapping no input (the
        // caller's contract); `output` rejects NULL and overflowing lengths.
        let out_points =
            unsafe { output(out_uncompressed.cast::<[u8; 96]>(), n, "out_uncompressed") }?;
        // SAFETY: `out_codes` points to `n` writable items overlapping no input (the caller's
        // contract); `output` rejects NULL and overflowing lengths.
        let out_codes = unsafe { output(out_codes, n, "out_codes") }?;
        let results = engine.g1_decompress(points)?;
        write_decoded(&results, out_points, out_codes, G1Affine::to_uncompressed)
    })
}

/// Decompresses `n` G2 points of 96 bytes; writes `n * 192` bytes of uncompressed points
/// (zero for a rejected item) and `n` codes (0 valid, else `DecodeError::code`). Accepts
/// exactly what `ic_bls12_381`'s `G2Affine::from_compressed` accepts.
///
/// # Safety
/// `engine` a live handle; `input` `n * 96` readable bytes; `out_uncompressed` `n * 192` and
/// `out_codes` `n` writable bytes, overlapping no input.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gpu_crypto_g2_decompress(
    engine: *const GpuCryptoEngine,
    input_compressed: *const u8,
    n: usize,
    out_uncompressed: *mut u8,
    out_codes: *mut u8,
) -> i32 {
    entry(|| {
        // SAFETY: `engine` is NULL or a live handle (the caller's contract).
        let engine = unsafe { engine_ref(engine) }?;
        // SAFETY: `input_compressed` points to `n` readable items that stay unmodified during
        // the call (the caller's contract); `input` rejects NULL and overflowing lengths.
        let points = unsafe { input(input_compressed.cast::<[u8; 96]>(), n, "input") }?;
        // SAFETY: `out_uncompressed` points to `n` writable items overlapping no input (the
        // caller's contract); `output` rejects NULL and overflowing lengths.
        let out_points =
            unsafe { output(out_uncompressed.cast::<[u8; 192]>(), n, "out_uncompressed") }?;
        // SAFETY: `out_codes` points to `n` writable items overlapping no input (the caller's
        // contract); `output` rejects NULL and overflowing lengths.
        let out_codes = unsafe { output(out_codes, n, "out_codes") }?;
        let results = engine.g2_decompress(points)?;
        write_decoded(&results, out_points, out_codes, G2Affine::to_uncompressed)
    })
}

/// The engine returned one result per input: a count mismatch is an internal error,
/// never a short output reported as success.
fn one_per_input<T>(results: &[T], inputs: usize, noun: &str, what: &str) -> Result<(), Failure> {
    if results.len() == inputs {
        return Ok(());
    }
    Err(Failure::new(
        Status::Internal,
        format!("{} {noun} for {inputs} {what}", results.len()),
    ))
}

/// Writes per-item decompression results to the caller's buffers: the uncompressed point
/// and code 0, or zeros and the item's `DecodeError::code`.
fn write_decoded<P, const N: usize>(
    results: &[Result<P, DecodeError>],
    out_points: &mut [[u8; N]],
    out_codes: &mut [u8],
    uncompressed: impl Fn(&P) -> [u8; N],
) -> Result<(), Failure> {
    one_per_input(results, out_points.len(), "results", "points")?;
    for ((result, point), code) in results.iter().zip(out_points).zip(out_codes) {
        (*point, *code) = match result {
            Ok(p) => (uncompressed(p), 0),
            Err(e) => ([0; N], e.code()),
        };
    }
    Ok(())
}

/// Parses uncompressed points of either group with full validation (on the curve, in the
/// subgroup); a bad one fails the whole call with its index.
fn parse_uncompressed<P: Send, const N: usize>(
    bytes: &[[u8; N]],
    group: &str,
    decode: impl Fn(&[u8; N]) -> Option<P> + Sync + Send,
) -> Result<Vec<P>, Failure> {
    let parsed: Vec<Option<P>> = bytes.par_iter().map(decode).collect();
    parsed
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            p.ok_or_else(|| {
                Failure::new(
                    Status::InvalidPoint,
                    format!("{group} point {i} is not a valid uncompressed {group} point of the subgroup"),
                )
                .at(i)
            })
        })
        .collect()
}

fn parse_points(bytes: &[[u8; 96]]) -> Result<Vec<G1Affine>, Failure> {
    parse_uncompressed(bytes, "G1", |b| {
        Option::from(G1Affine::from_uncompressed(b))
    })
}

fn parse_g2_points(bytes: &[[u8; 192]]) -> Result<Vec<G2Affine>, Failure> {
    parse_uncompressed(bytes, "G2", |b| {
        Option::from(G2Affine::from_uncompressed(b))
    })
}

/// Parses canonical big-endian scalars.
fn parse_scalars(bytes: &[[u8; 32]]) -> Result<Vec<Scalar>, Failure> {
    bytes
        .iter()
        .enumerate()
        .map(|(i, be)| {
            let mut le = *be;
            le.reverse();
            Option::from(Scalar::from_bytes(&le)).ok_or_else(|| {
                Failure::new(
                    Status::InvalidScalar,
                    format!("scalar {i} is not below the group order r"),
                )
                .at(i)
            })
        })
        .collect()
}

/// `n_msms` independent MSMs. MSM `j` takes the next `lengths[j]` points (96 bytes each,
/// uncompressed) and scalars (32 bytes each, big-endian); results are written as `n_msms`
/// uncompressed points of 96 bytes. On `InvalidPoint`/`InvalidScalar` the flat index of
/// the first bad input is written to `out_error_index` (when non-NULL).
///
/// # Safety
/// `engine` a live handle; `lengths` `n_msms` readable values; `points` and `scalars`
/// `sum(lengths) * 96` and `* 32` readable bytes; `out` `n_msms * 96` writable bytes,
/// overlapping no input; `out_error_index` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gpu_crypto_g1_msm_batch(
    engine: *const GpuCryptoEngine,
    points: *const u8,
    scalars: *const u8,
    lengths: *const usize,
    n_msms: usize,
    out: *mut u8,
    out_error_index: *mut usize,
) -> i32 {
    entry(|| {
        // SAFETY: `engine` is NULL or a live handle (the caller's contract).
        let engine = unsafe { engine_ref(engine) }?;
        // SAFETY: `lengths` points to `n_msms` readable items that stay unmodified during the
        // call (the caller's contract); `input` rejects NULL and overflowing lengths.
        let lengths = unsafe { input(lengths, n_msms, "lengths") }?;
        let total = lengths
            .iter()
            .try_fold(0usize, |sum, &len| sum.checked_add(len))
            .ok_or_else(|| Failure::new(Status::Length, "the MSM lengths overflow"))?;
        // SAFETY: `points` points to `total` readable items that stay unmodified during the
        // call (the caller's contract); `input` rejects NULL and overflowing lengths.
        let point_bytes = unsafe { input(points.cast::<[u8; 96]>(), total, "points") }?;
        // SAFETY: `scalars` points to `total` readable items that stay unmodified during the
        // call (the caller's contract); `input` rejects NULL and overflowing lengths.
        let scalar_bytes = unsafe { input(scalars.cast::<[u8; 32]>(), total, "scalars") }?;
        // SAFETY: `out` points to `n_msms` writable items overlapping no input (the caller's
        // contract); `output` rejects NULL and overflowing lengths.
        let out = unsafe { output(out.cast::<[u8; 96]>(), n_msms, "out") }?;
        let record_index = |failure: &Failure| {
            // SAFETY: NULL or writable per the caller's contract.
            if let (Some(slot), Some(index)) = (unsafe { out_error_index.as_mut() }, failure.index)
            {
                *slot = index;
            }
        };
        let all_points = parse_points(point_bytes).inspect_err(record_index)?;
        let all_scalars = parse_scalars(scalar_bytes).inspect_err(record_index)?;
        let mut inputs = Vec::with_capacity(n_msms);
        let mut start = 0;
        for &len in lengths {
            let end = start + len;
            inputs.push(MsmInput {
                points: &all_points[start..end],
                scalars: &all_scalars[start..end],
            });
            start = end;
        }
        let results = engine.g1_msm_batch(&inputs)?;
        one_per_input(&results, n_msms, "results", "MSMs")?;
        for (result, slot) in results.iter().zip(out) {
            *slot = G1Affine::from(result).to_uncompressed();
        }
        Ok(())
    })
}

/// `rows` MSMs over one set of `n_bases` bases (96 bytes each, uncompressed) with 8-bit
/// scalars: result `k` is `sum_p scalars[k * n_bases + p] * bases[p]` (the NI-DKG chunking
/// proof's 32 MSMs of 16n points), written to `out` as `rows` uncompressed points of 96
/// bytes. `n_scalars` must be `rows * n_bases` (`Length` otherwise). On `InvalidPoint` the
/// index of the first bad base is written to `out_error_index` (when non-NULL).
///
/// # Safety
/// `engine` a live handle; `bases` `n_bases * 96` and `scalars` `n_scalars` readable bytes;
/// `out` `rows * 96` writable bytes, overlapping no input; `out_error_index` NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gpu_crypto_g1_msm_shared_u8(
    engine: *const GpuCryptoEngine,
    bases: *const u8,
    n_bases: usize,
    scalars: *const u8,
    n_scalars: usize,
    rows: usize,
    out: *mut u8,
    out_error_index: *mut usize,
) -> i32 {
    entry(|| {
        // SAFETY: `engine` is NULL or a live handle (the caller's contract).
        let engine = unsafe { engine_ref(engine) }?;
        if rows.checked_mul(n_bases) != Some(n_scalars) {
            return Err(Failure::new(
                Status::Length,
                format!("{n_scalars} scalars for {rows} rows of {n_bases} bases"),
            ));
        }
        // SAFETY: `bases` points to `n_bases` readable items that stay unmodified during the
        // call (the caller's contract); `input` rejects NULL and overflowing lengths.
        let base_bytes = unsafe { input(bases.cast::<[u8; 96]>(), n_bases, "bases") }?;
        // SAFETY: `scalars` points to `n_scalars` readable items that stay unmodified during
        // the call (the caller's contract); `input` rejects NULL and overflowing lengths.
        let scalars = unsafe { input(scalars, n_scalars, "scalars") }?;
        // SAFETY: `out` points to `rows` writable items overlapping no input (the caller's
        // contract); `output` rejects NULL and overflowing lengths.
        let out = unsafe { output(out.cast::<[u8; 96]>(), rows, "out") }?;
        let bases = parse_points(base_bytes).inspect_err(|failure| {
            // SAFETY: NULL or writable per the caller's contract.
            if let (Some(slot), Some(index)) = (unsafe { out_error_index.as_mut() }, failure.index)
            {
                *slot = index;
            }
        })?;
        let results = engine.g1_msm_shared_u8(&bases, scalars, rows)?;
        one_per_input(&results, rows, "results", "rows")?;
        let encoded: Vec<[u8; 96]> = results
            .par_iter()
            .map(|r| G1Affine::from(r).to_uncompressed())
            .collect();
        out.copy_from_slice(&encoded);
        Ok(())
    })
}

/// Whether each of `n_products` products of pairings is the identity of GT. The G2 points
/// form a table (`g2`, `n_g2` points of 192 bytes, uncompressed), so that each is
/// prepared once; product `k` takes the next `lengths[k]` pairs, pair `i` being the G1
/// point `g1[i*96..]` (uncompressed) and the table index `g2_index[i]`. Writes one byte
/// per product to `out`: 1 the identity, 0 not. On `InvalidPoint` the index of the first
/// bad point (into `g1`, or into `g2` when the G1 points are all valid) is written to
/// `out_error_index` (when non-NULL); an index outside the table is `InvalidArgument`.
///
/// # Safety
/// `engine` a live handle; `g2` `n_g2 * 192` readable bytes; `lengths` `n_products`
/// readable values; `g1` `sum(lengths) * 96` readable bytes and `g2_index` `sum(lengths)`
/// readable values; `out` `n_products` writable bytes, overlapping no input;
/// `out_error_index` NULL or writable.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn gpu_crypto_pairing_products_are_identity(
    engine: *const GpuCryptoEngine,
    g2: *const u8,
    n_g2: usize,
    g1: *const u8,
    g2_index: *const usize,
    lengths: *const usize,
    n_products: usize,
    out: *mut u8,
    out_error_index: *mut usize,
) -> i32 {
    entry(|| {
        // SAFETY: `engine` is NULL or a live handle (the caller's contract).
        let engine = unsafe { engine_ref(engine) }?;
        // SAFETY: `lengths` points to `n_products` readable items that stay unmodified during
        // the call (the caller's contract); `input` rejects NULL and overflowing lengths.
        let lengths = unsafe { input(lengths, n_products, "lengths") }?;
        let total = lengths
            .iter()
            .try_fold(0usize, |sum, &len| sum.checked_add(len))
            .ok_or_else(|| Failure::new(Status::Length, "the product lengths overflow"))?;
        // SAFETY: `g2` points to `n_g2` readable items that stay unmodified during the call
        // (the caller's contract); `input` rejects NULL and overflowing lengths.
        let g2_bytes = unsafe { input(g2.cast::<[u8; 192]>(), n_g2, "g2") }?;
        // SAFETY: `g1` points to `total` readable items that stay unmodified during the call
        // (the caller's contract); `input` rejects NULL and overflowing lengths.
        let g1_bytes = unsafe { input(g1.cast::<[u8; 96]>(), total, "g1") }?;
        // SAFETY: `g2_index` points to `total` readable items that stay unmodified during the
        // call (the caller's contract); `input` rejects NULL and overflowing lengths.
        let indices = unsafe { input(g2_index, total, "g2_index") }?;
        // SAFETY: `out` points to `n_products` writable items overlapping no input (the
        // caller's contract); `output` rejects NULL and overflowing lengths.
        let out = unsafe { output(out, n_products, "out") }?;
        let record_index = |failure: &Failure| {
            // SAFETY: NULL or writable per the caller's contract.
            if let (Some(slot), Some(index)) = (unsafe { out_error_index.as_mut() }, failure.index)
            {
                *slot = index;
            }
        };
        let g1_points = parse_points(g1_bytes).inspect_err(record_index)?;
        let g2_points = parse_g2_points(g2_bytes).inspect_err(record_index)?;
        let mut products = Vec::with_capacity(n_products);
        let mut start = 0;
        for &len in lengths {
            let end = start + len;
            products.push(
                g1_points[start..end]
                    .iter()
                    .copied()
                    .zip(indices[start..end].iter().copied())
                    .collect::<Vec<_>>(),
            );
            start = end;
        }
        let verdicts = engine.pairing_products_are_identity(PairingProducts {
            g2: &g2_points,
            products: &products,
        })?;
        one_per_input(&verdicts, n_products, "verdicts", "products")?;
        for (verdict, slot) in verdicts.iter().zip(out) {
            *slot = u8::from(*verdict);
        }
        Ok(())
    })
}

/// Verifies `n` BLS signatures. Item `i`: signature `signatures[i*48..]` (compressed G1),
/// public key `public_keys[i*96..]` (compressed G2), message `messages[i]` of
/// `message_lens[i]` bytes (NULL allowed when the length is 0), hashed to G1 under
/// `scheme` (see `scheme_of_code`). Writes `n` codes (see `verify_code`).
///
/// # Safety
/// `engine` a live handle; inputs readable as described; `out_codes` `n` writable bytes,
/// overlapping no input.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gpu_crypto_bls_verify_batch(
    engine: *const GpuCryptoEngine,
    signatures: *const u8,
    public_keys: *const u8,
    messages: *const *const u8,
    message_lens: *const usize,
    n: usize,
    scheme: u32,
    out_codes: *mut u8,
) -> i32 {
    entry(|| {
        let scheme = scheme_of_code(scheme).ok_or_else(|| {
            Failure::new(
                Status::InvalidArgument,
                format!("unknown BLS scheme {scheme} (0: threshold, 1: multi_sig)"),
            )
        })?;
        // SAFETY: `engine` is NULL or a live handle (the caller's contract).
        let engine = unsafe { engine_ref(engine) }?;
        // SAFETY: `signatures` points to `n` readable items that stay unmodified during the
        // call (the caller's contract); `input` rejects NULL and overflowing lengths.
        let signatures = unsafe { input(signatures.cast::<[u8; 48]>(), n, "signatures") }?;
        // SAFETY: `public_keys` points to `n` readable items that stay unmodified during the
        // call (the caller's contract); `input` rejects NULL and overflowing lengths.
        let public_keys = unsafe { input(public_keys.cast::<[u8; 96]>(), n, "public_keys") }?;
        // SAFETY: `messages` points to `n` readable items that stay unmodified during the call
        // (the caller's contract); `input` rejects NULL and overflowing lengths.
        let message_ptrs = unsafe { input(messages, n, "messages") }?;
        // SAFETY: `message_lens` points to `n` readable items that stay unmodified during the
        // call (the caller's contract); `input` rejects NULL and overflowing lengths.
        let message_lens = unsafe { input(message_lens, n, "message_lens") }?;
        // SAFETY: `out_codes` points to `n` writable items overlapping no input (the caller's
        // contract); `output` rejects NULL and overflowing lengths.
        let out_codes = unsafe { output(out_codes, n, "out_codes") }?;
        let mut items = Vec::with_capacity(n);
        for i in 0..n {
            let what = format!("message {i}");
            // SAFETY: `message_ptrs[i]` points to `message_lens[i]` readable items that stay
            // unmodified during the call (the caller's contract); `input` rejects NULL and
            // overflowing lengths.
            let message = unsafe { input(message_ptrs[i], message_lens[i], &what) }?;
            items.push(BlsItem {
                signature: &signatures[i],
                public_key: &public_keys[i],
                message,
                scheme,
            });
        }
        let verdicts = engine.bls_verify_batch(&items)?;
        one_per_input(&verdicts, n, "verdicts", "items")?;
        for (verdict, code) in verdicts.iter().zip(out_codes) {
            *code = verify_code(verdict);
        }
        Ok(())
    })
}

/// `SHA-256(len(ds) as u8 || ds || chunk)` for `n` chunks, written as `n * 32` bytes; the
/// domain separator `ds` is UTF-8 of at most 255 bytes (NULL allowed when its length is 0).
///
/// # Safety
/// `engine` a live handle; inputs readable as described; `out` `n * 32` writable bytes,
/// overlapping no input.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gpu_crypto_sha256_chunks(
    engine: *const GpuCryptoEngine,
    domain_separator: *const u8,
    domain_separator_len: usize,
    chunks: *const *const u8,
    chunk_lens: *const usize,
    n: usize,
    out: *mut u8,
) -> i32 {
    entry(|| {
        // SAFETY: `engine` is NULL or a live handle (the caller's contract).
        let engine = unsafe { engine_ref(engine) }?;
        // SAFETY: `domain_separator` points to `domain_separator_len` readable items that stay
        // unmodified during the call (the caller's contract); `input` rejects NULL and
        // overflowing lengths.
        let separator =
            unsafe { input(domain_separator, domain_separator_len, "domain_separator") }?;
        let separator = std::str::from_utf8(separator).map_err(|e| {
            Failure::new(
                Status::InvalidArgument,
                format!("the domain separator is not UTF-8: {e}"),
            )
        })?;
        let separator = DomainSeparator::new(separator)?;
        // SAFETY: `chunks` points to `n` readable items that stay unmodified during the call
        // (the caller's contract); `input` rejects NULL and overflowing lengths.
        let chunk_ptrs = unsafe { input(chunks, n, "chunks") }?;
        // SAFETY: `chunk_lens` points to `n` readable items that stay unmodified during the
        // call (the caller's contract); `input` rejects NULL and overflowing lengths.
        let chunk_lens = unsafe { input(chunk_lens, n, "chunk_lens") }?;
        // SAFETY: `out` points to `n` writable items overlapping no input (the caller's
        // contract); `output` rejects NULL and overflowing lengths.
        let out = unsafe { output(out.cast::<[u8; 32]>(), n, "out") }?;
        let mut slices = Vec::with_capacity(n);
        for i in 0..n {
            let what = format!("chunk {i}");
            // SAFETY: `chunk_ptrs[i]` points to `chunk_lens[i]` readable items that stay
            // unmodified during the call (the caller's contract); `input` rejects NULL and
            // overflowing lengths.
            slices.push(unsafe { input(chunk_ptrs[i], chunk_lens[i], &what) }?);
        }
        let digests = engine.sha256_chunks(&separator, &slices)?;
        one_per_input(&digests, n, "digests", "chunks")?;
        out.copy_from_slice(&digests);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_forms() {
        assert_eq!(parse_policy(None), Ok(Policy::auto()));
        assert_eq!(parse_policy(Some(" ")), Ok(Policy::auto()));
        assert_eq!(parse_policy(Some("\"cpu\"")), Ok(Policy::cpu_only()));
        let full = serde_json::to_string(&Policy::cpu_only()).unwrap();
        assert_eq!(parse_policy(Some(&full)), Ok(Policy::cpu_only()));
        assert!(parse_policy(Some("{\"backend\":\"cpu\"}")).is_err());
    }
}
