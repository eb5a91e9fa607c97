// Bulk ChaCha keystream kernels, one per round count (8, 12, 20).
//
// <name>_keystream: block i of the launch writes block(key, counter + i, nonce) as 16 words
//                   to out[16 i .. 16 i + 16); the host guarantees counter + blocks <= 2^32.
// <name>_digest:    XOR of blocks counter .. counter + blocks, word by word, accumulated into
//                   out[0..16) (which the host zeroes): the block function's rate with no
//                   memory traffic, checked against the CPU's digest.
#include "chacha.cuh"

struct ChaChaStream {
    ChaChaKey key;
    u32 nonce[3];
    u32 counter;
};

template <int ROUNDS>
__device__ __forceinline__ void keystream(const ChaChaStream& s, u64 blocks, uint4* out) {
    for (u64 i = global_thread_index(); i < blocks; i += grid_thread_count()) {
        u32 w[16];
        chacha_block<ROUNDS>(s.key, s.counter + (u32)i, s.nonce[0], s.nonce[1], s.nonce[2], w);
        uint4* dst = out + 4 * i;
        dst[0] = make_uint4(w[0], w[1], w[2], w[3]);
        dst[1] = make_uint4(w[4], w[5], w[6], w[7]);
        dst[2] = make_uint4(w[8], w[9], w[10], w[11]);
        dst[3] = make_uint4(w[12], w[13], w[14], w[15]);
    }
}

template <int ROUNDS>
__device__ __forceinline__ void digest(const ChaChaStream& s, u64 blocks, u32* out) {
    u32 acc[16];
#pragma unroll
    for (int k = 0; k < 16; ++k) acc[k] = 0;
    for (u64 i = global_thread_index(); i < blocks; i += grid_thread_count()) {
        u32 w[16];
        chacha_block<ROUNDS>(s.key, s.counter + (u32)i, s.nonce[0], s.nonce[1], s.nonce[2], w);
#pragma unroll
        for (int k = 0; k < 16; ++k) acc[k] ^= w[k];
    }
    // Fold the warp's accumulators into lane 0, which adds them to the grid's result.
#pragma unroll
    for (int k = 0; k < 16; ++k) {
#pragma unroll
        for (int offset = 16; offset > 0; offset /= 2) {
            acc[k] ^= __shfl_xor_sync(0xffffffffu, acc[k], offset);
        }
    }
    if ((threadIdx.x & 31) == 0) {
#pragma unroll
        for (int k = 0; k < 16; ++k) atomicXor(out + k, acc[k]);
    }
}

#define CHACHA_KERNELS(NAME, ROUNDS)                                                      \
    extern "C" __global__ void NAME##_keystream(ChaChaStream s, u64 blocks, uint4* out) { \
        keystream<ROUNDS>(s, blocks, out);                                                \
    }                                                                                     \
    extern "C" __global__ void NAME##_digest(ChaChaStream s, u64 blocks, u32* out) {      \
        digest<ROUNDS>(s, blocks, out);                                                   \
    }

CHACHA_KERNELS(chacha8, 8)
CHACHA_KERNELS(chacha12, 12)
CHACHA_KERNELS(chacha20, 20)
