//! Criterion bench `prp`: SwapOrNot and Sometimes-Recurse batches and whole-domain tables,
//! on the CPU (one thread and all threads) and, with a GPU, on CUDA.
//!
//! Ids are `<op>/<backend>/<size>`, throughput in values (evaluations or table entries):
//! - `sn-inverse/...`: SwapOrNot inverse, `N = 2^17`, 759 rounds (the Plinko GPU benchmark's
//!   configuration), a batch of random values;
//! - `sr-forward/...`, `sr-inverse/...`: Sometimes-Recurse, lambda = 128, random values;
//! - `sr-inverse-table/...`: `P^-1` of every element of `[0, N)`.
//!
//! CUDA ids keep the values on the device (`cuda`), or take host values (`cuda-host`, and on a
//! host with several GPUs `cuda-multi-gpu-host`: `MultiGpu` over all of them); the
//! `cuda-direct` ids force one ChaCha block per value per round. GPU work is synchronized
//! inside the timed region. Without a GPU the CUDA ids are skipped with a message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use prp::{Cpu, Evaluator, Key, SometimesRecurse, SwapOrNot};

/// Random values below `domain` (a fixed seed: the same inputs in every run).
fn values(domain: u64, len: usize) -> Vec<u64> {
    benches::prp::xorshift_values(0x9e37_79b9_7f4a_7c15, len, domain)
}

fn key() -> Key {
    Key::new(&[0x17; 32])
}

fn cpu(c: &mut Criterion) {
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let all = rayon::ThreadPoolBuilder::new().build().unwrap();
    let sn = SwapOrNot::new(key(), 1 << 17, 759).unwrap();
    let mut group = c.benchmark_group("prp");
    group.sample_size(10);
    for (pool, name) in [(&one, "cpu-1"), (&all, "cpu")] {
        // 2^16 values take the table path on the CPU, 2^8 the direct one.
        for log_len in [8u32, 16] {
            let input = values(1 << 17, 1 << log_len);
            group.throughput(Throughput::Elements(input.len() as u64));
            let id = BenchmarkId::new(
                format!("sn-inverse/{name}"),
                format!("2^17-759r-2^{log_len}"),
            );
            group.bench_function(id, |b| {
                b.iter(|| {
                    let mut v = input.clone();
                    pool.install(|| Cpu.inverse_batch(&sn, &mut v)).unwrap();
                })
            });
        }
        let sr = SometimesRecurse::new(key(), 1 << 25).unwrap();
        let input = values(1 << 25, 1 << 8);
        group.throughput(Throughput::Elements(input.len() as u64));
        for (op, inverse) in [("sr-forward", false), ("sr-inverse", true)] {
            let id = BenchmarkId::new(format!("{op}/{name}"), "2^25-2^8");
            group.bench_function(id, |b| {
                b.iter(|| {
                    let mut v = input.clone();
                    pool.install(|| match inverse {
                        false => Cpu.forward_batch(&sr, &mut v),
                        true => Cpu.inverse_batch(&sr, &mut v),
                    })
                    .unwrap();
                })
            });
        }
        let sr = SometimesRecurse::new(key(), 1 << 20).unwrap();
        group.throughput(Throughput::Elements(1 << 20));
        let id = BenchmarkId::new(format!("sr-inverse-table/{name}"), "2^20");
        group.bench_function(id, |b| {
            b.iter(|| pool.install(|| Cpu.inverse_table(&sr)).unwrap())
        });
    }
    group.finish();
}

#[cfg(feature = "cuda")]
fn cuda(c: &mut Criterion) {
    let cuda = match prp::Cuda::new() {
        Ok(cuda) => cuda,
        Err(why) => {
            eprintln!("prp bench: skipping the CUDA ids: {why}");
            return;
        }
    };
    let gpu = cuda.gpu();
    let mut group = c.benchmark_group("prp");
    group.sample_size(10);

    let sn = SwapOrNot::new(key(), 1 << 17, 759).unwrap();
    for log_len in [12u32, 16, 20, 24] {
        let input = values(1 << 17, 1 << log_len);
        let mut device = gpu.upload(&input).unwrap();
        group.throughput(Throughput::Elements(input.len() as u64));
        let size = format!("2^17-759r-2^{log_len}");
        group.bench_function(BenchmarkId::new("sn-inverse/cuda", &size), |b| {
            b.iter(|| {
                cuda.inverse_batch_device(&sn, &mut device).unwrap();
                gpu.synchronize().unwrap();
            })
        });
        group.bench_function(BenchmarkId::new("sn-inverse/cuda-direct", &size), |b| {
            b.iter(|| {
                cuda.batch_direct_device(&sn, &mut device, true).unwrap();
                gpu.synchronize().unwrap();
            })
        });
    }
    // Host values both ways, on one GPU and (below) on all of them: around the smallest part
    // a GPU of `MultiGpu` takes (2^14 values) and past the staging threshold (2^16).
    for log_len in [15u32, 16, 20, 24] {
        let mut host = values(1 << 17, 1 << log_len);
        group.throughput(Throughput::Elements(host.len() as u64));
        let id = BenchmarkId::new("sn-inverse/cuda-host", format!("2^17-759r-2^{log_len}"));
        group.bench_function(id, |b| {
            b.iter(|| cuda.inverse_batch(&sn, &mut host).unwrap())
        });
    }
    // Every GPU of the host, the batch split between them (only with at least two).
    match prp::MultiGpu::new() {
        Ok(gpus) if gpus.backends().len() > 1 => {
            for log_len in [15u32, 16, 20, 24] {
                let mut host = values(1 << 17, 1 << log_len);
                group.throughput(Throughput::Elements(host.len() as u64));
                let id = BenchmarkId::new(
                    "sn-inverse/cuda-multi-gpu-host",
                    format!("2^17-759r-2^{log_len}"),
                );
                group.bench_function(id, |b| {
                    b.iter(|| gpus.inverse_batch(&sn, &mut host).unwrap())
                });
            }
        }
        Ok(_) => eprintln!("prp: one GPU, no multi-GPU benches"),
        Err(why) => eprintln!("prp: no multi-GPU benches: {why}"),
    }

    let sr = SometimesRecurse::new(key(), 1 << 25).unwrap();
    for log_len in [12u32, 20, 24] {
        let input = values(1 << 25, 1 << log_len);
        let mut device = gpu.upload(&input).unwrap();
        group.throughput(Throughput::Elements(input.len() as u64));
        let size = format!("2^25-2^{log_len}");
        for (op, inverse) in [("sr-forward", false), ("sr-inverse", true)] {
            group.bench_function(BenchmarkId::new(format!("{op}/cuda"), &size), |b| {
                b.iter(|| {
                    match inverse {
                        false => cuda.forward_batch_device(&sr, &mut device),
                        true => cuda.inverse_batch_device(&sr, &mut device),
                    }
                    .unwrap();
                    gpu.synchronize().unwrap();
                })
            });
            if log_len <= 20 {
                let id = BenchmarkId::new(format!("{op}/cuda-direct"), &size);
                group.bench_function(id, |b| {
                    b.iter(|| {
                        cuda.batch_direct_device(&sr, &mut device, inverse).unwrap();
                        gpu.synchronize().unwrap();
                    })
                });
            }
        }
    }

    for log_n in [20u32, 25] {
        let sr = SometimesRecurse::new(key(), 1 << log_n).unwrap();
        group.throughput(Throughput::Elements(1 << log_n));
        let id = BenchmarkId::new("sr-inverse-table/cuda", format!("2^{log_n}"));
        group.bench_function(id, |b| {
            b.iter(|| {
                let table = cuda.inverse_table_device(&sr).unwrap();
                gpu.synchronize().unwrap();
                table
            })
        });
    }
    group.finish();
}

#[cfg(not(feature = "cuda"))]
fn cuda(_: &mut Criterion) {}

criterion_group!(benches, cpu, cuda);
criterion_main!(benches);
