//! The pseudorandom multinomial sampler (PMNS) of SPEC.md: `m` balls thrown into `2^b` bins
//! by splitting ball ranges down a complete binary tree, one popcount per node.

use std::marker::PhantomData;
use std::ops::Range;

use rayon::prelude::*;

use crate::chacha::{R8, Rounds, block};
use crate::derive::tags;
use crate::error::Error;
use crate::key::Key;

/// The most bins: node indices are one 32-bit nonce word.
pub const MAX_BINS: u64 = 1 << 32;

/// The most balls: a node's split reads one bit per ball from a stream of `2^32` blocks.
pub const MAX_BALLS: u64 = 1 << 41;

/// The PMNS of `m` balls into `w = 2^b` bins: bin `y` receives a contiguous range of balls,
/// and the ranges of all bins, in order, tile `[0, m)`.
///
/// Node `(l, i)` holding `n` balls gives its left child as many as there are ones among the
/// first `n` bits of the stream `(k, [i, l, PMNS])`, so the counts are exactly binomial.
///
/// ```
/// use prp::{Key, Pmns};
///
/// # fn main() -> Result<(), prp::Error> {
/// let pmns = Pmns::new(Key::new(&[1; 32]), 1000, 16)?;
/// let bin = pmns.bin(500)?;
/// assert!(pmns.range(bin)?.contains(&500));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Pmns<R: Rounds = R8> {
    key: Key,
    balls: u64,
    bins_log2: u32,
    variant: PhantomData<R>,
}

impl Pmns {
    /// The sampler of `balls` balls into `bins` bins, keyed by ChaCha8.
    ///
    /// Errors with [`Error::EmptyDomain`] if `balls == 0`, [`Error::BinsNotPowerOfTwo`] unless
    /// `bins` is a power of two, and [`Error::TooLarge`] above [`MAX_BALLS`] or [`MAX_BINS`].
    pub fn new(key: Key, balls: u64, bins: u64) -> Result<Self, Error> {
        Self::with_variant(R8, key, balls, bins)
    }
}

impl<R: Rounds> Pmns<R> {
    /// As [`Pmns::new`], keyed by the ChaCha variant `R`.
    pub fn with_variant(_variant: R, key: Key, balls: u64, bins: u64) -> Result<Self, Error> {
        if balls == 0 {
            return Err(Error::EmptyDomain);
        }
        if !bins.is_power_of_two() {
            return Err(Error::BinsNotPowerOfTwo { bins });
        }
        if balls > MAX_BALLS {
            return Err(Error::TooLarge {
                what: "balls",
                value: balls,
                max: MAX_BALLS,
            });
        }
        if bins > MAX_BINS {
            return Err(Error::TooLarge {
                what: "bins",
                value: bins,
                max: MAX_BINS,
            });
        }
        Ok(Self {
            key,
            balls,
            bins_log2: bins.trailing_zeros(),
            variant: PhantomData,
        })
    }

    /// The number of balls `m`.
    pub fn balls(&self) -> u64 {
        self.balls
    }

    /// The number of bins `w`.
    pub fn bins(&self) -> u64 {
        1 << self.bins_log2
    }

    /// `b = log2(w)`: the depth of the tree.
    pub fn bins_log2(&self) -> u32 {
        self.bins_log2
    }

    /// The key (for the GPU kernels).
    #[cfg(feature = "cuda")]
    pub(crate) fn key(&self) -> &Key {
        &self.key
    }

    /// Balls that node `(level, index)` holding `balls` balls passes to its left child.
    pub(crate) fn left_count(&self, level: u32, index: u64, balls: u64) -> u64 {
        let nonce = [index as u32, level, tags::PMNS];
        let full_blocks = balls / 512;
        let mut ones: u64 = (0..full_blocks)
            .map(|j| {
                let words = block::<R>(&self.key, j as u32, nonce);
                words.iter().map(|w| u64::from(w.count_ones())).sum::<u64>()
            })
            .sum();
        let rest = balls % 512;
        if rest > 0 {
            let words = block::<R>(&self.key, full_blocks as u32, nonce);
            let (whole, bits) = ((rest / 32) as usize, rest % 32);
            ones += words[..whole]
                .iter()
                .map(|w| u64::from(w.count_ones()))
                .sum::<u64>();
            if bits > 0 {
                ones += u64::from((words[whole] & ((1u32 << bits) - 1)).count_ones());
            }
        }
        ones
    }

    /// `S(x)`: the bin whose range holds ball `x`. Errors unless `x < m`.
    ///
    /// Costs about `2 m / 512` ChaCha blocks (one popcount per level); for many balls, take
    /// [`crate::Evaluator::bin_boundaries`] once.
    pub fn bin(&self, x: u64) -> Result<u64, Error> {
        crate::swap_or_not::check_in_domain(x, self.balls)?;
        let (mut index, mut start, mut balls) = (0u64, 0u64, self.balls);
        for level in 0..self.bins_log2 {
            let left = self.left_count(level, index, balls);
            if x < start + left {
                index *= 2;
                balls = left;
            } else {
                index = 2 * index + 1;
                start += left;
                balls -= left;
            }
        }
        Ok(index)
    }

    /// `S^-1(y)`: the balls of bin `y`, a possibly empty range. Errors unless `y < w`.
    pub fn range(&self, y: u64) -> Result<Range<u64>, Error> {
        if y >= self.bins() {
            return Err(Error::OutOfRange {
                value: y,
                range: self.bins(),
            });
        }
        let (mut index, mut start, mut balls) = (0u64, 0u64, self.balls);
        for level in 0..self.bins_log2 {
            let left = self.left_count(level, index, balls);
            let right_turn = (y >> (self.bins_log2 - 1 - level)) & 1;
            index = 2 * index + right_turn;
            if right_turn == 1 {
                start += left;
                balls -= left;
            } else {
                balls = left;
            }
        }
        Ok(start..start + balls)
    }

    /// The start of every bin's range and then `m`: `w + 1` values, bin `y` holding
    /// `boundaries[y] .. boundaries[y + 1]`. The whole tree, level by level, on all cores.
    pub(crate) fn boundaries_cpu(&self) -> Vec<u64> {
        // Per level, the ball count of every node; the root holds all of them.
        let mut counts = vec![self.balls];
        for level in 0..self.bins_log2 {
            counts = counts
                .par_iter()
                .enumerate()
                .flat_map_iter(|(index, &balls)| {
                    let left = self.left_count(level, index as u64, balls);
                    [left, balls - left]
                })
                .collect();
        }
        let mut boundaries = Vec::with_capacity(counts.len() + 1);
        let mut start = 0;
        boundaries.push(start);
        for count in counts {
            start += count;
            boundaries.push(start);
        }
        boundaries
    }
}

impl<R: Rounds> std::fmt::Debug for Pmns<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pmns")
            .field("chacha_rounds", &R::ROUNDS)
            .field("balls", &self.balls)
            .field("bins", &self.bins())
            .finish_non_exhaustive()
    }
}
