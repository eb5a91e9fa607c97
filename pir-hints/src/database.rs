//! The database: `n` entries of `E` bytes, in memory or memory-mapped, and synthetic ones.

use std::fs::File;
use std::ops::Range;
use std::path::Path;

use memmap2::Mmap;
use prp::{BLOCK_BYTES, ChaCha8, Cpu, Key, Keystream, derive};

use crate::error::Error;
use crate::params::Params;

/// A database of `n` entries of `E` bytes each, entry `i` at bytes `i E .. (i + 1) E`.
/// Entries at index `n` and above (the padding of the last blocks) read as zero.
#[derive(Clone, Copy, Debug)]
pub struct Database<'a> {
    bytes: &'a [u8],
    entry_size: usize,
}

impl<'a> Database<'a> {
    /// The database held in `bytes`. Errors if it is empty or not a whole number of entries.
    pub fn new(bytes: &'a [u8], entry_size: usize) -> Result<Self, Error> {
        if entry_size == 0 {
            return Err(Error::Database(
                "the entry size must be at least 1 byte".into(),
            ));
        }
        if bytes.is_empty() || bytes.len() % entry_size != 0 {
            return Err(Error::Database(format!(
                "{} bytes is not a positive multiple of the entry size {entry_size}",
                bytes.len()
            )));
        }
        Ok(Self { bytes, entry_size })
    }

    /// `n`.
    pub fn entries(&self) -> u64 {
        (self.bytes.len() / self.entry_size) as u64
    }

    /// `E`.
    pub fn entry_size(&self) -> usize {
        self.entry_size
    }

    /// All the bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Entry `index`, or `None` past the end (an entry that reads as zero).
    pub fn entry(&self, index: u64) -> Option<&'a [u8]> {
        let start = usize::try_from(index).ok()?.checked_mul(self.entry_size)?;
        self.bytes.get(start..start.checked_add(self.entry_size)?)
    }

    /// The stored entries of blocks `blocks` of `w` entries: entries `start w .. min(end w, n)`
    /// (possibly empty, when the range lies wholly in the padding or is empty or reversed).
    pub fn rows(&self, blocks: Range<u64>, block_size: u64) -> &'a [u8] {
        // Entry numbers clamped to `n`, so that the byte offsets are within the slice.
        let clamp = |block: u64| {
            let entry = block.saturating_mul(block_size).min(self.entries());
            entry as usize * self.entry_size
        };
        let end = clamp(blocks.end);
        &self.bytes[clamp(blocks.start).min(end)..end]
    }

    /// Errors unless this database has the `n` and `E` of `params`.
    pub fn check(&self, params: &Params) -> Result<(), Error> {
        if self.entry_size != params.entry_size() || self.entries() != params.entries() {
            return Err(Error::Database(format!(
                "the database holds {} entries of {} bytes; the parameters say {} of {}",
                self.entries(),
                self.entry_size,
                params.entries(),
                params.entry_size()
            )));
        }
        Ok(())
    }
}

/// A database file mapped into memory: pages are read as generation reaches them, so files
/// larger than RAM work.
#[derive(Debug)]
pub struct MappedDatabase {
    map: Mmap,
    entry_size: usize,
}

impl MappedDatabase {
    /// Maps the file at `path`. Errors if it cannot be read or is not a whole number of
    /// `entry_size`-byte entries.
    #[allow(unsafe_code)]
    pub fn open(path: &Path, entry_size: usize) -> Result<Self, Error> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        // SAFETY: the map is read-only; as for any mapped file, another process truncating or
        // rewriting it while we read is outside what this crate can prevent (documented on
        // the tool: do not modify a database while hints are generated from it).
        let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
        Database::new(&map, entry_size).map_err(|e| match e {
            Error::Database(why) => Error::Database(format!("{}: {why}", path.display())),
            other => other,
        })?;
        Ok(Self { map, entry_size })
    }

    /// The database view of the mapped bytes.
    pub fn database(&self) -> Database<'_> {
        Database {
            bytes: &self.map,
            entry_size: self.entry_size,
        }
    }
}

/// The keystream that synthetic databases are made of: byte `i` of the database of `seed` is
/// byte `i` of ChaCha8 with key `derive(K, "pir-hints/synthetic-db", 0)`, nonce `[0, 0, 0]`,
/// where `K` holds `seed` as 8 little-endian bytes and 24 zero bytes. The stream is 256 GiB
/// long, so synthetic databases hold at most that much.
pub fn synthetic_stream(seed: u64) -> ChaCha8 {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    ChaCha8::new(
        derive(&Key::new(&bytes), "pir-hints/synthetic-db", 0),
        [0, 0, 0],
    )
}

/// The largest synthetic database, in bytes: the whole keystream.
pub const MAX_SYNTHETIC_BYTES: u64 = (BLOCK_BYTES as u64) << 32;

/// Fills `out` with bytes `offset ..` of the synthetic database of `seed`, on all cores.
/// Errors if `offset` is not a multiple of 64, does not lie before [`MAX_SYNTHETIC_BYTES`]
/// (even for an empty `out`), or the range passes it.
pub fn fill_synthetic(seed: u64, offset: u64, out: &mut [u8]) -> Result<(), Error> {
    let counter = synthetic_counter(offset, out.len() as u64)?;
    Ok(Cpu.fill_keystream(&synthetic_stream(seed), counter, out)?)
}

/// The keystream block counter at which synthetic bytes `offset .. offset + len` start.
/// Errors if `offset` is not a multiple of 64 or the range passes [`MAX_SYNTHETIC_BYTES`]
/// (overflowing sums included).
pub(crate) fn synthetic_counter(offset: u64, len: u64) -> Result<u32, Error> {
    let end = offset.checked_add(len);
    match end {
        Some(end) if offset % BLOCK_BYTES as u64 == 0 && end <= MAX_SYNTHETIC_BYTES => {
            u32::try_from(offset / BLOCK_BYTES as u64).map_err(|_| {
                Error::Parameter(format!("synthetic byte {offset} is past the keystream"))
            })
        }
        _ => Err(Error::Parameter(format!(
            "synthetic bytes {offset} .. +{len} must start at a multiple of 64 and end by 2^38"
        ))),
    }
}

/// Where the synthetic rows of blocks `blocks` start and how many bytes they take, padded to
/// whole keystream blocks: `(counter, bytes)` for a keystream fill. Errors if the blocks do not
/// start at a multiple of 64 bytes or pass [`MAX_SYNTHETIC_BYTES`] (or `usize`).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn synthetic_rows(params: &Params, blocks: Range<u64>) -> Result<(u32, usize), Error> {
    params.check_block_range(&blocks)?;
    let entry_size = params.entry_size() as u64;
    let entry = |block: u64| block.checked_mul(params.block_size());
    let bytes = |entries: u64| entries.checked_mul(entry_size);
    let too_far = || {
        Error::Parameter(format!(
            "synthetic blocks {blocks:?} of {params} pass the end of the synthetic stream"
        ))
    };
    let first = entry(blocks.start).ok_or_else(too_far)?;
    let end = entry(blocks.end).ok_or_else(too_far)?.min(params.entries());
    let offset = bytes(first).ok_or_else(too_far)?;
    let len = bytes(end.saturating_sub(first)).ok_or_else(too_far)?;
    let counter = synthetic_counter(offset, len)?;
    let padded =
        usize::try_from(len.next_multiple_of(BLOCK_BYTES as u64)).map_err(|_| too_far())?;
    Ok((counter, padded))
}

/// The synthetic database of `seed` with `entries` entries of `entry_size` bytes, in memory.
pub fn synthetic_database(seed: u64, entries: u64, entry_size: usize) -> Result<Vec<u8>, Error> {
    let len = entries
        .checked_mul(entry_size as u64)
        .filter(|&len| len <= MAX_SYNTHETIC_BYTES)
        .ok_or_else(|| {
            Error::Parameter(format!(
                "{entries} entries of {entry_size} bytes is more than a synthetic database holds"
            ))
        })?;
    let mut bytes = vec![0u8; len as usize];
    fill_synthetic(seed, 0, &mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_and_padding() {
        let bytes: Vec<u8> = (0..30).collect();
        assert!(Database::new(&bytes, 4).is_err());
        assert!(Database::new(&[], 3).is_err());
        assert!(Database::new(&bytes, 0).is_err());
        let db = Database::new(&bytes, 3).unwrap();
        assert_eq!(db.entries(), 10);
        assert_eq!(db.entry(9), Some(&bytes[27..30]));
        assert_eq!(db.entry(10), None);
        assert_eq!(db.rows(1..2, 4), &bytes[12..24]);
        assert_eq!(db.rows(2..4, 4), &bytes[24..30]);
        assert!(db.rows(3..4, 4).is_empty());
    }

    #[test]
    fn synthetic_is_a_keystream_prefix() {
        let all = synthetic_database(7, 100, 5).unwrap();
        let mut tail = vec![0u8; 500 - 128];
        fill_synthetic(7, 128, &mut tail).unwrap();
        assert_eq!(&all[128..], &tail[..]);
        assert_ne!(all, synthetic_database(8, 100, 5).unwrap());
        assert!(fill_synthetic(7, 3, &mut tail).is_err());
    }

    #[test]
    fn synthetic_ranges_are_checked() {
        let last = MAX_SYNTHETIC_BYTES - 64;
        assert_eq!(synthetic_counter(last, 64).unwrap(), u32::MAX);
        assert_eq!(synthetic_counter(MAX_SYNTHETIC_BYTES, 0).ok(), None);
        assert!(synthetic_counter(last, 65).is_err());
        assert!(synthetic_counter(u64::MAX - 63, 64).is_err());
        assert!(synthetic_counter(64, u64::MAX).is_err());
        assert!(synthetic_counter(0, MAX_SYNTHETIC_BYTES).is_ok());
    }

    #[test]
    fn synthetic_rows_are_checked() {
        use crate::Scheme;
        let params = Params::new(Scheme::Rms24, 1000, 16)
            .unwrap()
            .with_block_size(40)
            .unwrap();
        // Blocks 2..5: entries 80..200, bytes 1280..3200, counter 20, 1920 bytes.
        assert_eq!(synthetic_rows(&params, 2..5).unwrap(), (20, 1920));
        // The last blocks hold padding only past n: 24..26 is entries 960..1000 then nothing.
        assert_eq!(synthetic_rows(&params, 24..26).unwrap(), (240, 640));
        assert!(synthetic_rows(&params, 3..3).is_err());
        assert!(synthetic_rows(&params, Range { start: 5, end: 2 }).is_err());
        assert!(synthetic_rows(&params, 0..u64::MAX).is_err());
        // Entry size 3: block 1 starts at byte 120, not a multiple of 64.
        let odd = Params::new(Scheme::Rms24, 1000, 3)
            .unwrap()
            .with_block_size(40)
            .unwrap();
        assert!(synthetic_rows(&odd, 1..2).is_err());
        // Past the keystream: 2^40 entries of 64 bytes.
        let huge = Params::new(Scheme::Rms24, 1 << 40, 64).unwrap();
        assert!(synthetic_rows(&huge, 0..2).is_ok());
        assert!(synthetic_rows(&huge, huge.all_blocks()).is_err());
        let last = huge.blocks() - 1;
        assert!(synthetic_rows(&huge, last..last + 1).is_err());
    }
}
