//! Host side of batch G2 decompression (kernels/ops/g2_decompress.cu): its launch shape and
//! the conversion of its results, driven by the two-stream segment pipeline of segments.rs
//! (the same as G1's, decompress.rs).

use super::device::Device;
use super::error::GpuError;
use super::launch::launch_1d;
use super::segments;
use super::worker::Worker;
use gpu_crypto_api::DecodeError;
use ic_bls12_381::G2Affine;

const THREADS: u32 = 128;
/// Bytes of one uncompressed point (the output; a compressed one is 96).
const OUT: usize = 192;

/// Points per pipeline segment. A G2 point costs the kernel more than twice a G1 point, so
/// half of G1's segment keeps a segment's kernel in the milliseconds while a batch of 2^16
/// points (8.5 ms end to end on the H200) still overlaps one segment's transfers and host
/// decoding with the other's kernel.
const SEGMENT: usize = 1 << 15;

/// One kernel result: the uncompressed encoding (code 0) or the rejection's code.
pub(crate) fn convert(
    code: u8,
    encoding: &[u8],
) -> Result<Result<G2Affine, DecodeError>, GpuError> {
    if code == 0 {
        let bytes: &[u8; OUT] = encoding
            .try_into()
            .map_err(|_| GpuError::BadOutput("short G2 encoding".into()))?;
        // The GPU did every check from_compressed does; only re-read its output.
        Option::<G2Affine>::from(G2Affine::from_uncompressed_unchecked(bytes))
            .map(Ok)
            .ok_or_else(|| GpuError::BadOutput("kernel returned a malformed G2 encoding".into()))
    } else {
        DecodeError::from_code(code).map(Err).ok_or_else(|| {
            GpuError::BadOutput(format!("result code {code:#04x} (unwritten or unknown)"))
        })
    }
}

pub(crate) fn run(
    gpu: &Device,
    w: &mut Worker,
    points: &[[u8; 96]],
) -> Result<Vec<Result<G2Affine, DecodeError>>, GpuError> {
    let config = |points: u32| launch_1d(points as usize, THREADS);
    let pipeline = segments::Kernel {
        function: &gpu.kernels.g2_decompress,
        config: &config,
        launch: "launch g2_decompress",
        wait: "g2_decompress",
        output: OUT,
        segment: SEGMENT,
        fuse_single_segment: false,
        convert,
    };
    segments::run(gpu, w, &pipeline, points)
}
