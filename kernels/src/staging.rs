//! Large host slices streamed to and from a GPU in chunks, through page-locked memory.

use std::sync::{Arc, Mutex};

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use rayon::prelude::*;

use crate::buffer::{DeviceBuffer, PinnedBuffer, check_fits};
use crate::error::{GpuError, Result};
use crate::gpu::Gpu;
use crate::queue::{CopyQueue, Mark};

/// Two page-locked host chunks and two device chunks on one [`Gpu`] handle, through which
/// [`Staging::to_device`] and [`Staging::from_device`] move host slices of any length while
/// the GPU works on the chunk before.
///
/// Copies from ordinary (pageable) memory go through the driver's own staging at a fraction of
/// the bus speed; page-locked memory is copied at bus speed, and the copies between it and the
/// caller's slices run on all of rayon's threads. Keep a `Staging` and reuse it: page-locked
/// memory is slow to allocate.
///
/// ```no_run
/// # fn main() -> Result<(), kernels::GpuError> {
/// let gpu = kernels::Gpu::first()?;
/// let mut staging = kernels::Staging::<u64>::new(&gpu, 1 << 20)?;
/// let data: Vec<u64> = (0..5_000_000).collect();
/// let mut on_device = gpu.alloc_zeroed::<u64>(data.len())?;
/// // Each chunk lands in a device chunk; here a device copy moves it to its place.
/// staging.to_device(&data, 1 << 20, |i, chunk, len| {
///     on_device.copy_from_device(i << 20, chunk, 0, len)
/// })?;
/// let mut back = vec![0u64; data.len()];
/// staging.from_device(&mut back, 1 << 20, |i, chunk, len| {
///     chunk.copy_from_device(0, &on_device, i << 20, len)
/// })?;
/// assert_eq!(back, data);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Staging<T> {
    gpu: Arc<Gpu>,
    queue: CopyQueue,
    host: [PinnedBuffer<T>; 2],
    device: [DeviceBuffer<T>; 2],
    /// For each device chunk, a mark after the last work queued on `gpu` that uses it: an
    /// upload into the chunk waits for it.
    device_free: [Option<Mark>; 2],
}

impl<T: DeviceRepr + ValidAsZeroBits + Copy + Send + Sync> Staging<T> {
    /// Chunks of `capacity` elements (at least one) on `gpu`'s device: twice that in
    /// page-locked host memory and twice in device memory.
    pub fn new(gpu: &Arc<Gpu>, capacity: usize) -> Result<Self> {
        let capacity = capacity.max(1);
        Ok(Self {
            gpu: Arc::clone(gpu),
            queue: gpu.copy_queue()?,
            host: [gpu.alloc_pinned(capacity)?, gpu.alloc_pinned(capacity)?],
            // SAFETY: a device chunk is read only where an upload or the caller's work has
            // written it first (`to_device` and `from_device` pass `len` elements).
            device: unsafe { [gpu.alloc_uninit(capacity)?, gpu.alloc_uninit(capacity)?] },
            device_free: [None, None],
        })
    }

    /// Elements per chunk.
    pub fn capacity(&self) -> usize {
        self.host[0].len()
    }

    /// Streams `src` to the device in chunks of `chunk_len` elements (the last may be
    /// shorter). For chunk `i` (elements `i * chunk_len..`), `work(i, chunk, len)` queues on
    /// the handle the kernels or device copies that read its `len` elements from the start of
    /// `chunk`; the upload of chunk `i + 1` runs while they do. Returns once the last chunk's
    /// work is queued; `src` is no longer read by then.
    ///
    /// Errors: `InvalidChunk` when `chunk_len` is 0 or exceeds [`Staging::capacity`], and
    /// whatever `work` returns (the chunks after it are not sent).
    pub fn to_device<E: From<GpuError>>(
        &mut self,
        src: &[T],
        chunk_len: usize,
        work: impl FnMut(usize, &DeviceBuffer<T>, usize) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        self.check_chunk(chunk_len)?;
        let result = self.upload_chunks(src, chunk_len, work);
        if result.is_err() {
            self.after_error()?;
        }
        result
    }

    /// [`Staging::to_device`]'s loop.
    fn upload_chunks<E: From<GpuError>>(
        &mut self,
        src: &[T],
        chunk_len: usize,
        mut work: impl FnMut(usize, &DeviceBuffer<T>, usize) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        for (i, part) in src.chunks(chunk_len).enumerate() {
            let slot = i % 2;
            // Waits until the upload of chunk i - 2 has read the page-locked chunk.
            parallel_copy(&mut self.host[slot].as_mut_slice()?[..part.len()], part);
            if let Some(free) = &self.device_free[slot] {
                self.queue.wait_for(free)?;
            }
            self.queue
                .upload(&mut self.device[slot], 0, &mut self.host[slot], part.len())?;
            self.gpu.wait_for(&self.queue.mark()?)?;
            work(i, &self.device[slot], part.len())?;
            self.device_free[slot] = Some(self.gpu.mark()?);
        }
        Ok(())
    }

    /// Fills `dst` from the device in chunks of `chunk_len` elements (the last may be
    /// shorter). For chunk `i`, `work(i, chunk, len)` queues on the handle the kernels or
    /// device copies that write its `len` elements into the start of `chunk`; the host copies
    /// chunk `i - 1` into `dst` while the GPU works on chunk `i`. Returns once `dst` is filled.
    ///
    /// Errors: as for [`Staging::to_device`]; on an error, `dst` may be partly written.
    pub fn from_device<E: From<GpuError>>(
        &mut self,
        dst: &mut [T],
        chunk_len: usize,
        work: impl FnMut(usize, &mut DeviceBuffer<T>, usize) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        self.check_chunk(chunk_len)?;
        // On success the host has waited for every copy out of the device chunks.
        let result = self.download_chunks(dst, chunk_len, work);
        if result.is_err() {
            self.after_error()?;
        }
        result
    }

    /// After a transfer stopped by an error, work or copies on the device chunks may still be
    /// queued: the handle waits for the copy queue, and the next uploads into the chunks for
    /// everything queued on the handle so far.
    fn after_error(&mut self) -> Result<()> {
        self.gpu.wait_for(&self.queue.mark()?)?;
        for free in &mut self.device_free {
            *free = Some(self.gpu.mark()?);
        }
        Ok(())
    }

    /// [`Staging::from_device`]'s loop.
    fn download_chunks<E: From<GpuError>>(
        &mut self,
        dst: &mut [T],
        chunk_len: usize,
        mut work: impl FnMut(usize, &mut DeviceBuffer<T>, usize) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let mut previous: Option<(usize, &mut [T])> = None;
        for (i, part) in dst.chunks_mut(chunk_len).enumerate() {
            let slot = i % 2;
            // Ordered on the handle's stream after the copy out of chunk i - 2, and after any
            // work of an earlier upload that read the chunk.
            work(i, &mut self.device[slot], part.len())?;
            self.device[slot].copy_to_pinned_async(part.len(), &mut self.host[slot])?;
            if let Some((slot, part)) = previous.take() {
                parallel_copy(part, &self.host[slot].as_slice()?[..part.len()]);
            }
            previous = Some((slot, part));
        }
        if let Some((slot, part)) = previous {
            parallel_copy(part, &self.host[slot].as_slice()?[..part.len()]);
        }
        self.device_free = [None, None];
        Ok(())
    }

    /// Copies `src` into `dst` from element `at` on, in chunks of `chunk_len` elements
    /// (uploads and device copies queued on the handle).
    ///
    /// Errors: `BufferTooSmall` when `src` does not fit from `at` on (nothing is copied), and
    /// as for [`Staging::to_device`].
    pub fn copy_to_buffer(
        &mut self,
        src: &[T],
        chunk_len: usize,
        dst: &mut DeviceBuffer<T>,
        at: usize,
    ) -> Result<()> {
        check_fits(at.saturating_add(src.len()), dst.len())?;
        self.to_device(src, chunk_len, |i, chunk, len| {
            dst.copy_from_device(at + i * chunk_len, chunk, 0, len)
        })
    }

    /// Fills `dst` with the elements of `src` from element `at` on, in chunks of `chunk_len`
    /// elements.
    ///
    /// Errors: `BufferTooSmall` when `src` holds fewer than `at + dst.len()` elements (nothing
    /// is copied), and as for [`Staging::from_device`].
    pub fn copy_from_buffer(
        &mut self,
        src: &DeviceBuffer<T>,
        at: usize,
        dst: &mut [T],
        chunk_len: usize,
    ) -> Result<()> {
        check_fits(at.saturating_add(dst.len()), src.len())?;
        self.from_device(dst, chunk_len, |i, chunk, len| {
            chunk.copy_from_device(0, src, at + i * chunk_len, len)
        })
    }

    fn check_chunk(&self, chunk_len: usize) -> Result<()> {
        if chunk_len == 0 || chunk_len > self.capacity() {
            return Err(GpuError::InvalidChunk {
                chunk_len,
                capacity: self.capacity(),
            });
        }
        Ok(())
    }
}

/// A [`Staging`] for a backend and its clones: made at the first transfer, with chunks no
/// larger than that transfer asks for, and made again, larger, when a later one asks for
/// longer chunks. Transfers through one `SharedStaging` (or its clones) take turns.
///
/// ```no_run
/// # fn main() -> Result<(), kernels::GpuError> {
/// let gpu = kernels::Gpu::first()?;
/// let staging = kernels::SharedStaging::<u64>::new(&gpu);
/// let data: Vec<u64> = (0..5_000_000).collect();
/// let mut on_device = gpu.alloc_zeroed::<u64>(data.len())?;
/// staging.with(1 << 20, |s| s.copy_to_buffer(&data, 1 << 20, &mut on_device, 0))?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SharedStaging<T> {
    gpu: Arc<Gpu>,
    slot: Arc<Mutex<Option<Staging<T>>>>,
}

impl<T: DeviceRepr + ValidAsZeroBits + Copy + Send + Sync> SharedStaging<T> {
    /// No staging yet; it is made on `gpu`'s handle at the first [`SharedStaging::with`].
    pub fn new(gpu: &Arc<Gpu>) -> Self {
        Self {
            gpu: Arc::clone(gpu),
            slot: Arc::default(),
        }
    }

    /// Runs `f` on the staging, made (or made again, the old chunks freed first) with chunks
    /// of at least `chunk_len` elements.
    ///
    /// Errors: the allocation's, and whatever `f` returns.
    pub fn with<R, E: From<GpuError>>(
        &self,
        chunk_len: usize,
        f: impl FnOnce(&mut Staging<T>) -> std::result::Result<R, E>,
    ) -> std::result::Result<R, E> {
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        let staging = match &mut *slot {
            Some(staging) if staging.capacity() >= chunk_len => staging,
            stale => {
                *stale = None;
                stale.insert(Staging::new(&self.gpu, chunk_len)?)
            }
        };
        f(staging)
    }
}

/// Copies `src` into `dst` (equal lengths) on all of rayon's threads.
fn parallel_copy<T: Copy + Send + Sync>(dst: &mut [T], src: &[T]) {
    /// Bytes per task: large enough that waking threads costs little beside the copy (with
    /// 256 KiB pieces, 1 MiB took 37% longer to fill through the staging than with one piece).
    const PIECE_BYTES: usize = 1 << 20;
    let piece = (PIECE_BYTES / size_of::<T>().max(1)).max(1);
    if dst.len() <= piece {
        // One piece: no thread to wake.
        dst.copy_from_slice(src);
        return;
    }
    dst.par_chunks_mut(piece)
        .zip(src.par_chunks(piece))
        .for_each(|(d, s)| d.copy_from_slice(s));
}
