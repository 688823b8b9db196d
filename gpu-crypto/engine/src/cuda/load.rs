//! How the backend obtains each program's module for the device: a precompiled or cached
//! cubin when one is usable (see [`kernel_cache`]), else NVRTC compiles it (and the cache
//! keeps the cubin) unless the kernel mode is cached-only.

use super::compile;
use super::error::GpuError;
use super::kernel_cache;
use super::memory::driver;
use super::sources::{self, KernelProgram};
use cudarc::driver::{CudaContext, CudaModule};
use std::sync::Arc;
use std::time::Instant;

/// How one program was obtained in `open`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgramLoad {
    pub program: &'static str,
    /// "precompiled", "cache", "compiled", or "recompiled (reasons)" when a cubin was found
    /// but unusable (corrupt, refused for an old driver, rejected by the driver).
    pub source: String,
    pub seconds: f64,
}

/// `program`'s module: the first cubin of the cache plan that the driver accepts, else
/// (unless `mode` is cached-only) NVRTC's, which the writable cache then keeps.
fn load_program(
    ctx: &Arc<CudaContext>,
    program: &KernelProgram,
    arch: &str,
    driver_version: i32,
    mode: kernel_cache::KernelMode,
) -> Result<(Arc<CudaModule>, ProgramLoad), GpuError> {
    let start = Instant::now();
    let precompiled = kernel_cache::precompiled_dir();
    let dir = kernel_cache::cache_dir();
    let plan = kernel_cache::plan(
        program,
        arch,
        driver_version,
        kernel_cache::Sources {
            precompiled: precompiled.as_deref(),
            writable: dir.as_deref(),
        },
    );
    let loaded = load_cubin(ctx, program, plan);
    let skipped = match loaded {
        Ok((module, origin)) => {
            kernel_cache::count(origin.label(), "");
            let load = ProgramLoad {
                program: program.name,
                source: origin.label().into(),
                seconds: start.elapsed().as_secs_f64(),
            };
            return Ok((module, load));
        }
        Err(skipped) => skipped,
    };
    if mode == kernel_cache::KernelMode::CachedOnly {
        kernel_cache::count("refused_cached_only", "");
        return Err(GpuError::KernelNotPrecompiled(
            kernel_cache::cached_only_failure(program, arch, &skipped),
        ));
    }
    let module = compile_and_store(ctx, program, arch, driver_version, dir.as_deref())?;
    kernel_cache::count("compiled", "");
    let source = if skipped.is_empty() {
        "compiled".to_string()
    } else {
        let reasons: Vec<String> = skipped.iter().map(|s| s.to_string()).collect();
        format!("recompiled ({})", reasons.join("; "))
    };
    Ok((
        module,
        ProgramLoad {
            program: program.name,
            source,
            seconds: start.elapsed().as_secs_f64(),
        },
    ))
}

/// Loads the plan's cubins in order until the driver accepts one: that module and where it
/// came from, or every source skipped (the plan's own skips, then the cubins the driver
/// rejected). The skips are counted and logged either way.
fn load_cubin(
    ctx: &Arc<CudaContext>,
    program: &KernelProgram,
    plan: kernel_cache::Plan,
) -> Result<(Arc<CudaModule>, kernel_cache::Origin), Vec<kernel_cache::Skip>> {
    let mut skipped = plan.skipped;
    for candidate in plan.candidates {
        match ctx.load_module(cudarc::nvrtc::Ptx::from_binary(candidate.cubin)) {
            Ok(module) => {
                report_skips(program, &skipped);
                return Ok((module, candidate.origin));
            }
            Err(e) => skipped.push(kernel_cache::Skip {
                origin: candidate.origin,
                kind: "rejected_by_driver",
                reason: format!(
                    "{}: cubin rejected by the driver: {e}",
                    candidate.path.display()
                ),
            }),
        }
    }
    report_skips(program, &skipped);
    Err(skipped)
}

/// Counts each skipped source and logs why it was skipped.
fn report_skips(program: &KernelProgram, skipped: &[kernel_cache::Skip]) {
    for s in skipped {
        kernel_cache::count_skip(s);
        tracing::warn!(program = program.name, kind = s.kind, reason = %s, "kernel source skipped");
    }
}

/// Compiles `program` with NVRTC and loads it; the cubin goes into the writable cache
/// `dir` when there is one (a failed write is logged: the next start compiles again).
fn compile_and_store(
    ctx: &Arc<CudaContext>,
    program: &KernelProgram,
    arch: &str,
    driver_version: i32,
    dir: Option<&std::path::Path>,
) -> Result<Arc<CudaModule>, GpuError> {
    let compiled = compile::compile_program(program, arch)?;
    if !compiled.log.is_empty() {
        tracing::warn!(program = program.name, log = %compiled.log, "NVRTC warnings");
    }
    let module = ctx
        .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin.clone()))
        .map_err(driver("cuModuleLoadData"))?;
    if let Some(dir) = dir
        && let Err(e) = kernel_cache::store(
            dir,
            program,
            &kernel_cache::cache_key(program, arch, driver_version),
            &compiled.cubin,
        )
    {
        tracing::warn!(program = program.name, dir = %dir.display(), error = %e,
            "could not write the kernel cache; the next start compiles again");
    }
    Ok(module)
}

/// Every program of [`sources::PROGRAMS`], in parallel (NVRTC is single-threaded per
/// program); modules and loads in the order of `PROGRAMS`.
pub(crate) fn load_programs(
    ctx: &Arc<CudaContext>,
    arch: &str,
    driver_version: i32,
    mode: kernel_cache::KernelMode,
) -> Result<(Vec<Arc<CudaModule>>, Vec<ProgramLoad>), GpuError> {
    let results: Vec<Result<(Arc<CudaModule>, ProgramLoad), GpuError>> = std::thread::scope(|s| {
        let handles: Vec<_> = sources::PROGRAMS
            .iter()
            .map(|p| {
                s.spawn(move || {
                    ctx.bind_to_thread().map_err(driver("bind context"))?;
                    load_program(ctx, p, arch, driver_version, mode)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(GpuError::Compile("kernel build thread panicked".into()))
                })
            })
            .collect()
    });
    let mut modules = Vec::new();
    let mut loads = Vec::new();
    for r in results {
        let (m, l) = r?;
        modules.push(m);
        loads.push(l);
    }
    Ok((modules, loads))
}
