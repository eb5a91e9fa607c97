// Rpo256 (miden-crypto 0.28.1): its round, `MDS, + ARK1[r], x^7, MDS, + ARK2[r], x^(1/7)`, on
// a 12-element state in one thread's registers, for Rpx256 (rpx.cu), whose rounds 0, 2 and 4
// are Rpo256's (Rpo256's own trees run on the lane layouts of rescue_lanes.cuh). The constant
// bank holds ARK1 (7 x 12) then ARK2 (7 x 12).

#pragma once

#include "rescue_lanes.cuh"

// s <- MDS s + ark: each input split into 32-bit halves, each half's sums exact in 64 bits
// (coefficients sum to 160, so below 2^40), lo + 2^32 hi reduced once and ark added (gl_add
// makes it canonical).
__device__ __forceinline__ void rpo_mds_add(u64* s, const ConstantBank& c, int offset) {
    u64 lo[12], hi[12], out[12];
#pragma unroll
    for (int j = 0; j < 12; j++) {
        lo[j] = s[j] & 0xffffffffull;
        hi[j] = s[j] >> 32;
    }
#pragma unroll
    for (int i = 0; i < 12; i++) {
        u64 lo_sum = 0, hi_sum = 0;
#pragma unroll
        for (int j = 0; j < 12; j++) {
            const u64 coefficient = mds_coefficient((j - i + 12) % 12);
            lo_sum += coefficient * lo[j];
            hi_sum += coefficient * hi[j];
        }
        // lo_sum + 2^32 hi_sum < 2^73: low word, and the high word (below 2^9) times 2^64 =
        // EPSILON mod p.
        const u64 low = lo_sum + (hi_sum << 32);
        const u64 high = (hi_sum >> 32) + (low < lo_sum ? 1 : 0);
        const u64 folded = high * EPSILON;
        u64 sum = low + folded;
        if (sum < folded) sum += EPSILON;
        out[i] = gl_add(sum, c.w[offset + i]);
    }
#pragma unroll
    for (int i = 0; i < 12; i++) s[i] = out[i];
}

// Round r of Rpo256.
__device__ __forceinline__ void rpo_round(u64* s, const ConstantBank& c, int r) {
    rpo_mds_add(s, c, r * 12);
#pragma unroll
    for (int i = 0; i < 12; i++) s[i] = sbox_one(s[i]);
    rpo_mds_add(s, c, 84 + r * 12);
    inverse_sbox<12>(s);
}
