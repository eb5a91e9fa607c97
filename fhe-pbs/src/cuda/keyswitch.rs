//! The key switch on the device: the kernels by tiles of ciphertexts (digits staged in shared
//! memory), by key columns for a few ciphertexts, and on the int8 tensor cores for batches, and
//! the shapes and key copies they need (see the module docs of [`super`]).

use super::*;

/// Output words per block of the key switch (`KS_THREADS` in fhe_pbs.cu).
pub(super) const KS_THREADS: u32 = 128;

/// Ciphertexts per block of the key switch (the `TILE` of `fhe_keyswitch_t8`) for a few
/// ciphertexts.
pub(super) const KS_TILE_SMALL: u32 = 8;

/// Ciphertexts per block of the key switch for batches (`fhe_keyswitch_t32`).
pub(super) const KS_TILE_LARGE: u32 = 32;

/// Input coefficients whose digits a key-switch block stages at once (`KS_CHUNK`).
pub(super) const KS_CHUNK: u32 = 16;

/// Batches of at least this many ciphertexts key-switch on the tensor cores, where the
/// parameters allow it (see [`tensor_keyswitch`]).
pub(super) const KS_TENSOR_MIN_COUNT: usize = 64;

/// The ciphertext counts the key switch by key columns is compiled for
/// (`fhe_keyswitch_columns_t{T}`); runs of up to the largest take it where the parameters
/// allow.
pub(super) const KS_COLUMN_TILES: [usize; 3] = [1, 4, 16];

/// Threads per block of it (`KSC_THREADS` in fhe_pbs.cu).
pub(super) const KS_COLUMN_THREADS: u32 = 256;

/// Its grid: this many blocks per SM (or one per output word, if fewer), each staging the
/// digits once for the words it computes.
pub(super) const KS_COLUMN_BLOCKS_PER_SM: u32 = 4;

/// Ciphertexts per block of the tensor-core key switch (`KSM_M` in fhe_pbs.cu).
pub(super) const KSM_CIPHERTEXTS: usize = 128;

/// Key columns per block of it (`KSM_N`): 16 output words of 8 bytes.
pub(super) const KSM_COLUMNS: usize = 128;

/// Key rows per shared-memory stage of it (`KSM_K`).
pub(super) const KSM_ROWS: usize = 64;

/// Threads per block of it (`KSM_THREADS`).
pub(super) const KSM_THREADS: u32 = 256;

/// The kernels of the key switch by the key's bytes ([`keyswitch_key_bytes`]).
#[derive(Debug, Clone)]
pub(super) struct ByteKeyswitch {
    /// `fhe_keyswitch_digits`: the digits as an int8 matrix.
    pub(super) digits: Kernel,
    /// `fhe_keyswitch_mma`: digits times key bytes on the tensor cores, combined into the
    /// output words (batches of at least [`KS_TENSOR_MIN_COUNT`]).
    pub(super) product: Kernel,
    /// `fhe_keyswitch_columns_t{T}` and its `T`, smallest first: the key switch of at most `T`
    /// ciphertexts by key columns, for each `T` of [`KS_COLUMN_TILES`] whose shared memory
    /// fits the device.
    pub(super) columns: Vec<(usize, Kernel)>,
}

/// Dynamic shared memory of the key switch with `tile` ciphertexts per block: the digits of
/// `KS_CHUNK` coefficients (ints in the narrow kernels, else i64).
pub(super) fn keyswitch_shared_bytes(params: &Parameters, tile: u32) -> usize {
    let ks_levels = params.ks_decomposition().level_count().0;
    let digit_bytes = if narrow_keyswitch(params) { 4 } else { 8 };
    KS_CHUNK as usize * ks_levels * tile as usize * digit_bytes
}

/// Key-switching key rows: `k N l`, one per input coefficient and level.
pub(super) fn keyswitch_rows(params: &Parameters) -> usize {
    params.big_lwe_dimension().0 * params.ks_decomposition().level_count().0
}

/// Dynamic shared memory of `fhe_keyswitch_columns_t{tile}` on `count` ciphertexts: their
/// digits (one byte per key row), then `tile` partial sums per thread.
pub(super) fn keyswitch_columns_shared_bytes(
    params: &Parameters,
    tile: usize,
    count: usize,
) -> usize {
    count * keyswitch_rows(params) + tile * KS_COLUMN_THREADS as usize * 8
}

/// Whether batches can key-switch on the int8 tensor cores (`fhe_keyswitch_mma`): digits of a
/// base log `b <= 7` fit an int8 (`|d| <= 2^(b-1)`), every inner sum over the key rows of
/// digit times key byte (each at most `2^(b-1) 255`) fits an int32, and the rows fill whole
/// shared-memory stages.
pub(super) fn tensor_keyswitch(params: &Parameters) -> bool {
    let base_log = params.ks_decomposition().base_log().0;
    let rows = keyswitch_rows(params);
    (1..=7).contains(&base_log) && (rows << (base_log - 1)) * 255 < 1 << 31 && rows % KSM_ROWS == 0
}

/// The key-switching key `ksk` (rows of `out_width` words) split into bytes for the
/// tensor-core key switch: byte `t` of row `f`'s word `w` at `(8 w + t) rows + f`, so each of
/// the `8 out_width` columns holds its rows contiguously; zero columns pad the words to whole
/// blocks of `KSM_COLUMNS / 8`.
pub(super) fn keyswitch_key_bytes(ksk: &[u64], out_width: usize) -> Vec<u8> {
    let rows = ksk.len() / out_width;
    let words = out_width.next_multiple_of(KSM_COLUMNS / 8);
    let mut bytes = vec![0u8; words * 8 * rows];
    bytes
        .par_chunks_mut(8 * rows)
        .take(out_width)
        .enumerate()
        .for_each(|(w, columns)| {
            for f in 0..rows {
                for (t, byte) in ksk[f * out_width + w].to_le_bytes().into_iter().enumerate() {
                    columns[t * rows + f] = byte;
                }
            }
        });
    bytes
}

/// Whether the key switch runs its narrow kernels (`fhe_keyswitch_narrow_t*`): digits of a
/// base log of at most 31 bits fit an int.
pub(super) fn narrow_keyswitch(params: &Parameters) -> bool {
    params.ks_decomposition().base_log().0 <= 31
}

impl Cuda {
    /// Key switch of `count` big-key ciphertexts on the device: by the key's bytes (by key
    /// columns for a few, on the tensor cores for batches) into `output`, each word written
    /// once; else into a new zeroed device buffer, which the other kernels sum into with
    /// atomics.
    pub(super) fn keyswitch_device<'a>(
        &self,
        mut input: Words<'_>,
        count: usize,
        output: Output<'a>,
    ) -> Result<Target<'a>, Error> {
        let shape = shape_of(&self.params);
        let out_width = self.params.lwe_dimension().0 + 1;
        if let (Some(bytes), Some(key_bytes)) =
            (&self.kernels.keyswitch_bytes, &self.keys.ksk_bytes)
        {
            let columns = bytes.columns.iter().find(|(tile, _)| count <= *tile);
            if columns.is_some() || count >= KS_TENSOR_MIN_COUNT {
                // SAFETY: both key switches by the key's bytes write every word.
                let mut target = unsafe { output.allocate(&self.gpu, count * out_width)? };
                let padded_count = match columns {
                    Some(_) => count,
                    None => count.next_multiple_of(KSM_CIPHERTEXTS),
                };
                let digits =
                    self.keyswitch_digits(&bytes.digits, input.reborrow(), count, padded_count)?;
                match columns {
                    Some((tile, kernel)) => self.keyswitch_by_columns(
                        (*tile, kernel),
                        key_bytes,
                        &digits,
                        input,
                        count,
                        &mut target,
                    )?,
                    None => self.keyswitch_on_tensor_cores(
                        &bytes.product,
                        key_bytes,
                        &digits,
                        input,
                        count,
                        &mut target,
                    )?,
                }
                return Ok(target);
            }
        }
        let mut output = self.gpu.alloc_zeroed::<u64>(count * out_width)?;
        let in_dim = self.params.big_lwe_dimension().0 as u32;
        let word_blocks = to_u32(out_width).div_ceil(KS_THREADS);
        let (kernel, tile) = match &self.kernels.keyswitch_large {
            Some(large) if count >= KS_TILE_LARGE as usize => (large, KS_TILE_LARGE),
            _ => (&self.kernels.keyswitch_small, KS_TILE_SMALL),
        };
        let ct_blocks = to_u32(count).div_ceil(tile);
        // Split the input coefficients until the grid fills the GPU about four times over.
        let target = 4 * self.gpu.info().sm_count;
        let max_splits = in_dim.div_ceil(KS_CHUNK);
        let splits = target
            .div_ceil(word_blocks * ct_blocks)
            .clamp(1, max_splits);
        let inputs_per_split = in_dim.div_ceil(splits).div_ceil(KS_CHUNK) * KS_CHUNK;
        let splits = in_dim.div_ceil(inputs_per_split);
        let count_u32 = to_u32(count);
        let grid = Grid {
            blocks: word_blocks * ct_blocks * splits,
            threads: KS_THREADS,
            shared_bytes: to_u32(keyswitch_shared_bytes(&self.params, tile)),
        };
        // SAFETY: the arguments match `fhe_keyswitch_[narrow_]t{TILE}(FheShape, const u64*,
        // const u64*, u64*, u32, u32, u32, u32)`, TILE = `tile`; `input` holds `count`
        // ciphertexts of kN + 1 words, the key kN l (n + 1) words, `output` count (n + 1)
        // zeroed words; the kernel reads inputs only for ct < count and coefficients < kN, and
        // writes words < n + 1 of ciphertexts < count; the shared memory is KS_CHUNK l TILE
        // digits (4 bytes each in the narrow kernels, else 8) as it indexes.
        unsafe {
            input
                .pass(self.gpu.launch(kernel, grid).value(&shape))
                .buffer(&self.keys.ksk)
                .buffer_mut(&mut output)
                .value(&count_u32)
                .value(&word_blocks)
                .value(&ct_blocks)
                .value(&inputs_per_split)
                .run()?;
        }
        Ok(Target::Device(output))
    }

    /// The key-switch digits of `count` ciphertexts in `input` as an int8 matrix (`count` rows
    /// of `k N l` bytes, [`keyswitch_rows`], in the key's row order), then zero rows up to
    /// `padded_count >= count`.
    pub(super) fn keyswitch_digits(
        &self,
        kernel: &Kernel,
        input: Words<'_>,
        count: usize,
        padded_count: usize,
    ) -> Result<DeviceBuffer<i8>, Error> {
        let shape = shape_of(&self.params);
        let rows = keyswitch_rows(&self.params);
        let in_dim = self.params.big_lwe_dimension().0;
        let mut digits = if padded_count > count {
            self.gpu.alloc_zeroed::<i8>(padded_count * rows)?
        } else {
            // SAFETY: the kernel below writes all count rows.
            unsafe { self.gpu.alloc_uninit::<i8>(count * rows)? }
        };
        let count_u32 = to_u32(count);
        // SAFETY: the arguments match `fhe_keyswitch_digits(FheShape, const u64*, signed
        // char*, u32)`; `input` holds `count` ciphertexts of kN + 1 words and `digits` at least
        // count kN l bytes, the bounds of the kernel's grid-stride loop.
        unsafe {
            input
                .pass(
                    self.gpu
                        .launch(
                            kernel,
                            Grid::cover((count * in_dim) as u64, ELEMENTWISE_THREADS),
                        )
                        .value(&shape),
                )
                .buffer_mut(&mut digits)
                .value(&count_u32)
                .run()?;
        }
        Ok(digits)
    }

    /// The key switch of `count` ciphertexts by key columns (`fhe_keyswitch_columns_t{tile}`,
    /// `count <= tile`) from their `digits` ([`Cuda::keyswitch_digits`]) into `output`.
    pub(super) fn keyswitch_by_columns(
        &self,
        (tile, kernel): (usize, &Kernel),
        key_bytes: &DeviceBuffer<u8>,
        digits: &DeviceBuffer<i8>,
        input: Words<'_>,
        count: usize,
        output: &mut Target<'_>,
    ) -> Result<(), Error> {
        let rows = keyswitch_rows(&self.params);
        let in_dim = self.params.big_lwe_dimension().0;
        let out_width = self.params.lwe_dimension().0 + 1;
        let grid = Grid {
            blocks: to_u32(out_width).min(KS_COLUMN_BLOCKS_PER_SM * self.gpu.info().sm_count),
            threads: KS_COLUMN_THREADS,
            shared_bytes: to_u32(keyswitch_columns_shared_bytes(&self.params, tile, count)),
        };
        let (count, in_dim, out_width, rows) = (
            to_u32(count),
            to_u32(in_dim),
            to_u32(out_width),
            to_u32(rows),
        );
        // SAFETY: the arguments match `fhe_keyswitch_columns_t{tile}(const u64*, const signed
        // char*, const unsigned char*, u64*, u32, u32, u32, u32)`, with `count <= tile`;
        // `input` holds `count` ciphertexts of kN + 1 words (the kernel reads their bodies),
        // `digits` count rows of `rows` bytes (a multiple of 16, as `tensor_keyswitch`
        // checked), `key_bytes` 8 columns of `rows` bytes per output word, `output` count
        // (n + 1) words, all of which the kernel writes; the shared memory is the count rows of
        // digits and tile partial sums per thread, as it indexes (allowed at load for
        // count = tile).
        unsafe {
            let launch = input
                .pass(self.gpu.launch(kernel, grid))
                .buffer(digits)
                .buffer(key_bytes);
            output
                .pass(launch)
                .value(&count)
                .value(&in_dim)
                .value(&out_width)
                .value(&rows)
                .run()?;
        }
        Ok(())
    }

    /// The key switch of `count` ciphertexts on the tensor cores (`fhe_keyswitch_mma`) from
    /// their `digits` ([`Cuda::keyswitch_digits`], padded to whole tiles of
    /// [`KSM_CIPHERTEXTS`]) into `output`.
    pub(super) fn keyswitch_on_tensor_cores(
        &self,
        kernel: &Kernel,
        key_bytes: &DeviceBuffer<u8>,
        digits: &DeviceBuffer<i8>,
        input: Words<'_>,
        count: usize,
        output: &mut Target<'_>,
    ) -> Result<(), Error> {
        let rows = keyswitch_rows(&self.params);
        let in_dim = self.params.big_lwe_dimension().0;
        let out_width = self.params.lwe_dimension().0 + 1;
        let padded_count = digits.len() / rows;
        let count_u32 = to_u32(count);
        let column_blocks = to_u32(key_bytes.len() / rows / KSM_COLUMNS);
        let grid = Grid {
            blocks: column_blocks * to_u32(padded_count / KSM_CIPHERTEXTS),
            threads: KSM_THREADS,
            shared_bytes: 0,
        };
        let (in_dim, out_width, rows) = (to_u32(in_dim), to_u32(out_width), to_u32(rows));
        // SAFETY: the arguments match `fhe_keyswitch_mma(const signed char*, const unsigned
        // char*, const u64*, u64*, u32, u32, u32, u32, u32)`; `digits` holds `padded_count`
        // rows and `key_bytes` `column_blocks` KSM_N columns of `rows` bytes (a multiple of
        // KSM_K, checked by `tensor_keyswitch`), which the grid's tiles cover exactly; the
        // kernel reads body words of `input` and writes every `output` word (ciphertexts
        // below `count`, words below `out_width`) once.
        unsafe {
            let launch = self
                .gpu
                .launch(kernel, grid)
                .buffer(digits)
                .buffer(key_bytes);
            output
                .pass(input.pass(launch))
                .value(&count_u32)
                .value(&in_dim)
                .value(&out_width)
                .value(&rows)
                .value(&column_blocks)
                .run()?;
        }
        Ok(())
    }
}
