//! Host side of batch G2 decompression: the kernel choice (batches of up to
//! `G2_LATENCY_KERNEL_MAX_POINTS` run the latency kernel, kernels/ops/g2_decompress_latency.cu,
//! instead of the throughput one, kernels/ops/g2_decompress.cu), their launch shapes and the
//! conversion of their results, driven by the two-stream segment pipeline of segments.rs
//! (the same as G1's, decompress.rs).

use super::device::Device;
use super::error::GpuError;
use super::launch::launch_1d;
use super::segments;
use super::worker::Worker;
use cudarc::driver::{CudaFunction, LaunchConfig};
use gpu_crypto_api::DecodeError;
use ic_bls12_381::G2Affine;

const THREADS: u32 = 128;
/// The latency kernel's block: four points, one per warp (G2_LATENCY_WARPS in the kernel).
const LATENCY_POINTS_PER_BLOCK: u32 = 4;
/// Bytes of one uncompressed point (the output; a compressed one is 96).
const OUT: usize = 192;

/// Batches of at most this many points run the latency kernel. The throughput kernel's
/// time is one thread's chain of Fp2 products until the batch fills the device (2.18 to
/// 2.44 ms on the H200 from 8 to 256 points, docs/results/nidkg-host-h200); the latency
/// kernel runs the same chain as RNS steps of one warp (0.54 to 0.63 ms,
/// docs/results/nidkg-g2-decompress-h200). At 4,096 points both take about 2.75 ms.
pub const G2_LATENCY_KERNEL_MAX_POINTS: usize = 4096;

/// Which kernel decompresses a batch of G2 points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum G2DecompressKernel {
    /// kernels/ops/g2_decompress_latency.cu: one point per warp, in a residue number
    /// system.
    Latency,
    /// kernels/ops/g2_decompress.cu: one thread per point.
    Throughput,
}

impl G2DecompressKernel {
    /// The kernel the backend uses for a batch of `points`.
    pub fn for_batch(points: usize) -> G2DecompressKernel {
        if points <= G2_LATENCY_KERNEL_MAX_POINTS {
            G2DecompressKernel::Latency
        } else {
            G2DecompressKernel::Throughput
        }
    }

    fn function(self, gpu: &Device) -> &CudaFunction {
        match self {
            G2DecompressKernel::Latency => &gpu.kernels.g2_decompress_latency,
            G2DecompressKernel::Throughput => &gpu.kernels.g2_decompress,
        }
    }

    /// Launch shape for `points` points.
    fn config(self, points: u32) -> LaunchConfig {
        match self {
            G2DecompressKernel::Latency => LaunchConfig {
                grid_dim: (points.div_ceil(LATENCY_POINTS_PER_BLOCK), 1, 1),
                block_dim: (32 * LATENCY_POINTS_PER_BLOCK, 1, 1),
                shared_mem_bytes: 0,
            },
            G2DecompressKernel::Throughput => launch_1d(points as usize, THREADS),
        }
    }
}

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
    kernel: G2DecompressKernel,
) -> Result<Vec<Result<G2Affine, DecodeError>>, GpuError> {
    let config = |points: u32| kernel.config(points);
    let pipeline = segments::Kernel {
        function: kernel.function(gpu),
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
