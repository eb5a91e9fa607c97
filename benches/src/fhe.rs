//! TFHE rows of the `report` binary: key switch + programmable bootstrap (KS+PBS) on
//! `PARAM_MESSAGE_2_CARRY_2`, on the CPU (FFT mode) and on both CUDA engines. Every output is
//! decrypted and checked against `f(m)`; the CPU's decryptions are the reference.
//!
//! The GPU's batch is 256 ciphertexts; the CPU's is 256 with [`Sizes::full`] (a minute on
//! 2 cores) and 16 with [`Sizes::quick`].

use fhe_pbs::{
    BlindRotationMode, Bootstrapper, ClientKey, Cpu, Csprng, EvaluationKeys, LookupTable,
    LweCiphertext, PARAM_MESSAGE_2_CARRY_2,
};

use crate::progress::Progress;
use crate::table::{Check, Row, row};
use crate::{median_of, wall};

/// The rows' name: the set, and its failure probability as tfhe-rs states it for the set run
/// as here (with its centered-mean modulus switch).
const KS_PBS: &str = "TFHE KS+PBS (2_2, p_fail 2^-129.58 per tfhe-rs)";

/// Steps of [`cpu_rows`]: the keys, then its rows.
pub const CPU_STEPS: u64 = 3;
/// Steps of [`cuda_rows`], one per measured row.
pub const CUDA_STEPS: u64 = 4;

/// Ciphertexts in the batch rows.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// The CPU's batch.
    pub cpu_batch: usize,
    /// The GPU's batch.
    pub gpu_batch: usize,
}

impl Sizes {
    /// Batches of 256 on both.
    pub fn full() -> Self {
        Self {
            cpu_batch: 256,
            gpu_batch: 256,
        }
    }

    /// A batch of 16 on the CPU, 256 on the GPU.
    pub fn quick() -> Self {
        Self {
            cpu_batch: 16,
            ..Self::full()
        }
    }
}

/// The keys, inputs and table the GPU rows reuse.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub struct Reference {
    client: ClientKey,
    keys: EvaluationKeys,
    inputs: Vec<LweCiphertext>,
    lut: LookupTable,
    sizes: Sizes,
}

/// f(m) = m^2 + 1 mod 16.
fn f(m: u64) -> u64 {
    (m * m + 1) % 16
}

/// One ciphertext (latency) and a batch of `batch` (throughput) on `backend`, each output
/// decrypted and compared with `f(m)`.
fn rows_of(
    backend: &dyn Bootstrapper,
    name: &str,
    reference: &Reference,
    batch: usize,
    check: fn(bool) -> Check,
    progress: &Progress,
) -> Result<Vec<Row>, fhe_pbs::Error> {
    let Reference {
        client,
        inputs,
        lut,
        ..
    } = reference;
    let decrypts = |outputs: &[LweCiphertext]| -> Result<bool, fhe_pbs::Error> {
        for (i, out) in outputs.iter().enumerate() {
            if client.decrypt(out)? != f(i as u64 % 16) {
                return Ok(false);
            }
        }
        Ok(true)
    };
    let label = format!("{name}, one");
    progress.step(KS_PBS, &label);
    let (one, time) = median_of(5, || wall(|| backend.keyswitch_bootstrap(&inputs[0], lut)))?;
    let latency = row(
        KS_PBS,
        &label,
        1,
        "ciphertexts",
        0,
        time,
        check(decrypts(&[one])?),
    );
    let label = format!("{name}, batch of {batch}");
    progress.step(KS_PBS, &label);
    let inputs = &inputs[..batch];
    let (many, time) = median_of(3, || {
        wall(|| backend.keyswitch_bootstrap_batch(inputs, lut))
    })?;
    let throughput = row(
        KS_PBS,
        &label,
        batch as u64,
        "ciphertexts",
        0,
        time,
        check(decrypts(&many)?),
    );
    Ok(vec![latency, throughput])
}

/// Runs the CPU engine (FFT mode, all cores).
pub fn cpu_rows(
    sizes: Sizes,
    progress: &Progress,
) -> Result<(Vec<Row>, Reference), fhe_pbs::Error> {
    progress.step("TFHE keys", "generated on the CPU");
    let params = PARAM_MESSAGE_2_CARRY_2;
    let mut rng = Csprng::from_seed([0x46; 32]);
    let client = ClientKey::generate(params, &mut rng);
    let keys = EvaluationKeys::generate(&client, &mut rng);
    let inputs = (0..sizes.cpu_batch.max(sizes.gpu_batch))
        .map(|i| client.encrypt(i as u64 % 16, &mut rng))
        .collect::<Result<_, _>>()?;
    let lut = LookupTable::new(&params, f)?;
    let reference = Reference {
        client,
        keys,
        inputs,
        lut,
        sizes,
    };
    let cpu = Cpu::new(reference.keys.clone(), BlindRotationMode::Fft)?;
    // The CPU's own decryptions are the reference: a wrong one still shows as FAIL.
    let reference_check = |ok: bool| {
        if ok {
            Check::Reference
        } else {
            Check::Fail("decrypts to the wrong message".to_owned())
        }
    };
    let batch = sizes.cpu_batch;
    let rows = rows_of(
        &cpu,
        &cpu.name(),
        &reference,
        batch,
        reference_check,
        progress,
    )?;
    Ok((rows, reference))
}

/// Runs both CUDA engines with the reference's keys and inputs.
#[cfg(feature = "cuda")]
pub fn cuda_rows(
    gpu: std::sync::Arc<kernels::Gpu>,
    reference: &Reference,
    progress: &Progress,
) -> Result<Vec<Row>, fhe_pbs::Error> {
    use fhe_pbs::{Cuda, Engine};
    let amortized = Cuda::on(gpu, &reference.keys, Engine::Amortized)?;
    let low_latency = amortized.with_engine(Engine::LowLatency);
    let check = |ok: bool| Check::from_equal(ok, "decrypts to the wrong message");
    let batch = reference.sizes.gpu_batch;
    let mut rows = Vec::new();
    for engine in [&low_latency, &amortized] {
        let name = engine.name();
        rows.extend(rows_of(engine, &name, reference, batch, check, progress)?);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_row_name_states_the_failure_probability_tfhe_rs_states() {
        let log2 = PARAM_MESSAGE_2_CARRY_2.log2_failure_probability();
        assert_eq!(log2, Some(-129.581));
        assert!(KS_PBS.contains("2^-129.58 "), "{KS_PBS}");
    }
}
