// The Goldilocks field p = 2^64 - 2^32 + 1 on Montgomery forms x 2^64 mod p, and the power
// maps x^7 and x^(1/7) of its algebraic hashes, shared by this crate's kernel modules.
//
// Every value that enters a product must be canonical (below p), which mont_reduce needs;
// products and gl_add return canonical values. The CPU code (merkle/src/field.rs) models the
// reduction word by word.

#pragma once

#include "common.cuh"

#define EPSILON 0xffffffffull  // 2^64 mod p
#define MODULUS 0xffffffff00000001ull
#define R2 0xfffffffe00000001ull  // 2^128 mod p: the Montgomery form of 2^64

// a * b as a 64-bit product (mul.wide.u32, one IMAD.WIDE).
__device__ __forceinline__ u64 mul_wide(u32 a, u32 b) {
    u64 product;
    asm("mul.wide.u32 %0, %1, %2;" : "=l"(product) : "r"(a), "r"(b));
    return product;
}

// x / 2^64 mod p, canonical, for x = w0 + 2^32 w1 + 2^64 w2 + 2^96 w3 given with w3p = w3 + 1,
// where w3 < 2^32 - 1 (true for every product of two canonical values: it is below
// (p - 1)^2 < 2^128 - 2^96).
//
// With m = lo64(x) p^-1 mod 2^64 = lo64(x) (1 + 2^32), x - m p is divisible by 2^64 and
// (x - m p) / 2^64 = hi64(x) - floor(m p / 2^64). In words: m1 = w1 + w0 (carry c), and
// floor(m p / 2^64) = 2^32 m1 + w0 - (m1 + c), so the quotient is
//   (w3 - u + k) 2^32 + (w2 + w1 + c mod 2^32),  u = m1 + c < 2^32,
// where k is the carry of w2 + w1 + c. The high word w3 - u + k, taken as w3p + ~u + k, carries
// out exactly when it is not negative; a negative quotient (above -p) gets p added, which is
// subtracting EPSILON mod 2^64. Outputs are below p in both cases: a non-negative quotient is
// at most hi64(x) < p - 1 for inputs below p.
//
// The flags are the hardware's carry: subc after addc.cc adds the carry (a + ~b + carry), as
// the previous reduction of this file measured on an H100. The steps are modelled word by word
// in merkle/src/field.rs (gpu_word_reduction_matches_mont_reduce, edge cases included) and
// the GPU tests compare whole trees with the CPU.
//
// Five adds and a three-instruction correction. ptxas puts the carry-only adds (u, the mask) on
// the FMA pipe and the rest on the integer ALU; with the square's words (gl_sqr) the two pipes
// get equal work, which is what made the Montgomery square faster than the direct reduction
// (2^64 = 2^32 - 1, 2^96 = -1: four wide products and 20 FMA-pipe cycles per square, against
// three and 18 here; measured on an H100, whole trees of 2^20 leaves 6.35 -> 5.95 ms).
__device__ __forceinline__ u64 mont_reduce(u32 w0, u32 w1, u32 w2, u32 w3p) {
    u32 lo, hi, negative_mask;
    asm("{\n\t.reg .u32 m1, u;\n\t"
        "add.cc.u32 m1, %4, %3;\n\t"     // m1 = w1 + w0, carry c
        "addc.u32 u, m1, 0;\n\t"         // u = m1 + c
        "addc.cc.u32 %0, %5, %4;\n\t"    // lo = w2 + w1 + c, carry k
        "subc.cc.u32 %1, %6, u;\n\t"     // hi = w3p + ~u + k, carry: not negative
        "subc.u32 %2, 0, 0;\n\t}"        // 0 when not negative, else 2^32 - 1
        : "=r"(lo), "=r"(hi), "=r"(negative_mask)
        : "r"(w0), "r"(w1), "r"(w2), "r"(w3p));
    return (((u64)hi << 32) | lo) - (u64)negative_mask;
}

// Montgomery product a b / 2^64 mod p, canonical, for canonical a, b.
__device__ __forceinline__ u64 gl_mul(u64 a, u64 b) {
    const u64 lo = a * b, hi = __umul64hi(a, b);
    return mont_reduce((u32)lo, (u32)(lo >> 32), (u32)hi, (u32)(hi >> 32) + 1);
}

// Montgomery square a^2 / 2^64 mod p, canonical, for canonical a. Three 32 x 32 -> 64-bit
// products: a0^2, a1^2 and the cross product a0 a1 once, doubled by shifts as it is added. The
// cross product's top bit comes from __umulhi(c1, 2), which ptxas makes a shift-and-add with the
// +1 of w3p folded in, and then takes w3p's carry add on the FMA pipe (a plain shift kept it on
// the ALU: 10 ALU instructions against 9, and whole trees 5% slower on an H100).
__device__ __forceinline__ u64 gl_sqr(u64 a) {
    const u32 a0 = (u32)a, a1 = (u32)(a >> 32);
    const u64 cross = mul_wide(a0, a1), low = mul_wide(a0, a0), high = mul_wide(a1, a1);
    // 2 cross = d0 + 2^32 d1 + 2^64 d2, added to the square's words 1 to 3; d2p = d2 + 1.
    const u32 c0 = (u32)cross, c1 = (u32)(cross >> 32);
    const u32 d0 = c0 << 1, d1 = __funnelshift_l(c0, c1, 1), d2p = __umulhi(c1, 2u) + 1;
    u32 w1, w2, w3p;
    asm("add.cc.u32 %0, %3, %6;\n\taddc.cc.u32 %1, %4, %7;\n\taddc.u32 %2, %5, %8;"
        : "=r"(w1), "=r"(w2), "=r"(w3p)
        : "r"((u32)(low >> 32)), "r"((u32)high), "r"((u32)(high >> 32)), "r"(d0), "r"(d1),
          "r"(d2p));
    return mont_reduce((u32)low, w1, w2, w3p);
}

// The canonical Montgomery form x 2^64 mod p of any x < 2^64: the Montgomery product with
// 2^128 mod p (x R2 < 2^128 - 2^97 + 2^64, so mont_reduce's bound on w3 holds for any x).
__device__ __forceinline__ u64 to_mont(u64 x) {
    return gl_mul(x, R2);
}

// The Montgomery form of a small value v < 2^32: v 2^64 = v EPSILON mod p, and v EPSILON < p.
__device__ __forceinline__ u64 small_to_mont(u32 v) {
    return (u64)v * EPSILON;
}

// The canonical value x / 2^64 mod p of any Montgomery form x < 2^64.
__device__ __forceinline__ u64 from_mont(u64 x) {
    return mont_reduce((u32)x, (u32)(x >> 32), 0, 1);
}

typedef unsigned __int128 u128;

// 2p, above 2^64: added before subtracting any value below 2^64.
#define TWO_P ((u128)MODULUS * 2)

// A value below 2^64 congruent to x mod p, for any x < 2^96 (not always canonical):
// x = lo + 2^64 hi = lo + hi EPSILON mod p with hi EPSILON < 2^64; a carry out of that sum is
// 2^64 = EPSILON again, and after it the sum is below hi EPSILON, so adding EPSILON cannot
// carry.
__device__ __forceinline__ u64 fold96(u128 x) {
    const u64 hi = (u64)(x >> 64);
    const u128 once = (u128)(u64)x + ((hi << 32) - hi);
    return (u64)once + ((u64)(once >> 64) ? EPSILON : 0);
}

// The canonical value of any x < 2^64 (x < 2p).
__device__ __forceinline__ u64 gl_canonical(u64 x) {
    return x >= MODULUS ? x - MODULUS : x;
}

// a + b mod p, canonical, for any a < 2^64 and a canonical b. A sum past 2^64 becomes
// a + b - p = sum mod 2^64 + EPSILON, which stays below 2^64 as b < p.
__device__ __forceinline__ u64 gl_add(u64 a, u64 b) {
    u64 sum;
    u32 carry;
    asm("add.cc.u64 %0, %2, %3;\n\taddc.u32 %1, 0, 0;" : "=l"(sum), "=r"(carry) : "l"(a), "l"(b));
    sum += (u64)(0u - carry);
    return sum >= MODULUS ? sum - MODULUS : sum;  // gl_canonical's test, inline: ptxas orders
                                                  // Rpx256's kernels otherwise
}

// x[i] <- x[i]^(2^n) for W elements: W independent chains for the scheduler. Unrolled six
// times: whole trees 2% faster on an H100 than with ptxas's own choice of two; unrolling by 12,
// or fully (kernels of 68 and 131 KB), was 3% and 7% slower.
template <int W>
__device__ __forceinline__ void square_n(u64* x, int n) {
#pragma unroll 6
    for (int k = 0; k < n; k++) {
#pragma unroll
        for (int i = 0; i < W; i++) x[i] = gl_sqr(x[i]);
    }
}

template <int W>
__device__ __forceinline__ void mul_into(u64* x, const u64* y) {
#pragma unroll
    for (int i = 0; i < W; i++) x[i] = gl_mul(x[i], y[i]);
}


// s[i] <- s[i]^(1/7) for W elements: INV_ALPHA = 16 P(10) (2^32 + 3) + 7, where x^P(k) has
// every third exponent bit set k times (1 + 8 + ... + 8^(k-1)); the CPU's chain in rescue.rs,
// 62 squarings and 9 multiplications, except that x^7 and x^9 = x^P(2) come from x^6 here
// (x^9 as x^8 x, one squaring more, made whole trees 1.4% slower on an H100). It is written
// step by step over the W elements so that each step offers W independent multiplications
// (ptxas does not interleave W whole chains on its own).
template <int W>
__device__ __forceinline__ void inverse_sbox(u64* s) {
    u64 x7[W], p2[W], p[W], w[W];
#pragma unroll
    for (int i = 0; i < W; i++) {
        const u64 x3 = gl_mul(gl_sqr(s[i]), s[i]);
        const u64 x6 = gl_sqr(x3);
        x7[i] = gl_mul(x6, s[i]);
        p2[i] = gl_mul(x6, x3);  // x^9
        p[i] = p2[i];
    }
    square_n<W>(p, 6);
    mul_into<W>(p, p2);  // P(4)
#pragma unroll
    for (int i = 0; i < W; i++) w[i] = p[i];
    square_n<W>(p, 12);
    mul_into<W>(p, w);  // P(8)
    square_n<W>(p, 6);
    mul_into<W>(p, p2);  // P(10)
#pragma unroll
    for (int i = 0; i < W; i++) {
        u64 sq = gl_sqr(p[i]);
        w[i] = gl_mul(sq, p[i]);  // P(10)^3
        p[i] = sq;
    }
    square_n<W>(p, 31);
    mul_into<W>(p, w);  // P(10) (2^32 + 3)
    square_n<W>(p, 4);
#pragma unroll
    for (int i = 0; i < W; i++) s[i] = gl_mul(p[i], x7[i]);
}

// x^7 for one element.
__device__ __forceinline__ u64 sbox_one(u64 x) {
    u64 x2 = gl_sqr(x);
    u64 x4 = gl_sqr(x2);
    return gl_mul(gl_mul(x4, x2), x);
}

