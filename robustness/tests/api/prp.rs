//! `prp` under extreme values, many threads and GPU faults.

// Test code throughout: its helpers unwrap as the tests do.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;

use crate::assert_send_sync;
use prp::{
    BLOCK_BYTES, ChaCha8, ChaCha20, Cpu, Error, Evaluator, Iprf, IprfTables, Key, Keystream,
    MAX_BALLS, MAX_BINS, MAX_ROUNDS, MAX_TABLE_DOMAIN, Permutation, Pmns, R8, SometimesRecurse,
    SwapOrNot, derive, stage_rounds,
};

#[test]
fn backends_and_keyed_types_are_send_and_sync() {
    assert_send_sync::<Cpu>();
    #[cfg(feature = "cuda")]
    assert_send_sync::<prp::Cuda>();
    #[cfg(feature = "cuda")]
    assert_send_sync::<prp::MultiGpu>();
    assert_send_sync::<prp::Backend>();
    assert_send_sync::<Key>();
    assert_send_sync::<ChaCha8>();
    assert_send_sync::<SwapOrNot>();
    assert_send_sync::<SometimesRecurse>();
    assert_send_sync::<Pmns>();
    assert_send_sync::<Iprf>();
    assert_send_sync::<IprfTables>();
    assert_send_sync::<Error>();
}

fn key(seed: u8) -> Key {
    Key::new(&[seed; 32])
}

/// u64 values at the edges, and any.
fn extreme_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1),
        Just(2),
        Just(u64::MAX),
        Just(u64::MAX - 1),
        Just(1 << 32),
        Just((1 << 32) + 1),
        (0u32..64).prop_map(|b| 1u64 << b),
        any::<u64>(),
    ]
}

/// Domains small enough to build a PRP in debug in well under a millisecond per round.
fn extreme_u32() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(0u32),
        Just(1),
        Just(u32::MAX),
        Just(u32::MAX - 1),
        any::<u32>()
    ]
}

#[test]
fn constructors_refuse_what_they_cannot_do() {
    for domain in [0, 1] {
        assert!(matches!(
            SwapOrNot::new(key(1), domain, 8),
            Err(Error::DomainTooSmall { .. })
        ));
        assert!(matches!(
            SometimesRecurse::new(key(1), domain),
            Err(Error::DomainTooSmall { .. })
        ));
    }
    for rounds in [MAX_ROUNDS + 1, u32::MAX] {
        assert!(matches!(
            SwapOrNot::new(key(1), 100, rounds),
            Err(Error::TooManyRounds { .. })
        ));
    }
    // A lambda whose round counts pass MAX_ROUNDS.
    assert!(matches!(
        SometimesRecurse::with_variant(R8, key(1), 1000, u32::MAX),
        Err(Error::TooManyRounds { .. })
    ));
    assert!(matches!(Pmns::new(key(1), 0, 4), Err(Error::EmptyDomain)));
    for bins in [0, 3, u64::MAX, (1 << 40) + 1] {
        assert!(matches!(
            Pmns::new(key(1), 10, bins),
            Err(Error::BinsNotPowerOfTwo { .. })
        ));
    }
    assert!(matches!(
        Pmns::new(key(1), MAX_BALLS + 1, 4),
        Err(Error::TooLarge { .. })
    ));
    assert!(matches!(
        Pmns::new(key(1), 10, MAX_BINS * 2),
        Err(Error::TooLarge { .. })
    ));
    assert!(matches!(Iprf::new(key(1), 0, 4), Err(Error::EmptyDomain)));
    assert!(matches!(
        Iprf::new(key(1), u64::MAX, 4),
        Err(Error::TooLarge { .. })
    ));
    assert!(Iprf::new(key(1), 1, 1).is_ok());
    // Stage rounds for any input, without a panic.
    for (domain, lambda) in [(0, 0), (u64::MAX, u32::MAX), (2, 0), (u64::MAX, 0)] {
        for (size, rounds) in stage_rounds(domain, lambda) {
            assert!(size >= 2 && rounds > 0);
        }
    }
}

#[test]
fn permutations_over_the_largest_domain() {
    let prp = SwapOrNot::new(key(2), u64::MAX, 16).unwrap();
    for x in [0, 1, u64::MAX - 1, u64::MAX / 2] {
        let y = prp.forward(x).unwrap();
        assert!(y < u64::MAX);
        assert_eq!(prp.inverse(y).unwrap(), x);
    }
    assert!(matches!(
        prp.forward(u64::MAX),
        Err(Error::OutOfDomain { .. })
    ));
    // The whole-domain tables stop at 2^32 values, before allocating.
    assert!(matches!(
        Cpu.forward_table(&prp),
        Err(Error::TooLarge { .. })
    ));
    let just_over = SwapOrNot::new(key(2), MAX_TABLE_DOMAIN + 1, 4).unwrap();
    assert!(matches!(
        Cpu.inverse_table(&just_over),
        Err(Error::TooLarge { .. })
    ));
}

#[test]
fn keystreams_stop_at_the_end_of_the_counter() {
    let stream = ChaCha20::new(key(3), [1, 2, 3]);
    let mut out = vec![0u8; 2 * BLOCK_BYTES + 1];
    assert!(matches!(
        Cpu.fill_keystream(&stream, u32::MAX - 1, &mut out),
        Err(Error::CounterOverflow { .. })
    ));
    let mut last = [0u8; BLOCK_BYTES];
    Cpu.fill_keystream(&stream, u32::MAX, &mut last).unwrap();
    assert_eq!(last.to_vec(), words_le(&stream.block(u32::MAX)));
    Cpu.fill_keystream(&stream, u32::MAX, &mut []).unwrap();
    for (counter, blocks) in [(u32::MAX, 2), (1, u64::MAX), (0, (1 << 32) + 1)] {
        assert!(matches!(
            Cpu.keystream_digest(&stream, counter, blocks),
            Err(Error::CounterOverflow { .. })
        ));
    }
    assert_eq!(Cpu.keystream_digest(&stream, u32::MAX, 0).unwrap(), [0; 16]);
    assert_eq!(
        Cpu.keystream_digest(&stream, u32::MAX, 1).unwrap(),
        stream.block(u32::MAX)
    );
}

fn words_le(words: &[u32; 16]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A batch with any value: outside the domain it is an error that leaves the batch as it
    /// was; inside, the batch equals single evaluations.
    #[test]
    fn batches_check_every_value(domain in extreme_u64(), values in prop::collection::vec(extreme_u64(), 0..6)) {
        let prp = match SwapOrNot::new(key(4), domain, 6) {
            Ok(prp) => prp,
            Err(Error::DomainTooSmall { .. }) => { prop_assert!(domain < 2); return Ok(()); }
            Err(other) => panic!("{other}"),
        };
        let mut batch = values.clone();
        match Cpu.forward_batch(&prp, &mut batch) {
            Ok(()) => {
                for (x, y) in values.iter().zip(&batch) {
                    prop_assert_eq!(prp.forward(*x).unwrap(), *y);
                }
                Cpu.inverse_batch(&prp, &mut batch).unwrap();
                prop_assert_eq!(&batch, &values);
            }
            Err(Error::OutOfDomain { value, domain: d }) => {
                prop_assert!(value >= d && d == domain);
                prop_assert_eq!(&batch, &values);
            }
            Err(other) => panic!("{other}"),
        }
    }

    /// The sampler and the iPRF with any ball and bin count: an error, or answers that agree.
    #[test]
    fn samplers_answer_or_refuse(balls in extreme_u64(), bins in extreme_u64(), x in extreme_u64(), y in extreme_u64()) {
        match Pmns::new(key(5), balls, bins) {
            Ok(pmns) => {
                prop_assert!((1..=MAX_BALLS).contains(&balls) && bins.is_power_of_two());
                // Walking the tree costs balls / 512 blocks per level: only small samplers here.
                if balls <= 1 << 16 && bins <= 1 << 16 {
                    match pmns.bin(x) {
                        Ok(bin) => prop_assert!(pmns.range(bin).unwrap().contains(&x)),
                        Err(Error::OutOfDomain { .. }) => prop_assert!(x >= balls),
                        Err(other) => panic!("{other}"),
                    }
                    match pmns.range(y) {
                        Ok(range) => prop_assert!(y < bins && range.end <= balls),
                        Err(Error::OutOfRange { .. }) => prop_assert!(y >= bins),
                        Err(other) => panic!("{other}"),
                    }
                }
            }
            Err(Error::EmptyDomain) => prop_assert_eq!(balls, 0),
            Err(Error::BinsNotPowerOfTwo { .. }) => prop_assert!(!bins.is_power_of_two()),
            Err(Error::TooLarge { .. }) => prop_assert!(balls > MAX_BALLS || bins > MAX_BINS),
            Err(other) => panic!("{other}"),
        }
    }

    /// (Security 1 and small domains: preimages cost a PRP inverse each, slow in debug.)
    #[test]
    fn iprf_inputs_outside_are_errors(domain in 1u64..50, bins_log2 in 0u32..6, x in extreme_u64(), y in extreme_u64()) {
        let bins = 1u64 << bins_log2;
        let iprf = Iprf::with_variant(R8, key(6), domain, bins, 1).unwrap();
        match iprf.forward(x) {
            Ok(bin) => prop_assert!(x < domain && iprf.preimages(bin).unwrap().contains(&x)),
            Err(Error::OutOfDomain { .. }) => prop_assert!(x >= domain),
            Err(other) => panic!("{other}"),
        }
        let tables = Cpu.iprf_tables(&iprf).unwrap();
        match (iprf.preimages(y), tables.preimages(y)) {
            (Ok(direct), Ok(table)) => {
                let mut table: Vec<u64> = table.iter().map(|&v| u64::from(v)).collect();
                let mut direct = direct;
                table.sort_unstable();
                direct.sort_unstable();
                prop_assert_eq!(direct, table);
            }
            (Err(Error::OutOfRange { .. }), Err(Error::OutOfRange { .. })) => prop_assert!(y >= bins),
            other => panic!("{other:?}"),
        }
    }

    /// Keystream fills at any counter and length: an error exactly when a block passes 2^32 - 1.
    #[test]
    fn keystream_fills_near_the_counter_end(counter in extreme_u32(), len in 0usize..300) {
        let stream = ChaCha8::new(key(7), [0, 0, 0]);
        let mut out = vec![0u8; len];
        let blocks = len.div_ceil(BLOCK_BYTES) as u64;
        match Cpu.fill_keystream(&stream, counter, &mut out) {
            Ok(()) => {
                prop_assert!(u64::from(counter) + blocks <= 1 << 32);
                for (i, chunk) in out.chunks(BLOCK_BYTES).enumerate() {
                    let block = words_le(&stream.block(counter + i as u32));
                    prop_assert_eq!(chunk, &block[..chunk.len()]);
                }
            }
            Err(Error::CounterOverflow { .. }) => prop_assert!(u64::from(counter) + blocks > 1 << 32),
            Err(other) => panic!("{other}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Secrets.

/// The ways a derived `Debug` would print `key`'s bytes and words: decimal and hex, the byte
/// array as a list, and each word.
fn renderings(bytes: &[u8; 32]) -> Vec<String> {
    let key = Key::new(bytes);
    let mut shown = vec![
        format!("{:?}", &bytes[..4]),
        format!("{:?}", &key.words()[..2]),
        format!("{:x?}", &key.words()[..2]),
    ];
    for word in key.words() {
        shown.push(word.to_string());
        shown.push(format!("{word:x}"));
        shown.push(format!("{word:08x}"));
    }
    shown
}

fn assert_hidden(text: &str, secrets: &[String]) {
    for secret in secrets {
        assert!(!text.contains(secret.as_str()), "{text:?} shows {secret:?}");
    }
}

#[test]
fn debug_output_never_shows_key_material() {
    // Words of eight or more digits, so that no size or count printed beside them matches.
    let bytes: [u8; 32] =
        core::array::from_fn(|i| 0xa1u8.wrapping_add(37u8.wrapping_mul(i as u8)) | 0x80);
    let mut secrets = renderings(&bytes);
    // The keys derived inside the iPRF are secrets too.
    for label in ["iprf/prp", "iprf/pmns"] {
        let child = derive(&Key::new(&bytes), label, 0);
        let child_bytes: Vec<u8> = child.words().iter().flat_map(|w| w.to_le_bytes()).collect();
        secrets.extend(renderings(&child_bytes.try_into().unwrap()));
    }
    let key = Key::new(&bytes);
    let iprf = Iprf::new(key.clone(), 1000, 16).unwrap();
    let tables = Cpu.iprf_tables(&iprf).unwrap();
    let shown = [
        format!("{key:?}"),
        format!("{:?}", ChaCha8::new(key.clone(), [1, 2, 3])),
        format!("{:?}", SwapOrNot::new(key.clone(), 1000, 12).unwrap()),
        format!("{:?}", SometimesRecurse::new(key.clone(), 1000).unwrap()),
        format!("{:?}", Pmns::new(key.clone(), 1000, 16).unwrap()),
        format!("{iprf:?}"),
        format!("{tables:?}"),
        format!("{:#?}", Iprf::new(key, 5000, 64).unwrap()),
    ];
    for text in &shown {
        assert_hidden(text, &secrets);
    }
    // The tables are the keyed function itself: their Debug shows sizes, not the permutation.
    assert_eq!(
        format!("{tables:?}"),
        "IprfTables { domain: 1000, bins: 16, .. }"
    );
}

// ---------------------------------------------------------------------------------------------
// GPU.

#[cfg(feature = "cuda")]
mod gpu {
    use super::*;
    use crate::kernels::{assert_out_of_memory, fill_device_memory, gpu_lock};
    use prp::{Cuda, MultiGpu};

    /// Awkward sizes: not multiples of a block, a warp or 512.
    const SIZES: [usize; 7] = [1, 63, 65, 511, 513, 4097, 100_003];

    /// Eight threads share one `Cuda`, then one `MultiGpu` over this GPU given twice.
    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn eight_threads_share_one_backend() {
        let _lock = gpu_lock();
        let cuda = Cuda::new().unwrap();
        eight_threads_share(&cuda);
        eight_threads_share(&MultiGpu::on(&[cuda.gpu().clone(), cuda.gpu().clone()]).unwrap());
    }

    fn eight_threads_share<B: Evaluator + Sync>(backend: &B) {
        // Small enough that the CPU's share (the reference) stays at seconds in all.
        let prp = SometimesRecurse::new(key(8), 100_003).unwrap();
        let small = SwapOrNot::new(key(9), 4099, 100).unwrap();
        std::thread::scope(|scope| {
            for t in 0..8usize {
                let (backend, prp, small) = (backend, &prp, &small);
                scope.spawn(move || {
                    for call in 0..20usize {
                        let n = SIZES[(t + call) % SIZES.len()];
                        let stream = ChaCha8::new(key(t as u8), [call as u32, 0, 1]);
                        let counter = rand::random::<u32>() >> 1;
                        let (mut gpu, mut cpu) = (vec![0u8; n], vec![0u8; n]);
                        backend.fill_keystream(&stream, counter, &mut gpu).unwrap();
                        Cpu.fill_keystream(&stream, counter, &mut cpu).unwrap();
                        assert_eq!(gpu, cpu);
                        // Now and then a batch large enough for the page-locked staging.
                        let len = if call % 7 == 3 { 1 << 16 } else { n.min(500) };
                        let values: Vec<u64> = (0..len)
                            .map(|_| rand::random::<u64>() % prp.domain())
                            .collect();
                        let (mut gpu, mut cpu) = (values.clone(), values.clone());
                        if call % 2 == 0 {
                            backend.forward_batch(prp, &mut gpu).unwrap();
                            Cpu.forward_batch(prp, &mut cpu).unwrap();
                        } else {
                            // A refused batch in one thread leaves the others' work alone.
                            let refused = backend.inverse_batch(small, &mut gpu);
                            if values.iter().any(|&v| v >= small.domain()) {
                                assert!(matches!(refused, Err(Error::OutOfDomain { .. })));
                                assert_eq!(gpu, values);
                            }
                            gpu = values.clone();
                            backend.inverse_batch(prp, &mut gpu).unwrap();
                            Cpu.inverse_batch(prp, &mut cpu).unwrap();
                        }
                        assert_eq!(gpu, cpu);
                    }
                    assert_eq!(
                        backend.forward_table(small).unwrap(),
                        Cpu.forward_table(small).unwrap()
                    );
                });
            }
        });
    }

    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn out_of_memory_mid_batch_then_the_backend_works() {
        let _lock = gpu_lock();
        let cuda = Cuda::new().unwrap();
        let prp = SometimesRecurse::new(key(10), 1 << 22).unwrap();
        let stream = ChaCha8::new(key(11), [0, 0, 0]);
        // Compile the kernels and allocate the staging buffers while memory is free.
        let mut warm = vec![0u64; 1000];
        cuda.forward_batch(&prp, &mut warm).unwrap();
        cuda.fill_keystream(&stream, 0, &mut [0u8; 100]).unwrap();
        let mut digest_buffer = cuda.gpu().alloc_zeroed::<u8>(64).unwrap();
        let held = fill_device_memory(cuda.gpu(), 8 << 20);
        // A whole-domain table needs 16 MiB of device memory and more: refused with numbers.
        match cuda.inverse_table(&prp) {
            Err(Error::Gpu(error)) => assert_out_of_memory(&error),
            other => panic!("expected an out-of-memory error, got {other:?}"),
        }
        cuda.fill_keystream_device(&stream, 5, &mut digest_buffer)
            .unwrap();
        // A host batch large enough for the page-locked staging, whose first use allocates it:
        // refused, and no value changed.
        let values: Vec<u64> = (0..1u64 << 17).collect();
        let mut batch = values.clone();
        match cuda.forward_batch(&prp, &mut batch) {
            Err(Error::Gpu(error)) => assert_out_of_memory(&error),
            other => panic!("expected an out-of-memory error, got {other:?}"),
        }
        assert_eq!(batch, values);
        drop(held);
        cuda.forward_batch(&prp, &mut batch).unwrap();
        Cpu.inverse_batch(&prp, &mut batch).unwrap();
        assert_eq!(batch, values);
        assert_eq!(
            cuda.inverse_table(&prp).unwrap(),
            Cpu.inverse_table(&prp).unwrap()
        );
        assert_eq!(digest_buffer.to_host().unwrap(), words_le(&stream.block(5)));
    }
}
