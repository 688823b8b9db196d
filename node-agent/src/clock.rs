//! Time as the agent's loops see it; tests substitute a manual clock so output is fixed.

use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Wall-clock and monotonic time.
pub trait Clock: Send + Sync {
    /// Wall-clock time, seconds since the Unix epoch.
    fn unix_seconds(&self) -> f64;
    /// Monotonic seconds (any origin), for durations.
    fn monotonic_seconds(&self) -> f64;
}

/// The system's clocks; monotonic time counts from the clock's creation.
pub(crate) struct SystemClock {
    origin: Instant,
}

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock {
            origin: Instant::now(),
        }
    }
}

impl Clock for SystemClock {
    fn unix_seconds(&self) -> f64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0)
    }
    fn monotonic_seconds(&self) -> f64 {
        self.origin.elapsed().as_secs_f64()
    }
}

/// A clock that only moves when told to.
#[derive(Default)]
pub struct ManualClock(Mutex<f64>);

impl ManualClock {
    /// A clock standing at `unix_seconds`; its monotonic time is the same value.
    pub fn new(unix_seconds: f64) -> ManualClock {
        ManualClock(Mutex::new(unix_seconds))
    }
    /// Moves the clock forward by `seconds`.
    pub fn advance(&self, seconds: f64) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) += seconds;
    }
}

impl Clock for ManualClock {
    fn unix_seconds(&self) -> f64 {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
    fn monotonic_seconds(&self) -> f64 {
        self.unix_seconds()
    }
}
