//! NVRTC compilation without a GPU: the compile check every crate runs on its modules, its
//! errors, and how NVRTC is found. Needs NVRTC (`libnvrtc.so`), not a GPU: run with
//! `--include-ignored` where NVRTC is installed (CI installs it from the
//! `nvidia-cuda-nvrtc-cu12` Python package into a folder it names in `KERNELS_NVRTC_DIR`,
//! with no `LD_LIBRARY_PATH`).
#![cfg(feature = "cuda")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use kernels::source::{COMMON, Header, Module};
use kernels::{
    CHECKED_ARCHITECTURES, ComputeCapability, GpuError, NVRTC_DIR_VAR, check_modules,
    compile_module,
};

const PROBE: Module = Module {
    name: "nvrtc_probe",
    source: "#include \"common.cuh\"\nextern \"C\" __global__ void k(u64* out) { *out = global_thread_index(); }\n",
    headers: &[COMMON],
};

#[test]
#[ignore = "requires NVRTC (see the crate docs, \"Finding NVRTC\")"]
fn check_modules_compiles_for_every_checked_architecture() {
    let (major, minor) =
        kernels::compiler_version().expect("NVRTC must be installed for this test");
    let library = kernels::compiler_library().unwrap();
    println!(
        "NVRTC {major}.{minor} from {}, architectures {:?}",
        library.display(),
        kernels::supported_architectures().unwrap()
    );
    // Taken from the folder the variable names, when it names one.
    if let Some(dir) = std::env::var_os(NVRTC_DIR_VAR).filter(|d| !d.is_empty()) {
        assert!(library.starts_with(&dir), "{library:?} is not in {dir:?}");
    }
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
#[ignore = "requires NVRTC (see the crate docs, \"Finding NVRTC\")"]
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

/// Set in the environment of a test run again by [`rerun`]: the test then checks instead of
/// spawning.
const CHILD: &str = "KERNELS_NVRTC_TEST_CHILD";

/// Runs `test` of this test executable again in a child process with `vars` set and every
/// other variable that steers the search (and `LD_LIBRARY_PATH`) removed; fails if it fails.
fn rerun(test: &str, vars: &[(&str, &Path)]) {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.args([test, "--exact", "--include-ignored", "--nocapture"]);
    for name in [
        NVRTC_DIR_VAR,
        "LD_LIBRARY_PATH",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "PYTHONUSERBASE",
        "PYENV_ROOT",
        "CUDA_PATH",
        "CUDA_HOME",
        "CUDA_ROOT",
    ] {
        command.env_remove(name);
    }
    command.env(CHILD, "1");
    for (name, value) in vars {
        command.env(name, value);
    }
    let out = command.output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{test} in a child process failed:\n{text}"
    );
    assert!(
        text.contains("1 passed"),
        "{test} did not run in the child:\n{text}"
    );
}

/// An empty folder for this test.
fn empty_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kernels-nvrtc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `KERNELS_NVRTC_DIR` naming a folder without NVRTC is an error that says so and what to
/// install, even where NVRTC is installed elsewhere (runs everywhere).
#[test]
fn a_variable_naming_a_folder_without_nvrtc_is_an_error_saying_what_to_install() {
    if std::env::var_os(CHILD).is_none() {
        let dir = empty_dir("variable");
        rerun(
            "a_variable_naming_a_folder_without_nvrtc_is_an_error_saying_what_to_install",
            &[(NVRTC_DIR_VAR, &dir)],
        );
        std::fs::remove_dir_all(dir).unwrap();
        return;
    }
    let error = compile_module(&PROBE, ComputeCapability::new(9, 0)).unwrap_err();
    assert!(
        matches!(error, GpuError::CompilerUnusable { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    println!("{message}");
    for needed in [
        NVRTC_DIR_VAR,
        "pip install nvidia-cuda-nvrtc-cu12",
        "libnvrtc.so.12",
    ] {
        assert!(message.contains(needed), "{message:?} lacks {needed:?}");
    }
    assert!(!kernels::compiler_present());
}

/// With no variable and nothing in a Python environment of the user's, NVRTC is found only
/// where the system has it; where it has none, the error says what to install and where the
/// crate looks (runs everywhere).
#[test]
fn without_nvrtc_the_error_says_what_to_install() {
    if std::env::var_os(CHILD).is_none() {
        let home = empty_dir("home");
        rerun(
            "without_nvrtc_the_error_says_what_to_install",
            &[("HOME", &home)],
        );
        std::fs::remove_dir_all(home).unwrap();
        return;
    }
    match compile_module(&PROBE, ComputeCapability::new(9, 0)) {
        Ok(_) => println!(
            "NVRTC is installed system-wide here: {}",
            kernels::compiler_library().unwrap().display()
        ),
        Err(error) => {
            assert!(matches!(error, GpuError::NoCompiler), "{error:?}");
            let message = error.to_string();
            println!("{message}");
            for needed in [
                "pip install nvidia-cuda-nvrtc-cu12",
                "pip install --target DIR nvidia-cuda-nvrtc-cu12",
                "export KERNELS_NVRTC_DIR=DIR",
                "CUDA toolkit",
            ] {
                assert!(message.contains(needed), "{message:?} lacks {needed:?}");
            }
        }
    }
}

/// NVRTC in a virtualenv is found through `VIRTUAL_ENV` alone: the virtualenv is made here,
/// as pip lays it out, with a link to the folder of the NVRTC this process uses. Where the
/// dynamic linker finds NVRTC itself (a toolkit in the `ldconfig` cache), that one comes
/// first, as documented, and the child only checks that it compiles.
#[test]
#[ignore = "requires NVRTC (see the crate docs, \"Finding NVRTC\")"]
fn nvrtc_in_a_virtualenv_is_found() {
    if std::env::var_os(CHILD).is_none() {
        let library = kernels::compiler_library().expect("NVRTC must be installed for this test");
        let lib = library.parent().filter(|dir| dir.is_absolute());
        let lib = lib.unwrap_or_else(|| panic!("no folder known for {library:?}"));
        let venv = empty_dir("venv");
        let site = venv.join("lib/python3.12/site-packages/nvidia/cuda_nvrtc");
        std::fs::create_dir_all(&site).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(lib, site.join("lib")).unwrap();
        let home = empty_dir("venv-home");
        rerun(
            "nvrtc_in_a_virtualenv_is_found",
            &[("VIRTUAL_ENV", &venv), ("HOME", &home)],
        );
        std::fs::remove_dir_all(venv).unwrap();
        std::fs::remove_dir_all(home).unwrap();
        return;
    }
    let library = kernels::compiler_library().unwrap();
    let venv = std::env::var_os("VIRTUAL_ENV").unwrap();
    println!("NVRTC from {}", library.display());
    if !library.starts_with(&venv) {
        // Only the dynamic linker's own search comes before the virtualenv.
        let linker_found = std::env::var_os("LD_LIBRARY_PATH").is_none()
            && std::process::Command::new("ldconfig")
                .arg("-p")
                .output()
                .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("libnvrtc.so"));
        assert!(linker_found, "{library:?} is not in {venv:?}");
    }
    assert_eq!(
        check_modules(&[PROBE]).unwrap().len(),
        CHECKED_ARCHITECTURES.len()
    );
}
