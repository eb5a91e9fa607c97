//! Hint parameters: the scheme, the database shape and the hint counts, checked once.

use std::fmt;
use std::ops::Range;

use crate::error::Error;
use crate::subset::MAX_BLOCKS;

/// The default security parameter: Plinko's regular hints per block entry, and the PRP
/// security of its invertible PRF.
pub const DEFAULT_LAMBDA: u32 = 128;

/// Which PIR scheme the hints are for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// Ren, Mughees, Sun (CCS 2024): offsets from ChaCha, one entry per selected block.
    Rms24,
    /// Hoover, Patel, Persiano, Yeo: offsets from an invertible PRF per block, so the database
    /// is streamed once and each entry updated into the hints that hold it.
    Plinko,
}

impl Scheme {
    /// The scheme's code in hint files.
    pub(crate) fn code(self) -> u32 {
        match self {
            Scheme::Rms24 => 1,
            Scheme::Plinko => 2,
        }
    }

    /// The scheme with this code in hint files.
    pub(crate) fn from_code(code: u32) -> Option<Self> {
        match code {
            1 => Some(Scheme::Rms24),
            2 => Some(Scheme::Plinko),
            _ => None,
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Scheme::Rms24 => "rms24",
            Scheme::Plinko => "plinko",
        })
    }
}

impl std::str::FromStr for Scheme {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s.to_ascii_lowercase().as_str() {
            "rms24" => Ok(Scheme::Rms24),
            "plinko" => Ok(Scheme::Plinko),
            _ => Err(Error::Parameter(format!(
                "unknown scheme {s:?} (expected rms24 or plinko)"
            ))),
        }
    }
}

/// Checked hint parameters (SPEC.md, "pir-hints"): `n` entries of `E` bytes in `c` blocks of
/// `w` entries (`c = ceil(n / w)` rounded up to even), `M` main (RMS24) or regular (Plinko)
/// hints numbered `0 .. M` and `q` backup hints numbered `M .. M + q`.
///
/// Build them with [`Params::new`], which fills in the defaults, then adjust with the `with_`
/// methods; each re-checks the whole set.
///
/// ```
/// use pir_hints::{Params, Scheme};
///
/// # fn main() -> Result<(), pir_hints::Error> {
/// let params = Params::new(Scheme::Rms24, 1_000_000, 32)?;
/// assert_eq!(params.block_size(), 1000); // ceil(sqrt(n))
/// assert_eq!(params.blocks(), 1000);
/// assert_eq!(params.main_hints(), 128 * 1000); // lambda * w
///
/// let plinko = Params::new(Scheme::Plinko, 1_000_000, 48)?.with_hints(4096, 512)?;
/// assert_eq!(plinko.block_size(), 1024); // a power of two near sqrt(n)
/// assert_eq!(plinko.blocks(), 978); // ceil(n / w) = 977, rounded up to even
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Params {
    scheme: Scheme,
    entries: u64,
    entry_size: usize,
    block_size: u64,
    main_hints: u64,
    backup_hints: u64,
    lambda: u32,
    /// Whether the hint counts are the defaults, which follow `w` and `lambda`.
    default_hints: bool,
}

impl Params {
    /// Every field that shapes a hint set (not how the counts were chosen).
    fn key(&self) -> (Scheme, u64, usize, u64, u64, u64, u32) {
        (
            self.scheme,
            self.entries,
            self.entry_size,
            self.block_size,
            self.main_hints,
            self.backup_hints,
            self.lambda,
        )
    }
}

impl PartialEq for Params {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Params {}

impl std::hash::Hash for Params {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

impl fmt::Display for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: n = {} entries of E = {} bytes, w = {}, c = {} blocks, M = {}, q = {}, lambda = {}",
            self.scheme,
            self.entries,
            self.entry_size,
            self.block_size,
            self.blocks(),
            self.main_hints,
            self.backup_hints,
            self.lambda
        )
    }
}

/// The largest entry size: entries are XORed in registers on the GPU.
pub const MAX_ENTRY_SIZE: usize = 1 << 12;

impl Params {
    /// Parameters for `entries` entries of `entry_size` bytes with the defaults:
    /// - block size `ceil(sqrt(n))` for RMS24, and for Plinko the power of two nearest
    ///   `sqrt(n)` (so that `c` stays near `w`);
    /// - `lambda = 128`, `lambda * w` main or regular hints and as many backup hints; these
    ///   default counts follow later changes of `w` and `lambda` until
    ///   [`with_hints`](Self::with_hints) sets them.
    pub fn new(scheme: Scheme, entries: u64, entry_size: usize) -> Result<Self, Error> {
        if entries == 0 {
            return Err(Error::Parameter("the database has no entries".into()));
        }
        let root = entries.isqrt() + u64::from(entries.isqrt().pow(2) < entries);
        let block_size = match scheme {
            Scheme::Rms24 => root,
            Scheme::Plinko => nearest_power_of_two(root),
        };
        let params = Self {
            scheme,
            entries,
            entry_size,
            block_size,
            main_hints: 0,
            backup_hints: 0,
            lambda: DEFAULT_LAMBDA,
            default_hints: true,
        };
        params.check()
    }

    /// The same parameters with another block size `w` (default hint counts follow it).
    pub fn with_block_size(self, block_size: u64) -> Result<Self, Error> {
        Self { block_size, ..self }.check()
    }

    /// The same parameters with `main` main (regular) hints and `backup` backup hints.
    pub fn with_hints(self, main: u64, backup: u64) -> Result<Self, Error> {
        Self {
            main_hints: main,
            backup_hints: backup,
            default_hints: false,
            ..self
        }
        .check()
    }

    /// The same parameters with security parameter `lambda` (Plinko's iPRF; RMS24 records it
    /// only). Default hint counts follow it.
    pub fn with_lambda(self, lambda: u32) -> Result<Self, Error> {
        Self { lambda, ..self }.check()
    }

    /// Parameters exactly as given (from a hint file), checked.
    pub(crate) fn from_parts(
        scheme: Scheme,
        entries: u64,
        entry_size: usize,
        block_size: u64,
        hints: (u64, u64),
        lambda: u32,
    ) -> Result<Self, Error> {
        Self {
            scheme,
            entries,
            entry_size,
            block_size,
            main_hints: hints.0,
            backup_hints: hints.1,
            lambda,
            default_hints: false,
        }
        .check()
    }

    fn check(mut self) -> Result<Self, Error> {
        let bad = |why: String| Err(Error::Parameter(why));
        if self.default_hints {
            let main = u64::from(self.lambda).saturating_mul(self.block_size);
            self.main_hints = main;
            self.backup_hints = main;
        }
        if self.entries == 0 {
            return bad("the database has no entries".into());
        }
        if self.entry_size == 0 || self.entry_size > MAX_ENTRY_SIZE {
            return bad(format!(
                "entry size {} is outside 1 ..= {MAX_ENTRY_SIZE} bytes",
                self.entry_size
            ));
        }
        if self.block_size == 0 || self.block_size > u64::from(u32::MAX) {
            return bad(format!(
                "block size {} is outside 1 ..= 2^32 - 1",
                self.block_size
            ));
        }
        if self.scheme == Scheme::Plinko && !self.block_size.is_power_of_two() {
            return bad(format!(
                "Plinko needs a power-of-two block size, not {}",
                self.block_size
            ));
        }
        if self.scheme == Scheme::Plinko && self.block_size > prp::MAX_BINS {
            return bad(format!(
                "block size {} is more than the {} bins of the iPRF",
                self.block_size,
                prp::MAX_BINS
            ));
        }
        // c <= MAX_BLOCKS keeps every ChaCha counter floor(a / 16), floor(a / 8) below 2^32;
        // c w must fit in a u64 so that every entry number a w + b of a block does.
        let blocks = self.entries.div_ceil(self.block_size);
        match blocks.checked_next_multiple_of(2) {
            Some(blocks)
                if blocks <= MAX_BLOCKS && blocks.checked_mul(self.block_size).is_some() => {}
            _ => {
                return bad(format!(
                    "{} entries in blocks of {} is more than {MAX_BLOCKS} blocks or 2^64 \
                     entries with the padding",
                    self.entries, self.block_size
                ));
            }
        }
        let total = self.main_hints.checked_add(self.backup_hints);
        match total {
            None | Some(0) => return bad("there must be at least one hint".into()),
            Some(total) if usize::try_from(total).is_err() => {
                return bad(format!("{total} hints do not fit in memory"));
            }
            Some(total) if self.scheme == Scheme::Plinko && total > prp::MAX_TABLE_DOMAIN => {
                return bad(format!(
                    "{total} Plinko hints is more than the {} an iPRF table holds",
                    prp::MAX_TABLE_DOMAIN
                ));
            }
            Some(total) if hint_set_bytes(total, self.backup_hints, self.entry_size).is_none() => {
                return bad(format!(
                    "{total} hints of {} bytes do not fit in memory",
                    self.entry_size
                ));
            }
            Some(_) => {}
        }
        if self.lambda == 0 {
            return bad("lambda must be at least 1".into());
        }
        Ok(self)
    }

    /// The scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// `n`, the number of entries.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// `E`, the bytes per entry.
    pub fn entry_size(&self) -> usize {
        self.entry_size
    }

    /// `w`, the entries per block.
    pub fn block_size(&self) -> u64 {
        self.block_size
    }

    /// `c = ceil(n / w)` rounded up to even; entries past `n` read as zero.
    pub fn blocks(&self) -> u64 {
        self.entries.div_ceil(self.block_size).next_multiple_of(2)
    }

    /// `M`, the main (RMS24) or regular (Plinko) hints: `0 .. M`.
    pub fn main_hints(&self) -> u64 {
        self.main_hints
    }

    /// `q`, the backup hints: `M .. M + q`.
    pub fn backup_hints(&self) -> u64 {
        self.backup_hints
    }

    /// `M + q`, every hint (Plinko's iPRF domain `m`).
    pub fn total_hints(&self) -> u64 {
        self.main_hints + self.backup_hints
    }

    /// The bytes of a whole hint set: the validity bitmap, `ceil((M + q) / 8)` bytes, the
    /// `M + q` parities and the `q` second parities, `E` bytes each (checked by [`Params`] to
    /// fit in a `usize`).
    pub fn hint_set_bytes(&self) -> u64 {
        hint_set_bytes(self.total_hints(), self.backup_hints, self.entry_size).unwrap_or(u64::MAX)
    }

    /// The security parameter.
    pub fn lambda(&self) -> u32 {
        self.lambda
    }

    /// Every block, `0 .. c`.
    pub fn all_blocks(&self) -> Range<u64> {
        0..self.blocks()
    }

    /// Errors unless `blocks` is a non-empty range within `0 .. c`.
    pub fn check_block_range(&self, blocks: &Range<u64>) -> Result<(), Error> {
        if blocks.start >= blocks.end || blocks.end > self.blocks() {
            return Err(Error::Parameter(format!(
                "block range {blocks:?} is empty or not within 0..{}",
                self.blocks()
            )));
        }
        Ok(())
    }
}

/// The bytes of `total` hints of which `backup` are backup hints, `entry_size` bytes each
/// (see [`Params::hint_set_bytes`]), or `None` if they do not fit in a `usize`.
fn hint_set_bytes(total: u64, backup: u64, entry_size: usize) -> Option<u64> {
    let e = entry_size as u64;
    let bytes = total
        .div_ceil(8)
        .checked_add(total.checked_mul(e)?)?
        .checked_add(backup.checked_mul(e)?)?;
    usize::try_from(bytes).ok().map(|_| bytes)
}

/// The power of two nearest `x` (ties up), at least 1.
fn nearest_power_of_two(x: u64) -> u64 {
    let up = x.next_power_of_two();
    let down = up / 2;
    if down > 0 && x - down < up - x {
        down
    } else {
        up
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let p = Params::new(Scheme::Rms24, 1_830_000_000, 40).unwrap();
        assert_eq!(p.block_size(), 42_779);
        let p = Params::new(Scheme::Rms24, 10, 4).unwrap();
        assert_eq!((p.block_size(), p.blocks()), (4, 4));
        let p = Params::new(Scheme::Plinko, 1 << 34, 48).unwrap();
        assert_eq!((p.block_size(), p.blocks()), (1 << 17, 1 << 17));
        assert_eq!(p.main_hints(), 1 << 24);
        let p = p.with_block_size(1 << 10).unwrap().with_lambda(64).unwrap();
        assert_eq!((p.main_hints(), p.backup_hints()), (1 << 16, 1 << 16));
        let p = p
            .with_hints(10, 5)
            .unwrap()
            .with_block_size(1 << 12)
            .unwrap();
        assert_eq!((p.main_hints(), p.backup_hints()), (10, 5));
        assert_eq!(nearest_power_of_two(1), 1);
        assert_eq!(nearest_power_of_two(5), 4);
        assert_eq!(nearest_power_of_two(6), 8);
    }

    #[test]
    fn blocks_round_up_to_even() {
        let p = Params::new(Scheme::Rms24, 1, 1).unwrap();
        assert_eq!(p.blocks(), 2);
        let p = p.with_block_size(3).unwrap();
        assert_eq!(p.blocks(), 2);
        let p = Params::new(Scheme::Rms24, 7, 1)
            .unwrap()
            .with_block_size(2)
            .unwrap();
        assert_eq!(p.blocks(), 4);
    }

    #[test]
    fn rejects_bad_parameters() {
        assert!(Params::new(Scheme::Rms24, 0, 4).is_err());
        assert!(Params::new(Scheme::Rms24, 10, 0).is_err());
        assert!(Params::new(Scheme::Rms24, 10, MAX_ENTRY_SIZE + 1).is_err());
        let p = Params::new(Scheme::Plinko, 100, 4).unwrap();
        assert!(p.with_block_size(12).is_err());
        assert!(p.with_block_size(0).is_err());
        assert!(p.with_hints(0, 0).is_err());
        assert!(p.with_hints(u64::MAX, 1).is_err());
        assert!(p.with_hints(1 << 32, 1).is_err());
        assert!(p.with_lambda(0).is_err());
        let big = Params::new(Scheme::Rms24, 100, MAX_ENTRY_SIZE).unwrap();
        assert!(big.with_hints(1 << 62, 1 << 62).is_err());
        assert!(big.with_hints(1 << 50, 0).is_ok());
        // n = 2^64 - 11 in blocks of 2^32 - 1: c = 2^32 + 2, and c w passes 2^64.
        let near_max = |w| Params::from_parts(Scheme::Rms24, u64::MAX - 10, 1, w, (1, 1), 1);
        assert!(near_max(u64::from(u32::MAX)).is_err());
        assert!(near_max(1).is_err());
        assert!(Params::new(Scheme::Rms24, u64::MAX, 1).is_err());
        let p = Params::new(Scheme::Rms24, 1 << 63, 1).unwrap();
        assert_eq!(
            p.blocks().checked_mul(p.block_size()).map(|x| x >= 1 << 63),
            Some(true)
        );
        assert!(p.with_block_size(1).is_err());
        assert!(p.check_block_range(&(0..0)).is_err());
        assert!(p.check_block_range(&(0..p.blocks() + 1)).is_err());
        assert!(p.check_block_range(&(1..p.blocks())).is_ok());
        assert!("RMS24".parse::<Scheme>().is_ok());
        assert!("pir".parse::<Scheme>().is_err());
    }
}
