//! The crate's error type.

/// Why a `merkle` operation could not be done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A value that is not a canonical field element (`value >= p`).
    #[error("{value} is not a canonical Goldilocks element (it is >= 2^64 - 2^32 + 1)")]
    NotCanonical {
        /// The offending value.
        value: u64,
    },
    /// A tree needs at least two leaves.
    #[error("a Merkle tree needs at least 2 leaves, not {leaves}")]
    TooFewLeaves {
        /// Leaves given.
        leaves: usize,
    },
    /// The leaf count of a tree must be a power of two.
    #[error(
        "a Merkle tree needs a power-of-two number of leaves, not {leaves} (pad with \
         `pad_leaves` to {} if that is what you want)",
        leaves.next_power_of_two()
    )]
    NotPowerOfTwo {
        /// Leaves given.
        leaves: usize,
    },
    /// A leaf index past the end of the tree.
    #[error("leaf index {index} is out of range for a tree of {leaves} leaves")]
    IndexOutOfRange {
        /// The index asked for.
        index: usize,
        /// Leaves in the tree.
        leaves: usize,
    },
    /// A batch proof asked for no leaves.
    #[error("a batch proof needs at least one leaf index")]
    NoIndexes,
    /// A leaf index given twice to a batch proof.
    #[error("leaf index {index} appears more than once")]
    DuplicateIndex {
        /// The repeated index.
        index: usize,
    },
    /// Leaves and indexes of a batch verification differ in number.
    #[error("{leaves} leaves were given for {indexes} indexes")]
    LeafCountMismatch {
        /// Leaves given.
        leaves: usize,
        /// Indexes given.
        indexes: usize,
    },
    /// A proof that does not lead to the root.
    #[error("the Merkle proof does not match the root")]
    InvalidProof,
    /// A proof whose shape does not fit the tree (wrong depth or node count).
    #[error("malformed Merkle proof: {why}")]
    MalformedProof {
        /// What is wrong with it.
        why: String,
    },
    /// Rows of a matrix with different lengths.
    #[error("row {row} has {len} elements, but row 0 has {expected}")]
    RaggedRows {
        /// Index of the first row whose length differs.
        row: usize,
        /// Its length.
        len: usize,
        /// The length of row 0.
        expected: usize,
    },
    /// A flat element buffer that is not a whole number of rows.
    #[error("{len} elements are not a whole number of rows of {width}")]
    PartialRow {
        /// Elements given.
        len: usize,
        /// Row width.
        width: usize,
    },
    /// A row width of zero.
    #[error("rows must have at least one element")]
    EmptyRows,
    /// A multi-GPU backend given no GPUs.
    #[error("a multi-GPU backend needs at least one GPU")]
    NoGpus,
    /// A batch whose leaves are not `trees` equal parts.
    #[error("{leaves} leaves do not split into {trees} trees of equal size")]
    UnevenBatch {
        /// Leaves given.
        leaves: usize,
        /// Trees asked for.
        trees: usize,
    },
    /// A cap taller than the tree.
    #[error("a cap of height {height} does not fit a tree of depth {depth}")]
    CapTooTall {
        /// Cap height asked for (the cap has 2^height nodes).
        height: u32,
        /// Depth of the tree.
        depth: u32,
    },
    /// A tree index past the end of a batch of trees.
    #[error("tree {tree} is out of range for a batch of {trees} trees")]
    TreeOutOfRange {
        /// The tree asked for.
        tree: usize,
        /// Trees in the batch.
        trees: usize,
    },
    /// An error of the GPU runtime (no driver, compilation, launch, memory).
    #[error(transparent)]
    Gpu(#[from] kernels::GpuError),
}
