// Poseidon2 over Goldilocks, width 12 (miden-crypto 0.28.1, Plonky3's default constants):
// Merkle tree levels and row hashing, one thread per hash; the levels of fewer merges on quads
// of lanes (merge_level_quad), and those nearest the root on half warps, all in one launch
// (merge_levels_split). The constant bank holds the four initial external rounds'
// constants (4 x 12), the 22 internal ones, the four terminal external rounds' (4 x 12), the
// internal matrix's diagonal (12), then the limb multipliers (8, see Multipliers).

#include "sponge.cuh"

#define P2_INITIAL 0
#define P2_INTERNAL 48
#define P2_TERMINAL 70
#define P2_DIAGONAL 118
#define P2_MULTIPLIERS 130

// The round schedule, on a state layout L (ThreadState: one thread's twelve elements;
// QuadState: a quad's, three a lane; SplitState: a half warp's, one a lane) with static
// external_layer, external_round and internal_rounds (all 22).
template <class L>
__device__ __forceinline__ void permute_on(u64* x, const ConstantBank& c) {
    L::external_layer(x);
#pragma unroll 1
    for (int r = 0; r < 4; r++) L::external_round(x, c, P2_INITIAL + 12 * r);
    L::internal_rounds(x, c);
#pragma unroll 1
    for (int r = 0; r < 4; r++) L::external_round(x, c, P2_TERMINAL + 12 * r);
}

// A value a + 2^32 b kept as two 64-bit sums of 32-bit halves (a, b below 2^42), built and
// reduced by 32 x 32 -> 64-bit multiply-adds, which run on the FMA pipe while carry chains would
// hold the integer ALU.
struct Limbs {
    u64 a, b;
};

// The multipliers of the limbs' multiply-adds, read from the constant bank (P2_MULTIPLIERS:
// 1, 2, 3, 4, 2^31, 2^30, 2^29, 2^32 - 1) so that ptxas cannot see their values: it turns
// products by known small constants into shifts and additions on the integer ALU.
struct Multipliers {
    u32 one, two, three, four, shift_down[4], all_ones;
    __device__ __forceinline__ explicit Multipliers(const u64* w)
        : one((u32)w[0]), two((u32)w[1]), three((u32)w[2]), four((u32)w[3]),
          shift_down{(u32)w[0], (u32)w[4], (u32)w[5], (u32)w[6]}, all_ones((u32)w[7]) {}
};

// base + k x for x below 2^64.
__device__ __forceinline__ Limbs limbs_mad(u64 x, u32 k, Limbs base) {
    return {(u64)(u32)x * k + base.a, (u64)(u32)(x >> 32) * k + base.b};
}

__device__ __forceinline__ Limbs limbs_times(Limbs v, u32 k) {
    return {v.a * k, v.b * k};
}

// v + k K, K = 2p - (2^64 - 1) = 3 + 2^32 (2^32 - 2): with k ~x, this adds k (2p - x).
__device__ __forceinline__ Limbs limbs_plus_k(Limbs v, u32 k) {
    return {v.a + 3 * k, v.b + (u64)k * 0xfffffffeu};
}

// A value below 2^64 congruent to (a + 2^32 b) / 2^J mod p (J <= 3). The division: t = -a mod
// 2^J, and adding t p = t + 2^32 t (2^32 - 1) makes a divisible by 2^J; then a / 2^J + 2^32 (b
// / 2^J) with b's low J bits moved into a. The reduction: 2^64 = 2^32 - 1 mod p, so a + 2^32 b
// = a' + 2^32 b0 with a' = a + b1 (2^32 - 1) (b = b0 + 2^32 b1) = a'0 + 2^32 m + 2^64 c with
// m + 2^32 c = a'1 + b0, which is a'0 + 2^32 m + c (2^32 - 1), below 2^64 (c = 1 only when m
// < 2^10).
template <int J>
__device__ __forceinline__ u64 limbs_reduce(Limbs v, const Multipliers& k) {
    if (J > 0) {
        const u32 t = (0u - (u32)v.a) & ((1u << J) - 1);
        v.a = (u64)t * k.one + v.a;
        v.b = (u64)t * k.all_ones + v.b;
        v.a = (u64)((u32)v.b & ((1u << J) - 1)) * k.shift_down[J] + (v.a >> J);
        v.b >>= J;
    }
    const u64 a = (u64)(u32)(v.b >> 32) * k.all_ones + v.a;
    const u64 mid = (u64)(u32)(a >> 32) + (u32)v.b;
    const u64 low = (mid << 32) | (u32)a;
    return (u64)(u32)(mid >> 32) * k.all_ones + low;
}

// One thread holds the whole state s[0..12]. Its linear layers run as the CPU's do
// (merkle/src/poseidon2.rs): exactly over the integers, each output reduced once, so that the
// state between rounds is any value below 2^64 of the right residue, which the external layer
// and gl_add take; only S-box inputs must be canonical, and gl_add with the round constant
// makes them so. The external layer sums on u128s (fold96); the internal rounds on Limbs,
// whose multiply-adds take work off the integer ALU, which bounds this kernel (an internal
// round: 197 ALU and 138 FMA-pipe instructions, against 288 and 77 on u128s).
struct ThreadState {
    // Each block of four times M4 = [[2, 3, 1, 1], [1, 2, 3, 1], [1, 1, 2, 3], [3, 1, 1, 2]], then
    // each element plus the sum of the elements at its place in the three blocks: below
    // 28 * 2^64.
    static __device__ __forceinline__ void external_layer(u64* s) {
        u128 y[12];
#pragma unroll
        for (int b = 0; b < 12; b += 4) {
            const u128 x0 = s[b], x1 = s[b + 1], x2 = s[b + 2], x3 = s[b + 3];
            const u128 x0123 = x0 + x1 + x2 + x3;
            y[b] = x0123 + x0 + 2 * x1;
            y[b + 1] = x0123 + x1 + 2 * x2;
            y[b + 2] = x0123 + x2 + 2 * x3;
            y[b + 3] = x0123 + x3 + 2 * x0;
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const u128 column = y[i] + y[i + 4] + y[i + 8];
#pragma unroll
            for (int b = 0; b < 12; b += 4) s[b + i] = fold96(y[b + i] + column);
        }
    }

    // + constants, x^7 on every element, the external layer.
    static __device__ __forceinline__ void external_round(u64* s, const ConstantBank& c,
                                                          int offset) {
#pragma unroll
        for (int i = 0; i < 12; i++) s[i] = sbox_one(gl_add(s[i], c.w[offset + i]));
        external_layer(s);
    }

    static __device__ __forceinline__ void internal_rounds(u64* s, const ConstantBank& c) {
#pragma unroll 1
        for (int r = 0; r < 22; r++) internal_round(s, c, r);
    }

    // s[0] += constant, s[0] = s[0]^7, then s[i] <- s[i] d_i + sum(s) with the diagonal
    // d = (-2, 1, 2, 1/2, 3, 4, -1/2, -3, -4, 1/4, -1/4, 1/8) mod p (MATRIX_DIAGONAL), each
    // output as 32-bit halves (Limbs): sum - 2 s0 = rest + (2p - s0), k (2p - x) = k ~x + k K,
    // and a division by 2^j applied to the whole output (limbs_reduce).
    static __device__ __forceinline__ void internal_round(u64* s, const ConstantBank& c, int r) {
        const u64 s0 = sbox_one(gl_add(s[0], c.w[P2_INTERNAL + r]));
        const Multipliers k(c.w + P2_MULTIPLIERS);
        Limbs rest = {0, 0};
#pragma unroll
        for (int i = 1; i < 12; i++) rest = limbs_mad(s[i], k.one, rest);
        const Limbs sum = limbs_mad(s0, k.one, rest), sum2 = limbs_times(sum, 2),
                    sum4 = limbs_times(sum, 4), sum8 = limbs_times(sum, 8);
        s[0] = limbs_reduce<0>(limbs_mad(~s0, k.one, limbs_plus_k(rest, 1)), k);
        s[1] = limbs_reduce<0>(limbs_mad(s[1], k.one, sum), k);
        s[2] = limbs_reduce<0>(limbs_mad(s[2], k.two, sum), k);
        s[3] = limbs_reduce<1>(limbs_mad(s[3], k.one, sum2), k);
        s[4] = limbs_reduce<0>(limbs_mad(s[4], k.three, sum), k);
        s[5] = limbs_reduce<0>(limbs_mad(s[5], k.four, sum), k);
        s[6] = limbs_reduce<1>(limbs_mad(~s[6], k.one, limbs_plus_k(sum2, 1)), k);
        s[7] = limbs_reduce<0>(limbs_mad(~s[7], k.three, limbs_plus_k(sum, 3)), k);
        s[8] = limbs_reduce<0>(limbs_mad(~s[8], k.four, limbs_plus_k(sum, 4)), k);
        s[9] = limbs_reduce<2>(limbs_mad(s[9], k.one, sum4), k);
        s[10] = limbs_reduce<2>(limbs_mad(~s[10], k.one, limbs_plus_k(sum4, 1)), k);
        s[11] = limbs_reduce<3>(limbs_mad(s[11], k.one, sum8), k);
    }
};

struct Poseidon2 {
    static __device__ __forceinline__ void permute(u64* s, const ConstantBank& c) {
        permute_on<ThreadState>(s, c);
    }
};

TREE_KERNELS(MidenSponge<Poseidon2>)

// ---- lanes sharing a state ------------------------------------------------------------------
//
// Below a wave of merges a level waits for one thread's whole permutation. There several lanes
// share a state: quads (QuadState, three elements a lane) for the middle levels, half warps
// (SplitState, one element a lane) nearest the root, where a permutation's latency is all that
// counts. In the internal rounds every lane computes the S-box of element 0 (the same value)
// and keeps element 0 itself, so that the chain from one S-box to the next has no exchange in
// it. All 32 lanes of a warp run this code together (padding merges run along), so every
// shuffle names the whole warp: a mask computed per lane cost a divergence check per shuffle,
// 2 us of the 11 us of a level near the root on an H200 (merkle/src/cuda.rs gives the bounds
// between the layouts and the measured times).

#define WHOLE_WARP 0xffffffffu

// x^7 as x^4 x^3: three products deep (one thread per hash keeps sbox_one, four deep, whose
// fewer instructions it is bound by).
__device__ __forceinline__ u64 sbox_shallow(u64 x) {
    const u64 x2 = gl_sqr(x);
    return gl_mul(gl_sqr(x2), gl_mul(x2, x));
}

// The constant that internal round r + 1 adds to element 0 (none after the last round). Read
// at the start of round r: a read further down the round waited on the S-box's chain (1 us a
// level near the root on an H200).
__device__ __forceinline__ u64 next_internal_constant(const ConstantBank& c, int r) {
    return r < 21 ? c.w[P2_INTERNAL + r + 1] : 0;
}

// Element 0 of an internal round on a layout that keeps it in every lane: e0 holds element 0
// plus the round's constant, canonical, and rest the sum of the other eleven elements. Returns
// the S-box of e0, and leaves in e0 the next round's element 0 (sum - 2 boxed = rest - boxed)
// plus next_constant, so that only a fold and a canonicalization lie between two S-boxes.
__device__ __forceinline__ u64 internal_element0(u64& e0, u128 rest, u64 next_constant) {
    const u128 base = rest + TWO_P + next_constant;
    const u64 boxed = sbox_shallow(e0);
    e0 = gl_canonical(fold96(base - boxed));
    return boxed;
}

// Lane `from`'s value of v (from < 4), within this lane's quad.
__device__ __forceinline__ u64 quad_lane(u64 v, u32 from) {
    return __shfl_sync(WHOLE_WARP, v, from, 4);
}

// Lane `from`'s value of v (v below 2^96), within this lane's group of `width` lanes.
template <int width>
__device__ __forceinline__ u128 group_lane(u128 v, u32 from) {
    const u64 lo = __shfl_sync(WHOLE_WARP, (u64)v, from, width);
    const u32 hi = __shfl_sync(WHOLE_WARP, (u32)(v >> 64), from, width);
    return ((u128)hi << 64) | lo;
}

// The sum of v over this lane's group of `width` lanes, in every lane (the sum below 2^96).
template <int width>
__device__ __forceinline__ u128 group_sum(u128 v) {
#pragma unroll
    for (u32 step = 1; step < width; step *= 2) {
        const u64 lo = __shfl_xor_sync(WHOLE_WARP, (u64)v, step, width);
        const u32 hi = __shfl_xor_sync(WHOLE_WARP, (u32)(v >> 64), step, width);
        v += ((u128)hi << 64) | lo;
    }
    return v;
}

// Lane q of a quad holds elements q, q + 4 and q + 8 in slots 0, 1, 2: slot t across the quad
// is block t of the external layer.
struct QuadState {
    // ThreadState::external_layer on a quad: M4 gives element q of a block (x_0 + x_1 + x_2 +
    // x_3) + x_q + 2 x_(q+1), and the sum over the three blocks at place q is this lane's
    // three slots. Exact on u128 (below 2^69), one fold per element.
    static __device__ __forceinline__ void external_layer(u64* x) {
        const u32 q = threadIdx.x % 4;
        u128 y[3];
#pragma unroll
        for (int t = 0; t < 3; t++) {
            const u64 next = quad_lane(x[t], (q + 1) % 4);
            y[t] = group_sum<4>(x[t]) + x[t] + 2 * (u128)next;  // below 7 * 2^64
        }
        const u128 column = y[0] + y[1] + y[2];
#pragma unroll
        for (int t = 0; t < 3; t++) x[t] = fold96(y[t] + column);
    }

    static __device__ __forceinline__ void external_round(u64* x, const ConstantBank& c,
                                                          int offset) {
        const u32 q = threadIdx.x % 4;
#pragma unroll
        for (int t = 0; t < 3; t++) x[t] = sbox_shallow(gl_add(x[t], c.w[offset + 4 * t + q]));
        external_layer(x);
    }

    // ThreadState::internal_round on a quad, 22 times: lane 0's slot 0 stands for element 0
    // as a zero in the sums, and each other slot is multiplied by its diagonal entry
    // (Montgomery form, in the constant bank) plus the sum, its product beside the S-box.
    static __device__ __forceinline__ void internal_rounds(u64* x, const ConstantBank& c) {
        const u32 q = threadIdx.x % 4;
        u64 diagonal[3];
#pragma unroll
        for (int t = 0; t < 3; t++) diagonal[t] = c.w[P2_DIAGONAL + 4 * t + q];
        u64 e0 = gl_add(quad_lane(x[0], 0), c.w[P2_INTERNAL]);
        if (q == 0) x[0] = 0;
#pragma unroll 1
        for (int r = 0; r < 22; r++) {
            const u64 next_constant = next_internal_constant(c, r);
            const u128 rest = group_sum<4>((u128)x[0] + x[1] + x[2]);
            u128 scaled[3];
#pragma unroll
            for (int t = 0; t < 3; t++) {
                scaled[t] = (u128)gl_mul(gl_canonical(x[t]), diagonal[t]) + rest;
            }
            const u64 boxed = internal_element0(e0, rest, next_constant);
#pragma unroll
            for (int t = 0; t < 3; t++) x[t] = fold96(scaled[t] + boxed);
            if (q == 0) x[0] = 0;
        }
        if (q == 0) x[0] = e0;
    }
};

// A tree level on quads (see level_merge): the sponge's state [left, right, 0, 0, 0, 0] is
// slot 0 = left, slot 1 = right, slot 2 = 0, and lane q writes digest element q.
extern "C" __global__ void merge_level_quad(Digest* trees, u64 leaves_per_tree, u64 parents,
                                            u64 merges, const __grid_constant__ ConstantBank c) {
    const LevelMerge m = level_merge<4>(trees, leaves_per_tree, parents, merges);
    const u32 q = threadIdx.x % 4;
    u64 x[3] = {to_mont(m.children[q]), to_mont(m.children[4 + q]), 0};
    permute_on<QuadState>(x, c);
    if (m.active) m.parent->e[q] = from_mont(x[0]);
}

// Lane i of a half warp holds element i (x[0]) for i < 12; lanes 12 to 15 follow along on
// values that reach no other lane.
struct SplitState {
    // ThreadState::external_layer on a half warp: M4 on the quad of lanes gives element
    // 4b + q the value y = 2 x_q + 3 x_(q+1) + x_(q+2) + x_(q+3) of its block b, then each
    // element adds the y of its place in all three blocks: 2 y + the other two blocks'.
    static __device__ __forceinline__ void external_layer(u64* x) {
        const u32 i = threadIdx.x % 16, q = i % 4;
        const u128 a = quad_lane(x[0], (q + 1) % 4), b = quad_lane(x[0], (q + 2) % 4),
                   d = quad_lane(x[0], (q + 3) % 4);
        const u128 y = 2 * (u128)x[0] + 3 * a + b + d;  // below 7 * 2^64
        const u128 second = group_lane<16>(y, i < 12 ? (i + 4) % 12 : i);
        const u128 third = group_lane<16>(y, i < 12 ? (i + 8) % 12 : i);
        x[0] = fold96(2 * y + second + third);
    }

    static __device__ __forceinline__ void external_round(u64* x, const ConstantBank& c,
                                                          int offset) {
        const u32 i = threadIdx.x % 16;
        x[0] = sbox_shallow(gl_add(x[0], c.w[offset + (i < 12 ? i : 0)]));
        external_layer(x);
    }

    // ThreadState::internal_round on a half warp, 22 times: element 0 in every lane, the
    // other eleven elements in lanes 1 to 11 (v; zero in the lanes that hold none, so that they
    // add nothing to the sum), each multiplied by its diagonal entry plus the sum.
    static __device__ __forceinline__ void internal_rounds(u64* x, const ConstantBank& c) {
        const u32 i = threadIdx.x % 16;
        const bool holds = i != 0 && i < 12;
        const u64 diagonal = c.w[P2_DIAGONAL + (i < 12 ? i : 0)];
        u64 e0 = gl_add(__shfl_sync(WHOLE_WARP, x[0], 0, 16), c.w[P2_INTERNAL]);
        u64 v = holds ? x[0] : 0;
#pragma unroll 1
        for (int r = 0; r < 22; r++) {
            const u64 next_constant = next_internal_constant(c, r);
            const u128 rest = group_sum<16>(v);
            const u128 scaled = (u128)gl_mul(gl_canonical(v), diagonal) + rest;
            const u64 boxed = internal_element0(e0, rest, next_constant);
            const u64 next = fold96(scaled + boxed);
            v = holds ? next : 0;
        }
        x[0] = i == 0 ? e0 : v;
    }
};

// Merge g of the level of `parents` parents per tree on this half warp, numbered as merge_at
// numbers it, its children read from L2. (Written with merge_at, ptxas scheduled the
// permutation differently, and trees of 2^12 leaves took 125 instead of 111 us on an H200.)
__device__ __forceinline__ void split_merge(Digest* trees, u64 leaves_per_tree, u64 parents,
                                            u64 g, bool active, bool writes,
                                            const ConstantBank& c) {
    const u64 merge_index = active ? g : 0;
    Digest* nodes = trees + (merge_index / parents) * 2 * leaves_per_tree;
    const u64 node = parents + merge_index % parents;
    const u64* children = (const u64*)(nodes + 2 * node);
    const u32 i = threadIdx.x % 16;
    u64 x[1] = {i < 8 ? to_mont(__ldcg(children + i)) : 0};
    permute_on<SplitState>(x, c);
    if (active && writes && i < 4) nodes[node].e[i] = from_mont(x[0]);
}

// The levels nearest the roots on half warps in one launch (merge_levels_in_one_launch).
extern "C" __global__ void merge_levels_split(Digest* trees, u64 leaves_per_tree, u64 parents,
                                              u64 merges, u32* arrivals,
                                              const __grid_constant__ ConstantBank c) {
    merge_levels_in_one_launch(parents, merges, arrivals,
                               [&](u64 level, u64 g, bool active, bool writes) {
                                   split_merge(trees, leaves_per_tree, level, g, active, writes,
                                               c);
                               });
}
