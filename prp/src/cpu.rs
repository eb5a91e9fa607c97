//! The CPU reference backend: the SPEC.md definitions, parallel over blocks with rayon.

use rayon::prelude::*;

use crate::Keystream;
use crate::chacha::{BLOCK_BYTES, ChaCha, Rounds, add_into, check_block_range};
use crate::error::Error;

/// Blocks per rayon task: large enough that scheduling costs nothing next to the rounds.
const BLOCKS_PER_TASK: usize = 1024;

/// The keystream bytes of one block: its words in little-endian order.
fn block_bytes(words: &[u32; 16]) -> [u8; BLOCK_BYTES] {
    let mut bytes = [0u8; BLOCK_BYTES];
    for (dst, word) in bytes.chunks_exact_mut(4).zip(words) {
        dst.copy_from_slice(&word.to_le_bytes());
    }
    bytes
}

/// The CPU reference backend. Uses every core through rayon.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cpu;

impl Keystream for Cpu {
    fn name(&self) -> String {
        format!("CPU ({} threads)", rayon::current_num_threads())
    }

    fn fill_keystream<R: Rounds>(
        &self,
        stream: &ChaCha<R>,
        counter: u32,
        out: &mut [u8],
    ) -> Result<(), Error> {
        check_block_range(counter, out.len().div_ceil(BLOCK_BYTES) as u64)?;
        out.par_chunks_mut(BLOCK_BYTES * BLOCKS_PER_TASK)
            .enumerate()
            .for_each(|(task, chunk)| {
                let first = counter as usize + task * BLOCKS_PER_TASK;
                for (i, bytes) in chunk.chunks_mut(BLOCK_BYTES).enumerate() {
                    // In range: checked above that every block index fits in 32 bits.
                    let block = block_bytes(&stream.block((first + i) as u32));
                    bytes.copy_from_slice(&block[..bytes.len()]);
                }
            });
        Ok(())
    }

    fn keystream_digest<R: Rounds>(
        &self,
        stream: &ChaCha<R>,
        counter: u32,
        blocks: u64,
    ) -> Result<[u32; 16], Error> {
        check_block_range(counter, blocks)?;
        let first = u64::from(counter);
        let per_task = BLOCKS_PER_TASK as u64;
        let digest = (0..blocks.div_ceil(per_task))
            .into_par_iter()
            .map(|task| {
                let start = first + task * per_task;
                let end = (start + per_task).min(first + blocks);
                let mut acc = [0u32; 16];
                for i in start..end {
                    // In range: checked above that every block index fits in 32 bits.
                    add_into(&mut acc, &stream.block(i as u32));
                }
                acc
            })
            .reduce(
                || [0u32; 16],
                |mut a, b| {
                    add_into(&mut a, &b);
                    a
                },
            );
        Ok(digest)
    }
}
