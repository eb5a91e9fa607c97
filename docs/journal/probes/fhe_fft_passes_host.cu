// Runs fhe_fft_passes.cu's kernel (fft.cubin) at 1 to 4 blocks of 128 threads an SM, as many
// as fit by shared memory and registers, and prints the time per block and iteration.
#include <cstdio>
#include <cmath>
#include <cuda.h>
#include <cuda_runtime.h>
struct C2 { double x, y; };
int main() {
    cudaFree(0);
    CUmodule mod; CUfunction f;
    if (cuModuleLoad(&mod, "fft.cubin") != CUDA_SUCCESS) { printf("load failed\n"); return 1; }
    cuModuleGetFunction(&f, mod, "fft_loop");
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    const unsigned M = 1024;
    static C2 tw_host[1024];
    for (unsigned h = 1; h < M; h <<= 1)
        for (unsigned r = 0; r < h; r++) {
            double a = -3.14159265358979323846 * r / h;
            tw_host[h - 1 + r] = {cos(a), sin(a)};
        }
    void *tw, *out;
    cudaMalloc(&tw, sizeof(tw_host));
    cudaMemcpy(tw, tw_host, sizeof(tw_host), cudaMemcpyHostToDevice);
    cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 110 << 10);
    int regs = 0; cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
    printf("fft_loop: %d registers\n", regs);
    const int counts[4] = {1, 2, 3, 4};
    for (int per_sm : counts) {
        int use = (220 << 10) / per_sm - (2 << 10);
        if (use > (110 << 10)) use = 110 << 10;
        int fit = 0;
        cuOccupancyMaxActiveBlocksPerMultiprocessor(&fit, f, 128, use);
        const int blocks = sms * per_sm * 6;
        cudaMalloc(&out, (size_t)blocks * 128 * 16);
        for (int pass = 0; pass < 2; pass++) {
            int reps = pass == 0 ? 2 : 400;
            void *args[] = {&out, &tw, &reps};
            cudaEvent_t a, b;
            cudaEventCreate(&a); cudaEventCreate(&b);
            cudaEventRecord(a);
            cuLaunchKernel(f, blocks, 1, 1, 128, 1, 1, use, 0, args, 0);
            cudaEventRecord(b);
            cudaEventSynchronize(b);
            float ms = 0; cudaEventElapsedTime(&ms, a, b);
            if (pass == 1)
                printf("%d blocks an SM asked (fit %d, %d KB): %.3f ms, %.3e block-iterations/s, %.1f ns a block-iteration per SM\n",
                       per_sm, fit, use >> 10, ms, (double)blocks * reps / (ms * 1e-3), ms * 1e6 / ((double)blocks * reps / sms));
        }
        cudaFree(out);
    }
    printf("%s\n", cudaGetErrorString(cudaDeviceSynchronize()));
    return 0;
}
