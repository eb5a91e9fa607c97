//! The multi-bit bootstrap key (tfhe-rs's `LweMultiBitBootstrapKey`).
//!
//! The small key's `n` bits are taken in groups of `g` (the grouping factor), `n / g` groups.
//! Group `i` holds `2^g` GGSW ciphertexts, indexed by a pattern `t` of `g` bits; GGSW `t`
//! encrypts the product over the group's bits `s_{ig + j}` (`j < g`) of `s_{ig + j}` when bit
//! `g - 1 - j` of `t` is set and of `1 - s_{ig + j}` when it is not. So exactly one GGSW of
//! each group encrypts 1, the one whose pattern equals the group's key bits (`s_{ig}` as the
//! most significant bit), and GGSW 0 encrypts `(1 - s_{ig}) ... (1 - s_{ig + g - 1})`.
//!
//! Layout ([`MultiBitBootstrapKey::as_slice`]), all `u64`, as tfhe-rs stores it: the `n / g`
//! groups one after the other, each its `2^g` GGSWs in pattern order, each GGSW in the layout
//! of [`crate::bootstrap_key`] (`l (k + 1) (k + 1) N` words, level matrices least significant
//! first).

use crate::bootstrap_key::{BootstrapKey, encrypt_ggsw_list};
use crate::error::Error;
use crate::keys::{GlweSecretKey, LweSecretKey};
use crate::params::{
    DecompositionParams, GlweDimension, GroupingFactor, LweDimension, NoiseDistribution,
    PolynomialSize,
};
use crate::rng::Csprng;

/// A multi-bit bootstrap key in the standard (coefficient) domain; see the module docs for its
/// layout. `Debug` shows the dimensions, not the (large) contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultiBitBootstrapKey {
    /// The `n / g * 2^g` GGSWs as one list (a [`BootstrapKey`] whose "LWE dimension" is the
    /// number of GGSWs): it owns the words, their checks and the per-GGSW access.
    ggsws: BootstrapKey,
    lwe_dimension: LweDimension,
    grouping_factor: GroupingFactor,
}

/// The cleartext of GGSW `pattern` of a group with key bits `bits` (see the module docs).
#[must_use]
pub fn group_cleartext(pattern: usize, bits: &[u64]) -> u64 {
    let g = bits.len();
    bits.iter().enumerate().fold(1u64, |product, (j, &bit)| {
        let selected = (pattern >> (g - 1 - j)) & 1 == 1;
        product.wrapping_mul(if selected { bit } else { 1 ^ bit })
    })
}

impl MultiBitBootstrapKey {
    /// Generates the key: the GGSWs in layout order, each drawn as
    /// [`BootstrapKey::generate`] draws its GGSWs (masks then noise, row by row, then the
    /// bodies in parallel).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `g` is 2, 3 or 4 and divides `n`, or for a noise
    /// distribution [`crate::Parameters::new`] would refuse (nothing is drawn then).
    pub fn generate(
        lwe_key: &LweSecretKey,
        glwe_key: &GlweSecretKey,
        grouping_factor: GroupingFactor,
        decomposition: DecompositionParams,
        noise: NoiseDistribution,
        rng: &mut Csprng,
    ) -> Result<Self, Error> {
        let lwe_dimension = lwe_key.dimension();
        ggsw_count(lwe_dimension, grouping_factor)?;
        noise.validate("noise distribution")?;
        let cleartexts: Vec<u64> = lwe_key
            .as_slice()
            .chunks_exact(grouping_factor.0)
            .flat_map(|bits| {
                (0..grouping_factor.ggsw_per_group()).map(|t| group_cleartext(t, bits))
            })
            .collect();
        let data = encrypt_ggsw_list(&cleartexts, glwe_key, decomposition, noise, rng);
        Self::from_vec(
            data,
            lwe_dimension,
            grouping_factor,
            glwe_key.glwe_dimension(),
            glwe_key.polynomial_size(),
            decomposition,
        )
    }

    /// Wraps raw words in the documented layout (tfhe-rs's `LweMultiBitBootstrapKey`
    /// container, `as_ref()`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] for a grouping factor other than 2, 3 or 4 or one that does
    /// not divide `n`, or a bad decomposition; [`Error::DimensionMismatch`] when the length does
    /// not match the dimensions or one is 0; [`Error::SizeOverflow`] when their product
    /// overflows.
    pub fn from_vec(
        data: Vec<u64>,
        lwe_dimension: LweDimension,
        grouping_factor: GroupingFactor,
        glwe_dimension: GlweDimension,
        polynomial_size: PolynomialSize,
        decomposition: DecompositionParams,
    ) -> Result<Self, Error> {
        let count = ggsw_count(lwe_dimension, grouping_factor)?;
        let ggsws = BootstrapKey::from_vec(
            data,
            LweDimension(count),
            glwe_dimension,
            polynomial_size,
            decomposition,
        )?;
        Ok(Self {
            ggsws,
            lwe_dimension,
            grouping_factor,
        })
    }

    /// The words, in the documented layout.
    #[must_use]
    pub fn as_slice(&self) -> &[u64] {
        self.ggsws.as_slice()
    }

    /// `n`, the dimension of the small key.
    #[must_use]
    pub fn lwe_dimension(&self) -> LweDimension {
        self.lwe_dimension
    }

    /// `g`.
    #[must_use]
    pub fn grouping_factor(&self) -> GroupingFactor {
        self.grouping_factor
    }

    /// `k`.
    #[must_use]
    pub fn glwe_dimension(&self) -> GlweDimension {
        self.ggsws.glwe_dimension()
    }

    /// `N`.
    #[must_use]
    pub fn polynomial_size(&self) -> PolynomialSize {
        self.ggsws.polynomial_size()
    }

    /// The decomposition.
    #[must_use]
    pub fn decomposition(&self) -> DecompositionParams {
        self.ggsws.decomposition()
    }

    /// Words per GGSW ciphertext: `l (k + 1) (k + 1) N`.
    #[must_use]
    pub fn ggsw_len(&self) -> usize {
        self.ggsws.ggsw_len()
    }

    /// The `n / g * 2^g` GGSWs as one list (a classic key's layout, one GGSW per entry), as
    /// the CUDA backend uploads them.
    #[cfg(feature = "cuda")]
    pub(crate) fn ggsw_list(&self) -> &BootstrapKey {
        &self.ggsws
    }

    /// The `2^g` GGSWs of group `group` (`group < n / g`), one after the other.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when `group >= n / g`.
    pub fn group(&self, group: usize) -> Result<&[u64], Error> {
        let groups = self.lwe_dimension.0 / self.grouping_factor.0;
        if group >= groups {
            return Err(Error::DimensionMismatch {
                what: "multi-bit bootstrap key group index",
                expected: groups,
                got: group,
            });
        }
        let len = self.grouping_factor.ggsw_per_group() * self.ggsw_len();
        Ok(&self.as_slice()[group * len..(group + 1) * len])
    }
}

/// `n / g * 2^g`, after checking `g` and `n`.
fn ggsw_count(
    lwe_dimension: LweDimension,
    grouping_factor: GroupingFactor,
) -> Result<usize, Error> {
    grouping_factor
        .groups(lwe_dimension)?
        .checked_mul(grouping_factor.ggsw_per_group())
        .ok_or(Error::SizeOverflow {
            what: "multi-bit bootstrap key GGSW count",
        })
}
