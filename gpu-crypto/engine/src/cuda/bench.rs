//! Measurements that need the backend's internals: SHA-256 over device-resident chunks,
//! SHA-256 streamed from pinned host memory, and the host-to-device copy bandwidth.
//! Used by `benches/gpu.rs`; every figure is taken with CUDA events after a warm-up, and
//! every digest is checked against the CPU (`sha2`) before a figure is returned.

use super::backend::GpuBackend;
use super::device::Device;
use super::error::GpuError;
use super::memory::{DeviceBuffer, PinnedBuffer, driver};
use super::sha256::{KernelArgs, TAIL_PAD, launch};
use cudarc::driver::{CudaEvent, CudaStream, LaunchConfig, PushKernelArg, result, sys};
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// Median, minimum and maximum of repeated timings, in seconds.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub median: f64,
    pub min: f64,
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
    pub chunks: usize,
    pub chunk_len: usize,
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
    host.slice_mut(bytes)
        .par_chunks_mut(1 << 20)
        .enumerate()
        .for_each(|(i, c)| {
            let mut x = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            for w in c.chunks_exact_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                w.copy_from_slice(&x.to_le_bytes());
            }
        });
    let seg = segment_chunks.max(1);
    let mut samples = Vec::new();
    for r in 0..reps.max(1) + 1 {
        let start = timed_event(gpu, &main)?;
        for l in &lanes {
            l.wait(&start).map_err(driver("cuStreamWaitEvent"))?;
        }
        let mut first = 0;
        let mut k = 0;
        while first < chunks {
            let n = seg.min(chunks - first);
            let lane = &lanes[k % lanes.len()];
            let off = first * chunk_len;
            // SAFETY: ranges lie within the pinned source and the device batch.
            unsafe {
                result::memcpy_htod_async(
                    batch.data.ptr() + off as u64,
                    &host.slice(bytes)[off..off + n * chunk_len],
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
        for l in &lanes {
            let done = l.record_event(None).map_err(driver("cuEventRecord"))?;
            main.wait(&done).map_err(driver("cuStreamWaitEvent"))?;
        }
        let end = timed_event(gpu, &main)?;
        let t = elapsed(&start, &end)?;
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

/// One decompression kernel instance measured on device-resident input.
#[derive(Debug, Clone)]
pub struct DecompressKernelTiming {
    /// Kernel name, or field variant / kernel name.
    pub function: &'static str,
    pub points: usize,
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
    use super::sources::G1_DECOMPRESS_VARIANTS;
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
    let in_bytes = 48 * n;
    let out_offset = in_bytes.div_ceil(256) * 256;
    let mut device = DeviceBuffer::new(&gpu.ctx);
    device.ensure(out_offset + 97 * n)?;
    let (d_in, d_out) = (device.ptr(), device.ptr() + out_offset as u64);
    let d_codes = d_out + 96 * n as u64;
    // SAFETY: the ranges lie inside `device`; the host slice outlives the synchronised copy.
    unsafe {
        result::memcpy_htod_async(d_in, points.as_flattened(), stream.cu_stream())
            .map_err(driver("upload points"))?;
    }
    stream.synchronize().map_err(driver("upload points"))?;

    use super::decompress::DecompressKernel;
    let mut functions: Vec<(&'static str, cudarc::driver::CudaFunction, DecompressKernel)> = vec![
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
    // NVRTC is single-threaded per program: compile the variants side by side, once per
    // process (the bench calls this for several sizes).
    static COMPILED: std::sync::OnceLock<Vec<Result<Vec<u8>, String>>> = std::sync::OnceLock::new();
    let compile_all = || {
        std::thread::scope(|s| {
            let handles: Vec<_> = FIELD_VARIANTS
                .iter()
                .map(|(_, defines)| {
                    let arch = gpu.arch.as_str();
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
    };
    let compiled: &[Result<Vec<u8>, String>] = if with_variants {
        COMPILED.get_or_init(compile_all)
    } else {
        &[]
    };
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
    let mut out = Vec::with_capacity(functions.len());
    for (name, func, shape) in functions {
        let config = shape.config(n32);
        let launch_once = || -> Result<(), GpuError> {
            // SAFETY: arguments match the kernel's signature; buffers sized above.
            unsafe {
                stream
                    .launch_builder(&func)
                    .arg(&d_in)
                    .arg(&n32)
                    .arg(&d_out)
                    .arg(&d_codes)
                    .launch(config)
                    .map_err(driver("launch decompression variant"))?;
            }
            Ok(())
        };
        // Poison, then one warm-up launch whose output is checked.
        // SAFETY: ranges inside `device`.
        unsafe {
            result::memset_d8_async(d_out, 0xa5, 97 * n, stream.cu_stream())
                .map_err(driver("poison"))?;
        }
        launch_once()?;
        let mut host = vec![0u8; 97 * n];
        // SAFETY: as above; synchronised before `host` is read.
        unsafe {
            result::memcpy_dtoh_async(&mut host[..], d_out, stream.cu_stream())
                .map_err(driver("download"))?;
        }
        stream.synchronize().map_err(driver(name))?;
        let (encodings, codes) = host.split_at(96 * n);
        let mismatches = expected
            .iter()
            .zip(codes.iter().zip(encodings.chunks_exact(96)))
            .filter(|((code, enc), (c, e))| code != *c || enc[..] != e[..])
            .count();
        let mut samples = Vec::with_capacity(reps);
        for _ in 0..reps.max(1) {
            let a = timed_event(gpu, &stream)?;
            launch_once()?;
            let b = timed_event(gpu, &stream)?;
            samples.push(elapsed(&a, &b)?);
        }
        out.push(DecompressKernelTiming {
            function: name,
            points: n,
            seconds: Timing::of(samples),
            mismatches,
        });
    }
    Ok(out)
}

/// Where the time of one single-segment decompression goes, stage by stage, each timed on
/// its own (host clock for host work, CUDA events for device work), medians over `reps`.
#[derive(Debug, Clone, Copy)]
pub struct DecompressBreakdown {
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
    let shape = super::decompress::DecompressKernel::for_batch(points.len());
    use std::time::Instant;
    let n = points.len();
    let n32 = u32::try_from(n).map_err(|_| GpuError::InputTooLarge(format!("{n} points")))?;
    gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;
    let stream = gpu.ctx.new_stream().map_err(driver("cuStreamCreate"))?;
    let in_bytes = 48 * n;
    let out_offset = in_bytes.div_ceil(256) * 256;
    let mut host_in = PinnedBuffer::new(&gpu.ctx);
    host_in.ensure(in_bytes)?;
    let mut host_out = PinnedBuffer::new(&gpu.ctx);
    host_out.ensure(97 * n)?;
    let mut device = DeviceBuffer::new(&gpu.ctx);
    device.ensure(out_offset + 97 * n)?;
    let (d_in, d_out) = (device.ptr(), device.ptr() + out_offset as u64);
    let d_codes = d_out + 96 * n as u64;
    let config = shape.config(n32);
    let (mut stage, mut upload, mut poison, mut kernel, mut download, mut decode, mut total) = (
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    let mut results = Vec::new();
    for r in 0..reps.max(1) + 1 {
        let t_all = Instant::now();
        let t = Instant::now();
        host_in
            .slice_mut(in_bytes)
            .copy_from_slice(points.as_flattened());
        let t_stage = t.elapsed().as_secs_f64();
        let e0 = timed_event(gpu, &stream)?;
        // SAFETY: every range lies inside the buffers ensured above; the host buffers are
        // not touched until the stream is synchronised.
        unsafe {
            result::memcpy_htod_async(d_in, host_in.slice(in_bytes), stream.cu_stream())
                .map_err(driver("upload points"))?;
            let e1 = timed_event(gpu, &stream)?;
            result::memset_d8_async(d_out, 0xa5, 96 * n, stream.cu_stream())
                .map_err(driver("poison"))?;
            result::memset_d8_async(d_codes, 0xff, n, stream.cu_stream())
                .map_err(driver("poison"))?;
            let e2 = timed_event(gpu, &stream)?;
            stream
                .launch_builder(shape.function(gpu))
                .arg(&d_in)
                .arg(&n32)
                .arg(&d_out)
                .arg(&d_codes)
                .launch(config)
                .map_err(driver("launch g1_decompress"))?;
            let e3 = timed_event(gpu, &stream)?;
            result::memcpy_dtoh_async(host_out.slice_mut(97 * n), d_out, stream.cu_stream())
                .map_err(driver("download"))?;
            let e4 = timed_event(gpu, &stream)?;
            e4.synchronize().map_err(driver("g1_decompress"))?;
            let t = Instant::now();
            let out = host_out.slice(97 * n);
            let (encodings, codes) = out.split_at(96 * n);
            // As the engine decodes: on all cores above a few hundred items.
            results = if n >= super::segments::PARALLEL_CONVERT {
                codes
                    .par_iter()
                    .zip(encodings.par_chunks_exact(96))
                    .map(|(&c, e)| super::decompress::convert(c, e))
                    .collect::<Result<Vec<_>, _>>()?
            } else {
                codes
                    .iter()
                    .zip(encodings.chunks_exact(96))
                    .map(|(&c, e)| super::decompress::convert(c, e))
                    .collect::<Result<Vec<_>, _>>()?
            };
            let t_decode = t.elapsed().as_secs_f64();
            let t_total = t_all.elapsed().as_secs_f64();
            if r > 0 {
                stage.push(t_stage);
                upload.push(elapsed(&e0, &e1)?);
                poison.push(elapsed(&e1, &e2)?);
                kernel.push(elapsed(&e2, &e3)?);
                download.push(elapsed(&e3, &e4)?);
                decode.push(t_decode);
                total.push(t_total);
            }
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
    Ok(DecompressBreakdown {
        points: n,
        stage: Timing::of(stage),
        upload: Timing::of(upload),
        poison: Timing::of(poison),
        kernel: Timing::of(kernel),
        download: Timing::of(download),
        decode: Timing::of(decode),
        total: Timing::of(total),
    })
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
