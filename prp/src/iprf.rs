//! The invertible PRF of SPEC.md: a Sometimes-Recurse PRP followed by the multinomial
//! sampler, `F(k, x) = S(kS, P(kP, x))`.

use std::ops::Range;

use crate::chacha::{R8, Rounds};
use crate::derive::derive;
use crate::error::Error;
use crate::key::Key;
use crate::pmns::Pmns;
use crate::recurse::{DEFAULT_LAMBDA, SometimesRecurse};
use crate::swap_or_not::Permutation;
use zeroize::{Zeroize, ZeroizeOnDrop};

/// An invertible PRF from `[0, m)` to `[0, w)`, `w` a power of two: every output `y` has the
/// preimages `{ P^-1(z) : z in S^-1(y) }`, found without searching the domain.
///
/// The PRP key is `derive(k, "iprf/prp", 0)` and the sampler key `derive(k, "iprf/pmns", 0)`.
///
/// ```
/// use prp::{Iprf, Key};
///
/// # fn main() -> Result<(), prp::Error> {
/// let iprf = Iprf::new(Key::new(&[8; 32]), 2000, 64)?;
/// let y = iprf.forward(1234)?;
/// assert!(iprf.preimages(y)?.contains(&1234));
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Iprf<R: Rounds = R8> {
    prp: SometimesRecurse<R>,
    pmns: Pmns<R>,
}

impl Iprf {
    /// The iPRF from `[0, domain)` to `[0, bins)` keyed by ChaCha8, its PRP at security 128.
    ///
    /// Errors with [`Error::EmptyDomain`] if `domain == 0` and [`Error::BinsNotPowerOfTwo`]
    /// unless `bins` is a power of two (see [`Pmns::new`] for the size limits).
    pub fn new(key: Key, domain: u64, bins: u64) -> Result<Self, Error> {
        Self::with_variant(R8, key, domain, bins, DEFAULT_LAMBDA)
    }
}

impl<R: Rounds> Iprf<R> {
    /// As [`Iprf::new`], keyed by the ChaCha variant `R`, with PRP security `lambda`.
    pub fn with_variant(
        variant: R,
        key: Key,
        domain: u64,
        bins: u64,
        lambda: u32,
    ) -> Result<Self, Error> {
        let pmns = Pmns::with_variant(variant, derive(&key, "iprf/pmns", 0), domain, bins)?;
        let prp = SometimesRecurse::any_domain(derive(&key, "iprf/prp", 0), domain, lambda)?;
        Ok(Self { prp, pmns })
    }

    /// The domain size `m`.
    pub fn domain(&self) -> u64 {
        self.pmns.balls()
    }

    /// The range size `w`.
    pub fn bins(&self) -> u64 {
        self.pmns.bins()
    }

    /// The PRP `P(kP, .)` over `[0, m)`.
    pub fn prp(&self) -> &SometimesRecurse<R> {
        &self.prp
    }

    /// The sampler `S(kS, .)` of `m` balls into `w` bins.
    pub fn pmns(&self) -> &Pmns<R> {
        &self.pmns
    }

    /// `F(k, x)`. Errors unless `x < m`.
    pub fn forward(&self, x: u64) -> Result<u64, Error> {
        self.pmns.bin(self.prp.forward(x)?)
    }

    /// `F^-1(k, y)`: every `x` with `F(k, x) = y`, in the order of their PRP images. Errors
    /// unless `y < w`.
    pub fn preimages(&self, y: u64) -> Result<Vec<u64>, Error> {
        self.pmns.range(y)?.map(|z| self.prp.inverse(z)).collect()
    }
}

/// The whole-domain tables of an iPRF, from [`crate::Evaluator::iprf_tables`]: `P^-1` for all
/// of `[0, m)` and the PMNS range of every bin. Bin `y`'s preimages are then one slice.
///
/// The tables give away every value of the keyed function, as the key would: `Debug` shows
/// their sizes only, and they are zeroed on drop.
#[derive(Clone, PartialEq, Eq, Zeroize, ZeroizeOnDrop)]
pub struct IprfTables {
    inverse_permutation: Vec<u32>,
    boundaries: Vec<u64>,
}

impl std::fmt::Debug for IprfTables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IprfTables")
            .field("domain", &self.inverse_permutation.len())
            .field("bins", &self.boundaries.len().saturating_sub(1))
            .finish_non_exhaustive()
    }
}

impl IprfTables {
    /// Tables from `P^-1` (`m` entries) and the bin boundaries (`w + 1` entries, from 0 to `m`).
    pub(crate) fn new(inverse_permutation: Vec<u32>, boundaries: Vec<u64>) -> Self {
        debug_assert_eq!(
            boundaries.last().copied(),
            Some(inverse_permutation.len() as u64)
        );
        Self {
            inverse_permutation,
            boundaries,
        }
    }

    /// `P^-1(z)` for every `z < m`.
    pub fn inverse_permutation(&self) -> &[u32] {
        &self.inverse_permutation
    }

    /// Bin `y` holds the PRP images `boundaries[y] .. boundaries[y + 1]`; `w + 1` values.
    pub fn boundaries(&self) -> &[u64] {
        &self.boundaries
    }

    /// `S^-1(y)`, the range of PRP images in bin `y`. Errors unless `y < w`.
    pub fn range(&self, y: u64) -> Result<Range<u64>, Error> {
        let bins = self.boundaries.len() as u64 - 1;
        if y >= bins {
            return Err(Error::OutOfRange {
                value: y,
                range: bins,
            });
        }
        Ok(self.boundaries[y as usize]..self.boundaries[y as usize + 1])
    }

    /// `F^-1(k, y)`, as [`Iprf::preimages`] gives it. Errors unless `y < w`.
    pub fn preimages(&self, y: u64) -> Result<&[u32], Error> {
        let range = self.range(y)?;
        Ok(&self.inverse_permutation[range.start as usize..range.end as usize])
    }
}

/// The bin of each PRP image: `boundaries` as in [`IprfTables::boundaries`].
pub(crate) fn bin_of(boundaries: &[u64], z: u64) -> u64 {
    // The last bin starting at or before z; empty bins share their start with the next one.
    (boundaries.partition_point(|&start| start <= z) - 1) as u64
}
