//! Shared pieces of the benchmarks and the `report` binary.
