// fhe_pbs.cu's multi-bit key bundles; included after the parameter set's definitions.
#pragma once
#include "fhe_fft.cuh"

// Polynomials of a GGSW: (k + 1)^2 l.
#define FHE_GGSW_POLYS (FHE_K1 * FHE_K1 * FHE_LEVELS)
// Ciphertexts whose bundles a thread of fhe_multi_bit_bundles builds together: each key value
// read and each monomial looked up serves them all; their accumulators take 16 double2
// registers. (32, for tfhe-rs's g = 4 set on an H100: 184 registers a thread, 12% of the
// warps active, 21.5 ms for the bundles of 1,024 ciphertexts; 16: 120 registers, 24%,
// 17.4 ms, the L1 87% busy with key values and monomials, when the monomials came from
// global memory.)
#define FHE_BUNDLE_TILE (FHE_GGSW_POLYS >= 16 ? 1 : 16 / FHE_GGSW_POLYS)
// The largest grouping factor (2^g GGSWs a group).
#define FHE_MAX_GROUPING 4

// exp(i pi a / N) for a < 2N, from `quadrant` (exp(i pi a / N) for a < N/2): i^(a / (N/2))
// times entry a mod N/2, by swaps and sign changes, which are exact.
__device__ __forceinline__ double2 monomial_value(const double2 *quadrant, u32 a) {
    const double2 v = quadrant[a & (FHE_N / 2 - 1)];
    const u32 turns = a / (FHE_N / 2);
    // i (x + i y) = -y + i x; -1 (x + i y) = -x - i y.
    const double2 w = (turns & 1) ? make_double2(-v.y, v.x) : v;
    return (turns & 2) ? make_double2(-w.x, -w.y) : w;
}

// The key bundles of a multi-bit bootstrap (grouping factor g), off the blind rotation's
// serial chain: for ciphertext c < count (n + 1 words at small + c (n + 1)) and group i,
//   bundles[(c groups + i) GGSW + q] = sum over t < 2^g of W_q^(d_t) key[(i 2^g + t) GGSW + q],
// with `key` the multi-bit bootstrap key in the Fourier domain and the device layout of a
// classic key (a GGSW is FHE_GGSW_POLYS polynomials of N/2 complex values), d_t the switched
// sum of the group's mask words selected by pattern t (tfhe-rs's modulus_switch_multi_bit;
// d_0 = 0), and W_q^d the value of the monomial X^d at the evaluation point of position q:
// exp(i pi r_q d / N), r_q = roots[q mod N/2] (odd, from the host's transform of X). With
// a = r_q d mod 2N, that is monomial_value(quadrant, a): each block copies `quadrant` (N/2
// complex values) into its shared memory first, since the lanes of a warp look up scattered
// entries, which shared memory serves in a few wavefronts where the L1 needs one a line.
//
// One thread per group i and position p < N/2, for all the GGSW's polynomials at p (they
// share the monomials) and FHE_BUNDLE_TILE ciphertexts at a time; block b takes the tiles
// b % tiles, b % tiles + tiles, ... (any `tiles` >= 1 covers every ciphertext) of its
// positions b / tiles, so that the blocks running together read the same key values (the
// key, 241 MB for tfhe-rs's g = 4 set, is read from memory about once per wave of blocks).
// The block size divides N/2: a block lies in one group; its tile's degrees are switched
// once, into shared memory. Dynamic shared memory: N/2 double2.
extern "C" __global__ void FHE_KERNEL_NAME(fhe_multi_bit_bundles)(
    const FheShape s, const u64 *__restrict__ small, const double2 *__restrict__ key,
    const u32 *__restrict__ roots, const double2 *__restrict__ quadrant, u32 grouping,
    u32 groups, u32 count, u32 tiles, double2 *__restrict__ bundles) {
    constexpr u32 HALF = FHE_N / 2;
    constexpr u64 GGSW_LEN = (u64)FHE_GGSW_POLYS * HALF;
    constexpr u32 TILE = FHE_BUNDLE_TILE;
    __shared__ u32 degrees[TILE << FHE_MAX_GROUPING];
    extern __shared__ double2 fhe_smem[];  // `quadrant`
    for (u32 e = threadIdx.x; e < HALF; e += blockDim.x) fhe_smem[e] = quadrant[e];
    const u32 blocks_per_group = HALF / blockDim.x;
    const u32 position_block = blockIdx.x / tiles;
    const u32 i = position_block / blocks_per_group;
    const u32 p = (position_block % blocks_per_group) * blockDim.x + threadIdx.x;
    const u32 patterns = 1u << grouping;
    const u32 log2_2n = s.log2_polynomial_size + 1;
    const u32 root = roots[p];
    const double2 *ggsws = key + (u64)i * patterns * GGSW_LEN + p;
    for (u32 first = (blockIdx.x % tiles) * TILE; first < count; first += tiles * TILE) {
        const u32 in_tile = min(TILE, count - first);
        __syncthreads();  // the previous tile's degrees are read
        for (u32 e = threadIdx.x; e < in_tile * patterns; e += blockDim.x) {
            const u32 t = e % patterns;
            const u64 *words = small + (u64)(first + e / patterns) * (s.lwe_dimension + 1) +
                               (u64)i * grouping;
            u64 word_sum = 0;
            for (u32 j = 0; j < grouping; j++) {
                if ((t >> (grouping - 1 - j)) & 1) word_sum += words[j];
            }
            degrees[e] = modulus_switch(word_sum, log2_2n);
        }
        __syncthreads();  // the degrees (the first time, the table too) are written
        double2 acc[TILE][FHE_GGSW_POLYS];
#pragma unroll
        for (u32 j = 0; j < FHE_GGSW_POLYS; j++) {
            const double2 value = ggsws[j * HALF];
#pragma unroll
            for (u32 c = 0; c < TILE; c++) acc[c][j] = value;
        }
        for (u32 t = 1; t < patterns; t++) {
            double2 values[FHE_GGSW_POLYS];
#pragma unroll
            for (u32 j = 0; j < FHE_GGSW_POLYS; j++) values[j] = ggsws[t * GGSW_LEN + j * HALF];
#pragma unroll
            for (u32 c = 0; c < TILE; c++) {
                if (c < in_tile) {
                    const u32 angle = (root * degrees[c * patterns + t]) & (2 * FHE_N - 1);
                    const double2 w = monomial_value(fhe_smem, angle);
#pragma unroll
                    for (u32 j = 0; j < FHE_GGSW_POLYS; j++) {
                        acc[c][j] = cmul_add(acc[c][j], values[j], w);
                    }
                }
            }
        }
#pragma unroll
        for (u32 c = 0; c < TILE; c++) {
            if (c < in_tile) {
                double2 *out = bundles + ((u64)(first + c) * groups + i) * GGSW_LEN + p;
#pragma unroll
                for (u32 j = 0; j < FHE_GGSW_POLYS; j++) out[j * HALF] = acc[c][j];
            }
        }
    }
}
