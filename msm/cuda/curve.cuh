// Short Weierstrass curves y^2 = x^3 + b (a = 0: G1 and G2 of BLS12-381 and BN254) over any
// field F of field.cuh or fp2.cuh, in affine and XYZZ coordinates. Nothing here reads b.
#pragma once
#include "fp2.cuh"

// An affine point; the point at infinity is (0, 0), which is not on the curve (b != 0).
template <typename F>
struct AffinePoint {
    F x, y;
};

// XYZZ coordinates: x = X / ZZ, y = Y / ZZZ with ZZ^3 = ZZZ^2; infinity has ZZ = 0.
template <typename F>
struct XyzzPoint {
    F x, y, zz, zzz;
};

template <typename F>
__device__ __forceinline__ bool affine_is_infinity(const AffinePoint<F>& p) {
    return is_zero(p.x) && is_zero(p.y);
}

template <typename F>
__device__ __forceinline__ XyzzPoint<F> xyzz_infinity() {
    XyzzPoint<F> r;
    r.x = F::one();
    r.y = F::one();
    r.zz = F::zero();
    r.zzz = F::zero();
    return r;
}

template <typename F>
__device__ __forceinline__ bool xyzz_is_infinity(const XyzzPoint<F>& p) { return is_zero(p.zz); }

template <typename F>
__device__ __forceinline__ XyzzPoint<F> xyzz_from_affine(const AffinePoint<F>& p) {
    if (affine_is_infinity(p)) return xyzz_infinity<F>();
    XyzzPoint<F> r;
    r.x = p.x;
    r.y = p.y;
    r.zz = F::one();
    r.zzz = F::one();
    return r;
}

template <typename F>
__device__ __forceinline__ AffinePoint<F> affine_neg(const AffinePoint<F>& p) {
    AffinePoint<F> r;
    r.x = p.x;
    r.y = neg(p.y);
    return r;
}

// 2p (dbl-2008-s-1 with a = 0).
template <typename F>
__device__ __forceinline__ XyzzPoint<F> xyzz_double(const XyzzPoint<F>& p) {
    if (xyzz_is_infinity(p) || is_zero(p.y)) return xyzz_infinity<F>();
    F u = dbl(p.y);
    F v = sqr(u);
    F w = mul(u, v);
    F s = mul(p.x, v);
    F x2 = sqr(p.x);
    F m = add(dbl(x2), x2);
    XyzzPoint<F> r;
    r.x = sub(sub(sqr(m), s), s);
    r.y = mul_sub(m, sub(s, r.x), w, p.y);
    r.zz = mul(v, p.zz);
    r.zzz = mul(w, p.zzz);
    return r;
}

// Jacobian coordinates: x = X / Z^2, y = Y / Z^3; infinity has Z = 0.
template <typename F>
struct JacobianPoint {
    F x, y, z;
};

// 2p (dbl-2009-l with a = 0: 2 products and 5 squarings, against XYZZ's 6 and 3). Infinity
// and points with y = 0 give Z = 0 with no special case.
template <typename F>
__device__ __forceinline__ JacobianPoint<F> jacobian_double(const JacobianPoint<F>& p) {
    F a = sqr(p.x);
    F b = sqr(p.y);
    F c = sqr(b);
    F d = dbl(sub(sub(sqr(add(p.x, b)), a), c));
    F e = add(dbl(a), a);
    JacobianPoint<F> r;
    r.x = sub(sqr(e), dbl(d));
    r.y = sub(mul(e, sub(d, r.x)), dbl(dbl(dbl(c))));
    r.z = dbl(mul(p.y, p.z));
    return r;
}

// acc + p for an affine p (madd-2008-s), with every special case.
template <typename F>
__device__ __forceinline__ XyzzPoint<F> xyzz_add_affine(const XyzzPoint<F>& acc,
                                                        const AffinePoint<F>& p) {
    if (affine_is_infinity(p)) return acc;
    if (xyzz_is_infinity(acc)) return xyzz_from_affine(p);
    F u2 = mul(p.x, acc.zz);
    F s2 = mul(p.y, acc.zzz);
    F pp_ = sub(u2, acc.x);
    F r = sub(s2, acc.y);
    if (is_zero(pp_)) {
        if (is_zero(r)) return xyzz_double(xyzz_from_affine(p));
        return xyzz_infinity<F>();
    }
    F pp = sqr(pp_);
    F ppp = mul(pp_, pp);
    F q = mul(acc.x, pp);
    XyzzPoint<F> out;
    out.x = sub(sub(sub(sqr(r), ppp), q), q);
    out.y = mul_sub(r, sub(q, out.x), acc.y, ppp);
    out.zz = mul(acc.zz, pp);
    out.zzz = mul(acc.zzz, ppp);
    return out;
}

// a + b (add-2008-s), with every special case.
template <typename F>
__device__ __forceinline__ XyzzPoint<F> xyzz_add(const XyzzPoint<F>& a, const XyzzPoint<F>& b) {
    if (xyzz_is_infinity(b)) return a;
    if (xyzz_is_infinity(a)) return b;
    F u1 = mul(a.x, b.zz);
    F u2 = mul(b.x, a.zz);
    F s1 = mul(a.y, b.zzz);
    F s2 = mul(b.y, a.zzz);
    F pp_ = sub(u2, u1);
    F r = sub(s2, s1);
    if (is_zero(pp_)) {
        if (is_zero(r)) return xyzz_double(a);
        return xyzz_infinity<F>();
    }
    F pp = sqr(pp_);
    F ppp = mul(pp_, pp);
    F q = mul(u1, pp);
    XyzzPoint<F> out;
    out.x = sub(sub(sub(sqr(r), ppp), q), q);
    out.y = mul_sub(r, sub(q, out.x), s1, ppp);
    out.zz = mul(mul(a.zz, b.zz), pp);
    out.zzz = mul(mul(a.zzz, b.zzz), ppp);
    return out;
}

// ---- additions shared by four lanes -------------------------------------------------------
//
// For kernels with too few additions in flight to fill the GPU, where the latency of one
// addition decides: the four lanes of a quad (lanes 4k .. 4k + 3 of a warp) call these together
// with the same inputs, each lane makes one of each round's independent multiplies (operands
// picked by its role, so that all four run the same code), and shuffles share the products.
// An addition then waits for four multiplies in a row instead of fourteen. Every lane returns
// the result.

__device__ __forceinline__ u32 quad_role() { return threadIdx.x % 4; }

// Lane `role`'s value of v, within the quad.
template <typename F>
__device__ __forceinline__ F quad_share(const F& v, u32 role) {
    const u32 quad_mask = 0xfu << (threadIdx.x % 32 & ~3u);
    return shuffle(v, quad_mask, role, 4);
}

// The argument for this lane's role.
template <typename F>
__device__ __forceinline__ F by_role(const F& r0, const F& r1, const F& r2, const F& r3) {
    u32 role = quad_role();
    return role == 0 ? r0 : role == 1 ? r1 : role == 2 ? r2 : r3;
}

// 2p as xyzz_double, on a quad.
template <typename F>
__device__ __forceinline__ XyzzPoint<F> xyzz_double_quad(const XyzzPoint<F>& p) {
    if (xyzz_is_infinity(p) || is_zero(p.y)) return xyzz_infinity<F>();
    F u = dbl(p.y);
    F v_x2 = mul(by_role(u, p.x, u, p.x), by_role(u, p.x, u, p.x));
    F v = quad_share(v_x2, 0), x2 = quad_share(v_x2, 1);
    F m = add(dbl(x2), x2);
    F second = mul(by_role(u, p.x, m, v), by_role(v, v, m, p.zz));
    F w = quad_share(second, 0), s = quad_share(second, 1);
    F mm = quad_share(second, 2), zz = quad_share(second, 3);
    XyzzPoint<F> r;
    r.x = sub(sub(mm, s), s);
    F zero = F::zero();
    F third = mul_sum(by_role(m, w, m, w), by_role(sub(s, r.x), p.zzz, sub(s, r.x), p.zzz),
                      by_role(neg(w), zero, neg(w), zero), by_role(p.y, zero, p.y, zero));
    r.y = quad_share(third, 0);
    r.zz = zz;
    r.zzz = quad_share(third, 1);
    return r;
}

// a + b as xyzz_add, on a quad.
template <typename F>
__device__ __forceinline__ XyzzPoint<F> xyzz_add_quad(const XyzzPoint<F>& a,
                                                      const XyzzPoint<F>& b) {
    if (xyzz_is_infinity(b)) return a;
    if (xyzz_is_infinity(a)) return b;
    F first = mul(by_role(a.x, b.x, a.y, b.y), by_role(b.zz, a.zz, b.zzz, a.zzz));
    F u1 = quad_share(first, 0), u2 = quad_share(first, 1);
    F s1 = quad_share(first, 2), s2 = quad_share(first, 3);
    F pp_ = sub(u2, u1);
    F r = sub(s2, s1);
    if (is_zero(pp_)) {
        if (is_zero(r)) return xyzz_double_quad(a);
        return xyzz_infinity<F>();
    }
    F second = mul(by_role(pp_, r, a.zz, a.zzz), by_role(pp_, r, b.zz, b.zzz));
    F pp = quad_share(second, 0), rr = quad_share(second, 1);
    F zz = quad_share(second, 2), zzz = quad_share(second, 3);
    F third = mul(by_role(pp_, u1, zz, pp_), by_role(pp, pp, pp, pp));
    F ppp = quad_share(third, 0), q = quad_share(third, 1);
    XyzzPoint<F> out;
    out.zz = quad_share(third, 2);
    out.x = sub(sub(sub(rr, ppp), q), q);
    F zero = F::zero();
    F fourth = mul_sum(by_role(r, zzz, r, zzz), by_role(sub(q, out.x), ppp, sub(q, out.x), ppp),
                       by_role(neg(s1), zero, neg(s1), zero), by_role(ppp, zero, ppp, zero));
    out.y = quad_share(fourth, 0);
    out.zzz = quad_share(fourth, 1);
    return out;
}
