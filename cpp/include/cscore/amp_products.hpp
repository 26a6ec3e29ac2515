// Products of one fixed matrix W (m x k) with many columns, for the batched
// message-passing decoders (amp.hpp): C_c = W x_c for columns c given by pointers.
//
// Determinism.  Every output entry is one chain, whatever the other columns of
// the call, their number, the thread or the panel layout:
//     acc = 0;  acc = acc + W[j, kk] * x[kk]   for kk = 0, 1, ..., k-1
// with one fused multiply-add per step on the avx2 and avx512 paths (so those two
// give the same bits) and a rounded multiply then a rounded add on the generic
// path.  A column decoded alone or in a batch of 256 therefore gets the same
// product bit for bit; this is why the decoders do not call the BLAS here (a BLAS
// gemm may sum a column in another order than its gemv, and its blocking may
// depend on the other columns).
//
// Layout.  W is packed once per call into panels of `h` rows (24 or 16 on avx512,
// whichever pads fewer rows, 12 on avx2, 4 generic): panel p holds W[p h + r, kk] at [kk h + r], rows past m are
// zero.  The micro-kernel keeps an h x nb block of C in registers (nb <= 8 columns
// on avx512, 4 on avx2) and streams the panel once per block: the usual GEMM
// register blocking, with the vector along the rows of W and each column's entry
// x[kk] broadcast.
//
// Memory.  AMP packs A and A^T (two copies of M x N doubles, rows padded to the
// panel height) once per call, VAMP U^T, V^T and V; the runs themselves need
// O(M + N) each.  (The A^T panels could be read from a row-major A in place,
// packing only the last partial panel: not done.)
#pragma once

#include <algorithm>
#include <cstddef>
#include <new>
#include <vector>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define CSCORE_AMP_SIMD 1
#define CSCORE_AMP_AVX2_FN __attribute__((target("avx2,fma")))
#define CSCORE_AMP_AVX512_FN __attribute__((target("avx512f,avx2,fma")))
// The element-wise steps of AMP and VAMP (amp_task.hpp, vamp.hpp): compiled per
// instruction set without contraction, so that each rounds every operation it
// writes and gives the bits of the baseline build.
#define CSCORE_AMP_ELEM2 __attribute__((target("avx2"), optimize("fp-contract=off")))
#define CSCORE_AMP_ELEM512 __attribute__((target("avx512f,avx2"), optimize("fp-contract=off")))
#endif

#include "cscore/cpu.hpp"

namespace cscore::amp {

using pidx = std::ptrdiff_t;

// W packed in panels for the active instruction set (see above).
class PackedMatrix {
  public:
    PackedMatrix() = default;
    PackedMatrix(const PackedMatrix&) = delete;
    PackedMatrix& operator=(const PackedMatrix&) = delete;
    ~PackedMatrix() { release(); }

    // W[j, kk] = w[j * rs + kk * cs] for j < m, kk < k.
    void pack(const double* w, pidx m, pidx k, pidx rs, pidx cs, cpu::Isa isa) {
        isa_ = isa;
        h_ = isa == cpu::Isa::avx512 ? avx512_height(m) : isa == cpu::Isa::avx2 ? 12 : 4;
        m_ = m;
        k_ = k;
        panels_ = (m + h_ - 1) / h_;
        const pidx n = std::max<pidx>(panels_ * h_ * k, 1);
        release();
        p_ = static_cast<double*>(::operator new(static_cast<std::size_t>(n) * sizeof(double),
                                                 std::align_val_t(64)));
        for (pidx p = 0; p < panels_; ++p) {
            double* panel = p_ + p * h_ * k;
            for (pidx kk = 0; kk < k; ++kk)
                for (pidx r = 0; r < h_; ++r) {
                    const pidx j = p * h_ + r;
                    panel[kk * h_ + r] = j < m ? w[j * rs + kk * cs] : 0.0;
                }
        }
    }
    // AVX-512: 24 rows a panel (three registers), or 16 (two) where that pads
    // fewer rows (m = 250: 256 rather than 264); the chains do not depend on it.
    static pidx avx512_height(pidx m) {
        return (m + 15) / 16 * 16 < (m + 23) / 24 * 24 ? 16 : 24;
    }
    pidx rows() const { return m_; }
    pidx cols() const { return k_; }
    pidx height() const { return h_; }
    pidx panels() const { return panels_; }
    cpu::Isa isa() const { return isa_; }
    const double* panel(pidx p) const { return p_ + p * h_ * k_; }

  private:
    void release() {
        if (p_ != nullptr) ::operator delete(p_, std::align_val_t(64));
        p_ = nullptr;
    }
    double* p_ = nullptr;
    pidx m_ = 0, k_ = 0, h_ = 4, panels_ = 0;
    cpu::Isa isa_ = cpu::Isa::generic;
};

namespace detail {

// Generic: h = 4 rows, up to 4 columns; multiply, round, add, round.
template <int NB>
inline void block_generic(const double* panel, pidx k, const double* const* X, pidx x0,
                          double* out, bool more) {
    double acc[4][NB] = {};
    if (more)
        for (int c = 0; c < NB; ++c)
            for (int r = 0; r < 4; ++r) acc[r][c] = out[c * 4 + r];
    for (pidx kk = 0; kk < k; ++kk) {
        const double* a = panel + kk * 4;
        for (int c = 0; c < NB; ++c) {
            const double x = X[c][x0 + kk];
            for (int r = 0; r < 4; ++r) {
                const double prod = a[r] * x;
                acc[r][c] = acc[r][c] + prod;
            }
        }
    }
    for (int c = 0; c < NB; ++c)
        for (int r = 0; r < 4; ++r) out[c * 4 + r] = acc[r][c];
}

#ifdef CSCORE_AMP_SIMD
template <int NB>
CSCORE_AMP_AVX2_FN inline void block_avx2(const double* panel, pidx k, const double* const* X,
                                          pidx x0, double* out, bool more) {
    __m256d acc[3][NB];
    for (int v = 0; v < 3; ++v)
        for (int c = 0; c < NB; ++c)
            acc[v][c] = more ? _mm256_loadu_pd(out + c * 12 + 4 * v) : _mm256_setzero_pd();
    const double* x[NB];
    for (int c = 0; c < NB; ++c) x[c] = X[c] + x0;
    for (pidx kk = 0; kk < k; ++kk) {
        const double* a = panel + kk * 12;
        const __m256d a0 = _mm256_loadu_pd(a), a1 = _mm256_loadu_pd(a + 4),
                      a2 = _mm256_loadu_pd(a + 8);
        for (int c = 0; c < NB; ++c) {
            const __m256d b = _mm256_set1_pd(x[c][kk]);
            acc[0][c] = _mm256_fmadd_pd(a0, b, acc[0][c]);
            acc[1][c] = _mm256_fmadd_pd(a1, b, acc[1][c]);
            acc[2][c] = _mm256_fmadd_pd(a2, b, acc[2][c]);
        }
    }
    for (int c = 0; c < NB; ++c)
        for (int v = 0; v < 3; ++v) _mm256_storeu_pd(out + c * 12 + 4 * v, acc[v][c]);
}

// R registers (8 R rows) a panel, NB columns.
template <int R, int NB>
CSCORE_AMP_AVX512_FN inline void block_avx512(const double* panel, pidx k,
                                              const double* const* X, pidx x0, double* out,
                                              bool more) {
    constexpr int h = 8 * R;
    __m512d acc[R][NB];
    for (int v = 0; v < R; ++v)
        for (int c = 0; c < NB; ++c)
            acc[v][c] = more ? _mm512_loadu_pd(out + c * h + 8 * v) : _mm512_setzero_pd();
    const double* x[NB];
    for (int c = 0; c < NB; ++c) x[c] = X[c] + x0;
    for (pidx kk = 0; kk < k; ++kk) {
        const double* a = panel + kk * h;
        __m512d av[R];
        for (int v = 0; v < R; ++v) av[v] = _mm512_loadu_pd(a + 8 * v);
        for (int c = 0; c < NB; ++c) {
            const __m512d b = _mm512_set1_pd(x[c][kk]);
            for (int v = 0; v < R; ++v) acc[v][c] = _mm512_fmadd_pd(av[v], b, acc[v][c]);
        }
    }
    for (int c = 0; c < NB; ++c)
        for (int v = 0; v < R; ++v) _mm512_storeu_pd(out + c * h + 8 * v, acc[v][c]);
}

// Two panels (2h rows) times NB <= 2 columns: enough independent accumulators to
// hide the FMA latency when few columns are left.  Same chain per entry.
template <int NB>
CSCORE_AMP_AVX2_FN inline void block2_avx2(const double* p0, const double* p1, pidx k,
                                           const double* const* X, pidx x0, double* out,
                                           bool more) {
    __m256d acc[6][NB];
    for (int v = 0; v < 6; ++v)
        for (int c = 0; c < NB; ++c)
            acc[v][c] = more ? _mm256_loadu_pd(out + c * 24 + 4 * v) : _mm256_setzero_pd();
    for (pidx kk = 0; kk < k; ++kk) {
        const double* a = p0 + kk * 12;
        const double* b = p1 + kk * 12;
        const __m256d a0 = _mm256_loadu_pd(a), a1 = _mm256_loadu_pd(a + 4),
                      a2 = _mm256_loadu_pd(a + 8), a3 = _mm256_loadu_pd(b),
                      a4 = _mm256_loadu_pd(b + 4), a5 = _mm256_loadu_pd(b + 8);
        for (int c = 0; c < NB; ++c) {
            const __m256d x = _mm256_set1_pd(X[c][x0 + kk]);
            acc[0][c] = _mm256_fmadd_pd(a0, x, acc[0][c]);
            acc[1][c] = _mm256_fmadd_pd(a1, x, acc[1][c]);
            acc[2][c] = _mm256_fmadd_pd(a2, x, acc[2][c]);
            acc[3][c] = _mm256_fmadd_pd(a3, x, acc[3][c]);
            acc[4][c] = _mm256_fmadd_pd(a4, x, acc[4][c]);
            acc[5][c] = _mm256_fmadd_pd(a5, x, acc[5][c]);
        }
    }
    for (int c = 0; c < NB; ++c)
        for (int v = 0; v < 6; ++v) _mm256_storeu_pd(out + c * 24 + 4 * v, acc[v][c]);
}

template <int R, int NB>
CSCORE_AMP_AVX512_FN inline void block2_avx512(const double* p0, const double* p1, pidx k,
                                               const double* const* X, pidx x0, double* out,
                                               bool more) {
    constexpr int h = 8 * R;
    __m512d acc[2 * R][NB];
    for (int v = 0; v < 2 * R; ++v)
        for (int c = 0; c < NB; ++c)
            acc[v][c] = more ? _mm512_loadu_pd(out + c * 2 * h + 8 * v) : _mm512_setzero_pd();
    for (pidx kk = 0; kk < k; ++kk) {
        const double* a = p0 + kk * h;
        const double* b = p1 + kk * h;
        __m512d av[2 * R];
        for (int v = 0; v < R; ++v) {
            av[v] = _mm512_loadu_pd(a + 8 * v);
            av[R + v] = _mm512_loadu_pd(b + 8 * v);
        }
        for (int c = 0; c < NB; ++c) {
            const __m512d x = _mm512_set1_pd(X[c][x0 + kk]);
            for (int v = 0; v < 2 * R; ++v) acc[v][c] = _mm512_fmadd_pd(av[v], x, acc[v][c]);
        }
    }
    for (int c = 0; c < NB; ++c)
        for (int v = 0; v < 2 * R; ++v) _mm512_storeu_pd(out + c * 2 * h + 8 * v, acc[v][c]);
}

// block_avx512 with the panel height as an argument (16 or 24 rows).
template <int R>
inline void block_avx512_r(const double* panel, pidx k, int nb, const double* const* X, pidx x0,
                           double* out, bool more) {
    switch (nb) {
        case 1: return block_avx512<R, 1>(panel, k, X, x0, out, more);
        case 2: return block_avx512<R, 2>(panel, k, X, x0, out, more);
        case 3: return block_avx512<R, 3>(panel, k, X, x0, out, more);
        case 4: return block_avx512<R, 4>(panel, k, X, x0, out, more);
        case 5: return block_avx512<R, 5>(panel, k, X, x0, out, more);
        case 6: return block_avx512<R, 6>(panel, k, X, x0, out, more);
        case 7: return block_avx512<R, 7>(panel, k, X, x0, out, more);
        default: return block_avx512<R, 8>(panel, k, X, x0, out, more);
    }
}
#endif

// One panel of h rows times nb (<= max_cols(isa)) columns into out (h x nb,
// column-major).
inline void block(cpu::Isa isa, pidx h, const double* panel, pidx k, int nb,
                  const double* const* X, pidx x0, double* out, bool more) {
#ifdef CSCORE_AMP_SIMD
    if (isa == cpu::Isa::avx512) {
        if (h == 16) return block_avx512_r<2>(panel, k, nb, X, x0, out, more);
        return block_avx512_r<3>(panel, k, nb, X, x0, out, more);
    }
    if (isa == cpu::Isa::avx2) {
        switch (nb) {
            case 1: return block_avx2<1>(panel, k, X, x0, out, more);
            case 2: return block_avx2<2>(panel, k, X, x0, out, more);
            case 3: return block_avx2<3>(panel, k, X, x0, out, more);
            default: return block_avx2<4>(panel, k, X, x0, out, more);
        }
    }
#endif
    (void)h;
    switch (nb) {
        case 1: return block_generic<1>(panel, k, X, x0, out, more);
        case 2: return block_generic<2>(panel, k, X, x0, out, more);
        case 3: return block_generic<3>(panel, k, X, x0, out, more);
        default: return block_generic<4>(panel, k, X, x0, out, more);
    }
}

inline int max_cols(cpu::Isa isa) { return isa == cpu::Isa::avx512 ? 8 : 4; }

// Panels p0 and p1 (consecutive) times nb <= 2 columns into out (2h x nb); false
// when this instruction set has no such kernel.
inline bool block2(cpu::Isa isa, pidx h, const double* p0, const double* p1, pidx k, int nb,
                   const double* const* X, pidx x0, double* out, bool more) {
#ifdef CSCORE_AMP_SIMD
    if (isa == cpu::Isa::avx512) {
        if (h == 16) {
            if (nb == 1) block2_avx512<2, 1>(p0, p1, k, X, x0, out, more);
            else block2_avx512<2, 2>(p0, p1, k, X, x0, out, more);
        } else {
            if (nb == 1) block2_avx512<3, 1>(p0, p1, k, X, x0, out, more);
            else block2_avx512<3, 2>(p0, p1, k, X, x0, out, more);
        }
        return true;
    }
    if (isa == cpu::Isa::avx2) {
        if (nb == 1) block2_avx2<1>(p0, p1, k, X, x0, out, more);
        else block2_avx2<2>(p0, p1, k, X, x0, out, more);
        return true;
    }
#endif
    (void)isa, (void)h, (void)p0, (void)p1, (void)k, (void)nb, (void)X, (void)x0, (void)out,
        (void)more;
    return false;
}

}  // namespace detail

//: Steps of the sum done per pass over a panel: the panel's part (kKc h doubles)
//: stays in the L1 cache while every column block uses it.  The accumulators are
//: stored and reloaded between passes, which leaves each entry's chain unchanged.
constexpr pidx kKc = 128;

// C_c[0:m] = W x_c for c < n (x_c of length k).  `tmp` is scratch, resized here.
inline void multiply(const PackedMatrix& W, pidx n, const double* const* X, double* const* C,
                     std::vector<double>& tmp) {
    const pidx h = W.height(), m = W.rows(), k = W.cols(), np = W.panels();
    const int cmax = detail::max_cols(W.isa());
    // per column block: an accumulator area of 2h x cmax
    const pidx nblk = (n + cmax - 1) / cmax, area = 2 * h * cmax;
    tmp.resize(static_cast<std::size_t>(std::max<pidx>(nblk * area, 1)));
    for (pidx p = 0; p < np; p += 2) {
        const bool pair = p + 1 < np;
        for (pidx k0 = 0; k0 < k; k0 += kKc) {
            const pidx kc = std::min(kKc, k - k0);
            const bool more = k0 > 0;
            for (pidx b = 0; b < nblk; ++b) {
                const pidx c0 = b * cmax;
                const int nb = static_cast<int>(std::min<pidx>(cmax, n - c0));
                double* acc = tmp.data() + b * area;
                if (pair && nb <= 2 &&
                    detail::block2(W.isa(), h, W.panel(p) + k0 * h, W.panel(p + 1) + k0 * h, kc,
                                   nb, X + c0, k0, acc, more))
                    continue;
                detail::block(W.isa(), h, W.panel(p) + k0 * h, kc, nb, X + c0, k0, acc, more);
                if (pair)
                    detail::block(W.isa(), h, W.panel(p + 1) + k0 * h, kc, nb, X + c0, k0,
                                  acc + h * cmax, more);
            }
        }
        for (pidx b = 0; b < nblk; ++b) {
            const pidx c0 = b * cmax;
            const int nb = static_cast<int>(std::min<pidx>(cmax, n - c0));
            const double* acc = tmp.data() + b * area;
            const bool two = pair && nb <= 2 && W.isa() != cpu::Isa::generic;
            // (plain loops: these copies are short, a memmove call per copy costs more)
            for (int c = 0; c < nb; ++c) {
                double* dst = C[c0 + c] + p * h;
                if (two) {  // block2 layout: column c at c * 2h, both panels
                    const pidx rows = std::min(2 * h, m - p * h);
                    const double* src = acc + c * 2 * h;
                    for (pidx r = 0; r < rows; ++r) dst[r] = src[r];
                    continue;
                }
                const pidx r0 = std::min(h, m - p * h);
                const double* src = acc + c * h;
                for (pidx r = 0; r < r0; ++r) dst[r] = src[r];
                if (pair) {
                    const pidx r1 = std::min(h, m - (p + 1) * h);
                    const double* src1 = acc + h * cmax + c * h;
                    for (pidx r = 0; r < r1; ++r) dst[h + r] = src1[r];
                }
            }
        }
    }
}

}  // namespace cscore::amp
