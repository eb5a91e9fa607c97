//! The GPU runtime the workspace's algorithm crates share, and the CUDA headers several of
//! them include.
//!
//! This is the one crate that talks to CUDA. Each algorithm crate owns its kernels (its
//! `cuda/` folder, embedded with `include_str!`); this crate compiles and runs them:
//!
//! - [`source`]: what a kernel module is ([`source::Module`]: a `.cu` text and the
//!   [`source::Header`]s it includes) and the one header every module includes,
//!   [`source::COMMON`]. Headers reach NVRTC in memory, so nothing is read from the file
//!   system at run time and binaries can be copied to another machine.
//! - [`Gpu`]: a device handle (ordinal, name, compute capability, SM count, memory, one
//!   stream), [`device_count`], kernel loading, [`Gpu::launch`], CUDA-event timing with
//!   [`Gpu::time`], and typed [`DeviceBuffer`]s.
//! - [`CopyQueue`]: a second stream for copies that run while the handle's kernels do, ordered
//!   with them by [`Mark`]s.
//! - [`Staging`]: large host slices streamed to and from the device through page-locked
//!   chunks, at bus speed, while kernels work on the chunk before; [`SharedStaging`], one made
//!   at a backend's first transfer and shared by its clones.
//! - [`even_parts`], [`even_parts_of_at_least`], [`on_each`] and [`on_each_part`]: how the
//!   crates' multi-GPU backends split their work (near-equal consecutive parts, a host thread
//!   per device, each filling its part of the output). They need no GPU.
//! - NVRTC compilation for the device's own `sm_XY`, once per process and module, with an
//!   on-disk cache (see [`cache_dir`]): `KERNELS_CACHE_DIR` moves it, `KERNELS_CACHE=off`
//!   disables it. [`compile_module`] compiles for any architecture without a GPU.
//! - One error type, [`GpuError`]. Nothing panics when CUDA is absent: the driver and NVRTC
//!   libraries are probed before first use and reported as `NoDriver` / `NoCompiler`, whose
//!   messages say what to install.
//!
//! # Which CUDA
//!
//! Host code uses [cudarc](https://docs.rs/cudarc) with `dynamic-loading`: `libcuda` is opened
//! at run time, so every crate builds, and its CPU code runs, on a machine with no CUDA at
//! all. The bindings are cudarc's `cuda-12080` set, chosen because every driver call used here
//! exists unchanged in CUDA 12.x and 13.x drivers. NVRTC is opened at run time too, by this
//! crate itself (see "Finding NVRTC"): a CUDA 13 toolkit's `libnvrtc.so.13` (as on our
//! H100/H200 machines) and the `libnvrtc.so.12` of the `nvidia-cuda-nvrtc-cu12` Python
//! package (how CI and users without a toolkit get NVRTC) both serve. Kernels are compiled to
//! machine code (cubin) for the device's exact architecture, so no PTX goes through the
//! driver's JIT and a 12.x NVRTC serves a 13.x driver. A GPU newer than the NVRTC falls back
//! to PTX for the newest architecture the compiler knows, which the driver JIT-compiles.
//!
//! # Finding NVRTC
//!
//! No `LD_LIBRARY_PATH` is needed: NVRTC is looked for, and opened by its full path, in
//!
//! 1. `$KERNELS_NVRTC_DIR` ([`NVRTC_DIR_VAR`]) if set, and then nowhere else: a
//!    `pip install --target` folder, a CUDA toolkit root, or the folder holding
//!    `libnvrtc.so.*`;
//! 2. the dynamic linker's search (`LD_LIBRARY_PATH`, the `ldconfig` cache);
//! 3. where pip puts `nvidia-cuda-nvrtc-cu12`: the active virtualenv (`$VIRTUAL_ENV`) or
//!    conda environment (`$CONDA_PREFIX`), the user site (`$PYTHONUSERBASE`, default
//!    `~/.local`), the site-packages of the Pythons on `PATH` and of pyenv's, and the system
//!    site-packages (`/usr/local/lib/python3.*`, `/usr/lib/python3*`);
//! 4. the CUDA toolkit: `$CUDA_PATH`, `$CUDA_HOME`, `$CUDA_ROOT`, `/usr/local/cuda`,
//!    `/usr/local/cuda-X.Y` (newest first), `/opt/cuda`.
//!
//! This crate binds the NVRTC functions it calls to the library it found itself: cudarc opens
//! NVRTC by file name only, so it would see only what the dynamic linker sees (and it panics
//! when it finds nothing). [`compiler_library`] says which library was taken; when none is
//! found, every call that needs NVRTC returns [`GpuError::NoCompiler`], whose message says
//! what to install. The driver (`libcuda.so.1`) is not searched for: the NVIDIA driver
//! installs it where the dynamic linker looks.
//!
//! # Feature `cuda`
//!
//! On by default. Without it only [`source`] and the error types remain, so algorithm crates
//! built with `--no-default-features` carry no CUDA code at all.
//!
//! # Example
//!
//! ```no_run
//! # #[cfg(feature = "cuda")]
//! # fn main() -> Result<(), kernels::GpuError> {
//! use kernels::source::{COMMON, Module};
//! use kernels::{Grid, Gpu};
//!
//! const FILL: Module = Module {
//!     name: "fill_example",
//!     source: r#"#include "common.cuh"
//! extern "C" __global__ void fill(u32* out, u64 n) {
//!     for (u64 i = global_thread_index(); i < n; i += grid_thread_count()) out[i] = (u32)i;
//! }"#,
//!     headers: &[COMMON],
//! };
//!
//! let gpu = Gpu::first()?;
//! let kernel = gpu.kernel(&FILL, "fill")?;
//! println!("{} uses {} registers on {}", kernel.name(), kernel.registers()?, gpu.info().name);
//! let grid = Grid::per_sm(gpu.info().sm_count, 8, 256);
//! # let _ = grid;
//! # Ok(()) }
//! # #[cfg(not(feature = "cuda"))]
//! # fn main() {}
//! ```

#![cfg_attr(not(feature = "cuda"), forbid(unsafe_code))]

mod error;
pub mod source;
mod split;

#[cfg(feature = "cuda")]
mod buffer;
#[cfg(feature = "cuda")]
mod compile;
#[cfg(feature = "cuda")]
mod gpu;
#[cfg(feature = "cuda")]
mod launch;
#[cfg(feature = "cuda")]
mod nvrtc;
#[cfg(feature = "cuda")]
mod queue;
#[cfg(feature = "cuda")]
mod staging;

pub use error::{DriverError, GpuError, Result};
pub use split::{even_parts, even_parts_of_at_least, on_each, on_each_part};

#[cfg(feature = "cuda")]
pub use buffer::{DeviceBuffer, PinnedBuffer};
#[cfg(feature = "cuda")]
pub use compile::{
    CHECKED_ARCHITECTURES, ComputeCapability, cache_dir, check_modules, compile_module,
    compiler_library, compiler_present, compiler_version, supported_architectures,
};
#[cfg(feature = "cuda")]
pub use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
#[cfg(feature = "cuda")]
pub use gpu::{DeviceInfo, Gpu, device_count, driver_present, driver_version};
#[cfg(feature = "cuda")]
pub use launch::{Grid, Kernel, Launch};
#[cfg(feature = "cuda")]
pub use nvrtc::NVRTC_DIR_VAR;
#[cfg(feature = "cuda")]
pub use queue::{CopyQueue, Mark};
#[cfg(feature = "cuda")]
pub use staging::{SharedStaging, Staging};

/// Defines a crate's NVRTC compile tests of its kernel modules (`$modules`, a
/// `&[source::Module]`), for its `tests/nvrtc.rs`: `every_module_compiles`, which runs
/// [`check_modules`] and needs NVRTC but no GPU (ignored unless run with `--include-ignored`),
/// and `every_include_resolves`, which needs nothing.
///
/// ```ignore
/// // tests/nvrtc.rs of a crate with a `source` module
/// #![cfg(feature = "cuda")]
/// kernels::nvrtc_tests!(my_crate::source::MODULES);
/// ```
#[cfg(feature = "cuda")]
#[macro_export]
macro_rules! nvrtc_tests {
    ($modules:expr) => {
        #[test]
        #[ignore = "requires NVRTC (see kernels, \"Finding NVRTC\")"]
        fn every_module_compiles() {
            match $crate::check_modules($modules) {
                Ok(sizes) => {
                    for (module, cc, bytes) in sizes {
                        println!("{module:>10} {cc}: {bytes} bytes");
                    }
                }
                Err(error) => panic!("{error}"),
            }
        }

        #[test]
        fn every_include_resolves() {
            for module in $modules {
                let missing = module.unresolved_includes();
                assert!(missing.is_empty(), "{} includes {missing:?}", module.name);
            }
        }
    };
}

/// The README's code, compiled and run as a doctest so that it stays true.
#[cfg(all(doctest, feature = "cuda"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
