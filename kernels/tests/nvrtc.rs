//! NVRTC compilation without a GPU: the compile check every crate runs on its modules, and its
//! errors. Needs NVRTC (`libnvrtc.so`), not a GPU: run with `--include-ignored` where NVRTC is
//! installed (CI installs it from the `nvidia-cuda-nvrtc-cu12` Python package).
#![cfg(feature = "cuda")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kernels::source::{COMMON, Header, Module};
use kernels::{CHECKED_ARCHITECTURES, ComputeCapability, GpuError, check_modules, compile_module};

const PROBE: Module = Module {
    name: "nvrtc_probe",
    source: "#include \"common.cuh\"\nextern \"C\" __global__ void k(u64* out) { *out = global_thread_index(); }\n",
    headers: &[COMMON],
};

#[test]
#[ignore = "requires NVRTC (libnvrtc) on the library path"]
fn check_modules_compiles_for_every_checked_architecture() {
    let (major, minor) =
        kernels::compiler_version().expect("NVRTC must be installed for this test");
    println!(
        "NVRTC {major}.{minor}, architectures {:?}",
        kernels::supported_architectures().unwrap()
    );
    let sizes = check_modules(&[PROBE]).unwrap();
    let compiled: Vec<ComputeCapability> = sizes.iter().map(|&(_, cc, _)| cc).collect();
    assert_eq!(compiled, CHECKED_ARCHITECTURES);
    assert!(
        sizes
            .iter()
            .all(|&(name, _, size)| name == "nvrtc_probe" && size > 0)
    );
}

#[test]
#[ignore = "requires NVRTC (libnvrtc) on the library path"]
fn compile_errors_carry_the_log() {
    let broken = Module {
        name: "broken",
        source: "#include \"common.cuh\"\nextern \"C\" __global__ void k() { undeclared_name = 1; }\n",
        headers: &[COMMON],
    };
    match compile_module(&broken, ComputeCapability::new(9, 0)) {
        Err(GpuError::Compile { module, log }) => {
            assert_eq!(module, "broken");
            assert!(log.contains("undeclared_name"), "log: {log}");
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}

/// A module whose includes name a header it does not carry is refused before NVRTC runs (so
/// this runs everywhere).
#[test]
fn check_modules_refuses_a_missing_header() {
    const LONELY: Header = Header {
        name: "lonely.cuh",
        text: "#include \"elsewhere.cuh\"\n",
    };
    let module = Module {
        name: "missing_header",
        headers: &[COMMON, LONELY],
        ..PROBE
    };
    match check_modules(&[module]) {
        Err(GpuError::Compile { module, log }) => {
            assert_eq!(module, "missing_header");
            assert!(log.contains("elsewhere.cuh"), "log: {log}");
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}

/// Without NVRTC the runtime reports `NoCompiler` instead of panicking (runs everywhere).
#[test]
fn missing_compiler_is_an_error_not_a_panic() {
    let result = compile_module(&PROBE, ComputeCapability::new(9, 0));
    if kernels::compiler_present() {
        assert!(result.is_ok(), "{result:?}");
    } else {
        assert!(matches!(result, Err(GpuError::NoCompiler)), "{result:?}");
    }
}
