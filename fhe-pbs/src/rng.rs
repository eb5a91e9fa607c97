//! The seedable cryptographic random generator and the samplers built on it.
//!
//! [`Csprng`] is ChaCha20 (`rand_chacha::ChaCha20Rng`) seeded from 32 bytes, so keys and
//! ciphertexts are reproducible from a seed in tests. Every sampler draws whole `u64` words
//! (`next_u64`) in a fixed order, documented on each function; known-answer tests pin it.

use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::{OsRng, RngCore, SeedableRng, TryRngCore};

use crate::error::Error;
use crate::params::NoiseDistribution;

/// ChaCha20 seeded from 32 bytes: the only randomness the crate uses.
///
/// `Debug` shows nothing of the state. On drop the state (the key the seed became, the
/// counter and the buffered output, from which the keys drawn from it could be recomputed)
/// is overwritten in place: `rand_chacha` offers no `zeroize`, so this is a plain store of a
/// fixed state kept from being optimized away by [`std::hint::black_box`], a best effort
/// rather than `zeroize`'s guarantee.
#[derive(Clone)]
pub struct Csprng(ChaCha20Rng);

impl std::fmt::Debug for Csprng {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Csprng(ChaCha20, state hidden)")
    }
}

impl Drop for Csprng {
    fn drop(&mut self) {
        self.0 = ChaCha20Rng::from_seed([0; 32]);
        std::hint::black_box(&mut self.0);
    }
}

impl Csprng {
    /// A generator whose whole output is fixed by `seed` (for tests and reproducible keys).
    #[must_use]
    pub fn from_seed(seed: [u8; 32]) -> Self {
        Self(ChaCha20Rng::from_seed(seed))
    }

    /// A generator seeded from the operating system's entropy source.
    ///
    /// # Errors
    ///
    /// [`Error::Entropy`] when the operating system cannot provide a seed.
    pub fn from_entropy() -> Result<Self, Error> {
        let mut seed = [0u8; 32];
        OsRng
            .try_fill_bytes(&mut seed)
            .map_err(|e| Error::Entropy(e.to_string()))?;
        let rng = Self::from_seed(seed);
        zeroize::Zeroize::zeroize(&mut seed);
        Ok(rng)
    }

    /// The next uniform 64-bit word.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Fills `out` with uniform words, one `next_u64` each, in order.
    pub fn fill_uniform(&mut self, out: &mut [u64]) {
        for x in out {
            *x = self.0.next_u64();
        }
    }

    /// A uniform bit: the lowest bit of one `next_u64`.
    pub fn next_bit(&mut self) -> u64 {
        self.0.next_u64() & 1
    }

    /// A uniform `f64` in `(0, 1]`: `(w >> 11) + 1` over `2^53`, from one word `w`.
    fn next_open_unit(&mut self) -> f64 {
        ((self.0.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// One noise value as a `u64` (two's complement of the signed integer noise).
    ///
    /// Gaussian: two words `u1, u2` (as `(0, 1]` floats), `z = sqrt(-2 ln u1) cos(2 pi u2)`,
    /// noise `round(z * std * 2^64)` (Box–Muller; the second variate is discarded so that
    /// every sample costs exactly two words). `ln` and `cos` come from the platform's libm,
    /// so Gaussian samples may differ in rare last-bit cases between platforms; t-uniform
    /// samples are pure integer arithmetic. T-uniform with bound `b`: one word `w`,
    /// `r = w >> (62 - b)` (its top `b + 2` bits), noise `(r >> 1) + (r & 1) - 2^b`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] for a Gaussian std that is not finite in `[0, 1/4]` or a
    /// t-uniform bound above `2^62` (as [`crate::Parameters::new`] refuses them).
    pub fn next_noise(&mut self, distribution: NoiseDistribution) -> Result<u64, Error> {
        distribution.validate("noise distribution")?;
        Ok(self.next_noise_unchecked(distribution))
    }

    /// Fills `out` with noise values, one [`Csprng::next_noise`] each, in order.
    ///
    /// # Errors
    ///
    /// As [`Csprng::next_noise`] (nothing is drawn then).
    pub fn fill_noise(
        &mut self,
        out: &mut [u64],
        distribution: NoiseDistribution,
    ) -> Result<(), Error> {
        distribution.validate("noise distribution")?;
        self.fill_noise_unchecked(out, distribution);
        Ok(())
    }

    /// [`Csprng::next_noise`] of a distribution already checked.
    pub(crate) fn next_noise_unchecked(&mut self, distribution: NoiseDistribution) -> u64 {
        match distribution {
            NoiseDistribution::Gaussian { std } => {
                let u1 = self.next_open_unit();
                let u2 = self.next_open_unit();
                let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                let x = (z * std * 2f64.powi(64)).round();
                // |x| is far below 2^63 for std <= 1/4 and |z| < 40.
                (x as i64) as u64
            }
            NoiseDistribution::TUniform { bound_log2 } => {
                let r = self.0.next_u64() >> (62 - bound_log2);
                ((r >> 1) + (r & 1)).wrapping_sub(1u64 << bound_log2)
            }
        }
    }

    /// [`Csprng::fill_noise`] of a distribution already checked.
    pub(crate) fn fill_noise_unchecked(
        &mut self,
        out: &mut [u64],
        distribution: NoiseDistribution,
    ) {
        for x in out {
            *x = self.next_noise_unchecked(distribution);
        }
    }
}
