//! NVRTC compilation of the embedded modules, once per process and module, with an on-disk
//! cache of the compiled images.
//!
//! The cache lives in `$KERNELS_CACHE_DIR` if set, else `$XDG_CACHE_HOME/gpu-crypto-kernels`,
//! else `$HOME/.cache/gpu-crypto-kernels`. `KERNELS_CACHE=off` disables it. Entries are keyed by
//! a SHA-256 of the module and header sources, the NVRTC version, the architecture and the
//! compiler options, so a changed kernel, compiler or GPU never reuses a stale image.

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_int};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use sha2::{Digest, Sha256};

use crate::error::{GpuError, Result};
use crate::nvrtc::{Nvrtc, NvrtcResult, nvrtc};
use crate::source::Module;

/// Options passed to NVRTC besides the architecture: C++17, and `unsigned __int128` in device
/// code (merkle's Poseidon2 runs its linear layers exactly on it).
const OPTIONS: &[&str] = &["--std=c++17", "--device-int128"];

/// A CUDA compute capability, such as 9.0 for the H100.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ComputeCapability {
    /// Major version (9 on Hopper).
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl ComputeCapability {
    /// Builds a compute capability from its two numbers.
    pub const fn new(major: u32, minor: u32) -> Self {
        Self { major, minor }
    }

    /// The number NVRTC uses for it (90 for 9.0).
    pub const fn number(self) -> u32 {
        self.major * 10 + self.minor
    }
}

impl fmt::Display for ComputeCapability {
    /// Formats as the real architecture name NVRTC takes, `sm_90`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}{}", self.major, self.minor)
    }
}

/// Whether NVRTC can be loaded (from wherever [`compiler_library`] finds it).
pub fn compiler_present() -> bool {
    nvrtc().is_ok()
}

/// The NVRTC library in use: its full path (on Linux also when the dynamic linker found it;
/// elsewhere then the file name it was asked for, such as `libnvrtc.so`). Errors with
/// [`GpuError::NoCompiler`] (or [`GpuError::CompilerUnusable`]) saying what to install. The
/// crate docs ("Finding NVRTC") list where it is looked for.
pub fn compiler_library() -> Result<PathBuf> {
    Ok(nvrtc()?.path.clone())
}

fn nvrtc_call(nvrtc: &Nvrtc, module: &str, call: &str, result: NvrtcResult) -> Result<()> {
    if result == 0 {
        Ok(())
    } else {
        Err(GpuError::Compile {
            module: module.to_owned(),
            log: format!("{call} failed: {}", nvrtc.error_name(result)),
        })
    }
}

/// The NVRTC version as `(major, minor)`.
pub fn compiler_version() -> Result<(u32, u32)> {
    let nvrtc = nvrtc()?;
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: NVRTC writes two ints through valid pointers.
    let result = unsafe { (nvrtc.version)(&mut major, &mut minor) };
    nvrtc_call(nvrtc, "-", "nvrtcVersion", result)?;
    Ok((major.unsigned_abs(), minor.unsigned_abs()))
}

/// The real architectures this NVRTC can emit machine code for, ascending (`[75, 80, ..., 90]`).
pub fn supported_architectures() -> Result<Vec<u32>> {
    let nvrtc = nvrtc()?;
    let mut count: c_int = 0;
    // SAFETY: NVRTC writes one int through a valid pointer.
    let result = unsafe { (nvrtc.get_num_supported_archs)(&mut count) };
    nvrtc_call(nvrtc, "-", "nvrtcGetNumSupportedArchs", result)?;
    let mut archs: Vec<c_int> = vec![0; count.max(0).unsigned_abs() as usize];
    // SAFETY: the buffer holds exactly the number of entries NVRTC reported.
    let result = unsafe { (nvrtc.get_supported_archs)(archs.as_mut_ptr()) };
    nvrtc_call(nvrtc, "-", "nvrtcGetSupportedArchs", result)?;
    let mut archs: Vec<u32> = archs.into_iter().map(c_int::unsigned_abs).collect();
    archs.sort_unstable();
    Ok(archs)
}

/// What NVRTC is asked to produce for a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Target {
    /// Machine code for exactly this architecture (`sm_XY`): no JIT at load time.
    Cubin(u32),
    /// PTX for the newest architecture NVRTC knows below the device's, JIT-compiled by the
    /// driver: used only when the GPU is newer than the compiler.
    Ptx(u32),
}

impl Target {
    fn for_device(cc: ComputeCapability, module: &str) -> Result<Self> {
        let wanted = cc.number();
        let supported = supported_architectures()?;
        if supported.contains(&wanted) {
            return Ok(Target::Cubin(wanted));
        }
        match supported.iter().rev().find(|&&a| a <= wanted) {
            Some(&older) => Ok(Target::Ptx(older)),
            None => Err(GpuError::Compile {
                module: module.to_owned(),
                log: format!(
                    "this NVRTC cannot compile for {cc} (it supports {supported:?}); \
                     install an NVRTC that knows this GPU"
                ),
            }),
        }
    }

    fn option(self) -> String {
        match self {
            Target::Cubin(a) => format!("--gpu-architecture=sm_{a}"),
            Target::Ptx(a) => format!("--gpu-architecture=compute_{a}"),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Cubin(a) => write!(f, "sm_{a}"),
            Target::Ptx(a) => write!(f, "compute_{a}"),
        }
    }
}

/// An NVRTC program, destroyed on drop.
struct Program {
    nvrtc: &'static Nvrtc,
    handle: crate::nvrtc::Program,
    module: &'static str,
}

impl Program {
    fn create(module: &Module) -> Result<Self> {
        let nvrtc = nvrtc()?;
        let cstring = |text: &str| {
            CString::new(text).map_err(|_| GpuError::Compile {
                module: module.name.to_owned(),
                log: "source contains a NUL byte".to_owned(),
            })
        };
        let source = cstring(module.source)?;
        let name = cstring(&format!("{}.cu", module.name))?;
        let header_texts = module
            .headers
            .iter()
            .map(|h| cstring(h.text))
            .collect::<Result<Vec<_>>>()?;
        let header_names = module
            .headers
            .iter()
            .map(|h| cstring(h.name))
            .collect::<Result<Vec<_>>>()?;
        let text_ptrs: Vec<*const c_char> = header_texts.iter().map(|s| s.as_ptr()).collect();
        let name_ptrs: Vec<*const c_char> = header_names.iter().map(|s| s.as_ptr()).collect();
        let mut handle: crate::nvrtc::Program = std::ptr::null_mut();
        let header_count = c_int::try_from(module.headers.len()).unwrap_or(c_int::MAX);
        // SAFETY: every pointer refers to a NUL-terminated string alive for this call; NVRTC
        // copies the sources and headers into the program it creates.
        let result = unsafe {
            (nvrtc.create_program)(
                &mut handle,
                source.as_ptr(),
                name.as_ptr(),
                header_count,
                text_ptrs.as_ptr(),
                name_ptrs.as_ptr(),
            )
        };
        nvrtc_call(nvrtc, module.name, "nvrtcCreateProgram", result)?;
        Ok(Self {
            nvrtc,
            handle,
            module: module.name,
        })
    }

    fn compile(&self, options: &[String]) -> Result<()> {
        let options: Vec<CString> = options
            .iter()
            .filter_map(|o| CString::new(o.as_str()).ok())
            .collect();
        let option_ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let count = c_int::try_from(option_ptrs.len()).unwrap_or(c_int::MAX);
        // SAFETY: the program is live and the options are NUL-terminated strings alive here.
        let result =
            unsafe { (self.nvrtc.compile_program)(self.handle, count, option_ptrs.as_ptr()) };
        if result == 0 {
            return Ok(());
        }
        Err(GpuError::Compile {
            module: self.module.to_owned(),
            log: self.log().unwrap_or_else(|| self.nvrtc.error_name(result)),
        })
    }

    fn log(&self) -> Option<String> {
        let mut size = 0usize;
        // SAFETY: the program is live; NVRTC writes the log size.
        let result = unsafe { (self.nvrtc.get_program_log_size)(self.handle, &mut size) };
        if result != 0 {
            return None;
        }
        let mut log = vec![0u8; size.max(1)];
        // SAFETY: the buffer is as large as NVRTC said the log is, NUL included.
        let result = unsafe { (self.nvrtc.get_program_log)(self.handle, log.as_mut_ptr().cast()) };
        if result != 0 {
            return None;
        }
        let text = CStr::from_bytes_until_nul(&log).ok()?;
        Some(text.to_string_lossy().into_owned())
    }

    /// The compiled image: a cubin, or NUL-terminated PTX text.
    fn image(&self, target: Target) -> Result<Vec<u8>> {
        let mut size = 0usize;
        let (size_call, size_result) = match target {
            // SAFETY: the program is live and compiled; NVRTC writes the size.
            Target::Cubin(_) => ("nvrtcGetCUBINSize", unsafe {
                (self.nvrtc.get_cubin_size)(self.handle, &mut size)
            }),
            // SAFETY: as above.
            Target::Ptx(_) => ("nvrtcGetPTXSize", unsafe {
                (self.nvrtc.get_ptx_size)(self.handle, &mut size)
            }),
        };
        nvrtc_call(self.nvrtc, self.module, size_call, size_result)?;
        let mut image = vec![0u8; size];
        let ptr = image.as_mut_ptr().cast::<c_char>();
        let (call, result) = match target {
            // SAFETY: the buffer holds the size NVRTC reported.
            Target::Cubin(_) => ("nvrtcGetCUBIN", unsafe {
                (self.nvrtc.get_cubin)(self.handle, ptr)
            }),
            // SAFETY: as above.
            Target::Ptx(_) => ("nvrtcGetPTX", unsafe {
                (self.nvrtc.get_ptx)(self.handle, ptr)
            }),
        };
        nvrtc_call(self.nvrtc, self.module, call, result)?;
        Ok(image)
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the handle came from nvrtcCreateProgram and is destroyed once. A failure here
        // would only leak the program.
        let _ = unsafe { (self.nvrtc.destroy_program)(&mut self.handle) };
    }
}

fn compile_for(module: &Module, target: Target) -> Result<Vec<u8>> {
    let program = Program::create(module)?;
    let mut options: Vec<String> = OPTIONS.iter().map(|o| (*o).to_owned()).collect();
    options.push(target.option());
    program.compile(&options)?;
    program.image(target)
}

/// Compiles `module` to machine code for `cc` with no cache: what the NVRTC compile test and
/// users checking a new kernel call. Needs NVRTC but no GPU.
pub fn compile_module(module: &Module, cc: ComputeCapability) -> Result<Vec<u8>> {
    nvrtc()?;
    let target = Target::for_device(cc, module.name)?;
    compile_for(module, target)
}

/// The architectures every module is checked to compile for ([`check_modules`]): Ampere
/// (A100, 8.0) and Hopper (H100 and H200, 9.0).
pub const CHECKED_ARCHITECTURES: [ComputeCapability; 2] =
    [ComputeCapability::new(8, 0), ComputeCapability::new(9, 0)];

/// Compiles every module for every [`CHECKED_ARCHITECTURES`] entry, with no cache, and
/// returns the size of each machine-code image, in module then architecture order: the NVRTC
/// compile check each crate runs on its own modules. A module whose includes name no header of
/// its own is an error before NVRTC runs. The compilations share as many threads as the
/// machine has cores (NVRTC compiles distinct programs concurrently); the first failure in
/// the order above is returned. Needs NVRTC but no GPU.
pub fn check_modules(modules: &[Module]) -> Result<Vec<(&'static str, ComputeCapability, usize)>> {
    for module in modules {
        let missing = module.unresolved_includes();
        if !missing.is_empty() {
            return Err(GpuError::Compile {
                module: module.name.to_owned(),
                log: format!("includes {missing:?}, which are not among the module's headers"),
            });
        }
    }
    let jobs: Vec<(&Module, ComputeCapability)> = modules
        .iter()
        .flat_map(|module| CHECKED_ARCHITECTURES.map(|cc| (module, cc)))
        .collect();
    let next = AtomicUsize::new(0);
    // Each worker takes the next job until none is left, and returns (job, image size). One
    // worker per core, not one thread per job: msm's 8 compilations took 61.7 s on 2 cores
    // this way against 91.2 s with 8 threads.
    let work = || {
        let mut done = Vec::new();
        loop {
            let job = next.fetch_add(1, Ordering::Relaxed);
            let Some(&(module, cc)) = jobs.get(job) else {
                return done;
            };
            done.push((job, checked_image_size(module, cc)));
        }
    };
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let mut done: Vec<(usize, Result<usize>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads.min(jobs.len()))
            .map(|_| scope.spawn(work))
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    done.sort_by_key(|&(job, _)| job);
    done.into_iter()
        .map(|(job, size)| {
            let (module, cc) = jobs[job];
            size.map(|bytes| (module.name, cc, bytes))
        })
        .collect()
}

/// The size of `module`'s machine code for `cc`, compiled without the cache; an error unless
/// NVRTC returned a cubin.
fn checked_image_size(module: &Module, cc: ComputeCapability) -> Result<usize> {
    let image = compile_module(module, cc)?;
    if !image.starts_with(b"\x7fELF") {
        return Err(GpuError::Compile {
            module: module.name.to_owned(),
            log: format!("NVRTC did not return a cubin for {cc}"),
        });
    }
    Ok(image.len())
}

/// Where compiled images are cached, or `None` when caching is off.
pub fn cache_dir() -> Option<PathBuf> {
    let off = std::env::var("KERNELS_CACHE")
        .map(|v| {
            matches!(
                v.to_ascii_lowercase().as_str(),
                "off" | "0" | "false" | "no"
            )
        })
        .unwrap_or(false);
    if off {
        return None;
    }
    let non_empty = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = non_empty("KERNELS_CACHE_DIR") {
        return Some(dir);
    }
    let base =
        non_empty("XDG_CACHE_HOME").or_else(|| non_empty("HOME").map(|h| h.join(".cache")))?;
    Some(base.join("gpu-crypto-kernels"))
}

fn cache_key(module: &Module, target: Target) -> Result<String> {
    let (major, minor) = compiler_version()?;
    let mut hash = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    field(module.name.as_bytes());
    field(module.source.as_bytes());
    for header in module.headers {
        field(header.name.as_bytes());
        field(header.text.as_bytes());
    }
    field(format!("nvrtc {major}.{minor} {target} {OPTIONS:?}").as_bytes());
    let digest = hash.finalize();
    let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{}-{target}-{hex}", module.name))
}

fn read_cached(path: &Path, target: Target) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    let plausible = match target {
        Target::Cubin(_) => bytes.starts_with(b"\x7fELF"),
        Target::Ptx(_) => bytes.last() == Some(&0),
    };
    plausible.then_some(bytes)
}

/// Writes through a temporary file and a rename, so readers never see half an image. A cache
/// that cannot be written is only a slower next run, so failures are ignored.
fn write_cached(path: &Path, image: &[u8]) {
    let Some(dir) = path.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let temp = path.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&temp, image).is_ok() && std::fs::rename(&temp, path).is_err() {
        let _ = std::fs::remove_file(&temp);
    }
}

/// The image of `module` for `target` from the disk cache in `dir`, else from NVRTC (then
/// written to the cache). `fresh` ignores what the cache holds.
fn disk_cached(
    module: &Module,
    target: Target,
    dir: Option<&Path>,
    fresh: bool,
) -> Result<Vec<u8>> {
    let path = dir
        .map(|dir| cache_key(module, target).map(|name| dir.join(format!("{name}.bin"))))
        .transpose()?;
    if let Some(image) = path
        .as_ref()
        .filter(|_| !fresh)
        .and_then(|p| read_cached(p, target))
    {
        return Ok(image);
    }
    let image = compile_for(module, target)?;
    if let Some(path) = &path {
        write_cached(path, &image);
    }
    Ok(image)
}

type ImageKey = (&'static str, ComputeCapability);

/// The compiled image of `module` for `cc`: from this process's table, else the disk cache,
/// else NVRTC (and then both caches). `fresh` skips both caches (after a cached image failed
/// to load).
pub(crate) fn image(module: &Module, cc: ComputeCapability, fresh: bool) -> Result<Arc<Vec<u8>>> {
    static IMAGES: OnceLock<Mutex<HashMap<ImageKey, Arc<Vec<u8>>>>> = OnceLock::new();
    nvrtc()?;
    let key = (module.name, cc);
    // Held across compilation so that threads asking for the same module compile it once.
    let mut images = IMAGES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if !fresh {
        if let Some(image) = images.get(&key) {
            return Ok(Arc::clone(image));
        }
    }
    let target = Target::for_device(cc, module.name)?;
    let image = Arc::new(disk_cached(module, target, cache_dir().as_deref(), fresh)?);
    images.insert(key, Arc::clone(&image));
    Ok(image)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROBE: Module = Module {
        name: "cache_probe",
        source: "#include \"common.cuh\"\nextern \"C\" __global__ void probe(u32* out) { *out = 7; }\n",
        headers: &[crate::source::COMMON],
    };

    fn cached_files(dir: &Path) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        files.sort();
        files
    }

    #[test]
    #[ignore = "requires NVRTC (see the crate docs, \"Finding NVRTC\")"]
    fn disk_cache_stores_reuses_and_keys_by_source_and_target() {
        let dir = std::env::temp_dir().join(format!("kernels-cache-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let sm90 = Target::Cubin(90);

        let first = disk_cached(&PROBE, sm90, Some(&dir), false).unwrap();
        let files = cached_files(&dir);
        assert_eq!(files.len(), 1, "{files:?}");
        assert_eq!(std::fs::read(&files[0]).unwrap(), first);

        // A second request reads the file: plant a recognisable image there and get it back.
        let planted = b"\x7fELF planted by the test".to_vec();
        std::fs::write(&files[0], &planted).unwrap();
        assert_eq!(
            disk_cached(&PROBE, sm90, Some(&dir), false).unwrap(),
            planted
        );
        // `fresh` recompiles and repairs the entry.
        assert_eq!(disk_cached(&PROBE, sm90, Some(&dir), true).unwrap(), first);
        assert_eq!(std::fs::read(&files[0]).unwrap(), first);

        // Another architecture or a changed source is another entry.
        disk_cached(&PROBE, Target::Cubin(80), Some(&dir), false).unwrap();
        let changed = Module {
            source: "#include \"common.cuh\"\nextern \"C\" __global__ void probe(u32* out) { *out = 8; }\n",
            ..PROBE
        };
        disk_cached(&changed, sm90, Some(&dir), false).unwrap();
        assert_eq!(cached_files(&dir).len(), 3);

        // Without a directory nothing is written anywhere.
        assert_eq!(disk_cached(&PROBE, sm90, None, false).unwrap(), first);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_corrupt_cache_entry_is_not_used() {
        let dir = std::env::temp_dir().join(format!("kernels-corrupt-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("entry.bin");
        std::fs::write(&path, b"not an image").unwrap();
        assert!(read_cached(&path, Target::Cubin(90)).is_none());
        assert!(read_cached(&path, Target::Ptx(90)).is_none());
        std::fs::write(&path, b"\x7fELF...").unwrap();
        assert!(read_cached(&path, Target::Cubin(90)).is_some());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
