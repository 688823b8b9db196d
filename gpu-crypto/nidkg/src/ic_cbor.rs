//! The Internet Computer's serde_cbor encodings of NI-DKG values: the dealing (a map of
//! `public_coefficients`, `ciphertexts`, `zk_proof_decryptability`,
//! `zk_proof_correct_sharing`), a receiver's `FsEncryptionPublicKey` (a 48-byte string)
//! and its `FsEncryptionPop` (a map of `pop_key`, `challenge`, `response`). Points are
//! compressed byte strings, scalars 32-byte big-endian strings.
//!
//! The dealing is converted to and from the verifier's element stream (the same fields in
//! the same order, concatenated: [`crate::encoding::dealing_layout`]). Parsing does no
//! curve arithmetic. Each map must hold exactly its fields, once each, in any order; one
//! CBOR item and no trailing bytes.

use crate::error::VerifyError;
use crate::params::{NUM_CHUNKS, NUM_ZK_REPETITIONS, dealing_size};
use ciborium::value::Value;

/// The encoded field names of the dealing, with their nested fields.
const DEALING_FIELDS: [&str; 4] = [
    "public_coefficients",
    "ciphertexts",
    "zk_proof_decryptability",
    "zk_proof_correct_sharing",
];
const CIPHERTEXT_FIELDS: [&str; 4] = ["rand_r", "rand_s", "rand_z", "ciphertext_chunks"];
const CHUNKING_FIELDS: [&str; 8] = [
    "first_move_y0",
    "first_move_b",
    "first_move_c",
    "second_move_d",
    "second_move_y",
    "response_z_r",
    "response_z_s",
    "response_z_b",
];
const SHARING_FIELDS: [&str; 5] = [
    "first_move_f",
    "first_move_a",
    "first_move_y",
    "response_z_r",
    "response_z_a",
];
const POP_FIELDS: [&str; 3] = ["pop_key", "challenge", "response"];

/// Largest CBOR input accepted (a dealing for the largest supported subnet is far below).
pub const MAX_CBOR_LEN: usize = 4 << 20;

/// A receiver's proof of possession in its encoded parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EncodedPop {
    /// Compressed G1 `pop_key`.
    pub pop_key: [u8; 48],
    /// Big-endian `challenge`.
    pub challenge: [u8; 32],
    /// Big-endian `response`.
    pub response: [u8; 32],
}

/// The bytes of an input file: the IC's test data is lowercase hex text, a replica's
/// store holds binary; hex text (with surrounding whitespace) is decoded, anything else
/// is taken as binary.
pub fn bytes_of_file(contents: &[u8]) -> Vec<u8> {
    let text = contents.trim_ascii();
    let is_hex =
        !text.is_empty() && text.len().is_multiple_of(2) && text.iter().all(u8::is_ascii_hexdigit);
    match is_hex.then(|| hex_decode(text)) {
        Some(decoded) => decoded,
        None => contents.to_vec(),
    }
}

fn hex_decode(text: &[u8]) -> Vec<u8> {
    let nibble = |c: u8| (c as char).to_digit(16).expect("checked hex digit") as u8;
    text.chunks_exact(2)
        .map(|pair| (nibble(pair[0]) << 4) | nibble(pair[1]))
        .collect()
}

fn decode(bytes: &[u8]) -> Result<Value, VerifyError> {
    if bytes.len() > MAX_CBOR_LEN {
        return Err(VerifyError::Encoding("CBOR input larger than 4 MiB".into()));
    }
    let mut rest = bytes;
    let value: Value = ciborium::de::from_reader(&mut rest)
        .map_err(|e| VerifyError::Encoding(format!("not one CBOR item: {e}")))?;
    if !rest.is_empty() {
        return Err(VerifyError::Encoding(format!(
            "{} bytes after the CBOR item",
            rest.len()
        )));
    }
    Ok(value)
}

/// The fields of a map, in `names` order; refuses missing, unknown and repeated keys.
fn fields<'a, const N: usize>(
    value: &'a Value,
    what: &str,
    names: [&str; N],
) -> Result<[&'a Value; N], VerifyError> {
    let entries = value
        .as_map()
        .ok_or_else(|| VerifyError::Encoding(format!("{what}: not a map")))?;
    let mut found: [Option<&Value>; N] = [None; N];
    for (key, field) in entries {
        let key = key
            .as_text()
            .ok_or_else(|| VerifyError::Encoding(format!("{what}: a key is not text")))?;
        let slot = names
            .iter()
            .position(|n| *n == key)
            .ok_or_else(|| VerifyError::Encoding(format!("{what}: unknown field {key:?}")))?;
        if found[slot].replace(field).is_some() {
            return Err(VerifyError::Encoding(format!(
                "{what}: field {key:?} twice"
            )));
        }
    }
    let mut out = [&Value::Null; N];
    for (i, slot) in found.iter().enumerate() {
        out[i] = slot.ok_or_else(|| {
            VerifyError::Encoding(format!("{what}: missing field {:?}", names[i]))
        })?;
    }
    Ok(out)
}

fn array<'a>(value: &'a Value, what: &str) -> Result<&'a [Value], VerifyError> {
    value
        .as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| VerifyError::Encoding(format!("{what}: not an array")))
}

fn fixed_array<'a>(value: &'a Value, what: &str, len: usize) -> Result<&'a [Value], VerifyError> {
    let items = array(value, what)?;
    if items.len() != len {
        return Err(VerifyError::Encoding(format!(
            "{what}: {} items where {len} are required",
            items.len()
        )));
    }
    Ok(items)
}

fn byte_string<const L: usize>(value: &Value, what: &str) -> Result<[u8; L], VerifyError> {
    let bytes = value
        .as_bytes()
        .ok_or_else(|| VerifyError::Encoding(format!("{what}: not a byte string")))?;
    bytes.as_slice().try_into().map_err(|_| {
        VerifyError::Encoding(format!(
            "{what}: {} bytes where {L} are required",
            bytes.len()
        ))
    })
}

/// Appends each item of `items` (byte strings of `L` bytes) to the stream.
fn put_all<const L: usize>(
    stream: &mut Vec<u8>,
    items: &[Value],
    what: &str,
) -> Result<(), VerifyError> {
    for (i, item) in items.iter().enumerate() {
        stream.extend_from_slice(&byte_string::<L>(item, &format!("{what}[{i}]"))?);
    }
    Ok(())
}

/// Parses the IC's encoding of a dealing into `(n, t, element stream)`; `n` is the
/// number of ciphertext rows and `t` the number of public coefficients.
pub fn dealing_stream(bytes: &[u8]) -> Result<(usize, usize, Vec<u8>), VerifyError> {
    let value = decode(bytes)?;
    let [coefficients, ciphertexts, chunking, sharing] = fields(&value, "dealing", DEALING_FIELDS)?;
    let [coefficients] = fields(coefficients, "public_coefficients", ["coefficients"])?;
    let coefficients = array(coefficients, "public_coefficients.coefficients")?;
    let [rand_r, rand_s, rand_z, chunks] = fields(ciphertexts, "ciphertexts", CIPHERTEXT_FIELDS)?;
    let rows = array(chunks, "ciphertexts.ciphertext_chunks")?;
    let (n, t) = (rows.len(), coefficients.len());
    crate::encoding::check_shape(n, t)?;
    let mut stream = Vec::with_capacity(dealing_size(n, t));
    put_all::<96>(
        &mut stream,
        coefficients,
        "public_coefficients.coefficients",
    )?;
    let m = NUM_CHUNKS;
    put_all::<48>(
        &mut stream,
        fixed_array(rand_r, "ciphertexts.rand_r", m)?,
        "rand_r",
    )?;
    put_all::<48>(
        &mut stream,
        fixed_array(rand_s, "ciphertexts.rand_s", m)?,
        "rand_s",
    )?;
    put_all::<96>(
        &mut stream,
        fixed_array(rand_z, "ciphertexts.rand_z", m)?,
        "rand_z",
    )?;
    for (i, row) in rows.iter().enumerate() {
        let what = format!("ciphertexts.ciphertext_chunks[{i}]");
        put_all::<48>(&mut stream, fixed_array(row, &what, m)?, &what)?;
    }
    put_chunking_proof(&mut stream, chunking, n)?;
    put_sharing_proof(&mut stream, sharing)?;
    debug_assert_eq!(stream.len(), dealing_size(n, t));
    Ok((n, t, stream))
}

fn put_chunking_proof(stream: &mut Vec<u8>, proof: &Value, n: usize) -> Result<(), VerifyError> {
    let what = "zk_proof_decryptability";
    let [y0, bb, cc, dd, yy, z_r, z_s, z_b] = fields(proof, what, CHUNKING_FIELDS)?;
    let l = NUM_ZK_REPETITIONS;
    stream.extend_from_slice(&byte_string::<48>(y0, "first_move_y0")?);
    put_all::<48>(stream, fixed_array(bb, "first_move_b", l)?, "first_move_b")?;
    put_all::<48>(stream, fixed_array(cc, "first_move_c", l)?, "first_move_c")?;
    put_all::<48>(
        stream,
        fixed_array(dd, "second_move_d", n + 1)?,
        "second_move_d",
    )?;
    stream.extend_from_slice(&byte_string::<48>(yy, "second_move_y")?);
    put_all::<32>(stream, fixed_array(z_r, "response_z_r", n)?, "response_z_r")?;
    put_all::<32>(stream, fixed_array(z_s, "response_z_s", l)?, "response_z_s")?;
    stream.extend_from_slice(&byte_string::<32>(z_b, "response_z_b")?);
    Ok(())
}

fn put_sharing_proof(stream: &mut Vec<u8>, proof: &Value) -> Result<(), VerifyError> {
    let [ff, aa, yy, z_r, z_a] = fields(proof, "zk_proof_correct_sharing", SHARING_FIELDS)?;
    stream.extend_from_slice(&byte_string::<48>(ff, "first_move_f")?);
    stream.extend_from_slice(&byte_string::<96>(aa, "first_move_a")?);
    stream.extend_from_slice(&byte_string::<48>(yy, "first_move_y")?);
    stream.extend_from_slice(&byte_string::<32>(z_r, "response_z_r")?);
    stream.extend_from_slice(&byte_string::<32>(z_a, "response_z_a")?);
    Ok(())
}

/// Reads `count` elements of `L` bytes off the front of `stream` as byte strings.
fn take<const L: usize>(stream: &mut &[u8], count: usize) -> Vec<Value> {
    (0..count)
        .map(|_| {
            let (head, tail) = stream.split_at(L);
            *stream = tail;
            Value::Bytes(head.to_vec())
        })
        .collect()
}

fn one<const L: usize>(stream: &mut &[u8]) -> Value {
    take::<L>(stream, 1).remove(0)
}

fn map(entries: Vec<(&str, Value)>) -> Value {
    Value::Map(
        entries
            .into_iter()
            .map(|(k, v)| (Value::Text(k.to_string()), v))
            .collect(),
    )
}

/// The IC's encoding of a dealing from its element stream (`dealing_size(n, t)` bytes),
/// with the fields in the IC's order.
pub fn dealing_to_cbor(stream: &[u8], n: usize, t: usize) -> Vec<u8> {
    assert_eq!(stream.len(), dealing_size(n, t), "element stream of n, t");
    let mut s = stream;
    let (m, l) = (NUM_CHUNKS, NUM_ZK_REPETITIONS);
    let coefficients = map(vec![("coefficients", Value::Array(take::<96>(&mut s, t)))]);
    let ciphertexts = map(vec![
        ("rand_r", Value::Array(take::<48>(&mut s, m))),
        ("rand_s", Value::Array(take::<48>(&mut s, m))),
        ("rand_z", Value::Array(take::<96>(&mut s, m))),
        (
            "ciphertext_chunks",
            Value::Array(
                (0..n)
                    .map(|_| Value::Array(take::<48>(&mut s, m)))
                    .collect(),
            ),
        ),
    ]);
    let chunking = map(vec![
        ("first_move_y0", one::<48>(&mut s)),
        ("first_move_b", Value::Array(take::<48>(&mut s, l))),
        ("first_move_c", Value::Array(take::<48>(&mut s, l))),
        ("second_move_d", Value::Array(take::<48>(&mut s, n + 1))),
        ("second_move_y", one::<48>(&mut s)),
        ("response_z_r", Value::Array(take::<32>(&mut s, n))),
        ("response_z_s", Value::Array(take::<32>(&mut s, l))),
        ("response_z_b", one::<32>(&mut s)),
    ]);
    let sharing = map(vec![
        ("first_move_f", one::<48>(&mut s)),
        ("first_move_a", one::<96>(&mut s)),
        ("first_move_y", one::<48>(&mut s)),
        ("response_z_r", one::<32>(&mut s)),
        ("response_z_a", one::<32>(&mut s)),
    ]);
    let dealing = map(vec![
        ("public_coefficients", coefficients),
        ("ciphertexts", ciphertexts),
        ("zk_proof_decryptability", chunking),
        ("zk_proof_correct_sharing", sharing),
    ]);
    encode(&dealing)
}

fn encode(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    ciborium::ser::into_writer(value, &mut out).expect("writing CBOR to memory");
    out
}

/// Parses the IC's encoding of a receiver's public key (a 48-byte string).
pub fn receiver_key(bytes: &[u8]) -> Result<[u8; 48], VerifyError> {
    byte_string::<48>(&decode(bytes)?, "receiver key")
}

/// The IC's encoding of a receiver's public key.
pub fn receiver_key_to_cbor(key: &[u8; 48]) -> Vec<u8> {
    encode(&Value::Bytes(key.to_vec()))
}

/// Parses the IC's encoding of a proof of possession.
pub fn pop(bytes: &[u8]) -> Result<EncodedPop, VerifyError> {
    let value = decode(bytes)?;
    let [pop_key, challenge, response] = fields(&value, "proof of possession", POP_FIELDS)?;
    Ok(EncodedPop {
        pop_key: byte_string(pop_key, "pop_key")?,
        challenge: byte_string(challenge, "challenge")?,
        response: byte_string(response, "response")?,
    })
}

/// The IC's encoding of a proof of possession.
pub fn pop_to_cbor(pop: &EncodedPop) -> Vec<u8> {
    encode(&map(vec![
        ("pop_key", Value::Bytes(pop.pop_key.to_vec())),
        ("challenge", Value::Bytes(pop.challenge.to_vec())),
        ("response", Value::Bytes(pop.response.to_vec())),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_text_and_binary_are_both_read() {
        assert_eq!(bytes_of_file(b"00ff\n"), vec![0x00, 0xff]);
        assert_eq!(bytes_of_file(&[0x58, 0x30]), vec![0x58, 0x30]);
        assert_eq!(bytes_of_file(b"abc"), b"abc".to_vec());
    }

    #[test]
    fn a_dealing_stream_round_trips_through_cbor() {
        let (n, t) = (4, 2);
        let stream: Vec<u8> = (0..dealing_size(n, t)).map(|i| i as u8).collect();
        let cbor = dealing_to_cbor(&stream, n, t);
        assert_eq!(dealing_stream(&cbor).unwrap(), (n, t, stream));
    }

    #[test]
    fn maps_refuse_unknown_repeated_and_missing_fields() {
        let pop = EncodedPop {
            pop_key: [1; 48],
            challenge: [2; 32],
            response: [3; 32],
        };
        let good = pop_to_cbor(&pop);
        assert_eq!(super::pop(&good).unwrap(), pop);
        let with = |entries: Vec<(&str, Value)>| encode(&map(entries));
        let key = || Value::Bytes(vec![1; 48]);
        let scalar = || Value::Bytes(vec![2; 32]);
        let missing = with(vec![("pop_key", key()), ("challenge", scalar())]);
        let twice = with(vec![
            ("pop_key", key()),
            ("pop_key", key()),
            ("challenge", scalar()),
            ("response", scalar()),
        ]);
        let unknown = with(vec![
            ("pop_key", key()),
            ("challenge", scalar()),
            ("response", scalar()),
            ("extra", scalar()),
        ]);
        for bad in [missing, twice, unknown] {
            assert!(matches!(super::pop(&bad), Err(VerifyError::Encoding(_))));
        }
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(super::pop(&trailing).is_err());
    }
}
