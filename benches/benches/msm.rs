//! Criterion bench `msm`: BLS12-381 G1 multi-scalar multiplication, ours on the CPU beside
//! arkworks 0.5's parallel `VariableBaseMSM::msm` on the same inputs.
//!
//! Ids are `msm/<backend>/2^k` for k = 10, 12, ..., 18: `cpu` is `msm::Cpu`, `arkworks` is
//! `G1Projective::msm` (ark-ec with its `parallel` feature). Throughput is in points. Bases
//! are random multiples of the generator (arkworks' fixed-base `batch_mul`), made once for
//! the largest size and shared by prefixes; scalars are uniform in `Fr`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ark_bls12_381::G1Projective;
use ark_ec::VariableBaseMSM;
use benches::msm::inputs;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use msm::{Cpu, MsmBackend};

/// log2 of the sizes benchmarked.
const LOG_SIZES: [u32; 5] = [10, 12, 14, 16, 18];

fn cpu(c: &mut Criterion) {
    let (bases, scalars) = inputs(1 << LOG_SIZES[LOG_SIZES.len() - 1]);
    let ours = Cpu::new();

    let mut group = c.benchmark_group("msm");
    group.sample_size(10);
    for log in LOG_SIZES {
        let n = 1usize << log;
        let (bases, scalars) = (&bases[..n], &scalars[..n]);
        assert_eq!(
            ours.msm(bases, scalars).unwrap(),
            G1Projective::msm(bases, scalars).unwrap()
        );
        group.throughput(Throughput::Elements(n as u64));
        let size = format!("2^{log}");
        group.bench_function(BenchmarkId::new("cpu", &size), |b| {
            b.iter(|| ours.msm(bases, scalars).unwrap())
        });
        group.bench_function(BenchmarkId::new("arkworks", &size), |b| {
            b.iter(|| G1Projective::msm(bases, scalars).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, cpu);
criterion_main!(benches);
