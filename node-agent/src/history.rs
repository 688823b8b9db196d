//! The node's recent history: a bounded in-memory ring of its key series (power, cost, GPU
//! load, crypto work per path, errors, replica heights, pinning), at least the last hour,
//! served as `GET /v1/history` and drawn by the dashboard.
//!
//! Memory is fixed when the ring is made: every series holds `capacity` values (`f64`, NaN
//! for "no value"), preallocated, and at most [`MAX_SERIES`] series exist at once.
//! [`History::heap_bytes`] is the exact size of everything it allocates.

use crate::snapshot::Snapshot;
use gpu_crypto_api::stats::{Executed, StatsSnapshot};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

/// Schema name of the `/v1/history` document.
pub const SCHEMA: &str = "sovereign-node/history/v1";
/// How far back the ring reaches, at least.
pub const SPAN_SECONDS: f64 = 3600.0;
/// The closest two points may be: collection intervals shorter than this are recorded at
/// this spacing, so that the ring never holds more than `SPAN_SECONDS / MIN_SPACING_SECONDS
/// + 1` points per series.
pub const MIN_SPACING_SECONDS: f64 = 1.0;
/// At most this many series at once (23 fixed ones plus 4 per GPU fit 18 GPUs); a series
/// beyond it is not recorded and counted in `series_refused_total`.
pub const MAX_SERIES: usize = 96;

/// What one series is: its name (the metric it follows), unit and labels.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct SeriesKey {
    /// The series' name, after the metric it follows ("gpu_power_watts").
    pub name: &'static str,
    /// The unit of its values, as the dashboard shows it ("W", "bytes", "blocks").
    pub unit: &'static str,
    /// Label pairs, sorted by label name.
    #[serde(serialize_with = "labels_as_map")]
    pub labels: Vec<(&'static str, String)>,
}

fn labels_as_map<S: Serializer>(
    labels: &[(&'static str, String)],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(labels.len()))?;
    for (k, v) in labels {
        map.serialize_entry(k, v)?;
    }
    map.end()
}

impl SeriesKey {
    fn new(name: &'static str, unit: &'static str, labels: Vec<(&'static str, String)>) -> Self {
        SeriesKey { name, unit, labels }
    }

    fn heap_bytes(&self) -> usize {
        self.labels.capacity() * std::mem::size_of::<(&'static str, String)>()
            + self.labels.iter().map(|(_, v)| v.capacity()).sum::<usize>()
    }
}

struct Series {
    key: SeriesKey,
    /// One slot per ring position; NaN where the series had no value.
    values: Vec<f64>,
    /// Slots holding a finite value: at 0 the series has left the window and is removed.
    finite: usize,
}

/// Counter readings at the last recorded point, for per-interval rates and increases.
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    /// Items by (operation index, cpu/gpu).
    items: [[u64; 2]; gpu_crypto::Operation::ALL.len()],
    gpu_errors: u64,
    fallbacks: u64,
    pinning_reapplied: u64,
}

impl Counters {
    fn read(s: &Snapshot) -> Counters {
        let mut c = Counters::default();
        for o in &s.crypto.stats.operations {
            let op = op_index(o.operation);
            c.items[op][path_index(o.executed)] = o.items;
        }
        c.gpu_errors = reason_total(&s.crypto.stats, |st| &st.gpu_errors);
        c.fallbacks = reason_total(&s.crypto.stats, |st| &st.fallbacks);
        c.pinning_reapplied = s.pinning.reapplied_total;
        c
    }
}

fn reason_total(
    stats: &StatsSnapshot,
    pick: impl Fn(&StatsSnapshot) -> &Vec<gpu_crypto_api::stats::ReasonCount>,
) -> u64 {
    pick(stats).iter().map(|r| r.count).sum()
}

fn op_index(op: gpu_crypto::Operation) -> usize {
    gpu_crypto::Operation::ALL
        .iter()
        .position(|o| *o == op)
        .unwrap_or(0)
}

fn path_index(on: Executed) -> usize {
    match on {
        Executed::Cpu => 0,
        Executed::Gpu => 1,
    }
}

const PATHS: [&str; 2] = ["cpu", "gpu"];

/// The ring. Points are appended at most once per `spacing_seconds`; the oldest is
/// overwritten once `capacity` points are held.
pub struct History {
    collect_interval_seconds: f64,
    spacing_seconds: f64,
    capacity: usize,
    /// Ring position of the oldest point.
    start: usize,
    len: usize,
    timestamps: Vec<f64>,
    /// Sorted by key, so the document's order is stable.
    series: Vec<Series>,
    previous: Option<(f64, Counters)>,
    series_refused_total: u64,
    /// Times the wall clock stepped back and the ring was cleared.
    clock_steps_back_total: u64,
}

impl History {
    /// A ring holding at least [`SPAN_SECONDS`] at the given collection interval.
    pub fn new(collect_interval_seconds: f64) -> History {
        let interval = if collect_interval_seconds.is_finite() && collect_interval_seconds > 0.0 {
            collect_interval_seconds
        } else {
            MIN_SPACING_SECONDS
        };
        let spacing_seconds = interval.max(MIN_SPACING_SECONDS);
        let capacity = (SPAN_SECONDS / spacing_seconds).ceil() as usize + 1;
        History {
            collect_interval_seconds: interval,
            spacing_seconds,
            capacity,
            start: 0,
            len: 0,
            timestamps: vec![f64::NAN; capacity],
            series: Vec::with_capacity(MAX_SERIES),
            previous: None,
            series_refused_total: 0,
            clock_steps_back_total: 0,
        }
    }

    /// Points the ring holds at most, per series.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Points held now.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No point is held yet (or the ring was cleared).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The least time between two points, seconds: the collection interval, at least
    /// [`MIN_SPACING_SECONDS`].
    pub fn spacing_seconds(&self) -> f64 {
        self.spacing_seconds
    }

    /// Series held now.
    pub fn series_count(&self) -> usize {
        self.series.len()
    }

    /// Bytes one series' values take: `capacity` f64 slots.
    pub fn bytes_per_series(&self) -> usize {
        self.capacity * std::mem::size_of::<f64>()
    }

    /// Everything the ring has allocated on the heap, in bytes: the timestamps, the series
    /// table (reserved for [`MAX_SERIES`]), each series' values and label strings.
    pub fn heap_bytes(&self) -> usize {
        self.timestamps.capacity() * std::mem::size_of::<f64>()
            + self.series.capacity() * std::mem::size_of::<Series>()
            + self
                .series
                .iter()
                .map(|s| s.values.capacity() * std::mem::size_of::<f64>() + s.key.heap_bytes())
                .sum::<usize>()
    }

    /// The most [`heap_bytes`](Self::heap_bytes) can reach apart from label strings: every
    /// series slot in use.
    pub fn heap_bytes_bound_without_labels(&self) -> usize {
        self.capacity * std::mem::size_of::<f64>()
            + MAX_SERIES * std::mem::size_of::<Series>()
            + MAX_SERIES * self.bytes_per_series()
    }

    /// Records a collection cycle, if at least `spacing_seconds` passed since the last
    /// recorded one. Returns whether a point was appended.
    pub fn record(&mut self, snapshot: &Snapshot) -> bool {
        let t = snapshot.taken_at_unix_seconds;
        if !t.is_finite() {
            return false;
        }
        if let Some(last) = self.last_timestamp() {
            if t < last {
                // The wall clock stepped back: the ring's time axis would no longer be
                // monotonic. Start again rather than draw a line backwards in time.
                tracing::warn!(
                    from = last,
                    to = t,
                    "wall clock stepped back; history cleared"
                );
                self.clear();
                self.clock_steps_back_total += 1;
            } else if t - last < self.spacing_seconds * (1.0 - 1e-9) {
                return false;
            }
        }
        let counters = Counters::read(snapshot);
        let values = self.values_of(snapshot, t, &counters);
        self.previous = Some((t, counters));
        self.append(t, values);
        true
    }

    fn last_timestamp(&self) -> Option<f64> {
        (self.len > 0).then(|| self.timestamps[self.slot(self.len - 1)])
    }

    fn slot(&self, i: usize) -> usize {
        (self.start + i) % self.capacity
    }

    fn clear(&mut self) {
        self.start = 0;
        self.len = 0;
        self.series.clear();
        self.previous = None;
    }

    /// The values of one point: gauges as read, counters as per-second rates or increases
    /// since the previous point (none for the first point, or after a counter went down).
    fn values_of(&self, snapshot: &Snapshot, t: f64, now: &Counters) -> Vec<(SeriesKey, f64)> {
        let mut values = Vec::with_capacity(32);
        cost_values(&snapshot.cost, &mut values);
        gpu_values(&snapshot.gpus, &mut values);
        let previous = self.previous.filter(|(t0, _)| t > *t0);
        crypto_rates(previous, t, now, &mut values);
        counter_increases(previous.map(|(_, before)| before), now, &mut values);
        replica_values(snapshot.replica.health.as_ref(), &mut values);
        values
    }

    fn append(&mut self, t: f64, values: Vec<(SeriesKey, f64)>) {
        let slot = if self.len < self.capacity {
            self.len += 1;
            self.slot(self.len - 1)
        } else {
            let slot = self.start;
            self.start = (self.start + 1) % self.capacity;
            slot
        };
        self.timestamps[slot] = t;
        // Every series first gets "no value" at this slot, then the values present.
        for s in &mut self.series {
            if s.values[slot].is_finite() {
                s.finite -= 1;
            }
            s.values[slot] = f64::NAN;
        }
        for (key, value) in values {
            if !value.is_finite() {
                continue;
            }
            let index = match self.series.binary_search_by(|s| s.key.cmp(&key)) {
                Ok(i) => i,
                Err(i) => {
                    if self.series.len() >= MAX_SERIES {
                        self.series_refused_total += 1;
                        continue;
                    }
                    self.series.insert(
                        i,
                        Series {
                            key,
                            values: vec![f64::NAN; self.capacity],
                            finite: 0,
                        },
                    );
                    i
                }
            };
            let s = &mut self.series[index];
            s.values[slot] = value;
            s.finite += 1;
        }
        // A series with no value left in the window (a GPU that went away) frees its slot.
        self.series.retain(|s| s.finite > 0);
    }

    /// The `/v1/history` document (schema in docs/node-agent.md).
    pub fn document(&self) -> HistoryDocument<'_> {
        HistoryDocument { history: self }
    }
}

/// Node power and the cost per hour.
fn cost_values(cost: &crate::snapshot::CostStatus, values: &mut Vec<(SeriesKey, f64)>) {
    values.push((
        SeriesKey::new("node_power_watts", "W", vec![]),
        cost.power_watts,
    ));
    for (part, value) in [
        ("total", cost.eur_per_hour),
        ("energy", cost.energy_eur_per_hour),
    ] {
        values.push((
            SeriesKey::new("cost_eur_per_hour", "EUR/h", vec![("part", part.into())]),
            value,
        ));
    }
}

/// Each GPU's utilisation, memory, temperature and power (NaN where not read).
fn gpu_values(gpus: &[crate::snapshot::GpuSample], values: &mut Vec<(SeriesKey, f64)>) {
    for g in gpus {
        let gpu = || vec![("gpu", g.index.to_string())];
        let opt = |x: Option<f64>| x.unwrap_or(f64::NAN);
        values.push((
            SeriesKey::new("gpu_utilization_ratio", "ratio", gpu()),
            opt(g.utilization_gpu_ratio),
        ));
        values.push((
            SeriesKey::new("gpu_memory_used_bytes", "bytes", gpu()),
            opt(g.memory_used_bytes.map(|b| b as f64)),
        ));
        values.push((
            SeriesKey::new("gpu_temperature_celsius", "°C", gpu()),
            opt(g.temperature_celsius),
        ));
        values.push((
            SeriesKey::new("gpu_power_watts", "W", gpu()),
            opt(g.power_watts),
        ));
    }
}

/// Crypto items per second of each operation and path since `previous` (time, counters),
/// NaN without one.
fn crypto_rates(
    previous: Option<(f64, Counters)>,
    t: f64,
    now: &Counters,
    values: &mut Vec<(SeriesKey, f64)>,
) {
    for (i, op) in gpu_crypto::Operation::ALL.iter().enumerate() {
        for (p, path) in PATHS.iter().enumerate() {
            let rate = previous.map_or(f64::NAN, |(t0, before)| {
                rate(before.items[i][p], now.items[i][p], t - t0)
            });
            values.push((
                SeriesKey::new(
                    "crypto_items_per_second",
                    "items/s",
                    vec![
                        ("executed", (*path).into()),
                        ("operation", op.name().into()),
                    ],
                ),
                rate,
            ));
        }
    }
}

/// GPU errors, fallbacks and pinning re-applications since `before`, NaN without it or
/// after a counter went down.
fn counter_increases(before: Option<Counters>, now: &Counters, values: &mut Vec<(SeriesKey, f64)>) {
    let increase = |pick: fn(&Counters) -> u64| {
        before.map_or(f64::NAN, |before| {
            pick(now)
                .checked_sub(pick(&before))
                .map_or(f64::NAN, |d| d as f64)
        })
    };
    values.push((
        SeriesKey::new("crypto_gpu_errors_increase", "errors", vec![]),
        increase(|c| c.gpu_errors),
    ));
    values.push((
        SeriesKey::new("crypto_fallbacks_increase", "calls", vec![]),
        increase(|c| c.fallbacks),
    ));
    values.push((
        SeriesKey::new("pinning_reapplied_increase", "times", vec![]),
        increase(|c| c.pinning_reapplied),
    ));
}

/// The replica's heights and certification lag (NaN while it is not read).
fn replica_values(
    health: Option<&crate::snapshot::ReplicaHealth>,
    values: &mut Vec<(SeriesKey, f64)>,
) {
    let replica = |f: fn(&crate::snapshot::ReplicaHealth) -> Option<f64>| {
        health.and_then(f).unwrap_or(f64::NAN)
    };
    values.push((
        SeriesKey::new("replica_finalized_height", "blocks", vec![]),
        replica(|h| h.finalized_height),
    ));
    values.push((
        SeriesKey::new("replica_certified_height", "blocks", vec![]),
        replica(|h| h.certified_height),
    ));
    values.push((
        SeriesKey::new("replica_certification_lag_blocks", "blocks", vec![]),
        replica(|h| h.certification_lag_blocks()),
    ));
}

fn rate(before: u64, now: u64, dt: f64) -> f64 {
    match now.checked_sub(before) {
        Some(d) if dt > 0.0 => d as f64 / dt,
        _ => f64::NAN,
    }
}

/// Serialises a [`History`] oldest point first, without copying it.
pub struct HistoryDocument<'a> {
    history: &'a History,
}

/// The ring positions of one column, oldest first; NaN is written as `null`.
struct Column<'a> {
    history: &'a History,
    values: &'a [f64],
}

impl Serialize for Column<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let h = self.history;
        serializer.collect_seq((0..h.len).map(|i| {
            let v = self.values[h.slot(i)];
            v.is_finite().then_some(v)
        }))
    }
}

#[derive(Serialize)]
struct SeriesDocument<'a> {
    #[serde(flatten)]
    key: &'a SeriesKey,
    values: Column<'a>,
}

struct SeriesList<'a>(&'a History);

impl Serialize for SeriesList<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.series.iter().map(|s| SeriesDocument {
            key: &s.key,
            values: Column {
                history: self.0,
                values: &s.values,
            },
        }))
    }
}

impl Serialize for HistoryDocument<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let h = self.history;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("schema", SCHEMA)?;
        map.serialize_entry("collect_interval_seconds", &h.collect_interval_seconds)?;
        map.serialize_entry("spacing_seconds", &h.spacing_seconds)?;
        map.serialize_entry("capacity", &h.capacity)?;
        map.serialize_entry("points", &h.len)?;
        map.serialize_entry(
            "timestamps_unix_seconds",
            &Column {
                history: h,
                values: &h.timestamps,
            },
        )?;
        map.serialize_entry("series", &SeriesList(h))?;
        map.serialize_entry("max_series", &MAX_SERIES)?;
        map.serialize_entry("series_refused_total", &h.series_refused_total)?;
        map.serialize_entry("clock_steps_back_total", &h.clock_steps_back_total)?;
        map.serialize_entry("bytes_per_series", &h.bytes_per_series())?;
        map.serialize_entry("heap_bytes", &h.heap_bytes())?;
        map.end()
    }
}
