//! The JSON form of a manifest (see the module documentation).

use crate::error::ManifestError;
use crate::manifest::{ChunkInfo, FileInfo, Manifest, ManifestVersion};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::io::{Read, Write};

fn serialize_hash<S: Serializer>(hash: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&hex::encode(hash))
}

fn deserialize_hash<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 32], D::Error> {
    let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
    let mut hash = [0u8; 32];
    if text.len() != 64 {
        return Err(serde::de::Error::custom(format!(
            "hash must be 64 hex digits (32 bytes), got {} characters",
            text.chars().count()
        )));
    }
    hex::decode_to_slice(text.as_bytes(), &mut hash)
        .map_err(|e| serde::de::Error::custom(format!("hash is not hex: {e}")))?;
    Ok(hash)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileJson {
    path: String,
    size: u64,
    #[serde(deserialize_with = "deserialize_hash")]
    hash: [u8; 32],
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChunkJson {
    file_index: u32,
    size: u32,
    offset: u64,
    #[serde(deserialize_with = "deserialize_hash")]
    hash: [u8; 32],
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ManifestJson {
    // Read as u64 so that any unsupported number is reported as such, not as a type error.
    version: u64,
    files: Vec<FileJson>,
    chunks: Vec<ChunkJson>,
}

#[derive(Serialize)]
struct ManifestJsonRef<'a> {
    version: u32,
    files: Vec<FileJsonRef<'a>>,
    chunks: Vec<ChunkJsonRef>,
}

#[derive(Serialize)]
struct FileJsonRef<'a> {
    path: &'a str,
    size: u64,
    #[serde(serialize_with = "serialize_hash")]
    hash: [u8; 32],
}

#[derive(Serialize)]
struct ChunkJsonRef {
    file_index: u32,
    size: u32,
    offset: u64,
    #[serde(serialize_with = "serialize_hash")]
    hash: [u8; 32],
}

impl ManifestJson {
    fn into_manifest(self) -> Result<Manifest, ManifestError> {
        Ok(Manifest {
            version: ManifestVersion::from_number(self.version)?,
            files: self
                .files
                .into_iter()
                .map(|f| FileInfo {
                    path: f.path,
                    size: f.size,
                    hash: f.hash,
                })
                .collect(),
            chunks: self
                .chunks
                .into_iter()
                .map(|c| ChunkInfo {
                    file_index: c.file_index,
                    size: c.size,
                    offset: c.offset,
                    hash: c.hash,
                })
                .collect(),
        })
    }
}

fn json_error(e: serde_json::Error) -> ManifestError {
    ManifestError::Json(e.to_string())
}

impl Manifest {
    /// Parses the JSON form. Unknown fields, missing fields, malformed hashes and
    /// out-of-range integers are errors; the manifest is not validated (see
    /// [`Manifest::validate`]).
    pub fn from_json(text: &str) -> Result<Manifest, ManifestError> {
        serde_json::from_str::<ManifestJson>(text)
            .map_err(json_error)?
            .into_manifest()
    }

    /// [`Manifest::from_json`] from a reader (wrap files in a `BufReader`).
    pub fn from_json_reader(reader: impl Read) -> Result<Manifest, ManifestError> {
        serde_json::from_reader::<_, ManifestJson>(reader)
            .map_err(json_error)?
            .into_manifest()
    }

    fn json_view(&self) -> ManifestJsonRef<'_> {
        ManifestJsonRef {
            version: self.version.as_u32(),
            files: self
                .files
                .iter()
                .map(|f| FileJsonRef {
                    path: &f.path,
                    size: f.size,
                    hash: f.hash,
                })
                .collect(),
            chunks: self
                .chunks
                .iter()
                .map(|c| ChunkJsonRef {
                    file_index: c.file_index,
                    size: c.size,
                    offset: c.offset,
                    hash: c.hash,
                })
                .collect(),
        }
    }

    /// The JSON form, compact, hashes in lowercase hex.
    pub fn to_json(&self) -> String {
        // Serialising strings, integers and hex cannot fail.
        serde_json::to_string(&self.json_view()).unwrap_or_default()
    }

    /// Writes the JSON form to `writer` (wrap files in a `BufWriter`).
    pub fn write_json(&self, writer: impl Write) -> Result<(), std::io::Error> {
        serde_json::to_writer(writer, &self.json_view()).map_err(std::io::Error::from)
    }
}
