//! Rp64_256 digests: four canonical field elements.

use std::fmt;

use crate::error::Error;
use crate::field::Felt;

/// A 256-bit Rp64_256 digest: four field elements in canonical form.
///
/// Serialised as 32 bytes, each element's canonical value little-endian, which is how
/// winter-crypto writes its `ElementDigest`.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct Digest([Felt; 4]);

impl Digest {
    /// A digest of these four elements.
    pub const fn new(elements: [Felt; 4]) -> Digest {
        Digest(elements)
    }

    /// The digest whose elements have these canonical values, or an error if one is `>= p`.
    pub fn from_u64s(values: [u64; 4]) -> Result<Digest, Error> {
        let mut elements = [Felt::ZERO; 4];
        for (out, value) in elements.iter_mut().zip(values) {
            *out = Felt::from_canonical(value)?;
        }
        Ok(Digest(elements))
    }

    /// The four elements.
    pub const fn elements(&self) -> &[Felt; 4] {
        &self.0
    }

    /// The canonical values of the four elements.
    pub fn to_u64s(&self) -> [u64; 4] {
        self.0.map(Felt::as_u64)
    }

    /// The 32-byte encoding: each canonical value as 8 little-endian bytes.
    pub fn to_bytes(&self) -> [u8; 32] {
        let mut bytes = [0u8; 32];
        for (chunk, element) in bytes.chunks_exact_mut(8).zip(&self.0) {
            chunk.copy_from_slice(&element.as_u64().to_le_bytes());
        }
        bytes
    }

    /// Reads the 32-byte encoding; an error if an element is not canonical.
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<Digest, Error> {
        let mut values = [0u64; 4];
        for (value, chunk) in values.iter_mut().zip(bytes.chunks_exact(8)) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            *value = u64::from_le_bytes(word);
        }
        Digest::from_u64s(values)
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({self})")
    }
}

/// Lower-case hex of the 32-byte encoding.
impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.to_bytes() {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}
