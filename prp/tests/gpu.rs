//! The CUDA backend against the CPU reference on fresh random inputs. Ignored by default:
//! run with `cargo test --release -- --include-ignored` on a CUDA machine. They fail, never
//! skip, when no GPU is usable.
#![cfg(feature = "cuda")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::OnceLock;

use proptest::prelude::*;
use prp::{ChaCha, ChaCha8, Cpu, Cuda, Error, Key, Keystream, R8, R12, R20, Rounds};

fn cuda() -> &'static Cuda {
    static CUDA: OnceLock<Cuda> = OnceLock::new();
    CUDA.get_or_init(|| Cuda::new().expect("these tests need a usable CUDA GPU"))
}

fn check_fill<R: Rounds>(
    key: [u8; 32],
    nonce: [u32; 3],
    counter: u32,
    len: usize,
) -> Result<(), TestCaseError> {
    let stream = ChaCha::<R>::new(Key::new(&key), nonce);
    let mut expected = vec![0u8; len];
    Cpu.fill_keystream(&stream, counter, &mut expected).unwrap();
    let mut got = vec![0x5au8; len];
    cuda().fill_keystream(&stream, counter, &mut got).unwrap();
    prop_assert!(
        got == expected,
        "ChaCha{} fill differs: len {len}, counter {counter}",
        R::ROUNDS
    );
    Ok(())
}

fn check_digest<R: Rounds>(
    key: [u8; 32],
    nonce: [u32; 3],
    counter: u32,
    blocks: u64,
) -> Result<(), TestCaseError> {
    let stream = ChaCha::<R>::new(Key::new(&key), nonce);
    let expected = Cpu.keystream_digest(&stream, counter, blocks).unwrap();
    let got = cuda().keystream_digest(&stream, counter, blocks).unwrap();
    prop_assert_eq!(
        got,
        expected,
        "ChaCha{} digest: blocks {}, counter {}",
        R::ROUNDS,
        blocks,
        counter
    );
    Ok(())
}

/// Lengths around block and thread-block boundaries, and a few random ones.
fn awkward_len() -> impl Strategy<Value = usize> {
    prop_oneof![
        Just(0usize),
        Just(1),
        Just(63),
        Just(64),
        Just(65),
        Just(64 * 256 - 1),
        Just(64 * 256 + 1),
        1usize..5_000,
        5_000usize..3_000_000,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn gpu_fill_equals_cpu(key: [u8; 32], nonce: [u32; 3], counter in 0u32..=u32::MAX - 50_000, len in awkward_len()) {
        check_fill::<R8>(key, nonce, counter, len)?;
        check_fill::<R12>(key, nonce, counter, len % 100_000)?;
        check_fill::<R20>(key, nonce, counter, len % 100_000)?;
    }

    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn gpu_digest_equals_cpu(key: [u8; 32], nonce: [u32; 3], counter: u32, blocks in 0u64..2_000_000) {
        let blocks = blocks.min((1u64 << 32) - u64::from(counter));
        check_digest::<R8>(key, nonce, counter, blocks)?;
        check_digest::<R12>(key, nonce, counter, blocks % 50_000)?;
        check_digest::<R20>(key, nonce, counter, blocks % 50_000)?;
    }
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn gpu_fill_ends_at_the_last_counter_and_spans_host_chunks() {
    // Ends exactly at block 2^32 - 1.
    check_fill::<R8>([0xee; 32], [3, 2, 1], u32::MAX - 99, 100 * 64).unwrap();
    // Many staging chunks with a partial final block, from an odd counter.
    check_fill::<R8>([0x11; 32], [0, 0, 1], 12_345, (1 << 26) + (1 << 20) + 7).unwrap();
    // Several chunks whose last, short one ends exactly at block 2^32 - 1.
    let blocks: u32 = 3 * (1 << 18) + 100;
    check_fill::<R8>(
        [0x22; 32],
        [4, 4, 4],
        u32::MAX - (blocks - 1),
        blocks as usize * 64 - 5,
    )
    .unwrap();
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn gpu_digest_of_many_blocks_equals_cpu() {
    // Several passes of the grid-stride loop on any GPU.
    check_digest::<R8>([0x42; 32], [9, 9, 9], 1_000, 50_000_003).unwrap();
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn gpu_device_fill_equals_cpu_and_rejects_partial_blocks() {
    let stream = ChaCha8::new(Key::new(&[0x77; 32]), [5, 6, 7]);
    let blocks = 100_001usize;
    let mut device = cuda().gpu().alloc_zeroed::<u8>(blocks * 64).unwrap();
    cuda()
        .fill_keystream_device(&stream, 77, &mut device)
        .unwrap();
    let mut expected = vec![0u8; blocks * 64];
    Cpu.fill_keystream(&stream, 77, &mut expected).unwrap();
    assert!(device.to_host().unwrap() == expected);

    let mut partial = cuda().gpu().alloc_zeroed::<u8>(100).unwrap();
    let err = cuda()
        .fill_keystream_device(&stream, 0, &mut partial)
        .unwrap_err();
    assert!(
        matches!(err, Error::BufferLength { len: 100, unit: 64 }),
        "{err}"
    );
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn gpu_counter_overflow_is_an_error() {
    let stream = ChaCha8::new(Key::new(&[1; 32]), [0, 0, 0]);
    let mut out = vec![0u8; 129];
    assert!(matches!(
        cuda().fill_keystream(&stream, u32::MAX - 1, &mut out),
        Err(Error::CounterOverflow { .. })
    ));
    assert!(matches!(
        cuda().keystream_digest(&stream, 2, u64::from(u32::MAX)),
        Err(Error::CounterOverflow { .. })
    ));
}
