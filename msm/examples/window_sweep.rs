//! Times `Cpu` with every window width at each size and prints the best: the measurement
//! behind the window table in `Cpu`'s docs. Run it to re-tune for another machine:
//!
//! ```text
//! cargo run --release -p gpu-crypto-msm --example window_sweep -- [MIN_LOG MAX_LOG [RUNS]]
//! ```
//!
//! Defaults: sizes 2^1 to 2^18, the fastest of 5 runs per width (after one warm-up run; the
//! fastest, not the median, because a shared machine only ever adds time).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use ark_bls12_381::{Fr, G1Projective};
use ark_ec::{PrimeGroup, ScalarMul};
use ark_ff::UniformRand;
use ark_std::rand::{SeedableRng, rngs::StdRng};
use msm::{Cpu, MAX_WINDOW_BITS, MsmBackend};

fn main() {
    let args: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| {
            a.parse()
                .expect("arguments are numbers: MIN_LOG MAX_LOG [RUNS]")
        })
        .collect();
    let min_log = args.first().copied().unwrap_or(1);
    let max_log = args.get(1).copied().unwrap_or(18);
    let runs = args.get(2).copied().unwrap_or(5) as usize;

    let max = 1usize << max_log;
    let mut rng = StdRng::seed_from_u64(7);
    let multiples: Vec<Fr> = (0..max).map(|_| Fr::rand(&mut rng)).collect();
    let bases = G1Projective::generator().batch_mul(&multiples);
    let scalars: Vec<Fr> = (0..max).map(|_| Fr::rand(&mut rng)).collect();

    println!("{}", Cpu::new().name());
    println!("log2(n)  table c  best c  times by c (ms)");
    for log in min_log..=max_log {
        let n = 1usize << log;
        let (bases, scalars) = (&bases[..n], &scalars[..n]);
        let table = Cpu::new().window_bits(n);
        let mut times: Vec<(u32, Duration)> = Vec::new();
        // Widths around the table's choice.
        for c in table.saturating_sub(3).max(1)..=(table + 3).min(MAX_WINDOW_BITS) {
            let cpu = Cpu::with_window_bits(c).unwrap();
            let _ = std::hint::black_box(cpu.msm(bases, scalars).unwrap());
            let mut runs: Vec<Duration> = (0..runs)
                .map(|_| {
                    let start = Instant::now();
                    let _ = std::hint::black_box(cpu.msm(bases, scalars).unwrap());
                    start.elapsed()
                })
                .collect();
            runs.sort_unstable();
            times.push((c, runs[0]));
        }
        let best = times.iter().min_by_key(|(_, t)| *t).unwrap().0;
        let list: Vec<String> = times
            .iter()
            .map(|(c, t)| format!("{c}:{:.3}", t.as_secs_f64() * 1e3))
            .collect();
        println!("{log:>7}  {table:>7}  {best:>6}  {}", list.join(" "));
    }
}
