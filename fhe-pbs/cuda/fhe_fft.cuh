// fhe_pbs.cu's complex f64 arithmetic and shared-memory negacyclic FFTs.
#pragma once
#include "fhe_integer.cuh"
// ---------------------------------------------------------------------------------------
// Complex f64 arithmetic and the shared-memory FFTs.

__device__ __forceinline__ double2 cadd(double2 a, double2 b) {
    return make_double2(a.x + b.x, a.y + b.y);
}
__device__ __forceinline__ double2 csub(double2 a, double2 b) {
    return make_double2(a.x - b.x, a.y - b.y);
}
__device__ __forceinline__ double2 cmul(double2 a, double2 b) {
    return make_double2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
// acc + a b by multiply-adds (4 instead of 6 FP64 instructions, two roundings per part).
__device__ __forceinline__ double2 cmul_add(double2 acc, double2 a, double2 b) {
    return make_double2(fma(a.x, b.x, fma(-a.y, b.y, acc.x)), fma(a.x, b.y, fma(a.y, b.x, acc.y)));
}
// a * conj(b)
__device__ __forceinline__ double2 cmul_conj(double2 a, double2 b) {
    return make_double2(a.x * b.x + a.y * b.y, a.y * b.x - a.x * b.y);
}
// v times -i and times i.
__device__ __forceinline__ double2 times_minus_i(double2 v) { return make_double2(v.y, -v.x); }
__device__ __forceinline__ double2 times_i(double2 v) { return make_double2(-v.y, v.x); }

constexpr double ROOT_HALF = 0.70710678118654752440;  // 1 / sqrt(2)

// The shared-memory FFTs. Everything that fixes their shape is a compile-time constant (the
// blind-rotation kernels are instantiated per parameter set, see the end of this file):
// LOG2M = log2 M, the values per task E = 2^LOG_E, the block's THREADS and the number of
// polynomials POLYS, so that every loop below unrolls and all index arithmetic folds.
//
// A polynomial of M = 2^LOG2M complex values is laid out in shared memory so that no pass
// below has bank conflicts (slot, polynomial_slots). A pass does up to LOG_E radix-2 stages
// in registers on E values per thread-task, then one round trip through shared memory and
// one __syncthreads: LOG2M / LOG_E passes rounded up instead of one per radix-4 stage.
//
// The forward transform is a decimation in frequency (spans M, M/2, ..., 2): natural order
// in, bit-reversed order out; full passes of LOG_E stages first, the remaining LOG2M mod
// LOG_E stages last. The inverse (unnormalized, sign +) is the matching decimation in time
// (spans 2, 4, ..., M): bit-reversed in, natural out, the partial pass first. A full pass
// whose smallest half span is q = 2^Q_LOG gives task u the values at
// ((u >> Q_LOG) << (Q_LOG + LOG_E)) + (u mod q) + q e, e < E; a partial pass (q = 1) the E
// consecutive values from u E, in groups of 2^B. The twiddles live either in shared memory
// as tw[t] = exp(-2 pi i t / M), t < M/2, W_{2h}^r = tw[r << (LOG2M - 1 - log2 h)] (the
// amortized kernel), or in registers (TwiddleRegisters: the cluster kernel, which fills them
// from the staged table W_{2h}^r = tw[h - 1 + r], each stage's twiddles consecutive).

// The shared-memory slot of value i of a polynomial whose passes run tasks of 2^LOG_E values.
// Tasks of 8 (the cluster kernel, one task per thread): i with its low three bits xored with
// the next three, a permutation within each aligned block of 64 values, so the polynomial
// takes M slots and a warp's 256 positions stay one contiguous block (which the cluster kernel
// sends as it is). Tasks of 16 (the amortized kernel): padded, one empty slot after every 16
// values. Both give every warp-wide 16-byte access of every pass its ideal 4 wavefronts (a
// script checked every pass of every N from 512 to 8192 for both).
template <int LOG_E>
__device__ __forceinline__ u32 slot(u32 i) {
    static_assert(LOG_E == 3 || LOG_E == 4, "the layouts of 8- and 16-value tasks");
    return LOG_E == 3 ? i ^ ((i >> 3) & 7) : i + (i >> 4);
}

// The slots one polynomial of M values takes (slot).
template <int LOG_E>
__host__ __device__ constexpr u32 polynomial_slots(u32 m) {
    return LOG_E == 3 ? m : m + (m >> LOG_E);
}

// w exp(-i pi k / 8), k < 8: exact for k = 0 and 4, two roundings for k = 2 and 6, a complex
// product with constants for odd k.
__device__ __forceinline__ double2 times_root16(double2 w, int k) {
    constexpr double R = ROOT_HALF;
    constexpr double C1 = 0.92387953251128675613;  // cos(pi / 8)
    constexpr double S1 = 0.38268343236508977173;  // sin(pi / 8)
    switch (k) {
        case 0: return w;
        case 2: return make_double2((w.x + w.y) * R, (w.y - w.x) * R);
        case 4: return times_minus_i(w);
        case 6: return make_double2((w.y - w.x) * R, -(w.x + w.y) * R);
        case 1: return cmul(w, make_double2(C1, -S1));
        case 3: return cmul(w, make_double2(S1, -C1));
        case 5: return cmul(w, make_double2(-S1, -C1));
        default: return cmul(w, make_double2(-C1, -S1));
    }
}

// The twiddle of butterfly group mm of the stage with half span h = 2^(Q_LOG + hbit) for the
// task with j0, W_2h^(j0 + q mm) = W_2h^j0 exp(-i pi mm / 2^hbit): one read from shared memory
// (layout above) per stage, w0 = W_2h^j0 (read by the caller for mm = 0 and passed back in),
// times a constant root of unity (hbit <= 3).
template <int LOG2M, int Q_LOG>
__device__ __forceinline__ double2 stage_twiddle(const double2 *tw, u32 j0, int hbit, int mm,
                                                 double2 w0) {
    if (mm == 0) {
        return tw[j0 << (LOG2M - 1 - (Q_LOG + hbit))];
    }
    return times_root16(w0, mm << (3 - hbit));
}

// Every twiddle one thread's task needs in every pass of both transforms, in registers: for a
// block whose thread t always has task index u = t mod (M / E) (the cluster kernel), they do
// not change between CMuxes, and the forward and inverse passes with the same smallest half
// span q = 2^Q_LOG use the same ones. Such a block's passes are full (E = 8 values, three
// stages) and run as radix-8 butterflies (fft_stages below): w[Q_LOG][k - 1] = alpha^k,
// alpha = W_8q^(u mod q), k = 1..7; only the Q_LOG of actual passes are filled (and kept:
// constant indices only).
template <int LOG2M, int LOG_E>
struct TwiddleRegisters {
    double2 w[LOG2M][(1 << LOG_E) - 1];
};

// Fills `regs` for task u from the staged twiddles in shared memory (W_2h^r = tw[h - 1 + r],
// r < h; W_2h^(r + h) = -W_2h^r): the full passes of fft_forward from the one whose largest
// half span is 2^(HI - 1) on.
template <int LOG2M, int LOG_E, int HI = LOG2M>
__device__ __forceinline__ void load_twiddle_registers(TwiddleRegisters<LOG2M, LOG_E> &regs,
                                                       const double2 *tw_staged, u32 u) {
    static_assert(LOG_E == 3, "radix-8 passes");
    if constexpr (HI >= LOG_E) {
        constexpr int Q_LOG = HI - LOG_E;
        constexpr u32 H = 4u << Q_LOG;  // the half span of alpha's stage: alpha = W_2H^j0
        const u32 j0 = u & ((1u << Q_LOG) - 1);
#pragma unroll
        for (u32 k = 1; k < 8; k++) {
            const u32 r = j0 * k;  // < 7 q < 2 H
            const double2 w = tw_staged[H - 1 + (r & (H - 1))];
            regs.w[Q_LOG][k - 1] = r < H ? w : make_double2(-w.x, -w.y);
        }
        load_twiddle_registers<LOG2M, LOG_E, HI - LOG_E>(regs, tw_staged, u);
    }
}

__device__ __forceinline__ constexpr int bit_reversed3(int e) {
    return ((e & 1) << 2) | (e & 2) | (e >> 2);
}

// a + s c / sqrt 2 (s = +-1) by multiply-adds.
template <int S>
__device__ __forceinline__ double2 add_scaled_by_root_half(double2 a, double2 c) {
    constexpr double R = S * ROOT_HALF;
    return make_double2(fma(R, c.x, a.x), fma(R, c.y, a.y));
}

// The three stages of a full pass with the twiddles in registers (the cluster kernel), as one
// radix-8 butterfly. The radix-2 stages' twiddles W_8q^(j0 + q e), W_4q^(j0 + q (e mod 2))
// and W_2q^j0 are alpha, alpha^2 and alpha^4 (alpha = W_8q^j0) times constant roots of unity;
// each alpha factor is common to both values of every later butterfly, so the forward pass
// runs the butterflies with the constant roots only and then multiplies register e by
// alpha^bitrev3(e), and the inverse (the transpose) multiplies by the conjugates first: 7
// complex products per pass instead of 12. Of the constant roots, -i and i cost nothing, and
// W_8 = (1 - i) / sqrt 2 and W_8^3 = -(1 + i) / sqrt 2 cost two additions, their 1 / sqrt 2
// riding on the multiply-adds of the last stage (forward) or of their own (inverse).
// The radix-8 butterflies of a full pass with the constant roots only (see fft_stages below):
// forward (decimation in frequency) or inverse (in time).
template <bool INVERSE>
__device__ __forceinline__ void radix8_butterflies(double2 (&x)[8]) {
    if constexpr (INVERSE) {
#pragma unroll
        for (int e = 0; e < 8; e += 2) {  // half span q: twiddle 1
            const double2 a = x[e], c = x[e + 1];
            x[e] = cadd(a, c);
            x[e + 1] = csub(a, c);
        }
#pragma unroll
        for (int e = 0; e < 8; e += (e & 1) ? 3 : 1) {  // half span 2q: 1, conj(W_4) = i
            const double2 a = x[e], c = (e & 1) ? times_i(x[e + 2]) : x[e + 2];
            x[e] = cadd(a, c);
            x[e + 2] = csub(a, c);
        }
        // Half span 4q: 1, conj(W_8) = (1 + i) / sqrt 2, i, conj(W_8^3) = (i - 1) / sqrt 2.
        const double2 a0 = x[0], a1 = x[1], a2 = x[2], a3 = x[3];
        const double2 c0 = x[4], c1 = x[5], c2 = times_i(x[6]), c3 = x[7];
        const double2 r1 = make_double2(c1.x - c1.y, c1.x + c1.y);   // sqrt 2 conj(W_8) c1
        const double2 r3 = make_double2(-c3.x - c3.y, c3.x - c3.y);  // sqrt 2 conj(W_8^3) c3
        x[0] = cadd(a0, c0);
        x[4] = csub(a0, c0);
        x[1] = add_scaled_by_root_half<1>(a1, r1);
        x[5] = add_scaled_by_root_half<-1>(a1, r1);
        x[2] = cadd(a2, c2);
        x[6] = csub(a2, c2);
        x[3] = add_scaled_by_root_half<1>(a3, r3);
        x[7] = add_scaled_by_root_half<-1>(a3, r3);
    } else {
        // Half span 4q: 1, W_8 (times sqrt 2 here), -i, W_8^3 (times sqrt 2).
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const double2 a = x[e], c = x[e + 4], d = csub(a, c);
            x[e] = cadd(a, c);
            x[e + 4] = e == 0   ? d
                       : e == 1 ? make_double2(d.x + d.y, d.y - d.x)
                       : e == 2 ? times_minus_i(d)
                                : make_double2(d.y - d.x, -d.x - d.y);
        }
#pragma unroll
        for (int e = 0; e < 8; e += (e & 1) ? 3 : 1) {  // half span 2q: 1, W_4 = -i
            const double2 a = x[e], c = x[e + 2], d = csub(a, c);
            x[e] = cadd(a, c);
            x[e + 2] = (e & 1) ? times_minus_i(d) : d;
        }
        // Half span q: twiddle 1; registers 5 and 7 still carry the sqrt 2.
#pragma unroll
        for (int e = 0; e < 4; e += 2) {
            const double2 a = x[e], c = x[e + 1];
            x[e] = cadd(a, c);
            x[e + 1] = csub(a, c);
        }
#pragma unroll
        for (int e = 4; e < 8; e += 2) {
            const double2 a = x[e], c = x[e + 1];
            x[e] = add_scaled_by_root_half<1>(a, c);
            x[e + 1] = add_scaled_by_root_half<-1>(a, c);
        }
    }
}

template <int LOG2M, int LOG_E, int B, int Q_LOG, bool INVERSE>
__device__ __forceinline__ void fft_stages(double2 (&x)[1 << LOG_E], u32,
                                           const TwiddleRegisters<LOG2M, LOG_E> &tw) {
    static_assert(LOG_E == 3 && B == 3, "register twiddles serve full passes of 8 values");
    const double2 *alpha_powers = tw.w[Q_LOG];  // alpha^k at [k - 1]
    if constexpr (INVERSE) {
        if constexpr (Q_LOG > 0) {  // alpha = 1 for q = 1
#pragma unroll
            for (int e = 1; e < 8; e++) x[e] = cmul_conj(x[e], alpha_powers[bit_reversed3(e) - 1]);
        }
        radix8_butterflies<true>(x);
    } else {
        radix8_butterflies<false>(x);
        if constexpr (Q_LOG > 0) {
#pragma unroll
            for (int e = 1; e < 8; e++) x[e] = cmul(x[e], alpha_powers[bit_reversed3(e) - 1]);
        }
    }
}

// exp(i pi e / 16), e < 8: the twist of position u + (N/16) e over that of u.
__device__ __forceinline__ double2 twist_step(int e) {
    switch (e) {
        case 0: return make_double2(1.0, 0.0);
        case 1: return make_double2(0.98078528040323044913, 0.19509032201612826785);
        case 2: return make_double2(0.92387953251128675613, 0.38268343236508977173);
        case 3: return make_double2(0.83146961230254523708, 0.55557023301960222474);
        case 4: return make_double2(ROOT_HALF, ROOT_HALF);
        case 5: return make_double2(0.55557023301960222474, 0.83146961230254523708);
        case 6: return make_double2(0.38268343236508977173, 0.92387953251128675613);
        default: return make_double2(0.19509032201612826785, 0.98078528040323044913);
    }
}

// B radix-2 stages on the E values of one task: j0 = u mod q, the position of value e in its
// span being j0 + q e (mod the span), with the twiddles in shared memory at `tw` (the
// amortized kernel; twiddles in registers take the radix-8 overload above).
template <int LOG2M, int LOG_E, int B, int Q_LOG, bool INVERSE, typename Tw>
__device__ __forceinline__ void fft_stages(double2 (&x)[1 << LOG_E], u32 j0, const Tw &tw) {
    static_assert(LOG_E <= 4, "stage_twiddle derives at most 8 twiddles per stage");
    constexpr int E = 1 << LOG_E;
#pragma unroll
    for (int s = 0; s < B; s++) {
        const int hbit = INVERSE ? s : B - 1 - s;  // half span h = q 2^hbit
        double2 w0 = make_double2(1.0, 0.0);
#pragma unroll
        for (int mm = 0; mm < (1 << hbit); mm++) {
            const double2 w = stage_twiddle<LOG2M, Q_LOG>(tw, j0, hbit, mm, w0);
            if (mm == 0) w0 = w;
#pragma unroll
            for (int e = 0; e < E; e++) {
                if ((e & ((2 << hbit) - 1)) != mm) continue;  // bit hbit clear, low bits mm
                const int e2 = e | (1 << hbit);
                const double2 a = x[e], c = x[e2];
                if (INVERSE) {
                    const double2 v = cmul_conj(c, w);
                    x[e] = cadd(a, v);
                    x[e2] = csub(a, v);
                } else {
                    x[e] = cadd(a, c);
                    x[e2] = cmul(csub(a, c), w);
                }
            }
        }
    }
}

// round(x) mod 2^64 as fft.rs's wrap_f64, exactly but at one residue, with no instruction on
// the conversion pipe but the final one: r = (x + 1.5 2^116) - 1.5 2^116 is x rounded to a
// multiple of 2^64 (the sum lies in [2^116, 2^117), where doubles are 2^64 apart, for
// |x| < 2^115; ties go to an even multiple, as rint(x / 2^64) has them), so y = x - r, exact
// (for |x| < 2^63, r = 0 and y = x; above, y is a multiple of x's spacing, at least 2^11, and
// fits 53 bits), lies in [-2^63, 2^63], and the conversion rounds it, so it rounds x. It agreed
// with the rint(x / 2^64) form (fft.rs's formula) on 2.1 10^7 values below 2^115, ties
// included (a C check). The one inexact case: y = 2^63 (x an odd multiple of 2^63, rounded
// down), which the conversion saturates to 2^63 - 1, one unit below the residue. Such an x is
// at least 2^63, where its own spacing, and so the transform's rounding error, is 2^11 units
// or more (about 2^38 at the 2^90 typical of PARAM_MESSAGE_2_CARRY_2's outputs, where about
// one value in 2^26 is such a tie): the unit costs no accuracy. Correcting it cost a compare
// and a subtraction on the FP64 pipe per value, and selects: 64 of the cluster kernel's 1,792
// instructions per CMux, 1.6% of its cycles (measured on an H100: 4.004 -> 3.939 M cycles per
// bootstrap; the correction on the integer pipe instead, +0.6%). The transform outputs stay far
// below 2^115 (about 2^97 at most for PARAM_MESSAGE_2_CARRY_2); a set whose outputs reached it
// would have lost the residue to the transform's own rounding error (2^62 and more) anyway.
__device__ __forceinline__ u64 wrap_f64(double x) {
    constexpr double SHIFTER = 0x1.8p116;
    const double r = __dsub_rn(__dadd_rn(x, SHIFTER), SHIFTER);
    const double y = __dsub_rn(x, r);
    return (u64)__double2ll_rn(y);
}

// The accumulator coefficients of one thread's task in the inverse transform's last pass
// (natural-order positions j_e and j_e + M), kept in registers for the next CMux's
// decomposition, which covers the same positions of the same polynomial
// (decompose_first_pass): shared memory then serves only the rotated reads. The cluster
// kernel uses them (one task of 8 values per thread, u its index), with the task's factors
// for that pass and the inverse's last: the twist of j_e = u + q e (q = M / 8) is
// twist[u] exp(i pi e / 16) (twist_step), whose constant part multiplies the transform's
// inputs (and the untwisted outputs), while twist[u] goes through the radix-8 butterflies
// and joins the pass's twiddles alpha^bitrev3(e) (alpha = W_8q^u, fft_stages): one complex
// product per value for both, and no twist table in registers. (Measured on an H100: 1.6%
// fewer cycles in the cluster kernel than with the twist and the twiddles kept apart.)
template <int E>
struct OwnCoefficients {
    u64 lo[E];           // acc[j_e]
    u64 hi[E];           // acc[j_e + M]
    double2 factors[E];  // twist[u] alpha^bitrev3(e)
};

// The position of value 0 of task u in a full pass whose smallest half span is 2^Q_LOG
// (value e at base + 2^Q_LOG e).
template <int LOG_E, int Q_LOG>
__device__ __forceinline__ u32 task_base(u32 u) {
    return ((u >> Q_LOG) << (Q_LOG + LOG_E)) + (u & ((1u << Q_LOG) - 1));
}

// slot(base + (e << Q_LOG)) for a task's base (task_base), given s = slot(base): s and a
// constant for each e, since base has the bits of e << Q_LOG clear. For 8-value tasks slot is
// linear over GF(2), so the slot is s ^ slot(e << Q_LOG); the constant's bits that s has clear
// too (Q_LOG to Q_LOG + 2, from bit 3 on) are added instead of xored, which a shared-memory
// access takes as an immediate offset. For 16-value tasks slot(x + y) = slot(x) + slot(y) for
// x and y with no bit in common: the whole constant is an offset.
template <int LOG_E, int Q_LOG>
__device__ __forceinline__ u32 task_slot(u32 s, int e) {
    const u32 c = slot<LOG_E>((u32)e << Q_LOG);
    if constexpr (LOG_E == 3) {
        constexpr int LOW = Q_LOG > 3 ? Q_LOG : 3;
        constexpr u32 CLEAR = ((1u << (Q_LOG + 3)) - 1) & ~((1u << LOW) - 1);
        return (s ^ (c & ~CLEAR)) + (c & CLEAR);
    } else {
        return s + c;
    }
}

// Whether a pass covers one polynomial with one task per thread (the cluster kernel's blocks of
// exactly THREADS threads): its loop over tasks then runs once, as the compiler is told. (The
// amortized kernels, whose passes also run once per thread, took 78 and 104 more registers.)
template <int POLYS, u32 TOTAL, int THREADS>
__device__ __forceinline__ constexpr bool one_task() {
    return POLYS == 1 && TOTAL == (u32)THREADS;
}

// How far a loop over `total` tasks of E values each, `threads` at a time, unrolls: fully
// while it stays small (at most 16 values per thread in flight), else not at all, so that
// large N or many polynomials neither spill nor bloat the code.
__host__ __device__ constexpr int task_unroll(u32 total, u32 threads, int e) {
    return (total + threads - 1) / threads * e <= 16 ? (int)((total + threads - 1) / threads) : 1;
}

// One pass over POLYS polynomials (slot) at `data` (B stages, smallest half span 2^Q_LOG).
// With FUSE_ACC (the inverse's last pass), the natural-order results are not stored back but
// untwisted (times conj(twist); the 1 / M of the inverse transform is in the key, which the
// host uploads divided by M, exactly: M is a power of two), rounded
// and added to the accumulator polynomials `acc` (N words apart, polynomial p's N words at
// acc + p N): acc[j] += round(Re), acc[j + M] += round(Im); with `own` (not null: one task
// of 8 values per thread), the old values come from and the new ones also go to those
// registers, and the twist is split as OwnCoefficients says.
template <int LOG2M, int LOG_E, int THREADS, int POLYS, int B, int Q_LOG, bool INVERSE,
          bool FUSE_ACC, bool REPLACE = false, typename Tw>
__device__ __forceinline__ void fft_pass(double2 *data, const Tw &tw, u64 *acc,
                                         const double2 *__restrict__ twist,
                                         OwnCoefficients<1 << LOG_E> *own = nullptr) {
    constexpr int E = 1 << LOG_E;
    constexpr u32 TASKS_LOG = LOG2M - LOG_E;
    constexpr u32 M = 1u << LOG2M;
    constexpr u32 PM = polynomial_slots<LOG_E>(M);
    constexpr u32 Q = 1u << Q_LOG;
    constexpr u32 TOTAL = (u32)POLYS << TASKS_LOG;
    constexpr int UNROLL = task_unroll(TOTAL, THREADS, E);
    constexpr bool ONCE = one_task<POLYS, TOTAL, THREADS>();
#pragma unroll UNROLL
    for (u32 task = threadIdx.x; ONCE ? task == threadIdx.x : task < TOTAL; task += THREADS) {
        const u32 poly = task >> TASKS_LOG;
        const u32 u = task & ((1u << TASKS_LOG) - 1);
        const u32 j0 = u & (Q - 1);
        const u32 base = task_base<LOG_E, Q_LOG>(u), s = slot<LOG_E>(base);
        double2 *p = data + poly * PM;
        double2 x[E];
#pragma unroll
        for (int e = 0; e < E; e++) x[e] = p[task_slot<LOG_E, Q_LOG>(s, e)];
        if constexpr (FUSE_ACC && LOG_E == 3) {
            if (own != nullptr) {  // the twist's own part (see OwnCoefficients)
#pragma unroll
                for (int e = 0; e < E; e++) x[e] = cmul_conj(x[e], own->factors[e]);
                radix8_butterflies<true>(x);
            } else {
                fft_stages<LOG2M, LOG_E, B, Q_LOG, INVERSE>(x, j0, tw);
            }
        } else {
            fft_stages<LOG2M, LOG_E, B, Q_LOG, INVERSE>(x, j0, tw);
        }
        if (FUSE_ACC) {
            u64 *a = acc + (u64)poly * 2 * M;
#pragma unroll
            for (int e = 0; e < E; e++) {
                const u32 j = base + ((u32)e << Q_LOG);
                const double2 v = own == nullptr ? cmul_conj(x[e], __ldg(twist + j))
                                  : e == 0       ? x[e]
                                                 : cmul_conj(x[e], twist_step(e));
                const u64 lo = wrap_f64(v.x);
                const u64 hi = wrap_f64(v.y);
                if (own != nullptr) {
                    own->lo[e] = REPLACE ? lo : own->lo[e] + lo;
                    own->hi[e] = REPLACE ? hi : own->hi[e] + hi;
                    a[j] = own->lo[e];
                    a[j + M] = own->hi[e];
                } else {
                    a[j] = REPLACE ? lo : a[j] + lo;
                    a[j + M] = REPLACE ? hi : a[j + M] + hi;
                }
            }
        } else {
#pragma unroll
            for (int e = 0; e < E; e++) p[task_slot<LOG_E, Q_LOG>(s, e)] = x[e];
        }
    }
}

// Orders one pass's shared-memory stores before the next pass's loads: a block barrier, or
// only a warp's when WARP_LOCAL. A pass whose smallest half span is q = 2^Q_LOG <= 32 gives
// each aligned group of 32 tasks the whole blocks of 2^(Q_LOG + LOG_E) consecutive positions
// that they cover, the same slots for every such pass; so where a warp always runs the same
// aligned groups (one task per thread, whole warps: the cluster kernel, WARP_TASKS below),
// two consecutive passes with q <= 32 touch only slots of the warp's own.
template <bool WARP_LOCAL>
__device__ __forceinline__ void pass_barrier() {
    if constexpr (WARP_LOCAL) {
        __syncwarp();
    } else {
        __syncthreads();
    }
}

// Forward DIF FFT of POLYS polynomials (natural in, bit-reversed out): the passes
// from the one whose largest half span is 2^(HI - 1) on, down to (not including) the one
// whose largest half span is 2^(STOP - 1) (STOP = 0: to the end). Ends with __syncthreads()
// when SYNC_LAST (full passes always end with a barrier: a warp's only where WARP_TASKS and
// pass_barrier allow); the caller syncs before.
template <int LOG2M, int LOG_E, int THREADS, int POLYS, bool SYNC_LAST,
          int HI = LOG2M, int STOP = 0, bool WARP_TASKS = false, typename Tw>
__device__ __forceinline__ void fft_forward(double2 *data, const Tw &tw) {
    if constexpr (HI > STOP && HI > LOG_E) {
        constexpr int Q_LOG = HI - LOG_E;
        fft_pass<LOG2M, LOG_E, THREADS, POLYS, LOG_E, Q_LOG, false, false>(
            data, tw, nullptr, nullptr);
        pass_barrier<WARP_TASKS && Q_LOG <= 5>();  // the next pass's q is smaller
        fft_forward<LOG2M, LOG_E, THREADS, POLYS, SYNC_LAST, HI - LOG_E, STOP, WARP_TASKS>(
            data, tw);
    } else if constexpr (HI > STOP) {  // the last pass: LOG_E stages, or HI < LOG_E with q = 1
        fft_pass<LOG2M, LOG_E, THREADS, POLYS, HI, 0, false, false>(data, tw, nullptr,
                                                                            nullptr);
        if (SYNC_LAST) __syncthreads();
    }
}

// Inverse DIT FFT of POLYS polynomials (bit-reversed in), whose natural-order result
// is untwisted, rounded and added to `acc` (fft_pass with FUSE_ACC): the passes from the one
// whose smallest half span is 2^LO on, FIRST for the whole transform (the partial pass of
// LOG2M mod LOG_E stages first), with pass_barrier between passes (WARP_TASKS as for
// fft_forward). Ends with __syncthreads(); the caller syncs before.
template <int LOG2M, int LOG_E, int THREADS, int POLYS, int LO = 0,
          bool FIRST = true, bool WARP_TASKS = false, bool REPLACE = false, typename Tw>
__device__ __forceinline__ void fft_inverse_add(double2 *data, const Tw &tw, u64 *acc,
                                                const double2 *__restrict__ twist,
                                                OwnCoefficients<1 << LOG_E> *own = nullptr) {
    constexpr int PARTIAL = LOG2M % LOG_E;
    if constexpr (FIRST && PARTIAL > 0) {
        fft_pass<LOG2M, LOG_E, THREADS, POLYS, PARTIAL, 0, true, false>(data, tw, nullptr,
                                                                               nullptr);
        pass_barrier<WARP_TASKS && PARTIAL <= 5>();  // the next pass's q = 2^PARTIAL
        fft_inverse_add<LOG2M, LOG_E, THREADS, POLYS, PARTIAL, false, WARP_TASKS, REPLACE>(
            data, tw, acc, twist, own);
    } else if constexpr (LO + LOG_E < LOG2M) {
        fft_pass<LOG2M, LOG_E, THREADS, POLYS, LOG_E, LO, true, false>(data, tw, nullptr,
                                                                              nullptr);
        pass_barrier<WARP_TASKS && LO + LOG_E <= 5>();  // the next pass's q is larger
        fft_inverse_add<LOG2M, LOG_E, THREADS, POLYS, LO + LOG_E, false, WARP_TASKS, REPLACE>(
            data, tw, acc, twist, own);
    } else {
        fft_pass<LOG2M, LOG_E, THREADS, POLYS, LOG_E, LO, true, true, REPLACE>(data, tw, acc,
                                                                             twist, own);
        __syncthreads();
    }
}

// d + 1.5 2^52 - bias for an int d, exactly while the result fits 53 bits: 1.5 2^52 + d
// (where doubles have unit spacing) has the bits 0x4338000000000000 + d, so one FP64
// subtraction converts d instead of an I2F on the conversion pipe (a quarter of the FP64
// rate), which the inverse transform's conversions also use.
__device__ __forceinline__ double int_to_double_minus(int d, double bias) {
    return __hiloint2double(0x43380000 + (d >> 31), d) - bias;
}

// A digit as a double, exactly: |digit| <= 2^(B - 1), so for B <= 31 it fits an int.
template <u32 B>
__device__ __forceinline__ double digit_to_double(i64 digit) {
    if constexpr (B <= 31) {
        return int_to_double_minus((int)digit, 0x1.8p52);
    } else {
        return (double)digit;
    }
}

// The digit of a single decomposition level of base 2^B (B <= 31) of x, as a double: what
// decomposition_state and next_digit give for LEVELS = 1, from x's high word alone (the
// rounding bit, 63 - B, is at least 32). With S = 32 - B the rounded value is
// V = round(hi / 2^S) mod 2^B, and its balanced digit is sext_B(V - 1) + 1 =
// ((int)(hi - 2^(S - 1)) >> S) + 1, the + 1 being folded into the subtraction of the
// conversion, except on the tie V = 2^(B - 1) reached by rounding up (the top B + 1 bits of hi,
// value and rounding bit, are 2^B - 1: hi >= 2^31 - 2^(S - 1) as an int, one compare), which
// tfhe-rs balances to -2^(B - 1).
// fhe_pbs_decompose runs this path, so the GPU tests check it against decomposition.rs.
template <u32 B>
__device__ __forceinline__ double single_level_digit(u64 x) {
    static_assert(B >= 1 && B <= 31, "one level of at most 31 bits");
    constexpr u32 S = 32 - B;
    const u32 hi = (u32)(x >> 32);
    u32 below = (u32)((int)(hi - (1u << (S - 1))) >> S);  // the digit minus 1
    if ((int)hi >= (int)(0x80000000u - (1u << (S - 1)))) below -= 1u << B;
    return int_to_double_minus((int)below, 0x1.8p52 - 1.0);
}

// The next digits (decomposition_state, next_digit) of the values at positions j and j + M,
// as the twisted complex value (d_lo + i d_hi) w, w = twist[j]: a transform input.
template <u32 B>
__device__ __forceinline__ double2 next_twisted_digits(u64 &state_lo, u64 &state_hi,
                                                       double2 w) {
    const double d_lo = digit_to_double<B>(next_digit(state_lo, B));
    const double d_hi = digit_to_double<B>(next_digit(state_hi, B));
    return cmul(make_double2(d_lo, d_hi), w);
}

// Rotates, decomposes and twists the difference X^a p - p of one accumulator polynomial into
// LEVELS complex polynomials with base 2^B: value j of level `level` (0 the most significant)
// at dig[level * LEVEL_STRIDE + slot(j)], ready for fft_forward. Each thread owns
// coefficients j and j + M (j = threadIdx.x + THREADS t) and writes their digits straight
// into the transform's input.
template <int LOG2M, int LOG_E, int THREADS, int LEVELS, u32 B, u32 LEVEL_STRIDE, int UNROLL>
__device__ __forceinline__ void decompose_difference(const u64 *p, u32 a, double2 *dig,
                                                     const double2 *__restrict__ twist) {
    constexpr u32 M = 1u << LOG2M;
    constexpr u32 N_POLY = 2 * M;
    constexpr u32 DROPPED = 64 - B * LEVELS;
#pragma unroll UNROLL
    for (u32 trip = 0; trip < (M + THREADS - 1) / THREADS; trip++) {
        const u32 j = threadIdx.x + trip * THREADS;
        if (M % THREADS != 0 && j >= M) break;  // k + 1 = 3: blocks of 3 2^x threads
        const u64 lo = rotated(p, a, j, N_POLY) - p[j];
        const u64 hi = rotated(p, a, j + M, N_POLY) - p[j + M];
        u64 state_lo = decomposition_state(lo, DROPPED);
        u64 state_hi = decomposition_state(hi, DROPPED);
        const double2 w = __ldg(twist + j);
#pragma unroll
        for (int level = LEVELS - 1; level >= 0; level--) {
            dig[level * LEVEL_STRIDE + slot<LOG_E>(j)] =
                next_twisted_digits<B>(state_lo, state_hi, w);
        }
    }
}

// The decomposition fused with the forward transform's first pass, for digit level `level`
// of LEVELS (0 the most significant): for the task (r, u) of that pass (smallest half span
// q = M / E, LOG_E stages) on accumulator polynomial r of `acc` (POLYS of them, N words
// apart), rotates and decomposes X^a p - p at the task's positions j_e = u + q e and
// j_e + M, twists the level's digits into the E complex inputs, runs the pass on them in
// registers and stores the results to polynomial r of `dig` (slot): no round trip of the
// digits through shared memory. Without ROTATE (the multi-bit bootstrap's external products),
// p itself is decomposed and `a` is unused. With `own` (not null: one task of 8 values per thread),
// p[j_e] and p[j_e + M] come from registers, and the twist is split as OwnCoefficients says.
template <int LOG2M, int LOG_E, int THREADS, int POLYS, u32 B, int LEVELS = 1,
          bool ROTATE = true, typename Tw>
__device__ __forceinline__ void decompose_first_pass(const u64 *acc, u32 a, double2 *dig,
                                                     const Tw &tw,
                                                     const double2 *__restrict__ twist,
                                                     const OwnCoefficients<1 << LOG_E> *own,
                                                     int level = 0) {
    constexpr int E = 1 << LOG_E;
    constexpr u32 M = 1u << LOG2M;
    constexpr u32 N_POLY = 2 * M;
    constexpr int Q_LOG = LOG2M - LOG_E;  // also log2 of the tasks per polynomial
    constexpr u32 PM = polynomial_slots<LOG_E>(M);
    constexpr u32 TOTAL = (u32)POLYS << Q_LOG;
    constexpr int UNROLL = task_unroll(TOTAL, THREADS, E);
    constexpr bool ONCE = one_task<POLYS, TOTAL, THREADS>();
#pragma unroll UNROLL
    for (u32 task = threadIdx.x; ONCE ? task == threadIdx.x : task < TOTAL; task += THREADS) {
        const u32 r = task >> Q_LOG;
        const u32 u = task & ((1u << Q_LOG) - 1);
        const u64 *p = acc + (u64)r * N_POLY;
        double2 x[E];
#pragma unroll
        for (int e = 0; e < E; e++) {
            const u32 j = u + ((u32)e << Q_LOG);
            const u64 own_lo = own != nullptr ? own->lo[e] : p[j];
            const u64 own_hi = own != nullptr ? own->hi[e] : p[j + M];
            const double2 w = own != nullptr ? twist_step(e) : __ldg(twist + j);
            u64 diff_lo = own_lo, diff_hi = own_hi;
            // The cluster kernel's tasks (own) step j by constants: rotated_minus; the other
            // kernels' tasks compile to fewer instructions with rotated.
            if (ROTATE && own != nullptr) {
                diff_lo = rotated_minus(p, rotation_key(a, N_POLY) + j, own_lo, N_POLY);
                diff_hi = rotated_minus(p, rotation_key(a, N_POLY) + j + M, own_hi, N_POLY);
            } else if (ROTATE) {
                diff_lo = rotated(p, a, j, N_POLY) - own_lo;
                diff_hi = rotated(p, a, j + M, N_POLY) - own_hi;
            }
            if constexpr (LEVELS == 1 && B <= 31) {
                const double2 digits =
                    make_double2(single_level_digit<B>(diff_lo), single_level_digit<B>(diff_hi));
                x[e] = own != nullptr && e == 0 ? digits : cmul(digits, w);
            } else {
                constexpr u32 DROPPED = 64 - B * LEVELS;
                u64 state_lo = decomposition_state(diff_lo, DROPPED);
                u64 state_hi = decomposition_state(diff_hi, DROPPED);
#pragma unroll
                for (int less = LEVELS - 1; less > level; less--) {  // less significant digits
                    next_digit(state_lo, B);
                    next_digit(state_hi, B);
                }
                x[e] = next_twisted_digits<B>(state_lo, state_hi, w);
            }
        }
        if constexpr (LOG_E == 3) {
            if (own != nullptr) {  // the twist's own part (see OwnCoefficients)
                radix8_butterflies<false>(x);
#pragma unroll
                for (int e = 0; e < E; e++) x[e] = cmul(x[e], own->factors[e]);
            } else {
                fft_stages<LOG2M, LOG_E, LOG_E, Q_LOG, false>(x, u, tw);
            }
        } else {
            fft_stages<LOG2M, LOG_E, LOG_E, Q_LOG, false>(x, u, tw);
        }
        double2 *out = dig + r * PM;
#pragma unroll
        for (int e = 0; e < E; e++) out[task_slot<LOG_E, Q_LOG>(slot<LOG_E>(u), e)] = x[e];
    }
}

// Loads `own` for this thread's task u = threadIdx.x of decompose_first_pass (one polynomial,
// one task of 8 values per thread), with the twiddle registers of that pass.
template <int LOG2M>
__device__ __forceinline__ void load_own_coefficients(const u64 *acc,
                                                      const double2 *__restrict__ twist,
                                                      const TwiddleRegisters<LOG2M, 3> &tw,
                                                      OwnCoefficients<8> &own) {
    constexpr u32 M = 1u << LOG2M;
    constexpr int Q_LOG = LOG2M - 3;
    const u32 u = threadIdx.x;
    const double2 twist_u = __ldg(twist + u);
#pragma unroll
    for (int e = 0; e < 8; e++) {
        own.lo[e] = acc[u + ((u32)e << Q_LOG)];
        own.hi[e] = acc[u + ((u32)e << Q_LOG) + M];
        own.factors[e] = e == 0 ? twist_u : cmul(twist_u, tw.w[Q_LOG][bit_reversed3(e) - 1]);
    }
}

// Where the key value of bit-reversed position j lies in its polynomial (fhe-pbs/src/cuda
// uploads it so): j with its low three bits xored with the next three. The cluster kernel's
// threads read 8 consecutive positions each, 8 threads at a time from one 128-byte row per
// thread; the swizzle puts those 8 reads in 8 different banks. Values stay within their
// 128-byte line, so the amortized kernel's coalesced reads stay coalesced.
__device__ __forceinline__ u32 key_position(u32 j) {
    return j ^ ((j >> 3) & 7);
}

// Asks L2 for the key lines a block will read in this CMux's pointwise product (`POLYS`
// consecutive polynomials of M values from `key`), so that their DRAM latency overlaps the
// decomposition and the forward FFT. One prefetch per 128-byte line (8 complex values).
template <int LOG2M, int THREADS, int POLYS>
__device__ __forceinline__ void prefetch_key(const double2 *key) {
    constexpr u32 LINES = ((u32)POLYS << LOG2M) >> 3;
#pragma unroll
    for (u32 line = threadIdx.x; line < LINES; line += THREADS) {
        asm volatile("prefetch.global.L2 [%0];" ::"l"(key + ((u64)line << 3)));
    }
}

// Copies `count` twiddles into shared memory (the caller syncs after).
__device__ __forceinline__ void load_twiddles(double2 *tw_s, const double2 *__restrict__ tw,
                                              u32 count) {
    for (u32 t = threadIdx.x; t < count; t += blockDim.x) tw_s[t] = tw[t];
}

// load_twiddles for a block of THREADS threads and COUNT <= 8 THREADS twiddles known at
// compile time: each thread's loads all go out before its stores (load_twiddles's loop waits
// for each load in turn). The cluster kernel's prologue; the caller syncs after.
template <u32 THREADS, u32 COUNT>
__device__ __forceinline__ void load_twiddles_together(double2 *tw_s,
                                                       const double2 *__restrict__ tw) {
    constexpr u32 PER_THREAD = (COUNT + THREADS - 1) / THREADS;
    static_assert(PER_THREAD <= 8, "at most 8 twiddles per thread");
    double2 v[PER_THREAD];
#pragma unroll
    for (u32 k = 0; k < PER_THREAD; k++) {
        const u32 t = threadIdx.x + k * THREADS;
        if (t < COUNT) v[k] = tw[t];
    }
#pragma unroll
    for (u32 k = 0; k < PER_THREAD; k++) {
        const u32 t = threadIdx.x + k * THREADS;
        if (t < COUNT) tw_s[t] = v[k];
    }
}

