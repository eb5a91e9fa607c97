//! The ChaCha block function (RFC 8439 state layout): one generic core, with the round
//! count as a type marker (`ChaCha8`, `ChaCha12`, `ChaCha20` are aliases).

use std::marker::PhantomData;

use crate::error::Error;
use crate::key::Key;

/// "expand 32-byte k" as four little-endian words: state words 0..3.
pub const CONSTANTS: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// Bytes in one ChaCha block.
pub const BLOCK_BYTES: usize = 64;

mod sealed {
    pub trait Sealed {}
}

/// A ChaCha round count, as a type: [`R8`], [`R12`] or [`R20`].
pub trait Rounds: sealed::Sealed + Copy + std::fmt::Debug + Send + Sync + 'static {
    /// Number of rounds (each column or diagonal pass counts as one).
    const ROUNDS: u32;
}

macro_rules! rounds {
    ($(#[$doc:meta] $name:ident = $n:literal),* $(,)?) => {$(
        #[$doc]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name;
        impl sealed::Sealed for $name {}
        impl Rounds for $name {
            const ROUNDS: u32 = $n;
        }
    )*};
}

rounds! {
    /// 8 rounds: ChaCha8, the workspace's default.
    R8 = 8,
    /// 12 rounds: ChaCha12.
    R12 = 12,
    /// 20 rounds: ChaCha20 (RFC 8439).
    R20 = 20,
}

#[inline(always)]
fn quarter_round(x: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize) {
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(16);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(12);
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(8);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(7);
}

/// `block(key, counter, nonce)` of SPEC.md: the state after `R::ROUNDS` rounds plus the
/// input state, as 16 words. Its little-endian bytes are the keystream at byte `64 * counter`.
#[inline]
pub fn block<R: Rounds>(key: &Key, counter: u32, nonce: [u32; 3]) -> [u32; 16] {
    let k = key.words();
    #[rustfmt::skip]
    let input = [
        CONSTANTS[0], CONSTANTS[1], CONSTANTS[2], CONSTANTS[3],
        k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7],
        counter, nonce[0], nonce[1], nonce[2],
    ];
    let mut x = input;
    for _ in 0..R::ROUNDS / 2 {
        quarter_round(&mut x, 0, 4, 8, 12);
        quarter_round(&mut x, 1, 5, 9, 13);
        quarter_round(&mut x, 2, 6, 10, 14);
        quarter_round(&mut x, 3, 7, 11, 15);
        quarter_round(&mut x, 0, 5, 10, 15);
        quarter_round(&mut x, 1, 6, 11, 12);
        quarter_round(&mut x, 2, 7, 8, 13);
        quarter_round(&mut x, 3, 4, 9, 14);
    }
    for (out, init) in x.iter_mut().zip(input) {
        *out = out.wrapping_add(init);
    }
    x
}

/// One ChaCha keystream: a key and a nonce, with the round count `R` as a type.
///
/// ```
/// use prp::{ChaCha8, Key};
///
/// let stream = ChaCha8::new(Key::new(&[7; 32]), [1, 2, 3]);
/// let words = stream.block(0);
/// assert_eq!(words.len(), 16);
/// ```
#[derive(Debug, Clone)]
pub struct ChaCha<R: Rounds> {
    key: Key,
    nonce: [u32; 3],
    rounds: PhantomData<R>,
}

/// ChaCha with 8 rounds.
pub type ChaCha8 = ChaCha<R8>;
/// ChaCha with 12 rounds.
pub type ChaCha12 = ChaCha<R12>;
/// ChaCha with 20 rounds.
pub type ChaCha20 = ChaCha<R20>;

impl<R: Rounds> ChaCha<R> {
    /// The stream of `key` and `nonce` (state words 13..15, as in SPEC.md's `[a, b, c]`).
    pub fn new(key: Key, nonce: [u32; 3]) -> Self {
        Self {
            key,
            nonce,
            rounds: PhantomData,
        }
    }

    /// The key.
    pub fn key(&self) -> &Key {
        &self.key
    }

    /// The nonce words.
    pub fn nonce(&self) -> [u32; 3] {
        self.nonce
    }

    /// Block `counter` of this stream.
    pub fn block(&self, counter: u32) -> [u32; 16] {
        block::<R>(&self.key, counter, self.nonce)
    }
}

/// Checks that blocks `counter .. counter + blocks` exist (the block counter is 32 bits), for
/// any `blocks` (a sum past `u64::MAX` included).
pub(crate) fn check_block_range(counter: u32, blocks: u64) -> Result<(), Error> {
    let end = u64::from(counter).checked_add(blocks);
    if end.is_none_or(|end| end > 1 << 32) {
        return Err(Error::CounterOverflow { counter, blocks });
    }
    Ok(())
}

/// Adds `block` into `acc`, word by word, wrapping.
pub(crate) fn add_into(acc: &mut [u32; 16], block: &[u32; 16]) {
    for (a, b) in acc.iter_mut().zip(block) {
        *a = a.wrapping_add(*b);
    }
}
