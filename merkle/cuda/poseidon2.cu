// Poseidon2 over Goldilocks, width 12 (miden-crypto 0.28.1, Plonky3's default constants):
// Merkle tree levels and row hashing, one thread per hash. The constant bank holds the four
// initial external rounds' constants (4 x 12), the 22 internal ones, the four terminal external
// rounds' (4 x 12), then the internal matrix's diagonal (12).

#include "sponge.cuh"

#define P2_INITIAL 0
#define P2_INTERNAL 48
#define P2_TERMINAL 70
#define P2_DIAGONAL 118

// Each block of four times M4 = [[2, 3, 1, 1], [1, 2, 3, 1], [1, 1, 2, 3], [3, 1, 1, 2]], then
// each element plus the sum of the elements at its place in the three blocks.
__device__ __forceinline__ void external_layer(u64* s) {
#pragma unroll
    for (int b = 0; b < 12; b += 4) {
        const u64 x0 = s[b], x1 = s[b + 1], x2 = s[b + 2], x3 = s[b + 3];
        const u64 x01 = gl_add(x0, x1), x23 = gl_add(x2, x3);
        const u64 x0123 = gl_add(x01, x23);
        const u64 x01123 = gl_add(x0123, x1), x01233 = gl_add(x0123, x3);
        s[b] = gl_add(x01123, x01);
        s[b + 1] = gl_add(x01123, gl_add(x2, x2));
        s[b + 2] = gl_add(x01233, x23);
        s[b + 3] = gl_add(x01233, gl_add(x0, x0));
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const u64 sum = gl_add(gl_add(s[i], s[i + 4]), s[i + 8]);
        s[i] = gl_add(s[i], sum);
        s[i + 4] = gl_add(s[i + 4], sum);
        s[i + 8] = gl_add(s[i + 8], sum);
    }
}

// + constants, x^7 on every element, the external layer.
__device__ __forceinline__ void external_round(u64* s, const ConstantBank& c, int offset) {
#pragma unroll
    for (int i = 0; i < 12; i++) s[i] = sbox_one(gl_add(s[i], c.w[offset + i]));
    external_layer(s);
}

// s[0] += constant, s[0] = s[0]^7, then s[i] <- s[i] diagonal[i] + sum(s).
__device__ __forceinline__ void internal_round(u64* s, const ConstantBank& c, int r) {
    s[0] = sbox_one(gl_add(s[0], c.w[P2_INTERNAL + r]));
    u64 sum = s[0];
#pragma unroll
    for (int i = 1; i < 12; i++) sum = gl_add(sum, s[i]);
#pragma unroll
    for (int i = 0; i < 12; i++) s[i] = gl_add(gl_mul(s[i], c.w[P2_DIAGONAL + i]), sum);
}

struct Poseidon2 {
    static __device__ __forceinline__ void permute(u64* s, const ConstantBank& c) {
        external_layer(s);
#pragma unroll 1
        for (int r = 0; r < 4; r++) external_round(s, c, P2_INITIAL + 12 * r);
#pragma unroll 1
        for (int r = 0; r < 22; r++) internal_round(s, c, r);
#pragma unroll 1
        for (int r = 0; r < 4; r++) external_round(s, c, P2_TERMINAL + 12 * r);
    }
};

TREE_KERNELS(MidenSponge<Poseidon2>)
