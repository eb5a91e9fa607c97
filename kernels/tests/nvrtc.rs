//! Compiles every kernel module with NVRTC for the architectures we ship for. Needs NVRTC
//! (`libnvrtc.so`), not a GPU: run with `--include-ignored` where NVRTC is installed (CI
//! installs it from the `nvidia-cuda-nvrtc-cu12` Python package).
#![cfg(feature = "cuda")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kernels::{ComputeCapability, GpuError, compile_module, source};

/// Ampere (A100) and Hopper (H100, H200).
const ARCHITECTURES: [ComputeCapability; 2] =
    [ComputeCapability::new(8, 0), ComputeCapability::new(9, 0)];

#[test]
#[ignore = "requires NVRTC (libnvrtc) on the library path"]
fn every_module_compiles_for_sm80_and_sm90() {
    let (major, minor) =
        kernels::compiler_version().expect("NVRTC must be installed for this test");
    println!(
        "NVRTC {major}.{minor}, architectures {:?}",
        kernels::supported_architectures().unwrap()
    );
    for module in source::MODULES {
        for cc in ARCHITECTURES {
            let image = compile_module(module, cc)
                .unwrap_or_else(|e| panic!("module {} for {cc}: {e}", module.name));
            assert!(
                image.starts_with(b"\x7fELF"),
                "{} for {cc} is not a cubin",
                module.name
            );
            println!("{:>10} {cc}: {} bytes", module.name, image.len());
        }
    }
}

#[test]
#[ignore = "requires NVRTC (libnvrtc) on the library path"]
fn compile_errors_carry_the_log() {
    let broken = source::Module {
        name: "broken",
        source: "#include \"common.cuh\"\nextern \"C\" __global__ void k() { undeclared_name = 1; }\n",
    };
    match compile_module(&broken, ComputeCapability::new(9, 0)) {
        Err(GpuError::Compile { module, log }) => {
            assert_eq!(module, "broken");
            assert!(log.contains("undeclared_name"), "log: {log}");
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}

/// Without NVRTC the runtime reports `NoCompiler` instead of panicking (runs everywhere).
#[test]
fn missing_compiler_is_an_error_not_a_panic() {
    let result = compile_module(&source::CHACHA, ComputeCapability::new(9, 0));
    if kernels::compiler_present() {
        assert!(result.is_ok(), "{result:?}");
    } else {
        assert!(matches!(result, Err(GpuError::NoCompiler)), "{result:?}");
    }
}
