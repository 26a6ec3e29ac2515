// Greedy sparse decoders: OMP (one channel) and SOMP (L channels, joint support).
//
// Formulation (Gram-based "Batch-OMP", Rubinstein, Zibulevsky & Elad 2008, in its
// progressive-Cholesky form).  Columns are normalized once, An = A D^{-1} with
// D = diag(||a_j||), and G = An^T An is formed once per call and shared by every
// problem of the batch.  Per problem only the correlations alpha = An^T Y (one
// small gemm) touch the measurements.  With L the Cholesky factor of G_II for the
// support I (|I| = n) keep
//     Q = G_{:,I} L^{-T}   (N x n),   z = L^{-1} An_I^T Y   (n x L).
// Then the current correlations are An^T R = An^T Y - Q z, and adding atom k is
//     w      = Q[k, :]^T                      (= L^{-1} G_{I,k}: no solve needed)
//     d      = G_kk - w^T w,  l = sqrt(d)     (new pivot; d ~ 0 -> dependent atom)
//     q_new  = (G_{:,k} - Q w) / l            (N x n work: the only O(N n) step)
//     z_new  = alpha[k, :] / l                 (new row of z)
//     alpha -= q_new z_new                     (refreshed correlations)
//     ||r_c||^2 -= z_new[c]^2                  (residual energy per channel)
// and at the end the coefficients are gamma = L^{-T} z (for the normalized atoms),
// x = D^{-1} gamma.  No per-step solve, no A^T r product.  The residual energy is
// an estimate that loses accuracy by cancellation near zero, so when it is close
// to a `tol` decision the residual is recomputed explicitly.
//
// Selection: the atom maximizing sum_c alpha[j, c]^2 (the l2 norm over channels
// of An_j^T R; for L = 1 plain OMP).  Ties go to the lowest index.
//
// Stopping per problem: residual (sum over channels of channel l2 norms) <= tol;
// n_nonzero atoms; all min(M, N) atoms used; or "dependent": the best correlation
// vanished (the residual is orthogonal to every atom), the best atom was already
// selected, or its new pivot is not positive (numerically dependent atom).
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#endif

#include "cscore/blas.hpp"
#include "cscore/cpu.hpp"
#include "cscore/linalg.hpp"
#include "cscore/parallel.hpp"
#include "cscore/result.hpp"

#if defined(__GNUC__) || defined(__clang__)
#define CSCORE_NOINLINE __attribute__((noinline))
#else
#define CSCORE_NOINLINE
#endif

namespace cscore::greedy {

// A strided 3-D view (problem, row, channel) over caller memory, strides in elements.
template <class T>
struct View3 {
    T* data = nullptr;
    std::ptrdiff_t s0 = 0, s1 = 0, s2 = 0;
    T& operator()(std::ptrdiff_t p, std::ptrdiff_t i, std::ptrdiff_t c) const {
        return data[p * s0 + i * s1 + c * s2];
    }
};

// The dictionary, prepared once per call and shared read-only by all workers.
template <class T>
struct Dictionary {
    std::ptrdiff_t M = 0, N = 0;
    std::vector<T> inv_norm;  // 1 / ||a_j||
    std::vector<T> An;        // normalized A, row-major M x N
    std::vector<T> At;        // normalized A transposed, row-major N x M (atoms contiguous)
    bool has_gram = true;     // G stored (else its columns are computed on demand)
    std::vector<T> G;         // An^T An, N x N symmetric (column j contiguous)

    // A is row-major M x N with row stride lda (elements).  G is stored when
    // store_gram is set and it has at most gram_limit entries.  Throws on a zero
    // column.
    Dictionary(const T* A, std::ptrdiff_t m, std::ptrdiff_t n, std::ptrdiff_t lda,
               std::ptrdiff_t gram_limit, bool store_gram = true)
        : M(m), N(n), inv_norm(static_cast<std::size_t>(n)),
          An(static_cast<std::size_t>(m * n)), At(static_cast<std::size_t>(m * n)),
          has_gram(store_gram && n <= gram_limit / std::max<std::ptrdiff_t>(n, 1)),
          G(has_gram ? static_cast<std::size_t>(n * n) : 0) {
        for (std::ptrdiff_t j = 0; j < N; ++j) {
            T* col = At.data() + j * M;
            for (std::ptrdiff_t i = 0; i < M; ++i) col[i] = A[i * lda + j];
            // Scaled norm: immune to overflow/underflow for extreme column scales.
            T amax = T(0);
            for (std::ptrdiff_t i = 0; i < M; ++i) amax = std::max(amax, std::abs(col[i]));
            if (!(amax > T(0))) throw std::invalid_argument("A has an all-zero column");
            T ss = T(0);
            for (std::ptrdiff_t i = 0; i < M; ++i) ss += (col[i] / amax) * (col[i] / amax);
            const T norm = amax * std::sqrt(ss);
            inv_norm[static_cast<std::size_t>(j)] = T(1) / norm;
            for (std::ptrdiff_t i = 0; i < M; ++i) col[i] = (col[i] / amax) / std::sqrt(ss);
        }
        for (std::ptrdiff_t i = 0; i < M; ++i)
            for (std::ptrdiff_t j = 0; j < N; ++j) An[i * N + j] = At[j * M + i];
        if (!has_gram) return;
        for (std::ptrdiff_t j = 0; j < N; ++j) {
            for (std::ptrdiff_t i = j; i < N; ++i) {
                const T g = gram_entry(i, j);
                G[j * N + i] = g;
                G[i * N + j] = g;
            }
        }
    }

    // G[i, j] for i >= j, always by this one (never inlined, so never recompiled
    // for another instruction set) function: stored and on-demand columns agree
    // bit for bit.
    CSCORE_NOINLINE T gram_entry(std::ptrdiff_t i, std::ptrdiff_t j) const {
        return linalg::dot(At.data() + i * M, At.data() + j * M, M);
    }

    // Column k of G: a pointer into G, or computed into buf (N entries).
    const T* gram_column(std::ptrdiff_t k, T* buf) const {
        if (has_gram) return G.data() + k * N;
        for (std::ptrdiff_t i = 0; i < N; ++i) buf[i] = i >= k ? gram_entry(i, k) : gram_entry(k, i);
        return buf;
    }
};

struct Options {
    std::ptrdiff_t max_atoms = 1;  // hard cap on the support size (<= min(M, N))
    bool cap_is_n_nonzero = true;  // report reaching the cap as "n_nonzero" (else "exhausted")
    double tol = -1.0;             // stop when the residual measure <= tol; < 0: unused
    std::ptrdiff_t gram_limit = std::ptrdiff_t{1} << 25;  // store G up to this many entries
};

// Per-problem outputs (caller memory).
template <class T>
struct Outputs {
    View3<T> X;                 // (P, N, L) coefficients, fully written
    T* residual = nullptr;      // (P, L) final residual l2 norm per channel
    std::int64_t* n_iter = nullptr;    // (P,)
    std::int8_t* stop = nullptr;       // (P,) StopReason code
    std::uint8_t* warn = nullptr;      // (P,) 1: stopped "dependent" with a residual left
    std::int64_t* atoms = nullptr;     // (P, max_atoms) selection order, -1 padded
};

// Per-thread scratch space.
template <class T>
struct Workspace {
    std::ptrdiff_t M, N, L, K;
    std::vector<T> y;       // L x M, channel-major copy of the measurements
    std::vector<T> alpha;   // L x N current correlations, channel-major
    std::vector<T> score;   // N
    std::vector<T> Q;       // N x K, column-major
    std::vector<T> z;       // K x L
    std::vector<T> gamma;   // K x L
    std::vector<T> w;       // K  new row of the Cholesky factor
    std::vector<T> gcol;    // N  a Gram column computed on demand
    std::vector<T> r;       // M
    std::vector<T> yy;      // L  ||y_c||^2
    std::vector<T> energy;  // L  residual energy estimates
    std::vector<T> res;     // L  explicit residual norms
    std::vector<std::int64_t> atoms;  // K
    std::vector<unsigned char> selected;  // N
    linalg::GrowingCholesky<T> chol;

    Workspace(std::ptrdiff_t m, std::ptrdiff_t n, std::ptrdiff_t l, std::ptrdiff_t k)
        : M(m), N(n), L(l), K(k), y(sz(l * m)), alpha(sz(l * n)), score(sz(n)), Q(sz(n * k)),
          z(sz(k * l)), gamma(sz(k * l)), w(sz(k)), gcol(sz(n)), r(sz(m)), yy(sz(l)), energy(sz(l)), res(sz(l)),
          atoms(sz(k)), selected(sz(n)), chol(k) {}

    static std::size_t sz(std::ptrdiff_t v) { return static_cast<std::size_t>(std::max<std::ptrdiff_t>(v, 1)); }
};

// gamma = L^{-T} z for the current support, then the explicit residual norm of
// every channel into ws.res; returns their sum.
template <class T>
CSCORE_FORCE_INLINE T explicit_residual(const Dictionary<T>& D, Workspace<T>& ws, std::ptrdiff_t n) {
    const std::ptrdiff_t M = D.M, L = ws.L;
    std::copy(ws.z.begin(), ws.z.begin() + n * L, ws.gamma.begin());
    ws.chol.solve_lt(ws.gamma.data(), L);
    T total = T(0);
    for (std::ptrdiff_t c = 0; c < L; ++c) {
        const T* yc = ws.y.data() + c * M;
        std::copy(yc, yc + M, ws.r.begin());
        for (std::ptrdiff_t i = 0; i < n; ++i)
            linalg::axpy(M, -ws.gamma[static_cast<std::size_t>(i * L + c)],
                         D.At.data() + ws.atoms[static_cast<std::size_t>(i)] * M, ws.r.data());
        // Scaled norm, so tiny or huge residuals neither underflow nor overflow.
        T amax = T(0);
        for (std::ptrdiff_t i = 0; i < M; ++i) amax = std::max(amax, std::abs(ws.r[static_cast<std::size_t>(i)]));
        T nrm = T(0);
        if (amax > T(0)) {
            T ss = T(0);
            for (std::ptrdiff_t i = 0; i < M; ++i) {
                const T v = ws.r[static_cast<std::size_t>(i)] / amax;
                ss += v * v;
            }
            nrm = amax * std::sqrt(ss);
        }
        ws.res[static_cast<std::size_t>(c)] = nrm;
        total += nrm;
    }
    return total;
}

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define CSCORE_GREEDY_AVX2 1
// Hand-vectorized double-precision kernels for the AVX2 path (compilers do not
// keep these accumulators in registers on their own).
namespace avx2 {

// y[0..n) = X^T x for X row-major m x n (leading dimension ldx): 16 outputs at a
// time accumulate in four registers while the rows stream by, in row order.
__attribute__((target("avx2,fma"))) inline void gemv_t_rows(std::ptrdiff_t m, std::ptrdiff_t n,
                                                           const double* X, std::ptrdiff_t ldx,
                                                           const double* x, double* y) {
    std::ptrdiff_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
        const double* col = X + j;
        for (std::ptrdiff_t r = 0; r < m; ++r) {
            const __m256d xr = _mm256_broadcast_sd(x + r);
            const double* row = col + r * ldx;
            a0 = _mm256_fmadd_pd(xr, _mm256_loadu_pd(row), a0);
            a1 = _mm256_fmadd_pd(xr, _mm256_loadu_pd(row + 4), a1);
            a2 = _mm256_fmadd_pd(xr, _mm256_loadu_pd(row + 8), a2);
            a3 = _mm256_fmadd_pd(xr, _mm256_loadu_pd(row + 12), a3);
        }
        _mm256_storeu_pd(y + j, a0);
        _mm256_storeu_pd(y + j + 4, a1);
        _mm256_storeu_pd(y + j + 8, a2);
        _mm256_storeu_pd(y + j + 12, a3);
    }
    for (; j + 4 <= n; j += 4) {
        __m256d a0 = _mm256_setzero_pd();
        for (std::ptrdiff_t r = 0; r < m; ++r)
            a0 = _mm256_fmadd_pd(_mm256_broadcast_sd(x + r), _mm256_loadu_pd(X + r * ldx + j), a0);
        _mm256_storeu_pd(y + j, a0);
    }
    for (; j < n; ++j) {
        double acc = 0.0;
        for (std::ptrdiff_t r = 0; r < m; ++r) acc = std::fma(x[r], X[r * ldx + j], acc);
        y[j] = acc;
    }
}

// gemv_t_rows for four vectors at once (x0..x3 -> y0..y3), so that the rows of X
// stream by once for the four.  Every output is accumulated exactly as in
// gemv_t_rows (same order, same fused operations): grouping changes no bit.
__attribute__((target("avx2,fma"))) inline void gemv_t_rows4(std::ptrdiff_t m, std::ptrdiff_t n,
                                                            const double* X, std::ptrdiff_t ldx,
                                                            const double* const* x,
                                                            double* const* y) {
    std::ptrdiff_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256d a[8];
        for (auto& v : a) v = _mm256_setzero_pd();
        for (std::ptrdiff_t r = 0; r < m; ++r) {
            const double* row = X + r * ldx + j;
            const __m256d lo = _mm256_loadu_pd(row), hi = _mm256_loadu_pd(row + 4);
            for (int c = 0; c < 4; ++c) {
                const __m256d xc = _mm256_broadcast_sd(x[c] + r);
                a[2 * c] = _mm256_fmadd_pd(xc, lo, a[2 * c]);
                a[2 * c + 1] = _mm256_fmadd_pd(xc, hi, a[2 * c + 1]);
            }
        }
        for (int c = 0; c < 4; ++c) {
            _mm256_storeu_pd(y[c] + j, a[2 * c]);
            _mm256_storeu_pd(y[c] + j + 4, a[2 * c + 1]);
        }
    }
    for (; j + 4 <= n; j += 4) {
        for (int c = 0; c < 4; ++c) {
            __m256d a0 = _mm256_setzero_pd();
            for (std::ptrdiff_t r = 0; r < m; ++r)
                a0 = _mm256_fmadd_pd(_mm256_broadcast_sd(x[c] + r), _mm256_loadu_pd(X + r * ldx + j), a0);
            _mm256_storeu_pd(y[c] + j, a0);
        }
    }
    for (; j < n; ++j) {
        for (int c = 0; c < 4; ++c) {
            double acc = 0.0;
            for (std::ptrdiff_t r = 0; r < m; ++r) acc = std::fma(x[c][r], X[r * ldx + j], acc);
            y[c][j] = acc;
        }
    }
}

// y = s * (g - X w) for X column-major n x ncols (leading dimension ldx): 16
// outputs at a time stay in registers while the columns stream by, in order.
__attribute__((target("avx2,fma"))) inline void scaled_residual_gemv(
    std::ptrdiff_t n, std::ptrdiff_t ncols, const double* g, const double* X, std::ptrdiff_t ldx,
    const double* w, double s, double* y) {
    const __m256d vs = _mm256_set1_pd(s);
    std::ptrdiff_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m256d a0 = _mm256_loadu_pd(g + j), a1 = _mm256_loadu_pd(g + j + 4);
        __m256d a2 = _mm256_loadu_pd(g + j + 8), a3 = _mm256_loadu_pd(g + j + 12);
        for (std::ptrdiff_t c = 0; c < ncols; ++c) {
            const __m256d wc = _mm256_broadcast_sd(w + c);
            const double* col = X + c * ldx + j;
            a0 = _mm256_fnmadd_pd(wc, _mm256_loadu_pd(col), a0);
            a1 = _mm256_fnmadd_pd(wc, _mm256_loadu_pd(col + 4), a1);
            a2 = _mm256_fnmadd_pd(wc, _mm256_loadu_pd(col + 8), a2);
            a3 = _mm256_fnmadd_pd(wc, _mm256_loadu_pd(col + 12), a3);
        }
        _mm256_storeu_pd(y + j, _mm256_mul_pd(a0, vs));
        _mm256_storeu_pd(y + j + 4, _mm256_mul_pd(a1, vs));
        _mm256_storeu_pd(y + j + 8, _mm256_mul_pd(a2, vs));
        _mm256_storeu_pd(y + j + 12, _mm256_mul_pd(a3, vs));
    }
    for (; j + 4 <= n; j += 4) {
        __m256d a0 = _mm256_loadu_pd(g + j);
        for (std::ptrdiff_t c = 0; c < ncols; ++c)
            a0 = _mm256_fnmadd_pd(_mm256_broadcast_sd(w + c), _mm256_loadu_pd(X + c * ldx + j), a0);
        _mm256_storeu_pd(y + j, _mm256_mul_pd(a0, vs));
    }
    for (; j < n; ++j) {
        double acc = g[j];
        for (std::ptrdiff_t c = 0; c < ncols; ++c) acc = std::fma(-w[c], X[c * ldx + j], acc);
        y[j] = acc * s;
    }
}

// First index of the maximum of s[0..n) (finite entries): packed maxima, then a
// scan for the first entry equal to the maximum.
__attribute__((target("avx2,fma"))) inline std::ptrdiff_t argmax_first(const double* s,
                                                                      std::ptrdiff_t n) {
    double best = s[0];
    std::ptrdiff_t i = 0;
    if (n >= 8) {
        __m256d m0 = _mm256_loadu_pd(s), m1 = _mm256_loadu_pd(s + 4);
        for (i = 8; i + 8 <= n; i += 8) {
            m0 = _mm256_max_pd(m0, _mm256_loadu_pd(s + i));
            m1 = _mm256_max_pd(m1, _mm256_loadu_pd(s + i + 4));
        }
        alignas(32) double lanes[4];
        _mm256_store_pd(lanes, _mm256_max_pd(m0, m1));
        for (double v : lanes) best = v > best ? v : best;
    }
    for (; i < n; ++i) best = s[i] > best ? s[i] : best;
    const __m256d b = _mm256_set1_pd(best);
    for (i = 0; i + 4 <= n; i += 4) {
        const int mask = _mm256_movemask_pd(_mm256_cmp_pd(_mm256_loadu_pd(s + i), b, _CMP_EQ_OQ));
        if (mask != 0) return i + __builtin_ctz(static_cast<unsigned>(mask));
    }
    for (; i < n; ++i)
        if (s[i] == best) return i;
    return 0;
}

}  // namespace avx2
#endif

// alpha[:, c] -= z[c] * q for every channel (skipped when q is null) and, in the
// same pass, score[j] = sum_c alpha[j, c]^2.
template <class T>
CSCORE_FORCE_INLINE void update_scores(Workspace<T>& ws, const T* q, const T* z) {
    const std::ptrdiff_t N = ws.N, L = ws.L;
    T* s = ws.score.data();
    for (std::ptrdiff_t c = 0; c < L; ++c) {
        T* a = ws.alpha.data() + c * N;
        if (q != nullptr) {
            const T zc = z[c];
            if (c == 0) {
                for (std::ptrdiff_t j = 0; j < N; ++j) {
                    const T v = a[j] - zc * q[j];
                    a[j] = v;
                    s[j] = v * v;
                }
            } else {
                for (std::ptrdiff_t j = 0; j < N; ++j) {
                    const T v = a[j] - zc * q[j];
                    a[j] = v;
                    s[j] += v * v;
                }
            }
        } else if (c == 0) {
            for (std::ptrdiff_t j = 0; j < N; ++j) s[j] = a[j] * a[j];
        } else {
            for (std::ptrdiff_t j = 0; j < N; ++j) s[j] += a[j] * a[j];
        }
    }
}

// Decodes problem p of Y into the outputs.
template <class T, bool kBlasGemv>
CSCORE_FORCE_INLINE void decode_one(const Dictionary<T>& D, const View3<const T>& Y, std::ptrdiff_t p,
                const Options& opt, Workspace<T>& ws, const Outputs<T>& out) {
    const std::ptrdiff_t M = D.M, N = D.N, L = ws.L, K = ws.K;
    constexpr T eps = std::numeric_limits<T>::epsilon();
    const bool use_tol = opt.tol >= 0.0;

    // Measurements, channel-major.  Energies are sums of squares, so a problem
    // whose entries are huge or tiny (beyond about 1e+-149 in double, 1e+-14 in
    // float) is first scaled by a power of two (exact); the solution and residuals
    // are scaled back at the end.
    T ymax = T(0);
    for (std::ptrdiff_t c = 0; c < L; ++c) {
        T* yc = ws.y.data() + c * M;
        for (std::ptrdiff_t i = 0; i < M; ++i) {
            yc[i] = Y(p, i, c);
            ymax = std::max(ymax, std::abs(yc[i]));
        }
    }
    // The scale is kept as its exponent and applied with ldexp: for subnormal
    // ymax, 2^-e itself is not representable (e < min_exponent), so a multiply
    // by a precomputed factor would overflow to inf.
    int scale_exp = 0;
    constexpr int kExpHi = std::numeric_limits<T>::max_exponent / 2 - 16;
    constexpr int kExpLo = std::numeric_limits<T>::min_exponent / 2 + 16;
    if (ymax > std::ldexp(T(1), kExpHi) || (ymax > T(0) && ymax < std::ldexp(T(1), kExpLo))) {
        int e = 0;
        (void)std::frexp(ymax, &e);
        scale_exp = -e;
        for (std::ptrdiff_t i = 0; i < L * M; ++i)
            ws.y[static_cast<std::size_t>(i)] = std::ldexp(ws.y[static_cast<std::size_t>(i)], scale_exp);
    }
    const T tol = static_cast<T>(std::ldexp(opt.tol, scale_exp));

    T ytot2 = T(0);
    for (std::ptrdiff_t c = 0; c < L; ++c) {
        const T* yc = ws.y.data() + c * M;
        const T e = linalg::dot(yc, yc, M);
        ws.yy[static_cast<std::size_t>(c)] = e;
        ws.energy[static_cast<std::size_t>(c)] = e;
        ytot2 += e;
    }
    // alpha[:, c] = An^T y_c.
    std::ptrdiff_t c0 = 0;
#ifdef CSCORE_GREEDY_AVX2
    if constexpr (!kBlasGemv && std::is_same_v<T, double>) {
        for (; c0 + 4 <= L; c0 += 4) {
            const double* xs[4];
            double* ys[4];
            for (int c = 0; c < 4; ++c) {
                xs[c] = ws.y.data() + (c0 + c) * M;
                ys[c] = ws.alpha.data() + (c0 + c) * N;
            }
            avx2::gemv_t_rows4(M, N, D.An.data(), N, xs, ys);
        }
    }
#endif
    for (std::ptrdiff_t c = c0; c < L; ++c) {
#ifdef CSCORE_GREEDY_AVX2
        if constexpr (!kBlasGemv && std::is_same_v<T, double>) {
            avx2::gemv_t_rows(M, N, D.An.data(), N, ws.y.data() + c * M, ws.alpha.data() + c * N);
            continue;
        }
#endif
        linalg::gemv_n<T>(static_cast<int>(N), static_cast<int>(M), D.An.data(), static_cast<int>(N),
                          ws.y.data() + c * M, ws.alpha.data() + c * N);
    }

    std::fill(ws.selected.begin(), ws.selected.end(), static_cast<unsigned char>(0));
    ws.chol.reset();
    // A correlation (squared, summed over channels) at or below this is rounding
    // noise: the residual is orthogonal to every atom.
    const T vanish = (T(32) * eps) * (T(32) * eps) * ytot2;

    StopReason reason = StopReason::exhausted;
    bool stopped_dependent = false;
    std::ptrdiff_t n = 0;
    bool have_explicit = false;  // ws.res / ws.gamma valid for the current n
    for (;;) {
        if (use_tol) {
            // Bracket the residual measure using the energy estimates; the
            // estimate's absolute error grows like n * eps * ||y||^2.
            T lo = T(0), hi = T(0);
            for (std::ptrdiff_t c = 0; c < L; ++c) {
                const T e = ws.energy[static_cast<std::size_t>(c)];
                const T slack = T(1000) * T(static_cast<double>(n + 1)) * eps * ws.yy[static_cast<std::size_t>(c)];
                lo += std::sqrt(std::max(e - slack, T(0)));
                hi += std::sqrt(std::max(e + slack, T(0)));
            }
            bool below;
            if (hi <= tol && n > 0) {
                below = true;
            } else if (lo > tol) {
                below = false;
            } else if (n == 0) {
                // Empty support: the residual is y itself, known exactly.
                T t = T(0);
                for (std::ptrdiff_t c = 0; c < L; ++c) t += std::sqrt(ws.yy[static_cast<std::size_t>(c)]);
                below = t <= tol;
            } else {
                below = explicit_residual(D, ws, n) <= tol;
                have_explicit = true;
            }
            if (below) {
                reason = StopReason::tol;
                break;
            }
        }
        if (n >= opt.max_atoms) {
            reason = opt.cap_is_n_nonzero ? StopReason::n_nonzero : StopReason::exhausted;
            break;
        }
        // Selection (the scores were refreshed together with alpha).
        if (n == 0) update_scores<T>(ws, nullptr, nullptr);
        std::ptrdiff_t k;
#ifdef CSCORE_GREEDY_AVX2
        if constexpr (!kBlasGemv && std::is_same_v<T, double>)
            k = avx2::argmax_first(ws.score.data(), N);
        else
#endif
            k = linalg::argmax_first(ws.score.data(), N);
        const T best = ws.score[static_cast<std::size_t>(k)];
        if (!(best > vanish) || ws.selected[static_cast<std::size_t>(k)]) {
            reason = StopReason::dependent;
            stopped_dependent = true;
            break;
        }
        // w = Q[k, :] (= L^{-1} G_{I,k}, see the header).
        T* Q = ws.Q.data();
        T* w = ws.w.data();
        for (std::ptrdiff_t i = 0; i < n; ++i) w[i] = Q[i * N + k];
        const T* gk = D.gram_column(k, ws.gcol.data());
        const T gkk = gk[k];
        if (!ws.chol.append_row(w, gkk)) {
            reason = StopReason::dependent;
            stopped_dependent = true;
            break;
        }
        have_explicit = false;
        const T lnn = ws.chol.pivot(n);
        const T inv = T(1) / lnn;
        T* qn = Q + n * N;
        if constexpr (kBlasGemv) {
            linalg::scaled_residual_gemv(N, n, gk, Q, N, w, inv, qn);
#ifdef CSCORE_GREEDY_AVX2
        } else if constexpr (std::is_same_v<T, double>) {
            avx2::scaled_residual_gemv(N, n, gk, Q, N, w, inv, qn);
#endif
        } else {
            for (std::ptrdiff_t j = 0; j < N; ++j) qn[j] = gk[j];
            linalg::sub_gemv(N, n, Q, N, w, qn);
            for (std::ptrdiff_t j = 0; j < N; ++j) qn[j] *= inv;
        }
        T* zn = ws.z.data() + n * L;
        for (std::ptrdiff_t c = 0; c < L; ++c) {
            const T zc = ws.alpha[static_cast<std::size_t>(c * N + k)] * inv;
            zn[c] = zc;
            ws.energy[static_cast<std::size_t>(c)] -= zc * zc;
        }
        update_scores(ws, qn, zn);
        ws.selected[static_cast<std::size_t>(k)] = 1;
        ws.atoms[static_cast<std::size_t>(n)] = k;
        ++n;
    }

    if (!have_explicit) explicit_residual(D, ws, n);
    T res_total = T(0);
    for (std::ptrdiff_t c = 0; c < L; ++c) {
        out.residual[p * L + c] = std::ldexp(ws.res[static_cast<std::size_t>(c)], -scale_exp);
        res_total += ws.res[static_cast<std::size_t>(c)];
    }
    for (std::ptrdiff_t j = 0; j < N; ++j)
        for (std::ptrdiff_t c = 0; c < L; ++c) out.X(p, j, c) = T(0);
    for (std::ptrdiff_t i = 0; i < n; ++i) {
        const std::ptrdiff_t j = ws.atoms[static_cast<std::size_t>(i)];
        for (std::ptrdiff_t c = 0; c < L; ++c)
            out.X(p, j, c) = std::ldexp(ws.gamma[static_cast<std::size_t>(i * L + c)] * D.inv_norm[static_cast<std::size_t>(j)], -scale_exp);
    }
    for (std::ptrdiff_t i = 0; i < K; ++i)
        out.atoms[p * K + i] = i < n ? ws.atoms[static_cast<std::size_t>(i)] : -1;
    out.n_iter[p] = n;
    out.stop[p] = static_cast<std::int8_t>(reason);
    // Worth a warning only when the early stop left a residual that is not
    // rounding noise: "the requested precision might not have been met".
    const T ynorm = std::sqrt(ytot2);
    out.warn[p] = static_cast<std::uint8_t>(stopped_dependent && res_total > std::sqrt(eps) * ynorm);
}

// Decodes problems [begin, end).  The generic version relies on the registered
// BLAS gemv for the O(N n) step; the AVX2 version (x86 with GCC/Clang, chosen
// at run time when cpu::active_isa() is avx2 or above, see cpu.hpp) inlines the
// whole kernel compiled for AVX2, which beats a BLAS call at these small sizes.
// Either way every problem runs the same code for the whole call, whatever the
// thread count.
template <class T>
void decode_range_generic(const Dictionary<T>& D, const View3<const T>& Y, std::ptrdiff_t begin,
                          std::ptrdiff_t end, const Options& opt, Workspace<T>& ws,
                          const Outputs<T>& out, Control* ctl) {
    for (std::ptrdiff_t p = begin; p < end && !should_stop(ctl); ++p)
        decode_one<T, true>(D, Y, p, opt, ws, out);
}

#ifdef CSCORE_GREEDY_AVX2
template <class T>
__attribute__((target("avx2,fma"))) void decode_range_avx2(const Dictionary<T>& D,
                                                           const View3<const T>& Y,
                                                           std::ptrdiff_t begin, std::ptrdiff_t end,
                                                           const Options& opt, Workspace<T>& ws,
                                                           const Outputs<T>& out, Control* ctl) {
    for (std::ptrdiff_t p = begin; p < end && !should_stop(ctl); ++p)
        decode_one<T, false>(D, Y, p, opt, ws, out);
}
#endif

// Decodes P problems Y (P, M, L) into the outputs with up to n_threads threads.
// Results do not depend on n_threads: every problem runs the same code.  With a
// Control, workers stop between problems once it is cancelled (outputs are then
// incomplete and the caller must discard them).
template <class T>
void decode(const T* A, std::ptrdiff_t M, std::ptrdiff_t N, std::ptrdiff_t lda,
            const View3<const T>& Y, std::ptrdiff_t P, std::ptrdiff_t L, const Options& opt,
            const Outputs<T>& out, int n_threads, Control* ctl = nullptr) {
    if (opt.max_atoms < 1 || opt.max_atoms > std::min(M, N))
        throw std::invalid_argument("max_atoms must be in [1, min(M, N)]");
    // Forming G costs about N^2 M / 2; computing the selected atoms' columns on
    // demand costs N M per atom.  Store G only when the batch selects enough atoms
    // (P * max_atoms >= N / 2) to repay it; both give bit-identical results.
    const bool store_gram = 2 * P * opt.max_atoms >= N;
    const Dictionary<T> D(A, M, N, lda, opt.gram_limit, store_gram);
    const std::ptrdiff_t K = opt.max_atoms;
#ifdef CSCORE_GREEDY_AVX2
    const bool avx2 = cpu::isa_at_least(cpu::Isa::avx2);
#else
    const bool avx2 = false;
#endif
    // Problems are handed out in fixed chunks from a shared counter, so a thread
    // that gets less CPU (a busy machine) simply takes fewer chunks.  Each problem
    // is still computed by the same code, so results do not depend on the split.
    constexpr std::ptrdiff_t kChunk = 32;
    const std::ptrdiff_t n_chunks = (P + kChunk - 1) / kChunk;
    const std::ptrdiff_t workers = std::max<std::ptrdiff_t>(1, std::min<std::ptrdiff_t>(n_threads, n_chunks));
    std::atomic<std::ptrdiff_t> next{0};
    parallel_for(workers, static_cast<int>(workers), [&](std::ptrdiff_t, std::ptrdiff_t, int) {
        Workspace<T> ws(M, N, L, K);
        for (;;) {
            const std::ptrdiff_t c = next.fetch_add(1, std::memory_order_relaxed);
            if (c >= n_chunks || should_stop(ctl)) break;
            const std::ptrdiff_t begin = c * kChunk, end = std::min(P, begin + kChunk);
#ifdef CSCORE_GREEDY_AVX2
            if (avx2) {
                decode_range_avx2<T>(D, Y, begin, end, opt, ws, out, ctl);
                continue;
            }
#endif
            (void)avx2;
            decode_range_generic<T>(D, Y, begin, end, opt, ws, out, ctl);
        }
    }, ctl);
}

}  // namespace cscore::greedy
