// Rpo256 (miden-crypto 0.28.1): Merkle tree levels (a quad of lanes per merge, or a half warp
// per merge near the root) and row hashing, on the lane layouts of rescue_lanes.cuh with
// miden-crypto's sponge.

#include "rescue_lanes.cuh"

struct Rpo256 : SpongeMerge<RoundOrder::Rpo, MidenLayout> {
    // A quad of lanes per row: the capacity's first element holds width mod 8, and lane q
    // writes rate elements q and q + 4 of each chunk (zero past a final partial chunk) into
    // state elements q and 4 + q (miden-crypto's overwriting absorption), and writes digest
    // element q.
    static __device__ __forceinline__ void hash_row_quad(const u64* in, u32 width, Digest* out,
                                                         const ConstantBank& c) {
        const u32 q = threadIdx.x % 4;
        u64 x[3] = {0, 0, q == 0 ? small_to_mont(width % 8) : 0};
        for (u32 taken = 0; taken < width; taken += 8) {
            const u32 chunk = min(width - taken, 8u);
            x[0] = q < chunk ? to_mont(in[taken + q]) : 0;
            x[1] = 4 + q < chunk ? to_mont(in[taken + 4 + q]) : 0;
            permute_quad<RoundOrder::Rpo, Strided<Mds12>>(x, c);
        }
        out->e[q] = from_mont(x[0]);
    }
};

RESCUE_LANE_KERNELS(Rpo256)
