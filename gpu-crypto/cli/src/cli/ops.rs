//! The file-driven commands. Each returns its whole standard output as a string, so the
//! output is complete or absent (never half-printed before an error) and byte-identical
//! across backends: it depends only on the results, never on where they were computed.

use super::input::{fields, hex_array, hex_bytes, lines};
use anyhow::{Context, bail, ensure};
use gpu_crypto::{
    BlsItem, BlsScheme, DecodeError, Engine, EngineError, G1Affine, G2Affine, Scalar,
};
use ic_state_manifest::{Manifest, ManifestVersion};
use std::fmt::Write as _;
use std::path::Path;

/// At most this many bad lines are listed in an error message (the count is always given).
const MAX_LISTED_ERRORS: usize = 20;

/// Which group `decompress` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Group {
    /// 48-byte compressed G1 points (96 hex digits), 96-byte uncompressed answers.
    G1,
    /// 96-byte compressed G2 points (192 hex digits), 192-byte uncompressed answers.
    G2,
}

/// `decompress`: one compressed point per line (96 hex digits for G1, 192 for G2); one
/// answer per line, `ok <hex of the uncompressed point>` or `err <reason>`.
pub(crate) fn decompress(engine: &Engine, data: &[u8], group: Group) -> anyhow::Result<String> {
    match group {
        Group::G1 => decompress_lines::<48, _>(
            data,
            |points| engine.g1_decompress(points),
            |p: &G1Affine| hex::encode(p.to_uncompressed()),
        ),
        Group::G2 => decompress_lines::<96, _>(
            data,
            |points| engine.g2_decompress(points),
            |p: &G2Affine| hex::encode(p.to_uncompressed()),
        ),
    }
}

/// The line handling both groups share: parse, decompress the well-formed lines in one
/// batch, answer every line in order.
fn decompress_lines<const N: usize, P>(
    data: &[u8],
    run: impl FnOnce(&[[u8; N]]) -> Result<Vec<Result<P, DecodeError>>, EngineError>,
    encode: impl Fn(&P) -> String,
) -> anyhow::Result<String> {
    let lines = lines(data);
    let parsed: Vec<Option<[u8; N]>> = lines
        .iter()
        .map(|line| hex_array::<N>(line.trim_ascii()))
        .collect();
    let points: Vec<[u8; N]> = parsed.iter().flatten().copied().collect();
    let results = run(&points).context("decompress")?;
    ensure!(
        results.len() == points.len(),
        "internal: {} results for {} points",
        results.len(),
        points.len()
    );
    let mut results = results.into_iter();
    let mut out = String::with_capacity(lines.len() * (4 * N + 4));
    for point in &parsed {
        match (point, point.and_then(|_| results.next())) {
            (None, _) => out.push_str("err bad-hex\n"),
            (Some(_), Some(Ok(p))) => {
                let _ = writeln!(out, "ok {}", encode(&p));
            }
            (Some(_), Some(Err(e))) => {
                let _ = writeln!(out, "err {}", e.reason_word());
            }
            (Some(_), None) => bail!("internal: decompress returned too few results"),
        }
    }
    Ok(out)
}

/// A canonical scalar from 32 big-endian bytes; `None` when it is not below the group order r.
pub(crate) fn scalar_from_be(bytes: [u8; 32]) -> Option<Scalar> {
    let mut le = bytes;
    le.reverse();
    Option::from(Scalar::from_bytes(&le))
}

/// `msm`: lines `<96 hex compressed point> <64 hex big-endian scalar>`; prints the sum of
/// `scalar * point` as 96 hex digits of its compressed encoding. Any bad line fails the
/// whole command with every bad line number and reason listed, and nothing is printed.
pub(crate) fn msm(engine: &Engine, data: &[u8]) -> anyhow::Result<String> {
    let mut errors = Vec::new();
    let mut line_numbers = Vec::new();
    let mut encoded = Vec::new();
    let mut scalars = Vec::new();
    for (index, line) in lines(data).into_iter().enumerate() {
        let number = index + 1;
        let parts = fields(line);
        let [point_hex, scalar_hex] = parts.as_slice() else {
            errors.push(format!(
                "line {number}: expected 2 fields (point, scalar), found {}",
                parts.len()
            ));
            continue;
        };
        let Some(point) = hex_array::<48>(point_hex) else {
            errors.push(format!(
                "line {number}: the point is not 96 hex digits (bad-hex)"
            ));
            continue;
        };
        let Some(scalar_bytes) = hex_array::<32>(scalar_hex) else {
            errors.push(format!(
                "line {number}: the scalar is not 64 hex digits (bad-hex)"
            ));
            continue;
        };
        let Some(scalar) = scalar_from_be(scalar_bytes) else {
            errors.push(format!(
                "line {number}: the scalar is not below the group order r (scalar-not-canonical)"
            ));
            continue;
        };
        line_numbers.push(number);
        encoded.push(point);
        scalars.push(scalar);
    }
    let decoded = engine
        .g1_decompress(&encoded)
        .context("msm: decompressing the points")?;
    ensure!(
        decoded.len() == encoded.len(),
        "internal: {} results for {} points",
        decoded.len(),
        encoded.len()
    );
    let mut points = Vec::with_capacity(decoded.len());
    for (result, number) in decoded.into_iter().zip(&line_numbers) {
        match result {
            Ok(p) => points.push(p),
            Err(e) => errors.push(format!(
                "line {number}: invalid point: {e} ({})",
                e.reason_word()
            )),
        }
    }
    if !errors.is_empty() {
        errors.sort_by_key(|e| line_number_of(e));
        bail!("{}", listed(errors, "bad input line"));
    }
    let sum = engine.g1_msm(&points, &scalars).context("msm")?;
    Ok(format!(
        "{}\n",
        hex::encode(G1Affine::from(sum).to_compressed())
    ))
}

fn line_number_of(message: &str) -> usize {
    message
        .strip_prefix("line ")
        .and_then(|rest| rest.split(':').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(usize::MAX)
}

fn listed(errors: Vec<String>, what: &str) -> String {
    let total = errors.len();
    let mut message = format!("{total} {what}{}:", if total == 1 { "" } else { "s" });
    for e in errors.iter().take(MAX_LISTED_ERRORS) {
        message.push_str("\n  ");
        message.push_str(e);
    }
    if total > MAX_LISTED_ERRORS {
        let _ = write!(message, "\n  ... and {} more", total - MAX_LISTED_ERRORS);
    }
    message
}

/// `verify`: lines `<96 hex signature> <192 hex public key> <message hex, or - if empty>`;
/// one answer per line, `ok` or `err <reason>` (`err bad-line` for a malformed line).
/// Messages are hashed to G1 under `scheme`'s domain separation tag.
pub(crate) fn verify(engine: &Engine, data: &[u8], scheme: BlsScheme) -> anyhow::Result<String> {
    struct Parsed {
        signature: [u8; 48],
        public_key: [u8; 96],
        message: Vec<u8>,
    }
    let parse = |line: &[u8]| -> Option<Parsed> {
        let parts = fields(line);
        let [sig, pk, msg] = parts.as_slice() else {
            return None;
        };
        Some(Parsed {
            signature: hex_array::<48>(sig)?,
            public_key: hex_array::<96>(pk)?,
            message: hex_bytes(msg)?,
        })
    };
    let lines = lines(data);
    let parsed: Vec<Option<Parsed>> = lines.iter().map(|l| parse(l)).collect();
    let items: Vec<BlsItem<'_>> = parsed
        .iter()
        .flatten()
        .map(|p| BlsItem {
            signature: &p.signature,
            public_key: &p.public_key,
            message: &p.message,
            scheme,
        })
        .collect();
    let verdicts = engine.bls_verify_batch(&items).context("verify")?;
    ensure!(
        verdicts.len() == items.len(),
        "internal: {} verdicts for {} items",
        verdicts.len(),
        items.len()
    );
    let mut verdicts = verdicts.into_iter();
    let mut out = String::with_capacity(lines.len() * 8);
    for item in &parsed {
        match (item, item.as_ref().and_then(|_| verdicts.next())) {
            (None, _) => out.push_str("err bad-line\n"),
            (Some(_), Some(Ok(()))) => out.push_str("ok\n"),
            (Some(_), Some(Err(e))) => {
                let _ = writeln!(out, "err {}", e.reason_word());
            }
            (Some(_), None) => bail!("internal: verify returned too few verdicts"),
        }
    }
    Ok(out)
}

/// `manifest-hash`: the root hash of a manifest in the JSON form of
/// `ic_state_manifest`, after the replica's consistency checks (unless `unvalidated`).
pub(crate) fn manifest_hash(data: &[u8], unvalidated: bool) -> anyhow::Result<String> {
    let manifest = Manifest::from_json_reader(data).context("reading the manifest")?;
    let root = if unvalidated {
        manifest.root_hash_unvalidated()
    } else {
        manifest.root_hash()
    }
    .context("hashing the manifest")?;
    Ok(format!("{}\n", hex::encode(root)))
}

/// `manifest`: the manifest of the checkpoint directory `dir` (chunks hashed by `engine`)
/// and its root hash.
pub(crate) fn manifest(
    engine: &Engine,
    dir: &Path,
    version: u64,
) -> anyhow::Result<(String, String)> {
    let version = ManifestVersion::from_number(version)?;
    let manifest = ic_state_manifest::compute(engine, dir, version)
        .with_context(|| format!("computing the manifest of {}", dir.display()))?;
    let root = manifest.root_hash().context("hashing the manifest")?;
    let mut json = manifest.to_json();
    if !json.ends_with('\n') {
        json.push('\n');
    }
    Ok((json, hex::encode(root)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_order_boundary() {
        // r - 1 is the largest canonical scalar; r itself is rejected.
        let r_minus_1 =
            hex_array::<32>(b"73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000000")
                .unwrap();
        let r =
            hex_array::<32>(b"73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001")
                .unwrap();
        assert_eq!(scalar_from_be(r_minus_1), Some(-Scalar::one()));
        assert_eq!(scalar_from_be(r), None);
    }

    #[test]
    fn errors_are_listed_with_a_cap() {
        let errors: Vec<String> = (1..=25).map(|n| format!("line {n}: bad")).collect();
        let message = listed(errors, "bad input line");
        assert!(message.starts_with("25 bad input lines:"));
        assert!(message.contains("line 20: bad"));
        assert!(!message.contains("line 21: bad"));
        assert!(message.ends_with("... and 5 more"));
    }
}
