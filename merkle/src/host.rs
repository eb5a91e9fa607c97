//! Large host arrays written on every core.
//!
//! The OS maps and zeroes a fresh allocation's pages on first write, one page fault at a
//! time. For the node arrays of big trees that costs more than the hashing on a GPU: on the
//! H200 machine's host, one thread took 35 ms to allocate and fill the 64 MB node array of
//! 2^20 leaves, against 5.7 ms for the GPU to build the tree. Writing the array from all of
//! rayon's threads spreads the faults over the cores.

use rayon::prelude::*;

use crate::digest::Digest;

/// `len` values, `value(i)` at index `i`, each written by one of rayon's threads.
pub(crate) fn par_vec<T: Send>(len: usize, value: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
    let mut out = Vec::with_capacity(len);
    (0..len)
        .into_par_iter()
        .map(value)
        .collect_into_vec(&mut out);
    out
}

/// The node arrays of `leaves.len() / per_tree` trees, back to back: each tree's
/// `2 * per_tree` digests, zero below its leaves (`per_tree`, a power of two).
pub(crate) fn node_arrays(leaves: &[Digest], per_tree: usize) -> Vec<Digest> {
    debug_assert!(per_tree.is_power_of_two() && leaves.len() % per_tree == 0);
    let tree_shift = per_tree.trailing_zeros() + 1;
    par_vec(2 * leaves.len(), |i| {
        let (tree, node) = (i >> tree_shift, i & (2 * per_tree - 1));
        match node.checked_sub(per_tree) {
            Some(leaf) => leaves[tree * per_tree + leaf],
            None => Digest::default(),
        }
    })
}

/// `len` zero digests.
pub(crate) fn zero_digests(len: usize) -> Vec<Digest> {
    par_vec(len, |_| Digest::default())
}

/// A copy of `digests`, made on every core.
pub(crate) fn par_copy(digests: &[Digest]) -> Vec<Digest> {
    par_vec(digests.len(), |i| digests[i])
}
