//! The CUDA backend.

use std::sync::Arc;

use kernels::Gpu;

use crate::database::Database;
use crate::error::Error;
use crate::hints::Hints;
use crate::{HintGenerator, Job};

/// The CUDA backend on one or more GPUs of this host.
#[derive(Debug, Clone)]
pub struct Cuda {
    gpus: Vec<Arc<Gpu>>,
}

impl Cuda {
    /// The backend on every GPU of the host.
    pub fn new() -> Result<Self, Error> {
        Self::on(Gpu::all()?)
    }

    /// The backend on GPUs the caller opened (`kernels::Gpu::new(ordinal)`); work is split
    /// between them. Errors if the list is empty.
    pub fn on(gpus: Vec<Arc<Gpu>>) -> Result<Self, Error> {
        if gpus.is_empty() {
            return Err(Error::Parameter("no GPUs given".into()));
        }
        Ok(Self { gpus })
    }

    /// The GPUs in use.
    pub fn gpus(&self) -> &[Arc<Gpu>] {
        &self.gpus
    }
}

impl HintGenerator for Cuda {
    fn name(&self) -> String {
        format!("CUDA ({} GPUs)", self.gpus.len())
    }

    fn generate_with_progress(
        &self,
        _job: &Job<'_>,
        _db: &Database<'_>,
        _progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Hints, Error> {
        Err(Error::Parameter("not yet".into()))
    }
}
