//! The CPU backend: Pippenger's bucket method with signed digits and batch-affine buckets.

mod buckets;
mod digits;

use std::sync::atomic::{AtomicU32, Ordering};

use ark_ec::AdditiveGroup;
use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ff::{BigInt, PrimeField, Zero};
use rayon::prelude::*;

use crate::curve::MsmCurve;
use crate::error::Error;
use crate::{MsmBackend, check_lengths};
use buckets::{SortedDigits, reduce_range};
use digits::{Recoder, window_count};

/// The widest window [`Cpu::with_window_bits`] accepts.
pub const MAX_WINDOW_BITS: u32 = 20;

/// Points per pass: entries name a point in 31 bits. Longer inputs are summed in passes.
const MAX_POINTS_PER_PASS: usize = 1 << 30;

/// Sorted digits held at once (4 bytes each): windows are sorted in groups of about this many
/// entries, so scratch memory stays near 64 MiB however large the input.
const GROUP_ENTRIES: usize = 1 << 24;

/// Bucket counters held at once by the parallel counting sort (4 bytes each): with wide
/// windows and many threads, fewer chunks of points are counted at a time.
const COUNTER_BUDGET: usize = 1 << 24;

/// Bucket tasks per rayon thread: several, so that work stealing evens out their lengths.
const TASKS_PER_THREAD: usize = 4;

/// At most this many digits per bucket task, so its scratch points (104 bytes each) stay a
/// few MiB.
const MAX_TASK_ENTRIES: usize = 1 << 14;

/// The CPU backend: our own Pippenger on all cores with rayon, for every [`MsmCurve`]
/// (BLS12-381 and BN254, G1 and G2).
///
/// # Algorithm
///
/// 1. Scalars leave Montgomery form (`into_bigint`) and are recoded into signed windows of
///    `c` bits, digits in `(-2^(c-1), 2^(c-1)]`, with one window more than the scalar field's
///    bits (255 for BLS12-381, 254 for BN254) need for the last carry. Zero scalars and bases at infinity produce no digits at all.
/// 2. The nonzero digits of a group of windows are counting-sorted by bucket key
///    (`window * 2^(c-1) + |digit| - 1`), in parallel over chunks of points. Each entry names
///    a base and a sign; a negative digit adds `-P`.
/// 3. The sorted list is cut into equal ranges, a few per thread; each range is one rayon
///    task, whatever buckets and windows it spans, so skewed scalars (all equal, all small)
///    keep every thread busy. A task gathers its signed bases and adds each bucket's points
///    pairwise in affine coordinates, round after round, all additions of a round sharing one
///    inversion (Montgomery's trick; in G2 the inversion is in `Fq2`, through one in `Fq`);
///    `P + P` is a doubling and `P + (-P)` the point at
///    infinity. When a round would have too few additions to pay for its inversion, the rest
///    goes into running sums with mixed additions (see the `buckets` module source for
///    details).
/// 4. Each window's `sum_m m * B_m` comes from running sums over its buckets, top down; the
///    windows are combined by `c` doublings each, from the top.
///
/// # Window table
///
/// `c` by the number of points `n` (measured on BLS12-381 G1 on 2 cores, used for every group: `examples/window_sweep.rs` times
/// every width at each size and prints the best):
///
/// | n from | 1 | 2^4 | 2^7 | 2^8 | 2^10 | 2^11 | 2^12 | 2^13 | 2^15 | 2^16 | 2^17 | 2^18 | 2^19 |
/// |--------|---|-----|-----|-----|------|------|------|------|------|------|------|------|------|
/// | c      | 3 | 4   | 5   | 6   | 7    | 8    | 9    | 10   | 11   | 12   | 13   | 14   | 16   |
///
/// (each column up to the next one). Widths of 16 bits give exactly 16 windows for the
/// 256 bits a signed recoding needs, which is why 16 beats 14 and 15 from 2^19 up; sizes
/// above 2^20 were not measured. The optimum is flat: the neighbouring widths are within a
/// few per cent at every size.
///
/// # Speed
///
/// The gain over arkworks' MSM (Jacobian buckets, one mixed addition per point and window)
/// is the bucket addition: about 5 multiplications and a squaring in batch-affine form,
/// measured at about 255 ns per addition against 455 ns for arkworks' mixed addition (one
/// core of the 2-core AMD EPYC virtual machine of the window table). On that machine the
/// criterion group `msm` measured this backend 1.5 to 1.65 times as fast as arkworks 0.5's
/// parallel `VariableBaseMSM::msm` at every size from 2^10 to 2^18 points.
///
/// ```
/// use ark_ec::{CurveGroup, PrimeGroup};
/// use msm::{Cpu, Fr, G1Projective, MsmBackend};
///
/// let g = G1Projective::generator().into_affine();
/// // (r - 1) * G + 1 * G is the point at infinity.
/// let sum = Cpu::new().msm(&[g, g], &[-Fr::from(1u64), Fr::from(1u64)])?;
/// assert_eq!(sum, G1Projective::default());
/// # Ok::<(), msm::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cpu {
    /// A fixed window width, or `None` for the table above.
    window_bits: Option<u32>,
}

impl Cpu {
    /// The CPU backend with the window table above.
    pub const fn new() -> Self {
        Cpu { window_bits: None }
    }

    /// The CPU backend with windows of `bits` bits at every size, to tune the table for
    /// another machine.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidWindow`] unless `1 <= bits <= MAX_WINDOW_BITS`.
    pub fn with_window_bits(bits: u32) -> Result<Self, Error> {
        if !(1..=MAX_WINDOW_BITS).contains(&bits) {
            return Err(Error::InvalidWindow {
                bits,
                max: MAX_WINDOW_BITS,
            });
        }
        Ok(Cpu {
            window_bits: Some(bits),
        })
    }

    /// A human-readable name: "cpu (N threads)", N being rayon's threads here.
    pub fn name(&self) -> String {
        format!("cpu ({} threads)", rayon::current_num_threads())
    }

    /// The window width used for an MSM of `points` points.
    pub fn window_bits(&self, points: usize) -> u32 {
        self.window_bits
            .unwrap_or_else(|| default_window_bits(points))
    }
}

/// The window table (see [`Cpu`]).
fn default_window_bits(points: usize) -> u32 {
    match points.max(1).ilog2() {
        0..=3 => 3,
        4..=6 => 4,
        7 => 5,
        8..=9 => 6,
        10 => 7,
        11 => 8,
        12 => 9,
        13..=14 => 10,
        15 => 11,
        16 => 12,
        17 => 13,
        18 => 14,
        _ => 16,
    }
}

impl<C: MsmCurve> MsmBackend<C> for Cpu {
    fn name(&self) -> String {
        Cpu::name(self)
    }

    fn msm(&self, bases: &[Affine<C>], scalars: &[C::ScalarField]) -> Result<Projective<C>, Error> {
        check_lengths(bases.len(), scalars.len())?;
        let mut sum = Projective::<C>::zero();
        for (bases, scalars) in bases
            .chunks(MAX_POINTS_PER_PASS)
            .zip(scalars.chunks(MAX_POINTS_PER_PASS))
        {
            let c = self.window_bits(bases.len());
            sum += pippenger(bases, scalars, c, GROUP_ENTRIES)?;
        }
        Ok(sum)
    }
}

/// A vector with room for `len` elements, or [`Error::OutOfMemory`].
pub(crate) fn try_vec_with_capacity<T>(len: usize, points: usize) -> Result<Vec<T>, Error> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Error::OutOfMemory {
        bytes: len.saturating_mul(size_of::<T>()),
        points,
    })?;
    Ok(v)
}

/// A vector of `len` copies of `value`, or [`Error::OutOfMemory`].
fn try_vec_filled<T: Clone>(len: usize, value: T, points: usize) -> Result<Vec<T>, Error> {
    let mut v = try_vec_with_capacity(len, points)?;
    v.resize(len, value);
    Ok(v)
}

/// The MSM of at most [`MAX_POINTS_PER_PASS`] points with windows of `c` bits, sorting the
/// digits of about `group_entries` (at least one window's) at a time.
fn pippenger<C: MsmCurve>(
    bases: &[Affine<C>],
    scalars: &[C::ScalarField],
    c: u32,
    group_entries: usize,
) -> Result<Projective<C>, Error> {
    let n = bases.len();
    // Out of Montgomery form; a base at infinity contributes nothing, like a zero scalar.
    let mut bigints: Vec<BigInt<4>> = try_vec_with_capacity(n, n)?;
    scalars
        .par_iter()
        .zip(bases)
        .map(|(s, b)| {
            if b.infinity {
                BigInt::zero()
            } else {
                C::scalar_limbs(s)
            }
        })
        .collect_into_vec(&mut bigints);

    let windows = window_count(c, C::ScalarField::MODULUS_BIT_SIZE);
    let mut carries = try_vec_filled(n, false, n)?;
    let mut window_sums = try_vec_filled(windows, Projective::<C>::zero(), n)?;
    let per_group = (group_entries / n).clamp(1, windows);
    let groups = windows.div_ceil(per_group);
    let per_group = windows.div_ceil(groups);
    for first in (0..windows).step_by(per_group) {
        let count = per_group.min(windows - first);
        let group = WindowGroup {
            recoder: Recoder::new(c),
            first,
            count,
            buckets: 1 << (c - 1),
        };
        for (window, sum) in group.sum(bases, &bigints, &mut carries)? {
            window_sums[window] += sum;
        }
    }

    // sum_w 2^(w c) * window_sums[w], from the top window down.
    let mut result = Projective::<C>::zero();
    for sum in window_sums.iter().rev() {
        for _ in 0..c {
            result.double_in_place();
        }
        result += sum;
    }
    Ok(result)
}

/// Consecutive windows whose digits are sorted and reduced together.
struct WindowGroup {
    recoder: Recoder,
    /// The first window of the group.
    first: usize,
    /// Windows in the group.
    count: usize,
    /// Buckets per window, `2^(c-1)`.
    buckets: usize,
}

impl WindowGroup {
    /// `(window, sum_m m * B_m)` partial sums for the group's windows (several per window,
    /// to be added up). `carries[i]` is the carry into the group's first window for scalar
    /// `i` and becomes the carry out of its last.
    fn sum<C: MsmCurve>(
        &self,
        bases: &[Affine<C>],
        scalars: &[BigInt<4>],
        carries: &mut [bool],
    ) -> Result<Vec<(usize, Projective<C>)>, Error> {
        let n = scalars.len();
        let threads = rayon::current_num_threads();
        let keys = self.count * self.buckets;
        // Chunks of at least 1024 points, one per thread if the counters fit.
        let chunks = threads
            .min(n.div_ceil(1024))
            .min(COUNTER_BUDGET / keys)
            .max(1);
        let chunk = n.div_ceil(chunks);

        // Counting sort by key, in parallel over chunks of points: count, then place. Each
        // chunk's counts become its write cursors.
        let mut cursors = scalars
            .par_chunks(chunk)
            .zip(carries.par_chunks(chunk))
            .map(|(scalars, carries)| {
                let mut counts = try_vec_filled(keys, 0u32, n)?;
                for (scalar, &carry) in scalars.iter().zip(carries) {
                    let mut carry = carry;
                    self.for_each_digit(scalar, &mut carry, |key, _| counts[key] += 1);
                }
                Ok(counts)
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let mut offsets = try_vec_filled(keys + 1, 0u32, n)?;
        let mut position = 0u32;
        for (key, offset) in offsets.iter_mut().take(keys).enumerate() {
            *offset = position;
            for counts in cursors.iter_mut() {
                let count = counts[key];
                counts[key] = position;
                position += count;
            }
        }
        offsets[keys] = position;
        let total = position as usize;

        let mut entries: Vec<AtomicU32> = try_vec_with_capacity(total, n)?;
        entries.resize_with(total, || AtomicU32::new(0));
        scalars
            .par_chunks(chunk)
            .zip(carries.par_chunks_mut(chunk))
            .zip(cursors.par_iter_mut())
            .enumerate()
            .for_each(|(c, ((scalars, carries), cursor))| {
                for (i, (scalar, carry)) in scalars.iter().zip(carries).enumerate() {
                    // Points are fewer than 2^30, so the entry fits in 32 bits.
                    let index = ((c * chunk + i) as u32) << 1;
                    self.for_each_digit(scalar, carry, |key, negative| {
                        let at = &mut cursor[key];
                        entries[*at as usize].store(index | u32::from(negative), Ordering::Relaxed);
                        *at += 1;
                    });
                }
            });
        if total == 0 {
            return Ok(Vec::new());
        }

        // Equal ranges of the sorted digits, several per thread.
        let tasks = (threads * TASKS_PER_THREAD)
            .max(total.div_ceil(MAX_TASK_ENTRIES))
            .min(total);
        let sorted = SortedDigits {
            entries: &entries,
            offsets: &offsets,
            buckets: self.buckets,
            first_window: self.first,
        };
        let partials = (0..tasks)
            .into_par_iter()
            .map(|t| reduce_range(bases, &sorted, total * t / tasks..total * (t + 1) / tasks))
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(partials.into_iter().flatten().collect())
    }

    /// Calls `f(key, negative)` for each nonzero digit of `scalar` in the group's windows.
    #[inline]
    fn for_each_digit(&self, scalar: &BigInt<4>, carry: &mut bool, mut f: impl FnMut(usize, bool)) {
        for j in 0..self.count {
            let (magnitude, negative) = self.recoder.digit(scalar, self.first + j, carry);
            if magnitude != 0 {
                f(j * self.buckets + magnitude as usize - 1, negative);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ec::{CurveGroup, VariableBaseMSM};
    use ark_ff::Field;

    /// Window groups of one and of three windows (the default sorts all windows of small
    /// inputs at once), on random scalars with edge cases mixed in, in group `C`.
    fn window_groups_add_up<C: MsmCurve>() {
        let n = 1001;
        let g = Projective::<C>::from(C::GENERATOR);
        let mut bases: Vec<Affine<C>> = (0..n as u64)
            .map(|i| (g * C::ScalarField::from(i * i + 1)).into_affine())
            .collect();
        bases[7] = Affine::identity();
        bases[8] = bases[9];
        bases[10] = -bases[11];
        let mut scalars: Vec<C::ScalarField> = (0..n as u64)
            .map(|i| C::ScalarField::from(i).pow([0x1234_5678_9abc_def1, i]))
            .collect();
        scalars[0] = C::ScalarField::zero();
        scalars[1] = -C::ScalarField::ONE;
        let expected = Projective::<C>::msm(&bases, &scalars).unwrap();
        for c in [4, 9, 13] {
            for per_group in [1, 3] {
                let got = pippenger(&bases, &scalars, c, per_group * n).unwrap();
                assert_eq!(
                    got,
                    expected,
                    "{}: c = {c}, {per_group} windows per group",
                    C::NAME
                );
            }
        }
    }

    #[test]
    fn window_groups_add_up_in_every_group() {
        window_groups_add_up::<ark_bls12_381::g1::Config>();
        window_groups_add_up::<ark_bls12_381::g2::Config>();
        window_groups_add_up::<ark_bn254::g1::Config>();
        window_groups_add_up::<ark_bn254::g2::Config>();
    }
}
