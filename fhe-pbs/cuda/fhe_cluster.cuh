// fhe_pbs.cu's low-latency blind rotation (thread-block clusters, sm_90 and newer); included
// after the parameter set's definitions, which it uses.
#pragma once
#include "fhe_fft.cuh"
// ---------------------------------------------------------------------------------------
// Blind rotation, low latency (Hopper, sm_90+): one bootstrap per thread-block cluster of K1
// blocks; block `rank` owns accumulator polynomial `rank` (in its shared memory) and output
// column `rank` of the external product. M/8 threads per block, thread u with the FFT task u
// of 8 values in every pass (LOG_E = 3). Each CMux i (parity i & 1), for each digit level:
//   1. rotate, decompose and twist the own polynomial, fused with the forward FFT's first
//      pass, then the passes through shared memory (`work`) up to the last full pass
//      (smallest half span 2^P, P = log2 M mod 3), whose inputs thread u loads
//      (load_last_pass): the 8 x 32 positions of its warp's tasks, which only this warp wrote
//      in the pass before, one contiguous block of 4 KB in `work` (slot);
//   2. lane 0 sends that block as it is into the receive slot every other block keeps for
//      this block, with the copy engine (cp.async.bulk shared::cta -> shared::cluster),
//      completing on the receiver's mbarrier `digits_ready[parity][warp]` for this warp;
//      meanwhile the warp runs the last pass and the P radix-2 stages after it in registers,
//      those P stages between neighbouring lanes by shuffles, so that thread u ends with the
//      8 consecutive bit-reversed positions 8u to 8u + 7 (forward_last_stages), and
//      multiplies its values by its key values into its 8 outputs.
// Lane 0 of each warp having announced the bytes its warp expects per CMux (the positions of
// its 32 threads from each other block and level), each thread waits on its warp's
// `digits_ready[parity][warp]` until they have landed: no block-wide barrier and no fence
// across blocks, and a warp never waits for the other blocks' other warps. It runs the last
// forward stages on the other blocks' blocks itself, adds them times their key rows to its
// outputs, and the inverse FFT starts on them in registers (the P stages by shuffles and the
// first full pass, inverse_first_stages), then the passes through shared memory, the last
// one untwisting, rounding and adding into the accumulator. Sending the last pass's inputs
// rather than its outputs lets the copy start a pass earlier, and leaves out the stores of
// the outputs and the wait of the proxy fence on them. (Measured on an H100 with ncu, cycles
// per bootstrap: outputs sent, 4.14 M; inputs sent with the padded layout, 4.10 M, whose
// copies carry 12.5% pad slots; with the xor layout, 4.03 M. The fence alone cost 3.2%: a
// wrong variant without it, 4.03 M against 4.16 M.) The pointwise product never goes
// through shared memory, and at N = 2048 an FFT takes two round trips through it, not four.
// (Measured on an H100, one KS+PBS: remote stores by every thread with release arrivals and
// cluster-scope acquire waits, 3.58 ms (a memory barrier per warp and an L1 invalidation per
// CMux); st.async by every thread, completing on the receiver's mbarrier, 3.1 to 3.2 ms (its
// remote stores held up the block's shared-memory loads); one bulk copy per warp, 2.90 ms.)
// Why a receive slot is never overwritten early: warp w of block r sends CMux i + 2's digits
// (into parity i & 1 again) only after it has received the digits of CMux i + 1 from warp w
// here, which this warp sends only after its pointwise product of CMux i has used every
// value it read from the slots of parity i & 1 (warp w's positions, the only ones warp w of
// block r writes). Lane 0 waits until its copies have read `work` before the warp's next
// barrier, after which the warp writes its part of `work` again.
//
// The key rows of a CMux (K1 l polynomials of column `rank`, contiguous in the key, M values
// each, swizzled by key_position) come into shared memory by one bulk copy, completing on
// `key_ready`. Thread 0 asks for CMux i's rows at the start of CMux i, and L2 for CMux
// i + 1's, so that the copy engine's writes land in shared memory during the decomposition,
// whose few loads leave it idle, and not during the FFT passes. (Measured on an H100 with
// ncu, cycles per bootstrap: each warp's part of the rows copied right after the product of
// the CMux before, with a proxy fence, 4.67 to 4.69 M; at the start of the CMux, 4.52 to
// 4.57 M; after the decomposition, 4.83 to 4.86 M; before the forward FFT's last pass, 4.63 M;
// the kernel without any key copies, wrong but timed, 4.34 M; the block's rows in one copy
// at the start of the CMux, as here, 4.33 M.) Every CMux runs, also those with a = 0 (which
// add exactly zero), so that the copies follow the loop index.
//
// From the forward FFT's second pass to the inverse's second-last, a warp touches only its
// own part of `work` (pass_barrier), so only the passes that cross warps
// (the first of the forward FFT, the last of the inverse, and the accumulator's update) wait
// for the whole block: three block barriers per CMux and level, not six. (Measured on an H100
// with ncu: 4.688 -> 4.674 M cycles per bootstrap, -0.3%.)
//
// Each thread keeps its twiddles (TwiddleRegisters: the FFT passes run as radix-8 butterflies)
// and its twist, folded into the first pass's twiddles (OwnCoefficients), in registers for
// the whole bootstrap, and the prologue switches the n mask words a_i to 2N into shared
// memory, so that the CMux loop reads no global memory at all. (Measured on an H100: the
// twist read from global memory in the decomposition and the untwisting, 16 loads per thread
// and CMux, cost 6% of a KS+PBS.) That matters for the proxy fence before the digits' copy:
// it compiles to MEMBAR.ALL.CTA, which waits for every memory access the thread has in
// flight, so it waited for the global load of the next a_i, and it waits for the loads of
// the last pass's inputs when it follows them. It comes right after the stores of the pass
// before, and the copy leaves before those loads. (Measured on an H100 with ncu, cycles per
// bootstrap: the next a_i loaded from global memory at the start of each CMux and the fence
// after the loads, 3.942 M; the fence before them, 3.925 M; the words from shared memory and
// the fence after the loads, 3.914 to 3.926 M; both, 3.842 to 3.848 M.)

// Values per FFT task of the cluster kernel: 8 (16 spill registers).
#define FHE_CLUSTER_LOG_E 3

template <int LOG2M>
struct ClusterShape {
    static constexpr int LOG_E = FHE_CLUSTER_LOG_E;
    static constexpr int THREADS = (1 << LOG2M) >> LOG_E;  // one FFT task per thread
};

#if __CUDA_ARCH__ >= 900
__device__ __forceinline__ u32 cluster_rank() {
    u32 rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
}

// The rank of the o-th block of the cluster other than block `rank` (o < K1 - 1).
__device__ __forceinline__ u32 other_rank(u32 o, u32 rank) { return o < rank ? o : o + 1; }

__device__ __forceinline__ void cluster_barrier() {
    asm volatile(
        "barrier.cluster.arrive.release.aligned;\n\t"
        "barrier.cluster.wait.acquire.aligned;" ::
            : "memory");
}

__device__ __forceinline__ u32 shared_address(const void *p) {
    return (u32)__cvta_generic_to_shared(p);
}

// The shared::cluster address of the same shared-memory location in block `rank`.
__device__ __forceinline__ u32 cluster_address(const void *p, u32 rank) {
    u32 out;
    asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(shared_address(p)), "r"(rank));
    return out;
}

// An mbarrier in shared memory expecting one arrival per phase (thread 0's, with the bytes
// it expects); made visible to the copy engine and the cluster by the caller's barrier.
__device__ __forceinline__ void mbarrier_init(u64 *bar) {
    asm volatile(
        "mbarrier.init.shared::cta.b64 [%0], 1;\n\t"
        "fence.mbarrier_init.release.cluster;" ::"r"(shared_address(bar))
        : "memory");
}

// The arrival of a phase that completes once `bytes` more have landed.
__device__ __forceinline__ void mbarrier_expect(u64 *bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(
                     shared_address(bar)),
                 "r"(bytes)
                 : "memory");
}

// Waits until phase `parity` of `bar` has completed (its bytes have landed).
__device__ __forceinline__ void mbarrier_wait(u64 *bar, u32 parity) {
    const u32 b = shared_address(bar);
    u32 done;
    do {
        asm volatile(
            "{\n\t.reg .pred p;\n\t"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
            "selp.u32 %0, 1, 0, p;\n\t}"
            : "=r"(done)
            : "r"(b), "r"(parity)
            : "memory");
    } while (!done);
}

// Copies `bytes` at `src` in this block's shared memory to shared::cluster address `dst`
// (another block's shared memory) with the copy engine, completing on the mbarrier at
// shared::cluster address `bar` (in the same block), and commits the copy to this thread's
// bulk async-group (wait_bulk_reads). The writers of `src` have fenced (fence_proxy_async).
__device__ __forceinline__ void copy_to_cluster(u32 dst, const double2 *src, u32 bytes,
                                                u32 bar) {
    asm volatile(
        "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], "
        "%2, [%3];\n\t"
        "cp.async.bulk.commit_group;" ::"r"(dst),
        "r"(shared_address(src)), "r"(bytes), "r"(bar)
        : "memory");
}

// Waits until this thread's bulk copies have read their sources (which may then be
// overwritten).
__device__ __forceinline__ void wait_bulk_reads() {
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}

// Orders this thread's earlier shared-memory accesses before later copy-engine (async
// proxy) accesses to the same memory.
__device__ __forceinline__ void fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// One thread: copies `bytes` (a multiple of 16) from global memory at `src` to shared memory
// at `dst`, completing on `bar`. The destination's previous contents were read by ordinary
// loads before the caller's last barrier over their readers: a write after those reads,
// which needs no proxy fence (as for a buffer released by an mbarrier).
__device__ __forceinline__ void copy_to_shared(void *dst, const void *src, u32 bytes,
                                               u64 *bar) {
    mbarrier_expect(bar, bytes);
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
        "[%3];" ::"r"(shared_address(dst)),
        "l"(src), "r"(bytes), "r"(shared_address(bar))
        : "memory");
}

// Asks L2 for `bytes` (a multiple of 16) of global memory from `src` on, in one instruction.
__device__ __forceinline__ void prefetch_to_l2(const void *src, u32 bytes) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
}

__device__ __forceinline__ double2 shfl_xor_complex(double2 v, int lane_mask) {
    return make_double2(__shfl_xor_sync(0xffffffffu, v.x, lane_mask),
                        __shfl_xor_sync(0xffffffffu, v.y, lane_mask));
}

// A forward (DIF) radix-2 stage of half span H (1 or 2) whose pairs sit in the same register
// x[e] of lanes l and l ^ H (l & H clear: the low lane): the low lane takes pairs 0 to 3, the
// high lane pairs 4 to 7, each getting the partner's halves by shuffles, and keeps both
// results of its pair k (the low position's in x[2k], the high one's in x[2k + 1]). The
// twiddle W_2H^(l mod H) is 1, or -i for H = 2 and odd lanes. For H = 1 (the transform's
// last stage), the high lane's x[2k + 1] come out negated: each lane subtracts the received
// half from its own, which saves a select per value (of 12 FSEL per pair, 4); the pointwise
// products keep that sign (every row's values carry it), and cross_lane_dit_stage<1> expects
// it.
template <int H>
__device__ __forceinline__ void cross_lane_dif_stage(double2 (&x)[8]) {
    static_assert(H == 1 || H == 2, "twiddles of half spans 1 and 2 only");
    const bool high = threadIdx.x & H;
    const bool minus_i = H == 2 && (threadIdx.x & 1);
    double2 y[8];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const double2 other = shfl_xor_complex(high ? x[k] : x[4 + k], H);
        if constexpr (H == 1) {
            const double2 own = high ? x[4 + k] : x[k];
            y[2 * k] = cadd(own, other);
            y[2 * k + 1] = csub(own, other);
        } else {
            const double2 a = high ? other : x[k];
            const double2 c = high ? x[4 + k] : other;
            const double2 d = csub(a, c);
            y[2 * k] = cadd(a, c);
            y[2 * k + 1] = minus_i ? times_minus_i(d) : d;
        }
    }
#pragma unroll
    for (int e = 0; e < 8; e++) x[e] = y[e];
}

// The inverse (DIT) stage of half span H, undoing cross_lane_dif_stage's placement: each lane
// combines its pairs (x[2k], x[2k + 1]) (twiddle conj W_2H^(l mod H): 1, or i), then the low
// lane keeps the low results of all eight pairs (its own four, then the high lane's) and the
// high lane the high results, trading the others by shuffles. For H = 1 the high lane's
// x[2k + 1] arrive negated (cross_lane_dif_stage<1>), so the sum is the result each lane
// keeps and the difference the one it sends, in both lanes: no select for the shuffle.
template <int H>
__device__ __forceinline__ void cross_lane_dit_stage(double2 (&x)[8]) {
    static_assert(H == 1 || H == 2, "twiddles of half spans 1 and 2 only");
    const bool high = threadIdx.x & H;
    const bool plus_i = H == 2 && (threadIdx.x & 1);
    double2 y[8];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        double2 kept, other;
        if constexpr (H == 1) {
            kept = cadd(x[2 * k], x[2 * k + 1]);
            other = shfl_xor_complex(csub(x[2 * k], x[2 * k + 1]), H);
        } else {
            const double2 c = x[2 * k + 1];
            const double2 v = plus_i ? times_i(c) : c;
            const double2 low_result = cadd(x[2 * k], v), high_result = csub(x[2 * k], v);
            kept = high ? high_result : low_result;
            other = shfl_xor_complex(high ? low_result : high_result, H);
        }
        y[k] = high ? other : kept;
        y[4 + k] = high ? kept : other;
    }
#pragma unroll
    for (int e = 0; e < 8; e++) x[e] = y[e];
}

// Loads this thread's inputs of the forward FFT's last full pass (smallest half span 2^P,
// P = LOG2M mod 3) from the polynomial `data`.
template <int LOG2M>
__device__ __forceinline__ void load_last_pass(const double2 *data, double2 (&x)[8]) {
    constexpr int LOG_E = FHE_CLUSTER_LOG_E, P = LOG2M % LOG_E;
    const u32 base = task_base<LOG_E, P>(threadIdx.x);
#pragma unroll
    for (int e = 0; e < 8; e++) x[e] = data[task_slot<LOG_E, P>(slot<LOG_E>(base), e)];
}

// Runs the forward FFT's last full pass on x (load_last_pass) and the P stages after it
// across lanes: x[e] ends as the value at bit-reversed position 8 threadIdx.x + e, negated
// for odd e in odd lanes when P >= 1 (cross_lane_dif_stage<1>; inverse_first_stages expects
// the pointwise products so).
template <int LOG2M, typename Tw>
__device__ __forceinline__ void forward_last_stages(const Tw &tw, double2 (&x)[8]) {
    constexpr int LOG_E = FHE_CLUSTER_LOG_E, P = LOG2M % LOG_E;
    fft_stages<LOG2M, LOG_E, LOG_E, P, false>(x, threadIdx.x & ((1u << P) - 1), tw);
    if constexpr (P == 2) cross_lane_dif_stage<2>(x);
    if constexpr (P >= 1) cross_lane_dif_stage<1>(x);
}

// The inverse FFT's first stages on x[e], the value at bit-reversed position
// 8 threadIdx.x + e: the P stages across lanes and the first full pass, stored to the
// polynomial `data` for the next pass.
template <int LOG2M, typename Tw>
__device__ __forceinline__ void inverse_first_stages(double2 (&x)[8], const Tw &tw,
                                                     double2 *data) {
    constexpr int LOG_E = FHE_CLUSTER_LOG_E, P = LOG2M % LOG_E;
    if constexpr (P >= 1) cross_lane_dit_stage<1>(x);
    if constexpr (P == 2) cross_lane_dit_stage<2>(x);
    fft_stages<LOG2M, LOG_E, LOG_E, P, true>(x, threadIdx.x & ((1u << P) - 1), tw);
    const u32 base = task_base<LOG_E, P>(threadIdx.x);
#pragma unroll
    for (int e = 0; e < 8; e++) data[task_slot<LOG_E, P>(slot<LOG_E>(base), e)] = x[e];
}

// With MULTI_BIT, the multi-bit bootstrap: `iterations` external products ACC = BUNDLE ⊡ ACC
// (no rotation, the result replacing the accumulator), whose GGSWs are the ciphertext's own
// key bundles (fhe_multi_bit_bundles, `iterations` of them per ciphertext, in the key's
// layout) in place of the key's n GGSWs.
template <int K1, int LOG2M, int LEVELS, u32 B, bool MULTI_BIT = false>
__device__ __forceinline__ void blind_rotate_cluster(
    const FheShape &s, const u64 *__restrict__ small, const u64 *__restrict__ lut,
    const double2 *__restrict__ bsk, const double2 *__restrict__ twist,
    const double2 *__restrict__ tw_staged, u64 *out, u32 extract, u32 iterations) {
    constexpr int LOG_E = FHE_CLUSTER_LOG_E;
    static_assert(LOG_E == 3, "the register stages hold 8 values per thread");
    constexpr int E = 1 << LOG_E;
    constexpr int THREADS = ClusterShape<LOG2M>::THREADS;
    constexpr int P = LOG2M % LOG_E;
    constexpr u32 M = 1u << LOG2M;
    constexpr u32 N_POLY = 2 * M;
    constexpr u32 PM = polynomial_slots<LOG_E>(M);
    constexpr int ROWS = K1 * LEVELS;
    constexpr u32 WARPS = THREADS / 32;
    static_assert(THREADS % 32 == 0, "whole warps (N >= 512)");
    // Each warp's 8 x 32 positions: one contiguous block of slots (slot), sent as it is.
    constexpr u32 WARP_VALUES = 32 * E;
    constexpr u32 RECEIVED = (K1 - 1) * LEVELS * PM;  // complex values per parity
    constexpr u64 GGSW = (u64)ROWS * K1 * M;          // complex values per GGSW
    extern __shared__ double2 fhe_smem[];
    const u32 n = s.lwe_dimension;
    const u32 rank = cluster_rank();
    const u64 ct = blockIdx.x / K1;
    const u64 *in = small + ct * (n + 1);
    // [parity][sender: the other blocks in rank order][level][warp][WARP_VALUES slots]
    double2 *const received = fhe_smem;
    double2 *const work = received + 2 * RECEIVED;  // one polynomial; first the twiddles
    u64 *const acc = (u64 *)(work + PM);
    double2 *const key_s = (double2 *)(acc + N_POLY);  // ROWS polynomials
    u64 *const key_ready = (u64 *)(key_s + ROWS * M);
    u64 *const digits_ready = key_ready + 1;  // [parity][warp]
    u32 *const mask_switched = (u32 *)(digits_ready + 2 * WARPS);  // the n a_i, switched
    // This block's column of the key: polynomial `rank` of each GGSW row, the ROWS of them
    // contiguous (the host uploads each GGSW column by column), KEY_BYTES per CMux.
    constexpr u32 KEY_BYTES = ROWS * M * 16;
    const double2 *key_column =
        bsk + (MULTI_BIT ? ct * iterations * GGSW : 0) + (u64)rank * ROWS * M;
    // The warp index read from lane 0, which the compiler then knows to be the same across
    // the warp: the addresses of lane 0's copies below stay in uniform registers.
    const u32 u = threadIdx.x, warp = __shfl_sync(0xffffffffu, u / 32, 0), lane = u % 32;
    if (threadIdx.x == 0) {
        mbarrier_init(key_ready);
        for (u32 b = 0; b < 2 * WARPS; b++) mbarrier_init(&digits_ready[b]);
        if (iterations > 0) prefetch_to_l2(key_column, KEY_BYTES);
    }
    load_twiddles_together<THREADS, M - 1>(work, tw_staged);
    const u32 start =
        (2 * N_POLY - switched_body(in, n, LOG2M + 2, s.centered_switch)) & (2 * N_POLY - 1);
    if (!MULTI_BIT) {
        for (u32 t = threadIdx.x; t < n; t += THREADS) {
            mask_switched[t] = modulus_switch(in[t], LOG2M + 2);
        }
    }
#pragma unroll
    for (u32 k = 0; k < N_POLY / THREADS; k++) {  // compile-time bounds: the loads go together
        const u32 t = threadIdx.x + k * THREADS;
        acc[t] = rank == K1 - 1 ? rotated(lut, start, t, N_POLY) : 0;
    }
    __syncthreads();
    TwiddleRegisters<LOG2M, LOG_E> tw;
    load_twiddle_registers<LOG2M, LOG_E>(tw, work, u);
    OwnCoefficients<E> own;
    load_own_coefficients<LOG2M>(acc, twist, tw, own);
    // Every block's mbarriers exist before anyone arrives; the twiddles are read before
    // `work` is written.
    cluster_barrier();
    // Where this thread's digits go in the o-th other block t (its slot for this block,
    // parity 0) and t's mbarrier for this warp. Slot o of this block receives from the o-th
    // other block.
    u32 remote_slot[K1 - 1], remote_ready[K1 - 1];
#pragma unroll
    for (int o = 0; o < K1 - 1; o++) {
        const u32 t = other_rank(o, rank);
        const u32 slot = rank < t ? rank : rank - 1;
        remote_slot[o] = cluster_address(received + slot * LEVELS * PM, t);
        remote_ready[o] = cluster_address(&digits_ready[warp], t);
    }

    u32 a_next = !MULTI_BIT && n > 0 ? mask_switched[0] : 0;
    for (u32 i = 0; i < iterations; i++) {
        const u32 a = a_next;
        if (!MULTI_BIT && i + 1 < n) a_next = mask_switched[i + 1];
        const u32 parity = i & 1;
        u64 *const ready = &digits_ready[parity * WARPS + warp];
        if (threadIdx.x == 0) {  // every warp read CMux i - 1's rows before the last barrier
            copy_to_shared(key_s, key_column + i * GGSW, KEY_BYTES, key_ready);
            if (i + 1 < iterations) prefetch_to_l2(key_column + (i + 1) * GGSW, KEY_BYTES);
        }
        if (lane == 0) mbarrier_expect(ready, (K1 - 1) * LEVELS * WARP_VALUES * 16);
        double2 out[E];
#pragma unroll
        for (int level = 0; level < LEVELS; level++) {
            if (level > 0) {  // the last level's last pass and copies have read `work`
                if (lane == 0) wait_bulk_reads();
                __syncthreads();
            }
            decompose_first_pass<LOG2M, LOG_E, THREADS, 1, B, LEVELS, !MULTI_BIT>(
                acc, a, work, tw, twist, &own, level);
            __syncthreads();
            fft_forward<LOG2M, LOG_E, THREADS, 1, true, LOG2M - LOG_E, P + LOG_E, true>(work,
                                                                                        tw);
            // The last pass's inputs in this warp's own part of `work` (which only this warp
            // wrote and reads) go to every other block with the copy engine, which runs the
            // last stages on them itself. The fence comes before this thread's loads of them
            // (it waits for every access in flight).
            fence_proxy_async();
            __syncwarp();
            if (lane == 0) {
                const u32 offset = (parity * RECEIVED + level * PM + warp * WARP_VALUES) * 16;
#pragma unroll
                for (int o = 0; o < K1 - 1; o++) {
                    copy_to_cluster(remote_slot[o] + offset, work + warp * WARP_VALUES,
                                    WARP_VALUES * 16, remote_ready[o] + parity * WARPS * 8);
                }
            }
            double2 x[E];
            load_last_pass<LOG2M>(work, x);
            forward_last_stages<LOG2M>(tw, x);
            if (level == 0) mbarrier_wait(key_ready, parity);
            const double2 *key_row = key_s + (level * K1 + rank) * M;
#pragma unroll
            for (int e = 0; e < E; e++) {
                const double2 k = key_row[key_position(u * E + e)];
                out[e] = level == 0 ? cmul(x[e], k) : cmul_add(out[e], x[e], k);
            }
        }
        // The first other block's key values are read while its digits are still on the way.
        double2 first_key[E];
        {
            const double2 *key_row = key_s + other_rank(0, rank) * M;
#pragma unroll
            for (int e = 0; e < E; e++) first_key[e] = key_row[key_position(u * E + e)];
        }
        mbarrier_wait(ready, (i >> 1) & 1);
#pragma unroll
        for (int o = 0; o < K1 - 1; o++) {
            const u32 sender = other_rank(o, rank);
#pragma unroll
            for (int level = 0; level < LEVELS; level++) {
                double2 y[E];
                load_last_pass<LOG2M>(received + parity * RECEIVED + (o * LEVELS + level) * PM,
                                      y);
                forward_last_stages<LOG2M>(tw, y);
                const double2 *key_row = key_s + (level * K1 + sender) * M;
#pragma unroll
                for (int e = 0; e < E; e++) {
                    const double2 k = o == 0 && level == 0 ? first_key[e]
                                                           : key_row[key_position(u * E + e)];
                    out[e] = cmul_add(out[e], y[e], k);
                }
            }
        }
        if (lane == 0) wait_bulk_reads();  // before the warp's part of `work` is written again
        __syncwarp();  // the warp has read its part of `work`
        inverse_first_stages<LOG2M>(out, tw, work);
        __syncwarp();  // the next pass (q = 2^(P + 3) <= 32) reads the warp's own part
        fft_inverse_add<LOG2M, LOG_E, THREADS, 1, P + LOG_E, false, true, MULTI_BIT>(
            work, tw, acc, twist, &own);
    }
    // No block may exit (freeing its shared memory and mbarriers) while another block's copy
    // may still read from or land in it; every incoming copy has landed (waited for), this
    // keeps the exits in step.
    cluster_barrier();
    // With `extract`, the LWE sample of coefficient 0 (as fhe_sample_extract), kN + 1 words
    // per ciphertext, instead of the accumulator. Its indices are read afresh (asm volatile):
    // with the loop's values kept live until here, the compiler rematerialized some of them
    // inside the CMux loop, 27 instructions more per CMux (+0.6% per bootstrap, measured on
    // an H100).
    if (extract) {
        u32 block, thread;
        asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(block));
        asm volatile("mov.u32 %0, %%tid.x;" : "=r"(thread));
        const u32 r = cluster_rank();
        u64 *lwe = out + block / K1 * ((K1 - 1) * (u64)N_POLY + 1);
        if (r < K1 - 1) {
#pragma unroll
            for (u32 t = thread; t < N_POLY; t += THREADS) {
                lwe[r * N_POLY + t] = t == 0 ? acc[0] : 0ull - acc[N_POLY - t];
            }
        } else if (thread == 0) {
            lwe[(K1 - 1) * N_POLY] = acc[0];
        }
    } else {
        u64 *dst = out + (ct * K1 + rank) * (u64)N_POLY;
#pragma unroll
        for (u32 t = threadIdx.x; t < N_POLY; t += THREADS) dst[t] = acc[t];
    }
}

extern "C" __global__ void __cluster_dims__(FHE_K1, 1, 1)
    __launch_bounds__(ClusterShape<FHE_LOG2M>::THREADS)
        FHE_KERNEL_NAME(fhe_blind_rotate_cluster)(
            const FheShape s, const u64 *__restrict__ small, const u64 *__restrict__ lut,
            const double2 *__restrict__ bsk, const double2 *__restrict__ twist,
            const double2 *__restrict__ tw_staged, u64 *out, u32 extract) {
    blind_rotate_cluster<FHE_K1, FHE_LOG2M, FHE_LEVELS, FHE_BASE_LOG>(
        s, small, lut, bsk, twist, tw_staged, out, extract, s.lwe_dimension);
}

// The multi-bit bootstrap (blind_rotate_cluster with MULTI_BIT): `groups` external products
// per ciphertext with its key bundles `bundles` (groups GGSWs per ciphertext).
extern "C" __global__ void __cluster_dims__(FHE_K1, 1, 1)
    __launch_bounds__(ClusterShape<FHE_LOG2M>::THREADS)
        FHE_KERNEL_NAME(fhe_blind_rotate_cluster_multi_bit)(
            const FheShape s, const u64 *__restrict__ small, const u64 *__restrict__ lut,
            const double2 *__restrict__ bundles, const double2 *__restrict__ twist,
            const double2 *__restrict__ tw_staged, u64 *out, u32 extract, u32 groups) {
    blind_rotate_cluster<FHE_K1, FHE_LOG2M, FHE_LEVELS, FHE_BASE_LOG, true>(
        s, small, lut, bundles, twist, tw_staged, out, extract, groups);
}
#endif
