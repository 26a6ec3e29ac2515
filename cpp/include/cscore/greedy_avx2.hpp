// The hand-vectorized double-precision kernels of the greedy decoders' AVX2 path
// (greedy.hpp): the Gram entries without FMA (gram_block_avx, the bits of
// gram_block_generic), and in namespace avx2 the FMA kernels of one OMP/SOMP
// step -- correlations A^T y (gemv_t_rows, gemv_t_rows4, gemv_rows), the new Q
// column (residual_block), the first maximum of the scores (argmax_first,
// argmax_sq), the fused OMP and SOMP steps (omp_step, somp_step) and the
// explicit residual (residual_vector).  Each states which portable loop's bits it
// reproduces.
// Compiled only on x86 with GCC/Clang (CSCORE_GREEDY_AVX2), chosen at run time.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#endif

#if defined(__GNUC__) || defined(__clang__)
#define CSCORE_NOINLINE __attribute__((noinline))
#else
#define CSCORE_NOINLINE
#endif

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define CSCORE_GREEDY_AVX2 1
namespace cscore::greedy {

// The lanes s0..s3 of acc, the tail t in [m4, M) added into s0, then
// (s0 + s1) + (s2 + s3): the end of linalg::dot.
__attribute__((target("avx2"))) inline double gram_finish(__m256d acc, const double* row,
                                                           const double* ak, std::ptrdiff_t m4,
                                                           std::ptrdiff_t M) {
    alignas(32) double s[4];
    _mm256_store_pd(s, acc);
    for (std::ptrdiff_t t = m4; t < M; ++t) s[0] += row[t] * ak[t];
    return (s[0] + s[1]) + (s[2] + s[3]);
}

// gram_block_generic for double with AVX (no FMA, so products and sums round
// separately as there): lane t of one accumulator is the partial sum s_t of
// linalg::dot; eight atoms at a time share the loads of ak.  Same bits.
__attribute__((target("avx2"))) CSCORE_NOINLINE inline void gram_block_avx(
    const double* At, std::ptrdiff_t M, const double* ak, std::ptrdiff_t i0, std::ptrdiff_t count,
    double* out, const std::ptrdiff_t* idx = nullptr) {
    const std::ptrdiff_t m4 = M - M % 4;
    // Row i of the block: atom idx[i] when a list is given, else i0 + i.
    const auto row_of = [At, M, i0, idx](std::ptrdiff_t i) {
        return At + (idx != nullptr ? idx[i] : i0 + i) * M;
    };
    std::ptrdiff_t i = 0;
    for (; i + 8 <= count; i += 8) {
        const double* rows[8];
        for (int r = 0; r < 8; ++r) rows[r] = row_of(i + r);
        __m256d acc[8];
        for (auto& v : acc) v = _mm256_setzero_pd();
        for (std::ptrdiff_t t = 0; t < m4; t += 4) {
            const __m256d x = _mm256_loadu_pd(ak + t);
            for (int r = 0; r < 8; ++r)
                acc[r] = _mm256_add_pd(acc[r], _mm256_mul_pd(_mm256_loadu_pd(rows[r] + t), x));
        }
        for (int r = 0; r < 8; ++r) out[i + r] = gram_finish(acc[r], rows[r], ak, m4, M);
    }
    for (; i < count; ++i) {
        const double* row = row_of(i);
        __m256d acc = _mm256_setzero_pd();
        for (std::ptrdiff_t t = 0; t < m4; t += 4)
            acc = _mm256_add_pd(acc, _mm256_mul_pd(_mm256_loadu_pd(row + t), _mm256_loadu_pd(ak + t)));
        out[i] = gram_finish(acc, row, ak, m4, M);
    }
}

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

// y[j] = sum_r x[r] X[j, r] for X row-major n x m (rows contiguous, the atoms of
// At): every output accumulated exactly as gemv_t_rows accumulates it (from 0,
// one fused operation per r, r in order), so with X = At this gives the bits of
// gemv_t_rows over An.  Four outputs per register (4 x 4 blocks transposed in
// registers), four registers at a time.
__attribute__((target("avx2,fma"))) inline void transpose4(const double* r0, std::ptrdiff_t ld,
                                                          __m256d* v) {
    const __m256d a0 = _mm256_loadu_pd(r0), a1 = _mm256_loadu_pd(r0 + ld);
    const __m256d a2 = _mm256_loadu_pd(r0 + 2 * ld), a3 = _mm256_loadu_pd(r0 + 3 * ld);
    const __m256d t0 = _mm256_unpacklo_pd(a0, a1), t1 = _mm256_unpackhi_pd(a0, a1);
    const __m256d t2 = _mm256_unpacklo_pd(a2, a3), t3 = _mm256_unpackhi_pd(a2, a3);
    v[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
    v[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
    v[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
    v[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
}

template <int kG>
__attribute__((target("avx2,fma"))) inline void gemv_rows_block(std::ptrdiff_t m, const double* X,
                                                               const double* x, double* y) {
    __m256d acc[kG];
    for (auto& a : acc) a = _mm256_setzero_pd();
    const std::ptrdiff_t m4 = m - m % 4;
    for (std::ptrdiff_t r = 0; r < m4; r += 4) {
        const __m256d x0 = _mm256_broadcast_sd(x + r), x1 = _mm256_broadcast_sd(x + r + 1);
        const __m256d x2 = _mm256_broadcast_sd(x + r + 2), x3 = _mm256_broadcast_sd(x + r + 3);
        for (int g = 0; g < kG; ++g) {
            __m256d v[4];
            transpose4(X + 4 * g * m + r, m, v);
            acc[g] = _mm256_fmadd_pd(x0, v[0], acc[g]);
            acc[g] = _mm256_fmadd_pd(x1, v[1], acc[g]);
            acc[g] = _mm256_fmadd_pd(x2, v[2], acc[g]);
            acc[g] = _mm256_fmadd_pd(x3, v[3], acc[g]);
        }
    }
    for (std::ptrdiff_t r = m4; r < m; ++r) {
        const __m256d xr = _mm256_broadcast_sd(x + r);
        for (int g = 0; g < kG; ++g) {
            const double* c = X + 4 * g * m + r;
            acc[g] = _mm256_fmadd_pd(xr, _mm256_setr_pd(c[0], c[m], c[2 * m], c[3 * m]), acc[g]);
        }
    }
    for (int g = 0; g < kG; ++g) _mm256_storeu_pd(y + 4 * g, acc[g]);
}

__attribute__((target("avx2,fma"))) inline void gemv_rows(std::ptrdiff_t n, std::ptrdiff_t m,
                                                         const double* X, const double* x,
                                                         double* y) {
    std::ptrdiff_t j = 0;
    for (; j + 16 <= n; j += 16) gemv_rows_block<4>(m, X + j * m, x, y + j);
    for (; j + 4 <= n; j += 4) gemv_rows_block<1>(m, X + j * m, x, y + j);
    for (; j < n; ++j) {
        double acc = 0.0;
        for (std::ptrdiff_t r = 0; r < m; ++r) acc = std::fma(x[r], X[j * m + r], acc);
        y[j] = acc;
    }
}

// First index j < n with s[j] == b (0 when there is none): four entries per compare.
__attribute__((target("avx2,fma"))) inline std::ptrdiff_t first_equal(const double* s, std::ptrdiff_t n,
                                                                     double b) {
    const __m256d vb = _mm256_set1_pd(b);
    std::ptrdiff_t j = 0;
    for (; j + 4 <= n; j += 4) {
        const int mask = _mm256_movemask_pd(_mm256_cmp_pd(_mm256_loadu_pd(s + j), vb, _CMP_EQ_OQ));
        if (mask != 0) return j + __builtin_ctz(static_cast<unsigned>(mask));
    }
    for (; j < n; ++j)
        if (s[j] == b) return j;
    return 0;
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
    return first_equal(s, n, best);
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

// acc[v] = g[j + 4v .. +4) - sum_c w[c] X[c][j + 4v ..] for v < kV: per output
// one fused multiply-add per column, the columns in order (the form of
// linalg::scaled_residual_gemv with fused operations), two columns per iteration.
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
//     q = s * (g - X w)          (residual_block, then the product by s)
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

// One block of a SOMP step (L >= 2 channels), kV vectors from j: acc = g - X w
// (residual_block), q = s * acc (stored), then channel by channel, in order,
// a_c = a_c - z[c] q (stored, one fused operation as in update_scores) and the
// score sum_c a_c^2 (channel 0 a product, the others one fused multiply-add
// each, as in update_scores), stored and taken into the running maxima (vectors
// alternate between m0 and m1).  q and the scores stay in registers across the
// channels.
template <int kV>
__attribute__((target("avx2,fma"))) inline void somp_block(std::ptrdiff_t ncols, const double* g,
                                                           const double* X, std::ptrdiff_t ldx,
                                                           const double* w, double s, const double* z,
                                                           std::ptrdiff_t L, double* q, double* a,
                                                           std::ptrdiff_t lda, double* score,
                                                           std::ptrdiff_t j, __m256d& m0, __m256d& m1) {
    __m256d qv[kV], sc[kV];
    residual_block<kV>(ncols, g, X, ldx, w, j, qv);
    const __m256d vs = _mm256_set1_pd(s);
    for (int v = 0; v < kV; ++v) {
        qv[v] = _mm256_mul_pd(qv[v], vs);
        _mm256_storeu_pd(q + j + 4 * v, qv[v]);
    }
    {
        const __m256d vz = _mm256_broadcast_sd(z);
        double* ac = a + j;
        for (int v = 0; v < kV; ++v) {
            const __m256d av = _mm256_fnmadd_pd(vz, qv[v], _mm256_loadu_pd(ac + 4 * v));
            _mm256_storeu_pd(ac + 4 * v, av);
            sc[v] = _mm256_mul_pd(av, av);
        }
    }
    for (std::ptrdiff_t c = 1; c < L; ++c) {
        const __m256d vz = _mm256_broadcast_sd(z + c);
        double* ac = a + c * lda + j;
        for (int v = 0; v < kV; ++v) {
            const __m256d av = _mm256_fnmadd_pd(vz, qv[v], _mm256_loadu_pd(ac + 4 * v));
            _mm256_storeu_pd(ac + 4 * v, av);
            sc[v] = _mm256_fmadd_pd(av, av, sc[v]);
        }
    }
    for (int v = 0; v < kV; ++v) {
        _mm256_storeu_pd(score + j + 4 * v, sc[v]);
        __m256d& m = (v & 1) ? m1 : m0;
        m = _mm256_max_pd(m, sc[v]);
    }
}

// One SOMP step (L >= 2 channels, channel c's correlations at a + c * lda) in a
// single pass over the N atoms:
//     q = s * (g - X w)                     (residual_block, then the product by s)
//     a_c = a_c - z[c] q,  score = sum_c a_c^2   (exactly as update_scores)
// and the first index of the largest score (exactly as argmax_first over the
// stored scores), returned with that maximum in *best.  q, a and the scores are
// stored.  Outputs go 24 at a time (6 registers for q and 6 for the scores;
// N = 144 splits into six such blocks), then 16, then 4.
__attribute__((target("avx2,fma"))) inline std::ptrdiff_t somp_step(
    std::ptrdiff_t n, std::ptrdiff_t ncols, const double* g, const double* X, std::ptrdiff_t ldx,
    const double* w, double s, double* q, const double* z, std::ptrdiff_t L, double* a,
    std::ptrdiff_t lda, double* score, double* best) {
    __m256d m0 = _mm256_setzero_pd(), m1 = m0;
    std::ptrdiff_t j = 0;
    for (; j + 24 <= n; j += 24) somp_block<6>(ncols, g, X, ldx, w, s, z, L, q, a, lda, score, j, m0, m1);
    for (; j + 16 <= n; j += 16) somp_block<4>(ncols, g, X, ldx, w, s, z, L, q, a, lda, score, j, m0, m1);
    for (; j + 4 <= n; j += 4) somp_block<1>(ncols, g, X, ldx, w, s, z, L, q, a, lda, score, j, m0, m1);
    const std::ptrdiff_t vec_end = j;
    for (; j < n; ++j) {
        double r = g[j];
        for (std::ptrdiff_t c = 0; c < ncols; ++c) r = std::fma(-w[c], X[c * ldx + j], r);
        const double qj = r * s;
        q[j] = qj;
        double sj = 0.0;
        for (std::ptrdiff_t c = 0; c < L; ++c) {
            const double v = std::fma(-z[c], qj, a[c * lda + j]);
            a[c * lda + j] = v;
            sj = c == 0 ? v * v : std::fma(v, v, sj);
        }
        score[j] = sj;
    }
    // The largest score: the lanes' maxima, then the tail; then its first index.
    alignas(32) double lanes[4];
    _mm256_store_pd(lanes, _mm256_max_pd(m0, m1));
    double b = vec_end > 0 ? std::max(std::max(lanes[0], lanes[1]), std::max(lanes[2], lanes[3])) : score[0];
    for (std::ptrdiff_t t = vec_end; t < n; ++t) b = score[t] > b ? score[t] : b;
    *best = b;
    return first_equal(score, n, b);
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

}  // namespace cscore::greedy
#endif
