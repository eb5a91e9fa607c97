//! Shared pieces of the criterion benches and the `report` binary: timing helpers, the
//! report table and progress bar, one module per primitive that runs it on every available
//! backend, and `figures`, the check of BENCHMARKS.md (the `check_benchmarks` binary).

pub mod chacha;
pub mod fhe;
pub mod figures;
pub mod merkle;
pub mod msm;
pub mod pir;
pub mod progress;
pub mod prp;
pub mod table;

use std::time::{Duration, Instant};

/// Runs `work` once to warm up (module load, compilation, caches), then `runs` more times,
/// and returns the last result with the median of the timed runs' durations.
///
/// `work` returns the duration to count: wall time measured by the caller, or device time
/// from CUDA events.
pub fn median_of<T, E>(
    runs: usize,
    mut work: impl FnMut() -> Result<(T, Duration), E>,
) -> Result<(T, Duration), E> {
    let (mut value, first) = work()?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (v, t) = work()?;
        value = v;
        times.push(t);
    }
    times.sort_unstable();
    let median = times.get(times.len() / 2).copied().unwrap_or(first);
    Ok((value, median))
}

/// Wall-clock time of `work`.
pub fn wall<T, E>(work: impl FnOnce() -> Result<T, E>) -> Result<(T, Duration), E> {
    let start = Instant::now();
    let value = work()?;
    Ok((value, start.elapsed()))
}
