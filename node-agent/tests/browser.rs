//! The dashboard in headless Chromium: the snapshot sections filled from /v1/status, and the
//! history plots drawn from /v1/history after the agent collected a few cycles (the DOM is
//! read back with --dump-dom, and a screenshot is written for a person to look at).

mod common;

use common::*;
use node_agent::clock::ManualClock;
use node_agent::collect::gpu::RecordedGpuSource;
use node_agent::history::History;
use node_agent::routes::{AppState, Heartbeat, router};
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
            // Virtual time does not advance while fetches are pending; 3 s of it end before
            // the page's first refresh (every 5 s): the DOM and the screenshot are the first
            // paint, with no wait for a second round of fetches.
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
    // The screenshot is the first paint: the plots are drawn in it (a page with the plots
    // has far more ink than one whose "Last hour" box is empty).
    screenshot(&url, "sovereign-node-dashboard-history.png");
}

/// The agent's router with a history of 40 cycles, 15 s apart, collected from the recorded
/// H200 NVML samples: the GPU plots draw as well, and the page asks for the status and the
/// history at once (its first paint has both).
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
            let s = c.collect();
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
        let app = router(state).layer(axum::middleware::from_fn(
            move |req: axum::extract::Request, next: axum::middleware::Next| {
                let asked = asked.clone();
                async move {
                    match req.uri().path() {
                        "/v1/history" => asked.add_permits(1),
                        "/v1/status" => {
                            let permit =
                                tokio::time::timeout(Duration::from_secs(3), asked.acquire()).await;
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
    screenshot(&url, "sovereign-node-dashboard-gpu-history.png");
}
