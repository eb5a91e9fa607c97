// Pippenger multi-scalar multiplication (SPEC.md, "msm"), all on the device, in the group that
// msm_group.cuh names: its coordinate field `Field` (Fp<P> for G1, Fp2<P> for G2, see field.cuh
// and fp2.cuh) and its scalar field's parameters `ScalarField` (SCALAR_PARAMS in field.cuh).
// msm/src/source.rs makes one module per group, each with its own msm_group.cuh.
//
// The host (msm/src/cuda.rs) runs, for each scalar vector:
//   1. msm_scalars_canonical: arkworks' Montgomery-form scalars to plain integers;
//   2. msm_count_digits: signed c-bit digits of every scalar; per bucket key, a count;
//   3. msm_scan_tiles, msm_scan_tile_sums, msm_scan_apply: bucket offsets (an exclusive
//      prefix sum of the counts), the cursors of the scatter;
//   4. msm_scatter_digits: every nonzero digit's point reference, grouped by bucket key;
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

// Calls visit(key, ref) for every window of every scalar: the digit's bucket key (NO_KEY for
// a zero digit or a lane past the end) and its point reference. Every lane of a warp makes
// the same calls, so `visit` may use warp-wide intrinsics.
template <typename Visit>
__device__ __forceinline__ void for_each_digit(const u32* scalars, const DigitLayout& layout,
                                               Visit visit) {
    u32 lane = threadIdx.x % 32;
    for (u64 base = global_thread_index() - lane; base < layout.n; base += grid_thread_count()) {
        u64 i = base + lane;
        bool live = i < layout.n;
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

// Counts nonzero digits per bucket key; lanes with equal keys add once per warp.
extern "C" __global__ void msm_count_digits(const u32* scalars, DigitLayout layout, u32* counts) {
    u32 lane = threadIdx.x % 32;
    for_each_digit(scalars, layout, [&](u32 key, u32) {
        u32 peers = __match_any_sync(FULL_MASK, key);
        if (key != NO_KEY && lane == (u32)(__ffs(peers) - 1)) {
            atomicAdd(&counts[key], (u32)__popc(peers));
        }
    });
}

// The bucket offsets: an exclusive prefix sum of the counts in three kernels. Tiles of
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

// cursors[k] = counts[0] + ... + counts[k - 1]: where bucket k's entries start.
extern "C" __global__ void msm_scan_apply(const u32* counts, u32 keys, const u32* tile_offsets,
                                          u32* cursors) {
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
        if (mine + k < keys) cursors[mine + k] = prefix;
        prefix += run[k];
    }
}

// A sorted digit: its bucket key (x) and point reference (y), written with one store (the
// slots are scattered, so one 8-byte write costs half of two 4-byte ones).
typedef uint2 SortedDigit;

// Places every nonzero digit (key and point reference) at its bucket's cursor.
extern "C" __global__ void msm_scatter_digits(const u32* scalars, DigitLayout layout,
                                              u32* cursors, SortedDigit* sorted) {
    u32 lane = threadIdx.x % 32;
    u32 lanes_below = (1u << lane) - 1;
    for_each_digit(scalars, layout, [&](u32 key, u32 ref) {
        u32 peers = __match_any_sync(FULL_MASK, key);
        u32 leader = __ffs(peers) - 1;
        u32 slot = 0;
        if (key != NO_KEY && lane == leader) slot = atomicAdd(&cursors[key], (u32)__popc(peers));
        slot = __shfl_sync(FULL_MASK, slot, leader) + __popc(peers & lanes_below);
        if (key != NO_KEY) sorted[slot] = make_uint2(key, ref);
    });
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
    if (weighted) {
        Xyzz w = xyzz_add_quad(xyzz_add_quad(in[first], in[first + 1]), p_in[first + 1]);
        if (quad_role() == 0) out[node] = w;
    } else {
        Xyzz p = xyzz_double_quad(xyzz_add_quad(p_in[first], p_in[first + 1]));
        if (quad_role() == 0) out[nodes + node] = p;
    }
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

// bases[j * n + i] = 2^(c j) * bases[i] for j = 1 .. windows - 1, in affine form.
extern "C" __global__ void msm_precompute_shifted(Affine* bases, u64 n, u32 c, u32 windows) {
    for (u64 i = global_thread_index(); i < n; i += grid_thread_count()) {
        Xyzz p = xyzz_from_affine(bases[i]);
        for (u32 j = 1; j < windows; j++) {
            for (u32 k = 0; k < c; k++) p = xyzz_double(p);
            Affine a = xyzz_to_affine(p);
            bases[(u64)j * n + i] = a;
            p = xyzz_from_affine(a);
        }
    }
}
