//! Offline hint generation for single-server private information retrieval: RMS24 (Ren,
//! Mughees, Sun, CCS 2024) and Plinko (Hoover, Patel, Persiano, Yeo), on CPU and CUDA, and the
//! `pir-hints` command-line tool.
//!
//! It follows section "pir-hints: RMS24 and Plinko" of the workspace's `SPEC.md` exactly:
//!
//! - the database is `n` entries of `E` bytes in `c` blocks of `w` entries ([`Params`],
//!   [`Database`], [`MappedDatabase`]);
//! - each hint `j` selects half of the blocks by a ChaCha8 select key ([`Subset`]): the
//!   blocks whose select value lies below the median, a hint with a tie at the median being
//!   invalid, plus one extra block for main (regular) hints;
//! - RMS24 takes from each block the entry at a ChaCha offset; Plinko the entry at
//!   `F(K[a], j)`, the invertible PRF of the `prp` crate keyed per block;
//! - a hint's parity is the bytewise XOR of its entries; backup hints keep a second parity
//!   over the blocks they do not select.
//!
//! Keys come from one secret [`MasterKey`]; hint files record only its fingerprint.
//!
//! # Backends
//!
//! [`HintGenerator`] is implemented by [`Cpu`] (the reference, rayon over hints) and, with the
//! default feature `cuda`, by `Cuda`, and picked by [`Backend::best`]. Every backend gives
//! the same bytes. [`direct_hints`] recomputes single hints from the definition (full sorts,
//! forward iPRF evaluations), which the tests and the tool's `verify` hold the others to.
//!
//! # Block ranges
//!
//! Parities are XORs over blocks, so a run over blocks `a .. b` ([`Job::with_blocks`]) gives
//! a shard, and shards over adjacent ranges combine by XOR ([`Hints::combine_all`]) into the
//! hints over the union. This is how runs spread over GPUs, machines, or databases larger
//! than a GPU's memory. Hint files ([`Hints::write`], [`Hints::read`]) have a documented
//! binary format (see [`Hints`]'s module docs in `hints.rs` and the README), with a digest
//! that [`Hints::read`] checks. [`ShardedRun`] runs a job as shards in one process, each
//! written as it finishes, so that an interrupted run resumes where it stopped.
//!
//! # Features
//!
//! - `cuda` (default): the CUDA backend.
//! - `cli`: the `pir-hints` command-line tool (`src/main.rs`) and its dependencies, clap and
//!   indicatif; off by default, so that the library compiles neither. Install the tool with
//!   `cargo install --path pir-hints --features cli`.
//!
//! # Example
//!
//! ```
//! use pir_hints::{Cpu, Database, HintGenerator, Job, MasterKey, Params, Scheme, direct_hints};
//!
//! # fn main() -> Result<(), pir_hints::Error> {
//! let entries = pir_hints::synthetic_database(1, 1000, 16)?;
//! let db = Database::new(&entries, 16)?;
//! let params = Params::new(Scheme::Rms24, 1000, 16)?.with_hints(64, 16)?;
//! let key = MasterKey::new(&[7; 32]);
//! let job = Job::new(params, &key);
//! let hints = Cpu.generate(&job, &db)?;
//!
//! // Hint 70 is a backup hint: a parity over its selected blocks and one over the others.
//! let check = &direct_hints(&params, &key, &db, params.all_blocks(), &[70])?[0];
//! assert_eq!(hints.parity(70), Some(&check.parity[..]));
//! assert_eq!(hints.second_parity(70), check.second.as_deref());
//! # Ok(()) }
//! ```

#![deny(unsafe_code)]

mod cpu;
#[cfg(feature = "cuda")]
mod cuda;
mod database;
mod direct;
mod error;
mod hints;
mod keys;
mod params;
mod sharded;
mod slices;
#[cfg(feature = "cuda")]
pub mod source;
mod subset;

use std::ops::Range;

pub use cpu::Cpu;
#[cfg(feature = "cuda")]
pub use cuda::{Cuda, DeviceDatabase};
pub use database::{
    Database, MAX_SYNTHETIC_BYTES, MappedDatabase, fill_synthetic, synthetic_database,
    synthetic_stream,
};
pub use direct::{HintValue, direct_hints};
pub use error::Error;
pub use hints::{FORMAT_VERSION, HEADER_BYTES, Hints, HintsHeader, MAGIC};
pub use keys::{KEY_FILE_BYTES, MasterKey};
pub use params::{DEFAULT_LAMBDA, MAX_ENTRY_SIZE, Params, Scheme};
pub use sharded::{ShardEvent, ShardedRun};
pub use slices::{block_slices, synthetic_alignment};
pub use subset::{MAX_BLOCKS, Subset, rms24_offset, select_value};

/// One generation run: parameters, the key, and the blocks whose entries to cover (all of
/// them unless narrowed with [`Job::with_blocks`]).
#[derive(Clone, Debug)]
pub struct Job<'a> {
    params: Params,
    key: &'a MasterKey,
    blocks: Range<u64>,
}

impl<'a> Job<'a> {
    /// A run over every block.
    pub fn new(params: Params, key: &'a MasterKey) -> Self {
        Self {
            blocks: params.all_blocks(),
            params,
            key,
        }
    }

    /// The same run over blocks `blocks` only (a shard). Errors unless the range is
    /// non-empty and within `0 .. c`.
    pub fn with_blocks(self, blocks: Range<u64>) -> Result<Self, Error> {
        self.params.check_block_range(&blocks)?;
        Ok(Self { blocks, ..self })
    }

    /// The parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The key.
    pub fn key(&self) -> &'a MasterKey {
        self.key
    }

    /// The blocks covered.
    pub fn blocks(&self) -> Range<u64> {
        self.blocks.clone()
    }

    /// The units of work a generator reports progress in, and their total: hints for RMS24
    /// (each hint is finished in one go), blocks for Plinko (the database streams by block).
    pub fn work(&self) -> (u64, &'static str) {
        match self.params.scheme() {
            Scheme::Rms24 => (self.params.total_hints(), "hints"),
            Scheme::Plinko => (self.blocks.end - self.blocks.start, "blocks"),
        }
    }

    /// Zero hints for this job.
    pub(crate) fn empty_hints(&self) -> Hints {
        Hints::zeroed(self.params, self.key.fingerprint(), self.blocks())
    }
}

/// Hint generation: the operation [`Cpu`] and `Cuda` both implement, with identical results.
pub trait HintGenerator {
    /// The backend and the device it runs on, for reports.
    fn name(&self) -> String;

    /// The hints of `job` over `db`, calling `progress` with each finished amount of work
    /// (units and total from [`Job::work`]). Errors if `db` does not match the parameters.
    fn generate_with_progress(
        &self,
        job: &Job<'_>,
        db: &Database<'_>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Hints, Error>;

    /// The hints of `job` over `db`.
    fn generate(&self, job: &Job<'_>, db: &Database<'_>) -> Result<Hints, Error> {
        self.generate_with_progress(job, db, &|_| {})
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
    /// CUDA on every GPU of the host if one can be opened, else the CPU. Says on standard
    /// error why it fell back, so that a missing driver is never silent.
    pub fn best() -> Self {
        #[cfg(feature = "cuda")]
        match Cuda::new() {
            Ok(cuda) => return Backend::Cuda(cuda),
            Err(why) => eprintln!("pir-hints: using the CPU backend: {why}"),
        }
        Backend::Cpu(Cpu)
    }
}

impl HintGenerator for Backend {
    fn name(&self) -> String {
        match self {
            Backend::Cpu(b) => b.name(),
            #[cfg(feature = "cuda")]
            Backend::Cuda(b) => b.name(),
        }
    }

    fn generate_with_progress(
        &self,
        job: &Job<'_>,
        db: &Database<'_>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Hints, Error> {
        match self {
            Backend::Cpu(b) => b.generate_with_progress(job, db, progress),
            #[cfg(feature = "cuda")]
            Backend::Cuda(b) => b.generate_with_progress(job, db, progress),
        }
    }
}

/// The README's code, compiled and run as a doctest so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
