// fhe_pbs.cu's multi-bit key bundles; included after the parameter set's definitions.
#pragma once
#include "fhe_fft.cuh"

// The key bundles of a multi-bit bootstrap (grouping factor g), off the blind rotation's
// serial chain: for ciphertext c (n + 1 words at small + c (n + 1)) and group i < groups,
//   bundles[(c groups + i) GGSW + q] = sum over t < 2^g of W_q^(d_t) key[(i 2^g + t) GGSW + q],
// with `key` the multi-bit bootstrap key in the Fourier domain and the device layout of a
// classic key (its GGSW_LEN complex values a GGSW), d_t the switched sum of the group's mask
// words selected by pattern t (tfhe-rs's modulus_switch_multi_bit; d_0 = 0), and W_q^d the
// value of the monomial X^d at the evaluation point of position q: exp(i pi r_q d / N),
// r_q = roots[q mod N/2] (odd, from the host's transform of X). One thread per value.
extern "C" __global__ void FHE_KERNEL_NAME(fhe_multi_bit_bundles)(
    const FheShape s, const u64 *__restrict__ small, const double2 *__restrict__ key,
    const u32 *__restrict__ roots, u32 grouping, u32 groups, u64 ggsw_len, u64 total,
    double2 *__restrict__ bundles) {
    const u64 index = blockIdx.x * (u64)blockDim.x + threadIdx.x;
    if (index >= total) return;
    const u64 q = index % ggsw_len;
    const u64 group_index = index / ggsw_len;  // c groups + i
    const u32 i = (u32)(group_index % groups);
    const u64 c = group_index / groups;
    const u64 *words = small + c * (s.lwe_dimension + 1) + (u64)i * grouping;
    const u32 log2_2n = s.log2_polynomial_size + 1;
    const u32 two_n_mask = (2u << s.log2_polynomial_size) - 1;
    const u32 root = roots[q & ((s.polynomial_size >> 1) - 1)];
    const double2 *ggsws = key + (u64)i * (1u << grouping) * ggsw_len + q;
    double2 sum = ggsws[0];
    for (u32 t = 1; t < (1u << grouping); t++) {
        u64 word_sum = 0;
        for (u32 j = 0; j < grouping; j++) {
            if ((t >> (grouping - 1 - j)) & 1) word_sum += words[j];
        }
        const u32 degree = modulus_switch(word_sum, log2_2n);
        const u32 angle = (u32)(((u64)root * degree) & two_n_mask);
        double sine, cosine;
        sincospi((double)angle / (double)s.polynomial_size, &sine, &cosine);
        sum = cmul_add(sum, ggsws[(u64)t * ggsw_len], make_double2(cosine, sine));
    }
    bundles[index] = sum;
}
