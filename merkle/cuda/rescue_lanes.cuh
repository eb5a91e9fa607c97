// The Rescue-Prime permutations of this crate spread over lanes: Rp64_256 and RpJive64_256
// (winter-crypto), Rpo256 and Rpx256 (miden-crypto). They share x^7, x^(1/7), a circulant MDS
// matrix (12 x 12, or 8 x 8 for RpJive64_256) and the constant layout (ARK1 then ARK2, 7 rows
// of WIDTH each); they differ in the round order, the width, the sponge or compression around
// the permutation, and Rpx256 in its extension rounds (rpx.cu).
//
// - On a quad of lanes, each lane holds WIDTH / 4 state elements in its slots: independent
//   S-box chains per lane and few registers, so that many warps per SM hide the multiplies'
//   latency (measured on an H100 for Rp64_256 against one thread per merge, 142 registers and
//   12 warps per SM: 2^20 leaves 9.79 -> 8.24 ms, 2^24 157 -> 122 ms). Which lane holds which
//   element is an arrangement: `Strided` (slot t of lane q is element 4t + q) or `Triples`
//   (slot t of lane q is element 3q + t, so that each lane holds one of Rpx256's
//   cubic-extension elements).
// - On a half warp (a group of 8 lanes for width 8), lane e < WIDTH holds element e (the
//   other lanes follow along): one S-box chain per lane, for the small levels near the root
//   where quads would leave the GPU idle.
//
// The permutation runs on Montgomery forms (goldilocks.cuh); digests and row elements are
// converted on the way in and out. A hasher on these layouts is a struct with
//   static constexpr u32 SPLIT_LANES;  // lanes per merge of its half-warp level kernel
//   static __device__ void merge_quad(const LevelMerge& m, const ConstantBank& c);
//   static __device__ void merge_split(const LevelMerge& m, const ConstantBank& c);
//       // (reading the children from L2: merkle_merge_levels_split runs it on children
//       // that another block of the same launch wrote)
//   static __device__ void hash_row_quad(const u64* row, u32 width, Digest* out,
//                                        const ConstantBank& c);
// and RESCUE_LANE_KERNELS(H) defines its module's kernels.

#pragma once

#include "sponge.cuh"

#define RESCUE_ROUNDS 7

// Round constant i of round r, of ARK1 and of ARK2, for a state of W elements.
template <int W>
__device__ __forceinline__ u64 ark1(const ConstantBank& c, int r, int i) {
    return c.w[r * W + i];
}
template <int W>
__device__ __forceinline__ u64 ark2(const ConstantBank& c, int r, int i) {
    return c.w[RESCUE_ROUNDS * W + r * W + i];
}

// The round orders. Rp64_256 and RpJive64_256: x^7, MDS, + ARK1, x^(1/7), MDS, + ARK2.
// Rpo256 (and Rpx256's full rounds): MDS, + ARK1, x^7, MDS, + ARK2, x^(1/7).
enum class RoundOrder { Rescue, Rpo };

// The circulant MDS matrices, MDS[i][j] = row[(j - i) mod WIDTH].
struct Mds12 {  // Rp64_256, Rpo256, Rpx256
    static constexpr int WIDTH = 12;
    static __device__ __forceinline__ u64 coefficient(int k) {
        const u64 row[WIDTH] = {7, 23, 8, 26, 13, 10, 9, 7, 6, 22, 21, 8};
        return row[k];
    }
};
struct Mds8 {  // RpJive64_256
    static constexpr int WIDTH = 8;
    static __device__ __forceinline__ u64 coefficient(int k) {
        const u64 row[WIDTH] = {23, 8, 13, 10, 7, 6, 21, 8};
        return row[k];
    }
};

// The MDS step's sums run on the FP64 pipe, which the S-box chains leave idle (their wide
// integer products keep the FMA pipe busy): each input is split into 32-bit halves, and
// sum_k row[k] half_k (the coefficients sum to 160 or 96, below 2^8, so below 2^40) is
// computed exactly in doubles. Each sum starts at 2^52 plus the same half of the round
// constant that follows the step (below 2^32), so that the integer sits in the low mantissa
// bits of the result: every partial sum is an integer in [2^52, 2^53), where doubles have unit
// spacing, and MDS x + ARK comes out of one reduction. Measured on an H100 against wide
// integer products for the sums: a 2^19-merge level 3.19 -> 3.07 ms; the halves converted by
// I2F beat building 2^52 + half from its bits and subtracting 2^52 (3.11 ms: a register move
// and a DADD per half). Starting the sums at the constant replaces a modular addition (12
// instructions) after the reduction by a canonical reduction 12 instructions shorter than the
// two together (SASS counted with NVRTC 12.9 for sm_90).
#define MDS_SUM_BIAS_HIGH 0x43300000u  // the high word of the bits of 2^52

// 2^52 + h as a double, made from its bits (exact for every h < 2^32): where a sum starts.
__device__ __forceinline__ double mds_sum_start(u32 h) {
    return __hiloint2double((int)MDS_SUM_BIAS_HIGH, (int)h);
}

// The sums' starts for round constant k: 2^52 + its low half and 2^52 + its high half.
__device__ __forceinline__ void mds_sums_start(u64 k, double& lo_sum, double& hi_sum) {
    lo_sum = mds_sum_start((u32)k);
    hi_sum = mds_sum_start((u32)(k >> 32));
}

// The canonical value of lo_sum + 2^32 hi_sum mod p, both sums given as 2^52 + sum, each sum
// below 2^41. With lo_sum = L0 + 2^32 L1 and hi_sum = H0 + 2^32 H1 (L1, H1 < 2^9, read from
// the high words of the doubles' bits), the value is L0 + 2^32 (L1 + H0) + 2^64 H1, and
// 2^64 = 2^32 - 1 mod p turns it into (H0:L0) + fold with fold = 2^32 (L1 + H1) - H1, which
// is below 2^42 and not negative (H1 > 0 makes L1 + H1 > 0). A sum past 2^64 is then below
// 2^42, and adding EPSILON (2^64 mod p) keeps it below p; a sum at or above p is brought below
// it by the same addition modulo 2^64, which then carries out. merkle/src/field.rs models it
// word by word (gpu_mds_sum_reduction_is_canonical_and_exact).
__device__ __forceinline__ u64 reduce_mds_sums(double lo_biased, double hi_biased) {
    const u64 lo_bits = (u64)__double_as_longlong(lo_biased);
    const u64 hi_bits = (u64)__double_as_longlong(hi_biased);
    const u32 h1 = (u32)(hi_bits >> 32) - MDS_SUM_BIAS_HIGH;
    const u32 l1_h1 = (u32)(lo_bits >> 32) + (u32)(hi_bits >> 32) - 2 * MDS_SUM_BIAS_HIGH;
    const u64 low = ((u64)(u32)hi_bits << 32) | (u32)lo_bits;  // H0:L0
    const u64 fold = ((u64)l1_h1 << 32) - h1;
    const u64 sum = low + fold;
    const bool wrapped = sum < fold;
    const u64 lowered = sum + EPSILON;
    return wrapped || lowered < sum ? lowered : sum;
}

// Adds coefficient (lo + 2^32 hi) into a biased pair of sums.
__device__ __forceinline__ void mds_accumulate(double coefficient, double lo, double hi,
                                               double& lo_sum, double& hi_sum) {
    lo_sum = fma(coefficient, lo, lo_sum);
    hi_sum = fma(coefficient, hi, hi_sum);
}

// Lanes per permutation on the half-warp layout of a matrix M: 16 for 12 elements, 8 for 8.
template <class M>
__device__ __forceinline__ constexpr u32 split_lanes() {
    return M::WIDTH <= 8 ? 8 : 16;
}

// The MDS step and a round constant on the half-warp layout: out_i = sum_k row[k]
// s[(i + k) mod WIDTH] + ark, each s gathered by a shuffle within the lane group; canonical.
template <class M>
__device__ __forceinline__ u64 mds_split(u64 x, u32 lane, u64 ark) {
    constexpr u32 LANES = split_lanes<M>();
    double lo_sum, hi_sum;
    mds_sums_start(ark, lo_sum, hi_sum);
    const u32 base = threadIdx.x & 31 & ~(LANES - 1);  // first lane of this group
#pragma unroll
    for (int k = 0; k < M::WIDTH; k++) {
        u32 source = (lane + k) % M::WIDTH;
        u32 lo = __shfl_sync(0xffffffffu, (u32)x, base + source);
        u32 hi = __shfl_sync(0xffffffffu, (u32)(x >> 32), base + source);
        mds_accumulate((double)M::coefficient(k), __uint2double_rn(lo), __uint2double_rn(hi),
                       lo_sum, hi_sum);
    }
    return reduce_mds_sums(lo_sum, hi_sum);
}

// Quad arrangements. Each gathers, in lane q, the state rotated by an offset of its own, so that
// the coefficients of its outputs are compile-time constants: gathered input j is the element
// that lane `source(q, j)` sends as `sent(x, q, j)` (q being the sender there), and output slot
// t is sum_j row[(j - out_offset(t)) mod WIDTH] gathered[j].

// Slot t of lane q holds element 4t + q. Lane q gathers s[(j + q) mod WIDTH]: for j = 4t + r,
// every lane reads lane (q + r) mod 4, which sends its slot holding element 4t + r + q: slot
// t, or t + 1 (mod the slots) when its own lane is below r. Output t = element 4t + q.
template <class M>
struct Strided {
    using Mds = M;
    static constexpr int SLOTS = M::WIDTH / 4;
    static __device__ __forceinline__ u32 element(u32 q, int t) { return 4 * t + q; }
    static __device__ __forceinline__ u32 source(u32 q, int j) { return (q + j) % 4; }
    static __device__ __forceinline__ u64 sent(const u64* x, u32 q, int j) {
        const int t = j / 4;
        const u32 r = j % 4;
        return q < r ? x[(t + 1) % SLOTS] : x[t];
    }
    static __device__ __forceinline__ constexpr int out_offset(int t) { return 4 * t; }
};

// Slot t of lane q holds element 3q + t (12 elements). Lane q gathers s[(j + 3q) mod 12]:
// for j = 3u + t, lane (q + u) mod 4's slot t, the same slot for every lane, so no selects.
// Output t = element 3q + t.
struct Triples {
    using Mds = Mds12;
    static constexpr int SLOTS = 3;
    static __device__ __forceinline__ u32 element(u32 q, int t) { return 3 * q + t; }
    static __device__ __forceinline__ u32 source(u32 q, int j) { return (q + j / 3) % 4; }
    static __device__ __forceinline__ u64 sent(const u64* x, u32, int j) { return x[j % 3]; }
    static __device__ __forceinline__ constexpr int out_offset(int t) { return t; }
};

// x <- MDS x + ARK (ARK1 when `second` is false, else ARK2) on a quad in arrangement A (x:
// this lane's slots), canonical. Each gathered input goes straight into the outputs' sums, so
// that only the sums stay live.
template <class A>
__device__ __forceinline__ void mds_add_quad(u64* x, const ConstantBank& c, int r, bool second) {
    constexpr int W = A::Mds::WIDTH, S = A::SLOTS;
    const u32 q = threadIdx.x % 4;
    const u32 quad_mask = 0xfu << (threadIdx.x % 32 & ~3u);
    double lo_sum[S], hi_sum[S];
#pragma unroll
    for (int t = 0; t < S; t++) {
        const u32 e = A::element(q, t);
        mds_sums_start(second ? ark2<W>(c, r, e) : ark1<W>(c, r, e), lo_sum[t], hi_sum[t]);
    }
#pragma unroll
    for (int j = 0; j < W; j++) {
        const u64 v = A::sent(x, q, j);
        const u32 from = A::source(q, j);
        const double lo = __uint2double_rn(__shfl_sync(quad_mask, (u32)v, from, 4));
        const double hi = __uint2double_rn(__shfl_sync(quad_mask, (u32)(v >> 32), from, 4));
#pragma unroll
        for (int out = 0; out < S; out++) {
            const double coefficient =
                (double)A::Mds::coefficient((j - A::out_offset(out) + W) % W);
            mds_accumulate(coefficient, lo, hi, lo_sum[out], hi_sum[out]);
        }
    }
#pragma unroll
    for (int t = 0; t < S; t++) x[t] = reduce_mds_sums(lo_sum[t], hi_sum[t]);
}

// x[t] <- x[t]^7 for each slot.
template <int S>
__device__ __forceinline__ void sbox(u64* x) {
#pragma unroll
    for (int t = 0; t < S; t++) x[t] = sbox_one(x[t]);
}

// Round r of the permutation on a quad of lanes in arrangement A (x: this lane's slots).
template <RoundOrder ORDER, class A>
__device__ __forceinline__ void round_quad(u64* x, const ConstantBank& c, int r) {
    constexpr int S = A::SLOTS;
    if (ORDER == RoundOrder::Rescue) sbox<S>(x);
    mds_add_quad<A>(x, c, r, false);
    if (ORDER == RoundOrder::Rescue) {
        inverse_sbox<S>(x);
    } else {
        sbox<S>(x);
    }
    mds_add_quad<A>(x, c, r, true);
    if (ORDER == RoundOrder::Rpo) inverse_sbox<S>(x);
}

// The permutation on a quad of lanes (x: this lane's slots).
template <RoundOrder ORDER, class A>
__device__ void permute_quad(u64* x, const ConstantBank& c) {
#pragma unroll 1
    for (int r = 0; r < RESCUE_ROUNDS; r++) round_quad<ORDER, A>(x, c, r);
}

// Round r on the half-warp layout (x: this lane's element, lane < WIDTH; `element` = lane, or
// 0 for the lanes that follow along).
template <RoundOrder ORDER, class M>
__device__ __forceinline__ u64 round_split(u64 x, u32 lane, u32 element, const ConstantBank& c,
                                           int r) {
    if (ORDER == RoundOrder::Rescue) x = sbox_one(x);
    x = mds_split<M>(x, lane, ark1<M::WIDTH>(c, r, element));
    if (ORDER == RoundOrder::Rescue) {
        inverse_sbox<1>(&x);
    } else {
        x = sbox_one(x);
    }
    x = mds_split<M>(x, lane, ark2<M::WIDTH>(c, r, element));
    if (ORDER == RoundOrder::Rpo) inverse_sbox<1>(&x);
    return x;
}

// The permutation on the half-warp layout.
template <RoundOrder ORDER, class M>
__device__ __forceinline__ u64 permute_split(u64 x, u32 lane, u32 element,
                                             const ConstantBank& c) {
#pragma unroll 1
    for (int r = 0; r < RESCUE_ROUNDS; r++) x = round_split<ORDER, M>(x, lane, element, c, r);
    return x;
}

// Where a sponge keeps its parts, as slots of the strided quad layout (slot t = elements
// 4t..4t+3): the digest is the left child's slot, the right child follows it, and a merge puts
// `merge_length` in the capacity's first element.
struct WinterLayout {  // Rp64_256: capacity s[0..4], rate s[4..12], digest s[4..8]
    static constexpr int CAPACITY = 0, LEFT = 1, RIGHT = 2;
    static constexpr u32 MERGE_LENGTH = 8;
};
struct MidenLayout {  // miden-crypto 0.28.1: rate s[0..8], capacity s[8..12], digest s[0..4]
    static constexpr int CAPACITY = 2, LEFT = 0, RIGHT = 1;
    static constexpr u32 MERGE_LENGTH = 0;  // 8 elements: 8 mod 8
};

// The merges of a 12-element sponge (Rp64_256, Rpo256): the permutation of [capacity, left,
// right] in `Layout`'s order, the digest read from the left child's place.
template <RoundOrder ORDER, class Layout>
struct SpongeMerge {
    static constexpr u32 SPLIT_LANES = split_lanes<Mds12>();

    // Lane q holds state elements 3q..3q+2 (the `Triples` arrangement, whose MDS step needs no
    // selects: 172 instructions per lane with the round constants against 193 for `Strided`)
    // and writes the parent's elements among them. Which part of the sponge a slot holds
    // depends on the lane here, so the loads and stores are predicated; they run once per merge.
    static __device__ __forceinline__ void merge_quad(const LevelMerge& m,
                                                      const ConstantBank& c) {
        const u32 q = threadIdx.x % 4;
        u64 x[3];
#pragma unroll
        for (int t = 0; t < 3; t++) {
            const u32 e = Triples::element(q, t);
            if (e / 4 == Layout::CAPACITY) {
                x[t] = e % 4 == 0 ? small_to_mont(Layout::MERGE_LENGTH) : 0;
            } else {
                x[t] = to_mont(m.children[e - 4 * Layout::LEFT]);
            }
        }
        permute_quad<ORDER, Triples>(x, c);
#pragma unroll
        for (int t = 0; t < 3; t++) {
            const u32 e = Triples::element(q, t);
            if (m.active && e / 4 == Layout::LEFT) m.parent->e[e % 4] = from_mont(x[t]);
        }
    }

    static __device__ __forceinline__ void merge_split(const LevelMerge& m,
                                                       const ConstantBank& c) {
        const u32 lane = threadIdx.x % SPLIT_LANES;
        const u32 element = lane < Mds12::WIDTH ? lane : 0;
        const int slot = element / 4;
        u64 x = 0;
        if (slot == Layout::CAPACITY) {
            if (element % 4 == 0) x = small_to_mont(Layout::MERGE_LENGTH);
        } else {
            x = to_mont(__ldcg(m.children + element - 4 * Layout::LEFT));
        }
        x = permute_split<ORDER, Mds12>(x, lane, element, c);
        if (m.active && lane < Mds12::WIDTH && slot == Layout::LEFT) {
            m.parent->e[element % 4] = from_mont(x);
        }
    }
};

// A module's kernels for hasher H: `merkle_merge_level` (quads), `merkle_merge_level_split`
// (H::SPLIT_LANES lanes per merge), `merkle_merge_levels_split` (the levels nearest the roots
// in one launch, a merge on each half warp; with 8 lanes per merge the second group of a half
// warp runs along and writes nothing) and `merkle_hash_rows` (out[first + row] =
// hash_elements(row) for `rows` rows of `width` elements, row-major, a quad per row).
#define RESCUE_LANE_KERNELS(H)                                                               \
    extern "C" __global__ void merkle_merge_level(Digest* trees, u64 leaves_per_tree,        \
                                                  u64 parents, u64 merges,                   \
                                                  const __grid_constant__ ConstantBank c) {  \
        H::merge_quad(level_merge<4>(trees, leaves_per_tree, parents, merges), c);           \
    }                                                                                        \
    extern "C" __global__ void merkle_merge_level_split(                                     \
        Digest* trees, u64 leaves_per_tree, u64 parents, u64 merges,                         \
        const __grid_constant__ ConstantBank c) {                                            \
        H::merge_split(level_merge<H::SPLIT_LANES>(trees, leaves_per_tree, parents, merges), \
                       c);                                                                   \
    }                                                                                        \
    extern "C" __global__ void merkle_merge_levels_split(                                    \
        Digest* trees, u64 leaves_per_tree, u64 parents, u64 merges, u32* arrivals,          \
        const __grid_constant__ ConstantBank c) {                                            \
        merge_levels_in_one_launch(                                                          \
            parents, merges, arrivals, [&](u64 level, u64 g, bool active, bool writes) {     \
                const bool lead = threadIdx.x % 16 < H::SPLIT_LANES;                         \
                H::merge_split(                                                              \
                    merge_at(trees, leaves_per_tree, level, g, active, writes && lead), c);  \
            });                                                                              \
    }                                                                                        \
    extern "C" __global__ void merkle_hash_rows(const u64* elements, u64 rows, u32 width,    \
                                                Digest* out, u64 first,                      \
                                                const __grid_constant__ ConstantBank c) {    \
        const u64 row = global_thread_index() / 4;                                           \
        if (row >= rows) return; /* whole quads leave together */                            \
        H::hash_row_quad(elements + row * width, width, out + first + row, c);               \
    }
