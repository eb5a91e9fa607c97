// What this crate's kernel modules share: digests, the constants parameter and where a tree
// level's merges read and write (level_merge); and, for the one-thread-per-hash module
// (poseidon2.cu), miden-crypto's sponge on a 12-element state and the bodies of the tree-level
// and row-hashing kernels (the Rescue family runs on the lane layouts of rescue_lanes.cuh).
//
// A one-thread-per-hash hasher is a struct with
//   static __device__ Digest merge(const Digest& left, const Digest& right, const ConstantBank& c);
//   static __device__ Digest hash_row(const u64* row, u32 width, const ConstantBank& c);
// and TREE_KERNELS(Hasher) defines the module's kernels `merge_level` and `hash_rows` for it.
// The state of one hash lives in registers of one thread, in Montgomery form.

#pragma once

#include "common.cuh"
#include "goldilocks.cuh"

struct Digest {
    u64 e[4];
};

// A hasher's round constants in Montgomery form, laid out as its module reads them (the Rust
// side's ConstantBank: 168 words, zeros after the last table).
struct ConstantBank {
    u64 w[168];
};

// The sponge of miden-crypto 0.28.1 (Rpo256, Rpx256, Poseidon2): rate s[0..8], capacity
// s[8..12], digest s[0..4]. P provides `static __device__ void permute(u64* s, const
// ConstantBank& c)` on a 12-element state.
template <class P>
struct MidenSponge {
    static __device__ __forceinline__ Digest digest(const u64* s) {
        Digest out;
#pragma unroll
        for (int i = 0; i < 4; i++) out.e[i] = from_mont(s[i]);
        return out;
    }

    // Permutes [left, right, 0, 0, 0, 0].
    static __device__ __forceinline__ Digest merge(const Digest& left, const Digest& right,
                                                   const ConstantBank& c) {
        u64 s[12];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            s[i] = to_mont(left.e[i]);
            s[4 + i] = to_mont(right.e[i]);
            s[8 + i] = 0;
        }
        P::permute(s, c);
        return digest(s);
    }

    // s[8] = width mod 8; each chunk of eight written into the rate (a final partial chunk
    // zero-filled), then permuted.
    static __device__ __forceinline__ Digest hash_row(const u64* row, u32 width,
                                                      const ConstantBank& c) {
        u64 s[12];
#pragma unroll
        for (int i = 0; i < 12; i++) s[i] = 0;
        s[8] = small_to_mont(width % 8);
        for (u32 taken = 0; taken < width; taken += 8) {
            const u32 chunk = min(width - taken, 8u);
#pragma unroll
            for (u32 i = 0; i < 8; i++) s[i] = i < chunk ? to_mont(row[taken + i]) : 0;
            P::permute(s, c);
        }
        return digest(s);
    }
};

// One merge of a tree level: its two children (8 consecutive elements), its parent, and
// whether these lanes write the parent (not for a padding merge, whose lanes run along reading
// merge 0, nor for lanes that repeat another group's merge).
struct LevelMerge {
    const u64* children;
    Digest* parent;
    bool active;
};

// Merge g of the level of `parents` parents per tree (merge 0 when not `active`): parent
// `parents + g % parents` of tree g / parents from its two children, written only if `active`
// and `writes`. Trees are arrays of 2n digests (root at 1, node i the parent of 2i and
// 2i + 1), back to back.
__device__ __forceinline__ LevelMerge merge_at(Digest* trees, u64 leaves_per_tree, u64 parents,
                                               u64 g, bool active, bool writes) {
    const u64 merge_index = active ? g : 0;
    Digest* nodes = trees + (merge_index / parents) * 2 * leaves_per_tree;
    const u64 node = parents + merge_index % parents;
    return {(const u64*)(nodes + 2 * node), nodes + node, active && writes};
}

// Merge g / LANES of a level of `merges` merges (merge_at).
template <u32 LANES>
__device__ __forceinline__ LevelMerge level_merge(Digest* trees, u64 leaves_per_tree,
                                                  u64 parents, u64 merges) {
    const u64 g = global_thread_index() / LANES;
    return merge_at(trees, leaves_per_tree, parents, g, g < merges, true);
}

// Every level from the one of `parents` parents per tree (`merges` merges over all trees) up
// to the roots, in one launch of blocks of one warp, so that no level waits for a launch.
// `merge(parents, g, active, writes)` runs merge g of the level of `parents` parents per tree
// on this thread's half warp, as merge_at numbers and writes it (the 16 lanes of a state near
// the root; it must read the children from L2, as another block of the launch may have
// written them). Block j merges 2j and 2j + 1 of the first level on its two half warps, then
// merge j of the next (whose children those are) on both, the second half warp writing
// nothing. From there the later of the two blocks whose merges are a merge's children goes on
// with it: a block counts its arrival in `arrivals` (one counter per merge of the levels
// above the second, below `merges` / 2), and the one that finds the other already counted
// resets the counter to zero, as every launch expects it, and merges. (Written otherwise,
// with the same instructions in another order, Poseidon2's levels took 1.3 us longer each on
// an H200.)
template <class MergeOnHalfWarp>
__device__ __forceinline__ void merge_levels_in_one_launch(u64 parents, u64 merges,
                                                           u32* arrivals,
                                                           MergeOnHalfWarp merge) {
    const u64 j = blockIdx.x;
    const u32 half = threadIdx.x / 16;
    const u64 first = 2 * j + half;
    merge(parents, first, first < merges, true);
    if (parents == 1) return;
    __syncwarp();
    u64 level = parents / 2, g = j;
    merges /= 2;
    merge(level, g, true, half == 0);
    while (level >= 2) {
        __threadfence();
        __syncwarp();
        u32 earlier = 0;
        const u64 counter = merges / 2 + g / 2;
        if (threadIdx.x == 0) earlier = atomicAdd(arrivals + counter, 1u);
        earlier = __shfl_sync(0xffffffffu, earlier, 0);
        if (earlier == 0) return;
        if (threadIdx.x == 0) arrivals[counter] = 0;
        __threadfence();
        level /= 2;
        g /= 2;
        merges /= 2;
        merge(level, g, true, half == 0);
    }
}

// One tree level, one thread per merge (level_merge).
template <class H>
__device__ __forceinline__ void merge_level_body(Digest* trees, u64 leaves_per_tree, u64 parents,
                                                 u64 merges, const ConstantBank& c) {
    const LevelMerge m = level_merge<1>(trees, leaves_per_tree, parents, merges);
    if (!m.active) return;
    const Digest* children = (const Digest*)m.children;
    *m.parent = H::merge(children[0], children[1], c);
}

// out[first + row] = hash_elements(row) for `rows` rows of `width` elements, row-major, one
// thread per row.
template <class H>
__device__ __forceinline__ void hash_rows_body(const u64* elements, u64 rows, u32 width,
                                               Digest* out, u64 first, const ConstantBank& c) {
    const u64 row = global_thread_index();
    if (row >= rows) return;
    out[first + row] = H::hash_row(elements + row * width, width, c);
}

#define TREE_KERNELS(H)                                                                      \
    extern "C" __global__ void merge_level(Digest* trees, u64 leaves_per_tree, u64 parents,  \
                                           u64 merges, const __grid_constant__ ConstantBank c) { \
        merge_level_body<H>(trees, leaves_per_tree, parents, merges, c);                     \
    }                                                                                        \
    extern "C" __global__ void hash_rows(const u64* elements, u64 rows, u32 width,           \
                                         Digest* out, u64 first,                             \
                                         const __grid_constant__ ConstantBank c) {           \
        hash_rows_body<H>(elements, rows, width, out, first, c);                             \
    }
