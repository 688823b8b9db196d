//! The kernel's CPU clocks: what the host's cores paid, as opposed to the wall clock.

/// The process's CPU time so far (user and system, every thread), where the clock reads.
pub(crate) fn process_seconds() -> Option<f64> {
    read(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// The calling thread's CPU time so far (user and system), where the clock reads.
pub(crate) fn thread_seconds() -> Option<f64> {
    read(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn read(clock: libc::clockid_t) -> Option<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec and `clock` one of the kernel's constants.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    (rc == 0).then_some(ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_thread_advances_its_own_clock_and_the_process_clock() {
        let (p0, t0) = (process_seconds().unwrap(), thread_seconds().unwrap());
        // Busy for 50 ms of wall time: a thread clock that does not count CPU stays behind.
        let wall = std::time::Instant::now();
        let mut x = 0u64;
        while wall.elapsed().as_secs_f64() < 0.05 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let (p1, t1) = (process_seconds().unwrap(), thread_seconds().unwrap());
        // Most of the wall time, unless the machine took the core away for long.
        assert!(t1 - t0 >= 0.01, "thread clock advanced {} s", t1 - t0);
        assert!(t1 - t0 <= wall.elapsed().as_secs_f64() + 1e-3);
        // The process clock counts this thread too.
        assert!(
            p1 - p0 >= t1 - t0 - 1e-3,
            "process {} thread {}",
            p1 - p0,
            t1 - t0
        );
    }
}
