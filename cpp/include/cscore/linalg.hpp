// Small dense linear-algebra kernels for greedy and iterative decoders.
//
// Everything here works on plain buffers, is deterministic (a fixed summation
// order, whatever the caller's thread count) and allocates nothing in its hot
// paths.  The main piece is `GrowingCholesky`: the Cholesky factor L of the Gram
// matrix G_II = A_I^T A_I of a support I that grows one atom at a time, so that a
// least-squares fit on the support is refreshed in O(|I|^2) per added atom
// instead of a fresh O(|I|^3) solve.
//
// Appending atom k to the support I (|I| = n) extends L by one row:
//     w     = L^{-1} G_{I,k}                (forward substitution)
//     d     = G_kk - w^T w                  (squared new pivot)
//     L_new = [[L, 0], [w^T, sqrt(d)]]
// d <= 0 (or tiny relative to G_kk) means atom k is, numerically, a linear
// combination of the support: the caller must stop or skip the atom.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "cscore/blas.hpp"

// Hot helpers are force-inlined so that a caller compiled for a wider
// instruction set (see greedy.hpp) vectorizes them for that set too.
#if defined(__GNUC__) || defined(__clang__)
#define CSCORE_FORCE_INLINE inline __attribute__((always_inline))
#else
#define CSCORE_FORCE_INLINE inline
#endif

namespace cscore::linalg {

// y (size m) = A x with A column-major m x n (leading dimension lda >= m), using
// the registered BLAS gemv when there is one (no packing: cheap for one vector),
// otherwise a portable column-by-column loop.  Deterministic for given arguments.
template <class T>
inline void gemv_n(int m, int n, const T* A, int lda, const T* x, T* y) {
    blas::gemv<T>(false, m, n, T(1), A, lda, x, 1, T(0), y, 1);
}

// sum_i a[i] * b[i] with four interleaved partial sums (a fixed order).
template <class T>
CSCORE_FORCE_INLINE T dot(const T* a, const T* b, std::ptrdiff_t n) {
    T s0 = T(0), s1 = T(0), s2 = T(0), s3 = T(0);
    std::ptrdiff_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += a[i] * b[i];
        s1 += a[i + 1] * b[i + 1];
        s2 += a[i + 2] * b[i + 2];
        s3 += a[i + 3] * b[i + 3];
    }
    for (; i < n; ++i) s0 += a[i] * b[i];
    return (s0 + s1) + (s2 + s3);
}

// y += alpha * x
template <class T>
CSCORE_FORCE_INLINE void axpy(std::ptrdiff_t n, T alpha, const T* x, T* y) {
    for (std::ptrdiff_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

// y -= sum_{c < ncols} w[c] * X[:, c], X column-major with leading dimension ldx.
// Columns are consumed four at a time, which quarters the traffic on y.
template <class T>
CSCORE_FORCE_INLINE void sub_gemv(std::ptrdiff_t n, std::ptrdiff_t ncols, const T* X, std::ptrdiff_t ldx,
                     const T* w, T* y) {
    std::ptrdiff_t c = 0;
    for (; c + 4 <= ncols; c += 4) {
        const T* x0 = X + c * ldx;
        const T* x1 = x0 + ldx;
        const T* x2 = x1 + ldx;
        const T* x3 = x2 + ldx;
        const T w0 = w[c], w1 = w[c + 1], w2 = w[c + 2], w3 = w[c + 3];
        for (std::ptrdiff_t i = 0; i < n; ++i)
            y[i] -= (w0 * x0[i] + w1 * x1[i]) + (w2 * x2[i] + w3 * x3[i]);
    }
    for (; c < ncols; ++c) axpy(n, -w[c], X + c * ldx, y);
}

// y = s * (g - X w) for X column-major n x ncols (leading dimension ldx): the
// registered BLAS gemv does the product when there is one (vectorized for the
// running CPU), a portable loop otherwise.  Deterministic for given arguments.
template <class T>
inline void scaled_residual_gemv(std::ptrdiff_t n, std::ptrdiff_t ncols, const T* g, const T* X,
                                 std::ptrdiff_t ldx, const T* w, T s, T* y) {
    if (!blas::has_gemv<T>() || ncols == 0) {
        for (std::ptrdiff_t i = 0; i < n; ++i) y[i] = g[i];
        sub_gemv(n, ncols, X, ldx, w, y);
        for (std::ptrdiff_t i = 0; i < n; ++i) y[i] *= s;
        return;
    }
    for (std::ptrdiff_t i = 0; i < n; ++i) y[i] = s * g[i];
    blas::gemv<T>(false, static_cast<int>(n), static_cast<int>(ncols), -s, X,
                  static_cast<int>(ldx), w, 1, T(1), y, 1);
}

// Index of the first maximal entry of s[0..n) (n >= 1, entries finite): the
// maximum from eight independent running maxima (a form compilers turn into
// packed max instructions; max is exact, so the order does not matter), then the
// first index holding it.  Equals a plain left-to-right scan.
template <class T>
CSCORE_FORCE_INLINE std::ptrdiff_t argmax_first(const T* s, std::ptrdiff_t n) {
    T best = s[0];
    std::ptrdiff_t i = 0;
    if (n >= 8) {
        T m[8];
        for (int l = 0; l < 8; ++l) m[l] = s[l];
        for (i = 8; i + 8 <= n; i += 8)
            for (int l = 0; l < 8; ++l) m[l] = s[i + l] > m[l] ? s[i + l] : m[l];
        for (int l = 0; l < 8; ++l) best = m[l] > best ? m[l] : best;
    }
    for (; i < n; ++i) best = s[i] > best ? s[i] : best;
    for (i = 0; i < n; ++i)
        if (s[i] == best) return i;
    return 0;
}

// Solves L x = b in place (b <- x); L lower triangular, row-major, leading dim ld.
template <class T>
inline void forward_subst(std::ptrdiff_t n, const T* L, std::ptrdiff_t ld, T* b) {
    for (std::ptrdiff_t i = 0; i < n; ++i) {
        const T* row = L + i * ld;
        b[i] = (b[i] - dot(row, b, i)) / row[i];
    }
}

// Solves L^T x = b in place for `nrhs` right-hand sides stored row-major as
// b[i * nrhs + r]; L lower triangular, row-major, leading dim ld.
template <class T>
inline void backward_subst_t(std::ptrdiff_t n, const T* L, std::ptrdiff_t ld, T* b,
                             std::ptrdiff_t nrhs) {
    for (std::ptrdiff_t i = n - 1; i >= 0; --i) {
        T* bi = b + i * nrhs;
        for (std::ptrdiff_t j = i + 1; j < n; ++j) {
            const T lji = L[j * ld + i];
            const T* bj = b + j * nrhs;
            for (std::ptrdiff_t r = 0; r < nrhs; ++r) bi[r] -= lji * bj[r];
        }
        const T inv = T(1) / L[i * ld + i];
        for (std::ptrdiff_t r = 0; r < nrhs; ++r) bi[r] *= inv;
    }
}

// Squared-pivot threshold, relative to the new atom's own energy G_kk, below
// which an atom counts as linearly dependent on the support: 64 machine epsilons
// (a pivot of about 1.2e-7 * sqrt(G_kk) in double, 2.8e-3 * sqrt(G_kk) in float).
template <class T>
constexpr T dependent_pivot_rtol() {
    return T(64) * std::numeric_limits<T>::epsilon();
}

// Cholesky factor of the Gram matrix of a growing support (capacity fixed at
// construction).  L is stored row-major, lower triangle, leading dimension cap.
template <class T>
class GrowingCholesky {
public:
    explicit GrowingCholesky(std::ptrdiff_t capacity = 0)
        : cap_(capacity), L_(static_cast<std::size_t>(capacity * capacity)) {}

    void reset() { n_ = 0; }

    // Raises the capacity to at least `capacity`, keeping the factor (its rows
    // are moved to the new leading dimension; no value changes).
    void reserve(std::ptrdiff_t capacity) {
        if (capacity <= cap_) return;
        std::vector<T> grown(static_cast<std::size_t>(capacity * capacity));
        for (std::ptrdiff_t i = 0; i < n_; ++i)
            std::copy(L_.begin() + i * cap_, L_.begin() + i * cap_ + i + 1, grown.begin() + i * capacity);
        L_.swap(grown);
        cap_ = capacity;
    }
    std::ptrdiff_t size() const { return n_; }
    std::ptrdiff_t capacity() const { return cap_; }
    const T* data() const { return L_.data(); }
    std::ptrdiff_t ld() const { return cap_; }
    T pivot(std::ptrdiff_t i) const { return L_[static_cast<std::size_t>(i * cap_ + i)]; }

    // Appends an atom given g = G_{I,k} (size n) and gkk = G_kk.  Returns false,
    // leaving the factor unchanged, when the atom is numerically dependent on the
    // support (or the capacity is full).
    bool append(const T* g, T gkk) {
        if (n_ >= cap_) return false;
        T* row = L_.data() + n_ * cap_;
        for (std::ptrdiff_t i = 0; i < n_; ++i) row[i] = g[i];
        forward_subst(n_, L_.data(), cap_, row);
        return append_row(row, gkk);
    }

    // Appends an atom whose off-diagonal row w = L^{-1} G_{I,k} the caller already
    // knows (w may alias the factor's next row).  Same return convention.
    bool append_row(const T* w, T gkk) {
        if (n_ >= cap_) return false;
        const T d = gkk - dot(w, w, n_);
        if (!(d > dependent_pivot_rtol<T>() * gkk)) return false;
        T* row = L_.data() + n_ * cap_;
        if (row != w)
            for (std::ptrdiff_t i = 0; i < n_; ++i) row[i] = w[i];
        row[n_] = std::sqrt(d);
        ++n_;
        return true;
    }

    // Solves G_II x = b (b of size n, overwritten) with the current factor.
    void solve(T* b) const {
        forward_subst(n_, L_.data(), cap_, b);
        backward_subst_t(n_, L_.data(), cap_, b, 1);
    }

    // Solves L^T X = Z for nrhs right-hand sides stored row-major (n x nrhs).
    void solve_lt(T* z, std::ptrdiff_t nrhs) const { backward_subst_t(n_, L_.data(), cap_, z, nrhs); }

    // Solves L X = B for one right-hand side (size n, overwritten).
    void solve_l(T* b) const { forward_subst(n_, L_.data(), cap_, b); }

private:
    std::ptrdiff_t cap_ = 0;
    std::ptrdiff_t n_ = 0;
    std::vector<T> L_;
};

}  // namespace cscore::linalg
