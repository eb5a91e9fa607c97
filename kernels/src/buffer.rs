//! Typed device buffers.

use cudarc::driver::{CudaSlice, DeviceRepr};

use crate::error::{GpuError, Result};

/// `len` elements of `T` in device memory, freed on drop. Made by [`crate::Gpu::alloc_zeroed`]
/// or [`crate::Gpu::upload`]; passed to kernels through [`crate::Launch`].
#[derive(Debug)]
pub struct DeviceBuffer<T> {
    pub(crate) slice: CudaSlice<T>,
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

    /// Copies `data` into the start of the buffer (`data` may be shorter than the buffer).
    pub fn copy_from_host(&mut self, data: &[T]) -> Result<()> {
        check_fits(data.len(), self.len())?;
        let stream = self.slice.stream().clone();
        let mut head = self.slice.slice_mut(..data.len());
        stream.memcpy_htod(data, &mut head)?;
        Ok(())
    }

    /// Copies the first `out.len()` elements into `out`, waiting for queued work first.
    pub fn copy_to_host(&self, out: &mut [T]) -> Result<()> {
        check_fits(out.len(), self.len())?;
        let stream = self.slice.stream().clone();
        stream.memcpy_dtoh(&self.slice.slice(..out.len()), out)?;
        stream.synchronize()?;
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

fn check_fits(len: usize, capacity: usize) -> Result<()> {
    if len > capacity {
        return Err(GpuError::BufferTooSmall { len, capacity });
    }
    Ok(())
}
