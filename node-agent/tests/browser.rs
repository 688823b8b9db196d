//! The dashboard in headless Chromium: the snapshot sections filled from /v1/status, and the
//! history plots drawn from /v1/history after the agent collected a few cycles (the DOM is
//! read back with --dump-dom, and a screenshot is written for a person to look at).

mod common;

use common::*;
use gpu_crypto::Operation;
use gpu_crypto_api::stats::{Executed, OperationCount};
use node_agent::clock::ManualClock;
use node_agent::collect::gpu::RecordedGpuSource;
use node_agent::history::History;
use node_agent::routes::{AppState, Heartbeat, router};
use node_agent::snapshot::Snapshot;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn chromium() -> PathBuf {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|p| p.join(name))
                    .find(|p| p.is_file())
            })
        })
        .expect("needs chromium (Debian package chromium) on PATH")
}

/// Runs headless Chromium on `url` with a fresh profile; `extra` adds e.g. --dump-dom.
/// Returns standard output.
fn headless(url: &str, extra: &[String]) -> String {
    let profile_dir = tempfile::tempdir().unwrap();
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--window-size=1400,1700",
            // Virtual time does not advance while fetches are pending, so the DOM dumped
            // after it may be later than the first paint: what the first render drew is
            // read from the page's own record (`first_render`). 3 s end before the page's
            // first refresh (every 5 s).
            "--virtual-time-budget=3000",
        ])
        .args(extra)
        .arg(format!("--user-data-dir={}", profile_dir.path().display()))
        .arg(url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What the page's first render drew, from its `<body data-first-render>`: whether the
/// status sections were filled, and each plot's caption with its number of series.
fn first_render(dom: &str) -> (bool, Vec<(String, usize)>) {
    let record = dom
        .split("data-first-render=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_else(|| panic!("the page recorded no first render: {dom}"));
    let mut parts = record.split('|');
    let status = parts.next() == Some("status");
    let plots = parts
        .find_map(|p| p.strip_prefix("plots:"))
        .unwrap_or("")
        .split(';')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (caption, n) = p.rsplit_once('=').unwrap_or_else(|| panic!("{record}"));
            (
                caption.to_string(),
                n.parse().unwrap_or_else(|_| panic!("{record}")),
            )
        })
        .collect();
    (status, plots)
}

/// Asserts that the first render drew the status and all 11 plots, and the plots captioned
/// in `series` with that many series: the first paint is never the status alone.
fn assert_first_render(dom: &str, series: &[(&str, usize)]) {
    let (status, plots) = first_render(dom);
    assert!(status, "first render without the status: {plots:?}");
    assert_eq!(plots.len(), 11, "first render: {plots:?}");
    for (caption, n) in series {
        let drawn = plots
            .iter()
            .find(|(c, _)| c == caption)
            .unwrap_or_else(|| panic!("first render without {caption:?}: {plots:?}"));
        assert_eq!(drawn.1, *n, "first render of {caption:?}: {plots:?}");
    }
}

/// The plots of the dumped DOM: caption -> the `d` of each of its paths.
fn plots(dom: &str) -> Vec<(String, Vec<String>)> {
    dom.split("<figure class=\"plot\"")
        .skip(1)
        .map(|fig| {
            let fig = fig.split("</figure>").next().unwrap();
            let caption = fig
                .split("<figcaption>")
                .nth(1)
                .and_then(|c| c.split("</figcaption>").next())
                .unwrap_or("")
                .to_string();
            let paths = fig
                .split("<path class=\"line\" d=\"")
                .skip(1)
                .map(|p| p.split('"').next().unwrap().to_string())
                .collect();
            (caption, paths)
        })
        .collect()
}

/// The markup of the plot captioned `caption`.
fn figure<'a>(dom: &'a str, caption: &str) -> &'a str {
    let at = dom
        .find(&format!("<figcaption>{caption}</figcaption>"))
        .unwrap_or_else(|| panic!("no plot {caption:?}"));
    dom[at..].split("</figure>").next().unwrap()
}

/// Asserts that the plot captioned `caption` draws `lines` lines, each joining at least
/// `points` points.
fn assert_drawn(plots: &[(String, Vec<String>)], caption: &str, lines: usize, points: usize) {
    let (_, paths) = plots
        .iter()
        .find(|(c, _)| c == caption)
        .unwrap_or_else(|| panic!("no plot {caption:?} in {plots:?}"));
    assert_eq!(paths.len(), lines, "{caption}: {paths:?}");
    for d in paths {
        assert!(d.starts_with('M'), "{caption}: {d}");
        let drawn = 1 + d.matches('L').count();
        assert!(drawn >= points, "{caption}: {drawn} points: {d}");
        // Every coordinate is a number inside the 320 x 120 plot.
        for n in d
            .split(|c: char| c.is_ascii_alphabetic() || c == ' ')
            .filter(|s| !s.is_empty())
        {
            let v: f64 = n
                .parse()
                .unwrap_or_else(|_| panic!("{caption}: {n:?} in {d}"));
            assert!((0.0..=320.0).contains(&v), "{caption}: {v} in {d}");
        }
    }
}

fn screenshot(url: &str, name: &str) -> PathBuf {
    let dir = std::env::var_os("SCREENSHOT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    headless(url, &[format!("--screenshot={}", path.display())]);
    let png = std::fs::read(&path).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    // IHDR: width and height, big-endian, at bytes 16..24.
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((width, height), (1400, 1700));
    // A blank page compresses to a few kB; text and plots do not.
    assert!(png.len() > 50_000, "screenshot only {} bytes", png.len());
    eprintln!("screenshot: {}", path.display());
    path
}

#[test]
#[ignore = "needs chromium (Debian package chromium); ./scripts/test runs it where it is installed"]
fn dashboard_renders_in_headless_chromium() {
    let config = TEST_CONFIG.replace(
        "metrics_url = \"\"",
        "metrics_url = \"http://127.0.0.1:1/metrics\"",
    );
    let root = fixture_root("ci-2core").display().to_string();
    let agent = Agent::start(&config, &["--root", &root], None);
    let dom = headless(
        &format!("http://127.0.0.1:{}/", agent.port),
        &["--dump-dom".into()],
    );
    assert!(
        dom.contains(r#"<b id="profile-name">development</b>"#),
        "{dom}"
    );
    assert!(
        dom.contains(r#"<b id="node-status" class="ok">READY</b>"#),
        "{dom}"
    );
    // Sections filled from /v1/status: the replica is down (nothing on port 1), the
    // crypto paths are listed, the GPU collector is off with its reason.
    assert!(dom.contains("http://127.0.0.1:1/metrics"), "{dom}");
    assert!(dom.contains("cpu: the policy runs it on the CPU"), "{dom}");
    assert!(dom.contains("off gpu"), "{dom}");
    // Nothing measures the node's power here: the cost says so rather than "0.0 W".
    assert!(
        dom.contains("<th>energy</th><td>no measured source</td>"),
        "{dom}"
    );
    assert!(!dom.contains("0.0 W"), "{dom}");
    // Why the replica is down.
    assert!(
        dom.contains("<th>why down</th><td>GET http://127.0.0.1:1/metrics"),
        "{dom}"
    );
    // Where the replica's runtime configuration went, and that this is not the image.
    assert!(
        dom.contains(&format!(
            "{}",
            agent.dir().join("runtime-config.json").display()
        )),
        "{dom}"
    );
    assert!(
        dom.contains("not running from the sovereign-node image"),
        "{dom}"
    );
    // The first render drew the plots with the status (the cost has its total and energy).
    assert_first_render(&dom, &[("Cost (EUR/h)", 2)]);
}

#[test]
#[ignore = "needs chromium (Debian package chromium); ./scripts/test runs it where it is installed"]
fn history_plots_draw_after_a_few_cycles() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let moved = Arc::new(AtomicBool::new(false));
    let replica = serve_replica(&rt, moved.clone());
    let config = TEST_CONFIG.replace(
        "metrics_url = \"\"",
        &format!("metrics_url = \"{replica}\""),
    );
    let root = fixture_root("ci-2core").display().to_string();
    let agent = Agent::start(&config, &["--root", &root], None);

    // 0.2 s collection interval: the history keeps one point per second. Wait for 6.
    let points = |agent: &Agent| {
        let (code, body) = agent.get("/v1/history");
        assert_eq!(code, 200, "{body}");
        let h: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(h["schema"], "sovereign-node/history/v1");
        h["points"].as_u64().unwrap()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while points(&agent) < 6 {
        if points(&agent) >= 3 {
            moved.store(true, Ordering::Relaxed);
        }
        assert!(Instant::now() < deadline, "history did not grow");
        std::thread::sleep(Duration::from_millis(200));
    }

    let url = format!("http://127.0.0.1:{}/", agent.port);
    let dom = headless(&url, &["--dump-dom".into()]);
    assert_first_render(
        &dom,
        &[
            ("Node power (W)", 0),
            ("Cost (EUR/h)", 2),
            ("Replica heights (blocks)", 2),
            ("Certification lag (blocks)", 1),
        ],
    );
    let plots = plots(&dom);
    assert_eq!(plots.len(), 11, "{plots:?}");
    // No GPU, no RAPL, no configured unmeasured power: the node's power is not known, and
    // the plot says so instead of drawing 0 W.
    assert!(
        dom.contains("Node power (W)</figcaption><p class=\"muted\">no measured source</p>"),
        "{dom}"
    );
    assert_drawn(&plots, "Cost (EUR/h)", 2, 6);
    // Only operations with work in the window (here none: the selftest ran before the
    // first point), at most six.
    let crypto = plots
        .iter()
        .find(|(c, _)| c == "Crypto items per second (items/s)")
        .unwrap();
    assert!(crypto.1.len() <= 6, "{crypto:?}");
    if crypto.1.is_empty() {
        assert!(
            figure(&dom, "Crypto items per second (items/s)")
                .contains("no crypto work in the window"),
            "{dom}"
        );
    }
    assert_drawn(&plots, "GPU errors and CPU fallbacks (per point)", 2, 5);
    assert_drawn(&plots, "Replica heights (blocks)", 2, 6);
    // Finalized and certified height overlap: the second series is dashed and marked.
    let heights = figure(&dom, "Replica heights (blocks)");
    assert_eq!(
        heights.matches("stroke-dasharray=\"5 3\"").count(),
        2,
        "{heights}"
    );
    assert!(heights.contains("<circle class=\"marker\""), "{heights}");
    assert_drawn(&plots, "Certification lag (blocks)", 1, 6);
    // No GPU on this machine: the GPU plots say so instead of drawing.
    assert!(
        dom.contains("GPU utilisation (%)</figcaption><p class=\"muted\">no GPU samples</p>"),
        "{dom}"
    );
    assert!(
        dom.contains("points, one every 1 s (at most 3601, 60 min)"),
        "{dom}"
    );
    // For a person to look at: the page as the DOM above shows it.
    screenshot(&url, "sovereign-node-dashboard-history.png");
}

/// Crypto work for cycle `i`: eight operation/path series, the k-th doing (k + 1) * 10 items
/// per cycle, so that the crypto plot has more series with work than it draws.
fn crypto_work(s: &mut Snapshot, i: u64) {
    let series = Operation::ALL
        .iter()
        .flat_map(|op| [(*op, Executed::Cpu), (*op, Executed::Gpu)])
        .take(8);
    for (k, (operation, executed)) in (1u64..).zip(series) {
        let items = i * k * 10;
        let ops = &mut s.crypto.stats.operations;
        match ops
            .iter_mut()
            .find(|o| o.operation == operation && o.executed == executed)
        {
            Some(o) => o.items = items,
            None => ops.push(OperationCount {
                operation,
                executed,
                calls: i,
                items,
            }),
        }
    }
}

/// The series of the crypto plot as drawn: (colour, dash, marker element) of each line.
fn crypto_styles(dom: &str) -> Vec<(String, String, String)> {
    let fig = figure(dom, CRYPTO);
    let attr = |tag: &str, name: &str| {
        tag.split(&format!(" {name}=\""))
            .nth(1)
            .and_then(|v| v.split('"').next())
            .unwrap_or("")
            .to_string()
    };
    // The plot's <svg> holds each line, then that line's markers; the legend comes after.
    let plot = fig.split("<div class=\"legend\"").next().unwrap();
    plot.split("<path class=\"line\"")
        .skip(1)
        .map(|line| {
            let path = line.split('>').next().unwrap();
            let marker = ["circle", "rect", "polygon"]
                .into_iter()
                .filter_map(|m| {
                    line.find(&format!("<{m} class=\"marker\""))
                        .map(|at| (at, m))
                })
                .min()
                .map_or("none", |(_, m)| m);
            (
                attr(path, "stroke"),
                attr(path, "stroke-dasharray"),
                marker.to_string(),
            )
        })
        .collect()
}

const CRYPTO: &str = "Crypto items per second (items/s)";

/// A page that loads the dashboard in a same-origin frame of the screenshot's size and, once
/// the dashboard recorded its first render, writes each legend's layout on its own <body>:
/// "CAPTION=entries,overlapping pairs,clipped entries,overlaps the plot" per plot.
const LAYOUT_PROBE: &str = r#"<!doctype html><html><body>
<iframe id="f" src="/" style="width:1400px;height:1700px;border:0"></iframe>
<script>
"use strict";
const meets = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
const inside = (a, b) => a.left >= b.left - 0.5 && a.right <= b.right + 0.5 && a.top >= b.top - 0.5 && a.bottom <= b.bottom + 0.5;
function probe() {
  const d = document.getElementById("f").contentDocument;
  if (!d || !d.body || !d.body.hasAttribute("data-first-render")) { setTimeout(probe, 20); return; }
  const out = [];
  for (const fig of d.querySelectorAll("figure.plot")) {
    const legend = fig.querySelector(".legend");
    if (!legend) continue;
    const box = legend.getBoundingClientRect(), plot = fig.querySelector("svg").getBoundingClientRect();
    const entries = [...legend.children], keys = entries.map(e => e.getBoundingClientRect());
    let pairs = 0;
    keys.forEach((a, i) => keys.slice(i + 1).forEach(b => { if (meets(a, b)) pairs++; }));
    // Cut off: outside the legend's box, or its text wider than its column (an ellipsis).
    const clipped = entries.filter((e, i) => !inside(keys[i], box) || e.scrollWidth > e.clientWidth + 0.5).length;
    out.push(fig.querySelector("figcaption").textContent + "=" + keys.length + "," + pairs + "," + clipped + "," + (meets(box, plot) ? 1 : 0));
  }
  document.body.setAttribute("data-layout", out.join(";"));
}
probe();
</script></body></html>"#;

/// The layout probe's record: caption -> (entries, overlapping pairs, clipped, overlaps plot).
fn legend_layout(dom: &str) -> Vec<(String, [u32; 4])> {
    let record = dom
        .split("data-layout=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_else(|| panic!("the probe recorded no layout: {dom}"));
    record
        .split(';')
        .map(|p| {
            let (caption, n) = p.rsplit_once('=').unwrap();
            let n: Vec<u32> = n.split(',').map(|x| x.parse().unwrap()).collect();
            (caption.to_string(), n.try_into().unwrap())
        })
        .collect()
}

/// The agent's router with a history of 40 cycles, 15 s apart, collected from the recorded
/// H200 NVML samples and with crypto work on eight operation/path series: the GPU plots
/// draw as well, the crypto plot draws the six busiest series, each in its own colour, dash
/// and marker, with a legend whose entries neither overlap nor are cut off, and the page asks
/// for the status and the history at once (its first render has both).
#[test]
#[ignore = "needs chromium (Debian package chromium); ./scripts/test runs it where it is installed"]
fn gpu_history_plots_draw_from_recorded_nvml_samples() {
    let (first, history) = std::thread::spawn(|| {
        let clock = Arc::new(ManualClock::new(T0));
        let mut c = fixed_collectors(node("epyc-9354p-snp-guest", "auto"), clock.clone());
        c.gpu = Some(Box::new(
            RecordedGpuSource::from_json(&read_testdata("gpu/h200-nvml-samples.json")).unwrap(),
        ));
        c.disable("pinning", "the profile gives no pool a CPU set");
        let sys = tempfile::tempdir().unwrap();
        write_rapl(sys.path(), 1_000_000_000);
        c.rapl = Some(node_agent::collect::rapl::RaplReader::new(sys.path()));
        let mut history = History::new(15.0);
        let mut last = None;
        for i in 0..40u64 {
            // CPU package at 100 W, then 150 W from the 21st cycle.
            let uj = 1_000_000_000 + i * 1_500_000_000 + i.saturating_sub(20) * 750_000_000;
            write_rapl(sys.path(), uj);
            let mut s = c.collect();
            crypto_work(&mut s, i);
            history.record(&s);
            last = Some(s);
            clock.advance(15.0);
        }
        (last.unwrap(), history)
    })
    .join()
    .unwrap();
    assert_eq!(history.len(), 40);

    let rt = tokio::runtime::Runtime::new().unwrap();
    let state = AppState::new(first, Arc::new(Heartbeat::new(Duration::from_secs(3600))));
    state.heartbeat.beat();
    *state.history.write().unwrap() = history;
    let url = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // /v1/status answers only once /v1/history was asked for too (503 after 3 s): a page
        // that asked for the history only after the status drew nothing.
        let asked = Arc::new(tokio::sync::Semaphore::new(0));
        let probe = || async { axum::response::Html(LAYOUT_PROBE) };
        let app = router(state)
            .route("/layout", axum::routing::get(probe))
            .layer(axum::middleware::from_fn(
                move |req: axum::extract::Request, next: axum::middleware::Next| {
                    let asked = asked.clone();
                    async move {
                        match req.uri().path() {
                            "/v1/history" => asked.add_permits(1),
                            "/v1/status" => {
                                let permit =
                                    tokio::time::timeout(Duration::from_secs(3), asked.acquire())
                                        .await;
                                match permit {
                                    Ok(Ok(p)) => p.forget(),
                                    _ => {
                                        return axum::response::IntoResponse::into_response((
                                            axum::http::StatusCode::SERVICE_UNAVAILABLE,
                                            "the history was not asked for with the status",
                                        ));
                                    }
                                }
                            }
                            _ => {}
                        }
                        next.run(req).await
                    }
                },
            ));
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        format!("http://{addr}/")
    });
    let dom = headless(&url, &["--dump-dom".into()]);
    // The status arrived (the middleware above let it through) and was drawn.
    assert!(
        dom.contains(
            r#"<span id="updated" class="muted">collected 2025-11-30T00:09:45.000Z (cycle 40)"#
        ),
        "{dom}"
    );
    let plots = plots(&dom);
    for caption in [
        "GPU utilisation (%)",
        "GPU memory used (GiB)",
        "GPU temperature (°C)",
        "GPU power (W)",
        "Node power (W)",
    ] {
        assert_drawn(&plots, caption, 1, 40);
    }
    // Eight series with work, the six busiest drawn (no rate at the first point: 39 points),
    // each told apart by its colour, dash and marker together.
    assert_first_render(&dom, &[(CRYPTO, 6), ("GPU utilisation (%)", 1)]);
    assert_drawn(&plots, CRYPTO, 6, 39);
    let styles = crypto_styles(&dom);
    assert_eq!(styles.len(), 6, "{styles:?}");
    for (i, a) in styles.iter().enumerate() {
        assert!(!a.0.is_empty(), "a line without a colour: {styles:?}");
        assert!(
            !styles[i + 1..].contains(a),
            "two series drawn alike: {styles:?}"
        );
    }
    // The busiest first (the eighth series: msm_shared_u8 on the GPU); the two least busy
    // (decompress, on either path) are left out.
    let legend = figure(&dom, CRYPTO)
        .split("<div class=\"legend\"")
        .nth(1)
        .unwrap();
    let names: Vec<&str> = legend
        .split("</svg>")
        .skip(1)
        .map(|e| e.split("</span>").next().unwrap())
        .collect();
    assert_eq!(names.len(), 6, "{legend}");
    assert!(names[0].starts_with("msm_shared_u8 gpu "), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("decompress ")),
        "{names:?}"
    );
    // The legends laid out at the screenshot's size: no entry overlaps another, none is cut
    // off by the legend's fixed height, no legend overlaps its plot.
    let layout = legend_layout(&headless(&format!("{url}layout"), &["--dump-dom".into()]));
    let crypto = layout.iter().find(|(c, _)| c == CRYPTO);
    assert_eq!(crypto.map(|(_, n)| n[0]), Some(6), "{layout:?}");
    for (caption, [_, pairs, clipped, over_plot]) in &layout {
        assert_eq!(
            (*pairs, *clipped, *over_plot),
            (0, 0, 0),
            "{caption}: overlapping entries, clipped entries, legend over the plot: {layout:?}"
        );
    }
    screenshot(&url, "sovereign-node-dashboard-gpu-history.png");
}
