// The scalar types of the greedy kernels (greedy.hpp): small traits that let one
// source run OMP/SOMP on float, double, std::complex<float> and
// std::complex<double>.  Scalar<T> gives the real type of T (the type of norms,
// energies and scores) and the few operations where real and complex differ:
// conj, abs2 (|a|^2), real part, the largest |part| (for scaling), ldexp on each
// part, products a * b and conj(a) * b, and the sum of |y_i|^2.
//
// For real T every operation is the plain expression the real kernel always used
// (a * a, a * b, linalg::dot(y, y, n)), so results keep their bits.  Complex
// products are written out on real and imaginary parts (std::complex's operator*
// goes through a NaN-recovering library call without -ffast-math), in a fixed
// order: results do not depend on the thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <type_traits>

#include "cscore/linalg.hpp"

namespace cscore::greedy {

template <class T>
struct Scalar {  // float, double
    static_assert(std::is_floating_point_v<T>, "greedy kernels run on float, double or their complex");
    using Real = T;
    static constexpr bool kComplex = false;
    static CSCORE_FORCE_INLINE T conj(T a) { return a; }
    static CSCORE_FORCE_INLINE T abs2(T a) { return a * a; }
    static CSCORE_FORCE_INLINE T real(T a) { return a; }
    static CSCORE_FORCE_INLINE T amax(T a) { return std::abs(a); }
    static CSCORE_FORCE_INLINE T ldexp(T a, int e) { return std::ldexp(a, e); }
    static CSCORE_FORCE_INLINE T mul(T a, T b) { return a * b; }
    // sum_i y_i^2 with linalg::dot's four partial sums.
    static CSCORE_FORCE_INLINE T sum_sq(const T* y, std::ptrdiff_t n) { return linalg::dot(y, y, n); }
};

template <class R>
struct Scalar<std::complex<R>> {
    using T = std::complex<R>;
    using Real = R;
    static constexpr bool kComplex = true;
    static CSCORE_FORCE_INLINE T conj(T a) { return std::conj(a); }
    static CSCORE_FORCE_INLINE R abs2(T a) { return a.real() * a.real() + a.imag() * a.imag(); }
    static CSCORE_FORCE_INLINE R real(T a) { return a.real(); }
    static CSCORE_FORCE_INLINE R amax(T a) { return std::max(std::abs(a.real()), std::abs(a.imag())); }
    static CSCORE_FORCE_INLINE T ldexp(T a, int e) { return {std::ldexp(a.real(), e), std::ldexp(a.imag(), e)}; }
    // a * b
    static CSCORE_FORCE_INLINE T mul(T a, T b) {
        return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
    }
    // conj(a) * b
    static CSCORE_FORCE_INLINE T mul_conj(T a, T b) {
        return {a.real() * b.real() + a.imag() * b.imag(), a.real() * b.imag() - a.imag() * b.real()};
    }
    // sum_i |y_i|^2, in order.
    static CSCORE_FORCE_INLINE R sum_sq(const T* y, std::ptrdiff_t n) {
        R e = R(0);
        for (std::ptrdiff_t i = 0; i < n; ++i) e += abs2(y[i]);
        return e;
    }
};

template <class T>
using Real = typename Scalar<T>::Real;

template <class T>
inline constexpr bool kIsComplex = Scalar<T>::kComplex;

}  // namespace cscore::greedy
