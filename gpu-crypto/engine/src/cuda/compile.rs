//! Kernel compilation with NVRTC (loaded at run time) straight to a cubin for one
//! architecture. NVRTC's log is returned: it holds warnings even when compilation succeeds.

use super::error::GpuError;
use super::sources::{HEADERS, KernelProgram};
use cudarc::nvrtc::sys;
use std::ffi::{CStr, CString, c_char};
use std::time::Instant;

/// Options for every program; the architecture is added per call.
pub(crate) const COMPILE_OPTIONS: &[&str] = &["-std=c++17"];

/// A compiled program.
#[derive(Debug, Clone)]
pub struct CompiledProgram {
    /// The device code for the architecture asked for.
    pub cubin: Vec<u8>,
    /// NVRTC's log, trimmed; non-empty means warnings.
    pub log: String,
    /// Wall-clock seconds NVRTC took.
    pub seconds: f64,
}

/// NVRTC's version, or why NVRTC cannot be used (library not found).
pub fn nvrtc_version() -> Result<(i32, i32), GpuError> {
    // SAFETY: only probes whether the shared library can be opened.
    if !unsafe { sys::is_culib_present() } {
        return Err(GpuError::NoNvrtc(
            "libnvrtc.so (CUDA run-time compiler) was not found on the library path".into(),
        ));
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is present; both pointers are valid.
    let rc = unsafe { sys::nvrtcVersion(&mut major, &mut minor) };
    if rc != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(GpuError::NoNvrtc(format!("nvrtcVersion failed: {rc:?}")));
    }
    Ok((major, minor))
}

fn cstring(s: &str) -> Result<CString, GpuError> {
    CString::new(s).map_err(|_| GpuError::Compile(format!("NUL byte in {s:?}")))
}

struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by nvrtcCreateProgram and destroyed once.
        unsafe {
            sys::nvrtcDestroyProgram(&mut self.0);
        }
    }
}

fn check(rc: sys::nvrtcResult, what: &str) -> Result<(), GpuError> {
    if rc == sys::nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(GpuError::Compile(format!("{what}: {rc:?}")))
    }
}

fn program_log(prog: sys::nvrtcProgram) -> String {
    let mut size = 0usize;
    // SAFETY: valid program; size out-pointer valid.
    if unsafe { sys::nvrtcGetProgramLogSize(prog, &mut size) } != sys::nvrtcResult::NVRTC_SUCCESS {
        return String::new();
    }
    let mut buf = vec![0u8; size.max(1)];
    // SAFETY: buf holds `size` bytes as NVRTC requires.
    if unsafe { sys::nvrtcGetProgramLog(prog, buf.as_mut_ptr() as *mut c_char) }
        != sys::nvrtcResult::NVRTC_SUCCESS
    {
        return String::new();
    }
    CStr::from_bytes_until_nul(&buf)
        .map(|s| s.to_string_lossy().trim().to_string())
        .unwrap_or_default()
}

/// Compiles `program` for `arch` (e.g. "sm_90") to a cubin. A compile error is an error;
/// warnings come back in `log` for the caller to judge (CI fails on them).
pub fn compile_program(program: &KernelProgram, arch: &str) -> Result<CompiledProgram, GpuError> {
    nvrtc_version()?;
    let start = Instant::now();
    let src = cstring(program.source)?;
    let name = cstring(program.name)?;
    let header_texts = HEADERS
        .iter()
        .map(|(_, text)| cstring(text))
        .collect::<Result<Vec<_>, _>>()?;
    let header_names = HEADERS
        .iter()
        .map(|(n, _)| cstring(n))
        .collect::<Result<Vec<_>, _>>()?;
    let text_ptrs: Vec<*const c_char> = header_texts.iter().map(|c| c.as_ptr()).collect();
    let name_ptrs: Vec<*const c_char> = header_names.iter().map(|c| c.as_ptr()).collect();

    let mut raw = std::ptr::null_mut();
    check(
        // SAFETY: `raw` is a writable out-pointer; `src`, `name` and the header texts and
        // names are live NUL-terminated strings (the CStrings and their pointer vectors
        // outlive the call), HEADERS.len() of each.
        unsafe {
            sys::nvrtcCreateProgram(
                &mut raw,
                src.as_ptr(),
                name.as_ptr(),
                HEADERS.len() as i32,
                text_ptrs.as_ptr(),
                name_ptrs.as_ptr(),
            )
        },
        "nvrtcCreateProgram",
    )?;
    let prog = Program(raw);

    let mut options = vec![cstring(&format!("--gpu-architecture={arch}"))?];
    for o in COMPILE_OPTIONS {
        options.push(cstring(o)?);
    }
    let option_ptrs: Vec<*const c_char> = options.iter().map(|c| c.as_ptr()).collect();
    // SAFETY: valid program and option strings.
    let rc =
        unsafe { sys::nvrtcCompileProgram(prog.0, option_ptrs.len() as i32, option_ptrs.as_ptr()) };
    let log = program_log(prog.0);
    if rc != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(GpuError::Compile(format!(
            "{} for {arch}: {rc:?}\n{log}",
            program.name
        )));
    }
    let mut size = 0usize;
    check(
        // SAFETY: `prog` is a live, compiled program; `size` a writable out-pointer.
        unsafe { sys::nvrtcGetCUBINSize(prog.0, &mut size) },
        "nvrtcGetCUBINSize",
    )?;
    if size == 0 {
        return Err(GpuError::Compile(format!(
            "{} for {arch}: NVRTC produced no cubin (is {arch} a real architecture?)",
            program.name
        )));
    }
    let mut cubin = vec![0u8; size];
    check(
        // SAFETY: `prog` is a live, compiled program whose cubin is `size` bytes, which
        // `cubin` holds.
        unsafe { sys::nvrtcGetCUBIN(prog.0, cubin.as_mut_ptr() as *mut c_char) },
        "nvrtcGetCUBIN",
    )?;
    Ok(CompiledProgram {
        cubin,
        log,
        seconds: start.elapsed().as_secs_f64(),
    })
}
