//! Progress of the long commands on standard error, so that standard output stays the
//! result alone. On a terminal only: a line first says what runs and about how long, then a
//! bar or spinner follows the work. Elsewhere (a pipe, a log) nothing is printed, so that
//! standard error carries the errors alone (indicatif draws nothing there either).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::borrow::Cow;
use std::io::IsTerminal;
use std::time::Duration;

pub(crate) struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// `steps` steps, each named by [`Progress::step`] and counted by [`Progress::done`].
    pub(crate) fn bar(headline: &str, steps: u64) -> Progress {
        start_line(headline);
        let bar = ProgressBar::with_draw_target(Some(steps), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(
            // No ETA: entries differ in length by orders of magnitude (the start line
            // gives the estimate).
            "[{elapsed_precise}] [{bar:30}] {pos}/{len} {wide_msg}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        Progress { bar }
    }

    /// One step of unknown length: a spinner with the elapsed time.
    pub(crate) fn spinner(headline: &str) -> Progress {
        start_line(headline);
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}") {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress { bar }
    }

    /// Names what runs now.
    pub(crate) fn step(&self, what: impl Into<Cow<'static, str>>) {
        self.bar.set_message(what);
    }

    /// Counts `n` steps done.
    pub(crate) fn done(&self, n: u64) {
        self.bar.inc(n);
    }
}

impl Drop for Progress {
    /// The bar leaves no line behind: what follows on standard error starts clean.
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// What runs and about how long, on a terminal only (like the bar that follows it).
fn start_line(headline: &str) {
    if std::io::stderr().is_terminal() {
        eprintln!("{headline}");
    }
}

/// `seconds` as a rough duration: "25 s", "2 min".
pub(crate) fn about(seconds: f64) -> String {
    if seconds < 90.0 {
        format!("{} s", (seconds / 5.0).round().max(1.0) as u64 * 5)
    } else {
        format!("{} min", (seconds / 60.0).round() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::about;

    #[test]
    fn rough_durations() {
        assert_eq!(about(0.3), "5 s");
        assert_eq!(about(7.8), "10 s");
        assert_eq!(about(23.0), "25 s");
        assert_eq!(about(89.0), "90 s");
        assert_eq!(about(130.0), "2 min");
        assert_eq!(about(290.0), "5 min");
    }
}
