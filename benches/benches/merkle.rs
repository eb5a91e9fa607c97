//! Criterion bench `merkle`: Rp64_256 Merkle trees and row hashing, ours on the CPU and CUDA
//! beside winter-crypto's concurrent builder.
//!
//! Ids are `<op>/<backend>/<size>`:
//! - `build/{cpu,winter}/2^k` (k = 10..16): a tree from host leaves, throughput in leaves;
//! - `build/cuda/2^k` (k = 10..24 even, and 17): leaves already on the GPU, synchronized by
//!   reading the root back; `build/cuda-host/2^k` (k up to 22) adds the leaf upload and the
//!   node download;
//! - `hash-rows/<backend>/<rows>x<width>`: leaf hashing of a row-major matrix, throughput in
//!   elements (`cuda` includes the upload of the rows and the download of the digests);
//! - on a host with several GPUs, `build/cuda-multi-gpu-host/2^k` (k = 16, 17, 18, 20, 22) and
//!   `hash-rows/cuda-multi-gpu/...`: the same from host memory on `MultiGpu` over all of them;
//! - `prove-batch/cpu/...`, `verify-batch/cpu/...`: batch proofs of 64 random leaves.
//!
//! Groups `merkle-rpo256`, `merkle-rpx256`, `merkle-poseidon2` and `merkle-rpjive64_256` do
//! the same for the other hashers, ours beside the reference's own hash (miden-crypto 0.28.1,
//! winter-crypto 0.13.1):
//! - `merge/{cpu,<reference>}`: one merge on one thread, throughput in merges;
//! - `hash-elements/{cpu,<reference>}/100`: one hash of 100 elements on one thread;
//! - `build/{cpu,<reference>}/2^k` (k = 10, 14, 16): a tree from host leaves. The references:
//!   winter-crypto's concurrent `MerkleTree` for RpJive64_256; miden-crypto's `MerkleTree` for
//!   Poseidon2 (one thread: it has no parallel builder), and for Rpo256 and Rpx256, which it
//!   has no tree for, its builder's loop run with their `merge` ([`miden_tree_root`]);
//! - `hash-rows/cpu/4096x100`;
//! - `build/cuda/2^k` (k = 10..24) and `hash-rows/cuda/<rows>x<width>` as for Rp64_256.
//!
//! Without a GPU the CUDA ids are skipped with a message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use benches::merkle::{digests, felts};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use merkle::{Cpu, Digest, Felt, Hasher, MerkleBackend, MerkleTree};
use miden_crypto::{Felt as MidenFelt, Word};
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
    // 2^17 beside the even sizes: the smallest tree that `MultiGpu` splits.
    for log in (10u32..=24).step_by(2).chain([17]) {
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
        if log <= 22 {
            group.bench_function(BenchmarkId::new("build/cuda-host", &size), |b| {
                b.iter(|| MerkleTree::build(&gpu, &leaves).unwrap())
            });
        }
    }
    bench_host_rows(&mut group, "cuda", &gpu);
    // Every GPU of the host, the work split between them (only with at least two).
    match merkle::MultiGpu::new() {
        Ok(gpus) if gpus.backends().len() > 1 => {
            for log in [16u32, 17, 18, 20, 22] {
                let leaves = digests(u64::from(log), 1 << log);
                group.throughput(Throughput::Elements(1 << log));
                group.bench_function(
                    BenchmarkId::new("build/cuda-multi-gpu-host", format!("2^{log}")),
                    |b| b.iter(|| MerkleTree::build(&gpus, &leaves).unwrap()),
                );
            }
            bench_host_rows(&mut group, "cuda-multi-gpu", &gpus);
        }
        Ok(_) => eprintln!("merkle: one GPU, no multi-GPU benches"),
        Err(why) => eprintln!("merkle: no multi-GPU benches: {why}"),
    }
    group.finish();
}

/// `hash-rows/<name>/<rows>x<width>`: rows from host memory hashed on `backend`, the digests
/// brought back.
#[cfg(feature = "cuda")]
fn bench_host_rows(group: &mut Group, name: &str, backend: &impl MerkleBackend) {
    for (rows, width) in [(1usize << 12, 100usize), (1 << 20, 8), (1 << 20, 100)] {
        let elements = felts(7, rows * width);
        let mut out = vec![merkle::Digest::default(); rows];
        group.throughput(Throughput::Elements((rows * width) as u64));
        group.bench_function(
            BenchmarkId::new(format!("hash-rows/{name}"), format!("{rows}x{width}")),
            |b| b.iter(|| backend.hash_rows(&elements, width, &mut out).unwrap()),
        );
    }
}

#[cfg(not(feature = "cuda"))]
fn cuda(_: &mut Criterion) {}

/// The inputs of a hasher's group, for ours and the reference alike.
struct Inputs {
    pair: [Digest; 2],
    row: Vec<Felt>,
    /// Leaves of the trees, by `log2` of their count.
    trees: Vec<(u32, Vec<Digest>)>,
}

type Group<'a> = criterion::BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// One hasher's group: ours on the CPU, then `reference` (which benches the reference
/// library's `merge/<name>`, `hash-elements/<name>/100` and, where it builds trees,
/// `build/<name>/2^k` on the same inputs), then ours on the GPU.
fn hasher_group<H: Hasher>(c: &mut Criterion, hasher: H, reference: impl Fn(&mut Group, &Inputs)) {
    let mut group = c.benchmark_group(format!("merkle-{}", H::NAME.to_lowercase()));
    group.sample_size(10);
    let pair = digests(11, 2);
    let inputs = Inputs {
        pair: [pair[0], pair[1]],
        row: felts(12, 100),
        trees: [10u32, 14, 16]
            .into_iter()
            .map(|log| (log, digests(u64::from(log), 1 << log)))
            .collect(),
    };
    group.throughput(Throughput::Elements(1));
    group.bench_function("merge/cpu", |b| {
        b.iter(|| H::merge(&inputs.pair[0], &inputs.pair[1]))
    });
    group.bench_function("hash-elements/cpu/100", |b| {
        b.iter(|| H::hash_elements(&inputs.row))
    });
    for (log, leaves) in &inputs.trees {
        group.throughput(Throughput::Elements(1 << log));
        group.bench_function(BenchmarkId::new("build/cpu", format!("2^{log}")), |b| {
            b.iter(|| MerkleTree::build_with(hasher, &Cpu, leaves).unwrap())
        });
    }
    let (rows, width) = (1usize << 12, 100usize);
    let elements = felts(7, rows * width);
    let mut out = vec![Digest::default(); rows];
    group.throughput(Throughput::Elements((rows * width) as u64));
    group.bench_function(
        BenchmarkId::new("hash-rows/cpu", format!("{rows}x{width}")),
        |b| {
            b.iter(|| {
                Cpu.hash_rows_with(hasher, &elements, width, &mut out)
                    .unwrap()
            })
        },
    );
    reference(&mut group, &inputs);
    #[cfg(feature = "cuda")]
    cuda_hasher(&mut group, hasher);
    group.finish();
}

/// The GPU half of [`hasher_group`].
#[cfg(feature = "cuda")]
fn cuda_hasher<H: Hasher>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    hasher: H,
) {
    let gpu = match merkle::Cuda::new() {
        Ok(gpu) => gpu,
        Err(why) => {
            eprintln!("merkle: skipping the CUDA benches of {}: {why}", H::NAME);
            return;
        }
    };
    for log in (10u32..=24).step_by(2) {
        let leaves = digests(u64::from(log), 1 << log);
        let mut device = gpu.upload_leaves_with(hasher, &leaves, 1).unwrap();
        group.throughput(Throughput::Elements(1 << log));
        group.bench_function(BenchmarkId::new("build/cuda", format!("2^{log}")), |b| {
            b.iter(|| {
                gpu.build_device(&mut device).unwrap();
                device.cap(0, 0).unwrap()
            })
        });
    }
    for (rows, width) in [(1usize << 12, 100usize), (1 << 20, 8), (1 << 20, 100)] {
        let elements = felts(7, rows * width);
        let mut out = vec![Digest::default(); rows];
        group.throughput(Throughput::Elements((rows * width) as u64));
        group.bench_function(
            BenchmarkId::new("hash-rows/cuda", format!("{rows}x{width}")),
            |b| {
                b.iter(|| {
                    gpu.hash_rows_with(hasher, &elements, width, &mut out)
                        .unwrap()
                })
            },
        );
    }
}

fn miden_word(digest: &Digest) -> Word {
    Word::new(digest.to_u64s().map(|v| MidenFelt::new(v).unwrap()))
}

/// The root of the tree over `leaves` built as miden-crypto 0.28.1's `MerkleTree::new` builds
/// its Poseidon2 trees (`nodes[i] = merge(nodes[2i], nodes[2i + 1])` from `n - 1` down to 1, on
/// one thread), with another hasher's `merge`.
fn miden_tree_root(leaves: &[Word], merge: fn(&[Word; 2]) -> Word) -> Word {
    let n = leaves.len();
    let mut nodes = vec![Word::default(); 2 * n];
    nodes[n..].copy_from_slice(leaves);
    for i in (1..n).rev() {
        nodes[i] = merge(&[nodes[2 * i], nodes[2 * i + 1]]);
    }
    nodes[1]
}

/// The reference side of a miden-crypto hasher's group: its `merge`, `hash_elements`, and
/// `tree_root` building a tree over the leaves.
fn miden_reference(
    merge: fn(&[Word; 2]) -> Word,
    hash_elements: fn(&[MidenFelt]) -> Word,
    tree_root: fn(&[Word]) -> Word,
) -> impl Fn(&mut Group, &Inputs) {
    move |group, inputs| {
        let pair = inputs.pair.each_ref().map(miden_word);
        let row: Vec<MidenFelt> = inputs
            .row
            .iter()
            .map(|e| MidenFelt::new(e.as_u64()).unwrap())
            .collect();
        group.throughput(Throughput::Elements(1));
        group.bench_function("merge/miden", |b| b.iter(|| merge(&pair)));
        group.bench_function("hash-elements/miden/100", |b| {
            b.iter(|| hash_elements(&row))
        });
        for (log, leaves) in &inputs.trees {
            let leaves: Vec<Word> = leaves.iter().map(miden_word).collect();
            group.throughput(Throughput::Elements(1 << log));
            group.bench_function(BenchmarkId::new("build/miden", format!("2^{log}")), |b| {
                b.iter(|| tree_root(&leaves))
            });
        }
    }
}

fn rpo256(c: &mut Criterion) {
    use miden_crypto::hash::rpo::Rpo256;
    let reference = miden_reference(Rpo256::merge, Rpo256::hash_elements::<MidenFelt>, |l| {
        miden_tree_root(l, Rpo256::merge)
    });
    hasher_group(c, merkle::Rpo256, reference);
}

fn rpx256(c: &mut Criterion) {
    use miden_crypto::hash::rpx::Rpx256;
    let reference = miden_reference(Rpx256::merge, Rpx256::hash_elements::<MidenFelt>, |l| {
        miden_tree_root(l, Rpx256::merge)
    });
    hasher_group(c, merkle::Rpx256, reference);
}

/// miden-crypto's `MerkleTree` hashes with Poseidon2: the reference builds its trees.
fn poseidon2(c: &mut Criterion) {
    use miden_crypto::hash::poseidon2::Poseidon2;
    let reference = miden_reference(
        Poseidon2::merge,
        Poseidon2::hash_elements::<MidenFelt>,
        |leaves| {
            miden_crypto::merkle::MerkleTree::new(leaves)
                .unwrap()
                .root()
        },
    );
    hasher_group(c, merkle::Poseidon2, reference);
}

fn rp_jive64_256(c: &mut Criterion) {
    use winter_crypto::hashers::RpJive64_256;
    use winter_crypto::{ElementHasher, Hasher as _};
    use winter_math::fields::f64::BaseElement;
    type JiveDigest = <RpJive64_256 as winter_crypto::Hasher>::Digest;
    let jive = |d: &Digest| JiveDigest::new(d.elements().map(BaseElement::from));
    hasher_group(c, merkle::RpJive64_256, |group, inputs| {
        let pair = inputs.pair.each_ref().map(jive);
        let row: Vec<BaseElement> = inputs.row.iter().map(|&e| BaseElement::from(e)).collect();
        group.throughput(Throughput::Elements(1));
        group.bench_function("merge/winter", |b| b.iter(|| RpJive64_256::merge(&pair)));
        group.bench_function("hash-elements/winter/100", |b| {
            b.iter(|| RpJive64_256::hash_elements(&row))
        });
        for (log, leaves) in &inputs.trees {
            let leaves: Vec<JiveDigest> = leaves.iter().map(jive).collect();
            group.throughput(Throughput::Elements(1 << log));
            group.bench_function(BenchmarkId::new("build/winter", format!("2^{log}")), |b| {
                b.iter(|| winter_crypto::MerkleTree::<RpJive64_256>::new(leaves.clone()).unwrap())
            });
        }
    });
}

criterion_group!(benches, cpu, cuda, rpo256, rpx256, poseidon2, rp_jive64_256);
criterion_main!(benches);
