//! Host side of BLS signature batch verification on the GPU (signatures in G1, public
//! keys in G2, as the IC uses them); docs/bls.md has the whole story.
//!
//! * Decoding: signatures with the GPU decompression kernel (bit-identical accept set and
//!   error codes to the CPU path), the messages hashed to G1 with the GPU's RFC 9380
//!   `hash_to_g1` kernel on a second stream (the same points as the CPU path's
//!   `hash_message_to_g1`, tested), both at once, while the CPU decodes the public keys
//!   (`cpu::g2_decompress_one` behind a cache).
//! * Verification: a random linear combination with independent 128-bit scalars from a
//!   ChaCha20 generator seeded by the OS (as the CPU path), with one, two or four GPU
//!   threads per item (kernels/ops/bls_verify.cu); the combination's root is finished on
//!   the host with blst's final exponentiation. A failing combination is bisected on the
//!   GPU down to single items, whose check is exact, so every verdict is per item:
//!   "invalid" is exact, "valid" holds except with probability at most 2^-128 per
//!   combination.

use super::device::Device;
use super::error::GpuError;
use super::marks::StreamMarks;
use super::memory::{align_device, driver};
use super::worker::Worker;
use super::{decompress, hash_to_g1};
use crate::cpu;
use cudarc::driver::{CudaStream, LaunchConfig, PushKernelArg, result};
use gpu_crypto_api::{BlsItem, BlsScheme};
use gpu_crypto_api::{DecodeError, VerifyError};
use ic_bls12_381::{G1Affine, G2Affine, Gt};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, RwLock};
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
/// With several threads per item the host finishes the tree from the first level of at
/// most this many nodes (one download of at most 288 KiB, products on all cores).
const HOST_TREE_MAX_NODES: usize = 512;
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
    /// The same with four threads per item: each of the two Miller loops cut in two
    /// (kernels/pairing/miller_loop.cuh), a shorter chain again at 4n Miller-loop halves.
    RandomCombinationQuarters,
    /// Exact check per item: a two-term Miller loop and a final exponentiation each.
    PerItem,
}

/// Batches of at most this many items use the two-threads-per-item combination in
/// `GpuBackend::bls_verify_batch` (docs/bls.md).
pub(crate) const SPLIT_MAX_ITEMS: usize = 16384;
/// Batches of at most this many items use four threads per item: 4n threads at 255
/// registers still fit the H200 at once (132 SMs x 8 warps of 32), so each item's chain
/// is shorter and nothing waits for a second wave.
pub(crate) const QUARTERS_MAX_ITEMS: usize = 8192;

/// `GpuBackend::bls_verify_batch`'s choice: more threads per item while the batch leaves
/// the GPU idle (latency), fewer above.
pub(crate) fn default_strategy(items: usize) -> BlsGpuStrategy {
    if items <= QUARTERS_MAX_ITEMS {
        BlsGpuStrategy::RandomCombinationQuarters
    } else if items <= SPLIT_MAX_ITEMS {
        BlsGpuStrategy::RandomCombinationSplit
    } else {
        BlsGpuStrategy::RandomCombination
    }
}

fn grid(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((n as u32).div_ceil(THREADS), 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

static PUBLIC_KEY_CACHE: LazyLock<RwLock<HashMap<[u8; 96], G2Affine>>> =
    LazyLock::new(|| RwLock::new(HashMap::new()));

/// Every item's public key by `cpu::g2_decompress_one`, behind a cache of successful
/// decodings as the CPU path and the replica keep (node keys recur every round; decoding
/// one costs about a pairing): lookups in parallel under one read lock, the misses decoded
/// in parallel and cached under one write lock (a lock per key cost about 4 ms at 4,096
/// items on 16 threads).
fn decode_public_keys(items: &[BlsItem<'_>]) -> Vec<Result<G2Affine, DecodeError>> {
    let cached: Vec<Option<G2Affine>> = {
        let cache = PUBLIC_KEY_CACHE.read().unwrap_or_else(|p| p.into_inner());
        items
            .par_iter()
            .with_min_len(64)
            .map(|i| cache.get(i.public_key).copied())
            .collect()
    };
    let decoded: Vec<(&[u8; 96], Result<G2Affine, DecodeError>)> = items
        .par_iter()
        .zip(cached.par_iter())
        .filter(|(_, c)| c.is_none())
        .map(|(i, _)| (i.public_key, cpu::g2_decompress_one(i.public_key)))
        .collect();
    if decoded.iter().any(|(_, r)| r.is_ok()) {
        let mut cache = PUBLIC_KEY_CACHE.write().unwrap_or_else(|p| p.into_inner());
        for (bytes, r) in &decoded {
            if let Ok(key) = r {
                if cache.len() >= PUBLIC_KEY_CACHE_MAX {
                    cache.clear();
                }
                cache.insert(**bytes, *key);
            }
        }
    }
    // The misses in item order: each None takes the next decoded result.
    let mut decoded = decoded.into_iter().map(|(_, r)| r);
    items
        .iter()
        .zip(cached)
        .map(|(i, c)| match c {
            Some(key) => Ok(key),
            None => decoded
                .next()
                .unwrap_or_else(|| cpu::g2_decompress_one(i.public_key)),
        })
        .collect()
}

/// A decodable item: its index in the batch, its points and its message point.
struct Candidate {
    index: usize,
    signature: G1Affine,
    public_key: G2Affine,
    /// H(m), uncompressed (`G1Affine::to_uncompressed`'s encoding).
    message: [u8; 96],
}

/// `GPU_CRYPTO_BLS_PROFILE`, read once per process (the hot path asks on every call).
static PROFILE: std::sync::LazyLock<Option<std::ffi::OsString>> =
    std::sync::LazyLock::new(|| std::env::var_os("GPU_CRYPTO_BLS_PROFILE"));

fn profiling() -> bool {
    PROFILE.is_some()
}

/// `GPU_CRYPTO_BLS_PROFILE=2`: also decide every combination's root on the GPU (timed,
/// and compared with the host's decision): the tests' cross-check, not for timing runs.
fn cross_check_root() -> bool {
    PROFILE.as_deref() == Some(std::ffi::OsStr::new("2"))
}

/// Seconds spent in each phase of the last call (`GPU_CRYPTO_BLS_PROFILE=1` prints them).
#[derive(Debug, Clone, Default)]
struct Profile {
    decode_hash: f64,
    /// Inside decode_hash: when the GPU's signature decompression and its hashing (two
    /// streams, at once) were done, and the CPU's key decoding (alongside).
    signatures: f64,
    hash: f64,
    keys: f64,
    /// Inside decode_hash, before the GPU starts: grouping the items by message.
    group: f64,
    stage: f64,
    combine: f64,
    bisect: f64,
    /// GPU time of the combination's steps (`StreamMarks::report`).
    kernels: String,
}

/// One verdict per item, in order. Identical to `cpu::bls_verify_batch` (same decoding,
/// same message hashing, exact per-item rejections).
pub(crate) fn verify_batch(
    gpu: &Device,
    w: &mut Worker,
    items: &[BlsItem<'_>],
    strategy: BlsGpuStrategy,
) -> Result<Vec<Result<(), VerifyError>>, GpuError> {
    let start = Instant::now();
    let mut profile = Profile::default();
    let messages = group_messages(items);
    profile.group = start.elapsed().as_secs_f64();
    let decoded = decode_and_hash(gpu, w, items, &messages.tagged, &mut profile)?;
    let (mut verdicts, candidates) = sort_candidates(decoded, &messages.groups)?;
    profile.decode_hash = start.elapsed().as_secs_f64();
    if candidates.is_empty() {
        return Ok(verdicts);
    }
    let valid = decide_candidates(gpu, w, &candidates, strategy, &mut profile)?;
    for (c, ok) in candidates.iter().zip(valid) {
        if let Some(v) = verdicts.get_mut(c.index) {
            *v = if ok {
                Ok(())
            } else {
                Err(VerifyError::Invalid)
            };
        }
    }
    if profiling() {
        print_profile(items.len(), &profile);
    }
    Ok(verdicts)
}

/// The batch's messages by what is hashed, (scheme, message), each hashed once.
struct MessageGroups<'a> {
    /// Each item's group.
    groups: Vec<usize>,
    /// (the scheme's tag, message) of each group, as the hash kernel takes them.
    tagged: Vec<(&'a [u8], &'a [u8])>,
}

fn group_messages<'a>(items: &[BlsItem<'a>]) -> MessageGroups<'a> {
    let mut group_of: HashMap<(BlsScheme, &[u8]), usize> = HashMap::new();
    let mut tagged: Vec<(&[u8], &[u8])> = Vec::new();
    let groups: Vec<usize> = items
        .iter()
        .map(|item| {
            *group_of
                .entry((item.scheme, item.message))
                .or_insert_with(|| {
                    tagged.push((item.scheme.dst(), item.message));
                    tagged.len() - 1
                })
        })
        .collect();
    MessageGroups { groups, tagged }
}

/// Every item's decoded signature and public key, and each message group's point.
struct Decoded {
    signatures: Vec<Result<G1Affine, DecodeError>>,
    public_keys: Vec<Result<G2Affine, DecodeError>>,
    /// H(m) of each group, uncompressed.
    hashes: Vec<[u8; 96]>,
}

/// The GPU decompresses the signatures and hashes the messages (two streams, at once)
/// while the CPU decodes the public keys (cached); the phases' times go into `profile`.
fn decode_and_hash(
    gpu: &Device,
    w: &mut Worker,
    items: &[BlsItem<'_>],
    tagged: &[(&[u8], &[u8])],
    profile: &mut Profile,
) -> Result<Decoded, GpuError> {
    let signatures: Vec<[u8; 48]> = items.iter().map(|i| *i.signature).collect();
    let (gpu_side, public_keys) = rayon::join(
        || {
            // The hash on its own stream, the decompression on the worker's: both at once.
            let t = Instant::now();
            let pending = hash_to_g1::enqueue(gpu, w, tagged)?;
            let signatures = decompress::run(gpu, w, &signatures);
            let t_sig = t.elapsed().as_secs_f64();
            let hashes = hash_to_g1::finish(w, pending, |enc, _| enc);
            let t_hash = t.elapsed().as_secs_f64();
            Ok::<_, GpuError>((signatures?, hashes?, t_sig, t_hash))
        },
        || {
            let t = Instant::now();
            let keys = decode_public_keys(items);
            (keys, t.elapsed().as_secs_f64())
        },
    );
    let (signatures, hashes, t_sig, t_hash) = gpu_side?;
    let (public_keys, t_keys) = public_keys;
    profile.signatures = t_sig;
    profile.hash = t_hash;
    profile.keys = t_keys;
    if signatures.len() != items.len() {
        return Err(GpuError::BadOutput(format!(
            "{} decompressed signatures for {} items",
            signatures.len(),
            items.len()
        )));
    }
    Ok(Decoded {
        signatures,
        public_keys,
        hashes,
    })
}

/// One verdict per item of a batch.
type Verdicts = Vec<Result<(), VerifyError>>;

/// The decoding verdicts (signature errors first, then key errors: the CPU path's
/// precedence; `Ok` for the decodable items, to be decided) and the decodable items.
fn sort_candidates(
    decoded: Decoded,
    groups: &[usize],
) -> Result<(Verdicts, Vec<Candidate>), GpuError> {
    let mut verdicts: Verdicts = Vec::with_capacity(groups.len());
    let mut candidates = Vec::new();
    for (index, ((sig, pk), &group)) in decoded
        .signatures
        .into_iter()
        .zip(decoded.public_keys)
        .zip(groups)
        .enumerate()
    {
        match (sig, pk) {
            (Err(e), _) => verdicts.push(Err(VerifyError::Signature(e))),
            (Ok(_), Err(e)) => verdicts.push(Err(VerifyError::PublicKey(e))),
            (Ok(signature), Ok(public_key)) => {
                let message = *decoded.hashes.get(group).ok_or_else(|| {
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
    Ok((verdicts, candidates))
}

/// Whether each candidate's signature holds, by `strategy` (the exact per-item check when
/// the OS gives no randomness for a combination).
fn decide_candidates(
    gpu: &Device,
    w: &mut Worker,
    candidates: &[Candidate],
    strategy: BlsGpuStrategy,
    profile: &mut Profile,
) -> Result<Vec<bool>, GpuError> {
    let leaves = match strategy {
        BlsGpuStrategy::RandomCombination => Leaves::One,
        BlsGpuStrategy::RandomCombinationSplit => Leaves::Two,
        BlsGpuStrategy::RandomCombinationQuarters => Leaves::Four,
        BlsGpuStrategy::PerItem => return per_item_verdicts(gpu, w, candidates),
    };
    match random_scalars(candidates.len()) {
        Some(scalars) => combination_verdicts(gpu, w, candidates, &scalars, leaves, profile),
        None => {
            tracing::warn!(
                items = candidates.len(),
                "OS randomness unavailable: no random combination; checking each item exactly on the GPU"
            );
            per_item_verdicts(gpu, w, candidates)
        }
    }
}

/// `GPU_CRYPTO_BLS_PROFILE`'s report of one call on standard error.
fn print_profile(items: usize, profile: &Profile) {
    eprintln!(
        "bls profile: {} items: decode+hash {:.2} ms (grouping {:.2} ms, then GPU: signatures done at {:.2} ms, hash at {:.2} ms; CPU keys {:.2} ms), stage {:.2} ms, combine {:.2} ms, bisect {:.2} ms",
        items,
        profile.decode_hash * 1e3,
        profile.group * 1e3,
        profile.signatures * 1e3,
        profile.hash * 1e3,
        profile.keys * 1e3,
        profile.stage * 1e3,
        profile.combine * 1e3,
        profile.bisect * 1e3
    );
    if !profile.kernels.is_empty() {
        eprintln!(
            "bls profile: {} items: combine on the GPU: {}",
            items, profile.kernels
        );
    }
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
        let f = align_device(neg_g2 + G2_BYTES);
        let s = align_device(f + FP12_BYTES * total_nodes);
        let nodes = align_device(s + G1_PROJ_BYTES * sum_nodes);
        let verdicts = align_device(nodes + 4 * (n + 1));
        let end = align_device(verdicts + n + 1);
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

/// Threads per item of the combination's leaves, and so the leaf kernel: `bls_rlc_leaves`,
/// `bls_rlc_halves` or `bls_rlc_quarters`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Leaves {
    One,
    Two,
    Four,
}

impl Leaves {
    fn threads_per_item(self) -> usize {
        match self {
            Leaves::One => 1,
            Leaves::Two => 2,
            Leaves::Four => 4,
        }
    }
}

/// The combination tree's shape: level sizes (leaves first, root last), each level's first
/// flat node, and the level the items sit on (log2 of the threads per item).
struct Tree {
    levels: Vec<usize>,
    offsets: Vec<usize>,
    total: usize,
    item_level: usize,
}

impl Tree {
    /// The tree of `n` items with `leaves`' threads per item: one leaf each, so with
    /// several threads per item the items sit on level log2(threads_per_item).
    fn new(n: usize, leaves: Leaves) -> Tree {
        let threads_per_item = leaves.threads_per_item();
        let levels = tree_levels(threads_per_item * n);
        let mut offsets = Vec::with_capacity(levels.len());
        let mut total = 0usize;
        for &len in &levels {
            offsets.push(total);
            total += len;
        }
        Tree {
            levels,
            offsets,
            total,
            item_level: threads_per_item.trailing_zeros() as usize,
        }
    }

    /// The level the GPU builds the tree up to. Several threads per item: the first level
    /// of at most HOST_TREE_MAX_NODES nodes (not below the items), whose product the host
    /// multiplies and decides (the top levels are one Fp12 product per launch, about 80 us
    /// each on one thread). The levels above are only needed when the bisection splits
    /// nodes (more than LEAF_DIRECT_MAX items): then the GPU builds them all.
    fn top(&self, split: bool, n: usize) -> usize {
        let root_level = self.levels.len() - 1;
        if split && n <= LEAF_DIRECT_MAX {
            self.levels
                .iter()
                .position(|&len| len <= HOST_TREE_MAX_NODES)
                .unwrap_or(root_level)
                .max(self.item_level)
        } else {
            root_level
        }
    }
}

/// One random combination on the worker: its tree, where it lives on the device, and the
/// stream its launches go to.
struct Combination<'a> {
    gpu: &'a Device,
    leaves: Leaves,
    n: usize,
    tree: Tree,
    layout: Layout,
    /// Bytes of the staged items and -g2 at the start of the pinned input.
    staged: usize,
    /// The level the GPU builds up to ([`Tree::top`]) and its size.
    top: usize,
    top_len: usize,
    stream: Arc<CudaStream>,
    /// The worker's BLS device buffer (sized for `layout`).
    base: u64,
}

impl Combination<'_> {
    /// Several threads per item: no sums of r s (the signature side is in f).
    fn split(&self) -> bool {
        self.leaves != Leaves::One
    }

    fn at(&self, off: usize) -> u64 {
        self.base + off as u64
    }

    /// Device address of the Fp12 tree node `node` (flat index).
    fn d_f(&self, node: usize) -> u64 {
        self.at(self.layout.f + FP12_BYTES * node)
    }

    /// Device address of the G1 sum of tree node `node`; no sums of r s in the split form:
    /// the kernels take a null pointer.
    fn d_s(&self, node: usize) -> u64 {
        if self.split() {
            0
        } else {
            self.at(self.layout.s + G1_PROJ_BYTES * node)
        }
    }

    /// Uploads the staged items, poisons the level the host reads, and launches the
    /// leaves' kernel.
    fn upload_and_leaves(&self, w: &Worker, marks: &mut StreamMarks) -> Result<(), GpuError> {
        let (stream, layout, n) = (&self.stream, &self.layout, self.n);
        let k = &self.gpu.kernels.bls;
        // SAFETY: every device range lies inside the worker's BLS device buffer (Layout,
        // ensured by `stage_combination`) and the upload reads the `staged` bytes of the
        // pinned input, which stays untouched until the stream is synchronised (in
        // check_nodes or top_check_on_host). The leaf kernels take (items, n, -g2, f) or
        // (items, n, f, s): u64 device pointers and a u32, as pushed here.
        unsafe {
            let cu = stream.cu_stream();
            result::memcpy_htod_async(self.at(layout.items), w.bls.host_in.slice(self.staged), cu)
                .map_err(driver("upload items"))?;
            // Poison: 0xff limbs are no canonical Fp element, so an unwritten node of the
            // level the host reads is caught.
            let top_node = self.d_f(self.tree.offsets[self.top]);
            result::memset_d8_async(top_node, 0xff, FP12_BYTES * self.top_len, cu)
                .map_err(driver("poison top level"))?;
            marks.mark(stream, "upload");
            let n32 = n as u32;
            let (d_items, d_f0, d_s0) = (self.at(layout.items), self.d_f(0), self.d_s(0));
            if self.split() {
                let (kernel, threads, what) = if self.leaves == Leaves::Four {
                    // Heads and tails of 32 leaves in alternate warps.
                    (
                        &k.rlc_quarters,
                        64 * (2 * n).div_ceil(32),
                        "launch bls_rlc_quarters",
                    )
                } else {
                    (&k.rlc_halves, 2 * n, "launch bls_rlc_halves")
                };
                let d_neg_g2 = self.at(layout.neg_g2);
                stream
                    .launch_builder(kernel)
                    .arg(&d_items)
                    .arg(&n32)
                    .arg(&d_neg_g2)
                    .arg(&d_f0)
                    .launch(grid(threads))
                    .map_err(driver(what))?;
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
            marks.mark(stream, "leaves");
        }
        Ok(())
    }

    /// One launch per level: node j of level + 1 from nodes 2j and 2j + 1 of level.
    fn launch_level(&self, level: usize) -> Result<(), GpuError> {
        let offsets = &self.tree.offsets;
        let len = self.tree.levels.get(level).copied().unwrap_or(0);
        let (f_in, s_in) = (self.d_f(offsets[level]), self.d_s(offsets[level]));
        let (f_out, s_out) = (self.d_f(offsets[level + 1]), self.d_s(offsets[level + 1]));
        let len32 = len as u32;
        // SAFETY: both levels lie inside the layout's tree area (offsets of `tree`, whose
        // `total` nodes Layout holds); bls_tree_level takes (f_in, s_in, u32 len, f_out,
        // s_out), as pushed. It reads only nodes written earlier on the same stream.
        unsafe {
            self.stream
                .launch_builder(&self.gpu.kernels.bls.tree_level)
                .arg(&f_in)
                .arg(&s_in)
                .arg(&len32)
                .arg(&f_out)
                .arg(&s_out)
                .launch(grid(len.div_ceil(2)))
                .map_err(driver("launch bls_tree_level"))?;
        }
        Ok(())
    }

    /// `bls_check_nodes` on flat tree nodes of this combination.
    fn check(&self, w: &mut Worker, nodes: &[usize]) -> Result<Vec<bool>, GpuError> {
        check_nodes(self.gpu, w, &self.layout, self.staged, self.split(), nodes)
    }

    /// Whether the whole combination holds; `profile.combine` is the time from `t` to the
    /// decision. Split: the product of the top level's nodes, finally exponentiated on the
    /// host (on one GPU thread that chain was most of the combination's latency, on the
    /// host, blst, it is a fraction of a millisecond), and with `cross_check_root` also on
    /// the GPU. Else the root checked on the GPU.
    fn root_holds(
        &self,
        w: &mut Worker,
        marks: &mut StreamMarks,
        t: Instant,
        profile: &mut Profile,
    ) -> Result<bool, GpuError> {
        let root = self.tree.total - 1;
        if !self.split() {
            let ok = self.check(w, &[root])?;
            marks.mark(&self.stream, "root check");
            profile.combine = t.elapsed().as_secs_f64();
            return Ok(ok.first() == Some(&true));
        }
        let top_nodes = self.d_f(self.tree.offsets[self.top]);
        let ok = top_check_on_host(w, &self.stream, top_nodes, self.top_len)?;
        profile.combine = t.elapsed().as_secs_f64();
        if cross_check_root() {
            // The same decision on the GPU (timed by the marks).
            marks.mark(
                &self.stream,
                "top level download and host product + final exponentiation",
            );
            for level in self.top..self.tree.levels.len() - 1 {
                self.launch_level(level)?;
            }
            let gpu_ok = self.check(w, &[root])?;
            marks.mark(&self.stream, "root check on the GPU (profiling only)");
            if gpu_ok.first() != Some(&ok) {
                return Err(GpuError::BadOutput(
                    "root check: host and GPU final exponentiations disagree".into(),
                ));
            }
        }
        Ok(ok)
    }
}

/// Sizes the worker's BLS buffers for the combination and stages each item's record
/// (signature, message point, public key, scalar) and -g2 in the pinned input.
fn stage_combination(
    w: &mut Worker,
    candidates: &[Candidate],
    scalars: &[[u8; RANDOM_BYTES]],
    layout: &Layout,
    top_len: usize,
) -> Result<usize, GpuError> {
    let n = candidates.len();
    let staged = layout.neg_g2 + G2_BYTES;
    w.bls.host_in.ensure(staged + 4 * (n + 1))?;
    w.bls.host_out.ensure((n + 1).max(FP12_BYTES * top_len))?;
    w.bls.device.ensure(layout.end)?;
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
    Ok(staged)
}

/// Per-item verdicts of the random combination with `scalars`: staged and uploaded, the
/// leaves and the tree built on the GPU, the root decided, and a failing root bisected.
fn combination_verdicts(
    gpu: &Device,
    w: &mut Worker,
    candidates: &[Candidate],
    scalars: &[[u8; RANDOM_BYTES]],
    leaves: Leaves,
    profile: &mut Profile,
) -> Result<Vec<bool>, GpuError> {
    let t = Instant::now();
    let n = candidates.len();
    if u32::try_from(4 * n + 64).is_err() {
        return Err(GpuError::InputTooLarge(format!(
            "{n} signatures in one batch"
        )));
    }
    let split = leaves != Leaves::One;
    let tree = Tree::new(n, leaves);
    let layout = Layout::new(n, tree.total, if split { 0 } else { tree.total });
    let top = tree.top(split, n);
    let top_len = tree.levels.get(top).copied().unwrap_or(1);
    let staged = stage_combination(w, candidates, scalars, &layout, top_len)?;
    profile.stage = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let c = Combination {
        gpu,
        leaves,
        n,
        tree,
        layout,
        staged,
        top,
        top_len,
        stream: w.stream.clone(),
        base: w.bls.device.ptr(),
    };
    gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;
    let mut marks = StreamMarks::new(profiling());
    marks.mark(&c.stream, "start");
    c.upload_and_leaves(w, &mut marks)?;
    for level in 0..top {
        c.launch_level(level)?;
    }
    marks.mark(&c.stream, "tree");
    let root_ok = c.root_holds(w, &mut marks, t, profile)?;
    profile.kernels = marks.report();
    if root_ok {
        return Ok(vec![true; n]);
    }

    let t = Instant::now();
    let tree = &c.tree;
    let verdict = bisect(
        &tree.levels,
        &tree.offsets,
        tree.item_level,
        n,
        LEAF_DIRECT_MAX,
        |nodes| c.check(w, nodes),
    )?;
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

/// A device Fp12 value (Montgomery form, R = 2^384, 12 x 32-bit little-endian limbs per
/// Fp, coefficients c0.c0.c0, c0.c0.c1, ..., c1.c2.c1) as blst's `blst_fp12`, which has the
/// same tower (u^2 = -1, v^3 = u + 1, w^2 = v), the same R and, on little-endian hosts, the
/// same bytes in 6 x 64-bit limbs. `None` when a coefficient is not below p (unwritten).
fn fp12_from_device(bytes: &[u8]) -> Option<blst::blst_fp12> {
    if bytes.len() != FP12_BYTES {
        return None;
    }
    let mut coefficients = bytes.chunks_exact(48).map(super::msm::fp_from_gpu);
    let mut fp = || coefficients.next().flatten();
    let mut fp2 = || Some(blst::blst_fp2 { fp: [fp()?, fp()?] });
    let mut fp6 = || {
        Some(blst::blst_fp6 {
            fp2: [fp2()?, fp2()?, fp2()?],
        })
    };
    Some(blst::blst_fp12 {
        fp6: [fp6()?, fp6()?],
    })
}

/// Whether `f`'s final exponentiation is one (blst's, which gives ic_bls12_381's Gt
/// values: unit test `blst_final_exponentiation_agrees_with_ic_bls12_381`).
fn final_exponentiation_is_one(f: &blst::blst_fp12) -> bool {
    let mut out = blst::blst_fp12::default();
    // SAFETY: blst reads one fp12 and writes one; both are plain structs of limbs.
    unsafe {
        blst::blst_final_exp(&mut out, f);
        blst::blst_fp12_is_one(&out)
    }
}

/// Downloads `count` consecutive tree nodes (Fp12) and decides their product on the host.
fn top_check_on_host(
    w: &mut Worker,
    stream: &Arc<CudaStream>,
    d_nodes: u64,
    count: usize,
) -> Result<bool, GpuError> {
    let bytes = FP12_BYTES * count;
    // SAFETY: the `count` nodes at `d_nodes` lie inside `device`; host_out holds `bytes`
    // (ensured by the caller) and is read only after the stream is synchronised.
    unsafe {
        result::memcpy_dtoh_async(w.bls.host_out.slice_mut(bytes), d_nodes, stream.cu_stream())
            .map_err(driver("download top level"))?;
    }
    stream.synchronize().map_err(driver("combination"))?;
    let nodes: Vec<blst::blst_fp12> = w
        .bls
        .host_out
        .slice(bytes)
        .par_chunks_exact(FP12_BYTES)
        .map(|c| {
            fp12_from_device(c).ok_or_else(|| {
                GpuError::BadOutput("tree node coefficient not canonical (unwritten?)".into())
            })
        })
        .collect::<Result<_, _>>()?;
    let product = nodes
        .into_par_iter()
        .reduce_with(|a, b| {
            let mut r = blst::blst_fp12::default();
            // SAFETY: blst reads two fp12 and writes one; plain structs of limbs.
            unsafe { blst::blst_fp12_mul(&mut r, &a, &b) };
            r
        })
        .ok_or_else(|| GpuError::BadOutput("internal: empty top level".into()))?;
    Ok(final_exponentiation_is_one(&product))
}

/// Runs `bls_check_nodes` on `nodes` (flat tree indices) and waits for the verdicts.
fn check_nodes(
    gpu: &Device,
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
    gpu: &Device,
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
    gpu: &Device,
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
    gpu: &Device,
    w: &mut Worker,
    pairs: &[(G1Affine, G2Affine)],
    starts: &[u32],
) -> Result<Vec<[u8; GT_BYTES]>, GpuError> {
    let groups = starts.len().saturating_sub(1);
    if groups == 0 {
        return Ok(Vec::new());
    }
    let pair_bytes = PAIR_BYTES * pairs.len();
    let starts_off = align_device(pair_bytes);
    let in_bytes = starts_off + 4 * starts.len();
    let out_off = align_device(in_bytes);
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
            let threads: usize = [1, 2, 4][rng.gen_range(0..3)];
            let item_level = threads.trailing_zeros() as usize;
            let levels = tree_levels(threads * n);
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
                    return bad[i >> (item_level - level)];
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
            assert_eq!(
                got, want,
                "n {n}, {threads} threads/item, threshold {threshold}"
            );
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

    /// The device's Fp12 layout read as blst's: blst's Miller loop and final
    /// exponentiation of random pairs, encoded as `Gt::to_bytes` (coefficients from c1.c2.c1
    /// down to c0.c0.c0), equal ic_bls12_381's pairings, so the towers, R and the final
    /// exponentiation agree; and the byte layout round-trips, poison rejected.
    #[test]
    fn blst_final_exponentiation_agrees_with_ic_bls12_381() {
        use group::{Curve, Group};
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        for _ in 0..4 {
            let p = ic_bls12_381::G1Projective::random(&mut rng).to_affine();
            let q = ic_bls12_381::G2Projective::random(&mut rng).to_affine();
            let mut bp = blst::blst_p1_affine::default();
            let mut bq = blst::blst_p2_affine::default();
            let mut ml = blst::blst_fp12::default();
            let mut gt = blst::blst_fp12::default();
            // SAFETY: blst reads 96/192-byte encodings and plain limb structs.
            unsafe {
                assert_eq!(
                    blst::blst_p1_deserialize(&mut bp, p.to_uncompressed().as_ptr()),
                    blst::BLST_ERROR::BLST_SUCCESS
                );
                assert_eq!(
                    blst::blst_p2_deserialize(&mut bq, q.to_uncompressed().as_ptr()),
                    blst::BLST_ERROR::BLST_SUCCESS
                );
                blst::blst_miller_loop(&mut ml, &bq, &bp);
                blst::blst_final_exp(&mut gt, &ml);
            }
            let mut encoded = Vec::with_capacity(GT_BYTES);
            for fp6 in gt.fp6.iter().rev() {
                for fp2 in fp6.fp2.iter().rev() {
                    for fp in fp2.fp.iter().rev() {
                        let mut be = [0u8; 48];
                        // SAFETY: writes 48 bytes from one fp.
                        unsafe { blst::blst_bendian_from_fp(be.as_mut_ptr(), fp) };
                        encoded.extend_from_slice(&be);
                    }
                }
            }
            assert_eq!(encoded[..], ic_bls12_381::pairing(&p, &q).to_bytes()[..]);
            assert!(!final_exponentiation_is_one(&ml));
            // Device layout: the limbs in order, little-endian.
            let bytes: Vec<u8> = ml
                .fp6
                .iter()
                .flat_map(|a| a.fp2.iter())
                .flat_map(|b| b.fp.iter())
                .flat_map(|c| c.l.iter())
                .flat_map(|l| l.to_le_bytes())
                .collect();
            let back = fp12_from_device(&bytes).expect("canonical");
            assert_eq!(back.fp6[1].fp2[2].fp[1].l, ml.fp6[1].fp2[2].fp[1].l);
            assert_eq!(back.fp6[0].fp2[0].fp[0].l, ml.fp6[0].fp2[0].fp[0].l);
        }
        assert!(fp12_from_device(&[0xff; FP12_BYTES]).is_none());
        assert!(fp12_from_device(&[0; FP12_BYTES - 1]).is_none());
        // One is one (Montgomery R mod p in the lowest coefficient).
        let mut one = vec![0u8; FP12_BYTES];
        for (k, l) in [
            0x7609_0000_0002_fffdu64,
            0xebf4_000b_c40c_0002,
            0x5f48_9857_53c7_58ba,
            0x77ce_5853_7052_5745,
            0x5c07_1a97_a256_ec6d,
            0x15f6_5ec3_fa80_e493,
        ]
        .iter()
        .enumerate()
        {
            one[8 * k..8 * k + 8].copy_from_slice(&l.to_le_bytes());
        }
        assert!(final_exponentiation_is_one(
            &fp12_from_device(&one).expect("one")
        ));
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
