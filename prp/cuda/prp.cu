// SwapOrNot, Sometimes-Recurse and the multinomial sampler (SPEC.md, section "prp"), for
// ChaCha8, 12 and 20 (kernel names end in _8, _12, _20).
//
// prp_forward_R / prp_inverse_R     values[i] = P(values[i]) or P^-1(values[i]), i < count,
//                                   one ChaCha block per value per round (random access).
// swap_bits_R                       swap-bit tables of consecutive rounds of one stage.
// swap_pairs                        one round applied to a whole-domain table (a gather).
// small_rounds_R                    a run of rounds over domains of at most SMALL_DOMAIN values,
//                                   in shared memory, by one thread block.
// small_tables_R                    whole small-domain tables of several permutations, a block each.
// look_up                           values[i] = table[values[i]].
// identity                          table[i] = i.
// pmns_split_R / pmns_children      one level of the sampler's tree.
#include "permutation.cuh"

#define TAG_KEYS 0x4B455953u
#define TAG_PMNS 0x504D4E53u

// Whole-domain tables: rounds over domains up to SMALL_DOMAIN run in shared memory, in blocks
// of SMALL_THREADS threads, SMALL_OPS rounds' swap bits computed at a time.
#define SMALL_DOMAIN 32768u
#define SMALL_THREADS 1024u
#define SMALL_BLOCKS_PER_ROUND (SMALL_DOMAIN / 512u)
#define SMALL_OPS (SMALL_THREADS / SMALL_BLOCKS_PER_ROUND)

// One round over a small domain (SmallRound in prp/src/cuda/evaluate.rs).
struct SmallRound {
    u32 domain;
    u32 round_key;
    u32 nonce1;  // (round << 8) | stage
    u32 unused;
};

// Forward: stage s, then s + 1 while the value is below its domain.
template <int R>
__device__ void prp_forward(const ChaChaKey& key, const Stage* stages, u32 stage_count,
                            const u64* round_keys, u64* values, u64 count) {
    for (u64 i = global_thread_index(); i < count; i += grid_thread_count()) {
        u64 x = values[i];
        for (u32 s = 0; s < stage_count; ++s) {
            x = stage_forward<R>(key, stages[s], round_keys, x);
            if (s + 1 == stage_count || x >= stages[s + 1].domain) break;
        }
        values[i] = x;
    }
}

// Inverse: from the last stage whose domain holds the value, down to stage 0.
template <int R>
__device__ void prp_inverse(const ChaChaKey& key, const Stage* stages, u32 stage_count,
                            const u64* round_keys, u64* values, u64 count) {
    for (u64 i = global_thread_index(); i < count; i += grid_thread_count()) {
        u64 x = values[i];
        u32 reached = 0;
        while (reached < stage_count && x < stages[reached].domain) ++reached;
        for (u32 s = reached; s-- > 0;) x = stage_inverse<R>(key, stages[s], round_keys, x);
        values[i] = x;
    }
}

// Swap bits of rounds first_round .. first_round + rounds of stage `stage`: round
// first_round + r fills table[r * 16 * blocks_per_round ..] with blocks_per_round blocks, bit
// Xh of that row being the swap bit of Xh.
template <int R>
__device__ void swap_bits(const ChaChaKey& key, u32 stage, u32 first_round, u32 rounds,
                          u64 blocks_per_round, uint4* table) {
    const u64 total = blocks_per_round * rounds;
    for (u64 i = global_thread_index(); i < total; i += grid_thread_count()) {
        const u32 r = (u32)(i / blocks_per_round);
        const u64 index = i - (u64)r * blocks_per_round;
        u32 w[16];
        chacha_block<R>(key, (u32)index, (u32)(index >> 32), ((first_round + r) << 8) | stage,
                        TAG_SWAP, w);
#pragma unroll
        for (int q = 0; q < 4; ++q)
            table[4 * i + q] = make_uint4(w[4 * q], w[4 * q + 1], w[4 * q + 2], w[4 * q + 3]);
    }
}

// One round with round key k over table[0 .. n), its swap bits at bits[row ..], as the gather
// table'[y] = table[pi(y)]: the pairs are mirror images within [0, k] and within [k + 1, n).
// Each thread takes PAIRS pairs, blockDim.x apart, and loads all of them before it swaps any,
// so that enough loads are in flight to keep the memory busy. (Loading a pair only when its
// bit is set made every load wait for the bit's: 256 ms for the 2^25 table below.)
template <int PAIRS>
__device__ void swap_pairs(const u32* __restrict__ bits, u64 k, u64 n, u32* table) {
    const u64 low_pairs = (k + 1) / 2;
    const u64 pairs = low_pairs + (n - k - 1) / 2;
    const u64 first = (u64)blockIdx.x * blockDim.x * PAIRS + threadIdx.x;
    u64 lower[PAIRS], upper[PAIRS];
    u32 a[PAIRS], b[PAIRS], word[PAIRS];
#pragma unroll
    for (int j = 0; j < PAIRS; ++j) {
        const u64 i = first + (u64)j * blockDim.x;
        const u64 high = i - low_pairs;
        lower[j] = i < low_pairs ? i : k + 1 + high;
        upper[j] = i < low_pairs ? k - i : n - 1 - high;
        if (i < pairs) {
            word[j] = __ldg(bits + (upper[j] >> 5));
            a[j] = table[lower[j]];
            b[j] = table[upper[j]];
        }
    }
#pragma unroll
    for (int j = 0; j < PAIRS; ++j) {
        const u64 i = first + (u64)j * blockDim.x;
        if (i < pairs && ((word[j] >> (upper[j] & 31)) & 1)) {
            table[lower[j]] = b[j];
            table[upper[j]] = a[j];
        }
    }
}

// Two pairs per thread: on an H200 a whole-domain table of 2^25 took 149 ms with one pair per
// thread, 136 ms with two, 151 ms with four and 330 ms with eight.
#define SWAP_PAIRS_PER_THREAD 2
extern "C" __global__ void swap_pairs(const u32* __restrict__ bits, u64 row, u64 k, u64 n,
                                      u32* table) {
    swap_pairs<SWAP_PAIRS_PER_THREAD>(bits + row, k, n, table);
}

// Rounds ops[0 .. count), in order, over table[0 .. domain) for domains of at most
// SMALL_DOMAIN values: one block of SMALL_THREADS threads keeps the table prefix in shared
// memory and computes the swap bits of SMALL_OPS rounds at a time. The table starts as the
// identity when `from_identity`, else from its values in memory. Dynamic shared memory:
// SMALL_DOMAIN * 4 + SMALL_OPS * SMALL_DOMAIN / 8 bytes.
template <int R>
__device__ void small_rounds(const ChaChaKey& key, const SmallRound* ops, u32 count, u32* table,
                             bool from_identity) {
    extern __shared__ u32 shared[];
    u32* values = shared;
    u32* bits = shared + SMALL_DOMAIN;
    u32 largest = 0;
    for (u32 i = 0; i < count; ++i) largest = max(largest, ops[i].domain);
    for (u32 i = threadIdx.x; i < largest; i += blockDim.x) values[i] = from_identity ? i : table[i];
    for (u32 first = 0; first < count; first += SMALL_OPS) {
        const u32 batch = min(SMALL_OPS, count - first);
        __syncthreads();
        {
            const u32 op = threadIdx.x / SMALL_BLOCKS_PER_ROUND;
            const u32 index = threadIdx.x % SMALL_BLOCKS_PER_ROUND;
            if (op < batch && index * 512 < ops[first + op].domain) {
                u32 w[16];
                chacha_block<R>(key, index, 0, ops[first + op].nonce1, TAG_SWAP, w);
                u32* row = bits + op * (SMALL_DOMAIN / 32) + index * 16;
#pragma unroll
                for (int j = 0; j < 16; ++j) row[j] = w[j];
            }
        }
        for (u32 op = 0; op < batch; ++op) {
            __syncthreads();
            const SmallRound round = ops[first + op];
            const u32* row = bits + op * (SMALL_DOMAIN / 32);
            const u32 k = round.round_key, n = round.domain;
            const u32 low_pairs = (k + 1) / 2;
            const u32 pairs = low_pairs + (n - k - 1) / 2;
            for (u32 i = threadIdx.x; i < pairs; i += blockDim.x) {
                const bool low = i < low_pairs;
                const u32 lower = low ? i : k + 1 + (i - low_pairs);
                const u32 upper = low ? k - i : n - 1 - (i - low_pairs);
                if ((row[upper >> 5] >> (upper & 31)) & 1) {
                    const u32 a = values[lower];
                    values[lower] = values[upper];
                    values[upper] = a;
                }
            }
        }
    }
    __syncthreads();
    for (u32 i = threadIdx.x; i < largest; i += blockDim.x) table[i] = values[i];
}

// table[i] = i for i < n: the identity a whole-domain table starts from.
extern "C" __global__ void identity(u32* table, u64 n) {
    for (u64 i = global_thread_index(); i < n; i += grid_thread_count()) table[i] = (u32)i;
}

// values[i] = table[values[i]] for i < count; values not below n (the table's length) stay.
extern "C" __global__ void look_up(const u32* __restrict__ table, u64 n, u64* values,
                                   u64 count) {
    for (u64 i = global_thread_index(); i < count; i += grid_thread_count()) {
        const u64 v = values[i];
        if (v < n) values[i] = __ldg(table + v);
    }
}

// Level `level` of the sampler's tree: node i < nodes holds counts[i] balls and sends to its
// left child as many as there are ones among the first counts[i] bits of the stream
// (key, [i, level, PMNS]); those are added into left[i] (zeroed by the host). Work item
// b < nodes * shares is share b % shares of node b / shares; the thread blocks of one node's
// shares split its ChaCha blocks between them.
template <int R>
__device__ void pmns_split(const ChaChaKey& key, u32 level, u64 nodes, u32 shares,
                           const u64* counts, u64* left) {
    __shared__ u64 warp_sums[32];
    for (u64 item = blockIdx.x; item < nodes * shares; item += gridDim.x) {
        const u64 node = item / shares;
        const u64 balls = counts[node];
        const u64 blocks = (balls + 511) / 512;
        u64 ones = 0;
        for (u64 j = (item % shares) * blockDim.x + threadIdx.x; j < blocks;
             j += (u64)shares * blockDim.x) {
            u32 w[16];
            chacha_block<R>(key, (u32)j, (u32)node, level, TAG_PMNS, w);
            const u64 rest = balls - 512 * j;  // bits of this block that count, if below 512
#pragma unroll
            for (u32 q = 0; q < 16; ++q) {
                const u64 bits = rest > 32 * q ? rest - 32 * q : 0;
                const u32 mask = bits >= 32 ? 0xffffffffu : (1u << bits) - 1;
                ones += __popc(w[q] & mask);
            }
        }
        for (int offset = 16; offset > 0; offset /= 2)
            ones += __shfl_down_sync(0xffffffffu, ones, offset);
        if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = ones;
        __syncthreads();
        if (threadIdx.x == 0) {
            u64 total = 0;
            for (u32 i = 0; i < blockDim.x / 32; ++i) total += warp_sums[i];
            if (total > 0) atomicAdd((unsigned long long*)(left + node), (unsigned long long)total);
        }
        __syncthreads();
    }
}

// The counts of level l + 1 from those of level l and their left shares.
extern "C" __global__ void pmns_children(const u64* counts, const u64* left, u64 nodes,
                                         u64* children) {
    for (u64 i = global_thread_index(); i < nodes; i += grid_thread_count()) {
        children[2 * i] = left[i];
        children[2 * i + 1] = counts[i] - left[i];
    }
}

#define PRP_KERNELS(R)                                                                           \
    extern "C" __global__ void prp_forward_##R(ChaChaKey key, const Stage* stages,             \
                                               u32 stage_count, const u64* round_keys,          \
                                               u64* values, u64 count) {                         \
        prp_forward<R>(key, stages, stage_count, round_keys, values, count);                    \
    }                                                                                            \
    extern "C" __global__ void prp_inverse_##R(ChaChaKey key, const Stage* stages,             \
                                               u32 stage_count, const u64* round_keys,          \
                                               u64* values, u64 count) {                         \
        prp_inverse<R>(key, stages, stage_count, round_keys, values, count);                    \
    }                                                                                            \
    extern "C" __global__ void swap_bits_##R(ChaChaKey key, u32 stage, u32 first_round,        \
                                             u32 rounds, u64 blocks_per_round, uint4* table) {  \
        swap_bits<R>(key, stage, first_round, rounds, blocks_per_round, table);                 \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(SMALL_THREADS)                                 \
        small_rounds_##R(ChaChaKey key, const SmallRound* ops, u32 count, u32* table) {         \
        small_rounds<R>(key, ops, count, table, false);                                          \
    }                                                                                            \
    /* Whole tables of several permutations of one domain, a thread block each: block b runs */ \
    /* ops[b count ..) under keys[b] on tables[b domain ..), from the identity. */              \
    extern "C" __global__ void __launch_bounds__(SMALL_THREADS)                                 \
        small_tables_##R(const ChaChaKey* keys, const SmallRound* ops, u32 count, u32 domain,    \
                         u32* tables) {                                                          \
        small_rounds<R>(keys[blockIdx.x], ops + (u64)blockIdx.x * count, count,                  \
                        tables + (u64)blockIdx.x * domain, true);                                \
    }                                                                                            \
    extern "C" __global__ void pmns_split_##R(ChaChaKey key, u32 level, u64 nodes, u32 shares, \
                                              const u64* counts, u64* left) {                    \
        pmns_split<R>(key, level, nodes, shares, counts, left);                                  \
    }

PRP_KERNELS(8)
PRP_KERNELS(12)
PRP_KERNELS(20)
