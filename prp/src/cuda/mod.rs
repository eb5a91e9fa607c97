//! The CUDA backend: keystream kernels from `prp/cuda/chacha.cu` (here) and the
//! permutation kernels of `prp/cuda/prp.cu` (`evaluate.rs`), run through `kernels`; the same
//! over several GPUs (`multi_gpu.rs`).

mod evaluate;
mod multi_gpu;

pub use multi_gpu::MultiGpu;

use std::sync::Arc;

use crate::source;
use kernels::{DeviceBuffer, DeviceRepr, Gpu, Grid, Kernel, SharedStaging};
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::Keystream;
use crate::chacha::{BLOCK_BYTES, ChaCha, Rounds, check_block_range};
use crate::error::Error;

/// Threads per block of the ChaCha kernels (a multiple of the warp size, as the digest's
/// warp reduction needs).
const THREADS: u32 = 256;

/// Bytes generated per chunk when filling a host buffer: two such chunks of device memory and
/// two of page-locked host memory are kept for the life of the backend. Measured on an H100
/// (notes/chacha.md): 16 MiB chunks beat 4 and 8 MiB ones for large fills.
const STAGING_BYTES: usize = 16 << 20;

/// Resident blocks per multiprocessor for the grid-stride digest kernel.
const DIGEST_BLOCKS_PER_SM: u32 = 8;

/// The kernels' `ChaChaStream` parameter: key words, nonce words, first block counter. It holds
/// the key, so it has no `Debug` and is zeroed on drop.
#[repr(C)]
#[derive(Zeroize, ZeroizeOnDrop)]
struct StreamParams {
    key: [u32; 8],
    nonce: [u32; 3],
    counter: u32,
}

// SAFETY: a `#[repr(C)]` struct of u32s, laid out exactly as `ChaChaStream` in chacha.cu.
unsafe impl DeviceRepr for StreamParams {}

impl StreamParams {
    fn new<R: Rounds>(stream: &ChaCha<R>, counter: u32) -> Self {
        Self {
            key: *stream.key().words(),
            nonce: stream.nonce(),
            counter,
        }
    }
}

/// The CUDA backend on one GPU.
///
/// Host-buffer fills go through two staging chunks, so that the transfer of one chunk to the
/// host overlaps the copy of the previous one into the caller's buffer; the staging memory is
/// allocated at the first such fill and kept. Clones share it, and fills through one backend
/// (or its clones) take turns. Host batches of at least 2^16 values go through staging
/// chunks of their own in the same way.
///
/// ```no_run
/// use prp::{ChaCha8, Cuda, Key, Keystream};
///
/// # fn main() -> Result<(), prp::Error> {
/// let gpu = Cuda::new()?;
/// let stream = ChaCha8::new(Key::new(&[1; 32]), [0, 0, 0]);
/// let mut out = vec![0u8; 1 << 20];
/// gpu.fill_keystream(&stream, 0, &mut out)?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Cuda {
    gpu: Arc<Gpu>,
    staging: SharedStaging<u8>,
    /// The same for the values of large host batches (`evaluate.rs`).
    value_staging: SharedStaging<u64>,
}

impl Cuda {
    /// The backend on the first visible GPU.
    pub fn new() -> Result<Self, Error> {
        Ok(Self::on(Gpu::first()?))
    }

    /// The backend on a GPU handle the caller opened (to pick a device or share one).
    pub fn on(gpu: Arc<Gpu>) -> Self {
        Self {
            staging: SharedStaging::new(&gpu),
            value_staging: SharedStaging::new(&gpu),
            gpu,
        }
    }

    /// The GPU this backend runs on.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    fn kernel<R: Rounds>(&self, kind: &str) -> Result<Kernel, Error> {
        let name = format!("chacha{}_{kind}", R::ROUNDS);
        Ok(self.gpu.kernel(&source::CHACHA, &name)?)
    }

    /// Writes blocks `counter ..` of `stream` into device memory, `out.len() / 64` whole blocks,
    /// and returns without waiting for the kernel. `out.len()` must be a multiple of 64.
    ///
    /// This is the form later kernels and benchmarks use: no host copy.
    pub fn fill_keystream_device<R: Rounds>(
        &self,
        stream: &ChaCha<R>,
        counter: u32,
        out: &mut DeviceBuffer<u8>,
    ) -> Result<(), Error> {
        if out.len() % BLOCK_BYTES != 0 {
            return Err(Error::BufferLength {
                len: out.len(),
                unit: BLOCK_BYTES,
            });
        }
        let blocks = (out.len() / BLOCK_BYTES) as u64;
        check_block_range(counter, blocks)?;
        self.launch_keystream(stream, counter, blocks, out)
    }

    /// Queues the keystream kernel for `blocks` blocks from `counter` into the start of `out`.
    /// The caller has checked the counter range and that `out` holds `blocks * 64` bytes.
    fn launch_keystream<R: Rounds>(
        &self,
        stream: &ChaCha<R>,
        counter: u32,
        blocks: u64,
        out: &mut DeviceBuffer<u8>,
    ) -> Result<(), Error> {
        debug_assert!(blocks * BLOCK_BYTES as u64 <= out.len() as u64);
        if blocks == 0 {
            return Ok(());
        }
        let kernel = self.kernel::<R>("keystream")?;
        let params = StreamParams::new(stream, counter);
        let launch = self
            .gpu
            .launch(&kernel, Grid::cover(blocks, THREADS))
            .value(&params)
            .value(&blocks)
            .buffer_mut(out);
        // SAFETY: chacha{R}_keystream(ChaChaStream, u64 blocks, uint4* out) writes 64 bytes for
        // each of `blocks` blocks, and `out` holds at least `blocks * 64` bytes.
        unsafe { launch.run() }?;
        Ok(())
    }
}

impl Keystream for Cuda {
    fn name(&self) -> String {
        let info = self.gpu.info();
        format!(
            "CUDA ({}, sm_{})",
            info.name,
            info.compute_capability.number()
        )
    }

    fn fill_keystream<R: Rounds>(
        &self,
        stream: &ChaCha<R>,
        counter: u32,
        out: &mut [u8],
    ) -> Result<(), Error> {
        check_block_range(counter, out.len().div_ceil(BLOCK_BYTES) as u64)?;
        if out.is_empty() {
            return Ok(());
        }
        self.staging.with(STAGING_BYTES, |staging| {
            // Chunk i's kernel and transfer are queued, then the host copies chunk i - 1 out
            // while the GPU works on chunk i.
            staging.from_device(out, STAGING_BYTES, |i, chunk, len| {
                let blocks = len.div_ceil(BLOCK_BYTES) as u64;
                // In range: every block of `out` was checked to fit the 32-bit counter.
                let first = counter + (i * STAGING_BYTES / BLOCK_BYTES) as u32;
                self.launch_keystream(stream, first, blocks, chunk)
            })
        })
    }

    fn keystream_digest<R: Rounds>(
        &self,
        stream: &ChaCha<R>,
        counter: u32,
        blocks: u64,
    ) -> Result<[u32; 16], Error> {
        check_block_range(counter, blocks)?;
        let mut result = self.gpu.alloc_zeroed::<u32>(16)?;
        if blocks > 0 {
            let kernel = self.kernel::<R>("digest")?;
            let params = StreamParams::new(stream, counter);
            let full = Grid::per_sm(self.gpu.info().sm_count, DIGEST_BLOCKS_PER_SM, THREADS);
            let grid = Grid {
                blocks: full.blocks.min(Grid::cover(blocks, THREADS).blocks),
                ..full
            };
            let launch = self
                .gpu
                .launch(&kernel, grid)
                .value(&params)
                .value(&blocks)
                .buffer_mut(&mut result);
            // SAFETY: chacha{R}_digest(ChaChaStream, u64 blocks, u32* out) adds into out[0..16),
            // and `result` holds 16 words; the block size is a multiple of the warp size.
            unsafe { launch.run() }?;
        }
        let words = result.to_host()?;
        let mut digest = [0u32; 16];
        digest.copy_from_slice(&words);
        Ok(digest)
    }
}
