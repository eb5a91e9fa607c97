//! A second stream for host-to-device copies that run while a [`Gpu`] handle's kernels do.

use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaStream, DeviceRepr, ValidAsZeroBits};

use crate::buffer::{DeviceBuffer, PinnedBuffer};
use crate::error::Result;
use crate::gpu::Gpu;

/// A point in the work queued on a [`Gpu`] handle or a [`CopyQueue`]: everything queued there
/// before the mark was made. [`Gpu::wait_for`] and [`CopyQueue::wait_for`] make later work
/// wait for it.
#[derive(Debug)]
pub struct Mark {
    event: CudaEvent,
}

impl Mark {
    /// A mark at the end of the work queued on `stream` so far.
    pub(crate) fn record(stream: &CudaStream) -> Result<Self> {
        Ok(Self {
            event: stream.record_event(None)?,
        })
    }

    /// Makes the work queued on `stream` from now on wait for this mark.
    pub(crate) fn make_wait(&self, stream: &CudaStream) -> Result<()> {
        Ok(stream.wait(&self.event)?)
    }
}

/// A second stream on a [`Gpu`] handle's device, for copies from page-locked memory that run
/// while the kernels queued on the handle do (the copy engines and the multiprocessors work at
/// once). Made by [`Gpu::copy_queue`].
///
/// Work on the queue and on the handle is ordered only by [`Mark`]s: before a copy into a
/// buffer that kernels read, wait here for a [`Gpu::mark`] made after those kernels were
/// queued; before kernels read what a copy wrote, make the handle wait for the queue's
/// [`CopyQueue::mark`]. Buffers keep being freed on the handle's stream, so the handle must
/// have waited for every copy into a buffer before the buffer is dropped.
///
/// ```no_run
/// # fn main() -> Result<(), kernels::GpuError> {
/// let gpu = kernels::Gpu::first()?;
/// let queue = gpu.copy_queue()?;
/// let mut staging = gpu.alloc_pinned::<u64>(1 << 20)?;
/// let mut input = gpu.alloc_zeroed::<u64>(1 << 20)?;
/// staging.as_mut_slice()?.fill(7);
/// queue.wait_for(&gpu.mark()?)?; // the kernels queued so far are done with `input`
/// queue.upload(&mut input, 0, &mut staging, 1 << 20)?;
/// gpu.wait_for(&queue.mark()?)?; // kernels queued from now on see the copy
/// assert!(input.to_host()?.iter().all(|&x| x == 7));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct CopyQueue {
    stream: Arc<CudaStream>,
}

impl CopyQueue {
    pub(crate) fn new(stream: Arc<CudaStream>) -> Self {
        Self { stream }
    }

    /// A mark after the copies queued here so far.
    pub fn mark(&self) -> Result<Mark> {
        Mark::record(&self.stream)
    }

    /// Makes the copies queued here from now on wait for `mark`.
    pub fn wait_for(&self, mark: &Mark) -> Result<()> {
        mark.make_wait(&self.stream)
    }

    /// Queues a copy of the first `len` elements of `src` into `dst` from element `offset` on,
    /// on this queue, and returns at once; [`PinnedBuffer::as_mut_slice`] waits for the copy
    /// before `src` can be written again. `dst` must belong to the queue's device.
    pub fn upload<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        dst: &mut DeviceBuffer<T>,
        offset: usize,
        src: &mut PinnedBuffer<T>,
        len: usize,
    ) -> Result<()> {
        dst.copy_from_pinned_on(&self.stream, offset, src, len)
    }
}

impl Gpu {
    /// A new [`CopyQueue`] on this handle's device.
    pub fn copy_queue(&self) -> Result<CopyQueue> {
        Ok(CopyQueue::new(self.context().new_stream()?))
    }

    /// A mark after the work queued on this handle so far.
    pub fn mark(&self) -> Result<Mark> {
        Mark::record(self.stream())
    }

    /// Makes the work queued on this handle from now on wait for `mark`.
    pub fn wait_for(&self, mark: &Mark) -> Result<()> {
        mark.make_wait(self.stream())
    }
}
