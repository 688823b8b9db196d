//! Batches of NI-DKG dealings on the GPU (`nidkg::verify_batch` over `NidkgBatchOps` with
//! every operation pinned to the GPU and no CPU fallback), with the combined checks,
//! against the CPU's exact checks: a batch of honest dealings from fresh seeds (printed)
//! with one element of some dealings replaced by another valid point gets the CPU's verdict
//! for every dealing, and only the changed ones fail. Ignored unless asked for: it needs a
//! GPU.

mod gpu_common;

use gpu_common::{fresh_rng, nidkg_gpu_engine, ran};
use gpu_crypto::{NIDKG_OPERATIONS, NidkgBatchOps};
use gpu_crypto_api::stats::Executed;
use ic_bls12_381::{G1Affine, G1Projective, G2Affine, G2Projective};
use nidkg::{Checks, CpuBatchOps, DealingInput, DemoSetup, ThresholdKind, verify_batch};
use rand::Rng;

fn bump_g1(p: &mut G1Affine) {
    *p = G1Affine::from(G1Projective::from(*p) + G1Projective::generator());
}

fn bump_g2(p: &mut G2Affine) {
    *p = G2Affine::from(G2Projective::from(*p) + G2Projective::generator());
}

/// The element stream of `setup`'s dealing with change `which` applied (0: none).
fn changed_stream(setup: &DemoSetup, which: usize) -> Vec<u8> {
    let mut d = setup.dealing.clone();
    match which {
        0 => {}
        1 => bump_g1(&mut d.ciphertext.ss[3]),
        2 => bump_g1(&mut d.chunking.dd[2]),
        3 => bump_g1(&mut d.ciphertext.cc[1][5]),
        4 => bump_g2(&mut d.sharing.aa),
        _ => bump_g1(&mut d.sharing.ff),
    }
    d.to_element_stream()
}

#[test]
#[ignore = "needs a GPU: compares the CUDA backend with the CPU reference"]
fn a_batch_of_dealings_gets_the_cpu_verdict_for_each_on_the_gpu() {
    let engine = nidkg_gpu_engine();
    let ops = NidkgBatchOps::new(&engine);
    let mut rng = fresh_rng("NIDKG_SEED", "dealing batch");
    let setups: Vec<DemoSetup> = (0..4)
        .map(|_| DemoSetup::new(13, ThresholdKind::High, rng.r#gen()).expect("dealing"))
        .collect();
    let mut streams = Vec::new();
    for (i, setup) in setups.iter().enumerate() {
        streams.push((i, changed_stream(setup, 0)));
        streams.push((i, changed_stream(setup, 1 + i)));
    }
    streams.push((0, changed_stream(&setups[0], 5)));
    let inputs: Vec<DealingInput<'_>> = streams
        .iter()
        .map(|(i, stream)| DealingInput {
            receiver_keys: &setups[*i].file.receiver_keys,
            t: setups[*i].file.t,
            epoch: setups[*i].file.epoch,
            associated_data: &setups[*i].file.associated_data,
            stream,
        })
        .collect();
    let on_gpu = verify_batch(&ops, &inputs, Checks::Combined).verdicts;
    let on_cpu = verify_batch(&CpuBatchOps::rayon(), &inputs, Checks::Exact).verdicts;
    assert_eq!(on_gpu, on_cpu);
    for (k, v) in on_gpu.iter().enumerate() {
        // Even positions are the honest dealings.
        assert_eq!(v.is_ok(), k % 2 == 0 && k < 8, "dealing {k}: {v:?}");
        assert!(
            !matches!(v, Err(e) if e.is_backend_failure()),
            "dealing {k}: {v:?}"
        );
        eprintln!("dealing {k}: {v:?}");
    }
    for op in NIDKG_OPERATIONS {
        assert!(
            ran(&engine, op, Executed::Gpu),
            "{op} never ran on the GPU: {:?}",
            engine.stats()
        );
    }
}
