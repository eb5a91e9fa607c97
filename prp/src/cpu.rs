//! The CPU reference backend: the SPEC.md definitions, parallel over blocks with rayon.

use rayon::prelude::*;

use crate::chacha::{BLOCK_BYTES, ChaCha, Rounds, add_into, check_block_range};
use crate::error::Error;
use crate::full_domain::{self, Direction, check_batch, look_up, table_pays};
use crate::pmns::Pmns;
use crate::swap_or_not::{Permutation, forward_through, inverse_through};
use crate::{Evaluator, Keystream};

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

/// A batch of at least `N >> 5` values goes through a whole-domain table (see the crate docs).
const TABLE_FRACTION_LOG2: u32 = 5;

/// The CPU reference backend. Uses every core through rayon (run it inside a
/// `rayon::ThreadPool::install` to choose the thread count).
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

impl Cpu {
    /// `P` or `P^-1` of every value, directly or through a table, whichever is cheaper.
    fn batch<P: Permutation>(
        prp: &P,
        values: &mut [u64],
        direction: Direction,
    ) -> Result<(), Error> {
        check_batch(values, prp.domain())?;
        if table_pays(prp.domain(), values.len(), TABLE_FRACTION_LOG2) {
            look_up(&full_domain::table(prp, direction)?, values);
            return Ok(());
        }
        let stages = prp.stages();
        values.par_iter_mut().with_min_len(16).for_each(|v| {
            *v = match direction {
                Direction::Forward => forward_through(stages, *v),
                Direction::Inverse => inverse_through(stages, *v),
            }
        });
        Ok(())
    }
}

impl Evaluator for Cpu {
    fn forward_batch<P: Permutation>(&self, prp: &P, values: &mut [u64]) -> Result<(), Error> {
        Self::batch(prp, values, Direction::Forward)
    }

    fn inverse_batch<P: Permutation>(&self, prp: &P, values: &mut [u64]) -> Result<(), Error> {
        Self::batch(prp, values, Direction::Inverse)
    }

    fn forward_table<P: Permutation>(&self, prp: &P) -> Result<Vec<u32>, Error> {
        full_domain::table(prp, Direction::Forward)
    }

    fn inverse_table<P: Permutation>(&self, prp: &P) -> Result<Vec<u32>, Error> {
        full_domain::table(prp, Direction::Inverse)
    }

    fn bin_boundaries<R: Rounds>(&self, pmns: &Pmns<R>) -> Result<Vec<u64>, Error> {
        Ok(pmns.boundaries_cpu())
    }
}
