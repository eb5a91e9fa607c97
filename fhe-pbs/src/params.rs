//! Parameter sets: dimensions, noise distributions and gadget decompositions.
//!
//! A [`Parameters`] value is always valid: the predefined sets are checked by the unit tests,
//! and caller-defined sets go through [`Parameters::new`], which returns
//! [`Error::InvalidParameter`] for anything this crate cannot run.

use crate::error::Error;
pub use crate::modswitch::ModulusSwitchType;

/// `n`: the dimension of the small LWE secret key (the key-switch output, the bootstrap input).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LweDimension(pub usize);

/// `k`: the number of mask polynomials of a GLWE ciphertext.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GlweDimension(pub usize);

/// `N`: the number of coefficients of a polynomial of `Z_{2^64}[X] / (X^N + 1)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PolynomialSize(pub usize);

/// `log2(B)`: the base log of a gadget decomposition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DecompositionBaseLog(pub usize);

/// `l`: the number of levels of a gadget decomposition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DecompositionLevelCount(pub usize);

/// A gadget decomposition: base `B = 2^base_log`, `level_count` levels, so the
/// `base_log * level_count` most significant bits of a torus element are represented.
///
/// Always valid: the fields are private and [`DecompositionParams::new`] is the only way to
/// make one, so `1 <= base_log`, `1 <= level_count` and `base_log * level_count <= 64` hold
/// for every value, and the functions that take one need no check of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DecompositionParams {
    base_log: DecompositionBaseLog,
    level_count: DecompositionLevelCount,
}

impl DecompositionParams {
    /// A decomposition with base `2^base_log` and `level_count` levels.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `base_log >= 1`, `level_count >= 1` and
    /// `base_log * level_count <= 64`.
    pub fn new(base_log: usize, level_count: usize) -> Result<Self, Error> {
        let params = Self {
            base_log: DecompositionBaseLog(base_log),
            level_count: DecompositionLevelCount(level_count),
        };
        params.validate("decomposition")?;
        Ok(params)
    }

    /// `log2(B)`, from 1 to 64.
    #[must_use]
    pub const fn base_log(&self) -> DecompositionBaseLog {
        self.base_log
    }

    /// `l`, from 1 to 64.
    #[must_use]
    pub const fn level_count(&self) -> DecompositionLevelCount {
        self.level_count
    }

    /// `base_log * level_count`: how many of the 64 bits the decomposition represents (at
    /// most 64).
    #[must_use]
    pub const fn represented_bits(&self) -> usize {
        self.base_log.0 * self.level_count.0
    }

    fn validate(&self, name: &'static str) -> Result<(), Error> {
        let (b, l) = (self.base_log.0, self.level_count.0);
        if b == 0 || l == 0 || b.checked_mul(l).is_none_or(|bits| bits > 64) {
            return Err(Error::InvalidParameter {
                name,
                reason: format!(
                    "base log {b} and level count {l}: both must be at least 1 and \
                     base_log * level_count at most 64"
                ),
            });
        }
        Ok(())
    }
}

/// How fresh encryption noise is drawn. Values are integers added to the `u64` body with
/// wrapping arithmetic (the torus `[0, 1)` scaled by `2^64`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NoiseDistribution {
    /// A rounded Gaussian with standard deviation `std` given as a fraction of the torus (the
    /// integer noise has standard deviation `std * 2^64`). Sampled by Box–Muller from 53-bit
    /// uniform floats, then rounded to the nearest integer.
    Gaussian {
        /// Standard deviation as a fraction of the torus, in `[0, 2^-2]`.
        std: f64,
    },
    /// tfhe-rs's `TUniform` with bound `2^bound_log2`: integers in `[-2^b, 2^b]`, every value
    /// with probability `2^-(b+1)` except the two end points, which have `2^-(b+2)` each.
    /// Sampled from `b + 2` uniform bits `r` as `(r >> 1) + (r & 1) - 2^b`.
    TUniform {
        /// `b`, at most 62.
        bound_log2: u32,
    },
}

impl NoiseDistribution {
    /// The variance of the integer noise (in units of `1`, i.e. of `2^-64` of the torus).
    #[must_use]
    pub fn variance(&self) -> f64 {
        match *self {
            Self::Gaussian { std } => {
                let s = std * 2f64.powi(64);
                // Rounding to an integer adds (about) 1/12.
                s * s + 1.0 / 12.0
            }
            Self::TUniform { bound_log2 } => {
                // Values -m..=m, end points with half weight: E[x^2] = (2 m^2 + 1) / 6.
                let m = 2f64.powf(f64::from(bound_log2));
                (2.0 * m * m + 1.0) / 6.0
            }
        }
    }

    /// An error naming `name` unless the distribution is one [`Parameters::new`] accepts.
    pub(crate) fn validate(&self, name: &'static str) -> Result<(), Error> {
        match *self {
            Self::Gaussian { std } if !(std.is_finite() && (0.0..=0.25).contains(&std)) => {
                Err(Error::InvalidParameter {
                    name,
                    reason: format!("Gaussian std {std} must be finite and in [0, 0.25]"),
                })
            }
            Self::TUniform { bound_log2 } if bound_log2 > 62 => Err(Error::InvalidParameter {
                name,
                reason: format!("t-uniform bound log2 {bound_log2} must be at most 62"),
            }),
            _ => Ok(()),
        }
    }
}

/// Every field of a parameter set, unchecked: give it to [`Parameters::new`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParameterSpec {
    /// `n`, the small LWE key's dimension: at least 1.
    pub lwe_dimension: LweDimension,
    /// `k`: at least 1.
    pub glwe_dimension: GlweDimension,
    /// `N`: a power of two from 512 to 8192.
    pub polynomial_size: PolynomialSize,
    /// Noise of encryptions under the small LWE key (the key-switching key).
    pub lwe_noise: NoiseDistribution,
    /// Noise of encryptions under the GLWE key (the bootstrap key, and fresh ciphertexts
    /// under the big key).
    pub glwe_noise: NoiseDistribution,
    /// Decomposition of the external products of the blind rotation.
    pub pbs_decomposition: DecompositionParams,
    /// Decomposition of the key switch.
    pub ks_decomposition: DecompositionParams,
    /// `p`, the number of messages (message modulus times carry modulus in tfhe-rs terms): a
    /// power of two from 2 to `N`. One more bit of padding sits above the message:
    /// `delta = 2^63 / p`.
    pub plaintext_modulus: u64,
    /// How the bootstrap switches its input to `2N` (tfhe-rs's `modulus_switch_noise_reduction_params`).
    pub modulus_switch: ModulusSwitchType,
}

/// `g`: how many small-key coefficients a multi-bit bootstrap handles in one external
/// product (tfhe-rs's `LweBskGroupingFactor`). This crate runs 2, 3 and 4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupingFactor(pub usize);

impl GroupingFactor {
    /// `2^g`: the GGSW ciphertexts per group of a multi-bit bootstrap key (tfhe-rs's
    /// `ggsw_per_multi_bit_element`), one per pattern of the group's `g` key bits.
    #[must_use]
    /// Saturates at `usize::MAX` for a `g` too large for a shift (refused by every check).
    pub const fn ggsw_per_group(&self) -> usize {
        if self.0 < usize::BITS as usize {
            1 << self.0
        } else {
            usize::MAX
        }
    }

    /// `n / g`, the number of groups of a small key of dimension `n`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `g` is 2, 3 or 4 and `n` a positive multiple of it.
    pub fn groups(&self, lwe_dimension: LweDimension) -> Result<usize, Error> {
        let (n, g) = (lwe_dimension.0, self.0);
        if !(2..=4).contains(&g) {
            return Err(Error::InvalidParameter {
                name: "grouping_factor",
                reason: format!("g = {g} must be 2, 3 or 4"),
            });
        }
        if n == 0 || n % g != 0 {
            return Err(Error::InvalidParameter {
                name: "lwe_dimension",
                reason: format!("n = {n} must be a positive multiple of the grouping factor {g}"),
            });
        }
        Ok(n / g)
    }
}

/// The kind of programmable bootstrap a parameter set runs, and so the kind of its bootstrap
/// key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PbsKind {
    /// One GGSW per small-key coefficient, one CMux per mask coefficient
    /// ([`crate::BootstrapKey`]).
    Classic,
    /// Multi-bit: `2^g` GGSWs per group of `g` small-key coefficients, one external product
    /// per group ([`crate::MultiBitBootstrapKey`]), as tfhe-rs's multi-bit PBS.
    MultiBit(GroupingFactor),
}

/// A validated parameter set.
///
/// Conventions (tfhe-rs `core_crypto`, `KS_PBS`): fresh ciphertexts live under the *big* LWE
/// key, the GLWE key flattened (dimension `kN`), with GLWE noise. A key switch takes them to
/// the *small* LWE key (dimension `n`); its key uses the LWE noise. The programmable bootstrap
/// takes them back to the big key; its key (GGSW encryptions of the small key's bits under
/// the GLWE key) uses the GLWE noise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Parameters {
    spec: ParameterSpec,
    pbs_kind: PbsKind,
}

/// tfhe-rs 1.8's `PARAM_MESSAGE_2_CARRY_2_KS_PBS_TUNIFORM_2M128` (the default
/// `PARAM_MESSAGE_2_CARRY_2`; its numbers are those of `V1_4_...` in tfhe-rs's source, which
/// 1.8 re-exports): `n = 918`, `k = 1`, `N = 2048`, LWE t-uniform bound `2^45`, GLWE
/// t-uniform bound `2^17`, PBS decomposition `2^23` x 1, key-switch decomposition `2^4` x 4,
/// `p = 16` (2 bits of message and 2 of carry), the centered-mean modulus switch. tfhe-rs
/// states its failure probability as `2^-129.581` ([`Parameters::log2_failure_probability`]),
/// for the set run with that switch.
pub const PARAM_MESSAGE_2_CARRY_2: Parameters = Parameters {
    spec: ParameterSpec {
        lwe_dimension: LweDimension(918),
        glwe_dimension: GlweDimension(1),
        polynomial_size: PolynomialSize(2048),
        lwe_noise: NoiseDistribution::TUniform { bound_log2: 45 },
        glwe_noise: NoiseDistribution::TUniform { bound_log2: 17 },
        pbs_decomposition: DecompositionParams {
            base_log: DecompositionBaseLog(23),
            level_count: DecompositionLevelCount(1),
        },
        ks_decomposition: DecompositionParams {
            base_log: DecompositionBaseLog(4),
            level_count: DecompositionLevelCount(4),
        },
        plaintext_modulus: 16,
        modulus_switch: ModulusSwitchType::CenteredMeanNoiseReduction,
    },
    pbs_kind: PbsKind::Classic,
};

/// A small, **insecure** set for tests and examples: `n = 256`, `k = 1`, `N = 1024`, PBS
/// `2^23` x 1, key switch `2^4` x 4, Gaussian noise with `sigma_lwe = 2^-30` and
/// `sigma_glwe = 2^-50` (fractions of the torus), `p = 16`, the centered-mean modulus switch
/// (as the standard set).
pub const PARAM_TEST_INSECURE: Parameters = Parameters {
    spec: ParameterSpec {
        lwe_dimension: LweDimension(256),
        glwe_dimension: GlweDimension(1),
        polynomial_size: PolynomialSize(1024),
        lwe_noise: NoiseDistribution::Gaussian {
            std: 1.0 / (1u64 << 30) as f64,
        },
        glwe_noise: NoiseDistribution::Gaussian {
            std: 1.0 / (1u64 << 50) as f64,
        },
        pbs_decomposition: DecompositionParams {
            base_log: DecompositionBaseLog(23),
            level_count: DecompositionLevelCount(1),
        },
        ks_decomposition: DecompositionParams {
            base_log: DecompositionBaseLog(4),
            level_count: DecompositionLevelCount(4),
        },
        plaintext_modulus: 16,
        modulus_switch: ModulusSwitchType::CenteredMeanNoiseReduction,
    },
    pbs_kind: PbsKind::Classic,
};

/// tfhe-rs 1.8's `PARAM_GPU_MULTI_BIT_GROUP_4_MESSAGE_2_CARRY_2_KS_PBS_TUNIFORM_2M128` (its
/// numbers are those of `V1_1_...` in tfhe-rs's source, which 1.8 re-exports): multi-bit with
/// `g = 4`, `n = 920`, `k = 1`, `N = 2048`, LWE t-uniform bound `2^45`, GLWE t-uniform bound
/// `2^17`, PBS decomposition `2^22` x 1, key-switch decomposition `2^3` x 5, `p = 16`, the
/// standard modulus switch. tfhe-rs states its failure probability as `2^-134.345`.
pub const PARAM_GPU_MULTI_BIT_GROUP_4_MESSAGE_2_CARRY_2: Parameters = Parameters {
    spec: ParameterSpec {
        lwe_dimension: LweDimension(920),
        glwe_dimension: GlweDimension(1),
        polynomial_size: PolynomialSize(2048),
        lwe_noise: NoiseDistribution::TUniform { bound_log2: 45 },
        glwe_noise: NoiseDistribution::TUniform { bound_log2: 17 },
        pbs_decomposition: DecompositionParams {
            base_log: DecompositionBaseLog(22),
            level_count: DecompositionLevelCount(1),
        },
        ks_decomposition: DecompositionParams {
            base_log: DecompositionBaseLog(3),
            level_count: DecompositionLevelCount(5),
        },
        plaintext_modulus: 16,
        modulus_switch: ModulusSwitchType::Standard,
    },
    pbs_kind: PbsKind::MultiBit(GroupingFactor(4)),
};

/// tfhe-rs 1.8's `PARAM_GPU_MULTI_BIT_GROUP_3_MESSAGE_2_CARRY_2_KS_PBS_TUNIFORM_2M128` (the
/// numbers of `V1_1_...`): multi-bit with `g = 3`, `n = 879`, `k = 1`, `N = 2048`, LWE
/// t-uniform bound `2^46`, GLWE t-uniform bound `2^17`, PBS decomposition `2^14` x 2, key-switch
/// decomposition `2^2` x 8, `p = 16`, the standard modulus switch. tfhe-rs states its failure
/// probability as `2^-128.29`.
pub const PARAM_GPU_MULTI_BIT_GROUP_3_MESSAGE_2_CARRY_2: Parameters = Parameters {
    spec: ParameterSpec {
        lwe_dimension: LweDimension(879),
        glwe_dimension: GlweDimension(1),
        polynomial_size: PolynomialSize(2048),
        lwe_noise: NoiseDistribution::TUniform { bound_log2: 46 },
        glwe_noise: NoiseDistribution::TUniform { bound_log2: 17 },
        pbs_decomposition: DecompositionParams {
            base_log: DecompositionBaseLog(14),
            level_count: DecompositionLevelCount(2),
        },
        ks_decomposition: DecompositionParams {
            base_log: DecompositionBaseLog(2),
            level_count: DecompositionLevelCount(8),
        },
        plaintext_modulus: 16,
        modulus_switch: ModulusSwitchType::Standard,
    },
    pbs_kind: PbsKind::MultiBit(GroupingFactor(3)),
};

/// The smallest polynomial size [`Parameters::new`] accepts.
pub const MIN_POLYNOMIAL_SIZE: usize = 512;
/// The largest polynomial size [`Parameters::new`] accepts.
pub const MAX_POLYNOMIAL_SIZE: usize = 8192;
/// The largest small-key dimension `n` [`Parameters::new`] accepts: far above the sets in use
/// (tfhe-rs's are near 1,000), low enough that a set's keys cannot declare a size near
/// `2^64` words (key generation allocates them).
pub const MAX_LWE_DIMENSION: usize = 1 << 16;
/// The largest big-key dimension `k N` [`Parameters::new`] accepts (as
/// [`MAX_LWE_DIMENSION`]: far above the sets in use, which have `k N` of 2,048 or 4,096).
pub const MAX_BIG_LWE_DIMENSION: usize = 1 << 16;

impl Parameters {
    /// Checks a caller-defined set.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] naming the first field that is out of range: `N` not a power
    /// of two in `[512, 8192]`, `k = 0` or `kN` above [`MAX_BIG_LWE_DIMENSION`], `n = 0` or
    /// above [`MAX_LWE_DIMENSION`], a Gaussian std that is not finite in `[0, 1/4]`, a
    /// t-uniform bound above `2^62`, or `p` not a power of two in `[2, N]`.
    pub fn new(spec: ParameterSpec) -> Result<Self, Error> {
        let n = spec.polynomial_size.0;
        if !n.is_power_of_two() || !(MIN_POLYNOMIAL_SIZE..=MAX_POLYNOMIAL_SIZE).contains(&n) {
            return Err(Error::InvalidParameter {
                name: "polynomial_size",
                reason: format!(
                    "N = {n} must be a power of two from {MIN_POLYNOMIAL_SIZE} to \
                     {MAX_POLYNOMIAL_SIZE}"
                ),
            });
        }
        if spec.glwe_dimension.0 == 0 {
            return Err(Error::InvalidParameter {
                name: "glwe_dimension",
                reason: "k must be at least 1".into(),
            });
        }
        if spec
            .glwe_dimension
            .0
            .checked_mul(n)
            .is_none_or(|kn| kn > MAX_BIG_LWE_DIMENSION)
        {
            return Err(Error::InvalidParameter {
                name: "glwe_dimension",
                reason: format!(
                    "k = {} is too large: k N must be at most {MAX_BIG_LWE_DIMENSION}",
                    spec.glwe_dimension.0
                ),
            });
        }
        if !(1..=MAX_LWE_DIMENSION).contains(&spec.lwe_dimension.0) {
            return Err(Error::InvalidParameter {
                name: "lwe_dimension",
                reason: format!(
                    "n = {} must be from 1 to {MAX_LWE_DIMENSION}",
                    spec.lwe_dimension.0
                ),
            });
        }
        spec.lwe_noise.validate("lwe_noise")?;
        spec.glwe_noise.validate("glwe_noise")?;
        let p = spec.plaintext_modulus;
        if !p.is_power_of_two() || p < 2 || p > n as u64 {
            return Err(Error::InvalidParameter {
                name: "plaintext_modulus",
                reason: format!("p = {p} must be a power of two from 2 to N = {n}"),
            });
        }
        Ok(Self {
            spec,
            pbs_kind: PbsKind::Classic,
        })
    }

    /// Checks a caller-defined multi-bit set: as [`Parameters::new`], and also `g` in
    /// `{2, 3, 4}`, `n` a multiple of `g`, and the standard modulus switch (tfhe-rs's multi-bit
    /// PBS switches each group's sums of mask words, with plain rounding).
    ///
    /// # Errors
    ///
    /// As [`Parameters::new`], and [`Error::InvalidParameter`] naming `grouping_factor`,
    /// `lwe_dimension` or `modulus_switch` for the checks above.
    pub fn new_multi_bit(
        spec: ParameterSpec,
        grouping_factor: GroupingFactor,
    ) -> Result<Self, Error> {
        let classic = Self::new(spec)?;
        grouping_factor.groups(spec.lwe_dimension)?;
        if spec.modulus_switch != ModulusSwitchType::Standard {
            return Err(Error::InvalidParameter {
                name: "modulus_switch",
                reason: "a multi-bit bootstrap switches with ModulusSwitchType::Standard".into(),
            });
        }
        Ok(Self {
            pbs_kind: PbsKind::MultiBit(grouping_factor),
            ..classic
        })
    }

    /// The fields of this set.
    #[must_use]
    pub const fn spec(&self) -> &ParameterSpec {
        &self.spec
    }

    /// `n`.
    #[must_use]
    pub const fn lwe_dimension(&self) -> LweDimension {
        self.spec.lwe_dimension
    }

    /// `k`.
    #[must_use]
    pub const fn glwe_dimension(&self) -> GlweDimension {
        self.spec.glwe_dimension
    }

    /// `N`.
    #[must_use]
    pub const fn polynomial_size(&self) -> PolynomialSize {
        self.spec.polynomial_size
    }

    /// `kN`: the dimension of the big LWE key (the GLWE key flattened).
    #[must_use]
    pub const fn big_lwe_dimension(&self) -> LweDimension {
        LweDimension(self.spec.glwe_dimension.0 * self.spec.polynomial_size.0)
    }

    /// Noise under the small LWE key.
    #[must_use]
    pub const fn lwe_noise(&self) -> NoiseDistribution {
        self.spec.lwe_noise
    }

    /// Noise under the GLWE key.
    #[must_use]
    pub const fn glwe_noise(&self) -> NoiseDistribution {
        self.spec.glwe_noise
    }

    /// The blind rotation's decomposition.
    #[must_use]
    pub const fn pbs_decomposition(&self) -> DecompositionParams {
        self.spec.pbs_decomposition
    }

    /// The key switch's decomposition.
    #[must_use]
    pub const fn ks_decomposition(&self) -> DecompositionParams {
        self.spec.ks_decomposition
    }

    /// `p`.
    #[must_use]
    pub const fn plaintext_modulus(&self) -> u64 {
        self.spec.plaintext_modulus
    }

    /// `delta = 2^63 / p`: the scaling of a message (one bit of padding above it).
    #[must_use]
    pub const fn delta(&self) -> u64 {
        (1u64 << 63) / self.spec.plaintext_modulus
    }

    /// How the bootstrap switches its input to `2N`.
    #[must_use]
    pub const fn modulus_switch(&self) -> ModulusSwitchType {
        self.spec.modulus_switch
    }

    /// Classic or multi-bit (with its grouping factor).
    #[must_use]
    pub const fn pbs_kind(&self) -> PbsKind {
        self.pbs_kind
    }

    /// `log2` of the failure probability of one bootstrap as tfhe-rs states it for this set,
    /// run as it is here (its `log2_p_fail`), or `None` for a set tfhe-rs does not define
    /// (this crate computes none of its own). The tests measure the bootstrap's output noise
    /// against tfhe-rs's formulas: equal for the classic set, and below them for the multi-bit
    /// sets (whose key bundles are built exactly here), so the stated figure holds as a bound.
    #[must_use]
    pub fn log2_failure_probability(&self) -> Option<f64> {
        [
            (PARAM_MESSAGE_2_CARRY_2, -129.581),
            (PARAM_GPU_MULTI_BIT_GROUP_4_MESSAGE_2_CARRY_2, -134.345),
            (PARAM_GPU_MULTI_BIT_GROUP_3_MESSAGE_2_CARRY_2, -128.29),
        ]
        .into_iter()
        .find_map(|(set, log2)| (*self == set).then_some(log2))
    }
}
