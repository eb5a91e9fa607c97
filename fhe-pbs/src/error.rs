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
}
