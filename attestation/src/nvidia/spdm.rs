//! The GPU attestation report: an SPDM 1.1 GET_MEASUREMENTS request followed by the
//! signed MEASUREMENTS response, as NVML's `nvmlDeviceGetConfComputeGpuAttestationReport`
//! returns it.
//!
//! Layout (DMTF DSP0274 1.1, cross-checked against NVIDIA's local_gpu_verifier
//! `attestation/spdm_msrt_{req,resp}_msg.py` and trustee's `deps/verifier/src/nvidia/`):
//!
//! | offset        | field                                   | size |
//! |---------------|-----------------------------------------|------|
//! | 0             | request: version 0x11, code 0xE0, param1, param2 | 4 |
//! | 4             | request nonce (the verifier's challenge)| 32   |
//! | 36            | request SlotIDParam                     | 1    |
//! | 37            | response: version 0x11, code 0x60, param1, param2 | 4 |
//! | 41            | NumberOfBlocks                          | 1    |
//! | 42            | MeasurementRecordLength (u24 LE) = L1   | 3    |
//! | 45            | measurement record (blocks)             | L1   |
//! | 45+L1         | responder nonce                         | 32   |
//! | 77+L1         | OpaqueDataLength (u16 LE) = L2          | 2    |
//! | 79+L1         | opaque data (NVIDIA TLVs)               | L2   |
//! | 79+L1+L2      | signature: ECDSA P-384 r‖s, big-endian  | 96   |
//!
//! The signature covers SHA-384 of every byte before it, request included (SPDM 1.1
//! L1/L2 transcript = GET_MEASUREMENTS request ‖ MEASUREMENTS response without the
//! signature; trustee's `report.rs` and nvtrust's `verify_signature` hash exactly that span).
//!
//! Parsing is total: every length is checked before it is used, so any byte string gives
//! either a report or a [`ReportError`], never a panic.

use thiserror::Error;

/// SPDM 1.1, the only version NVIDIA's Hopper and Blackwell GPUs speak for attestation.
pub const SPDM_VERSION_1_1: u8 = 0x11;
/// GET_MEASUREMENTS request code (DSP0274 table 4).
pub const GET_MEASUREMENTS: u8 = 0xE0;
/// MEASUREMENTS response code.
pub const MEASUREMENTS: u8 = 0x60;
/// Request length: header 4, nonce 32, SlotIDParam 1.
pub const REQUEST_LEN: usize = 37;
/// Length of the requester's and the responder's nonce.
pub const NONCE_LEN: usize = 32;
/// ECDSA P-384 raw signature, r‖s (the GPU negotiates TPM_ALG_ECDSA_ECC_NIST_P384).
pub const SIGNATURE_LEN: usize = 96;
/// MeasurementSpecification bit 0: DMTF measurement layout.
const DMTF_MEASUREMENT_SPEC: u8 = 0x01;

/// NVIDIA opaque-data field types (nvtrust `OpaqueDataType`, trustee `OpaqueDataType`).
pub mod opaque_type {
    /// Driver version text.
    pub const DRIVER_VERSION: u16 = 3;
    /// GPU information.
    pub const GPU_INFO: u16 = 4;
    /// VBIOS version.
    pub const VBIOS_VERSION: u16 = 6;
    /// NVDEC0 status.
    pub const NVDEC0_STATUS: u16 = 11;
    /// Measurement counts (MSRSCNT).
    pub const MSRSCNT: u16 = 12;
    /// Chip SKU.
    pub const CHIP_SKU: u16 = 15;
    /// Project.
    pub const PROJECT: u16 = 17;
    /// Project SKU.
    pub const PROJECT_SKU: u16 = 18;
    /// The firmware id (FWID) the DICE leaf certificate must match.
    pub const FWID: u16 = 20;
    /// Protected PCIe status.
    pub const PROTECTED_PCIE_STATUS: u16 = 21;
    /// Version of the opaque data layout.
    pub const OPAQUE_DATA_VERSION: u16 = 34;
    /// Chip information.
    pub const CHIP_INFO: u16 = 35;
    /// Feature flags.
    pub const FEATURE_FLAG: u16 = 36;

    /// nvtrust's name for a field type, for details and diagnostics.
    pub fn name(field_type: u16) -> &'static str {
        match field_type {
            1 => "cert_issuer_name",
            2 => "cert_authority_key_identifier",
            3 => "driver_version",
            4 => "gpu_info",
            5 => "id_sku",
            6 => "vbios_version",
            7 => "manufacturer_id",
            8 => "tamper_detection",
            9 => "smc",
            10 => "vpr",
            11 => "nvdec0_status",
            12 => "measurement_count",
            13 => "cpr_info",
            14 => "board_id",
            15 => "chip_sku",
            16 => "chip_sku_mod",
            17 => "project",
            18 => "project_sku",
            19 => "project_sku_mod",
            20 => "fwid",
            21 => "protected_pcie_status",
            22 => "switch_pdi",
            23 => "floorswept_ports",
            24 => "position_id",
            25 => "lock_switch_status",
            32 => "gpu_link_conn",
            33 => "sys_enable_status",
            34 => "opaque_data_version",
            35 => "chip_info",
            36 => "feature_flag",
            _ => "unknown",
        }
    }
}

/// Why a report did not parse. Offsets are into the whole report (request included).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ReportError {
    /// The report ends inside a field.
    #[error(
        "report truncated in {field}: needs {needed} bytes at offset {offset}, {available} left"
    )]
    Truncated {
        /// The field being read.
        field: &'static str,
        /// Where it starts.
        offset: usize,
        /// Its length.
        needed: usize,
        /// The bytes left at `offset`.
        available: usize,
    },
    /// An SPDM version other than 1.1.
    #[error("{message}: SPDM version {found:#04x}, expected 0x11")]
    UnsupportedVersion {
        /// Which message (request or response).
        message: &'static str,
        /// The version byte found.
        found: u8,
    },
    /// A request or response code other than GET_MEASUREMENTS or MEASUREMENTS.
    #[error("{message}: request/response code {found:#04x}, expected {expected:#04x}")]
    UnexpectedCode {
        /// Which message (request or response).
        message: &'static str,
        /// The code found.
        found: u8,
        /// The code expected.
        expected: u8,
    },
    /// A measurement block in a layout other than DMTF's.
    #[error(
        "measurement block {position} (index {index}) uses specification {spec:#04x}, only DMTF (0x01) is supported"
    )]
    NonDmtfBlock {
        /// Position of the block in the record.
        position: usize,
        /// Its measurement index.
        index: u8,
        /// Its MeasurementSpecification.
        spec: u8,
    },
    /// A DMTF value whose size disagrees with its block's.
    #[error(
        "measurement block {position}: DMTF value size {value_size} + 3 != block size {block_size}"
    )]
    BlockSizeMismatch {
        /// Position of the block in the record.
        position: usize,
        /// The block's declared size.
        block_size: usize,
        /// The DMTF value's declared size.
        value_size: usize,
    },
    /// Bytes in the measurement record after its declared blocks.
    #[error("measurement record has {extra} bytes after its {blocks} declared blocks")]
    RecordTrailingBytes {
        /// Blocks declared.
        blocks: usize,
        /// Bytes left over.
        extra: usize,
    },
    /// Two blocks with one measurement index.
    #[error("measurement index {index} appears twice")]
    DuplicateMeasurementIndex {
        /// The repeated index.
        index: u8,
    },
    /// Opaque data ending with a partial TLV header.
    #[error("opaque data: {extra} trailing bytes cannot hold a type/length header")]
    OpaqueTrailingBytes {
        /// Bytes left over.
        extra: usize,
    },
    /// Two opaque fields of one type.
    #[error("opaque data field {field_type} ({name}) appears twice")]
    DuplicateOpaqueField {
        /// The repeated type.
        field_type: u16,
        /// Its name (see [`opaque_type::name`]).
        name: &'static str,
    },
    /// A request that did not ask for a signed response.
    #[error("GET_MEASUREMENTS request param1 {param1:#04x} did not ask for a signature (bit 0)")]
    UnsignedRequest {
        /// The request's param1.
        param1: u8,
    },
    /// Bytes after the signature.
    #[error("{count} bytes after the signature (the signature ends the report)")]
    TrailingData {
        /// How many.
        count: usize,
    },
    /// NVML's padding after the signature holds non-zero bytes.
    #[error("{count} bytes after the signature are not zero padding")]
    TrailingNonZero {
        /// How many bytes follow the signature.
        count: usize,
    },
}

/// The GET_MEASUREMENTS request the verifier's nonce travelled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeasurementsRequest {
    /// Param1: bit 0 asks for a signature.
    pub param1: u8,
    /// Param2: which measurements (0xFF: all).
    pub param2: u8,
    /// The verifier's nonce.
    pub nonce: [u8; NONCE_LEN],
    /// SlotIDParam: the certificate slot of the signing key.
    pub slot_id_param: u8,
}

/// One DMTF measurement block (DSP0274 table 45/46).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeasurementBlock {
    /// Measurement index as it appears in the report (NVIDIA GPUs number them 1..=64);
    /// policy reference values use the same numbering.
    pub index: u8,
    /// DMTFSpecMeasurementValueType: bit 7 set = raw bit stream, else digest; bits 6:0 the kind.
    pub value_type: u8,
    /// The measurement value (a digest or a raw bit stream).
    pub value: Vec<u8>,
}

/// One NVIDIA opaque-data TLV (type u16 LE, length u16 LE, value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpaqueField {
    /// The field's type (see [`opaque_type`]).
    pub field_type: u16,
    /// The field's bytes.
    pub value: Vec<u8>,
}

/// The MEASUREMENTS response, signature separated out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeasurementsResponse {
    /// Param1 of the response (number of measurement indices when asked for).
    pub param1: u8,
    /// Param2 of the response.
    pub param2: u8,
    /// The measurement blocks, in order.
    pub blocks: Vec<MeasurementBlock>,
    /// The GPU's nonce.
    pub responder_nonce: [u8; NONCE_LEN],
    /// The opaque-data fields, in order.
    pub opaque: Vec<OpaqueField>,
    /// ECDSA P-384 signature r‖s over the request and the response up to it.
    pub signature: [u8; SIGNATURE_LEN],
}

/// A parsed GPU attestation report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttestationReport {
    /// The request the verifier's nonce travelled in.
    pub request: MeasurementsRequest,
    /// The signed response.
    pub response: MeasurementsResponse,
    /// Length of the signed span: request ‖ response up to (excluding) the signature.
    pub signed_len: usize,
}

/// Bounds-checked cursor: every read names its field so errors say where the input ended.
struct Reader<'a> {
    bytes: &'a [u8],
    offset: usize,
    /// Offset of `bytes` within the whole report, for error messages.
    base: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, needed: usize, field: &'static str) -> Result<&'a [u8], ReportError> {
        let available = self.bytes.len().saturating_sub(self.offset);
        let end = self.offset.checked_add(needed);
        match end.and_then(|end| self.bytes.get(self.offset..end)) {
            Some(slice) => {
                self.offset += needed;
                Ok(slice)
            }
            None => Err(ReportError::Truncated {
                field,
                offset: self.base + self.offset,
                needed,
                available,
            }),
        }
    }

    fn u8(&mut self, field: &'static str) -> Result<u8, ReportError> {
        let slice = self.take(1, field)?;
        Ok(slice.first().copied().unwrap_or_default())
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], ReportError> {
        let slice = self.take(N, field)?;
        let mut out = [0u8; N];
        out.copy_from_slice(slice);
        Ok(out)
    }

    fn u16_le(&mut self, field: &'static str) -> Result<u16, ReportError> {
        Ok(u16::from_le_bytes(self.array::<2>(field)?))
    }

    fn u24_le(&mut self, field: &'static str) -> Result<usize, ReportError> {
        let [b0, b1, b2] = self.array::<3>(field)?;
        Ok(usize::from(b0) | (usize::from(b1) << 8) | (usize::from(b2) << 16))
    }

    /// A reader over the next `len` bytes, consuming them here.
    fn sub(&mut self, len: usize, field: &'static str) -> Result<Reader<'a>, ReportError> {
        let base = self.base + self.offset;
        let bytes = self.take(len, field)?;
        Ok(Reader {
            bytes,
            offset: 0,
            base,
        })
    }

    fn rest(&self) -> &'a [u8] {
        self.bytes.get(self.offset..).unwrap_or_default()
    }
}

fn expect_header(
    reader: &mut Reader<'_>,
    message: &'static str,
    code: u8,
) -> Result<(u8, u8), ReportError> {
    let version = reader.u8("SPDM version")?;
    if version != SPDM_VERSION_1_1 {
        return Err(ReportError::UnsupportedVersion {
            message,
            found: version,
        });
    }
    let found = reader.u8("request/response code")?;
    if found != code {
        return Err(ReportError::UnexpectedCode {
            message,
            found,
            expected: code,
        });
    }
    Ok((reader.u8("param1")?, reader.u8("param2")?))
}

impl AttestationReport {
    /// Parses a report as evidence carries it: the signature is its last byte. Bytes after
    /// the signature are outside it, so a verifier that kept them would pass on unsigned
    /// data; they are refused.
    pub fn parse(bytes: &[u8]) -> Result<AttestationReport, ReportError> {
        let (report, trailing) = AttestationReport::parse_prefix(bytes)?;
        if !trailing.is_empty() {
            return Err(ReportError::TrailingData {
                count: trailing.len(),
            });
        }
        Ok(report)
    }

    /// The report as NVML returns it, which may end in zero padding after the signature
    /// (seen on a real H100: 1 byte): the report's length and the padding removed. The node
    /// sends the trimmed report; any non-zero byte after the signature is refused.
    pub fn trim_nvml_padding(bytes: &[u8]) -> Result<&[u8], ReportError> {
        let (report, trailing) = AttestationReport::parse_prefix(bytes)?;
        if trailing.iter().any(|&b| b != 0) {
            return Err(ReportError::TrailingNonZero {
                count: trailing.len(),
            });
        }
        Ok(bytes
            .get(..report.signed_len + SIGNATURE_LEN)
            .unwrap_or(bytes))
    }

    /// Parses the report at the start of `bytes`; returns it and the bytes after its signature.
    fn parse_prefix(bytes: &[u8]) -> Result<(AttestationReport, &[u8]), ReportError> {
        let mut reader = Reader {
            bytes,
            offset: 0,
            base: 0,
        };

        let (param1, param2) =
            expect_header(&mut reader, "GET_MEASUREMENTS request", GET_MEASUREMENTS)?;
        let request = MeasurementsRequest {
            param1,
            param2,
            nonce: reader.array::<NONCE_LEN>("request nonce")?,
            slot_id_param: reader.u8("request SlotIDParam")?,
        };
        // Without bit 0 (SignatureRequested) the responder sends no signature; such a report
        // proves nothing, and its layout would not match the one parsed here.
        if request.param1 & 0x01 == 0 {
            return Err(ReportError::UnsignedRequest {
                param1: request.param1,
            });
        }

        let (param1, param2) = expect_header(&mut reader, "MEASUREMENTS response", MEASUREMENTS)?;
        let number_of_blocks = usize::from(reader.u8("NumberOfBlocks")?);
        let record_len = reader.u24_le("MeasurementRecordLength")?;
        let blocks = parse_measurement_record(
            reader.sub(record_len, "measurement record")?,
            number_of_blocks,
        )?;
        let responder_nonce = reader.array::<NONCE_LEN>("responder nonce")?;
        let opaque_len = usize::from(reader.u16_le("OpaqueDataLength")?);
        let opaque = parse_opaque(reader.sub(opaque_len, "opaque data")?)?;
        let signed_len = reader.offset;
        let signature = reader.array::<SIGNATURE_LEN>("signature")?;

        let trailing = reader.rest();
        Ok((
            AttestationReport {
                request,
                response: MeasurementsResponse {
                    param1,
                    param2,
                    blocks,
                    responder_nonce,
                    opaque,
                    signature,
                },
                signed_len,
            },
            trailing,
        ))
    }

    /// The opaque-data value of `field_type`, if present (types are unique, see parse).
    pub fn opaque(&self, field_type: u16) -> Option<&[u8]> {
        self.response
            .opaque
            .iter()
            .find(|field| field.field_type == field_type)
            .map(|field| field.value.as_slice())
    }

    /// Driver version (opaque field 3): NUL-terminated ASCII, e.g. `595.58.03`.
    pub fn driver_version(&self) -> Option<Result<String, String>> {
        self.opaque(opaque_type::DRIVER_VERSION).map(text_field)
    }

    /// VBIOS version (opaque field 6) in nvidia-smi form, e.g. `98.02.81.00.01`.
    ///
    /// nvtrust `format_vbios_version`: the first half of the bytes reversed, dot-joined hex,
    /// then the first byte of the second half.
    pub fn vbios_version(&self) -> Option<Result<String, String>> {
        self.opaque(opaque_type::VBIOS_VERSION).map(|bytes| {
            let half = bytes.len() / 2;
            match (bytes.get(..half), bytes.get(half)) {
                (Some(first), Some(next)) if !first.is_empty() => {
                    let mut parts: Vec<String> =
                        first.iter().rev().map(|b| format!("{b:02x}")).collect();
                    parts.push(format!("{next:02x}"));
                    Ok(parts.join("."))
                }
                _ => Err(format!("VBIOS version field has {} bytes", bytes.len())),
            }
        })
    }

    /// FWID (opaque field 20): SHA-384 of the GPU firmware the signing key was derived for.
    pub fn fwid(&self) -> Option<&[u8]> {
        self.opaque(opaque_type::FWID)
    }

    /// Text fields such as chip SKU and project, for details only.
    pub fn text_opaque(&self, field_type: u16) -> Option<String> {
        self.opaque(field_type)
            .map(|bytes| text_field(bytes).unwrap_or_else(|hex| hex))
    }

    /// A measurement block by its index.
    pub fn measurement(&self, index: u8) -> Option<&MeasurementBlock> {
        self.response
            .blocks
            .iter()
            .find(|block| block.index == index)
    }
}

/// NUL-padded text field; on invalid UTF-8 the error carries the hex for the detail.
fn text_field(bytes: &[u8]) -> Result<String, String> {
    let trimmed = match bytes.iter().position(|&b| b == 0) {
        Some(end) => bytes.get(..end).unwrap_or_default(),
        None => bytes,
    };
    std::str::from_utf8(trimmed)
        .map(str::to_owned)
        .map_err(|_| hex::encode(bytes))
}

/// Measurement record: `number_of_blocks` blocks, each Index(1) Spec(1) Size(2 LE) then a
/// DMTF measurement ValueType(1) ValueSize(2 LE) Value. The record must hold exactly them.
fn parse_measurement_record(
    mut reader: Reader<'_>,
    number_of_blocks: usize,
) -> Result<Vec<MeasurementBlock>, ReportError> {
    let mut blocks: Vec<MeasurementBlock> = Vec::with_capacity(number_of_blocks);
    for position in 0..number_of_blocks {
        let index = reader.u8("measurement block index")?;
        let spec = reader.u8("measurement block specification")?;
        if spec != DMTF_MEASUREMENT_SPEC {
            return Err(ReportError::NonDmtfBlock {
                position,
                index,
                spec,
            });
        }
        let block_size = usize::from(reader.u16_le("measurement block size")?);
        let mut body = reader.sub(block_size, "measurement block")?;
        let value_type = body.u8("DMTF value type")?;
        let value_size = usize::from(body.u16_le("DMTF value size")?);
        if value_size + 3 != block_size {
            return Err(ReportError::BlockSizeMismatch {
                position,
                block_size,
                value_size,
            });
        }
        let value = body.rest().to_vec();
        if blocks.iter().any(|b| b.index == index) {
            return Err(ReportError::DuplicateMeasurementIndex { index });
        }
        blocks.push(MeasurementBlock {
            index,
            value_type,
            value,
        });
    }
    let extra = reader.rest().len();
    if extra != 0 {
        return Err(ReportError::RecordTrailingBytes {
            blocks: number_of_blocks,
            extra,
        });
    }
    Ok(blocks)
}

/// NVIDIA opaque data: TLVs to the end. Unknown types are kept (they are signed, and newer
/// firmware adds types — Blackwell has 33..36 that early Hopper lacks); duplicates are refused
/// so that a lookup by type is unambiguous.
fn parse_opaque(mut reader: Reader<'_>) -> Result<Vec<OpaqueField>, ReportError> {
    let mut fields: Vec<OpaqueField> = Vec::new();
    while !reader.rest().is_empty() {
        if reader.rest().len() < 4 {
            return Err(ReportError::OpaqueTrailingBytes {
                extra: reader.rest().len(),
            });
        }
        let field_type = reader.u16_le("opaque field type")?;
        let len = usize::from(reader.u16_le("opaque field length")?);
        let value = reader.take(len, "opaque field value")?.to_vec();
        if fields.iter().any(|f| f.field_type == field_type) {
            return Err(ReportError::DuplicateOpaqueField {
                field_type,
                name: opaque_type::name(field_type),
            });
        }
        fields.push(OpaqueField { field_type, value });
    }
    Ok(fields)
}
