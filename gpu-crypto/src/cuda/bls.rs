//! Host side of BLS signature batch verification on the GPU (signatures in G1, public
//! keys in G2, as the IC uses them); docs/bls.md has the whole story.
//!
//! * Decoding: signatures with the GPU decompression kernel (bit-identical accept set and
//!   error codes to the CPU path), public keys on the CPU with `cpu::g2_decompress_one`
//!   behind a cache, and the messages hashed to G1 on the CPU (rayon) with blst's
//!   `hash_to_g1`, the same RFC 9380 map as the CPU path's `hash_message_to_g1` (equal
//!   points, tested) at about a fifth of its cost; all at once: the GPU decompresses while
//!   the CPU hashes.
//! * Verification: a random linear combination with independent 128-bit scalars from a
//!   ChaCha20 generator seeded by the OS (as the CPU path), checked with one Miller loop per
//!   item plus one final exponentiation on the GPU (kernels/ops/bls_verify.cu). A failing
//!   combination is bisected on the GPU down to single items, whose check is exact, so
//!   every verdict is per item: "invalid" is exact, "valid" holds except with probability
//!   at most 2^-128 per combination.

use super::decompress;
use super::memory::{DeviceBuffer, PinnedBuffer, driver};
use super::{GpuBackend, GpuError, Worker};
use crate::cpu;
use crate::engine::{BlsItem, BlsScheme};
use crate::error::{DecodeError, VerifyError};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, LaunchConfig, PushKernelArg, result};
use ic_bls12_381::{G1Affine, G2Affine, Gt};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Instant;

/// Bytes of one item of `bls_rlc_leaves`: signature (96), message point (96), public key
/// (192), scalar (16).
const ITEM_BYTES: usize = 400;
/// Bytes of one pair of `bls_pairing_products`: G1 (96) then G2 (192).
const PAIR_BYTES: usize = 288;
/// A Gt value as `Gt::to_bytes`, and an Fp12 element of the device (Montgomery limbs).
const GT_BYTES: usize = 576;
const FP12_BYTES: usize = 576;
/// A projective G1 point of the device (three Montgomery Fp elements).
const G1_PROJ_BYTES: usize = 144;
const G2_BYTES: usize = 192;
/// Threads per block: 32, so a batch of a few thousand items spreads over every SM (at
/// 255 registers per thread an SM holds 8 warps either way).
const THREADS: u32 = 32;
/// Poison of the verdict bytes: neither 0 nor 1, so an unwritten verdict is caught.
const VERDICT_POISON: u8 = 0xff;
/// Bits of the random combination scalars.
const RANDOM_BYTES: usize = 16;
/// After a failed combination, the leaves under the failing nodes are checked directly
/// once they are at most this many (about what the H200 runs at once); above it the
/// failing nodes are split one level first. Each check is a full Miller loop and final
/// exponentiation on one thread, so one wide launch beats many narrow ones.
const LEAF_DIRECT_MAX: usize = 1 << 16;
/// Decoded public keys kept; past this the cache starts over.
const PUBLIC_KEY_CACHE_MAX: usize = 1 << 16;

/// How the GPU decides a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlsGpuStrategy {
    /// Random linear combination with one thread per item: n + 1 Miller loops and one
    /// final exponentiation per combination; failing combinations bisected on the GPU.
    RandomCombination,
    /// The same combination with two threads per item (one Miller loop each for the
    /// message and the signature side): 2n Miller loops, but half the serial chain per
    /// thread and no Miller loop in the checks; for batches that leave the GPU idle.
    RandomCombinationSplit,
    /// Exact check per item: a two-term Miller loop and a final exponentiation each.
    PerItem,
}

/// Batches of at most this many items use the two-threads-per-item combination in
/// `GpuBackend::bls_verify_batch` (docs/bls.md).
pub const SPLIT_MAX_ITEMS: usize = 16384;

pub(crate) struct BlsKernels {
    rlc_leaves: CudaFunction,
    rlc_halves: CudaFunction,
    tree_level: CudaFunction,
    check_nodes: CudaFunction,
    pairing_products: CudaFunction,
}

impl BlsKernels {
    pub(crate) fn load(
        verify: &Arc<CudaModule>,
        pairing: &Arc<CudaModule>,
    ) -> Result<BlsKernels, GpuError> {
        let f = |module: &Arc<CudaModule>, name: &str| {
            module
                .load_function(name)
                .map_err(|e| GpuError::Driver(format!("cuModuleGetFunction {name}: {e}")))
        };
        Ok(BlsKernels {
            rlc_leaves: f(verify, "bls_rlc_leaves")?,
            rlc_halves: f(verify, "bls_rlc_halves")?,
            tree_level: f(verify, "bls_tree_level")?,
            check_nodes: f(verify, "bls_check_nodes")?,
            pairing_products: f(pairing, "bls_pairing_products")?,
        })
    }
}

pub(crate) struct BlsBuffers {
    host_in: PinnedBuffer,
    host_out: PinnedBuffer,
    device: DeviceBuffer,
}

impl BlsBuffers {
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> BlsBuffers {
        BlsBuffers {
            host_in: PinnedBuffer::new(ctx),
            host_out: PinnedBuffer::new(ctx),
            device: DeviceBuffer::new(ctx),
        }
    }
}

fn align(v: usize) -> usize {
    v.div_ceil(256) * 256
}

fn grid(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((n as u32).div_ceil(THREADS), 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

static PUBLIC_KEY_CACHE: LazyLock<Mutex<HashMap<[u8; 96], G2Affine>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// `cpu::g2_decompress_one` behind a cache of successful decodings, as the CPU path and
/// the replica do (node keys recur every round; decoding one costs about a pairing).
fn decode_public_key(bytes: &[u8; 96]) -> Result<G2Affine, DecodeError> {
    let cached = PUBLIC_KEY_CACHE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(bytes)
        .copied();
    if let Some(key) = cached {
        return Ok(key);
    }
    let key = cpu::g2_decompress_one(bytes)?;
    let mut cache = PUBLIC_KEY_CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if cache.len() >= PUBLIC_KEY_CACHE_MAX {
        cache.clear();
    }
    cache.insert(*bytes, key);
    Ok(key)
}

/// A decodable item: its index in the batch, its points and its message point.
struct Candidate {
    index: usize,
    signature: G1Affine,
    public_key: G2Affine,
    /// H(m), uncompressed (`G1Affine::to_uncompressed`'s encoding).
    message: [u8; 96],
}

/// `cpu::hash_message_to_g1(scheme, message).to_uncompressed()`, computed by blst's
/// `hash_to_g1` (RFC 9380 `hash_to_curve`, expand_message_xmd with SHA-256, the scheme's
/// tag, no augmentation): the same point, several times faster than ic_bls12_381's.
pub(crate) fn hash_to_g1_uncompressed(scheme: BlsScheme, message: &[u8]) -> [u8; 96] {
    let dst = scheme.dst();
    let mut point = blst::blst_p1::default();
    let mut out = [0u8; 96];
    // SAFETY: blst reads `message.len()` bytes of message and `dst.len()` of tag (no
    // augmentation: null with length 0) and writes one blst_p1; serialize writes 96 bytes.
    unsafe {
        blst::blst_hash_to_g1(
            &mut point,
            message.as_ptr(),
            message.len(),
            dst.as_ptr(),
            dst.len(),
            std::ptr::null(),
            0,
        );
        blst::blst_p1_serialize(out.as_mut_ptr(), &point);
    }
    out
}

/// Seconds spent in each phase of the last call (`GPU_CRYPTO_BLS_PROFILE=1` prints them).
#[derive(Debug, Clone, Copy, Default)]
struct Profile {
    decode_hash: f64,
    stage: f64,
    combine: f64,
    bisect: f64,
}

/// One verdict per item, in order. Identical to `cpu::bls_verify_batch` (same decoding,
/// same message hashing, exact per-item rejections).
pub(crate) fn verify_batch(
    gpu: &GpuBackend,
    w: &mut Worker,
    items: &[BlsItem<'_>],
    strategy: BlsGpuStrategy,
) -> Result<Vec<Result<(), VerifyError>>, GpuError> {
    let start = Instant::now();
    let mut profile = Profile::default();
    let signatures: Vec<[u8; 48]> = items.iter().map(|i| *i.signature).collect();

    // Messages by what is hashed: (scheme, message), each hashed once.
    let mut group_of: HashMap<(BlsScheme, &[u8]), usize> = HashMap::new();
    let mut messages: Vec<(BlsScheme, &[u8])> = Vec::new();
    let groups: Vec<usize> = items
        .iter()
        .map(|item| {
            let key = (item.scheme, item.message);
            *group_of.entry(key).or_insert_with(|| {
                messages.push(key);
                messages.len() - 1
            })
        })
        .collect();

    // The GPU decompresses the signatures while the CPU decodes keys and hashes messages.
    let (decoded_signatures, (public_keys, hashes)) = rayon::join(
        || decompress::run(gpu, w, &signatures),
        || {
            rayon::join(
                || {
                    items
                        .par_iter()
                        .with_min_len(16)
                        .map(|i| decode_public_key(i.public_key))
                        .collect::<Vec<_>>()
                },
                || {
                    messages
                        .par_iter()
                        .with_min_len(4)
                        .map(|(scheme, message)| hash_to_g1_uncompressed(*scheme, message))
                        .collect::<Vec<_>>()
                },
            )
        },
    );
    let decoded_signatures = decoded_signatures?;
    if decoded_signatures.len() != items.len() {
        return Err(GpuError::BadOutput(format!(
            "{} decompressed signatures for {} items",
            decoded_signatures.len(),
            items.len()
        )));
    }

    // Signature errors first, then key errors: the CPU path's precedence.
    let mut verdicts: Vec<Result<(), VerifyError>> = Vec::with_capacity(items.len());
    let mut candidates = Vec::new();
    for (index, ((sig, pk), group)) in decoded_signatures
        .into_iter()
        .zip(public_keys)
        .zip(groups)
        .enumerate()
    {
        match (sig, pk) {
            (Err(e), _) => verdicts.push(Err(VerifyError::Signature(e))),
            (Ok(_), Err(e)) => verdicts.push(Err(VerifyError::PublicKey(e))),
            (Ok(signature), Ok(public_key)) => {
                let message = *hashes.get(group).ok_or_else(|| {
                    GpuError::BadOutput("internal: message group out of range".into())
                })?;
                verdicts.push(Ok(()));
                candidates.push(Candidate {
                    index,
                    signature,
                    public_key,
                    message,
                });
            }
        }
    }
    profile.decode_hash = start.elapsed().as_secs_f64();
    if candidates.is_empty() {
        return Ok(verdicts);
    }

    let valid = match strategy {
        BlsGpuStrategy::RandomCombination | BlsGpuStrategy::RandomCombinationSplit => {
            match random_scalars(candidates.len()) {
                Some(scalars) => {
                    let split = strategy == BlsGpuStrategy::RandomCombinationSplit;
                    combination_verdicts(gpu, w, &candidates, &scalars, split, &mut profile)?
                }
                None => {
                    tracing::warn!(
                        items = candidates.len(),
                        "OS randomness unavailable: no random combination; checking each item exactly on the GPU"
                    );
                    per_item_verdicts(gpu, w, &candidates)?
                }
            }
        }
        BlsGpuStrategy::PerItem => per_item_verdicts(gpu, w, &candidates)?,
    };
    for (c, ok) in candidates.iter().zip(valid) {
        if let Some(v) = verdicts.get_mut(c.index) {
            *v = if ok {
                Ok(())
            } else {
                Err(VerifyError::Invalid)
            };
        }
    }
    if std::env::var_os("GPU_CRYPTO_BLS_PROFILE").is_some() {
        eprintln!(
            "bls profile: {} items: decode+hash {:.2} ms, stage {:.2} ms, combine {:.2} ms, bisect {:.2} ms",
            items.len(),
            profile.decode_hash * 1e3,
            profile.stage * 1e3,
            profile.combine * 1e3,
            profile.bisect * 1e3
        );
    }
    Ok(verdicts)
}

/// Independent non-zero 128-bit scalars from ChaCha20 seeded by the OS (a zero scalar
/// would drop its item from every check); `None` when the OS has no randomness to give.
fn random_scalars(n: usize) -> Option<Vec<[u8; RANDOM_BYTES]>> {
    let mut rng = ChaCha20Rng::from_rng(rand::rngs::OsRng).ok()?;
    Some(
        (0..n)
            .map(|_| {
                loop {
                    let r: u128 = rng.r#gen();
                    if r != 0 {
                        break r.to_le_bytes();
                    }
                }
            })
            .collect(),
    )
}

/// Sizes of the combination tree's levels, leaves first, root last.
fn tree_levels(n: usize) -> Vec<usize> {
    let mut levels = vec![n];
    let mut len = n;
    while len > 1 {
        len = len.div_ceil(2);
        levels.push(len);
    }
    levels
}

/// Where the combination's data lives in the worker's device buffer.
struct Layout {
    items: usize,
    neg_g2: usize,
    f: usize,
    s: usize,
    nodes: usize,
    verdicts: usize,
    end: usize,
}

impl Layout {
    /// `n` items, `total_nodes` Fp12 tree nodes, `sum_nodes` G1 sums (0 when split).
    fn new(n: usize, total_nodes: usize, sum_nodes: usize) -> Layout {
        let items = 0;
        let neg_g2 = ITEM_BYTES * n;
        let f = align(neg_g2 + G2_BYTES);
        let s = align(f + FP12_BYTES * total_nodes);
        let nodes = align(s + G1_PROJ_BYTES * sum_nodes);
        let verdicts = align(nodes + 4 * (n + 1));
        let end = align(verdicts + n + 1);
        Layout {
            items,
            neg_g2,
            f,
            s,
            nodes,
            verdicts,
            end,
        }
    }
}

fn combination_verdicts(
    gpu: &GpuBackend,
    w: &mut Worker,
    candidates: &[Candidate],
    scalars: &[[u8; RANDOM_BYTES]],
    split: bool,
    profile: &mut Profile,
) -> Result<Vec<bool>, GpuError> {
    let t = Instant::now();
    let n = candidates.len();
    if u32::try_from(4 * n + 64).is_err() {
        return Err(GpuError::InputTooLarge(format!(
            "{n} signatures in one batch"
        )));
    }
    // Split: two leaves per item (message side, signature side), items on level 1.
    let item_level = usize::from(split);
    let levels = tree_levels(if split { 2 * n } else { n });
    let mut offsets = Vec::with_capacity(levels.len());
    let mut total = 0usize;
    for &len in &levels {
        offsets.push(total);
        total += len;
    }
    let layout = Layout::new(n, total, if split { 0 } else { total });
    let staged = layout.neg_g2 + G2_BYTES;
    w.bls.host_in.ensure(staged + 4 * (n + 1))?;
    w.bls.host_out.ensure(n + 1)?;
    w.bls.device.ensure(layout.end)?;

    {
        let host = w.bls.host_in.slice_mut(staged);
        let (records, neg_g2) = host.split_at_mut(layout.neg_g2);
        records
            .par_chunks_mut(ITEM_BYTES)
            .with_min_len(64)
            .zip(candidates.par_iter().zip(scalars.par_iter()))
            .for_each(|(out, (c, r))| {
                out[0..96].copy_from_slice(&c.signature.to_uncompressed());
                out[96..192].copy_from_slice(&c.message);
                out[192..384].copy_from_slice(&c.public_key.to_uncompressed());
                out[384..400].copy_from_slice(r);
            });
        neg_g2.copy_from_slice(&(-G2Affine::generator()).to_uncompressed());
    }
    profile.stage = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let stream = w.stream.clone();
    let base = w.bls.device.ptr();
    let at = |off: usize| base + off as u64;
    let d_f = |node: usize| at(layout.f + FP12_BYTES * node);
    // No sums of r s in the split form: the kernels take a null pointer.
    let d_s = |node: usize| {
        if split {
            0
        } else {
            at(layout.s + G1_PROJ_BYTES * node)
        }
    };
    gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;
    let k = &gpu.kernels.bls;
    // SAFETY: every device range lies inside `device` (Layout, ensured above) and every
    // host range inside the pinned buffers, untouched until the stream is synchronised
    // (in check_nodes). Kernel arguments match the kernels' signatures.
    unsafe {
        let cu = stream.cu_stream();
        result::memcpy_htod_async(at(layout.items), w.bls.host_in.slice(staged), cu)
            .map_err(driver("upload items"))?;
        let n32 = n as u32;
        let (d_items, d_f0, d_s0) = (at(layout.items), d_f(0), d_s(0));
        if split {
            let d_neg_g2 = at(layout.neg_g2);
            stream
                .launch_builder(&k.rlc_halves)
                .arg(&d_items)
                .arg(&n32)
                .arg(&d_neg_g2)
                .arg(&d_f0)
                .launch(grid(2 * n))
                .map_err(driver("launch bls_rlc_halves"))?;
        } else {
            stream
                .launch_builder(&k.rlc_leaves)
                .arg(&d_items)
                .arg(&n32)
                .arg(&d_f0)
                .arg(&d_s0)
                .launch(grid(n))
                .map_err(driver("launch bls_rlc_leaves"))?;
        }
        for (level, &len) in levels.iter().enumerate().take(levels.len() - 1) {
            let (f_in, s_in) = (d_f(offsets[level]), d_s(offsets[level]));
            let (f_out, s_out) = (d_f(offsets[level + 1]), d_s(offsets[level + 1]));
            let len32 = len as u32;
            stream
                .launch_builder(&k.tree_level)
                .arg(&f_in)
                .arg(&s_in)
                .arg(&len32)
                .arg(&f_out)
                .arg(&s_out)
                .launch(grid(len.div_ceil(2)))
                .map_err(driver("launch bls_tree_level"))?;
        }
    }
    let root = total - 1;
    let root_ok = check_nodes(gpu, w, &layout, staged, split, &[root])?;
    profile.combine = t.elapsed().as_secs_f64();
    if root_ok.first() == Some(&true) {
        return Ok(vec![true; n]);
    }

    let t = Instant::now();
    let verdict = bisect(&levels, &offsets, item_level, n, LEAF_DIRECT_MAX, |nodes| {
        check_nodes(gpu, w, &layout, staged, split, nodes)
    })?;
    profile.bisect = t.elapsed().as_secs_f64();
    Ok(verdict)
}

/// Per-item verdicts under a failing root. `levels`/`offsets`: the tree's level sizes and
/// their flat offsets; items sit on `item_level`, node i of level l covers items
/// [i << d, (i + 1) << d) clipped to n with d = l - item_level (each level pairs 2j and
/// 2j + 1). `check(nodes)` decides flat tree nodes (true: the node's combination holds).
/// Once at most `leaf_direct_max` items lie under the failing nodes they are checked
/// directly (one launch); before that the failing nodes are split one level at a time.
fn bisect(
    levels: &[usize],
    offsets: &[usize],
    item_level: usize,
    n: usize,
    leaf_direct_max: usize,
    mut check: impl FnMut(&[usize]) -> Result<Vec<bool>, GpuError>,
) -> Result<Vec<bool>, GpuError> {
    let mut checked = |nodes: &[usize]| {
        let ok = check(nodes)?;
        if ok.len() != nodes.len() {
            return Err(GpuError::BadOutput(format!(
                "{} verdicts for {} nodes",
                ok.len(),
                nodes.len()
            )));
        }
        Ok(ok)
    };
    let offset = |level: usize| {
        offsets
            .get(level)
            .copied()
            .ok_or_else(|| GpuError::BadOutput("internal: tree level out of range".into()))
    };
    let mut verdict = vec![true; n];
    let mut level = levels.len().saturating_sub(1);
    let mut failing: Vec<usize> = vec![0];
    loop {
        let d = level.saturating_sub(item_level);
        let items_under = |i: usize| (i << d)..((i + 1) << d).min(n);
        if level <= item_level {
            for &i in &failing {
                if let Some(v) = verdict.get_mut(i) {
                    *v = false;
                }
            }
            return Ok(verdict);
        }
        let count: usize = failing.iter().map(|&i| items_under(i).len()).sum();
        if count <= leaf_direct_max {
            let items: Vec<usize> = failing.iter().flat_map(|&i| items_under(i)).collect();
            let base = offset(item_level)?;
            let nodes: Vec<usize> = items.iter().map(|&l| base + l).collect();
            let ok = checked(&nodes)?;
            for (item, ok) in items.into_iter().zip(ok) {
                if let Some(v) = verdict.get_mut(item) {
                    *v = ok;
                }
            }
            return Ok(verdict);
        }
        let child_len = levels.get(level - 1).copied().unwrap_or(0);
        let mut next = Vec::new();
        let mut pairs = Vec::new();
        for &i in &failing {
            if 2 * i + 1 < child_len {
                pairs.push(2 * i);
                pairs.push(2 * i + 1);
            } else {
                // A lone child is its parent carried up: it fails the same check.
                next.push(2 * i);
            }
        }
        let base = offset(level - 1)?;
        let nodes: Vec<usize> = pairs.iter().map(|&c| base + c).collect();
        let ok = checked(&nodes)?;
        next.extend(
            pairs
                .into_iter()
                .zip(ok)
                .filter(|(_, ok)| !ok)
                .map(|(c, _)| c),
        );
        next.sort_unstable();
        failing = next;
        level -= 1;
    }
}

/// Runs `bls_check_nodes` on `nodes` (flat tree indices) and waits for the verdicts.
fn check_nodes(
    gpu: &GpuBackend,
    w: &mut Worker,
    layout: &Layout,
    staged: usize,
    split: bool,
    nodes: &[usize],
) -> Result<Vec<bool>, GpuError> {
    let count = nodes.len();
    if count == 0 {
        return Ok(Vec::new());
    }
    let node_bytes = 4 * count;
    {
        let host = w.bls.host_in.slice_mut(staged + node_bytes);
        for (out, &node) in host[staged..].chunks_exact_mut(4).zip(nodes) {
            out.copy_from_slice(&(node as u32).to_le_bytes());
        }
    }
    let stream = w.stream.clone();
    let base = w.bls.device.ptr();
    let (d_f, d_s, d_nodes, d_neg_g2, d_verdicts) = (
        base + layout.f as u64,
        if split { 0 } else { base + layout.s as u64 },
        base + layout.nodes as u64,
        base + layout.neg_g2 as u64,
        base + layout.verdicts as u64,
    );
    let count32 = count as u32;
    // SAFETY: as in combination_verdicts; `count` is at most n + 1, the size of the node
    // and verdict areas. The stream is synchronised before the host buffers are read.
    unsafe {
        let cu = stream.cu_stream();
        result::memcpy_htod_async(
            d_nodes,
            &w.bls.host_in.slice(staged + node_bytes)[staged..],
            cu,
        )
        .map_err(driver("upload nodes"))?;
        result::memset_d8_async(d_verdicts, VERDICT_POISON, count, cu)
            .map_err(driver("poison verdicts"))?;
        stream
            .launch_builder(&gpu.kernels.bls.check_nodes)
            .arg(&d_f)
            .arg(&d_s)
            .arg(&d_nodes)
            .arg(&count32)
            .arg(&d_neg_g2)
            .arg(&d_verdicts)
            .launch(grid(count))
            .map_err(driver("launch bls_check_nodes"))?;
        result::memcpy_dtoh_async(w.bls.host_out.slice_mut(count), d_verdicts, cu)
            .map_err(driver("download verdicts"))?;
    }
    stream.synchronize().map_err(driver("bls_check_nodes"))?;
    w.bls
        .host_out
        .slice(count)
        .iter()
        .map(|&v| match v {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(GpuError::BadOutput(format!(
                "verdict byte {other:#04x} (unwritten or unknown)"
            ))),
        })
        .collect()
}

/// The exact check of every candidate: `e(sig, -g2) * e(H(m), pk) == 1` on the GPU.
fn per_item_verdicts(
    gpu: &GpuBackend,
    w: &mut Worker,
    candidates: &[Candidate],
) -> Result<Vec<bool>, GpuError> {
    let neg_g2 = -G2Affine::generator();
    let mut pairs: Vec<(G1Affine, G2Affine)> = Vec::with_capacity(2 * candidates.len());
    for c in candidates {
        let message =
            Option::<G1Affine>::from(G1Affine::from_uncompressed_unchecked(&c.message))
                .ok_or_else(|| GpuError::BadOutput("internal: hash_to_g1 gave no point".into()))?;
        pairs.push((c.signature, neg_g2));
        pairs.push((message, c.public_key));
    }
    let starts: Vec<u32> = (0..=candidates.len()).map(|i| 2 * i as u32).collect();
    let one = Gt::identity().to_bytes();
    Ok(pairing_products_raw(gpu, w, &pairs, &starts)?
        .into_iter()
        .map(|gt| gt == one)
        .collect())
}

/// `prod e(P, Q)` over each group, as `Gt::to_bytes`.
pub(crate) fn pairing_products(
    gpu: &GpuBackend,
    w: &mut Worker,
    groups: &[&[(G1Affine, G2Affine)]],
) -> Result<Vec<[u8; GT_BYTES]>, GpuError> {
    let pairs: Vec<(G1Affine, G2Affine)> = groups.iter().flat_map(|g| g.iter().copied()).collect();
    let mut starts = Vec::with_capacity(groups.len() + 1);
    let mut at = 0usize;
    starts.push(0u32);
    for g in groups {
        at += g.len();
        starts.push(
            u32::try_from(at)
                .map_err(|_| GpuError::InputTooLarge(format!("{at} pairs in one call")))?,
        );
    }
    pairing_products_raw(gpu, w, &pairs, &starts)
}

fn pairing_products_raw(
    gpu: &GpuBackend,
    w: &mut Worker,
    pairs: &[(G1Affine, G2Affine)],
    starts: &[u32],
) -> Result<Vec<[u8; GT_BYTES]>, GpuError> {
    let groups = starts.len().saturating_sub(1);
    if groups == 0 {
        return Ok(Vec::new());
    }
    let pair_bytes = PAIR_BYTES * pairs.len();
    let starts_off = align(pair_bytes);
    let in_bytes = starts_off + 4 * starts.len();
    let out_off = align(in_bytes);
    let out_bytes = GT_BYTES * groups;
    w.bls.host_in.ensure(in_bytes)?;
    w.bls.host_out.ensure(out_bytes)?;
    w.bls.device.ensure(out_off + out_bytes)?;
    {
        let host = w.bls.host_in.slice_mut(in_bytes);
        let (records, rest) = host.split_at_mut(starts_off);
        records[..pair_bytes]
            .par_chunks_mut(PAIR_BYTES)
            .with_min_len(64)
            .zip(pairs.par_iter())
            .for_each(|(out, (p, q))| {
                out[..96].copy_from_slice(&p.to_uncompressed());
                out[96..].copy_from_slice(&q.to_uncompressed());
            });
        for (out, s) in rest.chunks_exact_mut(4).zip(starts) {
            out.copy_from_slice(&s.to_le_bytes());
        }
    }
    let stream = w.stream.clone();
    let base = w.bls.device.ptr();
    let (d_pairs, d_starts, d_out) = (base, base + starts_off as u64, base + out_off as u64);
    let groups32 = groups as u32;
    gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;
    // SAFETY: device ranges inside `device`, host ranges inside the pinned buffers, which
    // stay untouched until the stream is synchronised below.
    unsafe {
        let cu = stream.cu_stream();
        result::memcpy_htod_async(d_pairs, w.bls.host_in.slice(in_bytes), cu)
            .map_err(driver("upload pairs"))?;
        // Poison: 0xff bytes are no canonical encoding, so an unwritten Gt is caught.
        result::memset_d8_async(d_out, 0xff, out_bytes, cu).map_err(driver("poison Gt"))?;
        stream
            .launch_builder(&gpu.kernels.bls.pairing_products)
            .arg(&d_pairs)
            .arg(&d_starts)
            .arg(&groups32)
            .arg(&d_out)
            .launch(grid(groups))
            .map_err(driver("launch bls_pairing_products"))?;
        result::memcpy_dtoh_async(w.bls.host_out.slice_mut(out_bytes), d_out, cu)
            .map_err(driver("download Gt"))?;
    }
    stream
        .synchronize()
        .map_err(driver("bls_pairing_products"))?;
    w.bls
        .host_out
        .slice(out_bytes)
        .chunks_exact(GT_BYTES)
        .map(|c| {
            let gt: [u8; GT_BYTES] = c
                .try_into()
                .map_err(|_| GpuError::BadOutput("short Gt".into()))?;
            // Every coefficient is canonical (< p, so its top byte is below 0x1b).
            if gt.chunks_exact(48).any(|fp| fp[0] > 0x1a) {
                return Err(GpuError::BadOutput(
                    "Gt coefficient not canonical (unwritten?)".into(),
                ));
            }
            Ok(gt)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_levels_halve_up_to_one_root() {
        assert_eq!(tree_levels(1), vec![1]);
        assert_eq!(tree_levels(2), vec![2, 1]);
        assert_eq!(tree_levels(5), vec![5, 3, 2, 1]);
        assert_eq!(tree_levels(4096).len(), 13);
        for n in 1..300 {
            let l = tree_levels(n);
            assert_eq!(l.last(), Some(&1));
            // Node i of level k covers leaves [i << k, (i + 1) << k) clipped to n, and
            // the nodes of a level cover every leaf exactly once.
            for (k, &len) in l.iter().enumerate() {
                let covered: usize = (0..len).map(|i| ((i + 1) << k).min(n) - (i << k)).sum();
                assert_eq!(covered, n, "n = {n}, level {k}");
            }
        }
    }

    /// The bisection against a tree whose nodes fail exactly when a bad item lies under
    /// them (what the GPU's combination check decides), for both tree shapes and with the
    /// direct-check threshold low enough to force splitting level by level.
    #[test]
    fn bisection_names_exactly_the_bad_items() {
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        for _ in 0..300 {
            let n = rng.gen_range(1..300usize);
            let split = rng.r#gen::<bool>();
            let item_level = usize::from(split);
            let levels = tree_levels(if split { 2 * n } else { n });
            let mut offsets = Vec::new();
            let mut total = 0;
            for &len in &levels {
                offsets.push(total);
                total += len;
            }
            let bad_count = match rng.gen_range(0..4) {
                0 => 1,
                1 => n,
                _ => rng.gen_range(1..=n),
            };
            let mut bad = vec![false; n];
            for _ in 0..bad_count {
                bad[rng.gen_range(0..n)] = true;
            }
            let node_fails = |flat: usize| {
                let level = offsets.iter().rposition(|&o| o <= flat).unwrap();
                let i = flat - offsets[level];
                let d = level - item_level.min(level);
                if level < item_level {
                    return bad[i / 2];
                }
                ((i << d)..((i + 1) << d).min(n)).any(|item| bad[item])
            };
            let threshold = [1usize, 2, 5, 1 << 16][rng.gen_range(0..4)];
            let mut calls = 0;
            let got = bisect(&levels, &offsets, item_level, n, threshold, |nodes| {
                calls += 1;
                for &node in nodes {
                    let level = offsets.iter().rposition(|&o| o <= node).unwrap();
                    assert!(level >= item_level, "checked a node below the items");
                }
                Ok(nodes.iter().map(|&node| !node_fails(node)).collect())
            })
            .unwrap();
            let want: Vec<bool> = bad.iter().map(|b| !b).collect();
            assert_eq!(got, want, "n {n}, split {split}, threshold {threshold}");
            assert!(
                calls <= levels.len(),
                "{calls} launches for {} levels",
                levels.len()
            );
        }
        // A check that answers with the wrong count is an error, not a verdict.
        let levels = tree_levels(8);
        let offsets = [0, 8, 12, 14];
        assert!(bisect(&levels, &offsets, 0, 8, 1 << 16, |_| Ok(vec![true])).is_err());
    }

    #[test]
    fn layout_areas_do_not_overlap() {
        for n in [1usize, 2, 3, 100, 4096, 65537] {
            let total: usize = tree_levels(n).iter().sum();
            let l = Layout::new(n, total, total);
            assert!(l.items + ITEM_BYTES * n <= l.neg_g2);
            assert!(l.neg_g2 + G2_BYTES <= l.f);
            assert!(l.f + FP12_BYTES * total <= l.s);
            assert!(l.s + G1_PROJ_BYTES * total <= l.nodes);
            assert!(l.nodes + 4 * (n + 1) <= l.verdicts);
            assert!(l.verdicts + n < l.end);
            assert_eq!(l.f % 256, 0);
            assert_eq!(l.s % 256, 0);
        }
    }

    #[test]
    fn blst_hash_to_g1_equals_the_cpu_path() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        for scheme in BlsScheme::ALL {
            for len in [0usize, 1, 31, 32, 33, 100, 1000] {
                let message: Vec<u8> = (0..len).map(|_| rng.r#gen()).collect();
                assert_eq!(
                    hash_to_g1_uncompressed(scheme, &message),
                    cpu::hash_message_to_g1(scheme, &message).to_uncompressed(),
                    "{scheme:?}, {len} bytes"
                );
            }
        }
    }

    #[test]
    fn random_scalars_are_nonzero_and_distinct() {
        let s = random_scalars(1000).expect("OS randomness");
        assert_eq!(s.len(), 1000);
        assert!(s.iter().all(|r| r.iter().any(|&b| b != 0)));
        let distinct: std::collections::HashSet<_> = s.iter().collect();
        assert_eq!(distinct.len(), 1000);
    }
}
