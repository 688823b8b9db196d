//! The agent settings file (TOML). Every field has a default, so the agent runs
//! with no file at all; unknown keys are an error so that a typo never passes silently.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why the settings file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The settings file.
        path: PathBuf,
        /// The read's error.
        source: std::io::Error,
    },
    /// The file is not valid TOML for [`Settings`] (including unknown keys).
    #[error("parsing {path}: {source}")]
    Parse {
        /// The settings file.
        path: PathBuf,
        /// The TOML parser's error, with its position.
        source: toml::de::Error,
    },
    /// A value is out of range or inconsistent with another; names the key.
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

/// The agent's settings: listeners, profile choice, collection, replica, pinning, cost
/// and attestation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// The operator listener: every route (dashboard, `/v1/status`, metrics, health,
    /// attestation). Loopback unless the image sets another address.
    pub listen: SocketAddr,
    /// The public listener, off unless set: `/metrics`, `/healthz`, `/readyz` and
    /// `/v1/attestation` only, for the subnet (see [`crate::routes::public_router`]).
    pub public_listen: Option<SocketAddr>,
    /// Connection, request and attestation limits of both listeners.
    pub http: crate::listeners::HttpLimits,
    /// Profile name, or "auto" to select from the probed machine.
    pub profile: String,
    /// Root of the /proc, /sys and /dev trees the probe reads ("/" on a real node).
    pub root: PathBuf,
    /// Interval of the background collectors. /metrics only encodes their last snapshot.
    pub collect_interval_seconds: f64,
    /// A collector whose last success is older than this many intervals makes /healthz fail.
    pub stale_after_intervals: u32,
    /// The replica: its metrics endpoint, its unit and its process name (`[replica]`).
    pub replica: ReplicaSettings,
    /// Thread pinning of the replica's pools (`[pinning]`).
    pub pinning: PinningSettings,
    /// The node's overrides of the profile's cost inputs (`[cost]`).
    pub cost: CostSettings,
    /// Where attestation evidence comes from and the node's identity key (`[attestation]`).
    pub attestation: AttestationSettings,
    /// Where the replica's runtime configuration is written (default: see
    /// [`Settings::runtime_config_path`]).
    pub runtime_config: Option<PathBuf>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            listen: SocketAddr::from(([127, 0, 0, 1], 9420)),
            public_listen: None,
            http: crate::listeners::HttpLimits::default(),
            profile: "auto".to_string(),
            root: PathBuf::from("/"),
            collect_interval_seconds: 15.0,
            stale_after_intervals: 4,
            replica: ReplicaSettings::default(),
            pinning: PinningSettings::default(),
            cost: CostSettings::default(),
            attestation: AttestationSettings::default(),
            runtime_config: None,
        }
    }
}

/// Where `GET /v1/attestation` takes its evidence from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceSource {
    /// /dev/sev-guest and NVML: a real node.
    Hardware,
    /// Reports signed by a test chain generated from `test_seed`, marked as test evidence;
    /// only a policy that explicitly trusts that test root admits them.
    Test,
    /// The route answers 503.
    Off,
}

/// Whether the bundle carries GPU evidence (NVML).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuEvidence {
    /// When the probe found an NVIDIA GPU (NVML or the PCI bus).
    Auto,
    /// Always, whatever the probe found.
    Nvml,
    /// Never: the bundle carries SEV-SNP evidence only.
    None,
}

/// The attestation settings (`[attestation]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AttestationSettings {
    /// Where the evidence comes from.
    pub source: EvidenceSource,
    /// Directory of the node key and the test seed; unset: see [`AttestationSettings::state_dir`].
    pub state_dir: Option<PathBuf>,
    /// The node's Ed25519 identity key (PKCS#8 PEM), created with mode 0600 on first use.
    /// Default: `node-key.pem` in the state directory.
    pub node_key: Option<PathBuf>,
    /// Seed of the test chain (source = "test"). Default: `test-evidence-seed` in the state
    /// directory.
    pub test_seed: Option<PathBuf>,
    /// snpguest-style certificate cache, used when the host gives no certificate table.
    pub cert_cache: Option<PathBuf>,
    /// The VMPL the SEV-SNP reports are requested at and the sealed node key is derived
    /// for (0: the most privileged).
    pub vmpl: u32,
    /// Whether bundles carry GPU evidence (NVML).
    pub gpu_evidence: GpuEvidence,
    /// The measurement test reports carry (`sn.test_measurement=` on the kernel command
    /// line, with `sn.evidence=test`); None: `attestation::test_source::test_measurement()`.
    /// Never read from the settings file.
    #[serde(skip)]
    pub test_measurement: Option<[u8; 48]>,
}

impl Default for AttestationSettings {
    fn default() -> Self {
        AttestationSettings {
            source: EvidenceSource::Hardware,
            state_dir: None,
            node_key: None,
            test_seed: None,
            cert_cache: None,
            vmpl: 0,
            gpu_evidence: GpuEvidence::Auto,
            test_measurement: None,
        }
    }
}

/// The node's state directory on a production node.
pub const SYSTEM_STATE_DIR: &str = "/var/lib/sovereign-node";

/// The directory that holds the node key and the test seed, and why it was chosen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StateDir {
    /// The chosen directory (or, for the runtime configuration, file).
    pub path: PathBuf,
    /// Where the choice came from, in words (reported in /v1/status and the log).
    pub origin: String,
}

impl AttestationSettings {
    /// The state directory, first of:
    /// 1. `state_dir` from the configuration;
    /// 2. `$STATE_DIRECTORY`, set by systemd for the unit's `StateDirectory=` (first entry);
    /// 3. [`SYSTEM_STATE_DIR`] when it is (or can be created) writable;
    /// 4. only when `development` is true (the development profile): the user's XDG state
    ///    directory, `$XDG_STATE_HOME/sovereign-node` or `~/.local/state/sovereign-node`.
    ///
    /// Every choice is reported with its origin; none is made silently. Without any, the
    /// error says what was tried.
    pub fn state_dir(
        &self,
        env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
        system_dir: &Path,
        development: bool,
    ) -> Result<StateDir, String> {
        choose_dir(
            &DirRule {
                what: "state directory",
                configured: self.state_dir.as_deref(),
                config_key: "attestation.state_dir",
                systemd_var: "STATE_DIRECTORY",
                systemd_setting: "StateDirectory=",
                system_dir,
                xdg_var: "XDG_STATE_HOME",
            },
            env,
            development,
        )
    }
}

/// The node's runtime directory on a production node (systemd's `RuntimeDirectory=`).
pub const SYSTEM_RUNTIME_DIR: &str = "/run/sovereign-node";

/// The file name of the replica's runtime configuration in the runtime directory.
pub const RUNTIME_CONFIG_FILE: &str = "runtime-config.json";

impl Settings {
    /// Where the replica's runtime configuration (docs/runtime-config.md) is written: the
    /// `runtime_config` key, else `runtime-config.json` in the first of `$RUNTIME_DIRECTORY`
    /// (systemd's `RuntimeDirectory=`), [`SYSTEM_RUNTIME_DIR`] when writable, and under the
    /// development profile only, `$XDG_RUNTIME_DIR/sovereign-node` or
    /// `~/.local/state/sovereign-node`. Same rules and reporting as the state directory.
    pub fn runtime_config_path(
        &self,
        env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
        system_dir: &Path,
        development: bool,
    ) -> Result<StateDir, String> {
        if let Some(file) = &self.runtime_config {
            return Ok(StateDir {
                path: file.clone(),
                origin: "configured (runtime_config)".into(),
            });
        }
        let dir = choose_dir(
            &DirRule {
                what: "runtime directory",
                configured: None,
                config_key: "runtime_config",
                systemd_var: "RUNTIME_DIRECTORY",
                systemd_setting: "RuntimeDirectory=",
                system_dir,
                xdg_var: "XDG_RUNTIME_DIR",
            },
            env,
            development,
        )?;
        Ok(StateDir {
            path: dir.path.join(RUNTIME_CONFIG_FILE),
            origin: dir.origin,
        })
    }
}

/// How one of the agent's directories is chosen (see [`AttestationSettings::state_dir`]).
struct DirRule<'a> {
    what: &'a str,
    /// The directory from the configuration, and the key that sets it.
    configured: Option<&'a Path>,
    config_key: &'a str,
    /// systemd's variable for the unit's directory setting, e.g. `STATE_DIRECTORY`.
    systemd_var: &'a str,
    systemd_setting: &'a str,
    system_dir: &'a Path,
    /// The user's base directory under the development profile, e.g. `XDG_STATE_HOME`
    /// (falling back to `~/.local/state`).
    xdg_var: &'a str,
}

fn choose_dir(
    rule: &DirRule,
    env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
    development: bool,
) -> Result<StateDir, String> {
    let what = rule.what;
    if let Some(dir) = rule.configured {
        return Ok(StateDir {
            path: dir.to_owned(),
            origin: format!("configured ({})", rule.config_key),
        });
    }
    let nonempty = |name: &str| env(name).filter(|v| !v.is_empty());
    if let Some(dirs) = nonempty(rule.systemd_var) {
        // systemd lists several entries of the setting separated by ':'.
        let first = dirs
            .to_string_lossy()
            .split(':')
            .next()
            .unwrap_or_default()
            .to_string();
        return Ok(StateDir {
            path: PathBuf::from(first),
            origin: format!("systemd {} (${})", rule.systemd_setting, rule.systemd_var),
        });
    }
    let system_dir = rule.system_dir;
    let system_problem = match writable_dir(system_dir) {
        Ok(()) => {
            return Ok(StateDir {
                path: system_dir.to_owned(),
                origin: format!("system default ({} is writable)", system_dir.display()),
            });
        }
        Err(e) => format!("{} is not writable: {e}", system_dir.display()),
    };
    if !development {
        return Err(format!(
            "no {what}: {system_problem}; set {}, or run under systemd with {}sovereign-node",
            rule.config_key, rule.systemd_setting
        ));
    }
    let user_dir = nonempty(rule.xdg_var)
        .map(PathBuf::from)
        .or_else(|| nonempty("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .map(|d| d.join("sovereign-node"));
    let Some(path) = user_dir else {
        return Err(format!(
            "no {what}: {system_problem}, and neither {} nor HOME is set",
            rule.xdg_var
        ));
    };
    match create_private_dir(&path) {
        Ok(()) => Ok(StateDir {
            origin: format!("development profile: user {what} ({system_problem})"),
            path,
        }),
        Err(e) => Err(format!(
            "no {what}: {system_problem}; {}: {e}",
            path.display()
        )),
    }
}

/// Ok when `dir` exists (or can be created) and a file can be created in it.
fn writable_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".write-test-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)?;
    std::fs::remove_file(&probe)
}

/// Creates `dir` (and parents) with mode 0700 for the last component, if missing.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// The replica the agent watches and pins (`[replica]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReplicaSettings {
    /// The replica's own Prometheus endpoint (plain HTTP). Empty: not scraped. The default,
    /// `http://[::1]:9090/metrics`, is where the IC replica serves its metrics
    /// (`metrics.exporter.http` in its ic.json5; the IC's own node metrics proxy reads it
    /// there). Port 9090 is also Prometheus's own default, so the collector calls the replica
    /// up only when the page carries a family only the replica exports (see
    /// `collect::replica`).
    pub metrics_url: String,
    /// How long one scrape of the replica's metrics may take, seconds.
    pub scrape_timeout_seconds: f64,
    /// systemd unit of the replica, in the pinning slice (used when systemd runs the node:
    /// the replica is the process named `process_name` in this unit's cgroup).
    pub unit: String,
    /// The replica's /proc/<pid>/comm (without systemd: searched in all of /proc).
    pub process_name: String,
}

impl Default for ReplicaSettings {
    fn default() -> Self {
        ReplicaSettings {
            metrics_url: "http://[::1]:9090/metrics".to_string(),
            scrape_timeout_seconds: 2.0,
            unit: "ic-replica.service".to_string(),
            process_name: "replica".to_string(),
        }
    }
}

/// Thread pinning of the replica's pools (`[pinning]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PinningSettings {
    /// Pin the replica's threads; false turns the pinning loop off.
    pub enabled: bool,
    /// The slice the replica runs in; its AllowedCPUs= is set at run time to the union
    /// of the profile's CPU sets by `node-agent set-replica-cpus` (its own root unit), and
    /// the agent checks it in the cgroup tree (only when systemd is the service manager).
    pub slice: String,
    /// Pool name -> regular expressions matched against thread names (/proc/.../comm,
    /// at most 15 bytes). A thread joins the first pool (in name order) that matches.
    pub thread_patterns: BTreeMap<String, Vec<String>>,
}

impl Default for PinningSettings {
    fn default() -> Self {
        // Thread-name prefixes per pool of the profile (hardware_profiles::PoolKind names);
        // the GPU-patched replica names its pool threads this way. Override per deployment.
        let thread_patterns = [
            ("consensus", "^consensus"),
            ("execution", "^execution"),
            ("query", "^query"),
            ("idkg", "^idkg"),
            ("checkpoint", "^checkpoint"),
            ("p2p_http", "^(p2p|http)"),
        ]
        .into_iter()
        .map(|(pool, re)| (pool.to_string(), vec![re.to_string()]))
        .collect();
        PinningSettings {
            enabled: true,
            slice: "sovereign-replica.slice".to_string(),
            thread_patterns,
        }
    }
}

/// Cost inputs come from the profile (`[cost]`); these override them per node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CostSettings {
    /// Purchase price of the node, EUR; `None`: the profile's.
    pub capex_eur: Option<f64>,
    /// Months the purchase price is spread over (at least 1); `None`: the profile's.
    pub amortisation_months: Option<u32>,
    /// Price of energy, EUR per kWh; `None`: the profile's.
    pub energy_price_eur_per_kwh: Option<f64>,
    /// Power of what the agent cannot measure (board, fans, disks, NIC), added to the
    /// measured GPU and CPU-package power. 0 counts measured power only.
    pub unmeasured_power_watts: f64,
    /// CPU time one item costs on the CPU path, per operation (its name, as in the
    /// policy): GPU items x this = CPU-seconds offloaded to the GPU.
    pub cpu_seconds_per_item: BTreeMap<String, f64>,
}

impl Default for CostSettings {
    fn default() -> Self {
        // Single-thread CPU cost per item of the engine's CPU paths, order of magnitude
        // (a 1 MiB SHA-256 chunk with SHA-NI ~0.6 ms; G2 points, 8-bit shared-base MSM
        // scalars and three-pair pairing products from the CPU rows of the H200 records,
        // docs/results/nidkg-dealing-h200, G2 MSM points from nidkg-offload-h200); set
        // measured values per node.
        let cpu_seconds_per_item = [
            ("decompress", 60e-6),
            ("decompress_g2", 400e-6),
            ("msm", 25e-6),
            ("msm_shared_u8", 1.7e-6),
            ("msm_g2", 170e-6),
            ("pairing_products", 1.9e-3),
            ("bls_verify", 1.2e-3),
            ("sha256", 0.6e-3),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        CostSettings {
            capex_eur: None,
            amortisation_months: None,
            energy_price_eur_per_kwh: None,
            unmeasured_power_watts: 0.0,
            cpu_seconds_per_item,
        }
    }
}

impl Settings {
    /// Reads, parses and validates the settings file at `path`.
    pub fn load(path: &Path) -> Result<Settings, SettingsError> {
        let text = std::fs::read_to_string(path).map_err(|source| SettingsError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let config: Settings = toml::from_str(&text).map_err(|source| SettingsError::Parse {
            path: path.to_path_buf(),
            source,
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks ranges and consistency: positive interval and timeout, at least one
    /// amortisation month and stale interval, distinct listeners, non-negative costs,
    /// valid HTTP limits and thread-name patterns.
    pub fn validate(&self) -> Result<(), SettingsError> {
        let positive = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(SettingsError::Invalid(format!(
                    "{name} must be > 0, is {v}"
                )))
            }
        };
        positive("collect_interval_seconds", self.collect_interval_seconds)?;
        positive(
            "replica.scrape_timeout_seconds",
            self.replica.scrape_timeout_seconds,
        )?;
        if self.cost.amortisation_months == Some(0) {
            return Err(SettingsError::Invalid(
                "cost.amortisation_months must be >= 1".into(),
            ));
        }
        self.http.validate().map_err(SettingsError::Invalid)?;
        if self.public_listen == Some(self.listen) {
            return Err(SettingsError::Invalid(format!(
                "public_listen and listen are both {}",
                self.listen
            )));
        }
        if self.stale_after_intervals == 0 {
            return Err(SettingsError::Invalid(
                "stale_after_intervals must be >= 1".into(),
            ));
        }
        for (name, v) in [
            ("cost.capex_eur", self.cost.capex_eur.unwrap_or(0.0)),
            (
                "cost.energy_price_eur_per_kwh",
                self.cost.energy_price_eur_per_kwh.unwrap_or(0.0),
            ),
            (
                "cost.unmeasured_power_watts",
                self.cost.unmeasured_power_watts,
            ),
        ]
        .into_iter()
        .chain(
            self.cost
                .cpu_seconds_per_item
                .iter()
                .map(|(k, v)| (k.as_str(), *v)),
        ) {
            if !(v.is_finite() && v >= 0.0) {
                return Err(SettingsError::Invalid(format!(
                    "{name} must be >= 0, is {v}"
                )));
            }
        }
        for (pool, patterns) in &self.pinning.thread_patterns {
            for p in patterns {
                regex::Regex::new(p).map_err(|e| {
                    SettingsError::Invalid(format!("pinning.thread_patterns.{pool}: {e}"))
                })?;
            }
        }
        Ok(())
    }

    /// The collectors' interval as a [`Duration`].
    pub(crate) fn collect_interval(&self) -> Duration {
        Duration::from_secs_f64(self.collect_interval_seconds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_is_the_default() {
        let c: Settings = toml::from_str("").unwrap();
        assert_eq!(c, Settings::default());
        c.validate().unwrap();
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let err = toml::from_str::<Settings>("listen = \"127.0.0.1:1\"\nlisen = 3\n").unwrap_err();
        assert!(err.to_string().contains("lisen"), "{err}");
        let err = toml::from_str::<Settings>("[cost]\ncapex = 1.0\n").unwrap_err();
        assert!(err.to_string().contains("capex"), "{err}");
        let err = toml::from_str::<Settings>("[replica]\nurl = \"x\"\n").unwrap_err();
        assert!(err.to_string().contains("url"), "{err}");
    }

    #[test]
    fn state_dir_is_chosen_explicitly_and_says_why() {
        use std::ffi::OsString;
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = tempfile::tempdir().unwrap();
        let system = tmp.path().join("var-lib-sovereign-node");
        let env_of = |vars: Vec<(&'static str, String)>| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        let a = AttestationSettings::default();
        // systemd's StateDirectory= wins over the system default.
        let sd = env_of(vec![("STATE_DIRECTORY", "/run/sd/a:/run/sd/b".into())]);
        let d = a.state_dir(&sd, &system, false).unwrap();
        assert_eq!(d.path, PathBuf::from("/run/sd/a"));
        assert!(d.origin.contains("StateDirectory"), "{}", d.origin);
        // A writable (creatable) system directory.
        let none = env_of(Vec::new());
        let d = a.state_dir(&none, &system, false).unwrap();
        assert_eq!(d.path, system);
        assert!(d.origin.contains("system default"), "{}", d.origin);
        // The configured one wins over everything.
        let c = AttestationSettings {
            state_dir: Some(PathBuf::from("/srv/node")),
            ..AttestationSettings::default()
        };
        assert_eq!(
            c.state_dir(&sd, &system, false).unwrap().path,
            PathBuf::from("/srv/node")
        );
        // Not writable (a file stands where its parent would be): a production profile
        // gets an error naming the problem, the development profile the XDG directory.
        let blocked = tmp.path().join("blocked");
        std::fs::write(&blocked, "").unwrap();
        let not_dir = blocked.join("sovereign-node");
        let err = a.state_dir(&none, &not_dir, false).unwrap_err();
        assert!(err.contains("not writable"), "{err}");
        let xdg = tmp.path().join("xdg");
        let with_xdg = env_of(vec![("XDG_STATE_HOME", xdg.display().to_string())]);
        let d = a.state_dir(&with_xdg, &not_dir, true).unwrap();
        assert_eq!(d.path, xdg.join("sovereign-node"));
        assert!(d.origin.contains("development profile"), "{}", d.origin);
        assert!(d.origin.contains("not writable"), "{}", d.origin);
        let mode = std::fs::metadata(&d.path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        // HOME when XDG_STATE_HOME is unset; neither is an error.
        let home = tmp.path().join("home");
        let with_home = env_of(vec![("HOME", home.display().to_string())]);
        let d = a.state_dir(&with_home, &not_dir, true).unwrap();
        assert_eq!(d.path, home.join(".local/state/sovereign-node"));
        assert!(a.state_dir(&none, &not_dir, true).is_err());
    }

    #[test]
    fn runtime_config_path_follows_the_same_rules() {
        use std::ffi::OsString;
        let tmp = tempfile::tempdir().unwrap();
        let env_of = |vars: Vec<(&'static str, String)>| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        let c = Settings::default();
        let system = tmp.path().join("run-sovereign-node");
        let sd = env_of(vec![("RUNTIME_DIRECTORY", "/run/sovereign-node".into())]);
        let p = c.runtime_config_path(&sd, &system, false).unwrap();
        assert_eq!(
            p.path,
            PathBuf::from("/run/sovereign-node/runtime-config.json")
        );
        assert!(p.origin.contains("RuntimeDirectory="), "{}", p.origin);
        let none = env_of(Vec::new());
        let p = c.runtime_config_path(&none, &system, false).unwrap();
        assert_eq!(p.path, system.join("runtime-config.json"));
        // Not writable: an error for production profiles, XDG_RUNTIME_DIR in development.
        let blocked = tmp.path().join("blocked");
        std::fs::write(&blocked, "").unwrap();
        let err = c
            .runtime_config_path(&none, &blocked.join("x"), false)
            .unwrap_err();
        assert!(
            err.contains("runtime_config") && err.contains("RuntimeDirectory="),
            "{err}"
        );
        let xdg = tmp.path().join("xdg-run");
        let with_xdg = env_of(vec![("XDG_RUNTIME_DIR", xdg.display().to_string())]);
        let p = c
            .runtime_config_path(&with_xdg, &blocked.join("x"), true)
            .unwrap();
        assert_eq!(p.path, xdg.join("sovereign-node/runtime-config.json"));
        // The configured file wins over systemd's directory.
        let c = Settings {
            runtime_config: Some(PathBuf::from("/etc/replica/runtime.json")),
            ..Settings::default()
        };
        let p = c.runtime_config_path(&sd, &system, false).unwrap();
        assert_eq!(p.path, PathBuf::from("/etc/replica/runtime.json"));
    }

    #[test]
    fn invalid_values_are_rejected() {
        let c: Settings = toml::from_str("collect_interval_seconds = 0.0").unwrap();
        assert!(c.validate().is_err());
        let c: Settings = toml::from_str("[pinning.thread_patterns]\nx = [\"(\"]").unwrap();
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("pinning.thread_patterns.x")
        );
    }
}
