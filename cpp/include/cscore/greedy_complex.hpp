// What is complex-specific in the greedy kernels (greedy.hpp runs OMP/SOMP on
// complex A and Y with these): the Hermitian Gram entries, the Cholesky factor
// of G_II = L L^H and the solve with L^H, and the three O(N n) / O(M n) loops
// (the new Q column, the correlations An^H y, the explicit residual) with complex
// products written out (Scalar<std::complex<R>>, greedy_scalar.hpp).
//
// With conjugate transposes the algorithm is the real one (greedy.hpp's header):
// G = An^H An (real unit diagonal), alpha = An^H Y, Q = G_{:,I} L^{-H},
// z = L^{-1} An_I^H Y, and adding atom k takes w = conj(Q[k, :])^T,
// d = G_kk - w^H w (real), q_new = (G_{:,k} - Q w) / l, z_new = alpha[k, :] / l,
// alpha -= q_new z_new, ||r_c||^2 -= |z_new[c]|^2; at the end gamma = L^{-H} z.
// Portable C++ only (no BLAS: SciPy's complex BLAS is not registered), run by the
// generic build of the kernel (never recompiled for AVX2, where products could
// be fused): a fixed order, so results do not depend on the thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "cscore/greedy_scalar.hpp"
#include "cscore/linalg.hpp"

namespace cscore::greedy {

template <class R>
using Cx = std::complex<R>;

// sum_i conj(a[i]) * b[i], two interleaved partial sums (a fixed order).
template <class R>
inline Cx<R> cdot(const Cx<R>* a, const Cx<R>* b, std::ptrdiff_t n) {
    R re0 = R(0), im0 = R(0), re1 = R(0), im1 = R(0);
    std::ptrdiff_t i = 0;
    for (; i + 2 <= n; i += 2) {
        re0 += a[i].real() * b[i].real() + a[i].imag() * b[i].imag();
        im0 += a[i].real() * b[i].imag() - a[i].imag() * b[i].real();
        re1 += a[i + 1].real() * b[i + 1].real() + a[i + 1].imag() * b[i + 1].imag();
        im1 += a[i + 1].real() * b[i + 1].imag() - a[i + 1].imag() * b[i + 1].real();
    }
    for (; i < n; ++i) {
        re0 += a[i].real() * b[i].real() + a[i].imag() * b[i].imag();
        im0 += a[i].real() * b[i].imag() - a[i].imag() * b[i].real();
    }
    return {re0 + re1, im0 + im1};
}

// l2 norm of v[0..n) scaled by its largest part, immune to overflow/underflow.
template <class R>
inline R complex_norm(const Cx<R>* v, std::ptrdiff_t n) {
    using S = Scalar<Cx<R>>;
    R amax = R(0);
    for (std::ptrdiff_t i = 0; i < n; ++i) amax = std::max(amax, S::amax(v[i]));
    if (!(amax > R(0))) return R(0);
    R ss = R(0);
    for (std::ptrdiff_t i = 0; i < n; ++i) ss += S::abs2(Cx<R>(v[i].real() / amax, v[i].imag() / amax));
    return amax * std::sqrt(ss);
}

// Normalizes atom col[0..M) in place; returns its norm (0 for an all-zero atom,
// which is then left as it is).
template <class R>
inline R complex_normalize(Cx<R>* col, std::ptrdiff_t M) {
    const R norm = complex_norm(col, M);
    if (!(norm > R(0))) return norm;
    for (std::ptrdiff_t i = 0; i < M; ++i) col[i] = Cx<R>(col[i].real() / norm, col[i].imag() / norm);
    return norm;
}

// Gram entries G[i, k] = a_i^H a_k for the rows i = idx[t] (or i0 + t), t < count,
// of column k: computed as a_i^H a_k for i >= k and as conj(a_k^H a_i) above the
// diagonal, so that G[i, k] and G[k, i] are exact conjugates however they are formed.
template <class R>
inline void complex_gram_block(const Cx<R>* At, std::ptrdiff_t M, std::ptrdiff_t k, std::ptrdiff_t i0,
                               std::ptrdiff_t count, Cx<R>* out, const std::ptrdiff_t* idx) {
    const Cx<R>* ak = At + k * M;
    for (std::ptrdiff_t t = 0; t < count; ++t) {
        const std::ptrdiff_t i = idx != nullptr ? idx[t] : i0 + t;
        out[t] = i >= k ? cdot(At + i * M, ak, M) : std::conj(cdot(ak, At + i * M, M));
    }
}

// a[v * N + j] = a_j^H y_v for nvec vectors y_v (y + v * M) and the N atoms of At.
template <class R>
inline void complex_correlations(const Cx<R>* At, std::ptrdiff_t M, std::ptrdiff_t N, const Cx<R>* y,
                                 std::ptrdiff_t nvec, Cx<R>* a) {
    for (std::ptrdiff_t v = 0; v < nvec; ++v)
        for (std::ptrdiff_t j = 0; j < N; ++j) a[v * N + j] = cdot(At + j * M, y + v * M, M);
}

// q = s * (g - X w) for X column-major N x ncols (leading dimension ldx), the
// columns in order.
template <class R>
inline void complex_q_column(std::ptrdiff_t N, std::ptrdiff_t ncols, const Cx<R>* g, const Cx<R>* X,
                             std::ptrdiff_t ldx, const Cx<R>* w, R s, Cx<R>* q) {
    using S = Scalar<Cx<R>>;
    for (std::ptrdiff_t j = 0; j < N; ++j) q[j] = g[j];
    for (std::ptrdiff_t c = 0; c < ncols; ++c) {
        const Cx<R> wc = w[c];
        const Cx<R>* xc = X + c * ldx;
        for (std::ptrdiff_t j = 0; j < N; ++j) q[j] -= S::mul(xc[j], wc);
    }
    for (std::ptrdiff_t j = 0; j < N; ++j) q[j] *= s;
}

// r = y - sum_i g[i * L] At[atoms[i]], the atoms in order.
template <class R>
inline void complex_residual(const Cx<R>* y, const Cx<R>* At, std::ptrdiff_t M, const std::int64_t* atoms,
                             const Cx<R>* g, std::ptrdiff_t L, std::ptrdiff_t n, Cx<R>* r) {
    using S = Scalar<Cx<R>>;
    std::copy(y, y + M, r);
    for (std::ptrdiff_t i = 0; i < n; ++i) {
        const Cx<R> gi = g[i * L];
        const Cx<R>* a = At + atoms[i] * M;
        for (std::ptrdiff_t m = 0; m < M; ++m) r[m] -= S::mul(gi, a[m]);
    }
}

// The Cholesky factor L of G_II = L L^H for a support that grows one atom at a
// time (the complex counterpart of linalg::GrowingCholesky, with its interface):
// row i holds L[i, 0..i], its diagonal real and positive.  Rows are kept between
// problems (reset keeps their memory), so the capacity is unbounded.
template <class R>
class ComplexCholesky {
public:
    explicit ComplexCholesky(std::ptrdiff_t = 0) {}
    void reset() { n_ = 0; }
    void reserve(std::ptrdiff_t) {}
    std::ptrdiff_t size() const { return n_; }
    std::ptrdiff_t capacity() const { return std::numeric_limits<std::ptrdiff_t>::max(); }
    R pivot(std::ptrdiff_t i) const { return rows_[static_cast<std::size_t>(i)][static_cast<std::size_t>(i)].real(); }

    // Appends an atom given w = L^{-1} G_{I,k} (n entries) and gkk = G_kk; false,
    // leaving the factor unchanged, when d = G_kk - w^H w says it is dependent.
    bool append_row(const Cx<R>* w, R gkk) {
        R ww = R(0);
        for (std::ptrdiff_t i = 0; i < n_; ++i) ww += Scalar<Cx<R>>::abs2(w[i]);
        const R d = gkk - ww;
        if (!(d > linalg::dependent_pivot_rtol<R>() * gkk)) return false;
        if (rows_.size() <= static_cast<std::size_t>(n_)) rows_.emplace_back();
        std::vector<Cx<R>>& row = rows_[static_cast<std::size_t>(n_)];
        row.resize(static_cast<std::size_t>(n_ + 1));
        for (std::ptrdiff_t i = 0; i < n_; ++i) row[static_cast<std::size_t>(i)] = std::conj(w[i]);
        row[static_cast<std::size_t>(n_)] = Cx<R>(std::sqrt(d), R(0));
        ++n_;
        return true;
    }

    // Solves L^H X = Z for nrhs right-hand sides stored row-major (n x nrhs).
    void solve_lt(Cx<R>* z, std::ptrdiff_t nrhs) const {
        using S = Scalar<Cx<R>>;
        for (std::ptrdiff_t i = n_ - 1; i >= 0; --i) {
            Cx<R>* zi = z + i * nrhs;
            for (std::ptrdiff_t j = i + 1; j < n_; ++j) {
                const Cx<R> lji = rows_[static_cast<std::size_t>(j)][static_cast<std::size_t>(i)];
                for (std::ptrdiff_t c = 0; c < nrhs; ++c) zi[c] -= S::mul_conj(lji, z[j * nrhs + c]);
            }
            const R inv = R(1) / pivot(i);
            for (std::ptrdiff_t c = 0; c < nrhs; ++c) zi[c] *= inv;
        }
    }

private:
    std::ptrdiff_t n_ = 0;
    std::vector<std::vector<Cx<R>>> rows_;
};

}  // namespace cscore::greedy
