//! Every library crate's public API under extreme values, many threads and GPU faults: one
//! module per crate, one test binary (CI builds it twice: with overflow checks on, and in
//! release). GPU tests are `#[ignore = "requires a CUDA GPU"]`.

mod fhe_pbs;
mod kernels;
mod merkle;
mod msm;
mod pir_hints;
mod prp;

/// Compiles only when `T` may cross threads and be shared between them.
fn assert_send_sync<T: Send + Sync>() {}
