//! The sponge of miden-crypto 0.28.1, shared by [`Rpo256`](crate::Rpo256),
//! [`Rpx256`](crate::Rpx256) and [`Poseidon2`](crate::Poseidon2).
//!
//! The 12-element state holds the rate in `s[0..8]`, the capacity in `s[8..12]` and the
//! digest in `s[0..4]` (the layout since miden-crypto 0.21.0; older releases put the capacity
//! first). `merge(L, R)` permutes `[L, R, 0, 0, 0, 0]`; `hash_elements` sets `s[8] = len mod
//! 8`, writes (not adds) each chunk of eight elements into the rate, zero-fills a final partial
//! chunk, and permutes after each chunk.

use crate::digest::Digest;
use crate::field::{self, Felt};

/// Elements in the state.
pub(crate) const STATE_WIDTH: usize = 12;
/// Elements absorbed per permutation.
pub(crate) const RATE: usize = 8;
/// The capacity element that receives the input length mod [`RATE`].
const LENGTH_SLOT: usize = 8;

pub(crate) use crate::rescue::State;

/// A permutation of the 12-element state (plain forms: see [`State`]).
pub(crate) trait Permutation {
    /// Permutes `state` in place.
    fn permute(state: &mut State);
}

/// `merge(left, right)`: the permutation of `[left, right, 0, 0, 0, 0]`, digest `s[0..4]`.
pub(crate) fn merge<P: Permutation>(left: &Digest, right: &Digest) -> Digest {
    let mut state: State = [0; STATE_WIDTH];
    for (slot, element) in state
        .iter_mut()
        .zip(left.elements().iter().chain(right.elements()))
    {
        *slot = element.as_u64();
    }
    P::permute(&mut state);
    digest_of(&state)
}

/// `hash_elements(elements)` as miden-crypto's sponge (see the module docs).
pub(crate) fn hash_elements<P: Permutation>(elements: &[Felt]) -> Digest {
    let mut state: State = [0; STATE_WIDTH];
    state[LENGTH_SLOT] = (elements.len() % RATE) as u64;
    for chunk in elements.chunks(RATE) {
        for (i, slot) in state[..RATE].iter_mut().enumerate() {
            *slot = chunk.get(i).map_or(0, |e| e.as_u64());
        }
        P::permute(&mut state);
    }
    digest_of(&state)
}

/// The canonical digest `s[0..4]`.
fn digest_of(state: &State) -> Digest {
    Digest::new(std::array::from_fn(|i| {
        Felt::new(field::canonical(state[i]))
    }))
}

/// `x^7` for every element.
#[inline(always)]
pub(crate) fn sbox(state: &mut State) {
    for x in state.iter_mut() {
        *x = crate::rescue::pow7(*x);
    }
}

/// Applies `P` to a canonical state.
pub(crate) fn permute_canonical<P: Permutation>(state: &mut [Felt; STATE_WIDTH]) {
    let mut held = state.map(Felt::as_u64);
    P::permute(&mut held);
    *state = held.map(|x| Felt::new(field::canonical(x)));
}
