//! Times key generation, one key switch and one bootstrap (FFT and exact modes) of
//! `PARAM_MESSAGE_2_CARRY_2` on the CPU: `cargo run --release -p fhe-pbs --example timing`.

use std::time::Instant;

use fhe_pbs::{
    BlindRotationMode, Bootstrapper, ClientKey, Cpu, Csprng, EvaluationKeys, LookupTable,
    PARAM_MESSAGE_2_CARRY_2,
};

fn main() -> Result<(), fhe_pbs::Error> {
    let params = PARAM_MESSAGE_2_CARRY_2;
    println!("rayon threads: {}", rayon::current_num_threads());
    let mut rng = Csprng::from_seed([42; 32]);
    let client_key = ClientKey::generate(params, &mut rng);

    let start = Instant::now();
    let keys = EvaluationKeys::generate(&client_key, &mut rng);
    println!("key generation (KSK + BSK): {:.2?}", start.elapsed());

    let start = Instant::now();
    let fft = Cpu::new(keys, BlindRotationMode::Fft)?;
    println!("Fourier bootstrap key: {:.2?}", start.elapsed());
    let exact = fft.with_mode(BlindRotationMode::Exact)?;

    let lut = LookupTable::new(&params, |m| (3 * m + 1) % 16)?;
    let ct = client_key.encrypt(5, &mut rng)?;

    let reps = 10;
    let start = Instant::now();
    let mut small = fft.keyswitch(&ct)?;
    for _ in 1..reps {
        small = fft.keyswitch(&ct)?;
    }
    println!(
        "key switch (2048 -> 918, 4 levels of 2^4): {:.2?}",
        start.elapsed() / reps
    );

    let start = Instant::now();
    let mut out = fft.bootstrap(&small, &lut)?;
    for _ in 1..reps {
        out = fft.bootstrap(&small, &lut)?;
    }
    println!("bootstrap, fft mode: {:.2?}", start.elapsed() / reps);
    println!("  decrypts to {} (expected 0)", client_key.decrypt(&out)?);

    let start = Instant::now();
    let out_exact = exact.bootstrap(&small, &lut)?;
    println!(
        "bootstrap, exact mode (rayon over the k + 1 = 2 output polynomials): {:.2?}",
        start.elapsed()
    );
    println!(
        "  decrypts to {} (expected 0)",
        client_key.decrypt(&out_exact)?
    );
    let distance = (client_key
        .phase(&out)?
        .wrapping_sub(client_key.phase(&out_exact)?)) as i64;
    println!(
        "  phase distance fft - exact: {distance} (2^{:.1})",
        (distance.unsigned_abs() as f64).log2()
    );

    let batch = vec![ct; 8];
    let start = Instant::now();
    let outs = fft.keyswitch_bootstrap_batch(&batch, &lut)?;
    println!(
        "KS + PBS batch of {}, fft mode: {:.2?} ({:.2?} each)",
        outs.len(),
        start.elapsed(),
        start.elapsed() / 8
    );
    Ok(())
}
