//! ChaCha-based pseudorandom permutations and an invertible PRF, on CPU and CUDA.
//!
//! This crate implements SPEC.md, sections "Common building blocks" and "prp: SwapOrNot,
//! Sometimes-Recurse, invertible PRF", bit for bit:
//!
//! - [`block`] and [`ChaCha`]: the ChaCha block function, one generic core for 8, 12 and 20
//!   rounds ([`ChaCha8`], [`ChaCha12`], [`ChaCha20`]); bulk keystream behind [`Keystream`].
//! - [`SwapOrNot`]: the small-domain PRP over any `[0, N)`, `2 <= N < 2^64`, with a round count
//!   of your choosing.
//! - [`SometimesRecurse`]: the full-domain PRP, SwapOrNot stages over halving domains with
//!   round counts derived from the security parameter `lambda` (128 by default).
//! - [`Pmns`]: the pseudorandom multinomial sampler of `m` balls into `2^b` bins.
//! - [`Iprf`]: the invertible PRF `F(k, x) = S(kS, P(kP, x))` and its preimage sets.
//! - [`derive()`] and [`tags`]: key derivation and nonce tags shared with `pir-hints`.
//!
//! Everything is keyed by ChaCha8 unless built `with_variant(R12, ..)` or `(R20, ..)`.
//! Keys ([`Key`]) never print their bytes and are zeroed on drop, as are round keys.
//!
//! # One value, many values, whole domains
//!
//! Single evaluations are methods: [`Permutation::forward`] and [`Permutation::inverse`],
//! [`Pmns::bin`] and [`Pmns::range`], [`Iprf::forward`] and [`Iprf::preimages`]. Batches and
//! whole-domain tables go through the [`Evaluator`] trait, implemented by the CPU reference
//! [`Cpu`] and, with the default feature `cuda`, by [`Cuda`]:
//!
//! - in-place batches forward and inverse ([`Evaluator::forward_batch`],
//!   [`Evaluator::inverse_batch`]);
//! - `P` and `P^-1` for every element of `[0, N)` ([`Evaluator::forward_table`],
//!   [`Evaluator::inverse_table`]; `N <= 2^32`);
//! - the ranges of every bin of a sampler ([`Evaluator::bin_boundaries`]) and an iPRF's
//!   tables ([`Evaluator::iprf_tables`]), which answer `F^-1` for every output at once.
//!
//! With `cuda`, [`MultiGpu`] implements both traits over several GPUs of one host: keystreams
//! and batches split into consecutive parts, one per GPU, tables and samplers on the GPUs in
//! turn (its docs say how, and what it gains).
//!
//! # Swap-bit tables and where they pay
//!
//! A round's swap bit for `Xh` comes from one ChaCha block that serves 512 consecutive `Xh`,
//! so a round's bits for a whole domain cost `N / 512` blocks, where evaluating values one by
//! one costs a block per value per round. Whole-domain tables are therefore built round by
//! round from bit tables (`full_domain.rs`: each round is one sequential pass of pair swaps
//! over the table), and a batch switches to "build the table, then look every value up" when
//! that is cheaper (and `N <= 2^32`):
//!
//! - on the CPU, from `N / 32` values;
//! - on the GPU, by a cost model fitted on an H100. Measured there: SwapOrNot over `2^17`
//!   with 759 rounds evaluates 70 M values/s one by one and builds its table in 2.5 ms, so
//!   the crossover lies near `N` values (`2^24` values then take 3 ms: 5.6 G values/s);
//!   Sometimes-Recurse over `2^25` evaluates 10 M values/s one by one (a warp runs every stage
//!   any of its values reaches) and builds its table in 170 ms, so the crossover lies near
//!   `N / 20` values.
//!
//! Below the crossover each value runs one ChaCha block per round, with the round keys
//! computed once per key (on the host, when the permutation is made) and read on the GPU
//! through the read-only cache next to the cores.
//!
//! # Cross-checking
//!
//! For every key, nonce and counter, the 64 bytes of [`block`] equal RustCrypto's
//! `chacha20::ChaCha8`/`ChaCha12`/`ChaCha20` (IETF variant) keystream at byte `64 * counter`,
//! with nonce bytes = the little-endian encoding of the three nonce words. The tests check
//! this (RFC 8439 §2.3.2 and property tests), check SwapOrNot, Sometimes-Recurse, the sampler
//! and the iPRF against a second implementation written in the tests from SPEC.md over the
//! `chacha20` crate, and against written-out vectors; the GPU tests (ignored unless run with
//! `--include-ignored` on a CUDA machine) check [`Cuda`] against [`Cpu`].
//!
//! # Example
//!
//! ```
//! use prp::{Cpu, Evaluator, Key, Permutation, SometimesRecurse};
//!
//! # fn main() -> Result<(), prp::Error> {
//! let prp = SometimesRecurse::new(Key::new(&[42; 32]), 10_000)?;
//! let mut values = vec![0, 1, 9_999];
//! Cpu.forward_batch(&prp, &mut values)?;
//! assert_eq!(values[2], prp.forward(9_999)?);
//! let inverse = Cpu.inverse_table(&prp)?;
//! assert_eq!(u64::from(inverse[values[0] as usize]), 0);
//! # Ok(()) }
//! ```

#![cfg_attr(not(feature = "cuda"), forbid(unsafe_code))]

use rayon::prelude::*;

mod chacha;
mod cpu;
#[cfg(feature = "cuda")]
mod cuda;
mod derive;
mod error;
mod full_domain;
mod iprf;
mod key;
mod pmns;
mod recurse;
#[cfg(feature = "cuda")]
pub mod source;
mod swap_or_not;

pub use chacha::{
    BLOCK_BYTES, CONSTANTS, ChaCha, ChaCha8, ChaCha12, ChaCha20, R8, R12, R20, Rounds, block,
};
pub use cpu::Cpu;
#[cfg(feature = "cuda")]
pub use cuda::{Cuda, MultiGpu};
pub use derive::{derive, tags};
pub use error::Error;
pub use full_domain::MAX_TABLE_DOMAIN;
pub use iprf::{Iprf, IprfTables};
pub use key::Key;
pub use pmns::{MAX_BALLS, MAX_BINS, Pmns};
pub use recurse::{DEFAULT_LAMBDA, SometimesRecurse, stage_rounds};
pub use swap_or_not::{BITS_PER_BLOCK, MAX_ROUNDS, Permutation, SwapOrNot};

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

/// Batches and whole-domain tables of the permutations, the sampler and the iPRF: the
/// operations [`Cpu`] and [`Cuda`] both implement. Results are identical on every backend.
///
/// Its [`Keystream::name`] names the backend in reports.
pub trait Evaluator: Keystream {
    /// Replaces every `x` in `values` by `P(x)`. Errors with [`Error::OutOfDomain`] (and
    /// leaves `values` unchanged) if some `x >= N`.
    fn forward_batch<P: Permutation>(&self, prp: &P, values: &mut [u64]) -> Result<(), Error>;

    /// Replaces every `y` in `values` by `P^-1(y)`. Errors as [`Self::forward_batch`].
    fn inverse_batch<P: Permutation>(&self, prp: &P, values: &mut [u64]) -> Result<(), Error>;

    /// `P(x)` for every `x < N`. Errors with [`Error::TooLarge`] if `N > 2^32`.
    fn forward_table<P: Permutation>(&self, prp: &P) -> Result<Vec<u32>, Error>;

    /// `P^-1(y)` for every `y < N`. Errors with [`Error::TooLarge`] if `N > 2^32`.
    fn inverse_table<P: Permutation>(&self, prp: &P) -> Result<Vec<u32>, Error>;

    /// The start of every bin's range, then `m`: bin `y` holds balls
    /// `boundaries[y] .. boundaries[y + 1]`.
    fn bin_boundaries<R: Rounds>(&self, pmns: &Pmns<R>) -> Result<Vec<u64>, Error>;

    /// Replaces every `x` in `values` by `F(k, x)`. Errors as [`Self::forward_batch`].
    fn iprf_forward_batch<R: Rounds>(
        &self,
        iprf: &Iprf<R>,
        values: &mut [u64],
    ) -> Result<(), Error> {
        self.forward_batch(iprf.prp(), values)?;
        let boundaries = self.bin_boundaries(iprf.pmns())?;
        values
            .par_iter_mut()
            .for_each(|z| *z = iprf::bin_of(&boundaries, *z));
        Ok(())
    }

    /// `P^-1` over the whole domain and every bin's range: `F^-1` of every output. Errors
    /// with [`Error::TooLarge`] if `m > 2^32`.
    fn iprf_tables<R: Rounds>(&self, iprf: &Iprf<R>) -> Result<IprfTables, Error> {
        let inverse = self.inverse_table(iprf.prp())?;
        Ok(IprfTables::new(inverse, self.bin_boundaries(iprf.pmns())?))
    }
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

impl Evaluator for Backend {
    fn forward_batch<P: Permutation>(&self, prp: &P, values: &mut [u64]) -> Result<(), Error> {
        match self {
            Backend::Cpu(b) => b.forward_batch(prp, values),
            #[cfg(feature = "cuda")]
            Backend::Cuda(b) => b.forward_batch(prp, values),
        }
    }

    fn inverse_batch<P: Permutation>(&self, prp: &P, values: &mut [u64]) -> Result<(), Error> {
        match self {
            Backend::Cpu(b) => b.inverse_batch(prp, values),
            #[cfg(feature = "cuda")]
            Backend::Cuda(b) => b.inverse_batch(prp, values),
        }
    }

    fn forward_table<P: Permutation>(&self, prp: &P) -> Result<Vec<u32>, Error> {
        match self {
            Backend::Cpu(b) => b.forward_table(prp),
            #[cfg(feature = "cuda")]
            Backend::Cuda(b) => b.forward_table(prp),
        }
    }

    fn inverse_table<P: Permutation>(&self, prp: &P) -> Result<Vec<u32>, Error> {
        match self {
            Backend::Cpu(b) => b.inverse_table(prp),
            #[cfg(feature = "cuda")]
            Backend::Cuda(b) => b.inverse_table(prp),
        }
    }

    fn bin_boundaries<R: Rounds>(&self, pmns: &Pmns<R>) -> Result<Vec<u64>, Error> {
        match self {
            Backend::Cpu(b) => b.bin_boundaries(pmns),
            #[cfg(feature = "cuda")]
            Backend::Cuda(b) => b.bin_boundaries(pmns),
        }
    }
}

/// The README's code, compiled and run as a doctest so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
