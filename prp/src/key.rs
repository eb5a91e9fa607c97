//! Secret keys.

use zeroize::{Zeroize, ZeroizeOnDrop};

/// A 256-bit secret key, held as eight little-endian words (the ChaCha key layout).
///
/// Its `Debug` output never shows key material, and the words are zeroed on drop. With the
/// `cuda` feature it is also a kernel parameter, laid out as `ChaChaKey` in `chacha.cuh`.
#[repr(C)]
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct Key {
    words: [u32; 8],
}

// SAFETY: a `#[repr(C)]` struct holding only `[u32; 8]`, laid out as `ChaChaKey` in
// prp/cuda/chacha.cuh (eight little-endian words).
#[cfg(feature = "cuda")]
unsafe impl kernels::DeviceRepr for Key {}

impl Key {
    /// A key from its 32 bytes; word `i` is bytes `4i..4i+4` read little-endian.
    pub fn new(bytes: &[u8; 32]) -> Self {
        let mut words = [0u32; 8];
        for (word, chunk) in words.iter_mut().zip(bytes.chunks_exact(4)) {
            *word = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        }
        Self { words }
    }

    /// The key as eight little-endian words, as the ChaCha state and the GPU kernels take it.
    pub fn words(&self) -> &[u32; 8] {
        &self.words
    }
}

impl From<[u8; 32]> for Key {
    fn from(mut bytes: [u8; 32]) -> Self {
        let key = Self::new(&bytes);
        bytes.zeroize();
        key
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(<secret>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_key() {
        let key = Key::new(&[0xab; 32]);
        let shown = format!("{key:?}");
        assert_eq!(shown, "Key(<secret>)");
        assert!(!shown.contains("ab") && !shown.contains("171"));
    }

    #[test]
    fn words_are_little_endian() {
        let mut bytes = [0u8; 32];
        bytes[..4].copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(Key::new(&bytes).words()[0], 0x0403_0201);
    }
}
