//! Properties every hasher's trees hold on the CPU: rows hash to the leaves, paths and batch
//! proofs verify (and tampered ones do not), caps are the tree's levels, batches equal
//! separate trees. The hashes themselves are checked against their references in
//! `tests/miden.rs` and `tests/winter.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use merkle::{
    Backend, Cpu, Digest, Error, Felt, Hasher, MODULUS, MerkleBackend, MerkleTree, Poseidon2,
    Rp64_256, RpJive64_256, Rpo256, Rpx256,
};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn random_felts(rng: &mut StdRng, count: usize) -> Vec<Felt> {
    (0..count)
        .map(|_| match rng.random_range(0..8) {
            0 => Felt::new(MODULUS - 1),
            1 => Felt::ZERO,
            _ => Felt::new(rng.random()),
        })
        .collect()
}

/// Every property for hasher `H` on a tree of `2^depth` rows of `width` elements.
fn check_tree<H: Hasher>(hasher: H, seed: u64, depth: u32, width: usize) {
    let mut rng = StdRng::seed_from_u64(seed);
    let rows = 1usize << depth;
    let elements = random_felts(&mut rng, rows * width);
    let tree = MerkleTree::from_rows_with(hasher, &Cpu, &elements, width).unwrap();
    for (leaf, row) in tree.leaves().iter().zip(elements.chunks_exact(width)) {
        assert_eq!(*leaf, H::hash_elements(row), "{}", H::NAME);
    }
    for node in 1..rows {
        let nodes = tree.nodes();
        assert_eq!(
            nodes[node],
            H::merge(&nodes[2 * node], &nodes[2 * node + 1])
        );
    }
    let by_leaves = MerkleTree::build_with(hasher, &Backend::Cpu(Cpu), tree.leaves()).unwrap();
    assert_eq!(by_leaves, tree);

    // Paths: every leaf's verifies; a wrong leaf, index or sibling does not.
    let root = tree.root();
    for index in 0..rows {
        let path = tree.prove(index).unwrap();
        let leaf = &tree.leaves()[index];
        MerkleTree::verify_with(hasher, root, index, leaf, &path).unwrap();
        // At the next index the first merge takes its inputs in the other order, which
        // changes the result unless the two leaves of the pair are equal (equal rows).
        let other = (index + 1) % rows;
        if tree.leaves()[index ^ 1] != *leaf {
            assert!(matches!(
                MerkleTree::verify_with(hasher, root, other, leaf, &path),
                Err(Error::InvalidProof)
            ));
        }
    }
    let mut path = tree.prove(0).unwrap();
    path[depth as usize - 1] = Digest::new([Felt::ONE; 4]);
    assert!(MerkleTree::verify_with(hasher, root, 0, &tree.leaves()[0], &path).is_err());

    // Batch proofs of a random set of leaves.
    let count = rng.random_range(1..=rows);
    let mut indexes: Vec<usize> = (0..rows).collect();
    for i in 0..count {
        let j = rng.random_range(i..rows);
        indexes.swap(i, j);
    }
    indexes.truncate(count);
    let opened: Vec<Digest> = indexes.iter().map(|&i| tree.leaves()[i]).collect();
    let proof = tree.prove_batch(&indexes).unwrap();
    MerkleTree::verify_batch_with(hasher, root, &indexes, &opened, &proof).unwrap();
    let mut wrong = opened.clone();
    wrong[0] = Digest::new([Felt::ONE; 4]);
    assert!(MerkleTree::verify_batch_with(hasher, root, &indexes, &wrong, &proof).is_err());

    // Caps, built whole and alone.
    for height in 0..=depth {
        let cap = Cpu.build_cap_with(hasher, tree.leaves(), height).unwrap();
        assert_eq!(cap, tree.nodes()[1 << height..2 << height]);
        assert_eq!(cap, tree.cap(height).unwrap());
    }

    // A batch of two trees equals the two trees built alone.
    let mut leaves = tree.leaves().to_vec();
    leaves.extend(tree.leaves().iter().rev());
    let batch = MerkleTree::build_batch_with(hasher, &Cpu, &leaves, 2).unwrap();
    assert_eq!(batch[0], tree);
    assert_eq!(
        batch[1],
        MerkleTree::build_with(hasher, &Cpu, &leaves[rows..]).unwrap()
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    #[test]
    fn rp64_256_trees_hold(seed: u64, depth in 1u32..7, width in 1usize..20) {
        check_tree(Rp64_256, seed, depth, width);
    }

    #[test]
    fn rp_jive64_256_trees_hold(seed: u64, depth in 1u32..7, width in 1usize..20) {
        check_tree(RpJive64_256, seed, depth, width);
    }

    #[test]
    fn rpo256_trees_hold(seed: u64, depth in 1u32..7, width in 1usize..20) {
        check_tree(Rpo256, seed, depth, width);
    }

    #[test]
    fn rpx256_trees_hold(seed: u64, depth in 1u32..7, width in 1usize..20) {
        check_tree(Rpx256, seed, depth, width);
    }

    #[test]
    fn poseidon2_trees_hold(seed: u64, depth in 1u32..7, width in 1usize..20) {
        check_tree(Poseidon2, seed, depth, width);
    }
}

/// Trees of different hashers over the same leaves differ, and a proof for one does not
/// verify under another.
#[test]
fn hashers_are_not_interchangeable() {
    let leaves: Vec<Digest> = (0..8u32).map(|i| Digest::new([Felt::from(i); 4])).collect();
    let rpo = MerkleTree::build_with(Rpo256, &Cpu, &leaves).unwrap();
    let roots = [
        *MerkleTree::build(&Cpu, &leaves).unwrap().root(),
        *MerkleTree::build_with(RpJive64_256, &Cpu, &leaves)
            .unwrap()
            .root(),
        *rpo.root(),
        *MerkleTree::build_with(Rpx256, &Cpu, &leaves)
            .unwrap()
            .root(),
        *MerkleTree::build_with(Poseidon2, &Cpu, &leaves)
            .unwrap()
            .root(),
    ];
    for i in 0..roots.len() {
        for j in i + 1..roots.len() {
            assert_ne!(roots[i], roots[j]);
        }
    }
    let path = rpo.prove(3).unwrap();
    MerkleTree::verify_with(Rpo256, rpo.root(), 3, &leaves[3], &path).unwrap();
    assert!(MerkleTree::verify_with(Rpx256, rpo.root(), 3, &leaves[3], &path).is_err());
}

/// Bad shapes are errors for every hasher, never panics.
#[test]
fn bad_inputs_are_errors() {
    fn check<H: Hasher>(hasher: H) {
        let leaves = vec![Digest::default(); 6];
        assert!(MerkleTree::build_with(hasher, &Cpu, &leaves).is_err());
        assert!(MerkleTree::build_with(hasher, &Cpu, &leaves[..1]).is_err());
        assert!(MerkleTree::build_batch_with(hasher, &Cpu, &leaves[..4], 3).is_err());
        assert!(MerkleTree::from_rows_with(hasher, &Cpu, &[Felt::ONE; 7], 2).is_err());
        assert!(MerkleTree::from_rows_with(hasher, &Cpu, &[Felt::ONE; 8], 0).is_err());
        let mut out = vec![Digest::default(); 3];
        assert!(
            Cpu.hash_rows_with(hasher, &[Felt::ONE; 8], 2, &mut out)
                .is_err()
        );
        let root = Digest::default();
        assert!(MerkleTree::verify_with(hasher, &root, 0, &root, &[]).is_err());
        assert!(MerkleTree::verify_with(hasher, &root, 4, &root, &[root; 2]).is_err());
    }
    check(Rp64_256);
    check(RpJive64_256);
    check(Rpo256);
    check(Rpx256);
    check(Poseidon2);
}
