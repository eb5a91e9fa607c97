//! Criterion bench `chacha`: ChaCha8 keystream bytes/s on the CPU and, with a GPU, on CUDA.
//!
//! Ids are `<op>/<backend>/<size>`:
//! - `digest/...`: the block function alone (keystream summed on chip, never stored);
//! - `keystream/cpu/...` and `keystream/cuda-device/...`: keystream written to memory;
//! - `keystream/cuda-host/...`: keystream in a host buffer, the transfer included;
//! - on a host with several GPUs, `digest/cuda-multi-gpu/...` and
//!   `keystream/cuda-multi-gpu-host/...`: the same on `MultiGpu` over all of them.
//!
//! GPU work is synchronized inside the timed region. Without a GPU the CUDA ids are skipped
//! with a message (the report and the GPU tests are where a missing GPU fails loudly).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use prp::{ChaCha8, Cpu, Key, Keystream};

fn stream() -> ChaCha8 {
    ChaCha8::new(Key::new(&[0x5c; 32]), [1, 2, 3])
}

fn cpu(c: &mut Criterion) {
    let stream = stream();
    let mut group = c.benchmark_group("chacha");
    for log_blocks in [10u32, 14, 18] {
        let blocks = 1u64 << log_blocks;
        let bytes = blocks * 64;
        group.throughput(Throughput::Bytes(bytes));
        let size = format!("2^{log_blocks}-blocks");
        group.bench_with_input(BenchmarkId::new("digest/cpu", &size), &blocks, |b, &n| {
            b.iter(|| Cpu.keystream_digest(&stream, 0, n).unwrap())
        });
        let mut out = vec![0u8; bytes as usize];
        group.bench_with_input(BenchmarkId::new("keystream/cpu", &size), &blocks, |b, _| {
            b.iter(|| Cpu.fill_keystream(&stream, 0, &mut out).unwrap())
        });
    }
    group.finish();
}

#[cfg(feature = "cuda")]
fn cuda(c: &mut Criterion) {
    let cuda = match prp::Cuda::new() {
        Ok(cuda) => cuda,
        Err(why) => {
            eprintln!("chacha bench: skipping the CUDA ids: {why}");
            return;
        }
    };
    let gpu = cuda.gpu();
    let stream = stream();
    let mut group = c.benchmark_group("chacha");
    for log_blocks in [16u32, 20, 24, 25, 28, 31] {
        let blocks = 1u64 << log_blocks;
        group.throughput(Throughput::Bytes(blocks * 64));
        let size = format!("2^{log_blocks}-blocks");
        group.bench_with_input(BenchmarkId::new("digest/cuda", &size), &blocks, |b, &n| {
            b.iter(|| cuda.keystream_digest(&stream, 0, n).unwrap())
        });
    }
    for log_blocks in [16u32, 20, 24, 26] {
        let blocks = 1u64 << log_blocks;
        group.throughput(Throughput::Bytes(blocks * 64));
        let size = format!("2^{log_blocks}-blocks");
        let mut device = gpu.alloc_zeroed::<u8>((blocks * 64) as usize).unwrap();
        group.bench_function(BenchmarkId::new("keystream/cuda-device", &size), |b| {
            b.iter(|| {
                cuda.fill_keystream_device(&stream, 0, &mut device).unwrap();
                gpu.synchronize().unwrap();
            })
        });
    }
    for log_blocks in [14u32, 18, 22] {
        let blocks = 1u64 << log_blocks;
        group.throughput(Throughput::Bytes(blocks * 64));
        let size = format!("2^{log_blocks}-blocks");
        let mut out = vec![0u8; (blocks * 64) as usize];
        group.bench_function(BenchmarkId::new("keystream/cuda-host", &size), |b| {
            b.iter(|| cuda.fill_keystream(&stream, 0, &mut out).unwrap())
        });
    }
    // Every GPU of the host, the work split between them (only with at least two).
    match prp::MultiGpu::new() {
        Ok(gpus) if gpus.backends().len() > 1 => {
            for log_blocks in [24u32, 25, 28, 31] {
                let blocks = 1u64 << log_blocks;
                group.throughput(Throughput::Bytes(blocks * 64));
                let id =
                    BenchmarkId::new("digest/cuda-multi-gpu", format!("2^{log_blocks}-blocks"));
                group.bench_function(id, |b| {
                    b.iter(|| gpus.keystream_digest(&stream, 0, blocks).unwrap())
                });
            }
            for log_blocks in [18u32, 22] {
                let blocks = 1u64 << log_blocks;
                group.throughput(Throughput::Bytes(blocks * 64));
                let size = format!("2^{log_blocks}-blocks");
                let mut out = vec![0u8; (blocks * 64) as usize];
                group.bench_function(
                    BenchmarkId::new("keystream/cuda-multi-gpu-host", &size),
                    |b| b.iter(|| gpus.fill_keystream(&stream, 0, &mut out).unwrap()),
                );
            }
        }
        Ok(_) => eprintln!("chacha: one GPU, no multi-GPU benches"),
        Err(why) => eprintln!("chacha: no multi-GPU benches: {why}"),
    }
    group.finish();
}

#[cfg(not(feature = "cuda"))]
fn cuda(_: &mut Criterion) {}

criterion_group!(benches, cpu, cuda);
criterion_main!(benches);
