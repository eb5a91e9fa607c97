//! Offline hint generation for single-server private information retrieval.
//!
//! **Status: not implemented yet.** This crate will provide RMS24 (Ren, Mughees, Sun, CCS
//! 2024) and Plinko (Hoover, Patel, Persiano, Yeo) hint generation with a CPU reference and a
//! CUDA backend behind one trait, and the `pir-hints` command-line tool that streams a
//! database file once and writes the hints.
//!
//! It follows section "pir-hints: RMS24 and Plinko" of the workspace's `SPEC.md`: subsets
//! from ChaCha select keys, offsets from ChaCha (RMS24) or from the invertible PRF of the
//! `prp` crate (Plinko), parities as bytewise XOR over entries.

#![forbid(unsafe_code)]
