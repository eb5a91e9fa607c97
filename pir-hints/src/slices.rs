//! How a job's blocks are split between GPUs (or between slices of a database on one GPU):
//! consecutive ranges that cover every block exactly once, with inner boundaries on a given
//! alignment (the synthetic database can only start a slice at a 64-byte offset).

use std::ops::Range;

use crate::error::Error;
use crate::params::Params;

/// Splits `blocks` into at most `parts` consecutive, non-empty ranges that cover every block
/// exactly once, as nearly equal as `align` allows: every boundary but the first and last is
/// a multiple of `align`. Fewer ranges come back when there are fewer aligned boundaries
/// than parts (fewer blocks than slices). Errors if `parts` or `align` is zero or `blocks`
/// is empty or reversed.
pub fn block_slices(
    blocks: Range<u64>,
    parts: usize,
    align: u64,
) -> Result<Vec<Range<u64>>, Error> {
    if parts == 0 || align == 0 || blocks.start >= blocks.end {
        return Err(Error::Parameter(format!(
            "cannot split blocks {blocks:?} into {parts} slices aligned to {align}"
        )));
    }
    let len = u128::from(blocks.end - blocks.start);
    // More parts than blocks split exactly as one part per block would: the boundaries
    // `len i / parts` then take every value below `len`, the same set as with `len` parts.
    // Capping `parts` keeps the loop and the list within the number of blocks.
    let parts = (parts as u128).min(len) as u64;
    let boundary = |i: u64| -> u64 {
        // len * i / parts <= len, so the sum is at most blocks.end; 128 bits hold the product.
        let even = blocks.start + (len * u128::from(i) / u128::from(parts)) as u64;
        (even / align * align).max(blocks.start)
    };
    let mut slices = Vec::new();
    slices
        .try_reserve(usize::try_from(parts).unwrap_or(usize::MAX))
        .map_err(|_| {
            Error::Parameter(format!(
                "{parts} slices of blocks {blocks:?} do not fit in memory"
            ))
        })?;
    let mut start = blocks.start;
    for i in 1..=parts {
        let end = if i == parts { blocks.end } else { boundary(i) };
        if end > start {
            slices.push(start..end);
            start = end;
        }
    }
    Ok(slices)
}

/// The alignment, in blocks, at which a block of `params` starts at a byte offset that is a
/// multiple of 64 (where a slice of the synthetic database may start): `64 / gcd(64, w E mod 64)`.
pub fn synthetic_alignment(params: &Params) -> u64 {
    let row_bytes = params.block_size() % 64 * params.entry_size() as u64 % 64;
    // gcd(64, r) for r < 64 is the largest power of two dividing r (64 for r = 0).
    let gcd = if row_bytes == 0 {
        64
    } else {
        1 << row_bytes.trailing_zeros()
    };
    64 / gcd
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Scheme;
    use proptest::prelude::*;

    fn extreme() -> impl Strategy<Value = u64> {
        prop_oneof![
            Just(0u64),
            Just(1),
            Just(u64::MAX),
            Just(u64::MAX - 1),
            (0u32..64).prop_map(|b| 1u64 << b),
            any::<u64>(),
        ]
    }

    #[test]
    fn known_splits() {
        assert_eq!(block_slices(0..10, 3, 1).unwrap(), vec![0..3, 3..6, 6..10]);
        assert_eq!(block_slices(5..7, 4, 1).unwrap(), vec![5..6, 6..7]);
        assert_eq!(block_slices(0..10, 2, 4).unwrap(), vec![0..4, 4..10]);
        assert_eq!(block_slices(1..3, 2, 8).unwrap(), vec![1..3]);
        assert!(block_slices(0..10, 0, 1).is_err());
        assert!(block_slices(0..10, 2, 0).is_err());
        assert!(block_slices(4..4, 2, 1).is_err());
    }

    #[test]
    fn alignments() {
        let params = |w: u64, e: usize| {
            Params::new(Scheme::Rms24, 1 << 20, e)
                .unwrap()
                .with_block_size(w)
                .unwrap()
        };
        // Mainnet: w = 42,826, E = 40: w E = 1,713,040 = 16 * 107,065, so 4 blocks.
        assert_eq!(synthetic_alignment(&params(42_826, 40)), 4);
        assert_eq!(synthetic_alignment(&params(1 << 17, 48)), 1);
        assert_eq!(synthetic_alignment(&params(3, 3)), 64);
        assert_eq!(synthetic_alignment(&params(6, 3)), 32);
    }

    proptest! {
        #[test]
        fn slices_cover_every_block_once(
            start in extreme(),
            len in extreme(),
            parts in 1usize..70,
            align in prop_oneof![Just(1u64), Just(4), Just(64), Just(u64::MAX), 1u64..1000],
        ) {
            let end = start.saturating_add(len.max(1));
            prop_assume!(start < end);
            let slices = block_slices(start..end, parts, align).unwrap();
            prop_assert!(!slices.is_empty() && slices.len() <= parts);
            prop_assert_eq!(slices[0].start, start);
            prop_assert_eq!(slices[slices.len() - 1].end, end);
            for pair in slices.windows(2) {
                prop_assert_eq!(pair[0].end, pair[1].start);
                prop_assert_eq!(pair[0].end % align, 0);
            }
            for slice in &slices {
                prop_assert!(slice.start < slice.end);
            }
            // With no alignment, the sizes differ by at most one and every part is used when
            // there are enough blocks.
            if align == 1 {
                let sizes: Vec<u64> = slices.iter().map(|s| s.end - s.start).collect();
                let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
                prop_assert!(hi - lo <= 1);
                prop_assert_eq!(slices.len() as u64, (end - start).min(parts as u64));
            }
        }

        #[test]
        fn alignment_starts_blocks_on_64_bytes(w in 1u64..100_000, e in 1usize..300, k in 0u64..1000) {
            let params = Params::new(Scheme::Rms24, 1 << 30, e).unwrap().with_block_size(w).unwrap();
            let align = synthetic_alignment(&params);
            prop_assert_eq!(align * w * e as u64 % 64, 0);
            // And no smaller alignment does.
            if align > 1 {
                prop_assert_ne!(align / 2 * w * e as u64 % 64, 0);
            }
            prop_assert_eq!(k * align * w * e as u64 % 64, 0);
        }
    }
}
