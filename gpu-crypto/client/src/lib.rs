//! What the patched replica links: loads `libgpu_crypto.so` at run time (its C ABI,
//! `gpu-crypto/engine/include/gpu_crypto.h`), checks the ABI version, and offers its batch
//! operations in safe Rust with the same types as `gpu_crypto::Engine`.
//!
//! When the library is absent, fails to load, lacks a symbol or has another ABI version,
//! the client runs every operation in-process on the CPU reference path
//! (`Engine::cpu_only()`), says so through [`Client::status`] and logs it once: never a
//! quiet fallback. A policy that pins an operation to the GPU is never served by that
//! fallback: the client then fails to open instead.
//!
//! [`hooks`] is what the replica's patched call sites call: one safe function per call
//! site, answering with the GPU's result or "run your own CPU code", counted.

#![warn(missing_docs)]

use gpu_crypto::{Engine, G1Affine, G1Projective, G2Affine, MsmInput, PairingProducts};
use gpu_crypto_api::abi::{self, ABI_VERSION, Status};
use gpu_crypto_api::{
    BackendChoice, BlsItem, BlsScheme, DecodeError, DomainSeparator, EngineError, Operation,
    Policy, VerifyError,
};
use serde::Deserialize as _;
use std::ffi::{CString, c_char, c_void};
use std::mem::ManuallyDrop;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

pub mod hooks;

/// Environment variable naming the library file when no path is given explicitly.
pub const LIBRARY_ENV: &str = "GPU_CRYPTO_LIB";
/// Name searched by the dynamic loader (`LD_LIBRARY_PATH`, `ld.so.cache`, ...) otherwise.
pub const DEFAULT_LIBRARY_NAME: &str = "libgpu_crypto.so";

/// Where operations run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientStatus {
    /// `libgpu_crypto.so` is loaded and serves every operation under the policy.
    Loaded {
        /// The path it was loaded from, as given to the loader.
        path: PathBuf,
        /// The ABI version the library reported (equal to [`ABI_VERSION`]).
        abi_version: u32,
    },
    /// The library could not be used; every operation runs in-process on the CPU.
    CpuFallback {
        /// Why the library is unusable (not found, missing symbol, other ABI version).
        reason: String,
    },
}

/// Why the client could not open, or why one call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The policy could not be serialised for `gpu_crypto_engine_new`.
    #[error("the policy cannot be encoded as JSON: {0}")]
    PolicyEncoding(String),
    /// The policy's JSON contains a NUL byte, so it cannot be passed as a C string.
    #[error("the policy contains a NUL byte")]
    PolicyNul,
    /// The library loaded but `gpu_crypto_engine_new` refused the policy.
    #[error("{path}: the library refused to create an engine: {reason}", path = path.display())]
    EngineNew {
        /// The library's path.
        path: PathBuf,
        /// The library's reason.
        reason: String,
    },
    /// The policy pins an operation to the GPU, but the library is unusable.
    #[error(
        "the policy pins {operation} to the GPU, but the library is unusable ({reason}); \
         the in-process CPU fallback cannot honour that"
    )]
    GpuRequired {
        /// The first operation pinned to the GPU.
        operation: Operation,
        /// Why the library is unusable.
        reason: String,
    },
    /// A library entry point returned a status other than OK.
    #[error("{operation}: library call failed with {status}: {message}")]
    Call {
        /// The client method that made the call.
        operation: &'static str,
        /// The raw return code, and its meaning where this client knows it.
        status: StatusCode,
        /// The library's reason (`gpu_crypto_last_error` on the calling thread).
        message: String,
    },
    /// The library reported success but wrote something this client cannot accept.
    #[error("{operation}: the library returned an invalid result: {detail}")]
    BadResult {
        /// The client method that made the call.
        operation: &'static str,
        /// What is wrong with the result.
        detail: String,
    },
    /// An MSM input with different numbers of points and scalars.
    #[error("{op}: {points} points but {scalars} scalars", op = Operation::Msm)]
    LengthMismatch {
        /// Points given.
        points: usize,
        /// Scalars given.
        scalars: usize,
    },
    /// The runtime configuration could not be read or has no usable crypto policy.
    #[error("runtime configuration {path}: {reason}", path = path.display())]
    RuntimeConfig {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The in-process CPU engine's error (CPU fallback), or a shape check shared with it.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

pub use gpu_crypto_api::runtime_config::{RUNTIME_CONFIG_ENV, RUNTIME_CONFIG_SCHEMA_VERSION};

/// The crypto policy of the node agent's runtime configuration (`docs/runtime-config.md`):
/// its `crypto` object, after checking `schema_version`. The rest of the file (thread
/// pools) is the replica's own business.
pub fn policy_from_runtime_config(path: &Path) -> Result<Policy, ClientError> {
    let error = |reason: String| ClientError::RuntimeConfig {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| error(format!("not JSON: {e}")))?;
    match value
        .get("schema_version")
        .and_then(serde_json::Value::as_u64)
    {
        Some(version) if version == u64::from(RUNTIME_CONFIG_SCHEMA_VERSION) => {}
        Some(other) => {
            return Err(error(format!(
                "schema_version {other}, this client reads {RUNTIME_CONFIG_SCHEMA_VERSION}"
            )));
        }
        None => return Err(error("no integer schema_version".into())),
    }
    let crypto = value
        .get("crypto")
        .ok_or_else(|| error("no crypto object".into()))?;
    Policy::deserialize(crypto).map_err(|e| error(format!("crypto: {e}")))
}

/// A return code of the C ABI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusCode(
    /// The raw `int32_t` the entry point returned.
    pub i32,
);

impl StatusCode {
    /// The code's meaning; `None` for a code this ABI version does not define.
    pub fn status(self) -> Option<Status> {
        Status::from_code(self.0)
    }
}

impl std::fmt::Display for StatusCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.status() {
            Some(s) => write!(f, "{s:?} ({})", self.0),
            None => write!(f, "unknown code {}", self.0),
        }
    }
}

/// The library path: the explicit one, else `env_value` (the value of [`LIBRARY_ENV`]),
/// else [`DEFAULT_LIBRARY_NAME`] for the loader's search.
pub fn resolve_library_path(explicit: Option<&Path>, env_value: Option<&str>) -> PathBuf {
    match (explicit, env_value) {
        (Some(path), _) => path.to_path_buf(),
        (None, Some(value)) if !value.is_empty() => PathBuf::from(value),
        _ => PathBuf::from(DEFAULT_LIBRARY_NAME),
    }
}

type EngineNew = unsafe extern "C" fn(*const c_char, *mut c_char, usize) -> *mut c_void;
type EngineFree = unsafe extern "C" fn(*mut c_void);
type LastError = unsafe extern "C" fn(*mut c_char, usize, *mut usize) -> i32;
type EngineJson = unsafe extern "C" fn(*const c_void, *mut c_char, usize, *mut usize) -> i32;
type Decompress = unsafe extern "C" fn(*const c_void, *const u8, usize, *mut u8, *mut u8) -> i32;
type MsmBatch = unsafe extern "C" fn(
    *const c_void,
    *const u8,
    *const u8,
    *const usize,
    usize,
    *mut u8,
    *mut usize,
) -> i32;
type PairingProductsAreIdentity = unsafe extern "C" fn(
    *const c_void,
    *const u8,
    usize,
    *const u8,
    *const usize,
    *const usize,
    usize,
    *mut u8,
    *mut usize,
) -> i32;
type VerifyBatch = unsafe extern "C" fn(
    *const c_void,
    *const u8,
    *const u8,
    *const *const u8,
    *const usize,
    usize,
    u32,
    *mut u8,
) -> i32;
type Sha256Chunks = unsafe extern "C" fn(
    *const c_void,
    *const u8,
    usize,
    *const *const u8,
    *const usize,
    usize,
    *mut u8,
) -> i32;

type MsmSharedU8 = unsafe extern "C" fn(
    *const c_void,
    *const u8,
    usize,
    *const u8,
    usize,
    usize,
    *mut u8,
    *mut usize,
) -> i32;

/// The loaded library, its entry points and one engine handle.
struct Library {
    engine: NonNull<c_void>,
    engine_free: EngineFree,
    last_error: LastError,
    report_json: EngineJson,
    stats_json: EngineJson,
    decompress: Decompress,
    /// `gpu_crypto_g2_decompress` (the same signature as G1's, 96 and 192-byte records).
    g2_decompress: Decompress,
    msm_batch: MsmBatch,
    msm_shared_u8: MsmSharedU8,
    pairing_products: PairingProductsAreIdentity,
    verify_batch: VerifyBatch,
    sha256_chunks: Sha256Chunks,
    /// Keeps the code behind the function pointers mapped. Never unloaded, even after
    /// the engine is freed: the library's worker threads (rayon's pool) and thread-local
    /// destructors outlive any one engine and must never find their code unmapped.
    _library: ManuallyDrop<libloading::Library>,
}

// SAFETY: the engine behind the handle is `Send + Sync` (gpu_crypto::Engine, documented
// thread-safe in the C ABI); the function pointers and the library handle are plain data.
unsafe impl Send for Library {}
// SAFETY: as above; the only `&mut` use is `Drop`.
unsafe impl Sync for Library {}

impl Drop for Library {
    fn drop(&mut self) {
        // SAFETY: the handle came from gpu_crypto_engine_new and is freed exactly once, here;
        // `&mut self` means no other call on it runs concurrently, as the header requires.
        unsafe { (self.engine_free)(self.engine.as_ptr()) }
    }
}

/// Why the library cannot be used (leads to the CPU fallback), or a hard error.
enum OpenFailure {
    Unusable(String),
    Hard(ClientError),
}

/// An error with its sources (libloading puts the loader's own words in the source).
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

/// Copies a function pointer out of the library.
///
/// # Safety
/// `T` must be the exact type of the symbol `name`.
unsafe fn symbol<T: Copy>(
    library: &libloading::Library,
    path: &Path,
    name: &str,
) -> Result<T, OpenFailure> {
    // SAFETY: the type is the one declared in gpu_crypto.h, per the caller's contract.
    match unsafe { library.get::<T>(name.as_bytes()) } {
        Ok(symbol) => Ok(*symbol),
        Err(e) => Err(OpenFailure::Unusable(format!(
            "{}: missing symbol {name}: {}",
            path.display(),
            chain(&e)
        ))),
    }
}

/// The entry points of the C ABI, each typed as gpu_crypto.h declares it.
struct EntryPoints {
    engine_new: EngineNew,
    engine_free: EngineFree,
    last_error: LastError,
    report_json: EngineJson,
    stats_json: EngineJson,
    decompress: Decompress,
    g2_decompress: Decompress,
    msm_batch: MsmBatch,
    msm_shared_u8: MsmSharedU8,
    pairing_products: PairingProductsAreIdentity,
    verify_batch: VerifyBatch,
    sha256_chunks: Sha256Chunks,
}

impl EntryPoints {
    /// Copies every entry point but `gpu_crypto_abi_version` out of `library`.
    ///
    /// # Safety
    /// `library` must implement [`ABI_VERSION`] of the C ABI, the version whose prototypes
    /// the type aliases above mirror.
    unsafe fn load(library: &libloading::Library, path: &Path) -> Result<Self, OpenFailure> {
        // SAFETY: each field's type is the prototype gpu_crypto.h (of ABI_VERSION, which the
        // caller guarantees) declares for the symbol named beside it.
        unsafe {
            Ok(EntryPoints {
                engine_new: symbol(library, path, "gpu_crypto_engine_new")?,
                engine_free: symbol(library, path, "gpu_crypto_engine_free")?,
                last_error: symbol(library, path, "gpu_crypto_last_error")?,
                report_json: symbol(library, path, "gpu_crypto_engine_report_json")?,
                stats_json: symbol(library, path, "gpu_crypto_engine_stats_json")?,
                decompress: symbol(library, path, "gpu_crypto_g1_decompress")?,
                g2_decompress: symbol(library, path, "gpu_crypto_g2_decompress")?,
                msm_batch: symbol(library, path, "gpu_crypto_g1_msm_batch")?,
                msm_shared_u8: symbol(library, path, "gpu_crypto_g1_msm_shared_u8")?,
                pairing_products: symbol(
                    library,
                    path,
                    "gpu_crypto_pairing_products_are_identity",
                )?,
                verify_batch: symbol(library, path, "gpu_crypto_bls_verify_batch")?,
                sha256_chunks: symbol(library, path, "gpu_crypto_sha256_chunks")?,
            })
        }
    }
}

impl Library {
    /// Loads the library at `path`, checks its ABI version and creates an engine under
    /// `policy_json`; gives the engine with the library's ABI version.
    fn open(path: &Path, policy_json: &CString) -> Result<(Library, u32), OpenFailure> {
        // SAFETY: loading runs the library's initialisers; libgpu_crypto.so (a Rust cdylib)
        // has none with preconditions.
        // Never unloaded (see `Library::_library`), not even after a failure below: once
        // any of its code has run, it may have left threads or destructors behind.
        let library = unsafe { libloading::Library::new(path) }
            .map(ManuallyDrop::new)
            .map_err(|e| {
                OpenFailure::Unusable(format!("cannot load {}: {}", path.display(), chain(&e)))
            })?;
        // SAFETY: `uint32_t gpu_crypto_abi_version(void)` is the one prototype every ABI
        // version keeps, so this type is right before the version is known.
        let abi_version: unsafe extern "C" fn() -> u32 =
            unsafe { symbol(&library, path, "gpu_crypto_abi_version") }?;
        // SAFETY: it takes no arguments and has no preconditions.
        let version = unsafe { abi_version() };
        if version != ABI_VERSION {
            return Err(OpenFailure::Unusable(format!(
                "{}: ABI version {version}, this client needs {ABI_VERSION}",
                path.display()
            )));
        }
        // SAFETY: the library implements ABI_VERSION (checked just above), whose header
        // declares each of these symbols with the prototype of its alias.
        let EntryPoints {
            engine_new,
            engine_free,
            last_error,
            report_json,
            stats_json,
            decompress,
            g2_decompress,
            msm_batch,
            msm_shared_u8,
            pairing_products,
            verify_batch,
            sha256_chunks,
        } = unsafe { EntryPoints::load(&library, path) }?;

        let mut err = vec![0u8; 1024];
        // SAFETY: a NUL-terminated policy and a writable error buffer of err.len() bytes.
        let handle = unsafe {
            engine_new(
                policy_json.as_ptr(),
                err.as_mut_ptr().cast::<c_char>(),
                err.len(),
            )
        };
        let Some(engine) = NonNull::new(handle) else {
            let end = err.iter().position(|&b| b == 0).unwrap_or(err.len());
            return Err(OpenFailure::Hard(ClientError::EngineNew {
                path: path.to_path_buf(),
                reason: String::from_utf8_lossy(&err[..end]).into_owned(),
            }));
        };
        let library = Library {
            engine,
            engine_free,
            last_error,
            report_json,
            stats_json,
            decompress,
            g2_decompress,
            msm_batch,
            msm_shared_u8,
            pairing_products,
            verify_batch,
            sha256_chunks,
            _library: library,
        };
        Ok((library, version))
    }

    /// The engine handle: valid as long as `self`, freed only by `Drop`.
    fn handle(&self) -> *const c_void {
        self.engine.as_ptr()
    }

    /// The library's reason for the last failure on this thread.
    fn last_error_message(&self) -> String {
        let mut required = 0usize;
        // SAFETY: a NULL buffer of length 0 only queries the size, written to `required`
        // (a live, writable usize).
        unsafe { (self.last_error)(std::ptr::null_mut(), 0, &mut required) };
        let mut buf = vec![0u8; required.max(1)];
        // SAFETY: buf has buf.len() writable bytes; a NULL `required` is allowed.
        let code = unsafe {
            (self.last_error)(
                buf.as_mut_ptr().cast::<c_char>(),
                buf.len(),
                std::ptr::null_mut(),
            )
        };
        if code != Status::Ok as i32 {
            return "(no reason available)".to_string();
        }
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    }

    /// One decompression call into the library (`f`: its G1 or G2 entry) and its per-item
    /// results: code 0 with the uncompressed point (the library validated it; the unchecked
    /// decoding still rejects non-canonical coordinates and bad flags), else the item's
    /// decode error. Anything else is a bad result of the library, never a silent item.
    fn decompress_batch<P, const IN: usize, const OUT: usize>(
        &self,
        operation: &'static str,
        f: Decompress,
        points: &[[u8; IN]],
        group: &str,
        from_uncompressed: impl Fn(&[u8; OUT]) -> Option<P>,
    ) -> Result<Vec<Result<P, DecodeError>>, ClientError> {
        let n = points.len();
        let mut uncompressed = vec![[0u8; OUT]; n];
        let mut codes = vec![0u8; n];
        // SAFETY: a live handle; n * IN readable bytes in, n * OUT and n writable bytes out
        // (separate buffers), as the library's decompression entries take them.
        let code = unsafe {
            f(
                self.handle(),
                points.as_ptr().cast::<u8>(),
                n,
                uncompressed.as_mut_ptr().cast::<u8>(),
                codes.as_mut_ptr(),
            )
        };
        self.check(operation, code)?;
        let bad = |detail: String| ClientError::BadResult { operation, detail };
        uncompressed
            .iter()
            .zip(&codes)
            .enumerate()
            .map(|(i, (bytes, &code))| match code {
                0 => from_uncompressed(bytes)
                    .map(Ok)
                    .ok_or_else(|| bad(format!("item {i}: not an uncompressed {group} encoding"))),
                c => DecodeError::from_code(c)
                    .map(Err)
                    .ok_or_else(|| bad(format!("item {i}: unknown decode code {c}"))),
            })
            .collect()
    }

    fn check(&self, operation: &'static str, code: i32) -> Result<(), ClientError> {
        if code == Status::Ok as i32 {
            return Ok(());
        }
        Err(ClientError::Call {
            operation,
            status: StatusCode(code),
            message: self.last_error_message(),
        })
    }

    fn json(&self, operation: &'static str, call: EngineJson) -> Result<String, ClientError> {
        // The text can grow between the two calls (counters), hence the loop.
        let mut required = 0usize;
        // SAFETY: a live handle (`handle`); a NULL buffer of length 0 only queries the size,
        // written to `required` (a live, writable usize).
        unsafe { call(self.handle(), std::ptr::null_mut(), 0, &mut required) };
        loop {
            let mut buf = vec![0u8; required.max(1)];
            // SAFETY: a live handle; buf has buf.len() writable bytes; required is writable.
            let code = unsafe {
                call(
                    self.handle(),
                    buf.as_mut_ptr().cast::<c_char>(),
                    buf.len(),
                    &mut required,
                )
            };
            if code == Status::BufferTooSmall as i32 && required > buf.len() {
                continue;
            }
            self.check(operation, code)?;
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            return String::from_utf8(buf[..end].to_vec()).map_err(|e| ClientError::BadResult {
                operation,
                detail: e.to_string(),
            });
        }
    }
}

enum Backend {
    Library(Library),
    Cpu(Engine),
}

/// The replica's handle on the batch operations. Thread-safe: share one.
pub struct Client {
    backend: Backend,
    status: ClientStatus,
}

impl Client {
    /// Loads the library at `path`, or at `$GPU_CRYPTO_LIB`, or `libgpu_crypto.so` from the
    /// loader's search path, with an engine under `policy`.
    ///
    /// A library that cannot be used gives a client on the in-process CPU path (see
    /// [`Client::status`]), unless `policy` pins an operation to the GPU
    /// ([`ClientError::GpuRequired`]). A library that loads but refuses the policy (for
    /// example a pinned GPU that is unusable) is an error.
    pub fn open(path: Option<&Path>, policy: &Policy) -> Result<Client, ClientError> {
        let env_value = std::env::var(LIBRARY_ENV).ok();
        let path = resolve_library_path(path, env_value.as_deref());
        Client::open_path(&path, policy)
    }

    /// As [`Client::open`] with exactly this library path (no environment lookup).
    pub fn open_path(path: &Path, policy: &Policy) -> Result<Client, ClientError> {
        let json = serde_json::to_string(policy)
            .map_err(|e| ClientError::PolicyEncoding(e.to_string()))?;
        let json = CString::new(json).map_err(|_| ClientError::PolicyNul)?;
        match Library::open(path, &json) {
            Ok((library, abi_version)) => {
                tracing::info!(path = %path.display(), abi_version, "gpu-crypto library loaded");
                Ok(Client {
                    backend: Backend::Library(library),
                    status: ClientStatus::Loaded {
                        path: path.to_path_buf(),
                        abi_version,
                    },
                })
            }
            Err(OpenFailure::Hard(e)) => Err(e),
            Err(OpenFailure::Unusable(reason)) => {
                if let Some(operation) = Operation::ALL
                    .into_iter()
                    .find(|op| policy.operation(*op).backend == BackendChoice::Gpu)
                {
                    return Err(ClientError::GpuRequired { operation, reason });
                }
                tracing::warn!(%reason,
                    "gpu-crypto library unusable; every operation runs in-process on the CPU");
                Ok(Client {
                    backend: Backend::Cpu(Engine::cpu_only()),
                    status: ClientStatus::CpuFallback { reason },
                })
            }
        }
    }

    /// Where operations run, and why.
    pub fn status(&self) -> &ClientStatus {
        &self.status
    }

    /// The engine report (`gpu_crypto::EngineReport`) as JSON.
    pub fn report_json(&self) -> Result<String, ClientError> {
        match &self.backend {
            Backend::Library(lib) => lib.json("report_json", lib.report_json),
            Backend::Cpu(engine) => {
                serde_json::to_string(&engine.report()).map_err(|e| ClientError::BadResult {
                    operation: "report_json",
                    detail: e.to_string(),
                })
            }
        }
    }

    /// The engine counters (`gpu_crypto_api::stats::StatsSnapshot`) as JSON.
    pub fn stats_json(&self) -> Result<String, ClientError> {
        match &self.backend {
            Backend::Library(lib) => lib.json("stats_json", lib.stats_json),
            Backend::Cpu(engine) => {
                serde_json::to_string(&engine.stats()).map_err(|e| ClientError::BadResult {
                    operation: "stats_json",
                    detail: e.to_string(),
                })
            }
        }
    }

    /// As `Engine::g1_decompress`.
    pub fn g1_decompress(
        &self,
        points: &[[u8; 48]],
    ) -> Result<Vec<Result<G1Affine, DecodeError>>, ClientError> {
        const OP: &str = "g1_decompress";
        let lib = match &self.backend {
            Backend::Cpu(engine) => return Ok(engine.g1_decompress(points)?),
            Backend::Library(lib) => lib,
        };
        lib.decompress_batch(OP, lib.decompress, points, "G1", |bytes: &[u8; 96]| {
            Option::from(G1Affine::from_uncompressed_unchecked(bytes))
        })
    }

    /// As `Engine::g2_decompress`.
    pub fn g2_decompress(
        &self,
        points: &[[u8; 96]],
    ) -> Result<Vec<Result<G2Affine, DecodeError>>, ClientError> {
        const OP: &str = "g2_decompress";
        let lib = match &self.backend {
            Backend::Cpu(engine) => return Ok(engine.g2_decompress(points)?),
            Backend::Library(lib) => lib,
        };
        lib.decompress_batch(OP, lib.g2_decompress, points, "G2", |bytes: &[u8; 192]| {
            Option::from(G2Affine::from_uncompressed_unchecked(bytes))
        })
    }

    /// As `Engine::g1_msm_batch`.
    pub fn g1_msm_batch(&self, msms: &[MsmInput<'_>]) -> Result<Vec<G1Projective>, ClientError> {
        const OP: &str = "g1_msm_batch";
        let lib = match &self.backend {
            Backend::Cpu(engine) => return Ok(engine.g1_msm_batch(msms)?),
            Backend::Library(lib) => lib,
        };
        let mut lengths = Vec::with_capacity(msms.len());
        let mut points = Vec::new();
        let mut scalars = Vec::new();
        for m in msms {
            if m.points.len() != m.scalars.len() {
                return Err(ClientError::LengthMismatch {
                    points: m.points.len(),
                    scalars: m.scalars.len(),
                });
            }
            lengths.push(m.points.len());
            points.extend(m.points.iter().map(G1Affine::to_uncompressed));
            scalars.extend(m.scalars.iter().map(|s| {
                let mut be = s.to_bytes();
                be.reverse();
                be
            }));
        }
        let mut out = vec![[0u8; 96]; msms.len()];
        let mut error_index = usize::MAX;
        // SAFETY: sum(lengths) points of 96 and scalars of 32 bytes, msms.len() lengths,
        // msms.len() * 96 writable bytes out.
        let code = unsafe {
            (lib.msm_batch)(
                lib.handle(),
                points.as_ptr().cast::<u8>(),
                scalars.as_ptr().cast::<u8>(),
                lengths.as_ptr(),
                lengths.len(),
                out.as_mut_ptr().cast::<u8>(),
                &mut error_index,
            )
        };
        lib.check(OP, code)?;
        projective_from_library(OP, &out)
    }

    /// As `Engine::g1_msm_shared_u8`: `rows` MSMs over one set of bases with 8-bit scalars.
    pub fn g1_msm_shared_u8(
        &self,
        bases: &[G1Affine],
        scalars: &[u8],
        rows: usize,
    ) -> Result<Vec<G1Projective>, ClientError> {
        const OP: &str = "g1_msm_shared_u8";
        let lib = match &self.backend {
            Backend::Cpu(engine) => return Ok(engine.g1_msm_shared_u8(bases, scalars, rows)?),
            Backend::Library(lib) => lib,
        };
        // The engine's own error, so that both backends refuse a bad shape alike.
        gpu_crypto::check_shared_u8_shape(bases.len(), scalars.len(), rows)?;
        let encoded: Vec<[u8; 96]> = bases.iter().map(G1Affine::to_uncompressed).collect();
        let mut out = vec![[0u8; 96]; rows];
        let mut error_index = usize::MAX;
        // SAFETY: bases.len() points of 96 bytes, scalars.len() = rows * bases.len() bytes,
        // rows * 96 writable bytes out.
        let code = unsafe {
            (lib.msm_shared_u8)(
                lib.handle(),
                encoded.as_ptr().cast::<u8>(),
                encoded.len(),
                scalars.as_ptr(),
                scalars.len(),
                rows,
                out.as_mut_ptr().cast::<u8>(),
                &mut error_index,
            )
        };
        lib.check(OP, code)?;
        projective_from_library(OP, &out)
    }

    /// As `Engine::pairing_products_are_identity`.
    pub fn pairing_products_are_identity(
        &self,
        input: PairingProducts<'_>,
    ) -> Result<Vec<bool>, ClientError> {
        const OP: &str = "pairing_products_are_identity";
        let lib = match &self.backend {
            Backend::Cpu(engine) => return Ok(engine.pairing_products_are_identity(input)?),
            Backend::Library(lib) => lib,
        };
        // The same error as the in-process engine's for an index outside the table.
        input.check_indices()?;
        let g2: Vec<[u8; 192]> = input.g2.iter().map(G2Affine::to_uncompressed).collect();
        let lengths: Vec<usize> = input.products.iter().map(Vec::len).collect();
        let pairs = input.products.iter().flatten();
        let g1: Vec<[u8; 96]> = pairs.clone().map(|(p, _)| p.to_uncompressed()).collect();
        let indices: Vec<usize> = pairs.map(|(_, i)| *i).collect();
        let mut out = vec![0u8; lengths.len()];
        let mut error_index = usize::MAX;
        // SAFETY: g2.len() G2 points of 192 bytes, sum(lengths) G1 points of 96 bytes and
        // as many indices, lengths.len() lengths and writable verdict bytes.
        let code = unsafe {
            (lib.pairing_products)(
                lib.handle(),
                g2.as_ptr().cast::<u8>(),
                g2.len(),
                g1.as_ptr().cast::<u8>(),
                indices.as_ptr(),
                lengths.as_ptr(),
                lengths.len(),
                out.as_mut_ptr(),
                &mut error_index,
            )
        };
        lib.check(OP, code)?;
        out.iter()
            .enumerate()
            .map(|(i, v)| match v {
                0 => Ok(false),
                1 => Ok(true),
                _ => Err(ClientError::BadResult {
                    operation: OP,
                    detail: format!("verdict {i} is {v}, neither 0 nor 1"),
                }),
            })
            .collect()
    }

    /// As `Engine::bls_verify_batch` (one library call per scheme present in the batch).
    pub fn bls_verify_batch(
        &self,
        items: &[BlsItem<'_>],
    ) -> Result<Vec<Result<(), VerifyError>>, ClientError> {
        const OP: &str = "bls_verify_batch";
        let lib = match &self.backend {
            Backend::Cpu(engine) => return Ok(engine.bls_verify_batch(items)?),
            Backend::Library(lib) => lib,
        };
        let mut verdicts: Vec<Option<Result<(), VerifyError>>> = vec![None; items.len()];
        for scheme in BlsScheme::ALL {
            let indices: Vec<usize> = (0..items.len())
                .filter(|&i| items[i].scheme == scheme)
                .collect();
            if indices.is_empty() {
                continue;
            }
            let signatures: Vec<[u8; 48]> = indices.iter().map(|&i| *items[i].signature).collect();
            let public_keys: Vec<[u8; 96]> =
                indices.iter().map(|&i| *items[i].public_key).collect();
            let messages: Vec<*const u8> =
                indices.iter().map(|&i| items[i].message.as_ptr()).collect();
            let message_lens: Vec<usize> =
                indices.iter().map(|&i| items[i].message.len()).collect();
            let mut codes = vec![0u8; indices.len()];
            // SAFETY: indices.len() items of every input, each message readable for its
            // length; indices.len() writable bytes out.
            let code = unsafe {
                (lib.verify_batch)(
                    lib.handle(),
                    signatures.as_ptr().cast::<u8>(),
                    public_keys.as_ptr().cast::<u8>(),
                    messages.as_ptr(),
                    message_lens.as_ptr(),
                    indices.len(),
                    abi::scheme_code(scheme),
                    codes.as_mut_ptr(),
                )
            };
            lib.check(OP, code)?;
            for (&i, &c) in indices.iter().zip(&codes) {
                let verdict = abi::verdict_of_code(c).ok_or_else(|| ClientError::BadResult {
                    operation: OP,
                    detail: format!("item {i}: unknown verify code {c}"),
                })?;
                verdicts[i] = Some(verdict);
            }
        }
        verdicts
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                v.ok_or_else(|| ClientError::BadResult {
                    operation: OP,
                    detail: format!("item {i}: no verdict"),
                })
            })
            .collect()
    }

    /// As `Engine::sha256_chunks`.
    pub fn sha256_chunks(
        &self,
        domain_separator: &DomainSeparator,
        chunks: &[&[u8]],
    ) -> Result<Vec<[u8; 32]>, ClientError> {
        const OP: &str = "sha256_chunks";
        let lib = match &self.backend {
            Backend::Cpu(engine) => return Ok(engine.sha256_chunks(domain_separator, chunks)?),
            Backend::Library(lib) => lib,
        };
        // The library takes the separator itself and prepends its length byte again.
        let separator = domain_separator.prefix().get(1..).unwrap_or(&[]);
        let pointers: Vec<*const u8> = chunks.iter().map(|c| c.as_ptr()).collect();
        let lengths: Vec<usize> = chunks.iter().map(|c| c.len()).collect();
        let mut out = vec![[0u8; 32]; chunks.len()];
        // SAFETY: the separator and each chunk readable for their lengths; chunks.len() * 32
        // writable bytes out.
        let code = unsafe {
            (lib.sha256_chunks)(
                lib.handle(),
                separator.as_ptr(),
                separator.len(),
                pointers.as_ptr(),
                lengths.as_ptr(),
                chunks.len(),
                out.as_mut_ptr().cast::<u8>(),
            )
        };
        lib.check(OP, code)?;
        Ok(out)
    }
}

/// Every MSM result the library wrote, as `G1Projective`s.
fn projective_from_library(
    operation: &'static str,
    out: &[[u8; 96]],
) -> Result<Vec<G1Projective>, ClientError> {
    out.iter()
        .enumerate()
        .map(|(i, bytes)| point_from_library(operation, i, bytes).map(G1Projective::from))
        .collect()
}

/// A point the library encoded. The library validated it (decompression, or the MSM
/// arithmetic on validated inputs); the unchecked decoding skips repeating the subgroup
/// check but still rejects non-canonical coordinates and bad flags.
fn point_from_library(
    operation: &'static str,
    index: usize,
    bytes: &[u8; 96],
) -> Result<G1Affine, ClientError> {
    Option::from(G1Affine::from_uncompressed_unchecked(bytes)).ok_or_else(|| {
        ClientError::BadResult {
            operation,
            detail: format!("item {index}: not an uncompressed G1 encoding"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_path_resolution_order() {
        let explicit = Path::new("/opt/x/libgpu_crypto.so");
        assert_eq!(
            resolve_library_path(Some(explicit), Some("/env/lib.so")),
            explicit
        );
        assert_eq!(
            resolve_library_path(None, Some("/env/lib.so")),
            Path::new("/env/lib.so")
        );
        assert_eq!(
            resolve_library_path(None, Some("")),
            Path::new(DEFAULT_LIBRARY_NAME)
        );
        assert_eq!(
            resolve_library_path(None, None),
            Path::new(DEFAULT_LIBRARY_NAME)
        );
    }
}
