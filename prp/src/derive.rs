//! Key derivation and the domain-separation tags of SPEC.md ("Common building blocks").

use sha2::{Digest, Sha256};

use crate::key::Key;

/// The u32 tags that SPEC.md places in the ChaCha nonce to separate uses of one key.
pub mod tags {
    /// Round keys of SwapOrNot: `"KEYS"`.
    pub const KEYS: u32 = 0x4B45_5953;
    /// Swap bits of SwapOrNot: `"SWAP"`.
    pub const SWAP: u32 = 0x5357_4150;
    /// Split bits of the multinomial sampler: `"PMNS"`.
    pub const PMNS: u32 = 0x504D_4E53;
    /// Subset selection of PIR hints: `"SLCT"`.
    pub const SLCT: u32 = 0x534C_4354;
    /// RMS24 offsets: `"OFFS"`.
    pub const OFFS: u32 = 0x4F46_4653;
    /// The extra block of PIR hints: `"EXTR"`.
    pub const EXTR: u32 = 0x4558_5452;
}

/// `derive(parent, label, index) = SHA-256(parent || label || 0x00 || index as u64 LE)`: a
/// child key for one use of a parent key. The hasher, which holds the parent key's bytes,
/// wipes its state when it is dropped.
///
/// ```
/// use prp::{Key, derive};
///
/// let master = Key::new(&[9; 32]);
/// let a = derive(&master, "plinko/block", 0);
/// let b = derive(&master, "plinko/block", 1);
/// assert_ne!(a.words(), b.words());
/// ```
pub fn derive(parent: &Key, label: &str, index: u64) -> Key {
    let mut hasher = Sha256::new();
    for word in parent.words() {
        hasher.update(word.to_le_bytes());
    }
    hasher.update(label.as_bytes());
    hasher.update([0u8]);
    hasher.update(index.to_le_bytes());
    Key::from(<[u8; 32]>::from(hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hasher_wipes_the_parent_key() {
        fn wiped_on_drop<T: zeroize::ZeroizeOnDrop>() {}
        wiped_on_drop::<Sha256>();
    }

    #[test]
    fn tags_spell_their_names() {
        for (tag, name) in [
            (tags::KEYS, "KEYS"),
            (tags::SWAP, "SWAP"),
            (tags::PMNS, "PMNS"),
            (tags::SLCT, "SLCT"),
            (tags::OFFS, "OFFS"),
            (tags::EXTR, "EXTR"),
        ] {
            assert_eq!(&tag.to_be_bytes(), name.as_bytes());
        }
    }
}
