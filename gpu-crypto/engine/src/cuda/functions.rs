//! The kernel functions of the loaded programs, grouped by the operation that launches
//! them: [`Kernels::load`] looks every one up once, when the backend opens.

use super::error::GpuError;
use super::sources::{self, KernelProgram};
use cudarc::driver::{CudaFunction, CudaModule};
use std::sync::Arc;

pub(crate) struct Kernels {
    pub(crate) g1_decompress: CudaFunction,
    /// Small batches: one point over two warps (decompress.rs picks by batch size).
    pub(crate) g1_decompress_latency: CudaFunction,
    pub(crate) g2_decompress: CudaFunction,
    /// Small batches: one point per warp (g2_decompress.rs picks by batch size).
    pub(crate) g2_decompress_latency: CudaFunction,
    pub(crate) sha256_prefixed: CudaFunction,
    /// The same hash with every addition on the integer ALU (bench comparison only).
    #[cfg_attr(not(feature = "bench"), allow(dead_code))]
    pub(crate) sha256_prefixed_alu: CudaFunction,
    /// Also the message schedule's shifts on the FMA pipe (bench comparison only).
    #[cfg_attr(not(feature = "bench"), allow(dead_code))]
    pub(crate) sha256_prefixed_shr_fma: CudaFunction,
    #[cfg_attr(not(feature = "bench"), allow(dead_code))]
    pub(crate) fill_random: CudaFunction,
    pub(crate) msm: MsmKernels,
    pub(crate) msm_u8: MsmU8Kernels,
    pub(crate) g2_msm: CudaFunction,
    pub(crate) g1_recombine: CudaFunction,
    pub(crate) bls: BlsKernels,
}

impl Kernels {
    /// The functions of `modules`, loaded in the order of [`sources::PROGRAMS`].
    pub(crate) fn load(modules: &[Arc<CudaModule>]) -> Result<Kernels, GpuError> {
        let module = |p: &KernelProgram| {
            sources::PROGRAMS
                .iter()
                .position(|q| q.name == p.name)
                .map(|i| &modules[i])
                .ok_or_else(|| GpuError::Compile(format!("{} is not in PROGRAMS", p.name)))
        };
        let g1 = &modules[0];
        let sha = &modules[1];
        Ok(Kernels {
            g1_decompress: function(g1, "g1_decompress")?,
            g1_decompress_latency: function(
                module(&sources::G1_DECOMPRESS_LATENCY)?,
                "g1_decompress_latency",
            )?,
            g2_decompress: function(module(&sources::G2_DECOMPRESS)?, "g2_decompress")?,
            g2_decompress_latency: function(
                module(&sources::G2_DECOMPRESS_LATENCY)?,
                "g2_decompress_latency",
            )?,
            sha256_prefixed: function(sha, "sha256_prefixed")?,
            sha256_prefixed_alu: function(sha, "sha256_prefixed_alu")?,
            sha256_prefixed_shr_fma: function(sha, "sha256_prefixed_shr_fma")?,
            fill_random: function(&modules[2], "fill_random")?,
            msm: MsmKernels::load(module(&sources::G1_MSM)?)?,
            msm_u8: MsmU8Kernels::load(module(&sources::G1_MSM_SHARED_U8)?)?,
            g2_msm: function(module(&sources::G2_MSM)?, "g2_msm_blocks")?,
            g1_recombine: function(module(&sources::G1_RECOMBINE)?, "g1_recombine_rows")?,
            bls: BlsKernels::load(
                module(&sources::BLS_VERIFY)?,
                module(&sources::BLS_PAIRING)?,
                module(&sources::HASH_TO_G1)?,
            )?,
        })
    }
}

fn function(module: &Arc<CudaModule>, name: &str) -> Result<CudaFunction, GpuError> {
    module
        .load_function(name)
        .map_err(|e| GpuError::Driver(format!("cuModuleGetFunction {name}: {e}")))
}

pub(crate) struct MsmKernels {
    /// Also converts the bases of the shared-base 8-bit MSM (msm_shared_u8.rs).
    pub(crate) load_points: CudaFunction,
    pub(crate) scalars_from_mont: CudaFunction,
    pub(crate) histogram: CudaFunction,
    pub(crate) scatter: CudaFunction,
    pub(crate) scan_tiles: CudaFunction,
    pub(crate) scan_tile_sums: CudaFunction,
    pub(crate) scan_add: CudaFunction,
    pub(crate) accumulate: CudaFunction,
    pub(crate) merge: CudaFunction,
    pub(crate) reduce: CudaFunction,
}

impl MsmKernels {
    pub(crate) fn load(module: &Arc<CudaModule>) -> Result<MsmKernels, GpuError> {
        let f = |name: &str| function(module, name);
        Ok(MsmKernels {
            load_points: f("msm_load_points")?,
            scalars_from_mont: f("msm_scalars_from_mont")?,
            histogram: f("msm_histogram")?,
            scatter: f("msm_scatter")?,
            scan_tiles: f("msm_scan_tiles")?,
            scan_tile_sums: f("msm_scan_tile_sums")?,
            scan_add: f("msm_scan_add")?,
            accumulate: f("msm_accumulate")?,
            merge: f("msm_merge")?,
            reduce: f("msm_reduce")?,
        })
    }
}

pub(crate) struct MsmU8Kernels {
    pub(crate) planes: CudaFunction,
    pub(crate) combine: CudaFunction,
}

impl MsmU8Kernels {
    pub(crate) fn load(module: &Arc<CudaModule>) -> Result<MsmU8Kernels, GpuError> {
        let f = |name: &str| function(module, name);
        Ok(MsmU8Kernels {
            planes: f("msm_u8_planes")?,
            combine: f("msm_u8_combine")?,
        })
    }
}

pub(crate) struct BlsKernels {
    pub(crate) rlc_leaves: CudaFunction,
    pub(crate) rlc_halves: CudaFunction,
    pub(crate) rlc_quarters: CudaFunction,
    pub(crate) tree_level: CudaFunction,
    pub(crate) check_nodes: CudaFunction,
    pub(crate) pairing_products: CudaFunction,
    /// Messages hashed to G1 (hash_to_g1.rs).
    pub(crate) hash_to_g1: CudaFunction,
}

impl BlsKernels {
    pub(crate) fn load(
        verify: &Arc<CudaModule>,
        pairing: &Arc<CudaModule>,
        hash: &Arc<CudaModule>,
    ) -> Result<BlsKernels, GpuError> {
        let f = function;
        Ok(BlsKernels {
            rlc_leaves: f(verify, "bls_rlc_leaves")?,
            rlc_halves: f(verify, "bls_rlc_halves")?,
            rlc_quarters: f(verify, "bls_rlc_quarters")?,
            tree_level: f(verify, "bls_tree_level")?,
            check_nodes: f(verify, "bls_check_nodes")?,
            pairing_products: f(pairing, "bls_pairing_products")?,
            hash_to_g1: f(hash, "hash_to_g1")?,
        })
    }
}
