//! Batches resident in device memory: [`DeviceLweCiphertexts`] and the `*_on_device` stages,
//! which queue their kernels on the GPU's stream and return at once, with no copy to or from
//! the host, so that the stages of an application (or a benchmark) chain on the device.

use super::*;
use crate::params::LweDimension;

/// LWE ciphertexts of one dimension in the device memory of one GPU, `dimension + 1` words
/// each, one after the other (the layout of [`LweCiphertext::as_slice`]). Made by
/// [`Cuda::upload`] or by a `*_on_device` stage; read back with
/// [`DeviceLweCiphertexts::to_host`].
#[derive(Debug)]
pub struct DeviceLweCiphertexts {
    words: DeviceBuffer<u64>,
    count: usize,
    dimension: LweDimension,
    gpu: Arc<Gpu>,
}

impl DeviceLweCiphertexts {
    /// Number of ciphertexts.
    #[must_use]
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there are no ciphertexts.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The LWE dimension of every ciphertext (0 for an empty upload).
    #[must_use]
    pub fn dimension(&self) -> LweDimension {
        self.dimension
    }

    /// Copies the ciphertexts to the host, once the work queued before has finished.
    ///
    /// # Errors
    ///
    /// [`Error::Gpu`] if the copy, or a kernel queued before it, failed.
    pub fn to_host(&self) -> Result<Vec<LweCiphertext>, Error> {
        if self.count == 0 {
            return Ok(Vec::new());
        }
        let words = self.words.to_host()?;
        words
            .chunks_exact(self.dimension.0 + 1)
            .take(self.count)
            .map(|w| LweCiphertext::from_vec(w.to_vec()))
            .collect()
    }
}

impl Cuda {
    /// Copies `ciphertexts` (all of one dimension) to this backend's GPU.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] if the dimensions differ; [`Error::Gpu`] if the device
    /// memory does not hold them.
    pub fn upload(&self, ciphertexts: &[LweCiphertext]) -> Result<DeviceLweCiphertexts, Error> {
        let dimension = ciphertexts
            .first()
            .map_or(LweDimension(0), LweCiphertext::dimension);
        for ct in ciphertexts {
            check_len("uploaded LWE dimension", dimension.0, ct.dimension().0)?;
        }
        let words: Vec<u64> = ciphertexts
            .iter()
            .flat_map(|ct| ct.as_slice().iter().copied())
            .collect();
        Ok(DeviceLweCiphertexts {
            words: self.gpu.upload(&words)?,
            count: ciphertexts.len(),
            dimension,
            gpu: Arc::clone(&self.gpu),
        })
    }

    /// [`Bootstrapper::keyswitch_batch`] on ciphertexts in device memory: queued, the outputs
    /// left on the device.
    ///
    /// # Errors
    ///
    /// As [`Cuda::keyswitch_bootstrap_on_device`].
    pub fn keyswitch_on_device(
        &self,
        ciphertexts: &DeviceLweCiphertexts,
    ) -> Result<DeviceLweCiphertexts, Error> {
        self.run_on_device(ciphertexts, None, Pipeline::Keyswitch)
    }

    /// [`Bootstrapper::bootstrap_batch`] on ciphertexts in device memory: queued, the outputs
    /// left on the device.
    ///
    /// # Errors
    ///
    /// As [`Cuda::keyswitch_bootstrap_on_device`].
    pub fn bootstrap_on_device(
        &self,
        ciphertexts: &DeviceLweCiphertexts,
        lut: &LookupTable,
    ) -> Result<DeviceLweCiphertexts, Error> {
        self.run_on_device(ciphertexts, Some(lut), Pipeline::Bootstrap)
    }

    /// [`Bootstrapper::keyswitch_bootstrap_batch`] on ciphertexts in device memory: the
    /// kernels are queued on the GPU's stream and the call returns without waiting for them;
    /// the outputs stay on the device. A batch larger than a chunk (see [`Cuda::with_max_chunk`]
    /// and the module docs) runs chunk by chunk, through device-to-device copies.
    ///
    /// ```no_run
    /// use fhe_pbs::{ClientKey, Csprng, Cuda, Engine, EvaluationKeys, LookupTable};
    ///
    /// # fn main() -> Result<(), fhe_pbs::Error> {
    /// let params = fhe_pbs::PARAM_MESSAGE_2_CARRY_2;
    /// let mut rng = Csprng::from_seed([2; 32]);
    /// let client = ClientKey::generate(params, &mut rng);
    /// let gpu = Cuda::new(&EvaluationKeys::generate(&client, &mut rng), Engine::Auto)?;
    /// let lut = LookupTable::new(&params, |m| 3 * m % 16)?;
    /// let inputs = (0..1000)
    ///     .map(|i| client.encrypt(i % 16, &mut rng))
    ///     .collect::<Result<Vec<_>, _>>()?;
    /// let on_device = gpu.upload(&inputs)?;
    /// let once = gpu.keyswitch_bootstrap_on_device(&on_device, &lut)?;
    /// let twice = gpu.keyswitch_bootstrap_on_device(&once, &lut)?;
    /// for (i, ct) in twice.to_host()?.iter().enumerate() {
    ///     assert_eq!(client.decrypt(ct)?, 9 * (i as u64 % 16) % 16);
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] for ciphertexts on another GPU;
    /// [`Error::DimensionMismatch`] for ciphertexts or a table of the wrong size;
    /// [`Error::Gpu`] if the device memory does not hold the outputs and a chunk's working
    /// set, or a launch fails. Failures inside the kernels surface at the next call that
    /// waits for the device (such as [`DeviceLweCiphertexts::to_host`]).
    pub fn keyswitch_bootstrap_on_device(
        &self,
        ciphertexts: &DeviceLweCiphertexts,
        lut: &LookupTable,
    ) -> Result<DeviceLweCiphertexts, Error> {
        self.run_on_device(ciphertexts, Some(lut), Pipeline::KeyswitchBootstrap)
    }

    /// Queues `pipeline` on every ciphertext of `input`, chunk by chunk.
    fn run_on_device(
        &self,
        input: &DeviceLweCiphertexts,
        lut: Option<&LookupTable>,
        pipeline: Pipeline,
    ) -> Result<DeviceLweCiphertexts, Error> {
        if !Arc::ptr_eq(&input.gpu, &self.gpu) {
            return Err(Error::InvalidParameter {
                name: "ciphertexts",
                reason: "they lie in the memory of another GPU handle than this backend's".into(),
            });
        }
        let out_width = self.output_width(pipeline);
        let output = |words, count| DeviceLweCiphertexts {
            words,
            count,
            dimension: LweDimension(out_width - 1),
            gpu: Arc::clone(&self.gpu),
        };
        if input.is_empty() {
            return Ok(output(self.gpu.alloc_zeroed(0)?, 0));
        }
        let expected = if pipeline.keyswitches() {
            (
                "key-switch input LWE dimension",
                self.params.big_lwe_dimension(),
            )
        } else {
            ("bootstrap input LWE dimension", self.params.lwe_dimension())
        };
        check_len(expected.0, expected.1.0, input.dimension.0)?;
        let lut_words = match lut {
            Some(lut) => {
                check_len(
                    "lookup table polynomial size",
                    self.params.polynomial_size().0,
                    lut.polynomial_size().0,
                )?;
                Some(self.gpu.upload(lut.polynomial())?)
            }
            None => None,
        };
        let table = || lut_words.as_ref().map(Words::Device);
        let count = input.count;
        let chunk = self.chunk_len(count)?;
        let missing = || Error::DimensionMismatch {
            what: "device outputs of a pipeline",
            expected: 1,
            got: 0,
        };
        if chunk >= count {
            let words = self
                .launch_pipeline(
                    Words::Device(&input.words),
                    count,
                    table(),
                    pipeline,
                    Output::Device,
                )?
                .ok_or_else(missing)?;
            return Ok(output(words, count));
        }
        let in_width = input.dimension.0 + 1;
        // SAFETY: every chunk's outputs are copied in below, so every word is written.
        let mut words = unsafe { self.gpu.alloc_uninit::<u64>(count * out_width)? };
        // SAFETY: each chunk's inputs are copied in before its kernels read them.
        let mut staged = unsafe { self.gpu.alloc_uninit::<u64>(chunk * in_width)? };
        for start in (0..count).step_by(chunk) {
            let len = chunk.min(count - start);
            staged.copy_from_device(0, &input.words, start * in_width, len * in_width)?;
            let result = self
                .launch_pipeline(
                    Words::Device(&staged),
                    len,
                    table(),
                    pipeline,
                    Output::Device,
                )?
                .ok_or_else(missing)?;
            words.copy_from_device(start * out_width, &result, 0, len * out_width)?;
        }
        Ok(output(words, count))
    }
}
