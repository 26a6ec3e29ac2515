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
#include <new>
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
#include "cscore/path_end.hpp"
#include "cscore/result.hpp"

#if defined(__GNUC__) || defined(__clang__)
#define CSCORE_NOINLINE __attribute__((noinline))
#else
#define CSCORE_NOINLINE
#endif

namespace cscore::greedy {

// Storage aligned to 64 bytes (a cache line).  The kernels load 32-byte vectors
// from the dictionary, its Gram columns and the per-problem arrays; with the
// default allocator (16-byte alignment) every other such load would straddle two
// cache lines, which costs a second load.  Placement only: no result changes.
template <class T>
struct LineAllocator {
    using value_type = T;
    static constexpr std::align_val_t kAlign{64};
    LineAllocator() = default;
    template <class U>
    LineAllocator(const LineAllocator<U>&) noexcept {}  // NOLINT: rebinding
    T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
    void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, kAlign); }
    template <class U>
    bool operator==(const LineAllocator<U>&) const noexcept { return true; }
    template <class U>
    bool operator!=(const LineAllocator<U>&) const noexcept { return false; }
};
template <class T>
using LineVector = std::vector<T, LineAllocator<T>>;

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
    LineVector<T> inv_norm;  // 1 / ||a_j||
    LineVector<T> An;        // normalized A, row-major M x N
    LineVector<T> At;        // normalized A transposed, row-major N x M (atoms contiguous)
    bool has_gram = true;     // G stored (else its columns are computed on demand)
    LineVector<T> G;         // An^T An, N x N symmetric (column j contiguous)

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
    // tol="auto" (see auto_cut): set auto_gamma2 to run it.  The path runs up to
    // max_atoms steps; at most auto_cap atoms are kept.  Per step k = 1..max_atoms (index
    // k - 1): auto_gamma2 the squared residual-ratio threshold, auto_a the first
    // parameter of the ratio's Beta law, (M - k) L / 2, auto_lnbeta ln B(a_k, b)
    // and auto_logu the log of the union bound's factor; auto_b is b = L / 2.
    const double* auto_gamma2 = nullptr;
    const double* auto_a = nullptr;
    const double* auto_lnbeta = nullptr;
    const double* auto_logu = nullptr;
    double auto_b = 0.5;
    std::ptrdiff_t auto_cap = 1;
    // The test that the measurements hold any signal, run when no step passes the
    // residual-ratio test (rows of stopping.signal_tables, each max_atoms long:
    // b, ln B(a_k, b), the block test's log factor; a1, ln B(a1, 1/2), the channel
    // test's log factor).  nullptr: the fallback step is always taken.
    const double* auto_signal = nullptr;
    // Optional end of the auto path before max_atoms (path_end.hpp): used when
    // auto_end.reset2 is set (with auto_end.gamma2 = auto_gamma2).
    PathEndRule auto_end;
    // A given path instead of the greedy choice: problem p adds the atoms
    // forced[p * forced_ld + i], i = 0, 1, ... (until -1 or max_atoms); the fit
    // and residuals are those of that path (used to fit another decoder's path).
    const std::int64_t* forced = nullptr;
    std::ptrdiff_t forced_ld = 0;
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
    T* sigma = nullptr;                // (P,) tol="auto": estimated noise level
    T* tol = nullptr;                  // (P,) tol="auto": the threshold used
    std::int64_t* n_signal = nullptr;  // (P,) tol="auto": steps judged to add signal
    T* path_energy = nullptr;          // (P, max_atoms + 1, L) optional: squared residual
                                       // norm after each step (the last one repeated)
};

// Problems are handed to the workers in chunks of this many (see decode()).
constexpr std::ptrdiff_t kChunk = 32;

// Per-thread scratch space.
template <class T>
struct Workspace {
    std::ptrdiff_t M, N, L, K;
    LineVector<T> ychunk;  // kChunk x (L x M): the chunk's measurements, channel-major per problem
    LineVector<T> achunk;  // kChunk x (L x N): the chunk's correlations, channel-major per problem
    std::vector<int> scale_exp;  // kChunk: power-of-two scale applied to each problem
    T* y = nullptr;         // L x M  measurements of the current problem (in ychunk)
    T* alpha = nullptr;     // L x N  its current correlations (in achunk)
    LineVector<T> score;   // N
    LineVector<T> Q;       // N x K, column-major
    LineVector<T> z;       // K x L
    LineVector<T> gamma;   // K x L
    LineVector<T> w;       // K  new row of the Cholesky factor
    LineVector<T> gcol;    // N  a Gram column computed on demand
    LineVector<T> r;       // M
    std::vector<T> yy;      // L  ||y_c||^2
    std::vector<T> energy;  // L  residual energy estimates
    std::vector<T> res;     // L  explicit residual norms
    std::vector<T> epath;   // (K + 1) x L  tol="auto": residual energy after each step
    std::vector<std::int64_t> atoms;  // K
    std::vector<unsigned char> selected;  // N
    linalg::GrowingCholesky<T> chol;
    // Plain OMP finishes its problems two at a time (decode_chunk, finish_pair):
    // the first one's factor, coefficients and atoms wait here (swapped, not copied).
    linalg::GrowingCholesky<T> chol_b;
    LineVector<T> z_b, gamma_b, r_b;
    std::vector<std::int64_t> atoms_b;

    Workspace(std::ptrdiff_t m, std::ptrdiff_t n, std::ptrdiff_t l, std::ptrdiff_t k)
        : M(m), N(n), L(l), K(k), ychunk(sz(kChunk * l * m)), achunk(sz(kChunk * l * n)),
          scale_exp(static_cast<std::size_t>(kChunk)), score(sz(n)), Q(sz(n * k)), z(sz(k * l)),
          gamma(sz(k * l)), w(sz(k)), gcol(sz(n)), r(sz(m)), yy(sz(l)), energy(sz(l)), res(sz(l)),
          epath(sz((k + 1) * l)), atoms(sz(k)), selected(sz(n)), chol(k), chol_b(k), z_b(sz(k * l)),
          gamma_b(sz(k * l)), r_b(sz(m)), atoms_b(sz(k)) {}

    static std::size_t sz(std::ptrdiff_t v) { return static_cast<std::size_t>(std::max<std::ptrdiff_t>(v, 1)); }
};

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

// |x| lane by lane (a bitwise operation: no multiply unit).
__attribute__((target("avx2,fma"))) inline __m256d abs_pd(__m256d x) {
    return _mm256_andnot_pd(_mm256_set1_pd(-0.0), x);
}

// The maximum of the squares a[j]^2, j < n (the OMP scores, finite), from lane
// maxima m0, m1 of |a[0..vec_end)| (vec_end a multiple of 4; squaring rounds
// monotonically, so max fl(a_j^2) = fl(max |a_j| ^ 2) exactly) and the squares of
// the rest, already in sq_tail[vec_end..n); then the first index holding it (the
// squares recomputed with the same product, so equality is exact).  The maximum
// goes to *best.  Same result as argmax_first over the stored scores.
__attribute__((target("avx2,fma"))) inline std::ptrdiff_t first_max_sq(
    __m256d m0, __m256d m1, const double* a, std::ptrdiff_t vec_end, const double* sq_tail,
    std::ptrdiff_t n, double* best) {
    alignas(32) double v[4];
    _mm256_store_pd(v, _mm256_max_pd(m0, m1));
    const double vmax = std::max(std::max(v[0], v[1]), std::max(v[2], v[3]));
    double b = vec_end > 0 ? vmax * vmax : sq_tail[0];
    for (std::ptrdiff_t j = vec_end; j < n; ++j) b = sq_tail[j] > b ? sq_tail[j] : b;
    *best = b;
    const __m256d vb = _mm256_set1_pd(b);
    for (std::ptrdiff_t j = 0; j < vec_end; j += 4) {
        const __m256d x = _mm256_loadu_pd(a + j);
        const int mask = _mm256_movemask_pd(_mm256_cmp_pd(_mm256_mul_pd(x, x), vb, _CMP_EQ_OQ));
        if (mask != 0) return j + __builtin_ctz(static_cast<unsigned>(mask));
    }
    for (std::ptrdiff_t j = vec_end; j < n; ++j)
        if (sq_tail[j] == b) return j;
    return 0;
}

// First index of the maximum of a[j]^2 over j < n (the OMP score of the
// correlations a, L = 1); the maximum goes to *best.  The squares are not kept.
__attribute__((target("avx2,fma"))) inline std::ptrdiff_t argmax_sq(const double* a,
                                                                   std::ptrdiff_t n,
                                                                   double* sq_tail,
                                                                   double* best) {
    __m256d m0 = _mm256_setzero_pd(), m1 = m0;
    std::ptrdiff_t j = 0;
    for (; j + 8 <= n; j += 8) {
        m0 = _mm256_max_pd(m0, abs_pd(_mm256_loadu_pd(a + j)));
        m1 = _mm256_max_pd(m1, abs_pd(_mm256_loadu_pd(a + j + 4)));
    }
    const std::ptrdiff_t vec_end = j;
    for (; j < n; ++j) sq_tail[j] = a[j] * a[j];
    return first_max_sq(m0, m1, a, vec_end, sq_tail, n, best);
}

// acc[v] = g[j + 4v .. +4) - sum_c w[c] X[c][j + 4v ..] for v < kV, the columns
// in order (each output's operations exactly as in scaled_residual_gemv), two
// columns per iteration.
template <int kV>
__attribute__((target("avx2,fma"))) inline void residual_block(std::ptrdiff_t ncols,
                                                               const double* g, const double* X,
                                                               std::ptrdiff_t ldx, const double* w,
                                                               std::ptrdiff_t j, __m256d* acc) {
    for (int v = 0; v < kV; ++v) acc[v] = _mm256_loadu_pd(g + j + 4 * v);
    std::ptrdiff_t c = 0;
    for (; c + 2 <= ncols; c += 2) {
        const __m256d w0 = _mm256_broadcast_sd(w + c), w1 = _mm256_broadcast_sd(w + c + 1);
        const double* col0 = X + c * ldx + j;
        const double* col1 = col0 + ldx;
        for (int v = 0; v < kV; ++v) acc[v] = _mm256_fnmadd_pd(w0, _mm256_loadu_pd(col0 + 4 * v), acc[v]);
        for (int v = 0; v < kV; ++v) acc[v] = _mm256_fnmadd_pd(w1, _mm256_loadu_pd(col1 + 4 * v), acc[v]);
    }
    if (c < ncols) {
        const __m256d w0 = _mm256_broadcast_sd(w + c);
        const double* col0 = X + c * ldx + j;
        for (int v = 0; v < kV; ++v) acc[v] = _mm256_fnmadd_pd(w0, _mm256_loadu_pd(col0 + 4 * v), acc[v]);
    }
}

// One block of an OMP step, kV vectors from j: acc = g - X w (residual_block),
// then q = s * acc (stored), a = a - z q (stored, one fused operation as in
// update_scores), and |a| into the running maxima (vectors alternate between m0
// and m1).
template <int kV>
__attribute__((target("avx2,fma"))) inline void step_block(std::ptrdiff_t ncols, const double* g,
                                                           const double* X, std::ptrdiff_t ldx,
                                                           const double* w, double s, double z,
                                                           double* q, double* a, std::ptrdiff_t j,
                                                           __m256d& m0, __m256d& m1) {
    __m256d acc[kV];
    residual_block<kV>(ncols, g, X, ldx, w, j, acc);
    const __m256d vs = _mm256_set1_pd(s), vz = _mm256_set1_pd(z);
    for (int v = 0; v < kV; ++v) {
        const __m256d qv = _mm256_mul_pd(acc[v], vs);
        _mm256_storeu_pd(q + j + 4 * v, qv);
        const __m256d av = _mm256_fnmadd_pd(vz, qv, _mm256_loadu_pd(a + j + 4 * v));
        _mm256_storeu_pd(a + j + 4 * v, av);
        __m256d& m = (v & 1) ? m1 : m0;
        m = _mm256_max_pd(m, abs_pd(av));
    }
}

// One OMP step (L = 1) in a single pass over the N atoms:
//     q = s * (g - X w)          (exactly as scaled_residual_gemv)
//     a = a - z q                (exactly as update_scores: one fused operation)
// and the first index of the largest a[j]^2 (exactly as argmax_first over the
// scores), returned with that maximum in *best.  q and a are stored; the scores
// are not (tail entries beyond the last multiple of 4 go to sq_tail).  Outputs
// go 36 at a time (9 registers: enough independent chains to keep both FMA
// units busy, and N = 144 splits into four such blocks), then 16, 8, 4.
__attribute__((target("avx2,fma"))) inline std::ptrdiff_t omp_step(
    std::ptrdiff_t n, std::ptrdiff_t ncols, const double* g, const double* X, std::ptrdiff_t ldx,
    const double* w, double s, double* q, double z, double* a, double* sq_tail, double* best) {
    __m256d m0 = _mm256_setzero_pd(), m1 = m0;
    std::ptrdiff_t j = 0;
    for (; j + 36 <= n; j += 36) step_block<9>(ncols, g, X, ldx, w, s, z, q, a, j, m0, m1);
    for (; j + 16 <= n; j += 16) step_block<4>(ncols, g, X, ldx, w, s, z, q, a, j, m0, m1);
    for (; j + 8 <= n; j += 8) step_block<2>(ncols, g, X, ldx, w, s, z, q, a, j, m0, m1);
    for (; j + 4 <= n; j += 4) step_block<1>(ncols, g, X, ldx, w, s, z, q, a, j, m0, m1);
    const std::ptrdiff_t vec_end = j;
    for (; j < n; ++j) {
        double r = g[j];
        for (std::ptrdiff_t c = 0; c < ncols; ++c) r = std::fma(-w[c], X[c * ldx + j], r);
        const double qj = r * s;
        q[j] = qj;
        const double v = std::fma(-z, qj, a[j]);
        a[j] = v;
        sq_tail[j] = v * v;
    }
    return first_max_sq(m0, m1, a, vec_end, sq_tail, n, best);
}

// residual_vector_fma for double: r = y - sum_i g[i * L] At[atoms[i]], the
// atoms in order, 32 rows (8 registers) at a time.
__attribute__((target("avx2,fma"))) inline void residual_vector(const double* y, const double* At,
                                                                std::ptrdiff_t M,
                                                                const std::int64_t* atoms,
                                                                const double* g, std::ptrdiff_t L,
                                                                std::ptrdiff_t n, double* r) {
    std::ptrdiff_t m0 = 0;
    for (; m0 + 32 <= M; m0 += 32) {
        __m256d acc[8];
        for (int v = 0; v < 8; ++v) acc[v] = _mm256_loadu_pd(y + m0 + 4 * v);
        for (std::ptrdiff_t i = 0; i < n; ++i) {
            const __m256d gi = _mm256_broadcast_sd(g + i * L);
            const double* col = At + atoms[i] * M + m0;
            for (int v = 0; v < 8; ++v) acc[v] = _mm256_fnmadd_pd(gi, _mm256_loadu_pd(col + 4 * v), acc[v]);
        }
        for (int v = 0; v < 8; ++v) _mm256_storeu_pd(r + m0 + 4 * v, acc[v]);
    }
    for (; m0 + 4 <= M; m0 += 4) {
        __m256d acc = _mm256_loadu_pd(y + m0);
        for (std::ptrdiff_t i = 0; i < n; ++i)
            acc = _mm256_fnmadd_pd(_mm256_broadcast_sd(g + i * L), _mm256_loadu_pd(At + atoms[i] * M + m0), acc);
        _mm256_storeu_pd(r + m0, acc);
    }
    for (; m0 < M; ++m0) {
        double acc = y[m0];
        for (std::ptrdiff_t i = 0; i < n; ++i) acc = std::fma(-g[i * L], At[atoms[i] * M + m0], acc);
        r[m0] = acc;
    }
}

}  // namespace avx2
#endif

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
// underflow nor overflow.
template <class T>
CSCORE_FORCE_INLINE T scaled_norm(const T* r, std::ptrdiff_t M) {
    T amax = T(0);
    for (std::ptrdiff_t i = 0; i < M; ++i) amax = std::max(amax, std::abs(r[i]));
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

// gamma = L^{-T} z for the first n atoms of the support (all of it but in
// tol="auto"'s cut), then the explicit residual norm of every channel into
// ws.res; returns their sum.
template <class T, bool kFma>
CSCORE_FORCE_INLINE T explicit_residual(const Dictionary<T>& D, Workspace<T>& ws, std::ptrdiff_t n) {
    const std::ptrdiff_t M = D.M, L = ws.L;
    std::copy(ws.z.begin(), ws.z.begin() + n * L, ws.gamma.begin());
    if (kFma && L == 1)
        solve_lt_one_fma(ws.chol, n, ws.gamma.data());
    else if (n == ws.chol.size())
        ws.chol.solve_lt(ws.gamma.data(), L);
    else
        solve_lt_prefix(ws.chol, n, ws.gamma.data(), L);
    T total = T(0);
    for (std::ptrdiff_t c = 0; c < L; ++c) {
        T* r = ws.r.data();
        const T* yc = ws.y + c * M;
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
        const T nrm = scaled_norm(r, M);
        ws.res[static_cast<std::size_t>(c)] = nrm;
        total += nrm;
    }
    return total;
}

// alpha[:, c] -= z[c] * q for every channel (skipped when q is null) and, in the
// same pass, score[j] = sum_c alpha[j, c]^2.
template <class T>
CSCORE_FORCE_INLINE void update_scores(Workspace<T>& ws, const T* q, const T* z) {
    const std::ptrdiff_t N = ws.N, L = ws.L;
    T* s = ws.score.data();
    for (std::ptrdiff_t c = 0; c < L; ++c) {
        T* a = ws.alpha + c * N;
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
    constexpr int kExpHi = std::numeric_limits<T>::max_exponent / 2 - 16;
    constexpr int kExpLo = std::numeric_limits<T>::min_exponent / 2 + 16;
    for (std::ptrdiff_t q = 0; q < count; ++q) {
        T* yq = buf + q * LM;
        T ymax = T(0);
        for (std::ptrdiff_t i = 0; i < LM; ++i) ymax = std::max(ymax, std::abs(yq[i]));
        int scale_exp = 0;
        if (ymax > std::ldexp(T(1), kExpHi) || (ymax > T(0) && ymax < std::ldexp(T(1), kExpLo))) {
            int e = 0;
            (void)std::frexp(ymax, &e);
            scale_exp = -e;
            for (std::ptrdiff_t i = 0; i < LM; ++i) yq[i] = std::ldexp(yq[i], scale_exp);
        }
        ws.scale_exp[static_cast<std::size_t>(q)] = scale_exp;
    }
}

// The correlations An^T y of every channel of every problem of the chunk into
// ws.achunk.  The AVX2 double kernels take four vectors at a time where they can
// (gemv_t_rows4 gives every output the same bits as gemv_t_rows), so neither the
// grouping nor the chunk changes a result.
template <class T, bool kBlasGemv>
CSCORE_FORCE_INLINE void chunk_correlations(const Dictionary<T>& D, std::ptrdiff_t count,
                                            Workspace<T>& ws) {
    const std::ptrdiff_t M = D.M, N = D.N, nvec = count * ws.L;
    const T* y = ws.ychunk.data();
    T* a = ws.achunk.data();
    std::ptrdiff_t v = 0;
#ifdef CSCORE_GREEDY_AVX2
    if constexpr (!kBlasGemv && std::is_same_v<T, double>) {
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
                                        T tol, bool& have_explicit) {
    constexpr T eps = std::numeric_limits<T>::epsilon();
    const std::ptrdiff_t L = ws.L;
    T lo = T(0), hi = T(0);
    for (std::ptrdiff_t c = 0; c < L; ++c) {
        const T e = ws.energy[static_cast<std::size_t>(c)];
        const T slack = T(1000) * T(static_cast<double>(n + 1)) * eps * ws.yy[static_cast<std::size_t>(c)];
        lo += std::sqrt(std::max(e - slack, T(0)));
        hi += std::sqrt(std::max(e + slack, T(0)));
    }
    if (hi <= tol && n > 0) return true;
    if (lo > tol) return false;
    if (n == 0) {
        // Empty support: the residual is y itself, known exactly.
        T t = T(0);
        for (std::ptrdiff_t c = 0; c < L; ++c) t += std::sqrt(ws.yy[static_cast<std::size_t>(c)]);
        return t <= tol;
    }
    have_explicit = true;
    return explicit_residual<T, kFma>(D, ws, n) <= tol;
}

// ln I_x(a, b), the regularized incomplete beta function, given
// log_front = a ln x + b ln(1 - x) - ln B(a, b), for 0 < x < 1: the continued
// fraction (modified Lentz) on the side of the mean where it converges fast.
inline double log_ibeta(double a, double b, double x, double log_front) {
    const auto cf = [](double p, double q, double t) {
        constexpr double tiny = 1e-300;
        double c = 1.0, d = 1.0 - (p + q) * t / (p + 1.0);
        d = 1.0 / (std::abs(d) < tiny ? tiny : d);
        double h = d;
        for (int m = 1; m <= 300; ++m) {
            const double m2 = 2.0 * m;
            const double num_even = m * (q - m) * t / ((p + m2 - 1.0) * (p + m2));
            const double num_odd = -(p + m) * (p + q + m) * t / ((p + m2) * (p + m2 + 1.0));
            double delta = 1.0;
            for (const double num : {num_even, num_odd}) {
                d = 1.0 + num * d;
                d = 1.0 / (std::abs(d) < tiny ? tiny : d);
                c = 1.0 + num / c;
                if (std::abs(c) < tiny) c = tiny;
                delta = d * c;
                h *= delta;
            }
            if (std::abs(delta - 1.0) < 1e-15) break;
        }
        return h;
    };
    if (x < (a + 1.0) / (a + b + 2.0)) return log_front + std::log(cf(a, b, x) / a);
    return std::log1p(-std::exp(log_front + std::log(cf(b, a, 1.0 - x) / b)));
}

// ln I_x(a, b) for x in [0, 1] (-inf at 0, 0 at 1); lnbeta = ln B(a, b).
inline double log_ibeta_at(double a, double b, double lnbeta, double x) {
    if (!(x > 0.0)) return -std::numeric_limits<double>::infinity();
    if (!(x < 1.0)) return 0.0;
    return log_ibeta(a, b, x, a * std::log(x) + b * std::log1p(-x) - lnbeta);
}

// Whether a path that no step of the residual-ratio test took for signal still
// rejects pure noise (step 2b of python/cscore/decoders/stopping.py): the block
// test on E(k) / E(0), or one channel's ratio test; energy(k) is the summed,
// chan(k, c) channel c's squared residual after k steps.
template <class Energy, class Chan>
bool holds_signal(const Options& opt, std::ptrdiff_t n, std::ptrdiff_t L, const Energy& energy,
                  const Chan& chan) {
    const std::ptrdiff_t K = opt.max_atoms;
    const double* t = opt.auto_signal;
    const double e0 = energy(0);
    const auto ratio = [](double e, double prev) {
        const double r = prev > 0.0 ? e / prev : 1.0;
        return std::isnan(r) ? 1.0 : std::min(std::max(r, 0.0), 1.0);
    };
    for (std::ptrdiff_t k = 1; k <= n; ++k) {
        const double x = ratio(energy(k), e0);
        if (log_ibeta_at(opt.auto_a[k - 1], t[k - 1], t[K + k - 1], x) + t[2 * K + k - 1] <= 0.0)
            return true;
    }
    if (L == 1) return false;
    for (std::ptrdiff_t c = 0; c < L; ++c)
        for (std::ptrdiff_t k = 1; k <= n; ++k) {
            const double x = ratio(chan(k, c), chan(k - 1, c));
            if (log_ibeta_at(t[3 * K + k - 1], 0.5, t[4 * K + k - 1], x) + t[5 * K + k - 1] <= 0.0)
                return true;
        }
    return false;
}

// The step k_rrt of residual ratio thresholding on a path with squared residual
// norms E(0..n) (summed over channels): the last step whose ratio
// RR(k)^2 = E(k) / E(k - 1) is below its threshold; when none is, the step with
// the smallest union-bound p-value (see python/cscore/decoders/stopping.py) if
// the path holds signal (holds_signal, when opt.auto_signal is set), else 0.
template <class Energy, class Chan>
std::ptrdiff_t rrt_signal_steps(const Options& opt, std::ptrdiff_t n, std::ptrdiff_t L,
                                const Energy& energy, const Chan& chan) {
    const auto ratio = [&](std::ptrdiff_t k) {
        const double prev = energy(k - 1);
        const double rr2 = prev > 0.0 ? energy(k) / prev : 1.0;
        return std::isnan(rr2) ? 1.0 : std::min(std::max(rr2, 0.0), 1.0);
    };
    for (std::ptrdiff_t k = n; k >= 1; --k)
        if (ratio(k) < opt.auto_gamma2[k - 1]) return k;
    if (opt.auto_signal != nullptr && !holds_signal(opt, n, L, energy, chan)) return 0;
    std::ptrdiff_t best_k = 0;
    double best = std::numeric_limits<double>::infinity();
    for (std::ptrdiff_t k = 1; k <= n; ++k) {
        const double x = ratio(k), a = opt.auto_a[k - 1], b = opt.auto_b;
        double log_i = 0.0;  // ln I_x(a, b): 0 at x = 1
        if (!(x > 0.0)) {
            log_i = -std::numeric_limits<double>::infinity();
        } else if (x < 1.0) {
            log_i = log_ibeta(a, b, x, a * std::log(x) + b * std::log1p(-x) - opt.auto_lnbeta[k - 1]);
        }
        const double logp = log_i + opt.auto_logu[k - 1];
        if (logp < best || best_k == 0) {
            best = logp;
            best_k = k;
        }
    }
    return best_k;
}

// The squared residual norm of every channel after every prefix k = 0..n of the
// path into ws.epath ((n + 1) x L): the explicit residual at the end plus the tail
// of z (sums of squares: no cancellation).  Leaves gamma and res for all n atoms.
template <class T, bool kFma>
void path_energies(const Dictionary<T>& D, Workspace<T>& ws, std::ptrdiff_t n) {
    const std::ptrdiff_t L = ws.L;
    explicit_residual<T, kFma>(D, ws, n);
    T* E = ws.epath.data();
    for (std::ptrdiff_t c = 0; c < L; ++c) {
        T acc = ws.res[static_cast<std::size_t>(c)] * ws.res[static_cast<std::size_t>(c)];
        E[n * L + c] = acc;
        for (std::ptrdiff_t k = n - 1; k >= 0; --k) {
            const T zk = ws.z[static_cast<std::size_t>(k * L + c)];
            acc += zk * zk;
            E[k * L + c] = acc;
        }
    }
}

// tol="auto" once the greedy path (n steps) has ended: residual ratio
// thresholding on the path, the noise level from the residual after the signal
// steps, the paper's threshold from it, and the cut: the first step whose summed
// channel residual norms are <= the threshold, at most opt.auto_cap atoms.
// Leaves gamma and res for the cut and returns its length; the noise level, the
// threshold and the signal steps go to *sigma, *tol, *n_signal (scaled units).
template <class T, bool kFma>
std::ptrdiff_t auto_cut(const Dictionary<T>& D, Workspace<T>& ws, std::ptrdiff_t n,
                        const Options& opt, T* sigma, T* tol, std::int64_t* n_signal) {
    const std::ptrdiff_t M = D.M, L = ws.L;
    path_energies<T, kFma>(D, ws, n);
    const T* E = ws.epath.data();
    const auto energy = [&](std::ptrdiff_t k) {
        double e = 0.0;
        for (std::ptrdiff_t c = 0; c < L; ++c) e += static_cast<double>(E[k * L + c]);
        return e;
    };
    const auto chan = [&](std::ptrdiff_t k, std::ptrdiff_t c) {
        return static_cast<double>(E[k * L + c]);
    };
    const std::ptrdiff_t k_sig = rrt_signal_steps(opt, n, L, energy, chan);
    const double dof = static_cast<double>(L * std::max<std::ptrdiff_t>(M - k_sig, 1));
    const double s = std::sqrt(energy(k_sig) / dof);
    const double t = static_cast<double>(L) * s * std::sqrt(static_cast<double>(M * L));
    std::ptrdiff_t cut = n;
    for (std::ptrdiff_t k = 0; k <= n; ++k) {
        double total = 0.0;
        for (std::ptrdiff_t c = 0; c < L; ++c) total += std::sqrt(static_cast<double>(E[k * L + c]));
        if (total <= t * (1.0 + 1e-12)) {
            cut = k;
            break;
        }
    }
    cut = std::min(cut, opt.auto_cap);
    if (cut < n) explicit_residual<T, kFma>(D, ws, cut);
    *sigma = static_cast<T>(s);
    *tol = static_cast<T>(t);
    *n_signal = k_sig;
    return cut;
}

// Writes problem p's outputs (X was zeroed by zero_chunk) from its coefficients
// gamma (n x L, normalized atoms), its explicit residual norms res (L) and its
// atoms (n of them; the rest of the row is padded with -1).
template <class T>
CSCORE_FORCE_INLINE void write_outputs(const Dictionary<T>& D, std::ptrdiff_t L, std::ptrdiff_t K,
                                       const T* gamma, const T* res, const std::int64_t* atoms,
                                       std::ptrdiff_t p, std::ptrdiff_t n, int scale_exp,
                                       StopReason reason, bool stopped_dependent, T ytot2,
                                       const Outputs<T>& out) {
    constexpr T eps = std::numeric_limits<T>::epsilon();
    // ldexp(v, 0) == v: the call is skipped for unscaled problems.
    const auto unscale = [scale_exp](T v) { return scale_exp == 0 ? v : std::ldexp(v, -scale_exp); };
    T res_total = T(0);
    for (std::ptrdiff_t c = 0; c < L; ++c) {
        out.residual[p * L + c] = unscale(res[c]);
        res_total += res[c];
    }
    for (std::ptrdiff_t i = 0; i < n; ++i) {
        const std::ptrdiff_t j = atoms[i];
        for (std::ptrdiff_t c = 0; c < L; ++c)
            out.X(p, j, c) = unscale(gamma[i * L + c] * D.inv_norm[static_cast<std::size_t>(j)]);
    }
    std::int64_t* row = out.atoms + p * K;
    std::copy(atoms, atoms + n, row);
    std::fill(row + n, row + K, std::int64_t{-1});
    out.n_iter[p] = n;
    out.stop[p] = static_cast<std::int8_t>(reason);
    // Worth a warning only when the early stop left a residual that is not
    // rounding noise: "the requested precision might not have been met".
    const T ynorm = std::sqrt(ytot2);
    out.warn[p] = static_cast<std::uint8_t>(stopped_dependent && res_total > std::sqrt(eps) * ynorm);
}

// write_outputs for the problem in ws (gamma and res those of the final support).
template <class T>
CSCORE_FORCE_INLINE void write_problem(const Dictionary<T>& D, const Workspace<T>& ws, std::ptrdiff_t p,
                                       std::ptrdiff_t n, int scale_exp, StopReason reason,
                                       bool stopped_dependent, T ytot2, const Outputs<T>& out) {
    write_outputs(D, ws.L, ws.K, ws.gamma.data(), ws.res.data(), ws.atoms.data(), p, n, scale_exp,
                  reason, stopped_dependent, ytot2, out);
}

// A decoded problem whose fit is still to be finished (see decode_one).
template <class T>
struct Pending {
    std::ptrdiff_t q = 0, p = 0, n = 0;  // chunk index, problem index, support size
    int scale_exp = 0;
    StopReason reason = StopReason::exhausted;
    bool stopped_dependent = false;
    T ytot2 = T(0);
};

// Decodes problem p (the chunk's problem q, loaded by load_chunk with its
// correlations from chunk_correlations) into the outputs.  For OMP (L = 1) in
// double on the AVX2 path, one pass per step computes the new Q column, updates
// the correlations and finds the next atom (avx2::omp_step); the other cases run
// the same arithmetic as separate passes.
// With `defer`, a problem whose fit is still to be solved (always the case of
// plain OMP: no tol, no tol="auto", no path energies) is left in ws for the
// caller to finish (finish_pair), its summary in *defer.
template <class T, bool kBlasGemv>
CSCORE_FORCE_INLINE void decode_one(const Dictionary<T>& D, std::ptrdiff_t q, std::ptrdiff_t p,
                                    const Options& opt, Workspace<T>& ws, const Outputs<T>& out,
                                    Pending<T>* defer = nullptr) {
    const std::ptrdiff_t M = D.M, N = D.N, L = ws.L;
    constexpr T eps = std::numeric_limits<T>::epsilon();
#ifdef CSCORE_GREEDY_AVX2
    constexpr bool kAvx2d = !kBlasGemv && std::is_same_v<T, double>;
#else
    constexpr bool kAvx2d = false;
#endif
    const bool fused = kAvx2d && L == 1;
    constexpr bool kFma = !kBlasGemv;  // the AVX2/FMA build (see explicit_residual)
    const bool use_tol = opt.tol >= 0.0;
    ws.y = ws.ychunk.data() + q * L * M;
    ws.alpha = ws.achunk.data() + q * L * N;
    const int scale_exp = ws.scale_exp[static_cast<std::size_t>(q)];
    const T tol = static_cast<T>(std::ldexp(opt.tol, scale_exp));

    T ytot2 = T(0);
    for (std::ptrdiff_t c = 0; c < L; ++c) {
        const T* yc = ws.y + c * M;
        const T e = linalg::dot(yc, yc, M);
        ws.yy[static_cast<std::size_t>(c)] = e;
        ws.energy[static_cast<std::size_t>(c)] = e;
        ytot2 += e;
    }

    std::fill(ws.selected.begin(), ws.selected.end(), static_cast<unsigned char>(0));
    ws.chol.reset();
    // A correlation (squared, summed over channels) at or below this is rounding
    // noise: the residual is orthogonal to every atom.
    const T vanish = (T(32) * eps) * (T(32) * eps) * ytot2;

    StopReason reason = StopReason::exhausted;
    bool stopped_dependent = false;
    // the auto path's end (Options::auto_end), on the channels' summed energies
    const bool path_end = opt.auto_end.reset2 != nullptr;
    PathEnd end;
    end.start(static_cast<double>(ytot2));
    std::ptrdiff_t n = 0;
    bool have_explicit = false;  // ws.res / ws.gamma valid for the current n
    std::ptrdiff_t k_next = 0;   // fused: the next atom, found by the last step
    T best_next = T(0);
    const bool use_auto = opt.auto_gamma2 != nullptr;  // tol="auto": the path, then auto_cut
#ifndef CSCORE_GREEDY_AVX2
    (void)fused, (void)k_next, (void)best_next;  // the fused path is AVX2 only
#endif
    for (;;) {
        if (use_tol && residual_below<T, kFma>(D, ws, n, tol, have_explicit)) {
            reason = StopReason::tol;
            break;
        }
        if (n >= opt.max_atoms) {
            reason = opt.cap_is_n_nonzero ? StopReason::n_nonzero : StopReason::exhausted;
            break;
        }
        // Selection (the scores were refreshed together with alpha).
        std::ptrdiff_t k;
        T best;
        if (opt.forced != nullptr) {
            k = opt.forced[p * opt.forced_ld + n];
            if (k < 0 || k >= N) break;  // the given path ends
            best = std::numeric_limits<T>::max();
        } else
#ifdef CSCORE_GREEDY_AVX2
        if constexpr (kAvx2d) {
            if (fused) {
                if (n == 0) k_next = avx2::argmax_sq(ws.alpha, N, ws.score.data(), &best_next);
                k = k_next;
                best = best_next;
            } else {
                if (n == 0) update_scores<T>(ws, nullptr, nullptr);
                k = avx2::argmax_first(ws.score.data(), N);
                best = ws.score[static_cast<std::size_t>(k)];
            }
        } else
#endif
        {
            if (n == 0) update_scores<T>(ws, nullptr, nullptr);
            k = linalg::argmax_first(ws.score.data(), N);
            best = ws.score[static_cast<std::size_t>(k)];
        }
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
        T* zn = ws.z.data() + n * L;
        for (std::ptrdiff_t c = 0; c < L; ++c) {
            const T zc = ws.alpha[c * N + k] * inv;
            zn[c] = zc;
            ws.energy[static_cast<std::size_t>(c)] -= zc * zc;
        }
        if constexpr (kBlasGemv) {
            linalg::scaled_residual_gemv(N, n, gk, Q, N, w, inv, qn);
            update_scores(ws, qn, zn);
#ifdef CSCORE_GREEDY_AVX2
        } else if constexpr (kAvx2d) {
            if (fused) {
                // After the last atom the loop only stops (tol test, cap): nothing
                // reads this step's Q column, correlations or next atom.
                if (n + 1 < opt.max_atoms)
                    k_next = avx2::omp_step(N, n, gk, Q, N, w, inv, qn, zn[0], ws.alpha,
                                            ws.score.data(), &best_next);
            } else {
                avx2::scaled_residual_gemv(N, n, gk, Q, N, w, inv, qn);
                update_scores(ws, qn, zn);
            }
#endif
        } else {
            for (std::ptrdiff_t j = 0; j < N; ++j) qn[j] = gk[j];
            linalg::sub_gemv(N, n, Q, N, w, qn);
            for (std::ptrdiff_t j = 0; j < N; ++j) qn[j] *= inv;
            update_scores(ws, qn, zn);
        }
        ws.selected[static_cast<std::size_t>(k)] = 1;
        ws.atoms[static_cast<std::size_t>(n)] = k;
        ++n;
        if (path_end) {
            double e = 0.0;
            for (std::ptrdiff_t c = 0; c < L; ++c)
                e += static_cast<double>(ws.energy[static_cast<std::size_t>(c)]);
            if (end.step(e, static_cast<int>(n), opt.auto_end)) {
                reason = StopReason::exhausted;
                break;
            }
        }
    }

    if (use_auto) {
        T s = T(0), t = T(0);
        std::int64_t k_sig = 0;
        const std::ptrdiff_t cut = auto_cut<T, kFma>(D, ws, n, opt, &s, &t, &k_sig);
        stopped_dependent = stopped_dependent && cut == n;
        reason = StopReason::tol;
        n = cut;
        have_explicit = true;
        out.sigma[p] = scale_exp == 0 ? s : std::ldexp(s, -scale_exp);
        out.tol[p] = scale_exp == 0 ? t : std::ldexp(t, -scale_exp);
        out.n_signal[p] = k_sig;
    }
    if (out.path_energy != nullptr) {
        path_energies<T, kFma>(D, ws, n);
        have_explicit = true;
        const std::ptrdiff_t K = ws.K;
        for (std::ptrdiff_t k = 0; k <= K; ++k)
            for (std::ptrdiff_t c = 0; c < L; ++c) {
                const T e = ws.epath[static_cast<std::size_t>(std::min(k, n) * L + c)];
                out.path_energy[(p * (K + 1) + k) * L + c] = scale_exp == 0 ? e : std::ldexp(e, -2 * scale_exp);
            }
    }
    if (defer != nullptr && !have_explicit) {
        *defer = Pending<T>{q, p, n, scale_exp, reason, stopped_dependent, ytot2};
        return;
    }
    if (!have_explicit) explicit_residual<T, kFma>(D, ws, n);
    write_problem(D, ws, p, n, scale_exp, reason, stopped_dependent, ytot2, out);
}

#ifdef CSCORE_GREEDY_AVX2
// z <- L^{-T} z and z1 <- L1^{-T} z1 for two factors of the same size n: the
// operations of solve_lt_one_fma on each (same bits), interleaved so that the
// two latency-bound chains overlap.
CSCORE_FORCE_INLINE void solve_lt_two_fma(const linalg::GrowingCholesky<double>& chol,
                                          const linalg::GrowingCholesky<double>& chol1,
                                          std::ptrdiff_t n, double* z, double* z1) {
    const double* Lf = chol.data();
    const double* Lf1 = chol1.data();
    const std::ptrdiff_t ld = chol.ld(), ld1 = chol1.ld();
    for (std::ptrdiff_t i = n - 1; i >= 0; --i) {
        double acc = z[i], acc1 = z1[i];
        for (std::ptrdiff_t j = i + 1; j < n; ++j) {
            acc = std::fma(-Lf[j * ld + i], z[j], acc);
            acc1 = std::fma(-Lf1[j * ld1 + i], z1[j], acc1);
        }
        const double inv = 1.0 / Lf[i * ld + i], inv1 = 1.0 / Lf1[i * ld1 + i];
        z[i] = acc * inv;
        z1[i] = acc1 * inv1;
    }
}

// Finishes two plain OMP problems left by decode_one (L = 1, double, AVX2): the
// first one's state in ws.*_b, the second's in ws.  The fits (the back
// substitutions, latency-bound) of the two run interleaved when their supports
// have the same size; then, as explicit_residual and write_problem do for one
// problem, the explicit residual, its norm and the outputs of each.
CSCORE_FORCE_INLINE void finish_pair(const Dictionary<double>& D, Workspace<double>& ws,
                                     const Pending<double>* pend, const Outputs<double>& out) {
    const std::ptrdiff_t M = D.M;
    const linalg::GrowingCholesky<double>* chol[2] = {&ws.chol_b, &ws.chol};
    const double* z[2] = {ws.z_b.data(), ws.z.data()};
    double* gamma[2] = {ws.gamma_b.data(), ws.gamma.data()};
    const std::int64_t* atoms[2] = {ws.atoms_b.data(), ws.atoms.data()};
    double* r[2] = {ws.r_b.data(), ws.r.data()};
    for (int t = 0; t < 2; ++t) std::copy(z[t], z[t] + pend[t].n, gamma[t]);
    if (pend[0].n == pend[1].n) {
        solve_lt_two_fma(*chol[0], *chol[1], pend[0].n, gamma[0], gamma[1]);
    } else {
        for (int t = 0; t < 2; ++t) solve_lt_one_fma(*chol[t], pend[t].n, gamma[t]);
    }
    for (int t = 0; t < 2; ++t) {
        const Pending<double>& f = pend[t];
        avx2::residual_vector(ws.ychunk.data() + f.q * M, D.At.data(), M, atoms[t], gamma[t], 1, f.n, r[t]);
        const double res = scaled_norm(r[t], M);
        write_outputs(D, 1, ws.K, gamma[t], &res, atoms[t], f.p, f.n, f.scale_exp, f.reason,
                      f.stopped_dependent, f.ytot2, out);
    }
}
#endif

// Decodes the chunk [begin, end): loads it, forms its correlations, zeroes its
// block of X, then decodes its problems one by one.
template <class T, bool kBlasGemv>
CSCORE_FORCE_INLINE void decode_chunk(const Dictionary<T>& D, const View3<const T>& Y,
                                      std::ptrdiff_t begin, std::ptrdiff_t end, const Options& opt,
                                      Workspace<T>& ws, const Outputs<T>& out, Control* ctl) {
    const std::ptrdiff_t count = end - begin;
    load_chunk(Y, begin, count, ws);
    chunk_correlations<T, kBlasGemv>(D, count, ws);
    zero_chunk(out.X, begin, count, D.N, ws.L);
    // Plain OMP (AVX2, double) finishes its problems two at a time (finish_pair);
    // decode_one has this one call site either way.
    bool pairs = false;
#ifdef CSCORE_GREEDY_AVX2
    if constexpr (!kBlasGemv && std::is_same_v<T, double>)
        pairs = ws.L == 1 && opt.tol < 0.0 && opt.auto_gamma2 == nullptr && opt.forced == nullptr &&
                out.path_energy == nullptr;
#endif
    Pending<T> pend[2];
    int held = 0;  // problems decoded and waiting for finish_pair
    for (std::ptrdiff_t q = 0; q < count && !should_stop(ctl); ++q) {
        const bool defer = pairs && (held == 1 || q + 1 < count);
        decode_one<T, kBlasGemv>(D, q, begin + q, opt, ws, out, defer ? &pend[held] : nullptr);
        if (!defer) continue;
        if (held == 0) {
            std::swap(ws.chol, ws.chol_b);
            std::swap(ws.z, ws.z_b);
            std::swap(ws.atoms, ws.atoms_b);
            held = 1;
            continue;
        }
#ifdef CSCORE_GREEDY_AVX2
        if constexpr (!kBlasGemv && std::is_same_v<T, double>) finish_pair(D, ws, pend, out);
#endif
        held = 0;
    }
}

// Asks the cache for problems [begin, begin + count) of Y and their block of X
// when the problems are adjacent in memory (OMP's y (M, B) and x (N, B)): each
// chunk then reads M and writes N short runs of lines far apart, too many
// streams for the hardware prefetchers.  (Other layouts hold each problem
// contiguously, which the hardware prefetchers follow.)  No result depends on it.
template <class T>
inline void prefetch_chunk(const View3<const T>& Y, const View3<T>& X, std::ptrdiff_t begin,
                           std::ptrdiff_t count, std::ptrdiff_t M, std::ptrdiff_t N, std::ptrdiff_t L) {
#if defined(__GNUC__) || defined(__clang__)
    constexpr std::ptrdiff_t kLine = 64 / static_cast<std::ptrdiff_t>(sizeof(T));
    if (Y.s0 == 1 && std::abs(Y.s1) > count) {
        for (std::ptrdiff_t c = 0; c < L; ++c)
            for (std::ptrdiff_t i = 0; i < M; ++i) {
                const T* row = &Y(begin, i, c);
                for (std::ptrdiff_t q = 0; q < count; q += kLine) __builtin_prefetch(row + q, 0, 2);
                __builtin_prefetch(row + count - 1, 0, 2);
            }
    }
    if (X.s0 == 1 && std::abs(X.s1) > count) {
        for (std::ptrdiff_t c = 0; c < L; ++c)
            for (std::ptrdiff_t j = 0; j < N; ++j) {
                T* row = &X(begin, j, c);
                for (std::ptrdiff_t q = 0; q < count; q += kLine) __builtin_prefetch(row + q, 1, 2);
                __builtin_prefetch(row + count - 1, 1, 2);
            }
    }
#else
    (void)Y, (void)X, (void)begin, (void)count, (void)M, (void)N, (void)L;
#endif
}

// Decodes problems [begin, end) (at most kChunk).  The generic version relies on
// the registered BLAS gemv for the O(N n) step; the AVX2 version (x86 with
// GCC/Clang, chosen at run time when cpu::active_isa() is avx2 or above, see
// cpu.hpp) inlines the whole kernel compiled for AVX2, which beats a BLAS call at
// these small sizes.  Either way every problem runs the same code for the whole
// call, whatever the thread count or the chunk it falls in.
template <class T>
void decode_range_generic(const Dictionary<T>& D, const View3<const T>& Y, std::ptrdiff_t begin,
                          std::ptrdiff_t end, const Options& opt, Workspace<T>& ws,
                          const Outputs<T>& out, Control* ctl) {
    decode_chunk<T, true>(D, Y, begin, end, opt, ws, out, ctl);
}

#ifdef CSCORE_GREEDY_AVX2
template <class T>
__attribute__((target("avx2,fma"))) void decode_range_avx2(const Dictionary<T>& D,
                                                           const View3<const T>& Y,
                                                           std::ptrdiff_t begin, std::ptrdiff_t end,
                                                           const Options& opt, Workspace<T>& ws,
                                                           const Outputs<T>& out, Control* ctl) {
    decode_chunk<T, false>(D, Y, begin, end, opt, ws, out, ctl);
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
    const std::ptrdiff_t n_chunks = (P + kChunk - 1) / kChunk;
    const std::ptrdiff_t workers = std::max<std::ptrdiff_t>(1, std::min<std::ptrdiff_t>(n_threads, n_chunks));
    std::atomic<std::ptrdiff_t> next{0};
    parallel_for(workers, static_cast<int>(workers), [&](std::ptrdiff_t, std::ptrdiff_t, int) {
        Workspace<T> ws(M, N, L, K);
        for (;;) {
            const std::ptrdiff_t c = next.fetch_add(1, std::memory_order_relaxed);
            if (c >= n_chunks || should_stop(ctl)) break;
            const std::ptrdiff_t begin = c * kChunk, end = std::min(P, begin + kChunk);
            // The next chunk (this worker's if it is the only one) is requested
            // while this one is decoded.
            if (end < P) prefetch_chunk(Y, out.X, end, std::min(P, end + kChunk) - end, M, N, L);
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
