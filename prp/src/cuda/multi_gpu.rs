//! Keystreams and batches spread over several GPUs of one host: a [`Cuda`] backend per GPU.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use kernels::{Gpu, even_parts_of_at_least, on_each, on_each_part};

use super::Cuda;
use crate::chacha::{BLOCK_BYTES, ChaCha, Rounds, add_into, check_block_range};
use crate::error::Error;
use crate::full_domain::{Direction, check_batch};
use crate::iprf::{Iprf, IprfTables};
use crate::pmns::Pmns;
use crate::swap_or_not::Permutation;
use crate::{Evaluator, Keystream};

/// Keystream blocks a GPU takes at least when a fill to host memory is split: one of
/// [`Cuda`]'s 16 MiB staging chunks.
const MIN_FILL_BLOCKS_PER_GPU: usize = super::STAGING_BYTES / BLOCK_BYTES;

/// Blocks a GPU takes at least when a digest is split: 2^24 blocks take about 0.3 ms on an
/// H100 (60 G blocks/s), several times a host thread's start and a launch. On two H200s,
/// 2^25 blocks took 0.58 ms on one GPU and 0.47 ms as two parts.
const MIN_DIGEST_BLOCKS_PER_GPU: usize = 1 << 24;

/// Values a GPU takes at least when a batch is split. Measured on two H200s with SwapOrNot over
/// 2^17 (759 rounds, one by one), host to host: 2^15 values took 0.97 ms on one GPU and
/// 1.14-1.17 ms as two parts of 2^14; 2^16 values 1.47-1.49 ms on one and 1.22-1.30 ms as
/// two parts of 2^15.
const MIN_VALUES_PER_GPU: usize = 1 << 15;

/// An [`Evaluator`] and [`Keystream`] over several GPUs of one host, one [`Cuda`] backend on
/// each. Results are those of one GPU (and of the CPU), value for value.
///
/// How the work is split:
/// - keystream fills, digests and batches go to the GPUs in consecutive parts of nearly equal
///   size ([`kernels::even_parts`]) that run at once, one host thread per GPU, each GPU through
///   its own staging; a part is never smaller than a minimum (16 MiB of keystream, 2^24
///   digest blocks, 2^15 values), so that small calls stay on fewer GPUs. A digest is the
///   wrapping sum of its parts' digests;
/// - a batch large enough to pay for a whole-domain table (the cost model of [`Cuda`])
///   builds the table on every GPU that takes a part, then each GPU looks up its own values:
///   such batches gain only their lookups and transfers;
/// - whole-domain tables and a sampler's bin boundaries run on one GPU, the GPUs taking them
///   in turn (round robin), so that threads sharing one `MultiGpu` spread their calls; an
///   iPRF's tables build the inverse table and the bin boundaries on two GPUs at once.
///
/// ```no_run
/// use prp::{Evaluator, Key, MultiGpu, SwapOrNot};
///
/// # fn main() -> Result<(), prp::Error> {
/// let gpus = MultiGpu::new()?; // every GPU of the host
/// let prp = SwapOrNot::new(Key::new(&[7; 32]), 1 << 17, 759)?;
/// let mut values: Vec<u64> = (0..1 << 20).map(|i| i % (1 << 17)).collect();
/// gpus.inverse_batch(&prp, &mut values)?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct MultiGpu {
    backends: Vec<Cuda>,
    /// The GPU that the next table or sampler goes to (modulo their number).
    next: Arc<AtomicUsize>,
}

impl MultiGpu {
    /// The backend on every visible GPU.
    ///
    /// # Errors
    ///
    /// As [`Cuda::new`].
    pub fn new() -> Result<Self, Error> {
        Self::on(&Gpu::all()?)
    }

    /// As [`MultiGpu::new`], on GPU handles the caller opened (a GPU given twice takes two
    /// parts of each batch).
    ///
    /// # Errors
    ///
    /// [`Error::NoGpus`] for an empty list.
    pub fn on(gpus: &[Arc<Gpu>]) -> Result<Self, Error> {
        if gpus.is_empty() {
            return Err(Error::NoGpus);
        }
        Ok(Self {
            backends: gpus.iter().cloned().map(Cuda::on).collect(),
            next: Arc::default(),
        })
    }

    /// The backend of each GPU, in the order they take the parts of a batch.
    pub fn backends(&self) -> &[Cuda] {
        &self.backends
    }

    /// The backend that takes the next whole-domain table or sampler.
    fn next_backend(&self) -> &Cuda {
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        &self.backends[turn % self.backends.len()]
    }

    /// `values` split over the GPUs, each part through [`Cuda`]'s host batch.
    fn batch<P: Permutation>(
        &self,
        prp: &P,
        values: &mut [u64],
        direction: Direction,
    ) -> Result<(), Error> {
        // The whole batch first, so that an error leaves every value unchanged.
        check_batch(values, prp.domain())?;
        let ranges = even_parts_of_at_least(values.len(), self.backends.len(), MIN_VALUES_PER_GPU);
        let lens: Vec<usize> = ranges.iter().map(ExactSizeIterator::len).collect();
        on_each_part(values, &lens, |j, part| {
            self.backends[j].batch_in_domain(prp, part, direction)
        })
        .into_iter()
        .collect()
    }
}

impl Keystream for MultiGpu {
    /// "N GPUs: " and each GPU's backend name.
    fn name(&self) -> String {
        let names: Vec<String> = self.backends.iter().map(Cuda::name).collect();
        format!("{} GPUs: {}", self.backends.len(), names.join("; "))
    }

    fn fill_keystream<R: Rounds>(
        &self,
        stream: &ChaCha<R>,
        counter: u32,
        out: &mut [u8],
    ) -> Result<(), Error> {
        let blocks = out.len().div_ceil(BLOCK_BYTES);
        check_block_range(counter, blocks as u64)?;
        let ranges = even_parts_of_at_least(blocks, self.backends.len(), MIN_FILL_BLOCKS_PER_GPU);
        // Every part but the last is whole blocks; the last ends where `out` does.
        let lens: Vec<usize> = ranges
            .iter()
            .map(|r| (r.end * BLOCK_BYTES).min(out.len()) - r.start * BLOCK_BYTES)
            .collect();
        on_each_part(out, &lens, |j, part| {
            // In range: every block of `out` was checked to fit the 32-bit counter.
            let first = counter + ranges[j].start as u32;
            self.backends[j].fill_keystream(stream, first, part)
        })
        .into_iter()
        .collect()
    }

    fn keystream_digest<R: Rounds>(
        &self,
        stream: &ChaCha<R>,
        counter: u32,
        blocks: u64,
    ) -> Result<[u32; 16], Error> {
        check_block_range(counter, blocks)?;
        // At most 2^32 blocks, checked above.
        let ranges = even_parts_of_at_least(
            blocks as usize,
            self.backends.len(),
            MIN_DIGEST_BLOCKS_PER_GPU,
        );
        let work: Vec<(&Cuda, Range<usize>)> = self.backends.iter().zip(ranges).collect();
        let mut digest = [0u32; 16];
        for part in on_each(&work, |(backend, r)| {
            backend.keystream_digest(stream, counter + r.start as u32, r.len() as u64)
        }) {
            add_into(&mut digest, &part?);
        }
        Ok(digest)
    }
}

impl Evaluator for MultiGpu {
    fn forward_batch<P: Permutation>(&self, prp: &P, values: &mut [u64]) -> Result<(), Error> {
        self.batch(prp, values, Direction::Forward)
    }

    fn inverse_batch<P: Permutation>(&self, prp: &P, values: &mut [u64]) -> Result<(), Error> {
        self.batch(prp, values, Direction::Inverse)
    }

    fn forward_table<P: Permutation>(&self, prp: &P) -> Result<Vec<u32>, Error> {
        self.next_backend().forward_table(prp)
    }

    fn inverse_table<P: Permutation>(&self, prp: &P) -> Result<Vec<u32>, Error> {
        self.next_backend().inverse_table(prp)
    }

    fn bin_boundaries<R: Rounds>(&self, pmns: &Pmns<R>) -> Result<Vec<u64>, Error> {
        self.next_backend().bin_boundaries(pmns)
    }

    /// The inverse table on one GPU and the bin boundaries on the next, at once.
    fn iprf_tables<R: Rounds>(&self, iprf: &Iprf<R>) -> Result<IprfTables, Error> {
        let (table_gpu, sampler_gpu) = (self.next_backend(), self.next_backend());
        let (inverse, boundaries) = std::thread::scope(|scope| {
            let boundaries = scope.spawn(|| sampler_gpu.bin_boundaries(iprf.pmns()));
            let inverse = table_gpu.inverse_table(iprf.prp());
            let boundaries = boundaries
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (inverse, boundaries)
        });
        Ok(IprfTables::new(inverse?, boundaries?))
    }
}
