// fhe_pbs.cu's integer stages: the shapes the kernels read, the modulus switch (both of
// tfhe-rs's types), the balanced decomposition, rotation, sample extraction.
#pragma once
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

// The dimensions every kernel reads, passed by value (FheShape in fhe-pbs/src/cuda).
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

// rotated(p, a, t, n_poly) - q, for a caller that steps t by constants: it passes
// key = rotation_key(a, n_poly) + t, one add per value. The index is key mod n_poly, and key's
// top bit is set exactly when the value is negated (the index wrapped xor a >= n_poly); with m
// all ones then and zero otherwise, (v ^ m) - q - m is -v - q or v - q, with no select.
__device__ __forceinline__ u64 rotated_minus(const u64 *p, u32 key, u64 q, u32 n_poly) {
    const u32 half = (u32)((int)key >> 31);
    const u64 m = ((u64)half << 32) | half;
    const u64 v = p[key & (n_poly - 1)];
    return (v ^ m) - q - m;
}

// The key of rotated_minus for t = 0 and a < 2 n_poly: 2^31 when a >= n_poly, minus a mod n_poly.
__device__ __forceinline__ u32 rotation_key(u32 a, u32 n_poly) {
    return (a & n_poly) * (0x80000000u / n_poly) - (a & (n_poly - 1));
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

