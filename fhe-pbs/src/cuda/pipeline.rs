//! Running a batch: the page-locked staging buffers, the chunks, and the stages queued on the
//! GPU's stream, which read the inputs from and write the outputs to those buffers in place
//! (see "Pipeline" in the module docs of [`super`]).

use super::*;

/// The page-locked buffers of [`Cuda::run`]: two sets of one chunk's inputs and outputs (the
/// chunks alternate between them), and the lookup table.
#[derive(Debug, Default)]
pub(super) struct Staging {
    inputs: [Option<PinnedBuffer<u64>>; 2],
    outputs: [Option<PinnedBuffer<u64>>; 2],
    table: Option<PinnedBuffer<u64>>,
}

/// What a pipeline run starts from and returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pipeline {
    /// Big-key LWE in, small-key LWE out.
    Keyswitch,
    /// Small-key LWE in, big-key LWE out.
    Bootstrap,
    /// Big-key LWE in, big-key LWE out.
    KeyswitchBootstrap,
    /// Small-key LWE in, GLWE accumulator out.
    BlindRotate,
}

impl Pipeline {
    pub(super) fn keyswitches(self) -> bool {
        matches!(self, Pipeline::Keyswitch | Pipeline::KeyswitchBootstrap)
    }

    pub(super) fn rotates(self) -> bool {
        self != Pipeline::Keyswitch
    }
}

/// Words a kernel reads: in device memory, or in page-locked host memory read in place.
pub(super) enum Words<'a> {
    Device(&'a DeviceBuffer<u64>),
    Pinned(&'a mut PinnedBuffer<u64>),
}

impl<'a> Words<'a> {
    /// The same words, for one more kernel.
    pub(super) fn reborrow(&mut self) -> Words<'_> {
        match self {
            Words::Device(buffer) => Words::Device(buffer),
            Words::Pinned(buffer) => Words::Pinned(buffer),
        }
    }

    /// Passes the words to `launch` (as `const u64*`).
    pub(super) fn pass(self, launch: Launch<'a>) -> Launch<'a> {
        match self {
            Words::Device(buffer) => launch.buffer(buffer),
            Words::Pinned(buffer) => launch.pinned(buffer),
        }
    }
}

/// Where the last kernel of a pipeline writes: a new device buffer, or page-locked host memory
/// in place.
pub(super) enum Output<'a> {
    Device,
    Pinned(&'a mut PinnedBuffer<u64>),
}

impl<'a> Output<'a> {
    /// The `len` words a kernel writes.
    ///
    /// # Safety
    ///
    /// As [`Gpu::alloc_uninit`]: the kernels queued next write every word before anything
    /// reads it.
    pub(super) unsafe fn allocate(self, gpu: &Gpu, len: usize) -> Result<Target<'a>, Error> {
        Ok(match self {
            // SAFETY: the caller's contract.
            Output::Device => Target::Device(unsafe { gpu.alloc_uninit::<u64>(len)? }),
            Output::Pinned(buffer) if buffer.len() >= len => Target::Pinned(buffer),
            Output::Pinned(buffer) => {
                return Err(Error::DimensionMismatch {
                    what: "page-locked output words",
                    expected: len,
                    got: buffer.len(),
                });
            }
        })
    }
}

/// The words a kernel writes ([`Output::allocate`]).
pub(super) enum Target<'a> {
    Device(DeviceBuffer<u64>),
    Pinned(&'a mut PinnedBuffer<u64>),
}

impl Target<'_> {
    /// Passes the words to `launch` (as `u64*`).
    pub(super) fn pass<'b>(&'b mut self, launch: Launch<'b>) -> Launch<'b> {
        match self {
            Target::Device(buffer) => launch.buffer_mut(buffer),
            Target::Pinned(buffer) => launch.pinned(buffer),
        }
    }

    /// The words written, for the next kernel to read.
    pub(super) fn words(&mut self) -> Words<'_> {
        match self {
            Target::Device(buffer) => Words::Device(buffer),
            Target::Pinned(buffer) => Words::Pinned(buffer),
        }
    }

    /// The device buffer written, if the words are not in host memory.
    pub(super) fn into_device(self) -> Option<DeviceBuffer<u64>> {
        match self {
            Target::Device(buffer) => Some(buffer),
            Target::Pinned(_) => None,
        }
    }
}

/// The page-locked buffer in `slot`, at least `words` long (allocated or grown on demand).
pub(super) fn pinned<'a>(
    gpu: &Gpu,
    slot: &'a mut Option<PinnedBuffer<u64>>,
    words: usize,
) -> Result<&'a mut PinnedBuffer<u64>, Error> {
    let buffer = match slot.take() {
        Some(buffer) if buffer.len() >= words => buffer,
        _ => gpu.alloc_pinned(words)?,
    };
    Ok(slot.insert(buffer))
}

/// The page-locked buffer in `slot` holding the words of `lut` (at its start).
pub(super) fn stage_table<'a>(
    gpu: &Gpu,
    slot: &'a mut Option<PinnedBuffer<u64>>,
    lut: &LookupTable,
) -> Result<&'a mut PinnedBuffer<u64>, Error> {
    let words = lut.polynomial();
    let staged = pinned(gpu, slot, words.len())?;
    staged.as_mut_slice()?[..words.len()].copy_from_slice(words);
    Ok(staged)
}

/// Below this many words, [`stage_inputs`] and [`unpack`] copy on the calling thread: handing
/// a small copy to rayon's pool (waking a worker thread) can cost more than the copy.
pub(super) const PARALLEL_COPY_MIN_WORDS: usize = 1 << 16;

/// The page-locked buffer in `slot` (at least `capacity` words) holding the words of
/// `ciphertexts` (all of one width, checked by [`Cuda::check`]) one after the other.
pub(super) fn stage_inputs<'a>(
    gpu: &Gpu,
    slot: &'a mut Option<PinnedBuffer<u64>>,
    ciphertexts: &[LweCiphertext],
    capacity: usize,
) -> Result<&'a mut PinnedBuffer<u64>, Error> {
    let staged = pinned(gpu, slot, capacity)?;
    let width = ciphertexts.first().map_or(1, |ct| ct.as_slice().len());
    let words = &mut staged.as_mut_slice()?[..ciphertexts.len() * width];
    if words.len() < PARALLEL_COPY_MIN_WORDS {
        for (dst, ct) in words.chunks_mut(width).zip(ciphertexts) {
            dst.copy_from_slice(ct.as_slice());
        }
    } else {
        words
            .par_chunks_mut(width)
            .zip(ciphertexts.par_iter())
            .for_each(|(dst, ct)| dst.copy_from_slice(ct.as_slice()));
    }
    Ok(staged)
}

/// Appends the first `len` words of `outputs` (once their copy has landed) to `out`, as
/// vectors of `width` words.
pub(super) fn unpack(
    outputs: &PinnedBuffer<u64>,
    len: usize,
    width: usize,
    out: &mut Vec<Vec<u64>>,
) -> Result<(), Error> {
    let words = &outputs.as_slice()?[..len];
    if len < PARALLEL_COPY_MIN_WORDS {
        out.extend(words.chunks(width).map(<[u64]>::to_vec));
    } else {
        out.par_extend(words.par_chunks(width).map(<[u64]>::to_vec));
    }
    Ok(())
}

impl Cuda {
    /// Device bytes per ciphertext of a chunk.
    pub(super) fn bytes_per_ciphertext(&self) -> usize {
        let big = self.params.big_lwe_dimension().0 + 1;
        let small = self.params.lwe_dimension().0 + 1;
        let glwe = (self.params.glwe_dimension().0 + 1) * self.params.polynomial_size().0;
        let keyswitch_digits = keyswitch_rows(&self.params);
        8 * (2 * big + small + glwe)
            + 16 * self.global_digit_slots()
            + keyswitch_digits
            + self.bundle_bytes_per_ciphertext()
    }

    /// Complex values of device scratch per ciphertext for the amortized kernel's digit
    /// polynomials (none unless they live in global memory).
    pub(super) fn global_digit_slots(&self) -> usize {
        if self.kernels.amortized_layout == AmortizedLayout::DigitsInGlobal {
            let k1 = self.params.glwe_dimension().0 + 1;
            let levels = self.params.pbs_decomposition().level_count().0;
            k1 * levels * polynomial_slots(&self.params, AMORTIZED_LOG_E)
        } else {
            0
        }
    }

    /// Ciphertexts per chunk of a batch of `count` (at least 1): at most
    /// [`CHUNK_CIPHERTEXTS`] ([`MULTI_BIT_CHUNK_CIPHERTEXTS`] for a multi-bit set), the
    /// [`Cuda::with_max_chunk`] limit and what [`CHUNK_MEMORY_PERCENT`] of the free device
    /// memory holds, the chunks of a batch as even as possible.
    pub(super) fn chunk_len(&self, count: usize) -> Result<usize, Error> {
        let cap = match self.params.pbs_kind() {
            crate::PbsKind::Classic => CHUNK_CIPHERTEXTS,
            crate::PbsKind::MultiBit(_) => MULTI_BIT_CHUNK_CIPHERTEXTS,
        };
        let most = self.max_chunk.min(cap).min(count).max(1);
        let per_ciphertext = self.bytes_per_ciphertext();
        // Reading the free memory costs several microseconds: a chunk that needs less than
        // 1% of the device's memory goes ahead (its allocations still fail cleanly).
        let most = if most * per_ciphertext <= self.gpu.info().total_memory / 100 {
            most
        } else {
            let free = self.gpu.free_memory()?;
            most.min((free / 100 * CHUNK_MEMORY_PERCENT / per_ciphertext).max(1))
        };
        // Chunks of even size: a remainder of a few ciphertexts would cost a whole launch.
        Ok(count.div_ceil(count.div_ceil(most)).max(1))
    }

    /// Words of each output of `pipeline`.
    pub(super) fn output_width(&self, pipeline: Pipeline) -> usize {
        match pipeline {
            Pipeline::Keyswitch => self.params.lwe_dimension().0 + 1,
            Pipeline::Bootstrap | Pipeline::KeyswitchBootstrap => {
                self.params.big_lwe_dimension().0 + 1
            }
            Pipeline::BlindRotate => {
                (self.params.glwe_dimension().0 + 1) * self.params.polynomial_size().0
            }
        }
    }

    /// Runs `pipeline` on every ciphertext; returns each output's words.
    ///
    /// The ciphertexts go through in chunks ([`Cuda::chunk_len`]), each in page-locked host
    /// memory that its first kernel reads and its last kernel writes in place, as the module
    /// docs' "Pipeline" says (with its two exceptions: the amortized blind rotation's inputs
    /// are uploaded, and a key switch's output summed in device memory is downloaded). The
    /// chunks alternate between two sets of buffers: while the GPU works on chunk `i`, the
    /// host unpacks the outputs of chunk `i - 1` and then stages the inputs of chunk `i + 1`.
    pub(super) fn run(
        &self,
        ciphertexts: &[LweCiphertext],
        lut: Option<&LookupTable>,
        pipeline: Pipeline,
    ) -> Result<Vec<Vec<u64>>, Error> {
        self.check(ciphertexts, lut, pipeline)?;
        if ciphertexts.is_empty() {
            return Ok(Vec::new());
        }
        let mut staging = self
            .staging
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Staging {
            inputs: [inputs_a, inputs_b],
            outputs: [outputs_a, outputs_b],
            table,
        } = &mut *staging;
        let count = ciphertexts.len();
        let chunk = self.chunk_len(count)?;
        let in_width = ciphertexts[0].as_slice().len();
        let out_width = self.output_width(pipeline);
        let table_upload;
        let mut lut = match lut {
            Some(lut) => {
                let staged = stage_table(&self.gpu, table, lut)?;
                if count <= TABLE_IN_PLACE_MAX_CIPHERTEXTS {
                    Some(Words::Pinned(staged))
                } else {
                    table_upload = self
                        .gpu
                        .upload_pinned_async(staged, lut.polynomial().len())?;
                    Some(Words::Device(&table_upload))
                }
            }
            None => None,
        };
        let mut out = Vec::with_capacity(count);
        let (mut current, mut previous) = ((inputs_a, outputs_a), (inputs_b, outputs_b));
        // Output words of the chunk before, in `previous`'s buffer, still to be unpacked.
        let mut pending = 0;
        for part in ciphertexts.chunks(chunk) {
            let (inputs, outputs) = &mut current;
            let staged = stage_inputs(&self.gpu, inputs, part, chunk * in_width)?;
            // The amortized blind rotation reads its ciphertexts' words as each CMux needs
            // them, not ahead as the cluster kernel does: over the bus, that cost 0.4 ms per
            // bootstrap.
            let uploaded;
            let input = if pipeline.keyswitches() || self.rotates_in_clusters() {
                Words::Pinned(staged)
            } else {
                uploaded = self
                    .gpu
                    .upload_pinned_async(staged, part.len() * in_width)?;
                Words::Device(&uploaded)
            };
            let outputs = pinned(&self.gpu, outputs, chunk * out_width)?;
            let lut = lut.as_mut().map(Words::reborrow);
            let written =
                self.launch_pipeline(input, part.len(), lut, pipeline, Output::Pinned(outputs))?;
            if let Some(result) = written {
                result.copy_to_pinned_async(result.len(), outputs)?;
            }
            if pending > 0
                && let Some(done) = previous.1.as_ref()
            {
                unpack(done, pending, out_width, &mut out)?;
            }
            pending = part.len() * out_width;
            std::mem::swap(&mut current, &mut previous);
        }
        if let Some(done) = previous.1.as_ref() {
            unpack(done, pending, out_width, &mut out)?;
        }
        Ok(out)
    }

    /// Queues the launches of `pipeline` on `count` ciphertexts in `input`; returns the
    /// device buffer of their outputs, or `None` when the last kernel wrote them into
    /// `output` (every rotating pipeline given [`Output::Pinned`]).
    pub(super) fn launch_pipeline(
        &self,
        input: Words<'_>,
        count: usize,
        lut: Option<Words<'_>>,
        pipeline: Pipeline,
        output: Output<'_>,
    ) -> Result<Option<DeviceBuffer<u64>>, Error> {
        if !pipeline.rotates() {
            return Ok(self.keyswitch_device(input, count, output)?.into_device());
        }
        let lut = lut.ok_or(Error::DimensionMismatch {
            what: "lookup tables of a bootstrap",
            expected: 1,
            got: 0,
        })?;
        let mut switched;
        let small = if pipeline.keyswitches() {
            switched = self.keyswitch_device(input, count, Output::Device)?;
            switched.words()
        } else {
            input
        };
        let extract = pipeline != Pipeline::BlindRotate;
        self.blind_rotate_device(small, lut, count, output, extract)
    }
}
