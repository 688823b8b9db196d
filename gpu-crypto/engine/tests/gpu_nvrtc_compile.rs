//! Every kernel program compiles with NVRTC for every target architecture (sm_90:
//! H100/H200; sm_120: RTX PRO 6000 Blackwell) with no warning; no GPU needed. Ignored
//! unless asked for (`--include-ignored`): it needs NVRTC, which CI installs from the
//! `nvidia-cuda-nvrtc` wheel (see docs/gpu.md).

mod gpu_common;

use gpu_crypto::kernels::compile_program;
use gpu_crypto::kernels::{BENCH_PROGRAMS, PROGRAMS, TARGET_ARCHS};

#[test]
#[ignore = "needs NVRTC: compiles every kernel for every target architecture"]
fn every_kernel_compiles_without_warnings_for_every_target_arch() {
    let version = gpu_common::nvrtc();
    eprintln!("NVRTC {}.{}", version.0, version.1);
    // Compile every (program, arch) pair on its own thread: NVRTC is single-threaded.
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = PROGRAMS
            .iter()
            .chain(BENCH_PROGRAMS)
            .flat_map(|p| TARGET_ARCHS.iter().map(move |a| (p, *a)))
            .map(|(p, a)| s.spawn(move || (p.name, a, compile_program(p, a))))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("compile thread"))
            .collect()
    });
    let mut failures = Vec::new();
    for (name, arch, r) in results {
        match r {
            Ok(c) if c.log.is_empty() => {
                eprintln!(
                    "{name} {arch}: {} bytes of cubin in {:.1} s",
                    c.cubin.len(),
                    c.seconds
                )
            }
            Ok(c) => failures.push(format!("{name} {arch}: warnings:\n{}", c.log)),
            Err(e) => failures.push(format!("{name} {arch}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
