//! Criterion bench `merkle`: Rp64_256 Merkle trees and row hashing, ours on the CPU and CUDA
//! beside winter-crypto's concurrent builder.
//!
//! Ids are `<op>/<backend>/<size>`:
//! - `build/{cpu,winter}/2^k` (k = 10..16): a tree from host leaves, throughput in leaves;
//! - `build/cuda/2^k` (k = 10..24): leaves already on the GPU, synchronized by reading the
//!   root back; `build/cuda-host/2^k` adds the leaf upload and the node download;
//! - `hash-rows/<backend>/<rows>x<width>`: leaf hashing of a row-major matrix, throughput in
//!   elements (`cuda` includes the upload of the rows and the download of the digests);
//! - `prove-batch/cpu/...`, `verify-batch/cpu/...`: batch proofs of 64 random leaves.
//!
//! Without a GPU the CUDA ids are skipped with a message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use benches::merkle::{digests, felts};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use merkle::{Cpu, MerkleBackend, MerkleTree};
use winter_crypto::hashers::Rp64_256;

fn cpu(c: &mut Criterion) {
    let mut group = c.benchmark_group("merkle");
    group.sample_size(10);
    for log in [10u32, 12, 14, 16] {
        let leaves = digests(u64::from(log), 1 << log);
        let winter_leaves: Vec<_> = leaves.iter().map(|d| d.to_winter()).collect();
        group.throughput(Throughput::Elements(1 << log));
        let size = format!("2^{log}");
        group.bench_function(BenchmarkId::new("build/cpu", &size), |b| {
            b.iter(|| MerkleTree::build(&Cpu, &leaves).unwrap())
        });
        group.bench_function(BenchmarkId::new("build/winter", &size), |b| {
            b.iter(|| winter_crypto::MerkleTree::<Rp64_256>::new(winter_leaves.clone()).unwrap())
        });
    }
    let (rows, width) = (1usize << 12, 100usize);
    let elements = felts(7, rows * width);
    let mut out = vec![merkle::Digest::default(); rows];
    group.throughput(Throughput::Elements((rows * width) as u64));
    group.bench_function(
        BenchmarkId::new("hash-rows/cpu", format!("{rows}x{width}")),
        |b| b.iter(|| Cpu.hash_rows(&elements, width, &mut out).unwrap()),
    );

    let tree = MerkleTree::build(&Cpu, &digests(3, 1 << 16)).unwrap();
    let indexes: Vec<usize> = benches::merkle::felts(5, 64)
        .iter()
        .map(|f| (f.as_u64() % (1 << 16)) as usize)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let opened: Vec<_> = indexes.iter().map(|&i| tree.leaves()[i]).collect();
    let proof = tree.prove_batch(&indexes).unwrap();
    group.throughput(Throughput::Elements(indexes.len() as u64));
    let size = format!("2^16-{}", indexes.len());
    group.bench_function(BenchmarkId::new("prove-batch/cpu", &size), |b| {
        b.iter(|| tree.prove_batch(&indexes).unwrap())
    });
    group.bench_function(BenchmarkId::new("verify-batch/cpu", &size), |b| {
        b.iter(|| MerkleTree::verify_batch(tree.root(), &indexes, &opened, &proof).unwrap())
    });
    group.finish();
}

#[cfg(feature = "cuda")]
fn cuda(c: &mut Criterion) {
    let gpu = match merkle::Cuda::new() {
        Ok(gpu) => gpu,
        Err(why) => {
            eprintln!("merkle: skipping the CUDA benches: {why}");
            return;
        }
    };
    let mut group = c.benchmark_group("merkle");
    group.sample_size(10);
    for log in (10u32..=24).step_by(2) {
        let leaves = digests(u64::from(log), 1 << log);
        let mut device = gpu.upload_leaves(&leaves, 1).unwrap();
        group.throughput(Throughput::Elements(1 << log));
        let size = format!("2^{log}");
        group.bench_function(BenchmarkId::new("build/cuda", &size), |b| {
            b.iter(|| {
                gpu.build_device(&mut device).unwrap();
                device.cap(0, 0).unwrap()
            })
        });
        if log <= 20 {
            group.bench_function(BenchmarkId::new("build/cuda-host", &size), |b| {
                b.iter(|| MerkleTree::build(&gpu, &leaves).unwrap())
            });
        }
    }
    for (rows, width) in [(1usize << 12, 100usize), (1 << 20, 8), (1 << 20, 100)] {
        let elements = felts(7, rows * width);
        let mut out = vec![merkle::Digest::default(); rows];
        group.throughput(Throughput::Elements((rows * width) as u64));
        group.bench_function(
            BenchmarkId::new("hash-rows/cuda", format!("{rows}x{width}")),
            |b| b.iter(|| gpu.hash_rows(&elements, width, &mut out).unwrap()),
        );
    }
    group.finish();
}

#[cfg(not(feature = "cuda"))]
fn cuda(_: &mut Criterion) {}

criterion_group!(benches, cpu, cuda);
criterion_main!(benches);
