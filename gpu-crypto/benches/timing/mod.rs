//! Timing shared by the GPU benches (harness = false: they print tables, not criterion).

use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The fastest, median and slowest of `reps` timed calls (seconds), after one untimed
/// warm-up call.
#[allow(dead_code)] // the BLS and MSM benches include this module without using it
pub fn time_spread(reps: usize, mut f: impl FnMut()) -> [f64; 3] {
    f();
    let mut samples: Vec<f64> = (0..reps.max(1))
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    samples.sort_by(|a, b| a.total_cmp(b));
    [
        samples[0],
        samples[samples.len() / 2],
        samples[samples.len() - 1],
    ]
}

/// Median seconds of `reps` timed calls after one untimed warm-up call, whose result is
/// returned for checking (every call computes the same result).
pub fn time<T>(reps: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let out = f();
    let mut samples = Vec::new();
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        let _ = f();
        samples.push(t.elapsed().as_secs_f64());
    }
    (median(samples), out)
}
