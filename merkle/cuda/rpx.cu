// Rpx256 (miden-crypto 0.28.1): Merkle tree levels and row hashing on the lane layouts of
// rescue_lanes.cuh, with miden-crypto's sponge. Rounds 0, 2 and 4 are Rpo256's; 1, 3 and 5 add
// ARK1[r] and raise each element of the cubic extension F_p[t] / (t^3 - t - 1) held by the
// triples s[3k..3k+3] to the 7th power; round 6 is MDS and ARK1[6]. The constant bank is
// Rpo256's.
//
// On a quad, lane q holds triple q (the `Triples` arrangement), so the extension rounds need no
// other lane. On a half warp, lane e holds element e, and each extension round gathers the
// lane's triple by shuffles and computes its power in all three of its lanes.

#include "rescue_lanes.cuh"

// The extension's products sum the base field's products before reducing: each of the three
// coefficients of a product or square is one Montgomery reduction of a sum of at most five
// exact 128-bit products (wide_reduce), instead of one reduction per product and a modular
// addition per sum (cubic x^7: 585 instructions instead of 861, NVRTC 12.9, sm_90).

// A sum of at most five products of canonical values (below 5 p^2 < 2^131), in three words.
struct WideSum {
    u64 lo, hi;
    u32 top;
};

// a b, exact.
__device__ __forceinline__ WideSum wide_product(u64 a, u64 b) {
    const u128 product = (u128)a * b;
    return {(u64)product, (u64)(product >> 64), 0};
}

// x + y.
__device__ __forceinline__ WideSum wide_add(WideSum x, WideSum y) {
    WideSum s;
    asm("add.cc.u64 %0, %3, %6;\n\taddc.cc.u64 %1, %4, %7;\n\taddc.u32 %2, %5, %8;"
        : "=l"(s.lo), "=l"(s.hi), "=r"(s.top)
        : "l"(x.lo), "l"(x.hi), "r"(x.top), "l"(y.lo), "l"(y.hi), "r"(y.top));
    return s;
}

// The Montgomery reduction of a wide sum s: s / 2^64 mod p, canonical. With
// s = lo + 2^64 h0 + 2^96 h1 + 2^128 t (h = h0 + 2^32 h1), 2^64 = 2^32 - 1, 2^96 = -1 and
// 2^128 = -2^32 mod p give v = lo + 2^32 h0 + 8p - h0 - h1 - 2^32 t = s mod p, where 8p
// covers the subtrahend (below 2^35) and v < 2^68, so v's top word is 0 as mont_reduce needs.
// merkle/src/field.rs checks these steps (gpu_wide_sum_reduction_is_exact).
__device__ __forceinline__ u64 wide_reduce(WideSum s) {
    const u64 h0 = (u32)s.hi, h1 = s.hi >> 32;
    const u128 v = (u128)s.lo + (h0 << 32) + 8 * (u128)MODULUS - (h0 + h1 + ((u64)s.top << 32));
    return mont_reduce((u32)v, (u32)(v >> 32), (u32)(v >> 64), 1);
}

// a b in F_p[t] / (t^3 - t - 1): t^3 = t + 1 and t^4 = t^2 + t fold the high products down.
__device__ __forceinline__ void cubic_mul(const u64* a, const u64* b, u64* out) {
    const WideSum degree3 = wide_add(wide_product(a[1], b[2]), wide_product(a[2], b[1]));
    const WideSum degree4 = wide_product(a[2], b[2]);
    const WideSum c0 = wide_add(wide_product(a[0], b[0]), degree3);
    const WideSum c1 = wide_add(wide_add(wide_product(a[0], b[1]), wide_product(a[1], b[0])),
                                wide_add(degree3, degree4));
    const WideSum c2 = wide_add(wide_add(wide_product(a[0], b[2]), wide_product(a[1], b[1])),
                                wide_add(wide_product(a[2], b[0]), degree4));
    out[0] = wide_reduce(c0);
    out[1] = wide_reduce(c1);
    out[2] = wide_reduce(c2);
}

// a^2 in the cubic extension (cubic_mul with the symmetric products once, doubled).
__device__ __forceinline__ void cubic_square(const u64* a, u64* out) {
    const WideSum a12 = wide_product(a[1], a[2]);
    const WideSum degree3 = wide_add(a12, a12);
    const WideSum degree4 = wide_product(a[2], a[2]);
    const WideSum a01 = wide_product(a[0], a[1]);
    const WideSum a02 = wide_product(a[0], a[2]);
    const WideSum c0 = wide_add(wide_product(a[0], a[0]), degree3);
    const WideSum c1 = wide_add(wide_add(a01, a01), wide_add(degree3, degree4));
    const WideSum c2 = wide_add(wide_add(a02, a02), wide_add(wide_product(a[1], a[1]), degree4));
    out[0] = wide_reduce(c0);
    out[1] = wide_reduce(c1);
    out[2] = wide_reduce(c2);
}

// out = a^7 = (a^2 a)^2 a in the cubic extension.
__device__ __forceinline__ void cubic_power7(const u64* a, u64* out) {
    u64 t[3], a3[3];
    cubic_square(a, t);
    cubic_mul(t, a, a3);
    cubic_square(a3, t);
    cubic_mul(t, a, out);
}

// Extension round r on a quad in the `Triples` arrangement: + ARK1[r], then x^7 on this lane's
// triple.
__device__ __forceinline__ void extension_round_quad(u64* x, const ConstantBank& c, int r) {
    const u32 q = threadIdx.x % 4;
    u64 a[3];
#pragma unroll
    for (int t = 0; t < 3; t++) a[t] = gl_add(x[t], ark1<12>(c, r, Triples::element(q, t)));
    cubic_power7(a, x);
}

// Extension round r on the half-warp layout: + ARK1[r], then coefficient element % 3 of the
// 7th power of this lane's triple, gathered from lanes 3k, 3k + 1, 3k + 2 (k = element / 3).
__device__ __forceinline__ u64 extension_round_split(u64 x, u32 element, const ConstantBank& c,
                                                     int r) {
    x = gl_add(x, ark1<12>(c, r, element));
    const u32 first = (threadIdx.x & 31 & ~(u32)15) + element / 3 * 3;
    u64 a[3], power[3];
#pragma unroll
    for (u32 i = 0; i < 3; i++) {
        const u32 lo = __shfl_sync(0xffffffffu, (u32)x, first + i);
        const u32 hi = __shfl_sync(0xffffffffu, (u32)(x >> 32), first + i);
        a[i] = ((u64)hi << 32) | lo;
    }
    cubic_power7(a, power);
    const u32 coefficient = element % 3;
    return coefficient == 0 ? power[0] : coefficient == 1 ? power[1] : power[2];
}

struct Rpx256 {
    static constexpr u32 SPLIT_LANES = split_lanes<Mds12>();

    static __device__ void permute_quad(u64* x, const ConstantBank& c) {
#pragma unroll 1
        for (int r = 0; r < 6; r += 2) {
            round_quad<RoundOrder::Rpo, Triples>(x, c, r);
            extension_round_quad(x, c, r + 1);
        }
        mds_add_quad<Triples>(x, c, 6, false);
    }

    // Lane q's slots: elements 3q..3q+2 of [left, right, 0, 0, 0, 0] (every lane but 0
    // straddles two of its parts); the digest s[0..4] is lane 0's triple and lane 1's first
    // slot.
    static __device__ __forceinline__ void merge_quad(const LevelMerge& m,
                                                      const ConstantBank& c) {
        const u32 q = threadIdx.x % 4;
        u64 x[3];
#pragma unroll
        for (int t = 0; t < 3; t++) {
            const u32 e = Triples::element(q, t);
            x[t] = e < 8 ? to_mont(m.children[e]) : 0;
        }
        permute_quad(x, c);
        write_digest(x, m.active ? m.parent : nullptr);
    }

    static __device__ __forceinline__ void merge_split(const LevelMerge& m,
                                                       const ConstantBank& c) {
        const u32 lane = threadIdx.x % SPLIT_LANES;
        const u32 element = lane < Mds12::WIDTH ? lane : 0;
        u64 x = lane < 8 ? to_mont(__ldcg(m.children + lane)) : 0;
#pragma unroll 1
        for (int r = 0; r < 6; r += 2) {
            x = round_split<RoundOrder::Rpo, Mds12>(x, lane, element, c, r);
            x = extension_round_split(x, element, c, r + 1);
        }
        x = mds_split<Mds12>(x, lane, ark1<12>(c, 6, element));
        if (m.active && lane < 4) m.parent->e[lane] = from_mont(x);
    }

    // A quad of lanes per row: s[8] = width mod 8 (lane 2's last slot); each chunk of eight
    // written into the rate s[0..8] (zero past a final partial chunk), then permuted.
    static __device__ __forceinline__ void hash_row_quad(const u64* in, u32 width, Digest* out,
                                                         const ConstantBank& c) {
        const u32 q = threadIdx.x % 4;
        u64 x[3] = {0, 0, q == 2 ? small_to_mont(width % 8) : 0};
        for (u32 taken = 0; taken < width; taken += 8) {
            const u32 chunk = min(width - taken, 8u);
#pragma unroll
            for (int t = 0; t < 3; t++) {
                const u32 e = Triples::element(q, t);
                if (e < 8) x[t] = e < chunk ? to_mont(in[taken + e]) : 0;
            }
            permute_quad(x, c);
        }
        write_digest(x, out);
    }

    // Writes this lane's part of the digest s[0..4] into `out` (when not null).
    static __device__ __forceinline__ void write_digest(const u64* x, Digest* out) {
        const u32 q = threadIdx.x % 4;
#pragma unroll
        for (int t = 0; t < 3; t++) {
            const u32 e = Triples::element(q, t);
            if (out != nullptr && e < 4) out->e[e] = from_mont(x[t]);
        }
    }
};

RESCUE_LANE_KERNELS(Rpx256)
