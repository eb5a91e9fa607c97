//! The CPU reference backend: rayon over the merges of each level and over rows.

use rayon::prelude::*;

use crate::digest::Digest;
use crate::error::Error;
use crate::field::Felt;
use crate::hasher::Hasher;
use crate::{MerkleBackend, check_batch, check_rows};

/// The fewest merges (or rows) per rayon task. A merge costs a few microseconds, far more than
/// rayon spends on a task, so the floor stays low: a high one (64 before) left every level of
/// fewer parents than that on a single thread, which showed at 2^10..2^12 leaves.
const MERGES_PER_TASK: usize = 4;

/// The CPU backend: portable Rust, parallel over all cores with rayon.
///
/// ```
/// use merkle::{Cpu, Digest, Felt, MerkleTree};
///
/// let leaves: Vec<Digest> = (0..8u32).map(|i| Digest::new([Felt::from(i); 4])).collect();
/// let tree = MerkleTree::build(&Cpu, &leaves)?;
/// let path = tree.prove(5)?;
/// MerkleTree::verify(tree.root(), 5, &leaves[5], &path)?;
/// # Ok::<(), merkle::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Cpu;

impl MerkleBackend for Cpu {
    fn name(&self) -> String {
        format!("cpu ({} threads)", rayon::current_num_threads())
    }

    fn build_nodes_with<H: Hasher>(
        &self,
        _hasher: H,
        nodes: &mut [Digest],
        leaves_per_tree: usize,
    ) -> Result<(), Error> {
        check_batch(nodes.len(), leaves_per_tree)?;
        nodes
            .par_chunks_mut(2 * leaves_per_tree)
            .for_each(build_tree_nodes::<H>);
        Ok(())
    }

    fn hash_rows_with<H: Hasher>(
        &self,
        _hasher: H,
        elements: &[Felt],
        width: usize,
        out: &mut [Digest],
    ) -> Result<(), Error> {
        check_rows(elements.len(), width, out.len())?;
        out.par_iter_mut()
            .zip(elements.par_chunks(width))
            .with_min_len(MERGES_PER_TASK)
            .for_each(|(digest, row)| *digest = H::hash_elements(row));
        Ok(())
    }
}

/// Fills `nodes[1..n]` of one tree from its leaves in `nodes[n..2n]`, level by level.
fn build_tree_nodes<H: Hasher>(nodes: &mut [Digest]) {
    let mut parents = nodes.len() / 4;
    while parents >= 1 {
        let (lower, upper) = nodes.split_at_mut(2 * parents);
        lower[parents..]
            .par_iter_mut()
            .zip(upper[..2 * parents].par_chunks_exact(2))
            .with_min_len(MERGES_PER_TASK)
            .for_each(|(parent, pair)| *parent = H::merge(&pair[0], &pair[1]));
        parents /= 2;
    }
}
