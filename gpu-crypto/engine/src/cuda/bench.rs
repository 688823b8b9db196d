//! Measurements that need the backend's internals: SHA-256 over device-resident chunks,
//! SHA-256 streamed from pinned host memory, and the host-to-device copy bandwidth.
//! Used by `benches/gpu.rs`; every figure is taken with CUDA events after a warm-up, and
//! every digest is checked against the CPU (`sha2`) before a figure is returned.

use super::backend::GpuBackend;
use super::decompress::DecompressKernel;
use super::device::Device;
use super::error::GpuError;
use super::memory::{DeviceBuffer, PinnedBuffer, driver};
use super::sha256::{KernelArgs, TAIL_PAD, launch};
use cudarc::driver::{
    CudaEvent, CudaFunction, CudaStream, LaunchConfig, PushKernelArg, result, sys,
};
use gpu_crypto_api::DecodeError;
use ic_bls12_381::G1Affine;
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Instant;

/// Median, minimum and maximum of repeated timings, in seconds.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// The middle sample (the upper one of an even count).
    pub median: f64,
    /// The fastest sample.
    pub min: f64,
    /// The slowest sample.
    pub max: f64,
}

impl Timing {
    fn of(mut samples: Vec<f64>) -> Timing {
        samples.sort_by(|a, b| a.total_cmp(b));
        Timing {
            median: samples[samples.len() / 2],
            min: samples[0],
            max: samples[samples.len() - 1],
        }
    }
}

fn timed_event(gpu: &Device, stream: &CudaStream) -> Result<CudaEvent, GpuError> {
    let ev = gpu
        .ctx
        .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(driver("cuEventCreate"))?;
    ev.record(stream).map_err(driver("cuEventRecord"))?;
    Ok(ev)
}

fn elapsed(a: &CudaEvent, b: &CudaEvent) -> Result<f64, GpuError> {
    b.synchronize().map_err(driver("cuEventSynchronize"))?;
    Ok(a.elapsed_ms(b).map_err(driver("cuEventElapsedTime"))? as f64 / 1e3)
}

fn cpu_digest(prefix: &[u8], chunk: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(prefix);
    h.update(chunk);
    h.finalize().into()
}

/// Device buffers of a uniform batch: `count` chunks of `chunk_len` bytes back to back.
struct DeviceBatch {
    data: DeviceBuffer,
    meta: DeviceBuffer,
    count: usize,
    chunk_len: usize,
    prefix_len: usize,
}

impl DeviceBatch {
    fn new(
        gpu: &Device,
        stream: &Arc<CudaStream>,
        count: usize,
        chunk_len: usize,
        prefix: &[u8],
    ) -> Result<DeviceBatch, GpuError> {
        if !chunk_len.is_multiple_of(16) || prefix.len() > super::sha256::MAX_PREFIX {
            return Err(GpuError::InputTooLarge(
                "bench chunks must be multiples of 16 bytes".into(),
            ));
        }
        let mut data = DeviceBuffer::new(&gpu.ctx);
        data.ensure(count * chunk_len + TAIL_PAD)?;
        // offsets | lens | prefix | digests
        let mut host = Vec::with_capacity(count * 44 + prefix.len());
        for i in 0..count {
            host.extend_from_slice(&((i * chunk_len) as u64).to_le_bytes());
        }
        for _ in 0..count {
            host.extend_from_slice(&(chunk_len as u32).to_le_bytes());
        }
        host.extend_from_slice(prefix);
        let mut meta = DeviceBuffer::new(&gpu.ctx);
        meta.ensure(host.len() + 32 * count + 32)?;
        // SAFETY: sizes ensured above; synchronous copy.
        unsafe {
            result::memcpy_htod_async(meta.ptr(), &host, stream.cu_stream())
                .map_err(driver("upload metadata"))?;
        }
        stream.synchronize().map_err(driver("upload metadata"))?;
        Ok(DeviceBatch {
            data,
            meta,
            count,
            chunk_len,
            prefix_len: prefix.len(),
        })
    }

    /// Digests start 16-byte aligned after offsets | lens | prefix.
    fn digest_offset(&self) -> usize {
        (12 * self.count + self.prefix_len).div_ceil(16) * 16
    }

    fn args(&self, first: usize, count: usize) -> KernelArgs {
        let m = self.meta.ptr();
        KernelArgs {
            data: self.data.ptr(),
            offsets: m + 8 * first as u64,
            lens: m + 8 * self.count as u64 + 4 * first as u64,
            count,
            prefix: m + 12 * self.count as u64,
            prefix_len: self.prefix_len,
            digests: m + (self.digest_offset() + 32 * first) as u64,
        }
    }

    fn digests(&self, stream: &Arc<CudaStream>) -> Result<Vec<[u8; 32]>, GpuError> {
        let mut bytes = vec![0u8; 32 * self.count];
        let at = self.meta.ptr() + self.digest_offset() as u64;
        // SAFETY: the digest range lies in `meta`.
        unsafe {
            result::memcpy_dtoh_async(&mut bytes[..], at, stream.cu_stream())
                .map_err(driver("download digests"))?;
        }
        stream.synchronize().map_err(driver("download digests"))?;
        super::sha256::collect_digests(&bytes)
    }

    /// Checks every digest against the CPU, downloading the data piecewise.
    fn verify(
        &self,
        stream: &Arc<CudaStream>,
        prefix: &[u8],
        digests: &[[u8; 32]],
    ) -> Result<usize, GpuError> {
        let per_piece = ((1usize << 30) / self.chunk_len).max(1);
        let mut host = vec![0u8; per_piece * self.chunk_len];
        let mut mismatches = 0;
        let mut first = 0;
        while first < self.count {
            let n = per_piece.min(self.count - first);
            // SAFETY: range lies within `data`.
            unsafe {
                result::memcpy_dtoh_async(
                    &mut host[..n * self.chunk_len],
                    self.data.ptr() + (first * self.chunk_len) as u64,
                    stream.cu_stream(),
                )
                .map_err(driver("download data"))?;
            }
            stream.synchronize().map_err(driver("download data"))?;
            mismatches += host[..n * self.chunk_len]
                .par_chunks_exact(self.chunk_len)
                .zip(digests[first..first + n].par_iter())
                .filter(|(c, d)| cpu_digest(prefix, c) != **d)
                .count();
            first += n;
        }
        Ok(mismatches)
    }
}

fn fill_random(
    gpu: &Device,
    stream: &Arc<CudaStream>,
    ptr: u64,
    bytes: usize,
    seed: u64,
) -> Result<(), GpuError> {
    let words = (bytes / 8) as u64;
    // SAFETY: ptr is valid for `bytes` bytes.
    unsafe {
        stream
            .launch_builder(&gpu.kernels.fill_random)
            .arg(&ptr)
            .arg(&words)
            .arg(&seed)
            .launch(LaunchConfig {
                grid_dim: (132 * 16, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            })
            .map_err(driver("launch fill_random"))?;
    }
    stream.synchronize().map_err(driver("fill_random"))
}

/// Result of a SHA-256 throughput measurement.
#[derive(Debug, Clone, Copy)]
pub struct ShaThroughput {
    /// Chunks hashed per repetition.
    pub chunks: usize,
    /// Bytes of each chunk.
    pub chunk_len: usize,
    /// Seconds per repetition (all chunks).
    pub seconds: Timing,
    /// Digests that differed from the CPU's (must be 0).
    pub mismatches: usize,
}

impl ShaThroughput {
    /// Bytes hashed per second (1 GB = 1e9 B), at the median.
    pub fn gbps(&self) -> f64 {
        (self.chunks * self.chunk_len) as f64 / self.seconds.median / 1e9
    }
}

/// Which SHA-256 kernel variant to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShaKernel {
    /// The backend's kernel (`sha256_prefixed`: some additions on the FMA pipe).
    Production,
    /// `sha256_prefixed_alu`: every addition on the integer ALU.
    AluAdds,
    /// `sha256_prefixed_shr_fma`: the schedule's shifts on the FMA pipe as well.
    ShrOnFma,
    /// `sha256_prefixed` compiled here with `SHA256_REGISTER_PREFETCH` (the loop with
    /// the next block prefetched into registers instead of by cp.async).
    RegisterPrefetch,
    /// `sha256_prefixed` compiled here with these defines put ahead of the source (the
    /// `SHA256_*` switches of ops/sha256_prefixed.cu).
    Defines(&'static str),
}

/// Compiles `program` for the device with `defines` (source text put ahead of it) and
/// loads `function` from it: benchmark variants of a production kernel.
fn variant_function(
    gpu: &Device,
    program: &super::sources::KernelProgram,
    defines: &str,
    function: &str,
) -> Result<cudarc::driver::CudaFunction, GpuError> {
    let source: &'static str = Box::leak(format!("{defines}{}", program.source).into_boxed_str());
    let variant = super::sources::KernelProgram { source, ..*program };
    let compiled = super::compile::compile_program(&variant, &gpu.arch)?;
    let module = gpu
        .ctx
        .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin))
        .map_err(driver("cuModuleLoadData"))?;
    module
        .load_function(function)
        .map_err(|e| GpuError::Driver(format!("cuModuleGetFunction {function}: {e}")))
}

/// SHA-256(prefix || chunk) over `chunks` random chunks already in device memory: one
/// launch per repetition, timed with events; every digest checked against the CPU.
pub fn sha256_device_resident(
    gpu: &GpuBackend,
    kernel: ShaKernel,
    chunks: usize,
    chunk_len: usize,
    prefix: &[u8],
    reps: usize,
) -> Result<ShaThroughput, GpuError> {
    let gpu = gpu.device();
    gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;
    let compiled;
    let func = match kernel {
        ShaKernel::Production => &gpu.kernels.sha256_prefixed,
        ShaKernel::AluAdds => &gpu.kernels.sha256_prefixed_alu,
        ShaKernel::ShrOnFma => &gpu.kernels.sha256_prefixed_shr_fma,
        ShaKernel::RegisterPrefetch => {
            compiled = variant_function(
                gpu,
                &super::sources::SHA256_PREFIXED,
                "#define SHA256_REGISTER_PREFETCH\n",
                "sha256_prefixed",
            )?;
            &compiled
        }
        ShaKernel::Defines(defines) => {
            compiled = variant_function(
                gpu,
                &super::sources::SHA256_PREFIXED,
                defines,
                "sha256_prefixed",
            )?;
            &compiled
        }
    };
    let stream = gpu.ctx.new_stream().map_err(driver("cuStreamCreate"))?;
    let batch = DeviceBatch::new(gpu, &stream, chunks, chunk_len, prefix)?;
    fill_random(gpu, &stream, batch.data.ptr(), chunks * chunk_len, 0x5eed)?;
    let args = batch.args(0, chunks);
    // SAFETY: `batch` holds the data (with tail padding), metadata and digest space.
    unsafe { launch(gpu, func, &stream, &args)? };
    stream.synchronize().map_err(driver("warm-up"))?;
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        let a = timed_event(gpu, &stream)?;
        // SAFETY: as above.
        unsafe { launch(gpu, func, &stream, &args)? };
        let b = timed_event(gpu, &stream)?;
        samples.push(elapsed(&a, &b)?);
    }
    let digests = batch.digests(&stream)?;
    let mismatches = batch.verify(&stream, prefix, &digests)?;
    Ok(ShaThroughput {
        chunks,
        chunk_len,
        seconds: Timing::of(samples),
        mismatches,
    })
}

/// Host-to-device copy bandwidth from pinned memory (one copy of `bytes`), GB/s median.
pub fn h2d_bandwidth(
    gpu: &GpuBackend,
    bytes: usize,
    reps: usize,
) -> Result<(f64, Timing), GpuError> {
    let gpu = gpu.device();
    gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;
    let stream = gpu.ctx.new_stream().map_err(driver("cuStreamCreate"))?;
    let mut host = PinnedBuffer::new(&gpu.ctx);
    host.ensure(bytes)?;
    host.slice_mut(bytes)
        .par_chunks_mut(1 << 20)
        .enumerate()
        .for_each(|(i, c)| c.fill(i as u8 ^ 0x5a));
    let mut dev = DeviceBuffer::new(&gpu.ctx);
    dev.ensure(bytes)?;
    let mut samples = Vec::new();
    for r in 0..reps.max(1) + 1 {
        let a = timed_event(gpu, &stream)?;
        // SAFETY: both ranges hold `bytes`.
        unsafe {
            result::memcpy_htod_async(dev.ptr(), host.slice(bytes), stream.cu_stream())
                .map_err(driver("upload"))?;
        }
        let b = timed_event(gpu, &stream)?;
        let t = elapsed(&a, &b)?;
        if r > 0 {
            samples.push(t);
        }
    }
    let t = Timing::of(samples);
    Ok((bytes as f64 / t.median / 1e9, t))
}

/// SHA-256 of `chunks` random chunks that start in pinned host memory: segments of
/// `segment_chunks` are uploaded and hashed on `streams` rotating streams, so uploads
/// overlap the launches. Timed from the first upload to the last digest on the device.
pub fn sha256_from_pinned(
    gpu: &GpuBackend,
    chunks: usize,
    chunk_len: usize,
    prefix: &[u8],
    segment_chunks: usize,
    streams: usize,
    reps: usize,
) -> Result<ShaThroughput, GpuError> {
    let gpu = gpu.device();
    gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;
    let main = gpu.ctx.new_stream().map_err(driver("cuStreamCreate"))?;
    let lanes: Vec<Arc<CudaStream>> = (0..streams.max(1))
        .map(|_| gpu.ctx.new_stream().map_err(driver("cuStreamCreate")))
        .collect::<Result<_, _>>()?;
    let batch = DeviceBatch::new(gpu, &main, chunks, chunk_len, prefix)?;
    let bytes = chunks * chunk_len;
    let mut host = PinnedBuffer::new(&gpu.ctx);
    host.ensure(bytes)?;
    fill_pseudo_random(host.slice_mut(bytes));
    let segments = Segments {
        main: &main,
        lanes: &lanes,
        batch: &batch,
        host: host.slice(bytes),
        segment_chunks: segment_chunks.max(1),
    };
    let mut samples = Vec::new();
    for r in 0..reps.max(1) + 1 {
        let t = segments.hash_all(gpu)?;
        if r > 0 {
            samples.push(t);
        }
    }
    let digests = batch.digests(&main)?;
    let mismatches = host
        .slice(bytes)
        .par_chunks_exact(chunk_len)
        .zip(digests.par_iter())
        .filter(|(c, d)| cpu_digest(prefix, c) != **d)
        .count();
    Ok(ShaThroughput {
        chunks,
        chunk_len,
        seconds: Timing::of(samples),
        mismatches,
    })
}

/// xorshift64 words, seeded per MiB, over `host`.
fn fill_pseudo_random(host: &mut [u8]) {
    host.par_chunks_mut(1 << 20).enumerate().for_each(|(i, c)| {
        let mut x = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        for w in c.chunks_exact_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            w.copy_from_slice(&x.to_le_bytes());
        }
    });
}

/// One pass of [`sha256_from_pinned`]: the pinned chunks uploaded and hashed segment by
/// segment on the rotating lanes, all joined back into `main`.
struct Segments<'a> {
    main: &'a Arc<CudaStream>,
    lanes: &'a [Arc<CudaStream>],
    batch: &'a DeviceBatch,
    /// The chunks, back to back, in pinned memory.
    host: &'a [u8],
    segment_chunks: usize,
}

impl Segments<'_> {
    /// Seconds on the device from the first upload to the last digest.
    fn hash_all(&self, gpu: &Device) -> Result<f64, GpuError> {
        let (batch, chunk_len) = (self.batch, self.batch.chunk_len);
        let start = timed_event(gpu, self.main)?;
        for l in self.lanes {
            l.wait(&start).map_err(driver("cuStreamWaitEvent"))?;
        }
        let mut first = 0;
        let mut k = 0;
        while first < batch.count {
            let n = self.segment_chunks.min(batch.count - first);
            let lane = &self.lanes[k % self.lanes.len()];
            let off = first * chunk_len;
            // SAFETY: the segment's range lies within the pinned source and the device
            // batch (`count * chunk_len` bytes each, plus the batch's tail padding); the
            // pinned source outlives the final synchronisation (digests). The kernel's
            // arguments are the batch's (`DeviceBatch::args`).
            unsafe {
                result::memcpy_htod_async(
                    batch.data.ptr() + off as u64,
                    &self.host[off..off + n * chunk_len],
                    lane.cu_stream(),
                )
                .map_err(driver("upload segment"))?;
                launch(
                    gpu,
                    &gpu.kernels.sha256_prefixed,
                    lane,
                    &batch.args(first, n),
                )?;
            }
            first += n;
            k += 1;
        }
        for l in self.lanes {
            let done = l.record_event(None).map_err(driver("cuEventRecord"))?;
            self.main.wait(&done).map_err(driver("cuStreamWaitEvent"))?;
        }
        let end = timed_event(gpu, self.main)?;
        elapsed(&start, &end)
    }
}

/// One decompression kernel instance measured on device-resident input.
#[derive(Debug, Clone)]
pub struct DecompressKernelTiming {
    /// Kernel name, or field variant / kernel name.
    pub function: &'static str,
    /// Points decompressed per launch.
    pub points: usize,
    /// Kernel seconds per launch (CUDA events).
    pub seconds: Timing,
    /// Items whose code or encoding differs from the CPU's (must be 0).
    pub mismatches: usize,
}

impl DecompressKernelTiming {
    /// Points per second at the median.
    pub fn points_per_second(&self) -> f64 {
        self.points as f64 / self.seconds.median
    }
}

/// Field-arithmetic choices the decompression variants are compiled under (the
/// `FP_INLINE_MUL` switch of kernels/ff/fp.cuh): one called copy of the product and the
/// square, or both inlined at every use (the production decompression kernel's choice).
const FIELD_VARIANTS: &[(&str, &str)] = &[("called", ""), ("inline", "#define FP_INLINE_MUL\n")];

/// Kernel-only time of the production decompression kernel and, `with_variants`, of every
/// benchmark variant (sources::G1_DECOMPRESS_VARIANTS, compiled here for the device's
/// architecture under each of FIELD_VARIANTS)
/// over the same points in device memory; each instance's output is compared item by item
/// with the CPU's `from_compressed` (code and 96-byte encoding).
pub fn decompress_kernels(
    gpu: &GpuBackend,
    points: &[[u8; 48]],
    reps: usize,
    with_variants: bool,
) -> Result<Vec<DecompressKernelTiming>, GpuError> {
    let gpu = gpu.device();
    let n = points.len();
    let n32 = u32::try_from(n).map_err(|_| GpuError::InputTooLarge(format!("{n} points")))?;
    let expected: Vec<(u8, [u8; 96])> = points
        .par_iter()
        .map(|p| match crate::cpu::g1_decompress_one(p) {
            Ok(a) => (0, a.to_uncompressed()),
            Err(e) => (e.code(), [0u8; 96]),
        })
        .collect();

    gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;
    let stream = gpu.ctx.new_stream().map_err(driver("cuStreamCreate"))?;
    let io = DecompressIo::new(gpu, n)?;
    // SAFETY: the input range (48 bytes per point) lies inside `io.device`; the host slice
    // outlives the copy, which is synchronised before it returns.
    unsafe {
        result::memcpy_htod_async(io.d_in, points.as_flattened(), stream.cu_stream())
            .map_err(driver("upload points"))?;
    }
    stream.synchronize().map_err(driver("upload points"))?;

    let mut functions = vec![
        (
            "g1_decompress",
            gpu.kernels.g1_decompress.clone(),
            DecompressKernel::Throughput,
        ),
        (
            "g1_decompress_latency",
            gpu.kernels.g1_decompress_latency.clone(),
            DecompressKernel::Latency,
        ),
    ];
    if with_variants {
        functions.extend(variant_functions(gpu)?);
    }
    let run = KernelRun {
        gpu,
        stream: &stream,
        io: &io,
        n32,
        expected: &expected,
        reps,
    };
    functions
        .into_iter()
        .map(|(name, func, shape)| run.measure(name, &func, shape))
        .collect()
}

/// A decompression kernel function to measure: its label, the function, and its launch
/// shape.
type DecompressFunction = (&'static str, CudaFunction, DecompressKernel);

/// Device buffers of a decompression measurement over `n` points: the encodings at
/// `d_in`, the 96-byte outputs at `d_out`, then one code byte per point at `d_codes`.
struct DecompressIo {
    /// Owns the memory the addresses point into.
    _device: DeviceBuffer,
    d_in: u64,
    d_out: u64,
    d_codes: u64,
}

impl DecompressIo {
    fn new(gpu: &Device, n: usize) -> Result<DecompressIo, GpuError> {
        let in_bytes = 48 * n;
        let out_offset = in_bytes.div_ceil(256) * 256;
        let mut device = DeviceBuffer::new(&gpu.ctx);
        device.ensure(out_offset + 97 * n)?;
        let (d_in, d_out) = (device.ptr(), device.ptr() + out_offset as u64);
        Ok(DecompressIo {
            _device: device,
            d_in,
            d_out,
            d_codes: d_out + 96 * n as u64,
        })
    }
}

/// Every function of sources::G1_DECOMPRESS_VARIANTS under each of FIELD_VARIANTS,
/// labelled `field variant/function`. NVRTC is single-threaded per program: the variants
/// compile side by side, once per process (the bench calls this for several sizes).
fn variant_functions(gpu: &Device) -> Result<Vec<DecompressFunction>, GpuError> {
    use super::sources::G1_DECOMPRESS_VARIANTS;
    static COMPILED: std::sync::OnceLock<Vec<Result<Vec<u8>, String>>> = std::sync::OnceLock::new();
    let compiled = COMPILED.get_or_init(|| compile_variants(&gpu.arch));
    let mut functions = Vec::new();
    for ((label, _), c) in FIELD_VARIANTS.iter().zip(compiled) {
        let cubin = c.clone().map_err(GpuError::Compile)?;
        let module = gpu
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
            .map_err(driver("cuModuleLoadData"))?;
        for name in G1_DECOMPRESS_VARIANTS.functions {
            let f = module
                .load_function(name)
                .map_err(|e| GpuError::Driver(format!("cuModuleGetFunction {name}: {e}")))?;
            let label: &'static str = Box::leak(format!("{label}/{name}").into_boxed_str());
            functions.push((label, f, DecompressKernel::Throughput));
        }
    }
    Ok(functions)
}

/// The cubin of sources::G1_DECOMPRESS_VARIANTS for `arch` under each of FIELD_VARIANTS,
/// compiled on one thread each (a failure as its message).
fn compile_variants(arch: &str) -> Vec<Result<Vec<u8>, String>> {
    use super::sources::G1_DECOMPRESS_VARIANTS;
    std::thread::scope(|s| {
        let handles: Vec<_> = FIELD_VARIANTS
            .iter()
            .map(|(_, defines)| {
                s.spawn(move || {
                    let source: &'static str = Box::leak(
                        format!("{defines}{}", G1_DECOMPRESS_VARIANTS.source).into_boxed_str(),
                    );
                    let program = super::sources::KernelProgram {
                        source,
                        ..G1_DECOMPRESS_VARIANTS
                    };
                    super::compile::compile_program(&program, arch)
                        .map(|c| c.cubin)
                        .map_err(|e| e.to_string())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("compile thread panicked".to_string()))
            })
            .collect()
    })
}

/// What every function of [`decompress_kernels`] is measured with: the same points in
/// device memory, the CPU's verdicts on them, the stream and the repetitions.
struct KernelRun<'a> {
    gpu: &'a Device,
    stream: &'a Arc<CudaStream>,
    io: &'a DecompressIo,
    n32: u32,
    /// Each point's CPU code and uncompressed encoding (zero on an error).
    expected: &'a [(u8, [u8; 96])],
    reps: usize,
}

impl KernelRun<'_> {
    /// One launch of `func` over the points, shaped by `shape`.
    fn launch_once(&self, func: &CudaFunction, shape: DecompressKernel) -> Result<(), GpuError> {
        let io = self.io;
        // SAFETY: the decompression kernels take (const u8* in, u32 n, u8* out, u8* codes),
        // as pushed; `io` holds 48 input bytes, 96 output bytes and one code per point.
        unsafe {
            self.stream
                .launch_builder(func)
                .arg(&io.d_in)
                .arg(&self.n32)
                .arg(&io.d_out)
                .arg(&io.d_codes)
                .launch(shape.config(self.n32))
                .map_err(driver("launch decompression variant"))?;
        }
        Ok(())
    }

    /// Poison, then one warm-up launch whose output is checked against the CPU, then
    /// `reps` timed launches.
    fn measure(
        &self,
        name: &'static str,
        func: &CudaFunction,
        shape: DecompressKernel,
    ) -> Result<DecompressKernelTiming, GpuError> {
        let (gpu, stream, io) = (self.gpu, self.stream, self.io);
        let n = self.n32 as usize;
        // SAFETY: the outputs and codes (97 bytes per point) lie inside `io`'s buffer.
        unsafe {
            result::memset_d8_async(io.d_out, 0xa5, 97 * n, stream.cu_stream())
                .map_err(driver("poison"))?;
        }
        self.launch_once(func, shape)?;
        let mut host = vec![0u8; 97 * n];
        // SAFETY: as above; the stream is synchronised before `host` is read.
        unsafe {
            result::memcpy_dtoh_async(&mut host[..], io.d_out, stream.cu_stream())
                .map_err(driver("download"))?;
        }
        stream.synchronize().map_err(driver(name))?;
        let (encodings, codes) = host.split_at(96 * n);
        let mismatches = self
            .expected
            .iter()
            .zip(codes.iter().zip(encodings.chunks_exact(96)))
            .filter(|((code, enc), (c, e))| code != *c || enc[..] != e[..])
            .count();
        let mut samples = Vec::with_capacity(self.reps);
        for _ in 0..self.reps.max(1) {
            let a = timed_event(gpu, stream)?;
            self.launch_once(func, shape)?;
            let b = timed_event(gpu, stream)?;
            samples.push(elapsed(&a, &b)?);
        }
        Ok(DecompressKernelTiming {
            function: name,
            points: n,
            seconds: Timing::of(samples),
            mismatches,
        })
    }
}

/// Where the time of one single-segment decompression goes, stage by stage, each timed on
/// its own (host clock for host work, CUDA events for device work), medians over `reps`.
#[derive(Debug, Clone, Copy)]
pub struct DecompressBreakdown {
    /// Points of the batch.
    pub points: usize,
    /// Copying the encodings into pinned staging memory (host).
    pub stage: Timing,
    /// Host-to-device copy of the encodings.
    pub upload: Timing,
    /// Poisoning the outputs (two memsets).
    pub poison: Timing,
    /// The kernel.
    pub kernel: Timing,
    /// Device-to-host copy of encodings and codes.
    pub download: Timing,
    /// Turning codes and encodings into results (host).
    pub decode: Timing,
    /// All of it enqueued back to back on one stream, host clock, as the engine does it.
    pub total: Timing,
}

/// Measures [`DecompressBreakdown`] with the kernel the backend picks for the batch; the
/// decoded results are compared with the CPU's `from_compressed` (an error if any differs).
pub fn decompress_breakdown(
    gpu: &GpuBackend,
    points: &[[u8; 48]],
    reps: usize,
) -> Result<DecompressBreakdown, GpuError> {
    let gpu = gpu.device();
    let shape = DecompressKernel::for_batch(points.len());
    let n = points.len();
    let n32 = u32::try_from(n).map_err(|_| GpuError::InputTooLarge(format!("{n} points")))?;
    gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;
    let stream = gpu.ctx.new_stream().map_err(driver("cuStreamCreate"))?;
    let mut host_in = PinnedBuffer::new(&gpu.ctx);
    host_in.ensure(48 * n)?;
    let mut host_out = PinnedBuffer::new(&gpu.ctx);
    host_out.ensure(97 * n)?;
    let mut pass = BreakdownPass {
        gpu,
        stream: &stream,
        shape,
        n32,
        host_in,
        host_out,
        io: DecompressIo::new(gpu, n)?,
    };
    let mut samples = BreakdownSamples::default();
    let mut results = Vec::new();
    for r in 0..reps.max(1) + 1 {
        let times;
        (times, results) = pass.run(points)?;
        if r > 0 {
            samples.push(&times)?;
        }
    }
    let expected: Vec<_> = points
        .par_iter()
        .map(crate::cpu::g1_decompress_one)
        .collect();
    if results != expected {
        return Err(GpuError::BadOutput(
            "breakdown: results differ from the CPU".into(),
        ));
    }
    Ok(samples.breakdown(n))
}

/// The buffers and kernel of one [`decompress_breakdown`].
struct BreakdownPass<'a> {
    gpu: &'a Device,
    stream: &'a Arc<CudaStream>,
    shape: DecompressKernel,
    n32: u32,
    /// Pinned staging of the encodings (48 bytes per point).
    host_in: PinnedBuffer,
    /// Pinned outputs and codes (97 bytes per point).
    host_out: PinnedBuffer,
    io: DecompressIo,
}

/// The clocks of one pass: host seconds of staging, decoding and the whole, and the
/// events between the device steps (upload, poison, kernel, download).
struct PassTimes {
    stage: f64,
    events: [CudaEvent; 5],
    decode: f64,
    total: f64,
}

impl BreakdownPass<'_> {
    /// One decompression, as the engine does it, with a clock around each stage; the
    /// decoded results.
    fn run(
        &mut self,
        points: &[[u8; 48]],
    ) -> Result<(PassTimes, Vec<Result<G1Affine, DecodeError>>), GpuError> {
        let (gpu, stream, io) = (self.gpu, self.stream, &self.io);
        let n = self.n32 as usize;
        let in_bytes = 48 * n;
        let t_all = Instant::now();
        let t = Instant::now();
        self.host_in
            .slice_mut(in_bytes)
            .copy_from_slice(points.as_flattened());
        let t_stage = t.elapsed().as_secs_f64();
        let e0 = timed_event(gpu, stream)?;
        // SAFETY: every range lies inside the buffers sized by `decompress_breakdown`; the
        // host buffers are not touched until `e4` is synchronised. The kernel takes
        // (const u8* in, u32 n, u8* out, u8* codes), as pushed.
        let events = unsafe {
            result::memcpy_htod_async(io.d_in, self.host_in.slice(in_bytes), stream.cu_stream())
                .map_err(driver("upload points"))?;
            let e1 = timed_event(gpu, stream)?;
            result::memset_d8_async(io.d_out, 0xa5, 96 * n, stream.cu_stream())
                .map_err(driver("poison"))?;
            result::memset_d8_async(io.d_codes, 0xff, n, stream.cu_stream())
                .map_err(driver("poison"))?;
            let e2 = timed_event(gpu, stream)?;
            stream
                .launch_builder(self.shape.function(gpu))
                .arg(&io.d_in)
                .arg(&self.n32)
                .arg(&io.d_out)
                .arg(&io.d_codes)
                .launch(self.shape.config(self.n32))
                .map_err(driver("launch g1_decompress"))?;
            let e3 = timed_event(gpu, stream)?;
            result::memcpy_dtoh_async(
                self.host_out.slice_mut(97 * n),
                io.d_out,
                stream.cu_stream(),
            )
            .map_err(driver("download"))?;
            let e4 = timed_event(gpu, stream)?;
            e4.synchronize().map_err(driver("g1_decompress"))?;
            [e0, e1, e2, e3, e4]
        };
        let t = Instant::now();
        let results = decode_outputs(self.host_out.slice(97 * n), n)?;
        let times = PassTimes {
            stage: t_stage,
            events,
            decode: t.elapsed().as_secs_f64(),
            total: t_all.elapsed().as_secs_f64(),
        };
        Ok((times, results))
    }
}

/// The results of `n` points from the kernel's outputs (encodings, then codes), decoded as
/// the engine decodes them: on all cores above a few hundred items.
fn decode_outputs(out: &[u8], n: usize) -> Result<Vec<Result<G1Affine, DecodeError>>, GpuError> {
    let (encodings, codes) = out.split_at(96 * n);
    if n >= super::segments::PARALLEL_CONVERT {
        codes
            .par_iter()
            .zip(encodings.par_chunks_exact(96))
            .map(|(&c, e)| super::decompress::convert(c, e))
            .collect()
    } else {
        codes
            .iter()
            .zip(encodings.chunks_exact(96))
            .map(|(&c, e)| super::decompress::convert(c, e))
            .collect()
    }
}

/// Each stage's samples over the measured passes, in seconds.
#[derive(Default)]
struct BreakdownSamples {
    stage: Vec<f64>,
    upload: Vec<f64>,
    poison: Vec<f64>,
    kernel: Vec<f64>,
    download: Vec<f64>,
    decode: Vec<f64>,
    total: Vec<f64>,
}

impl BreakdownSamples {
    fn push(&mut self, t: &PassTimes) -> Result<(), GpuError> {
        let [e0, e1, e2, e3, e4] = &t.events;
        self.stage.push(t.stage);
        self.upload.push(elapsed(e0, e1)?);
        self.poison.push(elapsed(e1, e2)?);
        self.kernel.push(elapsed(e2, e3)?);
        self.download.push(elapsed(e3, e4)?);
        self.decode.push(t.decode);
        self.total.push(t.total);
        Ok(())
    }

    fn breakdown(self, points: usize) -> DecompressBreakdown {
        DecompressBreakdown {
            points,
            stage: Timing::of(self.stage),
            upload: Timing::of(self.upload),
            poison: Timing::of(self.poison),
            kernel: Timing::of(self.kernel),
            download: Timing::of(self.download),
            decode: Timing::of(self.decode),
            total: Timing::of(self.total),
        }
    }
}

/// Latency of one dependent step of each chain kernel of bench/fp_chain_bench.cu (one warp,
/// `steps` steps per lane), in nanoseconds, median of `reps` launches.
pub fn fp_chain_latency(
    gpu: &GpuBackend,
    steps: u32,
    reps: usize,
) -> Result<Vec<(&'static str, f64)>, GpuError> {
    let gpu = gpu.device();
    use super::sources::FP_CHAIN_BENCH;
    gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;
    let compiled = super::compile::compile_program(&FP_CHAIN_BENCH, &gpu.arch)?;
    let module = gpu
        .ctx
        .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin))
        .map_err(driver("cuModuleLoadData"))?;
    let stream = gpu.ctx.new_stream().map_err(driver("cuStreamCreate"))?;
    let mut out_buf = DeviceBuffer::new(&gpu.ctx);
    out_buf.ensure(32 * 48)?;
    let out_ptr = out_buf.ptr();
    let mut results = Vec::new();
    for &name in FP_CHAIN_BENCH.functions {
        let f = module
            .load_function(name)
            .map_err(|e| GpuError::Driver(format!("cuModuleGetFunction {name}: {e}")))?;
        let launch_once = || -> Result<(), GpuError> {
            // SAFETY: (u32* out of 32 x 12 words, u32 steps), as every chain kernel takes.
            unsafe {
                stream
                    .launch_builder(&f)
                    .arg(&out_ptr)
                    .arg(&steps)
                    .launch(LaunchConfig {
                        grid_dim: (1, 1, 1),
                        block_dim: (32, 1, 1),
                        shared_mem_bytes: 0,
                    })
                    .map_err(driver("launch fp chain"))?;
            }
            Ok(())
        };
        launch_once()?;
        stream.synchronize().map_err(driver(name))?;
        let mut samples = Vec::with_capacity(reps);
        for _ in 0..reps.max(1) {
            let a = timed_event(gpu, &stream)?;
            launch_once()?;
            let b = timed_event(gpu, &stream)?;
            samples.push(elapsed(&a, &b)?);
        }
        results.push((name, Timing::of(samples).median * 1e9 / steps.max(1) as f64));
    }
    Ok(results)
}
