//! Runs the CPU's hot loops compiled for the widest x86-64 vector instructions the processor
//! has, chosen at run time (the crate is built for baseline x86-64, so its loops otherwise
//! use SSE2 only), and asks for memory ahead of them ([`prefetch`]).
//!
//! [`vectorized`] runs a [`Vectorized`] operation from a function compiled with AVX-512
//! (x86-64-v4) or AVX2 and FMA (x86-64-v3) enabled, when the processor has them. The
//! operation's `run`, and the functions marked `#[inline(always)]` below it, are inlined into
//! that function and vectorized for those instructions. Results do not depend on the level:
//! the loops are integer arithmetic and IEEE operations in a fixed order (Rust never fuses a
//! multiply and an add on its own).

/// An operation whose loops [`vectorized`] compiles for the processor's vector instructions.
/// Its `run` must be `#[inline(always)]`, as must every function it calls that should be
/// vectorized with it.
pub(crate) trait Vectorized {
    /// What the operation returns.
    type Output;
    /// Runs the operation.
    fn run(self) -> Self::Output;
}

/// `op.run()`, compiled for the widest vector instructions this processor has.
pub(crate) fn vectorized<T: Vectorized>(op: T) -> T::Output {
    #[cfg(target_arch = "x86_64")]
    {
        if has_x86_64_v4() {
            // SAFETY: the processor has every feature `x86_64_v4` is compiled for.
            return unsafe { x86_64_v4(op) };
        }
        if has_x86_64_v3() {
            // SAFETY: the processor has every feature `x86_64_v3` is compiled for.
            return unsafe { x86_64_v3(op) };
        }
    }
    op.run()
}

/// Whether the processor has the features of [`x86_64_v4`].
#[cfg(target_arch = "x86_64")]
fn has_x86_64_v4() -> bool {
    use std::arch::is_x86_feature_detected as has;
    has!("avx512f") && has!("avx512dq") && has!("avx512vl") && has!("avx512bw") && has_x86_64_v3()
}

/// Whether the processor has the features of [`x86_64_v3`].
#[cfg(target_arch = "x86_64")]
fn has_x86_64_v3() -> bool {
    use std::arch::is_x86_feature_detected as has;
    has!("avx2") && has!("fma")
}

/// Asks the processor to bring `data` into its L2 cache (one prefetch hint per 64-byte line):
/// no effect on results, and none at all off x86-64.
#[inline(always)]
pub(crate) fn prefetch<T>(data: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T1, _mm_prefetch};
        let start = data.as_ptr().cast::<i8>();
        for offset in (0..std::mem::size_of_val(data)).step_by(64) {
            // SAFETY: a prefetch is a hint that never faults, and the address lies within
            // `data` (an offset below its size).
            unsafe { _mm_prefetch::<_MM_HINT_T1>(start.add(offset)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = data;
}

/// `op.run()` compiled for AVX-512 (F, DQ, VL, BW) with AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx512bw,avx2,fma")]
fn x86_64_v4<T: Vectorized>(op: T) -> T::Output {
    op.run()
}

/// `op.run()` compiled for AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn x86_64_v3<T: Vectorized>(op: T) -> T::Output {
    op.run()
}

/// `op.run()` at every level this processor has (baseline first), for tests that the results
/// do not depend on it.
#[cfg(test)]
pub(crate) fn at_every_level<T: Vectorized + Clone>(op: &T) -> Vec<T::Output> {
    let mut outputs = vec![op.clone().run()];
    #[cfg(target_arch = "x86_64")]
    {
        if has_x86_64_v3() {
            // SAFETY: the processor has every feature `x86_64_v3` is compiled for.
            outputs.push(unsafe { x86_64_v3(op.clone()) });
        }
        if has_x86_64_v4() {
            // SAFETY: the processor has every feature `x86_64_v4` is compiled for.
            outputs.push(unsafe { x86_64_v4(op.clone()) });
        }
    }
    outputs
}
