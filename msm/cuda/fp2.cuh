// The quadratic extension Fp2 = Fp[u] / (u^2 + 1) (u^2 = -1, as in BLS12-381's and BN254's
// G2), over any Fp<P> of field.cuh: c0 + c1 u, laid out as arkworks' `Fp2` (c0's limbs, then
// c1's). The same operations as Fp<P>, by overloading, so that the curve code of curve.cuh
// takes either field.
#pragma once
#include "field.cuh"

template <typename P>
struct Fp2 {
    Fp<P> c0, c1;

    __device__ __forceinline__ static Fp2 zero() { return {Fp<P>::zero(), Fp<P>::zero()}; }
    __device__ __forceinline__ static Fp2 one() { return {Fp<P>::one(), Fp<P>::zero()}; }
};

template <typename P>
__device__ __forceinline__ bool is_zero(const Fp2<P>& a) {
    return is_zero(a.c0) & is_zero(a.c1);
}

template <typename P>
__device__ __forceinline__ Fp2<P> add(const Fp2<P>& a, const Fp2<P>& b) {
    return {add(a.c0, b.c0), add(a.c1, b.c1)};
}

template <typename P>
__device__ __forceinline__ Fp2<P> sub(const Fp2<P>& a, const Fp2<P>& b) {
    return {sub(a.c0, b.c0), sub(a.c1, b.c1)};
}

template <typename P>
__device__ __forceinline__ Fp2<P> neg(const Fp2<P>& a) {
    return {neg(a.c0), neg(a.c1)};
}

template <typename P>
__device__ __forceinline__ Fp2<P> dbl(const Fp2<P>& a) { return add(a, a); }

// (a0 + a1 u)(b0 + b1 u) = (a0 b0 - a1 b1) + (a0 b1 + a1 b0) u: two products of two, each with
// one reduction (fp's mul_sum).
template <typename P>
__device__ __forceinline__ Fp2<P> mul(const Fp2<P>& a, const Fp2<P>& b) {
    return {mul_sum(a.c0, b.c0, neg(a.c1), b.c1), mul_sum(a.c0, b.c1, a.c1, b.c0)};
}

// (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u.
template <typename P>
__device__ __forceinline__ Fp2<P> sqr(const Fp2<P>& a) {
    return {mul(add(a.c0, a.c1), sub(a.c0, a.c1)), dbl(mul(a.c0, a.c1))};
}

// a * b + c * d.
template <typename P>
__device__ __forceinline__ Fp2<P> mul_sum(const Fp2<P>& a, const Fp2<P>& b, const Fp2<P>& c,
                                          const Fp2<P>& d) {
    return add(mul(a, b), mul(c, d));
}

// a * b - c * d.
template <typename P>
__device__ __forceinline__ Fp2<P> mul_sub(const Fp2<P>& a, const Fp2<P>& b, const Fp2<P>& c,
                                          const Fp2<P>& d) {
    return sub(mul(a, b), mul(c, d));
}

// (a0 - a1 u) / (a0^2 + a1^2), zero for zero: one inversion in Fp.
template <typename P>
__device__ __forceinline__ Fp2<P> inverse(const Fp2<P>& a) {
    Fp<P> norm_inv = inverse(mul_sum(a.c0, a.c0, a.c1, a.c1));
    return {mul(a.c0, norm_inv), neg(mul(a.c1, norm_inv))};
}

template <typename P>
__device__ __forceinline__ Fp2<P> shuffle(const Fp2<P>& v, u32 mask, u32 lane, u32 width) {
    return {shuffle(v.c0, mask, lane, width), shuffle(v.c1, mask, lane, width)};
}
