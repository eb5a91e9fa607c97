//! Tests of every library crate's public API under hostile conditions, kept out of the crates
//! themselves so that CI can run them both with overflow checks on (`cargo test`) and in release
//! (`cargo test --release -p robustness`) without a release build of the reference libraries.
//!
//! `tests/api/<crate>.rs`, one module per crate in one test binary:
//! - every public entry point that takes a size, index, length, count or file, fed extreme
//!   values (0, 1, the type's maximum, values whose sums or products overflow, mismatched
//!   lengths): each call returns an error or the correct value, never a panic;
//! - backends and contexts are `Send + Sync`; GPU tests (ignored without a GPU) share one
//!   backend among 8 threads and compare with the serial results;
//! - GPU faults: out of memory in the middle of a batch, requests larger than the device,
//!   failed launches: a clear error, and a backend that still works afterwards.
//!
//! The library itself is empty.
