//! Typed device buffers.

use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cudarc::driver::sys::{self, CUdeviceptr, CUevent_flags};
use cudarc::driver::{
    CudaEvent, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, PinnedHostSlice,
    ValidAsZeroBits, result,
};

use crate::error::{GpuError, Result};

/// `len` elements of `T` in device memory, freed on drop. Made by [`crate::Gpu::alloc_zeroed`]
/// or [`crate::Gpu::upload`]; passed to kernels through [`crate::Launch`].
#[derive(Debug)]
pub struct DeviceBuffer<T> {
    pub(crate) slice: CudaSlice<T>,
}

impl<T> Drop for DeviceBuffer<T> {
    /// Makes the buffer's context current on this thread before cudarc frees the memory. With
    /// the event tracking that [`crate::Gpu::new`] turns off, cudarc's drop queues the free
    /// without doing so itself: on a thread that had made no driver call (or whose current
    /// context belonged to a device whose handles were all dropped) the free failed, the
    /// memory stayed allocated, and the error came back from the next call on the device's
    /// handle, whatever it was.
    fn drop(&mut self) {
        make_current(self.slice.stream().context().cu_ctx());
    }
}

/// Makes `context` current on this thread if it is not, before cudarc frees memory of it in a
/// drop. Not `bind_to_thread`: that would take any error cudarc recorded on the context for
/// its next call, and the drop would lose it. `context` must be alive (the caller holds it).
fn make_current(context: sys::CUcontext) {
    if result::ctx::get_current().ok().flatten() != Some(context) {
        // SAFETY: the caller's context is alive; which context is current on a thread is
        // cudarc's to set at each call. A failure here shows as the free's own error, which
        // cudarc records.
        let _ = unsafe { result::ctx::set_current(context) };
    }
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    pub(crate) fn new(slice: CudaSlice<T>) -> Self {
        Self { slice }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.slice.len()
    }

    /// Whether the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.slice.is_empty()
    }

    /// Sets every element to zero bits, queued on the buffer's stream.
    pub fn zero(&mut self) -> Result<()>
    where
        T: ValidAsZeroBits,
    {
        let stream = self.slice.stream().clone();
        stream.memset_zeros(&mut self.slice)?;
        Ok(())
    }

    /// Copies `data` into the start of the buffer (`data` may be shorter than the buffer);
    /// returns once the copy has finished.
    pub fn copy_from_host(&mut self, data: &[T]) -> Result<()> {
        self.copy_from_host_at(0, data)
    }

    /// Copies the first `out.len()` elements into `out`, waiting for queued work first.
    pub fn copy_to_host(&self, out: &mut [T]) -> Result<()> {
        self.copy_range_to_host(0, out)
    }

    /// Copies `data` into the buffer from element `offset` on. Returns once the copy has
    /// finished, so `data` may be overwritten at once, also when it lies in page-locked memory
    /// (such as a [`PinnedBuffer`]'s), which the driver would otherwise still be reading.
    pub fn copy_from_host_at(&mut self, offset: usize, data: &[T]) -> Result<()> {
        check_fits(offset.saturating_add(data.len()), self.len())?;
        let stream = self.slice.stream().clone();
        let mut range = self.slice.slice_mut(offset..offset + data.len());
        stream.memcpy_htod(data, &mut range)?;
        stream.synchronize()?;
        Ok(())
    }

    /// Copies `out.len()` elements from element `offset` on into `out`, waiting for queued
    /// work first.
    pub fn copy_range_to_host(&self, offset: usize, out: &mut [T]) -> Result<()> {
        check_fits(offset.saturating_add(out.len()), self.len())?;
        let stream = self.slice.stream().clone();
        stream.memcpy_dtoh(&self.slice.slice(offset..offset + out.len()), out)?;
        stream.synchronize()?;
        Ok(())
    }

    /// Copies `len` elements of `src`, from element `src_offset` on, into this buffer from
    /// element `offset` on. Queued on the stream like a kernel (the host does not wait), so a
    /// kernel queued after it sees the copied elements. Both buffers must belong to one GPU.
    pub fn copy_from_device(
        &mut self,
        offset: usize,
        src: &DeviceBuffer<T>,
        src_offset: usize,
        len: usize,
    ) -> Result<()> {
        check_fits(offset.saturating_add(len), self.len())?;
        check_fits(src_offset.saturating_add(len), src.len())?;
        if len == 0 {
            return Ok(());
        }
        let stream = self.slice.stream().clone();
        let mut range = self.slice.slice_mut(offset..offset + len);
        stream.memcpy_dtod(&src.slice.slice(src_offset..src_offset + len), &mut range)?;
        Ok(())
    }

    /// The whole buffer as a host vector.
    pub fn to_host(&self) -> Result<Vec<T>> {
        let stream = self.slice.stream().clone();
        let data = stream.clone_dtoh(&self.slice)?;
        stream.synchronize()?;
        Ok(data)
    }
}

pub(crate) fn check_fits(len: usize, capacity: usize) -> Result<()> {
    if len > capacity {
        return Err(GpuError::BufferTooSmall { len, capacity });
    }
    Ok(())
}

/// A point in a stream after some queued copies or kernels, shared by the page-locked buffers
/// they use: an event, and whether a wait has already seen the stream pass it, so that the
/// buffers of one launch synchronize on it once. (Each synchronization is a driver call, about
/// 1.5 µs on an H100 machine even when the event has long passed.)
#[derive(Debug)]
pub(crate) struct Completion {
    event: CudaEvent,
    passed: AtomicBool,
}

impl Completion {
    /// A new point at the end of the work queued on `stream` so far.
    pub(crate) fn record(stream: &CudaStream) -> Result<Arc<Self>> {
        Ok(Arc::new(Self {
            event: stream.record_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING))?,
            passed: AtomicBool::new(false),
        }))
    }

    /// As [`Self::wait`] with the event's context already current, for a drop: by the raw
    /// driver call, which leaves alone any error recorded on the context (cudarc's would
    /// return it, and the drop could only drop it). A failed wait can only be ignored there.
    fn wait_in_drop(&self) {
        if !self.passed.load(Ordering::Acquire) {
            // SAFETY: the event is alive (self holds it) and its context is current.
            let _ = unsafe { result::event::synchronize(self.event.cu_event()) };
        }
    }

    /// Waits until the stream has passed this point.
    fn wait(&self) -> Result<()> {
        if !self.passed.load(Ordering::Acquire) {
            self.event.synchronize()?;
            self.passed.store(true, Ordering::Release);
        }
        Ok(())
    }
}

/// `len` elements of `T` in page-locked host memory, which the GPU copies to and from at full
/// bus speed and asynchronously, and which kernels can also read and write in place over the
/// bus. Made by [`crate::Gpu::alloc_pinned`]; filled from the device by
/// [`DeviceBuffer::copy_to_pinned_async`], copied to it by
/// [`DeviceBuffer::copy_from_pinned_async`], passed to kernels by [`crate::Launch::pinned`].
///
/// Page-locked memory is a scarce system resource and slow to allocate: keep such buffers
/// for staging and reuse them.
#[derive(Debug)]
pub struct PinnedBuffer<T> {
    slice: PinnedHostSlice<T>,
    /// The start of `slice`'s memory, read once at allocation. The accessors build their
    /// slices from it: cudarc's own accessors would synchronize an event of cudarc's, which
    /// this crate never records (its copies and kernels keep `in_use_until` instead), at the
    /// cost of a driver call each time.
    host: NonNull<T>,
    /// The address kernels reach the memory at.
    pub(crate) device_address: CUdeviceptr,
    /// Recorded after the last copy or kernel queued into or out of the buffer, shared by the
    /// buffers of one launch. (cudarc records its own event for pinned memory only when a
    /// context uses several streams, so this handle keeps one.)
    pub(crate) in_use_until: Option<Arc<Completion>>,
}

// SAFETY: `host` points into the allocation that `slice` owns (and `PinnedHostSlice` is Send
// and Sync); the accessors hand out its elements only as `slice`'s own would, through `&self`
// and `&mut self`.
unsafe impl<T: Send> Send for PinnedBuffer<T> {}
// SAFETY: as for Send.
unsafe impl<T: Sync> Sync for PinnedBuffer<T> {}

impl<T: DeviceRepr + ValidAsZeroBits> PinnedBuffer<T> {
    /// Wraps memory from `cuMemHostAlloc` (mapped into the device's address space).
    pub(crate) fn new(mut slice: PinnedHostSlice<T>) -> Result<Self> {
        let start = slice.as_mut_ptr()?;
        // An empty allocation may have no address; its slices need a dangling one.
        let host = match NonNull::new(start) {
            Some(host) => host,
            None if slice.is_empty() => NonNull::dangling(),
            None => {
                return Err(
                    cudarc::driver::DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE).into(),
                );
            }
        };
        let mut device_address: CUdeviceptr = 0;
        // SAFETY: `start` is the start of a live page-locked allocation made by cuMemHostAlloc
        // with the device-map flag; the driver writes the mapped address into
        // `device_address` (flags must be 0).
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device_address, start.cast(), 0) }
            .result()?;
        Ok(Self {
            slice,
            host,
            device_address,
            in_use_until: None,
        })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.slice.len()
    }

    /// Whether the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.slice.is_empty()
    }

    /// The contents, once every copy queued into or out of the buffer has finished.
    pub fn as_slice(&self) -> Result<&[T]> {
        self.wait()?;
        // SAFETY: `host` is the start of the `len()` initialized elements `slice` owns (zeroed
        // at allocation, then written only as `T`); no copy or kernel touches them any more
        // (waited above), and the borrow of `self` keeps them alive and unwritten.
        Ok(unsafe { std::slice::from_raw_parts(self.host.as_ptr(), self.len()) })
    }

    /// The contents for writing, once every copy queued into or out of the buffer has
    /// finished.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.wait()?;
        // SAFETY: as for `as_slice`, with the exclusive borrow of `self`.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.host.as_ptr(), self.len()) })
    }
}

impl<T> PinnedBuffer<T> {
    /// Waits for the copies and kernels queued into or out of the buffer.
    fn wait(&self) -> Result<()> {
        match &self.in_use_until {
            Some(completion) => completion.wait(),
            None => Ok(()),
        }
    }
}

impl<T> Drop for PinnedBuffer<T> {
    /// Waits until no copy or kernel in flight uses the memory, by the raw driver call with the
    /// buffer's context made current: cudarc's wait would take an error recorded on the
    /// context (by a failed free, say) for the next call, and this drop could only discard it.
    fn drop(&mut self) {
        make_current(self.slice.context().cu_ctx());
        if let Some(completion) = &self.in_use_until {
            completion.wait_in_drop();
        }
    }
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    /// Queues a copy of the first `len` elements into the start of `dst` and returns at once;
    /// [`PinnedBuffer::as_slice`] waits for it. Kernels queued later on the same GPU handle may
    /// overlap the transfer.
    pub fn copy_to_pinned_async(&self, len: usize, dst: &mut PinnedBuffer<T>) -> Result<()>
    where
        T: ValidAsZeroBits,
    {
        check_fits(len, self.len())?;
        check_fits(len, dst.len())?;
        let stream = self.slice.stream().clone();
        // cudarc's memcpy_dtoh would copy the whole pinned buffer; this copies `len` elements.
        let host = &mut dst.as_mut_slice()?[..len];
        // The raw copy below needs the context current on this thread, which may have made
        // no driver call yet.
        stream.context().bind_to_thread()?;
        let (src, record) = self.slice.device_ptr(&stream);
        // SAFETY: `host` is `len` elements of page-locked memory owned by `dst`, which waits
        // for this copy's event before any read, write or free; `src` holds at least `len`
        // elements; the copy is ordered on the stream that owns this buffer.
        unsafe { result::memcpy_dtoh_async(host, src, stream.cu_stream()) }?;
        drop(record);
        dst.in_use_until = Some(Completion::record(&stream)?);
        Ok(())
    }

    /// Queues a copy of the first `len` elements of `src` into the buffer from element
    /// `offset` on and returns at once; [`PinnedBuffer::as_mut_slice`] waits for it before
    /// `src` can be written again. Kernels queued later on the same GPU handle see the data.
    pub fn copy_from_pinned_async(
        &mut self,
        offset: usize,
        src: &mut PinnedBuffer<T>,
        len: usize,
    ) -> Result<()>
    where
        T: ValidAsZeroBits,
    {
        let stream = self.slice.stream().clone();
        self.copy_from_pinned_on(&stream, offset, src, len)
    }

    /// [`DeviceBuffer::copy_from_pinned_async`] queued on `stream`, which the caller orders
    /// with the buffer's other uses.
    pub(crate) fn copy_from_pinned_on(
        &mut self,
        stream: &CudaStream,
        offset: usize,
        src: &mut PinnedBuffer<T>,
        len: usize,
    ) -> Result<()>
    where
        T: ValidAsZeroBits,
    {
        check_fits(offset.saturating_add(len), self.len())?;
        check_fits(len, src.len())?;
        let host = &src.as_slice()?[..len];
        // As in `copy_to_pinned_async`: the raw copy needs the context current here.
        stream.context().bind_to_thread()?;
        let mut range = self.slice.slice_mut(offset..offset + len);
        let (dst, record) = range.device_ptr_mut(stream);
        // SAFETY: `host` is `len` elements of page-locked memory owned by `src`, which waits
        // for this copy's event before any write or free; `dst` is a range of `len` elements
        // of this buffer; the copy is queued on `stream`, which the callers order with the
        // buffer's other uses (its own stream, or a copy queue's with marks).
        unsafe { result::memcpy_htod_async(dst, host, stream.cu_stream()) }?;
        drop(record);
        src.in_use_until = Some(Completion::record(stream)?);
        Ok(())
    }
}

/// Unit tests that need a GPU (CI's run of the ignored NVRTC unit tests skips `gpu_tests`).
#[cfg(test)]
mod gpu_tests {
    use super::*;
    use crate::Gpu;

    /// A page-locked buffer dropped while a copy into it is in flight, on a fresh thread, with
    /// an error recorded on the context: the memory is freed and the error stays for the next
    /// call (the drop's wait used to take it and discard it).
    #[test]
    #[ignore = "requires a CUDA GPU"]
    fn pinned_buffers_dropped_in_flight_keep_a_recorded_error() {
        let gpu = Gpu::first().unwrap();
        let source = gpu.alloc_zeroed::<u8>(64 << 20).unwrap();
        let mut pinned = gpu.alloc_pinned::<u8>(64 << 20).unwrap();
        source.copy_to_pinned_async(64 << 20, &mut pinned).unwrap();
        let host = pinned.host.as_ptr();
        let recorded = cudarc::driver::DriverError(sys::CUresult::CUDA_ERROR_NOT_READY);
        gpu.context().record_err::<()>(Err(recorded));
        std::thread::spawn(move || drop(pinned)).join().unwrap();
        assert_eq!(
            gpu.context().check_err(),
            Err(recorded),
            "the recorded error kept"
        );
        gpu.context().bind_to_thread().unwrap();
        let mut flags = 0;
        // SAFETY: a query of the driver's page-locked ranges; it reads no memory at `host`.
        let lookup = unsafe { sys::cuMemHostGetFlags(&mut flags, host.cast()) };
        assert_ne!(lookup, sys::CUresult::CUDA_SUCCESS, "the memory was freed");
    }
}
