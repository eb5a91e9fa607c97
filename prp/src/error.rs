//! The crate's error type.

/// Why a `prp` operation could not be done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Blocks past the end of the 32-bit block counter were asked for.
    #[error("blocks {counter} .. {counter} + {blocks} run past the 2^32 blocks of a ChaCha stream")]
    CounterOverflow {
        /// First block.
        counter: u32,
        /// Number of blocks.
        blocks: u64,
    },
    /// A device buffer whose length is not a whole number of units.
    #[error("buffer of {len} bytes is not a multiple of {unit} bytes")]
    BufferLength {
        /// The buffer's length in bytes.
        len: usize,
        /// The unit it must be a multiple of.
        unit: usize,
    },
    /// A permutation over fewer than two values.
    #[error("a permutation needs a domain of at least 2 values, not {domain}")]
    DomainTooSmall {
        /// The domain size asked for.
        domain: u64,
    },
    /// An input outside the domain `[0, domain)`.
    #[error("{value} is outside the domain [0, {domain})")]
    OutOfDomain {
        /// The input.
        value: u64,
        /// The domain size.
        domain: u64,
    },
    /// An output outside the range `[0, range)` (a bin of the sampler or the iPRF).
    #[error("{value} is outside the range [0, {range})")]
    OutOfRange {
        /// The output asked about.
        value: u64,
        /// The range size.
        range: u64,
    },
    /// Permutations that must share a domain do not.
    #[error("permutations of different domains: {expected} and {found}")]
    DomainMismatch {
        /// The first permutation's domain.
        expected: u64,
        /// Another's.
        found: u64,
    },
    /// A sampler or iPRF over no values (`m = 0`).
    #[error("the domain of the sampler or iPRF is empty (m = 0)")]
    EmptyDomain,
    /// A bin count that is not a power of two.
    #[error("the number of bins must be a power of two, not {bins}")]
    BinsNotPowerOfTwo {
        /// The bin count asked for.
        bins: u64,
    },
    /// More rounds than the nonce layout allows.
    #[error("{rounds} rounds is more than the 2^24 a stage may have")]
    TooManyRounds {
        /// The round count asked for.
        rounds: u32,
    },
    /// A size past what this crate supports.
    #[error("{what} of {value} is more than the {max} supported")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// Its value.
        value: u64,
        /// The largest supported value.
        max: u64,
    },
    /// A multi-GPU backend given no GPUs.
    #[error("a multi-GPU backend needs at least one GPU")]
    NoGpus,
    /// The GPU could not be used (no driver, no device, compile or driver failure).
    #[error(transparent)]
    Gpu(#[from] kernels::GpuError),
}
