//! Cost of verifying one GPU's evidence (parse, three ECDSA P-384 verifications in the chain
//! walk plus the report's, FWID extraction), and of parsing the report alone.

use std::time::{Duration, SystemTime};

use attestation::nvidia::spdm::AttestationReport;
use attestation::nvidia::{CcState, GpuDevice, GpuEvidence, GpuPolicy, verify};
use criterion::{Criterion, criterion_group, criterion_main};

fn testdata(name: &str) -> Vec<u8> {
    let path = format!("{}/testdata/nvidia/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn bench(c: &mut Criterion) {
    let text = String::from_utf8(testdata("blackwellAttestationReport.txt")).expect("hex text");
    let report = hex::decode(text.trim()).expect("hex");
    let evidence = GpuEvidence {
        device: GpuDevice::default(),
        attestation_report: report.clone(),
        certificate_chain: testdata("blackwell_cert_chain_case1.txt"),
        cc_state: CcState {
            cc_enabled: true,
            dev_tools_mode: false,
            environment: "prod".into(),
        },
    };
    let nonce: [u8; 32] =
        hex::decode("4cff7f5380ead8fad8ec2c531c110aca4302a88f603792801a8ca29ee151af2e")
            .expect("hex")
            .try_into()
            .expect("32 bytes");
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_811_808_000);
    let policy = GpuPolicy::default();

    c.bench_function("nvidia/parse_report_blackwell", |b| {
        b.iter(|| AttestationReport::parse(std::hint::black_box(&report)))
    });
    c.bench_function("nvidia/verify_blackwell_evidence", |b| {
        b.iter(|| verify(std::hint::black_box(&evidence), &nonce, &policy, now, 0))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
