//! The checks of an AMD SEV-SNP report against a policy: format, chain, signature, guest
//! policy, TCB and identity, each reported by name.

use std::sync::Arc;

use crate::snp::amd::{self, ChainResult, ChainVerifier, EndorsementKind, SuppliedChain};
use crate::snp::raw::{self, AttestationReport, GuestPolicy, SigningKey};
use crate::snp::tcb::{Product, TcbParts};

use crate::policy::{Policy, TcbMinimumError};
use crate::report::Check;

/// Everything a report verification needs besides the report and its certificates.
pub struct SnpContext<'a> {
    /// The verification policy.
    pub policy: &'a Policy,
    /// The AMD chain verifier (its trust store and cache).
    pub chains: &'a ChainVerifier,
    /// Verification time, seconds since the Unix epoch.
    pub now: u64,
}

/// What the checks learned, for the bundle-level checks that follow.
#[derive(Debug, Default)]
pub struct SnpOutcome {
    /// The parsed report; `None` when it did not parse.
    pub report: Option<AttestationReport>,
    /// Whether the chain is anchored at a test root the policy names.
    pub is_test_root: bool,
    /// The product of the anchoring root; `None` when the chain is not anchored.
    pub product: Option<Product>,
}

fn hexs(b: &[u8]) -> String {
    hex::encode(b)
}

/// Every SNP check, in order: format, chain, signature, report vs certificate, guest policy,
/// TCB, identity. `chain` is `Err` when the endorsement certificate could not be parsed.
pub fn verify_report(
    report_bytes: &[u8],
    chain: Result<SuppliedChain, String>,
    ctx: &SnpContext,
    checks: &mut Vec<Check>,
) -> SnpOutcome {
    let mut outcome = SnpOutcome::default();
    let report = match AttestationReport::parse(report_bytes) {
        Ok(r) => {
            checks.push(Check::pass(
                "snp.format.size",
                format!("{} bytes", report_bytes.len()),
            ));
            r
        }
        Err(e) => {
            checks.push(Check::fail("snp.format.size", e.to_string()));
            return outcome;
        }
    };
    format_checks(&report, ctx.policy, checks);
    let chain = match chain {
        Ok(c) => c,
        Err(e) => {
            checks.push(Check::fail("snp.chain.vcek_parse", e));
            outcome.report = Some(report);
            return outcome;
        }
    };
    let result = chain_checks(&report, &chain, ctx, checks);
    outcome.is_test_root = result.is_test_root;
    outcome.product = result.product;
    cert_checks(&report, &result, checks);
    guest_policy_checks(&report, ctx.policy, checks);
    tcb_checks(&report, ctx.policy, result.product, checks);
    identity_checks(&report, ctx.policy, checks);
    outcome.report = Some(report);
    outcome
}

/// The AMD chain (cached per chain), its validity at `ctx.now`, the CRL and the report's
/// signature under the endorsement key.
fn chain_checks(
    report: &AttestationReport,
    chain: &SuppliedChain,
    ctx: &SnpContext,
    checks: &mut Vec<Check>,
) -> Arc<ChainResult> {
    let result = ctx.chains.verify(chain);
    checks.extend(result.checks.iter().cloned());
    checks.push(amd::validity_check(&result, ctx.now));
    checks.push(crl_check(chain, &result, ctx));
    match &result.vcek_key {
        Some(key) => checks.push(amd::report_signature_check(report, key)),
        None => checks.push(Check::skip(
            "snp.report.signature",
            "not evaluated: no usable endorsement key",
        )),
    }
    result
}

/// `snp.chain.crl`: the policy's CRL, checked against the ARK that anchored the chain.
fn crl_check(chain: &SuppliedChain, result: &ChainResult, ctx: &SnpContext) -> Check {
    let Some(crl) = &ctx.policy.crl else {
        return Check::skip("snp.chain.crl", "no CRL configured");
    };
    if result.product.is_none() {
        return Check::skip("snp.chain.crl", "not evaluated: chain not anchored");
    }
    let anchor = ctx.chains.trust().anchors().iter().find(|a| {
        chain
            .ark
            .as_ref()
            .is_none_or(|ark| ark.der() == a.ark.der())
            && Some(a.product) == result.product
    });
    match anchor {
        Some(a) => {
            let ask = chain.ask.as_ref().or_else(|| {
                a.intermediates
                    .iter()
                    .find(|i| i.subject() == chain.vcek.issuer())
            });
            amd::crl_check(crl, &a.ark, ask, ctx.now)
        }
        None => Check::fail("snp.chain.crl", "no anchor to check the CRL against"),
    }
}

/// The report against its endorsement certificate: key kind, then (chain anchored) product,
/// CPUID, reported TCB and chip id.
fn cert_checks(report: &AttestationReport, result: &ChainResult, checks: &mut Vec<Check>) {
    checks.push(key_kind_check(report, result.kind));
    match (&result.extensions, result.product) {
        (Err(e), _) => {
            checks.push(Check::fail("snp.cert.extensions", e.clone()));
        }
        (Ok(_), None) => {
            checks.push(Check::skip(
                "snp.cert.tcb",
                "not evaluated: chain not anchored",
            ));
        }
        (Ok(ext), Some(product)) => {
            // Product: the anchor decides; the certificate's name and the CPUID must agree.
            checks.push(cert_product_check(ext, product));
            checks.push(cpuid_check(report, product));
            checks.push(cert_tcb_check(report, ext, product));
            checks.push(chip_id_vs_cert(report, ext, result.kind, product));
        }
    }
}

/// `snp.cert.key_kind`: the report names the kind of key the certificate certifies.
fn key_kind_check(report: &AttestationReport, kind: EndorsementKind) -> Check {
    let kind_name = kind.name();
    let key_matches = matches!(
        (report.signing_key(), kind),
        (SigningKey::Vcek, EndorsementKind::Vcek) | (SigningKey::Vlek, EndorsementKind::Vlek)
    );
    if key_matches {
        Check::pass(
            "snp.cert.key_kind",
            format!(
                "report signed by {}, certificate is a {kind_name}",
                report.signing_key()
            ),
        )
    } else {
        Check::fail(
            "snp.cert.key_kind",
            format!(
                "report says {}, certificate is a {kind_name}",
                report.signing_key()
            ),
        )
    }
}

/// `snp.cert.product`: the certificate's productName is the anchor's product.
fn cert_product_check(ext: &amd::EndorsementExtensions, product: Product) -> Check {
    let cert_product = ext
        .product_name
        .as_deref()
        .and_then(Product::from_product_name);
    match (&ext.product_name, cert_product) {
        (Some(name), Some(p)) if p == product => Check::pass(
            "snp.cert.product",
            format!("certificate productName {name:?}, chain root {product}"),
        ),
        (Some(name), _) => Check::fail(
            "snp.cert.product",
            format!("certificate productName {name:?}, chain root {product}"),
        ),
        (None, _) => Check::fail(
            "snp.cert.product",
            "productName extension (1.3.6.1.4.1.3704.1.2) missing",
        ),
    }
}

/// `snp.report.cpuid`: the report's CPUID (version 3 and later) is the anchor's product.
fn cpuid_check(report: &AttestationReport, product: Product) -> Check {
    match report.cpuid() {
        None => Check::skip("snp.report.cpuid", "report version 2 carries no CPUID"),
        Some((fam, model, step)) => match Product::from_cpuid(fam, model) {
            Some(p) if p == product => Check::pass(
                "snp.report.cpuid",
                format!("family {fam:#x} model {model:#x} stepping {step:#x} = {p}"),
            ),
            other => Check::fail(
                "snp.report.cpuid",
                format!(
                    "family {fam:#x} model {model:#x} = {}, chain root {product}",
                    other.map_or("unknown".into(), |p| p.to_string())
                ),
            ),
        },
    }
}

/// `snp.cert.tcb`: the report's reported TCB is the one the certificate certifies.
fn cert_tcb_check(
    report: &AttestationReport,
    ext: &amd::EndorsementExtensions,
    product: Product,
) -> Check {
    let reported = TcbParts::decode(report.reported_tcb(), product);
    match ext.tcb(product) {
        Err(missing) => Check::fail("snp.cert.tcb", format!("{missing} extension missing")),
        Ok(cert_tcb) if cert_tcb == reported => Check::pass(
            "snp.cert.tcb",
            format!("reported_tcb {reported} = certificate {cert_tcb}"),
        ),
        Ok(cert_tcb) => Check::fail(
            "snp.cert.tcb",
            format!("reported_tcb {reported} != certificate {cert_tcb}"),
        ),
    }
}

fn chip_id_vs_cert(
    report: &AttestationReport,
    ext: &amd::EndorsementExtensions,
    kind: EndorsementKind,
    product: Product,
) -> Check {
    let name = "snp.cert.chip_id";
    let chip = report.chip_id();
    if kind == EndorsementKind::Vlek {
        return Check::skip(
            name,
            format!(
                "VLEK-signed: no per-chip hwID; CSP id {:?}",
                ext.csp_id.as_deref().unwrap_or("absent")
            ),
        );
    }
    let Some(hwid) = &ext.hw_id else {
        return Check::fail(name, "hwID extension (1.3.6.1.4.1.3704.1.4) missing");
    };
    let expected_len = if product == Product::Turin { 8 } else { 64 };
    if hwid.len() != expected_len {
        return Check::fail(
            name,
            format!(
                "hwID is {} bytes, {product} certifies {expected_len}",
                hwid.len()
            ),
        );
    }
    let reported = chip.get(..expected_len).unwrap_or(&[]);
    if reported == hwid.as_slice() {
        Check::pass(
            name,
            format!("chip_id {} = certificate hwID", hexs(reported)),
        )
    } else {
        Check::fail(
            name,
            format!(
                "chip_id {} != certificate hwID {}",
                hexs(reported),
                hexs(hwid)
            ),
        )
    }
}

fn format_checks(report: &AttestationReport, policy: &Policy, checks: &mut Vec<Check>) {
    let v = report.version();
    checks.push(if raw::SUPPORTED_VERSIONS.contains(&v) {
        Check::pass(
            "snp.format.version",
            format!("version {v} (supported 2..=5)"),
        )
    } else {
        Check::fail(
            "snp.format.version",
            format!("version {v}, supported 2..=5"),
        )
    });
    let algo = report.signature_algo();
    checks.push(if algo == raw::SIG_ALGO_ECDSA_P384_SHA384 {
        Check::pass("snp.format.signature_algo", "1 = ECDSA P-384 with SHA-384")
    } else {
        Check::fail(
            "snp.format.signature_algo",
            format!("{algo}, expected 1 (ECDSA P-384 SHA-384)"),
        )
    });
    let key = report.signing_key();
    let allowed =
        |k: &str| policy.signing_keys.is_empty() || policy.signing_keys.iter().any(|x| x == k);
    checks.push(match key {
        SigningKey::Vcek if allowed("vcek") => Check::pass("snp.format.signing_key", "VCEK"),
        SigningKey::Vlek if allowed("vlek") => Check::pass("snp.format.signing_key", "VLEK"),
        SigningKey::Vcek | SigningKey::Vlek => Check::fail(
            "snp.format.signing_key",
            format!("{key} not in policy {:?}", policy.signing_keys),
        ),
        other => Check::fail(
            "snp.format.signing_key",
            format!("{other}: not signed by VCEK or VLEK"),
        ),
    });
    checks.push(match report.first_nonzero_reserved() {
        None => Check::pass(
            "snp.format.reserved_zero",
            format!("all reserved fields of version {v} are zero"),
        ),
        Some((offset, value)) => Check::fail(
            "snp.format.reserved_zero",
            format!("reserved byte at {offset:#05x} is {value:#04x}"),
        ),
    });
    let p = report.policy();
    checks.push(if !p.has(GuestPolicy::RESERVED_MBO) {
        Check::fail(
            "snp.format.policy_bits",
            format!("policy {:#x}: bit 17 (must be one) is clear", p.0),
        )
    } else if p.0 & GuestPolicy::RESERVED_MBZ != 0 {
        Check::fail(
            "snp.format.policy_bits",
            format!(
                "policy {:#x}: reserved bits {:#x} set",
                p.0,
                p.0 & GuestPolicy::RESERVED_MBZ
            ),
        )
    } else {
        Check::pass(
            "snp.format.policy_bits",
            format!("policy {:#x}: bit 17 set, bits 63:26 clear", p.0),
        )
    });
}

fn bit_rule(checks: &mut Vec<Check>, name: &str, what: &str, set: bool, want: Option<bool>) {
    let state = if set { "set" } else { "clear" };
    checks.push(match want {
        None => Check::skip(name, format!("{what} {state}; not constrained by policy")),
        Some(w) if w == set => Check::pass(name, format!("{what} {state} as required")),
        Some(_) => Check::fail(
            name,
            format!(
                "{what} {state}, policy requires {}",
                if set { "clear" } else { "set" }
            ),
        ),
    });
}

/// The guest policy of the report against the verification policy: the bits that are never
/// allowed, SMT, the bits the policy may require, ABI, VMPL and guest SVN.
fn guest_policy_checks(report: &AttestationReport, policy: &Policy, checks: &mut Vec<Check>) {
    let p = report.policy();
    forbidden_policy_checks(p, checks);
    checks.push(smt_check(p, policy));
    required_bit_checks(p, policy, checks);
    checks.push(abi_check(p, policy));
    checks.push(vmpl_check(report, policy));
    checks.push(guest_svn_check(report, policy));
}

/// Never configurable: a debug guest's memory is readable by the host, and a migration
/// agent can export it.
fn forbidden_policy_checks(p: GuestPolicy, checks: &mut Vec<Check>) {
    checks.push(if p.has(GuestPolicy::DEBUG) {
        Check::fail(
            "snp.policy.debug",
            format!("policy {:#x}: DEBUG (bit 19) allowed", p.0),
        )
    } else {
        Check::pass("snp.policy.debug", "DEBUG (bit 19) clear")
    });
    checks.push(if p.has(GuestPolicy::MIGRATE_MA) {
        Check::fail(
            "snp.policy.migration_agent",
            format!("policy {:#x}: MIGRATE_MA (bit 18) allowed", p.0),
        )
    } else {
        Check::pass("snp.policy.migration_agent", "MIGRATE_MA (bit 18) clear")
    });
}

/// `snp.policy.smt`: a guest that allows SMT fails only a policy that forbids it.
fn smt_check(p: GuestPolicy, policy: &Policy) -> Check {
    let smt = p.has(GuestPolicy::SMT);
    if smt && !policy.allow_smt {
        Check::fail(
            "snp.policy.smt",
            "SMT (bit 16) allowed by the guest, policy forbids SMT",
        )
    } else {
        Check::pass(
            "snp.policy.smt",
            format!(
                "SMT bit {}; policy allow_smt={}",
                if smt { "set" } else { "clear" },
                policy.allow_smt
            ),
        )
    }
}

/// The guest policy bits the verification policy may require set (or, for CXL, clear).
fn required_bit_checks(p: GuestPolicy, policy: &Policy, checks: &mut Vec<Check>) {
    bit_rule(
        checks,
        "snp.policy.single_socket",
        "SINGLE_SOCKET (bit 20)",
        p.has(GuestPolicy::SINGLE_SOCKET),
        policy.require_single_socket.then_some(true),
    );
    bit_rule(
        checks,
        "snp.policy.cxl",
        "CXL_ALLOW (bit 21)",
        p.has(GuestPolicy::CXL_ALLOW),
        (!policy.allow_cxl).then_some(false),
    );
    bit_rule(
        checks,
        "snp.policy.aes_256_xts",
        "MEM_AES_256_XTS (bit 22)",
        p.has(GuestPolicy::MEM_AES_256_XTS),
        policy.require_aes_256_xts.then_some(true),
    );
    bit_rule(
        checks,
        "snp.policy.rapl_disabled",
        "RAPL_DIS (bit 23)",
        p.has(GuestPolicy::RAPL_DIS),
        policy.require_rapl_disabled.then_some(true),
    );
    bit_rule(
        checks,
        "snp.policy.ciphertext_hiding",
        "CIPHERTEXT_HIDING (bit 24)",
        p.has(GuestPolicy::CIPHERTEXT_HIDING),
        policy.require_ciphertext_hiding.then_some(true),
    );
}

/// `snp.policy.abi`: the minimum firmware ABI the guest demands, against the policy's.
fn abi_check(p: GuestPolicy, policy: &Policy) -> Check {
    let abi = (p.abi_major(), p.abi_minor());
    match policy.min_abi {
        None => Check::skip(
            "snp.policy.abi",
            format!(
                "guest requires ABI {}.{}; no minimum configured",
                abi.0, abi.1
            ),
        ),
        Some(min) if abi >= min => Check::pass(
            "snp.policy.abi",
            format!("ABI {}.{} >= {}.{}", abi.0, abi.1, min.0, min.1),
        ),
        Some(min) => Check::fail(
            "snp.policy.abi",
            format!("ABI {}.{} < {}.{}", abi.0, abi.1, min.0, min.1),
        ),
    }
}

/// `snp.policy.vmpl`: the VMPL the report comes from is one the policy allows.
fn vmpl_check(report: &AttestationReport, policy: &Policy) -> Check {
    let vmpl = report.vmpl();
    match &policy.vmpl {
        None => Check::skip(
            "snp.policy.vmpl",
            format!("VMPL {vmpl}; not constrained by policy"),
        ),
        Some(allowed) if allowed.contains(&vmpl) => {
            Check::pass("snp.policy.vmpl", format!("VMPL {vmpl} in {allowed:?}"))
        }
        Some(allowed) => Check::fail("snp.policy.vmpl", format!("VMPL {vmpl} not in {allowed:?}")),
    }
}

/// `snp.policy.guest_svn`: the guest SVN is at least the policy's minimum.
fn guest_svn_check(report: &AttestationReport, policy: &Policy) -> Check {
    let svn = report.guest_svn();
    match policy.min_guest_svn {
        None => Check::skip(
            "snp.policy.guest_svn",
            format!("guest SVN {svn}; no minimum configured"),
        ),
        Some(min) if svn >= min => {
            Check::pass("snp.policy.guest_svn", format!("guest SVN {svn} >= {min}"))
        }
        Some(min) => Check::fail("snp.policy.guest_svn", format!("guest SVN {svn} < {min}")),
    }
}

/// The four TCB values of the report against the policy's minimum for the anchor's
/// product, then the SEV firmware versions.
fn tcb_checks(
    report: &AttestationReport,
    policy: &Policy,
    product: Option<Product>,
    checks: &mut Vec<Check>,
) {
    let tcbs = [
        ("snp.tcb.current", report.current_tcb()),
        ("snp.tcb.committed", report.committed_tcb()),
        ("snp.tcb.reported", report.reported_tcb()),
        ("snp.tcb.launch", report.launch_tcb()),
    ];
    let Some(product) = product else {
        for (name, _) in tcbs {
            checks.push(Check::skip(
                name,
                "not evaluated: product unknown (chain not anchored)",
            ));
        }
        checks.push(Check::skip(
            "snp.tcb.firmware",
            "not evaluated: chain not anchored",
        ));
        return;
    };
    let minimum = policy.tcb_minimum_for(product);
    for (name, raw) in tcbs {
        checks.push(tcb_value_check(name, raw, product, &minimum));
    }
    checks.push(firmware_check(report, policy));
}

/// One raw TCB value, decoded in `product`'s layout, against the minimum.
fn tcb_value_check(
    name: &str,
    raw: u64,
    product: Product,
    minimum: &Result<Option<&TcbParts>, TcbMinimumError>,
) -> Check {
    let parts = TcbParts::decode(raw, product);
    match minimum {
        Err(unlisted) => Check::fail(name, format!("{parts} ({raw:#018x}): {unlisted}")),
        Ok(None) => Check::skip(
            name,
            format!("{parts} ({raw:#018x}); no TCB minimum configured"),
        ),
        Ok(Some(_)) if !TcbParts::reserved_zero(raw, product) => Check::fail(
            name,
            format!("{raw:#018x}: reserved bytes of the {product} layout are not zero"),
        ),
        Ok(Some(min)) => {
            let below = parts.below(min);
            if below.is_empty() {
                Check::pass(name, format!("{parts} >= minimum {min} field by field"))
            } else {
                let list: Vec<String> = below
                    .iter()
                    .map(|(f, a, m)| format!("{f} {a} < {m}"))
                    .collect();
                Check::fail(name, format!("{parts}: {}", list.join(", ")))
            }
        }
    }
}

/// `snp.tcb.firmware`: the current and committed SEV firmware against the policy's minimum.
fn firmware_check(report: &AttestationReport, policy: &Policy) -> Check {
    let cur = report.current_firmware();
    let com = report.committed_firmware();
    let Some((maj, min, build)) = policy.min_firmware else {
        return Check::skip(
            "snp.tcb.firmware",
            format!("current {cur}, committed {com}; no minimum configured"),
        );
    };
    let ok = |v: raw::FirmwareVersion| {
        (v.major, v.minor) > (maj, min)
            || ((v.major, v.minor) == (maj, min) && build.is_none_or(|b| v.build >= b))
    };
    let want = match build {
        Some(b) => format!("{maj}.{min} build {b}"),
        None => format!("{maj}.{min}"),
    };
    if ok(cur) && ok(com) {
        Check::pass(
            "snp.tcb.firmware",
            format!("current {cur}, committed {com} >= {want}"),
        )
    } else {
        Check::fail(
            "snp.tcb.firmware",
            format!("current {cur}, committed {com}, minimum {want}"),
        )
    }
}

fn allow_list(name: &str, what: &str, actual: &[u8], allowed: &[&[u8]], checks: &mut Vec<Check>) {
    checks.push(if allowed.is_empty() {
        Check::skip(
            name,
            format!("{what} {}; no allow-list configured", hexs(actual)),
        )
    } else if allowed.contains(&actual) {
        Check::pass(name, format!("{what} {} is allowed", hexs(actual)))
    } else {
        Check::fail(
            name,
            format!(
                "{what} {} not among {} allowed",
                hexs(actual),
                allowed.len()
            ),
        )
    });
}

/// A registered id of 64 bytes must equal the chip id; an 8-byte (Turin) id its prefix.
fn registered_matches(registered: &[u8], chip: &[u8; 64]) -> bool {
    match registered.len() {
        64 => registered == chip.as_slice(),
        8 => chip.get(..8) == Some(registered),
        _ => false,
    }
}

/// The report's identity fields against the policy's allow-lists: measurement, host data,
/// ID key, author key, family and image ids, chip id.
fn identity_checks(report: &AttestationReport, policy: &Policy, checks: &mut Vec<Check>) {
    checks.push(measurement_check(report, policy));
    let host: Vec<&[u8]> = policy.host_data.iter().map(|v| v.as_slice()).collect();
    allow_list(
        "snp.identity.host_data",
        "host_data",
        &report.host_data(),
        &host,
        checks,
    );
    let ids: Vec<&[u8]> = policy.id_key_digests.iter().map(|v| v.as_slice()).collect();
    allow_list(
        "snp.identity.id_key_digest",
        "ID key digest",
        &report.id_key_digest(),
        &ids,
        checks,
    );
    author_key_check(report, policy, checks);
    let fam: Vec<&[u8]> = policy.family_id.iter().map(|v| v.as_slice()).collect();
    allow_list(
        "snp.identity.family_id",
        "family_id",
        &report.family_id(),
        &fam,
        checks,
    );
    let img: Vec<&[u8]> = policy.image_id.iter().map(|v| v.as_slice()).collect();
    allow_list(
        "snp.identity.image_id",
        "image_id",
        &report.image_id(),
        &img,
        checks,
    );
    checks.push(chip_id_check(report, policy));
}

/// `snp.identity.measurement`: the launch measurement is allowed, naming where from.
fn measurement_check(report: &AttestationReport, policy: &Policy) -> Check {
    let m = report.measurement();
    let name = "snp.identity.measurement";
    if policy.measurements.is_empty() {
        return Check::skip(
            name,
            format!("measurement {}; no allow-list configured", hexs(&m)),
        );
    }
    match policy
        .measurements
        .iter()
        .find(|(x, _)| x.as_slice() == m.as_slice())
    {
        Some((_, from)) => Check::pass(name, format!("measurement {} allowed by {from}", hexs(&m))),
        None => Check::fail(
            name,
            format!(
                "measurement {} not among {} allowed",
                hexs(&m),
                policy.measurements.len()
            ),
        ),
    }
}

/// `snp.identity.author_key_digest`: no author key where the policy requires none, an
/// enabled and allowed one where it pins some.
fn author_key_check(report: &AttestationReport, policy: &Policy, checks: &mut Vec<Check>) {
    if policy.require_no_author_key {
        let digest = report.author_key_digest();
        checks.push(if report.author_key_en() || digest.iter().any(|&b| b != 0) {
            Check::fail(
                "snp.identity.author_key_digest",
                format!(
                    "policy requires no author key, but the report has AUTHOR_KEY_EN {} and author key digest {}",
                    u8::from(report.author_key_en()),
                    hexs(&digest)
                ),
            )
        } else {
            Check::pass(
                "snp.identity.author_key_digest",
                "no author key (AUTHOR_KEY_EN clear, digest all zeros), as the policy requires",
            )
        });
    } else if !policy.author_key_digests.is_empty() && !report.author_key_en() {
        checks.push(Check::fail(
            "snp.identity.author_key_digest",
            "policy pins an author key, but the report has AUTHOR_KEY_EN clear",
        ));
    } else {
        let authors: Vec<&[u8]> = policy
            .author_key_digests
            .iter()
            .map(|v| v.as_slice())
            .collect();
        allow_list(
            "snp.identity.author_key_digest",
            "author key digest",
            &report.author_key_digest(),
            &authors,
            checks,
        );
    }
}

/// `snp.identity.chip_id`: the chip id is a registered node's.
fn chip_id_check(report: &AttestationReport, policy: &Policy) -> Check {
    let chip = report.chip_id();
    let name = "snp.identity.chip_id";
    if policy.chip_ids.is_empty() {
        Check::skip(name, "no registered-node list configured")
    } else if policy.chip_ids.iter().any(|c| registered_matches(c, &chip)) {
        Check::pass(name, format!("chip_id {} is registered", hexs(&chip)))
    } else {
        Check::fail(
            name,
            format!("chip_id {} is not a registered node", hexs(&chip)),
        )
    }
}
