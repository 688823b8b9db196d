//! Whole NI-DKG dealing verifications on the GPU (`NidkgBatchOps` over an engine with every
//! operation of a dealing pinned to the GPU and no CPU fallback) against `nidkg`'s own CPU
//! path: honest dealings from a fresh seed (printed) at n = 13 and 28 are accepted with the
//! same report, and dealings with a random bit flipped anywhere in the dealing get exactly
//! the CPU's verdict (the same rejected component). Ignored unless asked for: they need a
//! GPU.

mod gpu_common;

use gpu_common::{fresh_rng, nidkg_gpu_engine, ran};
use gpu_crypto::{NIDKG_OPERATIONS, NidkgBatchOps};
use gpu_crypto_api::stats::Executed;
use nidkg::{CpuBatchOps, DealingFile};
use rand::Rng;

/// The verdict as comparable text: the report's shape, or the rejected component.
fn verdict(result: &Result<nidkg::Report, nidkg::VerifyError>) -> String {
    match result {
        Ok(r) => format!("accepted n={} t={} epoch={}", r.n, r.t, r.epoch),
        Err(e) => format!("{}: {e}", e.component()),
    }
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn dealings_get_the_cpu_verdict_on_the_gpu() {
    let engine = nidkg_gpu_engine();
    let ops = NidkgBatchOps::new(&engine);
    let cpu = CpuBatchOps::rayon();
    let mut rng = fresh_rng("NIDKG_SEED", "dealings");
    for n in [13usize, 28] {
        let bytes = nidkg::deal(n, rng.r#gen()).expect("dealing");
        let on_gpu = nidkg::verify_with(&ops, &bytes);
        assert!(on_gpu.is_ok(), "n = {n}: {}", verdict(&on_gpu));
        assert_eq!(verdict(&on_gpu), verdict(&nidkg::verify_with(&cpu, &bytes)));
        eprintln!("n = {n}: {}", verdict(&on_gpu));
    }

    // Bit flips anywhere in the dealing of an n = 13 file (not the header or the keys).
    let bytes = nidkg::deal(13, rng.r#gen()).expect("dealing");
    let file = DealingFile::parse(&bytes).expect("parse");
    let dealing_start = bytes.len() - file.dealing.len();
    let mut rejected = 0;
    for _ in 0..24 {
        let mut changed = bytes.clone();
        let at = rng.gen_range(dealing_start..changed.len());
        changed[at] ^= 1 << rng.gen_range(0..8);
        let on_gpu = nidkg::verify_with(&ops, &changed);
        let on_cpu = nidkg::verify_with(&cpu, &changed);
        assert_eq!(verdict(&on_gpu), verdict(&on_cpu), "bit flip at byte {at}");
        assert!(
            !matches!(on_gpu, Err(ref e) if e.is_backend_failure()),
            "{}",
            verdict(&on_gpu)
        );
        rejected += usize::from(on_gpu.is_err());
    }
    assert_eq!(rejected, 24, "every flipped bit is rejected");
    // The batches really ran on the GPU.
    for op in NIDKG_OPERATIONS {
        assert!(
            ran(&engine, op, Executed::Gpu),
            "{op} never ran on the GPU: {:?}",
            engine.stats()
        );
        assert!(
            !ran(&engine, op, Executed::Cpu),
            "{op} ran on the CPU: {:?}",
            engine.stats()
        );
    }
}
