//! Compiles every kernel module of this crate with NVRTC for the checked architectures
//! (`kernels::CHECKED_ARCHITECTURES`). Needs NVRTC, not a GPU: run with `--include-ignored`
//! where it is installed (CI installs it from the `nvidia-cuda-nvrtc-cu12` Python package).
#![cfg(feature = "cuda")]
#![allow(clippy::unwrap_used)]

use fhe_pbs::source::MODULES;

#[test]
#[ignore = "requires NVRTC (see kernels, \"Finding NVRTC\")"]
fn every_module_compiles() {
    for (module, cc, bytes) in kernels::check_modules(MODULES).unwrap() {
        println!("{module:>10} {cc}: {bytes} bytes");
    }
}

/// Every quoted include names a header the module carries (no NVRTC needed).
#[test]
fn every_include_resolves() {
    for module in MODULES {
        assert_eq!(module.unresolved_includes(), [""; 0], "{}", module.name);
    }
}
