// The peak rate of merkle's Goldilocks arithmetic on one GPU: chains of gl_sqr and gl_mul
// (merkle/cuda/goldilocks.cuh, the code the tree kernels run), W independent chains per
// thread, the GPU filled, nothing else in the loop. See docs/journal/merkle.md ("the
// Goldilocks arithmetic's peak"). Build and run from the repository root:
//   nvcc -O3 -arch=sm_90 -I merkle/cuda -I kernels/cuda -o peak docs/journal/probes/goldilocks_peak.cu
//   ./peak
#include <cstdio>
#include "goldilocks.cuh"

// Squarings (MUL = false) or products by a second canonical value (MUL = true): 62 a step.
template <int W, bool MUL>
__global__ void __launch_bounds__(256) chains(u64* out, int steps) {
    u64 x[W], y[W];
#pragma unroll
    for (int i = 0; i < W; i++) {
        x[i] = (global_thread_index() * 0x9e3779b97f4a7c15ull + i * 12345) % MODULUS;
        y[i] = gl_canonical(x[i] ^ 0x5555);
    }
    for (int s = 0; s < steps; s++) {
        if (MUL) {
#pragma unroll 6
            for (int k = 0; k < 62; k++) {
#pragma unroll
                for (int i = 0; i < W; i++) x[i] = gl_mul(x[i], y[i]);
            }
        } else {
            square_n<W>(x, 62);
        }
    }
    u64 acc = 0;
#pragma unroll
    for (int i = 0; i < W; i++) acc ^= x[i];
    out[global_thread_index()] = acc;  // keeps the chains live
}

template <int W, bool MUL>
void run(int blocks_per_sm) {
    int sms = 0, khz = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
    const int threads = 256, blocks = sms * blocks_per_sm, steps = 200;
    u64* out;
    cudaMalloc(&out, (size_t)blocks * threads * sizeof(u64));
    chains<W, MUL><<<blocks, threads>>>(out, 2);  // warm-up
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    cudaEventRecord(start);
    chains<W, MUL><<<blocks, threads>>>(out, steps);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    const double ops = (double)blocks * threads * W * 62.0 * steps;
    printf("%s W=%2d, %d blocks of %d an SM: %.3e a second, %.2f an SM and cycle at %.2f GHz\n",
           MUL ? "gl_mul" : "gl_sqr", W, blocks_per_sm, threads, ops / (ms * 1e-3),
           ops / (ms * 1e-3) / sms / (khz * 1e3), khz * 1e-6);
    cudaFree(out);
}

int main() {
    run<3, false>(4);
    run<3, false>(8);
    run<6, false>(4);
    run<12, false>(4);
    run<3, true>(4);
    run<3, true>(8);
    return 0;
}
