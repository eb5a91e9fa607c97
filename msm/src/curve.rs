//! The curve groups an MSM runs over: [`MsmCurve`], implemented for the G1 and G2 groups of
//! BLS12-381 and BN254 (arkworks 0.5 short Weierstrass configurations).

use ark_ec::short_weierstrass::SWCurveConfig;
use ark_ff::{BigInt, Fp, FpConfig, PrimeField, QuadExtConfig, QuadExtField};

/// A curve group the backends take: arkworks' short Weierstrass configuration of one of
/// `ark_bls12_381::{g1, g2}::Config` and `ark_bn254::{g1, g2}::Config`.
///
/// Bases are `ark_ec::short_weierstrass::Affine<C>` (`G1Affine`, `G2Affine` of either
/// crate), scalars `C::ScalarField` (the curve's `Fr`), sums `Projective<C>`. The trait is
/// sealed: its hidden methods give the backends the scalars' limbs and a fast comparison of
/// coordinates.
pub trait MsmCurve: SWCurveConfig + sealed::Curve {
    /// The group's name in messages ("BLS12-381 G1").
    const NAME: &'static str;
}

pub(crate) mod sealed {
    use ark_ec::short_weierstrass::SWCurveConfig;
    use ark_ff::BigInt;

    /// What the backends need of a curve beyond arkworks' traits.
    pub trait Curve: SWCurveConfig {
        /// The scalar's canonical value (out of Montgomery form) as four 64-bit limbs.
        fn scalar_limbs(scalar: &Self::ScalarField) -> BigInt<4>;

        /// Whether two coordinates are equal, limb by limb without branches (the derived
        /// comparison calls `memcmp`, which shows in profiles of the bucket additions).
        fn coordinates_equal(a: &Self::BaseField, b: &Self::BaseField) -> bool;
    }
}

/// Field elements compared limb by limb.
trait LimbEq {
    /// Whether `self` and `other` have the same limbs (both are in Montgomery form, so the
    /// same limbs mean the same element).
    fn limb_eq(&self, other: &Self) -> bool;
}

impl<P: FpConfig<N>, const N: usize> LimbEq for Fp<P, N> {
    #[inline(always)]
    fn limb_eq(&self, other: &Self) -> bool {
        self.0
            .0
            .iter()
            .zip(&other.0.0)
            .fold(0, |diff, (x, y)| diff | (x ^ y))
            == 0
    }
}

impl<P: QuadExtConfig> LimbEq for QuadExtField<P>
where
    P::BaseField: LimbEq,
{
    #[inline(always)]
    fn limb_eq(&self, other: &Self) -> bool {
        // `&` rather than `&&`: no branch between the halves.
        self.c0.limb_eq(&other.c0) & self.c1.limb_eq(&other.c1)
    }
}

/// Implements [`MsmCurve`] for arkworks configurations whose scalars have four limbs.
macro_rules! msm_curves {
    ($($config:ty => $name:literal),* $(,)?) => {$(
        impl MsmCurve for $config {
            const NAME: &'static str = $name;
        }

        impl sealed::Curve for $config {
            #[inline]
            fn scalar_limbs(scalar: &Self::ScalarField) -> BigInt<4> {
                scalar.into_bigint()
            }

            #[inline(always)]
            fn coordinates_equal(a: &Self::BaseField, b: &Self::BaseField) -> bool {
                a.limb_eq(b)
            }
        }
    )*};
}

msm_curves! {
    ark_bls12_381::g1::Config => "BLS12-381 G1",
    ark_bls12_381::g2::Config => "BLS12-381 G2",
    ark_bn254::g1::Config => "BN254 G1",
    ark_bn254::g2::Config => "BN254 G2",
}
