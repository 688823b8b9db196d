//! `provision`: plan a sovereign subnet, flash and verify node disks, enrol attested nodes.
//! Usage and exit statuses: docs/operator-guide.md, docs/governing-body-guide.md.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, anyhow};
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use provisioning::enroll::{EnrollError, EnrollRequest, Enrolment, enroll};
use provisioning::exit::{AFTER_HELP, ExitStatus};
use provisioning::flash::{Destination, FlashError, Progress, flash, verify_target};
use provisioning::image::{ReleaseManifest, check_image, write_test_image};
use provisioning::registry::{Decision, Record, Registry, SignedHead, TransitionError, head_path};
use provisioning::subnet::Subnet;
use provisioning::target::{Expect, SystemView};
use provisioning::witness::{self, Outcome};
use sha2::{Digest, Sha256};
use sn_config::Bundle;

#[derive(Parser)]
#[command(name = "provision", version, about = "Plan a sovereign subnet, flash and verify node disks, enrol attested nodes", after_help = AFTER_HELP, help_expected = true)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Capacity, DKG and checkpoint timing and cost per hardware profile; with --out, one
    /// configuration bundle per node.
    Plan(PlanArgs),
    /// Generate the Ed25519 key that signs configuration bundles: KEY (PKCS#8 PEM, mode
    /// 0600, never overwritten) and KEY.pub (the public key, hex, for the policy's
    /// `[config] signers` and the kernel command line's `sn.config_signer=`).
    Keygen(KeygenArgs),
    /// Write the image and the node's bundle to a whole disk (or, with --to-file, a file),
    /// sync, read back through the same descriptor, compare.
    Flash(FlashArgs),
    /// Re-check a flashed target against the release manifest (and a bundle, if given).
    Verify(VerifyArgs),
    /// Fetch evidence with a fresh nonce, verify it, record the decision in the registry.
    Enroll(EnrollArgs),
    /// The registry: check and sign its head, record a node's transitions, list the
    /// registered nodes as NODES.toml for `attest fleet`.
    Registry {
        #[command(subcommand)]
        command: RegistryCommand,
    },
    /// Write a small genuine GPT test image (no operating system) and its release manifest,
    /// for practising and CI.
    TestImage(TestImageArgs),
}

// The subcommands' arguments. No doc comments on the structs: the subcommand's help text
// is its variant's.

#[derive(clap::Args)]
struct PlanArgs {
    /// The subnet description: nodes, their hardware profiles, checkpoint and DKG
    /// parameters (docs/operator-guide.md).
    #[arg(value_name = "SUBNET.toml")]
    subnet: PathBuf,
    /// PROFILE=FILE: the `gpu-crypto bench --json` document for a profile (overrides the
    /// subnet file's [benchmarks] entry).
    #[arg(long, value_name = "PROFILE=FILE")]
    bench: Vec<String>,
    /// Write plan.txt, plan.json and one signed bundle directory per node (DIR/NODE/).
    #[arg(long, value_name = "DIR", requires = "signing_key")]
    out: Option<PathBuf>,
    /// The subnet operator's Ed25519 signing key (PKCS#8 PEM, from `provision keygen`)
    /// that signs every node's bundle.
    #[arg(long, value_name = "KEY")]
    signing_key: Option<PathBuf>,
    /// Print the plan as JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct KeygenArgs {
    /// Where to write the private key; the public key goes to KEY.pub beside it.
    #[arg(long, value_name = "KEY")]
    out: PathBuf,
}

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("destination").required(true).args(["target", "to_file"])))]
struct FlashArgs {
    /// The node image (disk.img from image/build).
    #[arg(long, value_name = "DISK.img")]
    image: PathBuf,
    /// The node's bundle directory (from `provision plan --out`).
    #[arg(long, value_name = "BUNDLE")]
    node: PathBuf,
    /// A whole block device (/dev/sdX, /dev/nvmeXnY), opened exclusively and checked.
    #[arg(long, value_name = "DEVICE")]
    target: Option<PathBuf>,
    /// Refuse the device unless its serial number (lsblk -o SERIAL) is exactly this.
    #[arg(long, value_name = "SERIAL", requires = "target")]
    expect_serial: Option<String>,
    /// Refuse the device unless its size in bytes (lsblk -b -o SIZE) is exactly this.
    #[arg(long, value_name = "BYTES", requires = "target")]
    expect_size: Option<u64>,
    /// Write a regular file instead of a device (for a VM disk or a later copy).
    #[arg(long, value_name = "FILE")]
    to_file: Option<PathBuf>,
    /// Default: release-manifest.json next to the image.
    #[arg(long, value_name = "release-manifest.json")]
    manifest: Option<PathBuf>,
}

#[derive(clap::Args)]
struct VerifyArgs {
    /// The node image the target was flashed with.
    #[arg(long, value_name = "DISK.img")]
    image: PathBuf,
    /// The device or file to read back (read only; a device with O_DIRECT).
    #[arg(long, value_name = "DEVICE_OR_FILE", visible_alias = "to-file")]
    target: PathBuf,
    /// Default: release-manifest.json next to the image.
    #[arg(long, value_name = "release-manifest.json")]
    manifest: Option<PathBuf>,
    /// Also require the configuration partition to hold exactly this bundle.
    #[arg(long, value_name = "BUNDLE")]
    node: Option<PathBuf>,
}

#[derive(clap::Args)]
struct EnrollArgs {
    /// The node agent's base URL, e.g. http://[2001:db8::11]:9420
    #[arg(long, value_name = "URL")]
    node: String,
    /// The verification policy (the same file `attest verify` takes).
    #[arg(long, value_name = "POLICY.toml")]
    policy: PathBuf,
    /// The registry file (append-only, hash-chained); created if missing.
    #[arg(long, value_name = "REGISTRY")]
    registry: PathBuf,
    /// Name recorded for the node (default: the plan bundle's node name).
    #[arg(long)]
    name: Option<String>,
    /// The node's bundle directory from `provision plan --out` (DIR/NODE): the node
    /// must run exactly this configuration (digest and signer bound in its evidence).
    #[arg(long, value_name = "BUNDLE")]
    bundle: Option<PathBuf>,
    /// Lab override: enrol under a policy without a measurement allow-list, TCB
    /// minimum, GPU count or configuration signer, or without --bundle. Printed and
    /// recorded in the registry; never for production.
    #[arg(long)]
    lab_policy: bool,
    /// Verification time for certificate validity, YYYY-MM-DDTHH:MM:SSZ or @unix (default now).
    #[arg(long)]
    time: Option<String>,
    /// Deadline of the evidence request in milliseconds, for all tries together (a busy
    /// node is tried again after its Retry-After or a backoff, each try with a fresh nonce).
    #[arg(long, default_value_t = 30_000)]
    timeout_ms: u64,
    /// Print the record as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct TestImageArgs {
    /// Directory to write disk.img and release-manifest.json into.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Size of the seeded root partition, MiB.
    #[arg(long, default_value_t = 8)]
    root_mib: u64,
    /// The configuration signer the image pins, as image/build's --config-signer does:
    /// KEY.pub from `provision keygen`, or its 64 hex digits.
    #[arg(long, value_name = "KEY.pub|HEX")]
    config_signer: String,
}

#[derive(Subcommand)]
enum RegistryCommand {
    /// Verify the hash chain, the governing body's signed head and that the registry extends
    /// the witness of the last head verified; print the number of records and the head.
    Check {
        /// The registry file.
        #[arg(long, value_name = "REGISTRY")]
        registry: PathBuf,
        /// The governing body's public key (KEY.pub from `provision keygen`, or hex).
        #[arg(long, value_name = "KEY.pub")]
        signer: String,
        /// The signed head (default: REGISTRY.head).
        #[arg(long, value_name = "HEAD")]
        head: Option<PathBuf>,
        #[command(flatten)]
        w: WitnessArgs,
    },
    /// Review the records after the signed head and sign the new head with the governing
    /// body's key.
    Sign {
        /// The registry file.
        #[arg(long, value_name = "REGISTRY")]
        registry: PathBuf,
        /// The governing body's Ed25519 key (PKCS#8 PEM, from `provision keygen`).
        #[arg(long, value_name = "KEY")]
        key: PathBuf,
        /// The signed head (default: REGISTRY.head).
        #[arg(long, value_name = "HEAD")]
        head: Option<PathBuf>,
        /// The registry's first signing: there is no signed head yet. Without it a missing
        /// head is refused, since a deleted head would otherwise be signed over unnoticed.
        #[arg(long)]
        initial: bool,
        #[command(flatten)]
        w: WitnessArgs,
    },
    /// Re-key a registered node (TCB update, new image) from an enrolment of its new
    /// identity that only the registry rules refused; the old key is retired.
    Rekey {
        #[command(flatten)]
        t: Transition,
        /// The seq of the enrolment record with the new identity's evidence.
        #[arg(long, value_name = "SEQ")]
        evidence: u64,
    },
    /// Record a registered node's new configuration bundle from an enrolment against the
    /// new plan bundle; the previous bundle is refused from then on.
    ConfigUpdate {
        #[command(flatten)]
        t: Transition,
        /// The seq of the enrolment record with the new bundle's evidence.
        #[arg(long, value_name = "SEQ")]
        evidence: u64,
    },
    /// Retire a registered node.
    Retire {
        #[command(flatten)]
        t: Transition,
        /// The node's recorded name.
        #[arg(long, value_name = "NAME")]
        node: String,
    },
    /// NODES.toml (name, url, chip_id, node_public_key, config_digest) of every registered
    /// node, from a registry whose chain and signed head verify (all records signed).
    Nodes {
        /// The registry file.
        #[arg(long, value_name = "REGISTRY")]
        registry: PathBuf,
        /// The governing body's public key (KEY.pub from `provision keygen`, or hex).
        #[arg(long, value_name = "KEY.pub")]
        signer: String,
        /// The signed head (default: REGISTRY.head).
        #[arg(long, value_name = "HEAD")]
        head: Option<PathBuf>,
        #[command(flatten)]
        w: WitnessArgs,
    },
}

/// What every transition takes.
#[derive(clap::Args)]
struct Transition {
    /// The registry file: the transition's record is appended to it.
    #[arg(long, value_name = "REGISTRY")]
    registry: PathBuf,
    /// Why, recorded in the transition's record.
    #[arg(long)]
    reason: String,
    /// The governing body's Ed25519 key: the registry is checked against its signed head
    /// and the new head signed.
    #[arg(long, value_name = "KEY")]
    key: PathBuf,
    /// The signed head (default: REGISTRY.head).
    #[arg(long, value_name = "HEAD")]
    head: Option<PathBuf>,
    #[command(flatten)]
    w: WitnessArgs,
}

/// The witness every command that verifies or signs the head checks and then updates.
#[derive(clap::Args)]
struct WitnessArgs {
    /// The governing body's witness of the last head it verified, kept outside the
    /// registry's directory (default: one file per registry under
    /// $XDG_CONFIG_HOME/sovereign-node/registry-witness/, or ~/.config/...).
    #[arg(long, value_name = "FILE")]
    witness: Option<PathBuf>,
    /// There is no witness yet: accept this registry as the starting point without the
    /// rollback check (said in the output) and write the witness. Refused when a witness
    /// exists.
    #[arg(long)]
    no_witness: bool,
}

impl WitnessArgs {
    /// The witness file of `registry`: --witness, or the default one.
    fn path(&self, registry: &Path) -> Result<PathBuf, Failure> {
        self.witness
            .clone()
            .or_else(|| witness::default_path(registry))
            .ok_or_else(|| {
                fail(ExitStatus::InvalidInput)(anyhow!(
                    "no --witness FILE, and neither XDG_CONFIG_HOME nor HOME is set for the default one"
                ))
            })
    }

    /// Checks `reg` (its signed head `signed` verified under `signer`) against the witness.
    fn check(
        &self,
        reg: &Registry,
        signed: &SignedHead,
        signer: &[u8; 32],
    ) -> Result<(PathBuf, Outcome), Failure> {
        let path = self.path(reg.path())?;
        let outcome = witness::check(reg, signed, &path, self.no_witness, signer)
            .map_err(|e| fail(e.status())(e))?;
        if outcome == Outcome::Overridden {
            eprintln!(
                "provision: NO WITNESS (--no-witness): {} accepted as the starting point, NOT checked for a rollback; witness written to {}",
                reg.path().display(),
                path.display()
            );
        }
        Ok((path, outcome))
    }
}

/// Records `head` as the witness at `path`.
fn write_witness(path: &Path, registry: &Path, head: &SignedHead) -> Result<(), Failure> {
    witness::write(path, registry, head).map_err(|e| fail(e.status())(e))
}

/// How the witness check went, for the output.
fn witness_note(path: &Path, outcome: &Outcome) -> String {
    match outcome {
        Outcome::Extends(n) => format!("extends the witness {} ({n} record(s))", path.display()),
        Outcome::Overridden => format!(
            "NO WITNESS (--no-witness): not checked for a rollback; witness {} started",
            path.display()
        ),
    }
}

/// An error with the exit status it maps to.
struct Failure {
    status: ExitStatus,
    error: anyhow::Error,
}

/// Maps an error to a [`Failure`] with `status`.
fn fail<E: Into<anyhow::Error>>(status: ExitStatus) -> impl FnOnce(E) -> Failure {
    move |error| Failure {
        status,
        error: error.into(),
    }
}

impl From<FlashError> for Failure {
    fn from(e: FlashError) -> Failure {
        fail(e.status())(e)
    }
}

impl From<EnrollError> for Failure {
    fn from(e: EnrollError) -> Failure {
        fail(e.status())(e)
    }
}

/// The error and its causes, each said once: several library errors already quote their
/// source in their own message, which `{:#}` would then print a second time.
fn error_chain(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text = format!("{text}: {cause}");
        }
    }
    text
}

fn main() -> ExitCode {
    // A file-size limit (ulimit -f) must end in a reported write error, not in death by
    // SIGXFSZ with a half-written target and no message.
    // SAFETY: setting a signal to SIG_IGN at start, before any thread exists.
    let _ = unsafe {
        nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGXFSZ,
            nix::sys::signal::SigHandler::SigIgn,
        )
    };
    let args = Args::parse();
    match run(args) {
        Ok(status) => status.into(),
        Err(Failure { status, error }) => {
            eprintln!("provision: error: {}", error_chain(&error));
            status.into()
        }
    }
}

/// Runs one subcommand.
fn run(args: Args) -> Result<ExitStatus, Failure> {
    match args.command {
        Command::Plan(a) => run_plan(&a),
        Command::Keygen(a) => run_keygen(&a),
        Command::Flash(a) => run_flash(a),
        Command::Verify(a) => run_verify(a),
        Command::Enroll(a) => run_enroll(&a),
        Command::Registry { command } => run_registry(command),
        Command::TestImage(a) => run_test_image(&a),
    }
}

/// `provision plan`: prints the plan; with --out, also writes it and every node's bundle.
fn run_plan(a: &PlanArgs) -> Result<ExitStatus, Failure> {
    let mut overrides = BTreeMap::new();
    for b in &a.bench {
        let (profile, file) = b.split_once('=').ok_or_else(|| {
            fail(ExitStatus::InvalidInput)(anyhow!("--bench {b:?} is not PROFILE=FILE"))
        })?;
        overrides.insert(profile.to_string(), PathBuf::from(file));
    }
    let subnet = Subnet::load(&a.subnet, &overrides).map_err(fail(ExitStatus::InvalidInput))?;
    let plan = provisioning::plan::plan(&subnet).map_err(fail(ExitStatus::InvalidInput))?;
    let text = provisioning::plan::render(&plan);
    let plan_json =
        serde_json::to_string_pretty(&plan).map_err(fail(ExitStatus::InvalidInput))? + "\n";
    if let Some(dir) = &a.out {
        let key_path = a.signing_key.as_deref().ok_or_else(|| {
            fail(ExitStatus::InvalidInput)(anyhow!("--out needs --signing-key KEY"))
        })?;
        write_plan_dir(dir, &subnet, &plan, key_path, &text, &plan_json)?;
    }
    print!("{}", if a.json { &plan_json } else { &text });
    Ok(ExitStatus::Success)
}

/// Writes one bundle directory per node (signed with the key at `key_path`),
/// bundle-digests.txt, plan.txt and plan.json into `dir`.
fn write_plan_dir(
    dir: &Path,
    subnet: &Subnet,
    plan: &provisioning::plan::Plan,
    key_path: &Path,
    text: &str,
    plan_json: &str,
) -> Result<(), Failure> {
    let key =
        sn_config::sign::load_signing_key(key_path).map_err(fail(ExitStatus::InvalidInput))?;
    let bundles =
        provisioning::plan::bundles(subnet, plan, &key).map_err(fail(ExitStatus::InvalidInput))?;
    let io = |path: &Path| format!("writing {}", path.display());
    std::fs::create_dir_all(dir)
        .with_context(|| io(dir))
        .map_err(fail(ExitStatus::Io))?;
    let mut digests = String::from(
        "# Configuration bundle digests (SHA-256 of each node's SHA256SUMS), written by `provision plan`.\n",
    );
    for bundle in &bundles {
        let node_dir = dir.join(&bundle.node().name);
        bundle.write_dir(&node_dir).map_err(fail(ExitStatus::Io))?;
        digests.push_str(&format!(
            "{}  {}\n",
            hex::encode(bundle.digest()),
            bundle.node().name
        ));
    }
    for (name, content) in [
        ("bundle-digests.txt", digests.as_str()),
        ("plan.txt", text),
        ("plan.json", plan_json),
    ] {
        std::fs::write(dir.join(name), content)
            .with_context(|| io(&dir.join(name)))
            .map_err(fail(ExitStatus::Io))?;
    }
    eprintln!(
        "wrote {} node bundle(s) signed by {}, bundle-digests.txt, plan.txt and plan.json to {}",
        bundles.len(),
        hex::encode(key.verifying_key().to_bytes()),
        dir.display()
    );
    Ok(())
}

/// `provision keygen`: a new configuration signing key and its public key beside it.
fn run_keygen(a: &KeygenArgs) -> Result<ExitStatus, Failure> {
    let out = &a.out;
    let key = sn_config::sign::generate_key(out).map_err(fail(ExitStatus::Io))?;
    let public = hex::encode(key.verifying_key().to_bytes());
    let pub_path = PathBuf::from(format!("{}.pub", out.display()));
    sn_config::fs::write_file_atomic(&pub_path, format!("{public}\n").as_bytes())
        .map_err(fail(ExitStatus::Io))?;
    println!(
        "wrote {} (private, mode 0600) and {}; configuration signer {public}",
        out.display(),
        pub_path.display()
    );
    Ok(ExitStatus::Success)
}

/// `provision flash`: writes the image and the node's bundle, reads them back, compares.
fn run_flash(a: FlashArgs) -> Result<ExitStatus, Failure> {
    let manifest = load_manifest(&a.image, a.manifest)?;
    let bundle = load_bundle(&a.node)?;
    let dest = match (a.target, a.to_file) {
        (Some(path), None) => Destination::Device {
            path,
            expect: Expect {
                serial: a.expect_serial,
                size: a.expect_size,
            },
        },
        (None, Some(path)) => Destination::File { path },
        _ => {
            return Err(fail(ExitStatus::InvalidInput)(anyhow!(
                "give exactly one of --target and --to-file"
            )));
        }
    };
    let progress = Bar::new();
    let verified = flash(
        &a.image,
        &manifest,
        &bundle,
        &dest,
        &SystemView::host(),
        &progress,
    )?;
    println!(
        "flashed and verified {}: node {}, {} bytes, image SHA-256 {} (= manifest), configuration partition SHA-256 {}",
        verified.target.display(),
        verified.node_name,
        verified.bytes,
        verified.image_sha256,
        verified.config_sha256
    );
    Ok(ExitStatus::Success)
}

/// `provision verify`: checks the image, then reads the target back against the manifest
/// (and the bundle given with --node).
fn run_verify(a: VerifyArgs) -> Result<ExitStatus, Failure> {
    let manifest = load_manifest(&a.image, a.manifest)?;
    let progress = Bar::new();
    progress.phase("checking the image", manifest.disk_image.size);
    check_image(&a.image, &manifest, &|d| progress.advance(d))
        .map_err(fail(ExitStatus::InvalidInput))?;
    progress.finish();
    let expected = match &a.node {
        None => None,
        Some(dir) => {
            let bundle = load_bundle(dir)?;
            let region = provisioning::flash::config_region(&bundle, &manifest)?;
            Some(Sha256::digest(&region).into())
        }
    };
    let verified = verify_target(&a.target, &manifest, expected, &progress)?;
    println!(
        "verified {}: node {}, image SHA-256 {} (= manifest), configuration partition SHA-256 {}{}",
        verified.target.display(),
        verified.node_name,
        verified.image_sha256,
        verified.config_sha256,
        if expected.is_some() {
            " (= bundle)"
        } else {
            ""
        }
    );
    Ok(ExitStatus::Success)
}

/// `provision enroll`: success when the node was admitted, [`ExitStatus::CheckFailed`]
/// when it was refused (recorded either way).
fn run_enroll(a: &EnrollArgs) -> Result<ExitStatus, Failure> {
    let verify_time = match &a.time {
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        Some(t) => attestation::parse_time(t).ok_or_else(|| {
            fail(ExitStatus::InvalidInput)(anyhow!(
                "--time {t:?} is not YYYY-MM-DDTHH:MM:SSZ or @unix"
            ))
        })?,
    };
    let outcome = enroll(&EnrollRequest {
        node_url: &a.node,
        name: a.name.as_deref(),
        policy: &a.policy,
        registry: &a.registry,
        verify_time,
        timeout: Duration::from_millis(a.timeout_ms),
        plan_bundle: a.bundle.as_deref(),
        lab_policy: a.lab_policy,
    })?;
    let r = &outcome.record;
    if let Some(waived) = &r.waived {
        eprintln!(
            "provision: WAIVED by the policy {} and recorded: {}",
            a.policy.display(),
            waived.join("; ")
        );
    }
    if let Some(lacking) = &r.lab_policy {
        eprintln!(
            "provision: LAB POLICY: decided under {} although it lacks {}; recorded as a lab decision, NOT a production admission",
            a.policy.display(),
            lacking.join(", ")
        );
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(r).map_err(fail(ExitStatus::Io))?
        );
    } else {
        print_enrolment(&outcome, &a.registry);
    }
    Ok(if r.decision == Decision::Admit {
        ExitStatus::Success
    } else {
        ExitStatus::CheckFailed
    })
}

/// The verifier's table and the decision, for people.
fn print_enrolment(outcome: &Enrolment, registry: &Path) {
    let r = &outcome.record;
    if let Some(v) = &outcome.verdict {
        print!("{}", v.to_table());
    }
    match r.decision {
        Decision::Admit => println!(
            "ADMITTED {} (chip id {}..., node key {}), record {} of {}, registry head {}",
            r.name,
            r.chip_id.as_deref().unwrap_or("?").get(..16).unwrap_or(""),
            r.node_public_key.as_deref().unwrap_or("?"),
            r.seq,
            registry.display(),
            outcome.registry_head
        ),
        _ => {
            println!(
                "REFUSED {}, record {} of {}:",
                r.name,
                r.seq,
                registry.display()
            );
            for reason in &r.reasons {
                println!("  {reason}");
            }
        }
    }
}

/// `provision registry ...`.
fn run_registry(command: RegistryCommand) -> Result<ExitStatus, Failure> {
    match command {
        RegistryCommand::Check {
            registry,
            signer,
            head,
            w,
        } => registry_check(&registry, &signer, head, &w),
        RegistryCommand::Sign {
            registry,
            key,
            head,
            initial,
            w,
        } => registry_sign(&registry, &key, head, initial, &w),
        RegistryCommand::Rekey { t, evidence } => {
            transition(&t, |reg| reg.rekey(evidence, &t.reason))
        }
        RegistryCommand::ConfigUpdate { t, evidence } => {
            transition(&t, |reg| reg.config_update(evidence, &t.reason))
        }
        RegistryCommand::Retire { t, node } => transition(&t, |reg| reg.retire(&node, &t.reason)),
        RegistryCommand::Nodes {
            registry,
            signer,
            head,
            w,
        } => registry_nodes(&registry, &signer, head, &w),
    }
}

/// The registry at `registry` with its chain and its signed head (default REGISTRY.head)
/// verified against `signer` and found to extend the witness, which then records this
/// head; the signer's key and how the witness check went.
fn verified_registry(
    registry: &Path,
    signer: &str,
    head: Option<PathBuf>,
    w: &WitnessArgs,
) -> Result<(Registry, [u8; 32], String), Failure> {
    let signer = load_signer(signer)?;
    let reg = open_registry(registry)?;
    let head = head.unwrap_or_else(|| head_path(registry));
    let checked = reg
        .check_head(&head, &signer, false)
        .map_err(fail(ExitStatus::RegistryBroken))?;
    let (path, outcome) = w.check(&reg, &checked.head, &signer)?;
    write_witness(&path, registry, &checked.head)?;
    Ok((reg, signer, witness_note(&path, &outcome)))
}

/// `provision registry check`: the chain, the signed head (default REGISTRY.head) and the
/// witness.
fn registry_check(
    registry: &Path,
    signer: &str,
    head: Option<PathBuf>,
    w: &WitnessArgs,
) -> Result<ExitStatus, Failure> {
    let (reg, signer, note) = verified_registry(registry, signer, head, w)?;
    let admitted = reg.admitted().count();
    println!(
        "{}: {} record(s), {admitted} registered, chain intact, head {} signed by {}, {note}",
        registry.display(),
        reg.records().len(),
        reg.head(),
        hex::encode(signer)
    );
    Ok(ExitStatus::Success)
}

/// `provision registry sign`: lists the records after the signed head (all of them with
/// `initial`, when there is no head yet) and signs the new head.
fn registry_sign(
    registry: &Path,
    key: &Path,
    head: Option<PathBuf>,
    initial: bool,
    w: &WitnessArgs,
) -> Result<ExitStatus, Failure> {
    let key = sn_config::sign::load_signing_key(key).map_err(fail(ExitStatus::InvalidInput))?;
    let signer = key.verifying_key().to_bytes();
    let reg = open_registry(registry)?;
    let head = head.unwrap_or_else(|| head_path(registry));
    let witness = w.path(registry)?;
    let from = match (head.exists(), initial) {
        (true, false) => {
            let checked = reg
                .check_head(&head, &signer, true)
                .map_err(fail(ExitStatus::RegistryBroken))?;
            w.check(&reg, &checked.head, &signer)?;
            checked.signed
        }
        (false, true) if witness.exists() => {
            return Err(fail(ExitStatus::RegistryBroken)(anyhow!(
                "--initial: the witness {} exists: this registry was signed before and its head was removed",
                witness.display()
            )));
        }
        (false, true) => 0,
        (true, true) => {
            return Err(fail(ExitStatus::InvalidInput)(anyhow!(
                "--initial: {} exists, the registry was signed before",
                head.display()
            )));
        }
        (false, false) => {
            return Err(fail(ExitStatus::RegistryBroken)(anyhow!(
                "no signed head at {}: if this is the registry's first signing, pass --initial; otherwise the head was removed",
                head.display()
            )));
        }
    };
    list_records(&reg.records()[from as usize..]);
    let signed = reg.sign_head(&key, &head).map_err(fail(ExitStatus::Io))?;
    write_witness(&witness, registry, &signed)?;
    println!(
        "signed head {} ({} record(s)) written to {}, witness {}",
        reg.head(),
        reg.records().len(),
        head.display(),
        witness.display()
    );
    Ok(ExitStatus::Success)
}

/// `provision registry nodes`: NODES.toml of the registered nodes, from a registry whose
/// chain and signed head verify.
fn registry_nodes(
    registry: &Path,
    signer: &str,
    head: Option<PathBuf>,
    w: &WitnessArgs,
) -> Result<ExitStatus, Failure> {
    // attest fleet pins what this lists: only what the governing body signed, and not an
    // older signed state (it would bring back retired nodes and superseded bundles).
    let (reg, signer, note) = verified_registry(registry, signer, head, w)?;
    let mut out = format!(
        "# Registered nodes of {} ({} record(s), head {} signed by {}, {note}), for `attest fleet --nodes`.\n",
        registry.display(),
        reg.records().len(),
        reg.head(),
        hex::encode(signer)
    );
    for r in reg.admitted() {
        out.push_str(&format!(
            "\n[[node]]\nname = {}\nurl = {}\nchip_id = {}\nnode_public_key = {}\n",
            toml_str(&r.name),
            toml_str(&r.node_url),
            toml_str(r.chip_id.as_deref().unwrap_or("")),
            toml_str(r.node_public_key.as_deref().unwrap_or(""))
        ));
        if let Some(d) = &r.config_digest {
            out.push_str(&format!("config_digest = {}\n", toml_str(d)));
        }
    }
    print!("{out}");
    Ok(ExitStatus::Success)
}

/// `provision test-image`: disk.img and release-manifest.json in --out.
fn run_test_image(a: &TestImageArgs) -> Result<ExitStatus, Failure> {
    let signer = load_signer(&a.config_signer)?;
    let out = &a.out;
    std::fs::create_dir_all(out)
        .with_context(|| format!("creating {}", out.display()))
        .map_err(fail(ExitStatus::Io))?;
    let m = write_test_image(out, a.root_mib << 20, 16 << 20, &[signer])
        .map_err(fail(ExitStatus::Io))?;
    println!(
        "wrote {} ({} bytes, SHA-256 {}) and {}; {} at {} (+{} bytes). TEST IMAGE: no operating system.",
        out.join(&m.disk_image.file).display(),
        m.disk_image.size,
        m.disk_image.sha256,
        m.path.display(),
        m.disk_image.config_partition.name,
        m.disk_image.config_partition.offset_bytes,
        m.disk_image.config_partition.size_bytes
    );
    Ok(ExitStatus::Success)
}

fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// A public key: a file holding hex (KEY.pub), or the hex itself.
fn load_signer(arg: &str) -> Result<[u8; 32], Failure> {
    let text = match std::fs::read_to_string(arg) {
        Ok(t) => t,
        Err(_) if sn_config::sign::parse_public_key(arg).is_some() => arg.to_string(),
        Err(e) => {
            return Err(fail(ExitStatus::InvalidInput)(anyhow!(
                "--signer {arg}: {e}"
            )));
        }
    };
    sn_config::sign::parse_public_key(text.trim()).ok_or_else(|| {
        fail(ExitStatus::InvalidInput)(anyhow!(
            "--signer {arg}: not an Ed25519 public key (64 hex digits)"
        ))
    })
}

/// One line per record, for the governing body's review before it signs.
fn list_records(records: &[Record]) {
    for r in records {
        println!(
            "record {}: {:?} {} ({}){}",
            r.seq,
            r.decision,
            r.name,
            r.node_url,
            r.reason
                .as_deref()
                .map(|t| format!(": {t}"))
                .unwrap_or_default()
        );
    }
}

/// Checks the registry against its signed head, records one transition, signs the new head.
fn transition(
    t: &Transition,
    step: impl FnOnce(&mut Registry) -> Result<Record, TransitionError>,
) -> Result<ExitStatus, Failure> {
    let key = sn_config::sign::load_signing_key(&t.key).map_err(fail(ExitStatus::InvalidInput))?;
    let signer = key.verifying_key().to_bytes();
    let mut reg = open_registry(&t.registry)?;
    let head = t.head.clone().unwrap_or_else(|| head_path(&t.registry));
    let witness = t.w.path(&t.registry)?;
    if head.exists() || !reg.records().is_empty() {
        let checked = reg
            .check_head(&head, &signer, true)
            .map_err(fail(ExitStatus::RegistryBroken))?;
        t.w.check(&reg, &checked.head, &signer)?;
        // The new head covers these too: shown as `sign` shows them.
        list_records(&reg.records()[checked.signed as usize..]);
    }
    let r = step(&mut reg).map_err(|e| fail(e.status())(e))?;
    let signed = reg.sign_head(&key, &head).map_err(fail(ExitStatus::Io))?;
    write_witness(&witness, &t.registry, &signed)?;
    println!(
        "{:?} {} recorded as record {} of {} ({}), signed head {}",
        r.decision,
        r.name,
        r.seq,
        t.registry.display(),
        r.reason.as_deref().unwrap_or(""),
        reg.head()
    );
    Ok(ExitStatus::Success)
}

fn open_registry(path: &Path) -> Result<Registry, Failure> {
    Registry::open(path).map_err(|e| fail(e.status())(e))
}

/// The release manifest for `image`: `--manifest`, or release-manifest.json next to the image.
/// Errors name the argument that led to the missing file.
fn load_manifest(image: &Path, manifest: Option<PathBuf>) -> Result<ReleaseManifest, Failure> {
    match std::fs::metadata(image) {
        Ok(m) if m.is_file() => {}
        Ok(_) => {
            return Err(fail(ExitStatus::InvalidInput)(anyhow!(
                "--image {}: not a regular file",
                image.display()
            )));
        }
        Err(e) => {
            return Err(fail(ExitStatus::InvalidInput)(anyhow!(
                "--image {}: {e}",
                image.display()
            )));
        }
    }
    let given = manifest.is_some();
    let path = manifest.unwrap_or_else(|| ReleaseManifest::default_path(image));
    ReleaseManifest::load(&path)
        .with_context(|| {
            if given {
                format!("--manifest {}", path.display())
            } else {
                format!(
                    "the release manifest next to --image {} (give another with --manifest)",
                    image.display()
                )
            }
        })
        .map_err(fail(ExitStatus::InvalidInput))
}

/// A plan's bundle directory, verified (signature and checksums).
fn load_bundle(dir: &Path) -> Result<Bundle, Failure> {
    Bundle::load_dir(dir, &[]).map_err(|e| fail(ExitStatus::InvalidInput)(bundle_error(dir, e)))
}

/// A read error already names the file it failed on (the directory or a member in it), so
/// that path alone leads the message; any other error is the bundle's, under its directory.
fn bundle_error(dir: &Path, e: sn_config::ConfigError) -> anyhow::Error {
    match e {
        sn_config::ConfigError::Io { path, source } => {
            anyhow!("--node {}: {source}", path.display())
        }
        e => anyhow::Error::new(e).context(format!("bundle {}", dir.display())),
    }
}

/// indicatif progress on a terminal, nothing otherwise.
struct Bar {
    tty: bool,
    bar: Mutex<Option<ProgressBar>>,
}

impl Bar {
    fn new() -> Bar {
        Bar {
            tty: std::io::stderr().is_terminal(),
            bar: Mutex::new(None),
        }
    }
}

impl Progress for Bar {
    fn phase(&self, name: &str, len: u64) {
        if !self.tty {
            return;
        }
        let bar = ProgressBar::new(len);
        if let Ok(style) = ProgressStyle::with_template(
            "{msg:20} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(name.to_string());
        if let Ok(mut slot) = self.bar.lock()
            && let Some(old) = slot.replace(bar)
        {
            old.finish();
        }
    }

    fn advance(&self, done: u64) {
        if let Ok(slot) = self.bar.lock()
            && let Some(bar) = slot.as_ref()
        {
            bar.set_position(done);
        }
    }

    fn finish(&self) {
        if let Ok(mut slot) = self.bar.lock()
            && let Some(bar) = slot.take()
        {
            bar.finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every argument of every subcommand is described in `--help`: the command sets
    /// `help_expected`, which clap's debug assertions check for each argument.
    #[test]
    fn every_argument_has_help_text() {
        super::Args::command().debug_assert();
    }
}
