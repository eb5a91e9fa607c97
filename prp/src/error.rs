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
    /// The GPU could not be used (no driver, no device, compile or driver failure).
    #[error(transparent)]
    Gpu(#[from] kernels::GpuError),
}
