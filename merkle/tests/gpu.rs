//! The CUDA backend against the CPU reference on fresh random trees, batches and rows.
//! Ignored by default: run with `cargo test --release -- --include-ignored` on a CUDA machine.
//! They fail, never skip, when no GPU is usable.
#![cfg(feature = "cuda")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::OnceLock;

use merkle::{
    Cpu, Cuda, Digest, Felt, Hasher, MODULUS, MerkleBackend, MerkleTree, MultiGpu, Poseidon2,
    Rp64_256, RpJive64_256, Rpo256, Rpx256,
};
use proptest::prelude::*;
use proptest::test_runner::TestRng;
use rand::Rng;

fn cuda() -> &'static Cuda {
    static CUDA: OnceLock<Cuda> = OnceLock::new();
    CUDA.get_or_init(|| Cuda::new().expect("these tests need a usable CUDA GPU"))
}

fn rng(seed: &[u8; 32]) -> TestRng {
    TestRng::from_seed(proptest::test_runner::RngAlgorithm::ChaCha, seed)
}

/// Random elements with the field's edges (0, p - 1) mixed in.
fn felts(rng: &mut TestRng, count: usize) -> Vec<Felt> {
    (0..count)
        .map(|_| match rng.random_range(0..16) {
            0 => Felt::ZERO,
            1 => Felt::new(MODULUS - 1),
            _ => Felt::new(rng.random()),
        })
        .collect()
}

fn digests(rng: &mut TestRng, count: usize) -> Vec<Digest> {
    felts(rng, 4 * count)
        .chunks_exact(4)
        .map(|c| Digest::new([c[0], c[1], c[2], c[3]]))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Trees of 2 to 2^20 leaves: sizes below, at and above one fused launch (2^9 nodes).
    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn trees_equal_the_cpu(seed: [u8; 32], depth in 1u32..=20) {
        let mut rng = rng(&seed);
        let leaves = digests(&mut rng, 1 << depth);
        let expected = MerkleTree::build(&Cpu, &leaves).unwrap();
        let got = MerkleTree::build(cuda(), &leaves).unwrap();
        prop_assert_eq!(got.root(), expected.root(), "depth {}", depth);
        prop_assert!(got.nodes() == expected.nodes(), "nodes differ at depth {}", depth);
        let height = depth / 2;
        prop_assert_eq!(cuda().build_cap(&leaves, height).unwrap(), expected.cap(height).unwrap());
    }

    /// Batches of equal-size trees, device-resident roots and caps included.
    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn batches_equal_the_cpu(seed: [u8; 32], depth in 1u32..=13, trees in 1usize..=9) {
        let mut rng = rng(&seed);
        let leaves = digests(&mut rng, trees << depth);
        let expected = MerkleTree::build_batch(&Cpu, &leaves, trees).unwrap();
        let got = MerkleTree::build_batch(cuda(), &leaves, trees).unwrap();
        prop_assert!(got == expected, "depth {}, {} trees", depth, trees);

        let mut device = cuda().upload_leaves(&leaves, trees).unwrap();
        cuda().build_device(&mut device).unwrap();
        let roots: Vec<Digest> = expected.iter().map(|t| *t.root()).collect();
        prop_assert_eq!(device.roots().unwrap(), roots);
        prop_assert_eq!(device.cap(trees - 1, depth).unwrap(), expected[trees - 1].leaves());
        prop_assert!(device.download().unwrap() == expected);
    }

    /// Row hashing for widths around the rate (8) and its multiples, and trees from rows.
    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn rows_equal_the_cpu(seed: [u8; 32], width in prop::sample::select(vec![1usize, 3, 7, 8, 9, 15, 16, 17, 64, 100, 255]), depth in 1u32..=12) {
        let mut rng = rng(&seed);
        let elements = felts(&mut rng, width << depth);
        let mut expected = vec![Digest::default(); 1 << depth];
        Cpu.hash_rows(&elements, width, &mut expected).unwrap();
        let mut got = vec![Digest::default(); 1 << depth];
        cuda().hash_rows(&elements, width, &mut got).unwrap();
        prop_assert_eq!(&got, &expected, "width {}", width);
        let tree = MerkleTree::from_rows(cuda(), &elements, width).unwrap();
        prop_assert_eq!(tree.leaves(), &expected[..]);
        prop_assert!(tree == MerkleTree::build(&Cpu, &expected).unwrap());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Host data through staging chunks of 1 byte (one element or one row a chunk) to 4 KiB,
    /// so every transfer crosses many chunk boundaries and rows are often wider than a chunk:
    /// trees, batches, rows and trees from rows, for Rp64_256 (quads of lanes a row) and
    /// Poseidon2 (a thread a row).
    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn small_staging_chunks_equal_the_cpu(seed: [u8; 32], bytes in 1usize..=4096,
                                          width in widths(), depth in 1u32..=10, trees in 1usize..=3) {
        let gpu = cuda().with_staging_bytes(bytes);
        let mut rng = rng(&seed);
        let leaves = digests(&mut rng, trees << depth);
        let expected = MerkleTree::build_batch(&Cpu, &leaves, trees).unwrap();
        prop_assert!(MerkleTree::build_batch(&gpu, &leaves, trees).unwrap() == expected);
        let mut device = gpu.upload_leaves(&leaves, trees).unwrap();
        gpu.build_device(&mut device).unwrap();
        prop_assert!(device.download().unwrap() == expected);

        let elements = felts(&mut rng, width << depth);
        let mut expected = vec![Digest::default(); 1 << depth];
        Cpu.hash_rows(&elements, width, &mut expected).unwrap();
        let mut got = vec![Digest::default(); 1 << depth];
        gpu.hash_rows(&elements, width, &mut got).unwrap();
        prop_assert_eq!(&got, &expected, "{} bytes, width {}", bytes, width);
        let tree = MerkleTree::from_rows(&gpu, &elements, width).unwrap();
        prop_assert!(tree == MerkleTree::build(&Cpu, &expected).unwrap());
        let tree = MerkleTree::from_rows_with(Poseidon2, &gpu, &elements, width).unwrap();
        prop_assert!(tree == MerkleTree::from_rows_with(Poseidon2, &Cpu, &elements, width).unwrap());
    }
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn bad_input_is_an_error_on_the_gpu_too() {
    let leaves = vec![Digest::default(); 6];
    assert!(matches!(
        MerkleTree::build(cuda(), &leaves),
        Err(merkle::Error::NotPowerOfTwo { leaves: 6 })
    ));
    assert!(matches!(
        MerkleTree::build(cuda(), &leaves[..1]),
        Err(merkle::Error::TooFewLeaves { leaves: 1 })
    ));
    assert!(matches!(
        cuda().upload_leaves(&leaves, 4),
        Err(merkle::Error::UnevenBatch { .. })
    ));
    let mut out = vec![Digest::default(); 3];
    assert!(cuda().hash_rows(&[Felt::ZERO; 10], 3, &mut out).is_err());
}

/// Single trees, batches, rows and trees from rows of hasher `H` on `gpus` against the CPU:
/// trees below, at and above the sizes split into two and four subtrees (of at least 2^17
/// leaves), batches of whole trees, and row counts around the split (at least 4,096 rows a
/// GPU).
fn check_multi_gpu<H: Hasher>(hasher: H, gpus: &MultiGpu, rng: &mut TestRng) {
    let name = format!("{} on {}", H::NAME, gpus.name());
    for depth in [1, 16, 17, 18, 19] {
        let leaves = digests(rng, 1 << depth);
        let expected = MerkleTree::build_with(hasher, &Cpu, &leaves).unwrap();
        let got = MerkleTree::build_with(hasher, gpus, &leaves).unwrap();
        assert!(got == expected, "{name}: tree of depth {depth}");
        assert_eq!(
            gpus.build_cap_with(hasher, &leaves, 3.min(depth)).unwrap(),
            expected.cap(3.min(depth)).unwrap(),
            "{name}: cap of depth {depth}"
        );
    }
    // Batches of 2^18-leaf trees: on four GPUs, two trees take two GPUs each as subtrees and
    // three trees go whole.
    for (trees, depth) in [(2, 1), (3, 10), (5, 12), (7, 15), (2, 18), (3, 18)] {
        let leaves = digests(rng, trees << depth);
        let expected = MerkleTree::build_batch_with(hasher, &Cpu, &leaves, trees).unwrap();
        let got = MerkleTree::build_batch_with(hasher, gpus, &leaves, trees).unwrap();
        assert!(got == expected, "{name}: {trees} trees of depth {depth}");
        // The same batch filled in place.
        let mut nodes = vec![Digest::default(); 2 * leaves.len()];
        for (tree, part) in nodes
            .chunks_exact_mut(2 << depth)
            .zip(leaves.chunks_exact(1 << depth))
        {
            tree[1 << depth..].copy_from_slice(part);
        }
        let mut expected = nodes.clone();
        Cpu.build_nodes_with(hasher, &mut expected, 1 << depth)
            .unwrap();
        gpus.build_nodes_with(hasher, &mut nodes, 1 << depth)
            .unwrap();
        assert!(
            nodes == expected,
            "{name}: {trees} trees of depth {depth} in place"
        );
    }
    for (rows, width) in [
        (1, 9),
        (4095, 8),
        (4097, 1),
        (3 * 4096 + 1, 17),
        (20_000, 100),
    ] {
        let elements = felts(rng, rows * width);
        let mut expected = vec![Digest::default(); rows];
        Cpu.hash_rows_with(hasher, &elements, width, &mut expected)
            .unwrap();
        let mut got = vec![Digest::default(); rows];
        gpus.hash_rows_with(hasher, &elements, width, &mut got)
            .unwrap();
        assert_eq!(got, expected, "{name}: {rows} rows of width {width}");
    }
    for (depth, width) in [(2, 3), (16, 8), (17, 9), (18, 1), (19, 2)] {
        let elements = felts(rng, width << depth);
        let expected = MerkleTree::from_rows_with(hasher, &Cpu, &elements, width).unwrap();
        let got = MerkleTree::from_rows_with(hasher, gpus, &elements, width).unwrap();
        assert!(
            got == expected,
            "{name}: tree from 2^{depth} rows of width {width}"
        );
    }
    let mut out = vec![Digest::default(); 3];
    assert!(
        gpus.hash_rows_with(hasher, &[Felt::ZERO; 10], 3, &mut out)
            .is_err()
    );
    assert!(matches!(
        MerkleTree::build_with(hasher, gpus, &digests(rng, 6)),
        Err(merkle::Error::NotPowerOfTwo { leaves: 6 })
    ));
}

/// `MultiGpu` on every GPU of the host, and on this test's GPU given 1 to 4 times (so a
/// one-GPU machine splits the work too), against the CPU with Rp64_256 and then Poseidon2 on
/// new backends, the first ones dropped; an empty GPU list is an error.
#[test]
#[ignore = "requires a CUDA GPU"]
fn multi_gpu_equals_the_cpu() {
    let mut rng = rng(&[11; 32]);
    let gpu = cuda().gpu();
    for round in 0..2 {
        let mut backends = vec![MultiGpu::new().unwrap()];
        for count in 1..=4 {
            backends.push(MultiGpu::on(&vec![gpu.clone(); count]).unwrap());
        }
        for gpus in &backends {
            if round == 0 {
                check_multi_gpu(Rp64_256, gpus, &mut rng);
            } else {
                check_multi_gpu(Poseidon2, gpus, &mut rng);
            }
        }
    }
    assert!(matches!(MultiGpu::on(&[]), Err(merkle::Error::NoGpus)));
}

/// Trees, batches (device-resident included), caps and rows of hasher `H` on the GPU against
/// the CPU: a tree of `2^depth` leaves, a batch of `trees` trees of `2^batch_depth` leaves, and
/// `2^depth` rows of `width` elements.
fn check_hasher<H: Hasher>(
    hasher: H,
    seed: &[u8; 32],
    depth: u32,
    batch_depth: u32,
    trees: usize,
    width: usize,
) -> Result<(), TestCaseError> {
    let mut rng = rng(seed);
    let name = H::NAME;
    let leaves = digests(&mut rng, 1 << depth);
    let expected = MerkleTree::build_with(hasher, &Cpu, &leaves).unwrap();
    let got = MerkleTree::build_with(hasher, cuda(), &leaves).unwrap();
    prop_assert!(got == expected, "{}: tree of depth {}", name, depth);
    let height = depth / 2;
    prop_assert_eq!(
        cuda().build_cap_with(hasher, &leaves, height).unwrap(),
        expected.cap(height).unwrap()
    );

    let leaves = digests(&mut rng, trees << batch_depth);
    let expected = MerkleTree::build_batch_with(hasher, &Cpu, &leaves, trees).unwrap();
    let got = MerkleTree::build_batch_with(hasher, cuda(), &leaves, trees).unwrap();
    prop_assert!(
        got == expected,
        "{}: {} trees of depth {}",
        name,
        trees,
        batch_depth
    );
    let mut device = cuda().upload_leaves_with(hasher, &leaves, trees).unwrap();
    cuda().build_device(&mut device).unwrap();
    let roots: Vec<Digest> = expected.iter().map(|t| *t.root()).collect();
    prop_assert_eq!(device.roots().unwrap(), roots);
    prop_assert!(device.download().unwrap() == expected);

    let elements = felts(&mut rng, width << depth);
    let mut expected = vec![Digest::default(); 1 << depth];
    Cpu.hash_rows_with(hasher, &elements, width, &mut expected)
        .unwrap();
    let mut got = vec![Digest::default(); 1 << depth];
    cuda()
        .hash_rows_with(hasher, &elements, width, &mut got)
        .unwrap();
    prop_assert_eq!(&got, &expected, "{}: rows of width {}", name, width);
    let tree = MerkleTree::from_rows_with(hasher, cuda(), &elements, width).unwrap();
    prop_assert!(tree == MerkleTree::build_with(hasher, &Cpu, &expected).unwrap());
    Ok(())
}

/// Row widths around each rate (4 for RpJive64_256, 8 for the others) and its multiples.
fn widths() -> impl Strategy<Value = usize> {
    prop::sample::select(vec![1usize, 3, 4, 5, 7, 8, 9, 15, 16, 17, 64, 100, 255])
}

// Trees of up to 2^16 leaves and batches of up to 5 trees of 2^12 leaves run every level
// kernel: the Rescue family's quads of lanes (from 2^13 merges) and half warps; Poseidon2's one
// thread per hash (from 2^14 merges), quads, and the one launch on half warps from 2^10 merges
// to the roots, which batches enter at a level of several trees.
proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]

    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn rpo256_equals_the_cpu(seed: [u8; 32], depth in 1u32..=16, batch_depth in 1u32..=12,
                             trees in 1usize..=5, width in widths()) {
        check_hasher(Rpo256, &seed, depth, batch_depth, trees, width)?;
    }

    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn rpx256_equals_the_cpu(seed: [u8; 32], depth in 1u32..=16, batch_depth in 1u32..=12,
                             trees in 1usize..=5, width in widths()) {
        check_hasher(Rpx256, &seed, depth, batch_depth, trees, width)?;
    }

    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn poseidon2_equals_the_cpu(seed: [u8; 32], depth in 1u32..=16, batch_depth in 1u32..=12,
                                trees in 1usize..=5, width in widths()) {
        check_hasher(Poseidon2, &seed, depth, batch_depth, trees, width)?;
    }

    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn rp_jive64_256_equals_the_cpu(seed: [u8; 32], depth in 1u32..=16, batch_depth in 1u32..=12,
                                    trees in 1usize..=5, width in widths()) {
        check_hasher(RpJive64_256, &seed, depth, batch_depth, trees, width)?;
    }
}

/// Digests at the field's edges through every hasher's kernels: all zero, all `p - 1`. Trees
/// of 2^15 leaves run their first levels on the wide kernels (the Rescue family's quads from
/// 2^13 merges, Poseidon2's one thread per hash from 2^14), the rest on the narrow ones (and
/// Poseidon2's one launch near the root); an all-zero state makes the MDS sums' high words
/// zero.
#[test]
#[ignore = "requires a CUDA GPU"]
fn edge_values_equal_the_cpu() {
    fn check<H: Hasher>(hasher: H) {
        for value in [0, 1, MODULUS - 1, MODULUS - 2, 1 << 32, (1 << 32) - 1] {
            let leaves = vec![Digest::new([Felt::new(value); 4]); 1 << 15];
            let expected = MerkleTree::build_with(hasher, &Cpu, &leaves).unwrap();
            let got = MerkleTree::build_with(hasher, cuda(), &leaves).unwrap();
            assert!(got == expected, "{} at {value}", H::NAME);
            let elements = vec![Felt::new(value); 64 * 11];
            let got = MerkleTree::from_rows_with(hasher, cuda(), &elements, 11).unwrap();
            let expected = MerkleTree::from_rows_with(hasher, &Cpu, &elements, 11).unwrap();
            assert!(got == expected, "{} rows at {value}", H::NAME);
        }
    }
    check(merkle::Rp64_256);
    check(RpJive64_256);
    check(Rpo256);
    check(Rpx256);
    check(Poseidon2);
}
