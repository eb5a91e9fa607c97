// Montgomery arithmetic over a prime field, as a template over the field's parameters `P`:
// `Fp<P>` holds P::LIMBS 32-bit limbs (an even number), least significant first, in Montgomery
// form with R = 2^(32 LIMBS): the same bits as arkworks' `Fp` with LIMBS / 2 u64 limbs, so
// values cross from the host as they are. Every function keeps its results canonical (in
// [0, q)).
//
// `P` gives LIMBS, INV (-q^-1 mod 2^32), modulus(i) (limb i of q, folded into instruction
// immediates) and one(i) (limb i of R mod q); FIELD_PARAMS below defines such a `P`. The
// curves' headers (bls12_381.cuh, bn254.cuh) instantiate it; a Rust test checks their constants
// against arkworks.
//
// The multiply is CIOS Montgomery on the integer pipeline as carry chains of 64-bit products
// (see fp_mul). Chains are consecutive volatile asm statements so that nothing clobbers the
// carry flag between them. The bounds the algorithms rely on need 4q < R (both curves' fields
// leave at least two spare bits in their top limb).
#pragma once
#include "common.cuh"

// Element i of the constant list `first, rest...`, the last one for i past the end (an
// immediate when i is known at compile time, else a switch).
__device__ __forceinline__ u32 pick_limb(int, u32 last) { return last; }

template <typename... T>
__device__ __forceinline__ u32 pick_limb(int i, u32 first, T... rest) {
    if (i == 0) return first;
    return pick_limb(i - 1, rest...);
}

// Field parameters `Name` for Fp<Name>: MODULUS and ONE are comma-separated lists of LIMBS
// 32-bit limbs (least significant first) of q and of R mod q, INV is -q^-1 mod 2^32. One is
// read from constant memory, the modulus is folded into the code. Use it after this header's
// templates (FIELD_INSTANCES at its end).
#define FIELD_PARAMS(Name, limbs, inv, MODULUS, ONE)                                        \
    __device__ __constant__ static const u32 Name##_one_limbs[limbs] = {ONE};               \
    struct Name {                                                                           \
        static constexpr int LIMBS = limbs;                                                 \
        static constexpr u32 INV = inv;                                                     \
        __device__ __forceinline__ static u32 modulus(int i) { return pick_limb(i, MODULUS); } \
        __device__ __forceinline__ static u32 one(int i) { return Name##_one_limbs[i]; }    \
    };                                                                                      \
    FIELD_INSTANCES(Name)

// A scalar field's parameters `Name` for msm_scalars_canonical: LIMBS (eight) limbs of the
// modulus r (MODULUS, as in FIELD_PARAMS, read from constant memory) and INV = -r^-1 mod 2^32.
#define SCALAR_PARAMS(Name, inv, MODULUS)                                                    \
    __device__ __constant__ static const u32 Name##_modulus_limbs[8] = {MODULUS};            \
    struct Name {                                                                           \
        static constexpr int LIMBS = 8;                                                     \
        static constexpr u32 INV = inv;                                                     \
        __device__ __forceinline__ static u32 modulus(int i) { return Name##_modulus_limbs[i]; } \
    };

// ---- carry-chain primitives -------------------------------------------------------------

#define ASM_ADD_CC(d, a, b) asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b))
#define ASM_ADDC_CC(d, a, b) asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b))
#define ASM_ADDC(d, a, b) asm volatile("addc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b))
#define ASM_SUB_CC(d, a, b) asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b))
#define ASM_SUBC_CC(d, a, b) asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b))
#define ASM_SUBC(d, a, b) asm volatile("subc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b))
// d += lo(a * b) / hi(a * b), starting or continuing a carry chain.
#define ASM_MAD_LO_CC(d, a, b) asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(d) : "r"(a), "r"(b))
#define ASM_MADC_LO_CC(d, a, b) asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(d) : "r"(a), "r"(b))
#define ASM_MAD_HI_CC(d, a, b) asm volatile("mad.hi.cc.u32 %0, %1, %2, %0;" : "+r"(d) : "r"(a), "r"(b))
#define ASM_MADC_HI_CC(d, a, b) asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(d) : "r"(a), "r"(b))
#define ASM_ADDC_CC_ACC(d, b) asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(d) : "r"(b))
#define ASM_ADDC_ACC(d, b) asm volatile("addc.u32 %0, %0, %1;" : "+r"(d) : "r"(b))

// t[0 .. n + 2) += a[0 .. n) * b, as two carry chains (low halves, then high halves).
template <int N>
__device__ __forceinline__ void mul_add_row(u32* t, const u32* a, u32 b) {
    ASM_MAD_LO_CC(t[0], a[0], b);
#pragma unroll
    for (int j = 1; j < N; j++) ASM_MADC_LO_CC(t[j], a[j], b);
    ASM_ADDC_CC_ACC(t[N], 0u);
    ASM_ADDC_ACC(t[N + 1], 0u);
    ASM_MAD_HI_CC(t[1], a[0], b);
#pragma unroll
    for (int j = 1; j < N; j++) ASM_MADC_HI_CC(t[j + 1], a[j], b);
    ASM_ADDC_ACC(t[N + 1], 0u);
}

// ---- Fp ---------------------------------------------------------------------------------

template <typename P>
struct Fp {
    u32 l[P::LIMBS];

    __device__ __forceinline__ static Fp zero() {
        Fp r;
#pragma unroll
        for (int i = 0; i < P::LIMBS; i++) r.l[i] = 0;
        return r;
    }

    __device__ __forceinline__ static Fp one() {
        Fp r;
#pragma unroll
        for (int i = 0; i < P::LIMBS; i++) r.l[i] = P::one(i);
        return r;
    }
};

template <typename P>
__device__ __forceinline__ bool is_zero(const Fp<P>& a) {
    u32 acc = 0;
#pragma unroll
    for (int i = 0; i < P::LIMBS; i++) acc |= a.l[i];
    return acc == 0;
}

// t (< 2q, in LIMBS limbs) reduced to [0, q).
template <typename P>
__device__ __forceinline__ Fp<P> reduce_once(const u32* t) {
    u32 s[P::LIMBS];
    u32 borrow;
    ASM_SUB_CC(s[0], t[0], P::modulus(0));
#pragma unroll
    for (int i = 1; i < P::LIMBS; i++) ASM_SUBC_CC(s[i], t[i], P::modulus(i));
    ASM_SUBC(borrow, 0u, 0u);
    Fp<P> r;
#pragma unroll
    for (int i = 0; i < P::LIMBS; i++) r.l[i] = borrow ? t[i] : s[i];
    return r;
}

template <typename P>
__device__ __forceinline__ Fp<P> add(const Fp<P>& a, const Fp<P>& b) {
    constexpr int N = P::LIMBS;
    u32 t[N];
    ASM_ADD_CC(t[0], a.l[0], b.l[0]);
#pragma unroll
    for (int i = 1; i < N - 1; i++) ASM_ADDC_CC(t[i], a.l[i], b.l[i]);
    ASM_ADDC(t[N - 1], a.l[N - 1], b.l[N - 1]);
    return reduce_once<P>(t);
}

template <typename P>
__device__ __forceinline__ Fp<P> sub(const Fp<P>& a, const Fp<P>& b) {
    constexpr int N = P::LIMBS;
    u32 t[N];
    u32 borrow;
    ASM_SUB_CC(t[0], a.l[0], b.l[0]);
#pragma unroll
    for (int i = 1; i < N; i++) ASM_SUBC_CC(t[i], a.l[i], b.l[i]);
    ASM_SUBC(borrow, 0u, 0u);
    // Add q back when the difference went negative.
    u32 mask = borrow;
    Fp<P> r;
    ASM_ADD_CC(r.l[0], t[0], P::modulus(0) & mask);
#pragma unroll
    for (int i = 1; i < N - 1; i++) ASM_ADDC_CC(r.l[i], t[i], P::modulus(i) & mask);
    ASM_ADDC(r.l[N - 1], t[N - 1], P::modulus(N - 1) & mask);
    return r;
}

template <typename P>
__device__ __forceinline__ Fp<P> neg(const Fp<P>& a) {
    return is_zero(a) ? a : sub(Fp<P>::zero(), a);
}

template <typename P>
__device__ __forceinline__ Fp<P> dbl(const Fp<P>& a) { return add(a, a); }

// acc[0 .. N) = src[0 .. N) + sum over j = 0, 2, .., N - 2 of a[j] * b * 2^(32 j): N / 2 64-bit
// products, each added at the limb pair (j, j + 1) as `mad.lo.cc` then `madc.hi.cc`, in one
// carry chain, which ptxas turns into N / 2 IMAD.WIDE.U32.X. `src` may be `acc` itself or
// another array (reading the addends elsewhere shifts an accumulator for free). CARRY_IN
// continues the chain of the statement before.
#define ASM_MAD_LO_CC_TO(d, a, b, c) \
    asm volatile("mad.lo.cc.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c))
#define ASM_MADC_LO_CC_TO(d, a, b, c) \
    asm volatile("madc.lo.cc.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c))
#define ASM_MADC_HI_CC_TO(d, a, b, c) \
    asm volatile("madc.hi.cc.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c))

template <int N, bool CARRY_IN>
__device__ __forceinline__ void mad_limb_pairs(u32* acc, const u32* a, u32 b, const u32* src) {
    if (CARRY_IN) {
        ASM_MADC_LO_CC_TO(acc[0], a[0], b, src[0]);
    } else {
        ASM_MAD_LO_CC_TO(acc[0], a[0], b, src[0]);
    }
    ASM_MADC_HI_CC_TO(acc[1], a[0], b, src[1]);
#pragma unroll
    for (int j = 2; j < N; j += 2) {
        ASM_MADC_LO_CC_TO(acc[j], a[j], b, src[j]);
        ASM_MADC_HI_CC_TO(acc[j + 1], a[j], b, src[j + 1]);
    }
}

// Montgomery multiplication, CIOS with the running sum split in two, T = X + 2^32 Y, so that
// every row is independent chains of 64-bit products (one per limb parity, see mad_limb_pairs)
// and no separate carry additions: for BLS12-381 about 360 instructions per multiply, against
// about 1250 for one accumulator with separate low and high chains (each `mad.lo.cc` costs an
// IMAD and an IADD3.X; measured on an H100: 1.45x the multiplies per second).
//
// Per limb i of the multipliers, a row: X += a_even b_i and Y += a_odd b_i (Y sits one limb
// up), for each product of the row; m = X[0] (-q^-1); X += q_even m and Y += q_odd m; X[0] is
// now zero and T / 2^32 = Y + X / 2^32, so the new X is Y, and the new Y is the old X two limbs
// down, plus the old X[1] added into the new X[0] with its carry going to the new Y[0]. The
// shift happens as the next row's first Y chain reads its addends from the old X. A carry out
// of the top of X lands in Y[N - 1] (the same weight); the bound T < 2^(32 (N + 1)) (each
// product below q^2, at most two per row, and 4q < R) keeps every other chain from carrying
// out. The algebra and the bounds were checked on models with explicit carry flags before this
// was written (for BLS12-381's twelve limbs; nothing in them depends on the limb count).
template <typename P>
struct MontRows {
    u32 x[P::LIMBS];         // the low-aligned half of T
    u32 prev[P::LIMBS + 2];  // the previous row's x: prev[1] weighs 2^0, prev[k + 2] feeds y[k]
    u32 y[P::LIMBS];         // the half one limb up
};

template <typename P>
__device__ __forceinline__ MontRows<P> mont_rows_zero() {
    MontRows<P> s;
#pragma unroll
    for (int k = 0; k < P::LIMBS + 2; k++) s.prev[k] = 0;
#pragma unroll
    for (int k = 0; k < P::LIMBS; k++) s.x[k] = 0;
    return s;
}

// The odd limbs of a at even positions (odd[2j] = a[2j + 1]), the operand of the Y chains.
template <typename P>
__device__ __forceinline__ void odd_limbs(const Fp<P>& a, u32* odd) {
#pragma unroll
    for (int j = 0; j < P::LIMBS; j += 2) {
        odd[j] = a.l[j + 1];
        odd[j + 1] = 0;
    }
}

// A row's first product, a * b_i, which also shifts the previous row in.
template <typename P>
__device__ __forceinline__ void mont_row_start(MontRows<P>& s, const Fp<P>& a, const u32* a_odd,
                                               u32 bi) {
    constexpr int N = P::LIMBS;
    ASM_ADD_CC(s.x[0], s.x[0], s.prev[1]);
    mad_limb_pairs<N, true>(s.y, a_odd, bi, s.prev + 2);
    mad_limb_pairs<N, false>(s.x, a.l, bi, s.x);
    ASM_ADDC_ACC(s.y[N - 1], 0u);
}

// A second product in the same row, c * d_i.
template <typename P>
__device__ __forceinline__ void mont_row_add(MontRows<P>& s, const Fp<P>& c, const u32* c_odd,
                                             u32 di) {
    constexpr int N = P::LIMBS;
    mad_limb_pairs<N, false>(s.x, c.l, di, s.x);
    ASM_ADDC_ACC(s.y[N - 1], 0u);
    mad_limb_pairs<N, false>(s.y, c_odd, di, s.y);
}

// q's even limbs at even positions (q_even[2j] = q[2j]) and its odd limbs there
// (q_odd[2j] = q[2j + 1]), zeros between: the operands of a row's reduction chains.
template <typename P>
__device__ __forceinline__ void modulus_by_parity(u32* q_even, u32* q_odd) {
#pragma unroll
    for (int j = 0; j < P::LIMBS; j += 2) {
        q_even[j] = P::modulus(j);
        q_odd[j] = P::modulus(j + 1);
        q_even[j + 1] = q_odd[j + 1] = 0;
    }
}

// The row's reduction: T += m q, which clears X[0]; then the shift by one limb.
template <typename P>
__device__ __forceinline__ void mont_row_reduce(MontRows<P>& s) {
    constexpr int N = P::LIMBS;
    u32 q_even[N], q_odd[N];
    modulus_by_parity<P>(q_even, q_odd);
    const u32 m = s.x[0] * P::INV;
    mad_limb_pairs<N, false>(s.x, q_even, m, s.x);
    ASM_ADDC_ACC(s.y[N - 1], 0u);
    mad_limb_pairs<N, false>(s.y, q_odd, m, s.y);
#pragma unroll
    for (int k = 0; k < N; k++) {
        s.prev[k] = s.x[k];
        s.x[k] = s.y[k];
    }
}

// t = x + prev / 2^32 after the last row: T / R, below 2q.
template <int N>
__device__ __forceinline__ void mont_merge(const u32* x, const u32* prev, u32* t) {
    ASM_ADD_CC(t[0], x[0], prev[1]);
#pragma unroll
    for (int k = 1; k < N - 1; k++) ASM_ADDC_CC(t[k], x[k], prev[k + 1]);
    ASM_ADDC(t[N - 1], x[N - 1], 0u);
}

template <typename P>
__device__ __forceinline__ Fp<P> mont_rows_finish(const MontRows<P>& s) {
    u32 t[P::LIMBS];
    mont_merge<P::LIMBS>(s.x, s.prev, t);
    return reduce_once<P>(t);
}

// a * b * R^-1 mod q.
//
// Not inlined: a point addition holds a dozen multiplies, and inlined copies overflowed the
// instruction cache (measured: latency-bound kernels ran 5-10x slower). Arguments pass by value,
// in registers.
template <typename P>
__device__ __noinline__ Fp<P> mul(Fp<P> a, Fp<P> b) {
    u32 a_odd[P::LIMBS];
    odd_limbs(a, a_odd);
    MontRows<P> s = mont_rows_zero<P>();
#pragma unroll
    for (int i = 0; i < P::LIMBS; i++) {
        mont_row_start(s, a, a_odd, b.l[i]);
        mont_row_reduce(s);
    }
    return mont_rows_finish(s);
}

// (a * b + c * d) * R^-1 mod q with one reduction: two thirds of the work of two mul. The
// sum stays below 2q^2, so T / R < q + 2q^2 / R < 2q.
template <typename P>
__device__ __noinline__ Fp<P> mul_sum(Fp<P> a, Fp<P> b, Fp<P> c, Fp<P> d) {
    u32 a_odd[P::LIMBS], c_odd[P::LIMBS];
    odd_limbs(a, a_odd);
    odd_limbs(c, c_odd);
    MontRows<P> s = mont_rows_zero<P>();
#pragma unroll
    for (int i = 0; i < P::LIMBS; i++) {
        mont_row_start(s, a, a_odd, b.l[i]);
        mont_row_add(s, c, c_odd, d.l[i]);
        mont_row_reduce(s);
    }
    return mont_rows_finish(s);
}

// a^2 * R^-1 mod q, with about a quarter fewer multiplies than mul(a, a): the square
// T = a^2 (2N limbs) first, then Montgomery reduction of T (SOS: separated operand scanning).
//
// T = 2 U + D: U = sum_{i < j} a_i a_j 2^(32 (i + j)) once per pair (N (N - 1) / 2 products
// instead of N^2 - N), in two accumulators by the parity of the limb where each 64-bit product
// starts, so that every row is two carry chains of IMAD.WIDEs (a row's chain ends at limb i + N
// and its carry lands on limb i + N + 1, which no earlier row reached); D = sum a_i^2 2^(64 i),
// added onto 2 U in one chain. The reduction is mul's loop without the product rows: x starts as
// T's low half, and T's high half is added at the end (T < q^2 keeps the result below 2q).
// Checked on a model with explicit carry flags before it was written.
template <typename P>
__device__ __noinline__ Fp<P> sqr(Fp<P> a) {
    constexpr int N = P::LIMBS;
    u32 even[2 * N], odd[2 * N];
#pragma unroll
    for (int k = 0; k < 2 * N; k++) even[k] = odd[k] = 0;
#pragma unroll
    for (int i = 0; i < N - 1; i++) {
#pragma unroll
        for (int parity = 0; parity < 2; parity++) {
            u32* acc = parity == 0 ? even : odd;
            const int j = (2 * i + 1) % 2 == parity ? i + 1 : i + 2;  // (i + j) % 2 == parity
            if (j >= N) continue;
            ASM_MAD_LO_CC(acc[i + j], a.l[i], a.l[j]);
            ASM_MADC_HI_CC(acc[i + j + 1], a.l[i], a.l[j]);
            int last = j;
#pragma unroll
            for (int jj = j + 2; jj < N; jj += 2) {
                ASM_MADC_LO_CC(acc[i + jj], a.l[i], a.l[jj]);
                ASM_MADC_HI_CC(acc[i + jj + 1], a.l[i], a.l[jj]);
                last = jj;
            }
            ASM_ADDC(acc[i + last + 2], 0u, 0u);
        }
    }
    // u = even + odd, doubled, plus the squares of the limbs.
    u32 u[2 * N];
    ASM_ADD_CC(u[0], even[0], odd[0]);
#pragma unroll
    for (int k = 1; k < 2 * N - 1; k++) ASM_ADDC_CC(u[k], even[k], odd[k]);
    ASM_ADDC(u[2 * N - 1], even[2 * N - 1], odd[2 * N - 1]);
    u32 t[2 * N];
#pragma unroll
    for (int k = 2 * N - 1; k > 0; k--) t[k] = __funnelshift_l(u[k - 1], u[k], 1);
    t[0] = u[0] << 1;
    ASM_MAD_LO_CC(t[0], a.l[0], a.l[0]);
    ASM_MADC_HI_CC(t[1], a.l[0], a.l[0]);
#pragma unroll
    for (int i = 1; i < N; i++) {
        ASM_MADC_LO_CC(t[2 * i], a.l[i], a.l[i]);
        ASM_MADC_HI_CC(t[2 * i + 1], a.l[i], a.l[i]);
    }
    // Montgomery reduction of t, as in mul's rows without the products.
    u32 q_even[N], q_odd[N];
    modulus_by_parity<P>(q_even, q_odd);
    u32 x[N], prev[N + 2], y[N];
#pragma unroll
    for (int k = 0; k < N + 2; k++) prev[k] = 0;
#pragma unroll
    for (int k = 0; k < N; k++) x[k] = t[k];
#pragma unroll
    for (int i = 0; i < N; i++) {
        ASM_ADD_CC(x[0], x[0], prev[1]);
        const u32 m = x[0] * P::INV;
        mad_limb_pairs<N, true>(y, q_odd, m, prev + 2);
        mad_limb_pairs<N, false>(x, q_even, m, x);
        ASM_ADDC_ACC(y[N - 1], 0u);
#pragma unroll
        for (int k = 0; k < N; k++) {
            prev[k] = x[k];
            x[k] = y[k];
        }
    }
    u32 r[N];
    mont_merge<N>(x, prev, r);
    ASM_ADD_CC(r[0], r[0], t[N]);
#pragma unroll
    for (int k = 1; k < N - 1; k++) ASM_ADDC_CC_ACC(r[k], t[N + k]);
    ASM_ADDC_ACC(r[N - 1], t[2 * N - 1]);
    return reduce_once<P>(r);
}

// a * b - c * d in Montgomery form.
template <typename P>
__device__ __forceinline__ Fp<P> mul_sub(const Fp<P>& a, const Fp<P>& b, const Fp<P>& c,
                                         const Fp<P>& d) {
    return mul_sum(a, b, neg(c), d);
}

// a^(q - 2) = a^-1 (zero for zero), by square-and-multiply over the bits of q - 2.
template <typename P>
__device__ __noinline__ Fp<P> inverse(const Fp<P>& a) {
    Fp<P> r = Fp<P>::one();
    bool started = false;
    for (int limb = P::LIMBS - 1; limb >= 0; limb--) {
        u32 e = P::modulus(limb) - (limb == 0 ? 2u : 0u);
        for (int bit = 31; bit >= 0; bit--) {
            if (started) r = sqr(r);
            if ((e >> bit) & 1) {
                r = started ? mul(r, a) : a;
                started = true;
            }
        }
    }
    return r;
}

// v as lane `lane` of the group of `width` lanes holds it (__shfl_sync on every limb).
template <typename P>
__device__ __forceinline__ Fp<P> shuffle(const Fp<P>& v, u32 mask, u32 lane, u32 width) {
    Fp<P> r;
#pragma unroll
    for (int k = 0; k < P::LIMBS; k++) r.l[k] = __shfl_sync(mask, v.l[k], lane, width);
    return r;
}

// The out-of-line functions of Fp<P>, instantiated in this order (that of the hand-written
// BLS12-381 code before the template: ptxas lays them out so, and the kernels' machine code
// stays as it was measured).
#define FIELD_INSTANCES(P)                                         \
    template __device__ Fp<P> mul<P>(Fp<P>, Fp<P>);                \
    template __device__ Fp<P> mul_sum<P>(Fp<P>, Fp<P>, Fp<P>, Fp<P>); \
    template __device__ Fp<P> sqr<P>(Fp<P>);                       \
    template __device__ Fp<P> inverse<P>(const Fp<P>&);
