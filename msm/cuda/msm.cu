// Pippenger multi-scalar multiplication (SPEC.md, "msm"), all on the device, in the group that
// msm_group.cuh names: its coordinate field `Field` (Fp<P> for G1, Fp2<P> for G2, see field.cuh
// and fp2.cuh) and its scalar field's parameters `ScalarField` (SCALAR_PARAMS in field.cuh).
// msm/src/source.rs makes one module per group, each with its own msm_group.cuh.
//
// The host (msm/src/cuda.rs) runs, for each scalar vector:
//   1. msm_scalars_canonical: arkworks' Montgomery-form scalars to plain integers;
//   2. msm_count_partitions: signed c-bit digits of every scalar; per partition of bucket
//      keys, a count;
//   3. msm_scan_tiles, msm_scan_tile_sums, msm_scan_apply: the partitions' offsets (an
//      exclusive prefix sum of the counts);
//   4. msm_partition_coarse, msm_partition_fine, msm_sort_partitions: every nonzero digit's
//      point reference, sorted by bucket key (see msm_count_partitions);
//   5. msm_accumulate_affine, then msm_accumulate_xyzz until one segment is left: a
//      segmented reduction of the sorted list. Each thread sums a fixed number of entries,
//      so skewed buckets cost no more than even ones; complete runs are stored as bucket
//      sums, runs cut by segment boundaries go on as partial sums to the next pass (see
//      accumulate below);
//   6. msm_bucket_reduce: sum_b (b + 1) * B_b per window by running sums over groups of
//      buckets, then msm_sum_groups, a tree over the groups, until one point per window is left;
//   7. msm_combine_windows: sum_j 2^(c j) S_j (skipped when the bases carry precomputed
//      shifted copies 2^(c j) P_i, whose digits all share one window's buckets).
//
// A bucket key is window * key_stride + |digit| - 1; a point reference is
// window * point_stride + i with the sign in bit 31 (point_stride = n and key_stride = 0 with
// precomputed copies, point_stride = 0 and key_stride = 2^(c-1) without).
#include "curve.cuh"
#include "msm_group.cuh"

typedef AffinePoint<Field> Affine;
typedef XyzzPoint<Field> Xyzz;
#define FR_LIMBS 8
static_assert(ScalarField::LIMBS == FR_LIMBS, "scalars are 256-bit");

#define NEGATIVE_BIT 0x80000000u
#define NO_KEY 0xffffffffu
#define FULL_MASK 0xffffffffu

// out[i] = in[first + i] as a plain integer, for i < n: arkworks keeps scalars in Montgomery
// form (R = 2^256), so one Montgomery reduction each.
extern "C" __global__ void msm_scalars_canonical(const u32* in, u64 first, u64 n, u32* out) {
    for (u64 i = global_thread_index(); i < n; i += grid_thread_count()) {
        u32 t[FR_LIMBS + 2];
        u32 r[FR_LIMBS];
#pragma unroll
        for (int j = 0; j < FR_LIMBS; j++) {
            t[j] = in[(first + i) * FR_LIMBS + j];
            r[j] = ScalarField::modulus(j);
        }
        t[FR_LIMBS] = 0;
        t[FR_LIMBS + 1] = 0;
#pragma unroll
        for (int round = 0; round < FR_LIMBS; round++) {
            u32 m = t[0] * ScalarField::INV;
            mul_add_row<FR_LIMBS>(t, r, m);
#pragma unroll
            for (int j = 0; j < FR_LIMBS + 1; j++) t[j] = t[j + 1];
            t[FR_LIMBS + 1] = 0;
        }
        // The result is below 2r; arkworks keeps its scalars below r, so it is below r.
#pragma unroll
        for (int j = 0; j < FR_LIMBS; j++) out[i * FR_LIMBS + j] = t[j];
    }
}

// Bits [start, start + width) of a 256-bit little-endian integer (width <= 31).
__device__ __forceinline__ u32 scalar_bits(const u32* s, u32 start, u32 width) {
    u32 limb = start / 32, shift = start % 32;
    u64 pair = s[limb];
    if (limb + 1 < FR_LIMBS) pair |= (u64)s[limb + 1] << 32;
    return (u32)(pair >> shift) & ((1u << width) - 1);
}

// The signed digit of window `window`, from the raw window bits and the carry of the windows
// below; digits lie in [-2^(c-1), 2^(c-1)].
__device__ __forceinline__ int next_digit(const u32* s, u32 window, u32 c, u32& carry) {
    u32 raw = scalar_bits(s, window * c, c) + carry;
    if (raw > (1u << (c - 1))) {
        carry = 1;
        return (int)raw - (int)(1u << c);
    }
    carry = 0;
    return (int)raw;
}

struct DigitLayout {
    u64 n;             // scalars in this chunk
    u64 first;         // index of the chunk's first scalar among the bases
    u32 window_bits;   // c
    u32 windows;       // ceil(256 / c)
    u32 key_stride;    // bucket keys per window (0: every window shares one set)
    u32 point_stride;  // point references per window (0: every window reads the same bases)
};

// Calls visit(key, ref) for every window of scalars [first, end) of the chunk, where lane l of
// each warp takes scalar first + l, then the warp moves on by `step` (a multiple of 32): the
// digit's bucket key (NO_KEY for a zero digit or a lane past the end) and its point reference.
// `first` must be the same for every lane of a warp, so that every lane makes the same calls and
// `visit` may use warp-wide intrinsics.
template <typename Visit>
__device__ __forceinline__ void for_each_digit(const u32* scalars, const DigitLayout& layout,
                                               u64 first, u64 end, u64 step, Visit visit) {
    u32 lane = threadIdx.x % 32;
    for (u64 base = first; base < end; base += step) {
        u64 i = base + lane;
        bool live = i < end;
        u32 s[FR_LIMBS];
#pragma unroll
        for (int j = 0; j < FR_LIMBS; j++) s[j] = live ? scalars[i * FR_LIMBS + j] : 0;
        u32 carry = 0;
        for (u32 w = 0; w < layout.windows; w++) {
            int d = next_digit(s, w, layout.window_bits, carry);
            u32 key = (live && d != 0) ? w * layout.key_stride + (u32)abs(d) - 1 : NO_KEY;
            u32 ref = (u32)(w * layout.point_stride + layout.first + i) | (d < 0 ? NEGATIVE_BIT : 0u);
            visit(key, ref);
        }
    }
}

// The digits are sorted by bucket key in three passes, each of which writes whole runs of
// entries rather than entries at random places of a large array (each such write costs a
// partial-sector write to DRAM: at 2^24 scalars a direct scatter by per-bucket cursors took
// 15.4 ms of a 56 ms MSM on an H100). Keys are cut into fine partitions of 2^fine_shift keys
// (at most MAX_FINE of them), and those into coarse partitions of FINE_PER_COARSE:
//   msm_count_partitions: digits per fine partition (histograms in shared memory); the scan
//     kernels turn the counts into each fine and coarse partition's place in the sorted list;
//   msm_partition_coarse: each block takes a tile of scalars, sorts its digits by coarse
//     partition in shared memory and writes one run per coarse partition;
//   msm_partition_fine: each block takes a tile of that list, sorts it by fine partition and
//     writes one run per fine partition;
//   msm_sort_partitions: one block per fine partition sorts it by key in shared memory.
// Each lane counts and places its own entries with shared-memory atomics: the keys are spread,
// so the lanes of a warp rarely share a counter.
#define MAX_FINE 32768
#define FINE_PER_COARSE 128
#define MAX_COARSE (MAX_FINE / FINE_PER_COARSE)
#define COUNT_THREADS 256
// Blocks of the coarse pass: TILE_THREADS threads, at most TILE_ENTRIES digits.
#define TILE_THREADS 256
#define TILE_ENTRIES 12288
// Blocks of the fine pass: FINE_THREADS threads, FINE_PER_THREAD entries each.
#define FINE_THREADS 512
#define FINE_PER_THREAD 16
#define FINE_TILE (FINE_PER_THREAD * FINE_THREADS)
// Fine partitions the fine pass counts in shared memory: those of a tile's first two coarse
// partitions (a tile reaching further places the rest one by one).
#define FINE_WINDOW (2 * FINE_PER_COARSE)
// Blocks of the last pass: SORT_THREADS threads; a partition of at most SORT_CAP entries is
// sorted in shared memory, a larger one placed entry by entry.
#define SORT_THREADS 1024
#define SORT_PER_THREAD 16
#define SORT_CAP (SORT_PER_THREAD * SORT_THREADS)

// The partitions' offsets: an exclusive prefix sum of their counts in three kernels. Tiles of
// SCAN_TILE counts are summed (msm_scan_tiles), the tile sums scanned in one block
// (msm_scan_tile_sums), and each tile scanned again from its offset (msm_scan_apply).
#define SCAN_THREADS 1024
#define SCAN_PER_THREAD 4
#define SCAN_TILE (SCAN_THREADS * SCAN_PER_THREAD)

// The exclusive prefix sum of `value` over the block's threads (in thread order); the block's
// total goes to `total`. Every thread of the block must call it.
__device__ __forceinline__ u32 block_exclusive_scan(u32 value, u32& total) {
    __shared__ u32 warp_sums[32];
    u32 lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    u32 x = value;
#pragma unroll
    for (u32 d = 1; d < 32; d *= 2) {
        u32 y = __shfl_up_sync(FULL_MASK, x, d);
        if (lane >= d) x += y;
    }
    if (lane == 31) warp_sums[warp] = x;
    __syncthreads();
    if (warp == 0) {
        u32 w = lane < warps ? warp_sums[lane] : 0;
#pragma unroll
        for (u32 d = 1; d < 32; d *= 2) {
            u32 y = __shfl_up_sync(FULL_MASK, w, d);
            if (lane >= d) w += y;
        }
        warp_sums[lane] = w;
    }
    __syncthreads();
    u32 before = warp == 0 ? 0 : warp_sums[warp - 1];
    total = warp_sums[warps - 1];
    __syncthreads();
    return before + x - value;
}

// The SCAN_PER_THREAD values of thread t of the tile starting at `tile_first`.
__device__ __forceinline__ void load_run(const u32* values, u32 len, u64 tile_first, u32* run) {
    u64 first = tile_first + (u64)threadIdx.x * SCAN_PER_THREAD;
#pragma unroll
    for (int k = 0; k < SCAN_PER_THREAD; k++) run[k] = first + k < len ? values[first + k] : 0;
}

// tile_sums[b] = counts[b * SCAN_TILE ..][.. SCAN_TILE] summed. Blocks of SCAN_THREADS.
extern "C" __global__ void msm_scan_tiles(const u32* counts, u32 keys, u32* tile_sums) {
    u32 run[SCAN_PER_THREAD];
    load_run(counts, keys, (u64)blockIdx.x * SCAN_TILE, run);
    u32 local = 0, total;
#pragma unroll
    for (int k = 0; k < SCAN_PER_THREAD; k++) local += run[k];
    block_exclusive_scan(local, total);
    if (threadIdx.x == 0) tile_sums[blockIdx.x] = total;
}

// tile_sums becomes its exclusive prefix sum, counters[0] the total. One block.
extern "C" __global__ void msm_scan_tile_sums(u32* tile_sums, u32 tiles, u32* counters) {
    u32 carry = 0;
    for (u64 first = 0; first < tiles; first += SCAN_TILE) {
        u32 run[SCAN_PER_THREAD];
        load_run(tile_sums, tiles, first, run);
        u32 local = 0, total;
#pragma unroll
        for (int k = 0; k < SCAN_PER_THREAD; k++) local += run[k];
        u32 prefix = carry + block_exclusive_scan(local, total);
        u64 mine = first + (u64)threadIdx.x * SCAN_PER_THREAD;
#pragma unroll
        for (int k = 0; k < SCAN_PER_THREAD; k++) {
            if (mine + k < tiles) tile_sums[mine + k] = prefix;
            prefix += run[k];
        }
        carry += total;
    }
    if (threadIdx.x == 0) counters[0] = carry;
}

// cursors[k] = counts[0] + ... + counts[k - 1] (where fine partition k's digits start), and
// coarse_cursors[k / FINE_PER_COARSE] the same for every FINE_PER_COARSE-th k.
extern "C" __global__ void msm_scan_apply(const u32* counts, u32 keys, const u32* tile_offsets,
                                          u32* cursors, u32* coarse_cursors) {
    u32 run[SCAN_PER_THREAD];
    u64 tile_first = (u64)blockIdx.x * SCAN_TILE;
    load_run(counts, keys, tile_first, run);
    u32 local = 0, total;
#pragma unroll
    for (int k = 0; k < SCAN_PER_THREAD; k++) local += run[k];
    u32 prefix = tile_offsets[blockIdx.x] + block_exclusive_scan(local, total);
    u64 mine = tile_first + (u64)threadIdx.x * SCAN_PER_THREAD;
#pragma unroll
    for (int k = 0; k < SCAN_PER_THREAD; k++) {
        if (mine + k < keys) {
            cursors[mine + k] = prefix;
            if ((mine + k) % FINE_PER_COARSE == 0) {
                coarse_cursors[(mine + k) / FINE_PER_COARSE] = prefix;
            }
        }
        prefix += run[k];
    }
}

// A sorted digit: its bucket key (x) and point reference (y), moved with one 8-byte load or
// store.
typedef uint2 SortedDigit;

// counts[f] += the digits of fine partition f among scalars [tile, tile + tile_scalars).
// Dynamic shared memory: 4 bytes per fine partition.
extern "C" __global__ void __launch_bounds__(COUNT_THREADS) msm_count_partitions(
    const u32* scalars, DigitLayout layout, u32 tile_scalars, u32 fine_shift, u32 fine,
    u32* counts) {
    extern __shared__ u32 local[];
    for (u32 f = threadIdx.x; f < fine; f += blockDim.x) local[f] = 0;
    __syncthreads();
    const u64 first = (u64)blockIdx.x * tile_scalars;
    for_each_digit(scalars, layout, first + threadIdx.x - threadIdx.x % 32,
                   min(first + tile_scalars, layout.n), blockDim.x, [&](u32 key, u32) {
                       if (key != NO_KEY) atomicAdd(&local[key >> fine_shift], 1u);
                   });
    __syncthreads();
    for (u32 f = threadIdx.x; f < fine; f += blockDim.x) {
        if (local[f] != 0) atomicAdd(&counts[f], local[f]);
    }
}

// counts[0 .. n) (shared memory) becomes its exclusive prefix sum plus `offset`; returns the
// total. Every thread of the block calls it.
__device__ __forceinline__ u32 block_scan_in_place(u32* counts, u32 n, u32 offset) {
    const u32 per_thread = (n + blockDim.x - 1) / blockDim.x;
    const u32 k0 = min(threadIdx.x * per_thread, n), k1 = min(k0 + per_thread, n);
    u32 run = 0;
    for (u32 k = k0; k < k1; k++) run += counts[k];
    u32 total;
    u32 prefix = offset + block_exclusive_scan(run, total);
    for (u32 k = k0; k < k1; k++) {
        u32 count = counts[k];
        counts[k] = prefix;
        prefix += count;
    }
    __syncthreads();
    return total;
}

// A tile's entries sorted by group in shared memory, and each group's run written out. The
// caller calls begin, counts the tile's entries per group into start[g], calls reserve, places
// every entry with place, and calls write.
struct TileRuns {
    SortedDigit* tile;  // the entries by group, in shared memory
    u32* start;         // per group: its count, then where its entries start in `tile`
    u32* fill;          // per group: the next free slot in `tile`
    u32* base;          // per group: where its run goes in the output
    u32 groups;
    u32 entries;

    __device__ __forceinline__ void begin() const {
        for (u32 g = threadIdx.x; g < groups; g += blockDim.x) start[g] = 0;
        __syncthreads();
    }

    // Each group's run in the output, from `cursors[first_group + g]`.
    __device__ __forceinline__ void reserve(u32* cursors, u32 first_group) {
        __syncthreads();
        for (u32 g = threadIdx.x; g < groups; g += blockDim.x) {
            base[g] = start[g] != 0 ? atomicAdd(&cursors[first_group + g], start[g]) : 0;
        }
        __syncthreads();
        entries = block_scan_in_place(start, groups, 0);
        for (u32 g = threadIdx.x; g < groups; g += blockDim.x) fill[g] = start[g];
        __syncthreads();
    }

    __device__ __forceinline__ void place(u32 g, SortedDigit d) const {
        tile[atomicAdd(&fill[g], 1u)] = d;
    }

    // Writes the tile's runs to `out`; `group_of(d)` gives an entry's group.
    template <typename GroupOf>
    __device__ __forceinline__ void write(SortedDigit* out, GroupOf group_of) const {
        __syncthreads();
        for (u32 j = threadIdx.x; j < entries; j += blockDim.x) {
            SortedDigit d = tile[j];
            u32 g = group_of(d);
            out[base[g] + j - start[g]] = d;
        }
    }
};

// The digits of scalars [tile, tile + tile_scalars) (at most TILE_ENTRIES) to `out`, one run
// per coarse partition, from coarse_cursors. Dynamic shared memory: their digits (TILE_ENTRIES
// at most).
extern "C" __global__ void __launch_bounds__(TILE_THREADS) msm_partition_coarse(
    const u32* scalars, DigitLayout layout, u32 tile_scalars, u32 fine_shift, u32 coarse,
    u32* coarse_cursors, SortedDigit* out) {
    extern __shared__ SortedDigit tile[];
    __shared__ u32 start[MAX_COARSE], fill[MAX_COARSE], base[MAX_COARSE];
    static_assert(FINE_PER_COARSE == 1 << 7, "coarse partitions of 2^7 fine ones");
    const u32 coarse_shift = fine_shift + 7;
    const u64 first = (u64)blockIdx.x * tile_scalars;
    const u64 end = min(first + tile_scalars, layout.n);
    const u64 warp_first = first + threadIdx.x - threadIdx.x % 32;
    TileRuns runs{tile, start, fill, base, coarse, 0};
    runs.begin();
    for_each_digit(scalars, layout, warp_first, end, blockDim.x, [&](u32 key, u32) {
        if (key != NO_KEY) atomicAdd(&start[key >> coarse_shift], 1u);
    });
    runs.reserve(coarse_cursors, 0);
    for_each_digit(scalars, layout, warp_first, end, blockDim.x, [&](u32 key, u32 ref) {
        if (key != NO_KEY) runs.place(key >> coarse_shift, make_uint2(key, ref));
    });
    runs.write(out, [&](SortedDigit d) { return d.x >> coarse_shift; });
}

// Entries [tile, tile + tile_entries) of `in` (counters[0] entries, in coarse partitions;
// tile_entries at most FINE_TILE) to `out`, one run per fine partition, from fine_cursors (the
// fine partitions of the tile's first two coarse partitions; entries of any further ones go one
// by one). Afterwards fine_cursors[f] is the end of fine partition f. Dynamic shared memory:
// tile_entries entries.
extern "C" __global__ void __launch_bounds__(FINE_THREADS) msm_partition_fine(
    const SortedDigit* in, const u32* counters, u32 tile_entries, u32 fine_shift,
    u32* fine_cursors, SortedDigit* out) {
    extern __shared__ SortedDigit tile[];
    __shared__ u32 start[FINE_WINDOW], fill[FINE_WINDOW], base[FINE_WINDOW];
    const u64 first = (u64)blockIdx.x * tile_entries;
    if (first >= counters[0]) return;
    const u64 end = min(first + tile_entries, (u64)counters[0]);
    SortedDigit d[FINE_PER_THREAD];
#pragma unroll
    for (int k = 0; k < FINE_PER_THREAD; k++) {
        u64 e = first + k * FINE_THREADS + threadIdx.x;
        d[k] = e < end ? in[e] : make_uint2(NO_KEY, 0);
    }
    const u32 window_first = (in[first].x >> fine_shift) / FINE_PER_COARSE * FINE_PER_COARSE;
    // An entry's place in the window (FINE_WINDOW or more: outside it, or no entry).
    auto window_slot = [&](SortedDigit x) {
        return x.x == NO_KEY ? FINE_WINDOW : (x.x >> fine_shift) - window_first;
    };
    TileRuns runs{tile, start, fill, base, FINE_WINDOW, 0};
    runs.begin();
#pragma unroll
    for (int k = 0; k < FINE_PER_THREAD; k++) {
        u32 j = window_slot(d[k]);
        if (j < FINE_WINDOW) atomicAdd(&start[j], 1u);
    }
    runs.reserve(fine_cursors, window_first);
#pragma unroll
    for (int k = 0; k < FINE_PER_THREAD; k++) {
        u32 j = window_slot(d[k]);
        if (j < FINE_WINDOW) {
            runs.place(j, d[k]);
        } else if (d[k].x != NO_KEY) {
            out[atomicAdd(&fine_cursors[d[k].x >> fine_shift], 1u)] = d[k];
        }
    }
    runs.write(out, window_slot);
}

// Block f sorts fine partition f: entries [f ? ends[f - 1] : 0, ends[f]) of `in` to the same
// places of `sorted`, by key. Dynamic shared memory: SORT_CAP entries, then two counters per
// key of the partition (2^fine_shift keys).
extern "C" __global__ void __launch_bounds__(SORT_THREADS) msm_sort_partitions(
    const SortedDigit* in, const u32* ends, u32 fine_shift, SortedDigit* sorted) {
    extern __shared__ SortedDigit tile[];
    const u32 keys = 1u << fine_shift;
    u32* start = (u32*)(tile + SORT_CAP);
    u32* fill = start + keys;
    const u32 f = blockIdx.x, first_key = f << fine_shift;
    const u32 first = f == 0 ? 0 : ends[f - 1], end = ends[f];
    for (u32 k = threadIdx.x; k < keys; k += blockDim.x) start[k] = 0;
    __syncthreads();
    if (end - first <= SORT_CAP) {
        // In shared memory: the entries in registers, counted, placed by key, written in order.
        SortedDigit d[SORT_PER_THREAD];
#pragma unroll
        for (int k = 0; k < SORT_PER_THREAD; k++) {
            u32 e = first + k * SORT_THREADS + threadIdx.x;
            d[k] = e < end ? in[e] : make_uint2(NO_KEY, 0);
            if (e < end) atomicAdd(&start[d[k].x - first_key], 1u);
        }
        __syncthreads();
        block_scan_in_place(start, keys, 0);
        for (u32 k = threadIdx.x; k < keys; k += blockDim.x) fill[k] = start[k];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < SORT_PER_THREAD; k++) {
            if (d[k].x != NO_KEY) tile[atomicAdd(&fill[d[k].x - first_key], 1u)] = d[k];
        }
        __syncthreads();
        for (u32 j = threadIdx.x; j < end - first; j += blockDim.x) sorted[first + j] = tile[j];
    } else {
        // Too large for shared memory (skewed scalars): counted, then placed entry by entry.
        for (u32 e = first + threadIdx.x; e < end; e += blockDim.x) {
            atomicAdd(&start[in[e].x - first_key], 1u);
        }
        __syncthreads();
        block_scan_in_place(start, keys, first);
        for (u32 e = first + threadIdx.x; e < end; e += blockDim.x) {
            SortedDigit x = in[e];
            sorted[atomicAdd(&start[x.x - first_key], 1u)] = x;
        }
    }
}

// The first pass's entries: sorted digits, whose points are (negated) affine bases. One
// thread per segment.
struct DigitEntries {
    static const u32 LANES = 1;
    const Affine* bases;
    const SortedDigit* sorted;
    __device__ __forceinline__ u32 key(u32 e) const { return sorted[e].x; }
    __device__ __forceinline__ Affine point(u32 e) const {
        u32 ref = sorted[e].y;
        Affine p = bases[ref & ~NEGATIVE_BIT];
        return (ref & NEGATIVE_BIT) ? affine_neg(p) : p;
    }
};

// Later passes' entries: the partial sums of the pass before, with their keys. Few segments,
// each a short chain of additions, so a quad of lanes per segment (see xyzz_add_quad).
struct PartialEntries {
    static const u32 LANES = 4;
    const Xyzz* points;
    const u32* keys;
    __device__ __forceinline__ u32 key(u32 e) const { return keys[e]; }
    __device__ __forceinline__ Xyzz point(u32 e) const { return points[e]; }
};

__device__ __forceinline__ Xyzz start_run(const Affine& p) { return xyzz_from_affine(p); }
__device__ __forceinline__ Xyzz start_run(const Xyzz& p) { return p; }
__device__ __forceinline__ Xyzz extend_run(const Xyzz& acc, const Affine& p) {
    return xyzz_add_affine(acc, p);
}
__device__ __forceinline__ Xyzz extend_run(const Xyzz& acc, const Xyzz& p) {
    return xyzz_add_quad(acc, p);
}

// Where a pass's results go; only the first of the lanes that share a segment writes.
struct PassOutput {
    u32 pass;
    u32* pieces;
    Xyzz* buckets;
    u32* keys;
    Xyzz* points;
    bool writer;

    // Stores a finished bucket sum. Infinity is not stored: buckets start at infinity
    // (zeroed), and a key whose pieces were all stored earlier reaches later passes as infinity
    // padding.
    __device__ __forceinline__ void bucket(u32 key, const Xyzz& sum) const {
        if (writer && !xyzz_is_infinity(sum)) buckets[key] = sum;
    }
    // Slot `slot` for the next pass: a piece of a run, or infinity (`is_piece` false).
    __device__ __forceinline__ void slot(u64 slot, u32 key, bool is_piece, const Xyzz& sum) const {
        if (!writer) return;
        keys[slot] = key;
        points[slot] = is_piece ? sum : xyzz_infinity<Field>();
        if (is_piece) pieces[pass] = 1;
    }
};

// The number of entries from `first` on with the key of entry `first`, counting at most
// `limit`.
template <typename Entries>
__device__ __forceinline__ u32 run_length(const Entries& in, u32 first, u32 entries, u32 limit) {
    u32 key = in.key(first), length = 1;
    while (length < limit && first + length < entries && in.key(first + length) == key) length++;
    return length;
}

// One pass of the segmented reduction by key, over counters[pass] entries (it sets
// counters[pass + 1] to the next pass's entries, 0 after the last). Segment t (a thread, or a
// quad of lanes, see Entries::LANES) sums entries
// [t * per_segment, (t + 1) * per_segment) run by run (a run: consecutive equal keys), and
// stores each complete run's sum in `buckets`.
//
// A run that starts in a segment and crosses into the next by at most `walk` entries belongs
// to the thread of the segment where it starts, which reads on past its segment to finish it
// (the next thread skips those entries). Longer runs are cut at segment boundaries: the pieces go to
// out_keys/out_points[2t] (the first run) and [2t + 1] (the last run) for the next pass;
// slots without a piece get infinity under the same key, so the slots stay sorted by key.
// The first pass does not walk (threads reading on would wait for each other); later passes
// walk up to a segment, so pieces of a run cut in the first pass meet in the second. A run
// holding every entry takes about log(entries) / log(per_segment / 2) passes, but most inputs
// leave no pieces after the second: pieces[pass] (zero before the first pass) becomes nonzero
// when the pass leaves one, and a pass whose input holds none returns at once.
template <typename Entries>
__device__ void accumulate(const Entries& in, u32* counters, u32* pieces, u32 pass,
                           u32 per_segment, u32 walk, Xyzz* buckets, u32* out_keys,
                           Xyzz* out_points) {
    u32 entries = counters[pass];
    u32 segments = (entries + per_segment - 1) / per_segment;
    u64 t = global_thread_index() / Entries::LANES;
    const PassOutput out{pass, pieces, buckets, out_keys, out_points,
                         threadIdx.x % Entries::LANES == 0};
    if (t == 0 && out.writer) counters[pass + 1] = segments > 1 ? 2 * segments : 0;
    if (t >= segments || (pass > 0 && pieces[pass - 1] == 0)) return;
    u32 start = (u32)t * per_segment;
    u32 end = min(start + per_segment, entries);
    // A run continued from the segment before: skipped when that thread finishes it, which
    // it does when the run started in its segment (not before) and ends within this one.
    bool continued = start > 0 && in.key(start - 1) == in.key(start);
    if (continued) {
        u32 before = start - per_segment, key = in.key(start);
        bool started_before = in.key(before) == key && before > 0 && in.key(before - 1) == key;
        u32 length = run_length(in, start, entries, walk + 1);
        if (!started_before && length <= walk) {
            start += length;
            continued = false;
            if (start == end) {
                out.slot(2 * t, in.key(end - 1), false, xyzz_infinity<Field>());
                out.slot(2 * t + 1, in.key(end - 1), false, xyzz_infinity<Field>());
                return;
            }
        }
    }
    u32 key = in.key(start);
    Xyzz acc = start_run(in.point(start));
    bool first_run = true;
    for (u32 e = start + 1; e < end; e++) {
        u32 next = in.key(e);
        if (next != key) {
            if (first_run && segments > 1) {
                out.slot(2 * t, key, continued, acc);
            }
            if (!(first_run && continued)) out.bucket(key, acc);
            first_run = false;
            key = next;
            acc = start_run(in.point(e));
        } else {
            acc = extend_run(acc, in.point(e));
        }
    }
    // The last run: finish it past the segment's end when it started here and ends soon.
    bool continues = end < entries && in.key(end) == key;
    if (continues && !(first_run && continued)) {
        u32 length = run_length(in, end, entries, walk + 1);
        if (length <= walk) {
            for (u32 e = end; e < end + length; e++) acc = extend_run(acc, in.point(e));
            continues = false;
        }
    }
    if (segments == 1) {
        out.bucket(key, acc);
        return;
    }
    bool partial = continues || (first_run && continued);
    if (!partial) out.bucket(key, acc);
    if (first_run) out.slot(2 * t, key, partial, acc);
    out.slot(2 * t + 1, key, partial && !first_run, acc);
}

// The first pass: entries are point references into the affine bases. Capped at 128
// registers (a few spill) so that four blocks of 128 threads share an SM: the additions'
// multiply chains then hide each other's latency (measured on an H100 against the 172
// registers the compiler picks: 2^20 9.39 -> 8.98 ms, 2^24 113.1 -> 104.0 ms per MSM).
#define ACCUMULATE_THREADS 128
extern "C" __global__ void __launch_bounds__(ACCUMULATE_THREADS, 4) msm_accumulate_affine(const Affine* bases, const SortedDigit* sorted,
                                                 u32* counters, u32* pieces, u32 per_segment,
                                                 Xyzz* buckets, u32* out_keys, Xyzz* out_points) {
    accumulate(DigitEntries{bases, sorted}, counters, pieces, 0, per_segment, 0, buckets,
               out_keys, out_points);
}

// Later passes: entries are the partial sums of the pass before.
extern "C" __global__ void msm_accumulate_xyzz(const Xyzz* partials, const u32* keys,
                                               u32* counters, u32* pieces, u32 pass,
                                               u32 per_segment, Xyzz* buckets, u32* out_keys,
                                               Xyzz* out_points) {
    accumulate(PartialEntries{partials, keys}, counters, pieces, pass, per_segment, per_segment,
               buckets, out_keys, out_points);
}

// Thread (window w, group g) of `windows * groups`, over the L = buckets / groups buckets
// B_gL .. B_gL+L-1 of its group: by running sums, W = sum_k (k + 1) B_gL+k (the group's sum with
// its weights counted from the group's start) goes to sums[t], and P = L * sum_k B_gL+k (the
// weight its buckets gain per group further up; L is a power of two, so doublings) to
// sums[windows * groups + t]. msm_sum_groups then adds the groups' weights in a tree, so no
// thread multiplies by its group's position.
extern "C" __global__ void msm_bucket_reduce(const Xyzz* buckets, u32 buckets_per_window,
                                             u32 windows, u32 groups, Xyzz* sums) {
    u64 t = global_thread_index();
    if (t >= (u64)windows * groups) return;
    u32 window = (u32)(t / groups), group = (u32)(t % groups);
    u32 size = buckets_per_window / groups;
    const Xyzz* b = buckets + (u64)window * buckets_per_window + (u64)group * size;
    Xyzz running = xyzz_infinity<Field>(), total = xyzz_infinity<Field>();
    for (int k = (int)size - 1; k >= 0; k--) {
        running = xyzz_add(running, b[k]);
        total = xyzz_add(total, running);
    }
    sums[t] = total;
    for (u32 span = size; span > 1; span /= 2) running = xyzz_double(running);
    sums[(u64)windows * groups + t] = running;
}

// One level of the tree over the groups of msm_bucket_reduce: `in` holds (W, P) of `groups`
// nodes per window (all W, then all P), `out` the same for groups / 2 nodes. The node of
// children A and B (B covering the next m buckets): W = W_A + W_B + P_B, since B's buckets weigh
// m more each counted from A's start, and P = 2 (P_A + P_B). Few nodes, and each waits on two
// additions in a row, so every node's W and its P each take a quad of lanes (see
// xyzz_add_quad); the W quads and the P quads fill separate warps, so the two run side by side.
// `with_p` is 0 at the last level, whose P nothing reads.
extern "C" __global__ void msm_sum_groups(const Xyzz* in, u32 windows, u32 groups, u32 with_p,
                                          Xyzz* out) {
    const u64 quads_per_warp = 8;
    u64 nodes = (u64)windows * (groups / 2);
    u64 warp_aligned = (nodes + quads_per_warp - 1) / quads_per_warp * quads_per_warp;
    u64 quad = global_thread_index() / 4;
    bool weighted = quad < warp_aligned;
    u64 node = weighted ? quad : quad - warp_aligned;
    if (node >= nodes || (!weighted && !with_p)) return;
    u64 first = (node / (groups / 2)) * groups + 2 * (node % (groups / 2));
    const Xyzz* p_in = in + (u64)windows * groups;
    // W takes two additions, P one and a doubling. One loop makes the additions, so that the
    // addition is inlined once instead of three times (NVRTC 12.9 compiles G2's modules in
    // about a quarter less time; the kernel runs as fast).
    const Xyzz* left = weighted ? in : p_in;
    Xyzz acc = left[first];
    u32 additions = weighted ? 2 : 1;
#pragma unroll 1
    for (u32 k = 0; k < additions; k++) acc = xyzz_add_quad(acc, (k == 0 ? left : p_in)[first + 1]);
    if (!weighted) acc = xyzz_double_quad(acc);
    if (quad_role() == 0) out[weighted ? node : nodes + node] = acc;
}

// result = sum_j 2^(c j) * window_sums[j] by Horner's rule: a chain of (windows - 1) c
// doublings, so one quad of lanes (see xyzz_add_quad).
extern "C" __global__ void msm_combine_windows(const Xyzz* window_sums, u32 windows, u32 c,
                                               Xyzz* result) {
    if (global_thread_index() >= 4) return;
    Xyzz acc = window_sums[windows - 1];
    for (int w = (int)windows - 2; w >= 0; w--) {
        for (u32 k = 0; k < c; k++) acc = xyzz_double_quad(acc);
        acc = xyzz_add_quad(acc, window_sums[w]);
    }
    if (quad_role() == 0) *result = acc;
}

// bases[window * n + i] = 2^c * bases[(window - 1) * n + i] in affine form, for the `count`
// points i from `first` on. One inversion serves a batch of points (Montgomery's trick): thread
// t takes points first + t + k * threads for k < batch, and an inversion costs about 500
// products against some 130 for c = 22 Jacobian doublings (no ZZ and ZZZ to keep). The first
// loop doubles each point, stores X and Y in its output slot and Z beside the product of the
// batch's Zs before it in `scratch` (2 count elements); the second walks back from the inverse
// of the whole product, giving each point its 1 / Z for x = X / Z^2 and y = Y / Z^3. Infinity
// (Z = 0, from (0, 0) as from a point of order 2) stays out of the product and comes out as
// (0, 0).
extern "C" __global__ void msm_precompute_window(Affine* bases, u64 n, u32 window, u32 c,
                                                 u64 first, u32 count, u32 batch,
                                                 Field* scratch) {
    u32 threads = (count + batch - 1) / batch;
    u64 t = global_thread_index();
    if (t >= threads) return;
    Affine* in = bases + (u64)(window - 1) * n + first;
    Affine* out = bases + (u64)window * n + first;
    Field product = Field::one();
    u32 taken = 0;
    for (u32 k = 0; k < batch; k++, taken++) {
        u32 i = (u32)t + k * threads;
        if (i >= count) break;
        Affine a = in[i];
        JacobianPoint<Field> p{a.x, a.y, affine_is_infinity(a) ? Field::zero() : Field::one()};
        for (u32 s = 0; s < c; s++) p = jacobian_double(p);
        out[i] = Affine{p.x, p.y};
        scratch[2 * i] = p.z;
        scratch[2 * i + 1] = product;
        if (!is_zero(p.z)) product = mul(product, p.z);
    }
    Field inv = inverse(product);
    for (u32 k = taken; k-- > 0;) {
        u32 i = (u32)t + k * threads;
        Field z = scratch[2 * i];
        Affine r;
        if (is_zero(z)) {
            r.x = Field::zero();
            r.y = Field::zero();
        } else {
            Field z_inv = mul(inv, scratch[2 * i + 1]);
            inv = mul(inv, z);
            Field z_inv2 = sqr(z_inv);
            Affine scaled = out[i];
            r.x = mul(scaled.x, z_inv2);
            r.y = mul(scaled.y, mul(z_inv2, z_inv));
        }
        out[i] = r;
    }
}
