// RpJive64_256 (winter-crypto 0.13.1): Merkle tree levels (Jive compression) and row hashing,
// one thread per hash. An 8-element state, capacity s[0..4], rate and digest s[4..8]; rounds
// are Rp64_256's with the 8 x 8 circulant matrix below. The constant bank holds ARK1 (7 x 8)
// then ARK2 (7 x 8).

#include "sponge.cuh"

// First row of the circulant MDS matrix: MDS[i][j] = row[(j - i) mod 8].
__device__ __forceinline__ u64 jive_mds_coefficient(int k) {
    const u64 row[8] = {23, 8, 13, 10, 7, 6, 21, 8};
    return row[k];
}

// s <- MDS s + ark (coefficients sum to 96: each half's sums stay below 2^39).
__device__ __forceinline__ void jive_mds_add(u64* s, const ConstantBank& c, int offset) {
    u64 lo[8], hi[8], out[8];
#pragma unroll
    for (int j = 0; j < 8; j++) {
        lo[j] = s[j] & 0xffffffffull;
        hi[j] = s[j] >> 32;
    }
#pragma unroll
    for (int i = 0; i < 8; i++) {
        u64 lo_sum = 0, hi_sum = 0;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const u64 coefficient = jive_mds_coefficient((j - i + 8) % 8);
            lo_sum += coefficient * lo[j];
            hi_sum += coefficient * hi[j];
        }
        const u64 low = lo_sum + (hi_sum << 32);
        const u64 high = (hi_sum >> 32) + (low < lo_sum ? 1 : 0);
        const u64 folded = high * EPSILON;
        u64 sum = low + folded;
        if (sum < folded) sum += EPSILON;
        out[i] = gl_add(sum, c.w[offset + i]);
    }
#pragma unroll
    for (int i = 0; i < 8; i++) s[i] = out[i];
}

__device__ __forceinline__ void jive_permute(u64* s, const ConstantBank& c) {
#pragma unroll 1
    for (int r = 0; r < 7; r++) {
#pragma unroll
        for (int i = 0; i < 8; i++) s[i] = sbox_one(s[i]);
        jive_mds_add(s, c, r * 8);
        inverse_sbox<8>(s);
        jive_mds_add(s, c, 56 + r * 8);
    }
}

struct Jive {
    // Permutes x = [left, right] and returns x[i] + x[4 + i] + y[i] + y[4 + i], y permuted.
    static __device__ __forceinline__ Digest merge(const Digest& left, const Digest& right,
                                                   const ConstantBank& c) {
        u64 x[8], s[8];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            x[i] = s[i] = to_mont(left.e[i]);
            x[4 + i] = s[4 + i] = to_mont(right.e[i]);
        }
        jive_permute(s, c);
        Digest out;
#pragma unroll
        for (int i = 0; i < 4; i++)
            out.e[i] = from_mont(gl_add(gl_add(x[i], x[4 + i]), gl_add(s[i], s[4 + i])));
        return out;
    }

    // s[0] = 1 when width is not a multiple of 4; each chunk of four added into the rate, a final
    // partial chunk followed by a one and zeros (written), then permuted.
    static __device__ __forceinline__ Digest hash_row(const u64* row, u32 width,
                                                      const ConstantBank& c) {
        u64 s[8];
#pragma unroll
        for (int i = 0; i < 8; i++) s[i] = 0;
        if (width % 4 != 0) s[0] = small_to_mont(1);
        for (u32 taken = 0; taken < width; taken += 4) {
            const u32 chunk = min(width - taken, 4u);
#pragma unroll
            for (u32 i = 0; i < 4; i++) {
                if (i < chunk) s[4 + i] = gl_add(s[4 + i], to_mont(row[taken + i]));
                else s[4 + i] = i == chunk ? small_to_mont(1) : 0;
            }
            jive_permute(s, c);
        }
        Digest out;
#pragma unroll
        for (int i = 0; i < 4; i++) out.e[i] = from_mont(s[4 + i]);
        return out;
    }
};

TREE_KERNELS(Jive)
