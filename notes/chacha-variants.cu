// Variant lab for the ChaCha kernels, outside the workspace build (see notes/chacha.md).
// On a GPU machine: nvcc -O3 -arch=sm_90 -std=c++17 -I kernels/cuda -I prp/cuda -o lab notes/chacha-variants.cu && ./lab
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cstring>
#include <algorithm>
#include "chacha.cuh"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

struct S { ChaChaKey key; u32 nonce[3]; u32 counter; };

// Rotation through the multiplier pipe: x * 2^n as 64 bits, whose halves add to the rotation.
__device__ __forceinline__ u32 rotl_imad(u32 x, u32 pow2) {
    u64 p; asm("mul.wide.u32 %0, %1, %2;" : "=l"(p) : "r"(x), "r"(pow2));
    u32 lo = (u32)p, hi = (u32)(p >> 32);
    return lo + hi;
}

template <int MODE>
__device__ __forceinline__ void qr(u32& a, u32& b, u32& c, u32& d) {
    a += b; d ^= a; d = chacha_rotl16(d);
    c += d; b ^= c; b = (MODE >= 1) ? rotl_imad(b, 1u << 12) : __funnelshift_l(b, b, 12);
    a += b; d ^= a; d = chacha_rotl8(d);
    c += d; b ^= c; b = (MODE >= 2) ? rotl_imad(b, 1u << 7) : __funnelshift_l(b, b, 7);
}

template <int ROUNDS, int MODE>
__device__ __forceinline__ void block_v(const ChaChaKey& key, u32 counter, u32 n0, u32 n1, u32 n2, u32 out[16]) {
    u32 x[16] = {CHACHA_CONST0, CHACHA_CONST1, CHACHA_CONST2, CHACHA_CONST3,
                 key.words[0], key.words[1], key.words[2], key.words[3],
                 key.words[4], key.words[5], key.words[6], key.words[7], counter, n0, n1, n2};
#pragma unroll
    for (int r = 0; r < ROUNDS; r += 2) {
        qr<MODE>(x[0], x[4], x[8], x[12]); qr<MODE>(x[1], x[5], x[9], x[13]);
        qr<MODE>(x[2], x[6], x[10], x[14]); qr<MODE>(x[3], x[7], x[11], x[15]);
        qr<MODE>(x[0], x[5], x[10], x[15]); qr<MODE>(x[1], x[6], x[11], x[12]);
        qr<MODE>(x[2], x[7], x[8], x[13]); qr<MODE>(x[3], x[4], x[9], x[14]);
    }
    out[0] = x[0] + CHACHA_CONST0; out[1] = x[1] + CHACHA_CONST1; out[2] = x[2] + CHACHA_CONST2; out[3] = x[3] + CHACHA_CONST3;
#pragma unroll
    for (int i = 0; i < 8; ++i) out[4 + i] = x[4 + i] + key.words[i];
    out[12] = x[12] + counter; out[13] = x[13] + n0; out[14] = x[14] + n1; out[15] = x[15] + n2;
}

// SUM: 0 xor fold, 1 add fold. MODE: rotation variant.
template <int SUM, int MODE>
__global__ void digest(S s, u64 blocks, u32* out) {
    u32 acc[16];
#pragma unroll
    for (int k = 0; k < 16; ++k) acc[k] = 0;
    for (u64 i = global_thread_index(); i < blocks; i += grid_thread_count()) {
        u32 w[16];
        block_v<8, MODE>(s.key, s.counter + (u32)i, s.nonce[0], s.nonce[1], s.nonce[2], w);
#pragma unroll
        for (int k = 0; k < 16; ++k) acc[k] = SUM ? acc[k] + w[k] : acc[k] ^ w[k];
    }
#pragma unroll
    for (int k = 0; k < 16; ++k) {
#pragma unroll
        for (int o = 16; o > 0; o /= 2) {
            u32 v = __shfl_xor_sync(0xffffffffu, acc[k], o);
            acc[k] = SUM ? acc[k] + v : acc[k] ^ v;
        }
    }
    if ((threadIdx.x & 31) == 0)
        for (int k = 0; k < 16; ++k) SUM ? atomicAdd(out + k, acc[k]) : atomicXor(out + k, acc[k]);
}

// Keystream: 0 direct uint4 stores; 1 shared-memory transpose (swizzled); 2 = 1 + streaming stores.
template <int STORE, int MODE>
__global__ void keystream(S s, u64 blocks, uint4* out) {
    __shared__ uint4 stage[256 * 4];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    uint4* mine = stage + warp * 128;
    for (u64 base = (u64)blockIdx.x * blockDim.x; base < blocks; base += grid_thread_count()) {
        u64 i = base + threadIdx.x;
        u32 w[16];
        if (i < blocks) block_v<8, MODE>(s.key, s.counter + (u32)i, s.nonce[0], s.nonce[1], s.nonce[2], w);
        if (STORE == 0) {
            if (i < blocks) {
                uint4* dst = out + 4 * i;
                dst[0] = make_uint4(w[0], w[1], w[2], w[3]); dst[1] = make_uint4(w[4], w[5], w[6], w[7]);
                dst[2] = make_uint4(w[8], w[9], w[10], w[11]); dst[3] = make_uint4(w[12], w[13], w[14], w[15]);
            }
        } else {
            u32 sw = (lane >> 1) & 3;
            mine[4 * lane + (0 ^ sw)] = make_uint4(w[0], w[1], w[2], w[3]);
            mine[4 * lane + (1 ^ sw)] = make_uint4(w[4], w[5], w[6], w[7]);
            mine[4 * lane + (2 ^ sw)] = make_uint4(w[8], w[9], w[10], w[11]);
            mine[4 * lane + (3 ^ sw)] = make_uint4(w[12], w[13], w[14], w[15]);
            __syncwarp();
            u64 warp_first = base + warp * 32;  // first block of this warp
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                u32 chunk = 32 * k + lane;          // chunk within the warp's 128
                u32 b = chunk >> 2, c = chunk & 3;  // block within warp, quarter
                uint4 v = mine[4 * b + (c ^ ((b >> 1) & 3))];
                if (warp_first + b < blocks) {
                    if (STORE == 2) __stcs(out + 4 * warp_first + chunk, v); else out[4 * warp_first + chunk] = v;
                }
            }
            __syncwarp();
        }
    }
}

template <typename F>
float timeit(F launch, int reps) {
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    launch(); CK(cudaDeviceSynchronize());
    std::vector<float> t;
    for (int r = 0; r < reps; ++r) { cudaEventRecord(a); launch(); cudaEventRecord(b); CK(cudaEventSynchronize(b)); float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms); }
    std::sort(t.begin(), t.end()); return t[t.size() / 2];
}

int main() {
    int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    S s; for (int i = 0; i < 8; ++i) s.key.words[i] = 0x9e3779b9u * (i + 1); s.nonce[0] = 1; s.nonce[1] = 2; s.nonce[2] = 3; s.counter = 5;
    u32* d; CK(cudaMalloc(&d, 64));
    u64 nb = 1ull << 31;
    u32 ref_sum[16];
    #define DIG(SUM, MODE, BPS) { \
        auto f = [&] { cudaMemset(d, 0, 64); digest<SUM, MODE><<<sms * BPS, 256>>>(s, nb, d); }; \
        float ms = timeit(f, 7); CK(cudaGetLastError()); u32 h[16]; cudaMemcpy(h, d, 64, cudaMemcpyDeviceToHost); \
        if (SUM && MODE == 0 && BPS == 8) memcpy(ref_sum, h, 64); \
        printf("digest sum=%d mode=%d bps=%d: %.2f ms, %.2f Gblocks/s %s\n", SUM, MODE, BPS, ms, nb / ms / 1e6, SUM ? (memcmp(h, ref_sum, 64) ? "MISMATCH" : "same") : ""); }
    DIG(0, 0, 8) DIG(1, 0, 8) DIG(1, 1, 8) DIG(1, 2, 8) DIG(1, 0, 4) DIG(1, 0, 16) DIG(1, 1, 16)
    u64 kb = 1ull << 24; uint4* o; CK(cudaMalloc(&o, kb * 64)); uint4* o2; CK(cudaMalloc(&o2, kb * 64));
    std::vector<char> h1(kb * 64), h2(kb * 64);
    auto ks0 = [&] { keystream<0, 0><<<(kb + 255) / 256, 256>>>(s, kb, o); };
    printf("keystream direct: %.3f ms, %.1f GB/s\n", timeit(ks0, 9), kb * 64 / timeit(ks0, 9) / 1e6);
    CK(cudaMemcpy(h1.data(), o, kb * 64, cudaMemcpyDeviceToHost));
    #define KS(ST, MODE, GRID) { cudaMemset(o2, 0, kb * 64); auto f = [&] { keystream<ST, MODE><<<GRID, 256>>>(s, kb, o2); }; float ms = timeit(f, 9); CK(cudaGetLastError()); \
        CK(cudaMemcpy(h2.data(), o2, kb * 64, cudaMemcpyDeviceToHost)); \
        printf("keystream store=%d mode=%d grid=%d: %.3f ms, %.1f GB/s %s\n", ST, MODE, (int)(GRID), ms, kb * 64 / ms / 1e6, memcmp(h1.data(), h2.data(), kb * 64) ? "MISMATCH" : "same"); }
    KS(1, 0, (kb + 255) / 256) KS(2, 0, (kb + 255) / 256) KS(1, 0, sms * 8) KS(2, 0, sms * 8) KS(1, 1, (kb + 255) / 256)
    // odd size check
    u64 ob = kb - 77; { cudaMemset(o2, 0, kb * 64); keystream<1, 0><<<sms * 8, 256>>>(s, ob, o2); CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(h2.data(), o2, kb * 64, cudaMemcpyDeviceToHost)); bool ok = !memcmp(h1.data(), h2.data(), ob * 64); for (u64 i = ob * 64; i < kb * 64; ++i) ok &= h2[i] == 0; printf("odd size store=1: %s\n", ok ? "ok" : "BAD"); }
    // D2D copy ceiling
    auto cp = [&] { cudaMemcpy(o2, o, kb * 64, cudaMemcpyDeviceToDevice); };
    float ms = timeit(cp, 9); printf("d2d copy 1 GiB: %.3f ms, %.1f GB/s (read+write)\n", ms, 2.0 * kb * 64 / ms / 1e6);
    auto ms0 = [&] { cudaMemsetAsync(o2, 1, kb * 64); };
    ms = timeit(ms0, 9); printf("memset 1 GiB: %.3f ms, %.1f GB/s (write)\n", ms, 1.0 * kb * 64 / ms / 1e6);
}
