// TFHE key switch and programmable bootstrap on the 64-bit torus (fhe-pbs crate).
//
// Conventions are those of fhe-pbs/src (lib.rs): u64 torus with wrapping arithmetic, LWE =
// mask then body, GLWE = k masks then the body, key-switching key input-coefficient major with
// level 1 first, Fourier bootstrap key = the CPU FourierBootstrapKey with each polynomial's
// N/2 complex values permuted into bit-reversed order (see below).
//
// The negacyclic FFT: a polynomial a of N coefficients becomes c_j = (a_j + i a_{j+M}) w^j,
// M = N/2, w = exp(i pi / N) (the twist, the same table as fft.rs), then an M-point complex
// DFT with the forward sign exp(-2 pi i / M) (rustfft's). Our forward transform is a radix-4
// (plus one radix-2 stage when log2 M is odd) decimation-in-frequency FFT in shared memory:
// natural order in, bit-reversed order out. The inverse is the matching decimation-in-time
// FFT: bit-reversed order in, natural order out. Pointwise products happen in bit-reversed
// order, which is why the host uploads the key permuted. Precision is that of fft.rs: nothing
// is split, digits enter exactly, and each backward coefficient is rounded and reduced mod
// 2^64 exactly by wrap_f64.
#include "common.cuh"

typedef long long i64;

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
};

// ---------------------------------------------------------------------------------------
// Integer stages (bit-exact with the CPU).

// round(x 2N / 2^64) mod 2N, as modswitch.rs: ((x >> (64 - log2_2n - 1)) + 1) >> 1.
__device__ __forceinline__ u32 modulus_switch(u64 x, u32 log2_2n) {
    u64 switched = ((x >> (63 - log2_2n)) + 1) >> 1;
    return (u32)(switched & ((1ull << log2_2n) - 1));
}

// The rounded decomposition state of decomposition.rs: x rounded to the closest multiple of
// 2^dropped (ties up), keeping the top b l bits.
__device__ __forceinline__ u64 decomposition_state(u64 x, u32 dropped) {
    if (dropped == 0) return x;
    return ((x >> dropped) + ((x >> (dropped - 1)) & 1)) & (~0ull >> dropped);
}

// The next digit from the least significant level up (decomposition.rs's carry rule: take
// -B/2 on a tie exactly when bit b - 1 of the remaining state is set).
__device__ __forceinline__ i64 next_digit(u64 &state, u32 b) {
    if (b >= 64) {  // one level of 64 bits: the digit is the value itself
        i64 digit = (i64)state;
        state = 0;
        return digit;
    }
    u64 mask = (1ull << b) - 1;
    u64 half = 1ull << (b - 1);
    u64 raw = state & mask;
    u64 rest = state >> b;
    u64 carry = (u64)(raw > half) | ((u64)(raw == half) & (rest >> (b - 1)) & 1ull);
    state = rest + carry;
    return (i64)(raw - (carry << b));
}

// (X^a p)[t] in Z[X]/(X^N + 1), a in [0, 2N) (polynomial.rs's multiply_by_monomial).
__device__ __forceinline__ u64 rotated(const u64 *p, u32 a, u32 t, u32 n_poly) {
    u32 shift = a & (n_poly - 1);
    bool negate = a >= n_poly;
    u64 v;
    if (t >= shift) {
        v = p[t - shift];
    } else {
        v = p[t + n_poly - shift];
        negate = !negate;
    }
    return negate ? 0ull - v : v;
}

// Every word of `words` u64 switched to 2N = 2^log2_2n.
extern "C" __global__ void fhe_modulus_switch(const u64 *__restrict__ input,
                                              u32 *__restrict__ output, u64 words,
                                              u32 log2_2n) {
    for (u64 i = global_thread_index(); i < words; i += grid_thread_count()) {
        output[i] = modulus_switch(input[i], log2_2n);
    }
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
// integer sum. A block computes KS_THREADS output words for KS_TILE ciphertexts over a range
// of input coefficients (its split), staging the digits of KS_CHUNK coefficients at a time in
// shared memory, and adds its partial sum with 64-bit atomics into the zeroed output (sums
// mod 2^64 do not depend on the order, so the result is bit-exact). The grid is flattened:
// block = (split * ct_blocks + ct_block) * word_blocks + word_block.

#define KS_THREADS 128
#define KS_TILE 8
#define KS_CHUNK 32

extern "C" __global__ void __launch_bounds__(KS_THREADS)
    fhe_keyswitch(const FheShape s, const u64 *__restrict__ input, const u64 *__restrict__ ksk,
                  u64 *__restrict__ output, u32 count, u32 word_blocks, u32 ct_blocks,
                  u32 inputs_per_split) {
    extern __shared__ i64 ks_digits[];  // [KS_TILE][KS_CHUNK][levels]
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
    const u32 ct0 = ct_block * KS_TILE;
    const u32 i_begin = split * inputs_per_split;
    const u32 i_end = min(in_dim, i_begin + inputs_per_split);

    u64 acc[KS_TILE];
#pragma unroll
    for (int t = 0; t < KS_TILE; t++) acc[t] = 0;

    for (u32 i0 = i_begin; i0 < i_end; i0 += KS_CHUNK) {
        const u32 chunk = min((u32)KS_CHUNK, i_end - i0);
        __syncthreads();  // the previous chunk's digits are consumed
        for (u32 e = threadIdx.x; e < KS_TILE * chunk; e += KS_THREADS) {
            const u32 t = e / chunk;
            const u32 ii = e % chunk;
            const u32 ct = ct0 + t;
            const u64 x = ct < count ? input[(u64)ct * (in_dim + 1) + i0 + ii] : 0;
            u64 state = decomposition_state(x, dropped);
            i64 *d = ks_digits + ((u64)t * KS_CHUNK + ii) * levels;
            for (u32 j = levels; j-- > 0;) d[j] = next_digit(state, b);
        }
        __syncthreads();
        if (w < out_width) {
            for (u32 ii = 0; ii < chunk; ii++) {
                for (u32 j = 0; j < levels; j++) {
                    const u64 key = ksk[((u64)(i0 + ii) * levels + j) * out_width + w];
#pragma unroll
                    for (int t = 0; t < KS_TILE; t++) {
                        acc[t] += (u64)ks_digits[((u64)t * KS_CHUNK + ii) * levels + j] * key;
                    }
                }
            }
        }
    }
    if (w < out_width) {
#pragma unroll
        for (int t = 0; t < KS_TILE; t++) {
            const u32 ct = ct0 + t;
            if (ct >= count) continue;
            u64 v = 0ull - acc[t];
            if (split == 0 && w == out_width - 1) v += input[(u64)ct * (in_dim + 1) + in_dim];
            atomicAdd((unsigned long long *)&output[(u64)ct * out_width + w], v);
        }
    }
}

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
// a * conj(b)
__device__ __forceinline__ double2 cmul_conj(double2 a, double2 b) {
    return make_double2(a.x * b.x + a.y * b.y, a.y * b.x - a.x * b.y);
}

// Forward DIF FFT of `polys` consecutive M-point polynomials in shared memory (M = 2^log2m,
// log2m >= 2), natural order in, bit-reversed order out. tw[t] = exp(-2 pi i t / M), t < M/2.
// Ends with __syncthreads(); the caller syncs before.
__device__ void fft_forward(double2 *data, u32 polys, u32 log2m, const double2 *__restrict__ tw) {
    const u32 m = 1u << log2m;
    const u32 quarter_log = log2m - 2;
    const u32 groups = polys << quarter_log;
    u32 len_log = log2m;
    for (; len_log >= 2; len_log -= 2) {
        const u32 q_log = len_log - 2;
        const u32 q = 1u << q_log;
        const u32 stride_log = log2m - len_log;  // W_len^x = tw[x << stride_log]
        for (u32 g = threadIdx.x; g < groups; g += blockDim.x) {
            const u32 poly = g >> quarter_log;
            const u32 gg = g & ((1u << quarter_log) - 1);
            const u32 j = gg & (q - 1);
            double2 *p = data + (poly << log2m) + ((gg >> q_log) << len_log) + j;
            const double2 x0 = p[0], x1 = p[q], x2 = p[2 * q], x3 = p[3 * q];
            const double2 w1 = tw[j << stride_log];
            const double2 w3 = tw[(j + q) << stride_log];
            const double2 w2 = tw[(2 * j) << stride_log];
            const double2 a0 = cadd(x0, x2), a2 = cmul(csub(x0, x2), w1);
            const double2 a1 = cadd(x1, x3), a3 = cmul(csub(x1, x3), w3);
            p[0] = cadd(a0, a1);
            p[q] = cmul(csub(a0, a1), w2);
            p[2 * q] = cadd(a2, a3);
            p[3 * q] = cmul(csub(a2, a3), w2);
        }
        __syncthreads();
    }
    if (len_log == 1) {  // one radix-2 stage of span 1 (twiddle 1)
        const u32 pairs = polys << (log2m - 1);
        for (u32 g = threadIdx.x; g < pairs; g += blockDim.x) {
            double2 *p = data + 2 * g;
            const double2 x0 = p[0], x1 = p[1];
            p[0] = cadd(x0, x1);
            p[1] = csub(x0, x1);
        }
        __syncthreads();
    }
}

// Inverse (unnormalized, sign +) DIT FFT: bit-reversed order in, natural order out. Ends with
// __syncthreads(); the caller syncs before.
__device__ void fft_inverse(double2 *data, u32 polys, u32 log2m, const double2 *__restrict__ tw) {
    const u32 quarter_log = log2m - 2;
    const u32 groups = polys << quarter_log;
    u32 cur_log = 0;  // spans below 2^cur_log are done
    if (log2m & 1) {
        const u32 pairs = polys << (log2m - 1);
        for (u32 g = threadIdx.x; g < pairs; g += blockDim.x) {
            double2 *p = data + 2 * g;
            const double2 x0 = p[0], x1 = p[1];
            p[0] = cadd(x0, x1);
            p[1] = csub(x0, x1);
        }
        __syncthreads();
        cur_log = 1;
    }
    for (; cur_log < log2m; cur_log += 2) {
        const u32 q_log = cur_log;
        const u32 q = 1u << q_log;
        const u32 len_log = cur_log + 2;
        const u32 stride_log = log2m - len_log;
        for (u32 g = threadIdx.x; g < groups; g += blockDim.x) {
            const u32 poly = g >> quarter_log;
            const u32 gg = g & ((1u << quarter_log) - 1);
            const u32 j = gg & (q - 1);
            double2 *p = data + (poly << log2m) + ((gg >> q_log) << len_log) + j;
            const double2 x0 = p[0], x1 = p[q], x2 = p[2 * q], x3 = p[3 * q];
            const double2 w2 = tw[(2 * j) << stride_log];
            const double2 v1 = cmul_conj(x1, w2), v3 = cmul_conj(x3, w2);
            const double2 a0 = cadd(x0, v1), a1 = csub(x0, v1);
            const double2 a2 = cadd(x2, v3), a3 = csub(x2, v3);
            const double2 u2 = cmul_conj(a2, tw[j << stride_log]);
            const double2 u3 = cmul_conj(a3, tw[(j + q) << stride_log]);
            p[0] = cadd(a0, u2);
            p[2 * q] = csub(a0, u2);
            p[q] = cadd(a1, u3);
            p[3 * q] = csub(a1, u3);
        }
        __syncthreads();
    }
}

// round(x) mod 2^64, exactly (fft.rs's wrap_f64): y = r - round(r / 2^64) 2^64 is exact and
// lies in [-2^63, 2^63]; its two's complement is the result.
__device__ __forceinline__ u64 wrap_f64(double x) {
    const double r = rint(x);
    double y = r - rint(r * 0x1p-64) * 0x1p64;
    if (y >= 0x1p63) y -= 0x1p64;
    return (u64)(i64)y;
}

// Rotates, decomposes and twists the difference X^a p - p of one accumulator polynomial into
// `levels` complex polynomials: dig[level * level_stride + j] for j < M, level 0 the most
// significant, ready for fft_forward. The decomposition is fused: each thread owns
// coefficients j and j + M and writes their digits straight into the transform's input.
__device__ __forceinline__ void decompose_difference(const u64 *p, u32 a, const FheShape &s,
                                                     double2 *dig, u32 level_stride,
                                                     const double2 *__restrict__ twist) {
    const u32 n_poly = s.polynomial_size;
    const u32 m = n_poly >> 1;
    const u32 levels = s.level_count;
    const u32 b = s.base_log;
    const u32 dropped = 64 - b * levels;
#pragma unroll 4
    for (u32 j = threadIdx.x; j < m; j += blockDim.x) {
        const u64 lo = rotated(p, a, j, n_poly) - p[j];
        const u64 hi = rotated(p, a, j + m, n_poly) - p[j + m];
        u64 state_lo = decomposition_state(lo, dropped);
        u64 state_hi = decomposition_state(hi, dropped);
        const double2 w = twist[j];
        for (u32 level = levels; level-- > 0;) {
            const i64 d_lo = next_digit(state_lo, b);
            const i64 d_hi = next_digit(state_hi, b);
            dig[level * level_stride + j] = cmul(make_double2((double)d_lo, (double)d_hi), w);
        }
    }
}

// Asks L2 for the key lines a block will read in this CMux's pointwise product (`polys`
// consecutive polynomials of M values from `key`), so that their DRAM latency overlaps the
// decomposition and the forward FFT. One prefetch per 128-byte line (8 complex values).
__device__ __forceinline__ void prefetch_key(const double2 *key, u32 polys, u32 m) {
    const u32 lines = (polys * m) >> 3;
    for (u32 line = threadIdx.x; line < lines; line += blockDim.x) {
        asm volatile("prefetch.global.L2 [%0];" ::"l"(key + ((u64)line << 3)));
    }
}

// acc[j] += round(Re), acc[j + M] += round(Im) of out[j] untwisted (1/M included).
__device__ __forceinline__ void add_backward(u64 *acc, const double2 *out, u32 m,
                                             const double2 *__restrict__ untwist) {
#pragma unroll 4
    for (u32 j = threadIdx.x; j < m; j += blockDim.x) {
        const double2 v = cmul(out[j], untwist[j]);
        acc[j] += wrap_f64(v.x);
        acc[j + m] += wrap_f64(v.y);
    }
}

// ---------------------------------------------------------------------------------------
// Blind rotation, amortized: one block per ciphertext, many in flight. The accumulator lives
// in shared memory after the digits when `acc_in_shared` (the host checks that K1 N words
// more fit), else in the output buffer (global memory); shared memory holds the K1 l digit
// polynomials in the Fourier domain (K1 l M double2), whose first K1 slots then receive the
// K1 output polynomials of the external product (each thread owns the same positions in the
// pointwise product, so reading all rows before writing is race-free).

template <int K1>
__device__ __forceinline__ void blind_rotate_amortized(
    const FheShape &s, const u32 *__restrict__ switched, const u64 *__restrict__ lut,
    const double2 *__restrict__ bsk, const double2 *__restrict__ twist,
    const double2 *__restrict__ untwist, const double2 *__restrict__ tw, u64 *glwe,
    u32 acc_in_shared) {
    extern __shared__ double2 fhe_smem[];
    double2 *dig = fhe_smem;
    const u32 n = s.lwe_dimension;
    const u32 n_poly = s.polynomial_size;
    const u32 m = n_poly >> 1;
    const u32 log2m = s.log2_polynomial_size - 1;
    const u32 rows = K1 * s.level_count;
    const u64 ct = blockIdx.x;
    const u32 *sw = switched + ct * (n + 1);
    u64 *const out_glwe = glwe + ct * (u64)K1 * n_poly;
    u64 *const acc = acc_in_shared ? (u64 *)(fhe_smem + rows * m) : out_glwe;

    // ACC = (0, ..., 0, X^{-b~} LUT)
    const u32 start = (2 * n_poly - sw[n]) & (2 * n_poly - 1);
    for (u32 t = threadIdx.x; t < n_poly; t += blockDim.x) {
#pragma unroll
        for (int r = 0; r < K1 - 1; r++) acc[r * n_poly + t] = 0;
        acc[(K1 - 1) * n_poly + t] = rotated(lut, start, t, n_poly);
    }
    __syncthreads();

    for (u32 i = 0; i < n; i++) {
        const u32 a = sw[i];
        if (a == 0) continue;  // X^0 ACC - ACC = 0: the CMux leaves ACC unchanged
        const double2 *ggsw = bsk + (u64)i * rows * K1 * m;
        prefetch_key(ggsw, rows * K1, m);
#pragma unroll
        for (int r = 0; r < K1; r++) {
            decompose_difference(acc + r * n_poly, a, s, dig + r * m, K1 * m, twist);
        }
        __syncthreads();
        fft_forward(dig, rows, log2m, tw);
#pragma unroll 2
        for (u32 j = threadIdx.x; j < m; j += blockDim.x) {
            double2 out[K1];
#pragma unroll
            for (int c = 0; c < K1; c++) out[c] = make_double2(0.0, 0.0);
            for (u32 row = 0; row < rows; row++) {
                const double2 x = dig[row * m + j];
#pragma unroll
                for (int c = 0; c < K1; c++) {
                    out[c] = cadd(out[c], cmul(x, ggsw[(u64)(row * K1 + c) * m + j]));
                }
            }
#pragma unroll
            for (int c = 0; c < K1; c++) dig[c * m + j] = out[c];
        }
        __syncthreads();
        fft_inverse(dig, K1, log2m, tw);
#pragma unroll
        for (int c = 0; c < K1; c++) add_backward(acc + c * n_poly, dig + c * m, m, untwist);
        __syncthreads();
    }
    if (acc_in_shared) {
        for (u32 t = threadIdx.x; t < K1 * n_poly; t += blockDim.x) out_glwe[t] = acc[t];
    }
}

#define FHE_AMORTIZED_THREADS 256
// At least 3 blocks per SM (at most 85 registers per thread): latency-bound blocks need
// company on their SM.
#define FHE_AMORTIZED_MIN_BLOCKS 3

#define FHE_DEFINE_AMORTIZED(K1)                                                              \
    extern "C" __global__ void __launch_bounds__(FHE_AMORTIZED_THREADS,                      \
                                                 FHE_AMORTIZED_MIN_BLOCKS)                   \
        fhe_blind_rotate_amortized_k##K1(const FheShape s, const u32 *__restrict__ switched, \
                                         const u64 *__restrict__ lut,                        \
                                         const double2 *__restrict__ bsk,                    \
                                         const double2 *__restrict__ twist,                  \
                                         const double2 *__restrict__ untwist,                \
                                         const double2 *__restrict__ tw, u64 *glwe,          \
                                         u32 acc_in_shared) {                                \
        blind_rotate_amortized<K1>(s, switched, lut, bsk, twist, untwist, tw, glwe,          \
                                   acc_in_shared);                                           \
    }

FHE_DEFINE_AMORTIZED(2)
FHE_DEFINE_AMORTIZED(3)
FHE_DEFINE_AMORTIZED(4)

// ---------------------------------------------------------------------------------------
// Blind rotation, low latency (Hopper, sm_90+): one bootstrap per thread-block cluster of K1
// blocks; block `rank` owns accumulator polynomial `rank` (in its shared memory) and output
// column `rank` of the external product. Each CMux:
//   1. rotate, decompose and twist the own polynomial into l digit polynomials (buffer
//      `parity`), forward FFT them;                                   (block syncs only)
//   2. one cluster barrier (release/acquire): every block's digits are ready;
//   3. pointwise product of all K1 l digit polynomials, read through distributed shared
//      memory, with the key rows of column `rank` (streamed from global memory), into the
//      first polynomial of the *other* buffer;
//   4. inverse FFT, round, add to the own accumulator polynomial.
// The digit buffers alternate between CMuxes, so a block never overwrites digits another
// block may still read: it writes buffer p again only after the next CMux's barrier, which
// every block reaches after finishing its reads of buffer p. One cluster barrier per CMux.

__device__ __forceinline__ u32 cluster_rank() {
    u32 rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
}

__device__ __forceinline__ void cluster_barrier() {
    asm volatile(
        "barrier.cluster.arrive.release.aligned;\n\t"
        "barrier.cluster.wait.acquire.aligned;" ::
            : "memory");
}

// The generic address of the same shared-memory location in block `rank` of the cluster.
__device__ __forceinline__ const double2 *map_shared_rank(const double2 *p, u32 rank) {
    u64 out;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(out) : "l"(p), "r"(rank));
    return (const double2 *)out;
}

template <int K1>
__device__ __forceinline__ void blind_rotate_cluster(
    const FheShape &s, const u32 *__restrict__ switched, const u64 *__restrict__ lut,
    const double2 *__restrict__ bsk, const double2 *__restrict__ twist,
    const double2 *__restrict__ untwist, const double2 *__restrict__ tw, u64 *glwe) {
    extern __shared__ double2 fhe_smem[];
    const u32 n = s.lwe_dimension;
    const u32 n_poly = s.polynomial_size;
    const u32 m = n_poly >> 1;
    const u32 log2m = s.log2_polynomial_size - 1;
    const u32 levels = s.level_count;
    const u32 rows = K1 * levels;
    const u32 rank = cluster_rank();
    const u64 ct = blockIdx.x / K1;
    const u32 *sw = switched + ct * (n + 1);
    double2 *buffers[2] = {fhe_smem, fhe_smem + levels * m};
    u64 *acc = (u64 *)(fhe_smem + 2 * levels * m);

    const u32 start = (2 * n_poly - sw[n]) & (2 * n_poly - 1);
    for (u32 t = threadIdx.x; t < n_poly; t += blockDim.x) {
        acc[t] = rank == K1 - 1 ? rotated(lut, start, t, n_poly) : 0;
    }
    __syncthreads();

    u32 parity = 0;
    for (u32 i = 0; i < n; i++) {
        const u32 a = sw[i];
        if (a == 0) continue;  // uniform over the cluster: every block skips it
        double2 *mine = buffers[parity];
        const double2 *ggsw = bsk + (u64)i * rows * K1 * m;
        // This block's column: rows (row K1 + rank) for every row; prefetch each polynomial.
        for (u32 row = 0; row < rows; row++) prefetch_key(ggsw + (u64)(row * K1 + rank) * m, 1, m);
        decompose_difference(acc, a, s, mine, m, twist);
        __syncthreads();
        fft_forward(mine, levels, log2m, tw);
        cluster_barrier();
        double2 *out = buffers[parity ^ 1];
#pragma unroll 4
        for (u32 j = threadIdx.x; j < m; j += blockDim.x) {
            double2 sum = make_double2(0.0, 0.0);
#pragma unroll
            for (int r = 0; r < K1; r++) {
                const double2 *theirs = map_shared_rank(mine, r);
                for (u32 level = 0; level < levels; level++) {
                    const u32 row = level * K1 + r;
                    sum = cadd(sum, cmul(theirs[level * m + j],
                                         ggsw[(u64)(row * K1 + rank) * m + j]));
                }
            }
            out[j] = sum;
        }
        __syncthreads();
        fft_inverse(out, 1, log2m, tw);
        add_backward(acc, out, m, untwist);
        __syncthreads();
        parity ^= 1;
    }
    // No block may exit (freeing its shared memory) while another still reads it.
    cluster_barrier();
    u64 *dst = glwe + (ct * K1 + rank) * (u64)n_poly;
    for (u32 t = threadIdx.x; t < n_poly; t += blockDim.x) dst[t] = acc[t];
}

#define FHE_CLUSTER_THREADS 512

#if __CUDA_ARCH__ >= 900
#define FHE_DEFINE_CLUSTER(K1)                                                              \
    extern "C" __global__ void __cluster_dims__(K1, 1, 1)                                  \
        __launch_bounds__(FHE_CLUSTER_THREADS)                                              \
            fhe_blind_rotate_cluster_k##K1(const FheShape s, const u32 *__restrict__ switched, \
                                           const u64 *__restrict__ lut,                      \
                                           const double2 *__restrict__ bsk,                  \
                                           const double2 *__restrict__ twist,                \
                                           const double2 *__restrict__ untwist,              \
                                           const double2 *__restrict__ tw, u64 *glwe) {      \
        blind_rotate_cluster<K1>(s, switched, lut, bsk, twist, untwist, tw, glwe);           \
    }

FHE_DEFINE_CLUSTER(2)
FHE_DEFINE_CLUSTER(3)
FHE_DEFINE_CLUSTER(4)
#endif
