//! Launch shapes shared by the operations' kernels.

use cudarc::driver::LaunchConfig;

/// One thread per item: `n` items in blocks of `threads` (at least one block).
pub(crate) fn launch_1d(n: usize, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((n as u32).div_ceil(threads).max(1), 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// `grid` blocks of `threads` threads, in one dimension.
pub(crate) fn blocks(grid: u32, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}
