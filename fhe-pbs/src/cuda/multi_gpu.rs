//! Batches spread over several GPUs of one host: a [`Cuda`] backend per GPU, each with its
//! own copy of the keys, behind one [`Bootstrapper`].

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use kernels::Gpu;

use super::{Cuda, Engine};
use crate::Bootstrapper;
use crate::error::Error;
use crate::keys::EvaluationKeys;
use crate::lut::LookupTable;
use crate::lwe::LweCiphertext;
use crate::params::Parameters;

/// A [`Bootstrapper`] over several GPUs of one host, each holding its own copy of the keys
/// (one [`Cuda`] backend per GPU, all with the same [`Engine`]).
///
/// How the work is split:
/// - a batch of `len` ciphertexts goes to the GPUs in consecutive parts
///   ([`MultiGpu::parts`]): with `g` GPUs, the first `len % g` take `len / g + 1`
///   ciphertexts and the others `len / g`, so a batch of fewer than `g` keeps some GPUs idle.
///   The parts run at once, one host thread per GPU, and the outputs come back in the
///   inputs' order, word for word what one GPU gives (every kernel is deterministic);
/// - a single ciphertext, or a batch of one, goes to the GPUs in turn (round robin), so that
///   threads sharing one `MultiGpu` spread their calls over the GPUs.
///
/// A batch of one ciphertext takes as long as on one GPU; the throughput of large batches
/// grows with the number of GPUs. For batches that stay on a device, use the backend of that
/// device ([`MultiGpu::backends`]).
///
/// ```no_run
/// use fhe_pbs::{
///     Bootstrapper, ClientKey, Csprng, Engine, EvaluationKeys, LookupTable, MultiGpu,
///     PARAM_MESSAGE_2_CARRY_2,
/// };
///
/// # fn main() -> Result<(), fhe_pbs::Error> {
/// let params = PARAM_MESSAGE_2_CARRY_2;
/// let mut rng = Csprng::from_seed([7; 32]);
/// let client = ClientKey::generate(params, &mut rng);
/// let keys = EvaluationKeys::generate(&client, &mut rng);
/// let gpus = MultiGpu::new(&keys, Engine::Auto)?; // every GPU of the host
/// let lut = LookupTable::new(&params, |m| (m + 1) % 16)?;
/// let inputs: Vec<_> = (0..1000)
///     .map(|i| client.encrypt(i % 16, &mut rng))
///     .collect::<Result<_, _>>()?;
/// let outputs = gpus.keyswitch_bootstrap_batch(&inputs, &lut)?;
/// assert_eq!(client.decrypt(&outputs[999])?, (999 % 16 + 1) % 16);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct MultiGpu {
    backends: Vec<Cuda>,
    /// The GPU the next single ciphertext goes to (modulo their number).
    next: Arc<AtomicUsize>,
}

impl MultiGpu {
    /// The backend on every visible GPU, uploading `keys` to each (the uploads, and the
    /// bootstrap key's transform on the CPU that precedes each, run at once).
    ///
    /// # Errors
    ///
    /// As [`Cuda::new`] on any of the GPUs.
    pub fn new(keys: &EvaluationKeys, engine: Engine) -> Result<Self, Error> {
        Self::on(&Gpu::all()?, keys, engine)
    }

    /// As [`MultiGpu::new`], on GPU handles the caller opened (a GPU given twice gets two
    /// copies of the keys, and takes two parts of each batch).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] for an empty list; as [`Cuda::on`] on any of the GPUs.
    pub fn on(gpus: &[Arc<Gpu>], keys: &EvaluationKeys, engine: Engine) -> Result<Self, Error> {
        if gpus.is_empty() {
            return Err(Error::InvalidParameter {
                name: "gpus",
                reason: "a multi-GPU backend needs at least one GPU".into(),
            });
        }
        let backends = std::thread::scope(|scope| {
            let uploads: Vec<_> = gpus
                .iter()
                .map(|gpu| scope.spawn(|| Cuda::on(Arc::clone(gpu), keys, engine)))
                .collect();
            uploads
                .into_iter()
                .map(joined)
                .collect::<Result<Vec<_>, _>>()
        })?;
        Ok(Self {
            backends,
            next: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// The backend of each GPU, in the order the batches' parts go to them.
    pub fn backends(&self) -> &[Cuda] {
        &self.backends
    }

    /// The consecutive ranges of a batch of `len` ciphertexts that the GPUs take, in the
    /// order of [`MultiGpu::backends`]; GPUs left without work (when `len` is below their
    /// number) have no range.
    pub fn parts(&self, len: usize) -> Vec<Range<usize>> {
        even_parts(len, self.backends.len())
    }

    /// The backend the next single ciphertext goes to.
    fn next_backend(&self) -> &Cuda {
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        &self.backends[turn % self.backends.len()]
    }

    /// `run` on each GPU's part of `ciphertexts`, at once, the outputs in the inputs' order;
    /// the first part's error, in the inputs' order, if any fails.
    fn split<F>(&self, ciphertexts: &[LweCiphertext], run: F) -> Result<Vec<LweCiphertext>, Error>
    where
        F: Fn(&Cuda, &[LweCiphertext]) -> Result<Vec<LweCiphertext>, Error> + Sync,
    {
        let parts = self.parts(ciphertexts.len());
        if parts.len() <= 1 {
            return run(self.next_backend(), ciphertexts);
        }
        let outputs: Vec<Result<Vec<LweCiphertext>, Error>> = std::thread::scope(|scope| {
            let runs: Vec<_> = parts
                .into_iter()
                .zip(&self.backends)
                .map(|(range, backend)| {
                    let run = &run;
                    let part = &ciphertexts[range];
                    scope.spawn(move || run(backend, part))
                })
                .collect();
            runs.into_iter().map(joined).collect()
        });
        let mut all = Vec::with_capacity(ciphertexts.len());
        for part in outputs {
            all.extend(part?);
        }
        Ok(all)
    }
}

/// What a scoped thread returned; its panic, if it panicked, goes on in the caller.
fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// `len` items split into at most `parts` consecutive non-empty ranges whose sizes differ by
/// at most one, the larger first.
fn even_parts(len: usize, parts: usize) -> Vec<Range<usize>> {
    let parts = parts.min(len);
    let mut start = 0;
    (0..parts)
        .map(|i| {
            let size = len / parts + usize::from(i < len % parts);
            start += size;
            start - size..start
        })
        .collect()
}

impl Bootstrapper for MultiGpu {
    /// "N GPUs: " and each GPU's backend name.
    fn name(&self) -> String {
        let names: Vec<String> = self.backends.iter().map(Cuda::name).collect();
        format!("{} GPUs: {}", self.backends.len(), names.join("; "))
    }

    fn parameters(&self) -> &Parameters {
        self.backends[0].parameters()
    }

    fn keyswitch(&self, ciphertext: &LweCiphertext) -> Result<LweCiphertext, Error> {
        self.next_backend().keyswitch(ciphertext)
    }

    fn bootstrap(
        &self,
        ciphertext: &LweCiphertext,
        lut: &LookupTable,
    ) -> Result<LweCiphertext, Error> {
        self.next_backend().bootstrap(ciphertext, lut)
    }

    fn keyswitch_bootstrap(
        &self,
        ciphertext: &LweCiphertext,
        lut: &LookupTable,
    ) -> Result<LweCiphertext, Error> {
        self.next_backend().keyswitch_bootstrap(ciphertext, lut)
    }

    fn keyswitch_batch(&self, ciphertexts: &[LweCiphertext]) -> Result<Vec<LweCiphertext>, Error> {
        self.split(ciphertexts, |gpu, part| gpu.keyswitch_batch(part))
    }

    fn bootstrap_batch(
        &self,
        ciphertexts: &[LweCiphertext],
        lut: &LookupTable,
    ) -> Result<Vec<LweCiphertext>, Error> {
        self.split(ciphertexts, |gpu, part| gpu.bootstrap_batch(part, lut))
    }

    fn keyswitch_bootstrap_batch(
        &self,
        ciphertexts: &[LweCiphertext],
        lut: &LookupTable,
    ) -> Result<Vec<LweCiphertext>, Error> {
        self.split(ciphertexts, |gpu, part| {
            gpu.keyswitch_bootstrap_batch(part, lut)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::even_parts;

    #[test]
    fn even_parts_cover_every_item_once_in_near_equal_ranges() {
        for parts in 1..=9 {
            for len in (0..=40).chain([4095, 4096, 4097, 16_384]) {
                let ranges = even_parts(len, parts);
                assert_eq!(ranges.len(), parts.min(len), "{len} over {parts}");
                let mut next = 0;
                for range in &ranges {
                    assert_eq!(range.start, next, "{len} over {parts}: consecutive");
                    assert!(!range.is_empty(), "{len} over {parts}: no empty part");
                    next = range.end;
                }
                assert_eq!(next, len, "{len} over {parts}: every item");
                let sizes: Vec<usize> = ranges.iter().map(ExactSizeIterator::len).collect();
                assert!(
                    sizes.windows(2).all(|w| w[0] == w[1] || w[0] == w[1] + 1),
                    "{len} over {parts}: {sizes:?}"
                );
            }
        }
        assert_eq!(even_parts(5, 3), [0..2, 2..4, 4..5]);
        assert_eq!(even_parts(2, 4), [0..1, 1..2]);
    }
}
