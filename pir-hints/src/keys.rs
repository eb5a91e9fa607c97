//! The master key, the keys derived from it, and key files.

use std::path::Path;

use prp::{Iprf, Key, R8, derive};
use zeroize::Zeroizing;

use crate::error::Error;
use crate::params::{Params, Scheme};

/// Bytes in a key file: the raw 32-byte master key, nothing else.
pub const KEY_FILE_BYTES: usize = 32;

/// The secret master key of a hint set and the keys derived from it (SPEC.md, "pir-hints").
///
/// Never printed (`Debug` hides it) and zeroed on drop. Hint files record only its
/// [`fingerprint`](Self::fingerprint), a one-way hash, so that `combine` and `verify` can tell
/// whether files and keys belong together.
#[derive(Clone, Debug)]
pub struct MasterKey {
    master: Key,
}

/// The label of the key fingerprint: `derive(master, FINGERPRINT_LABEL, 0)`.
const FINGERPRINT_LABEL: &str = "pir-hints/fingerprint";

impl MasterKey {
    /// The master key with these 32 bytes.
    pub fn new(bytes: &[u8; 32]) -> Self {
        Self {
            master: Key::new(bytes),
        }
    }

    /// Reads a key file: exactly [`KEY_FILE_BYTES`] raw bytes. A file of another length is
    /// refused before it is read (the error gives its length, never its contents).
    pub fn from_file(path: &Path) -> Result<Self, Error> {
        let wrong_length = |len: u64| {
            Error::KeyFile(format!(
                "{} holds {len} bytes; a key file holds exactly {KEY_FILE_BYTES}",
                path.display()
            ))
        };
        let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        if len != KEY_FILE_BYTES as u64 {
            return Err(wrong_length(len));
        }
        // One byte more than a key, so that a file that grew since its length was read is
        // refused too.
        let mut bytes = Zeroizing::new([0u8; KEY_FILE_BYTES + 1]);
        let read = read_up_to(&mut file, &mut bytes[..]).map_err(|e| Error::io(path, e))?;
        match <&[u8; KEY_FILE_BYTES]>::try_from(&bytes[..read]) {
            Ok(key) => Ok(Self::new(key)),
            Err(_) => Err(wrong_length(read as u64)),
        }
    }

    /// The select key `ks` of a scheme: `derive(master, "rms24/prf", 0)` or
    /// `derive(master, "plinko/select", 0)`.
    pub fn select_key(&self, scheme: Scheme) -> Key {
        match scheme {
            Scheme::Rms24 => derive(&self.master, "rms24/prf", 0),
            Scheme::Plinko => derive(&self.master, "plinko/select", 0),
        }
    }

    /// Plinko's key of block `a`: `derive(master, "plinko/block", a)`.
    pub fn block_key(&self, block: u64) -> Key {
        derive(&self.master, "plinko/block", block)
    }

    /// Plinko's iPRF of block `a`: keyed by [`Self::block_key`], from the `M + q` hints to the
    /// `w` offsets of a block, its PRP at the parameters' `lambda`.
    pub fn block_iprf(&self, params: &Params, block: u64) -> Result<Iprf, Error> {
        Ok(Iprf::with_variant(
            R8,
            self.block_key(block),
            params.total_hints(),
            params.block_size(),
            params.lambda(),
        )?)
    }

    /// A public, one-way fingerprint of the key: the bytes of
    /// `derive(master, "pir-hints/fingerprint", 0)`.
    pub fn fingerprint(&self) -> [u8; 32] {
        let words = derive(&self.master, FINGERPRINT_LABEL, 0);
        let mut bytes = [0u8; 32];
        for (dst, word) in bytes.chunks_exact_mut(4).zip(words.words()) {
            dst.copy_from_slice(&word.to_le_bytes());
        }
        bytes
    }
}

/// Reads into `buffer` until it is full or the file ends; returns the bytes read.
fn read_up_to(file: &mut std::fs::File, buffer: &mut [u8]) -> std::io::Result<usize> {
    use std::io::Read;
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}
