//! The one error type of the GPU runtime.

/// Why GPU work could not be done. Every GPU entry point of the workspace returns this (or an
/// algorithm crate's error wrapping it); nothing panics when CUDA is absent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// The CUDA driver library (`libcuda.so`) could not be loaded: no NVIDIA driver installed.
    #[error(
        "no CUDA driver: libcuda could not be loaded (install an NVIDIA driver to use the GPU)"
    )]
    NoDriver,
    /// The NVRTC runtime compiler (`libnvrtc.so`) could not be loaded.
    #[error(
        "no CUDA runtime compiler: libnvrtc could not be loaded (install the CUDA toolkit or \
         `pip install nvidia-cuda-nvrtc-cu12` and put its lib folder on LD_LIBRARY_PATH)"
    )]
    NoCompiler,
    /// The driver is there but the requested device is not (none at all, or the ordinal is too large).
    #[error("no CUDA device with ordinal {requested} ({available} device(s) visible)")]
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
    /// A CUDA driver call failed.
    #[error(transparent)]
    Driver(#[from] DriverError),
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
