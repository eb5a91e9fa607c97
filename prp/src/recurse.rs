//! The Sometimes-Recurse full-domain PRP (Morris and Rogaway, CRYPTO 2014) over SwapOrNot
//! stages, with round counts derived from the security parameter.

use crate::chacha::{R8, Rounds};
use crate::error::Error;
use crate::key::Key;
use crate::swap_or_not::{Permutation, SwapOrNot};

/// The security parameter used unless one is given.
pub const DEFAULT_LAMBDA: u32 = 128;

/// The Sometimes-Recurse PRP over `[0, N)`: SwapOrNot stages on `N_0 = N`,
/// `N_{s+1} = floor(N_s / 2)` while `N_s >= 2`, each with
/// `t_s = ceil(7.23 log2(N_s) + 4.82 (lambda + log2(p)))` rounds for `p` stages.
///
/// A value leaves after the first stage whose output is not below the next stage's domain,
/// so a forward evaluation costs about two stages' rounds on average.
///
/// ```
/// use prp::{Key, Permutation, SometimesRecurse};
///
/// # fn main() -> Result<(), prp::Error> {
/// let prp = SometimesRecurse::new(Key::new(&[5; 32]), 1 << 20)?;
/// assert_eq!(prp.stages().len(), 20);
/// let y = prp.forward(77)?;
/// assert_eq!(prp.inverse(y)?, 77);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct SometimesRecurse<R: Rounds = R8> {
    domain: u64,
    lambda: u32,
    stages: Vec<SwapOrNot<R>>,
}

impl SometimesRecurse {
    /// The PRP over `[0, domain)` keyed by ChaCha8, at security `lambda = 128`.
    ///
    /// Errors with [`Error::DomainTooSmall`] if `domain < 2`.
    pub fn new(key: Key, domain: u64) -> Result<Self, Error> {
        Self::with_variant(R8, key, domain, DEFAULT_LAMBDA)
    }
}

impl<R: Rounds> SometimesRecurse<R> {
    /// The PRP over `[0, domain)` keyed by the ChaCha variant `R`, at security `lambda`.
    pub fn with_variant(_variant: R, key: Key, domain: u64, lambda: u32) -> Result<Self, Error> {
        if domain < 2 {
            return Err(Error::DomainTooSmall { domain });
        }
        Self::any_domain(key, domain, lambda)
    }

    /// As [`Self::with_variant`], also for `domain` 0 and 1, where it has no stages and is the
    /// identity (the invertible PRF allows a domain of one value).
    pub(crate) fn any_domain(key: Key, domain: u64, lambda: u32) -> Result<Self, Error> {
        let stages = stage_rounds(domain, lambda)
            .into_iter()
            .enumerate()
            .map(|(s, (size, rounds))| SwapOrNot::stage(key.clone(), size, s as u32, rounds))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            domain,
            lambda,
            stages,
        })
    }

    /// The security parameter the round counts were derived from.
    pub fn lambda(&self) -> u32 {
        self.lambda
    }
}

impl<R: Rounds> Permutation for SometimesRecurse<R> {
    type Rounds = R;

    fn stages(&self) -> &[SwapOrNot<R>] {
        &self.stages
    }

    fn domain(&self) -> u64 {
        self.domain
    }
}

/// `(N_s, t_s)` for every stage of the PRP over `[0, domain)` at security `lambda`.
pub fn stage_rounds(domain: u64, lambda: u32) -> Vec<(u64, u32)> {
    let sizes: Vec<u64> = std::iter::successors(Some(domain), |&n| Some(n / 2))
        .take_while(|&n| n >= 2)
        .collect();
    let log2_stages = (sizes.len() as f64).log2();
    sizes
        .iter()
        .map(|&n| {
            let rounds = 7.23 * (n as f64).log2() + 4.82 * (f64::from(lambda) + log2_stages);
            (n, rounds.ceil() as u32)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_rounds_follow_the_formula() {
        // N = 2^25, lambda = 128: 25 stages; t_0 = ceil(7.23 * 25 + 4.82 * (128 + log2 25)).
        let stages = stage_rounds(1 << 25, 128);
        assert_eq!(stages.len(), 25);
        assert_eq!(stages[0], (1 << 25, 821));
        assert_eq!(stages[24], (2, 647));
        assert_eq!(stage_rounds(3, 128), vec![(3, 629)]);
        assert!(stage_rounds(1, 128).is_empty());
        assert_eq!(stage_rounds(u64::MAX, 128).len(), 63);
        assert_eq!(stage_rounds(1 << 63, 128).len(), 63);
    }
}
