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
#include "fhe_integer.cuh"
#include "fhe_keyswitch.cuh"
#include "fhe_fft.cuh"

// ---------------------------------------------------------------------------------------
// The parameter set the blind rotations are compiled for. The host compiles this module once
// per parameter set (fhe-pbs/src/cuda), prepending
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
// fhe_decompose's: out[j len + i] = digit j (level j + 1) of input[i]. It takes fhe_decompose's
// arguments; the base log and level count must be the compiled ones (FHE_BASE_LOG, FHE_LEVELS).
extern "C" __global__ void FHE_KERNEL_NAME(fhe_pbs_decompose)(const u64 *__restrict__ input,
                                                               i64 *__restrict__ output,
                                                               u64 len, u32, u32) {
    for (u64 i = global_thread_index(); i < len; i += grid_thread_count()) {
        if constexpr (FHE_LEVELS == 1 && FHE_BASE_LOG <= 31) {
            output[i] = (i64)single_level_digit<FHE_BASE_LOG>(input[i]);
        } else {
            u64 state = decomposition_state(input[i], 64 - FHE_BASE_LOG * FHE_LEVELS);
            for (u32 j = FHE_LEVELS; j-- > 0;) output[(u64)j * len + i] = next_digit(state, FHE_BASE_LOG);
        }
    }
}

#include "fhe_multi_bit.cuh"
#include "fhe_cluster.cuh"
