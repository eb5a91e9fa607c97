//! Merkle inputs shared by the `merkle` bench and the `report` binary.

use merkle::{Digest, Felt};

/// `count` pseudorandom field elements from `seed` (xorshift64*, reduced mod p).
pub fn felts(seed: u64, count: usize) -> Vec<Felt> {
    let mut state = seed | 1;
    (0..count)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            Felt::new(state.wrapping_mul(0x2545_f491_4f6c_dd1d))
        })
        .collect()
}

/// `count` pseudorandom digests from `seed`.
pub fn digests(seed: u64, count: usize) -> Vec<Digest> {
    felts(seed, 4 * count)
        .chunks_exact(4)
        .map(|c| Digest::new([c[0], c[1], c[2], c[3]]))
        .collect()
}

use merkle::{Cpu, MerkleBackend, MerkleTree};

use crate::progress::Progress;
use crate::table::{Check, Row, row};
use crate::{median_of, wall};

const TREE: &str = "Rp64_256 Merkle tree";
const ROWS: &str = "Rp64_256 hash of rows (100 elements)";

/// Report sizes: the CPU tree and rows fit a 2-core machine in well under a second; the GPU
/// tree is the published baseline's 2^20 leaves.
const CPU_LEAVES: usize = 1 << 14;
#[cfg(feature = "cuda")]
const GPU_LEAVES: usize = 1 << 20;
const ROW_COUNT: usize = 1 << 12;
const ROW_WIDTH: usize = 100;

/// Steps of [`cpu_rows`], one per measured row.
pub const CPU_STEPS: u64 = 2;
/// Steps of [`cuda_rows`], one per measured row.
pub const CUDA_STEPS: u64 = 2;

/// The CPU outputs the GPU rows are checked against (only the CUDA rows read them).
#[derive(Debug)]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub struct Reference {
    leaves: Vec<Digest>,
    tree: MerkleTree,
    elements: Vec<Felt>,
    row_digests: Vec<Digest>,
}

/// Runs the CPU rows (all threads) and returns them with their outputs.
pub fn cpu_rows(progress: &Progress) -> Result<(Vec<Row>, Reference), merkle::Error> {
    let backend = Cpu.name();
    progress.step(TREE, &backend);
    let leaves = digests(1, CPU_LEAVES);
    let (tree, time) = median_of(3, || wall(|| MerkleTree::build(&Cpu, &leaves)))?;
    let mut rows = vec![row(
        TREE,
        &backend,
        CPU_LEAVES as u64,
        "leaves",
        0,
        time,
        Check::Reference,
    )];
    progress.step(ROWS, &backend);
    let elements = felts(2, ROW_COUNT * ROW_WIDTH);
    let mut row_digests = vec![Digest::default(); ROW_COUNT];
    let ((), time) = median_of(3, || {
        wall(|| Cpu.hash_rows(&elements, ROW_WIDTH, &mut row_digests))
    })?;
    rows.push(row(
        ROWS,
        &backend,
        elements.len() as u64,
        "elements",
        0,
        time,
        Check::Reference,
    ));
    Ok((
        rows,
        Reference {
            leaves,
            tree,
            elements,
            row_digests,
        },
    ))
}

/// Runs the CUDA rows: a 2^20-leaf tree with the leaves already on the GPU (timed with CUDA
/// events), and row hashing host to host. Checks the CPU's inputs give the CPU's outputs.
#[cfg(feature = "cuda")]
pub fn cuda_rows(
    cuda: &merkle::Cuda,
    reference: &Reference,
    progress: &Progress,
) -> Result<Vec<Row>, merkle::Error> {
    let backend = cuda.name();
    progress.step(TREE, &backend);
    let same_tree = MerkleTree::build(cuda, &reference.leaves)? == reference.tree;
    let leaves = digests(3, GPU_LEAVES);
    let mut device = cuda.upload_leaves(&leaves, 1)?;
    let gpu = cuda.gpu();
    let (root, time) = median_of(5, || {
        let ((), time) = gpu.time(|| cuda.build_device(&mut device))?;
        Ok::<_, merkle::Error>((device.roots()?[0], time))
    })?;
    let same_root = root == *MerkleTree::build(&Cpu, &leaves)?.root();
    let check = Check::from_equal(same_tree && same_root, "tree differs from the CPU's");
    let mut rows = vec![row(
        TREE,
        &backend,
        GPU_LEAVES as u64,
        "leaves",
        0,
        time,
        check,
    )];

    progress.step(ROWS, &backend);
    let mut out = vec![Digest::default(); ROW_COUNT];
    let ((), time) = median_of(3, || {
        wall(|| cuda.hash_rows(&reference.elements, ROW_WIDTH, &mut out))
    })?;
    let check = Check::from_equal(
        out == reference.row_digests,
        "row digests differ from the CPU's",
    );
    rows.push(row(
        ROWS,
        &backend,
        reference.elements.len() as u64,
        "elements",
        0,
        time,
        check,
    ));
    Ok(rows)
}
