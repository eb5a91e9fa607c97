//! The curve groups an MSM runs over: [`MsmCurve`], implemented for the G1 and G2 groups of
//! BLS12-381 and BN254 (arkworks 0.5 short Weierstrass configurations).

use ark_ec::short_weierstrass::SWCurveConfig;
use ark_ff::{BigInt, Fp, FpConfig, PrimeField, QuadExtConfig, QuadExtField};

/// A curve group the backends take: arkworks' short Weierstrass configuration of one of
/// `ark_bls12_381::{g1, g2}::Config` and `ark_bn254::{g1, g2}::Config`.
///
/// Bases are `ark_ec::short_weierstrass::Affine<C>` (`G1Affine`, `G2Affine` of either
/// crate), scalars `C::ScalarField` (the curve's `Fr`), sums `Projective<C>`. The trait is
/// sealed: its hidden items give the backends the scalars' limbs, a fast comparison of
/// coordinates and (with `cuda`) the device's layout of coordinates and the kernels' module.
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

        /// A coordinate's limbs as the kernels store them.
        #[cfg(feature = "cuda")]
        type Coordinate: crate::cuda::Coordinate;

        /// The kernels of this group.
        #[cfg(feature = "cuda")]
        const MODULE: kernels::source::Module;

        /// A coordinate in the kernels' layout (its Montgomery-form limbs).
        #[cfg(feature = "cuda")]
        fn to_device(coordinate: &Self::BaseField) -> Self::Coordinate;

        /// A coordinate from the kernels' layout.
        #[cfg(feature = "cuda")]
        fn from_device(limbs: Self::Coordinate) -> Self::BaseField;

        /// The scalar's Montgomery-form limbs (arkworks' representation), which the kernels
        /// take.
        #[cfg(feature = "cuda")]
        fn scalar_montgomery_limbs(scalar: &Self::ScalarField) -> [u64; 4];
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

/// Implements [`MsmCurve`] for arkworks configurations whose scalars have four limbs, with
/// the group's kernel module.
macro_rules! msm_curves {
    ($($config:ty => $name:literal, $module:ident),* $(,)?) => {$(
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

            #[cfg(feature = "cuda")]
            type Coordinate =
                <<$config as ark_ec::CurveConfig>::BaseField as crate::cuda::DeviceField>::Limbs;

            #[cfg(feature = "cuda")]
            const MODULE: kernels::source::Module = crate::source::$module;

            #[cfg(feature = "cuda")]
            #[inline]
            fn to_device(coordinate: &Self::BaseField) -> Self::Coordinate {
                crate::cuda::DeviceField::to_limbs(coordinate)
            }

            #[cfg(feature = "cuda")]
            #[inline]
            fn from_device(limbs: Self::Coordinate) -> Self::BaseField {
                crate::cuda::DeviceField::from_limbs(limbs)
            }

            #[cfg(feature = "cuda")]
            #[inline]
            fn scalar_montgomery_limbs(scalar: &Self::ScalarField) -> [u64; 4] {
                scalar.0.0
            }
        }
    )*};
}

msm_curves! {
    ark_bls12_381::g1::Config => "BLS12-381 G1", MSM_BLS12_381_G1,
    ark_bls12_381::g2::Config => "BLS12-381 G2", MSM_BLS12_381_G2,
    ark_bn254::g1::Config => "BN254 G1", MSM_BN254_G1,
    ark_bn254::g2::Config => "BN254 G2", MSM_BN254_G2,
}
