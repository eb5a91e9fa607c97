// Fixed-width integer names shared by every kernel module.
// NVRTC provides no C standard headers, so the kernels spell the widths out here.
#pragma once

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;

// Index of this thread across the whole grid (1-D launches).
__device__ __forceinline__ u64 global_thread_index() {
    return (u64)blockIdx.x * blockDim.x + threadIdx.x;
}

// Number of threads in the whole grid (1-D launches), the step of a grid-stride loop.
__device__ __forceinline__ u64 grid_thread_count() {
    return (u64)gridDim.x * blockDim.x;
}
