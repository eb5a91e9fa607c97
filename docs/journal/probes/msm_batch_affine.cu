// Mixed XYZZ additions (msm's bucket accumulation) against batch-affine additions (one
// inversion shared by K independent additions of a thread, Montgomery's trick) in
// BLS12-381's G1, with msm's own field and curve code (msm/cuda). Throughput only: the points
// are random field elements, not curve points, read from a table larger than L2 at scattered
// places as the accumulation reads its bases. See docs/journal/msm.md ("batch-affine additions,
// measured"). Build and run from the repository root:
//   nvcc -O3 -arch=sm_90 -std=c++17 -I msm/cuda -I kernels/cuda -o batch_affine \
//        docs/journal/probes/msm_batch_affine.cu
//   ./batch_affine
#include <cstdio>
#include "common.cuh"
#include "bls12_381.cuh"
#include "curve.cuh"

typedef Fp<Bls12_381Fq> F;
typedef AffinePoint<F> A;

constexpr u64 POINTS = 1ull << 22;  // 402 MB of affine points

// The j-th point thread t reads: scattered over the table.
__device__ __forceinline__ u64 point_index(u64 t, u64 j) {
    return ((t * 0x9e3779b97f4a7c15ull) ^ (j * 0xbf58476d1ce4e5b9ull)) % POINTS;
}

__global__ void fill(A* pts) {
    for (u64 i = global_thread_index(); i < POINTS; i += grid_thread_count()) {
        u64 s = i * 0x2545f4914f6cdd1dull + 1;
#pragma unroll
        for (int k = 0; k < 12; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            pts[i].x.l[k] = (u32)(s >> 32) & (k == 11 ? 0x0fffffffu : ~0u);
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            pts[i].y.l[k] = (u32)(s >> 32) & (k == 11 ? 0x0fffffffu : ~0u);
        }
    }
}

// K mixed additions into one XYZZ accumulator per thread.
__global__ void __launch_bounds__(128) xyzz_chain(const A* pts, XyzzPoint<F>* out, int k) {
    const u64 t = global_thread_index();
    XyzzPoint<F> acc = xyzz_from_affine(pts[point_index(t, 0)]);
    for (int i = 1; i <= k; i++) acc = xyzz_add_affine(acc, pts[point_index(t, i)]);
    out[t] = acc;
}

// K independent affine additions P_i + Q_i per thread with one inversion.
template <int K>
__global__ void __launch_bounds__(128) batch_affine(const A* pts, A* out) {
    const u64 t = global_thread_index();
    F prefix[K];  // prefix[i]: the product of the first i differences (local memory)
    F acc = F::one();
    for (int i = 0; i < K; i++) {
        const A p = pts[point_index(t, 2 * i)], q = pts[point_index(t, 2 * i + 1)];
        prefix[i] = acc;
        acc = mul(acc, sub(q.x, p.x));
    }
    F inv = inverse(acc);
    for (int i = K - 1; i >= 0; i--) {
        const A p = pts[point_index(t, 2 * i)], q = pts[point_index(t, 2 * i + 1)];
        const F d = sub(q.x, p.x);
        const F inv_d = mul(inv, prefix[i]);
        inv = mul(inv, d);
        const F lambda = mul(sub(q.y, p.y), inv_d);
        A r;
        r.x = sub(sub(sqr(lambda), p.x), q.x);
        r.y = sub(mul(lambda, sub(p.x, r.x)), p.y);
        out[t * K + i] = r;
    }
}

// As batch_affine, but each point is read once: the backward pass takes what it needs of the
// pair (the difference of x, of y, p.x, p.y and p.x + q.x) from local memory.
template <int K>
__global__ void __launch_bounds__(128) batch_affine_kept(const A* pts, A* out) {
    const u64 t = global_thread_index();
    F prefix[K], dx[K], dy[K], px[K], py[K], sx[K];  // local memory
    F acc = F::one();
    for (int i = 0; i < K; i++) {
        const A p = pts[point_index(t, 2 * i)], q = pts[point_index(t, 2 * i + 1)];
        prefix[i] = acc;
        dx[i] = sub(q.x, p.x);
        dy[i] = sub(q.y, p.y);
        px[i] = p.x;
        py[i] = p.y;
        sx[i] = add(p.x, q.x);
        acc = mul(acc, dx[i]);
    }
    F inv = inverse(acc);
    for (int i = K - 1; i >= 0; i--) {
        const F inv_d = mul(inv, prefix[i]);
        inv = mul(inv, dx[i]);
        const F lambda = mul(dy[i], inv_d);
        A r;
        r.x = sub(sqr(lambda), sx[i]);
        r.y = sub(mul(lambda, sub(px[i], r.x)), py[i]);
        out[t * K + i] = r;
    }
}

template <typename Launch>
float timed(Launch launch) {
    launch();  // warm-up
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventRecord(a);
    launch();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    return ms;
}

template <int K>
void run_batch(A* pts, int sms) {
    const int blocks = sms * 16, threads = 128;
    A* out;
    cudaMalloc(&out, (size_t)blocks * threads * K * sizeof(A));
    const float ms = timed([&] { batch_affine<K><<<blocks, threads>>>(pts, out); });
    const double adds = (double)blocks * threads * K;
    printf("batch-affine, K = %3d: %.3e additions a second (%.2f ms)\n", K, adds / (ms * 1e-3), ms);
    const float kept = timed([&] { batch_affine_kept<K><<<blocks, threads>>>(pts, out); });
    printf("  points read once:    %.3e additions a second (%.2f ms)\n", adds / (kept * 1e-3), kept);
    cudaFree(out);
}

int main() {
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    A* pts;
    cudaMalloc(&pts, POINTS * sizeof(A));
    fill<<<sms * 8, 256>>>(pts);
    {
        const int blocks = sms * 16, threads = 128, k = 256;
        XyzzPoint<F>* out;
        cudaMalloc(&out, (size_t)blocks * threads * sizeof(XyzzPoint<F>));
        const float ms = timed([&] { xyzz_chain<<<blocks, threads>>>(pts, out, k); });
        const double adds = (double)blocks * threads * k;
        printf("mixed XYZZ, 256 a thread: %.3e additions a second (%.2f ms)\n", adds / (ms * 1e-3), ms);
        cudaFree(out);
    }
    run_batch<16>(pts, sms);
    run_batch<32>(pts, sms);
    run_batch<64>(pts, sms);
    run_batch<128>(pts, sms);
    run_batch<256>(pts, sms);
    run_batch<512>(pts, sms);
    printf("%s\n", cudaGetErrorString(cudaDeviceSynchronize()));
    return 0;
}
