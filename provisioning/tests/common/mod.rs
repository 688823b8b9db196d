//! What the end-to-end tests share: node agents serving test evidence (the agent's own
//! router and evidence wiring, `node_agent::compose::attestation_service` with
//! `source = "test"`) on 127.0.0.1, the plan's signed bundles, policies and enrolment.

// Each test binary uses its own part of this.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use attestation::test_source::{TestSigner, test_measurement};
use hardware_profiles::ProfileSet;
use node_agent::routes::{AppState, Heartbeat, router};
use node_agent::settings::{AttestationSettings, CostSettings, EvidenceSource, GpuEvidence};
use node_agent::snapshot::Snapshot;
use provisioning::enroll::{EnrollError, EnrollRequest, enroll};

/// One snapshot of the agent's collectors over the CI fixture machine (CPU engine).
pub(crate) fn snapshot() -> Snapshot {
    std::thread::spawn(|| {
        let root =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../node-agent/tests/fixtures/ci-2core");
        // A fixture tree: NVML is not consulted.
        let nvml = node_agent::probe::NvmlMode::absent("fixture tree");
        let facts = node_agent::compose::probe_root(&root, &nvml);
        let image = node_agent::assessment::ImageStatus::read(&root);
        let node =
            node_agent::assessment::assess(facts, &ProfileSet::embedded().unwrap(), "auto", image)
                .unwrap();
        let crypto = node_agent::compose::crypto_selftest_in_process(&node);
        let cost = node_agent::cost::CostTracker::new(node_agent::cost::CostParams::new(
            &node.cost,
            &CostSettings::default(),
        ));
        let clock = Arc::new(node_agent::clock::ManualClock::new(1_764_460_800.0));
        let mut c =
            node_agent::collect::Collectors::new(clock, node, crypto, cost, Default::default())
                .unwrap();
        for name in ["gpu", "pinning", "replica", "rapl"] {
            c.disable(name, "not part of this test");
        }
        c.collect()
    })
    .join()
    .unwrap()
}

pub(crate) struct Agents {
    pub(crate) runtime: tokio::runtime::Runtime,
    pub(crate) snapshot: Snapshot,
    pub(crate) dir: tempfile::TempDir,
    /// The plan's signed bundles (`provision plan --out`), by node name.
    pub(crate) plan: PathBuf,
}

/// The configuration signer of the plan.
pub(crate) fn plan_key() -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&[7; 32])
}

impl Agents {
    pub(crate) fn new() -> Agents {
        let dir = tempfile::tempdir().unwrap();
        let plan = dir.path().join("plan");
        let subnet = provisioning::subnet::Subnet::load(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sovereign-subnet-13.toml"),
            &Default::default(),
        )
        .unwrap();
        for b in provisioning::plan::bundles(
            &subnet,
            &provisioning::plan::plan(&subnet).unwrap(),
            &plan_key(),
        )
        .unwrap()
        {
            b.write_dir(&plan.join(&b.node().name)).unwrap();
        }
        Agents {
            runtime: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap(),
            snapshot: snapshot(),
            dir,
            plan,
        }
    }

    /// The plan's bundle directory of `node`.
    pub(crate) fn bundle(&self, node: &str) -> PathBuf {
        self.plan.join(node)
    }

    /// What an agent that applied `node`'s plan bundle binds into its evidence.
    pub(crate) fn binding(&self, node: &str) -> ([u8; 32], [u8; 32]) {
        let b = sn_config::Bundle::load_dir(&self.bundle(node), &[]).unwrap();
        (b.digest(), b.signer())
    }

    /// Serves an agent whose test evidence comes from `seed`, whose node key is `key` (a
    /// file name; the same name means the same key), running node-01's bundle.
    pub(crate) fn start(&self, seed: u8, key: &str) -> String {
        self.start_with(seed, key, self.binding("node-01"))
    }

    /// As [`Agents::start`], with the configuration binding given.
    pub(crate) fn start_with(&self, seed: u8, key: &str, binding: ([u8; 32], [u8; 32])) -> String {
        let seed_path = self.dir.path().join(format!("seed-{seed}-{key}"));
        std::fs::write(&seed_path, hex::encode([seed; 32])).unwrap();
        let settings = AttestationSettings {
            source: EvidenceSource::Test,
            node_key: Some(self.dir.path().join(key)),
            test_seed: Some(seed_path),
            gpu_evidence: GpuEvidence::None,
            ..AttestationSettings::default()
        };
        // The agent's own wiring of the evidence source (no environment, development node).
        let (service, _status) = node_agent::compose::attestation_service(
            &settings,
            &self.snapshot.node.facts,
            &|_| None,
            true,
            &node_agent::probe::NvmlMode::absent("no GPU evidence"),
            binding,
        );
        let state = AppState::new(
            self.snapshot.clone(),
            Arc::new(Heartbeat::new(Duration::from_secs(60))),
        )
        .with_attestation(service);
        let listener = self
            .runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        self.runtime
            .spawn(async move { axum::serve(listener, router(state)).await });
        url
    }

    /// A complete policy (measurement allow-list, TCB minimum, allowed VMPLs, GPU count, the
    /// plan's configuration signer) trusting the test root of `seed`, which makes it a lab
    /// policy, or with `trusting = false` the same without the test root (AMD roots only).
    pub(crate) fn policy(&self, seed: u8, trusting: bool) -> PathBuf {
        let path = self
            .dir
            .path()
            .join(format!("policy-{seed}-{trusting}.toml"));
        let mut text = format!(
            "{}\n[trust]\n",
            self.policy_sections(&["identity", "tcb", "vmpl", "gpu", "config", "waive"])
        );
        if trusting {
            let ark = TestSigner::from_seed([seed; 32]).unwrap().ark_pem();
            let ark_path = self.dir.path().join(format!("test-ark-{seed}.pem"));
            std::fs::write(&ark_path, ark).unwrap();
            text.push_str(&format!(
                "test_root_ark = \"{}\"\n",
                ark_path.file_name().unwrap().to_string_lossy()
            ));
        }
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Policy sections by name: the test measurement, a TCB minimum the test chain meets,
    /// VMPL 0 with every guest policy bit stated, no GPUs, the plan's signer, and the
    /// waivers of what the rest leaves out.
    pub(crate) fn policy_sections(&self, which: &[&str]) -> String {
        let mut text = String::new();
        for section in which {
            text.push_str(&match *section {
                "identity" => format!(
                    "[identity]\nmeasurements = [\"{}\"]\n",
                    hex::encode(test_measurement())
                ),
                "tcb" => "[tcb.milan]\nbootloader = 0\ntee = 0\nsnp = 0\nmicrocode = 0\n".into(),
                "vmpl" => "[guest_policy]\nvmpl = [0]\nallow_smt = true\nallow_cxl = true\nrequire_single_socket = false\nrequire_aes_256_xts = false\nrequire_rapl_disabled = false\nrequire_ciphertext_hiding = false\n".into(),
                "waive" => WAIVERS.into(),
                "gpu" => "[gpu]\ncount = 0\n".into(),
                "config" => format!(
                    "[config]\nsigners = [\"{}\"]\n",
                    hex::encode(plan_key().verifying_key().to_bytes())
                ),
                other => panic!("no section {other}"),
            });
        }
        text
    }

    pub(crate) fn registry(&self) -> PathBuf {
        self.dir.path().join("registry.jsonl")
    }
}

/// What the test policies leave out, waived by name.
pub(crate) const WAIVERS: &str = "[waive]
\"snp.chain.crl\" = \"test chain: no CRL\"
\"snp.tcb.firmware\" = \"test reports carry no firmware version worth pinning\"
\"snp.policy.abi\" = \"tests set no ABI minimum\"
\"snp.policy.guest_svn\" = \"the test image has no ID block\"
\"config.image_signer\" = \"the test measurement comes without a release manifest\"
";

pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Enrols against node-01's plan bundle under the lab override: the test evidence is
/// anchored at a test root, which only a lab policy names.
pub(crate) fn enrol(
    url: &str,
    name: &str,
    policy: &Path,
    registry: &Path,
) -> Result<provisioning::enroll::Enrolment, EnrollError> {
    let plan = registry.parent().unwrap().join("plan/node-01");
    enrol_with(url, name, policy, registry, Some(&plan), true)
}

/// What the lab override records for a policy that is complete but for its test root.
pub(crate) fn only_test_root(lab: &Option<Vec<String>>) {
    let lab = lab.as_deref().unwrap_or_default();
    assert_eq!(lab.len(), 1, "{lab:?}");
    assert!(lab[0].contains("trust.test_root_ark"), "{lab:?}");
}

pub(crate) fn enrol_with(
    url: &str,
    name: &str,
    policy: &Path,
    registry: &Path,
    plan_bundle: Option<&Path>,
    lab_policy: bool,
) -> Result<provisioning::enroll::Enrolment, EnrollError> {
    enroll(&EnrollRequest {
        node_url: url,
        name: Some(name),
        policy,
        registry,
        verify_time: now(),
        timeout: Duration::from_secs(30),
        plan_bundle,
        lab_policy,
    })
}

impl Agents {
    /// A re-plan: the same subnet with one DNS server fewer, so every node's bundle (same
    /// signer) gets a new digest. Returns the new plan directory.
    pub(crate) fn replan(&self) -> PathBuf {
        let plan = self.dir.path().join("plan-2");
        let mut subnet = provisioning::subnet::Subnet::load(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sovereign-subnet-13.toml"),
            &Default::default(),
        )
        .unwrap();
        assert!(subnet.network.dns.len() > 1);
        subnet.network.dns.truncate(1);
        for b in provisioning::plan::bundles(
            &subnet,
            &provisioning::plan::plan(&subnet).unwrap(),
            &plan_key(),
        )
        .unwrap()
        {
            b.write_dir(&plan.join(&b.node().name)).unwrap();
        }
        plan
    }
}
