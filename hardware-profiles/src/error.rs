use crate::mismatch::Mismatch;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::Range;
use std::path::PathBuf;

/// A place in a profile file (1-based line and column).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    pub file: String,
    pub line: usize,
    pub column: usize,
}

impl Location {
    /// The line and column of byte `offset` in `source`.
    pub fn at(file: &str, source: &str, offset: usize) -> Location {
        let offset = offset.min(source.len());
        let before = source.get(..offset).unwrap_or(source);
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
        Location {
            file: file.to_string(),
            line,
            column,
        }
    }

    pub fn of_span(file: &str, source: &str, span: Range<usize>) -> Location {
        Location::at(file, source, span.start)
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// What is wrong with an invalid profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InvalidKind {
    /// Not TOML.
    Syntax,
    /// A key the schema does not have.
    UnknownKey,
    /// A key the schema requires is missing.
    MissingKey,
    /// A value of the wrong type (string for integer, unknown enum variant, ...).
    WrongType,
    /// A number outside its allowed range.
    OutOfRange,
    /// A pattern or cpulist that does not parse.
    BadSyntaxValue,
    /// Two thread pools share CPUs.
    CpuOverlap,
    /// A CPU set names CPUs the profile's machine does not have.
    CpuBeyondMachine,
    /// A pinned pool's thread count does not fit its CPU set.
    PoolSizeMismatch,
    /// Settings that contradict each other (GPU path with the GPU off, ...).
    Inconsistent,
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("{location}: {reason}")]
    Invalid {
        location: Location,
        kind: InvalidKind,
        reason: String,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{location}: profile name `{name}` is already defined in {first_file}")]
    DuplicateName {
        location: Location,
        name: String,
        first_file: String,
    },
    #[error(
        "{location}: a second development default (`{name}`); `{first}` is one already, a set has at most one"
    )]
    SecondDefault {
        location: Location,
        name: String,
        first: String,
    },
}

impl ProfileError {
    /// The place in a profile file the error points to, where it has one.
    pub fn location(&self) -> Option<&Location> {
        match self {
            ProfileError::Invalid { location, .. }
            | ProfileError::DuplicateName { location, .. }
            | ProfileError::SecondDefault { location, .. } => Some(location),
            ProfileError::Io { .. } => None,
        }
    }

    pub fn kind(&self) -> Option<InvalidKind> {
        match self {
            ProfileError::Invalid { kind, .. } => Some(*kind),
            _ => None,
        }
    }
}

/// Why a selection failed.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    #[error("pinned profile `{name}` does not exist (profiles: {})", available.join(", "))]
    UnknownPin {
        name: String,
        available: Vec<String>,
    },
    #[error(
        "pinned profile `{name}` does not match this machine ({}); pin it with force to use it anyway",
        mismatches.iter().map(|m| m.to_string()).collect::<Vec<_>>().join("; ")
    )]
    PinMismatch {
        name: String,
        mismatches: Vec<Mismatch>,
    },
    #[error("no profile matches this machine and the set has no development default")]
    NoMatch {
        /// Every profile with the reasons it did not match.
        rejected: Vec<(String, Vec<Mismatch>)>,
    },
}
