//! Compiles every kernel module of this crate with NVRTC for the checked architectures
//! (`kernels::CHECKED_ARCHITECTURES`). Needs NVRTC, not a GPU: run with `--include-ignored`
//! where it is installed (CI installs it from the `nvidia-cuda-nvrtc-cu12` Python package).
#![cfg(feature = "cuda")]

kernels::nvrtc_tests!(msm::source::MODULES);
