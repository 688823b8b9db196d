//! The boot parameters: the `sn.*` parameters of the measured kernel command line
//! (`/proc/cmdline`). On a SEV-SNP node the command line is part of the launch measurement
//! (OVMF checks it against the hash QEMU put into the measured memory), so only the image's
//! builder, or a test boot whose other measurement the verifier sees, can set them; the
//! configuration partition cannot. They select what must never come from the partition:
//!
//! * `sn.evidence=hardware|test|off`: the evidence source of `GET /v1/attestation`. `test`
//!   is for test boots without SEV-SNP (QEMU): reports signed by a test chain that only a
//!   policy naming its root admits.
//! * `sn.test_measurement=HEX` (96 hex digits, with `sn.evidence=test` only): the
//!   measurement the test reports carry, e.g. the release manifest's launch digest, so a
//!   test boot can be enrolled under a policy that names that digest.
//!
//! Other `sn.` parameters belong to other readers (`sn.config_signer=` to `apply-config`)
//! and are left alone; a malformed value of these two is an error naming the parameter.

use crate::settings::EvidenceSource;

/// Why the agent's boot parameters are unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CmdlineError {
    /// A parameter's value is malformed, or not allowed with the others.
    #[error("kernel command line: {param}={value:?}: {reason}")]
    Invalid {
        /// The parameter (`sn.evidence`, `sn.test_measurement`).
        param: &'static str,
        /// Its value as given (empty where the value itself is not at fault).
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The named parameter is given more than once.
    #[error("kernel command line: {0} appears more than once")]
    Repeated(&'static str),
}

/// The boot parameters the agent takes from the kernel command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BootParameters {
    /// `sn.evidence=`: the evidence source; `None`: the settings decide.
    pub evidence: Option<EvidenceSource>,
    /// `sn.test_measurement=`: the measurement test reports carry; `None`: the test
    /// source's default.
    pub test_measurement: Option<[u8; 48]>,
}

const EVIDENCE: &str = "sn.evidence";
const TEST_MEASUREMENT: &str = "sn.test_measurement";

impl BootParameters {
    /// Parses a command line (whitespace-separated `key=value` words; the kernel passes
    /// no quoting to these parameters).
    pub fn parse(cmdline: &str) -> Result<BootParameters, CmdlineError> {
        let mut settings = BootParameters::default();
        for word in cmdline.split_whitespace() {
            let Some((key, value)) = word.split_once('=') else {
                continue;
            };
            let invalid = |param, reason: &str| CmdlineError::Invalid {
                param,
                value: value.to_string(),
                reason: reason.to_string(),
            };
            match key {
                EVIDENCE => {
                    if settings.evidence.is_some() {
                        return Err(CmdlineError::Repeated(EVIDENCE));
                    }
                    settings.evidence = Some(match value {
                        "hardware" => EvidenceSource::Hardware,
                        "test" => EvidenceSource::Test,
                        "off" => EvidenceSource::Off,
                        _ => return Err(invalid(EVIDENCE, "expected hardware, test or off")),
                    });
                }
                TEST_MEASUREMENT => {
                    if settings.test_measurement.is_some() {
                        return Err(CmdlineError::Repeated(TEST_MEASUREMENT));
                    }
                    let bytes = hex::decode(value)
                        .ok()
                        .and_then(|b| <[u8; 48]>::try_from(b).ok())
                        .ok_or_else(|| invalid(TEST_MEASUREMENT, "expected 96 hex digits"))?;
                    settings.test_measurement = Some(bytes);
                }
                _ => {}
            }
        }
        if settings.test_measurement.is_some() && settings.evidence != Some(EvidenceSource::Test) {
            return Err(CmdlineError::Invalid {
                param: TEST_MEASUREMENT,
                value: String::new(),
                reason: "only with sn.evidence=test".into(),
            });
        }
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_agents_parameters_and_leaves_the_rest() {
        let m = "ab".repeat(48);
        let s = BootParameters::parse(&format!(
            "console=ttyS0 ro roothash=00 sn.config_signer=11 sn.evidence=test sn.test_measurement={m}"
        ))
        .unwrap();
        assert_eq!(s.evidence, Some(EvidenceSource::Test));
        assert_eq!(s.test_measurement, Some([0xab; 48]));
        let none = BootParameters::parse("console=ttyS0 quiet sn.evidence").unwrap();
        assert_eq!(none, BootParameters::default());
        assert_eq!(
            BootParameters::parse("sn.evidence=hardware\n")
                .unwrap()
                .evidence,
            Some(EvidenceSource::Hardware)
        );
    }

    #[test]
    fn refuses_malformed_and_repeated_values() {
        let e = BootParameters::parse("sn.evidence=tset").unwrap_err();
        assert!(e.to_string().contains("sn.evidence=\"tset\""), "{e}");
        assert_eq!(
            BootParameters::parse("sn.evidence=test sn.evidence=hardware").unwrap_err(),
            CmdlineError::Repeated(EVIDENCE)
        );
        let short = BootParameters::parse("sn.evidence=test sn.test_measurement=abcd");
        assert!(short.unwrap_err().to_string().contains("96 hex digits"));
        let without_test = format!(
            "sn.evidence=hardware sn.test_measurement={}",
            "00".repeat(48)
        );
        assert!(
            BootParameters::parse(&without_test)
                .unwrap_err()
                .to_string()
                .contains("only with sn.evidence=test")
        );
    }
}
