//! Times both CUDA engines on `PARAM_MESSAGE_2_CARRY_2` and checks their results against the
//! CPU: the latency of one key switch + bootstrap, and the throughput of batches.
//!
//! `cargo run --release -p fhe-pbs --example gpu_timing [-- [--standard-switch] SIZES...]`
//! (default sizes 1 16 256 4096 16384). `--standard-switch` runs the set with the plain
//! rounding modulus switch instead of its centered-mean one, to see what the latter costs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use fhe_pbs::{
    BlindRotationMode, Bootstrapper, ClientKey, Cpu, Csprng, Cuda, Engine, EvaluationKeys,
    LookupTable, LweCiphertext, ModulusSwitchType, PARAM_MESSAGE_2_CARRY_2, ParameterSpec,
    Parameters,
};

fn main() -> Result<(), fhe_pbs::Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let standard_switch = args.iter().any(|a| a == "--standard-switch");
    let sizes: Vec<usize> = args
        .iter()
        .filter(|a| *a != "--standard-switch")
        .map(|a| a.parse().expect("batch sizes are integers"))
        .collect();
    let sizes = if sizes.is_empty() {
        vec![1, 16, 256, 4096, 16384]
    } else {
        sizes
    };
    let params = if standard_switch {
        Parameters::new(ParameterSpec {
            modulus_switch: ModulusSwitchType::Standard,
            ..*PARAM_MESSAGE_2_CARRY_2.spec()
        })?
    } else {
        PARAM_MESSAGE_2_CARRY_2
    };
    println!("modulus switch: {:?}", params.modulus_switch());
    let mut rng = Csprng::from_seed([42; 32]);
    let start = Instant::now();
    let client = ClientKey::generate(params, &mut rng);
    let keys = EvaluationKeys::generate(&client, &mut rng);
    println!("keys generated in {:.2?}", start.elapsed());
    let start = Instant::now();
    let amortized = Cuda::new(&keys, Engine::Amortized)?;
    println!(
        "GPU engine made (key upload, kernels) in {:.2?}",
        start.elapsed()
    );
    let low = amortized.with_engine(Engine::LowLatency);
    println!("{}\n{}", low.name(), amortized.name());
    let cpu = Cpu::new(keys, BlindRotationMode::Fft)?;
    let lut = LookupTable::new(&params, |m| (m * m + 1) % 16)?;

    // Latency of one KS+PBS (warm up first).
    let ct = client.encrypt(7, &mut rng)?;
    for engine in [&low, &amortized] {
        engine.keyswitch_bootstrap(&ct, &lut)?;
        let runs = 20;
        let mut best = Duration::MAX;
        let mut total = Duration::ZERO;
        for _ in 0..runs {
            let t = Instant::now();
            let out = engine.keyswitch_bootstrap(&ct, &lut)?;
            let e = t.elapsed();
            best = best.min(e);
            total += e;
            assert_eq!(client.decrypt(&out)?, (7 * 7 + 1) % 16, "{}", engine.name());
        }
        println!(
            "{:?}: one KS+PBS: best {best:.3?}, mean {:.3?} (host to host)",
            engine.engine(),
            total / runs
        );
    }
    // The two halves of one KS+PBS, host to host each: key switch alone, bootstrap alone.
    let small = cpu.keyswitch(&ct)?;
    for engine in [&low, &amortized] {
        let (ks, pbs) = (
            best_of(20, || engine.keyswitch(&ct))?,
            best_of(20, || engine.bootstrap(&small, &lut))?,
        );
        println!(
            "{:?}: one KS alone: best {ks:.3?}; one PBS alone: best {pbs:.3?}",
            engine.engine()
        );
    }
    let t = Instant::now();
    let cpu_out = cpu.keyswitch_bootstrap(&ct, &lut)?;
    println!("cpu: one KS+PBS {:.3?}", t.elapsed());
    assert_eq!(client.decrypt(&cpu_out)?, (7 * 7 + 1) % 16);

    // Throughput.
    for &size in &sizes {
        let inputs: Vec<LweCiphertext> = (0..size)
            .map(|i| client.encrypt(i as u64 % 16, &mut rng))
            .collect::<Result<_, _>>()?;
        for engine in [&low, &amortized] {
            if engine.engine() == Engine::LowLatency && size > 4096 {
                continue;
            }
            engine.keyswitch_bootstrap_batch(&inputs[..size.min(64)], &lut)?;
            let t = Instant::now();
            let out = engine.keyswitch_bootstrap_batch(&inputs, &lut)?;
            let e = t.elapsed();
            for (i, o) in out.iter().enumerate() {
                let m = i as u64 % 16;
                assert_eq!(client.decrypt(o)?, (m * m + 1) % 16, "ciphertext {i}");
            }
            // Spot-check against the CPU.
            let check = size.min(4);
            let cpu_out = cpu.keyswitch_bootstrap_batch(&inputs[..check], &lut)?;
            for (g, c) in out.iter().zip(&cpu_out) {
                assert_eq!(client.decrypt(g)?, client.decrypt(c)?);
            }
            let t = Instant::now();
            engine.keyswitch_batch(&inputs)?;
            let ks = t.elapsed();
            println!(
                "{:?}: batch {size:>6}: {e:>10.3?}, {:>10.0} KS+PBS/s (KS alone {ks:.3?})",
                engine.engine(),
                size as f64 / e.as_secs_f64()
            );
        }
    }
    Ok(())
}

/// The shortest of `runs` calls of `f` (after one warm-up call).
fn best_of<T>(
    runs: usize,
    mut f: impl FnMut() -> Result<T, fhe_pbs::Error>,
) -> Result<Duration, fhe_pbs::Error> {
    f()?;
    let mut best = Duration::MAX;
    for _ in 0..runs {
        let t = Instant::now();
        f()?;
        best = best.min(t.elapsed());
    }
    Ok(best)
}
