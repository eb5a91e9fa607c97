//! `merkle` under extreme values, many threads and GPU faults. (It holds no secrets: digests,
//! trees and proofs are public, so point 4 of issue 37 has nothing to check here.)

// Test code throughout: its helpers unwrap as the tests do.
#![allow(clippy::unwrap_used)]

use merkle::{
    BatchProof, Cpu, Digest, Error, Felt, MODULUS, MerkleBackend, MerkleTree, Poseidon2, Rpo256,
    flatten_rows, pad_leaves,
};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::assert_send_sync;

#[test]
fn backends_and_trees_are_send_and_sync() {
    assert_send_sync::<Cpu>();
    assert_send_sync::<merkle::Backend>();
    #[cfg(feature = "cuda")]
    {
        assert_send_sync::<merkle::Cuda>();
        assert_send_sync::<merkle::DeviceTrees>();
        assert_send_sync::<merkle::MultiGpu>();
    }
    assert_send_sync::<MerkleTree>();
    assert_send_sync::<MerkleTree<Poseidon2>>();
    assert_send_sync::<BatchProof>();
    assert_send_sync::<Error>();
}

fn digest(i: u64) -> Digest {
    Digest::new([
        Felt::new(i),
        Felt::new(i ^ 0xabcd),
        Felt::new(3),
        Felt::new(i * 7),
    ])
}

fn digests(n: usize) -> Vec<Digest> {
    (0..n as u64).map(digest).collect()
}

/// usize values at the edges (powers of two, the maximum, its half) and small ones.
fn extreme_usize() -> impl Strategy<Value = usize> {
    prop_oneof![
        Just(0usize),
        Just(1),
        Just(2),
        Just(3),
        Just(usize::MAX),
        Just(usize::MAX / 2 + 1),
        Just(usize::MAX / 2),
        (0u32..usize::BITS).prop_map(|b| 1usize << b),
        0usize..40,
    ]
}

/// `node_arrays_with` (leaves in trees of `leaves_per_tree`) and `node_array_from_rows_with`
/// (`leaves` elements in rows of `leaves_per_tree`) on `backend`: inputs that do not describe
/// whole trees are errors, the others give the node arrays of the CPU's trees.
fn check_node_arrays<B: MerkleBackend>(
    backend: &B,
    leaves: usize,
    leaves_per_tree: usize,
) -> Result<(), TestCaseError> {
    let input = digests(leaves);
    match backend.node_arrays_with(Rpo256, &input, leaves_per_tree) {
        Ok(nodes) => {
            prop_assert!(leaves_per_tree.is_power_of_two() && leaves_per_tree >= 2);
            prop_assert!(leaves > 0 && leaves % leaves_per_tree == 0);
            let trees = leaves / leaves_per_tree;
            let built = MerkleTree::build_batch_with(Rpo256, &Cpu, &input, trees).unwrap();
            let expected: Vec<Digest> = built.iter().flat_map(|t| t.nodes().to_vec()).collect();
            prop_assert_eq!(nodes, expected);
        }
        Err(
            Error::TooFewLeaves { .. } | Error::NotPowerOfTwo { .. } | Error::UnevenBatch { .. },
        ) => {}
        Err(other) => panic!("{other}"),
    }
    let elements: Vec<Felt> = (0..leaves as u64).map(Felt::new).collect();
    match backend.node_array_from_rows_with(Rpo256, &elements, leaves_per_tree) {
        Ok(nodes) => {
            let tree =
                MerkleTree::from_rows_with(Rpo256, &Cpu, &elements, leaves_per_tree).unwrap();
            prop_assert_eq!(&nodes[..], tree.nodes());
        }
        Err(
            Error::EmptyRows
            | Error::PartialRow { .. }
            | Error::TooFewLeaves { .. }
            | Error::NotPowerOfTwo { .. },
        ) => {}
        Err(other) => panic!("{other}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The node arrays `MerkleTree`'s constructors keep, from any leaf count and tree size.
    #[test]
    fn node_arrays_of_any_shape(leaves in 0usize..40, leaves_per_tree in extreme_usize()) {
        check_node_arrays(&Cpu, leaves, leaves_per_tree)?;
    }

    /// Node arrays and leaf counts that do not describe whole trees are errors; those that do
    /// give the trees `MerkleTree::build` gives.
    #[test]
    fn build_nodes_checks_the_batch(nodes in 0usize..40, leaves_per_tree in extreme_usize()) {
        let mut array = vec![Digest::default(); nodes];
        for (i, node) in array.iter_mut().enumerate() {
            *node = digest(i as u64);
        }
        match Cpu.build_nodes(&mut array, leaves_per_tree) {
            Ok(()) => {
                prop_assert!(leaves_per_tree.is_power_of_two() && leaves_per_tree >= 2);
                prop_assert!(nodes > 0 && nodes % (2 * leaves_per_tree) == 0);
                for tree in array.chunks(2 * leaves_per_tree) {
                    let built = MerkleTree::build(&Cpu, &tree[leaves_per_tree..]).unwrap();
                    prop_assert_eq!(&tree[1..], &built.nodes()[1..]);
                }
            }
            Err(Error::TooFewLeaves { leaves }) => prop_assert!(leaves < 2 && leaves == leaves_per_tree),
            Err(Error::NotPowerOfTwo { leaves }) => prop_assert!(!leaves.is_power_of_two()),
            Err(Error::UnevenBatch { .. }) => {
                prop_assert!(nodes == 0 || leaves_per_tree > nodes / 2 || nodes % (2 * leaves_per_tree) != 0);
            }
            Err(other) => panic!("{other}"),
        }
    }

    /// Rows of any width against any output length.
    #[test]
    fn hash_rows_checks_widths(len in 0usize..40, width in extreme_usize(), out_len in 0usize..12) {
        let elements: Vec<Felt> = (0..len as u64).map(Felt::new).collect();
        let mut out = vec![Digest::default(); out_len];
        match Cpu.hash_rows_with(Rpo256, &elements, width, &mut out) {
            Ok(()) => {
                prop_assert!(width > 0 && len % width == 0 && len / width == out_len);
                for (row, digest) in elements.chunks(width).zip(&out) {
                    let mut one = [Digest::default()];
                    Cpu.hash_rows_with(Rpo256, row, row.len(), &mut one).unwrap();
                    prop_assert_eq!(&one[0], digest);
                }
            }
            Err(Error::EmptyRows) => prop_assert_eq!(width, 0),
            Err(Error::PartialRow { .. }) => prop_assert!(len % width != 0 || len / width != out_len),
            Err(other) => panic!("{other}"),
        }
        match MerkleTree::from_rows(&Cpu, &elements, width) {
            Ok(tree) => prop_assert_eq!(tree.leaf_count(), len / width),
            Err(Error::EmptyRows | Error::PartialRow { .. } | Error::TooFewLeaves { .. } | Error::NotPowerOfTwo { .. }) => {}
            Err(other) => panic!("{other}"),
        }
    }

    #[test]
    fn batches_of_any_tree_count(leaves in 0usize..40, trees in extreme_usize()) {
        match MerkleTree::build_batch(&Cpu, &digests(leaves), trees) {
            Ok(built) => {
                prop_assert_eq!(built.len(), trees);
                prop_assert_eq!(built[0].leaf_count() * trees, leaves);
            }
            Err(Error::UnevenBatch { .. } | Error::TooFewLeaves { .. } | Error::NotPowerOfTwo { .. }) => {}
            Err(other) => panic!("{other}"),
        }
    }

    /// Proofs for any index and verification of any path length and index.
    #[test]
    fn proofs_of_any_index(depth in 1u32..6, index in extreme_usize(), path_len in extreme_usize()) {
        let tree = MerkleTree::build(&Cpu, &digests(1 << depth)).unwrap();
        match tree.prove(index) {
            Ok(path) => {
                let leaf = tree.leaves()[index];
                prop_assert!(MerkleTree::verify(tree.root(), index, &leaf, &path).is_ok());
            }
            Err(Error::IndexOutOfRange { index: i, leaves }) => prop_assert!(i >= leaves && i == index),
            Err(other) => panic!("{other}"),
        }
        let path = vec![digest(1); path_len.min(200)];
        match MerkleTree::verify(tree.root(), index, &digest(0), &path) {
            Err(Error::MalformedProof { .. }) => prop_assert!(path.is_empty() || path.len() >= 64),
            Err(Error::IndexOutOfRange { .. }) => prop_assert!(path.len() < 64 && index >> path.len() != 0),
            Err(Error::InvalidProof) => {}
            // The made-up path is the true one (2 leaves, digest(0) and digest(1)).
            Ok(()) => {
                prop_assert_eq!(tree.leaves().get(index), Some(&digest(0)));
                prop_assert_eq!(tree.prove(index).ok(), Some(path.clone()));
            }
            Err(other) => panic!("{other:?}"),
        }
    }

    /// Batch proofs with any depth, index list and node groups: an error, never a panic.
    #[test]
    fn batch_proofs_of_any_shape(
        depth in prop_oneof![Just(0u32), Just(63), Just(64), Just(u32::MAX), 1u32..5],
        indexes in prop::collection::vec(extreme_usize(), 0..5),
        leaves in 0usize..6,
        groups in prop::collection::vec(0usize..8, 0..6),
    ) {
        let tree = MerkleTree::build(&Cpu, &digests(16)).unwrap();
        let proof = BatchProof {
            depth,
            nodes: groups.iter().map(|&n| digests(n)).collect(),
        };
        let result = MerkleTree::verify_batch(tree.root(), &indexes, &digests(leaves), &proof);
        prop_assert!(result.is_err(), "a made-up proof verified");
        // The true proof of in-range, distinct indexes verifies, and not with other leaves.
        let mut wanted: Vec<usize> = indexes.iter().map(|i| i % 16).collect();
        wanted.sort_unstable();
        wanted.dedup();
        if !wanted.is_empty() {
            let proof = tree.prove_batch(&wanted).unwrap();
            let opened: Vec<Digest> = wanted.iter().map(|&i| tree.leaves()[i]).collect();
            prop_assert!(MerkleTree::verify_batch(tree.root(), &wanted, &opened, &proof).is_ok());
            let wrong: Vec<Digest> = wanted.iter().map(|&i| digest(i as u64 + 1000)).collect();
            prop_assert!(matches!(
                MerkleTree::verify_batch(tree.root(), &wanted, &wrong, &proof),
                Err(Error::InvalidProof)
            ));
        }
    }
}

#[test]
fn edges_of_the_small_entry_points() {
    let tree = MerkleTree::build_with(Poseidon2, &Cpu, &digests(8)).unwrap();
    for height in [4, 64, u32::MAX] {
        assert!(matches!(tree.cap(height), Err(Error::CapTooTall { .. })));
        assert!(matches!(
            Cpu.build_cap(&digests(8), height),
            Err(Error::CapTooTall { .. })
        ));
    }
    assert_eq!(tree.cap(3).unwrap(), tree.leaves());
    assert!(matches!(tree.prove_batch(&[]), Err(Error::NoIndexes)));
    assert!(matches!(
        tree.prove_batch(&[3, 3]),
        Err(Error::DuplicateIndex { index: 3 })
    ));
    assert!(matches!(
        tree.prove_batch(&[usize::MAX]),
        Err(Error::IndexOutOfRange { .. })
    ));
    for value in [MODULUS, u64::MAX] {
        assert!(matches!(
            Felt::from_canonical(value),
            Err(Error::NotCanonical { .. })
        ));
        assert!(matches!(
            Digest::from_u64s([0, 0, 0, value]),
            Err(Error::NotCanonical { .. })
        ));
    }
    assert!(matches!(
        Digest::from_bytes(&[0xff; 32]),
        Err(Error::NotCanonical { .. })
    ));
    assert!(matches!(
        flatten_rows::<Vec<Felt>>(&[]),
        Err(Error::EmptyRows)
    ));
    assert!(matches!(
        flatten_rows(&[vec![], vec![Felt::ONE]]),
        Err(Error::EmptyRows)
    ));
    assert!(matches!(
        flatten_rows(&[vec![Felt::ONE], vec![]]),
        Err(Error::RaggedRows { row: 1, .. })
    ));
    let mut none = Vec::new();
    pad_leaves(&mut none);
    assert_eq!(none.len(), 2);
    assert!(MerkleTree::build(&Cpu, &none).is_ok());
    // An odd node array for rows: not a tree.
    let mut nodes = vec![Digest::default(); 5];
    assert!(
        Cpu.build_nodes_from_rows(&[Felt::ONE; 2], 1, &mut nodes)
            .is_err()
    );
    assert!(Cpu.build_nodes_from_rows(&[], 1, &mut []).is_err());
}

// ---------------------------------------------------------------------------------------------
// GPU.

#[cfg(feature = "cuda")]
mod gpu {
    use super::*;
    use crate::kernels::{assert_out_of_memory, fill_device_memory, gpu_lock};
    use merkle::{Cuda, MultiGpu, RpJive64_256, Rpx256};

    fn random_digests(n: usize) -> Vec<Digest> {
        (0..n)
            .map(|_| Digest::new(std::array::from_fn(|_| Felt::new(rand::random::<u64>()))))
            .collect()
    }

    /// The device-tree entry points at the edges: tree indexes and cap heights past the end,
    /// tree counts and row widths that do not divide the input, and empty inputs are errors;
    /// the last tree's cap is the CPU's. The node-array entry points and row widths at the
    /// edges on `Cuda` and on a `MultiGpu` over this GPU given twice.
    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn device_trees_at_the_edges() {
        let _lock = gpu_lock();
        let cuda = Cuda::new().unwrap();
        let multi = MultiGpu::on(&[cuda.gpu().clone(), cuda.gpu().clone()]).unwrap();
        let leaves = random_digests(3 * 8);
        let mut trees = cuda.upload_leaves(&leaves, 3).unwrap();
        cuda.build_device(&mut trees).unwrap();
        for tree in [3, 4, usize::MAX / 2, usize::MAX] {
            assert!(matches!(
                trees.cap(tree, 0),
                Err(Error::TreeOutOfRange { trees: 3, .. })
            ));
        }
        for height in [4, 64, u32::MAX] {
            assert!(matches!(
                trees.cap(2, height),
                Err(Error::CapTooTall { depth: 3, .. })
            ));
        }
        let expected = MerkleTree::build(&Cpu, &leaves[16..]).unwrap();
        assert_eq!(trees.cap(2, 3).unwrap(), expected.cap(3).unwrap());
        assert_eq!(trees.roots().unwrap()[2], *expected.root());
        for count in [0, 5, 7, usize::MAX] {
            assert!(cuda.upload_leaves(&leaves, count).is_err(), "{count} trees");
        }
        assert!(cuda.upload_leaves(&[], 1).is_err());
        let elements: Vec<Felt> = (0..24).map(Felt::new).collect();
        for width in [0, 5, 7, 24, usize::MAX] {
            assert!(
                cuda.hash_rows_to_device(&elements, width).is_err(),
                "width {width}"
            );
        }
        assert!(cuda.hash_rows_to_device(&[], 3).is_err());
        for (leaves, per_tree) in [
            (24, 8),
            (32, 2),
            (16, 16),
            (24, 0),
            (24, 1),
            (24, 3),
            (24, 16),
            (0, 2),
            (16, usize::MAX / 2 + 1),
            (16, usize::MAX),
        ] {
            check_node_arrays(&cuda, leaves, per_tree).unwrap();
            check_node_arrays(&multi, leaves, per_tree).unwrap();
        }
        for width in [0, 5, 7, 25, usize::MAX] {
            let mut out = vec![Digest::default(); 3];
            assert!(
                multi.hash_rows(&elements, width, &mut out).is_err(),
                "width {width} on two GPUs"
            );
        }
    }

    /// Eight threads share one `Cuda`, then one `MultiGpu` over this GPU given twice (trees
    /// of 2^18 leaves split into two subtrees), each call checked against the CPU.
    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn eight_threads_share_one_backend() {
        let _lock = gpu_lock();
        let cuda = Cuda::new().unwrap();
        eight_threads_share(&cuda);
        let multi = MultiGpu::on(&[cuda.gpu().clone(), cuda.gpu().clone()]).unwrap();
        eight_threads_share(&multi);
    }

    fn eight_threads_share<B: MerkleBackend + Sync>(backend: &B) {
        std::thread::scope(|scope| {
            for t in 0..8usize {
                scope.spawn(move || {
                    for call in 0..20usize {
                        let log = [1, 2, 5, 10, 13, 18][(t + call) % 6];
                        let leaves = random_digests(1 << log);
                        let (gpu, cpu) = match call % 4 {
                            0 => (
                                MerkleTree::build(backend, &leaves)
                                    .unwrap()
                                    .root()
                                    .to_owned(),
                                MerkleTree::build(&Cpu, &leaves).unwrap().root().to_owned(),
                            ),
                            1 => (
                                *MerkleTree::build_with(Poseidon2, backend, &leaves)
                                    .unwrap()
                                    .root(),
                                *MerkleTree::build_with(Poseidon2, &Cpu, &leaves)
                                    .unwrap()
                                    .root(),
                            ),
                            2 => (
                                *MerkleTree::build_with(RpJive64_256, backend, &leaves)
                                    .unwrap()
                                    .root(),
                                *MerkleTree::build_with(RpJive64_256, &Cpu, &leaves)
                                    .unwrap()
                                    .root(),
                            ),
                            _ => {
                                // Rows of an awkward width, their count a power of two.
                                let width = [1, 7, 9, 13][t % 4];
                                let elements: Vec<Felt> = (0..width << log)
                                    .map(|_| Felt::new(rand::random::<u64>()))
                                    .collect();
                                (
                                    *MerkleTree::from_rows_with(Rpx256, backend, &elements, width)
                                        .unwrap()
                                        .root(),
                                    *MerkleTree::from_rows_with(Rpx256, &Cpu, &elements, width)
                                        .unwrap()
                                        .root(),
                                )
                            }
                        };
                        assert_eq!(gpu, cpu, "thread {t}, call {call}, 2^{log} leaves");
                    }
                });
            }
        });
    }

    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn out_of_memory_mid_batch_then_the_backend_works() {
        let _lock = gpu_lock();
        let cuda = Cuda::new().unwrap();
        // Compile the kernels while memory is free.
        MerkleTree::build(&cuda, &random_digests(4)).unwrap();
        let leaves = random_digests(1 << 21); // 64 MiB of leaves, 128 MiB of nodes
        let held = fill_device_memory(cuda.gpu(), 64 << 20);
        match MerkleTree::build_batch(&cuda, &leaves, 4) {
            Err(Error::Gpu(error)) => assert_out_of_memory(&error),
            other => panic!("expected an out-of-memory error, got {other:?}"),
        }
        let small = random_digests(64);
        assert_eq!(
            MerkleTree::build(&cuda, &small).unwrap(),
            MerkleTree::build(&Cpu, &small).unwrap()
        );
        drop(held);
        assert_eq!(
            MerkleTree::build_batch(&cuda, &leaves, 4).unwrap(),
            MerkleTree::build_batch(&Cpu, &leaves, 4).unwrap()
        );
    }
}
