//! Points and field elements as the kernels store them, for any group: coordinates keep
//! arkworks' Montgomery-form limbs (`Fp` as its u64 limbs, `Fp2` as `c0`'s limbs then `c1`'s,
//! the layout of `Fp<P>` and `Fp2<P>` in field.cuh and fp2.cuh), so they cross to the device
//! without conversion.

use std::fmt::Debug;
use std::marker::PhantomData;

use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ff::{BigInt, Field, Fp, FpConfig, QuadExtConfig, QuadExtField, Zero};
use kernels::{DeviceRepr, ValidAsZeroBits};

use crate::MsmCurve;

/// One coordinate's limbs on the device: `[u64; N]` for `Fp`, `[[u64; N]; 2]` for `Fp2`.
pub trait Coordinate: Copy + Debug + Default + PartialEq + Send + Sync + 'static {}

impl<T: Copy + Debug + Default + PartialEq + Send + Sync + 'static> Coordinate for T {}

/// A field whose elements the kernels take as [`DeviceField::Limbs`].
pub trait DeviceField: Field {
    /// The element's limbs in the kernels' layout.
    type Limbs: Coordinate;

    /// The element's Montgomery-form limbs.
    fn to_limbs(&self) -> Self::Limbs;

    /// The element with these Montgomery-form limbs (as the kernels leave them: canonical).
    fn from_limbs(limbs: Self::Limbs) -> Self;
}

impl<P: FpConfig<N>, const N: usize> DeviceField for Fp<P, N>
where
    [u64; N]: Default,
{
    type Limbs = [u64; N];

    fn to_limbs(&self) -> Self::Limbs {
        self.0.0
    }

    fn from_limbs(limbs: Self::Limbs) -> Self {
        Fp(BigInt(limbs), PhantomData)
    }
}

impl<P: QuadExtConfig> DeviceField for QuadExtField<P>
where
    P::BaseField: DeviceField,
{
    type Limbs = [<P::BaseField as DeviceField>::Limbs; 2];

    fn to_limbs(&self) -> Self::Limbs {
        [self.c0.to_limbs(), self.c1.to_limbs()]
    }

    fn from_limbs([c0, c1]: Self::Limbs) -> Self {
        QuadExtField::new(P::BaseField::from_limbs(c0), P::BaseField::from_limbs(c1))
    }
}

/// An affine point as the kernels store it (`AffinePoint` in curve.cuh); infinity is `(0, 0)`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct DeviceAffine<L> {
    x: L,
    y: L,
}

/// A point in XYZZ coordinates as the kernels store it (`XyzzPoint` in curve.cuh); infinity
/// has `zz = 0`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct DeviceXyzz<L> {
    x: L,
    y: L,
    zz: L,
    zzz: L,
}

// SAFETY: `#[repr(C)]` structs of u64 limbs (`Coordinate` is only ever u64 arrays: see
// `DeviceField`), laid out as `AffinePoint` and `XyzzPoint` in curve.cuh; the kernels accept
// every bit pattern they are given from these types.
unsafe impl<L: Coordinate> DeviceRepr for DeviceAffine<L> {}
// SAFETY: all-zero bits are the point at infinity.
unsafe impl<L: Coordinate> ValidAsZeroBits for DeviceAffine<L> {}
// SAFETY: as above.
unsafe impl<L: Coordinate> DeviceRepr for DeviceXyzz<L> {}
// SAFETY: all-zero bits are a point with `zz = 0`: infinity.
unsafe impl<L: Coordinate> ValidAsZeroBits for DeviceXyzz<L> {}

impl<L: Coordinate> DeviceAffine<L> {
    /// The kernels' form of an arkworks point of group `C`.
    pub(super) fn from_arkworks<C: MsmCurve<Coordinate = L>>(point: &Affine<C>) -> Self {
        if point.infinity {
            return Self::default();
        }
        Self {
            x: C::to_device(&point.x),
            y: C::to_device(&point.y),
        }
    }
}

impl<L: Coordinate> DeviceXyzz<L> {
    /// The point as arkworks' projective type (`x = X / ZZ`, `y = Y / ZZZ`).
    pub(super) fn to_arkworks<C: MsmCurve<Coordinate = L>>(self) -> Projective<C> {
        let (zz, zzz) = (C::from_device(self.zz), C::from_device(self.zzz));
        let Some(zzz_inv) = zzz.inverse() else {
            return Projective::zero();
        };
        // ZZ^3 = ZZZ^2, so ZZ^-1 = ZZZ^-2 * ZZ^2.
        let zz_inv = zzz_inv.square() * zz.square();
        let x = C::from_device(self.x) * zz_inv;
        let y = C::from_device(self.y) * zzz_inv;
        Affine::new_unchecked(x, y).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ec::{AffineRepr, CurveGroup, PrimeGroup};
    use ark_ff::UniformRand;
    use ark_std::rand::{SeedableRng, rngs::StdRng};

    /// In group `C`: the device layout has `coordinate_bytes` per coordinate and no padding,
    /// limbs round-trip, `Fp2` puts `c0` first, infinity is all zeros, and an XYZZ point
    /// `(x z^2, y z^3, z^2, z^3)` in the device layout reads back as `(x, y)`.
    fn check<C: MsmCurve>(coordinate_bytes: usize) {
        let coordinate = size_of::<C::Coordinate>();
        assert_eq!(coordinate, coordinate_bytes, "{}", C::NAME);
        assert_eq!(size_of::<DeviceAffine<C::Coordinate>>(), 2 * coordinate);
        assert_eq!(size_of::<DeviceXyzz<C::Coordinate>>(), 4 * coordinate);
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..20 {
            let point =
                (Projective::<C>::generator() * C::ScalarField::rand(&mut rng)).into_affine();
            let (x, y) = point.xy().unwrap();
            assert_eq!(C::from_device(C::to_device(&x)), x, "{}", C::NAME);
            let device = DeviceAffine::from_arkworks(&point);
            assert_eq!((device.x, device.y), (C::to_device(&x), C::to_device(&y)));
            let z = C::BaseField::rand(&mut rng);
            let (zz, zzz) = (z.square(), z.square() * z);
            let xyzz = DeviceXyzz {
                x: C::to_device(&(x * zz)),
                y: C::to_device(&(y * zzz)),
                zz: C::to_device(&zz),
                zzz: C::to_device(&zzz),
            };
            assert_eq!(xyzz.to_arkworks::<C>(), point.into_group(), "{}", C::NAME);
        }
        let infinity = DeviceAffine::from_arkworks(&Affine::<C>::identity());
        let zero = C::to_device(&C::BaseField::zero());
        assert_eq!((infinity.x, infinity.y), (zero, zero));
        let xyzz_infinity = DeviceXyzz::<C::Coordinate>::default();
        assert!(xyzz_infinity.to_arkworks::<C>().is_zero());
    }

    #[test]
    fn layouts_and_conversions_in_every_group() {
        check::<ark_bls12_381::g1::Config>(48);
        check::<ark_bls12_381::g2::Config>(96);
        check::<ark_bn254::g1::Config>(32);
        check::<ark_bn254::g2::Config>(64);
    }

    #[test]
    fn fp2_limbs_are_c0_then_c1() {
        let a = ark_bn254::Fq2::new(ark_bn254::Fq::from(3u64), ark_bn254::Fq::from(5u64));
        let [c0, c1] = a.to_limbs();
        assert_eq!(c0, ark_bn254::Fq::from(3u64).0.0);
        assert_eq!(c1, ark_bn254::Fq::from(5u64).0.0);
        assert_eq!(ark_bn254::Fq2::from_limbs([c0, c1]), a);
    }
}
