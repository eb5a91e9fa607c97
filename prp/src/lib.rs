//! ChaCha-based pseudorandom permutations and an invertible PRF, on CPU and CUDA.
//!
//! # What this crate provides
//!
//! - **Now:** the ChaCha block function of SPEC.md ("Common building blocks"), one generic
//!   core for 8, 12 and 20 rounds ([`ChaCha8`], [`ChaCha12`], [`ChaCha20`]), and bulk
//!   keystream generation behind the [`Keystream`] trait, implemented by the CPU reference
//!   [`Cpu`] and, with the default feature `cuda`, by [`Cuda`].
//! - **Next** (SPEC.md, section "prp: SwapOrNot, Sometimes-Recurse, invertible PRF"): the
//!   SwapOrNot small-domain PRP, the Sometimes-Recurse full-domain PRP, the pseudorandom
//!   multinomial sampler (PMNS) and the invertible PRF, each forward and inverse, on both
//!   backends. The `pir-hints` crate (Plinko) builds on them.
//!
//! # Cross-checking
//!
//! For every key, nonce and counter, the 64 bytes of [`block`] equal RustCrypto's
//! `chacha20::ChaCha8`/`ChaCha12`/`ChaCha20` (IETF variant) keystream at byte `64 * counter`,
//! with nonce bytes = the little-endian encoding of the three nonce words. The tests check
//! this with known answers (RFC 8439 §2.3.2) and property tests; the GPU tests (ignored
//! unless run with `--include-ignored` on a CUDA machine) check [`Cuda`] against [`Cpu`].
//!
//! # Example
//!
//! ```
//! use prp::{Backend, ChaCha8, Key, Keystream};
//!
//! # fn main() -> Result<(), prp::Error> {
//! let stream = ChaCha8::new(Key::new(&[42; 32]), [0, 0, 0]);
//! let backend = Backend::best(); // CUDA if a GPU is usable, else the CPU
//! let mut keystream = vec![0u8; 1000];
//! backend.fill_keystream(&stream, 0, &mut keystream)?;
//! let first = stream.block(0);
//! assert_eq!(keystream[..4], first[0].to_le_bytes());
//! # Ok(()) }
//! ```

#![cfg_attr(not(feature = "cuda"), forbid(unsafe_code))]

mod chacha;
mod cpu;
#[cfg(feature = "cuda")]
mod cuda;
mod error;
mod key;

pub use chacha::{
    BLOCK_BYTES, CONSTANTS, ChaCha, ChaCha8, ChaCha12, ChaCha20, R8, R12, R20, Rounds, block,
};
pub use cpu::Cpu;
#[cfg(feature = "cuda")]
pub use cuda::Cuda;
pub use error::Error;
pub use key::Key;

/// Bulk ChaCha keystream generation: the operation [`Cpu`] and [`Cuda`] both implement, so
/// that tests and benchmarks take `B: Keystream` and run on either.
pub trait Keystream {
    /// The backend and the device it runs on, for reports.
    fn name(&self) -> String;

    /// Writes the keystream of `stream` from block `counter` on into `out`: block
    /// `counter + i` fills bytes `64 i .. 64 i + 64`, a final partial block its first bytes.
    ///
    /// Errors with [`Error::CounterOverflow`] if the blocks would pass block `2^32 - 1`.
    fn fill_keystream<R: Rounds>(
        &self,
        stream: &ChaCha<R>,
        counter: u32,
        out: &mut [u8],
    ) -> Result<(), Error>;

    /// The word-by-word wrapping sum of blocks `counter .. counter + blocks`: a 64-byte digest
    /// of a keystream that is never stored, which measures the block function itself.
    fn keystream_digest<R: Rounds>(
        &self,
        stream: &ChaCha<R>,
        counter: u32,
        blocks: u64,
    ) -> Result<[u32; 16], Error>;
}

/// The best available backend: CUDA when a usable GPU exists, else the CPU.
#[derive(Debug, Clone)]
pub enum Backend {
    /// The CPU reference.
    Cpu(Cpu),
    /// The CUDA backend.
    #[cfg(feature = "cuda")]
    Cuda(Cuda),
}

impl Backend {
    /// CUDA on the first GPU if one can be opened, else the CPU. Says on standard error why it
    /// fell back, so that a missing driver is never silent.
    pub fn best() -> Self {
        #[cfg(feature = "cuda")]
        match Cuda::new() {
            Ok(cuda) => return Backend::Cuda(cuda),
            Err(why) => eprintln!("prp: using the CPU backend: {why}"),
        }
        Backend::Cpu(Cpu)
    }
}

impl Keystream for Backend {
    fn name(&self) -> String {
        match self {
            Backend::Cpu(b) => b.name(),
            #[cfg(feature = "cuda")]
            Backend::Cuda(b) => b.name(),
        }
    }

    fn fill_keystream<R: Rounds>(
        &self,
        stream: &ChaCha<R>,
        counter: u32,
        out: &mut [u8],
    ) -> Result<(), Error> {
        match self {
            Backend::Cpu(b) => b.fill_keystream(stream, counter, out),
            #[cfg(feature = "cuda")]
            Backend::Cuda(b) => b.fill_keystream(stream, counter, out),
        }
    }

    fn keystream_digest<R: Rounds>(
        &self,
        stream: &ChaCha<R>,
        counter: u32,
        blocks: u64,
    ) -> Result<[u32; 16], Error> {
        match self {
            Backend::Cpu(b) => b.keystream_digest(stream, counter, blocks),
            #[cfg(feature = "cuda")]
            Backend::Cuda(b) => b.keystream_digest(stream, counter, blocks),
        }
    }
}
