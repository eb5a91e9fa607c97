//! Criterion bench `fhe_pbs`: TFHE key switch (KS), programmable bootstrap (PBS) and KS+PBS on
//! `PARAM_MESSAGE_2_CARRY_2`, on the CPU (FFT mode, rayon over batches) and on both CUDA
//! engines.
//!
//! Ids are `<op>/<backend>` for one ciphertext (latency, host to host: the kernels read the
//! input and write the output in page-locked host memory) with op `ks`, `pbs`, `ks-pbs` and
//! backend `cpu`, `cuda-low-latency`, `cuda-amortized`; and `ks-pbs-batch/<backend>/<size>`
//! for batches of 1 to 16,384 ciphertexts (the amortized engine; the low-latency one, which
//! `Engine::Auto` picks, up to 4,096; the CPU up to 256), host to host, throughput in
//! ciphertexts; and
//! `ks-pbs/cuda-low-latency-standard-switch`, the set run with the plain rounding modulus
//! switch instead of its centered-mean one (what the latter costs); and backends
//! `cpu-multi-bit-g4` and `cuda-multi-bit-g4`, tfhe-rs's
//! `PARAM_GPU_MULTI_BIT_GROUP_4_MESSAGE_2_CARRY_2` on the CPU (batches up to 16) and on the
//! GPU (batches up to 4,096). `ks-pbs-batch-device/<backend>/<size>` are batches resident on
//! the GPU (`Cuda::keyswitch_bootstrap_on_device`, waited for; no transfer), as TFHE-rs's
//! GPU figures are; size 1 is one ciphertext's latency without the transfers. On a host with
//! several GPUs, backend `cuda-multi-gpu` (`MultiGpu` over all of them, each batch split
//! between them) runs the ids of one ciphertext and the host-to-host batches up to 16,384.
//! Keys come from a fixed seed; every output is decrypted and checked once before timing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use fhe_pbs::{
    BlindRotationMode, Bootstrapper, ClientKey, Cpu, Csprng, EvaluationKeys, LookupTable,
    LweCiphertext, PARAM_GPU_MULTI_BIT_GROUP_4_MESSAGE_2_CARRY_2, PARAM_MESSAGE_2_CARRY_2,
};

/// Batch sizes of the throughput runs.
const BATCHES: [usize; 5] = [1, 16, 256, 4096, 16384];
/// The largest batch the CPU runs (16,384 bootstraps take minutes there).
const CPU_MAX_BATCH: usize = 256;

/// f(m) = m^2 + 1 mod 16.
fn f(m: u64) -> u64 {
    (m * m + 1) % 16
}

/// Times one backend: the three single-ciphertext operations and the batches up to `max`.
fn bench_backend(
    c: &mut Criterion,
    name: &str,
    backend: &dyn Bootstrapper,
    client: &ClientKey,
    inputs: &[LweCiphertext],
    max: usize,
) {
    let lut = LookupTable::new(backend.parameters(), f).unwrap();
    let big = &inputs[0];
    let small = backend.keyswitch(big).unwrap();
    let out = backend.keyswitch_bootstrap(big, &lut).unwrap();
    assert_eq!(client.decrypt(&out).unwrap(), f(0), "{name}");

    let mut group = c.benchmark_group("fhe_pbs");
    group.sample_size(10);
    group.bench_function(BenchmarkId::new("ks", name), |b| {
        b.iter(|| backend.keyswitch(big).unwrap())
    });
    group.bench_function(BenchmarkId::new("pbs", name), |b| {
        b.iter(|| backend.bootstrap(&small, &lut).unwrap())
    });
    group.bench_function(BenchmarkId::new("ks-pbs", name), |b| {
        b.iter(|| backend.keyswitch_bootstrap(big, &lut).unwrap())
    });
    for size in BATCHES.into_iter().filter(|&s| s <= max) {
        let batch = &inputs[..size];
        let out = backend.keyswitch_bootstrap_batch(batch, &lut).unwrap();
        for (i, ct) in out.iter().enumerate() {
            assert_eq!(client.decrypt(ct).unwrap(), f(i as u64 % 16), "{name}, {i}");
        }
        group.throughput(Throughput::Elements(size as u64));
        group.bench_function(
            BenchmarkId::new(format!("ks-pbs-batch/{name}"), size),
            |b| b.iter(|| backend.keyswitch_bootstrap_batch(batch, &lut).unwrap()),
        );
    }
    group.finish();
}

fn fhe_pbs(c: &mut Criterion) {
    let params = PARAM_MESSAGE_2_CARRY_2;
    let mut rng = Csprng::from_seed([0x46; 32]);
    let client = ClientKey::generate(params, &mut rng);
    let keys = EvaluationKeys::generate(&client, &mut rng);
    let inputs: Vec<LweCiphertext> = (0..BATCHES[BATCHES.len() - 1])
        .map(|i| client.encrypt(i as u64 % 16, &mut rng).unwrap())
        .collect();
    let cpu = Cpu::new(keys.clone(), BlindRotationMode::Fft).unwrap();
    bench_backend(c, "cpu", &cpu, &client, &inputs, CPU_MAX_BATCH);
    cuda(c, &keys, &client, &inputs);
    multi_bit(c);
}

/// tfhe-rs's GPU multi-bit set with g = 4: the CPU (FFT mode, batches up to 16) and the GPU
/// (batches up to 4,096, host to host and resident).
fn multi_bit(c: &mut Criterion) {
    let params = PARAM_GPU_MULTI_BIT_GROUP_4_MESSAGE_2_CARRY_2;
    let mut rng = Csprng::from_seed([0x4d; 32]);
    let client = ClientKey::generate(params, &mut rng);
    let keys = EvaluationKeys::generate(&client, &mut rng);
    let inputs: Vec<LweCiphertext> = (0..4096)
        .map(|i| client.encrypt(i as u64 % 16, &mut rng).unwrap())
        .collect();
    #[cfg(feature = "cuda")]
    match fhe_pbs::Cuda::new(&keys, fhe_pbs::Engine::LowLatency) {
        Ok(gpu) => {
            bench_backend(c, "cuda-multi-bit-g4", &gpu, &client, &inputs, 4096);
            bench_device_resident(
                c,
                "cuda-multi-bit-g4",
                &gpu,
                &client,
                &inputs,
                &[1, 256, 4096],
            );
        }
        Err(why) => eprintln!("fhe_pbs: no CUDA multi-bit benches: {why}"),
    }
    let cpu = Cpu::new(keys, BlindRotationMode::Fft).unwrap();
    bench_backend(c, "cpu-multi-bit-g4", &cpu, &client, &inputs, 16);
}

#[cfg(feature = "cuda")]
fn cuda(c: &mut Criterion, keys: &EvaluationKeys, client: &ClientKey, inputs: &[LweCiphertext]) {
    use fhe_pbs::{Cuda, Engine, ModulusSwitchType, ParameterSpec, Parameters};
    let amortized = match Cuda::new(keys, Engine::Amortized) {
        Ok(gpu) => gpu,
        Err(why) => {
            eprintln!("fhe_pbs: no CUDA benches: {why}");
            return;
        }
    };
    let low_latency = amortized.with_engine(Engine::LowLatency);
    let max = BATCHES[BATCHES.len() - 1];
    bench_backend(c, "cuda-low-latency", &low_latency, client, inputs, 4096);
    bench_backend(c, "cuda-amortized", &amortized, client, inputs, max);
    bench_device_resident(
        c,
        "cuda-amortized",
        &amortized,
        client,
        inputs,
        &[4096, 16384],
    );
    bench_device_resident(
        c,
        "cuda-low-latency",
        &low_latency,
        client,
        inputs,
        &[1, 256, 4096],
    );

    // What the set's centered-mean modulus switch costs: the same keys run with plain rounding.
    let standard = Parameters::new(ParameterSpec {
        modulus_switch: ModulusSwitchType::Standard,
        ..*PARAM_MESSAGE_2_CARRY_2.spec()
    })
    .unwrap();
    let standard_keys = EvaluationKeys::from_parts(
        standard,
        keys.bootstrap_key().clone(),
        keys.keyswitch_key().clone(),
    )
    .unwrap();
    let standard_gpu = Cuda::new(&standard_keys, Engine::LowLatency).unwrap();
    let lut = LookupTable::new(&standard, f).unwrap();
    let out = standard_gpu.keyswitch_bootstrap(&inputs[3], &lut).unwrap();
    assert_eq!(client.decrypt(&out).unwrap(), f(3));
    let mut group = c.benchmark_group("fhe_pbs");
    group.sample_size(10);
    group.bench_function("ks-pbs/cuda-low-latency-standard-switch", |b| {
        b.iter(|| standard_gpu.keyswitch_bootstrap(&inputs[3], &lut).unwrap())
    });
    group.finish();

    // Every GPU of the host, each batch split between them (only with at least two).
    match fhe_pbs::MultiGpu::new(keys, Engine::Auto) {
        Ok(gpus) if gpus.backends().len() > 1 => {
            bench_backend(c, "cuda-multi-gpu", &gpus, client, inputs, max);
        }
        Ok(_) => eprintln!("fhe_pbs: one GPU, no multi-GPU benches"),
        Err(why) => eprintln!("fhe_pbs: no multi-GPU benches: {why}"),
    }
}

/// `ks-pbs-batch-device/<name>/<size>`: KS+PBS of batches already on the GPU, the outputs
/// left there, timed until the GPU has finished.
#[cfg(feature = "cuda")]
fn bench_device_resident(
    c: &mut Criterion,
    name: &str,
    gpu: &fhe_pbs::Cuda,
    client: &ClientKey,
    inputs: &[LweCiphertext],
    sizes: &[usize],
) {
    let lut = LookupTable::new(gpu.parameters(), f).unwrap();
    let mut group = c.benchmark_group("fhe_pbs");
    group.sample_size(10);
    for &size in sizes {
        let on_device = gpu.upload(&inputs[..size]).unwrap();
        let out = gpu.keyswitch_bootstrap_on_device(&on_device, &lut).unwrap();
        for (i, ct) in out.to_host().unwrap().iter().enumerate() {
            assert_eq!(client.decrypt(ct).unwrap(), f(i as u64 % 16), "{name}, {i}");
        }
        group.throughput(Throughput::Elements(size as u64));
        group.bench_function(
            BenchmarkId::new(format!("ks-pbs-batch-device/{name}"), size),
            |b| {
                b.iter(|| {
                    let out = gpu.keyswitch_bootstrap_on_device(&on_device, &lut).unwrap();
                    gpu.gpu().synchronize().unwrap();
                    out
                })
            },
        );
    }
    group.finish();
}

#[cfg(not(feature = "cuda"))]
fn cuda(_: &mut Criterion, _: &EvaluationKeys, _: &ClientKey, _: &[LweCiphertext]) {}

criterion_group!(benches, fhe_pbs);
criterion_main!(benches);
