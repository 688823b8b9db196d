//! Line-oriented input files.
//!
//! A file is a sequence of lines separated by `\n` (a `\r` before it is dropped). The
//! newline after the last line is optional: `"a\nb\n"` and `"a\nb"` are both two lines,
//! and an empty file has none. Every other line counts, empty ones included, so that
//! output line `i` always answers input line `i` and nothing is dropped quietly:
//! `"a\n\n"` is two lines, the second empty (and rejected by every command).
//! Bytes are not required to be UTF-8; a line that is not valid hex is reported as such.

use anyhow::Context;
use std::io::Read;
use std::path::Path;

/// Reads `path`, or standard input when `path` is `-`.
pub(crate) fn read_input(path: &Path) -> anyhow::Result<Vec<u8>> {
    if path.as_os_str() == "-" {
        let mut data = Vec::new();
        std::io::stdin()
            .read_to_end(&mut data)
            .context("reading standard input")?;
        Ok(data)
    } else {
        std::fs::read(path).with_context(|| format!("reading {}", path.display()))
    }
}

/// The lines of `data` as described in the module documentation.
pub(crate) fn lines(data: &[u8]) -> Vec<&[u8]> {
    if data.is_empty() {
        return Vec::new();
    }
    let body = data.strip_suffix(b"\n").unwrap_or(data);
    body.split(|&b| b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .collect()
}

/// Whitespace-separated fields of a line (ASCII whitespace only).
pub(crate) fn fields(line: &[u8]) -> Vec<&[u8]> {
    line.split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty())
        .collect()
}

/// Exactly `N` bytes written as `2 * N` hex digits (either case), or `None`.
pub(crate) fn hex_array<const N: usize>(field: &[u8]) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    hex::decode_to_slice(field, &mut out).ok()?;
    Some(out)
}

/// Any number of bytes as hex digits; `-` stands for no bytes (an empty field cannot be
/// told apart from a missing one).
pub(crate) fn hex_bytes(field: &[u8]) -> Option<Vec<u8>> {
    if field == b"-" {
        return Some(Vec::new());
    }
    hex::decode(field).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_newline_is_optional_and_inner_blank_lines_count() {
        assert!(lines(b"").is_empty());
        assert_eq!(lines(b"a\nb\n"), vec![&b"a"[..], b"b"]);
        assert_eq!(lines(b"a\nb"), vec![&b"a"[..], b"b"]);
        assert_eq!(lines(b"a\r\n\nb\r\n"), vec![&b"a"[..], b"", b"b"]);
        assert_eq!(lines(b"a\n\n"), vec![&b"a"[..], b""]);
        assert_eq!(lines(b"\n"), vec![&b""[..]]);
    }

    #[test]
    fn hex_fields() {
        assert_eq!(hex_array::<2>(b"0aFF"), Some([0x0a, 0xff]));
        assert_eq!(hex_array::<2>(b"0aF"), None);
        assert_eq!(hex_array::<2>(b"0aFF00"), None);
        assert_eq!(hex_array::<2>(b"zz00"), None);
        assert_eq!(hex_bytes(b"-"), Some(vec![]));
        assert_eq!(hex_bytes(b"0102"), Some(vec![1, 2]));
        assert_eq!(fields(b"  ab \t cd  "), vec![&b"ab"[..], b"cd"]);
    }
}
