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
pub trait Coordinate: Copy + Debug + Default + Send + Sync + 'static {}

impl<T: Copy + Debug + Default + Send + Sync + 'static> Coordinate for T {}

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
