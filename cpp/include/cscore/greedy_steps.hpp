// The steps of one greedy decode that are not the driver's control flow
// (greedy.hpp): loading a chunk of problems (load_chunk, scaled by powers of two
// where extreme), their correlations An^H y (chunk_correlations), the refresh of
// the correlations and scores after an atom (update_scores), the fit and its
// explicit residual (explicit_residual), and the tol rule's bracket test
// (residual_below).  Templated on the scalar type (greedy_scalar.hpp); the
// complex kernels are in greedy_complex.hpp, the AVX2 double ones in
// greedy_avx2.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "cscore/greedy_avx2.hpp"
#include "cscore/greedy_complex.hpp"
#include "cscore/greedy_dictionary.hpp"
#include "cscore/greedy_scalar.hpp"
#include "cscore/greedy_workspace.hpp"
#include "cscore/linalg.hpp"

namespace cscore::greedy {

// The fused-multiply-add build of the kernel (kFma: the AVX2/FMA path, where the
// compiler contracts a * b + c in linalg's loops into one FMA) spells the FMAs
// out in the helpers below: GCC would otherwise vectorize a chain of them as
// products then sums, which rounds differently.  The other build keeps linalg's
// loops as they are.

// z <- L^{-T} z for one right-hand side: linalg::backward_subst_t's operations
// in its order (same bits), with the running value in a register.
template <class T>
CSCORE_FORCE_INLINE void solve_lt_one_fma(const linalg::GrowingCholesky<T>& chol, std::ptrdiff_t n,
                                          T* z) {
    const T* Lf = chol.data();
    const std::ptrdiff_t ld = chol.ld();
    for (std::ptrdiff_t i = n - 1; i >= 0; --i) {
        T acc = z[i];
        for (std::ptrdiff_t j = i + 1; j < n; ++j) acc = std::fma(-Lf[j * ld + i], z[j], acc);
        const T inv = T(1) / Lf[i * ld + i];
        z[i] = acc * inv;
    }
}

// z <- L_n^{-T} z for the leading n x n block of the factor (tol="auto"'s cut),
// nrhs right-hand sides stored row-major.  Kept apart from linalg's solver so
// that the compiler's choices for the latter (which fix the bits of every other
// decode) stay as they were.
template <class T>
inline void solve_lt_prefix(const linalg::GrowingCholesky<T>& chol, std::ptrdiff_t n, T* z,
                            std::ptrdiff_t nrhs) {
    const T* Lf = chol.data();
    const std::ptrdiff_t ld = chol.ld();
    for (std::ptrdiff_t i = n - 1; i >= 0; --i) {
        T* zi = z + i * nrhs;
        for (std::ptrdiff_t j = i + 1; j < n; ++j) {
            const T lji = Lf[j * ld + i];
            for (std::ptrdiff_t r = 0; r < nrhs; ++r) zi[r] -= lji * z[j * nrhs + r];
        }
        const T inv = T(1) / Lf[i * ld + i];
        for (std::ptrdiff_t r = 0; r < nrhs; ++r) zi[r] *= inv;
    }
}

// r = y - sum_i g[i * L] At[atoms[i]]: linalg::axpy's operations in its order
// (r[m] += (-g_i) * a_i[m], atom by atom, fused), kRows entries at a time kept
// in registers across the atoms.
template <class T>
CSCORE_FORCE_INLINE void residual_vector_fma(const T* y, const T* At, std::ptrdiff_t M,
                                             const std::int64_t* atoms, const T* g, std::ptrdiff_t L,
                                             std::ptrdiff_t n, T* r) {
    constexpr std::ptrdiff_t kRows = 32;
    std::ptrdiff_t m0 = 0;
    for (; m0 < M; m0 += kRows) {
        const std::ptrdiff_t rows = std::min(kRows, M - m0);
        T acc[kRows];
        if (rows == kRows) {
            for (std::ptrdiff_t t = 0; t < kRows; ++t) acc[t] = y[m0 + t];
            for (std::ptrdiff_t i = 0; i < n; ++i) {
                const T alpha = -g[i * L];
                const T* col = At + atoms[i] * M + m0;
                for (std::ptrdiff_t t = 0; t < kRows; ++t) acc[t] = std::fma(alpha, col[t], acc[t]);
            }
        } else {
            for (std::ptrdiff_t t = 0; t < rows; ++t) acc[t] = y[m0 + t];
            for (std::ptrdiff_t i = 0; i < n; ++i) {
                const T alpha = -g[i * L];
                const T* col = At + atoms[i] * M + m0;
                for (std::ptrdiff_t t = 0; t < rows; ++t) acc[t] = std::fma(alpha, col[t], acc[t]);
            }
        }
        for (std::ptrdiff_t t = 0; t < rows; ++t) r[m0 + t] = acc[t];
    }
}

// ||r||_2 for r of size M, scaled so that tiny or huge residuals neither
// underflow nor overflow.  The largest |r_i| is taken over four running maxima
// (independent chains the compiler vectorizes; a maximum is exact, so the order
// changes no bit, and a NaN is skipped either way).
template <class T>
CSCORE_FORCE_INLINE T scaled_norm(const T* r, std::ptrdiff_t M) {
    T m[4] = {T(0), T(0), T(0), T(0)};
    std::ptrdiff_t k = 0;
    for (; k + 4 <= M; k += 4)
        for (int t = 0; t < 4; ++t) m[t] = std::max(m[t], std::abs(r[k + t]));
    for (; k < M; ++k) m[0] = std::max(m[0], std::abs(r[k]));
    const T amax = std::max(std::max(m[0], m[1]), std::max(m[2], m[3]));
    T nrm = T(0);
    if (amax > T(0)) {
        T ss = T(0);
        for (std::ptrdiff_t i = 0; i < M; ++i) {
            const T v = r[i] / amax;
            ss += v * v;
        }
        nrm = amax * std::sqrt(ss);
    }
    return nrm;
}

// The residual r = y_c - sum_i gamma[i, c] a_{atoms[i]} of channel c for the
// first n atoms into ws.r (gamma already solved); returns ||r||_2.
template <class T, bool kFma>
CSCORE_FORCE_INLINE Real<T> channel_residual(const Dictionary<T>& D, Workspace<T>& ws, std::ptrdiff_t c,
                                             std::ptrdiff_t n) {
    const std::ptrdiff_t M = D.M, L = ws.L;
    T* r = ws.r.data();
    const T* yc = ws.y + c * M;
    if constexpr (kIsComplex<T>) {
        complex_residual(yc, D.At.data(), M, ws.atoms.data(), ws.gamma.data() + c, L, n, r);
        return complex_norm(r, M);
    } else {
        if constexpr (kFma) {
#ifdef CSCORE_GREEDY_AVX2
            if constexpr (std::is_same_v<T, double>)
                avx2::residual_vector(yc, D.At.data(), M, ws.atoms.data(), ws.gamma.data() + c, L, n, r);
            else
#endif
                residual_vector_fma(yc, D.At.data(), M, ws.atoms.data(), ws.gamma.data() + c, L, n, r);
        } else {
            std::copy(yc, yc + M, r);
            for (std::ptrdiff_t i = 0; i < n; ++i)
                linalg::axpy(M, -ws.gamma[static_cast<std::size_t>(i * L + c)],
                             D.At.data() + ws.atoms[static_cast<std::size_t>(i)] * M, r);
        }
        return scaled_norm(r, M);
    }
}

// gamma = L^{-T} z (L^{-H} z for complex data) for the first n atoms of the support (all of it but in
// tol="auto"'s cut), then the explicit residual norm of every channel into
// ws.res; returns their sum.
template <class T, bool kFma>
CSCORE_FORCE_INLINE Real<T> explicit_residual(const Dictionary<T>& D, Workspace<T>& ws, std::ptrdiff_t n) {
    const std::ptrdiff_t L = ws.L;
    std::copy(ws.z.begin(), ws.z.begin() + n * L, ws.gamma.begin());
    if constexpr (kIsComplex<T>) {
        ws.chol.solve_lt(ws.gamma.data(), L);  // complex: n is the whole support (no auto cut)
    } else if (kFma && L == 1) {
        solve_lt_one_fma(ws.chol, n, ws.gamma.data());
    } else if (n == ws.chol.size()) {
        ws.chol.solve_lt(ws.gamma.data(), L);
    } else {
        solve_lt_prefix(ws.chol, n, ws.gamma.data(), L);
    }
    Real<T> total = Real<T>(0);
    for (std::ptrdiff_t c = 0; c < L; ++c) {
        const Real<T> nrm = channel_residual<T, kFma>(D, ws, c, n);
        ws.res[static_cast<std::size_t>(c)] = nrm;
        total += nrm;
    }
    return total;
}

// alpha[:, c] -= z[c] * q for every channel (skipped when q is null) and, in the
// same pass, score[j] = sum_c |alpha[j, c]|^2.
template <class T>
CSCORE_FORCE_INLINE void update_scores(Workspace<T>& ws, const T* q, const T* z) {
    using S = Scalar<T>;
    const std::ptrdiff_t N = ws.N, L = ws.L;
    Real<T>* s = ws.score.data();
    for (std::ptrdiff_t c = 0; c < L; ++c) {
        T* a = ws.alpha + c * N;
        if (q != nullptr) {
            const T zc = z[c];
            if (c == 0) {
                for (std::ptrdiff_t j = 0; j < N; ++j) {
                    const T v = a[j] - S::mul(zc, q[j]);
                    a[j] = v;
                    s[j] = S::abs2(v);
                }
            } else {
                for (std::ptrdiff_t j = 0; j < N; ++j) {
                    const T v = a[j] - S::mul(zc, q[j]);
                    a[j] = v;
                    s[j] += S::abs2(v);
                }
            }
        } else if (c == 0) {
            for (std::ptrdiff_t j = 0; j < N; ++j) s[j] = S::abs2(a[j]);
        } else {
            for (std::ptrdiff_t j = 0; j < N; ++j) s[j] += S::abs2(a[j]);
        }
    }
}

// Copies problems [begin, begin + count) of Y into ws.ychunk, channel-major per
// problem, sweeping Y in the order of its strides (OMP's y (M, B) has the
// problems adjacent in memory: reading one problem at a time would touch a page
// per entry).  Energies are sums of squares, so a problem whose entries are huge
// or tiny (beyond about 1e+-149 in double, 1e+-14 in float) is then scaled by a
// power of two (exact), kept in ws.scale_exp; the solution and residuals are
// scaled back at the end.
template <class T>
CSCORE_FORCE_INLINE void load_chunk(const View3<const T>& Y, std::ptrdiff_t begin,
                                    std::ptrdiff_t count, Workspace<T>& ws) {
    const std::ptrdiff_t M = ws.M, L = ws.L, LM = L * M;
    T* buf = ws.ychunk.data();
    if (std::abs(Y.s0) < std::abs(Y.s1)) {
        for (std::ptrdiff_t c = 0; c < L; ++c)
            for (std::ptrdiff_t i = 0; i < M; ++i)
                for (std::ptrdiff_t q = 0; q < count; ++q) buf[q * LM + c * M + i] = Y(begin + q, i, c);
    } else {
        for (std::ptrdiff_t q = 0; q < count; ++q)
            for (std::ptrdiff_t c = 0; c < L; ++c)
                for (std::ptrdiff_t i = 0; i < M; ++i) buf[q * LM + c * M + i] = Y(begin + q, i, c);
    }
    // The scale is kept as its exponent and applied with ldexp: for subnormal
    // ymax, 2^-e itself is not representable (e < min_exponent), so a multiply
    // by a precomputed factor would overflow to inf.
    using S = Scalar<T>;
    using R = Real<T>;
    constexpr int kExpHi = std::numeric_limits<R>::max_exponent / 2 - 16;
    constexpr int kExpLo = std::numeric_limits<R>::min_exponent / 2 + 16;
    for (std::ptrdiff_t q = 0; q < count; ++q) {
        T* yq = buf + q * LM;
        R ymax = R(0);
        for (std::ptrdiff_t i = 0; i < LM; ++i) ymax = std::max(ymax, S::amax(yq[i]));
        int scale_exp = 0;
        if (ymax > std::ldexp(R(1), kExpHi) || (ymax > R(0) && ymax < std::ldexp(R(1), kExpLo))) {
            int e = 0;
            (void)std::frexp(ymax, &e);
            scale_exp = -e;
            for (std::ptrdiff_t i = 0; i < LM; ++i) yq[i] = S::ldexp(yq[i], scale_exp);
        }
        ws.scale_exp[static_cast<std::size_t>(q)] = scale_exp;
    }
}

// The correlations An^H y of every channel of every problem of the chunk into
// ws.achunk.  The AVX2 double kernels take four vectors at a time where they can
// (gemv_t_rows4 gives every output the same bits as gemv_t_rows), so neither the
// grouping nor the chunk changes a result.
template <class T, bool kBlasGemv>
CSCORE_FORCE_INLINE void chunk_correlations(const Dictionary<T>& D, std::ptrdiff_t count,
                                            Workspace<T>& ws) {
    const std::ptrdiff_t M = D.M, N = D.N, nvec = count * ws.L;
    const T* y = ws.ychunk.data();
    T* a = ws.achunk.data();
    if constexpr (kIsComplex<T>) {
        complex_correlations(D.At.data(), M, N, y, nvec, a);
    } else {
        std::ptrdiff_t v = 0;
#ifdef CSCORE_GREEDY_AVX2
        if constexpr (!kBlasGemv && std::is_same_v<T, double>) {
            if (D.An.empty()) {  // one problem: An was not formed (same bits from At)
                for (; v < nvec; ++v) avx2::gemv_rows(N, M, D.At.data(), y + v * M, a + v * N);
                return;
            }
            for (; v + 4 <= nvec; v += 4) {
                const double* xs[4] = {y + v * M, y + (v + 1) * M, y + (v + 2) * M, y + (v + 3) * M};
                double* ys[4] = {a + v * N, a + (v + 1) * N, a + (v + 2) * N, a + (v + 3) * N};
                avx2::gemv_t_rows4(M, N, D.An.data(), N, xs, ys);
            }
            for (; v < nvec; ++v) avx2::gemv_t_rows(M, N, D.An.data(), N, y + v * M, a + v * N);
            return;
        }
#endif
        for (; v < nvec; ++v)
            linalg::gemv_n<T>(static_cast<int>(N), static_cast<int>(M), D.An.data(), static_cast<int>(N),
                              y + v * M, a + v * N);
    }
}

// Zeroes the chunk's block of X, in the order of X's strides; the problems then
// write their nonzeros only.
template <class T>
CSCORE_FORCE_INLINE void zero_chunk(const View3<T>& X, std::ptrdiff_t begin, std::ptrdiff_t count,
                                    std::ptrdiff_t N, std::ptrdiff_t L) {
    if (std::abs(X.s0) < std::abs(X.s1)) {
        for (std::ptrdiff_t c = 0; c < L; ++c)
            for (std::ptrdiff_t j = 0; j < N; ++j)
                for (std::ptrdiff_t q = 0; q < count; ++q) X(begin + q, j, c) = T(0);
    } else {
        for (std::ptrdiff_t q = 0; q < count; ++q)
            for (std::ptrdiff_t j = 0; j < N; ++j)
                for (std::ptrdiff_t c = 0; c < L; ++c) X(begin + q, j, c) = T(0);
    }
}

// Bracket test of the residual measure against tol, from the energy estimates
// (their absolute error grows like n * eps * ||y||^2), with the explicit residual
// when the bracket straddles tol.  Sets have_explicit when it computed it.
template <class T, bool kFma>
CSCORE_FORCE_INLINE bool residual_below(const Dictionary<T>& D, Workspace<T>& ws, std::ptrdiff_t n,
                                        Real<T> tol, bool& have_explicit) {
    using R = Real<T>;
    constexpr R eps = std::numeric_limits<R>::epsilon();
    const std::ptrdiff_t L = ws.L;
    R lo = R(0), hi = R(0);
    for (std::ptrdiff_t c = 0; c < L; ++c) {
        const R e = ws.energy[static_cast<std::size_t>(c)];
        const R slack = R(1000) * R(static_cast<double>(n + 1)) * eps * ws.yy[static_cast<std::size_t>(c)];
        lo += std::sqrt(std::max(e - slack, R(0)));
        hi += std::sqrt(std::max(e + slack, R(0)));
    }
    if (hi <= tol && n > 0) return true;
    if (lo > tol) return false;
    if (n == 0) {
        // Empty support: the residual is y itself, known exactly.
        R t = R(0);
        for (std::ptrdiff_t c = 0; c < L; ++c) t += std::sqrt(ws.yy[static_cast<std::size_t>(c)]);
        return t <= tol;
    }
    have_explicit = true;
    return explicit_residual<T, kFma>(D, ws, n) <= tol;
}

}  // namespace cscore::greedy
