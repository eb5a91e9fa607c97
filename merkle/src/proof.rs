//! Compact proofs for many leaves at once (see [`BatchProof`]).

use std::collections::BTreeMap;

use crate::digest::Digest;
use crate::error::Error;
use crate::hasher::Hasher;
use crate::rescue::Rp64_256;
use crate::tree::MerkleTree;

/// The deepest tree a batch proof may describe.
const MAX_DEPTH: u32 = 63;

/// Authentication paths for several leaves of one tree, shared nodes sent once.
///
/// Each needed sibling is held once: nodes that the verifier can compute from the opened
/// leaves themselves are left out. The layout is that of winter-crypto's `BatchMerkleProof`
/// (an Octopus-style compression), so the two convert into each other without recomputation
/// and winter-crypto verifiers accept ours:
///
/// - the opened indexes are grouped into leaf pairs `{2k, 2k + 1}`, sorted; `nodes[g]` starts
///   with the leaves of pair `g` that were not opened;
/// - then, level by level up to the children of the root, the list of known nodes is walked
///   left to right: a node whose sibling is the next entry pairs with it; otherwise the
///   sibling is appended to `nodes[i]`, `i` being the node's place in that level's list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchProof {
    /// Depth of the tree (`log2` of its leaf count).
    pub depth: u32,
    /// Sibling digests, grouped as described above.
    pub nodes: Vec<Vec<Digest>>,
}

impl BatchProof {
    /// Number of digests in the proof.
    pub fn digest_count(&self) -> usize {
        self.nodes.iter().map(Vec::len).sum()
    }
}

/// Checks `indexes` against a tree of `leaves` leaves and returns them as a sorted map from
/// index to its place in `indexes`.
fn index_places(indexes: &[usize], leaves: usize) -> Result<BTreeMap<usize, usize>, Error> {
    if indexes.is_empty() {
        return Err(Error::NoIndexes);
    }
    let mut places = BTreeMap::new();
    for (place, &index) in indexes.iter().enumerate() {
        if index >= leaves {
            return Err(Error::IndexOutOfRange { index, leaves });
        }
        if places.insert(index, place).is_some() {
            return Err(Error::DuplicateIndex { index });
        }
    }
    Ok(places)
}

/// The distinct leaf pairs `{2k, 2k + 1}` the indexes fall in, as sorted even indexes.
fn leaf_pairs(places: &BTreeMap<usize, usize>) -> Vec<usize> {
    let mut pairs: Vec<usize> = places.keys().map(|&index| index & !1).collect();
    pairs.dedup();
    pairs
}

impl<H: Hasher> MerkleTree<H> {
    /// A batch proof for the leaves at `indexes` (any order, no repeats).
    pub fn prove_batch(&self, indexes: &[usize]) -> Result<BatchProof, Error> {
        let leaves = self.leaf_count();
        let places = index_places(indexes, leaves)?;
        let pairs = leaf_pairs(&places);
        let nodes = self.nodes();
        let mut groups: Vec<Vec<Digest>> = pairs
            .iter()
            .map(|&pair| {
                (pair..pair + 2)
                    .filter(|index| !places.contains_key(index))
                    .map(|index| nodes[leaves + index])
                    .collect()
            })
            .collect();
        let mut known: Vec<usize> = pairs.iter().map(|&pair| (leaves + pair) >> 1).collect();
        for _ in 1..self.depth() {
            let mut parents = Vec::with_capacity(known.len());
            let mut i = 0;
            while i < known.len() {
                let sibling = known[i] ^ 1;
                if known.get(i + 1) == Some(&sibling) {
                    i += 1;
                } else {
                    groups[i].push(nodes[sibling]);
                }
                parents.push(sibling >> 1);
                i += 1;
            }
            known = parents;
        }
        Ok(BatchProof {
            depth: self.depth(),
            nodes: groups,
        })
    }

    /// Checks that `proof` opens `leaves[i]` at `indexes[i]` for every `i` in the tree with
    /// root `root`, hashed with `hasher`.
    pub fn verify_batch_with(
        _hasher: H,
        root: &Digest,
        indexes: &[usize],
        leaves: &[Digest],
        proof: &BatchProof,
    ) -> Result<(), Error> {
        if proof.depth == 0 || proof.depth > MAX_DEPTH {
            return Err(Error::MalformedProof {
                why: format!("depth {}", proof.depth),
            });
        }
        if leaves.len() != indexes.len() {
            return Err(Error::LeafCountMismatch {
                leaves: leaves.len(),
                indexes: indexes.len(),
            });
        }
        let width = 1usize << proof.depth;
        let places = index_places(indexes, width)?;
        let pairs = leaf_pairs(&places);
        if pairs.len() != proof.nodes.len() {
            return Err(Error::MalformedProof {
                why: format!(
                    "{} node groups for {} leaf pairs",
                    proof.nodes.len(),
                    pairs.len()
                ),
            });
        }
        let mut groups: Vec<_> = proof.nodes.iter().map(|group| group.iter()).collect();
        let mut next_in = |group: usize| {
            groups[group]
                .next()
                .copied()
                .ok_or_else(|| Error::MalformedProof {
                    why: format!("node group {group} is too short"),
                })
        };
        let mut known = Vec::with_capacity(pairs.len());
        for (group, &pair) in pairs.iter().enumerate() {
            let mut pair_leaves = [Digest::default(); 2];
            for (offset, leaf) in pair_leaves.iter_mut().enumerate() {
                *leaf = match places.get(&(pair + offset)) {
                    Some(&place) => leaves[place],
                    None => next_in(group)?,
                };
            }
            known.push((
                (width + pair) >> 1,
                H::merge(&pair_leaves[0], &pair_leaves[1]),
            ));
        }
        for _ in 1..proof.depth {
            let mut parents = Vec::with_capacity(known.len());
            let mut i = 0;
            while i < known.len() {
                let (position, node) = known[i];
                let sibling = match known.get(i + 1) {
                    Some(&(next, next_node)) if next == position ^ 1 => {
                        i += 1;
                        next_node
                    }
                    _ => next_in(i)?,
                };
                let parent = if position & 1 == 0 {
                    H::merge(&node, &sibling)
                } else {
                    H::merge(&sibling, &node)
                };
                parents.push((position >> 1, parent));
                i += 1;
            }
            known = parents;
        }
        if groups.iter_mut().any(|group| group.next().is_some()) {
            return Err(Error::MalformedProof {
                why: "unused nodes left over".into(),
            });
        }
        match known.as_slice() {
            [(1, computed)] if computed == root => Ok(()),
            _ => Err(Error::InvalidProof),
        }
    }
}

impl MerkleTree<Rp64_256> {
    /// [`MerkleTree::verify_batch_with`] for Rp64_256.
    pub fn verify_batch(
        root: &Digest,
        indexes: &[usize],
        leaves: &[Digest],
        proof: &BatchProof,
    ) -> Result<(), Error> {
        Self::verify_batch_with(Rp64_256, root, indexes, leaves, proof)
    }
}
