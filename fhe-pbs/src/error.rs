//! The crate's error type.

/// Why a parameter set, key, ciphertext or lookup table was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parameter set that this crate cannot use (see [`crate::Parameters::new`]).
    #[error("invalid parameter `{name}`: {reason}")]
    InvalidParameter {
        /// The offending field.
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// An input whose size does not match the keys or parameters it is used with.
    #[error("dimension mismatch for {what}: expected {expected}, got {got}")]
    DimensionMismatch {
        /// The thing whose size is wrong ("LWE ciphertext length", ...).
        what: &'static str,
        /// The size the keys or parameters call for.
        expected: usize,
        /// The size given.
        got: usize,
    },
    /// Dimensions whose product (a number of words) does not fit a `usize`, or a buffer of
    /// that many words that cannot be allocated.
    #[error("{what}: the dimensions' product overflows or cannot be allocated")]
    SizeOverflow {
        /// The thing whose size it is ("GLWE ciphertext length", ...).
        what: &'static str,
    },
    /// A cleartext message outside `[0, p)`.
    #[error("message {message} is out of range: messages must lie in [0, {modulus})")]
    MessageOutOfRange {
        /// The message given.
        message: u64,
        /// The plaintext modulus `p`.
        modulus: u64,
    },
    /// A lookup-table function whose value is outside `[0, p)`.
    #[error("lookup table: f({input}) = {output} is out of range [0, {modulus})")]
    LutOutputOutOfRange {
        /// The argument.
        input: u64,
        /// The value `f` returned for it.
        output: u64,
        /// The plaintext modulus `p`.
        modulus: u64,
    },
    /// The operating system's entropy source failed (only [`crate::Csprng::from_entropy`]).
    #[error("could not read a seed from the operating system: {0}")]
    Entropy(String),
    /// The GPU failed or is missing (CUDA backend only); see [`GpuFailure`].
    #[cfg(feature = "cuda")]
    #[error(transparent)]
    Gpu(#[from] GpuFailure),
}

/// A [`kernels::GpuError`], shared behind an `Arc` so that [`Error`] stays `Clone` and `Eq`
/// (two failures are equal when they are the same one or have the same message).
#[cfg(feature = "cuda")]
#[derive(Debug, Clone, thiserror::Error)]
#[error(transparent)]
pub struct GpuFailure(std::sync::Arc<kernels::GpuError>);

#[cfg(feature = "cuda")]
impl GpuFailure {
    /// The runtime's error.
    #[must_use]
    pub fn inner(&self) -> &kernels::GpuError {
        &self.0
    }
}

#[cfg(feature = "cuda")]
impl PartialEq for GpuFailure {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

#[cfg(feature = "cuda")]
impl Eq for GpuFailure {}

#[cfg(feature = "cuda")]
impl From<kernels::GpuError> for Error {
    fn from(err: kernels::GpuError) -> Self {
        Error::Gpu(GpuFailure(std::sync::Arc::new(err)))
    }
}
