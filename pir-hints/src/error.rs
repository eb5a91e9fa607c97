//! The crate's error type.

use std::path::{Path, PathBuf};

/// Why hint generation, a hint file or a database could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Parameters that do not describe a valid hint set.
    #[error("invalid parameters: {0}")]
    Parameter(String),
    /// A database whose shape does not match the parameters.
    #[error("database: {0}")]
    Database(String),
    /// A key file that cannot be used.
    #[error("key file: {0}")]
    KeyFile(String),
    /// A hint file that is malformed, or hint sets that do not belong together.
    #[error("hints: {0}")]
    Hints(String),
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The permutation crate refused (sizes past its limits).
    #[error(transparent)]
    Prp(#[from] prp::Error),
    /// The GPU could not be used (no driver, no device, out of memory, compile failure).
    #[error(transparent)]
    Gpu(#[from] kernels::GpuError),
}

impl Error {
    /// An I/O error on `path`.
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
