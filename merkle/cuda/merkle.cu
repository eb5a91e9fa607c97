// Rescue Prime Rp64_256 (winter-crypto 0.13.1) over the Goldilocks field p = 2^64 - 2^32 + 1:
// the permutation, Merkle tree levels (a quad of lanes per merge, or a half warp per merge for the
// small levels near the root), and row hashing.
//
// The permutation runs on Montgomery forms x 2^64 mod p, like the CPU's (rescue.rs): products
// are Montgomery products (mont_reduce), and every value that enters one is canonical, which
// the reduction needs. Digests and row elements are converted on the way in and out. The round
// constants arrive in Montgomery form as a kernel parameter (constant bank), so the Rust crate
// holds the only copy of them.

#include "common.cuh"

#define STATE_WIDTH 12
#define ROUNDS 7
#define RATE 8
#define EPSILON 0xffffffffull  // 2^64 mod p
#define MODULUS 0xffffffff00000001ull
#define R2 0xfffffffe00000001ull  // 2^128 mod p: the Montgomery form of 2^64

struct RescueConstants {
    u64 ark1[ROUNDS][STATE_WIDTH];
    u64 ark2[ROUNDS][STATE_WIDTH];
};

// First row of the circulant MDS matrix: MDS[i][j] = MDS_ROW[(j - i) mod 12].
__device__ __forceinline__ u64 mds_coefficient(int k) {
    const u64 row[STATE_WIDTH] = {7, 23, 8, 26, 13, 10, 9, 7, 6, 22, 21, 8};
    return row[k];
}

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

// a + b mod p, canonical, for any a < 2^64 and a canonical b. A sum past 2^64 becomes
// a + b - p = sum mod 2^64 + EPSILON, which stays below 2^64 as b < p.
__device__ __forceinline__ u64 gl_add(u64 a, u64 b) {
    u64 sum;
    u32 carry;
    asm("add.cc.u64 %0, %2, %3;\n\taddc.u32 %1, 0, 0;" : "=l"(sum), "=r"(carry) : "l"(a), "l"(b));
    sum += (u64)(0u - carry);
    return sum >= MODULUS ? sum - MODULUS : sum;
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

// The MDS step's sums run on the FP64 pipe, which the S-box chains leave idle (their wide
// integer products keep the FMA pipe busy): each input is split into 32-bit halves, and
// sum_k MDS_ROW[k] half_k (the coefficients sum to 160 < 2^8, so below 2^40) is computed
// exactly in doubles. Each sum starts at 2^52, so that the integer sits in the low mantissa
// bits of the result: every partial sum is an integer in [2^52, 2^53), where doubles have
// unit spacing. Measured on an H100 against wide integer products for the sums: a 2^19-merge
// level 3.19 -> 3.07 ms; the halves converted by I2F beat building 2^52 + half from its bits
// and subtracting 2^52 (3.11 ms: a register move and a DADD per half).
#define MDS_SUM_START 0x1p52
#define MDS_SUM_BIAS 0x4330000000000000ull  // the bits of 2^52

// Reduces lo_sum + 2^32 hi_sum mod p, both sums given as 2^52 + sum (each sum below 2^41).
__device__ __forceinline__ u64 reduce_mds_sums(double lo_biased, double hi_biased) {
    const u64 lo_sum = (u64)__double_as_longlong(lo_biased) - MDS_SUM_BIAS;
    const u64 hi_sum = (u64)__double_as_longlong(hi_biased) - MDS_SUM_BIAS;
    u64 low = lo_sum + (hi_sum << 32);
    u64 high = (hi_sum >> 32) + (low < lo_sum ? 1 : 0);
    u64 folded = high * EPSILON;  // high < 2^9, so no wrap
    u64 sum = low + folded;
    if (sum < folded) sum += EPSILON;
    return sum;
}

// The MDS step when lane i of each group of SPLIT_LANES holds s[i]: out_i = sum_k MDS_ROW[k]
// s[(i + k) mod 12], each s gathered by a shuffle within the group.
__device__ __forceinline__ u64 mds_split(u64 x, u32 lane) {
    double lo_sum = MDS_SUM_START, hi_sum = MDS_SUM_START;
    const u32 base = threadIdx.x & 31 & ~(u32)15;  // first lane of this group in its warp
#pragma unroll
    for (int k = 0; k < STATE_WIDTH; k++) {
        u32 source = (lane + k) % STATE_WIDTH;
        u32 lo = __shfl_sync(0xffffffffu, (u32)x, base + source);
        u32 hi = __shfl_sync(0xffffffffu, (u32)(x >> 32), base + source);
        const double coefficient = (double)mds_coefficient(k);
        lo_sum = fma(coefficient, __uint2double_rn(lo), lo_sum);
        hi_sum = fma(coefficient, __uint2double_rn(hi), hi_sum);
    }
    return reduce_mds_sums(lo_sum, hi_sum);
}

// The MDS step when each quad of lanes holds the state, lane q elements q, q + 4 and q + 8 in
// x[0], x[1], x[2]. Each lane gathers the state rotated by its q, rotated[j] = s[(j + q) mod
// 12], so that its outputs out_{4t+q} = sum_j MDS_ROW[(j - 4t) mod 12] rotated[j] use fixed
// indices: in round (t, r) every lane reads lane (q + r) mod 4, which sends its slot holding
// element 4t + r + q (mod 12): slot t, or t + 1 (mod 3) when its own lane is below r. Each
// gathered input goes straight into the three outputs' sums, so that only the sums stay live.
__device__ __forceinline__ void mds_quad(u64* x) {
    const u32 q = threadIdx.x % 4;
    const u32 quad_mask = 0xfu << (threadIdx.x % 32 & ~3u);
    double lo_sum[3], hi_sum[3];
#pragma unroll
    for (int t = 0; t < 3; t++) lo_sum[t] = hi_sum[t] = MDS_SUM_START;
#pragma unroll
    for (int t = 0; t < 3; t++) {
#pragma unroll
        for (u32 r = 0; r < 4; r++) {
            const u64 v = q < r ? x[(t + 1) % 3] : x[t];
            const u32 from = (q + r) % 4;
            const double lo = __uint2double_rn(__shfl_sync(quad_mask, (u32)v, from, 4));
            const double hi = __uint2double_rn(__shfl_sync(quad_mask, (u32)(v >> 32), from, 4));
            const int j = 4 * t + r;
#pragma unroll
            for (int out = 0; out < 3; out++) {
                const double coefficient =
                    (double)mds_coefficient((j - 4 * out + STATE_WIDTH) % STATE_WIDTH);
                lo_sum[out] = fma(coefficient, lo, lo_sum[out]);
                hi_sum[out] = fma(coefficient, hi, hi_sum[out]);
            }
        }
    }
#pragma unroll
    for (int t = 0; t < 3; t++) x[t] = reduce_mds_sums(lo_sum[t], hi_sum[t]);
}

// The permutation on a quad of lanes (see mds_quad for the layout of x).
__device__ void permute_quad(u64* x, const RescueConstants& c) {
    const u32 q = threadIdx.x % 4;
#pragma unroll 1
    for (int r = 0; r < ROUNDS; r++) {
#pragma unroll
        for (int t = 0; t < 3; t++) x[t] = sbox_one(x[t]);
        mds_quad(x);
#pragma unroll
        for (int t = 0; t < 3; t++) x[t] = gl_add(x[t], c.ark1[r][4 * t + q]);
        inverse_sbox<3>(x);
        mds_quad(x);
#pragma unroll
        for (int t = 0; t < 3; t++) x[t] = gl_add(x[t], c.ark2[r][4 * t + q]);
    }
}

struct Digest {
    u64 e[4];
};

// Lanes per merge in merkle_merge_level_split: a half warp, of which lanes 0..11 hold one
// state element each and 12..15 follow along (their results are dropped).
#define SPLIT_LANES 16

// The same level with one state element per lane, for the small levels near the root where
// a quad per merge leaves the GPU idle: each lane runs one S-box chain (a twelfth of the
// instructions of a whole permutation), and the MDS step gathers the state by shuffles.
extern "C" __global__ void merkle_merge_level_split(Digest* trees, u64 leaves_per_tree,
                                                    u64 parents, u64 merges,
                                                    const __grid_constant__ RescueConstants c) {
    const u64 g = global_thread_index() / SPLIT_LANES;
    const u32 lane = threadIdx.x % SPLIT_LANES;
    const u32 element = lane < STATE_WIDTH ? lane : 0;
    const bool active = g < merges;
    const u64 merge_index = active ? g : 0;
    Digest* nodes = trees + (merge_index / parents) * 2 * leaves_per_tree;
    const u64 node = parents + merge_index % parents;

    u64 x = 0;
    if (element == 0) x = small_to_mont(RATE);
    if (element >= 4) {
        const u64* children = (const u64*)(nodes + 2 * node);  // 8 consecutive elements
        x = to_mont(children[element - 4]);
    }
#pragma unroll 1
    for (int r = 0; r < ROUNDS; r++) {
        x = sbox_one(x);
        x = gl_add(mds_split(x, lane), c.ark1[r][element]);
        inverse_sbox<1>(&x);
        x = gl_add(mds_split(x, lane), c.ark2[r][element]);
    }
    if (active && lane >= 4 && lane < 8) ((u64*)(nodes + node))[lane - 4] = from_mont(x);
}

// One tree level, a quad of lanes per merge: parent `parents + j` of each tree from its two
// children. Trees are arrays of 2n digests (root at 1, node i the parent of 2i and 2i + 1),
// back to back. Lane q holds state elements q, q + 4 and q + 8 (so digest element q of each
// child, and of the parent): three S-box chains per lane and few registers, so that many warps
// per SM hide the multiplies' latency (measured on an H100 against one thread per merge, 142
// registers and 12 warps per SM: 2^20 leaves 9.79 -> 8.24 ms, 2^24 157 -> 122 ms).
extern "C" __global__ void merkle_merge_level(Digest* trees, u64 leaves_per_tree,
                                                   u64 parents, u64 merges,
                                                   const __grid_constant__ RescueConstants c) {
    const u64 g = global_thread_index() / 4;
    const u32 q = threadIdx.x % 4;
    const bool active = g < merges;
    const u64 merge_index = active ? g : 0;
    Digest* nodes = trees + (merge_index / parents) * 2 * leaves_per_tree;
    const u64 node = parents + merge_index % parents;

    u64 x[3];
    x[0] = q == 0 ? small_to_mont(RATE) : 0;
    x[1] = to_mont(nodes[2 * node].e[q]);
    x[2] = to_mont(nodes[2 * node + 1].e[q]);
    permute_quad(x, c);
    if (active) nodes[node].e[q] = from_mont(x[1]);
}

// out[first + row] = hash_elements(row) for `rows` rows of `width` elements, row-major, a quad
// of lanes per row (the layout of merkle_merge_level): lane q absorbs rate elements q and
// q + 4 of each chunk into state elements 4 + q and 8 + q, and writes digest element q.
extern "C" __global__ void merkle_hash_rows(const u64* elements, u64 rows, u32 width,
                                            Digest* out, u64 first,
                                            const __grid_constant__ RescueConstants c) {
    const u64 row = global_thread_index() / 4;
    const u32 q = threadIdx.x % 4;
    if (row >= rows) return;  // whole quads leave together
    const u64* in = elements + row * width;
    u64 x[3] = {q == 0 ? small_to_mont(width) : 0, 0, 0};
    u32 taken = 0;
    while (taken < width) {
        u32 chunk = min(width - taken, (u32)RATE);
        if (q < chunk) x[1] = gl_add(x[1], to_mont(in[taken + q]));
        if (4 + q < chunk) x[2] = gl_add(x[2], to_mont(in[taken + 4 + q]));
        permute_quad(x, c);
        taken += chunk;
    }
    out[first + row].e[q] = from_mont(x[1]);
}
