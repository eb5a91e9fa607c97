//! A second implementation of SPEC.md's "prp" section, written for the tests alone: ChaCha
//! from RustCrypto's `chacha20` crate, bits read from keystream bytes, plain loops, no tables.
//! The crate must agree with it bit for bit.
#![allow(dead_code)]

use chacha20::cipher::{KeyIvInit, StreamCipher, StreamCipherSeek};
use sha2::{Digest, Sha256};

/// The ChaCha8 keystream bytes of block `counter` of the stream `(key, nonce)`.
pub fn keystream_block(key: &[u8; 32], counter: u32, nonce: [u32; 3]) -> [u8; 64] {
    let mut nonce_bytes = [0u8; 12];
    for (dst, word) in nonce_bytes.chunks_exact_mut(4).zip(nonce) {
        dst.copy_from_slice(&word.to_le_bytes());
    }
    let mut cipher = chacha20::ChaCha8::new(key.into(), &nonce_bytes.into());
    cipher.seek(64 * u64::from(counter));
    let mut out = [0u8; 64];
    cipher.apply_keystream(&mut out);
    out
}

/// Bit `i` of the stream `(key, nonce)`: bit `i mod 8` of keystream byte `i / 8` (the same
/// as bit `i mod 32` of word `(i / 32) mod 16` of block `i / 512`, words being little-endian).
pub fn stream_bit(key: &[u8; 32], nonce: [u32; 3], i: u64) -> bool {
    let block = keystream_block(key, (i / 512) as u32, nonce);
    block[(i % 512 / 8) as usize] >> (i % 8) & 1 == 1
}

/// The SwapOrNot round key `K_r`: the first 16 keystream bytes as a little-endian u128, mod N.
pub fn round_key(key: &[u8; 32], stage: u32, round: u32, n: u64) -> u64 {
    let block = keystream_block(key, round, [stage, 0, u32::from_be_bytes(*b"KEYS")]);
    let wide = u128::from_le_bytes(block[..16].try_into().unwrap());
    (wide % u128::from(n)) as u64
}

/// One SwapOrNot round.
fn round(key: &[u8; 32], stage: u32, r: u32, n: u64, x: u64) -> u64 {
    let k = round_key(key, stage, r, n);
    let partner = ((u128::from(k) + u128::from(n) - u128::from(x)) % u128::from(n)) as u64;
    let xh = x.max(partner);
    let nonce = [
        (xh >> 41) as u32,
        (r << 8) | stage,
        u32::from_be_bytes(*b"SWAP"),
    ];
    // Stream bit Xh mod 512 of block lo32(Xh >> 9): the nonce's high word selects the 2^41-bit
    // segment, so the bit index within the stream is Xh mod 2^41.
    if stream_bit(key, nonce, xh % (1 << 41)) {
        partner
    } else {
        x
    }
}

/// SwapOrNot stage `stage` forward.
pub fn swap_or_not(key: &[u8; 32], stage: u32, n: u64, rounds: u32, x: u64) -> u64 {
    (0..rounds).fold(x, |x, r| round(key, stage, r, n, x))
}

/// SwapOrNot stage `stage` inverse.
pub fn swap_or_not_inverse(key: &[u8; 32], stage: u32, n: u64, rounds: u32, x: u64) -> u64 {
    (0..rounds).rev().fold(x, |x, r| round(key, stage, r, n, x))
}

/// The stages `(N_s, t_s)` of Sometimes-Recurse.
pub fn stages(n: u64, lambda: u32) -> Vec<(u64, u32)> {
    let mut sizes = vec![];
    let mut size = n;
    while size >= 2 {
        sizes.push(size);
        size /= 2;
    }
    let p = sizes.len() as f64;
    sizes
        .into_iter()
        .map(|n| {
            let t = 7.23 * (n as f64).log2() + 4.82 * (f64::from(lambda) + p.log2());
            (n, t.ceil() as u32)
        })
        .collect()
}

/// Sometimes-Recurse forward.
pub fn recurse(key: &[u8; 32], n: u64, lambda: u32, x: u64) -> u64 {
    let stages = stages(n, lambda);
    let mut y = x;
    for s in 0..stages.len() {
        y = swap_or_not(key, s as u32, stages[s].0, stages[s].1, y);
        if s + 1 == stages.len() || y >= stages[s + 1].0 {
            break;
        }
    }
    y
}

/// Sometimes-Recurse inverse.
pub fn recurse_inverse(key: &[u8; 32], n: u64, lambda: u32, z: u64) -> u64 {
    let stages = stages(n, lambda);
    let mut d = 0;
    while d + 1 < stages.len() && z < stages[d + 1].0 {
        d += 1;
    }
    let mut x = z;
    for s in (0..=d).rev() {
        x = swap_or_not_inverse(key, s as u32, stages[s].0, stages[s].1, x);
    }
    x
}

/// Balls node `(level, index)` holding `n` balls passes left: ones among the first `n` bits.
fn left(key: &[u8; 32], level: u32, index: u64, n: u64) -> u64 {
    let nonce = [index as u32, level, u32::from_be_bytes(*b"PMNS")];
    (0..n).filter(|&i| stream_bit(key, nonce, i)).count() as u64
}

/// The PMNS range `(start, len)` of bin `y` among `2^b` bins.
pub fn pmns_range(key: &[u8; 32], m: u64, b: u32, y: u64) -> (u64, u64) {
    let (mut index, mut start, mut n) = (0, 0, m);
    for level in 0..b {
        let l = left(key, level, index, n);
        if y >> (b - 1 - level) & 1 == 0 {
            index *= 2;
            n = l;
        } else {
            index = 2 * index + 1;
            start += l;
            n -= l;
        }
    }
    (start, n)
}

/// `derive(parent, label, index)`.
pub fn derive(parent: &[u8; 32], label: &str, index: u64) -> [u8; 32] {
    let mut input = parent.to_vec();
    input.extend_from_slice(label.as_bytes());
    input.push(0);
    input.extend_from_slice(&index.to_le_bytes());
    Sha256::digest(&input).into()
}

/// `F(k, x)` with `w = 2^b` bins, by searching the bins for the PRP image.
pub fn iprf(key: &[u8; 32], m: u64, b: u32, x: u64) -> u64 {
    let z = if m >= 2 {
        recurse(&derive(key, "iprf/prp", 0), m, 128, x)
    } else {
        x
    };
    let ks = derive(key, "iprf/pmns", 0);
    (0..1u64 << b)
        .find(|&y| {
            let (start, len) = pmns_range(&ks, m, b, y);
            (start..start + len).contains(&z)
        })
        .unwrap()
}
