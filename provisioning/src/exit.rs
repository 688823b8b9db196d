//! The exit statuses of `provision`: one per kind of outcome, the same for every command,
//! as `provision --help` ([`AFTER_HELP`]) and docs/operator-guide.md list them.

/// How `provision` ends; the process exit status is [`ExitStatus::code`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ExitStatus {
    /// 0: success (plan written, flash verified, node admitted, registry intact).
    Success = 0,
    /// 1: a check failed: read-back or `verify` mismatch, enrolment or registry transition
    /// refused.
    CheckFailed = 1,
    /// 2: invalid input: subnet file, bundle, release manifest, image, benchmark, policy,
    /// arguments (clap's usage errors exit with 2 as well).
    InvalidInput = 2,
    /// 3: the target was refused: in use or mounted, the running system's disk, a
    /// partition, not a block device or regular file, too small, serial or size not as
    /// expected, the image itself.
    TargetRefused = 3,
    /// 4: I/O failure on the target or the registry (write error, short write).
    Io = 4,
    /// 5: the registry does not verify: its hash chain, against the governing body's
    /// signed head, or against the witness of the last head verified (a rollback, a fork,
    /// no witness).
    RegistryBroken = 5,
}

impl ExitStatus {
    /// The process exit status.
    pub const fn code(self) -> u8 {
        self as u8
    }
}

impl From<ExitStatus> for std::process::ExitCode {
    fn from(status: ExitStatus) -> std::process::ExitCode {
        std::process::ExitCode::from(status.code())
    }
}

/// The exit statuses as `provision --help` prints them after the commands.
pub const AFTER_HELP: &str = "\
Exit status: 0 success; 1 a check failed (verification mismatch, enrolment or registry \
transition refused); 2 invalid input (subnet file, bundle, manifest, image, policy, arguments); \
3 target refused (in use or mounted, system disk, partition, not a block device, too small, \
serial or size not as expected, the image itself); 4 I/O failure on the target or the registry (write error, \
short write); 5 the registry does not verify (its hash chain, against the governing body's \
signed head, or against the witness of the last head verified: rollback, fork, no witness).";

#[cfg(test)]
mod tests {
    use super::{AFTER_HELP, ExitStatus};

    #[test]
    fn the_help_lists_every_status() {
        for status in [
            ExitStatus::Success,
            ExitStatus::CheckFailed,
            ExitStatus::InvalidInput,
            ExitStatus::TargetRefused,
            ExitStatus::Io,
            ExitStatus::RegistryBroken,
        ] {
            let listed = format!(" {} ", status.code());
            assert!(AFTER_HELP.contains(&listed), "{status:?} ({listed:?})");
        }
    }
}
