// fhe_pbs.cu's key switch: by tiles of ciphertexts, on the int8 tensor cores, by key columns.
#pragma once
#include "fhe_integer.cuh"
// ---------------------------------------------------------------------------------------
// Key switch: out = (0, ..., 0, b) - sum_{i, j} d_{i,j} KSK(i, j), keyswitch.rs's order-free
// integer sum. The key's rows of one input coefficient run from the least significant level
// to the most significant (tfhe-rs's layout), which is the order next_digit yields the
// digits in: digit j below is the j-th one out, of level l - j. A block computes KS_THREADS output words for TILE ciphertexts over a range of
// input coefficients (its split), staging the digits of KS_CHUNK coefficients at a time in
// shared memory as [coefficient][level][ciphertext] (a thread reads the TILE digits of one
// key row with 128-bit broadcast loads), and adds its partial sum with 64-bit atomics into
// the zeroed output (sums mod 2^64 do not depend on the order, so the result is bit-exact).
// Each key word read from global memory serves TILE ciphertexts: TILE = 32 for batches,
// 8 for a few ciphertexts. The grid is flattened:
// block = (split * ct_blocks + ct_block) * word_blocks + word_block.
//
// NARROW (base log at most 31, so |digit| <= 2^30 fits an int): with the key word
// k = k_hi 2^32 + k_lo and s = k_lo read as a signed int (k_lo - 2^32 t, t its top bit),
// d k = d s + 2^32 d (k_hi + t) mod 2^64, so each product is one signed 32 x 32 -> 64
// multiply-add into a 64-bit sum and one 32-bit multiply-add into a high word (two integer
// multiplies instead of the three of a 64 x 64 product), and the digits take 4 bytes.

#define KS_THREADS 128
#define KS_CHUNK 16

// a b + c mod 2^64 for ints a, b: one 32 x 32 -> 64 multiply-add.
__device__ __forceinline__ u64 mad_wide_s32(int a, int b, u64 c) {
    u64 d;
    asm("mad.wide.s32 %0, %1, %2, %3;" : "=l"(d) : "r"(a), "r"(b), "l"(c));
    return d;
}

template <int TILE, bool NARROW>
__device__ __forceinline__ void keyswitch_tile(const FheShape &s, const u64 *__restrict__ input,
                                               const u64 *__restrict__ ksk,
                                               u64 *__restrict__ output, u32 count,
                                               u32 word_blocks, u32 ct_blocks,
                                               u32 inputs_per_split) {
    typedef typename Select<NARROW, int, i64>::T Digit;  // as staged in shared memory
    typedef typename Select<NARROW, int4, longlong2>::T Digits16;  // 16 bytes of them
    extern __shared__ longlong2 ks_shared[];  // [KS_CHUNK][levels][TILE] Digit
    Digit *ks_digits = (Digit *)ks_shared;
    const u32 in_dim = s.glwe_dimension * s.polynomial_size;
    const u32 out_width = s.lwe_dimension + 1;
    const u32 levels = s.ks_level_count;
    const u32 b = s.ks_base_log;
    const u32 dropped = 64 - b * levels;
    const u32 word_block = blockIdx.x % word_blocks;
    const u32 rest = blockIdx.x / word_blocks;
    const u32 ct_block = rest % ct_blocks;
    const u32 split = rest / ct_blocks;
    const u32 w = word_block * KS_THREADS + threadIdx.x;
    const u32 ct0 = ct_block * TILE;
    const u32 i_begin = split * inputs_per_split;
    const u32 i_end = min(in_dim, i_begin + inputs_per_split);

    u64 acc[TILE];  // NARROW: the signed low products
    u32 acc_hi[NARROW ? TILE : 1];
#pragma unroll
    for (int t = 0; t < TILE; t++) acc[t] = 0;
#pragma unroll
    for (int t = 0; t < (NARROW ? TILE : 1); t++) acc_hi[t] = 0;

    for (u32 i0 = i_begin; i0 < i_end; i0 += KS_CHUNK) {
        const u32 chunk = min((u32)KS_CHUNK, i_end - i0);
        __syncthreads();  // the previous chunk's digits are consumed
        for (u32 e = threadIdx.x; e < TILE * chunk; e += KS_THREADS) {
            const u32 t = e / chunk;
            const u32 ii = e % chunk;
            const u32 ct = ct0 + t;
            const u64 x = ct < count ? input[(u64)ct * (in_dim + 1) + i0 + ii] : 0;
            u64 state = decomposition_state(x, dropped);
            for (u32 j = 0; j < levels; j++) {
                ks_digits[(ii * levels + j) * TILE + t] = (Digit)next_digit(state, b);
            }
        }
        __syncthreads();
        if (w < out_width) {
            const u64 *key = ksk + (u64)i0 * levels * out_width + w;
            const u32 rows = chunk * levels;
#pragma unroll 4
            for (u32 f = 0; f < rows; f++) {
                const u64 kv = __ldg(key + (u64)f * out_width);
                const Digits16 *d = (const Digits16 *)(ks_digits + f * TILE);
                if constexpr (NARROW) {
                    const int k_lo = (int)(u32)kv;
                    const u32 k_hi = (u32)(kv >> 32) + ((u32)kv >> 31);
#pragma unroll
                    for (int t4 = 0; t4 < TILE / 4; t4++) {
                        const int4 dd = d[t4];
                        const int ds[4] = {dd.x, dd.y, dd.z, dd.w};
#pragma unroll
                        for (int q = 0; q < 4; q++) {
                            acc[4 * t4 + q] = mad_wide_s32(ds[q], k_lo, acc[4 * t4 + q]);
                            acc_hi[4 * t4 + q] += (u32)ds[q] * k_hi;
                        }
                    }
                } else {
#pragma unroll
                    for (int t2 = 0; t2 < TILE / 2; t2++) {
                        const longlong2 dd = d[t2];
                        acc[2 * t2] += (u64)dd.x * kv;
                        acc[2 * t2 + 1] += (u64)dd.y * kv;
                    }
                }
            }
        }
    }
    if (w < out_width) {
#pragma unroll
        for (int t = 0; t < TILE; t++) {
            const u32 ct = ct0 + t;
            if (ct >= count) continue;
            u64 sum = acc[t];
            if constexpr (NARROW) sum += (u64)acc_hi[t] << 32;
            u64 v = 0ull - sum;
            if (split == 0 && w == out_width - 1) v += input[(u64)ct * (in_dim + 1) + in_dim];
            atomicAdd((unsigned long long *)&output[(u64)ct * out_width + w], v);
        }
    }
}

#define FHE_DEFINE_KEYSWITCH(NAME, TILE, NARROW)                                             \
    extern "C" __global__ void __launch_bounds__(KS_THREADS)                                \
        NAME(const FheShape s, const u64 *__restrict__ input, const u64 *__restrict__ ksk,   \
             u64 *__restrict__ output, u32 count, u32 word_blocks, u32 ct_blocks,           \
             u32 inputs_per_split) {                                                         \
        keyswitch_tile<TILE, NARROW>(s, input, ksk, output, count, word_blocks, ct_blocks,   \
                                     inputs_per_split);                                      \
    }

FHE_DEFINE_KEYSWITCH(fhe_keyswitch_t8, 8, false)
FHE_DEFINE_KEYSWITCH(fhe_keyswitch_t32, 32, false)
FHE_DEFINE_KEYSWITCH(fhe_keyswitch_narrow_t8, 8, true)
FHE_DEFINE_KEYSWITCH(fhe_keyswitch_narrow_t32, 32, true)

// ---------------------------------------------------------------------------------------
// Key switch of batches on the int8 tensor cores: the sum over key rows f = i l + j of
// d_f KSK(f) is a matrix product of the digits D (ciphertexts x rows, |d| <= 2^(b-1) fits an
// int8 when b <= 7) with the key. Split into its eight bytes, KSK(f)[w] = sum_t 2^(8t)
// K_t(f)[w], each byte a u8, so sum_f d_f KSK(f)[w] = sum_t 2^(8t) (sum_f d_f K_t(f)[w]),
// whose inner sums are exact int32s while rows 2^(b-1) 255 < 2^31 (the host checks). One
// product D x K' with K' = [w][t] columns (word-major, the 8 bytes of a word adjacent) gives
// every inner sum; each 8-column tile of it is one output word, combined mod 2^64 across the
// four lanes that hold its columns.
//
// fhe_keyswitch_digits writes D as int8 rows of `rows` bytes (the same digit order as the
// key's rows); fhe_keyswitch_mma multiplies tiles of KSM_M ciphertexts by KSM_N key columns
// (KSM_N / 8 words) over all rows, KSM_K rows at a time double-buffered in shared memory,
// with mma.sync m16n8k32 (s8 x u8 -> s32). Eight warps, each a 64 x 32 tile: four m16 by four
// n8 fragments. D's row count is padded to KSM_M and K' to KSM_N columns, both with zeros.

#define KSM_M 128
#define KSM_N 128
#define KSM_K 64
#define KSM_THREADS 256
// Bytes per tile row in shared memory: KSM_K plus 16, so that the eight rows one fragment
// load touches fall on distinct banks.
#define KSM_STRIDE (KSM_K + 16)

// D[ct][i l + j] = digit j (the j-th out of next_digit, level l - j: the key's row order) of
// input coefficient i of ciphertext ct, for ct < count.
extern "C" __global__ void fhe_keyswitch_digits(const FheShape s, const u64 *__restrict__ input,
                                                signed char *__restrict__ digits, u32 count) {
    const u32 in_dim = s.glwe_dimension * s.polynomial_size;
    const u32 levels = s.ks_level_count;
    const u32 b = s.ks_base_log;
    const u32 dropped = 64 - b * levels;
    const u64 total = (u64)count * in_dim;
    for (u64 idx = global_thread_index(); idx < total; idx += grid_thread_count()) {
        const u64 ct = idx / in_dim;
        const u32 i = (u32)(idx % in_dim);
        u64 state = decomposition_state(input[ct * (in_dim + 1) + i], dropped);
        signed char *out = digits + ct * in_dim * levels + (u64)i * levels;
        for (u32 j = 0; j < levels; j++) out[j] = (signed char)next_digit(state, b);
    }
}

// cp.async and the int8 mma need sm_80; the host loads these kernels only there.
__device__ __forceinline__ void cp_async_16(void *shared, const void *global) {
#if __CUDA_ARCH__ >= 800
    const u32 address = (u32)__cvta_generic_to_shared(shared);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(address), "l"(global));
#endif
}

// c += a b for an m16n8k32 tile: a the signed digits, b the key bytes.
__device__ __forceinline__ void mma_s8_u8(int *c, const u32 *a, const u32 *b) {
#if __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// Grid: column_blocks (K' columns / KSM_N) times padded ciphertexts / KSM_M blocks, those of
// one ciphertext tile consecutive. `rows` = k N l, a multiple of KSM_K; `key_bytes` holds K'
// as [column][row] bytes.
extern "C" __global__ void __launch_bounds__(KSM_THREADS)
    fhe_keyswitch_mma(const signed char *__restrict__ digits,
                      const unsigned char *__restrict__ key_bytes,
                      const u64 *__restrict__ input, u64 *__restrict__ output, u32 count,
                      u32 in_dim, u32 out_width, u32 rows, u32 column_blocks) {
    __shared__ __align__(16) unsigned char a_tile[2][KSM_M * KSM_STRIDE];
    __shared__ __align__(16) unsigned char b_tile[2][KSM_N * KSM_STRIDE];
    const u32 m0 = blockIdx.x / column_blocks * KSM_M;
    const u32 n0 = blockIdx.x % column_blocks * KSM_N;
    const u32 warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const u32 g = lane / 4, t = lane % 4;  // the fragment layouts' group and thread in group
    const u32 warp_m = (warp % 2) * 64, warp_n = (warp / 2) * 32;

    // One stage: KSM_K rows of the block's KSM_M digit rows and KSM_N key columns, 16 bytes
    // per copy.
    auto load = [&](u32 stage, u32 row0) {
        for (u32 c = threadIdx.x; c < KSM_M * KSM_K / 16; c += KSM_THREADS) {
            const u32 r = c / (KSM_K / 16), part = (c % (KSM_K / 16)) * 16;
            cp_async_16(&a_tile[stage][r * KSM_STRIDE + part],
                        digits + (u64)(m0 + r) * rows + row0 + part);
            cp_async_16(&b_tile[stage][r * KSM_STRIDE + part],
                        key_bytes + (u64)(n0 + r) * rows + row0 + part);
        }
#if __CUDA_ARCH__ >= 800
        asm volatile("cp.async.commit_group;");
#endif
    };

    int acc[4][4][4];
#pragma unroll
    for (int mt = 0; mt < 4; mt++)
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[mt][nt][e] = 0;

    const u32 stages = rows / KSM_K;
    load(0, 0);
    for (u32 st = 0; st < stages; st++) {
#if __CUDA_ARCH__ >= 800
        if (st + 1 < stages) {
            load((st + 1) % 2, (st + 1) * KSM_K);
            asm volatile("cp.async.wait_group 1;");
        } else {
            asm volatile("cp.async.wait_group 0;");
        }
#endif
        __syncthreads();
        const unsigned char *a = a_tile[st % 2];
        const unsigned char *b = b_tile[st % 2];
#pragma unroll
        for (u32 kk = 0; kk < KSM_K; kk += 32) {
            u32 af[4][4], bf[4][2];
#pragma unroll
            for (int mt = 0; mt < 4; mt++) {
                const unsigned char *row = a + (warp_m + mt * 16 + g) * KSM_STRIDE + kk + 4 * t;
                af[mt][0] = *(const u32 *)row;
                af[mt][1] = *(const u32 *)(row + 8 * KSM_STRIDE);
                af[mt][2] = *(const u32 *)(row + 16);
                af[mt][3] = *(const u32 *)(row + 8 * KSM_STRIDE + 16);
            }
#pragma unroll
            for (int nt = 0; nt < 4; nt++) {
                const unsigned char *col = b + (warp_n + nt * 8 + g) * KSM_STRIDE + kk + 4 * t;
                bf[nt][0] = *(const u32 *)col;
                bf[nt][1] = *(const u32 *)(col + 16);
            }
#pragma unroll
            for (int mt = 0; mt < 4; mt++)
#pragma unroll
                for (int nt = 0; nt < 4; nt++) mma_s8_u8(acc[mt][nt], af[mt], bf[nt]);
        }
        __syncthreads();  // the next load overwrites this stage
    }

    // Lane t holds bytes 2t and 2t + 1 of its word for rows g and g + 8 of each fragment.
#pragma unroll
    for (int mt = 0; mt < 4; mt++) {
#pragma unroll
        for (int nt = 0; nt < 4; nt++) {
            const u32 w = (n0 + warp_n + nt * 8) / 8;
#pragma unroll
            for (int half = 0; half < 2; half++) {
                u64 sum = ((u64)(i64)acc[mt][nt][2 * half] << (16 * t)) +
                          ((u64)(i64)acc[mt][nt][2 * half + 1] << (16 * t + 8));
                sum += __shfl_xor_sync(0xffffffffu, sum, 1);
                sum += __shfl_xor_sync(0xffffffffu, sum, 2);
                const u32 ct = m0 + warp_m + mt * 16 + g + 8 * half;
                if (t == 0 && ct < count && w < out_width) {
                    u64 v = 0ull - sum;
                    if (w == out_width - 1) v += input[(u64)ct * (in_dim + 1) + in_dim];
                    output[(u64)ct * out_width + w] = v;
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Key switch of a few ciphertexts by key columns: from the digits of fhe_keyswitch_digits and
// the byte-split key K' above, in which output word w's 8 columns (its bytes t = 0 to 7, `rows`
// bytes each) lie one after the other. Block b computes words b, b + grid, ... of every
// ciphertext: each thread takes 16 rows at a time, the 16 bytes of each of the 8 columns and
// the 16 digits of each ciphertext, 4 dp4a (int8 digit times u8 key byte) per column, exact
// int32 sums as in the tensor-core kernel, folded into one u64 partial sum per ciphertext
// (sum_t 2^(8t) s_t mod 2^64); the block then adds its threads' partial sums. Each output
// word is written once: no atomics and no zeroed output. The digits (`count rows` bytes) are
// staged in shared memory once per block, and each key byte is read once per call.

#define KSC_THREADS 256

// a . b + c over four byte lanes, a's bytes signed and b's unsigned.
__device__ __forceinline__ int dp4a_s8_u8(int a, u32 b, int c) {
    int d;
    asm("dp4a.s32.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

// T: the most ciphertexts (count <= T); shared memory: count rows digit bytes, then T
// KSC_THREADS u64 partial sums.
template <int T>
__device__ __forceinline__ void keyswitch_columns(const u64 *__restrict__ input,
                                                  const signed char *__restrict__ digits,
                                                  const unsigned char *__restrict__ key_bytes,
                                                  u64 *__restrict__ output, u32 count,
                                                  u32 in_dim, u32 out_width, u32 rows) {
    extern __shared__ int4 ksc_shared[];
    const u32 chunks = rows / 16;  // of 16 rows
    int4 *const digits_s = ksc_shared;                             // [count][chunks]
    u64 *const partial = (u64 *)(digits_s + (u64)count * chunks);  // [T][KSC_THREADS]
    const u32 warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int4 *digit_chunks = (const int4 *)digits;
    for (u32 c = threadIdx.x; c < count * chunks; c += KSC_THREADS) {
        digits_s[c] = digit_chunks[c];
    }
    __syncthreads();
    for (u32 w = blockIdx.x; w < out_width; w += gridDim.x) {
        const uint4 *column = (const uint4 *)(key_bytes + (u64)w * 8 * rows);
        u64 acc[T];
#pragma unroll
        for (int ct = 0; ct < T; ct++) acc[ct] = 0;
#pragma unroll 2
        for (u32 c = threadIdx.x; c < chunks; c += KSC_THREADS) {
            uint4 k[8];  // the 8 columns' bytes of rows 16c to 16c + 15, read once per call
#pragma unroll
            for (int t = 0; t < 8; t++) k[t] = __ldcs(column + t * chunks + c);
#pragma unroll
            for (int ct = 0; ct < T; ct++) {
                if (ct >= (int)count) break;
                const int4 d = digits_s[ct * chunks + c];
#pragma unroll
                for (int t = 0; t < 8; t++) {
                    int s = dp4a_s8_u8(d.x, k[t].x, 0);
                    s = dp4a_s8_u8(d.y, k[t].y, s);
                    s = dp4a_s8_u8(d.z, k[t].z, s);
                    s = dp4a_s8_u8(d.w, k[t].w, s);
                    acc[ct] += (u64)(i64)s << (8 * t);
                }
            }
        }
#pragma unroll
        for (int ct = 0; ct < T; ct++) partial[ct * KSC_THREADS + threadIdx.x] = acc[ct];
        __syncthreads();
        for (u32 ct = warp; ct < count; ct += KSC_THREADS / 32) {
            u64 sum = 0;
            for (u32 j = lane; j < KSC_THREADS; j += 32) sum += partial[ct * KSC_THREADS + j];
#pragma unroll
            for (int m = 16; m > 0; m /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, m);
            if (lane == 0) {
                u64 v = 0ull - sum;
                if (w == out_width - 1) v += input[(u64)ct * (in_dim + 1) + in_dim];
                output[(u64)ct * out_width + w] = v;
            }
        }
        __syncthreads();  // the partial sums are read before the next word's are stored
    }
}

#define FHE_DEFINE_KEYSWITCH_COLUMNS(T)                                                       \
    extern "C" __global__ void __launch_bounds__(KSC_THREADS) fhe_keyswitch_columns_t##T(    \
        const u64 *__restrict__ input, const signed char *__restrict__ digits,                \
        const unsigned char *__restrict__ key_bytes, u64 *__restrict__ output, u32 count,     \
        u32 in_dim, u32 out_width, u32 rows) {                                                \
        keyswitch_columns<T>(input, digits, key_bytes, output, count, in_dim, out_width,      \
                             rows);                                                           \
    }

FHE_DEFINE_KEYSWITCH_COLUMNS(1)
FHE_DEFINE_KEYSWITCH_COLUMNS(4)
FHE_DEFINE_KEYSWITCH_COLUMNS(16)

