//! Whole-domain tables of a permutation on the CPU: `P` or `P^-1` for every element of
//! `[0, N)`, built round by round from swap-bit tables instead of element by element.
//!
//! A table `A` over `[0, N)` starts as the identity. Round `pi` (an involution pairing `x`
//! with `(K - x) mod N`) is applied as the gather `A'[y] = A[pi(y)]`, which is `A o pi`, and
//! only swaps the entries of pairs whose swap bit is set. Gathering the rounds of stage 0 in
//! order, then those of stage 1 on `[0, N_1)`, and so on, builds `P^-1`; gathering them in
//! the opposite order builds `P`. The pairs of one round are the mirror images within
//! `[0, K]` and within `[K + 1, N)`, so each round is two reversal-pairings of contiguous
//! slices: sequential memory traffic, and one ChaCha block per 512 pairs' bits.

use rayon::prelude::*;

use crate::chacha::Rounds;
use crate::error::Error;
use crate::swap_or_not::{Permutation, SwapOrNot};

/// The largest domain with a whole-domain table: entries are u32.
pub const MAX_TABLE_DOMAIN: u64 = 1 << 32;

/// Which table to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// `table[x] = P(x)`.
    Forward,
    /// `table[y] = P^-1(y)`.
    Inverse,
}

/// Errors with [`Error::TooLarge`] if a domain of `domain` values has no whole-domain table.
pub(crate) fn check_table_domain(domain: u64) -> Result<(), Error> {
    if domain > MAX_TABLE_DOMAIN {
        return Err(Error::TooLarge {
            what: "domain of a whole-domain table",
            value: domain,
            max: MAX_TABLE_DOMAIN,
        });
    }
    Ok(())
}

/// The rounds to gather, as `(stage, round)`, in the order that builds `direction`'s table.
pub(crate) fn gather_order<R: Rounds>(
    stages: &[SwapOrNot<R>],
    direction: Direction,
) -> Vec<(usize, u32)> {
    let order = stages
        .iter()
        .enumerate()
        .flat_map(|(s, stage)| (0..stage.rounds()).map(move |r| (s, r)));
    match direction {
        Direction::Inverse => order.collect(),
        Direction::Forward => order.rev().collect(),
    }
}

/// The table of `prp` in `direction`, on all cores.
pub(crate) fn table<P: Permutation>(prp: &P, direction: Direction) -> Result<Vec<u32>, Error> {
    check_table_domain(prp.domain())?;
    let mut table: Vec<u32> = (0..prp.domain() as usize)
        .into_par_iter()
        .map(|x| x as u32)
        .collect();
    let stages = prp.stages();
    for (s, round) in gather_order(stages, direction) {
        let stage = &stages[s];
        gather_round(stage, round, &mut table[..stage.domain() as usize]);
    }
    Ok(table)
}

/// `table = table o pi` for round `round` of `stage`, over the stage's domain.
fn gather_round<R: Rounds>(stage: &SwapOrNot<R>, round: u32, table: &mut [u32]) {
    let bits = stage.swap_bit_table(round);
    let split = stage.round_keys()[round as usize] as usize + 1;
    let (low, high) = table.split_at_mut(split);
    swap_mirrored_pairs(low, 0, &bits);
    swap_mirrored_pairs(high, split as u64, &bits);
}

/// Swaps `segment[i]` with its mirror `segment[len - 1 - i]` where the swap bit of the mirror's
/// value `offset + len - 1 - i` (the larger of the pair, `Xh`) is set.
fn swap_mirrored_pairs(segment: &mut [u32], offset: u64, bits: &[u32]) {
    let len = segment.len();
    let (front, back) = segment.split_at_mut(len - len / 2);
    front[..len / 2]
        .par_iter_mut()
        .zip(back.par_iter_mut().rev())
        .enumerate()
        .with_min_len(1 << 14)
        .for_each(|(i, (a, b))| {
            let xh = offset + (len - 1 - i) as u64;
            if bits[(xh / 32) as usize] >> (xh % 32) & 1 == 1 {
                std::mem::swap(a, b);
            }
        });
}

/// Whether a batch of `len` values over `[0, domain)` goes through a whole-domain table on
/// the CPU: it must hold at least `domain >> fraction_log2` values, and the table must exist.
pub(crate) fn table_pays(domain: u64, len: usize, fraction_log2: u32) -> bool {
    domain <= MAX_TABLE_DOMAIN && len as u64 >= domain >> fraction_log2
}

/// Errors with [`Error::OutOfDomain`] for the first value not below `domain`.
pub(crate) fn check_batch(values: &[u64], domain: u64) -> Result<(), Error> {
    match values.par_iter().find_first(|&&v| v >= domain) {
        Some(&value) => Err(Error::OutOfDomain { value, domain }),
        None => Ok(()),
    }
}

/// Replaces every value by its entry in `table`.
pub(crate) fn look_up(table: &[u32], values: &mut [u64]) {
    values
        .par_iter_mut()
        .for_each(|v| *v = u64::from(table[*v as usize]));
}
