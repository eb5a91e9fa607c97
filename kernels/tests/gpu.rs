//! The runtime on a real GPU. Ignored by default: run with `--include-ignored` on a CUDA
//! machine, where they fail (never skip) if no GPU is usable.
#![cfg(feature = "cuda")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use kernels::source::{COMMON, Module};
use kernels::{Gpu, GpuError, Grid};

/// Held by the tests that fill or empty the device's memory pool, which every handle in the
/// process shares (the tests of one file run on parallel threads).
static POOL: Mutex<()> = Mutex::new(());

/// The first GPU, with [`POOL`] held.
fn first_gpu_holding_pool() -> (MutexGuard<'static, ()>, Arc<Gpu>) {
    let guard = POOL.lock().unwrap_or_else(PoisonError::into_inner);
    (guard, Gpu::first().unwrap())
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn device_properties_are_read() {
    let count = kernels::device_count().unwrap();
    assert!(count >= 1, "no CUDA device visible");
    let gpu = Gpu::first().unwrap();
    let info = gpu.info();
    println!("{info:?}, free {} bytes", gpu.free_memory().unwrap());
    assert!(!info.name.is_empty());
    assert!(info.compute_capability.major >= 5);
    assert!(info.sm_count > 0);
    let free = gpu.free_memory().unwrap();
    assert!(free > 0 && free <= info.total_memory);
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn l2_fetch_granularity_is_set_and_restored() {
    // The limit is the context's, which every handle of the device shares: hold the pool's lock
    // so that no other test of this file sees the changed value.
    let (_pool, gpu) = first_gpu_holding_pool();
    let before = gpu.l2_fetch_granularity().unwrap();
    assert!(before <= 128, "{before}");
    for bytes in [32, 128] {
        gpu.set_l2_fetch_granularity(bytes).unwrap();
        assert_eq!(gpu.l2_fetch_granularity().unwrap(), bytes);
    }
    // Extreme requests are taken as the largest granularity, never an error or a panic.
    for bytes in [129, usize::MAX] {
        gpu.set_l2_fetch_granularity(bytes).unwrap();
        assert_eq!(gpu.l2_fetch_granularity().unwrap(), 128);
    }
    gpu.set_l2_fetch_granularity(before).unwrap();
    assert_eq!(gpu.l2_fetch_granularity().unwrap(), before);
    println!("L2 fetch granularity: {before} bytes by default");
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn freed_memory_stays_cached_until_released() {
    let (_pool, gpu) = first_gpu_holding_pool();
    let bytes = 256 << 20;
    drop(gpu.alloc_zeroed::<u8>(bytes).unwrap());
    gpu.synchronize().unwrap();
    let cached = gpu.cached_memory().unwrap();
    assert!(
        cached >= bytes,
        "{cached} bytes cached after freeing {bytes}"
    );
    assert!(gpu.free_memory().unwrap() >= cached);
    gpu.release_cached_memory().unwrap();
    let left = gpu.cached_memory().unwrap();
    assert!(left < bytes, "{left} bytes still cached after the release");
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn cached_memory_never_makes_an_allocation_fail() {
    let (_pool, gpu) = first_gpu_holding_pool();
    // Two buffers of 3/8 of the free memory, freed: the pool caches them as two pieces, and a
    // buffer of 5/8 fits in neither, nor in the memory left outside the pool. The driver must
    // make room for it (it did on the H100 without any help from `kernels`).
    let piece = gpu.free_memory().unwrap() / 8 * 3;
    let first = gpu.alloc_zeroed::<u8>(piece).unwrap();
    let second = gpu.alloc_zeroed::<u8>(piece).unwrap();
    drop((first, second));
    gpu.synchronize().unwrap();
    assert!(gpu.cached_memory().unwrap() >= 2 * piece);
    let large = gpu.alloc_zeroed::<u8>(piece / 3 * 5).unwrap();
    assert_eq!(large.len(), piece / 3 * 5);
    drop(large);
    gpu.release_cached_memory().unwrap();
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn missing_ordinal_is_no_device() {
    let count = kernels::device_count().unwrap();
    let err = Gpu::new(count).unwrap_err();
    assert!(
        matches!(err, GpuError::NoDevice { requested, available } if requested == count && available == count)
    );
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn buffers_round_trip_and_oversized_allocations_fail_cleanly() {
    let (_pool, gpu) = first_gpu_holding_pool();
    let data: Vec<u64> = (0..1_000_003u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .collect();
    let buffer = gpu.upload(&data).unwrap();
    assert_eq!(buffer.len(), data.len());
    assert_eq!(buffer.to_host().unwrap(), data);
    let mut head = vec![0u64; 17];
    buffer.copy_to_host(&mut head).unwrap();
    assert_eq!(head, data[..17]);
    let mut too_long = vec![0u64; data.len() + 1];
    assert!(matches!(
        buffer.copy_to_host(&mut too_long),
        Err(GpuError::BufferTooSmall { .. })
    ));

    let empty = gpu.upload::<u32>(&[]).unwrap();
    assert!(empty.is_empty());
    assert!(empty.to_host().unwrap().is_empty());

    let mut pinned = gpu.alloc_pinned::<u64>(1000).unwrap();
    assert!(pinned.as_slice().unwrap().iter().all(|&x| x == 0));
    buffer.copy_to_pinned_async(999, &mut pinned).unwrap();
    assert_eq!(pinned.as_slice().unwrap()[..999], data[..999]);
    assert_eq!(pinned.as_slice().unwrap()[999], 0);
    assert!(matches!(
        buffer.copy_to_pinned_async(1001, &mut pinned),
        Err(GpuError::BufferTooSmall { .. })
    ));

    // Back up from page-locked memory, at an offset, then the source is rewritten at once:
    // as_mut_slice must wait for the queued copy.
    let mut target = gpu.alloc_zeroed::<u64>(1003).unwrap();
    target.copy_from_pinned_async(3, &mut pinned, 999).unwrap();
    pinned.as_mut_slice().unwrap().fill(7);
    let back = target.to_host().unwrap();
    assert_eq!(back[..3], [0, 0, 0]);
    assert_eq!(back[3..1002], data[..999]);
    assert_eq!(back[1002], 0);
    assert!(matches!(
        target.copy_from_pinned_async(5, &mut pinned, 999),
        Err(GpuError::BufferTooSmall { .. })
    ));
    assert!(matches!(
        target.copy_from_pinned_async(0, &mut pinned, 1001),
        Err(GpuError::BufferTooSmall { .. })
    ));

    // Device to device, at offsets, queued on the stream; out-of-range copies are refused.
    let mut copy = gpu.alloc_zeroed::<u64>(1000).unwrap();
    copy.copy_from_device(10, &buffer, 500, 989).unwrap();
    copy.copy_from_device(0, &buffer, 0, 0).unwrap();
    let back = copy.to_host().unwrap();
    assert_eq!(back[..10], [0; 10]);
    assert_eq!(back[10..999], data[500..1489]);
    assert_eq!(back[999], 0);
    for (offset, src_offset, len) in [(12, 0, 989), (0, data.len() - 5, 6), (usize::MAX, 0, 1)] {
        assert!(matches!(
            copy.copy_from_device(offset, &buffer, src_offset, len),
            Err(GpuError::BufferTooSmall { .. })
        ));
    }

    let total = gpu.info().total_memory;
    match gpu.alloc_zeroed::<u8>(total + 1) {
        Err(GpuError::OutOfMemory { requested, free }) => assert!(requested > free),
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
}

/// A module of the test's own: `fill(out, n, seed)` writes `out[i] = seed * i + 7` as a
/// u32, for `i < n`, on any grid.
const FILL: Module = Module {
    name: "kernels_test_fill",
    source: r#"#include "common.cuh"
extern "C" __global__ void fill(u32* out, u64 n, u32 seed) {
    for (u64 i = global_thread_index(); i < n; i += grid_thread_count()) {
        out[i] = seed * (u32)i + 7u;
    }
}
extern "C" __global__ void add_into(u32* acc, const u32* in, u64 n, u64 spin_cycles) {
    const u64 start = clock64();
    while ((u64)clock64() - start < spin_cycles) {
    }
    for (u64 i = global_thread_index(); i < n; i += grid_thread_count()) {
        acc[i] += in[i];
    }
}
"#,
    headers: &[COMMON],
};

fn filled(n: usize, seed: u32) -> Vec<u32> {
    (0..n as u32)
        .map(|i| seed.wrapping_mul(i).wrapping_add(7))
        .collect()
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn kernels_load_time_and_report_missing_names() {
    let gpu = Gpu::first().unwrap();
    let kernel = gpu.kernel(&FILL, "fill").unwrap();
    assert!(kernel.registers().unwrap() > 0);
    assert!(matches!(
        gpu.kernel(&FILL, "no_such_kernel"),
        Err(GpuError::Compile { .. })
    ));

    let n = 64_001u64;
    let seed = 0x9e37_79b9u32;
    let mut out = gpu.alloc_zeroed::<u32>(n as usize).unwrap();
    let ((), elapsed) = gpu
        .time(|| {
            let launch = gpu
                .launch(&kernel, Grid::cover(n / 4, 256))
                .buffer_mut(&mut out)
                .value(&n)
                .value(&seed);
            // SAFETY: fill(u32*, u64, u32) with room for n words.
            unsafe { launch.run() }
        })
        .unwrap();
    assert!(elapsed.as_nanos() > 0);
    assert_eq!(out.to_host().unwrap(), filled(n as usize, seed));
}

/// The occupancy and attribute calls need the context current on the calling thread, which a
/// thread that has not launched anything lacks (CUDA_ERROR_INVALID_CONTEXT before they bound
/// it: msm's backend shared by eight threads failed so).
#[test]
#[ignore = "requires a CUDA GPU"]
fn kernel_queries_work_on_a_fresh_thread() {
    let gpu = Gpu::first().unwrap();
    let kernel = gpu.kernel(&FILL, "fill").unwrap();
    let here = kernel.blocks_per_sm(256, 0).unwrap();
    assert!(here >= 1);
    std::thread::spawn(move || {
        assert_eq!(kernel.blocks_per_sm(256, 0).unwrap(), here);
        kernel.allow_shared_bytes(64 * 1024).unwrap();
    })
    .join()
    .unwrap();
}

/// A smaller allowance after a larger one keeps the larger: another thread may be about to
/// launch with it (msm's eight threads on one backend failed with CUDA_ERROR_INVALID_VALUE
/// while a smaller allowance could undo a larger one).
#[test]
#[ignore = "requires a CUDA GPU"]
fn a_smaller_shared_allowance_keeps_the_larger() {
    let gpu = Gpu::first().unwrap();
    let kernel = gpu.kernel(&FILL, "fill").unwrap();
    let other = gpu.kernel(&FILL, "fill").unwrap();
    let (n, seed, large) = (1000u64, 3u32, 100 * 1024);
    kernel.allow_shared_bytes(large).unwrap();
    other.allow_shared_bytes(1024).unwrap();
    kernel.allow_shared_bytes(0).unwrap();
    let mut out = gpu.alloc_zeroed::<u32>(n as usize).unwrap();
    let grid = Grid {
        shared_bytes: large,
        ..Grid::cover(n, 256)
    };
    // SAFETY: fill(u32*, u64, u32) with room for n words; the dynamic shared memory is unused.
    unsafe {
        gpu.launch(&kernel, grid)
            .buffer_mut(&mut out)
            .value(&n)
            .value(&seed)
            .run()
            .unwrap();
    }
    assert_eq!(out.to_host().unwrap(), filled(n as usize, seed));
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn kernels_write_page_locked_memory_in_place() {
    let gpu = Gpu::first().unwrap();
    let kernel = gpu.kernel(&FILL, "fill").unwrap();
    let n = 333u64;
    let seed = 12_345u32;
    let mut device = gpu.alloc_zeroed::<u32>(n as usize).unwrap();
    let mut host = gpu.alloc_pinned::<u32>(n as usize + 5).unwrap();
    // SAFETY: fill(u32*, u64, u32) with room for n words in both outputs.
    unsafe {
        gpu.launch(&kernel, Grid::cover(n, 256))
            .buffer_mut(&mut device)
            .value(&n)
            .value(&seed)
            .run()
            .unwrap();
        gpu.launch(&kernel, Grid::cover(n, 256))
            .pinned(&mut host)
            .value(&n)
            .value(&seed)
            .run()
            .unwrap();
    }
    // as_slice waits for the kernel that writes the buffer in place.
    let written = host.as_slice().unwrap();
    assert_eq!(written[..n as usize], filled(n as usize, seed));
    assert_eq!(written[..n as usize], device.to_host().unwrap());
    assert_eq!(written[n as usize..], [0; 5]);
}

/// Copies on a copy queue, ordered with the handle's kernels by marks: each round's copy
/// overwrites an input only after the kernel of two rounds before has read it, and each kernel
/// reads its round's copy, so the sum is exact. Fast kernels meet a copy still in flight (a
/// kernel not waiting for its copy gives a wrong sum); kernels that first spin for about 20 ms
/// are still queued when the next copies could start (a copy not waiting for the kernel before
/// gives a wrong sum).
#[test]
#[ignore = "requires a CUDA GPU"]
fn copies_on_a_copy_queue_are_ordered_by_marks() {
    // Its buffers would take memory from the pool under the pool tests' feet.
    let (_pool, gpu) = first_gpu_holding_pool();
    let add = gpu.kernel(&FILL, "add_into").unwrap();
    let queue = gpu.copy_queue().unwrap();
    let n = 1usize << 22;
    let n64 = n as u64;
    let mut staging = [
        gpu.alloc_pinned::<u32>(n).unwrap(),
        gpu.alloc_pinned::<u32>(n).unwrap(),
    ];
    let mut inputs = [
        gpu.alloc_zeroed::<u32>(n).unwrap(),
        gpu.alloc_zeroed::<u32>(n).unwrap(),
    ];
    for spin_cycles in [0u64, 40_000_000] {
        let mut acc = gpu.alloc_zeroed::<u32>(n).unwrap();
        let mut expected = vec![0u32; n];
        let mut consumed = [gpu.mark().unwrap(), gpu.mark().unwrap()];
        for round in 0..8u32 {
            let slot = (round % 2) as usize;
            let seed = 0x0101_0101u32.wrapping_mul(round + 1);
            let words = filled(n, seed);
            for (e, x) in expected.iter_mut().zip(&words) {
                *e = e.wrapping_add(*x);
            }
            // Waits for this staging buffer's copy of two rounds ago.
            staging[slot]
                .as_mut_slice()
                .unwrap()
                .copy_from_slice(&words);
            queue.wait_for(&consumed[slot]).unwrap();
            queue
                .upload(&mut inputs[slot], 0, &mut staging[slot], n)
                .unwrap();
            gpu.wait_for(&queue.mark().unwrap()).unwrap();
            // SAFETY: add_into(u32*, const u32*, u64, u64) with n words in both buffers.
            unsafe {
                gpu.launch(&add, Grid::cover(n64, 256))
                    .buffer_mut(&mut acc)
                    .buffer(&inputs[slot])
                    .value(&n64)
                    .value(&spin_cycles)
                    .run()
                    .unwrap();
            }
            consumed[slot] = gpu.mark().unwrap();
        }
        assert_eq!(
            acc.to_host().unwrap(),
            expected,
            "kernels spinning {spin_cycles} cycles"
        );
    }
    // An upload past the end of the buffer is an error, not a copy.
    let mut small = gpu.alloc_zeroed::<u32>(4).unwrap();
    assert!(matches!(
        queue.upload(&mut small, 1, &mut staging[0], 4),
        Err(GpuError::BufferTooSmall { .. })
    ));
}

/// A device buffer dropped on a thread that made no driver call is freed there. Before
/// `DeviceBuffer`'s drop made its context current, cudarc's free failed on such a thread
/// (CUDA_ERROR_INVALID_CONTEXT), the memory stayed allocated, and the handle's next call
/// returned the error: merkle's `MultiGpu`, which drops on the caller's thread what other
/// threads allocated, failed so.
#[test]
#[ignore = "requires a CUDA GPU"]
fn buffers_dropped_on_a_fresh_thread_are_freed() {
    let (_pool, gpu) = first_gpu_holding_pool();
    gpu.release_cached_memory().unwrap();
    let n = 16usize << 20;
    let buffer = gpu.alloc_zeroed::<u32>(n).unwrap();
    gpu.synchronize().unwrap();
    std::thread::spawn(move || drop(buffer)).join().unwrap();
    gpu.synchronize().unwrap();
    assert!(
        gpu.cached_memory().unwrap() >= 4 * n,
        "the buffer's 64 MiB went back to the pool"
    );
    gpu.release_cached_memory().unwrap();
}

/// Each copy from or to page-locked memory works as the first driver call of a thread (the
/// raw copies need the context made current there).
#[test]
#[ignore = "requires a CUDA GPU"]
fn page_locked_copies_work_on_a_fresh_thread() {
    // Its buffers would take memory from the pool under the pool tests' feet.
    let (_pool, gpu) = first_gpu_holding_pool();
    let n = 1usize << 16;
    let words = filled(n, 0x9e37_79b9);
    let staged = || {
        let mut staging = gpu.alloc_pinned::<u32>(n).unwrap();
        staging.as_mut_slice().unwrap().copy_from_slice(&words);
        staging
    };
    let fresh_thread =
        |work: Box<dyn FnOnce() -> Vec<u32> + Send>| std::thread::spawn(work).join().unwrap();

    let (queue, mut staging, mut dst) = (
        gpu.copy_queue().unwrap(),
        staged(),
        gpu.alloc_zeroed::<u32>(n).unwrap(),
    );
    let handle = Arc::clone(&gpu);
    let uploaded = fresh_thread(Box::new(move || {
        queue.upload(&mut dst, 0, &mut staging, n).unwrap();
        handle.wait_for(&queue.mark().unwrap()).unwrap();
        dst.to_host().unwrap()
    }));
    assert_eq!(uploaded, words, "an upload on a copy queue");

    let (mut staging, mut dst) = (staged(), gpu.alloc_zeroed::<u32>(n).unwrap());
    let uploaded = fresh_thread(Box::new(move || {
        dst.copy_from_pinned_async(0, &mut staging, n).unwrap();
        dst.to_host().unwrap()
    }));
    assert_eq!(uploaded, words, "an upload on the handle's stream");

    let (src, mut back) = (
        gpu.upload(&words).unwrap(),
        gpu.alloc_pinned::<u32>(n).unwrap(),
    );
    let downloaded = fresh_thread(Box::new(move || {
        src.copy_to_pinned_async(n, &mut back).unwrap();
        back.as_slice().unwrap().to_vec()
    }));
    assert_eq!(downloaded, words, "a download");
}

/// `Staging` moves slices of awkward lengths in chunks of awkward sizes both ways. Uploads:
/// each chunk's kernel adds it into one accumulator of a chunk's length, so the sum is exact
/// only if every kernel reads its own chunk; kernels that spin for about 10 ms are still
/// running when the next chunks could land (an upload not waiting for the kernel of two chunks
/// before gives a wrong sum). Downloads: each chunk's device copy takes its part of a
/// buffer, and the host copies must land in order.
#[test]
#[ignore = "requires a CUDA GPU"]
fn staging_streams_slices_both_ways_in_order() {
    // Its buffers would take memory from the pool under the pool tests' feet.
    let (_pool, gpu) = first_gpu_holding_pool();
    let add = gpu.kernel(&FILL, "add_into").unwrap();
    let mut staging = kernels::Staging::<u32>::new(&gpu, 1 << 16).unwrap();
    assert_eq!(staging.capacity(), 1 << 16);
    let cases = [
        (0usize, 1usize, 0u64),
        (1, 1, 0),
        (5_000, 1, 0),
        (65_535, 1 << 16, 0),
        (65_536, 1 << 16, 0),
        (65_537, 1 << 16, 0),
        (1 << 20, 777, 0),
        (1_000_003, 1 << 16, 0),
        (9 * 4_099 + 5, 4_099, 20_000_000),
    ];
    for (seed, (len, chunk, spin_cycles)) in cases.into_iter().enumerate() {
        let words = filled(len, 0x9e37_79b9 ^ seed as u32);
        let mut acc = gpu.alloc_zeroed::<u32>(chunk).unwrap();
        let mut whole = gpu.alloc_zeroed::<u32>(len).unwrap();
        staging
            .to_device(&words, chunk, |i, part, n| {
                whole.copy_from_device(i * chunk, part, 0, n)?;
                let n64 = n as u64;
                // SAFETY: add_into(u32*, const u32*, u64, u64) with at least n words in both.
                unsafe {
                    gpu.launch(&add, Grid::cover(n64, 256))
                        .buffer_mut(&mut acc)
                        .buffer(part)
                        .value(&n64)
                        .value(&spin_cycles)
                        .run()
                }
            })
            .unwrap();
        let mut expected = vec![0u32; chunk];
        for part in words.chunks(chunk) {
            for (e, x) in expected.iter_mut().zip(part) {
                *e = e.wrapping_add(*x);
            }
        }
        let what = format!("{len} words in chunks of {chunk}");
        assert_eq!(acc.to_host().unwrap(), expected, "uploaded sums, {what}");
        assert_eq!(whole.to_host().unwrap(), words, "uploaded words, {what}");
        let mut back = vec![0u32; len];
        staging
            .from_device(&mut back, chunk, |i, part, n| {
                part.copy_from_device(0, &whole, i * chunk, n)
            })
            .unwrap();
        assert_eq!(back, words, "downloaded words, {what}");
    }
    // Chunks of nothing or larger than the staging's are errors, not transfers.
    for chunk in [0, (1 << 16) + 1] {
        let invalid = |e: &GpuError| matches!(e, GpuError::InvalidChunk { .. });
        let err = staging
            .to_device(&[1u32, 2], chunk, |_, _, _| Ok::<(), GpuError>(()))
            .unwrap_err();
        assert!(invalid(&err), "upload, chunk {chunk}: {err}");
        let err = staging
            .from_device(&mut [0u32; 2], chunk, |_, _, _| Ok::<(), GpuError>(()))
            .unwrap_err();
        assert!(invalid(&err), "download, chunk {chunk}: {err}");
    }
    // An error from the work stops a transfer and leaves the staging usable.
    let failing = |i: usize| match i {
        2 => Err(GpuError::NoCompiler),
        _ => Ok(()),
    };
    let err = staging
        .from_device(&mut vec![0u32; 5_000], 1_000, |i, _, _| failing(i))
        .unwrap_err();
    assert!(matches!(err, GpuError::NoCompiler), "{err}");
    let err = staging
        .to_device(&filled(5_000, 3), 1_000, |i, _, _| failing(i))
        .unwrap_err();
    assert!(matches!(err, GpuError::NoCompiler), "{err}");
    let words = filled(5_000, 5);
    let mut whole = gpu.alloc_zeroed::<u32>(words.len()).unwrap();
    staging
        .to_device(&words, 1_000, |i, part, n| {
            whole.copy_from_device(i * 1_000, part, 0, n)
        })
        .unwrap();
    let mut back = vec![0u32; words.len()];
    staging
        .from_device(&mut back, 1_000, |i, part, n| {
            part.copy_from_device(0, &whole, i * 1_000, n)
        })
        .unwrap();
    assert_eq!(back, words, "a round trip after the errors");
}

/// `Staging::copy_to_buffer` and `copy_from_buffer` move a slice into and out of a range of a
/// device buffer, leaving the rest as it was, and refuse a range past the buffer's end before
/// copying anything; `SharedStaging` makes its staging at the first transfer and again, larger,
/// for longer chunks, and its clones share it.
#[test]
#[ignore = "requires a CUDA GPU"]
fn staging_copies_ranges_of_buffers_and_grows_when_shared() {
    let (_pool, gpu) = first_gpu_holding_pool();
    let shared = kernels::SharedStaging::<u32>::new(&gpu);
    let clone = shared.clone();
    let (len, at) = (100_003usize, 777usize);
    let words = filled(len, 11);
    let background = filled(len + 2 * at, 12);
    let mut buffer = gpu.upload(&background).unwrap();
    shared
        .with(1_000, |s| s.copy_to_buffer(&words, 1_000, &mut buffer, at))
        .unwrap();
    let mut expected = background.clone();
    expected[at..at + len].copy_from_slice(&words);
    assert_eq!(buffer.to_host().unwrap(), expected, "uploaded into a range");
    // A clone sees the staging made with chunks of 1,000 and grows it for 4,099.
    assert_eq!(
        clone.with(1, |s| Ok::<_, GpuError>(s.capacity())).unwrap(),
        1_000
    );
    let mut back = vec![0u32; len];
    clone
        .with(4_099, |s| s.copy_from_buffer(&buffer, at, &mut back, 4_099))
        .unwrap();
    assert_eq!(back, words, "downloaded from a range");
    assert_eq!(
        shared.with(1, |s| Ok::<_, GpuError>(s.capacity())).unwrap(),
        4_099
    );
    // Ranges past the end: errors, and nothing written either way.
    let too_small = |e: &GpuError| matches!(e, GpuError::BufferTooSmall { .. });
    let err = shared
        .with(1_000, |s| {
            s.copy_to_buffer(&words, 1_000, &mut buffer, 2 * at + 1)
        })
        .unwrap_err();
    assert!(too_small(&err), "upload past the end: {err}");
    assert_eq!(
        buffer.to_host().unwrap(),
        expected,
        "buffer after a refused upload"
    );
    let mut untouched = vec![7u32; len];
    let err = shared
        .with(1_000, |s| {
            s.copy_from_buffer(&buffer, usize::MAX, &mut untouched, 1_000)
        })
        .unwrap_err();
    assert!(too_small(&err), "download past the end: {err}");
    assert!(
        untouched.iter().all(|&w| w == 7),
        "slice after a refused download"
    );
}
