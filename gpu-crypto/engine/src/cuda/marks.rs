//! CUDA events recorded between a call's launches when its profiling switch is on: the GPU
//! time of each step, as opposed to the host's wall time of the phases.

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream};
use std::fmt::Display;

pub(crate) struct StreamMarks {
    enabled: bool,
    events: Vec<(String, CudaEvent)>,
}

impl StreamMarks {
    pub(crate) fn new(enabled: bool) -> StreamMarks {
        StreamMarks {
            enabled,
            events: Vec::new(),
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    /// Records an event named `what` on `stream`; nothing (not even `what`'s formatting)
    /// when profiling is off. A failed event leaves a gap in the report, nothing else.
    pub(crate) fn mark(&mut self, stream: &CudaStream, what: impl Display) {
        if !self.enabled {
            return;
        }
        if let Ok(e) = stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT)) {
            self.events.push((what.to_string(), e));
        }
    }

    /// "upload 0.210 ms, leaves 20.100 ms, ..." (each step since the previous mark).
    pub(crate) fn report(&self) -> String {
        self.events
            .windows(2)
            .filter_map(|pair| {
                let ((_, a), (what, b)) = (&pair[0], &pair[1]);
                a.elapsed_ms(b).ok().map(|ms| format!("{what} {ms:.3} ms"))
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}
