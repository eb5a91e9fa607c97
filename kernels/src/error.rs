//! The one error type of the GPU runtime.

/// Why GPU work could not be done. Every GPU entry point of the workspace returns this (or an
/// algorithm crate's error wrapping it); nothing panics when CUDA is absent. The messages of
/// `NoDriver`, `NoCompiler` and `CompilerUnusable` say what to install.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// The CUDA driver library (`libcuda.so.1`) could not be loaded: no NVIDIA driver installed.
    #[error(
        "no CUDA driver: libcuda.so.1 could not be loaded. To use the GPU, install the NVIDIA \
         driver for CUDA 12 or newer (version 525 or newer; on Ubuntu `sudo ubuntu-drivers \
         install`, otherwise from https://www.nvidia.com/drivers); in a container, start it \
         with the NVIDIA Container Toolkit (`docker run --gpus all ...`)"
    )]
    NoDriver,
    /// The NVRTC runtime compiler (`libnvrtc.so`) was found nowhere the crate looks (see the
    /// crate docs, "Finding NVRTC").
    #[error(
        "no CUDA runtime compiler: libnvrtc was not found on the library path, in the active \
         virtualenv or conda environment, in the site-packages of the user, of the Pythons on \
         PATH, of pyenv or of the system, or in a CUDA toolkit ($CUDA_PATH, $CUDA_HOME, \
         /usr/local/cuda*). Install it with `pip install nvidia-cuda-nvrtc-cu12` (in a \
         virtualenv, with `--user` or system-wide: each is found where pip puts it), or with \
         `pip install --target DIR nvidia-cuda-nvrtc-cu12` and then `export \
         KERNELS_NVRTC_DIR=DIR`; or install the CUDA toolkit, 12 or newer"
    )]
    NoCompiler,
    /// An NVRTC library was found but could not be used (another machine's library, or too
    /// old an NVRTC), or `$KERNELS_NVRTC_DIR` names a folder without NVRTC.
    #[error(
        "the CUDA runtime compiler at {library} cannot be used ({reason}). Install NVRTC 12 \
         or newer with `pip install nvidia-cuda-nvrtc-cu12` (with `--target DIR`, then \
         `export KERNELS_NVRTC_DIR=DIR`) or with the CUDA toolkit, or unset KERNELS_NVRTC_DIR \
         to search the usual places"
    )]
    CompilerUnusable {
        /// The library (or folder) that was tried.
        library: String,
        /// Why it could not be used: the dynamic linker's message, or what was missing.
        reason: String,
    },
    /// The driver is there but the requested device is not (none at all, or the ordinal is too large).
    #[error(
        "no CUDA device with ordinal {requested} ({available} device(s) visible; the driver is \
         installed: `nvidia-smi` lists the GPUs it sees, and CUDA_VISIBLE_DEVICES may hide some)"
    )]
    NoDevice {
        /// The ordinal asked for.
        requested: usize,
        /// How many devices the driver reports.
        available: usize,
    },
    /// NVRTC rejected a kernel module; `log` is its compiler log.
    #[error("NVRTC could not compile kernel module `{module}`:\n{log}")]
    Compile {
        /// The module's name.
        module: String,
        /// The compiler's log (or the NVRTC call that failed).
        log: String,
    },
    /// An allocation larger than the device's free memory.
    #[error("out of GPU memory: {requested} bytes requested, {free} bytes free")]
    OutOfMemory {
        /// Bytes asked for.
        requested: usize,
        /// Bytes the device reported free.
        free: usize,
    },
    /// A host copy longer than the device buffer it goes to or comes from.
    #[error("{len} elements do not fit a device buffer of {capacity}")]
    BufferTooSmall {
        /// Elements in the host slice.
        len: usize,
        /// Elements in the device buffer.
        capacity: usize,
    },
    /// A [`crate::Staging`] transfer asked for chunks of no elements or of more than its
    /// chunks hold.
    #[error("chunks of {chunk_len} elements asked for: a staging chunk holds 1 to {capacity}")]
    InvalidChunk {
        /// Elements per chunk asked for.
        chunk_len: usize,
        /// Elements a staging chunk holds.
        capacity: usize,
    },
    /// A CUDA driver call failed.
    #[error(transparent)]
    Driver(#[from] DriverError),
}

impl GpuError {
    /// Whether the error left the device's CUDA context unusable for the rest of the process:
    /// a kernel faulted (an illegal address or instruction, a trap, a device-side assert, a
    /// hardware error). CUDA reports such errors again from every later call on any handle of
    /// that device in this process, so a backend that returned one must be given up, and only
    /// a new process uses the GPU again. Every other error (out of memory, a refused launch
    /// configuration, a compile error, a missing device) leaves the backend usable.
    pub fn context_lost(&self) -> bool {
        const STICKY: [&str; 11] = [
            "CUDA_ERROR_ILLEGAL_ADDRESS",
            "CUDA_ERROR_ILLEGAL_INSTRUCTION",
            "CUDA_ERROR_MISALIGNED_ADDRESS",
            "CUDA_ERROR_INVALID_ADDRESS_SPACE",
            "CUDA_ERROR_INVALID_PC",
            "CUDA_ERROR_LAUNCH_FAILED",
            "CUDA_ERROR_HARDWARE_STACK_ERROR",
            "CUDA_ERROR_ASSERT",
            "CUDA_ERROR_ECC_UNCORRECTABLE",
            "CUDA_ERROR_CONTEXT_IS_DESTROYED",
            "CUDA_ERROR_LAUNCH_TIMEOUT",
        ];
        matches!(self, GpuError::Driver(d) if STICKY.contains(&d.name.as_str()))
    }
}

/// A failed CUDA driver call: the driver's error name and description.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("CUDA driver error {name}: {description}")]
pub struct DriverError {
    /// The driver's name for the error, such as `CUDA_ERROR_LAUNCH_FAILED`.
    pub name: String,
    /// The driver's description of it.
    pub description: String,
}

#[cfg(feature = "cuda")]
impl From<cudarc::driver::DriverError> for GpuError {
    fn from(err: cudarc::driver::DriverError) -> Self {
        let text = |r: Result<&std::ffi::CStr, _>| {
            r.map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|_| format!("{:?}", err.0))
        };
        GpuError::Driver(DriverError {
            name: text(err.error_name()),
            description: text(err.error_string()),
        })
    }
}

/// Result of GPU runtime calls.
pub type Result<T, E = GpuError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    fn driver(name: &str) -> GpuError {
        GpuError::Driver(DriverError {
            name: name.into(),
            description: String::new(),
        })
    }

    #[test]
    fn only_faults_lose_the_context() {
        assert!(driver("CUDA_ERROR_ILLEGAL_ADDRESS").context_lost());
        assert!(driver("CUDA_ERROR_LAUNCH_FAILED").context_lost());
        assert!(!driver("CUDA_ERROR_INVALID_VALUE").context_lost());
        assert!(!driver("CUDA_ERROR_OUT_OF_MEMORY").context_lost());
        let oom = GpuError::OutOfMemory {
            requested: 2,
            free: 1,
        };
        assert!(!oom.context_lost());
        assert!(!GpuError::NoDriver.context_lost());
    }
}
