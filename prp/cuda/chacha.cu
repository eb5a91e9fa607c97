// Bulk ChaCha keystream kernels, one pair per round count (8, 12, 20).
//
// <name>_keystream: writes block(key, counter + i, nonce) as 16 words to out[16 i .. 16 i + 16)
//                   for every i < blocks; the host guarantees counter + blocks <= 2^32.
// <name>_digest:    the word-by-word wrapping sum of blocks counter .. counter + blocks, added
//                   into out[0..16) (which the host zeroes): the block function's rate with no
//                   memory traffic, checked against the CPU's digest. A sum rather than an XOR,
//                   because additions run on the multiplier pipe, which has room, while XORs
//                   would compete with the block function for the integer ALU.
//
// Both take any grid of KEYSTREAM_THREADS-thread blocks (grid-stride loops).
#include "chacha.cuh"

#define KEYSTREAM_THREADS 256

struct ChaChaStream {
    ChaChaKey key;
    u32 nonce[3];
    u32 counter;
};

// Each thread computes one block; the warp then writes its 32 blocks (2 KiB) through shared
// memory so that every store instruction covers 512 contiguous bytes. Storing each thread's
// 64 bytes directly scatters every instruction over 2 KiB and ran at 1.3 TB/s on an H100,
// against 3.1 TB/s this way (the device's write bandwidth).
//
// In shared memory, quarter q of the warp's block b sits at 16-byte slot 4 b + (q ^ ((b >> 1) & 3)):
// the swizzle keeps both the per-thread writes and the per-lane reads free of bank conflicts.
template <int ROUNDS>
__device__ __forceinline__ void keystream(const ChaChaStream& s, u64 blocks, uint4* out) {
    __shared__ uint4 staging[KEYSTREAM_THREADS * 4];
    const u32 lane = threadIdx.x & 31;
    uint4* warp_staging = staging + (threadIdx.x >> 5) * 128;
    for (u64 first = (u64)blockIdx.x * blockDim.x; first < blocks; first += grid_thread_count()) {
        const u64 i = first + threadIdx.x;
        u32 w[16];
        if (i < blocks) {
            chacha_block<ROUNDS>(s.key, s.counter + (u32)i, s.nonce[0], s.nonce[1], s.nonce[2], w);
            const u32 swizzle = (lane >> 1) & 3;
            warp_staging[4 * lane + (0 ^ swizzle)] = make_uint4(w[0], w[1], w[2], w[3]);
            warp_staging[4 * lane + (1 ^ swizzle)] = make_uint4(w[4], w[5], w[6], w[7]);
            warp_staging[4 * lane + (2 ^ swizzle)] = make_uint4(w[8], w[9], w[10], w[11]);
            warp_staging[4 * lane + (3 ^ swizzle)] = make_uint4(w[12], w[13], w[14], w[15]);
        }
        __syncwarp();
        const u64 warp_first = first + (threadIdx.x & ~31u);
#pragma unroll
        for (u32 k = 0; k < 4; ++k) {
            const u32 chunk = 32 * k + lane;        // 16-byte chunk of the warp's 2 KiB
            const u32 b = chunk >> 2, q = chunk & 3;  // its block within the warp, quarter
            if (warp_first + b < blocks) {
                out[4 * warp_first + chunk] = warp_staging[4 * b + (q ^ ((b >> 1) & 3))];
            }
        }
        __syncwarp();
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
        for (int k = 0; k < 16; ++k) acc[k] += w[k];
    }
    // Sum the warp's accumulators into lane 0, which adds them to the grid's result.
#pragma unroll
    for (int k = 0; k < 16; ++k) {
#pragma unroll
        for (int offset = 16; offset > 0; offset /= 2) {
            acc[k] += __shfl_xor_sync(0xffffffffu, acc[k], offset);
        }
    }
    if ((threadIdx.x & 31) == 0) {
#pragma unroll
        for (int k = 0; k < 16; ++k) atomicAdd(out + k, acc[k]);
    }
}

#define CHACHA_KERNELS(NAME, ROUNDS)                                                 \
    extern "C" __global__ void __launch_bounds__(KEYSTREAM_THREADS)                  \
        NAME##_keystream(ChaChaStream s, u64 blocks, uint4* out) {                   \
        keystream<ROUNDS>(s, blocks, out);                                           \
    }                                                                                \
    extern "C" __global__ void __launch_bounds__(KEYSTREAM_THREADS)                  \
        NAME##_digest(ChaChaStream s, u64 blocks, u32* out) {                        \
        digest<ROUNDS>(s, blocks, out);                                              \
    }

CHACHA_KERNELS(chacha8, 8)
CHACHA_KERNELS(chacha12, 12)
CHACHA_KERNELS(chacha20, 20)
