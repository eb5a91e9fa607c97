//! Signed-digit recoding of scalars into windows of `c` bits.
//!
//! A scalar `s < 2^bits` (canonical, out of Montgomery form) is written as
//! `s = sum_w d_w * 2^(w c)` with digits `d_w` in `(-2^(c-1), 2^(c-1)]`: window `w` holds
//! `v = bits(s, w c .. w c + c) + carry`; if `v > 2^(c-1)` the digit is `v - 2^c` and a carry
//! of one goes into the next window. One window more than the bits need absorbs the last
//! carry (see [`window_count`]), so a digit of magnitude `m` selects bucket `m` of
//! `2^(c-1)` buckets and its sign says whether to add the base or its negation.

use ark_ff::BigInt;

/// The number of signed windows of `c` bits for scalars below `2^bits` (`bits` is 255 for
/// BLS12-381's `r`, 254 for BN254's).
///
/// `bits / c + 1`: when `c` does not divide `bits` this is `ceil(bits / c)` and the top
/// window holds fewer than `c` bits, so it cannot carry out; when it does, the extra window
/// takes the carry of the top full one.
pub(crate) fn window_count(c: u32, bits: u32) -> usize {
    (bits / c + 1) as usize
}

/// The unsigned `c`-bit window `w` of `limbs` (bits `w c .. w c + c`).
#[inline]
fn raw_window(limbs: &[u64; 4], w: usize, c: u32) -> u64 {
    let bit = w * c as usize;
    let limb = bit / 64;
    if limb >= 4 {
        return 0;
    }
    let low = u128::from(limbs[limb]);
    let high = limbs.get(limb + 1).map_or(0, |&h| u128::from(h) << 64);
    // Truncation is intended: the mask keeps `c <= 20` bits.
    (((low | high) >> (bit % 64)) as u64) & ((1u64 << c) - 1)
}

/// The signed digits of windows `first..first + count` of one scalar.
///
/// `carry` is the carry into window `first` and is updated to the carry out of the last
/// window produced, so successive calls walk the windows of a scalar in order.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Recoder {
    /// Window width in bits.
    c: u32,
    /// `2^(c-1)`, the largest digit.
    half: u64,
}

impl Recoder {
    /// A recoder for windows of `c` bits.
    pub(crate) fn new(c: u32) -> Self {
        Recoder {
            c,
            half: 1 << (c - 1),
        }
    }

    /// The digit of window `w` given the carry into it; updates `carry` to the carry out.
    ///
    /// The digit is returned as a magnitude in `0..=2^(c-1)` and a sign (`true`: negative).
    #[inline]
    pub(crate) fn digit(&self, scalar: &BigInt<4>, w: usize, carry: &mut bool) -> (u32, bool) {
        let v = raw_window(&scalar.0, w, self.c) + u64::from(*carry);
        // Magnitudes fit in u32: they are at most 2^(c-1) with c <= 20.
        if v > self.half {
            *carry = true;
            (((1u64 << self.c) - v) as u32, true)
        } else {
            *carry = false;
            (v as u32, false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::{BigInteger, PrimeField};

    /// Rebuilds the scalar from its digits as a signed big integer (two's complement over
    /// 320 bits is more than enough) and compares.
    fn check(scalar: BigInt<4>, c: u32, bits: u32) {
        let recoder = Recoder::new(c);
        let mut carry = false;
        let mut acc = [0i128; 6];
        let windows = window_count(c, bits);
        let mut value: Vec<i128> = Vec::with_capacity(windows);
        for w in 0..windows {
            let (m, neg) = recoder.digit(&scalar, w, &mut carry);
            assert!(m <= 1 << (c - 1), "digit {m} too large for c = {c}");
            value.push(if neg { -i128::from(m) } else { i128::from(m) });
        }
        assert!(!carry, "carry out of the top window for c = {c}");
        // Horner in base 2^c on 64-bit limbs with signed carries.
        for &d in value.iter().rev() {
            // acc = acc * 2^c + d
            let mut carry_in: i128 = d;
            for limb in acc.iter_mut() {
                let t = (*limb << c) + carry_in;
                *limb = t & ((1i128 << 64) - 1);
                carry_in = t >> 64;
            }
            assert_eq!(carry_in, 0);
        }
        let limbs: Vec<u64> = acc.iter().map(|&l| l as u64).collect();
        assert_eq!(&limbs[..4], &scalar.0[..], "c = {c}");
        assert_eq!(&limbs[4..], &[0, 0], "c = {c}");
    }

    /// Zero, one, `r - 1`, `r - 2` and the top of the range below `2^bits` with the scalar
    /// field `F`, then every power of two below `2^bits`, at every window width.
    fn check_field<F: PrimeField<BigInt = BigInt<4>>>(extra: &[BigInt<4>]) {
        let bits = F::MODULUS_BIT_SIZE;
        let mut r_minus_two = F::MODULUS;
        r_minus_two.sub_with_borrow(&BigInt::from(2u64));
        let mut top = BigInt::<4>::from(1u64) << bits;
        top.sub_with_borrow(&BigInt::from(1u64));
        let mut edge = vec![
            BigInt::<4>::zero(),
            BigInt::from(1u64),
            (-F::ONE).into_bigint(),
            r_minus_two,
            top,
        ];
        edge.extend_from_slice(extra);
        for c in 1..=20 {
            for &s in &edge {
                check(s, c, bits);
            }
            for k in 0..bits {
                check(BigInt::<4>::from(1u64) << k, c, bits);
            }
        }
    }

    #[test]
    fn digits_rebuild_bls12_381_scalars() {
        check_field::<ark_bls12_381::Fr>(&[BigInt([
            0x8888_8888_8888_8888,
            0x8888_8888_8888_8888,
            0x8888_8888_8888_8888,
            0x0888_8888_8888_8888,
        ])]);
    }

    #[test]
    fn digits_rebuild_bn254_scalars() {
        check_field::<ark_bn254::Fr>(&[BigInt([
            0x8888_8888_8888_8888,
            0x8888_8888_8888_8888,
            0x8888_8888_8888_8888,
            0x2888_8888_8888_8888,
        ])]);
    }
}
