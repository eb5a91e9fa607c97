//! TFHE rows of the `report` binary: key switch + programmable bootstrap (KS+PBS) on
//! `PARAM_MESSAGE_2_CARRY_2`, on the CPU (FFT mode) and on both CUDA engines. Every output is
//! decrypted and checked against `f(m)`; the CPU's decryptions are the reference.

use fhe_pbs::{
    BlindRotationMode, Bootstrapper, ClientKey, Cpu, Csprng, EvaluationKeys, LookupTable,
    LweCiphertext, PARAM_MESSAGE_2_CARRY_2,
};

use crate::table::{Check, Row, row};
use crate::{median_of, wall};

const KS_PBS: &str = "TFHE KS+PBS (2_2, 2^-128)";
/// Ciphertexts in the report's batch.
const BATCH: usize = 256;

/// The keys, inputs and table the GPU rows reuse.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub struct Reference {
    client: ClientKey,
    keys: EvaluationKeys,
    inputs: Vec<LweCiphertext>,
    lut: LookupTable,
}

/// f(m) = m^2 + 1 mod 16.
fn f(m: u64) -> u64 {
    (m * m + 1) % 16
}

/// One ciphertext (latency) and a batch of `BATCH` (throughput) on `backend`, each output
/// decrypted and compared with `f(m)`.
fn rows_of(
    backend: &dyn Bootstrapper,
    name: &str,
    reference: &Reference,
    check: fn(bool) -> Check,
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
    let (one, time) = median_of(5, || wall(|| backend.keyswitch_bootstrap(&inputs[0], lut)))?;
    let latency = row(
        KS_PBS,
        &format!("{name}, one"),
        1,
        "ciphertexts",
        0,
        time,
        check(decrypts(&[one])?),
    );
    let (many, time) = median_of(3, || {
        wall(|| backend.keyswitch_bootstrap_batch(inputs, lut))
    })?;
    let label = format!("{name}, batch of {BATCH}");
    let throughput = row(
        KS_PBS,
        &label,
        BATCH as u64,
        "ciphertexts",
        0,
        time,
        check(decrypts(&many)?),
    );
    Ok(vec![latency, throughput])
}

/// Runs the CPU engine (FFT mode, all cores).
pub fn cpu_rows() -> Result<(Vec<Row>, Reference), fhe_pbs::Error> {
    let params = PARAM_MESSAGE_2_CARRY_2;
    let mut rng = Csprng::from_seed([0x46; 32]);
    let client = ClientKey::generate(params, &mut rng);
    let keys = EvaluationKeys::generate(&client, &mut rng);
    let inputs = (0..BATCH)
        .map(|i| client.encrypt(i as u64 % 16, &mut rng))
        .collect::<Result<_, _>>()?;
    let lut = LookupTable::new(&params, f)?;
    let reference = Reference {
        client,
        keys,
        inputs,
        lut,
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
    let rows = rows_of(&cpu, &cpu.name(), &reference, reference_check)?;
    Ok((rows, reference))
}

/// Runs both CUDA engines with the reference's keys and inputs.
#[cfg(feature = "cuda")]
pub fn cuda_rows(
    gpu: std::sync::Arc<kernels::Gpu>,
    reference: &Reference,
) -> Result<Vec<Row>, fhe_pbs::Error> {
    use fhe_pbs::{Cuda, Engine};
    let amortized = Cuda::on(gpu, &reference.keys, Engine::Amortized)?;
    let low_latency = amortized.with_engine(Engine::LowLatency);
    let check = |ok: bool| Check::from_equal(ok, "decrypts to the wrong message");
    let mut rows = rows_of(&low_latency, &low_latency.name(), reference, check)?;
    rows.extend(rows_of(&amortized, &amortized.name(), reference, check)?);
    Ok(rows)
}
