// TFHE key switch and programmable bootstrap on the 64-bit torus (fhe-pbs crate).
//
// Conventions are those of fhe-pbs/src (lib.rs): u64 torus with wrapping arithmetic, LWE =
// mask then body, GLWE = k masks then the body, key-switching key input-coefficient major with
// the least significant level first (tfhe-rs's layout), Fourier bootstrap key (level 1 first)
// = the CPU FourierBootstrapKey divided by N/2, with each
// polynomial's N/2 complex values permuted into bit-reversed order (see below) and each GGSW's
// polynomials stored column by column: (row, column c) at c (k + 1) l + row.
//
// The negacyclic FFT: a polynomial a of N coefficients becomes c_j = (a_j + i a_{j+M}) w^j,
// M = N/2, w = exp(i pi / N) (the twist, the same table as fft.rs), then an M-point complex
// DFT with the forward sign exp(-2 pi i / M) (rustfft's). Our forward transform is a radix-4
// (plus one radix-2 stage when log2 M is odd) decimation-in-frequency FFT in shared memory:
// natural order in, bit-reversed order out. The inverse is the matching decimation-in-time
// FFT: bit-reversed order in, natural order out. Pointwise products happen in bit-reversed
// order, which is why the host uploads the key permuted (and, within each 64 values,
// swizzled: see key_position). Precision is that of fft.rs: nothing
// is split, digits enter exactly, and each backward coefficient is rounded and reduced mod
// 2^64 by wrap_f64 (exactly, but for one residue where it is one unit off, far below the
// transform's own error there).
#include "common.cuh"

typedef long long i64;

// Select<C, A, B>::T is A when C, else B.
template <bool C, typename A, typename B>
struct Select {
    typedef A T;
};
template <typename A, typename B>
struct Select<false, A, B> {
    typedef B T;
};

// The dimensions every kernel reads, passed by value (FheShape in fhe-pbs/src/cuda.rs).
struct FheShape {
    u32 lwe_dimension;         // n (small key, bootstrap input)
    u32 glwe_dimension;        // k
    u32 polynomial_size;       // N
    u32 log2_polynomial_size;  // log2 N
    u32 base_log;              // PBS decomposition b
    u32 level_count;           // PBS decomposition l
    u32 ks_base_log;           // key-switch decomposition b
    u32 ks_level_count;        // key-switch decomposition l
    u32 centered_switch;       // 1: ModulusSwitchType::CenteredMeanNoiseReduction
};

// ---------------------------------------------------------------------------------------
// Integer stages (bit-exact with the CPU).

// round(x 2N / 2^64) mod 2N, as modswitch.rs: ((x >> (64 - log2_2n - 1)) + 1) >> 1.
__device__ __forceinline__ u32 modulus_switch(u64 x, u32 log2_2n) {
    u64 switched = ((x >> (63 - log2_2n)) + 1) >> 1;
    return (u32)(switched & ((1ull << log2_2n) - 1));
}

// The balanced decomposition state of decomposition.rs (tfhe-rs's init_decomposer_state): x
// rounded to V, the closest multiple of 2^dropped (ties up) keeping the top b l bits, then
// V - 2^(b l) when V > 2^(b l - 1), or V = 2^(b l - 1) with the rounding bit set.
__device__ __forceinline__ u64 decomposition_state(u64 x, u32 dropped) {
    if (dropped == 0) return x;
    const u64 rounding_bit = (x >> (dropped - 1)) & 1;
    const u64 value = ((x >> dropped) + rounding_bit) & (~0ull >> dropped);
    const u64 half = 1ull << (63 - dropped);
    const u64 balance = (u64)(value > half) | ((u64)(value == half) & rounding_bit);
    return value - (balance << (64 - dropped));
}

// The next digit from the least significant level up (decomposition.rs's next_digit, tfhe-rs's
// decompose_one_level): the state shifts arithmetically, and a tie takes -B/2 exactly when
// bit b - 1 of the remaining state is set.
__device__ __forceinline__ i64 next_digit(u64 &state, u32 b) {
    if (b >= 64) {  // one level of 64 bits: the digit is the value itself
        i64 digit = (i64)state;
        state = 0;
        return digit;
    }
    u64 mask = (1ull << b) - 1;
    u64 half = 1ull << (b - 1);
    u64 raw = state & mask;
    u64 rest = (u64)((i64)state >> b);
    u64 carry = (u64)(raw > half) | ((u64)(raw == half) & (rest >> (b - 1)) & 1ull);
    state = rest + carry;
    return (i64)(raw - (carry << b));
}

// (X^a p)[t] in Z[X]/(X^N + 1), a in [0, 2N) (polynomial.rs's multiply_by_monomial):
// +-p[(t - a) mod N], negated when a >= N xor the index wraps.
__device__ __forceinline__ u64 rotated(const u64 *p, u32 a, u32 t, u32 n_poly) {
    const u32 shift = a & (n_poly - 1);
    const bool negate = (a >= n_poly) != (t < shift);
    const u64 v = p[(t - shift) & (n_poly - 1)];
    return negate ? 0ull - v : v;
}

// The body of the LWE ciphertext `in` (n mask words, then the body) switched to
// 2N = 2^log2_2n as modswitch.rs switches it: rounded, after the centered-mean correction
// (tfhe-rs's lwe_ciphertext_centered_binary_modulus_switch) when `centered`. Every thread of
// the block calls it with the same arguments and gets the same value. Each warp sums the mask
// words' rounding errors on its own (lane-strided, then a butterfly of shuffles): no shared
// memory and no barrier, at about n / 32 words per thread once per bootstrap. Warps have 32
// threads, or 16 for the last warp of a block of 48 (the amortized kernel for k + 1 = 3 and
// N = 512).
__device__ u32 switched_body(const u64 *in, u32 n, u32 log2_2n, u32 centered) {
    if (!centered) return modulus_switch(in[n], log2_2n);
    const u32 lane = threadIdx.x % 32;
    const u32 lanes = min(32u, blockDim.x - (threadIdx.x - lane));
    const u32 dropped = 64 - log2_2n;
    u64 halves = 0;
    int halving_errors = 0;
    for (u32 t = lane; t < n; t += lanes) {
        const u64 a = in[t];
        const i64 error = (i64)(((u64)modulus_switch(a, log2_2n) << dropped) - a);
        const i64 half = error / 2;  // truncated toward zero, as tfhe-rs
        halves += (u64)half;
        halving_errors += (int)(2 * half - error);
    }
    const u32 members = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
    for (u32 offset = lanes / 2; offset > 0; offset /= 2) {
        halves += __shfl_xor_sync(members, halves, offset);
        halving_errors += __shfl_xor_sync(members, halving_errors, offset);
    }
    const u64 correction = halves - (u64)(i64)(halving_errors / 2) - (1ull << (dropped - 1));
    return modulus_switch(in[n] + correction, log2_2n);
}

// modswitch.rs's modulus_switch_lwe of `count` ciphertexts of n + 1 words, one block each:
// every mask word rounded to 2N = 2^log2_2n, the body by switched_body.
extern "C" __global__ void fhe_modulus_switch(const u64 *__restrict__ input,
                                              u32 *__restrict__ output, u32 n, u32 log2_2n,
                                              u32 centered) {
    const u64 *in = input + (u64)blockIdx.x * (n + 1);
    u32 *out = output + (u64)blockIdx.x * (n + 1);
    for (u32 t = threadIdx.x; t < n; t += blockDim.x) out[t] = modulus_switch(in[t], log2_2n);
    const u32 body = switched_body(in, n, log2_2n, centered);
    if (threadIdx.x == 0) out[n] = body;
}

// decomposition.rs's decompose_slice: out[j len + i] = digit j (level j + 1) of input[i].
extern "C" __global__ void fhe_decompose(const u64 *__restrict__ input, i64 *__restrict__ output,
                                         u64 len, u32 base_log, u32 level_count) {
    u32 dropped = 64 - base_log * level_count;
    for (u64 i = global_thread_index(); i < len; i += grid_thread_count()) {
        u64 state = decomposition_state(input[i], dropped);
        for (u32 j = level_count; j-- > 0;) {
            output[(u64)j * len + i] = next_digit(state, base_log);
        }
    }
}

// glwe.rs's sample_extract for `count` GLWE ciphertexts ((k + 1) N words each) into LWE
// ciphertexts of dimension k N.
extern "C" __global__ void fhe_sample_extract(const u64 *__restrict__ glwe, u64 *__restrict__ lwe,
                                              u32 count, u32 k, u32 n_poly) {
    u64 width = (u64)k * n_poly + 1;
    u64 total = (u64)count * width;
    for (u64 idx = global_thread_index(); idx < total; idx += grid_thread_count()) {
        u64 ct = idx / width;
        u64 w = idx % width;
        const u64 *g = glwe + ct * (u64)(k + 1) * n_poly;
        u64 v;
        if (w == (u64)k * n_poly) {
            v = g[(u64)k * n_poly];
        } else {
            u64 j = w / n_poly;
            u64 t = w % n_poly;
            v = t == 0 ? g[j * n_poly] : 0ull - g[j * n_poly + n_poly - t];
        }
        lwe[idx] = v;
    }
}

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

// ---------------------------------------------------------------------------------------
// Complex f64 arithmetic and the shared-memory FFTs.

__device__ __forceinline__ double2 cadd(double2 a, double2 b) {
    return make_double2(a.x + b.x, a.y + b.y);
}
__device__ __forceinline__ double2 csub(double2 a, double2 b) {
    return make_double2(a.x - b.x, a.y - b.y);
}
__device__ __forceinline__ double2 cmul(double2 a, double2 b) {
    return make_double2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
// acc + a b by multiply-adds (4 instead of 6 FP64 instructions, two roundings per part).
__device__ __forceinline__ double2 cmul_add(double2 acc, double2 a, double2 b) {
    return make_double2(fma(a.x, b.x, fma(-a.y, b.y, acc.x)), fma(a.x, b.y, fma(a.y, b.x, acc.y)));
}
// a * conj(b)
__device__ __forceinline__ double2 cmul_conj(double2 a, double2 b) {
    return make_double2(a.x * b.x + a.y * b.y, a.y * b.x - a.x * b.y);
}
// v times -i and times i.
__device__ __forceinline__ double2 times_minus_i(double2 v) { return make_double2(v.y, -v.x); }
__device__ __forceinline__ double2 times_i(double2 v) { return make_double2(-v.y, v.x); }

constexpr double ROOT_HALF = 0.70710678118654752440;  // 1 / sqrt(2)

// The shared-memory FFTs. Everything that fixes their shape is a compile-time constant (the
// blind-rotation kernels are instantiated per parameter set, see the end of this file):
// LOG2M = log2 M, the values per task E = 2^LOG_E, the block's THREADS and the number of
// polynomials POLYS, so that every loop below unrolls and all index arithmetic folds.
//
// A polynomial of M = 2^LOG2M complex values is laid out in shared memory so that no pass
// below has bank conflicts (slot, polynomial_slots). A pass does up to LOG_E radix-2 stages
// in registers on E values per thread-task, then one round trip through shared memory and
// one __syncthreads: LOG2M / LOG_E passes rounded up instead of one per radix-4 stage.
//
// The forward transform is a decimation in frequency (spans M, M/2, ..., 2): natural order
// in, bit-reversed order out; full passes of LOG_E stages first, the remaining LOG2M mod
// LOG_E stages last. The inverse (unnormalized, sign +) is the matching decimation in time
// (spans 2, 4, ..., M): bit-reversed in, natural out, the partial pass first. A full pass
// whose smallest half span is q = 2^Q_LOG gives task u the values at
// ((u >> Q_LOG) << (Q_LOG + LOG_E)) + (u mod q) + q e, e < E; a partial pass (q = 1) the E
// consecutive values from u E, in groups of 2^B. The twiddles live either in shared memory
// as tw[t] = exp(-2 pi i t / M), t < M/2, W_{2h}^r = tw[r << (LOG2M - 1 - log2 h)] (the
// amortized kernel), or in registers (TwiddleRegisters: the cluster kernel, which fills them
// from the staged table W_{2h}^r = tw[h - 1 + r], each stage's twiddles consecutive).

// The shared-memory slot of value i of a polynomial whose passes run tasks of 2^LOG_E values.
// Tasks of 8 (the cluster kernel, one task per thread): i with its low three bits xored with
// the next three, a permutation within each aligned block of 64 values, so the polynomial
// takes M slots and a warp's 256 positions stay one contiguous block (which the cluster kernel
// sends as it is). Tasks of 16 (the amortized kernel): padded, one empty slot after every 16
// values. Both give every warp-wide 16-byte access of every pass its ideal 4 wavefronts (a
// script checked every pass of every N from 512 to 8192 for both).
template <int LOG_E>
__device__ __forceinline__ u32 slot(u32 i) {
    static_assert(LOG_E == 3 || LOG_E == 4, "the layouts of 8- and 16-value tasks");
    return LOG_E == 3 ? i ^ ((i >> 3) & 7) : i + (i >> 4);
}

// The slots one polynomial of M values takes (slot).
template <int LOG_E>
__host__ __device__ constexpr u32 polynomial_slots(u32 m) {
    return LOG_E == 3 ? m : m + (m >> LOG_E);
}

// w exp(-i pi k / 8), k < 8: exact for k = 0 and 4, two roundings for k = 2 and 6, a complex
// product with constants for odd k.
__device__ __forceinline__ double2 times_root16(double2 w, int k) {
    constexpr double R = ROOT_HALF;
    constexpr double C1 = 0.92387953251128675613;  // cos(pi / 8)
    constexpr double S1 = 0.38268343236508977173;  // sin(pi / 8)
    switch (k) {
        case 0: return w;
        case 2: return make_double2((w.x + w.y) * R, (w.y - w.x) * R);
        case 4: return times_minus_i(w);
        case 6: return make_double2((w.y - w.x) * R, -(w.x + w.y) * R);
        case 1: return cmul(w, make_double2(C1, -S1));
        case 3: return cmul(w, make_double2(S1, -C1));
        case 5: return cmul(w, make_double2(-S1, -C1));
        default: return cmul(w, make_double2(-C1, -S1));
    }
}

// The twiddle of butterfly group mm of the stage with half span h = 2^(Q_LOG + hbit) for the
// task with j0, W_2h^(j0 + q mm) = W_2h^j0 exp(-i pi mm / 2^hbit): one read from shared memory
// (layout above) per stage, w0 = W_2h^j0 (read by the caller for mm = 0 and passed back in),
// times a constant root of unity (hbit <= 3).
template <int LOG2M, int Q_LOG>
__device__ __forceinline__ double2 stage_twiddle(const double2 *tw, u32 j0, int hbit, int mm,
                                                 double2 w0) {
    if (mm == 0) {
        return tw[j0 << (LOG2M - 1 - (Q_LOG + hbit))];
    }
    return times_root16(w0, mm << (3 - hbit));
}

// Every twiddle one thread's task needs in every pass of both transforms, in registers: for a
// block whose thread t always has task index u = t mod (M / E) (the cluster kernel), they do
// not change between CMuxes, and the forward and inverse passes with the same smallest half
// span q = 2^Q_LOG use the same ones. Such a block's passes are full (E = 8 values, three
// stages) and run as radix-8 butterflies (fft_stages below): w[Q_LOG][k - 1] = alpha^k,
// alpha = W_8q^(u mod q), k = 1..7; only the Q_LOG of actual passes are filled (and kept:
// constant indices only).
template <int LOG2M, int LOG_E>
struct TwiddleRegisters {
    double2 w[LOG2M][(1 << LOG_E) - 1];
};

// Fills `regs` for task u from the staged twiddles in shared memory (W_2h^r = tw[h - 1 + r],
// r < h; W_2h^(r + h) = -W_2h^r): the full passes of fft_forward from the one whose largest
// half span is 2^(HI - 1) on.
template <int LOG2M, int LOG_E, int HI = LOG2M>
__device__ __forceinline__ void load_twiddle_registers(TwiddleRegisters<LOG2M, LOG_E> &regs,
                                                       const double2 *tw_staged, u32 u) {
    static_assert(LOG_E == 3, "radix-8 passes");
    if constexpr (HI >= LOG_E) {
        constexpr int Q_LOG = HI - LOG_E;
        constexpr u32 H = 4u << Q_LOG;  // the half span of alpha's stage: alpha = W_2H^j0
        const u32 j0 = u & ((1u << Q_LOG) - 1);
#pragma unroll
        for (u32 k = 1; k < 8; k++) {
            const u32 r = j0 * k;  // < 7 q < 2 H
            const double2 w = tw_staged[H - 1 + (r & (H - 1))];
            regs.w[Q_LOG][k - 1] = r < H ? w : make_double2(-w.x, -w.y);
        }
        load_twiddle_registers<LOG2M, LOG_E, HI - LOG_E>(regs, tw_staged, u);
    }
}

__device__ __forceinline__ constexpr int bit_reversed3(int e) {
    return ((e & 1) << 2) | (e & 2) | (e >> 2);
}

// a + s c / sqrt 2 (s = +-1) by multiply-adds.
template <int S>
__device__ __forceinline__ double2 add_scaled_by_root_half(double2 a, double2 c) {
    constexpr double R = S * ROOT_HALF;
    return make_double2(fma(R, c.x, a.x), fma(R, c.y, a.y));
}

// The three stages of a full pass with the twiddles in registers (the cluster kernel), as one
// radix-8 butterfly. The radix-2 stages' twiddles W_8q^(j0 + q e), W_4q^(j0 + q (e mod 2))
// and W_2q^j0 are alpha, alpha^2 and alpha^4 (alpha = W_8q^j0) times constant roots of unity;
// each alpha factor is common to both values of every later butterfly, so the forward pass
// runs the butterflies with the constant roots only and then multiplies register e by
// alpha^bitrev3(e), and the inverse (the transpose) multiplies by the conjugates first: 7
// complex products per pass instead of 12. Of the constant roots, -i and i cost nothing, and
// W_8 = (1 - i) / sqrt 2 and W_8^3 = -(1 + i) / sqrt 2 cost two additions, their 1 / sqrt 2
// riding on the multiply-adds of the last stage (forward) or of their own (inverse).
// The radix-8 butterflies of a full pass with the constant roots only (see fft_stages below):
// forward (decimation in frequency) or inverse (in time).
template <bool INVERSE>
__device__ __forceinline__ void radix8_butterflies(double2 (&x)[8]) {
    if constexpr (INVERSE) {
#pragma unroll
        for (int e = 0; e < 8; e += 2) {  // half span q: twiddle 1
            const double2 a = x[e], c = x[e + 1];
            x[e] = cadd(a, c);
            x[e + 1] = csub(a, c);
        }
#pragma unroll
        for (int e = 0; e < 8; e += (e & 1) ? 3 : 1) {  // half span 2q: 1, conj(W_4) = i
            const double2 a = x[e], c = (e & 1) ? times_i(x[e + 2]) : x[e + 2];
            x[e] = cadd(a, c);
            x[e + 2] = csub(a, c);
        }
        // Half span 4q: 1, conj(W_8) = (1 + i) / sqrt 2, i, conj(W_8^3) = (i - 1) / sqrt 2.
        const double2 a0 = x[0], a1 = x[1], a2 = x[2], a3 = x[3];
        const double2 c0 = x[4], c1 = x[5], c2 = times_i(x[6]), c3 = x[7];
        const double2 r1 = make_double2(c1.x - c1.y, c1.x + c1.y);   // sqrt 2 conj(W_8) c1
        const double2 r3 = make_double2(-c3.x - c3.y, c3.x - c3.y);  // sqrt 2 conj(W_8^3) c3
        x[0] = cadd(a0, c0);
        x[4] = csub(a0, c0);
        x[1] = add_scaled_by_root_half<1>(a1, r1);
        x[5] = add_scaled_by_root_half<-1>(a1, r1);
        x[2] = cadd(a2, c2);
        x[6] = csub(a2, c2);
        x[3] = add_scaled_by_root_half<1>(a3, r3);
        x[7] = add_scaled_by_root_half<-1>(a3, r3);
    } else {
        // Half span 4q: 1, W_8 (times sqrt 2 here), -i, W_8^3 (times sqrt 2).
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const double2 a = x[e], c = x[e + 4], d = csub(a, c);
            x[e] = cadd(a, c);
            x[e + 4] = e == 0   ? d
                       : e == 1 ? make_double2(d.x + d.y, d.y - d.x)
                       : e == 2 ? times_minus_i(d)
                                : make_double2(d.y - d.x, -d.x - d.y);
        }
#pragma unroll
        for (int e = 0; e < 8; e += (e & 1) ? 3 : 1) {  // half span 2q: 1, W_4 = -i
            const double2 a = x[e], c = x[e + 2], d = csub(a, c);
            x[e] = cadd(a, c);
            x[e + 2] = (e & 1) ? times_minus_i(d) : d;
        }
        // Half span q: twiddle 1; registers 5 and 7 still carry the sqrt 2.
#pragma unroll
        for (int e = 0; e < 4; e += 2) {
            const double2 a = x[e], c = x[e + 1];
            x[e] = cadd(a, c);
            x[e + 1] = csub(a, c);
        }
#pragma unroll
        for (int e = 4; e < 8; e += 2) {
            const double2 a = x[e], c = x[e + 1];
            x[e] = add_scaled_by_root_half<1>(a, c);
            x[e + 1] = add_scaled_by_root_half<-1>(a, c);
        }
    }
}

template <int LOG2M, int LOG_E, int B, int Q_LOG, bool INVERSE>
__device__ __forceinline__ void fft_stages(double2 (&x)[1 << LOG_E], u32,
                                           const TwiddleRegisters<LOG2M, LOG_E> &tw) {
    static_assert(LOG_E == 3 && B == 3, "register twiddles serve full passes of 8 values");
    const double2 *alpha_powers = tw.w[Q_LOG];  // alpha^k at [k - 1]
    if constexpr (INVERSE) {
        if constexpr (Q_LOG > 0) {  // alpha = 1 for q = 1
#pragma unroll
            for (int e = 1; e < 8; e++) x[e] = cmul_conj(x[e], alpha_powers[bit_reversed3(e) - 1]);
        }
        radix8_butterflies<true>(x);
    } else {
        radix8_butterflies<false>(x);
        if constexpr (Q_LOG > 0) {
#pragma unroll
            for (int e = 1; e < 8; e++) x[e] = cmul(x[e], alpha_powers[bit_reversed3(e) - 1]);
        }
    }
}

// exp(i pi e / 16), e < 8: the twist of position u + (N/16) e over that of u.
__device__ __forceinline__ double2 twist_step(int e) {
    switch (e) {
        case 0: return make_double2(1.0, 0.0);
        case 1: return make_double2(0.98078528040323044913, 0.19509032201612826785);
        case 2: return make_double2(0.92387953251128675613, 0.38268343236508977173);
        case 3: return make_double2(0.83146961230254523708, 0.55557023301960222474);
        case 4: return make_double2(ROOT_HALF, ROOT_HALF);
        case 5: return make_double2(0.55557023301960222474, 0.83146961230254523708);
        case 6: return make_double2(0.38268343236508977173, 0.92387953251128675613);
        default: return make_double2(0.19509032201612826785, 0.98078528040323044913);
    }
}

// B radix-2 stages on the E values of one task: j0 = u mod q, the position of value e in its
// span being j0 + q e (mod the span), with the twiddles in shared memory at `tw` (the
// amortized kernel; twiddles in registers take the radix-8 overload above).
template <int LOG2M, int LOG_E, int B, int Q_LOG, bool INVERSE, typename Tw>
__device__ __forceinline__ void fft_stages(double2 (&x)[1 << LOG_E], u32 j0, const Tw &tw) {
    static_assert(LOG_E <= 4, "stage_twiddle derives at most 8 twiddles per stage");
    constexpr int E = 1 << LOG_E;
#pragma unroll
    for (int s = 0; s < B; s++) {
        const int hbit = INVERSE ? s : B - 1 - s;  // half span h = q 2^hbit
        double2 w0 = make_double2(1.0, 0.0);
#pragma unroll
        for (int mm = 0; mm < (1 << hbit); mm++) {
            const double2 w = stage_twiddle<LOG2M, Q_LOG>(tw, j0, hbit, mm, w0);
            if (mm == 0) w0 = w;
#pragma unroll
            for (int e = 0; e < E; e++) {
                if ((e & ((2 << hbit) - 1)) != mm) continue;  // bit hbit clear, low bits mm
                const int e2 = e | (1 << hbit);
                const double2 a = x[e], c = x[e2];
                if (INVERSE) {
                    const double2 v = cmul_conj(c, w);
                    x[e] = cadd(a, v);
                    x[e2] = csub(a, v);
                } else {
                    x[e] = cadd(a, c);
                    x[e2] = cmul(csub(a, c), w);
                }
            }
        }
    }
}

// round(x) mod 2^64 as fft.rs's wrap_f64, exactly but at one residue, with no instruction on
// the conversion pipe but the final one: r = (x + 1.5 2^116) - 1.5 2^116 is x rounded to a
// multiple of 2^64 (the sum lies in [2^116, 2^117), where doubles are 2^64 apart, for
// |x| < 2^115; ties go to an even multiple, as rint(x / 2^64) has them), so y = x - r, exact
// (for |x| < 2^63, r = 0 and y = x; above, y is a multiple of x's spacing, at least 2^11, and
// fits 53 bits), lies in [-2^63, 2^63], and the conversion rounds it, so it rounds x. It agreed
// with the rint(x / 2^64) form (fft.rs's formula) on 2.1 10^7 values below 2^115, ties
// included (a C check). The one inexact case: y = 2^63 (x an odd multiple of 2^63, rounded
// down), which the conversion saturates to 2^63 - 1, one unit below the residue. Such an x is
// at least 2^63, where its own spacing, and so the transform's rounding error, is 2^11 units
// or more (about 2^38 at the 2^90 typical of PARAM_MESSAGE_2_CARRY_2's outputs, where about
// one value in 2^26 is such a tie): the unit costs no accuracy. Correcting it cost a compare
// and a subtraction on the FP64 pipe per value, and selects: 64 of the cluster kernel's 1,792
// instructions per CMux, 1.6% of its cycles (measured on an H100: 4.004 -> 3.939 M cycles per
// bootstrap; the correction on the integer pipe instead, +0.6%). The transform outputs stay far
// below 2^115 (about 2^97 at most for PARAM_MESSAGE_2_CARRY_2); a set whose outputs reached it
// would have lost the residue to the transform's own rounding error (2^62 and more) anyway.
__device__ __forceinline__ u64 wrap_f64(double x) {
    constexpr double SHIFTER = 0x1.8p116;
    const double r = __dsub_rn(__dadd_rn(x, SHIFTER), SHIFTER);
    const double y = __dsub_rn(x, r);
    return (u64)__double2ll_rn(y);
}

// The accumulator coefficients of one thread's task in the inverse transform's last pass
// (natural-order positions j_e and j_e + M), kept in registers for the next CMux's
// decomposition, which covers the same positions of the same polynomial
// (decompose_first_pass): shared memory then serves only the rotated reads. The cluster
// kernel uses them (one task of 8 values per thread, u its index), with the task's factors
// for that pass and the inverse's last: the twist of j_e = u + q e (q = M / 8) is
// twist[u] exp(i pi e / 16) (twist_step), whose constant part multiplies the transform's
// inputs (and the untwisted outputs), while twist[u] goes through the radix-8 butterflies
// and joins the pass's twiddles alpha^bitrev3(e) (alpha = W_8q^u, fft_stages): one complex
// product per value for both, and no twist table in registers. (Measured on an H100: 1.6%
// fewer cycles in the cluster kernel than with the twist and the twiddles kept apart.)
template <int E>
struct OwnCoefficients {
    u64 lo[E];           // acc[j_e]
    u64 hi[E];           // acc[j_e + M]
    double2 factors[E];  // twist[u] alpha^bitrev3(e)
};

// The position of value 0 of task u in a full pass whose smallest half span is 2^Q_LOG
// (value e at base + 2^Q_LOG e).
template <int LOG_E, int Q_LOG>
__device__ __forceinline__ u32 task_base(u32 u) {
    return ((u >> Q_LOG) << (Q_LOG + LOG_E)) + (u & ((1u << Q_LOG) - 1));
}

// How far a loop over `total` tasks of E values each, `threads` at a time, unrolls: fully
// while it stays small (at most 16 values per thread in flight), else not at all, so that
// large N or many polynomials neither spill nor bloat the code.
__host__ __device__ constexpr int task_unroll(u32 total, u32 threads, int e) {
    return (total + threads - 1) / threads * e <= 16 ? (int)((total + threads - 1) / threads) : 1;
}

// One pass over POLYS polynomials (slot) at `data` (B stages, smallest half span 2^Q_LOG).
// With FUSE_ACC (the inverse's last pass), the natural-order results are not stored back but
// untwisted (times conj(twist); the 1 / M of the inverse transform is in the key, which the
// host uploads divided by M, exactly: M is a power of two), rounded
// and added to the accumulator polynomials `acc` (N words apart, polynomial p's N words at
// acc + p N): acc[j] += round(Re), acc[j + M] += round(Im); with `own` (not null: one task
// of 8 values per thread), the old values come from and the new ones also go to those
// registers, and the twist is split as OwnCoefficients says.
template <int LOG2M, int LOG_E, int THREADS, int POLYS, int B, int Q_LOG, bool INVERSE,
          bool FUSE_ACC, typename Tw>
__device__ __forceinline__ void fft_pass(double2 *data, const Tw &tw, u64 *acc,
                                         const double2 *__restrict__ twist,
                                         OwnCoefficients<1 << LOG_E> *own = nullptr) {
    constexpr int E = 1 << LOG_E;
    constexpr u32 TASKS_LOG = LOG2M - LOG_E;
    constexpr u32 M = 1u << LOG2M;
    constexpr u32 PM = polynomial_slots<LOG_E>(M);
    constexpr u32 Q = 1u << Q_LOG;
    constexpr u32 TOTAL = (u32)POLYS << TASKS_LOG;
    constexpr int UNROLL = task_unroll(TOTAL, THREADS, E);
#pragma unroll UNROLL
    for (u32 task = threadIdx.x; task < TOTAL; task += THREADS) {
        const u32 poly = task >> TASKS_LOG;
        const u32 u = task & ((1u << TASKS_LOG) - 1);
        const u32 j0 = u & (Q - 1);
        const u32 base = task_base<LOG_E, Q_LOG>(u);
        double2 *p = data + poly * PM;
        double2 x[E];
#pragma unroll
        for (int e = 0; e < E; e++) x[e] = p[slot<LOG_E>(base + ((u32)e << Q_LOG))];
        if constexpr (FUSE_ACC && LOG_E == 3) {
            if (own != nullptr) {  // the twist's own part (see OwnCoefficients)
#pragma unroll
                for (int e = 0; e < E; e++) x[e] = cmul_conj(x[e], own->factors[e]);
                radix8_butterflies<true>(x);
            } else {
                fft_stages<LOG2M, LOG_E, B, Q_LOG, INVERSE>(x, j0, tw);
            }
        } else {
            fft_stages<LOG2M, LOG_E, B, Q_LOG, INVERSE>(x, j0, tw);
        }
        if (FUSE_ACC) {
            u64 *a = acc + (u64)poly * 2 * M;
#pragma unroll
            for (int e = 0; e < E; e++) {
                const u32 j = base + ((u32)e << Q_LOG);
                const double2 v = own == nullptr ? cmul_conj(x[e], __ldg(twist + j))
                                  : e == 0       ? x[e]
                                                 : cmul_conj(x[e], twist_step(e));
                const u64 lo = wrap_f64(v.x);
                const u64 hi = wrap_f64(v.y);
                if (own != nullptr) {
                    own->lo[e] += lo;
                    own->hi[e] += hi;
                    a[j] = own->lo[e];
                    a[j + M] = own->hi[e];
                } else {
                    a[j] += lo;
                    a[j + M] += hi;
                }
            }
        } else {
#pragma unroll
            for (int e = 0; e < E; e++) p[slot<LOG_E>(base + ((u32)e << Q_LOG))] = x[e];
        }
    }
}

// Orders one pass's shared-memory stores before the next pass's loads: a block barrier, or
// only a warp's when WARP_LOCAL. A pass whose smallest half span is q = 2^Q_LOG <= 32 gives
// each aligned group of 32 tasks the whole blocks of 2^(Q_LOG + LOG_E) consecutive positions
// that they cover, the same slots for every such pass; so where a warp always runs the same
// aligned groups (one task per thread, whole warps: the cluster kernel, WARP_TASKS below),
// two consecutive passes with q <= 32 touch only slots of the warp's own.
template <bool WARP_LOCAL>
__device__ __forceinline__ void pass_barrier() {
    if constexpr (WARP_LOCAL) {
        __syncwarp();
    } else {
        __syncthreads();
    }
}

// Forward DIF FFT of POLYS polynomials (natural in, bit-reversed out): the passes
// from the one whose largest half span is 2^(HI - 1) on, down to (not including) the one
// whose largest half span is 2^(STOP - 1) (STOP = 0: to the end). Ends with __syncthreads()
// when SYNC_LAST (full passes always end with a barrier: a warp's only where WARP_TASKS and
// pass_barrier allow); the caller syncs before.
template <int LOG2M, int LOG_E, int THREADS, int POLYS, bool SYNC_LAST,
          int HI = LOG2M, int STOP = 0, bool WARP_TASKS = false, typename Tw>
__device__ __forceinline__ void fft_forward(double2 *data, const Tw &tw) {
    if constexpr (HI > STOP && HI > LOG_E) {
        constexpr int Q_LOG = HI - LOG_E;
        fft_pass<LOG2M, LOG_E, THREADS, POLYS, LOG_E, Q_LOG, false, false>(
            data, tw, nullptr, nullptr);
        pass_barrier<WARP_TASKS && Q_LOG <= 5>();  // the next pass's q is smaller
        fft_forward<LOG2M, LOG_E, THREADS, POLYS, SYNC_LAST, HI - LOG_E, STOP, WARP_TASKS>(
            data, tw);
    } else if constexpr (HI > STOP) {  // the last pass: LOG_E stages, or HI < LOG_E with q = 1
        fft_pass<LOG2M, LOG_E, THREADS, POLYS, HI, 0, false, false>(data, tw, nullptr,
                                                                            nullptr);
        if (SYNC_LAST) __syncthreads();
    }
}

// Inverse DIT FFT of POLYS polynomials (bit-reversed in), whose natural-order result
// is untwisted, rounded and added to `acc` (fft_pass with FUSE_ACC): the passes from the one
// whose smallest half span is 2^LO on, FIRST for the whole transform (the partial pass of
// LOG2M mod LOG_E stages first), with pass_barrier between passes (WARP_TASKS as for
// fft_forward). Ends with __syncthreads(); the caller syncs before.
template <int LOG2M, int LOG_E, int THREADS, int POLYS, int LO = 0,
          bool FIRST = true, bool WARP_TASKS = false, typename Tw>
__device__ __forceinline__ void fft_inverse_add(double2 *data, const Tw &tw, u64 *acc,
                                                const double2 *__restrict__ twist,
                                                OwnCoefficients<1 << LOG_E> *own = nullptr) {
    constexpr int PARTIAL = LOG2M % LOG_E;
    if constexpr (FIRST && PARTIAL > 0) {
        fft_pass<LOG2M, LOG_E, THREADS, POLYS, PARTIAL, 0, true, false>(data, tw, nullptr,
                                                                               nullptr);
        pass_barrier<WARP_TASKS && PARTIAL <= 5>();  // the next pass's q = 2^PARTIAL
        fft_inverse_add<LOG2M, LOG_E, THREADS, POLYS, PARTIAL, false, WARP_TASKS>(
            data, tw, acc, twist, own);
    } else if constexpr (LO + LOG_E < LOG2M) {
        fft_pass<LOG2M, LOG_E, THREADS, POLYS, LOG_E, LO, true, false>(data, tw, nullptr,
                                                                              nullptr);
        pass_barrier<WARP_TASKS && LO + LOG_E <= 5>();  // the next pass's q is larger
        fft_inverse_add<LOG2M, LOG_E, THREADS, POLYS, LO + LOG_E, false, WARP_TASKS>(
            data, tw, acc, twist, own);
    } else {
        fft_pass<LOG2M, LOG_E, THREADS, POLYS, LOG_E, LO, true, true>(data, tw, acc,
                                                                             twist, own);
        __syncthreads();
    }
}

// d + 1.5 2^52 - bias for an int d, exactly while the result fits 53 bits: 1.5 2^52 + d
// (where doubles have unit spacing) has the bits 0x4338000000000000 + d, so one FP64
// subtraction converts d instead of an I2F on the conversion pipe (a quarter of the FP64
// rate), which the inverse transform's conversions also use.
__device__ __forceinline__ double int_to_double_minus(int d, double bias) {
    return __hiloint2double(0x43380000 + (d >> 31), d) - bias;
}

// A digit as a double, exactly: |digit| <= 2^(B - 1), so for B <= 31 it fits an int.
template <u32 B>
__device__ __forceinline__ double digit_to_double(i64 digit) {
    if constexpr (B <= 31) {
        return int_to_double_minus((int)digit, 0x1.8p52);
    } else {
        return (double)digit;
    }
}

// The digit of a single decomposition level of base 2^B (B <= 31) of x, as a double: what
// decomposition_state and next_digit give for LEVELS = 1, from x's high word alone (the
// rounding bit, 63 - B, is at least 32). With S = 32 - B the rounded value is
// V = round(hi / 2^S) mod 2^B, and its balanced digit is sext_B(V - 1) + 1 =
// ((int)(hi - 2^(S - 1)) >> S) + 1, the + 1 being folded into the subtraction of the
// conversion, except on the tie V = 2^(B - 1) reached by rounding up (the top B + 1 bits of hi,
// value and rounding bit, are 2^B - 1), which tfhe-rs balances to -2^(B - 1).
// fhe_pbs_decompose runs this path, so the GPU tests check it against decomposition.rs.
template <u32 B>
__device__ __forceinline__ double single_level_digit(u64 x) {
    static_assert(B >= 1 && B <= 31, "one level of at most 31 bits");
    constexpr u32 S = 32 - B;
    const u32 hi = (u32)(x >> 32);
    u32 below = (u32)((int)(hi - (1u << (S - 1))) >> S);  // the digit minus 1
    if ((hi >> (S - 1)) == (1u << B) - 1) below -= 1u << B;
    return int_to_double_minus((int)below, 0x1.8p52 - 1.0);
}

// The next digits (decomposition_state, next_digit) of the values at positions j and j + M,
// as the twisted complex value (d_lo + i d_hi) w, w = twist[j]: a transform input.
template <u32 B>
__device__ __forceinline__ double2 next_twisted_digits(u64 &state_lo, u64 &state_hi,
                                                       double2 w) {
    const double d_lo = digit_to_double<B>(next_digit(state_lo, B));
    const double d_hi = digit_to_double<B>(next_digit(state_hi, B));
    return cmul(make_double2(d_lo, d_hi), w);
}

// Rotates, decomposes and twists the difference X^a p - p of one accumulator polynomial into
// LEVELS complex polynomials with base 2^B: value j of level `level` (0 the most significant)
// at dig[level * LEVEL_STRIDE + slot(j)], ready for fft_forward. Each thread owns
// coefficients j and j + M (j = threadIdx.x + THREADS t) and writes their digits straight
// into the transform's input.
template <int LOG2M, int LOG_E, int THREADS, int LEVELS, u32 B, u32 LEVEL_STRIDE, int UNROLL>
__device__ __forceinline__ void decompose_difference(const u64 *p, u32 a, double2 *dig,
                                                     const double2 *__restrict__ twist) {
    constexpr u32 M = 1u << LOG2M;
    constexpr u32 N_POLY = 2 * M;
    constexpr u32 DROPPED = 64 - B * LEVELS;
#pragma unroll UNROLL
    for (u32 trip = 0; trip < (M + THREADS - 1) / THREADS; trip++) {
        const u32 j = threadIdx.x + trip * THREADS;
        if (M % THREADS != 0 && j >= M) break;  // k + 1 = 3: blocks of 3 2^x threads
        const u64 lo = rotated(p, a, j, N_POLY) - p[j];
        const u64 hi = rotated(p, a, j + M, N_POLY) - p[j + M];
        u64 state_lo = decomposition_state(lo, DROPPED);
        u64 state_hi = decomposition_state(hi, DROPPED);
        const double2 w = __ldg(twist + j);
#pragma unroll
        for (int level = LEVELS - 1; level >= 0; level--) {
            dig[level * LEVEL_STRIDE + slot<LOG_E>(j)] =
                next_twisted_digits<B>(state_lo, state_hi, w);
        }
    }
}

// The decomposition fused with the forward transform's first pass, for digit level `level`
// of LEVELS (0 the most significant): for the task (r, u) of that pass (smallest half span
// q = M / E, LOG_E stages) on accumulator polynomial r of `acc` (POLYS of them, N words
// apart), rotates and decomposes X^a p - p at the task's positions j_e = u + q e and
// j_e + M, twists the level's digits into the E complex inputs, runs the pass on them in
// registers and stores the results to polynomial r of `dig` (slot): no round trip of the
// digits through shared memory. With `own` (not null: one task of 8 values per thread),
// p[j_e] and p[j_e + M] come from registers, and the twist is split as OwnCoefficients says.
template <int LOG2M, int LOG_E, int THREADS, int POLYS, u32 B, int LEVELS = 1,
          typename Tw>
__device__ __forceinline__ void decompose_first_pass(const u64 *acc, u32 a, double2 *dig,
                                                     const Tw &tw,
                                                     const double2 *__restrict__ twist,
                                                     const OwnCoefficients<1 << LOG_E> *own,
                                                     int level = 0) {
    constexpr int E = 1 << LOG_E;
    constexpr u32 M = 1u << LOG2M;
    constexpr u32 N_POLY = 2 * M;
    constexpr int Q_LOG = LOG2M - LOG_E;  // also log2 of the tasks per polynomial
    constexpr u32 PM = polynomial_slots<LOG_E>(M);
    constexpr u32 TOTAL = (u32)POLYS << Q_LOG;
    constexpr int UNROLL = task_unroll(TOTAL, THREADS, E);
#pragma unroll UNROLL
    for (u32 task = threadIdx.x; task < TOTAL; task += THREADS) {
        const u32 r = task >> Q_LOG;
        const u32 u = task & ((1u << Q_LOG) - 1);
        const u64 *p = acc + (u64)r * N_POLY;
        double2 x[E];
#pragma unroll
        for (int e = 0; e < E; e++) {
            const u32 j = u + ((u32)e << Q_LOG);
            const u64 own_lo = own != nullptr ? own->lo[e] : p[j];
            const u64 own_hi = own != nullptr ? own->hi[e] : p[j + M];
            const double2 w = own != nullptr ? twist_step(e) : __ldg(twist + j);
            const u64 diff_lo = rotated(p, a, j, N_POLY) - own_lo;
            const u64 diff_hi = rotated(p, a, j + M, N_POLY) - own_hi;
            if constexpr (LEVELS == 1 && B <= 31) {
                const double2 digits =
                    make_double2(single_level_digit<B>(diff_lo), single_level_digit<B>(diff_hi));
                x[e] = own != nullptr && e == 0 ? digits : cmul(digits, w);
            } else {
                constexpr u32 DROPPED = 64 - B * LEVELS;
                u64 state_lo = decomposition_state(diff_lo, DROPPED);
                u64 state_hi = decomposition_state(diff_hi, DROPPED);
#pragma unroll
                for (int less = LEVELS - 1; less > level; less--) {  // less significant digits
                    next_digit(state_lo, B);
                    next_digit(state_hi, B);
                }
                x[e] = next_twisted_digits<B>(state_lo, state_hi, w);
            }
        }
        if constexpr (LOG_E == 3) {
            if (own != nullptr) {  // the twist's own part (see OwnCoefficients)
                radix8_butterflies<false>(x);
#pragma unroll
                for (int e = 0; e < E; e++) x[e] = cmul(x[e], own->factors[e]);
            } else {
                fft_stages<LOG2M, LOG_E, LOG_E, Q_LOG, false>(x, u, tw);
            }
        } else {
            fft_stages<LOG2M, LOG_E, LOG_E, Q_LOG, false>(x, u, tw);
        }
        double2 *out = dig + r * PM;
#pragma unroll
        for (int e = 0; e < E; e++) out[slot<LOG_E>(u + ((u32)e << Q_LOG))] = x[e];
    }
}

// Loads `own` for this thread's task u = threadIdx.x of decompose_first_pass (one polynomial,
// one task of 8 values per thread), with the twiddle registers of that pass.
template <int LOG2M>
__device__ __forceinline__ void load_own_coefficients(const u64 *acc,
                                                      const double2 *__restrict__ twist,
                                                      const TwiddleRegisters<LOG2M, 3> &tw,
                                                      OwnCoefficients<8> &own) {
    constexpr u32 M = 1u << LOG2M;
    constexpr int Q_LOG = LOG2M - 3;
    const u32 u = threadIdx.x;
    const double2 twist_u = __ldg(twist + u);
#pragma unroll
    for (int e = 0; e < 8; e++) {
        own.lo[e] = acc[u + ((u32)e << Q_LOG)];
        own.hi[e] = acc[u + ((u32)e << Q_LOG) + M];
        own.factors[e] = e == 0 ? twist_u : cmul(twist_u, tw.w[Q_LOG][bit_reversed3(e) - 1]);
    }
}

// Where the key value of bit-reversed position j lies in its polynomial (fhe-pbs/src/cuda.rs
// uploads it so): j with its low three bits xored with the next three. The cluster kernel's
// threads read 8 consecutive positions each, 8 threads at a time from one 128-byte row per
// thread; the swizzle puts those 8 reads in 8 different banks. Values stay within their
// 128-byte line, so the amortized kernel's coalesced reads stay coalesced.
__device__ __forceinline__ u32 key_position(u32 j) {
    return j ^ ((j >> 3) & 7);
}

// Asks L2 for the key lines a block will read in this CMux's pointwise product (`POLYS`
// consecutive polynomials of M values from `key`), so that their DRAM latency overlaps the
// decomposition and the forward FFT. One prefetch per 128-byte line (8 complex values).
template <int LOG2M, int THREADS, int POLYS>
__device__ __forceinline__ void prefetch_key(const double2 *key) {
    constexpr u32 LINES = ((u32)POLYS << LOG2M) >> 3;
#pragma unroll
    for (u32 line = threadIdx.x; line < LINES; line += THREADS) {
        asm volatile("prefetch.global.L2 [%0];" ::"l"(key + ((u64)line << 3)));
    }
}

// Copies `count` twiddles into shared memory (the caller syncs after).
__device__ __forceinline__ void load_twiddles(double2 *tw_s, const double2 *__restrict__ tw,
                                              u32 count) {
    for (u32 t = threadIdx.x; t < count; t += blockDim.x) tw_s[t] = tw[t];
}

// load_twiddles for a block of THREADS threads and COUNT <= 8 THREADS twiddles known at
// compile time: each thread's loads all go out before its stores (load_twiddles's loop waits
// for each load in turn). The cluster kernel's prologue; the caller syncs after.
template <u32 THREADS, u32 COUNT>
__device__ __forceinline__ void load_twiddles_together(double2 *tw_s,
                                                       const double2 *__restrict__ tw) {
    constexpr u32 PER_THREAD = (COUNT + THREADS - 1) / THREADS;
    static_assert(PER_THREAD <= 8, "at most 8 twiddles per thread");
    double2 v[PER_THREAD];
#pragma unroll
    for (u32 k = 0; k < PER_THREAD; k++) {
        const u32 t = threadIdx.x + k * THREADS;
        if (t < COUNT) v[k] = tw[t];
    }
#pragma unroll
    for (u32 k = 0; k < PER_THREAD; k++) {
        const u32 t = threadIdx.x + k * THREADS;
        if (t < COUNT) tw_s[t] = v[k];
    }
}

// ---------------------------------------------------------------------------------------
// The parameter set the blind rotations are compiled for. The host compiles this module once
// per parameter set (fhe-pbs/src/cuda.rs), prepending
//   #define FHE_K1 <k + 1>  #define FHE_N <N>  #define FHE_LEVELS <PBS level count>
//   #define FHE_BASE_LOG <PBS base log>
// so that the FFT size, the number of polynomials, the levels and the digit base are
// compile-time constants; the kernels' names carry them
// (fhe_blind_rotate_cluster_k2_n2048_l1_b23), so that a kernel never runs for another
// parameter set. Without the defines (the NVRTC compile test), the module is compiled for
// PARAM_MESSAGE_2_CARRY_2's shape.
#ifndef FHE_K1
#define FHE_K1 2
#endif
#ifndef FHE_N
#define FHE_N 2048
#endif
#ifndef FHE_LEVELS
#define FHE_LEVELS 1
#endif
#ifndef FHE_BASE_LOG
#define FHE_BASE_LOG 23
#endif

__host__ __device__ constexpr int fhe_log2(u32 x) { return x <= 1 ? 0 : 1 + fhe_log2(x >> 1); }

static_assert(FHE_K1 >= 2 && FHE_K1 <= 4, "k + 1 must be 2, 3 or 4");
static_assert(FHE_N >= 512 && FHE_N <= 8192 && (FHE_N & (FHE_N - 1)) == 0,
              "N must be a power of two from 512 to 8192");
static_assert(FHE_LEVELS >= 1 && FHE_BASE_LOG >= 1 && FHE_LEVELS * FHE_BASE_LOG <= 64,
              "PBS decomposition out of range");

#define FHE_LOG2M (fhe_log2(FHE_N) - 1)
#define FHE_CAT_NAME(base, k1, n, l, b) base##_k##k1##_n##n##_l##l##_b##b
#define FHE_EXPANDED_NAME(base, k1, n, l, b) FHE_CAT_NAME(base, k1, n, l, b)
#define FHE_KERNEL_NAME(base) FHE_EXPANDED_NAME(base, FHE_K1, FHE_N, FHE_LEVELS, FHE_BASE_LOG)

// ---------------------------------------------------------------------------------------
// Both blind rotations read the key-switched LWE ciphertexts (`small`, n + 1 words each) and
// switch each word to 2N as they reach it (modulus_switch), with no launch of their own.
//
// Blind rotation, amortized: one block per ciphertext, many in flight; FFT passes of 16
// values per task (LOG_E = 4: three passes for M = 1024). Shared memory: the K1 l digit
// polynomials in the Fourier domain (slot), whose first K1 slots then receive the K1 output
// polynomials of the external product (each thread owns the same positions in the pointwise
// product, so reading all rows before writing is race-free); the M/2 twiddles; and the
// accumulator when `acc_in_shared` (the host checks that K1 N words more fit), else it lives
// in the output buffer (global memory). Shapes whose digit polynomials do not fit in shared
// memory (large N times many levels) pass `global_digits`, a scratch area of K1 l
// polynomials per block in device memory, which then holds them instead (slower, but every
// valid parameter set runs). Two kernels: `..._shared` for the layout with everything in
// shared memory (its pointers are known to be shared, so the compiler emits shared-memory
// loads and stores), and the general one, whose layout is chosen at run time.

#define FHE_AMORTIZED_LOG_E 4

// 128 threads at most (tasks beyond loop): up to 255 registers, the 16 values of a task and
// their twiddles without spilling. The host launches exactly min(128, K1 M / 16) threads.
#define FHE_AMORTIZED_MAX_THREADS 128

template <int K1, int LOG2M>
struct AmortizedShape {
    static constexpr int LOG_E = FHE_AMORTIZED_LOG_E;
    static constexpr int M = 1 << LOG2M;
    static constexpr int THREADS = (K1 * M) >> LOG_E < FHE_AMORTIZED_MAX_THREADS
                                       ? (K1 * M) >> LOG_E
                                       : FHE_AMORTIZED_MAX_THREADS;
};

template <int K1, int LOG2M, int LEVELS, u32 B, bool ALL_SHARED>
__device__ __forceinline__ void blind_rotate_amortized(
    const FheShape &s, const u64 *__restrict__ small, const u64 *__restrict__ lut,
    const double2 *__restrict__ bsk, const double2 *__restrict__ twist,
    const double2 *__restrict__ tw, u64 *glwe, u32 acc_in_shared, double2 *global_digits) {
    constexpr int LOG_E = FHE_AMORTIZED_LOG_E;
    constexpr int THREADS = AmortizedShape<K1, LOG2M>::THREADS;
    constexpr u32 M = 1u << LOG2M;
    constexpr u32 N_POLY = 2 * M;
    constexpr u32 PM = polynomial_slots<LOG_E>(M);
    constexpr int ROWS = K1 * LEVELS;
    extern __shared__ double2 fhe_smem[];
    const u32 n = s.lwe_dimension;
    const u64 ct = blockIdx.x;
    const u64 *in = small + ct * (n + 1);
    u64 *const out_glwe = glwe + ct * (u64)K1 * N_POLY;
    double2 *dig, *tw_s;
    u64 *acc;
    if constexpr (ALL_SHARED) {
        dig = fhe_smem;
        tw_s = fhe_smem + ROWS * PM;
        acc = (u64 *)(tw_s + M / 2);
    } else {
        dig = global_digits ? global_digits + ct * ROWS * PM : fhe_smem;
        tw_s = global_digits ? fhe_smem : fhe_smem + ROWS * PM;
        acc = acc_in_shared ? (u64 *)(tw_s + M / 2) : out_glwe;
    }

    load_twiddles(tw_s, tw, M / 2);
    // ACC = (0, ..., 0, X^{-b~} LUT)
    const u32 start =
        (2 * N_POLY - switched_body(in, n, LOG2M + 2, s.centered_switch)) & (2 * N_POLY - 1);
    for (u32 t = threadIdx.x; t < N_POLY; t += THREADS) {
#pragma unroll
        for (int r = 0; r < K1 - 1; r++) acc[r * N_POLY + t] = 0;
        acc[(K1 - 1) * N_POLY + t] = rotated(lut, start, t, N_POLY);
    }
    __syncthreads();
    // One level: the decomposition runs fused with the forward transform's first pass. (The
    // own accumulator coefficients are not kept in registers here, unlike the cluster kernel:
    // 16 values per task cost 64 registers, and the block count per SM fell from 3 to 2.)
    constexpr bool FUSED = LEVELS == 1;

    u64 a_word = in[0];
    for (u32 i = 0; i < n; i++) {
        const u32 a = modulus_switch(a_word, LOG2M + 2);
        if (i + 1 < n) a_word = in[i + 1];  // in flight during this CMux
        if (a == 0) continue;  // X^0 ACC - ACC = 0: the CMux leaves ACC unchanged
        const double2 *ggsw = bsk + (u64)i * ROWS * K1 * M;
        prefetch_key<LOG2M, THREADS, ROWS * K1>(ggsw);
        if constexpr (FUSED) {
            decompose_first_pass<LOG2M, LOG_E, THREADS, K1, B>(acc, a, dig, tw_s, twist,
                                                                     nullptr);
            __syncthreads();
            fft_forward<LOG2M, LOG_E, THREADS, ROWS, true, LOG2M - LOG_E>(dig, tw_s);
        } else {
#pragma unroll
            for (int r = 0; r < K1; r++) {
                decompose_difference<LOG2M, LOG_E, THREADS, LEVELS, B, K1 * PM, 4>(
                    acc + r * N_POLY, a, dig + r * PM, twist);
            }
            __syncthreads();
            fft_forward<LOG2M, LOG_E, THREADS, ROWS, true>(dig, tw_s);
        }
#pragma unroll 2
        for (u32 j = threadIdx.x; j < M; j += THREADS) {
            const u32 pj = slot<LOG_E>(j);
            const u32 kj = key_position(j);
            double2 out[K1];
#pragma unroll
            for (int c = 0; c < K1; c++) out[c] = make_double2(0.0, 0.0);
#pragma unroll
            for (int row = 0; row < ROWS; row++) {
                const double2 x = dig[row * PM + pj];
#pragma unroll
                for (int c = 0; c < K1; c++) {
                    out[c] = cmul_add(out[c], x, __ldg(ggsw + (u64)(c * ROWS + row) * M + kj));
                }
            }
#pragma unroll
            for (int c = 0; c < K1; c++) dig[c * PM + pj] = out[c];
        }
        __syncthreads();
        fft_inverse_add<LOG2M, LOG_E, THREADS, K1>(dig, tw_s, acc, twist);
    }
    if (ALL_SHARED || acc_in_shared) {
        for (u32 t = threadIdx.x; t < K1 * N_POLY; t += THREADS) out_glwe[t] = acc[t];
    }
}

// The two amortized kernels (see above); the same parameters, `acc_in_shared` and
// `global_digits` ignored by `..._shared`.
#define FHE_DEFINE_AMORTIZED(NAME, ALL_SHARED)                                                \
    extern "C" __global__ void __launch_bounds__(AmortizedShape<FHE_K1, FHE_LOG2M>::THREADS)  \
        NAME(const FheShape s, const u64 *__restrict__ small, const u64 *__restrict__ lut,    \
             const double2 *__restrict__ bsk, const double2 *__restrict__ twist,              \
             const double2 *__restrict__ tw, u64 *glwe, u32 acc_in_shared,                    \
             double2 *global_digits) {                                                        \
        blind_rotate_amortized<FHE_K1, FHE_LOG2M, FHE_LEVELS, FHE_BASE_LOG, ALL_SHARED>(      \
            s, small, lut, bsk, twist, tw, glwe, acc_in_shared, global_digits);               \
    }

FHE_DEFINE_AMORTIZED(FHE_KERNEL_NAME(fhe_blind_rotate_amortized), false)
FHE_DEFINE_AMORTIZED(FHE_KERNEL_NAME(fhe_blind_rotate_amortized_shared), true)

// The PBS decomposition of `len` words as the blind rotations compute it (single_level_digit
// for one level of at most 31 bits, else decomposition_state and next_digit), laid out as
// fhe_decompose's: out[j len + i] = digit j (level j + 1) of input[i].
extern "C" __global__ void FHE_KERNEL_NAME(fhe_pbs_decompose)(const u64 *__restrict__ input,
                                                               i64 *__restrict__ output,
                                                               u64 len) {
    for (u64 i = global_thread_index(); i < len; i += grid_thread_count()) {
        if constexpr (FHE_LEVELS == 1 && FHE_BASE_LOG <= 31) {
            output[i] = (i64)single_level_digit<FHE_BASE_LOG>(input[i]);
        } else {
            u64 state = decomposition_state(input[i], 64 - FHE_BASE_LOG * FHE_LEVELS);
            for (u32 j = FHE_LEVELS; j-- > 0;) output[(u64)j * len + i] = next_digit(state, FHE_BASE_LOG);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Blind rotation, low latency (Hopper, sm_90+): one bootstrap per thread-block cluster of K1
// blocks; block `rank` owns accumulator polynomial `rank` (in its shared memory) and output
// column `rank` of the external product. M/8 threads per block, thread u with the FFT task u
// of 8 values in every pass (LOG_E = 3). Each CMux i (parity i & 1), for each digit level:
//   1. rotate, decompose and twist the own polynomial, fused with the forward FFT's first
//      pass, then the passes through shared memory (`work`) up to the last full pass
//      (smallest half span 2^P, P = log2 M mod 3), whose inputs thread u loads
//      (load_last_pass): the 8 x 32 positions of its warp's tasks, which only this warp wrote
//      in the pass before, one contiguous block of 4 KB in `work` (slot);
//   2. lane 0 sends that block as it is into the receive slot every other block keeps for
//      this block, with the copy engine (cp.async.bulk shared::cta -> shared::cluster),
//      completing on the receiver's mbarrier `digits_ready[parity][warp]` for this warp;
//      meanwhile the warp runs the last pass and the P radix-2 stages after it in registers,
//      those P stages between neighbouring lanes by shuffles, so that thread u ends with the
//      8 consecutive bit-reversed positions 8u to 8u + 7 (forward_last_stages), and
//      multiplies its values by its key values into its 8 outputs.
// Lane 0 of each warp having announced the bytes its warp expects per CMux (the positions of
// its 32 threads from each other block and level), each thread waits on its warp's
// `digits_ready[parity][warp]` until they have landed: no block-wide barrier and no fence
// across blocks, and a warp never waits for the other blocks' other warps. It runs the last
// forward stages on the other blocks' blocks itself, adds them times their key rows to its
// outputs, and the inverse FFT starts on them in registers (the P stages by shuffles and the
// first full pass, inverse_first_stages), then the passes through shared memory, the last
// one untwisting, rounding and adding into the accumulator. Sending the last pass's inputs
// rather than its outputs lets the copy start a pass earlier, and leaves out the stores of
// the outputs and the wait of the proxy fence on them. (Measured on an H100 with ncu, cycles
// per bootstrap: outputs sent, 4.14 M; inputs sent with the padded layout, 4.10 M, whose
// copies carry 12.5% pad slots; with the xor layout, 4.03 M. The fence alone cost 3.2%: a
// wrong variant without it, 4.03 M against 4.16 M.) The pointwise product never goes
// through shared memory, and at N = 2048 an FFT takes two round trips through it, not four.
// (Measured on an H100, one KS+PBS: remote stores by every thread with release arrivals and
// cluster-scope acquire waits, 3.58 ms (a memory barrier per warp and an L1 invalidation per
// CMux); st.async by every thread, completing on the receiver's mbarrier, 3.1 to 3.2 ms (its
// remote stores held up the block's shared-memory loads); one bulk copy per warp, 2.90 ms.)
// Why a receive slot is never overwritten early: warp w of block r sends CMux i + 2's digits
// (into parity i & 1 again) only after it has received the digits of CMux i + 1 from warp w
// here, which this warp sends only after its pointwise product of CMux i has used every
// value it read from the slots of parity i & 1 (warp w's positions, the only ones warp w of
// block r writes). Lane 0 waits until its copies have read `work` before the warp's next
// barrier, after which the warp writes its part of `work` again.
//
// The key rows of a CMux (K1 l polynomials of column `rank`, contiguous in the key, M values
// each, swizzled by key_position) come into shared memory by one bulk copy, completing on
// `key_ready`. Thread 0 asks for CMux i's rows at the start of CMux i, and L2 for CMux
// i + 1's, so that the copy engine's writes land in shared memory during the decomposition,
// whose few loads leave it idle, and not during the FFT passes. (Measured on an H100 with
// ncu, cycles per bootstrap: each warp's part of the rows copied right after the product of
// the CMux before, with a proxy fence, 4.67 to 4.69 M; at the start of the CMux, 4.52 to
// 4.57 M; after the decomposition, 4.83 to 4.86 M; before the forward FFT's last pass, 4.63 M;
// the kernel without any key copies, wrong but timed, 4.34 M; the block's rows in one copy
// at the start of the CMux, as here, 4.33 M.) Every CMux runs, also those with a = 0 (which
// add exactly zero), so that the copies follow the loop index.
//
// From the forward FFT's second pass to the inverse's second-last, a warp touches only its
// own part of `work` (pass_barrier), so only the passes that cross warps
// (the first of the forward FFT, the last of the inverse, and the accumulator's update) wait
// for the whole block: three block barriers per CMux and level, not six. (Measured on an H100
// with ncu: 4.688 -> 4.674 M cycles per bootstrap, -0.3%.)
//
// Each thread keeps its twiddles (TwiddleRegisters: the FFT passes run as radix-8 butterflies)
// and its twist, folded into the first pass's twiddles (OwnCoefficients), in registers for
// the whole bootstrap, and the prologue switches the n mask words a_i to 2N into shared
// memory, so that the CMux loop reads no global memory at all. (Measured on an H100: the
// twist read from global memory in the decomposition and the untwisting, 16 loads per thread
// and CMux, cost 6% of a KS+PBS.) That matters for the proxy fence before the digits' copy:
// it compiles to MEMBAR.ALL.CTA, which waits for every memory access the thread has in
// flight, so it waited for the global load of the next a_i, and it waits for the loads of
// the last pass's inputs when it follows them. It comes right after the stores of the pass
// before, and the copy leaves before those loads. (Measured on an H100 with ncu, cycles per
// bootstrap: the next a_i loaded from global memory at the start of each CMux and the fence
// after the loads, 3.942 M; the fence before them, 3.925 M; the words from shared memory and
// the fence after the loads, 3.914 to 3.926 M; both, 3.842 to 3.848 M.)

// Values per FFT task of the cluster kernel: 8 (16 spill registers).
#define FHE_CLUSTER_LOG_E 3

template <int LOG2M>
struct ClusterShape {
    static constexpr int LOG_E = FHE_CLUSTER_LOG_E;
    static constexpr int THREADS = (1 << LOG2M) >> LOG_E;  // one FFT task per thread
};

#if __CUDA_ARCH__ >= 900
__device__ __forceinline__ u32 cluster_rank() {
    u32 rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
}

// The rank of the o-th block of the cluster other than block `rank` (o < K1 - 1).
__device__ __forceinline__ u32 other_rank(u32 o, u32 rank) { return o < rank ? o : o + 1; }

__device__ __forceinline__ void cluster_barrier() {
    asm volatile(
        "barrier.cluster.arrive.release.aligned;\n\t"
        "barrier.cluster.wait.acquire.aligned;" ::
            : "memory");
}

__device__ __forceinline__ u32 shared_address(const void *p) {
    return (u32)__cvta_generic_to_shared(p);
}

// The shared::cluster address of the same shared-memory location in block `rank`.
__device__ __forceinline__ u32 cluster_address(const void *p, u32 rank) {
    u32 out;
    asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(shared_address(p)), "r"(rank));
    return out;
}

// An mbarrier in shared memory expecting one arrival per phase (thread 0's, with the bytes
// it expects); made visible to the copy engine and the cluster by the caller's barrier.
__device__ __forceinline__ void mbarrier_init(u64 *bar) {
    asm volatile(
        "mbarrier.init.shared::cta.b64 [%0], 1;\n\t"
        "fence.mbarrier_init.release.cluster;" ::"r"(shared_address(bar))
        : "memory");
}

// The arrival of a phase that completes once `bytes` more have landed.
__device__ __forceinline__ void mbarrier_expect(u64 *bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(
                     shared_address(bar)),
                 "r"(bytes)
                 : "memory");
}

// Waits until phase `parity` of `bar` has completed (its bytes have landed).
__device__ __forceinline__ void mbarrier_wait(u64 *bar, u32 parity) {
    const u32 b = shared_address(bar);
    u32 done;
    do {
        asm volatile(
            "{\n\t.reg .pred p;\n\t"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
            "selp.u32 %0, 1, 0, p;\n\t}"
            : "=r"(done)
            : "r"(b), "r"(parity)
            : "memory");
    } while (!done);
}

// Copies `bytes` at `src` in this block's shared memory to shared::cluster address `dst`
// (another block's shared memory) with the copy engine, completing on the mbarrier at
// shared::cluster address `bar` (in the same block), and commits the copy to this thread's
// bulk async-group (wait_bulk_reads). The writers of `src` have fenced (fence_proxy_async).
__device__ __forceinline__ void copy_to_cluster(u32 dst, const double2 *src, u32 bytes,
                                                u32 bar) {
    asm volatile(
        "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], "
        "%2, [%3];\n\t"
        "cp.async.bulk.commit_group;" ::"r"(dst),
        "r"(shared_address(src)), "r"(bytes), "r"(bar)
        : "memory");
}

// Waits until this thread's bulk copies have read their sources (which may then be
// overwritten).
__device__ __forceinline__ void wait_bulk_reads() {
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}

// Orders this thread's earlier shared-memory accesses before later copy-engine (async
// proxy) accesses to the same memory.
__device__ __forceinline__ void fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// One thread: copies `bytes` (a multiple of 16) from global memory at `src` to shared memory
// at `dst`, completing on `bar`. The destination's previous contents were read by ordinary
// loads before the caller's last barrier over their readers: a write after those reads,
// which needs no proxy fence (as for a buffer released by an mbarrier).
__device__ __forceinline__ void copy_to_shared(void *dst, const void *src, u32 bytes,
                                               u64 *bar) {
    mbarrier_expect(bar, bytes);
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
        "[%3];" ::"r"(shared_address(dst)),
        "l"(src), "r"(bytes), "r"(shared_address(bar))
        : "memory");
}

// Asks L2 for `bytes` (a multiple of 16) of global memory from `src` on, in one instruction.
__device__ __forceinline__ void prefetch_to_l2(const void *src, u32 bytes) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
}

__device__ __forceinline__ double2 shfl_xor_complex(double2 v, int lane_mask) {
    return make_double2(__shfl_xor_sync(0xffffffffu, v.x, lane_mask),
                        __shfl_xor_sync(0xffffffffu, v.y, lane_mask));
}

// A forward (DIF) radix-2 stage of half span H (1 or 2) whose pairs sit in the same register
// x[e] of lanes l and l ^ H (l & H clear: the low lane): the low lane takes pairs 0 to 3, the
// high lane pairs 4 to 7, each getting the partner's halves by shuffles, and keeps both
// results of its pair k (the low position's in x[2k], the high one's in x[2k + 1]). The
// twiddle W_2H^(l mod H) is 1, or -i for H = 2 and odd lanes. For H = 1 (the transform's
// last stage), the high lane's x[2k + 1] come out negated: each lane subtracts the received
// half from its own, which saves a select per value (of 12 FSEL per pair, 4); the pointwise
// products keep that sign (every row's values carry it), and cross_lane_dit_stage<1> expects
// it.
template <int H>
__device__ __forceinline__ void cross_lane_dif_stage(double2 (&x)[8]) {
    static_assert(H == 1 || H == 2, "twiddles of half spans 1 and 2 only");
    const bool high = threadIdx.x & H;
    const bool minus_i = H == 2 && (threadIdx.x & 1);
    double2 y[8];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const double2 other = shfl_xor_complex(high ? x[k] : x[4 + k], H);
        if constexpr (H == 1) {
            const double2 own = high ? x[4 + k] : x[k];
            y[2 * k] = cadd(own, other);
            y[2 * k + 1] = csub(own, other);
        } else {
            const double2 a = high ? other : x[k];
            const double2 c = high ? x[4 + k] : other;
            const double2 d = csub(a, c);
            y[2 * k] = cadd(a, c);
            y[2 * k + 1] = minus_i ? times_minus_i(d) : d;
        }
    }
#pragma unroll
    for (int e = 0; e < 8; e++) x[e] = y[e];
}

// The inverse (DIT) stage of half span H, undoing cross_lane_dif_stage's placement: each lane
// combines its pairs (x[2k], x[2k + 1]) (twiddle conj W_2H^(l mod H): 1, or i), then the low
// lane keeps the low results of all eight pairs (its own four, then the high lane's) and the
// high lane the high results, trading the others by shuffles. For H = 1 the high lane's
// x[2k + 1] arrive negated (cross_lane_dif_stage<1>), so the sum is the result each lane
// keeps and the difference the one it sends, in both lanes: no select for the shuffle.
template <int H>
__device__ __forceinline__ void cross_lane_dit_stage(double2 (&x)[8]) {
    static_assert(H == 1 || H == 2, "twiddles of half spans 1 and 2 only");
    const bool high = threadIdx.x & H;
    const bool plus_i = H == 2 && (threadIdx.x & 1);
    double2 y[8];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        double2 kept, other;
        if constexpr (H == 1) {
            kept = cadd(x[2 * k], x[2 * k + 1]);
            other = shfl_xor_complex(csub(x[2 * k], x[2 * k + 1]), H);
        } else {
            const double2 c = x[2 * k + 1];
            const double2 v = plus_i ? times_i(c) : c;
            const double2 low_result = cadd(x[2 * k], v), high_result = csub(x[2 * k], v);
            kept = high ? high_result : low_result;
            other = shfl_xor_complex(high ? low_result : high_result, H);
        }
        y[k] = high ? other : kept;
        y[4 + k] = high ? kept : other;
    }
#pragma unroll
    for (int e = 0; e < 8; e++) x[e] = y[e];
}

// Loads this thread's inputs of the forward FFT's last full pass (smallest half span 2^P,
// P = LOG2M mod 3) from the polynomial `data`.
template <int LOG2M>
__device__ __forceinline__ void load_last_pass(const double2 *data, double2 (&x)[8]) {
    constexpr int LOG_E = FHE_CLUSTER_LOG_E, P = LOG2M % LOG_E;
    const u32 base = task_base<LOG_E, P>(threadIdx.x);
#pragma unroll
    for (int e = 0; e < 8; e++) x[e] = data[slot<LOG_E>(base + ((u32)e << P))];
}

// Runs the forward FFT's last full pass on x (load_last_pass) and the P stages after it
// across lanes: x[e] ends as the value at bit-reversed position 8 threadIdx.x + e, negated
// for odd e in odd lanes when P >= 1 (cross_lane_dif_stage<1>; inverse_first_stages expects
// the pointwise products so).
template <int LOG2M, typename Tw>
__device__ __forceinline__ void forward_last_stages(const Tw &tw, double2 (&x)[8]) {
    constexpr int LOG_E = FHE_CLUSTER_LOG_E, P = LOG2M % LOG_E;
    fft_stages<LOG2M, LOG_E, LOG_E, P, false>(x, threadIdx.x & ((1u << P) - 1), tw);
    if constexpr (P == 2) cross_lane_dif_stage<2>(x);
    if constexpr (P >= 1) cross_lane_dif_stage<1>(x);
}

// The inverse FFT's first stages on x[e], the value at bit-reversed position
// 8 threadIdx.x + e: the P stages across lanes and the first full pass, stored to the
// polynomial `data` for the next pass.
template <int LOG2M, typename Tw>
__device__ __forceinline__ void inverse_first_stages(double2 (&x)[8], const Tw &tw,
                                                     double2 *data) {
    constexpr int LOG_E = FHE_CLUSTER_LOG_E, P = LOG2M % LOG_E;
    if constexpr (P >= 1) cross_lane_dit_stage<1>(x);
    if constexpr (P == 2) cross_lane_dit_stage<2>(x);
    fft_stages<LOG2M, LOG_E, LOG_E, P, true>(x, threadIdx.x & ((1u << P) - 1), tw);
    const u32 base = task_base<LOG_E, P>(threadIdx.x);
#pragma unroll
    for (int e = 0; e < 8; e++) data[slot<LOG_E>(base + ((u32)e << P))] = x[e];
}

template <int K1, int LOG2M, int LEVELS, u32 B>
__device__ __forceinline__ void blind_rotate_cluster(
    const FheShape &s, const u64 *__restrict__ small, const u64 *__restrict__ lut,
    const double2 *__restrict__ bsk, const double2 *__restrict__ twist,
    const double2 *__restrict__ tw_staged, u64 *out, u32 extract) {
    constexpr int LOG_E = FHE_CLUSTER_LOG_E;
    static_assert(LOG_E == 3, "the register stages hold 8 values per thread");
    constexpr int E = 1 << LOG_E;
    constexpr int THREADS = ClusterShape<LOG2M>::THREADS;
    constexpr int P = LOG2M % LOG_E;
    constexpr u32 M = 1u << LOG2M;
    constexpr u32 N_POLY = 2 * M;
    constexpr u32 PM = polynomial_slots<LOG_E>(M);
    constexpr int ROWS = K1 * LEVELS;
    constexpr u32 WARPS = THREADS / 32;
    static_assert(THREADS % 32 == 0, "whole warps (N >= 512)");
    // Each warp's 8 x 32 positions: one contiguous block of slots (slot), sent as it is.
    constexpr u32 WARP_VALUES = 32 * E;
    constexpr u32 RECEIVED = (K1 - 1) * LEVELS * PM;  // complex values per parity
    constexpr u64 GGSW = (u64)ROWS * K1 * M;          // complex values per GGSW
    extern __shared__ double2 fhe_smem[];
    const u32 n = s.lwe_dimension;
    const u32 rank = cluster_rank();
    const u64 ct = blockIdx.x / K1;
    const u64 *in = small + ct * (n + 1);
    // [parity][sender: the other blocks in rank order][level][warp][WARP_VALUES slots]
    double2 *const received = fhe_smem;
    double2 *const work = received + 2 * RECEIVED;  // one polynomial; first the twiddles
    u64 *const acc = (u64 *)(work + PM);
    double2 *const key_s = (double2 *)(acc + N_POLY);  // ROWS polynomials
    u64 *const key_ready = (u64 *)(key_s + ROWS * M);
    u64 *const digits_ready = key_ready + 1;  // [parity][warp]
    u32 *const mask_switched = (u32 *)(digits_ready + 2 * WARPS);  // the n a_i, switched
    // This block's column of the key: polynomial `rank` of each GGSW row, the ROWS of them
    // contiguous (the host uploads each GGSW column by column), KEY_BYTES per CMux.
    constexpr u32 KEY_BYTES = ROWS * M * 16;
    const double2 *key_column = bsk + (u64)rank * ROWS * M;
    // The warp index read from lane 0, which the compiler then knows to be the same across
    // the warp: the addresses of lane 0's copies below stay in uniform registers.
    const u32 u = threadIdx.x, warp = __shfl_sync(0xffffffffu, u / 32, 0), lane = u % 32;
    if (threadIdx.x == 0) {
        mbarrier_init(key_ready);
        for (u32 b = 0; b < 2 * WARPS; b++) mbarrier_init(&digits_ready[b]);
        if (n > 0) prefetch_to_l2(key_column, KEY_BYTES);
    }
    load_twiddles_together<THREADS, M - 1>(work, tw_staged);
    const u32 start =
        (2 * N_POLY - switched_body(in, n, LOG2M + 2, s.centered_switch)) & (2 * N_POLY - 1);
    for (u32 t = threadIdx.x; t < n; t += THREADS) {
        mask_switched[t] = modulus_switch(in[t], LOG2M + 2);
    }
#pragma unroll
    for (u32 k = 0; k < N_POLY / THREADS; k++) {  // compile-time bounds: the loads go together
        const u32 t = threadIdx.x + k * THREADS;
        acc[t] = rank == K1 - 1 ? rotated(lut, start, t, N_POLY) : 0;
    }
    __syncthreads();
    TwiddleRegisters<LOG2M, LOG_E> tw;
    load_twiddle_registers<LOG2M, LOG_E>(tw, work, u);
    OwnCoefficients<E> own;
    load_own_coefficients<LOG2M>(acc, twist, tw, own);
    // Every block's mbarriers exist before anyone arrives; the twiddles are read before
    // `work` is written.
    cluster_barrier();
    // Where this thread's digits go in the o-th other block t (its slot for this block,
    // parity 0) and t's mbarrier for this warp. Slot o of this block receives from the o-th
    // other block.
    u32 remote_slot[K1 - 1], remote_ready[K1 - 1];
#pragma unroll
    for (int o = 0; o < K1 - 1; o++) {
        const u32 t = other_rank(o, rank);
        const u32 slot = rank < t ? rank : rank - 1;
        remote_slot[o] = cluster_address(received + slot * LEVELS * PM, t);
        remote_ready[o] = cluster_address(&digits_ready[warp], t);
    }

    u32 a_next = n > 0 ? mask_switched[0] : 0;
    for (u32 i = 0; i < n; i++) {
        const u32 a = a_next;
        if (i + 1 < n) a_next = mask_switched[i + 1];
        const u32 parity = i & 1;
        u64 *const ready = &digits_ready[parity * WARPS + warp];
        if (threadIdx.x == 0) {  // every warp read CMux i - 1's rows before the last barrier
            copy_to_shared(key_s, key_column + i * GGSW, KEY_BYTES, key_ready);
            if (i + 1 < n) prefetch_to_l2(key_column + (i + 1) * GGSW, KEY_BYTES);
        }
        if (lane == 0) mbarrier_expect(ready, (K1 - 1) * LEVELS * WARP_VALUES * 16);
        double2 out[E];
#pragma unroll
        for (int level = 0; level < LEVELS; level++) {
            if (level > 0) {  // the last level's last pass and copies have read `work`
                if (lane == 0) wait_bulk_reads();
                __syncthreads();
            }
            decompose_first_pass<LOG2M, LOG_E, THREADS, 1, B, LEVELS>(acc, a, work, tw,
                                                                            twist, &own, level);
            __syncthreads();
            fft_forward<LOG2M, LOG_E, THREADS, 1, true, LOG2M - LOG_E, P + LOG_E, true>(work,
                                                                                        tw);
            // The last pass's inputs in this warp's own part of `work` (which only this warp
            // wrote and reads) go to every other block with the copy engine, which runs the
            // last stages on them itself. The fence comes before this thread's loads of them
            // (it waits for every access in flight).
            fence_proxy_async();
            __syncwarp();
            if (lane == 0) {
                const u32 offset = (parity * RECEIVED + level * PM + warp * WARP_VALUES) * 16;
#pragma unroll
                for (int o = 0; o < K1 - 1; o++) {
                    copy_to_cluster(remote_slot[o] + offset, work + warp * WARP_VALUES,
                                    WARP_VALUES * 16, remote_ready[o] + parity * WARPS * 8);
                }
            }
            double2 x[E];
            load_last_pass<LOG2M>(work, x);
            forward_last_stages<LOG2M>(tw, x);
            if (level == 0) mbarrier_wait(key_ready, parity);
            const double2 *key_row = key_s + (level * K1 + rank) * M;
#pragma unroll
            for (int e = 0; e < E; e++) {
                const double2 k = key_row[key_position(u * E + e)];
                out[e] = level == 0 ? cmul(x[e], k) : cmul_add(out[e], x[e], k);
            }
        }
        // The first other block's key values are read while its digits are still on the way.
        double2 first_key[E];
        {
            const double2 *key_row = key_s + other_rank(0, rank) * M;
#pragma unroll
            for (int e = 0; e < E; e++) first_key[e] = key_row[key_position(u * E + e)];
        }
        mbarrier_wait(ready, (i >> 1) & 1);
#pragma unroll
        for (int o = 0; o < K1 - 1; o++) {
            const u32 sender = other_rank(o, rank);
#pragma unroll
            for (int level = 0; level < LEVELS; level++) {
                double2 y[E];
                load_last_pass<LOG2M>(received + parity * RECEIVED + (o * LEVELS + level) * PM,
                                      y);
                forward_last_stages<LOG2M>(tw, y);
                const double2 *key_row = key_s + (level * K1 + sender) * M;
#pragma unroll
                for (int e = 0; e < E; e++) {
                    const double2 k = o == 0 && level == 0 ? first_key[e]
                                                           : key_row[key_position(u * E + e)];
                    out[e] = cmul_add(out[e], y[e], k);
                }
            }
        }
        if (lane == 0) wait_bulk_reads();  // before the warp's part of `work` is written again
        __syncwarp();  // the warp has read its part of `work`
        inverse_first_stages<LOG2M>(out, tw, work);
        __syncwarp();  // the next pass (q = 2^(P + 3) <= 32) reads the warp's own part
        fft_inverse_add<LOG2M, LOG_E, THREADS, 1, P + LOG_E, false, true>(work, tw, acc,
                                                                                twist, &own);
    }
    // No block may exit (freeing its shared memory and mbarriers) while another block's copy
    // may still read from or land in it; every incoming copy has landed (waited for), this
    // keeps the exits in step.
    cluster_barrier();
    // With `extract`, the LWE sample of coefficient 0 (as fhe_sample_extract), kN + 1 words
    // per ciphertext, instead of the accumulator. Its indices are read afresh (asm volatile):
    // with the loop's values kept live until here, the compiler rematerialized some of them
    // inside the CMux loop, 27 instructions more per CMux (+0.6% per bootstrap, measured on
    // an H100).
    if (extract) {
        u32 block, thread;
        asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(block));
        asm volatile("mov.u32 %0, %%tid.x;" : "=r"(thread));
        const u32 r = cluster_rank();
        u64 *lwe = out + block / K1 * ((K1 - 1) * (u64)N_POLY + 1);
        if (r < K1 - 1) {
#pragma unroll
            for (u32 t = thread; t < N_POLY; t += THREADS) {
                lwe[r * N_POLY + t] = t == 0 ? acc[0] : 0ull - acc[N_POLY - t];
            }
        } else if (thread == 0) {
            lwe[(K1 - 1) * N_POLY] = acc[0];
        }
    } else {
        u64 *dst = out + (ct * K1 + rank) * (u64)N_POLY;
#pragma unroll
        for (u32 t = threadIdx.x; t < N_POLY; t += THREADS) dst[t] = acc[t];
    }
}

extern "C" __global__ void __cluster_dims__(FHE_K1, 1, 1)
    __launch_bounds__(ClusterShape<FHE_LOG2M>::THREADS)
        FHE_KERNEL_NAME(fhe_blind_rotate_cluster)(
            const FheShape s, const u64 *__restrict__ small, const u64 *__restrict__ lut,
            const double2 *__restrict__ bsk, const double2 *__restrict__ twist,
            const double2 *__restrict__ tw_staged, u64 *out, u32 extract) {
    blind_rotate_cluster<FHE_K1, FHE_LOG2M, FHE_LEVELS, FHE_BASE_LOG>(s, small, lut, bsk,
                                                                      twist, tw_staged, out,
                                                                      extract);
}
#endif
