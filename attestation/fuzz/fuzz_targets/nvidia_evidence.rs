#![no_main]
//! NVIDIA GPU evidence: the SPDM report parser, the PEM chain parser, and the full GPU
//! verification of the input as a report (against a genuine Hopper chain) and as a chain.
use attestation::nvidia::{self, CcState, GpuDevice, GpuEvidence, GpuPolicy};
use libfuzzer_sys::fuzz_target;

const HOPPER_CHAIN: &[u8] = include_bytes!("../../testdata/nvidia/hopper_cert_chain_case1.txt");

fuzz_target!(|data: &[u8]| {
    // The parsers on every input; the full GPU verification (which verifies the whole
    // certificate chain each time) only where an input parses, to keep the run fast.
    let report_parses = nvidia::spdm::AttestationReport::parse(data).is_ok();
    let chain_parses = nvidia::certs::parse_pem_chain(data).is_ok();
    if !report_parses && !chain_parses {
        return;
    }
    let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_796_000_000);
    let cc = CcState {
        cc_enabled: true,
        dev_tools_mode: false,
        environment: "prod".into(),
    };
    let cases = [
        (report_parses, data, HOPPER_CHAIN),
        (chain_parses, &[][..], data),
    ];
    for (_, report, chain) in cases.into_iter().filter(|(parses, _, _)| *parses) {
        let evidence = GpuEvidence {
            device: GpuDevice::default(),
            attestation_report: report.to_vec(),
            certificate_chain: chain.to_vec(),
            cc_state: cc.clone(),
        };
        let _ = nvidia::verify(&evidence, &[0; 32], &GpuPolicy::default(), now, 0);
    }
});
