// One value through prp's SwapOrNot rounds and Sometimes-Recurse stages (SPEC.md, section
// "prp"), for any kernel that evaluates prp's permutations on the device: a round's swap
// bit is one ChaCha block (chacha.cuh) of the permutation's key, and `Stage` is laid out as
// prp's host code lays it out (Stage in prp/src/cuda/evaluate.rs), with the round keys
// prp derives. Exported by prp (`prp::source::PERMUTATION_HEADER`) as it exports its Rust API.
#pragma once
#include "chacha.cuh"

#define TAG_SWAP 0x53574150u

// One stage of a permutation for the random-access kernels (Stage in prp/src/cuda/evaluate.rs).
struct Stage {
    u64 domain;
    u64 first_key;  // index of the stage's round 0 in the round-key array
    u32 rounds;
    u32 index;      // the stage number s
};

// Word `index` (0..15) of a block held in registers, without dynamic register indexing.
__device__ __forceinline__ u32 select_word(const u32 w[16], u32 index) {
    u32 word = 0;
#pragma unroll
    for (u32 i = 0; i < 16; ++i) word = (i == index) ? w[i] : word;
    return word;
}

// (k - x) mod n for k, x < n, without overflow.
__device__ __forceinline__ u64 partner(u64 k, u64 x, u64 n) { return k >= x ? k - x : k + (n - x); }

// One SwapOrNot round on x, its swap bit from one ChaCha block.
template <int R>
__device__ __forceinline__ u64 swap_or_not_round(const ChaChaKey& key, u32 nonce1, u64 k, u64 n,
                                                 u64 x) {
    const u64 other = partner(k, x, n);
    const u64 xh = x > other ? x : other;
    const u64 index = xh >> 9;
    u32 w[16];
    chacha_block<R>(key, (u32)index, (u32)(index >> 32), nonce1, TAG_SWAP, w);
    const u32 bit = (select_word(w, (u32)(xh >> 5) & 15) >> (xh & 31)) & 1;
    return bit ? other : x;
}

template <int R>
__device__ __forceinline__ u64 stage_forward(const ChaChaKey& key, const Stage& s,
                                             const u64* round_keys, u64 x) {
    for (u32 r = 0; r < s.rounds; ++r)
        x = swap_or_not_round<R>(key, (r << 8) | s.index, __ldg(round_keys + s.first_key + r),
                                 s.domain, x);
    return x;
}

template <int R>
__device__ __forceinline__ u64 stage_inverse(const ChaChaKey& key, const Stage& s,
                                             const u64* round_keys, u64 x) {
    for (u32 r = s.rounds; r-- > 0;)
        x = swap_or_not_round<R>(key, (r << 8) | s.index, __ldg(round_keys + s.first_key + r),
                                 s.domain, x);
    return x;
}
