//! The block subsets of hints (SPEC.md, "Subsets"), shared by both schemes, and RMS24's
//! offsets.

use prp::{Key, R8, tags};

use crate::error::Error;

/// Select values per ChaCha block: `v[j][a]` is word `a mod 16` of block `floor(a / 16)`.
pub(crate) const VALUES_PER_BLOCK: u64 = 16;

/// RMS24 offsets per ChaCha block: `r[j][a]` is words `2a mod 16` and `2a + 1 mod 16` of
/// block `floor(a / 8)`.
pub(crate) const OFFSETS_PER_BLOCK: u64 = 8;

/// The nonce of hint `j` under `tag`: `[jl, jh, tag]`.
pub(crate) fn nonce(hint: u64, tag: u32) -> [u32; 3] {
    [hint as u32, (hint >> 32) as u32, tag]
}

/// `v[j][a]` for `a` in `16 k .. 16 k + 16`.
pub(crate) fn select_block(select_key: &Key, hint: u64, k: u64) -> [u32; 16] {
    prp::block::<R8>(select_key, k as u32, nonce(hint, tags::SLCT))
}

/// The most blocks `c` a hint set may have: the select counter `floor(a / 16)` and RMS24's
/// offset counter `floor(a / 8)` of every block `a < c` fit in ChaCha's 32-bit block counter.
pub const MAX_BLOCKS: u64 = OFFSETS_PER_BLOCK << 32;

/// Errors unless block `a` is below [`MAX_BLOCKS`].
fn check_block(block: u64) -> Result<(), Error> {
    if block >= MAX_BLOCKS {
        return Err(Error::Parameter(format!(
            "block {block} is past the last block a hint set may have ({})",
            MAX_BLOCKS - 1
        )));
    }
    Ok(())
}

/// `v[j][a]`, the select value of hint `j` for block `a`. Errors if `a` is not below
/// [`MAX_BLOCKS`] (its ChaCha counter would not fit in 32 bits).
pub fn select_value(select_key: &Key, hint: u64, block: u64) -> Result<u32, Error> {
    check_block(block)?;
    Ok(select_value_unchecked(select_key, hint, block))
}

/// [`select_value`] for a block already known to be below [`MAX_BLOCKS`].
pub(crate) fn select_value_unchecked(select_key: &Key, hint: u64, block: u64) -> u32 {
    select_block(select_key, hint, block / VALUES_PER_BLOCK)[(block % VALUES_PER_BLOCK) as usize]
}

/// `v[j][a]` for every `a < c`.
pub(crate) fn select_values(select_key: &Key, hint: u64, blocks: u64) -> Vec<u32> {
    let mut values = Vec::with_capacity(blocks as usize);
    for k in 0..blocks.div_ceil(VALUES_PER_BLOCK) {
        let words = select_block(select_key, hint, k);
        let take = (blocks - k * VALUES_PER_BLOCK).min(VALUES_PER_BLOCK) as usize;
        values.extend_from_slice(&words[..take]);
    }
    values
}

/// `u = (w0 + w1 2^32) mod (c / 2)`, the rank of the extra block among the unselected ones.
pub(crate) fn extra_rank(select_key: &Key, hint: u64, blocks: u64) -> u64 {
    let words = prp::block::<R8>(select_key, 0, nonce(hint, tags::EXTR));
    (u64::from(words[0]) | u64::from(words[1]) << 32) % (blocks / 2)
}

/// RMS24's offset `r[j][a]` of hint `j` in block `a`, below `w`. Errors if `w` is 0 or `a`
/// is not below [`MAX_BLOCKS`].
pub fn rms24_offset(
    select_key: &Key,
    hint: u64,
    block: u64,
    block_size: u64,
) -> Result<u64, Error> {
    check_block(block)?;
    if block_size == 0 {
        return Err(Error::Parameter("the block size must be at least 1".into()));
    }
    Ok(rms24_offset_unchecked(select_key, hint, block, block_size))
}

/// [`rms24_offset`] for `a` below [`MAX_BLOCKS`] and `w` at least 1.
pub(crate) fn rms24_offset_unchecked(
    select_key: &Key,
    hint: u64,
    block: u64,
    block_size: u64,
) -> u64 {
    let words = prp::block::<R8>(
        select_key,
        (block / OFFSETS_PER_BLOCK) as u32,
        nonce(hint, tags::OFFS),
    );
    let i = (2 * (block % OFFSETS_PER_BLOCK)) as usize;
    (u64::from(words[i]) | u64::from(words[i + 1]) << 32) % block_size
}

/// The subset of blocks of one hint: `sel[j] = { a : v[j][a] < cutoff }` with `c / 2`
/// members, and the extra block `e` that main and regular hints add.
///
/// ```
/// use pir_hints::{MasterKey, Params, Scheme, Subset};
///
/// # fn main() -> Result<(), pir_hints::Error> {
/// let params = Params::new(Scheme::Rms24, 10_000, 8)?;
/// let key = MasterKey::new(&[3; 32]);
/// let subset = Subset::new(&key.select_key(Scheme::Rms24), 5, params.blocks())?;
/// if subset.is_valid() {
///     let members = (0..params.blocks()).filter(|&a| subset.contains(a)).count() as u64;
///     assert_eq!(members, params.blocks() / 2);
///     assert!(!subset.contains(subset.extra_block()));
/// }
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Subset {
    values: Vec<u32>,
    summary: Summary,
}

/// What a hint's subset comes down to once its select values are known: the cutoff, whether
/// the hint is valid, and its extra block. Membership of block `a` is then `v[j][a] < cutoff`,
/// one ChaCha block away.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Summary {
    pub(crate) cutoff: u32,
    pub(crate) valid: bool,
    pub(crate) extra: u64,
}

impl Subset {
    /// The subset of hint `hint` among `blocks` blocks under the select key (from
    /// [`crate::MasterKey::select_key`]). Errors unless `blocks` (`c`) is even, at least 2
    /// and at most [`MAX_BLOCKS`].
    pub fn new(select_key: &Key, hint: u64, blocks: u64) -> Result<Self, Error> {
        if blocks < 2 || blocks % 2 != 0 || blocks > MAX_BLOCKS {
            return Err(Error::Parameter(format!(
                "{blocks} blocks: a subset needs an even number from 2 to {MAX_BLOCKS}"
            )));
        }
        Ok(Self::of_checked(select_key, hint, blocks))
    }

    /// [`Subset::new`] for `blocks` known to be even and within `2 ..= MAX_BLOCKS` (those of
    /// checked [`crate::Params`]).
    pub(crate) fn of_checked(select_key: &Key, hint: u64, blocks: u64) -> Self {
        let values = select_values(select_key, hint, blocks);
        let half = (blocks / 2) as usize;
        let mut sorted = values.clone();
        let (below, &mut cutoff, _) = sorted.select_nth_unstable(half);
        // sorted[c/2 - 1] is the largest value below index c/2.
        let valid = below.iter().max().is_none_or(|&m| m != cutoff);
        let extra = if valid {
            let rank = extra_rank(select_key, hint, blocks) as usize;
            let unselected = values.iter().enumerate().filter(|(_, v)| **v >= cutoff);
            unselected.map(|(a, _)| a as u64).nth(rank).unwrap_or(0)
        } else {
            0
        };
        Self {
            values,
            summary: Summary {
                cutoff,
                valid,
                extra,
            },
        }
    }

    /// The value at index `c / 2` of the sorted select values.
    pub fn cutoff(&self) -> u32 {
        self.summary.cutoff
    }

    /// Whether the hint is valid: no tie at the cutoff. Invalid hints have zero parities.
    pub fn is_valid(&self) -> bool {
        self.summary.valid
    }

    /// Whether block `a` is in `sel[j]`.
    pub fn contains(&self, block: u64) -> bool {
        self.values
            .get(block as usize)
            .is_some_and(|&v| v < self.summary.cutoff)
    }

    /// The extra block `e` (0 for an invalid hint).
    pub fn extra_block(&self) -> u64 {
        self.summary.extra
    }

    /// The cutoff, validity and extra block.
    pub(crate) fn summary(&self) -> Summary {
        self.summary
    }
}
