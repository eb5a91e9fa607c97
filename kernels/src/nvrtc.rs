//! Finding and loading NVRTC, the CUDA runtime compiler, without `LD_LIBRARY_PATH`.
//!
//! NVRTC comes with the CUDA toolkit or, without one, from the Python registry
//! (`pip install nvidia-cuda-nvrtc-cu12`), which puts `libnvrtc.so.12` in a folder that the
//! dynamic linker never searches (`site-packages/nvidia/cuda_nvrtc/lib`). So this crate looks
//! for the library itself and opens it by its full path, in this order; the first library
//! that loads and has every function used here wins:
//!
//! 1. `$KERNELS_NVRTC_DIR`: a `pip install --target` folder, a CUDA toolkit root, or the
//!    folder holding `libnvrtc.so.*` itself. When set, nothing else is searched: a folder
//!    without NVRTC is an error, never a silent fallback.
//! 2. The dynamic linker's own search (`LD_LIBRARY_PATH`, the `ldconfig` cache, `/usr/lib`):
//!    `libnvrtc.so`, then `libnvrtc.so.13`, then `libnvrtc.so.12`, as cudarc searches.
//! 3. Python environments, where pip puts the `nvidia-cuda-nvrtc-cu12` package (and
//!    `nvidia-cuda-nvrtc` for CUDA 13): the active virtualenv (`$VIRTUAL_ENV`), the active
//!    conda environment (`$CONDA_PREFIX`, also its `lib/` for conda's own `cuda-nvrtc`), the
//!    user site (`$PYTHONUSERBASE`, default `~/.local`), the site-packages of every
//!    `PREFIX/bin/python3` on `PATH` (`PREFIX/lib/python3.*/site-packages`) and of pyenv's
//!    Pythons (`$PYENV_ROOT`, default `~/.pyenv`), and the system site-packages
//!    (`/usr/local/lib/python3.*/{dist,site}-packages`, `/usr/lib/python3/dist-packages`,
//!    `/usr/lib{,64}/python3.*/site-packages`); newest Python first.
//! 4. The CUDA toolkit: `$CUDA_PATH`, `$CUDA_HOME`, `$CUDA_ROOT`, `/usr/local/cuda`, then
//!    `/usr/local/cuda-X.Y` newest first, then `/opt/cuda` (each its `lib64/` and `lib/`).
//!
//! In each folder `libnvrtc.so.13` is tried before `libnvrtc.so.12` and `libnvrtc.so`. NVRTC
//! finds its builtins library (`libnvrtc-builtins.so.*`) beside itself through its own
//! `RUNPATH` (`$ORIGIN`), so loading by full path is all it takes.
//!
//! Why not through cudarc: cudarc opens NVRTC by file name only, so it sees only what the
//! dynamic linker sees, and it panics when nothing is found. This module binds the dozen NVRTC
//! functions the compiler needs to the library it found, and reports a missing or unusable
//! library as [`GpuError::NoCompiler`] or [`GpuError::CompilerUnusable`].

use std::ffi::{CStr, OsStr, OsString, c_char, c_int};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::error::{GpuError, Result};

/// The environment variable naming the folder to take NVRTC from.
pub const NVRTC_DIR_VAR: &str = "KERNELS_NVRTC_DIR";

/// NVRTC's file names inside a folder, newest major version first.
const FILE_NAMES: [&str; 3] = ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"];

/// Where a candidate folder came from, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// `$KERNELS_NVRTC_DIR`.
    Variable,
    /// A Python environment's site-packages (or a conda environment's `lib/`).
    Python,
    /// A CUDA toolkit.
    Toolkit,
}

/// A folder that may hold NVRTC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub(crate) dir: PathBuf,
    pub(crate) origin: Origin,
}

/// Subfolders of a site-packages folder where pip puts NVRTC (CUDA 12 and 13 wheels).
const PIP_LIB_DIRS: [&str; 2] = ["nvidia/cuda_nvrtc/lib", "nvidia/cu13/lib"];

/// Sorts names so that embedded numbers compare as numbers, highest first
/// (`python3.12` before `python3.9`, `cuda-12.10` before `cuda-12.9`).
fn newest_first(names: &mut [String]) {
    fn key(name: &str) -> Vec<(u64, String)> {
        let mut parts = Vec::new();
        let mut text = String::new();
        let mut number: Option<u64> = None;
        for ch in name.chars() {
            match (ch.to_digit(10), number) {
                (Some(d), Some(n)) => number = Some(n.saturating_mul(10).saturating_add(d.into())),
                (Some(d), None) => number = Some(d.into()),
                (None, Some(n)) => {
                    parts.push((n, std::mem::take(&mut text)));
                    number = None;
                    text.push(ch);
                }
                (None, None) => text.push(ch),
            }
        }
        parts.push((number.unwrap_or(0), text));
        parts
    }
    names.sort_by_key(|name| std::cmp::Reverse(key(name)));
}

/// The entries of `dir` whose names start with `prefix`, newest first (see [`newest_first`]).
fn matching(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|name| name.starts_with(prefix))
                .collect()
        })
        .unwrap_or_default();
    newest_first(&mut names);
    names.into_iter().map(|name| dir.join(name)).collect()
}

/// `base/lib/python3.*/{kinds}` for each kind, newest Python first.
fn site_packages(base: &Path, kinds: &[&str]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for python in matching(&base.join("lib"), "python3.") {
        for kind in kinds {
            dirs.push(python.join(kind));
        }
    }
    dirs
}

/// `path` with a leading `/` replaced by `root` (the file-system root; a fake tree in tests).
fn under(root: &Path, path: &str) -> PathBuf {
    root.join(path.trim_start_matches('/'))
}

/// Every folder to look for NVRTC in after the dynamic linker's own search, in order, from
/// the environment (`env`) and the file system under `root` (`/` in use, a fake tree in the
/// tests). With `$KERNELS_NVRTC_DIR` set, only that folder and its known subfolders.
pub(crate) fn candidate_dirs(
    env: &dyn Fn(&str) -> Option<OsString>,
    root: &Path,
) -> Vec<Candidate> {
    let var = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let with = |origin: Origin, dirs: Vec<PathBuf>| {
        dirs.into_iter()
            .map(move |dir| Candidate { dir, origin })
            .collect::<Vec<_>>()
    };
    let pip_dirs = |sites: Vec<PathBuf>| -> Vec<PathBuf> {
        sites
            .iter()
            .flat_map(|site| PIP_LIB_DIRS.iter().map(move |sub| site.join(sub)))
            .collect()
    };
    let toolkit_dirs = |roots: Vec<PathBuf>| -> Vec<PathBuf> {
        roots
            .iter()
            .flat_map(|r| [r.join("lib64"), r.join("lib")])
            .collect()
    };

    if let Some(dir) = var(NVRTC_DIR_VAR) {
        let mut dirs = vec![dir.clone()];
        dirs.extend(PIP_LIB_DIRS.iter().map(|sub| dir.join(sub)));
        dirs.extend(toolkit_dirs(vec![dir]));
        return with(Origin::Variable, dirs);
    }

    let mut python = Vec::new();
    if let Some(venv) = var("VIRTUAL_ENV") {
        python.extend(pip_dirs(site_packages(&venv, &["site-packages"])));
    }
    if let Some(conda) = var("CONDA_PREFIX") {
        python.push(conda.join("lib"));
        python.extend(pip_dirs(site_packages(&conda, &["site-packages"])));
    }
    let user_base = var("PYTHONUSERBASE").or_else(|| var("HOME").map(|home| home.join(".local")));
    if let Some(base) = user_base {
        python.extend(pip_dirs(site_packages(&base, &["site-packages"])));
    }
    // The Pythons on PATH (`PREFIX/bin/python3`: their own site-packages), then pyenv's.
    let mut system = Vec::new();
    if let Some(path) = env("PATH") {
        for bin in std::env::split_paths(&path).filter(|bin| bin.join("python3").is_file()) {
            if let Some(prefix) = bin.parent() {
                system.extend(site_packages(prefix, &["site-packages"]));
            }
        }
    }
    let pyenv = var("PYENV_ROOT").or_else(|| var("HOME").map(|home| home.join(".pyenv")));
    if let Some(pyenv) = pyenv {
        for version in matching(&pyenv.join("versions"), "") {
            system.extend(site_packages(&version, &["site-packages"]));
        }
    }
    system.extend(site_packages(
        &under(root, "/usr/local"),
        &["dist-packages", "site-packages"],
    ));
    system.push(under(root, "/usr/lib/python3/dist-packages"));
    system.extend(site_packages(&under(root, "/usr"), &["site-packages"]));
    for python3 in matching(&under(root, "/usr/lib64"), "python3.") {
        system.push(python3.join("site-packages"));
    }
    python.extend(pip_dirs(system));

    let mut toolkits: Vec<PathBuf> = ["CUDA_PATH", "CUDA_HOME", "CUDA_ROOT"]
        .iter()
        .filter_map(|name| var(name))
        .collect();
    toolkits.push(under(root, "/usr/local/cuda"));
    toolkits.extend(matching(&under(root, "/usr/local"), "cuda-"));
    toolkits.push(under(root, "/opt/cuda"));

    let mut all = with(Origin::Python, python);
    all.extend(with(Origin::Toolkit, toolkit_dirs(toolkits)));
    // The same folder reached twice (CUDA_HOME=/usr/local/cuda) is tried once.
    let mut seen = std::collections::HashSet::new();
    all.retain(|c| seen.insert(c.dir.clone()));
    all
}

/// The NVRTC files in `candidates`, in search order.
pub(crate) fn libraries_in(candidates: &[Candidate]) -> Vec<(PathBuf, Origin)> {
    candidates
        .iter()
        .flat_map(|c| {
            FILE_NAMES
                .iter()
                .map(move |name| (c.dir.join(name), c.origin))
        })
        .filter(|(path, _)| path.is_file())
        .collect()
}

/// An NVRTC result code (`nvrtcResult`); 0 is success.
pub(crate) type NvrtcResult = c_int;
/// An NVRTC program handle (`nvrtcProgram`).
pub(crate) type Program = *mut std::ffi::c_void;

/// Why a library could not be used.
#[derive(Debug)]
enum OpenError {
    /// The dynamic linker could not load it (not there, or not a library for this machine).
    Load(String),
    /// It loaded but lacks an NVRTC function (too old an NVRTC, or not NVRTC at all).
    Symbol(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Load(why) => write!(f, "{why}"),
            OpenError::Symbol(why) => write!(f, "not a usable NVRTC (11.2 or newer): {why}"),
        }
    }
}

/// The NVRTC functions the compiler uses, bound to one loaded library.
pub(crate) struct Nvrtc {
    /// Where the library was found (a full path, or the file name the linker resolved).
    pub(crate) path: PathBuf,
    pub(crate) version: unsafe extern "C" fn(*mut c_int, *mut c_int) -> NvrtcResult,
    pub(crate) get_error_string: unsafe extern "C" fn(NvrtcResult) -> *const c_char,
    pub(crate) get_num_supported_archs: unsafe extern "C" fn(*mut c_int) -> NvrtcResult,
    pub(crate) get_supported_archs: unsafe extern "C" fn(*mut c_int) -> NvrtcResult,
    pub(crate) create_program: unsafe extern "C" fn(
        *mut Program,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> NvrtcResult,
    pub(crate) compile_program:
        unsafe extern "C" fn(Program, c_int, *const *const c_char) -> NvrtcResult,
    pub(crate) get_program_log_size: unsafe extern "C" fn(Program, *mut usize) -> NvrtcResult,
    pub(crate) get_program_log: unsafe extern "C" fn(Program, *mut c_char) -> NvrtcResult,
    pub(crate) get_cubin_size: unsafe extern "C" fn(Program, *mut usize) -> NvrtcResult,
    pub(crate) get_cubin: unsafe extern "C" fn(Program, *mut c_char) -> NvrtcResult,
    pub(crate) get_ptx_size: unsafe extern "C" fn(Program, *mut usize) -> NvrtcResult,
    pub(crate) get_ptx: unsafe extern "C" fn(Program, *mut c_char) -> NvrtcResult,
    pub(crate) destroy_program: unsafe extern "C" fn(*mut Program) -> NvrtcResult,
    /// Keeps the functions above valid: never unloaded.
    _library: libloading::Library,
}

impl std::fmt::Debug for Nvrtc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nvrtc").field("path", &self.path).finish()
    }
}

impl Nvrtc {
    /// Opens `name` (a full path, or a file name for the dynamic linker to search) and binds
    /// every function; the error says why it could not be used.
    fn open(name: &OsStr) -> std::result::Result<Self, OpenError> {
        // SAFETY: loading NVRTC runs only its initialisers, which have no preconditions.
        let library = unsafe { libloading::Library::new(name) }
            .map_err(|e| OpenError::Load(e.to_string()))?;
        macro_rules! bind {
            ($symbol:literal) => {
                // SAFETY: each symbol is an NVRTC API function whose C signature (nvrtc.h,
                // unchanged from CUDA 11.2 to 13) is the type of the field it is stored in;
                // the library stays loaded as long as the pointer lives (`_library`).
                *unsafe { library.get($symbol) }.map_err(|e| OpenError::Symbol(e.to_string()))?
            };
        }
        Ok(Self {
            path: PathBuf::from(name),
            version: bind!(b"nvrtcVersion\0"),
            get_error_string: bind!(b"nvrtcGetErrorString\0"),
            get_num_supported_archs: bind!(b"nvrtcGetNumSupportedArchs\0"),
            get_supported_archs: bind!(b"nvrtcGetSupportedArchs\0"),
            create_program: bind!(b"nvrtcCreateProgram\0"),
            compile_program: bind!(b"nvrtcCompileProgram\0"),
            get_program_log_size: bind!(b"nvrtcGetProgramLogSize\0"),
            get_program_log: bind!(b"nvrtcGetProgramLog\0"),
            get_cubin_size: bind!(b"nvrtcGetCUBINSize\0"),
            get_cubin: bind!(b"nvrtcGetCUBIN\0"),
            get_ptx_size: bind!(b"nvrtcGetPTXSize\0"),
            get_ptx: bind!(b"nvrtcGetPTX\0"),
            destroy_program: bind!(b"nvrtcDestroyProgram\0"),
            _library: library,
        })
    }

    /// NVRTC's name for a result code, such as `NVRTC_ERROR_COMPILATION`.
    pub(crate) fn error_name(&self, result: NvrtcResult) -> String {
        // SAFETY: nvrtcGetErrorString takes any code and returns a static NUL-terminated
        // string (or null, checked).
        let text = unsafe { (self.get_error_string)(result) };
        if text.is_null() {
            return format!("NVRTC error {result}");
        }
        // SAFETY: non-null, NUL-terminated and static, as above.
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    }
}

/// The one NVRTC library mapped into this process (from `/proc/self/maps`), if there is
/// exactly one: the file the dynamic linker resolved a bare name to.
fn mapped_nvrtc() -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let mut found: Vec<PathBuf> = maps
        .lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .map(PathBuf::from)
        .filter(|path| {
            path.file_name()
                .and_then(OsStr::to_str)
                .is_some_and(|name| name.starts_with("libnvrtc.so"))
        })
        .collect();
    found.dedup();
    match found.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// The file names the dynamic linker is asked for, in order, before any folder is searched.
fn linker_names() -> Vec<OsString> {
    if cfg!(unix) {
        ["libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"]
            .iter()
            .map(OsString::from)
            .collect()
    } else {
        cudarc::get_lib_name_candidates("nvrtc")
            .into_iter()
            .map(OsString::from)
            .collect()
    }
}

/// Finds and loads NVRTC as the module docs describe.
fn load() -> Result<Nvrtc> {
    let env = |name: &str| std::env::var_os(name);
    let candidates = candidate_dirs(&env, Path::new("/"));
    let explicit = candidates
        .first()
        .is_some_and(|c| c.origin == Origin::Variable);
    // (library, why it could not be used)
    let mut failures: Vec<(String, String)> = Vec::new();
    if !explicit {
        for name in linker_names() {
            match Nvrtc::open(&name) {
                Ok(mut nvrtc) => {
                    // Say which file the linker took, where the system can tell.
                    if let Some(path) = mapped_nvrtc() {
                        nvrtc.path = path;
                    }
                    return Ok(nvrtc);
                }
                // A name the linker does not find (or finds only for another machine) is not
                // worth reporting: the folders below are searched next.
                Err(OpenError::Load(_)) => {}
                Err(why) => failures.push((name.to_string_lossy().into_owned(), why.to_string())),
            }
        }
    }
    for (path, _) in libraries_in(&candidates) {
        match Nvrtc::open(path.as_os_str()) {
            Ok(nvrtc) => return Ok(nvrtc),
            Err(why) => failures.push((path.display().to_string(), why.to_string())),
        }
    }
    if let Some((library, _)) = failures.first() {
        let reason = failures
            .iter()
            .map(|(library, why)| format!("{library}: {why}"))
            .collect::<Vec<_>>()
            .join("; ");
        return Err(GpuError::CompilerUnusable {
            library: library.clone(),
            reason,
        });
    }
    if explicit {
        let dir = PathBuf::from(env(NVRTC_DIR_VAR).unwrap_or_default());
        return Err(GpuError::CompilerUnusable {
            library: dir.display().to_string(),
            reason: format!(
                "{NVRTC_DIR_VAR} names this folder, but neither it nor its nvidia/cuda_nvrtc/lib, \
                 nvidia/cu13/lib, lib64 or lib subfolders hold {}",
                FILE_NAMES.join(", ")
            ),
        });
    }
    Err(GpuError::NoCompiler)
}

/// NVRTC, loaded at the first call; the same error on every call when it cannot be.
pub(crate) fn nvrtc() -> Result<&'static Nvrtc> {
    static NVRTC: OnceLock<std::result::Result<Nvrtc, GpuError>> = OnceLock::new();
    match NVRTC.get_or_init(load) {
        Ok(nvrtc) => Ok(nvrtc),
        Err(e) => Err(e.clone()),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// A fake file-system tree under a fresh temporary folder.
    struct Tree(PathBuf);

    impl Tree {
        fn new(name: &str) -> Self {
            let root = std::env::temp_dir().join(format!(
                "kernels-nvrtc-search-{name}-{}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&root);
            std::fs::create_dir_all(&root).unwrap();
            Self(root)
        }

        fn path(&self, path: &str) -> PathBuf {
            under(&self.0, path)
        }

        /// Creates an empty file at `path` (and its folders).
        fn file(&self, path: &str) -> PathBuf {
            let path = self.path(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, b"").unwrap();
            path
        }

        fn dir(&self, path: &str) -> PathBuf {
            let path = self.path(path);
            std::fs::create_dir_all(&path).unwrap();
            path
        }

        /// The NVRTC files found with environment `vars` (values are paths in the tree).
        fn found(&self, vars: &[(&str, &str)]) -> Vec<PathBuf> {
            let vars: HashMap<String, OsString> = vars
                .iter()
                .map(|(k, v)| ((*k).to_owned(), self.path(v).into_os_string()))
                .collect();
            let env = |name: &str| vars.get(name).cloned();
            libraries_in(&candidate_dirs(&env, &self.0))
                .into_iter()
                .map(|(path, _)| path)
                .collect()
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn numbers_in_names_sort_as_numbers() {
        let mut names: Vec<String> = ["python3.9", "python3.12", "python3.10", "python3"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        newest_first(&mut names);
        assert_eq!(names, ["python3.12", "python3.10", "python3.9", "python3"]);
        let mut cuda: Vec<String> = ["cuda-12.9", "cuda-13.0", "cuda-12.10", "cuda-11.8"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        newest_first(&mut cuda);
        assert_eq!(cuda, ["cuda-13.0", "cuda-12.10", "cuda-12.9", "cuda-11.8"]);
    }

    #[test]
    fn nothing_installed_finds_nothing() {
        let tree = Tree::new("empty");
        tree.dir("/usr/local/lib/python3.12/dist-packages");
        tree.dir("/home/u/.local/lib/python3.12/site-packages/nvidia");
        assert!(tree.found(&[("HOME", "/home/u")]).is_empty());
    }

    #[test]
    fn the_variable_names_a_pip_target_folder_a_lib_folder_or_a_toolkit() {
        let tree = Tree::new("variable");
        let pip = tree.file("/opt/nvrtc/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
        let lib = tree.file("/opt/lib-only/libnvrtc.so.12");
        let toolkit = tree.file("/opt/toolkit/lib64/libnvrtc.so.13");
        // Present elsewhere too, but the variable is the only place then looked at.
        tree.file("/usr/local/cuda/lib64/libnvrtc.so.12");
        tree.file(
            "/home/u/.local/lib/python3.12/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12",
        );
        let only = |dir: &str| tree.found(&[(NVRTC_DIR_VAR, dir), ("HOME", "/home/u")]);
        assert_eq!(only("/opt/nvrtc"), [pip]);
        assert_eq!(only("/opt/lib-only"), [lib]);
        assert_eq!(only("/opt/toolkit"), [toolkit]);
        assert!(only("/opt/nowhere").is_empty());
        // An empty variable is no variable.
        let vars = [(NVRTC_DIR_VAR, ""), ("HOME", "/home/u")];
        let vars: Vec<(&str, OsString)> =
            vars.iter().map(|(k, v)| (*k, OsString::from(v))).collect();
        let env = |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(candidate_dirs(&env, &tree.0)[0].origin, Origin::Python);
    }

    #[test]
    fn python_environments_come_before_the_toolkit_in_a_fixed_order() {
        let tree = Tree::new("order");
        let nvrtc = "nvidia/cuda_nvrtc/lib/libnvrtc.so.12";
        let toolkit = tree.file("/usr/local/cuda/lib64/libnvrtc.so.12");
        let versioned_old = tree.file("/usr/local/cuda-12.4/lib64/libnvrtc.so.12");
        let versioned_new = tree.file("/usr/local/cuda-13.0/lib64/libnvrtc.so.13");
        let cuda_home = tree.file("/opt/cuda-home/lib64/libnvrtc.so.12");
        let system = tree.file(&format!("/usr/local/lib/python3.12/dist-packages/{nvrtc}"));
        let user = tree.file(&format!(
            "/home/u/.local/lib/python3.11/site-packages/{nvrtc}"
        ));
        let user_newer = tree.file(&format!(
            "/home/u/.local/lib/python3.13/site-packages/{nvrtc}"
        ));
        let venv = tree.file(&format!("/work/venv/lib/python3.12/site-packages/{nvrtc}"));
        let conda = tree.file("/conda/env/lib/libnvrtc.so.12");
        let cu13 =
            tree.file("/work/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libnvrtc.so.13");
        let found = tree.found(&[
            ("HOME", "/home/u"),
            ("VIRTUAL_ENV", "/work/venv"),
            ("CONDA_PREFIX", "/conda/env"),
            ("CUDA_HOME", "/opt/cuda-home"),
        ]);
        assert_eq!(
            found,
            [
                venv,
                cu13,
                conda,
                user_newer,
                user,
                system,
                cuda_home,
                toolkit,
                versioned_new,
                versioned_old
            ]
        );
    }

    #[test]
    fn the_user_site_follows_pythonuserbase_and_system_sites_are_searched() {
        let tree = Tree::new("sites");
        let nvrtc = "nvidia/cuda_nvrtc/lib/libnvrtc.so.12";
        let base = tree.file(&format!("/base/lib/python3.12/site-packages/{nvrtc}"));
        tree.file(&format!(
            "/home/u/.local/lib/python3.12/site-packages/{nvrtc}"
        ));
        let debian = tree.file(&format!("/usr/lib/python3/dist-packages/{nvrtc}"));
        let usr = tree.file(&format!("/usr/lib/python3.12/site-packages/{nvrtc}"));
        let local = tree.file(&format!("/usr/local/lib/python3.10/site-packages/{nvrtc}"));
        let found = tree.found(&[("HOME", "/home/u"), ("PYTHONUSERBASE", "/base")]);
        assert_eq!(found, [base, local, debian, usr]);
    }

    #[test]
    fn the_pythons_on_path_and_pyenv_are_searched() {
        let tree = Tree::new("path");
        let nvrtc = "nvidia/cuda_nvrtc/lib/libnvrtc.so.12";
        tree.file("/brew/bin/python3");
        tree.dir("/elsewhere/bin");
        let brew = tree.file(&format!("/brew/lib/python3.13/site-packages/{nvrtc}"));
        let pyenv = tree.file(&format!(
            "/home/u/.pyenv/versions/3.11.7/lib/python3.11/site-packages/{nvrtc}"
        ));
        let path =
            std::env::join_paths([tree.path("/elsewhere/bin"), tree.path("/brew/bin")]).unwrap();
        let vars: Vec<(&str, OsString)> =
            vec![("HOME", tree.path("/home/u").into()), ("PATH", path)];
        let env = |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone())
        };
        let found: Vec<PathBuf> = libraries_in(&candidate_dirs(&env, &tree.0))
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        assert_eq!(found, [brew, pyenv]);
    }

    #[test]
    fn every_file_name_in_a_folder_newest_first_and_each_folder_once() {
        let tree = Tree::new("names");
        let dir = "/usr/local/cuda/lib64";
        let unversioned = tree.file(&format!("{dir}/libnvrtc.so"));
        let v12 = tree.file(&format!("{dir}/libnvrtc.so.12"));
        let v13 = tree.file(&format!("{dir}/libnvrtc.so.13"));
        tree.file(&format!("{dir}/libnvrtc-builtins.so.13.0"));
        let found = tree.found(&[
            ("CUDA_PATH", "/usr/local/cuda"),
            ("CUDA_HOME", "/usr/local/cuda"),
        ]);
        assert_eq!(found, [v13, v12, unversioned]);
    }
}
