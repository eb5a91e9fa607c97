// Rescue Prime Rp64_256 (winter-crypto 0.13.1) over the Goldilocks field p = 2^64 - 2^32 + 1:
// Merkle tree levels (a quad of lanes per merge, or a half warp per merge for the small levels
// near the root) and row hashing, on the lane layouts of rescue_lanes.cuh. The round constants
// arrive in Montgomery form as a kernel parameter (constant bank), so the Rust crate holds the
// only copy of them.

#include "rescue_lanes.cuh"

struct Rp64_256 : SpongeMerge<RoundOrder::Rescue, WinterLayout> {
    // A quad of lanes per row: the capacity's first element holds the width, and lane q adds
    // rate elements q and q + 4 of each chunk into state elements 4 + q and 8 + q
    // (winter-crypto's absorption), and writes digest element q.
    static __device__ __forceinline__ void hash_row_quad(const u64* in, u32 width, Digest* out,
                                                         const ConstantBank& c) {
        const u32 q = threadIdx.x % 4;
        u64 x[3] = {q == 0 ? small_to_mont(width) : 0, 0, 0};
        for (u32 taken = 0; taken < width; taken += 8) {
            const u32 chunk = min(width - taken, 8u);
            if (q < chunk) x[1] = gl_add(x[1], to_mont(in[taken + q]));
            if (4 + q < chunk) x[2] = gl_add(x[2], to_mont(in[taken + 4 + q]));
            permute_quad<RoundOrder::Rescue, Strided<Mds12>>(x, c);
        }
        out->e[q] = from_mont(x[1]);
    }
};

RESCUE_LANE_KERNELS(Rp64_256)
