// RpJive64_256 (winter-crypto 0.13.1): Merkle tree levels (Jive compression) and row hashing,
// on the lane layouts of rescue_lanes.cuh. Rp64_256's rounds on an 8-element state (capacity
// s[0..4], rate and digest s[4..8]) with the 8 x 8 matrix `Mds8`: a quad of lanes holds two
// elements per lane (slot t of lane q is element 4t + q), the small levels near the root run
// on groups of 8 lanes, one element each. The constant bank holds ARK1 (7 x 8) then ARK2
// (7 x 8).

#include "rescue_lanes.cuh"

struct RpJive64_256 {
    static constexpr u32 SPLIT_LANES = split_lanes<Mds8>();

    // Jive: the permutation y of x = [left, right], and x[i] + x[4 + i] + y[i] + y[4 + i].
    // Lane q holds elements q and 4 + q, so its digest element q needs no other lane.
    static __device__ __forceinline__ void merge_quad(const LevelMerge& m,
                                                      const ConstantBank& c) {
        const u32 q = threadIdx.x % 4;
        u64 x[2] = {to_mont(m.children[q]), to_mont(m.children[4 + q])};
        const u64 fed_forward = gl_add(x[0], x[1]);
        permute_quad<RoundOrder::Rescue, Strided<Mds8>>(x, c);
        if (m.active) m.parent->e[q] = from_mont(gl_add(fed_forward, gl_add(x[0], x[1])));
    }

    // Lane e holds element e and adds x[e] + y[e] to lane e + 4's, which lane e < 4 writes.
    static __device__ __forceinline__ void merge_split(const LevelMerge& m,
                                                       const ConstantBank& c) {
        const u32 lane = threadIdx.x % SPLIT_LANES;
        const u64 x = to_mont(__ldcg(m.children + lane));
        const u64 sum = gl_add(x, permute_split<RoundOrder::Rescue, Mds8>(x, lane, lane, c));
        const u32 partner = (threadIdx.x & 31 & ~(SPLIT_LANES - 1)) + (lane + 4) % SPLIT_LANES;
        const u32 lo = __shfl_sync(0xffffffffu, (u32)sum, partner);
        const u32 hi = __shfl_sync(0xffffffffu, (u32)(sum >> 32), partner);
        if (m.active && lane < 4) m.parent->e[lane] = from_mont(gl_add(sum, ((u64)hi << 32) | lo));
    }

    // A quad of lanes per row: s[0] = 1 when the width is not a multiple of 4; lane q adds
    // element q of each chunk of four into state element 4 + q, or past a final partial chunk
    // writes the padding (a one, then zeros); it writes digest element q (state element 4 + q).
    static __device__ __forceinline__ void hash_row_quad(const u64* in, u32 width, Digest* out,
                                                         const ConstantBank& c) {
        const u32 q = threadIdx.x % 4;
        u64 x[2] = {q == 0 && width % 4 != 0 ? small_to_mont(1) : 0, 0};
        for (u32 taken = 0; taken < width; taken += 4) {
            const u32 chunk = min(width - taken, 4u);
            if (q < chunk) {
                x[1] = gl_add(x[1], to_mont(in[taken + q]));
            } else {
                x[1] = q == chunk ? small_to_mont(1) : 0;
            }
            permute_quad<RoundOrder::Rescue, Strided<Mds8>>(x, c);
        }
        out->e[q] = from_mont(x[1]);
    }
};

RESCUE_LANE_KERNELS(RpJive64_256)
