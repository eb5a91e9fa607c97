//! The ChaCha block function and the CPU keystream against RustCrypto's `chacha20` and
//! RFC 8439.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use chacha20::cipher::{KeyIvInit, StreamCipher, StreamCipherSeek};
use proptest::prelude::*;
use prp::{ChaCha, ChaCha8, ChaCha12, ChaCha20, Cpu, Error, Key, Keystream, R8, R12, R20, Rounds};

/// RustCrypto's keystream of `len` bytes from byte `64 * counter`, for `R` rounds.
fn reference<R: Rounds>(key: &[u8; 32], nonce: [u32; 3], counter: u32, len: usize) -> Vec<u8> {
    let mut nonce_bytes = [0u8; 12];
    for (dst, word) in nonce_bytes.chunks_exact_mut(4).zip(nonce) {
        dst.copy_from_slice(&word.to_le_bytes());
    }
    let mut out = vec![0u8; len];
    macro_rules! run {
        ($cipher:ty) => {{
            let mut cipher = <$cipher>::new(key.into(), &nonce_bytes.into());
            cipher.seek(64 * u64::from(counter));
            cipher.apply_keystream(&mut out);
        }};
    }
    match R::ROUNDS {
        8 => run!(chacha20::ChaCha8),
        12 => run!(chacha20::ChaCha12),
        20 => run!(chacha20::ChaCha20),
        r => unreachable!("no reference for {r} rounds"),
    }
    out
}

fn block_bytes<R: Rounds>(key: &[u8; 32], counter: u32, nonce: [u32; 3]) -> Vec<u8> {
    prp::block::<R>(&Key::new(key), counter, nonce)
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect()
}

fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}

/// RFC 8439 §2.3.2: key 00..1f, nonce 00:00:00:09:00:00:00:4a:00:00:00:00, counter 1.
#[test]
fn rfc8439_block_test_vector() {
    let key: [u8; 32] = std::array::from_fn(|i| i as u8);
    let nonce = [0x0900_0000, 0x4a00_0000, 0];
    let expected = hex(
        "10 f1 e7 e4 d1 3b 59 15 50 0f dd 1f a3 20 71 c4 c7 d1 f4 c7 33 c0 68 03 04 22 aa 9a c3 d4 6c 4e
         d2 82 64 46 07 9f aa 09 14 c2 d7 05 d9 8b 02 a2 b5 12 9c d1 de 16 4e b9 cb d0 83 e8 a2 50 3c 4e",
    );
    assert_eq!(block_bytes::<R20>(&key, 1, nonce), expected);
    assert_eq!(reference::<R20>(&key, nonce, 1, 64), expected);
}

/// RustCrypto's `chacha20` at the first, an interior and the last counter it will produce
/// (it refuses block 2^32 - 1, which `fill_ends_exactly_at_the_last_block` covers).
#[test]
fn reduced_round_known_answers() {
    let key: [u8; 32] = std::array::from_fn(|i| (i as u8).wrapping_mul(37).wrapping_add(11));
    let nonce = [0xdead_beef, 0x0123_4567, 0x89ab_cdef];
    for counter in [0, 1, 0x0102_0304, u32::MAX - 1] {
        assert_eq!(
            block_bytes::<R8>(&key, counter, nonce),
            reference::<R8>(&key, nonce, counter, 64)
        );
        assert_eq!(
            block_bytes::<R12>(&key, counter, nonce),
            reference::<R12>(&key, nonce, counter, 64)
        );
        assert_eq!(
            block_bytes::<R20>(&key, counter, nonce),
            reference::<R20>(&key, nonce, counter, 64)
        );
    }
}

#[test]
fn chacha8_known_answer_all_zero_key() {
    // ChaCha8 block 0 of the all-zero key and nonce; its first bytes are the well-known
    // 3e 00 ef 2f 89 5f 40 d6 7f 5b b8 e8 1f 09 a5 a1 of the ChaCha8 test vectors.
    let bytes = block_bytes::<R8>(&[0; 32], 0, [0, 0, 0]);
    assert_eq!(bytes[..16], hex("3e00ef2f895f40d67f5bb8e81f09a5a1")[..]);
    assert_eq!(bytes, reference::<R8>(&[0; 32], [0, 0, 0], 0, 64));
}

fn check_fill<R: Rounds>(key: [u8; 32], nonce: [u32; 3], counter: u32, len: usize) {
    let stream = ChaCha::<R>::new(Key::new(&key), nonce);
    let mut out = vec![0xa5u8; len];
    Cpu.fill_keystream(&stream, counter, &mut out).unwrap();
    assert_eq!(out, reference::<R>(&key, nonce, counter, len));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn block_equals_chacha20_crate(key: [u8; 32], nonce: [u32; 3], counter in 0..u32::MAX) {
        prop_assert_eq!(block_bytes::<R8>(&key, counter, nonce), reference::<R8>(&key, nonce, counter, 64));
        prop_assert_eq!(block_bytes::<R12>(&key, counter, nonce), reference::<R12>(&key, nonce, counter, 64));
        prop_assert_eq!(block_bytes::<R20>(&key, counter, nonce), reference::<R20>(&key, nonce, counter, 64));
    }

    #[test]
    fn cpu_fill_equals_chacha20_crate(
        key: [u8; 32],
        nonce: [u32; 3],
        counter in 0u32..=u32::MAX - 2000,
        len in 0usize..100_000,
    ) {
        check_fill::<R8>(key, nonce, counter, len);
        check_fill::<R20>(key, nonce, counter, len % 1000);
    }

    #[test]
    fn digest_is_sum_of_blocks(key: [u8; 32], nonce: [u32; 3], counter: u32, blocks in 0u64..3000) {
        let blocks = blocks.min((1u64 << 32) - u64::from(counter));
        let stream = ChaCha12::new(Key::new(&key), nonce);
        let mut expected = [0u32; 16];
        for i in 0..blocks {
            for (e, w) in expected.iter_mut().zip(stream.block(counter + i as u32)) {
                *e = e.wrapping_add(w);
            }
        }
        prop_assert_eq!(Cpu.keystream_digest(&stream, counter, blocks).unwrap(), expected);
    }
}

/// The block counter's last value is usable: the keystream may end exactly at block 2^32 - 1
/// (RustCrypto stops one block earlier, so the last block is checked against `block`).
#[test]
fn fill_ends_exactly_at_the_last_block() {
    let key = [9u8; 32];
    let stream = ChaCha8::new(Key::new(&key), [1, 2, 3]);
    let mut out = vec![0u8; 4 * 64];
    Cpu.fill_keystream(&stream, u32::MAX - 3, &mut out).unwrap();
    assert_eq!(
        out[..192],
        reference::<R8>(&key, [1, 2, 3], u32::MAX - 3, 192)[..]
    );
    let last: Vec<u8> = stream
        .block(u32::MAX)
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    assert_eq!(out[192..], last[..]);
}

#[test]
fn counter_overflow_is_an_error() {
    let stream = ChaCha8::new(Key::new(&[0; 32]), [0, 0, 0]);
    let mut out = vec![0u8; 65];
    let err = Cpu.fill_keystream(&stream, u32::MAX, &mut out).unwrap_err();
    assert!(
        matches!(
            err,
            Error::CounterOverflow {
                counter: u32::MAX,
                blocks: 2
            }
        ),
        "{err}"
    );
    let err = Cpu.keystream_digest(&stream, 1, 1 << 32).unwrap_err();
    assert!(matches!(err, Error::CounterOverflow { .. }), "{err}");
    assert!(Cpu.keystream_digest(&stream, u32::MAX, 1).is_ok());
}

#[test]
fn empty_requests_succeed() {
    let stream = ChaCha20::new(Key::new(&[3; 32]), [0, 0, 0]);
    Cpu.fill_keystream(&stream, u32::MAX, &mut []).unwrap();
    assert_eq!(Cpu.keystream_digest(&stream, 5, 0).unwrap(), [0; 16]);
}

#[test]
fn best_backend_never_panics() {
    // Without a GPU (as on CI) this falls back to the CPU; with one it picks CUDA. Either
    // way it produces the reference keystream.
    let backend = prp::Backend::best();
    let stream = ChaCha8::new(Key::new(&[5; 32]), [7, 8, 9]);
    let mut out = vec![0u8; 777];
    backend.fill_keystream(&stream, 3, &mut out).unwrap();
    assert_eq!(out, reference::<R8>(&[5; 32], [7, 8, 9], 3, 777));
}
