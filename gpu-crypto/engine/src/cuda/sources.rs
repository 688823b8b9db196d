//! The CUDA sources, embedded at build time from `kernels/`. Headers are handed to NVRTC
//! by name, so the `.cu` files include them exactly as nvcc would from `kernels/`.

/// One NVRTC program: a `.cu` file of `kernels/ops/` and the kernels it defines.
#[derive(Debug, Clone, Copy)]
pub struct KernelProgram {
    /// Path under `kernels/`, e.g. `ops/g1_decompress.cu`.
    pub name: &'static str,
    /// The program's CUDA source text.
    pub source: &'static str,
    /// The kernels it defines, loaded by name.
    pub functions: &'static [&'static str],
}

/// Every header under `kernels/`, by the name the sources include it with.
pub const HEADERS: &[(&str, &str)] = &[
    ("common.cuh", include_str!("../../../../kernels/common.cuh")),
    (
        "ff/bls12_381_params.cuh",
        include_str!("../../../../kernels/ff/bls12_381_params.cuh"),
    ),
    ("ff/fp.cuh", include_str!("../../../../kernels/ff/fp.cuh")),
    (
        "ff/fp_sqrt.cuh",
        include_str!("../../../../kernels/ff/fp_sqrt.cuh"),
    ),
    (
        "ff/fp_rns_tables.cuh",
        include_str!("../../../../kernels/ff/fp_rns_tables.cuh"),
    ),
    (
        "ff/fp_rns.cuh",
        include_str!("../../../../kernels/ff/fp_rns.cuh"),
    ),
    (
        "ff/fp_rns_sqrt.cuh",
        include_str!("../../../../kernels/ff/fp_rns_sqrt.cuh"),
    ),
    (
        "ec/g1_projective.cuh",
        include_str!("../../../../kernels/ec/g1_projective.cuh"),
    ),
    (
        "ec/g1_jacobian.cuh",
        include_str!("../../../../kernels/ec/g1_jacobian.cuh"),
    ),
    (
        "ec/g1_subgroup.cuh",
        include_str!("../../../../kernels/ec/g1_subgroup.cuh"),
    ),
    (
        "ec/g1_subgroup_rns.cuh",
        include_str!("../../../../kernels/ec/g1_subgroup_rns.cuh"),
    ),
    (
        "ec/g1_xyzz.cuh",
        include_str!("../../../../kernels/ec/g1_xyzz.cuh"),
    ),
    (
        "ops/g1_decompress.cuh",
        include_str!("../../../../kernels/ops/g1_decompress.cuh"),
    ),
    ("ff/fp2.cuh", include_str!("../../../../kernels/ff/fp2.cuh")),
    (
        "ff/fp2_sqrt.cuh",
        include_str!("../../../../kernels/ff/fp2_sqrt.cuh"),
    ),
    (
        "ff/fp2_rns.cuh",
        include_str!("../../../../kernels/ff/fp2_rns.cuh"),
    ),
    (
        "ff/fp2_rns_sqrt.cuh",
        include_str!("../../../../kernels/ff/fp2_rns_sqrt.cuh"),
    ),
    (
        "ec/g2_jacobian.cuh",
        include_str!("../../../../kernels/ec/g2_jacobian.cuh"),
    ),
    (
        "ec/g2_jacobian_rns.cuh",
        include_str!("../../../../kernels/ec/g2_jacobian_rns.cuh"),
    ),
    (
        "ec/g2_subgroup.cuh",
        include_str!("../../../../kernels/ec/g2_subgroup.cuh"),
    ),
    (
        "ec/g2_subgroup_rns.cuh",
        include_str!("../../../../kernels/ec/g2_subgroup_rns.cuh"),
    ),
    (
        "ops/g2_decompress.cuh",
        include_str!("../../../../kernels/ops/g2_decompress.cuh"),
    ),
    ("ff/fp6.cuh", include_str!("../../../../kernels/ff/fp6.cuh")),
    (
        "ff/fp12.cuh",
        include_str!("../../../../kernels/ff/fp12.cuh"),
    ),
    (
        "pairing/miller_loop.cuh",
        include_str!("../../../../kernels/pairing/miller_loop.cuh"),
    ),
    (
        "pairing/final_exp.cuh",
        include_str!("../../../../kernels/pairing/final_exp.cuh"),
    ),
    (
        "pairing/bls_io.cuh",
        include_str!("../../../../kernels/pairing/bls_io.cuh"),
    ),
    (
        "hash/sha256.cuh",
        include_str!("../../../../kernels/hash/sha256.cuh"),
    ),
    (
        "hash/expand_message_xmd.cuh",
        include_str!("../../../../kernels/hash/expand_message_xmd.cuh"),
    ),
    (
        "ec/g1_sswu.cuh",
        include_str!("../../../../kernels/ec/g1_sswu.cuh"),
    ),
    (
        "ec/g1_isogeny.cuh",
        include_str!("../../../../kernels/ec/g1_isogeny.cuh"),
    ),
    (
        "ec/g1_hash_to_curve.cuh",
        include_str!("../../../../kernels/ec/g1_hash_to_curve.cuh"),
    ),
];

/// The throughput G1 decompression kernel (one thread per point).
pub const G1_DECOMPRESS: KernelProgram = KernelProgram {
    name: "ops/g1_decompress.cu",
    source: include_str!("../../../../kernels/ops/g1_decompress.cu"),
    functions: &["g1_decompress"],
};

/// Batch G1 decompression for small batches: one point over two warps (latency).
pub const G1_DECOMPRESS_LATENCY: KernelProgram = KernelProgram {
    name: "ops/g1_decompress_latency.cu",
    source: include_str!("../../../../kernels/ops/g1_decompress_latency.cu"),
    functions: &["g1_decompress_latency"],
};

/// Batch G2 decompression with the subgroup check: one thread per point.
pub const G2_DECOMPRESS: KernelProgram = KernelProgram {
    name: "ops/g2_decompress.cu",
    source: include_str!("../../../../kernels/ops/g2_decompress.cu"),
    functions: &["g2_decompress"],
};

/// Batch G2 decompression for small batches: one point per warp (latency).
pub const G2_DECOMPRESS_LATENCY: KernelProgram = KernelProgram {
    name: "ops/g2_decompress_latency.cu",
    source: include_str!("../../../../kernels/ops/g2_decompress_latency.cu"),
    functions: &["g2_decompress_latency"],
};

/// Benchmark-only: latency of dependent chains of Fp operations (one warp).
pub const FP_CHAIN_BENCH: KernelProgram = KernelProgram {
    name: "bench/fp_chain_bench.cu",
    source: include_str!("../../../../kernels/bench/fp_chain_bench.cu"),
    functions: &[
        "fp_chain_sqr",
        "fp_chain_mul",
        "fp_chain_mul_x2",
        "fp_chain_rns_sqr",
        "fp_chain_rns_double",
        "fp_chain_double",
    ],
};

/// Benchmark-only instances of the decompression kernel (two register budgets), compiled by
/// the bench under several field-arithmetic choices, never by the engine; the compile test
/// checks the default choice.
pub const G1_DECOMPRESS_VARIANTS: KernelProgram = KernelProgram {
    name: "bench/g1_decompress_variants.cu",
    source: include_str!("../../../../kernels/bench/g1_decompress_variants.cu"),
    functions: &["g1_decompress_lb1", "g1_decompress_lb3"],
};

/// SHA-256 of prefixed chunks, with its benchmark variants.
pub const SHA256_PREFIXED: KernelProgram = KernelProgram {
    name: "ops/sha256_prefixed.cu",
    source: include_str!("../../../../kernels/ops/sha256_prefixed.cu"),
    functions: &[
        "sha256_prefixed",
        "sha256_prefixed_alu",
        "sha256_prefixed_shr_fma",
    ],
};

/// Fills device memory with pseudo-random words (bench input).
pub const FILL_RANDOM: KernelProgram = KernelProgram {
    name: "ops/fill_random.cu",
    source: include_str!("../../../../kernels/ops/fill_random.cu"),
    functions: &["fill_random"],
};

/// The batched G1 Pippenger MSM's kernels (sort, accumulate, reduce).
pub const G1_MSM: KernelProgram = KernelProgram {
    name: "msm/g1_msm.cu",
    source: include_str!("../../../../kernels/msm/g1_msm.cu"),
    functions: &[
        "msm_scalars_from_mont",
        "msm_load_points",
        "msm_histogram",
        "msm_scatter",
        "msm_scan_tiles",
        "msm_scan_tile_sums",
        "msm_scan_add",
        "msm_accumulate",
        "msm_merge",
        "msm_reduce",
    ],
};

/// Many MSMs with 8-bit scalars over one shared set of bases (NI-DKG chunking proof).
pub const G1_MSM_SHARED_U8: KernelProgram = KernelProgram {
    name: "msm/g1_msm_shared_u8.cu",
    source: include_str!("../../../../kernels/msm/g1_msm_shared_u8.cu"),
    functions: &["msm_u8_planes", "msm_u8_combine"],
};

/// Many G2 MSMs with full scalars over subgroup points, split by the endomorphism (NI-DKG
/// sharing proof and combined integrity check).
pub const G2_MSM: KernelProgram = KernelProgram {
    name: "msm/g2_msm.cu",
    source: include_str!("../../../../kernels/msm/g2_msm.cu"),
    functions: &["g2_msm_blocks"],
};

/// Chunk recombinations, one warp per row by Horner in RNS (NI-DKG sharing proof).
pub const G1_RECOMBINE: KernelProgram = KernelProgram {
    name: "msm/g1_recombine.cu",
    source: include_str!("../../../../kernels/msm/g1_recombine.cu"),
    functions: &["g1_recombine_rows"],
};

/// BLS batch verification: random-combination leaves, tree levels, node checks.
pub const BLS_VERIFY: KernelProgram = KernelProgram {
    name: "ops/bls_verify.cu",
    source: include_str!("../../../../kernels/ops/bls_verify.cu"),
    functions: &[
        "bls_rlc_leaves",
        "bls_rlc_halves",
        "bls_rlc_quarters",
        "bls_tree_level",
        "bls_check_nodes",
    ],
};

/// Products of pairings as Gt values (tests, exact per-item checks).
pub const BLS_PAIRING: KernelProgram = KernelProgram {
    name: "ops/bls_pairing.cu",
    source: include_str!("../../../../kernels/ops/bls_pairing.cu"),
    functions: &["bls_pairing_products"],
};

/// Messages hashed to G1 (RFC 9380 hash_to_curve), for BLS verification.
pub const HASH_TO_G1: KernelProgram = KernelProgram {
    name: "ops/hash_to_g1.cu",
    source: include_str!("../../../../kernels/ops/hash_to_g1.cu"),
    functions: &["hash_to_g1"],
};

/// Every program the backend loads; all must compile for every supported architecture.
pub const PROGRAMS: &[KernelProgram] = &[
    G1_DECOMPRESS,
    SHA256_PREFIXED,
    FILL_RANDOM,
    G1_MSM,
    BLS_VERIFY,
    BLS_PAIRING,
    G1_DECOMPRESS_LATENCY,
    HASH_TO_G1,
    G2_DECOMPRESS,
    G2_DECOMPRESS_LATENCY,
    G1_MSM_SHARED_U8,
    G2_MSM,
    G1_RECOMBINE,
];

/// Programs only the benchmarks load; they must compile like the others.
pub const BENCH_PROGRAMS: &[KernelProgram] = &[G1_DECOMPRESS_VARIANTS, FP_CHAIN_BENCH];

/// The architectures the product targets: H100/H200 (sm_90) and RTX PRO 6000 Blackwell (sm_120).
pub const TARGET_ARCHS: &[&str] = &["sm_90", "sm_120"];
