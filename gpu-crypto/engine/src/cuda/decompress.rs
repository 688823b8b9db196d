//! Host side of batch G1 decompression: the kernel choice (batches of up to
//! `LATENCY_KERNEL_MAX_POINTS` run the latency kernel instead of the throughput one), its
//! launch shape and the conversion of its results, driven by the two-stream segment
//! pipeline of segments.rs.

use super::device::Device;
use super::error::GpuError;
use super::segments;
use super::worker::Worker;
use cudarc::driver::LaunchConfig;
use gpu_crypto_api::DecodeError;
use ic_bls12_381::G1Affine;

const THREADS: u32 = 128;
/// The latency kernel's block: one point on 2 warps (kernels/ops/g1_decompress_latency.cu).
const LATENCY_THREADS: u32 = 64;

/// Batches of at most this many points run the latency kernel. Both kernels' time is one
/// point's latency while the batch leaves schedulers idle; the latency kernel's block
/// occupies 2 warps per point (the throughput kernel: 4 per 128), so once the batch fills
/// the schedulers it falls behind. Measured end to end on the H200 (docs/benchmarks.md,
/// docs/results/decompress-small-batch-h200): latency kernel 1.422 / 1.889 ms at 3,072 /
/// 4,096 points against 1.582 / 1.636 ms for the throughput kernel.
pub const LATENCY_KERNEL_MAX_POINTS: usize = 3072;

/// Which kernel decompresses a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecompressKernel {
    /// kernels/ops/g1_decompress_latency.cu: one point over two warps (square root on one,
    /// the subgroup test beside it), in a residue number system.
    Latency,
    /// kernels/ops/g1_decompress.cu: one thread per point.
    Throughput,
}

impl DecompressKernel {
    /// The kernel the backend uses for a batch of `points`.
    pub fn for_batch(points: usize) -> DecompressKernel {
        if points <= LATENCY_KERNEL_MAX_POINTS {
            DecompressKernel::Latency
        } else {
            DecompressKernel::Throughput
        }
    }

    pub(crate) fn function(self, gpu: &Device) -> &cudarc::driver::CudaFunction {
        match self {
            DecompressKernel::Latency => &gpu.kernels.g1_decompress_latency,
            DecompressKernel::Throughput => &gpu.kernels.g1_decompress,
        }
    }

    /// Launch shape for `points` points.
    pub(crate) fn config(self, points: u32) -> LaunchConfig {
        let (grid, block) = match self {
            DecompressKernel::Latency => (points, LATENCY_THREADS),
            DecompressKernel::Throughput => (points.div_ceil(THREADS), THREADS),
        };
        LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        }
    }
}

pub(crate) fn convert(
    code: u8,
    encoding: &[u8],
) -> Result<Result<G1Affine, DecodeError>, GpuError> {
    if code == 0 {
        let bytes: &[u8; 96] = encoding
            .try_into()
            .map_err(|_| GpuError::BadOutput("short encoding".into()))?;
        // The GPU did every check from_compressed does; only re-read its output.
        Option::<G1Affine>::from(G1Affine::from_uncompressed_unchecked(bytes))
            .map(Ok)
            .ok_or_else(|| GpuError::BadOutput("kernel returned a malformed encoding".into()))
    } else {
        DecodeError::from_code(code).map(Err).ok_or_else(|| {
            GpuError::BadOutput(format!("result code {code:#04x} (unwritten or unknown)"))
        })
    }
}

/// Points per pipeline segment: the host decodes segment k's results while the GPU works
/// on the segments after it. Small batches are one segment (no extra synchronisation).
/// 2^16 points are about two waves of the kernel on an H200 (132 SMs x 256 threads); the
/// two streams let the next segment's kernel fill the SMs that the current one's last
/// wave leaves idle, and the last segment's host decoding (after the GPU is done) is short.
const SEGMENT: usize = 1 << 16;

pub(crate) fn run(
    gpu: &Device,
    w: &mut Worker,
    points: &[[u8; 48]],
) -> Result<Vec<Result<G1Affine, DecodeError>>, GpuError> {
    run_with(gpu, w, points, DecompressKernel::for_batch(points.len()))
}

pub(crate) fn run_with(
    gpu: &Device,
    w: &mut Worker,
    points: &[[u8; 48]],
    kernel: DecompressKernel,
) -> Result<Vec<Result<G1Affine, DecodeError>>, GpuError> {
    let config = |points| kernel.config(points);
    let pipeline = segments::Kernel {
        function: kernel.function(gpu),
        config: &config,
        launch: "launch g1_decompress",
        wait: "g1_decompress",
        output: 96,
        segment: SEGMENT,
        fuse_single_segment: true,
        convert,
    };
    segments::run(gpu, w, &pipeline, points)
}
