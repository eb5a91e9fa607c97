// Rescue Prime Rp64_256 (winter-crypto 0.13.1) over the Goldilocks field p = 2^64 - 2^32 + 1:
// Merkle tree levels (a quad of lanes per merge, or a half warp per merge for the small levels
// near the root) and row hashing, on the lane layouts of rescue_lanes.cuh. The round constants
// arrive in Montgomery form as a kernel parameter (constant bank), so the Rust crate holds the
// only copy of them.

#include "rescue_lanes.cuh"

RESCUE_LEVEL_KERNELS(RoundOrder::Rescue, WinterLayout)

// out[first + row] = hash_elements(row) for `rows` rows of `width` elements, row-major, a quad
// of lanes per row: the capacity's first element holds the width, and lane q adds rate
// elements q and q + 4 of each chunk into state elements 4 + q and 8 + q (winter-crypto's
// absorption), and writes digest element q.
extern "C" __global__ void merkle_hash_rows(const u64* elements, u64 rows, u32 width,
                                            Digest* out, u64 first,
                                            const __grid_constant__ ConstantBank c) {
    const u64 row = global_thread_index() / 4;
    const u32 q = threadIdx.x % 4;
    if (row >= rows) return;  // whole quads leave together
    const u64* in = elements + row * width;
    u64 x[3] = {q == 0 ? small_to_mont(width) : 0, 0, 0};
    for (u32 taken = 0; taken < width; taken += 8) {
        const u32 chunk = min(width - taken, 8u);
        if (q < chunk) x[1] = gl_add(x[1], to_mont(in[taken + q]));
        if (4 + q < chunk) x[2] = gl_add(x[2], to_mont(in[taken + 4 + q]));
        permute_quad<RoundOrder::Rescue>(x, c);
    }
    out[first + row].e[q] = from_mont(x[1]);
}
