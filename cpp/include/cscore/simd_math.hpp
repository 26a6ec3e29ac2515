// Element-wise vector math written once over the vector width: a fast exp (range
// reduction and a Taylor polynomial), the sigmoid and tanh built on it, and the
// loads, stores and fixed-order lane sums that the element loops of LSTM-CS
// (lstm_activation.hpp) and AMP/VAMP (amp_denoise.hpp, amp_task.hpp) use.
//
// Every function is a template over the value type V: a plain float or double
// (one lane), or a GCC/Clang vector of them (vf4, vf8, vf16, vd2, vd4, vd8 below; Lanes<V> names
// its scalar, its integer partner and its width).  The same source then serves the
// generic scalar code, the baseline-x86-64 vectors and the AVX2 and AVX-512 ones:
// a caller compiled for an instruction set (a function with a target attribute)
// inlines these bodies, which are forced inline for that reason.  The arithmetic
// is element-wise IEEE, one rounded operation per written operation, so a lane
// gets the bits of the scalar code whatever the width; callers that can contract
// a * b + c into a fused multiply-add (an AVX-512 target) switch contraction off.
//
// Vectors are passed by reference and results come back in place: a 32- or
// 64-byte vector passed by value would change the calling convention between
// instruction sets (GCC's -Wpsabi).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__GNUC__)
#define CSCORE_SIMD_INLINE inline __attribute__((always_inline))
#define CSCORE_SIMD 1  // vector extensions available
#else
#define CSCORE_SIMD_INLINE inline
#endif

namespace cscore::simd {

// The scalar, the integer of the same size and the number of lanes of V.
template <class S, class I, int W>
struct LaneTraits {
    using scalar = S;
    using bits = I;
    static constexpr int width = W;
};
template <class V>
struct Lanes;
template <>
struct Lanes<float> : LaneTraits<float, std::int32_t, 1> {};
template <>
struct Lanes<double> : LaneTraits<double, std::int64_t, 1> {};

#ifdef CSCORE_SIMD
typedef float vf4 __attribute__((vector_size(16)));
typedef std::int32_t vi4 __attribute__((vector_size(16)));
typedef float vf8 __attribute__((vector_size(32)));
typedef std::int32_t vi8 __attribute__((vector_size(32)));
typedef float vf16 __attribute__((vector_size(64)));
typedef std::int32_t vi16 __attribute__((vector_size(64)));
typedef double vd2 __attribute__((vector_size(16)));
typedef long long vl2 __attribute__((vector_size(16)));
typedef double vd4 __attribute__((vector_size(32)));
typedef long long vl4 __attribute__((vector_size(32)));
typedef double vd8 __attribute__((vector_size(64)));
typedef long long vl8 __attribute__((vector_size(64)));

template <>
struct Lanes<vf4> : LaneTraits<float, vi4, 4> {};
template <>
struct Lanes<vf8> : LaneTraits<float, vi8, 8> {};
template <>
struct Lanes<vf16> : LaneTraits<float, vi16, 16> {};
template <>
struct Lanes<vd2> : LaneTraits<double, vl2, 2> {};
template <>
struct Lanes<vd4> : LaneTraits<double, vl4, 4> {};
template <>
struct Lanes<vd8> : LaneTraits<double, vl8, 8> {};
#endif

template <class V>
using scalar_t = typename Lanes<V>::scalar;

// v = s in every lane.
template <class V>
CSCORE_SIMD_INLINE void set1(V& v, scalar_t<V> s) {
    if constexpr (Lanes<V>::width == 1) {
        v = s;
    } else {
        for (int i = 0; i < Lanes<V>::width; ++i) v[i] = s;
    }
}

// v = p[0 .. width-1].
template <class V>
CSCORE_SIMD_INLINE void load(const scalar_t<V>* p, V& v) {
    std::memcpy(&v, p, sizeof(v));
}

template <class V>
CSCORE_SIMD_INLINE void store(scalar_t<V>* p, const V& v) {
    std::memcpy(p, &v, sizeof(v));
}

// The first n <= width lanes from p, the rest zero.
template <class V>
CSCORE_SIMD_INLINE void load_partial(const scalar_t<V>* p, std::ptrdiff_t n, V& v) {
    if (n == Lanes<V>::width) {
        load(p, v);
    } else {
        scalar_t<V> t[Lanes<V>::width] = {};
        for (std::ptrdiff_t i = 0; i < n; ++i) t[i] = p[i];
        std::memcpy(&v, t, sizeof(v));
    }
}

// The first n <= width lanes to p.
template <class V>
CSCORE_SIMD_INLINE void store_partial(scalar_t<V>* p, const V& v, std::ptrdiff_t n) {
    if (n == Lanes<V>::width) {
        store(p, v);
    } else {
        scalar_t<V> t[Lanes<V>::width];
        std::memcpy(t, &v, sizeof(v));
        for (std::ptrdiff_t i = 0; i < n; ++i) p[i] = t[i];
    }
}

// Lanes [lo, hi) summed pairwise, halves first: for 8 lanes
// ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7)), an order fixed by the width.
template <int lo, int hi, class V>
CSCORE_SIMD_INLINE scalar_t<V> sum_lanes(const V& v) {
    if constexpr (hi - lo == 1) {
        return v[lo];
    } else {
        constexpr int mid = lo + (hi - lo) / 2;
        return sum_lanes<lo, mid>(v) + sum_lanes<mid, hi>(v);
    }
}

template <class V>
CSCORE_SIMD_INLINE scalar_t<V> hsum(const V& v) {
    return sum_lanes<0, Lanes<V>::width>(v);
}

// The constants of exp_approx per precision: the clamp, the split of ln 2, the
// Taylor coefficients (highest degree first) and the exponent field.
template <class S>
struct ExpConstants;

// float: about 1 ulp (degree 6 on [-ln2/2, ln2/2]).  NaN maps to the lower
// clamp (the comparisons are written so): the integer arithmetic must only ever
// see |n| <= 127 (a NaN or inf would make the conversion overflow).
template <>
struct ExpConstants<float> {
    static constexpr float lo = -87.0f, hi = 88.0f;
    static constexpr bool nan_to_lo = true;
    static constexpr float log2e = 1.44269504088896341f;
    static constexpr float magic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
    static constexpr float ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
    static constexpr int degree = 6, bias = 127, mantissa = 23;
    static constexpr float coef[degree + 1] = {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f,
                                               1.0f / 6.0f,   0.5f,          1.0f,
                                               1.0f};
};

// double: about 1 ulp for x in [-708, 709] (degree 12, error < 2e-16).  NaN
// stays NaN (the AMP denoiser's guard sees it).
template <>
struct ExpConstants<double> {
    static constexpr double lo = -708.0, hi = 709.0;
    static constexpr bool nan_to_lo = false;
    static constexpr double log2e = 1.4426950408889634;
    static constexpr double magic = 6755399441055744.0;  // 1.5 * 2^52
    static constexpr double ln2_hi = 6.93147180369123816490e-01,
                            ln2_lo = 1.90821492927058770002e-10;
    static constexpr int degree = 12, bias = 1023, mantissa = 52;
    static constexpr double coef[degree + 1] = {
        1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0,
        1.0 / 5040.0,      1.0 / 720.0,      1.0 / 120.0,     1.0 / 24.0,     1.0 / 6.0,
        0.5,               1.0,              1.0};
};

// x <- exp(x), branch-free: clamp, round t = x / ln2 to the nearest integer n
// with the 1.5 * 2^(mantissa) trick, r = x - n ln2 (ln2 split in two parts),
// exp(r) by its Taylor polynomial (Horner), times 2^n built in the exponent bits.
template <class V>
CSCORE_SIMD_INLINE void exp_approx(V& x) {
    using S = scalar_t<V>;
    using I = typename Lanes<V>::bits;
    using C = ExpConstants<S>;
    V lo, hi, magic;
    set1(lo, C::lo);
    set1(hi, C::hi);
    set1(magic, C::magic);
    if constexpr (C::nan_to_lo) {
        x = x > lo ? x : lo;
        x = x < hi ? x : hi;
    } else {
        x = x < lo ? lo : x;
        x = x > hi ? hi : x;
    }
    const V shifted = x * C::log2e + magic;
    const V nf = shifted - magic;
    I n, magic_bits;
    std::memcpy(&n, &shifted, sizeof(n));
    std::memcpy(&magic_bits, &magic, sizeof(magic_bits));
    n -= magic_bits;  // the integer, from the low mantissa bits
    const V r = (x - nf * C::ln2_hi) - nf * C::ln2_lo;
    V p;
    set1(p, C::coef[0]);
#pragma GCC unroll 16
    for (int i = 1; i <= C::degree; ++i) p = p * r + C::coef[i];
    const I bits = (n + C::bias) << C::mantissa;
    V scale;
    std::memcpy(&scale, &bits, sizeof(scale));
    x = p * scale;
}

// x <- 1 / (1 + exp(-x)).
template <class V>
CSCORE_SIMD_INLINE void sigmoid(V& x) {
    V e = -x;
    exp_approx(e);
    x = scalar_t<V>(1) / (scalar_t<V>(1) + e);
}

// x <- tanh x = 2 sigmoid(2x) - 1 (absolute error about 1e-7 in float).
template <class V>
CSCORE_SIMD_INLINE void tanh_(V& x) {
    V e = scalar_t<V>(-2) * x;
    exp_approx(e);
    x = scalar_t<V>(2) / (scalar_t<V>(1) + e) - scalar_t<V>(1);
}

// x <- 1 / (1 + exp(-x)) without overflow for any x: exp(-|x|) and one division
// for both signs.
template <class V>
CSCORE_SIMD_INLINE void sigmoid_stable(V& x) {
    V zero{}, one;
    set1(one, scalar_t<V>(1));
    V e = x < zero ? x : -x;  // -|x|
    exp_approx(e);
    const V d = one / (one + e);
    x = x >= zero ? d : e * d;
}

}  // namespace cscore::simd
