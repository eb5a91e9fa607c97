// Rpo256 (miden-crypto 0.28.1): Merkle tree levels (a quad of lanes per merge, or a half warp
// per merge near the root) and row hashing, on the lane layouts of rescue_lanes.cuh with
// miden-crypto's sponge.

#include "rescue_lanes.cuh"

RESCUE_LEVEL_KERNELS(RoundOrder::Rpo, MidenLayout)

// out[first + row] = hash_elements(row) for `rows` rows of `width` elements, row-major, a quad
// of lanes per row: the capacity's first element holds width mod 8, and lane q writes rate
// elements q and q + 4 of each chunk (zero past a final partial chunk) into state elements q
// and 4 + q (miden-crypto's overwriting absorption), and writes digest element q.
extern "C" __global__ void merkle_hash_rows(const u64* elements, u64 rows, u32 width,
                                            Digest* out, u64 first,
                                            const __grid_constant__ ConstantBank c) {
    const u64 row = global_thread_index() / 4;
    const u32 q = threadIdx.x % 4;
    if (row >= rows) return;  // whole quads leave together
    const u64* in = elements + row * width;
    u64 x[3] = {0, 0, q == 0 ? small_to_mont(width % 8) : 0};
    for (u32 taken = 0; taken < width; taken += 8) {
        const u32 chunk = min(width - taken, 8u);
        x[0] = q < chunk ? to_mont(in[taken + q]) : 0;
        x[1] = 4 + q < chunk ? to_mont(in[taken + 4 + q]) : 0;
        permute_quad<RoundOrder::Rpo>(x, c);
    }
    out[first + row].e[q] = from_mont(x[0]);
}
