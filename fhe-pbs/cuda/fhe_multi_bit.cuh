// fhe_pbs.cu's multi-bit key bundles; included after the parameter set's definitions.
#pragma once
#include "fhe_fft.cuh"

// Ciphertexts per thread of fhe_multi_bit_bundles: each key value a thread reads serves the
// bundles of this many ciphertexts.
#define FHE_BUNDLE_TILE 32
// The largest grouping factor (2^g GGSWs a group).
#define FHE_MAX_GROUPING 4

// The key bundles of a multi-bit bootstrap (grouping factor g), off the blind rotation's
// serial chain: for ciphertext c < count (n + 1 words at small + c (n + 1)) and group i,
//   bundles[(c groups + i) GGSW + q] = sum over t < 2^g of W_q^(d_t) key[(i 2^g + t) GGSW + q],
// with `key` the multi-bit bootstrap key in the Fourier domain and the device layout of a
// classic key (its GGSW_LEN complex values a GGSW), d_t the switched sum of the group's mask
// words selected by pattern t (tfhe-rs's modulus_switch_multi_bit; d_0 = 0), and W_q^d the
// value of the monomial X^d at the evaluation point of position q: exp(i pi r_q d / N),
// r_q = roots[q mod N/2] (odd, from the host's transform of X), read from `monomials`
// (exp(i pi a / N) for a < 2N).
//
// One thread per key value (i, q) and tile of FHE_BUNDLE_TILE ciphertexts: the thread keeps
// the group's 2^g values at q in registers and writes that position of the tile's bundles.
// Block b takes tile b % tiles of value block b / tiles, so that the blocks running together
// read the same key values (the key, 241 MB for tfhe-rs's g = 4 set, is read once a tile,
// not once a ciphertext). The block size divides GGSW_LEN: a block lies in one group, and its
// tile's degrees are switched once, into shared memory.
extern "C" __global__ void FHE_KERNEL_NAME(fhe_multi_bit_bundles)(
    const FheShape s, const u64 *__restrict__ small, const double2 *__restrict__ key,
    const u32 *__restrict__ roots, const double2 *__restrict__ monomials, u32 grouping,
    u32 groups, u64 ggsw_len, u32 count, double2 *__restrict__ bundles) {
    __shared__ u32 degrees[FHE_BUNDLE_TILE << FHE_MAX_GROUPING];
    const u32 tiles = (count + FHE_BUNDLE_TILE - 1) / FHE_BUNDLE_TILE;
    const u32 tile = blockIdx.x % tiles;
    const u64 value = (u64)(blockIdx.x / tiles) * blockDim.x + threadIdx.x;  // i GGSW + q
    const u32 i = (u32)(value / ggsw_len);
    const u64 q = value - (u64)i * ggsw_len;
    const u32 first = tile * FHE_BUNDLE_TILE;
    const u32 in_tile = min((u32)FHE_BUNDLE_TILE, count - first);
    const u32 patterns = 1u << grouping;
    const u32 log2_2n = s.log2_polynomial_size + 1;
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
    __syncthreads();
    const u32 two_n_mask = 2 * FHE_N - 1;
    const u32 root = roots[q & (FHE_N / 2 - 1)];
    const double2 *ggsws = key + (u64)i * patterns * ggsw_len + q;
    double2 values[1 << FHE_MAX_GROUPING];
#pragma unroll
    for (u32 t = 0; t < (1u << FHE_MAX_GROUPING); t++) {
        if (t < patterns) values[t] = ggsws[(u64)t * ggsw_len];
    }
    double2 *out = bundles + ((u64)first * groups + i) * ggsw_len + q;
    for (u32 c = 0; c < in_tile; c++) {
        double2 sum = values[0];
#pragma unroll
        for (u32 t = 1; t < (1u << FHE_MAX_GROUPING); t++) {
            if (t < patterns) {
                const u32 angle = (root * degrees[c * patterns + t]) & two_n_mask;
                sum = cmul_add(sum, values[t], monomials[angle]);
            }
        }
        out[(u64)c * groups * ggsw_len] = sum;
    }
}
