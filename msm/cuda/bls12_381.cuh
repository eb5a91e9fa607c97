// BLS12-381: the base field Fq (381 bits), the scalar field's modulus r, and G1 arithmetic
// (y^2 = x^3 + 4) in affine and XYZZ coordinates.
//
// Field elements are twelve 32-bit limbs, least significant first, in Montgomery form with
// R = 2^384: the same bits as arkworks' `Fq` (six u64 limbs, R = 2^384), so bases cross from
// the host as they are. Every function keeps its results canonical (in [0, q)).
//
// The multiply is CIOS Montgomery on the integer pipeline as carry chains of 64-bit products
// (see fq_mul). Chains are consecutive volatile asm statements so that nothing clobbers the
// carry flag between them.
#pragma once
#include "common.cuh"

#define FQ_LIMBS 12
#define FR_LIMBS 8

struct Fq {
    u32 l[FQ_LIMBS];
};

__device__ __constant__ static const u32 FQ_MODULUS[FQ_LIMBS] = {
    0xffffaaabu, 0xb9feffffu, 0xb153ffffu, 0x1eabfffeu, 0xf6b0f624u, 0x6730d2a0u,
    0xf38512bfu, 0x64774b84u, 0x434bacd7u, 0x4b1ba7b6u, 0x397fe69au, 0x1a0111eau};
// -q^-1 mod 2^32.
#define FQ_INV 0xfffcfffdu
// R mod q: one in Montgomery form.
__device__ __constant__ static const u32 FQ_ONE[FQ_LIMBS] = {
    0x0002fffdu, 0x76090000u, 0xc40c0002u, 0xebf4000bu, 0x53c758bau, 0x5f489857u,
    0x70525745u, 0x77ce5853u, 0xa256ec6du, 0x5c071a97u, 0xfa80e493u, 0x15f65ec3u};

// The scalar field's modulus r (255 bits) and -r^-1 mod 2^32 (r = 1 mod 2^32).
__device__ __constant__ static const u32 FR_MODULUS[FR_LIMBS] = {
    0x00000001u, 0xffffffffu, 0xfffe5bfeu, 0x53bda402u,
    0x09a1d805u, 0x3339d808u, 0x299d7d48u, 0x73eda753u};
#define FR_INV 0xffffffffu

// The modulus limbs as compile-time constants, so that they become instruction immediates.
#define Q0 0xffffaaabu
#define Q1 0xb9feffffu
#define Q2 0xb153ffffu
#define Q3 0x1eabfffeu
#define Q4 0xf6b0f624u
#define Q5 0x6730d2a0u
#define Q6 0xf38512bfu
#define Q7 0x64774b84u
#define Q8 0x434bacd7u
#define Q9 0x4b1ba7b6u
#define Q10 0x397fe69au
#define Q11 0x1a0111eau

__device__ __forceinline__ u32 fq_modulus_limb(int i) {
    switch (i) {
        case 0: return Q0; case 1: return Q1; case 2: return Q2; case 3: return Q3;
        case 4: return Q4; case 5: return Q5; case 6: return Q6; case 7: return Q7;
        case 8: return Q8; case 9: return Q9; case 10: return Q10; default: return Q11;
    }
}

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

// ---- Fq ---------------------------------------------------------------------------------

__device__ __forceinline__ Fq fq_zero() {
    Fq r;
#pragma unroll
    for (int i = 0; i < FQ_LIMBS; i++) r.l[i] = 0;
    return r;
}

__device__ __forceinline__ Fq fq_one() {
    Fq r;
#pragma unroll
    for (int i = 0; i < FQ_LIMBS; i++) r.l[i] = FQ_ONE[i];
    return r;
}

__device__ __forceinline__ bool fq_is_zero(const Fq& a) {
    u32 acc = 0;
#pragma unroll
    for (int i = 0; i < FQ_LIMBS; i++) acc |= a.l[i];
    return acc == 0;
}

__device__ __forceinline__ bool fq_eq(const Fq& a, const Fq& b) {
    u32 acc = 0;
#pragma unroll
    for (int i = 0; i < FQ_LIMBS; i++) acc |= a.l[i] ^ b.l[i];
    return acc == 0;
}

// t (< 2q, in 12 limbs) reduced to [0, q).
__device__ __forceinline__ Fq fq_reduce_once(const u32* t) {
    u32 s[FQ_LIMBS];
    u32 borrow;
    ASM_SUB_CC(s[0], t[0], Q0);
    ASM_SUBC_CC(s[1], t[1], Q1);
    ASM_SUBC_CC(s[2], t[2], Q2);
    ASM_SUBC_CC(s[3], t[3], Q3);
    ASM_SUBC_CC(s[4], t[4], Q4);
    ASM_SUBC_CC(s[5], t[5], Q5);
    ASM_SUBC_CC(s[6], t[6], Q6);
    ASM_SUBC_CC(s[7], t[7], Q7);
    ASM_SUBC_CC(s[8], t[8], Q8);
    ASM_SUBC_CC(s[9], t[9], Q9);
    ASM_SUBC_CC(s[10], t[10], Q10);
    ASM_SUBC_CC(s[11], t[11], Q11);
    ASM_SUBC(borrow, 0u, 0u);
    Fq r;
#pragma unroll
    for (int i = 0; i < FQ_LIMBS; i++) r.l[i] = borrow ? t[i] : s[i];
    return r;
}

__device__ __forceinline__ Fq fq_add(const Fq& a, const Fq& b) {
    u32 t[FQ_LIMBS];
    ASM_ADD_CC(t[0], a.l[0], b.l[0]);
#pragma unroll
    for (int i = 1; i < FQ_LIMBS - 1; i++) ASM_ADDC_CC(t[i], a.l[i], b.l[i]);
    ASM_ADDC(t[FQ_LIMBS - 1], a.l[FQ_LIMBS - 1], b.l[FQ_LIMBS - 1]);
    return fq_reduce_once(t);
}

__device__ __forceinline__ Fq fq_sub(const Fq& a, const Fq& b) {
    u32 t[FQ_LIMBS];
    u32 borrow;
    ASM_SUB_CC(t[0], a.l[0], b.l[0]);
#pragma unroll
    for (int i = 1; i < FQ_LIMBS; i++) ASM_SUBC_CC(t[i], a.l[i], b.l[i]);
    ASM_SUBC(borrow, 0u, 0u);
    // Add q back when the difference went negative.
    u32 mask = borrow;
    Fq r;
    ASM_ADD_CC(r.l[0], t[0], Q0 & mask);
    ASM_ADDC_CC(r.l[1], t[1], Q1 & mask);
    ASM_ADDC_CC(r.l[2], t[2], Q2 & mask);
    ASM_ADDC_CC(r.l[3], t[3], Q3 & mask);
    ASM_ADDC_CC(r.l[4], t[4], Q4 & mask);
    ASM_ADDC_CC(r.l[5], t[5], Q5 & mask);
    ASM_ADDC_CC(r.l[6], t[6], Q6 & mask);
    ASM_ADDC_CC(r.l[7], t[7], Q7 & mask);
    ASM_ADDC_CC(r.l[8], t[8], Q8 & mask);
    ASM_ADDC_CC(r.l[9], t[9], Q9 & mask);
    ASM_ADDC_CC(r.l[10], t[10], Q10 & mask);
    ASM_ADDC(r.l[11], t[11], Q11 & mask);
    return r;
}

__device__ __forceinline__ Fq fq_neg(const Fq& a) {
    return fq_is_zero(a) ? a : fq_sub(fq_zero(), a);
}

__device__ __forceinline__ Fq fq_double(const Fq& a) { return fq_add(a, a); }

// acc[0 .. 12) = src[0 .. 12) + sum over j = 0, 2, .., 10 of a[j] * b * 2^(32 j): six 64-bit
// products, each added at the limb pair (j, j + 1) as `mad.lo.cc` then `madc.hi.cc`, in one carry
// chain, which ptxas turns into six IMAD.WIDE.U32.X. `src` may be `acc` itself or another array
// (reading the addends elsewhere shifts an accumulator for free). CARRY_IN continues the chain
// of the statement before.
#define ASM_MAD_LO_CC_TO(d, a, b, c) \
    asm volatile("mad.lo.cc.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c))
#define ASM_MADC_LO_CC_TO(d, a, b, c) \
    asm volatile("madc.lo.cc.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c))
#define ASM_MADC_HI_CC_TO(d, a, b, c) \
    asm volatile("madc.hi.cc.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c))

template <bool CARRY_IN>
__device__ __forceinline__ void mad_limb_pairs(u32* acc, const u32* a, u32 b, const u32* src) {
    if (CARRY_IN) {
        ASM_MADC_LO_CC_TO(acc[0], a[0], b, src[0]);
    } else {
        ASM_MAD_LO_CC_TO(acc[0], a[0], b, src[0]);
    }
    ASM_MADC_HI_CC_TO(acc[1], a[0], b, src[1]);
#pragma unroll
    for (int j = 2; j < FQ_LIMBS; j += 2) {
        ASM_MADC_LO_CC_TO(acc[j], a[j], b, src[j]);
        ASM_MADC_HI_CC_TO(acc[j + 1], a[j], b, src[j + 1]);
    }
}

// Montgomery multiplication, CIOS with the running sum split in two, T = X + 2^32 Y, so that
// every row is independent chains of 64-bit products (one per limb parity, see mad_limb_pairs)
// and no separate carry additions: about 360 instructions per multiply, against about 1250 for
// one accumulator with separate low and high chains (each `mad.lo.cc` costs an IMAD and an
// IADD3.X; measured on an H100: 1.45x the multiplies per second).
//
// Per limb i of the multipliers, a row: X += a_even b_i and Y += a_odd b_i (Y sits one limb
// up), for each product of the row; m = X[0] (-q^-1); X += q_even m and Y += q_odd m; X[0] is
// now zero and T / 2^32 = Y + X / 2^32, so the new X is Y, and the new Y is the old X two limbs
// down, plus the old X[1] added into the new X[0] with its carry going to the new Y[0]. The
// shift happens as the next row's first Y chain reads its addends from the old X. A carry out
// of the top of X lands in Y[11] (the same weight); the bound T < 2^416 (each product below
// q^2, at most two per row) keeps every other chain from carrying out. The algebra and the
// bounds were checked on models with explicit carry flags before this was written.
struct MontRows {
    u32 x[FQ_LIMBS];         // the low-aligned half of T
    u32 prev[FQ_LIMBS + 2];  // the previous row's x: prev[1] weighs 2^0, prev[k + 2] feeds y[k]
    u32 y[FQ_LIMBS];         // the half one limb up
};

__device__ __forceinline__ MontRows mont_rows_zero() {
    MontRows s;
#pragma unroll
    for (int k = 0; k < FQ_LIMBS + 2; k++) s.prev[k] = 0;
#pragma unroll
    for (int k = 0; k < FQ_LIMBS; k++) s.x[k] = 0;
    return s;
}

// The odd limbs of a at even positions (odd[2j] = a[2j + 1]), the operand of the Y chains.
__device__ __forceinline__ void odd_limbs(const Fq& a, u32* odd) {
#pragma unroll
    for (int j = 0; j < FQ_LIMBS; j += 2) {
        odd[j] = a.l[j + 1];
        odd[j + 1] = 0;
    }
}

// A row's first product, a * b_i, which also shifts the previous row in.
__device__ __forceinline__ void mont_row_start(MontRows& s, const Fq& a, const u32* a_odd, u32 bi) {
    ASM_ADD_CC(s.x[0], s.x[0], s.prev[1]);
    mad_limb_pairs<true>(s.y, a_odd, bi, s.prev + 2);
    mad_limb_pairs<false>(s.x, a.l, bi, s.x);
    ASM_ADDC_ACC(s.y[FQ_LIMBS - 1], 0u);
}

// A second product in the same row, c * d_i.
__device__ __forceinline__ void mont_row_add(MontRows& s, const Fq& c, const u32* c_odd, u32 di) {
    mad_limb_pairs<false>(s.x, c.l, di, s.x);
    ASM_ADDC_ACC(s.y[FQ_LIMBS - 1], 0u);
    mad_limb_pairs<false>(s.y, c_odd, di, s.y);
}

// The row's reduction: T += m q, which clears X[0]; then the shift by one limb.
__device__ __forceinline__ void mont_row_reduce(MontRows& s) {
    const u32 q_even[FQ_LIMBS] = {Q0, 0, Q2, 0, Q4, 0, Q6, 0, Q8, 0, Q10, 0};
    const u32 q_odd[FQ_LIMBS] = {Q1, 0, Q3, 0, Q5, 0, Q7, 0, Q9, 0, Q11, 0};
    const u32 m = s.x[0] * FQ_INV;
    mad_limb_pairs<false>(s.x, q_even, m, s.x);
    ASM_ADDC_ACC(s.y[FQ_LIMBS - 1], 0u);
    mad_limb_pairs<false>(s.y, q_odd, m, s.y);
#pragma unroll
    for (int k = 0; k < FQ_LIMBS; k++) {
        s.prev[k] = s.x[k];
        s.x[k] = s.y[k];
    }
}

// t = x + prev / 2^32 after the last row: T / 2^384, below 2q.
__device__ __forceinline__ void mont_merge(const u32* x, const u32* prev, u32* t) {
    ASM_ADD_CC(t[0], x[0], prev[1]);
#pragma unroll
    for (int k = 1; k < FQ_LIMBS - 1; k++) ASM_ADDC_CC(t[k], x[k], prev[k + 1]);
    ASM_ADDC(t[FQ_LIMBS - 1], x[FQ_LIMBS - 1], 0u);
}

__device__ __forceinline__ Fq mont_rows_finish(const MontRows& s) {
    u32 t[FQ_LIMBS];
    mont_merge(s.x, s.prev, t);
    return fq_reduce_once(t);
}

// a * b * R^-1 mod q.
//
// Not inlined: a point addition holds a dozen multiplies, and inlined copies overflowed the
// instruction cache (measured: latency-bound kernels ran 5-10x slower). Arguments pass by value,
// in registers.
__device__ __noinline__ Fq fq_mul(Fq a, Fq b) {
    u32 a_odd[FQ_LIMBS];
    odd_limbs(a, a_odd);
    MontRows s = mont_rows_zero();
#pragma unroll
    for (int i = 0; i < FQ_LIMBS; i++) {
        mont_row_start(s, a, a_odd, b.l[i]);
        mont_row_reduce(s);
    }
    return mont_rows_finish(s);
}

// (a * b + c * d) * R^-1 mod q with one reduction: two thirds of the work of two fq_mul. The
// sum stays below 2q^2, so T / 2^384 < q + 2q^2 / 2^384 < 2q.
__device__ __noinline__ Fq fq_mul_sum(Fq a, Fq b, Fq c, Fq d) {
    u32 a_odd[FQ_LIMBS], c_odd[FQ_LIMBS];
    odd_limbs(a, a_odd);
    odd_limbs(c, c_odd);
    MontRows s = mont_rows_zero();
#pragma unroll
    for (int i = 0; i < FQ_LIMBS; i++) {
        mont_row_start(s, a, a_odd, b.l[i]);
        mont_row_add(s, c, c_odd, d.l[i]);
        mont_row_reduce(s);
    }
    return mont_rows_finish(s);
}

// a * b - c * d in Montgomery form.
__device__ __forceinline__ Fq fq_mul_sub(const Fq& a, const Fq& b, const Fq& c, const Fq& d) {
    return fq_mul_sum(a, b, fq_neg(c), d);
}

// a^2 * R^-1 mod q, with about a quarter fewer multiplies than fq_mul(a, a): the square
// T = a^2 (24 limbs) first, then Montgomery reduction of T (SOS: separated operand scanning).
//
// T = 2 U + D: U = sum_{i < j} a_i a_j 2^(32 (i + j)) once per pair (66 products instead of
// 132), in two accumulators by the parity of the limb where each 64-bit product starts, so that
// every row is two carry chains of IMAD.WIDEs (a row's chain ends at limb i + 12 and its carry
// lands on limb i + 13, which no earlier row reached); D = sum a_i^2 2^(64 i), added onto 2 U in
// one chain. The reduction is fq_mul's loop without the product rows: x starts as T's low half,
// and T's high half is added at the end (T < q^2 keeps the result below 2q). Checked on a model
// with explicit carry flags before it was written.
__device__ __noinline__ Fq fq_sqr(Fq a) {
    u32 even[2 * FQ_LIMBS], odd[2 * FQ_LIMBS];
#pragma unroll
    for (int k = 0; k < 2 * FQ_LIMBS; k++) even[k] = odd[k] = 0;
#pragma unroll
    for (int i = 0; i < FQ_LIMBS - 1; i++) {
#pragma unroll
        for (int parity = 0; parity < 2; parity++) {
            u32* acc = parity == 0 ? even : odd;
            const int j = (2 * i + 1) % 2 == parity ? i + 1 : i + 2;  // (i + j) % 2 == parity
            if (j >= FQ_LIMBS) continue;
            ASM_MAD_LO_CC(acc[i + j], a.l[i], a.l[j]);
            ASM_MADC_HI_CC(acc[i + j + 1], a.l[i], a.l[j]);
            int last = j;
#pragma unroll
            for (int jj = j + 2; jj < FQ_LIMBS; jj += 2) {
                ASM_MADC_LO_CC(acc[i + jj], a.l[i], a.l[jj]);
                ASM_MADC_HI_CC(acc[i + jj + 1], a.l[i], a.l[jj]);
                last = jj;
            }
            ASM_ADDC(acc[i + last + 2], 0u, 0u);
        }
    }
    // u = even + odd, doubled, plus the squares of the limbs.
    u32 u[2 * FQ_LIMBS];
    ASM_ADD_CC(u[0], even[0], odd[0]);
#pragma unroll
    for (int k = 1; k < 2 * FQ_LIMBS - 1; k++) ASM_ADDC_CC(u[k], even[k], odd[k]);
    ASM_ADDC(u[2 * FQ_LIMBS - 1], even[2 * FQ_LIMBS - 1], odd[2 * FQ_LIMBS - 1]);
    u32 t[2 * FQ_LIMBS];
#pragma unroll
    for (int k = 2 * FQ_LIMBS - 1; k > 0; k--) t[k] = __funnelshift_l(u[k - 1], u[k], 1);
    t[0] = u[0] << 1;
    ASM_MAD_LO_CC(t[0], a.l[0], a.l[0]);
    ASM_MADC_HI_CC(t[1], a.l[0], a.l[0]);
#pragma unroll
    for (int i = 1; i < FQ_LIMBS; i++) {
        ASM_MADC_LO_CC(t[2 * i], a.l[i], a.l[i]);
        ASM_MADC_HI_CC(t[2 * i + 1], a.l[i], a.l[i]);
    }
    // Montgomery reduction of t, as in fq_mul's rows without the products.
    const u32 q_even[FQ_LIMBS] = {Q0, 0, Q2, 0, Q4, 0, Q6, 0, Q8, 0, Q10, 0};
    const u32 q_odd[FQ_LIMBS] = {Q1, 0, Q3, 0, Q5, 0, Q7, 0, Q9, 0, Q11, 0};
    u32 x[FQ_LIMBS], prev[FQ_LIMBS + 2], y[FQ_LIMBS];
#pragma unroll
    for (int k = 0; k < FQ_LIMBS + 2; k++) prev[k] = 0;
#pragma unroll
    for (int k = 0; k < FQ_LIMBS; k++) x[k] = t[k];
#pragma unroll
    for (int i = 0; i < FQ_LIMBS; i++) {
        ASM_ADD_CC(x[0], x[0], prev[1]);
        const u32 m = x[0] * FQ_INV;
        mad_limb_pairs<true>(y, q_odd, m, prev + 2);
        mad_limb_pairs<false>(x, q_even, m, x);
        ASM_ADDC_ACC(y[FQ_LIMBS - 1], 0u);
#pragma unroll
        for (int k = 0; k < FQ_LIMBS; k++) {
            prev[k] = x[k];
            x[k] = y[k];
        }
    }
    u32 r[FQ_LIMBS];
    mont_merge(x, prev, r);
    ASM_ADD_CC(r[0], r[0], t[FQ_LIMBS]);
#pragma unroll
    for (int k = 1; k < FQ_LIMBS - 1; k++) ASM_ADDC_CC_ACC(r[k], t[FQ_LIMBS + k]);
    ASM_ADDC_ACC(r[FQ_LIMBS - 1], t[2 * FQ_LIMBS - 1]);
    return fq_reduce_once(r);
}

// a^(q - 2) = a^-1 (zero for zero), by square-and-multiply over the bits of q - 2.
__device__ __noinline__ Fq fq_inverse(const Fq& a) {
    Fq r = fq_one();
    bool started = false;
    for (int limb = FQ_LIMBS - 1; limb >= 0; limb--) {
        u32 e = fq_modulus_limb(limb) - (limb == 0 ? 2u : 0u);
        for (int bit = 31; bit >= 0; bit--) {
            if (started) r = fq_sqr(r);
            if ((e >> bit) & 1) {
                r = started ? fq_mul(r, a) : a;
                started = true;
            }
        }
    }
    return r;
}

// ---- G1 ---------------------------------------------------------------------------------

// An affine point; the point at infinity is (0, 0), which is not on the curve.
struct Affine {
    Fq x, y;
};

// XYZZ coordinates: x = X / ZZ, y = Y / ZZZ with ZZ^3 = ZZZ^2; infinity has ZZ = 0.
struct Xyzz {
    Fq x, y, zz, zzz;
};

__device__ __forceinline__ bool affine_is_infinity(const Affine& p) {
    return fq_is_zero(p.x) && fq_is_zero(p.y);
}

__device__ __forceinline__ Xyzz xyzz_infinity() {
    Xyzz r;
    r.x = fq_one();
    r.y = fq_one();
    r.zz = fq_zero();
    r.zzz = fq_zero();
    return r;
}

__device__ __forceinline__ bool xyzz_is_infinity(const Xyzz& p) { return fq_is_zero(p.zz); }

__device__ __forceinline__ Xyzz xyzz_from_affine(const Affine& p) {
    if (affine_is_infinity(p)) return xyzz_infinity();
    Xyzz r;
    r.x = p.x;
    r.y = p.y;
    r.zz = fq_one();
    r.zzz = fq_one();
    return r;
}

__device__ __forceinline__ Affine affine_neg(const Affine& p) {
    Affine r;
    r.x = p.x;
    r.y = fq_neg(p.y);
    return r;
}

// 2p (dbl-2008-s-1 with a = 0).
__device__ __forceinline__ Xyzz xyzz_double(const Xyzz& p) {
    if (xyzz_is_infinity(p) || fq_is_zero(p.y)) return xyzz_infinity();
    Fq u = fq_double(p.y);
    Fq v = fq_sqr(u);
    Fq w = fq_mul(u, v);
    Fq s = fq_mul(p.x, v);
    Fq x2 = fq_sqr(p.x);
    Fq m = fq_add(fq_double(x2), x2);
    Xyzz r;
    r.x = fq_sub(fq_sub(fq_sqr(m), s), s);
    r.y = fq_mul_sub(m, fq_sub(s, r.x), w, p.y);
    r.zz = fq_mul(v, p.zz);
    r.zzz = fq_mul(w, p.zzz);
    return r;
}

// acc + p for an affine p (madd-2008-s), with every special case.
__device__ __forceinline__ Xyzz xyzz_add_affine(const Xyzz& acc, const Affine& p) {
    if (affine_is_infinity(p)) return acc;
    if (xyzz_is_infinity(acc)) return xyzz_from_affine(p);
    Fq u2 = fq_mul(p.x, acc.zz);
    Fq s2 = fq_mul(p.y, acc.zzz);
    Fq pp_ = fq_sub(u2, acc.x);
    Fq r = fq_sub(s2, acc.y);
    if (fq_is_zero(pp_)) {
        if (fq_is_zero(r)) return xyzz_double(xyzz_from_affine(p));
        return xyzz_infinity();
    }
    Fq pp = fq_sqr(pp_);
    Fq ppp = fq_mul(pp_, pp);
    Fq q = fq_mul(acc.x, pp);
    Xyzz out;
    out.x = fq_sub(fq_sub(fq_sub(fq_sqr(r), ppp), q), q);
    out.y = fq_mul_sub(r, fq_sub(q, out.x), acc.y, ppp);
    out.zz = fq_mul(acc.zz, pp);
    out.zzz = fq_mul(acc.zzz, ppp);
    return out;
}

// a + b (add-2008-s), with every special case.
__device__ __forceinline__ Xyzz xyzz_add(const Xyzz& a, const Xyzz& b) {
    if (xyzz_is_infinity(b)) return a;
    if (xyzz_is_infinity(a)) return b;
    Fq u1 = fq_mul(a.x, b.zz);
    Fq u2 = fq_mul(b.x, a.zz);
    Fq s1 = fq_mul(a.y, b.zzz);
    Fq s2 = fq_mul(b.y, a.zzz);
    Fq pp_ = fq_sub(u2, u1);
    Fq r = fq_sub(s2, s1);
    if (fq_is_zero(pp_)) {
        if (fq_is_zero(r)) return xyzz_double(a);
        return xyzz_infinity();
    }
    Fq pp = fq_sqr(pp_);
    Fq ppp = fq_mul(pp_, pp);
    Fq q = fq_mul(u1, pp);
    Xyzz out;
    out.x = fq_sub(fq_sub(fq_sub(fq_sqr(r), ppp), q), q);
    out.y = fq_mul_sub(r, fq_sub(q, out.x), s1, ppp);
    out.zz = fq_mul(fq_mul(a.zz, b.zz), pp);
    out.zzz = fq_mul(fq_mul(a.zzz, b.zzz), ppp);
    return out;
}

// ---- G1 additions shared by four lanes -----------------------------------------------------
//
// For kernels with too few additions in flight to fill the GPU, where the latency of one
// addition decides: the four lanes of a quad (lanes 4k .. 4k + 3 of a warp) call these together
// with the same inputs, each lane makes one of each round's independent multiplies (operands
// picked by its role, so that all four run the same code), and shuffles share the products.
// An addition then waits for four multiplies in a row instead of fourteen. Every lane returns
// the result.

__device__ __forceinline__ u32 quad_role() { return threadIdx.x % 4; }

// Lane `role`'s value of v, within the quad.
__device__ __forceinline__ Fq quad_share(const Fq& v, u32 role) {
    const u32 quad_mask = 0xfu << (threadIdx.x % 32 & ~3u);
    Fq r;
#pragma unroll
    for (int k = 0; k < FQ_LIMBS; k++) r.l[k] = __shfl_sync(quad_mask, v.l[k], role, 4);
    return r;
}

// The argument for this lane's role.
__device__ __forceinline__ Fq by_role(const Fq& r0, const Fq& r1, const Fq& r2, const Fq& r3) {
    u32 role = quad_role();
    return role == 0 ? r0 : role == 1 ? r1 : role == 2 ? r2 : r3;
}

// 2p as xyzz_double, on a quad.
__device__ __forceinline__ Xyzz xyzz_double_quad(const Xyzz& p) {
    if (xyzz_is_infinity(p) || fq_is_zero(p.y)) return xyzz_infinity();
    Fq u = fq_double(p.y);
    Fq v_x2 = fq_mul(by_role(u, p.x, u, p.x), by_role(u, p.x, u, p.x));
    Fq v = quad_share(v_x2, 0), x2 = quad_share(v_x2, 1);
    Fq m = fq_add(fq_double(x2), x2);
    Fq second = fq_mul(by_role(u, p.x, m, v), by_role(v, v, m, p.zz));
    Fq w = quad_share(second, 0), s = quad_share(second, 1);
    Fq mm = quad_share(second, 2), zz = quad_share(second, 3);
    Xyzz r;
    r.x = fq_sub(fq_sub(mm, s), s);
    Fq zero = fq_zero();
    Fq third = fq_mul_sum(by_role(m, w, m, w), by_role(fq_sub(s, r.x), p.zzz, fq_sub(s, r.x), p.zzz),
                          by_role(fq_neg(w), zero, fq_neg(w), zero), by_role(p.y, zero, p.y, zero));
    r.y = quad_share(third, 0);
    r.zz = zz;
    r.zzz = quad_share(third, 1);
    return r;
}

// a + b as xyzz_add, on a quad.
__device__ __forceinline__ Xyzz xyzz_add_quad(const Xyzz& a, const Xyzz& b) {
    if (xyzz_is_infinity(b)) return a;
    if (xyzz_is_infinity(a)) return b;
    Fq first = fq_mul(by_role(a.x, b.x, a.y, b.y), by_role(b.zz, a.zz, b.zzz, a.zzz));
    Fq u1 = quad_share(first, 0), u2 = quad_share(first, 1);
    Fq s1 = quad_share(first, 2), s2 = quad_share(first, 3);
    Fq pp_ = fq_sub(u2, u1);
    Fq r = fq_sub(s2, s1);
    if (fq_is_zero(pp_)) {
        if (fq_is_zero(r)) return xyzz_double_quad(a);
        return xyzz_infinity();
    }
    Fq second = fq_mul(by_role(pp_, r, a.zz, a.zzz), by_role(pp_, r, b.zz, b.zzz));
    Fq pp = quad_share(second, 0), rr = quad_share(second, 1);
    Fq zz = quad_share(second, 2), zzz = quad_share(second, 3);
    Fq third = fq_mul(by_role(pp_, u1, zz, pp_), by_role(pp, pp, pp, pp));
    Fq ppp = quad_share(third, 0), q = quad_share(third, 1);
    Xyzz out;
    out.zz = quad_share(third, 2);
    out.x = fq_sub(fq_sub(fq_sub(rr, ppp), q), q);
    Fq zero = fq_zero();
    Fq fourth = fq_mul_sum(by_role(r, zzz, r, zzz), by_role(fq_sub(q, out.x), ppp, fq_sub(q, out.x), ppp),
                           by_role(fq_neg(s1), zero, fq_neg(s1), zero), by_role(ppp, zero, ppp, zero));
    out.y = quad_share(fourth, 0);
    out.zzz = quad_share(fourth, 1);
    return out;
}

// The affine form of p ((0, 0) for infinity): x = X / ZZ, y = Y / ZZZ, one inversion.
__device__ __forceinline__ Affine xyzz_to_affine(const Xyzz& p) {
    Affine r;
    if (xyzz_is_infinity(p)) {
        r.x = fq_zero();
        r.y = fq_zero();
        return r;
    }
    // ZZZ^-1 gives ZZ^-1 = ZZZ^-2 * ZZ^2 (as ZZ^3 = ZZZ^2).
    Fq zzz_inv = fq_inverse(p.zzz);
    Fq zz_inv = fq_mul(fq_sqr(zzz_inv), fq_sqr(p.zz));
    r.x = fq_mul(p.x, zz_inv);
    r.y = fq_mul(p.y, zzz_inv);
    return r;
}
