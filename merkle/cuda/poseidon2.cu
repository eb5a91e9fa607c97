// Poseidon2 over Goldilocks, width 12 (miden-crypto 0.28.1, Plonky3's default constants):
// Merkle tree levels and row hashing, one thread per hash, and the levels near the root on
// quads of lanes (merge_level_quad). The constant bank holds the four initial external rounds'
// constants (4 x 12), the 22 internal ones, the four terminal external rounds' (4 x 12), then
// the internal matrix's diagonal (12).

#include "sponge.cuh"

#define P2_INITIAL 0
#define P2_INTERNAL 48
#define P2_TERMINAL 70
#define P2_DIAGONAL 118

// The round schedule, on a state layout L (ThreadState: one thread's twelve elements;
// QuadState: a quad's, three a lane) with static external_layer, external_round and
// internal_rounds (all 22).
template <class L>
__device__ __forceinline__ void permute_on(u64* x, const ConstantBank& c) {
    L::external_layer(x);
#pragma unroll 1
    for (int r = 0; r < 4; r++) L::external_round(x, c, P2_INITIAL + 12 * r);
    L::internal_rounds(x, c);
#pragma unroll 1
    for (int r = 0; r < 4; r++) L::external_round(x, c, P2_TERMINAL + 12 * r);
}

// One thread holds the whole state s[0..12]. Its linear layers run as the CPU's do
// (merkle/src/poseidon2.rs): exactly over the integers on u128s, each output reduced once
// (fold96), so that the state between rounds is any value below 2^64 of the right residue,
// which the external layer and gl_add take; only S-box inputs must be canonical, and gl_add
// with the round constant makes them so.
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
    // d = (-2, 1, 2, 1/2, 3, 4, -1/2, -3, -4, 1/4, -1/4, 1/8) mod p (MATRIX_DIAGONAL): sums of
    // small multiples, a multiple of p added before each subtraction, and each division by
    // 2^k done on the whole output as (2^k sum + d' s) / 2^k (div_pow2). Below 2^71 throughout.
    static __device__ __forceinline__ void internal_round(u64* s, const ConstantBank& c, int r) {
        const u128 s0 = sbox_one(gl_add(s[0], c.w[P2_INTERNAL + r]));
        u128 rest = 0;
#pragma unroll
        for (int i = 1; i < 12; i++) rest += s[i];
        const u128 sum = rest + s0, sum2 = 2 * sum, sum4 = 4 * sum;
        s[0] = fold96(rest + TWO_P - s0);  // sum - 2 s0
        s[1] = fold96(sum + s[1]);
        s[2] = fold96(sum + 2 * (u128)s[2]);
        s[3] = fold96(div_pow2<1>(sum2 + s[3]));
        s[4] = fold96(sum + 3 * (u128)s[4]);
        s[5] = fold96(sum + 4 * (u128)s[5]);
        s[6] = fold96(div_pow2<1>(sum2 + TWO_P - s[6]));
        s[7] = fold96(sum + 3 * (TWO_P - s[7]));
        s[8] = fold96(sum + 4 * (TWO_P - s[8]));
        s[9] = fold96(div_pow2<2>(sum4 + s[9]));
        s[10] = fold96(div_pow2<2>(sum4 + TWO_P - s[10]));
        s[11] = fold96(div_pow2<3>(2 * sum4 + s[11]));
    }
};

struct Poseidon2 {
    static __device__ __forceinline__ void permute(u64* s, const ConstantBank& c) {
        permute_on<ThreadState>(s, c);
    }
};

TREE_KERNELS(MidenSponge<Poseidon2>)

// ---- the small levels on quads of lanes ----------------------------------------------------
//
// Near the root a level has too few merges to fill the GPU, and one thread walking a whole
// permutation is what it waits for. There a quad of lanes shares a state: lane q holds elements
// q, q + 4 and q + 8 (slot t holds element 4t + q), so that an external round's twelve S-boxes
// are three per lane and the blocks of the external layer lie across the quad. Every lane of a
// quad computes the internal rounds' S-box of element 0 (the same value), and the state's sum
// takes two shuffles: more instructions per merge than one thread, in a shorter chain
// (merkle/src/cuda.rs, POSEIDON2_QUAD_BELOW, gives the measured times).

// Lane `from`'s value of v (from < 4), within this lane's quad.
__device__ __forceinline__ u64 quad_lane(u64 v, u32 from) {
    const u32 quad_mask = 0xfu << (threadIdx.x % 32 & ~3u);
    return __shfl_sync(quad_mask, v, from, 4);
}

// The sum of v over this lane's quad, in every lane.
__device__ __forceinline__ u64 quad_sum(u64 v) {
    const u32 quad_mask = 0xfu << (threadIdx.x % 32 & ~3u);
    v = gl_add(v, __shfl_xor_sync(quad_mask, v, 1, 4));
    return gl_add(v, __shfl_xor_sync(quad_mask, v, 2, 4));
}

// Lane q of a quad holds elements q, q + 4 and q + 8 in slots 0, 1, 2.
struct QuadState {
    // ThreadState::external_layer on a quad: M4 on block t (slot t across the quad) gives
    // element q 2 x_q + 3 x_(q+1) + x_(q+2) + x_(q+3) = (x_0 + x_1 + x_2 + x_3) + x_q +
    // 2 x_(q+1); the sum over the three blocks of the elements at one place is this lane's
    // three slots.
    static __device__ __forceinline__ void external_layer(u64* x) {
#pragma unroll
        for (int t = 0; t < 3; t++) {
            const u64 next = quad_lane(x[t], (threadIdx.x + 1) % 4);
            x[t] = gl_add(gl_add(quad_sum(x[t]), x[t]), gl_add(next, next));
        }
        const u64 sum = gl_add(gl_add(x[0], x[1]), x[2]);
#pragma unroll
        for (int t = 0; t < 3; t++) x[t] = gl_add(x[t], sum);
    }

    static __device__ __forceinline__ void external_round(u64* x, const ConstantBank& c,
                                                          int offset) {
        const u32 q = threadIdx.x % 4;
#pragma unroll
        for (int t = 0; t < 3; t++) x[t] = sbox_one(gl_add(x[t], c.w[offset + 4 * t + q]));
        external_layer(x);
    }

    // ThreadState::internal_round on a quad, 22 times. Every lane computes the S-box of
    // element 0 and keeps element 0 (e0) itself through the rounds, lane 0's slot 0 standing
    // for it as a zero in the sums; the sum of the other eleven (rest) runs beside the S-box,
    // and the next element 0, sum - 2 s0 = rest - s0, is one subtraction after it, so that the
    // chain from one S-box to the next has no shuffle and no product.
    static __device__ __forceinline__ void internal_rounds(u64* x, const ConstantBank& c) {
        const u32 q = threadIdx.x % 4;
        u64 e0 = quad_lane(x[0], 0);
        if (q == 0) x[0] = 0;
#pragma unroll 1
        for (int r = 0; r < 22; r++) {
            const u64 boxed = sbox_one(gl_add(e0, c.w[P2_INTERNAL + r]));
            const u64 rest = quad_sum(gl_add(gl_add(x[0], x[1]), x[2]));
            e0 = fold96(rest + TWO_P - boxed);
            const u64 sum = gl_add(rest, boxed);
#pragma unroll
            for (int t = 0; t < 3; t++) {
                x[t] = gl_add(gl_mul(x[t], c.w[P2_DIAGONAL + 4 * t + q]), sum);
            }
            if (q == 0) x[0] = 0;
        }
        if (q == 0) x[0] = e0;
    }
};

// A tree level on quads (see level_merge): the sponge's state [left, right, 0, 0, 0, 0]
// is slot 0 = left, slot 1 = right, slot 2 = 0, and lane q writes digest element q.
extern "C" __global__ void merge_level_quad(Digest* trees, u64 leaves_per_tree, u64 parents,
                                            u64 merges, const __grid_constant__ ConstantBank c) {
    const LevelMerge m = level_merge<4>(trees, leaves_per_tree, parents, merges);
    const u32 q = threadIdx.x % 4;
    u64 x[3] = {to_mont(m.children[q]), to_mont(m.children[4 + q]), 0};
    permute_on<QuadState>(x, c);
    if (m.active) m.parent->e[q] = from_mont(x[0]);
}
