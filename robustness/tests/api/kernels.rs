//! `kernels` under extreme values, many threads and GPU faults.
//!
//! Also the GPU helpers the other modules of this binary share: [`gpu_lock`], which keeps the
//! GPU tests of these modules from running at once (one of them fills the device's memory on
//! purpose), and [`fill_device_memory`].

// Test code throughout: its helpers unwrap as the tests do.
#![allow(clippy::unwrap_used)]
// The runtime exists only with the `cuda` feature (without it `kernels` is its error types).
#![cfg(feature = "cuda")]

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use kernels::source::{COMMON, Module};
use kernels::{DeviceBuffer, DeviceInfo, Gpu, GpuError, Grid, Kernel, PinnedBuffer};
use proptest::prelude::*;

use crate::assert_send_sync;

#[test]
fn runtime_types_are_send_and_sync() {
    assert_send_sync::<Gpu>();
    assert_send_sync::<Arc<Gpu>>();
    assert_send_sync::<DeviceInfo>();
    assert_send_sync::<DeviceBuffer<u32>>();
    assert_send_sync::<PinnedBuffer<u32>>();
    assert_send_sync::<Kernel>();
    assert_send_sync::<GpuError>();
}

#[test]
fn any_ordinal_is_an_error_or_a_device_never_a_panic() {
    // Without a driver (CI) every ordinal is NoDriver; with one, a missing ordinal is NoDevice.
    for ordinal in [usize::MAX, usize::MAX / 2, 1 << 20] {
        match Gpu::new(ordinal) {
            Err(GpuError::NoDriver) => {}
            Err(GpuError::NoDevice { requested, .. }) => assert_eq!(requested, ordinal),
            other => panic!("ordinal {ordinal}: expected NoDriver or NoDevice, got {other:?}"),
        }
    }
}

/// Items, threads per block: any values, including 0 and the maxima.
fn grid_inputs() -> impl Strategy<Value = (u64, u32)> {
    let items = prop_oneof![Just(0u64), Just(1), Just(u64::MAX), any::<u64>()];
    let threads = prop_oneof![
        Just(0u32),
        Just(1),
        Just(1024),
        Just(u32::MAX),
        any::<u32>()
    ];
    (items, threads)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// `Grid::cover` never overflows: at least one block, at most CUDA's 2^31 - 1, and enough
    /// threads for every item below that cap.
    #[test]
    fn grid_cover_is_within_cuda_limits((items, threads) in grid_inputs()) {
        let grid = Grid::cover(items, threads);
        prop_assert!(grid.blocks >= 1 && u64::from(grid.blocks) < 1 << 31);
        prop_assert_eq!(grid.threads, threads);
        let covered = u64::from(grid.blocks) * u64::from(threads.max(1));
        prop_assert!(covered >= items.min((1 << 31) - 1));
    }

    /// `Grid::per_sm` saturates instead of overflowing.
    #[test]
    fn grid_per_sm_saturates(sms in any::<u32>(), per_sm in any::<u32>(), threads in any::<u32>()) {
        let grid = Grid::per_sm(sms, per_sm, threads);
        let exact = u64::from(sms.max(1)) * u64::from(per_sm.max(1));
        prop_assert_eq!(u64::from(grid.blocks), exact.min(u64::from(u32::MAX)));
    }
}

#[test]
fn includes_are_found_in_odd_sources() {
    let module = Module {
        name: "robustness_odd",
        source: "#include \"\n#include\"common.cuh\"\n#include \"missing.cuh\" // x\n#include <a>",
        headers: &[COMMON],
    };
    assert_eq!(module.unresolved_includes(), vec!["", "missing.cuh"]);
}

// ---------------------------------------------------------------------------------------------
// GPU tests and the helpers the other modules' GPU tests share.

/// Held by every GPU test of this binary's modules: one of them fills the device memory on
/// purpose, which would make the others fail if they ran meanwhile.
pub(crate) fn gpu_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Device memory held by [`fill_device_memory`]; dropping it frees the buffers and releases the
/// memory pool's cache ([`Gpu::release_cached_memory`]), so that the memory goes back to the
/// device (and to other processes, such as the faulting test's child) rather than staying
/// reserved for this process.
pub(crate) struct Ballast<'a> {
    gpu: &'a Gpu,
    held: Vec<DeviceBuffer<u8>>,
}

impl Drop for Ballast<'_> {
    fn drop(&mut self) {
        self.held.clear();
        self.gpu.release_cached_memory().unwrap();
    }
}

/// Device buffers that hold all but at most `leave` bytes of `gpu`'s free memory, so that the
/// next allocation larger than `leave` fails. Dropping them gives the memory back.
pub(crate) fn fill_device_memory(gpu: &Gpu, leave: usize) -> Ballast<'_> {
    let mut held = Vec::new();
    let mut chunk = 1usize << 32;
    while chunk >= 1 << 16 {
        let free = gpu.free_memory().unwrap();
        if free <= leave {
            break;
        }
        match gpu.alloc_zeroed::<u8>(chunk.min(free - leave)) {
            Ok(buffer) => held.push(buffer),
            Err(GpuError::OutOfMemory { .. }) => chunk /= 2,
            Err(other) => panic!("filling the device: {other}"),
        }
    }
    Ballast { gpu, held }
}

/// Free memory under which an allocation may fail whatever its size: the stream-ordered pool
/// takes memory from the device in pages of 2 MiB and more (measured on an H100: 40 bytes
/// refused with 8 MiB free, 16.4 MB with 16.8 MB free).
const POOL_SLACK: usize = 64 << 20;

/// Asserts that `error` is an out-of-memory error whose numbers say why: more requested than
/// free, or so little free that the pool could not serve any request.
pub(crate) fn assert_out_of_memory(error: &GpuError) {
    match error {
        GpuError::OutOfMemory { requested, free } => {
            assert!(
                requested > free || *free < POOL_SLACK,
                "{requested} bytes requested, {free} free"
            );
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
}

/// `fill(out, n, seed)` writes `out[i] = seed * i + 7` for `i < n`, on any grid.
const FILL: Module = Module {
    name: "robustness_fill",
    source: r#"#include "common.cuh"
extern "C" __global__ void fill(u32* out, u64 n, u32 seed) {
    for (u64 i = global_thread_index(); i < n; i += grid_thread_count()) {
        out[i] = seed * (u32)i + 7u;
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

/// Fills a new buffer of `n` words on `gpu` with `grid` and brings it back.
fn fill_on(
    gpu: &Gpu,
    kernel: &Kernel,
    n: usize,
    seed: u32,
    grid: Grid,
) -> Result<Vec<u32>, GpuError> {
    let mut out = gpu.alloc_zeroed::<u32>(n)?;
    let len = n as u64;
    // SAFETY: fill(u32*, u64, u32) writes the n words `out` holds, on any grid.
    unsafe {
        gpu.launch(kernel, grid)
            .buffer_mut(&mut out)
            .value(&len)
            .value(&seed)
            .run()?;
    }
    out.to_host()
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn eight_threads_share_one_gpu() {
    let _lock = gpu_lock();
    let gpu = Gpu::first().unwrap();
    std::thread::scope(|scope| {
        for t in 0..8u32 {
            let gpu = &gpu;
            scope.spawn(move || {
                let kernel = gpu.kernel(&FILL, "fill").unwrap();
                for call in 0..20u32 {
                    let n = [1, 31, 255, 1000, 4097, 65_537, 1 << 20][(t + call) as usize % 7];
                    let seed = rand::random::<u32>();
                    let grid = Grid::cover(n as u64 / (1 + u64::from(call % 3)), 128);
                    assert_eq!(
                        fill_on(gpu, &kernel, n, seed, grid).unwrap(),
                        filled(n, seed)
                    );
                    // A round trip through a buffer of another size, at an offset.
                    let data: Vec<u32> = (0..n as u32).map(|i| i ^ seed).collect();
                    let mut buffer = gpu.alloc_zeroed::<u32>(n + 3).unwrap();
                    buffer.copy_from_host_at(3, &data).unwrap();
                    let mut back = vec![0u32; n];
                    buffer.copy_range_to_host(3, &mut back).unwrap();
                    assert_eq!(back, data);
                }
            });
        }
    });
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn out_of_memory_says_how_much_and_the_gpu_still_works() {
    let _lock = gpu_lock();
    let gpu = Gpu::first().unwrap();
    let kernel = gpu.kernel(&FILL, "fill").unwrap();
    // Larger than the device, than the address space, and than what is free.
    for len in [usize::MAX, gpu.info().total_memory + 1] {
        assert_out_of_memory(&gpu.alloc_zeroed::<u8>(len).unwrap_err());
    }
    assert_out_of_memory(&gpu.alloc_zeroed::<u64>(usize::MAX / 4).unwrap_err());
    // The device full but for 16 MiB: a 64 MiB allocation fails with the numbers, a small
    // kernel still runs, and once the memory is back the large one works.
    let held = fill_device_memory(&gpu, 16 << 20);
    assert!(!held.held.is_empty());
    let big = 16 << 20; // words: 64 MiB
    assert_out_of_memory(
        &fill_on(&gpu, &kernel, big, 5, Grid::cover(big as u64, 256)).unwrap_err(),
    );
    assert_eq!(
        fill_on(&gpu, &kernel, 1000, 9, Grid::cover(1000, 256)).unwrap(),
        filled(1000, 9)
    );
    drop(held);
    assert_eq!(
        fill_on(&gpu, &kernel, big, 5, Grid::cover(big as u64, 256)).unwrap(),
        filled(big, 5)
    );
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn a_failed_launch_is_an_error_and_the_gpu_still_works() {
    let _lock = gpu_lock();
    let gpu = Gpu::first().unwrap();
    let kernel = gpu.kernel(&FILL, "fill").unwrap();
    let bad_grids = [
        Grid {
            blocks: 1,
            threads: 2048,
            shared_bytes: 0,
        },
        Grid {
            blocks: 1,
            threads: 0,
            shared_bytes: 0,
        },
        Grid {
            blocks: 0,
            threads: 32,
            shared_bytes: 0,
        },
        Grid {
            blocks: 1,
            threads: 32,
            shared_bytes: 1 << 30,
        },
    ];
    for grid in bad_grids {
        match fill_on(&gpu, &kernel, 100, 1, grid) {
            Err(GpuError::Driver(_)) => {}
            other => panic!("{grid:?}: expected a driver error, got {other:?}"),
        }
        gpu.synchronize().unwrap();
        assert_eq!(
            fill_on(&gpu, &kernel, 100, 3, Grid::cover(100, 64)).unwrap(),
            filled(100, 3)
        );
    }
}

/// `trap(out)` writes `out[0] = 1` and stops with a device-side trap, which loses the CUDA
/// context for the rest of the process.
const TRAP: Module = Module {
    name: "robustness_trap",
    source: r#"#include "common.cuh"
extern "C" __global__ void trap(u32* out) {
    out[0] = 1u;
    __trap();
}
"#,
    headers: &[COMMON],
};

#[test]
#[ignore = "requires NVRTC (see kernels, \"Finding NVRTC\")"]
fn test_kernels_compile() {
    let compiled = kernels::check_modules(&[FILL, TRAP]).unwrap();
    assert!(compiled.iter().all(|&(_, _, bytes)| bytes > 0));
}

/// Set in the child process that [`a_faulting_kernel_is_an_error_never_a_hang`] starts.
const FAULT_CHILD: &str = "ROBUSTNESS_FAULT_CHILD";

/// A kernel that faults: the launch or the next synchronization returns an error that says
/// the context is lost, every later call returns such an error too (none hangs or panics),
/// and dropping the handle and its buffers is quiet. In a child process of this test binary,
/// since the context stays lost for the rest of the process.
#[test]
#[ignore = "requires a CUDA GPU"]
fn a_faulting_kernel_is_an_error_never_a_hang() {
    if std::env::var_os(FAULT_CHILD).is_some() {
        fault_in_this_process();
        return;
    }
    let _lock = gpu_lock();
    // What earlier tests of this process freed stays in its memory pool: give it back, so that
    // the child can allocate.
    Gpu::first().unwrap().release_cached_memory().unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "kernels::a_faulting_kernel_is_an_error_never_a_hang",
            "--include-ignored",
            "--test-threads=1",
        ])
        .env(FAULT_CHILD, "1")
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "the faulting child failed: {status}");
            return;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("the faulting child hung for 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn fault_in_this_process() {
    let gpu = Gpu::first().unwrap();
    let trap = gpu.kernel(&TRAP, "trap").unwrap();
    let fill = gpu.kernel(&FILL, "fill").unwrap();
    assert_eq!(
        fill_on(&gpu, &fill, 10, 1, Grid::cover(10, 32)).unwrap(),
        filled(10, 1)
    );
    let mut out = gpu.alloc_zeroed::<u32>(1).unwrap();
    // SAFETY: trap(u32*) writes one word, which `out` holds.
    let launched = unsafe {
        gpu.launch(&trap, Grid::cover(1, 32))
            .buffer_mut(&mut out)
            .run()
    };
    let error = launched.and_then(|()| gpu.synchronize()).unwrap_err();
    assert!(error.context_lost(), "{error}");
    // Later calls of every kind fail and say so.
    let later = [
        fill_on(&gpu, &fill, 10, 1, Grid::cover(10, 32)).map(drop),
        out.to_host().map(drop),
        gpu.synchronize(),
    ];
    for result in later {
        let error = result.unwrap_err();
        assert!(error.context_lost(), "{error}");
    }
    drop(out);
    drop(gpu);
}
