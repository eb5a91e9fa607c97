//! Kernel handles, launch shapes and the launch builder.

use std::sync::{Arc, Mutex, PoisonError};

use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaStream, DeviceRepr, LaunchArgs, LaunchConfig, PushKernelArg,
};

use crate::buffer::{Completion, DeviceBuffer, PinnedBuffer};
use crate::error::Result;

/// A kernel function loaded on one device, from [`crate::Gpu::kernel`].
#[derive(Debug, Clone)]
pub struct Kernel {
    name: String,
    function: CudaFunction,
    /// The context the function lives in, made current on the calling thread before the
    /// driver calls that need one (a thread that has launched nothing yet has none).
    context: Arc<CudaContext>,
}

impl Kernel {
    pub(crate) fn new(name: &str, function: CudaFunction, context: Arc<CudaContext>) -> Self {
        Self {
            name: name.to_owned(),
            function,
            context,
        }
    }

    /// The kernel's `extern "C"` name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Lets launches of this kernel use up to `bytes` of dynamic shared memory (above the
    /// default 48 KiB; up to 227 KiB on Hopper). Errors if the device allows less.
    ///
    /// Never lowers what an earlier call allowed: the allowance belongs to the function, which
    /// every thread and every `Kernel` of it share, so lowering it could fail another thread's
    /// launch between its own call and that launch (CUDA_ERROR_INVALID_VALUE: msm's backend
    /// shared by eight threads failed so, about one run in six on an H200).
    pub fn allow_shared_bytes(&self, bytes: u32) -> Result<()> {
        static RAISING: Mutex<()> = Mutex::new(());
        let attribute = CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        let wanted = i32::try_from(bytes).unwrap_or(i32::MAX);
        let _raising = RAISING.lock().unwrap_or_else(PoisonError::into_inner);
        self.context.bind_to_thread()?;
        if self.function.get_attribute(attribute)? < wanted {
            self.function.set_attribute(attribute, wanted)?;
        }
        Ok(())
    }

    /// How many blocks of `threads` threads, with `shared_bytes` of dynamic shared memory each,
    /// one multiprocessor runs at once (the driver's occupancy calculator): with the device's
    /// multiprocessor count, how many threads make one wave of this kernel.
    pub fn blocks_per_sm(&self, threads: u32, shared_bytes: u32) -> Result<u32> {
        self.context.bind_to_thread()?;
        Ok(self
            .function
            .occupancy_max_active_blocks_per_multiprocessor(threads, shared_bytes as usize, None)?)
    }

    /// Registers per thread, as compiled (for tuning and reports).
    pub fn registers(&self) -> Result<u32> {
        Ok(self.function.num_regs()?.unsigned_abs())
    }
}

/// A one-dimensional launch shape: `blocks` blocks of `threads` threads, plus dynamic shared
/// memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    /// Number of thread blocks.
    pub blocks: u32,
    /// Threads per block.
    pub threads: u32,
    /// Dynamic shared memory per block, in bytes.
    pub shared_bytes: u32,
}

impl Grid {
    /// Enough blocks of `threads` threads for one thread per item (at least one block; capped
    /// at the largest grid CUDA allows, for kernels that loop over the rest).
    pub fn cover(items: u64, threads: u32) -> Self {
        let blocks = items
            .div_ceil(u64::from(threads.max(1)))
            .clamp(1, (1u64 << 31) - 1);
        Self {
            blocks: u32::try_from(blocks).unwrap_or(u32::MAX >> 1),
            threads,
            shared_bytes: 0,
        }
    }

    /// `blocks_per_sm` blocks of `threads` threads on each of `sm_count` multiprocessors: the
    /// shape of a grid-stride kernel that should fill the device once.
    pub fn per_sm(sm_count: u32, blocks_per_sm: u32, threads: u32) -> Self {
        Self {
            blocks: sm_count.max(1).saturating_mul(blocks_per_sm.max(1)),
            threads,
            shared_bytes: 0,
        }
    }

    fn config(self) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (self.blocks, 1, 1),
            block_dim: (self.threads, 1, 1),
            shared_mem_bytes: self.shared_bytes,
        }
    }
}

/// A kernel launch being assembled: arguments in the order of the kernel's parameters, then
/// [`Launch::run`].
#[derive(Debug)]
pub struct Launch<'a> {
    stream: &'a Arc<CudaStream>,
    args: LaunchArgs<'a>,
    grid: Grid,
    /// The `in_use_until` of every page-locked buffer passed, set at `run`.
    pinned: Vec<&'a mut Option<Arc<Completion>>>,
}

impl<'a> Launch<'a> {
    pub(crate) fn new(stream: &'a Arc<CudaStream>, kernel: &'a Kernel, grid: Grid) -> Self {
        Self {
            stream,
            args: stream.launch_builder(&kernel.function),
            grid,
            pinned: Vec::new(),
        }
    }

    /// Passes a plain value (a scalar or a `#[repr(C)]` struct implementing [`DeviceRepr`]).
    pub fn value<T: DeviceRepr>(mut self, value: &'a T) -> Self {
        self.args.arg(value);
        self
    }

    /// Passes a device buffer the kernel only reads (as `const T*`).
    pub fn buffer<T>(mut self, buffer: &'a DeviceBuffer<T>) -> Self {
        self.args.arg(&buffer.slice);
        self
    }

    /// Passes a device buffer the kernel writes (as `T*`).
    pub fn buffer_mut<T>(mut self, buffer: &'a mut DeviceBuffer<T>) -> Self {
        self.args.arg(&mut buffer.slice);
        self
    }

    /// Passes page-locked host memory that the kernel reads or writes in place, over the bus
    /// (as `T*`): no copy to queue, which saves its fixed cost for small transfers that the
    /// kernel touches once. Host access to the buffer waits until the kernel has finished.
    pub fn pinned<T>(mut self, buffer: &'a mut PinnedBuffer<T>) -> Self {
        let PinnedBuffer {
            device_address,
            in_use_until,
            ..
        } = buffer;
        self.args.arg(&*device_address);
        self.pinned.push(in_use_until);
        self
    }

    /// Queues the kernel on the stream. Errors in the kernel itself surface at the next
    /// synchronizing call ([`crate::Gpu::synchronize`], a copy to the host).
    ///
    /// # Safety
    /// The arguments must match the kernel's parameters in number, order and layout, and the
    /// kernel must stay within the buffers it was given for this grid.
    pub unsafe fn run(mut self) -> Result<()> {
        // SAFETY: the caller guarantees the argument list matches the kernel (this function's
        // contract); every argument borrows its value for 'a, past the launch call.
        unsafe { self.args.launch(self.grid.config()) }?;
        if !self.pinned.is_empty() {
            let done = Completion::record(self.stream)?;
            for in_use_until in self.pinned {
                *in_use_until = Some(Arc::clone(&done));
            }
        }
        Ok(())
    }
}
