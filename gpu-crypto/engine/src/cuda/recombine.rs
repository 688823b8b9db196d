//! Host side of the chunk recombinations (kernel in `kernels/msm/g1_recombine.cu`, design in
//! docs/msm.md): `sum_j 2^(16 (len - 1 - j)) * row[j]` for rows of at most 16 G1 points, one
//! warp per row. One upload of the rows' points (uncompressed encodings) and their table,
//! one launch, one download of one Jacobian sum per row, converted to affine with one
//! shared inversion: the host does no point arithmetic, where a Pippenger MSM of these rows
//! would leave it a window combination per row.

use super::device::Device;
use super::error::GpuError;
use super::memory::{align_device, driver};
use super::msm::jacobian_from_gpu;
use super::msm_shared_u8::to_projective;
use super::worker::Worker;
use blst::blst_p1;
use cudarc::driver::{LaunchConfig, PushKernelArg, result};
use ic_bls12_381::{G1Affine, G1Projective};

/// Must equal G1_RECOMBINE_WARPS in the kernel source: rows per block, one warp each.
const WARPS_PER_BLOCK: usize = 4;
/// Chunks of one row: a 256-bit value in 16-bit chunks.
pub(crate) const MAX_CHUNKS: usize = 16;
/// Bytes of one point (ic_bls12_381's uncompressed encoding).
const POINT_BYTES: usize = 96;
/// Bytes of one Jacobian sum (three Fp coordinates, Montgomery limbs).
const JACOBIAN_BYTES: usize = 144;
/// Rows of one call: 2^20 keeps the upload at 1.5 GiB at most.
pub(crate) const MAX_ROWS: usize = 1 << 20;

/// Checks the bounds of a call; `InputTooLarge` for what the kernel does not take.
pub(crate) fn check_shape(rows: &[&[G1Affine]]) -> Result<(), GpuError> {
    if rows.len() > MAX_ROWS {
        return Err(GpuError::InputTooLarge(format!(
            "{} recombination rows: at most {MAX_ROWS} in one call",
            rows.len()
        )));
    }
    if let Some(row) = rows.iter().find(|r| r.len() > MAX_CHUNKS) {
        return Err(GpuError::InputTooLarge(format!(
            "a recombination row of {} chunks: at most {MAX_CHUNKS}",
            row.len()
        )));
    }
    Ok(())
}

/// Device layout: points, row table, sums.
struct Layout {
    points: usize,
    off_table: usize,
    off_out: usize,
    end: usize,
}

impl Layout {
    fn new(rows: &[&[G1Affine]]) -> Layout {
        let points: usize = rows.iter().map(|r| r.len()).sum();
        let off_table = align_device(POINT_BYTES * points);
        let off_out = align_device(off_table + 4 * (rows.len() + 1));
        let end = off_out + JACOBIAN_BYTES * rows.len();
        Layout {
            points,
            off_table,
            off_out,
            end,
        }
    }
}

/// Each row's recombination; the rows must pass [`check_shape`].
pub(crate) fn run(
    gpu: &Device,
    w: &mut Worker,
    rows: &[&[G1Affine]],
) -> Result<Vec<G1Projective>, GpuError> {
    let layout = Layout::new(rows);
    stage(w, rows, &layout)?;
    upload_and_launch(gpu, w, rows.len(), &layout)?;
    w.stream.synchronize().map_err(driver("g1 recombination"))?;
    let sums = w
        .msm
        .host_out
        .slice(JACOBIAN_BYTES * rows.len())
        .chunks_exact(JACOBIAN_BYTES)
        .map(jacobian_from_gpu)
        .collect::<Result<Vec<blst_p1>, GpuError>>()?;
    to_projective(&sums)
}

/// Writes the points and the row table into the worker's pinned input.
fn stage(w: &mut Worker, rows: &[&[G1Affine]], layout: &Layout) -> Result<(), GpuError> {
    w.msm.host_in.ensure(layout.off_out)?;
    w.msm.host_out.ensure(JACOBIAN_BYTES * rows.len())?;
    w.msm.device.ensure(layout.end)?;
    let host = w.msm.host_in.slice_mut(layout.off_out);
    let points = rows.iter().flat_map(|r| r.iter());
    for (dst, p) in host[..POINT_BYTES * layout.points]
        .chunks_exact_mut(POINT_BYTES)
        .zip(points)
    {
        dst.copy_from_slice(&p.to_uncompressed());
    }
    let table = &mut host[layout.off_table..layout.off_table + 4 * (rows.len() + 1)];
    for (dst, start) in table.chunks_exact_mut(4).zip(row_starts(rows)) {
        dst.copy_from_slice(&start.to_le_bytes());
    }
    Ok(())
}

/// The kernel's row table: row `r` covers points `starts[r]..starts[r + 1]`. At most
/// MAX_ROWS x MAX_CHUNKS points (`check_shape`), so every start fits a u32.
fn row_starts(rows: &[&[G1Affine]]) -> Vec<u32> {
    std::iter::once(0)
        .chain(rows.iter().scan(0u32, |start, r| {
            *start += r.len() as u32;
            Some(*start)
        }))
        .collect()
}

/// Queues the upload, the results' poison, the kernel and the download on the worker's
/// stream; the caller synchronises.
fn upload_and_launch(
    gpu: &Device,
    w: &mut Worker,
    rows: usize,
    layout: &Layout,
) -> Result<(), GpuError> {
    let out_bytes = JACOBIAN_BYTES * rows;
    gpu.ctx.bind_to_thread().map_err(driver("bind context"))?;
    let stream = w.stream.clone();
    let cu = stream.cu_stream();
    let base = w.msm.device.ptr();
    let d_table = base + layout.off_table as u64;
    let d_out = base + layout.off_out as u64;
    let count = rows as u32;
    let blocks = rows.div_ceil(WARPS_PER_BLOCK) as u32;
    // SAFETY: the device ranges lie inside the worker's MSM device buffer and the host
    // ranges inside its pinned buffers (both ensured by `stage` for the whole layout);
    // neither pinned buffer is touched again before `run` synchronises the stream.
    // g1_recombine_rows takes (points, rows, count, out): three device pointers and a
    // u32, as pushed.
    unsafe {
        let host = w.msm.host_in.slice(layout.off_out);
        result::memcpy_htod_async(base, host, cu).map_err(driver("upload recombination"))?;
        // Poison: an unwritten sum is not a canonical field element.
        result::memset_d8_async(d_out, 0xff, out_bytes, cu).map_err(driver("poison results"))?;
        stream
            .launch_builder(&gpu.kernels.g1_recombine)
            .arg(&base)
            .arg(&d_table)
            .arg(&count)
            .arg(&d_out)
            .launch(LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (32 * WARPS_PER_BLOCK as u32, 1, 1),
                shared_mem_bytes: 0,
            })
            .map_err(driver("launch g1_recombine_rows"))?;
        result::memcpy_dtoh_async(w.msm.host_out.slice_mut(out_bytes), d_out, cu)
            .map_err(driver("download recombination"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The row table starts at 0, steps by each row's length (empty rows included) and
    /// ends at the point count; a row of 17 chunks is refused before anything is staged.
    #[test]
    fn shapes_beyond_the_kernel_are_refused() {
        let g = G1Affine::generator();
        let ok = vec![g; MAX_CHUNKS];
        let long = vec![g; MAX_CHUNKS + 1];
        assert!(check_shape(&[&ok[..], &[]]).is_ok());
        assert!(matches!(
            check_shape(&[&ok[..], &long[..]]),
            Err(GpuError::InputTooLarge(_))
        ));
        let rows = [&ok[..], &[][..], &ok[..3]];
        assert_eq!(row_starts(&rows), [0, 16, 16, 19]);
        let layout = Layout::new(&rows);
        assert_eq!(layout.points, MAX_CHUNKS + 3);
        assert!(layout.off_table >= POINT_BYTES * layout.points);
        assert_eq!(layout.end, layout.off_out + 3 * JACOBIAN_BYTES);
    }
}
