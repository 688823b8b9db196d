//! The verifier's output: every check by name, its outcome and the values compared.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Pass,
    Fail,
    /// Not applicable or not configured (e.g. an allow-list the policy leaves empty).
    Skip,
}

/// One named check, e.g. `snp.report.version` or `gpu.0.cc_mode`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    pub name: String,
    pub outcome: Outcome,
    /// The values compared, or why the check was skipped or failed.
    pub detail: String,
}

impl Check {
    pub fn pass(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            outcome: Outcome::Pass,
            detail: detail.into(),
        }
    }

    pub fn fail(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            outcome: Outcome::Fail,
            detail: detail.into(),
        }
    }

    pub fn skip(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            outcome: Outcome::Skip,
            detail: detail.into(),
        }
    }
}
