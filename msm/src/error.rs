//! The crate's error type.

/// Why an MSM could not be computed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Bases and scalars differ in number.
    #[error("an MSM needs one scalar per base: {bases} bases but {scalars} scalars were given")]
    LengthMismatch {
        /// Bases given.
        bases: usize,
        /// Scalars given.
        scalars: usize,
    },
    /// One scalar set of a batch differs in length from the bases.
    #[error(
        "scalar set {set} of the batch has {scalars} scalars, but there are {bases} bases \
         (every set needs one scalar per base)"
    )]
    BatchLengthMismatch {
        /// Index of the offending set in the batch.
        set: usize,
        /// Bases given.
        bases: usize,
        /// Scalars in that set.
        scalars: usize,
    },
    /// No bases and no scalars.
    #[error("an MSM needs at least one base and one scalar, but both slices are empty")]
    Empty,
    /// A window width outside the supported range.
    #[error("window width of {bits} bits is not supported (use 1 to {max} bits)")]
    InvalidWindow {
        /// The width asked for.
        bits: u32,
        /// The widest supported window.
        max: u32,
    },
    /// Scratch memory could not be allocated.
    #[error(
        "out of memory: could not allocate {bytes} bytes of scratch memory for an MSM of \
         {points} points"
    )]
    OutOfMemory {
        /// The size of the allocation that failed.
        bytes: usize,
        /// Points in the MSM.
        points: usize,
    },
    /// The bases (with their shifted copies) do not fit in the GPU's free memory.
    #[error(
        "{points} bases ({copies} cop{plural}) need {bytes} bytes of GPU memory, but only \
         {free} bytes are free: use fewer bases, no shifted copies, or a wider window",
        plural = if *copies == 1 { "y" } else { "ies" }
    )]
    BasesTooLarge {
        /// Bases given.
        points: usize,
        /// Copies of the bases kept (one per window with shifted bases).
        copies: usize,
        /// Bytes the copies need.
        bytes: usize,
        /// Bytes of GPU memory free.
        free: usize,
    },
    /// The circuit could not be synthesized (a missing assignment, a domain too large for the
    /// scalar field, ...): arkworks' error.
    #[cfg(feature = "groth16")]
    #[error("the circuit could not be synthesized: {0}")]
    Synthesis(#[from] ark_relations::r1cs::SynthesisError),
    /// The witness does not satisfy the circuit: no valid proof exists for it.
    #[cfg(feature = "groth16")]
    #[error("the witness does not satisfy constraint {constraint} of the circuit")]
    Unsatisfied {
        /// Index of the first unsatisfied constraint.
        constraint: usize,
    },
    /// A query vector of the proving key does not fit the circuit (the key was made for
    /// another circuit).
    #[cfg(feature = "groth16")]
    #[error(
        "the proving key's {query} has {key} points, but the circuit needs {circuit} \
         (the key was made for another circuit)"
    )]
    KeyMismatch {
        /// The query vector ("a_query", "h_query", ...).
        query: &'static str,
        /// Its length in the key.
        key: usize,
        /// The length the circuit needs.
        circuit: usize,
    },
    /// The GPU failed or is missing.
    #[cfg(feature = "cuda")]
    #[error(transparent)]
    Gpu(#[from] kernels::GpuError),
}
