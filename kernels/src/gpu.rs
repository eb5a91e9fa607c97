//! The `Gpu` handle: one device, its context and stream, its loaded modules.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use cudarc::driver::sys::{
    CUdevice_attribute, CUevent_flags, CUlimit, CUmemPool_attribute, CUmemoryPool, CUresult,
};
use cudarc::driver::{CudaContext, CudaModule, CudaStream, DeviceRepr, ValidAsZeroBits, result};
use cudarc::nvrtc::Ptx;

use crate::buffer::{DeviceBuffer, PinnedBuffer};
use crate::compile::{self, ComputeCapability};
use crate::error::{GpuError, Result};
use crate::launch::{Grid, Kernel, Launch};
use crate::source::Module;

/// The all-zero value of `T`.
fn zeroed<T: ValidAsZeroBits>() -> T {
    // SAFETY: `ValidAsZeroBits` promises that all-zero bytes are a valid `T`.
    unsafe { std::mem::zeroed() }
}

/// Makes the device's default memory pool, from which cudarc allocates, keep the memory of
/// freed buffers for later allocations instead of handing it back to the driver at each
/// synchronization. (Handing it back and mapping it again cost about 150 µs per buffer on an
/// H100, which a pipeline of small launches would pay at every call.)
fn keep_freed_memory(context: &CudaContext) -> Result<()> {
    let Some(pool) = default_pool(context)? else {
        return Ok(());
    };
    let mut threshold = u64::MAX;
    // SAFETY: the pool is the live context's device's; the release threshold is a u64 that
    // the driver reads from the pointer during the call.
    unsafe {
        result::mem_pool::set_attribute(
            pool,
            CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&raw mut threshold).cast(),
        )?;
    }
    Ok(())
}

/// The memory pool cudarc allocates from (the device's default one), or `None` when the
/// driver has no stream-ordered allocator (cudarc then allocates outside any pool).
fn default_pool(context: &CudaContext) -> Result<Option<CUmemoryPool>> {
    if !context.has_async_alloc() {
        return Ok(None);
    }
    // SAFETY: the device belongs to a live context.
    Ok(Some(unsafe {
        result::device::get_default_mem_pool(context.cu_device())
    }?))
}

/// A u64 attribute of `pool`.
fn pool_attribute(pool: CUmemoryPool, attribute: CUmemPool_attribute) -> Result<u64> {
    let mut value = 0u64;
    // SAFETY: `pool` comes from default_pool; the attributes read here are u64 values that
    // the driver writes through the pointer during the call.
    unsafe { result::mem_pool::get_attribute(pool, attribute, (&raw mut value).cast()) }?;
    Ok(value)
}

/// Whether the CUDA driver library can be loaded (without panicking, as cudarc would).
pub fn driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to dlopen the library names cudarc would use; no symbol is called.
    *PRESENT.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() })
}

/// Initialises the driver; `Ok(false)` when it is there but sees no device.
fn init_driver() -> Result<bool> {
    if !driver_present() {
        return Err(GpuError::NoDriver);
    }
    match result::init() {
        Ok(()) => Ok(true),
        Err(e) if e.0 == CUresult::CUDA_ERROR_NO_DEVICE => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The number of CUDA devices visible to this process (honours `CUDA_VISIBLE_DEVICES`).
pub fn device_count() -> Result<usize> {
    if !init_driver()? {
        return Ok(0);
    }
    let count = result::device::get_count()?;
    Ok(usize::try_from(count).unwrap_or(0))
}

/// The CUDA version the installed driver supports, as `(major, minor)` (13.0 for a 580 driver).
pub fn driver_version() -> Result<(u32, u32)> {
    init_driver()?;
    let mut version: std::ffi::c_int = 0;
    // SAFETY: the driver writes one int through a valid pointer.
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut version) }.result()?;
    let version = version.unsigned_abs();
    Ok((version / 1000, version % 1000 / 10))
}

/// What a device is: read once when the handle is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device's ordinal among the visible devices.
    pub ordinal: usize,
    /// The marketing name, such as `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// The compute capability (9.0 on Hopper); kernels are compiled for exactly this.
    pub compute_capability: ComputeCapability,
    /// Number of streaming multiprocessors.
    pub sm_count: u32,
    /// Total device memory in bytes.
    pub total_memory: usize,
}

/// A handle on one CUDA device: its primary context, one stream on which all work of this
/// handle is ordered, and the kernel modules loaded into it.
///
/// Share it as `Arc<Gpu>`; it is `Send + Sync`.
///
/// ```no_run
/// # fn main() -> Result<(), kernels::GpuError> {
/// let gpu = kernels::Gpu::new(0)?;
/// println!("{} (sm_{}) with {} SMs", gpu.info().name,
///          gpu.info().compute_capability.number(), gpu.info().sm_count);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Gpu {
    context: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: DeviceInfo,
    modules: Mutex<HashMap<&'static str, Arc<CudaModule>>>,
}

impl Gpu {
    /// Opens device `ordinal`. Errors: `NoDriver` without libcuda, `NoDevice` when the ordinal
    /// is not visible, `Driver` for any other failure.
    ///
    /// The device's default memory pool (which the buffers come from) is set to keep the memory
    /// of freed buffers for later allocations in this process rather than hand it back to the
    /// driver at every synchronization: [`Gpu::cached_memory`] says how much it holds, and
    /// [`Gpu::release_cached_memory`] hands it back.
    pub fn new(ordinal: usize) -> Result<Arc<Self>> {
        let available = device_count()?;
        if ordinal >= available {
            return Err(GpuError::NoDevice {
                requested: ordinal,
                available,
            });
        }
        let context = CudaContext::new(ordinal)?;
        let (major, minor) = context.compute_capability()?;
        let sm_count =
            context.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        let info = DeviceInfo {
            ordinal,
            name: context.name()?,
            compute_capability: ComputeCapability::new(major.unsigned_abs(), minor.unsigned_abs()),
            sm_count: sm_count.unsigned_abs(),
            total_memory: context.total_mem()?,
        };
        keep_freed_memory(&context)?;
        // SAFETY: this handle queues all its work on one stream, so cudarc's events that order
        // a buffer's uses across streams have nothing to order; without them, allocating or
        // freeing a buffer costs no event creation or destruction (about 1 µs each).
        unsafe { context.disable_event_tracking() };
        let stream = context.default_stream();
        Ok(Arc::new(Self {
            context,
            stream,
            info,
            modules: Mutex::new(HashMap::new()),
        }))
    }

    /// Opens the first visible device: the usual choice on a one-GPU machine.
    pub fn first() -> Result<Arc<Self>> {
        Self::new(0)
    }

    /// Opens every visible device.
    pub fn all() -> Result<Vec<Arc<Self>>> {
        (0..device_count()?).map(Self::new).collect()
    }

    /// What this device is.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The device's primary context.
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.context
    }

    /// The stream on which this handle queues its work.
    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Bytes of device memory that allocations can still have, now: the device's free
    /// memory plus [`Gpu::cached_memory`].
    pub fn free_memory(&self) -> Result<usize> {
        let free = self.context.mem_get_info()?.0;
        Ok(free.saturating_add(self.cached_memory()?))
    }

    /// Bytes that freed buffers left in the device's memory pool (see [`Gpu::new`]): this
    /// process's next allocations reuse them (the driver also hands them back when a larger
    /// buffer needs the room: the GPU test `cached_memory_never_makes_an_allocation_fail`);
    /// other processes, and allocations outside the pool, cannot have them until
    /// [`Gpu::release_cached_memory`].
    pub fn cached_memory(&self) -> Result<usize> {
        let Some(pool) = default_pool(&self.context)? else {
            return Ok(0);
        };
        let reserved = pool_attribute(
            pool,
            CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
        )?;
        let used = pool_attribute(pool, CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT)?;
        Ok(usize::try_from(reserved.saturating_sub(used)).unwrap_or(usize::MAX))
    }

    /// Waits for the work queued on this handle's stream, then hands the memory that freed
    /// buffers left in the device's memory pool back to the driver.
    pub fn release_cached_memory(&self) -> Result<()> {
        self.synchronize()?;
        if let Some(pool) = default_pool(&self.context)? {
            // SAFETY: `pool` comes from default_pool; trimming only releases memory that no
            // allocation holds.
            unsafe { result::mem_pool::trim_to(pool, 0) }?;
        }
        Ok(())
    }

    /// Waits until all work queued on this handle's stream has finished, and reports any
    /// error a kernel raised meanwhile.
    pub fn synchronize(&self) -> Result<()> {
        Ok(self.stream.synchronize()?)
    }

    /// The most bytes the L2 cache fetches from device memory on a miss (the context limit
    /// `CU_LIMIT_MAX_L2_FETCH_GRANULARITY`, 0 to 128 bytes).
    pub fn l2_fetch_granularity(&self) -> Result<usize> {
        Ok(self
            .context
            .get_limit(CUlimit::CU_LIMIT_MAX_L2_FETCH_GRANULARITY)?)
    }

    /// Sets [`Gpu::l2_fetch_granularity`] for every later launch on this device, to `bytes`
    /// (0 to 128: larger values are taken as 128; a hint the driver may round). Kernels that
    /// read scattered small records go faster with 32: a miss then brings in one 32-byte
    /// sector rather than 64 bytes, and the memory moves no bytes that are not read. The setting belongs to the
    /// device's context, so it also applies to other users of this `Gpu` until set back.
    pub fn set_l2_fetch_granularity(&self, bytes: usize) -> Result<()> {
        Ok(self
            .context
            .set_limit(CUlimit::CU_LIMIT_MAX_L2_FETCH_GRANULARITY, bytes.min(128))?)
    }

    /// The kernel `name` of `module`, compiling the module on first use (see the crate docs
    /// for the compile and cache rules).
    pub fn kernel(&self, module: &Module, name: &str) -> Result<Kernel> {
        let loaded = self.module(module)?;
        let function = loaded.load_function(name).map_err(|e| {
            let err = GpuError::from(e);
            match err {
                GpuError::Driver(d) => GpuError::Compile {
                    module: module.name.to_owned(),
                    log: format!("kernel `{name}` not found in the module ({d})"),
                },
                other => other,
            }
        })?;
        Ok(Kernel::new(name, function, Arc::clone(&self.context)))
    }

    fn module(&self, module: &Module) -> Result<Arc<CudaModule>> {
        let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(loaded) = modules.get(module.name) {
            return Ok(Arc::clone(loaded));
        }
        let cc = self.info.compute_capability;
        let image = compile::image(module, cc, false)?;
        let loaded = match self.context.load_module(Ptx::from_binary(image.to_vec())) {
            Ok(loaded) => loaded,
            // A cached image the driver rejects (corrupt, or from another driver): rebuild it.
            Err(_) => {
                let image = compile::image(module, cc, true)?;
                self.context.load_module(Ptx::from_binary(image.to_vec()))?
            }
        };
        modules.insert(module.name, Arc::clone(&loaded));
        Ok(loaded)
    }

    /// A zero-filled device buffer of `len` elements, or `OutOfMemory` (with the bytes
    /// requested and [`Gpu::free_memory`]) when the device cannot hold it.
    pub fn alloc_zeroed<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
    ) -> Result<DeviceBuffer<T>> {
        self.allocate(len, true)
    }

    /// A device buffer of `len` elements with no zero fill: for outputs that kernels queued
    /// on this handle's stream overwrite completely (saving the fill's launch).
    ///
    /// # Safety
    ///
    /// Every element must be written, by work queued on this handle's stream, before
    /// anything reads it: the buffer starts with whatever the memory held.
    pub unsafe fn alloc_uninit<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
    ) -> Result<DeviceBuffer<T>> {
        self.allocate(len, false)
    }

    /// A device buffer of `len` elements, zero-filled when `zero` is set and else holding
    /// whatever the memory held (the caller overwrites it before anything reads it).
    fn allocate<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
        zero: bool,
    ) -> Result<DeviceBuffer<T>> {
        let requested = len.saturating_mul(size_of::<T>());
        if requested > self.info.total_memory {
            return Err(GpuError::OutOfMemory {
                requested,
                free: self.free_memory()?,
            });
        }
        if len == 0 {
            // The driver rejects zero-byte allocations; cudarc has an empty slice for this.
            return Ok(DeviceBuffer::new(self.stream.null::<T>()?));
        }
        let allocated = if zero {
            self.stream.alloc_zeros::<T>(len)
        } else {
            // SAFETY: the contents are unspecified; `allocate`'s callers overwrite every
            // element (on this stream) before anything reads it.
            unsafe { self.stream.alloc::<T>(len) }
        };
        match allocated {
            Ok(slice) => Ok(DeviceBuffer::new(slice)),
            Err(e) if e.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY => Err(GpuError::OutOfMemory {
                requested,
                free: self.free_memory()?,
            }),
            Err(e) => Err(e.into()),
        }
    }

    /// A zero-filled page-locked host buffer of `len` elements, for staging transfers.
    ///
    /// The memory is ordinary cached memory (not write-combined), so the CPU reads it at full
    /// speed after the GPU has written it.
    pub fn alloc_pinned<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
    ) -> Result<PinnedBuffer<T>> {
        if len
            .checked_mul(size_of::<T>())
            .is_none_or(|bytes| bytes > isize::MAX as usize)
        {
            return Err(GpuError::OutOfMemory {
                requested: usize::MAX,
                free: 0,
            });
        }
        // SAFETY: the flag asks for page-locked memory mapped into the device's address
        // space (not write-combined); the contents are zeroed below before anything can read
        // them.
        let slice = unsafe {
            self.context
                .alloc_pinned_with_flags::<T>(len, cudarc::driver::sys::CU_MEMHOSTALLOC_DEVICEMAP)
        }?;
        let mut buffer = PinnedBuffer::new(slice)?;
        buffer.as_mut_slice()?.fill_with(zeroed);
        Ok(buffer)
    }

    /// A device buffer of `len` elements holding a copy of the first `len` elements of `src`,
    /// queued on this handle's stream: returns at once (no zero fill, no waiting), and
    /// [`PinnedBuffer::as_mut_slice`] waits for the copy before `src` can be written again.
    pub fn upload_pinned_async<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        src: &mut PinnedBuffer<T>,
        len: usize,
    ) -> Result<DeviceBuffer<T>> {
        let mut buffer = self.allocate(len, false)?;
        // A `len` beyond `src` fails here, and the buffer is dropped unread.
        buffer.copy_from_pinned_async(0, src, len)?;
        Ok(buffer)
    }

    /// A device buffer holding a copy of `data`.
    pub fn upload<T: DeviceRepr + ValidAsZeroBits>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        let mut buffer = self.alloc_zeroed(data.len())?;
        buffer.copy_from_host(data)?;
        Ok(buffer)
    }

    /// Starts a launch of `kernel` on this handle's stream; add arguments, then `run` it.
    pub fn launch<'a>(&'a self, kernel: &'a Kernel, grid: Grid) -> Launch<'a> {
        Launch::new(&self.stream, kernel, grid)
    }

    /// Runs `work` (which queues device work on this handle) between two CUDA events and
    /// returns its result with the device time between them. Warm up before timing.
    ///
    /// `work` may return any error type that a [`GpuError`] converts into, so algorithm crates
    /// can time their own operations.
    pub fn time<T, E: From<GpuError>>(
        &self,
        work: impl FnOnce() -> std::result::Result<T, E>,
    ) -> std::result::Result<(T, Duration), E> {
        let event = || -> Result<_> {
            Ok(self
                .stream
                .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?)
        };
        let start = event()?;
        let value = work()?;
        let end = event()?;
        let millis = end
            .synchronize()
            .and_then(|()| start.elapsed_ms(&end))
            .map_err(GpuError::from)?;
        Ok((value, Duration::from_secs_f64(f64::from(millis) / 1e3)))
    }
}
