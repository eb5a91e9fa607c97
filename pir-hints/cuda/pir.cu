// PIR hint generation (SPEC.md, "pir-hints"): hint subsets by exact median selection,
// RMS24's gather and Plinko's scatter.
//
// Parities live on the device as EW = ceil(E / 4) little-endian words per hint (the last word
// zero-padded); the parts of several GPUs are XORed on one (pir_xor_words), which turns them
// back into E bytes per hint (pir_words_to_bytes) for the host. Entries are read from "rows": the
// entries of consecutive blocks, E bytes each, starting at entry `row_first`.
#include "chacha.cuh"

#define TAG_SLCT 0x534C4354u
#define TAG_OFFS 0x4F464653u
#define TAG_EXTR 0x45585452u

// What a hint's subset comes down to (pir-hints/src/cuda.rs: HintSummary).
struct HintSummary {
    u64 extra;   // the extra block e (main hints only)
    u32 cutoff;  // the value at index c/2 of the sorted select values
    u32 valid;   // 1 unless index c/2 - 1 holds the cutoff too
};

// The shape of the database rows a kernel reads: entries row_first .. row_first + row_count,
// E bytes each, EW words per parity (pir-hints/src/cuda.rs: RowShape).
struct RowShape {
    u64 row_first;
    u64 row_count;
    u32 entry_size;
    u32 words;
};

struct Rows {
    const u8* bytes;
    u64 row_first;
    u64 row_count;
    u32 entry_size;
    u32 words;
};

__device__ __forceinline__ Rows make_rows(const u8* bytes, const RowShape& shape) {
    Rows rows;
    rows.bytes = bytes;
    rows.row_first = shape.row_first;
    rows.row_count = shape.row_count;
    rows.entry_size = shape.entry_size;
    rows.words = shape.words;
    return rows;
}

// x mod d for a divisor d >= 1 with its reciprocal r = floor((2^64 - 1) / d): the quotient
// estimate is at most 2 below the true one.
__device__ __forceinline__ u64 mod_by(u64 x, u64 d, u64 r) {
    u64 q = __umul64hi(x, r);
    u64 rem = x - q * d;
    if (rem >= d) rem -= d;
    if (rem >= d) rem -= d;
    return rem;
}

// Word i (bytes 4i .. 4i + 4, zero past E) of the entry at `row` of the rows (row <
// rows.row_count).
__device__ __forceinline__ u32 row_word(const Rows& rows, u64 row, u32 i) {
    u64 start = row * rows.entry_size + 4ull * i;
    if ((rows.entry_size & 3) == 0) return __ldg((const u32*)(rows.bytes + start));
    u32 word = 0;
    for (u32 b = 0; b < 4 && 4 * i + b < rows.entry_size; ++b)
        word |= (u32)__ldg(rows.bytes + start + b) << (8 * b);
    return word;
}

// Word i of entry `index` (see row_word), or 0 if the rows do not hold it.
__device__ __forceinline__ u32 entry_word(const Rows& rows, u64 index, u32 i) {
    if (index < rows.row_first || index - rows.row_first >= rows.row_count) return 0;
    return row_word(rows, index - rows.row_first, i);
}

__device__ __forceinline__ void select_block(const ChaChaKey& ks, u64 hint, u64 k, u32 out[16]) {
    chacha_block<8>(ks, (u32)k, (u32)hint, (u32)(hint >> 32), TAG_SLCT, out);
}

#define SUBSET_THREADS 256

// Inclusive sum over the block's threads of `value` (SUBSET_THREADS threads); `warp_sums`
// holds SUBSET_THREADS / 32 entries of shared memory.
__device__ u32 block_inclusive_sum(u32 value, u32* warp_sums) {
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (u32 d = 1; d < 32; d <<= 1) {
        u32 other = __shfl_up_sync(0xffffffffu, value, d);
        if (lane >= d) value += other;
    }
    if (lane == 31) warp_sums[warp] = value;
    __syncthreads();
    if (warp == 0) {
        u32 total = lane < SUBSET_THREADS / 32 ? warp_sums[lane] : 0;
        for (u32 d = 1; d < 32; d <<= 1) {
            u32 other = __shfl_up_sync(0xffffffffu, total, d);
            if (lane >= d) total += other;
        }
        if (lane < SUBSET_THREADS / 32) warp_sums[lane] = total;
    }
    __syncthreads();
    u32 result = value + (warp > 0 ? warp_sums[warp - 1] : 0);
    __syncthreads();
    return result;
}

// Most select values kept in shared memory after the first radix pass: the c / 256 or so
// values in the median's bucket (about 167 at the RMS24 mainnet shape, c = 42,720).
#define SUBSET_CANDIDATES 1024

// The subset's select values whose bits under `mask` equal `prefix`, regenerated from ChaCha.
// Calls visit(value) for each, from each thread for its share of the c values.
template <class Visit>
__device__ __forceinline__ void for_each_select_value(const ChaChaKey& ks, u64 hint, u64 blocks,
                                                      u32 mask, u32 prefix, Visit visit) {
    const u64 groups = (blocks + 15) / 16;
    for (u64 k = threadIdx.x; k < groups; k += SUBSET_THREADS) {
        u32 v[16];
        select_block(ks, hint, k, v);
        const u64 valid_words = min((u64)16, blocks - 16 * k);
#pragma unroll
        for (int i = 0; i < 16; ++i)
            if (i < valid_words && (v[i] & mask) == prefix) visit(v[i]);
    }
}

// One block of SUBSET_THREADS threads per hint first + blockIdx.x (< first + count): the
// cutoff by exact selection over the c select values, validity, and for main hints the extra
// block, written to out[hint - base]. A radix pass on the top byte finds the median's bucket;
// if it holds at most SUBSET_CANDIDATES values (always, but for astronomically unlikely draws
// or c beyond about 2^17), a second pass gathers them into shared memory, where each thread
// ranks its candidates by counting; otherwise three more radix passes on the lower bytes
// finish the selection. Each pass regenerates the values from ChaCha. (Measured on an H100,
// RMS24 mainnet subsets: four radix passes, 4.6 s.)
extern "C" __global__ void __launch_bounds__(SUBSET_THREADS)
pir_subsets(ChaChaKey ks, u64 first, u64 count, u64 blocks, u64 main_hints, u64 base,
            HintSummary* out) {
    __shared__ u32 histogram[256];
    __shared__ u32 warp_sums[SUBSET_THREADS / 32];
    __shared__ u32 chosen_digit, chosen_rank;
    __shared__ u64 extra_block;
    __shared__ u32 candidates[SUBSET_CANDIDATES];
    __shared__ u32 candidate_count, selected_value, selected_valid;
    const u64 index = blockIdx.x;
    if (index >= count) return;
    const u64 hint = first + index;
    const u64 groups = (blocks + 15) / 16;

    u32 prefix = 0, mask = 0, rank = (u32)(blocks / 2);
    bool by_candidates = false;
    for (int shift = 24; shift >= 0 && !by_candidates; shift -= 8) {
        histogram[threadIdx.x] = 0;
        __syncthreads();
        for_each_select_value(ks, hint, blocks, mask, prefix, [&](u32 v) {
            atomicAdd(&histogram[(v >> shift) & 255], 1u);
        });
        __syncthreads();
        // Warp 0 finds the digit whose bucket holds rank `rank`: 8 buckets per lane.
        if (threadIdx.x < 32) {
            const u32 lane = threadIdx.x;
            u32 local = 0;
            for (u32 d = 0; d < 8; ++d) local += histogram[8 * lane + d];
            u32 inclusive = local;
            for (u32 d = 1; d < 32; d <<= 1) {
                u32 other = __shfl_up_sync(0xffffffffu, inclusive, d);
                if (lane >= d) inclusive += other;
            }
            u32 before = inclusive - local;
            if (before <= rank && rank < inclusive) {
                u32 r = rank - before, d = 8 * lane;
                while (r >= histogram[d]) r -= histogram[d++];
                chosen_digit = d;
                chosen_rank = r;
            }
        }
        __syncthreads();
        prefix |= chosen_digit << shift;
        mask |= 255u << shift;
        rank = chosen_rank;
        by_candidates = shift > 0 && histogram[chosen_digit] <= SUBSET_CANDIDATES;
        __syncthreads();
    }
    if (by_candidates) {
        // The bucket's values, then the one with `rank` smaller or equal values before it in
        // sorted order: v with less(v) <= rank < less(v) + equal(v); the hint is valid when
        // the cutoff is the first of its equal values, less(v) = rank.
        if (threadIdx.x == 0) candidate_count = 0;
        __syncthreads();
        for_each_select_value(ks, hint, blocks, mask, prefix, [&](u32 v) {
            candidates[atomicAdd(&candidate_count, 1u)] = v;
        });
        __syncthreads();
        const u32 n = candidate_count;
        for (u32 j = threadIdx.x; j < n; j += SUBSET_THREADS) {
            const u32 v = candidates[j];
            u32 less = 0, equal = 0;
            for (u32 m = 0; m < n; ++m) {
                less += candidates[m] < v;
                equal += candidates[m] == v;
            }
            if (less <= rank && rank < less + equal) {
                selected_value = v;  // every such j holds the same value
                selected_valid = less == rank;
            }
        }
        __syncthreads();
        prefix = selected_value;
        rank = selected_valid ? 0 : 1;
    }
    const u32 cutoff = prefix;
    const bool valid = rank == 0;

    u64 extra = 0;
    if (valid && hint < main_hints) {
        // Thread t counts the unselected blocks in its share of groups; the thread whose share
        // holds the u-th one finds it.
        const u64 share = (groups + SUBSET_THREADS - 1) / SUBSET_THREADS;
        const u64 k0 = threadIdx.x * share, k1 = min(groups, k0 + share);
        u32 mine = 0;
        for (u64 k = k0; k < k1; ++k) {
            u32 v[16];
            select_block(ks, hint, k, v);
            const u64 valid_words = min((u64)16, blocks - 16 * k);
#pragma unroll
            for (int i = 0; i < 16; ++i) mine += (i < valid_words && v[i] >= cutoff);
        }
        u32 w[16];
        chacha_block<8>(ks, 0, (u32)hint, (u32)(hint >> 32), TAG_EXTR, w);
        const u64 u = (((u64)w[1] << 32) | w[0]) % (blocks / 2);
        const u32 inclusive = block_inclusive_sum(mine, warp_sums);
        const u32 before = inclusive - mine;
        if (before <= u && u < inclusive) {
            u32 r = (u32)(u - before);
            for (u64 k = k0; k < k1; ++k) {
                u32 v[16];
                select_block(ks, hint, k, v);
                const u64 valid_words = min((u64)16, blocks - 16 * k);
                for (int i = 0; i < valid_words; ++i) {
                    if (v[i] >= cutoff) {
                        if (r == 0) {
                            extra_block = 16 * k + i;
                            k = k1;
                            break;
                        }
                        --r;
                    }
                }
            }
        }
        __syncthreads();
        extra = extra_block;
    }
    if (threadIdx.x == 0) {
        HintSummary s;
        s.extra = extra;
        s.cutoff = cutoff;
        s.valid = valid ? 1u : 0u;
        out[hint - base] = s;
    }
}

// Rounds of the gather's load loop issued before their units are XORed (see rms24_gather).
#define GATHER_BATCH 4
// Threads per block of the gather (cuda.rs THREADS): a warp per hint, each warp with a queue of
// GATHER_QUEUE entries in shared memory, one for each candidate block of a round of ChaCha
// groups (32 lanes x 16 blocks).
#define GATHER_THREADS 128
#define GATHER_QUEUE 512
// A queued entry that goes into the second parity (a backup hint's unselected blocks).
#define GATHER_SECOND (1ull << 63)

// Unit u (bytes sizeof(Unit) u .. + sizeof(Unit)) of the entry at `row` of the rows (row <
// rows.row_count): 8-byte units when E % 8 == 0 (every entry then starts 8-byte aligned), words
// otherwise.
template <class Unit>
__device__ __forceinline__ Unit row_unit(const Rows& rows, u64 row, u32 u);

template <>
__device__ __forceinline__ u32 row_unit<u32>(const Rows& rows, u64 row, u32 u) {
    return row_word(rows, row, u);
}

template <>
__device__ __forceinline__ u64 row_unit<u64>(const Rows& rows, u64 row, u32 u) {
    return __ldg((const u64*)(rows.bytes + row * rows.entry_size + 8ull * u));
}

// RMS24, one warp per hint first + t (t < count): XORs the entries of the hint's blocks in
// block_lo .. block_hi into words `column .. column + 32` of its parities (fewer at the end).
// The warp takes the blocks 512 at a time: lane l computes the select values and offsets of
// the 16 blocks of ChaCha group k0 + l and queues, in its warp's shared-memory queue, the row
// of each entry its hint takes (entries outside the rows are zero and are not queued), flagged
// GATHER_SECOND for a backup hint's unselected blocks. Then the warp fetches the queued entries
// together: the pass's W units of an entry (Unit: 8 bytes when E % 8 == 0, else 4) go to a
// group of W lanes, and the lanes are split into G = 32 / W groups, group g loading unit
// l mod W of queue slot r G + g in round r, so that one load instruction reads G whole entries
// (contiguous bytes each: 6 40-byte entries with 8-byte units). The entries are random in the
// whole database, so a load waits for DRAM: GATHER_BATCH rounds are issued before any of their
// units is XORed, and every round but the last is full.
// `summaries` and `parity` are indexed by hint - base, `second` (backups) by hint - second_base.
template <class Unit>
__device__ __forceinline__ void rms24_gather(const ChaChaKey& ks, u64 first, u64 count,
                                             u64 main_hints, u64 base, u64 second_base,
                                             const HintSummary* summaries, const Rows& rows,
                                             u64 block_lo, u64 block_hi, u64 block_size,
                                             u64 block_size_reciprocal, u32 column, u32* parity,
                                             u32* second) {
    __shared__ u64 queues[GATHER_THREADS / 32][GATHER_QUEUE];
    constexpr u32 UNIT_WORDS = sizeof(Unit) / 4;
    const u64 t = ((u64)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const u32 lane = threadIdx.x & 31;
    u64* queue = queues[threadIdx.x / 32];
    if (t >= count) return;  // whole warps
    const u64 hint = first + t;
    const HintSummary s = summaries[hint - base];
    if (!s.valid) return;
    const bool is_main = hint < main_hints;
    const u32 pass_words = min(32u, rows.words - column);
    const u32 width = (pass_words + UNIT_WORDS - 1) / UNIT_WORDS;
    const u32 groups = 32 / width, group = lane / width, unit = lane % width;
    const u32 column_unit = column / UNIT_WORDS;
    const u32 lanes_below = (1u << lane) - 1;
    Unit acc = 0, acc2 = 0;

    for (u64 k0 = block_lo / 16; 16 * k0 < block_hi; k0 += 32) {
        const u64 k = k0 + lane;
        u32 v[16];
        select_block(ks, hint, k, v);
        u32 queued = 0;
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            u32 o[16];  // the offsets of blocks 16 k + 8 half .. + 8, two words each
            chacha_block<8>(ks, (u32)(2 * k + half), (u32)hint, (u32)(hint >> 32), TAG_OFFS, o);
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const int i = 8 * half + j;
                const u64 a = 16 * k + i;
                const bool selected = v[i] < s.cutoff;
                const bool taken = a >= block_lo && a < block_hi &&
                                   (selected || !is_main || a == s.extra);
                const u64 entry = a * block_size + mod_by(((u64)o[2 * j + 1] << 32) | o[2 * j],
                                                          block_size, block_size_reciprocal);
                const u64 row = entry - rows.row_first;  // wraps below the rows: not queued
                const bool queue_it = taken && row < rows.row_count;
                const u32 queueing = __ballot_sync(0xffffffffu, queue_it);
                if (queue_it)
                    queue[queued + __popc(queueing & lanes_below)] =
                        row | (selected || is_main ? 0 : GATHER_SECOND);
                queued += __popc(queueing);
            }
        }
        __syncwarp();
        for (u32 round = 0; round * groups < queued; round += GATHER_BATCH) {
            Unit units[GATHER_BATCH];
            bool to_second[GATHER_BATCH];
#pragma unroll
            for (int b = 0; b < GATHER_BATCH; ++b) {
                const u32 slot = (round + b) * groups + group;
                const bool mine = group < groups && slot < queued;
                const u64 queued_row = mine ? queue[slot] : 0;
                to_second[b] = (queued_row & GATHER_SECOND) != 0;
                units[b] = mine ? row_unit<Unit>(rows, queued_row & ~GATHER_SECOND,
                                                 column_unit + unit)
                                : 0;
            }
#pragma unroll
            for (int b = 0; b < GATHER_BATCH; ++b) {
                if (to_second[b]) acc2 ^= units[b]; else acc ^= units[b];
            }
        }
        __syncwarp();  // the queue is read before the next round of blocks overwrites it
    }
    // Fold the groups' partial units into group 0, which writes them.
    for (u32 g = 1; g < groups; ++g) {
        const u32 from = (unit + g * width) & 31;
        const Unit x = __shfl_sync(0xffffffffu, acc, from);
        const Unit y = __shfl_sync(0xffffffffu, acc2, from);
        if (group == 0) { acc ^= x; acc2 ^= y; }
    }
    if (group == 0) {
#pragma unroll
        for (u32 w = 0; w < UNIT_WORDS; ++w) {
            const u64 word = column + UNIT_WORDS * unit + w;
            if (word >= rows.words) break;
            parity[(hint - base) * rows.words + word] ^= (u32)(acc >> (32 * w));
            if (!is_main) second[(hint - second_base) * rows.words + word] ^= (u32)(acc2 >> (32 * w));
        }
    }
}

// rms24_gather with 8-byte units (E % 8 == 0) and with words.
#define RMS24_GATHER_KERNEL(NAME, UNIT)                                                       \
    extern "C" __global__ void __launch_bounds__(GATHER_THREADS)                              \
        NAME(ChaChaKey ks, u64 first, u64 count, u64 main_hints, u64 base, u64 second_base,   \
             const HintSummary* summaries, const u8* row_bytes, RowShape shape, u64 block_lo, \
             u64 block_hi, u64 block_size, u64 block_size_reciprocal, u32 column, u32* parity, \
             u32* second) {                                                                   \
        rms24_gather<UNIT>(ks, first, count, main_hints, base, second_base, summaries,        \
                           make_rows(row_bytes, shape), block_lo, block_hi, block_size,       \
                           block_size_reciprocal, column, parity, second);                    \
    }
RMS24_GATHER_KERNEL(pir_rms24_gather_wide, u64)
RMS24_GATHER_KERNEL(pir_rms24_gather, u32)

// Plinko, block `block`, one thread per PRP image z < m: hint j = P^-1(z) of the block's iPRF
// takes entry (block, b), b the bin whose range [boundaries[b], boundaries[b + 1]) holds z.
// The block's table and ranges are number `slot` of those given (m and bins + 1 values each).
// Each hint is touched by exactly one thread, so the parities need no atomics.
extern "C" __global__ void pir_plinko_scatter(ChaChaKey ks, u64 hints, u64 main_hints,
                                              const u32* inverse, const u64* boundaries, u64 bins,
                                              u64 slot, const HintSummary* summaries, u64 block,
                                              const u8* row_bytes, RowShape shape, u32* parity,
                                              u32* second) {
    const Rows rows = make_rows(row_bytes, shape);
    const u64 z = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (z >= hints) return;
    inverse += slot * hints;
    boundaries += slot * (bins + 1);
    const u64 hint = inverse[z];
    const HintSummary s = summaries[hint];
    if (!s.valid) return;
    u64 lo = 0, hi = bins;  // boundaries[lo] <= z < boundaries[hi]
    while (hi - lo > 1) {
        const u64 mid = (lo + hi) / 2;
        if (__ldg(boundaries + mid) <= z) lo = mid; else hi = mid;
    }
    const u64 entry = block * bins + lo;
    if (entry - rows.row_first >= rows.row_count) return;  // past n: reads as zero
    u32 v[16];
    select_block(ks, hint, block / 16, v);
    const bool selected = v[block % 16] < s.cutoff;
    u32* target;
    if (hint >= main_hints) {
        target = selected ? parity + hint * rows.words
                          : second + (hint - main_hints) * rows.words;
    } else if (selected || block == s.extra) {
        target = parity + hint * rows.words;
    } else {
        return;
    }
    for (u32 w = 0; w < rows.words; ++w) target[w] ^= entry_word(rows, entry, w);
}

// dst[offset + i] ^= src[i] for i < n: one GPU's parity words folded into another's.
extern "C" __global__ void pir_xor_words(u32* dst, u64 offset, const u32* src, u64 n) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (u64)gridDim.x * blockDim.x)
        dst[offset + i] ^= src[i];
}

// The parities of hints first .. first + count, `words` little-endian words each, as E =
// entry_size bytes each (the padding of the last word dropped) from out[0]: byte b of hint h
// is byte b % 4 of word b / 4.
extern "C" __global__ void pir_words_to_bytes(const u32* parity, u32 words, u32 entry_size,
                                              u64 first, u64 count, u8* out) {
    const u64 total = count * entry_size;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (u64)gridDim.x * blockDim.x) {
        const u64 h = i / entry_size;
        const u32 b = (u32)(i - h * entry_size);
        out[i] = (u8)(parity[(first + h) * words + b / 4] >> (8 * (b % 4)));
    }
}
