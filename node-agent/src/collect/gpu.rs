//! GPU telemetry through NVML: read on the collector's interval (never per request),
//! plus a thread that waits for critical XID events.

use crate::snapshot::GpuSample;
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{
    Clock, ClockId, EccCounter, MemoryError, TemperatureSensor,
};
use nvml_wrapper::error::NvmlError;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Where GPU samples come from: NVML on a node, or samples recorded from a real GPU.
pub trait GpuSource: Send {
    /// One sample per GPU; Err when the source as a whole cannot be read.
    fn sample(&mut self) -> Result<Vec<GpuSample>, String>;
}

/// (gpu index, xid) -> count, filled by the event thread.
type XidCounts = Arc<Mutex<BTreeMap<(u32, u64), u64>>>;

pub struct NvmlSource {
    nvml: Nvml,
    xid: XidCounts,
    /// Why the XID watcher is not running, if it is not.
    pub xid_watch_error: Option<String>,
}

impl NvmlSource {
    /// Loads libnvidia-ml and starts the XID event watcher.
    pub fn open() -> Result<NvmlSource, NvmlError> {
        let nvml = Nvml::init()?;
        let xid: XidCounts = Arc::default();
        let xid_watch_error = start_xid_watcher(Arc::clone(&xid)).err();
        if let Some(e) = &xid_watch_error {
            tracing::warn!(error = %e, "NVML XID events unavailable; XID counts not exported");
        }
        Ok(NvmlSource {
            nvml,
            xid,
            xid_watch_error,
        })
    }
}

/// Registers every GPU for critical XID events on a thread of its own (nvmlEventSetWait
/// blocks) with its own NVML handle (NVML counts init/shutdown references).
fn start_xid_watcher(counts: XidCounts) -> Result<(), String> {
    let (tx, rx) = std::sync::mpsc::channel::<Result<(), String>>();
    std::thread::Builder::new()
        .name("nvml-xid".into())
        .spawn(move || {
            let setup = || -> Result<(Nvml, Vec<(String, u32)>), String> {
                let nvml = Nvml::init().map_err(|e| e.to_string())?;
                let n = nvml.device_count().map_err(|e| e.to_string())?;
                let mut uuids = Vec::new();
                for i in 0..n {
                    let d = nvml.device_by_index(i).map_err(|e| e.to_string())?;
                    uuids.push((d.uuid().map_err(|e| e.to_string())?, i));
                }
                Ok((nvml, uuids))
            };
            let (nvml, uuids) = match setup() {
                Ok(v) => v,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            };
            let mut set = match nvml.create_event_set() {
                Ok(s) => s,
                Err(e) => {
                    let _ = tx.send(Err(e.to_string()));
                    return;
                }
            };
            for (_, i) in &uuids {
                let registered = nvml
                    .device_by_index(*i)
                    .map_err(|e| e.to_string())
                    .and_then(|d| {
                        d.register_events(
                            nvml_wrapper::bitmasks::event::EventTypes::CRITICAL_XID_ERROR,
                            set,
                        )
                        .map_err(|e| e.to_string())
                    });
                match registered {
                    Ok(s) => set = s,
                    Err(e) => {
                        let _ = tx.send(Err(format!("GPU {i}: {e}")));
                        return;
                    }
                }
            }
            let _ = tx.send(Ok(()));
            loop {
                match set.wait(5_000) {
                    Ok(event) => {
                        let xid = match event.event_data {
                            Some(nvml_wrapper::enums::event::XidError::Value(v)) => v,
                            _ => 0,
                        };
                        let index = event
                            .device
                            .uuid()
                            .ok()
                            .and_then(|u| uuids.iter().find(|(x, _)| *x == u).map(|(_, i)| *i))
                            .unwrap_or(u32::MAX);
                        tracing::error!(gpu = index, xid, "NVML critical XID error");
                        let mut m = counts.lock().unwrap_or_else(|p| p.into_inner());
                        *m.entry((index, xid)).or_default() += 1;
                    }
                    Err(NvmlError::Timeout) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, "NVML event wait failed; XID watcher stops");
                        return;
                    }
                }
            }
        })
        .map_err(|e| e.to_string())?;
    rx.recv()
        .map_err(|_| "XID watcher thread ended during setup".to_string())?
}

impl GpuSource for NvmlSource {
    fn sample(&mut self) -> Result<Vec<GpuSample>, String> {
        let nvml = &self.nvml;
        let count = nvml.device_count().map_err(|e| e.to_string())?;
        let driver_version = nvml.sys_driver_version().unwrap_or_default();
        let xid = self.xid.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut out = Vec::new();
        for index in 0..count {
            let d = nvml
                .device_by_index(index)
                .map_err(|e| format!("GPU {index}: {e}"))?;
            let mut s = GpuSample {
                index,
                driver_version: driver_version.clone(),
                ..GpuSample::default()
            };
            let mut unsupported = Vec::new();
            fn get<T>(
                what: &str,
                r: Result<T, NvmlError>,
                unsupported: &mut Vec<String>,
            ) -> Option<T> {
                r.map_err(|e| unsupported.push(format!("{what}: {e}"))).ok()
            }
            let u = &mut unsupported;
            s.name = get("name", d.name(), u).unwrap_or_default();
            s.uuid = get("uuid", d.uuid(), u).unwrap_or_default();
            s.power_watts = get("power", d.power_usage(), u).map(|mw| f64::from(mw) / 1e3);
            s.energy_joules =
                get("energy", d.total_energy_consumption(), u).map(|mj| mj as f64 / 1e3);
            s.temperature_celsius =
                get("temperature", d.temperature(TemperatureSensor::Gpu), u).map(f64::from);
            if let Some(util) = get("utilization", d.utilization_rates(), u) {
                s.utilization_gpu_ratio = Some(f64::from(util.gpu) / 100.0);
                s.utilization_memory_ratio = Some(f64::from(util.memory) / 100.0);
            }
            if let Some(mem) = get("memory", d.memory_info(), u) {
                s.memory_used_bytes = Some(mem.used);
                s.memory_total_bytes = Some(mem.total);
            }
            let mhz = |v: u32| f64::from(v) * 1e6;
            s.clock_graphics_hertz = get(
                "clock graphics",
                d.clock(Clock::Graphics, ClockId::Current),
                u,
            )
            .map(mhz);
            s.clock_sm_hertz = get("clock sm", d.clock(Clock::SM, ClockId::Current), u).map(mhz);
            s.clock_memory_hertz =
                get("clock memory", d.clock(Clock::Memory, ClockId::Current), u).map(mhz);
            if let Some(reasons) = get("throttle reasons", d.current_throttle_reasons(), u) {
                s.throttle_reasons_active = reasons
                    .iter_names()
                    .map(|(name, _)| name.to_ascii_lowercase())
                    .collect();
            }
            s.ecc_corrected_errors_total = get(
                "ecc corrected",
                d.total_ecc_errors(MemoryError::Corrected, EccCounter::Volatile),
                u,
            );
            s.ecc_uncorrected_errors_total = get(
                "ecc uncorrected",
                d.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile),
                u,
            );
            s.cc_enabled = get("cc mode", d.is_cc_enabled(), u);
            s.xid_errors = xid
                .iter()
                .filter(|((gpu, _), _)| *gpu == index)
                .map(|((_, x), n)| (*x, *n))
                .collect();
            if let Some(e) = &self.xid_watch_error {
                unsupported.push(format!("xid events: {e}"));
            }
            s.unsupported = unsupported;
            out.push(s);
        }
        Ok(out)
    }
}

/// Samples recorded from a real GPU (JSON lines or a JSON array per sample), replayed in
/// order; the last one repeats. For tests and for running the agent on recorded data.
pub struct RecordedGpuSource {
    samples: Vec<Vec<GpuSample>>,
    next: usize,
}

impl RecordedGpuSource {
    /// `text`: a JSON array of samples, each sample an array of GPUs.
    pub fn from_json(text: &str) -> Result<RecordedGpuSource, serde_json::Error> {
        let samples: Vec<Vec<GpuSample>> = serde_json::from_str(text)?;
        Ok(RecordedGpuSource { samples, next: 0 })
    }
}

impl GpuSource for RecordedGpuSource {
    fn sample(&mut self) -> Result<Vec<GpuSample>, String> {
        let i = self.next.min(self.samples.len().saturating_sub(1));
        self.next += 1;
        self.samples
            .get(i)
            .cloned()
            .ok_or_else(|| "no recorded GPU samples".to_string())
    }
}
