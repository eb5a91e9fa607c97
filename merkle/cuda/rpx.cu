// Rpx256 (miden-crypto 0.28.1): Merkle tree levels and row hashing, one thread per hash.
// Rounds 0, 2, 4 are Rpo256's; 1, 3, 5 add ARK1[r] and raise each element of the cubic
// extension F_p[t] / (t^3 - t - 1) held by the triples s[3k..3k+3] to the 7th power; round 6
// is MDS and ARK1[6]. The constant bank is Rpo256's.

#include "rpo.cuh"

// a b in F_p[t] / (t^3 - t - 1): t^3 = t + 1 and t^4 = t^2 + t fold the high products down.
__device__ __forceinline__ void cubic_mul(const u64* a, const u64* b, u64* out) {
    const u64 degree3 = gl_add(gl_mul(a[1], b[2]), gl_mul(a[2], b[1]));
    const u64 degree4 = gl_mul(a[2], b[2]);
    const u64 c0 = gl_add(gl_mul(a[0], b[0]), degree3);
    const u64 c1 = gl_add(gl_add(gl_mul(a[0], b[1]), gl_mul(a[1], b[0])), gl_add(degree3, degree4));
    const u64 c2 = gl_add(gl_add(gl_mul(a[0], b[2]), gl_mul(a[1], b[1])), gl_add(gl_mul(a[2], b[0]), degree4));
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
}

// a^2 in the cubic extension (cubic_mul with the symmetric products once).
__device__ __forceinline__ void cubic_square(const u64* a, u64* out) {
    const u64 a12 = gl_mul(a[1], a[2]);
    const u64 degree3 = gl_add(a12, a12);
    const u64 degree4 = gl_sqr(a[2]);
    const u64 a01 = gl_mul(a[0], a[1]);
    const u64 a02 = gl_mul(a[0], a[2]);
    const u64 c0 = gl_add(gl_sqr(a[0]), degree3);
    const u64 c1 = gl_add(gl_add(a01, a01), gl_add(degree3, degree4));
    const u64 c2 = gl_add(gl_add(a02, a02), gl_add(gl_sqr(a[1]), degree4));
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
}

// + ARK1[r], then x^7 = (x^2 x)^2 x on each cubic-extension element.
__device__ __forceinline__ void extension_round(u64* s, const ConstantBank& c, int r) {
#pragma unroll
    for (int i = 0; i < 12; i++) s[i] = gl_add(s[i], RESCUE_ARK1(c, r, i));
#pragma unroll
    for (int k = 0; k < 4; k++) {
        u64 a[3] = {s[3 * k], s[3 * k + 1], s[3 * k + 2]}, t[3], a3[3];
        cubic_square(a, t);
        cubic_mul(t, a, a3);
        cubic_square(a3, t);
        cubic_mul(t, a, s + 3 * k);
    }
}

struct Rpx {
    static __device__ __forceinline__ void permute(u64* s, const ConstantBank& c) {
#pragma unroll 1
        for (int r = 0; r < 6; r += 2) {
            rpo_round(s, c, r);
            extension_round(s, c, r + 1);
        }
        rpo_mds_add(s, c, 6 * 12);
    }
};

TREE_KERNELS(MidenSponge<Rpx>)
