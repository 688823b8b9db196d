//! Timing shared by the GPU benches (harness = false: they print tables, not criterion).

use std::time::Instant;

/// Seconds of `reps` timed calls (at least one), sorted.
fn sorted_samples(reps: usize, mut f: impl FnMut()) -> Vec<f64> {
    let mut samples: Vec<f64> = (0..reps.max(1))
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    samples.sort_by(|a, b| a.total_cmp(b));
    samples
}

/// The fastest, median and slowest of `reps` timed calls (seconds), after one untimed
/// warm-up call.
#[allow(dead_code)] // the BLS and MSM benches include this module without using it
pub(crate) fn time_spread(reps: usize, mut f: impl FnMut()) -> [f64; 3] {
    f();
    let s = sorted_samples(reps, f);
    [s[0], s[s.len() / 2], s[s.len() - 1]]
}

/// Median seconds of `reps` timed calls after one untimed warm-up call, whose result is
/// returned for checking (every call computes the same result).
pub(crate) fn time<T>(reps: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let out = f();
    let s = sorted_samples(reps, || {
        let _ = f();
    });
    (s[s.len() / 2], out)
}
