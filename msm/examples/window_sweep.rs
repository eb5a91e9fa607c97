//! Times `Cpu` with every window width at each size and prints the best, beside arkworks'
//! parallel MSM on the same inputs: the measurement behind the window table in `Cpu`'s docs.
//! Run it to re-tune for another machine or group:
//!
//! ```text
//! cargo run --release -p gpu-crypto-msm --example window_sweep -- [MIN_LOG MAX_LOG [RUNS [GROUP]]]
//! ```
//!
//! Defaults: sizes 2^1 to 2^18, the fastest of 5 runs per width (after one warm-up run; the
//! fastest, not the median, because a shared machine only ever adds time), group
//! `bls12-381-g1` (or `bls12-381-g2`, `bn254-g1`, `bn254-g2`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::{PrimeGroup, ScalarMul, VariableBaseMSM};
use ark_ff::UniformRand;
use ark_std::rand::{SeedableRng, rngs::StdRng};
use msm::{Cpu, MAX_WINDOW_BITS, MsmBackend, MsmCurve};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, default: u32| {
        args.get(i).map_or(default, |a| {
            a.parse()
                .expect("arguments are numbers: MIN_LOG MAX_LOG [RUNS [GROUP]]")
        })
    };
    let (min_log, max_log, runs) = (number(0, 1), number(1, 18), number(2, 5) as usize);
    match args.get(3).map_or("bls12-381-g1", String::as_str) {
        "bls12-381-g1" => sweep::<ark_bls12_381::g1::Config>(min_log, max_log, runs),
        "bls12-381-g2" => sweep::<ark_bls12_381::g2::Config>(min_log, max_log, runs),
        "bn254-g1" => sweep::<ark_bn254::g1::Config>(min_log, max_log, runs),
        "bn254-g2" => sweep::<ark_bn254::g2::Config>(min_log, max_log, runs),
        other => panic!("unknown group {other}: bls12-381-g1, bls12-381-g2, bn254-g1, bn254-g2"),
    }
}

/// The fastest of `runs` runs of `f`, after one warm-up run.
fn fastest<T>(runs: usize, mut f: impl FnMut() -> T) -> Duration {
    std::hint::black_box(f());
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(f());
            start.elapsed()
        })
        .min()
        .unwrap()
}

/// The sweep in group `C`.
fn sweep<C: MsmCurve>(min_log: u32, max_log: u32, runs: usize) {
    let max = 1usize << max_log;
    let mut rng = StdRng::seed_from_u64(7);
    let multiples: Vec<C::ScalarField> = (0..max).map(|_| C::ScalarField::rand(&mut rng)).collect();
    let bases: Vec<Affine<C>> = Projective::<C>::generator().batch_mul(&multiples);
    let scalars: Vec<C::ScalarField> = (0..max).map(|_| C::ScalarField::rand(&mut rng)).collect();

    println!("{}, {}", C::NAME, Cpu::new().name());
    println!("log2(n)  arkworks (ms)  table c  best c  times by c (ms)");
    for log in min_log..=max_log {
        let n = 1usize << log;
        let (bases, scalars) = (&bases[..n], &scalars[..n]);
        let arkworks = fastest(runs, || Projective::<C>::msm(bases, scalars).unwrap());
        let table = Cpu::new().window_bits(n);
        // Widths around the table's choice.
        let times: Vec<(u32, Duration)> = (table.saturating_sub(3).max(1)
            ..=(table + 3).min(MAX_WINDOW_BITS))
            .map(|c| {
                let cpu = Cpu::with_window_bits(c).unwrap();
                (c, fastest(runs, || cpu.msm(bases, scalars).unwrap()))
            })
            .collect();
        let best = times.iter().min_by_key(|(_, t)| *t).unwrap().0;
        let list: Vec<String> = times
            .iter()
            .map(|(c, t)| format!("{c}:{:.3}", t.as_secs_f64() * 1e3))
            .collect();
        println!(
            "{log:>7}  {:>13.3}  {table:>7}  {best:>6}  {}",
            arkworks.as_secs_f64() * 1e3,
            list.join(" ")
        );
    }
}
