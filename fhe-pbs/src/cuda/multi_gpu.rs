//! Batches spread over several GPUs of one host: a [`Cuda`] backend per GPU, each with its
//! own copy of the keys, behind one [`Bootstrapper`].

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use kernels::{Gpu, even_parts, on_each};

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
        let backends = on_each(gpus, |gpu| Cuda::on(Arc::clone(gpu), keys, engine))
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
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
        let work: Vec<(&Cuda, &[LweCiphertext])> = self
            .backends
            .iter()
            .zip(parts)
            .map(|(backend, range)| (backend, &ciphertexts[range]))
            .collect();
        let outputs = on_each(&work, |&(backend, part)| run(backend, part));
        let mut all = Vec::with_capacity(ciphertexts.len());
        for part in outputs {
            all.extend(part?);
        }
        Ok(all)
    }
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
