//! Why a profile file is rejected, and why a selection fails.

use crate::mismatch::Mismatch;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::Range;
use std::path::PathBuf;

/// A place in a profile file (1-based line and column).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    /// The file's name as given to the parser (`embedded:<name>.toml` for embedded ones).
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
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

    /// The location of the start of `span` (byte offsets into `source`).
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

/// Why a profile, or a set of profiles, could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// A file that is not a valid profile.
    #[error("{location}: {reason}")]
    Invalid {
        /// The offending value (or, for TOML errors, where the parser stopped).
        location: Location,
        /// The class of problem.
        kind: InvalidKind,
        /// What is wrong, in words.
        reason: String,
    },
    /// A profile directory or file that could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The directory or file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Two files of one set define the same profile name.
    #[error("{location}: profile name `{name}` is already defined in {first_file}")]
    DuplicateName {
        /// The second definition's name.
        location: Location,
        /// The name defined twice.
        name: String,
        /// The file of the first definition.
        first_file: String,
    },
    /// More than one development default in one set.
    #[error(
        "{location}: a second development default (`{name}`); `{first}` is one already, a set has at most one"
    )]
    SecondDefault {
        /// Where the second profile sets `development_default`.
        location: Location,
        /// The second default's name.
        name: String,
        /// The first default's name.
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

    /// The class of problem of an [`ProfileError::Invalid`] file; `None` otherwise.
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
    /// The pinned name is not in the set.
    #[error("pinned profile `{name}` does not exist (profiles: {})", available.join(", "))]
    UnknownPin {
        /// The pinned name.
        name: String,
        /// Every profile name of the set, sorted.
        available: Vec<String>,
    },
    /// The pinned profile does not match and the pin is not forced.
    #[error(
        "pinned profile `{name}` does not match this machine ({}); pin it with force to use it anyway",
        mismatches.iter().map(|m| m.to_string()).collect::<Vec<_>>().join("; ")
    )]
    PinMismatch {
        /// The pinned name.
        name: String,
        /// Every criterion the machine does not meet.
        mismatches: Vec<Mismatch>,
    },
    /// No profile matches and the set has no development default.
    #[error("no profile matches this machine and the set has no development default")]
    NoMatch {
        /// Every profile with the reasons it did not match.
        rejected: Vec<(String, Vec<Mismatch>)>,
    },
}
