//! Timing shared by the GPU benches (harness = false: they print tables, not criterion).

use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
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
