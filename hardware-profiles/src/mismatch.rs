//! One way a machine differs from what a profile expects (selection and pinning report them).

use serde::{Deserialize, Serialize};
use std::fmt;

/// One criterion a profile expects and what the machine has instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mismatch {
    /// The `[match]` key, or `pools.<pool>.cpus`.
    pub criterion: String,
    /// What the profile asks for, as text (a range, a quoted pattern, a value).
    pub expected: String,
    /// What the machine has, or why it is unknown.
    pub found: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: expected {}, found {}",
            self.criterion, self.expected, self.found
        )
    }
}
