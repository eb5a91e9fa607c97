//! CUDA C++ sources as NVRTC takes them: a [`Module`] (one `.cu` translation unit) and the
//! [`Header`]s its `#include "name.cuh"` lines name, all embedded in the binary, so that
//! nothing is read from the file system at run time.
//!
//! Each algorithm crate owns its kernels (its `cuda/` folder) and defines its modules; this
//! crate holds only the headers several crates share ([`COMMON`]). A crate whose device code
//! others build on exports its headers as it exports its Rust API (prp's ChaCha header, which
//! pir-hints includes).

/// One header a module may include, by the name its `#include "..."` line uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Header {
    /// The include name (`common.cuh`).
    pub name: &'static str,
    /// The header text.
    pub text: &'static str,
}

/// One CUDA C++ translation unit, compiled by NVRTC as a whole with its headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Module {
    /// Short name, used in error messages and cache file names (`chacha`); unique within a
    /// process, since a [`Gpu`](crate::Gpu) keeps its loaded modules by name.
    pub name: &'static str,
    /// The `.cu` source text.
    pub source: &'static str,
    /// Every header the source includes, directly or through another header.
    pub headers: &'static [Header],
}

impl Module {
    /// The quoted includes of the source and its headers that name no header of
    /// [`Module::headers`]: empty for a module NVRTC can compile.
    pub fn unresolved_includes(&self) -> Vec<&'static str> {
        let texts = std::iter::once(self.source).chain(self.headers.iter().map(|h| h.text));
        let mut missing: Vec<&'static str> = texts
            .flat_map(quoted_includes)
            .filter(|include| self.headers.iter().all(|h| h.name != *include))
            .collect();
        missing.sort_unstable();
        missing.dedup();
        missing
    }
}

/// The names in the `#include "..."` lines of `text`.
fn quoted_includes(text: &'static str) -> impl Iterator<Item = &'static str> {
    text.lines().filter_map(|line| {
        let rest = line.trim_start().strip_prefix("#include")?.trim();
        rest.strip_prefix('"')?.split('"').next()
    })
}

/// Fixed-width integer names (`u8`, `u32`, `u64`) and grid-index helpers, which every
/// module includes (NVRTC has no C standard headers).
pub const COMMON: Header = Header {
    name: "common.cuh",
    text: include_str!("../cuda/common.cuh"),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unresolved_includes_names_what_is_missing() {
        const CHILD: Header = Header {
            name: "child.cuh",
            text: "#pragma once\n#include \"common.cuh\"\n  #include \"grandchild.cuh\"\n",
        };
        let module = Module {
            name: "probe",
            source: "#include \"child.cuh\"\n#include <cstdio>\n__global__ void k() {}\n",
            headers: &[CHILD],
        };
        assert_eq!(
            module.unresolved_includes(),
            ["common.cuh", "grandchild.cuh"]
        );
        let complete = Module {
            headers: &[
                CHILD,
                COMMON,
                Header {
                    name: "grandchild.cuh",
                    text: "",
                },
            ],
            ..module
        };
        assert!(complete.unresolved_includes().is_empty());
    }
}
