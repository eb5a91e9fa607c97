//! The integer stages on the device, for bit-exact comparison with the CPU functions of the
//! same names ([`crate::modswitch::modulus_switch_lwe`], [`crate::decomposition::decompose_slice`],
//! [`crate::glwe::sample_extract`]); the key switch is [`Bootstrapper::keyswitch_batch`](crate::Bootstrapper::keyswitch_batch).
//! They run the device functions the pipeline runs: the blind rotations switch their inputs'
//! modulus with the functions of the modulus-switch kernel, the decomposition kernel's
//! functions are the ones the key switch and the multi-level blind rotations use, and
//! [`pbs_decompose`] runs the blind rotations' own path for one level. Lookup tables are not
//! built on the device: the CPU's polynomial is uploaded as is.

use super::{Cuda, ELEMENTWISE_THREADS, Output, to_u32};
use crate::error::Error;
use crate::glwe::GlweCiphertext;
use crate::lwe::LweCiphertext;
use crate::params::DecompositionParams;
use crate::polynomial::check_len;
use kernels::{Grid, Kernel};

/// [`crate::modswitch::modulus_switch_lwe`] of every ciphertext (to `2N` of the engine's
/// parameters, with their [`ModulusSwitchType`](crate::ModulusSwitchType)), on the device.
///
/// # Errors
///
/// [`Error::DimensionMismatch`] when the ciphertexts differ in dimension; [`Error::Gpu`].
pub fn modulus_switch(
    cuda: &Cuda,
    ciphertexts: &[LweCiphertext],
) -> Result<Vec<Vec<usize>>, Error> {
    let Some(width) = ciphertexts.first().map(|c| c.as_slice().len()) else {
        return Ok(Vec::new());
    };
    let mut words = Vec::with_capacity(width * ciphertexts.len());
    for ct in ciphertexts {
        check_len("LWE ciphertext length", width, ct.as_slice().len())?;
        words.extend_from_slice(ct.as_slice());
    }
    if width == 0 {
        return Err(Error::DimensionMismatch {
            what: "LWE ciphertext length (at least the body)",
            expected: 1,
            got: 0,
        });
    }
    let input = cuda.gpu.upload(&words)?;
    let switched = cuda
        .modulus_switch_device(&input, ciphertexts.len(), width)?
        .to_host()?;
    Ok(switched
        .chunks_exact(width)
        .map(|c| c.iter().map(|&x| x as usize).collect())
        .collect())
}

/// [`crate::decomposition::decompose_slice`] on the device: digit `j` of `input[i]` at
/// `out[j * input.len() + i]`.
///
/// # Errors
///
/// [`Error::Gpu`].
pub fn decompose(
    cuda: &Cuda,
    input: &[u64],
    params: DecompositionParams,
) -> Result<Vec<i64>, Error> {
    decompose_with(cuda, &cuda.kernels.decompose, input, params)
}

/// The PBS decomposition of the engine's parameters ([`crate::decomposition::decompose_slice`]
/// with [`Parameters::pbs_decomposition`](crate::Parameters::pbs_decomposition)) the way the
/// blind rotations compute it on the device (for one level of at most 31 bits, a path of its
/// own): digit `j` of `input[i]` at `out[j * input.len() + i]`.
///
/// # Errors
///
/// [`Error::Gpu`].
pub fn pbs_decompose(cuda: &Cuda, input: &[u64]) -> Result<Vec<i64>, Error> {
    let params = cuda.params.pbs_decomposition();
    decompose_with(cuda, &cuda.kernels.pbs_decompose, input, params)
}

/// Runs a decomposition kernel (`fhe_decompose` or `fhe_pbs_decompose_*`, which take the same
/// arguments) on `input`.
fn decompose_with(
    cuda: &Cuda,
    kernel: &Kernel,
    input: &[u64],
    params: DecompositionParams,
) -> Result<Vec<i64>, Error> {
    let levels = params.level_count().0;
    if input.is_empty() {
        return Ok(Vec::new());
    }
    let device_input = cuda.gpu.upload(input)?;
    let mut output = cuda.gpu.alloc_zeroed::<i64>(input.len() * levels)?;
    let len = input.len() as u64;
    let base_log = to_u32(params.base_log().0);
    let level_count = to_u32(levels);
    let grid = Grid::cover(len, ELEMENTWISE_THREADS);
    // SAFETY: the arguments match `(const u64*, i64*, u64, u32, u32)`, the signature of both
    // kernels; the input holds `len` words and the output `len * level_count`, which the
    // kernels' grid-stride loops stay within; `params` is a valid decomposition (b l <= 64),
    // the engine's own for `fhe_pbs_decompose_*`.
    unsafe {
        cuda.gpu
            .launch(kernel, grid)
            .buffer(&device_input)
            .buffer_mut(&mut output)
            .value(&len)
            .value(&base_log)
            .value(&level_count)
            .run()?;
    }
    Ok(output.to_host()?)
}

/// [`crate::glwe::sample_extract`] of every GLWE ciphertext, on the device.
///
/// # Errors
///
/// [`Error::DimensionMismatch`] unless each has the engine's `k` and `N`; [`Error::Gpu`].
pub fn sample_extract(
    cuda: &Cuda,
    ciphertexts: &[GlweCiphertext],
) -> Result<Vec<LweCiphertext>, Error> {
    let params = &cuda.params;
    let width = (params.glwe_dimension().0 + 1) * params.polynomial_size().0;
    if ciphertexts.is_empty() {
        return Ok(Vec::new());
    }
    let mut words = Vec::with_capacity(width * ciphertexts.len());
    for ct in ciphertexts {
        check_len("GLWE ciphertext length", width, ct.as_slice().len())?;
        check_len(
            "GLWE polynomial size",
            params.polynomial_size().0,
            ct.polynomial_size().0,
        )?;
        words.extend_from_slice(ct.as_slice());
    }
    let glwe = cuda.gpu.upload(&words)?;
    let lwe = cuda
        .sample_extract_device(&glwe, ciphertexts.len(), Output::Device)?
        .ok_or(Error::DimensionMismatch {
            what: "sample extraction outputs in device memory",
            expected: 1,
            got: 0,
        })?
        .to_host()?;
    let out_width = params.big_lwe_dimension().0 + 1;
    lwe.chunks_exact(out_width)
        .map(|c| LweCiphertext::from_vec(c.to_vec()))
        .collect()
}
