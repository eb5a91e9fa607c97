// The cluster kernel's FFT passes alone, for PARAM_MESSAGE_2_CARRY_2's shape (M = 1024): per
// iteration one forward and one inverse transform through `work`, as one block of the cluster
// kernel runs them per CMux (fhe-pbs/cuda/fhe_cluster.cuh), with a stand-in pointwise
// product and nothing else: no decomposition, copies between blocks, key rows or accumulator.
// See docs/journal/fhe-pbs.md ("the FFT passes' ceiling"). Build from the repository root:
//   nvcc -cubin -O3 -arch=sm_90 -std=c++17 -diag-suppress 1556 -I fhe-pbs/cuda -I kernels/cuda \
//        -o fft.cubin docs/journal/probes/fhe_fft_passes.cu
//   nvcc -O3 -o fft_host docs/journal/probes/fhe_fft_passes_host.cu -lcuda
//   ./fft_host   (reads fft.cubin from the working directory)
#define FHE_K1 2
#define FHE_N 2048
#define FHE_LEVELS 1
#define FHE_BASE_LOG 23
#include "fhe_pbs.cu"

constexpr int LOG2M = 10;
constexpr u32 M = 1u << LOG2M;
constexpr int THREADS = 128;

extern "C" __global__ void __launch_bounds__(128) fft_loop(double2 *out, const double2 *tw_staged, int reps) {
#if __CUDA_ARCH__ >= 900
    extern __shared__ double2 smem[];
    double2 *work = smem;
    load_twiddles_together<THREADS, M - 1>(work, tw_staged);
    __syncthreads();
    TwiddleRegisters<LOG2M, 3> tw;
    load_twiddle_registers<LOG2M, 3>(tw, work, threadIdx.x);
    __syncthreads();
    for (u32 t = threadIdx.x; t < M; t += THREADS) work[t] = make_double2((double)t, -(double)t);
    __syncthreads();
    const double2 k1 = make_double2(1.0 / 2048, 0.0), k2 = make_double2(0.0, 1.0 / 4096);
    double2 x[8], o[8];
    for (int r = 0; r < reps; r++) {
        fft_pass<LOG2M, 3, THREADS, 1, 3, 7, false, false>(work, tw, nullptr, nullptr);
        __syncthreads();
        fft_pass<LOG2M, 3, THREADS, 1, 3, 4, false, false>(work, tw, nullptr, nullptr);
        __syncwarp();
        load_last_pass<LOG2M>(work, x);
        forward_last_stages<LOG2M>(tw, x);
#pragma unroll
        for (int e = 0; e < 8; e++) o[e] = cmul_add(cmul(x[e], k1), x[e], k2);
        __syncwarp();
        inverse_first_stages<LOG2M>(o, tw, work);
        __syncwarp();
        fft_pass<LOG2M, 3, THREADS, 1, 3, 4, true, false>(work, tw, nullptr, nullptr);
        __syncthreads();
        fft_pass<LOG2M, 3, THREADS, 1, 3, 7, true, false>(work, tw, nullptr, nullptr);
        __syncthreads();
    }
    out[blockIdx.x * THREADS + threadIdx.x] = work[threadIdx.x];
#endif
}

