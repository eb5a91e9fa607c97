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
#include "goldilocks.cuh"

#define STATE_WIDTH 12
#define ROUNDS 7
#define RATE 8

struct RescueConstants {
    u64 ark1[ROUNDS][STATE_WIDTH];
    u64 ark2[ROUNDS][STATE_WIDTH];
};

// First row of the circulant MDS matrix: MDS[i][j] = MDS_ROW[(j - i) mod 12].
__device__ __forceinline__ u64 mds_coefficient(int k) {
    const u64 row[STATE_WIDTH] = {7, 23, 8, 26, 13, 10, 9, 7, 6, 22, 21, 8};
    return row[k];
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
