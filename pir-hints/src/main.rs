//! The `pir-hints` command-line tool.

fn main() {}
