// The Rescue-Prime permutation of Rp64_256 (winter-crypto) and Rpo256 (miden-crypto) spread
// over lanes, shared by merkle.cu and rpo.cu: both use the same 12-element MDS matrix, x^7,
// x^(1/7) and constant layout (ARK1 then ARK2, 7 x 12 each); they differ in the round order
// and in where the sponge keeps its rate, capacity and digest (a `Layout`, below).
//
// - On a quad of lanes, lane q holds state elements q, q + 4 and q + 8 in slots 0, 1, 2:
//   three independent S-box chains per lane and few registers, so that many warps per SM hide
//   the multiplies' latency (measured on an H100 for Rp64_256 against one thread per merge,
//   142 registers and 12 warps per SM: 2^20 leaves 9.79 -> 8.24 ms, 2^24 157 -> 122 ms).
// - On a half warp, lane e < 12 holds element e (lanes 12..15 follow along): one S-box chain
//   per lane, for the small levels near the root where quads would leave the GPU idle.
//
// The permutation runs on Montgomery forms (goldilocks.cuh); digests and row elements are
// converted on the way in and out.

#pragma once

#include "sponge.cuh"

#define RESCUE_ROUNDS 7
#define RESCUE_WIDTH 12
#define RESCUE_ARK1(c, r, i) ((c).w[(r) * RESCUE_WIDTH + (i)])
#define RESCUE_ARK2(c, r, i) ((c).w[RESCUE_ROUNDS * RESCUE_WIDTH + (r) * RESCUE_WIDTH + (i)])

// The round orders. Rp64_256: x^7, MDS, + ARK1, x^(1/7), MDS, + ARK2. Rpo256: MDS, + ARK1,
// x^7, MDS, + ARK2, x^(1/7).
enum class RoundOrder { Rescue, Rpo };

// Where a sponge keeps its parts, as slots of the quad layout (slot t = elements 4t..4t+3):
// the digest is the left child's slot, the right child follows it, and a merge puts
// `merge_length` in the capacity's first element.
struct WinterLayout {  // Rp64_256: capacity s[0..4], rate s[4..12], digest s[4..8]
    static constexpr int CAPACITY = 0, LEFT = 1, RIGHT = 2;
    static constexpr u32 MERGE_LENGTH = 8;
};
struct MidenLayout {  // miden-crypto 0.28.1: rate s[0..8], capacity s[8..12], digest s[0..4]
    static constexpr int CAPACITY = 2, LEFT = 0, RIGHT = 1;
    static constexpr u32 MERGE_LENGTH = 0;  // 8 elements: 8 mod 8
};

// First row of the circulant MDS matrix: MDS[i][j] = row[(j - i) mod 12].
__device__ __forceinline__ u64 mds_coefficient(int k) {
    const u64 row[RESCUE_WIDTH] = {7, 23, 8, 26, 13, 10, 9, 7, 6, 22, 21, 8};
    return row[k];
}

// The MDS step's sums run on the FP64 pipe, which the S-box chains leave idle (their wide
// integer products keep the FMA pipe busy): each input is split into 32-bit halves, and
// sum_k row[k] half_k (the coefficients sum to 160 < 2^8, so below 2^40) is computed exactly
// in doubles. Each sum starts at 2^52, so that the integer sits in the low mantissa bits of
// the result: every partial sum is an integer in [2^52, 2^53), where doubles have unit
// spacing. Measured on an H100 against wide integer products for the sums: a 2^19-merge level
// 3.19 -> 3.07 ms; the halves converted by I2F beat building 2^52 + half from its bits and
// subtracting 2^52 (3.11 ms: a register move and a DADD per half).
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

// Lanes per permutation on the half-warp layout.
#define SPLIT_LANES 16

// The MDS step on the half-warp layout: out_i = sum_k row[k] s[(i + k) mod 12], each s
// gathered by a shuffle within the half warp.
__device__ __forceinline__ u64 mds_split(u64 x, u32 lane) {
    double lo_sum = MDS_SUM_START, hi_sum = MDS_SUM_START;
    const u32 base = threadIdx.x & 31 & ~(u32)15;  // first lane of this half warp
#pragma unroll
    for (int k = 0; k < RESCUE_WIDTH; k++) {
        u32 source = (lane + k) % RESCUE_WIDTH;
        u32 lo = __shfl_sync(0xffffffffu, (u32)x, base + source);
        u32 hi = __shfl_sync(0xffffffffu, (u32)(x >> 32), base + source);
        const double coefficient = (double)mds_coefficient(k);
        lo_sum = fma(coefficient, __uint2double_rn(lo), lo_sum);
        hi_sum = fma(coefficient, __uint2double_rn(hi), hi_sum);
    }
    return reduce_mds_sums(lo_sum, hi_sum);
}

// The MDS step on the quad layout. Each lane gathers the state rotated by its q, rotated[j] =
// s[(j + q) mod 12], so that its outputs out_{4t+q} = sum_j row[(j - 4t) mod 12] rotated[j]
// use fixed indices: in round (t, r) every lane reads lane (q + r) mod 4, which sends its slot
// holding element 4t + r + q (mod 12): slot t, or t + 1 (mod 3) when its own lane is below r.
// Each gathered input goes straight into the three outputs' sums, so that only the sums stay
// live.
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
                    (double)mds_coefficient((j - 4 * out + RESCUE_WIDTH) % RESCUE_WIDTH);
                lo_sum[out] = fma(coefficient, lo, lo_sum[out]);
                hi_sum[out] = fma(coefficient, hi, hi_sum[out]);
            }
        }
    }
#pragma unroll
    for (int t = 0; t < 3; t++) x[t] = reduce_mds_sums(lo_sum[t], hi_sum[t]);
}

// The permutation on a quad of lanes (x: this lane's three slots).
template <RoundOrder ORDER>
__device__ void permute_quad(u64* x, const ConstantBank& c) {
    const u32 q = threadIdx.x % 4;
#pragma unroll 1
    for (int r = 0; r < RESCUE_ROUNDS; r++) {
        if (ORDER == RoundOrder::Rescue) {
#pragma unroll
            for (int t = 0; t < 3; t++) x[t] = sbox_one(x[t]);
        }
        mds_quad(x);
#pragma unroll
        for (int t = 0; t < 3; t++) x[t] = gl_add(x[t], RESCUE_ARK1(c, r, 4 * t + q));
        if (ORDER == RoundOrder::Rescue) {
            inverse_sbox<3>(x);
        } else {
#pragma unroll
            for (int t = 0; t < 3; t++) x[t] = sbox_one(x[t]);
        }
        mds_quad(x);
#pragma unroll
        for (int t = 0; t < 3; t++) x[t] = gl_add(x[t], RESCUE_ARK2(c, r, 4 * t + q));
        if (ORDER == RoundOrder::Rpo) inverse_sbox<3>(x);
    }
}

// The permutation on a half warp (x: this lane's element, lane < 12; `element` = lane, or 0
// for the lanes that follow along).
template <RoundOrder ORDER>
__device__ __forceinline__ u64 permute_split(u64 x, u32 lane, u32 element,
                                             const ConstantBank& c) {
#pragma unroll 1
    for (int r = 0; r < RESCUE_ROUNDS; r++) {
        if (ORDER == RoundOrder::Rescue) x = sbox_one(x);
        x = gl_add(mds_split(x, lane), RESCUE_ARK1(c, r, element));
        if (ORDER == RoundOrder::Rescue) {
            inverse_sbox<1>(&x);
        } else {
            x = sbox_one(x);
        }
        x = gl_add(mds_split(x, lane), RESCUE_ARK2(c, r, element));
        if (ORDER == RoundOrder::Rpo) inverse_sbox<1>(&x);
    }
    return x;
}

// One tree level on the half-warp layout, 16 lanes per merge: parent `parents + g % parents` of
// tree g / parents from its two children. Trees are arrays of 2n digests (root at 1, node i
// the parent of 2i and 2i + 1), back to back.
template <RoundOrder ORDER, class Layout>
__device__ __forceinline__ void merge_level_split_body(Digest* trees, u64 leaves_per_tree,
                                                       u64 parents, u64 merges,
                                                       const ConstantBank& c) {
    const u64 g = global_thread_index() / SPLIT_LANES;
    const u32 lane = threadIdx.x % SPLIT_LANES;
    const u32 element = lane < RESCUE_WIDTH ? lane : 0;
    const int slot = element / 4;
    const bool active = g < merges;
    const u64 merge_index = active ? g : 0;
    Digest* nodes = trees + (merge_index / parents) * 2 * leaves_per_tree;
    const u64 node = parents + merge_index % parents;

    u64 x = 0;
    if (slot == Layout::CAPACITY) {
        if (element % 4 == 0) x = small_to_mont(Layout::MERGE_LENGTH);
    } else {
        const u64* children = (const u64*)(nodes + 2 * node);  // 8 consecutive elements
        x = to_mont(children[element - 4 * Layout::LEFT]);
    }
    x = permute_split<ORDER>(x, lane, element, c);
    if (active && lane < RESCUE_WIDTH && slot == Layout::LEFT) {
        nodes[node].e[element % 4] = from_mont(x);
    }
}

// The same level on the quad layout, 4 lanes per merge: lane q holds element q of each child
// and writes element q of the parent.
template <RoundOrder ORDER, class Layout>
__device__ __forceinline__ void merge_level_quad_body(Digest* trees, u64 leaves_per_tree,
                                                      u64 parents, u64 merges,
                                                      const ConstantBank& c) {
    const u64 g = global_thread_index() / 4;
    const u32 q = threadIdx.x % 4;
    const bool active = g < merges;
    const u64 merge_index = active ? g : 0;
    Digest* nodes = trees + (merge_index / parents) * 2 * leaves_per_tree;
    const u64 node = parents + merge_index % parents;

    u64 x[3];
    x[Layout::CAPACITY] = q == 0 ? small_to_mont(Layout::MERGE_LENGTH) : 0;
    x[Layout::LEFT] = to_mont(nodes[2 * node].e[q]);
    x[Layout::RIGHT] = to_mont(nodes[2 * node + 1].e[q]);
    permute_quad<ORDER>(x, c);
    if (active) nodes[node].e[q] = from_mont(x[Layout::LEFT]);
}

// A module's two level kernels, `merkle_merge_level` (quads) and `merkle_merge_level_split`
// (half warps), for one round order and sponge layout.
#define RESCUE_LEVEL_KERNELS(ORDER, LAYOUT)                                                  \
    extern "C" __global__ void merkle_merge_level(Digest* trees, u64 leaves_per_tree,        \
                                                  u64 parents, u64 merges,                   \
                                                  const __grid_constant__ ConstantBank c) {  \
        merge_level_quad_body<ORDER, LAYOUT>(trees, leaves_per_tree, parents, merges, c);    \
    }                                                                                        \
    extern "C" __global__ void merkle_merge_level_split(                                     \
        Digest* trees, u64 leaves_per_tree, u64 parents, u64 merges,                         \
        const __grid_constant__ ConstantBank c) {                                            \
        merge_level_split_body<ORDER, LAYOUT>(trees, leaves_per_tree, parents, merges, c);   \
    }
