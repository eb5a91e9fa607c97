//! SwapOrNot (Hoang, Morris and Rogaway, CRYPTO 2012) over `[0, N)`: one stage of SPEC.md's
//! "prp" section, and the [`Permutation`] trait shared with the Sometimes-Recurse PRP.

use std::marker::PhantomData;

use rayon::prelude::*;
use zeroize::Zeroize;

use crate::chacha::{R8, Rounds, block};
use crate::derive::tags;
use crate::error::Error;
use crate::key::Key;

/// The most rounds one stage may have: the round number shares a nonce word with the stage
/// (`(r << 8) | s`), so it must stay below `2^24`.
pub const MAX_ROUNDS: u32 = 1 << 24;

/// Consecutive `Xh` served by one ChaCha block of swap bits (its 512 bits).
pub const BITS_PER_BLOCK: u64 = 512;

/// The SwapOrNot small-domain PRP over `[0, N)` with a caller-chosen round count, keyed by
/// ChaCha (`R`: [`R8`] by default).
///
/// Round keys are computed when it is made, one ChaCha block per round. Evaluate it through
/// [`Permutation`] (one value) or an [`crate::Evaluator`] (batches and whole-domain tables).
///
/// A plain SwapOrNot with a round count of your choosing carries no full-domain security
/// bound: use [`crate::SometimesRecurse`] for that. This form exists for protocols that fix
/// the round count themselves, such as the Plinko GPU benchmark's 759 rounds over `2^17`.
///
/// ```
/// use prp::{Key, Permutation, SwapOrNot};
///
/// # fn main() -> Result<(), prp::Error> {
/// let prp = SwapOrNot::new(Key::new(&[3; 32]), 1000, 64)?;
/// let y = prp.forward(123)?;
/// assert!(y < 1000);
/// assert_eq!(prp.inverse(y)?, 123);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SwapOrNot<R: Rounds = R8> {
    key: Key,
    domain: u64,
    stage: u32,
    round_keys: Vec<u64>,
    variant: PhantomData<R>,
}

impl SwapOrNot {
    /// SwapOrNot keyed by ChaCha8 over `[0, domain)` with `rounds` rounds.
    ///
    /// Errors with [`Error::DomainTooSmall`] if `domain < 2` and [`Error::TooManyRounds`]
    /// above [`MAX_ROUNDS`].
    pub fn new(key: Key, domain: u64, rounds: u32) -> Result<Self, Error> {
        Self::with_variant(R8, key, domain, rounds)
    }
}

impl<R: Rounds> SwapOrNot<R> {
    /// As [`SwapOrNot::new`], keyed by the ChaCha variant `R` (`R8`, `R12` or `R20`).
    pub fn with_variant(_variant: R, key: Key, domain: u64, rounds: u32) -> Result<Self, Error> {
        if domain < 2 {
            return Err(Error::DomainTooSmall { domain });
        }
        Self::stage(key, domain, 0, rounds)
    }

    /// Stage `stage` of a Sometimes-Recurse PRP (stage 0 for a plain SwapOrNot).
    pub(crate) fn stage(key: Key, domain: u64, stage: u32, rounds: u32) -> Result<Self, Error> {
        if rounds > MAX_ROUNDS {
            return Err(Error::TooManyRounds { rounds });
        }
        let round_keys = (0..rounds)
            .map(|r| round_key::<R>(&key, stage, r, domain))
            .collect();
        Ok(Self {
            key,
            domain,
            stage,
            round_keys,
            variant: PhantomData,
        })
    }

    /// The domain size `N`.
    pub fn domain(&self) -> u64 {
        self.domain
    }

    /// The number of rounds `t`.
    pub fn rounds(&self) -> u32 {
        self.round_keys.len() as u32
    }

    /// The stage number `s` (0 for a plain SwapOrNot).
    pub fn stage_index(&self) -> u32 {
        self.stage
    }

    /// The key (for the GPU kernels).
    #[cfg(feature = "cuda")]
    pub(crate) fn key(&self) -> &Key {
        &self.key
    }

    /// The round keys `K_0 .. K_{t-1}`, each below `N`.
    pub(crate) fn round_keys(&self) -> &[u64] {
        &self.round_keys
    }

    /// The ChaCha nonce of round `round`'s swap bits for `Xh` in `[512 j, 512 j + 512)`,
    /// with the block counter `lo32(j)`.
    pub(crate) fn swap_nonce(&self, round: u32, block_index: u64) -> [u32; 3] {
        [
            (block_index >> 32) as u32,
            (round << 8) | self.stage,
            tags::SWAP,
        ]
    }

    /// The swap bit of round `round` for `Xh = xh`.
    fn swap_bit(&self, round: u32, xh: u64) -> bool {
        let index = xh / BITS_PER_BLOCK;
        let words = block::<R>(&self.key, index as u32, self.swap_nonce(round, index));
        words[((xh >> 5) & 15) as usize] >> (xh & 31) & 1 == 1
    }

    /// Round `round` applied to `x < N` (each round is an involution).
    fn round(&self, round: u32, x: u64) -> u64 {
        let partner = partner(self.round_keys[round as usize], x, self.domain);
        if self.swap_bit(round, x.max(partner)) {
            partner
        } else {
            x
        }
    }

    /// Rounds `0 .. t` applied to `x < N`.
    pub(crate) fn forward_unchecked(&self, x: u64) -> u64 {
        (0..self.rounds()).fold(x, |x, r| self.round(r, x))
    }

    /// Rounds `t - 1 ..= 0` applied to `x < N`.
    pub(crate) fn inverse_unchecked(&self, x: u64) -> u64 {
        (0..self.rounds()).rev().fold(x, |x, r| self.round(r, x))
    }

    /// The swap bits of round `round` for every `Xh < N`, as a bit table: bit `Xh` is bit
    /// `Xh mod 32` of word `Xh / 32`. One ChaCha block per 512 values; computed on all cores.
    pub(crate) fn swap_bit_table(&self, round: u32) -> Vec<u32> {
        let blocks = self.domain.div_ceil(BITS_PER_BLOCK) as usize;
        let mut table = vec![0u32; blocks * 16];
        table
            .par_chunks_mut(16)
            .enumerate()
            .for_each(|(index, words)| {
                let index = index as u64;
                let nonce = self.swap_nonce(round, index);
                words.copy_from_slice(&block::<R>(&self.key, index as u32, nonce));
            });
        table
    }
}

impl<R: Rounds> Drop for SwapOrNot<R> {
    fn drop(&mut self) {
        self.round_keys.zeroize();
    }
}

impl<R: Rounds> std::fmt::Debug for SwapOrNot<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwapOrNot")
            .field("chacha_rounds", &R::ROUNDS)
            .field("domain", &self.domain)
            .field("stage", &self.stage)
            .field("rounds", &self.rounds())
            .finish_non_exhaustive()
    }
}

/// `K_r = (w0 + w1 2^32 + w2 2^64 + w3 2^96) mod N` with `w = block(k, r, [s, 0, KEYS])`.
fn round_key<R: Rounds>(key: &Key, stage: u32, round: u32, domain: u64) -> u64 {
    let w = block::<R>(key, round, [stage, 0, tags::KEYS]);
    let wide =
        u128::from(w[0]) | u128::from(w[1]) << 32 | u128::from(w[2]) << 64 | u128::from(w[3]) << 96;
    (wide % u128::from(domain)) as u64
}

/// `(k - x) mod n` for `k, x < n`, without overflow for any `n < 2^64`.
pub(crate) fn partner(k: u64, x: u64, n: u64) -> u64 {
    if k >= x { k - x } else { k + (n - x) }
}

mod sealed {
    pub trait Sealed {}
}

impl<R: Rounds> sealed::Sealed for SwapOrNot<R> {}
impl<R: Rounds> sealed::Sealed for crate::SometimesRecurse<R> {}

/// A keyed permutation of `[0, N)` built from SwapOrNot stages: [`SwapOrNot`] (one stage) or
/// [`crate::SometimesRecurse`] (a stage per halving of the domain).
///
/// Forward applies stage 0 and continues with stage `s + 1` while the value lies below that
/// stage's domain; the inverse undoes the stages from the last one the value reached.
pub trait Permutation: sealed::Sealed + Send + Sync {
    /// The ChaCha variant keying it.
    type Rounds: Rounds;

    /// The stages, in forward order; stage `s` works on `[0, N_s)` with `N_0 = N`.
    fn stages(&self) -> &[SwapOrNot<Self::Rounds>];

    /// The domain size `N`.
    fn domain(&self) -> u64;

    /// `P(x)`. Errors with [`Error::OutOfDomain`] unless `x < N`.
    fn forward(&self, x: u64) -> Result<u64, Error> {
        check_in_domain(x, self.domain())?;
        Ok(forward_through(self.stages(), x))
    }

    /// `P^-1(y)`. Errors with [`Error::OutOfDomain`] unless `y < N`.
    fn inverse(&self, y: u64) -> Result<u64, Error> {
        check_in_domain(y, self.domain())?;
        Ok(inverse_through(self.stages(), y))
    }
}

impl<R: Rounds> Permutation for SwapOrNot<R> {
    type Rounds = R;

    fn stages(&self) -> &[SwapOrNot<R>] {
        std::slice::from_ref(self)
    }

    fn domain(&self) -> u64 {
        self.domain
    }
}

/// `Err(OutOfDomain)` unless `x < domain`.
pub(crate) fn check_in_domain(x: u64, domain: u64) -> Result<(), Error> {
    if x >= domain {
        return Err(Error::OutOfDomain { value: x, domain });
    }
    Ok(())
}

/// Forward through the stages: stage `s`, then `s + 1` while the value is below its domain.
pub(crate) fn forward_through<R: Rounds>(stages: &[SwapOrNot<R>], x: u64) -> u64 {
    let mut y = x;
    for (s, stage) in stages.iter().enumerate() {
        y = stage.forward_unchecked(y);
        match stages.get(s + 1) {
            Some(next) if y < next.domain => {}
            _ => break,
        }
    }
    y
}

/// Inverse through the stages: from the last stage whose domain holds `y`, down to stage 0.
pub(crate) fn inverse_through<R: Rounds>(stages: &[SwapOrNot<R>], y: u64) -> u64 {
    let reached = stages.iter().take_while(|stage| y < stage.domain).count();
    stages[..reached]
        .iter()
        .rev()
        .fold(y, |z, stage| stage.inverse_unchecked(z))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partner_reflects_without_overflow() {
        assert_eq!(partner(5, 2, 10), 3);
        assert_eq!(partner(5, 7, 10), 8);
        let n = u64::MAX;
        assert_eq!(partner(0, n - 1, n), 1);
        assert_eq!(partner(n - 1, 0, n), n - 1);
    }
}
