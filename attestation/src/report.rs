//! The verifier's output: every check by name, its outcome and the values compared.

use serde::Serialize;

/// A check's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The values satisfy the rule.
    Pass,
    /// The values break the rule (or could not be evaluated): the verdict rejects.
    Fail,
    /// Not applicable or not configured (e.g. an allow-list the policy leaves empty).
    Skip,
}

/// One named check, e.g. `snp.report.version` or `gpu.0.cc_mode`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Dotted check name, stable across releases (golden outputs and alerts key on it).
    pub name: String,
    /// Whether the check passed, failed or was skipped.
    pub outcome: Outcome,
    /// The values compared, or why the check was skipped or failed.
    pub detail: String,
}

impl Check {
    /// A passed check.
    pub fn pass(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            outcome: Outcome::Pass,
            detail: detail.into(),
        }
    }

    /// A failed check.
    pub fn fail(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            outcome: Outcome::Fail,
            detail: detail.into(),
        }
    }

    /// A skipped check: not applicable or not configured.
    pub fn skip(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            outcome: Outcome::Skip,
            detail: detail.into(),
        }
    }
}

/// The result of one verification: every check, and the decision they imply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// True when no check failed. Skipped checks do not reject; they are listed so that the
    /// reader sees what the policy left unconstrained.
    pub admitted: bool,
    /// Every check run, in the order run.
    pub checks: Vec<Check>,
}

impl Verdict {
    /// The verdict of `checks`: admitted when there is at least one check and none failed.
    pub fn from_checks(checks: Vec<Check>) -> Verdict {
        Verdict {
            admitted: !checks.is_empty() && checks.iter().all(|c| c.outcome != Outcome::Fail),
            checks,
        }
    }

    /// The checks that failed, in order.
    pub fn failed(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.outcome == Outcome::Fail)
    }

    /// The first check named `name`.
    pub fn check(&self, name: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.name == name)
    }

    /// A fixed-width table for people: outcome, name, the values compared.
    pub fn to_table(&self) -> String {
        let width = self.checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
        let mut out = String::new();
        for c in &self.checks {
            let tag = match c.outcome {
                Outcome::Pass => "PASS",
                Outcome::Fail => "FAIL",
                Outcome::Skip => "skip",
            };
            out.push_str(&format!("{tag}  {:width$}  {}\n", c.name, c.detail));
        }
        let fails = self.failed().count();
        out.push_str(&if self.admitted {
            format!("ADMITTED ({} checks, 0 failed)\n", self.checks.len())
        } else {
            format!("REJECTED ({} checks, {fails} failed)\n", self.checks.len())
        });
        out
    }
}
