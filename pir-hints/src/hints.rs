//! A generated hint set, how shards of it combine, and its file format.
//!
//! # File format (version 2)
//!
//! All integers little-endian. A fixed 168-byte header:
//!
//! | bytes | field |
//! |---|---|
//! | 0..8 | magic `PIRHINTS` |
//! | 8..12 | format version, 2 |
//! | 12..16 | scheme: 1 = RMS24, 2 = Plinko |
//! | 16..24 | `n`, entries |
//! | 24..32 | `E`, bytes per entry |
//! | 32..40 | `w`, block size |
//! | 40..48 | `c`, blocks (implied by `n` and `w`; checked) |
//! | 48..56 | `M`, main or regular hints |
//! | 56..64 | `q`, backup hints |
//! | 64..72 | `lambda` |
//! | 72..80, 80..88 | the block range `start .. end` the parities cover |
//! | 88..96 | reserved, zero |
//! | 96..128 | the key fingerprint ([`crate::MasterKey::fingerprint`]); never the key |
//! | 128..136 | the number of bytes that follow the header |
//! | 136..168 | SHA-256 of bytes 0..136 followed by every byte after the header |
//!
//! Then, in order: the validity bitmap, `ceil((M + q) / 8)` bytes, hint `j` at bit `j mod 8`
//! of byte `j / 8` (1 = valid); the parities of all `M + q` hints, `E` bytes each; the second
//! parities of the `q` backup hints, `E` bytes each. Nothing else: the file's length is checked,
//! and [`Hints::read`] recomputes the digest, so that a damaged or truncated file is refused
//! (and never combined) rather than read as hints.
//!
//! Version 1 (before 2026-11-26) had no digest (a 136-byte header); this version refuses such
//! files with an error that says so: generate them again.
//!
//! Files are written to a temporary file in the target's directory and renamed over the
//! target when complete, so an interrupted run leaves no partial hints file behind.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::ops::Range;
use std::path::Path;

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::params::{Params, Scheme};

/// The first bytes of every hint file.
pub const MAGIC: [u8; 8] = *b"PIRHINTS";
/// The format version this crate writes and reads.
pub const FORMAT_VERSION: u32 = 2;
/// Bytes in the header.
pub const HEADER_BYTES: usize = 168;
/// Where the digest starts in the header: it covers the header bytes before it and the body.
const DIGEST_AT: usize = 136;

/// The hints of one key over a range of blocks: one parity per hint (two for backup hints)
/// and a validity flag per hint.
///
/// Parities over disjoint block ranges XOR together ([`Hints::combine`]) into the parities
/// over their union, so a large run can be split into block ranges and merged.
#[derive(Clone, PartialEq, Eq)]
pub struct Hints {
    params: Params,
    fingerprint: [u8; 32],
    blocks: Range<u64>,
    valid: Vec<bool>,
    parities: Vec<u8>,
    second_parities: Vec<u8>,
}

impl std::fmt::Debug for Hints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hints")
            .field("params", &self.params)
            .field("blocks", &self.blocks)
            .field("valid", &self.valid_count())
            .finish_non_exhaustive()
    }
}

impl Hints {
    /// All-zero hints, every one marked valid, for `params` over `blocks`.
    pub(crate) fn zeroed(params: Params, fingerprint: [u8; 32], blocks: Range<u64>) -> Self {
        let total = params.total_hints() as usize;
        let e = params.entry_size();
        Self {
            params,
            fingerprint,
            blocks,
            valid: vec![true; total],
            parities: vec![0; total * e],
            second_parities: vec![0; params.backup_hints() as usize * e],
        }
    }

    /// The parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The fingerprint of the key that made them.
    pub fn fingerprint(&self) -> &[u8; 32] {
        &self.fingerprint
    }

    /// The blocks whose entries the parities cover.
    pub fn blocks(&self) -> Range<u64> {
        self.blocks.clone()
    }

    /// Whether the parities cover every block.
    pub fn is_complete(&self) -> bool {
        self.blocks == self.params.all_blocks()
    }

    /// Whether hint `j` is valid (no tie at its cutoff). Invalid hints have zero parities.
    pub fn is_valid(&self, hint: u64) -> bool {
        self.valid.get(hint as usize).copied().unwrap_or(false)
    }

    /// How many hints are valid.
    pub fn valid_count(&self) -> u64 {
        self.valid.iter().filter(|&&v| v).count() as u64
    }

    /// The parity of hint `j` (for a backup hint, over its selected blocks), `E` bytes, or
    /// `None` past the last hint.
    pub fn parity(&self, hint: u64) -> Option<&[u8]> {
        let e = self.params.entry_size();
        let start = usize::try_from(hint).ok()?.checked_mul(e)?;
        self.parities.get(start..start.checked_add(e)?)
    }

    /// The second parity of backup hint `j` (`M <= j < M + q`): over the blocks not selected.
    pub fn second_parity(&self, hint: u64) -> Option<&[u8]> {
        let e = self.params.entry_size();
        let backup = usize::try_from(hint.checked_sub(self.params.main_hints())?).ok()?;
        let start = backup.checked_mul(e)?;
        self.second_parities.get(start..start.checked_add(e)?)
    }

    /// The validity flags and parities, hint after hint, and the second parities of the
    /// backup hints.
    pub(crate) fn parts_mut(&mut self) -> (&mut [bool], &mut [u8], &mut [u8]) {
        (
            &mut self.valid,
            &mut self.parities,
            &mut self.second_parities,
        )
    }

    /// Checks that `other` is a shard of the same hint set: same parameters, key and
    /// validity.
    fn check_same_set(&self, other: &Hints) -> Result<(), Error> {
        if self.params != other.params {
            return Err(Error::Hints(format!(
                "the shards have different parameters: ({}) and ({})",
                self.params, other.params
            )));
        }
        if self.fingerprint != other.fingerprint {
            return Err(Error::Hints(
                "the shards were made with different keys".into(),
            ));
        }
        if self.valid != other.valid {
            return Err(Error::Hints(
                "the shards disagree on which hints are valid (a damaged file?)".into(),
            ));
        }
        Ok(())
    }

    /// XORs the shard `other`, over blocks adjacent to these, into these hints, which then
    /// cover the union. Errors if the parameters, key or validity differ, or the ranges
    /// overlap or leave a gap.
    pub fn combine(&mut self, other: &Hints) -> Result<(), Error> {
        self.check_same_set(other)?;
        let blocks = if self.blocks.end == other.blocks.start {
            self.blocks.start..other.blocks.end
        } else if other.blocks.end == self.blocks.start {
            other.blocks.start..self.blocks.end
        } else {
            return Err(Error::Hints(format!(
                "block ranges {:?} and {:?} overlap or leave a gap",
                self.blocks, other.blocks
            )));
        };
        xor_into(&mut self.parities, &other.parities);
        xor_into(&mut self.second_parities, &other.second_parities);
        self.blocks = blocks;
        Ok(())
    }

    /// Combines shards in any order (sorted by block range here) into one hint set.
    pub fn combine_all(mut shards: Vec<Hints>) -> Result<Hints, Error> {
        shards.sort_by_key(|h| h.blocks.start);
        let mut shards = shards.into_iter();
        let mut all = shards
            .next()
            .ok_or_else(|| Error::Hints("no shards to combine".into()))?;
        for shard in shards {
            all.combine(&shard)?;
        }
        Ok(all)
    }

    /// Writes the hints to `path` in the format above: to a temporary file first, renamed
    /// over `path` once complete and flushed.
    pub fn write(&self, path: &Path) -> Result<(), Error> {
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let io = |e| Error::io(path, e);
        let temp = tempfile::Builder::new()
            .prefix(".pir-hints-")
            .suffix(".partial")
            .tempfile_in(dir)
            .map_err(io)?;
        let bitmap = pack_bits(&self.valid);
        let mut header = self.header();
        let digest = digest_of(
            &header[..DIGEST_AT],
            [&bitmap[..], &self.parities, &self.second_parities],
        );
        header[DIGEST_AT..].copy_from_slice(&digest);
        let mut out = BufWriter::with_capacity(1 << 22, temp.as_file());
        out.write_all(&header).map_err(io)?;
        out.write_all(&bitmap).map_err(io)?;
        out.write_all(&self.parities).map_err(io)?;
        out.write_all(&self.second_parities).map_err(io)?;
        out.flush().map_err(io)?;
        drop(out);
        temp.as_file().sync_all().map_err(io)?;
        temp.persist(path).map_err(|e| io(e.error))?;
        Ok(())
    }

    /// Reads only the header of a hint file (checking it and the file's length, not the
    /// digest): enough to order shards without reading their parities.
    pub fn read_header(path: &Path) -> Result<HintsHeader, Error> {
        Ok(open_checked(path)?.1)
    }

    /// Reads a hint file written by [`Hints::write`], checking its header, its length and its
    /// digest: a damaged or truncated file is an error.
    pub fn read(path: &Path) -> Result<Hints, Error> {
        let io = |e| Error::io(path, e);
        let (mut input, header) = open_checked(path)?;
        let mut hints = Hints::zeroed(header.params, header.fingerprint, header.blocks);
        let mut bitmap = vec![0u8; hints.valid.len().div_ceil(8)];
        input.read_exact(&mut bitmap).map_err(io)?;
        input.read_exact(&mut hints.parities).map_err(io)?;
        input.read_exact(&mut hints.second_parities).map_err(io)?;
        let digest = digest_of(
            &header.bytes[..DIGEST_AT],
            [&bitmap[..], &hints.parities, &hints.second_parities],
        );
        if digest[..] != header.bytes[DIGEST_AT..] {
            return Err(Error::Hints(format!(
                "{}: damaged: its SHA-256 digest does not match its contents",
                path.display()
            )));
        }
        hints.valid = unpack_bits(&bitmap, hints.valid.len());
        Ok(hints)
    }

    /// The header of the file format.
    fn header(&self) -> [u8; HEADER_BYTES] {
        let p = &self.params;
        let mut header = [0u8; HEADER_BYTES];
        header[..8].copy_from_slice(&MAGIC);
        header[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        header[12..16].copy_from_slice(&p.scheme().code().to_le_bytes());
        let fields = [
            p.entries(),
            p.entry_size() as u64,
            p.block_size(),
            p.blocks(),
            p.main_hints(),
            p.backup_hints(),
            u64::from(p.lambda()),
            self.blocks.start,
            self.blocks.end,
            0,
        ];
        for (i, field) in fields.iter().enumerate() {
            header[16 + 8 * i..24 + 8 * i].copy_from_slice(&field.to_le_bytes());
        }
        header[96..128].copy_from_slice(&self.fingerprint);
        header[128..136].copy_from_slice(&p.hint_set_bytes().to_le_bytes());
        header
    }
}

/// What a hint file's header says ([`Hints::read_header`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HintsHeader {
    /// The parameters.
    pub params: Params,
    /// The fingerprint of the key.
    pub fingerprint: [u8; 32],
    /// The blocks the parities cover.
    pub blocks: Range<u64>,
    /// The header's bytes as read, digest included.
    bytes: [u8; HEADER_BYTES],
}

/// Opens a hint file, checks its header and length, and leaves the reader after the header.
fn open_checked(path: &Path) -> Result<(BufReader<File>, HintsHeader), Error> {
    let io = |e| Error::io(path, e);
    let file = File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let mut input = BufReader::with_capacity(1 << 22, file);
    let mut header = [0u8; HEADER_BYTES];
    input.read_exact(&mut header).map_err(|e| {
        Error::Hints(format!(
            "{}: too short for a hint file header ({e})",
            path.display()
        ))
    })?;
    let (header, body) =
        parse_header(&header).map_err(|why| Error::Hints(format!("{}: {why}", path.display())))?;
    if len != (HEADER_BYTES as u64).saturating_add(body) {
        return Err(Error::Hints(format!(
            "{}: {len} bytes, but its header describes {} (truncated or damaged)",
            path.display(),
            HEADER_BYTES as u64 + body
        )));
    }
    Ok((input, header))
}

/// Parameters, fingerprint, block range and body length from a header, checked.
fn parse_header(header: &[u8; HEADER_BYTES]) -> Result<(HintsHeader, u64), String> {
    if header[..8] != MAGIC {
        return Err("not a hint file (wrong magic bytes)".into());
    }
    let word = |at: usize| {
        u32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    let field = |i: usize| {
        let at = 16 + 8 * i;
        u64::from_le_bytes(header[at..at + 8].try_into().unwrap_or([0; 8]))
    };
    let version = word(8);
    if version == 1 {
        return Err(format!(
            "format version 1, written by an older pir-hints without a digest; this build \
             reads version {FORMAT_VERSION} only: generate the file again"
        ));
    }
    if version != FORMAT_VERSION {
        return Err(format!(
            "format version {version}; this build reads version {FORMAT_VERSION}"
        ));
    }
    let scheme =
        Scheme::from_code(word(12)).ok_or_else(|| format!("unknown scheme code {}", word(12)))?;
    let entry_size = usize::try_from(field(1)).map_err(|_| "entry size too large".to_string())?;
    let lambda = u32::try_from(field(6)).map_err(|_| "lambda too large".to_string())?;
    let params = Params::from_parts(
        scheme,
        field(0),
        entry_size,
        field(2),
        (field(4), field(5)),
        lambda,
    )
    .map_err(|e| e.to_string())?;
    if field(3) != params.blocks() {
        return Err(format!(
            "header says {} blocks; n and w give {}",
            field(3),
            params.blocks()
        ));
    }
    let blocks = field(7)..field(8);
    params
        .check_block_range(&blocks)
        .map_err(|e| e.to_string())?;
    let mut fingerprint = [0u8; 32];
    fingerprint.copy_from_slice(&header[96..128]);
    let body = u64::from_le_bytes(header[128..136].try_into().unwrap_or([0; 8]));
    if body != params.hint_set_bytes() {
        return Err(format!(
            "header says {body} bytes of hints; its parameters need {}",
            params.hint_set_bytes()
        ));
    }
    Ok((
        HintsHeader {
            params,
            fingerprint,
            blocks,
            bytes: *header,
        },
        body,
    ))
}

/// SHA-256 of the header bytes before the digest and the body's parts, in order.
fn digest_of<const N: usize>(header: &[u8], body: [&[u8]; N]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(header);
    body.iter().for_each(|part| hasher.update(part));
    hasher.finalize().into()
}

/// `dst ^= src`, bytewise, on all cores.
pub(crate) fn xor_into(dst: &mut [u8], src: &[u8]) {
    const PIECE: usize = 1 << 16;
    dst.par_chunks_mut(PIECE)
        .zip(src.par_chunks(PIECE))
        .for_each(|(d, s)| d.iter_mut().zip(s).for_each(|(d, s)| *d ^= s));
}

/// Flags as a bitmap, flag `i` at bit `i mod 8` of byte `i / 8`.
fn pack_bits(flags: &[bool]) -> Vec<u8> {
    flags
        .chunks(8)
        .map(|chunk| {
            chunk
                .iter()
                .enumerate()
                .fold(0u8, |byte, (i, &f)| byte | (u8::from(f) << i))
        })
        .collect()
}

/// The first `len` flags of a bitmap.
fn unpack_bits(bitmap: &[u8], len: usize) -> Vec<bool> {
    (0..len)
        .map(|i| bitmap[i / 8] >> (i % 8) & 1 == 1)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(blocks: Range<u64>, fill: u8) -> Hints {
        let params = Params::new(Scheme::Rms24, 100, 3)
            .unwrap()
            .with_hints(5, 4)
            .unwrap();
        let mut hints = Hints::zeroed(params, [7; 32], blocks);
        hints.valid[3] = false;
        hints
            .parities
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = i as u8 ^ fill);
        hints.second_parities.fill(fill);
        hints
    }

    #[test]
    fn bits_round_trip() {
        let flags: Vec<bool> = (0..19).map(|i| i % 3 == 0).collect();
        assert_eq!(unpack_bits(&pack_bits(&flags), 19), flags);
    }

    #[test]
    fn file_round_trip_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.bin");
        let hints = sample(0..10, 1);
        hints.write(&path).unwrap();
        assert_eq!(Hints::read(&path).unwrap(), hints);
        let header = Hints::read_header(&path).unwrap();
        assert_eq!((header.params, header.blocks), (hints.params, 0..10));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

        let good = std::fs::read(&path).unwrap();
        // Any flipped bit, in the header (reserved field and digest included), the bitmap,
        // the parities or the second parities, is refused: by the header's checks or the
        // digest.
        for at in (0..good.len()).filter(|&at| at % 7 == 0 || at >= DIGEST_AT - 8) {
            for bit in [0, 7] {
                let mut bytes = good.clone();
                bytes[at] ^= 1 << bit;
                std::fs::write(&path, &bytes).unwrap();
                assert!(Hints::read(&path).is_err(), "byte {at} bit {bit}");
            }
        }
        let mut bytes = good.clone();
        bytes[HEADER_BYTES + 20] ^= 4;
        std::fs::write(&path, &bytes).unwrap();
        let said = Hints::read(&path).unwrap_err().to_string();
        assert!(said.contains("damaged: its SHA-256 digest"), "{said}");
        // Files of format version 1 are refused with a reason.
        bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let said = Hints::read(&path).unwrap_err().to_string();
        assert!(
            said.contains("format version 1, written by an older"),
            "{said}"
        );

        let mut bytes = good;
        bytes.pop();
        std::fs::write(&path, &bytes).unwrap();
        assert!(
            Hints::read(&path)
                .unwrap_err()
                .to_string()
                .contains("truncated")
        );
        bytes[0] = b'X';
        std::fs::write(&path, &bytes).unwrap();
        assert!(
            Hints::read(&path)
                .unwrap_err()
                .to_string()
                .contains("magic")
        );
        std::fs::write(&path, &bytes[..20]).unwrap();
        assert!(
            Hints::read(&path)
                .unwrap_err()
                .to_string()
                .contains("too short")
        );
    }

    #[test]
    fn combine_checks_ranges_and_xors() {
        let mut a = sample(0..4, 1);
        let b = sample(4..10, 2);
        assert!(a.clone().combine(&sample(2..10, 2)).is_err());
        assert!(a.clone().combine(&sample(5..10, 2)).is_err());
        let mut other_key = b.clone();
        other_key.fingerprint = [8; 32];
        assert!(a.clone().combine(&other_key).is_err());
        let all = Hints::combine_all(vec![b.clone(), a.clone()]).unwrap();
        a.combine(&b).unwrap();
        assert_eq!(a, all);
        assert_eq!(a.blocks(), 0..10);
        assert!(a.is_complete());
        assert_eq!(a.second_parity(5), Some(&[3u8, 3, 3][..]));
        assert_eq!(a.parity(0), Some(&[3u8, 3, 3][..]));
        assert_eq!(a.second_parity(4), None);
        assert_eq!(a.parity(9), None);
    }
}
