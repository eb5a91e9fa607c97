//! Bucket accumulation by batch-affine additions, and bucket reduction by running sums.
//!
//! The caller has sorted the nonzero digits of a group of windows by bucket key
//! (`window * buckets + magnitude - 1`), each entry naming a base and a sign. A task takes a
//! contiguous range of that sorted list, which may start and end inside a bucket:
//!
//! 1. it gathers the signed bases of its range into affine scratch points, so that each
//!    bucket's points are a contiguous segment;
//! 2. it halves every segment per round by adding neighbouring points in affine coordinates:
//!    all additions of a round are independent, so Montgomery's trick shares one field
//!    inversion among all of them (about 5 multiplications and a squaring per addition,
//!    against 7 multiplications and 4 squarings for a mixed Jacobian addition). `P + P` is a
//!    doubling (denominator `2y`), `P + (-P)` and anything plus infinity need no inversion;
//! 3. once a round would have too few additions to pay for its inversion, the points left in
//!    each bucket are added into the running sum with mixed additions, and the task returns
//!    `sum_m m * B_m` for each window it touched: running sums from its top bucket down, gaps
//!    of empty buckets multiplied in by double-and-add.
//!
//! A bucket split between two tasks is summed in parts; `sum_m m * B_m` is linear in the
//! buckets, so the parts add up to the whole.

use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering};

use ark_ec::AdditiveGroup;
use ark_ec::short_weierstrass::{Affine, Projective, SWCurveConfig};
use ark_ff::{Field, Zero};

use super::try_vec_with_capacity;
use crate::curve::MsmCurve;
use crate::error::Error;

/// A round of batch-affine additions runs only when it has at least this many additions.
/// Below, its one inversion (about 11 us, some 350 multiplications, on the machine of the
/// window table) costs about what the mixed additions it saves would; 16 to 64 measure alike
/// (BLS12-381 G1; in G2 the ratio of an inversion to an addition is smaller still).
const MIN_PAIRS_PER_ROUND: usize = 32;

/// Entries sorted by bucket key for a group of consecutive windows.
pub(crate) struct SortedDigits<'a> {
    /// `index << 1 | negative` for each nonzero digit, sorted by key.
    pub(crate) entries: &'a [AtomicU32],
    /// `offsets[key]..offsets[key + 1]` is the range of `entries` of bucket key `key`.
    pub(crate) offsets: &'a [u32],
    /// Buckets per window: `2^(c-1)`.
    pub(crate) buckets: usize,
    /// The window of key 0.
    pub(crate) first_window: usize,
}

/// The points of one bucket (or of the part of it in this task) in the scratch array.
#[derive(Debug, Clone, Copy)]
struct Segment {
    /// The bucket key: `window_in_group * buckets + magnitude - 1`.
    key: usize,
    /// First point in the scratch array.
    start: usize,
    /// Points left in the bucket.
    len: usize,
}

/// Adds up the entries `range` of `sorted` into buckets and reduces them: returns
/// `(window, sum_m m * B_m)` for each window the range touches, `B_m` being the sum of the
/// range's points in bucket `m` of that window.
pub(crate) fn reduce_range<C: MsmCurve>(
    bases: &[Affine<C>],
    sorted: &SortedDigits<'_>,
    range: Range<usize>,
) -> Result<Vec<(usize, Projective<C>)>, Error> {
    let points = bases.len();
    let mut scratch: Vec<Affine<C>> = try_vec_with_capacity(range.len(), points)?;
    scratch.extend(sorted.entries[range.clone()].iter().map(|entry| {
        let entry = entry.load(Ordering::Relaxed);
        let base = bases[(entry >> 1) as usize];
        if entry & 1 == 1 {
            Affine::new_unchecked(base.x, -base.y)
        } else {
            base
        }
    }));

    // The segments of the range, in key order.
    let keys = sorted.offsets.len() - 1;
    let mut key = sorted
        .offsets
        .partition_point(|&o| o as usize <= range.start)
        .saturating_sub(1);
    let mut segments: Vec<Segment> = try_vec_with_capacity(range.len().min(keys - key), points)?;
    while key < keys && (sorted.offsets[key] as usize) < range.end {
        let start = (sorted.offsets[key] as usize).max(range.start);
        let end = (sorted.offsets[key + 1] as usize).min(range.end);
        if end > start {
            segments.push(Segment {
                key,
                start: start - range.start,
                len: end - start,
            });
        }
        key += 1;
    }

    let mut denominators: Vec<C::BaseField> = try_vec_with_capacity(range.len() / 2, points)?;
    let mut inverses: Vec<C::BaseField> = try_vec_with_capacity(range.len() / 2, points)?;
    loop {
        let pairs: usize = segments.iter().map(|s| s.len / 2).sum();
        if pairs < MIN_PAIRS_PER_ROUND {
            break;
        }
        batch_add_round(
            &mut scratch,
            &mut segments,
            &mut denominators,
            &mut inverses,
        );
    }

    Ok(running_sums(&scratch, &segments, sorted))
}

/// How `a + b` is computed.
#[derive(Debug, Clone, Copy)]
enum Sum {
    /// Distinct x: the chord through `a` and `b`.
    Chord,
    /// `a = b`, not of order 2: the tangent at `a`.
    Tangent,
    /// Either point at infinity, or `a = -b`: no slope, no inversion.
    Trivial,
}

/// Which case `a + b` falls in.
#[inline(always)]
fn classify<C: MsmCurve>(a: &Affine<C>, b: &Affine<C>) -> Sum {
    let equal = C::coordinates_equal;
    if a.infinity || b.infinity {
        Sum::Trivial
    } else if !equal(&a.x, &b.x) {
        Sum::Chord
    } else if equal(&a.y, &b.y) && !equal(&a.y, &C::BaseField::ZERO) {
        Sum::Tangent
    } else {
        Sum::Trivial
    }
}

/// The denominator of the slope of `a + b` (1 when there is no slope).
#[inline(always)]
fn slope_denominator<C: MsmCurve>(a: &Affine<C>, b: &Affine<C>) -> C::BaseField {
    match classify(a, b) {
        Sum::Chord => b.x - a.x,
        Sum::Tangent => a.y.double(),
        Sum::Trivial => C::BaseField::ONE,
    }
}

/// `a + b` given the inverse of [`slope_denominator`]`(a, b)`.
#[inline(always)]
fn add_with_inverse<C: MsmCurve>(
    a: &Affine<C>,
    b: &Affine<C>,
    inverse: &C::BaseField,
) -> Affine<C> {
    let lambda = match classify(a, b) {
        Sum::Chord => (b.y - a.y) * inverse,
        Sum::Tangent => {
            // lambda = (3 x^2 + a) / 2y (a = 0 on the curves of this crate).
            let xx = a.x.square();
            let numerator = xx.double() + xx;
            if C::COEFF_A.is_zero() {
                numerator * inverse
            } else {
                (numerator + C::COEFF_A) * inverse
            }
        }
        Sum::Trivial if a.infinity => return *b,
        Sum::Trivial if b.infinity => return *a,
        Sum::Trivial => return Affine::identity(),
    };
    // With a.x == b.x for a doubling, both cases are x3 = lambda^2 - x1 - x2.
    let x = lambda.square() - a.x - b.x;
    let y = lambda * (a.x - x) - a.y;
    Affine::new_unchecked(x, y)
}

/// One round: in every segment of two or more points, point `i` becomes the sum of points
/// `2i` and `2i + 1` (an odd last point moves down unchanged), all slopes' inverses sharing
/// one field inversion.
fn batch_add_round<C: MsmCurve>(
    scratch: &mut [Affine<C>],
    segments: &mut [Segment],
    denominators: &mut Vec<C::BaseField>,
    inverses: &mut Vec<C::BaseField>,
) {
    // Prefix products: inverses[k] = d_0 * ... * d_(k-1) for now.
    denominators.clear();
    inverses.clear();
    let mut product = C::BaseField::ONE;
    for segment in segments.iter().filter(|s| s.len >= 2) {
        let points = &scratch[segment.start..segment.start + segment.len];
        for pair in points.chunks_exact(2) {
            let d = slope_denominator(&pair[0], &pair[1]);
            inverses.push(product);
            product *= d;
            denominators.push(d);
        }
    }
    // The product of nonzero field elements is nonzero, so it has an inverse.
    let mut inverse = product.inverse().unwrap_or(C::BaseField::ZERO);
    for (prefix, d) in inverses.iter_mut().zip(denominators.iter()).rev() {
        // inverse = 1 / (d_0 ... d_k) here; 1 / d_k = inverse * (d_0 ... d_(k-1)).
        let this = inverse * *prefix;
        inverse *= d;
        *prefix = this;
    }

    // Point i of a segment is written after points 2i and 2i + 1 are read, and no later
    // addition reads it: in-place, front to back.
    let mut inverses = inverses.iter();
    for segment in segments.iter_mut().filter(|s| s.len >= 2) {
        let half = segment.len / 2;
        for i in 0..half {
            let inverse = inverses.next().copied().unwrap_or(C::BaseField::ZERO);
            let at = segment.start + 2 * i;
            let sum = add_with_inverse(&scratch[at], &scratch[at + 1], &inverse);
            scratch[segment.start + i] = sum;
        }
        if segment.len % 2 == 1 {
            scratch[segment.start + half] = scratch[segment.start + segment.len - 1];
        }
        segment.len -= half;
    }
}

/// `k * p` for a small `k`, by double-and-add.
fn mul_small<C: SWCurveConfig>(p: &Projective<C>, k: usize) -> Projective<C> {
    let mut acc = Projective::zero();
    if p.is_zero() {
        return acc;
    }
    for bit in (0..usize::BITS - k.leading_zeros()).rev() {
        acc.double_in_place();
        if (k >> bit) & 1 == 1 {
            acc += p;
        }
    }
    acc
}

/// `(window, sum_m m * B_m)` for each window of the segments, which are in key order.
fn running_sums<C: MsmCurve>(
    scratch: &[Affine<C>],
    segments: &[Segment],
    sorted: &SortedDigits<'_>,
) -> Vec<(usize, Projective<C>)> {
    /// The running sum of one window, walked from its top bucket down.
    struct Walk<C: SWCurveConfig> {
        window: usize,
        /// The sum of the buckets at and above `bucket`.
        running: Projective<C>,
        /// `sum_m (m - bucket + 1) * B_m` over the buckets at and above `bucket`.
        total: Projective<C>,
        /// The lowest bucket walked so far (magnitudes start at 1).
        bucket: usize,
    }
    impl<C: SWCurveConfig> Walk<C> {
        /// `sum_m m * B_m`: the empty buckets below `bucket` add `bucket - 1` more runs.
        fn finish(self) -> (usize, Projective<C>) {
            (
                self.window,
                self.total + mul_small(&self.running, self.bucket - 1),
            )
        }
    }

    let mut sums = Vec::new();
    let mut walk: Option<Walk<C>> = None;
    for segment in segments.iter().rev() {
        let window = sorted.first_window + segment.key / sorted.buckets;
        let bucket = segment.key % sorted.buckets + 1;
        let mut current = match walk.take() {
            Some(w) if w.window == window => w,
            other => {
                if let Some(done) = other {
                    sums.push(done.finish());
                }
                Walk {
                    window,
                    running: Projective::zero(),
                    total: Projective::zero(),
                    bucket: bucket + 1,
                }
            }
        };
        // Empty buckets between the last one walked and this one each add the running sum.
        let gap = current.bucket - bucket - 1;
        if gap > 0 {
            current.total += mul_small(&current.running, gap);
        }
        for point in &scratch[segment.start..segment.start + segment.len] {
            current.running += point;
        }
        current.total += &current.running;
        current.bucket = bucket;
        walk = Some(current);
    }
    if let Some(done) = walk {
        sums.push(done.finish());
    }
    sums
}
