//! The ChaCha8 keystream rows of the report: the block function's rate (a digest of a keystream
//! that is never stored), the keystream written to memory, and the keystream brought to the host.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use prp::{ChaCha8, Cpu, Key, Keystream};

use crate::progress::Progress;
use crate::table::{Check, Row, row};
use crate::{median_of, wall};

/// The block-function row: a digest (wrapping sum) of a keystream computed on chip.
pub const DIGEST: &str = "ChaCha8 block function (keystream digest)";
/// The bulk keystream row: blocks written to device memory (host memory on the CPU).
pub const TO_MEMORY: &str = "ChaCha8 keystream to memory";
/// The end-to-end row: keystream in a host buffer, transfer included.
pub const TO_HOST: &str = "ChaCha8 keystream to host buffer";

/// Problem sizes, in 64-byte blocks.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// Blocks of every CPU row, and of the GPU runs checked against them.
    pub cpu_blocks: u64,
    /// Blocks of the GPU digest row (enough to keep the device busy for tens of milliseconds).
    pub gpu_digest_blocks: u64,
    /// Blocks of the GPU keystream-to-memory row (1 GiB by default).
    pub gpu_memory_blocks: u64,
}

impl Default for Sizes {
    fn default() -> Self {
        Self {
            cpu_blocks: 1 << 22,
            gpu_digest_blocks: 1 << 31,
            gpu_memory_blocks: 1 << 24,
        }
    }
}

/// A row of `blocks` 64-byte blocks.
fn blocks_row(primitive: &str, backend: &str, blocks: u64, time: Duration, check: Check) -> Row {
    row(
        primitive,
        backend,
        blocks,
        "blocks",
        blocks * 64,
        time,
        check,
    )
}

/// What the CPU rows computed, for checking the GPU against.
#[derive(Debug)]
#[cfg_attr(
    not(feature = "cuda"),
    allow(dead_code, reason = "read only by the CUDA rows")
)]
pub struct Reference {
    digest: [u32; 16],
    keystream: Vec<u8>,
}

/// A ChaCha8 stream with a key and nonce fresh for this process.
pub fn fresh_stream() -> ChaCha8 {
    let next = || RandomState::new().build_hasher().finish();
    let mut key = [0u8; 32];
    for chunk in key.chunks_exact_mut(8) {
        chunk.copy_from_slice(&next().to_le_bytes());
    }
    let nonce = next();
    ChaCha8::new(
        Key::from(key),
        [nonce as u32, (nonce >> 32) as u32, next() as u32],
    )
}

/// Steps of [`cpu_rows`], one per measured row (one keystream run gives two rows).
pub const CPU_STEPS: u64 = 2;
/// Steps of [`cuda_rows`], one per measured row.
pub const CUDA_STEPS: u64 = 3;

/// Runs the CPU rows; returns them with the outputs the GPU rows are checked against.
pub fn cpu_rows(
    sizes: Sizes,
    stream: &ChaCha8,
    progress: &Progress,
) -> Result<(Vec<Row>, Reference), prp::Error> {
    let backend = Cpu.name();
    let blocks = sizes.cpu_blocks;
    let bytes = blocks * 64;
    progress.step(DIGEST, &backend);
    let (digest, digest_time) = median_of(3, || wall(|| Cpu.keystream_digest(stream, 0, blocks)))?;
    progress.step(TO_MEMORY, &backend);
    let mut keystream = vec![0u8; bytes as usize];
    let ((), fill_time) = median_of(3, || wall(|| Cpu.fill_keystream(stream, 0, &mut keystream)))?;
    let rows = vec![
        blocks_row(DIGEST, &backend, blocks, digest_time, Check::Reference),
        blocks_row(TO_MEMORY, &backend, blocks, fill_time, Check::Reference),
        blocks_row(TO_HOST, &backend, blocks, fill_time, Check::Reference),
    ];
    Ok((rows, Reference { digest, keystream }))
}

/// Runs the CUDA rows and checks each against the CPU reference.
#[cfg(feature = "cuda")]
pub fn cuda_rows(
    cuda: &prp::Cuda,
    sizes: Sizes,
    stream: &ChaCha8,
    reference: &Reference,
    progress: &Progress,
) -> Result<Vec<Row>, prp::Error> {
    let gpu = cuda.gpu();
    let backend = cuda.name();
    let mut rows = Vec::new();

    // The block function: checked at the CPU's size, timed at the GPU's.
    progress.step(DIGEST, &backend);
    let same = cuda.keystream_digest(stream, 0, sizes.cpu_blocks)? == reference.digest;
    let blocks = sizes.gpu_digest_blocks;
    let (_, time) = median_of(5, || gpu.time(|| cuda.keystream_digest(stream, 0, blocks)))?;
    let check = Check::from_equal(same, "digest differs from the CPU's");
    rows.push(blocks_row(DIGEST, &backend, blocks, time, check));

    // Keystream into device memory; its prefix is checked against the CPU's after timing.
    progress.step(TO_MEMORY, &backend);
    let blocks = sizes.gpu_memory_blocks;
    let mut device = gpu.alloc_zeroed::<u8>((blocks * 64) as usize)?;
    let ((), time) = median_of(5, || {
        gpu.time(|| cuda.fill_keystream_device(stream, 0, &mut device))
    })?;
    let mut prefix = vec![0u8; reference.keystream.len().min(device.len())];
    device.copy_to_host(&mut prefix)?;
    let same = prefix == reference.keystream[..prefix.len()];
    let check = Check::from_equal(same, "keystream differs from the CPU's");
    rows.push(blocks_row(TO_MEMORY, &backend, blocks, time, check));
    drop(device);

    // Keystream into a host buffer, the transfer included.
    progress.step(TO_HOST, &backend);
    let blocks = sizes.cpu_blocks;
    let mut host = vec![0u8; reference.keystream.len()];
    let ((), time) = median_of(3, || wall(|| cuda.fill_keystream(stream, 0, &mut host)))?;
    let check = Check::from_equal(
        host == reference.keystream,
        "keystream differs from the CPU's",
    );
    rows.push(blocks_row(TO_HOST, &backend, blocks, time, check));
    Ok(rows)
}
