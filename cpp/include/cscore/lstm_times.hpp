// LSTM-CS: the batch products C = X W^T (gates and logits) for a chunk of
// problems stored problem-fastest, by cscore's own kernels: generic (a rounded
// multiply and add per step, 4 lanes from the baseline build), AVX2 FMA (register
// tiles, packed panels for batches) and AVX-512 FMA.  Every entry is one chain in
// a fixed order whatever the batch (see times_weights below).
#pragma once

#include <cstddef>
#include <vector>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#endif

#include "cscore/cpu.hpp"
#include "cscore/lstm_base.hpp"
#include "cscore/simd_math.hpp"

namespace cscore::lstm {

// C (n x m) = X (n x k) * Wt (k x m) + beta C, X and C problem-fastest with leading
// dimension ldx = ldc = chunk, Wt column-major with leading dimension ldw (that is,
// a row-major (m, ldw) weight array, using its first k columns).
//
// Batch independence: every entry C[b, j] is computed by the same sequence of
// operations whatever n is and wherever problem b sits in the chunk: acc = 0
// (beta = 0) or acc = C[b, j] (beta = 1, the only other value allowed),
// then acc = acc + W[j, kk] * X[b, kk] for kk = 0..k-1 in order (one fused
// multiply-add per step when cpu::active_isa() is avx2 or above, chosen once per
// process; a multiply and an add otherwise).  The vector code runs problems in
// SIMD lanes, which are independent, so a problem decodes bit-identically alone
// or in any batch.  (A
// BLAS call does not promise that: gemv and gemm, or gemm edge kernels, sum in
// different orders.)  Lanes past n read and write padding rows: the buffers are
// padded to whole kPadRows rows (see LstmWork).

namespace detail {

template <class T>
void times_weights_generic(int n, int m, int k, const T* X, int ldx, const T* W, int ldw,
                           T* C, bool accumulate = false) {
    for (int j = 0; j < m; ++j) {
        T* c = C + static_cast<idx>(j) * ldx;
        const T* w = W + static_cast<idx>(j) * ldw;
        if (!accumulate)
            for (int b = 0; b < n; ++b) c[b] = T(0);
        for (int kk = 0; kk < k; ++kk) {
            const T wk = w[kk];
            const T* x = X + static_cast<idx>(kk) * ldx;
            for (int b = 0; b < n; ++b) c[b] = c[b] + wk * x[b];
        }
    }
}

#ifdef CSCORE_SIMD
// The generic float path with its accumulators in registers: 4 weight rows times
// 4 problems per tile, each lane computing exactly times_weights_generic's
// c = c + w * x (a rounded multiply, then a rounded add) for kk = 0..k-1 in
// order, so the bits are the same.  Lanes past n (within the padded buffers)
// compute on padding; rows past the last multiple of 4 use the plain loop.
inline void times_weights_generic_f32(int n, int m, int k, const float* X, int ldx,
                                      const float* W, int ldw, float* C, bool accumulate) {
    const int nb = (n + 3) / 4 * 4;
    int j = 0;
    for (; j + 4 <= m; j += 4) {
        const float* w0 = W + static_cast<idx>(j) * ldw;
        const float* w1 = w0 + ldw;
        const float* w2 = w1 + ldw;
        const float* w3 = w2 + ldw;
        float* c0 = C + static_cast<idx>(j) * ldx;
        for (int b = 0; b < nb; b += 4) {
            simd::vf4 a0{}, a1{}, a2{}, a3{};
            if (accumulate) {
                simd::load(c0 + b, a0);
                simd::load(c0 + ldx + b, a1);
                simd::load(c0 + 2 * static_cast<idx>(ldx) + b, a2);
                simd::load(c0 + 3 * static_cast<idx>(ldx) + b, a3);
            }
            for (int kk = 0; kk < k; ++kk) {
                simd::vf4 x;
                simd::load(X + static_cast<idx>(kk) * ldx + b, x);
                a0 = a0 + w0[kk] * x;
                a1 = a1 + w1[kk] * x;
                a2 = a2 + w2[kk] * x;
                a3 = a3 + w3[kk] * x;
            }
            simd::store(c0 + b, a0);
            simd::store(c0 + ldx + b, a1);
            simd::store(c0 + 2 * static_cast<idx>(ldx) + b, a2);
            simd::store(c0 + 3 * static_cast<idx>(ldx) + b, a3);
        }
    }
    if (j < m)
        times_weights_generic<float>(n, m - j, k, X, ldx, W + static_cast<idx>(j) * ldw, ldw,
                                     C + static_cast<idx>(j) * ldx, accumulate);
}
#endif

#if defined(__GNUC__) && defined(__x86_64__)

// J weight rows times V vectors of 8 problems (8 * V lanes starting at b0).
template <int J, int V>
CSCORE_FMA_FN inline void fma_block8(int k, const float* X, int ldx, const float* W, int ldw,
                                     float* C, int b0, int j0, bool accumulate) {
    __m256 acc[J][V];
    for (int r = 0; r < J; ++r)
        for (int v = 0; v < V; ++v)
            acc[r][v] = accumulate
                            ? _mm256_loadu_ps(C + static_cast<idx>(j0 + r) * ldx + b0 + 8 * v)
                            : _mm256_setzero_ps();
    const float* w = W + static_cast<idx>(j0) * ldw;
    for (int kk = 0; kk < k; ++kk) {
        const float* x = X + static_cast<idx>(kk) * ldx + b0;
        __m256 xv[V];
        for (int v = 0; v < V; ++v) xv[v] = _mm256_loadu_ps(x + 8 * v);
        for (int r = 0; r < J; ++r) {
            const __m256 wr = _mm256_broadcast_ss(w + static_cast<idx>(r) * ldw + kk);
            for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(wr, xv[v], acc[r][v]);
        }
    }
    for (int r = 0; r < J; ++r)
        for (int v = 0; v < V; ++v)
            _mm256_storeu_ps(C + static_cast<idx>(j0 + r) * ldx + b0 + 8 * v, acc[r][v]);
}

// The same on 4 lanes (few problems): identical per-lane arithmetic.
template <int J>
CSCORE_FMA_FN inline void fma_block4(int k, const float* X, int ldx, const float* W, int ldw,
                                     float* C, int b0, int j0, bool accumulate) {
    __m128 acc[J];
    for (int r = 0; r < J; ++r)
        acc[r] = accumulate ? _mm_loadu_ps(C + static_cast<idx>(j0 + r) * ldx + b0)
                            : _mm_setzero_ps();
    const float* w = W + static_cast<idx>(j0) * ldw;
    for (int kk = 0; kk < k; ++kk) {
        const __m128 xv = _mm_loadu_ps(X + static_cast<idx>(kk) * ldx + b0);
        for (int r = 0; r < J; ++r)
            acc[r] = _mm_fmadd_ps(_mm_broadcast_ss(w + static_cast<idx>(r) * ldw + kk), xv, acc[r]);
    }
    for (int r = 0; r < J; ++r) _mm_storeu_ps(C + static_cast<idx>(j0 + r) * ldx + b0, acc[r]);
}

template <int J>
CSCORE_FMA_FN inline void fma_rows(int n, int k, const float* X, int ldx, const float* W,
                                   int ldw, float* C, int j0, bool acc, int b = 0) {
    for (; n - b > 8; b += 16) fma_block8<J, 2>(k, X, ldx, W, ldw, C, b, j0, acc);
    for (; n - b > 4; b += 8) fma_block8<J, 1>(k, X, ldx, W, ldw, C, b, j0, acc);
    for (; n - b > 0; b += 4) fma_block4<J>(k, X, ldx, W, ldw, C, b, j0, acc);
}

// The register-blocked AVX2 kernel for batches (n > 8).  X is first copied into
// panels of 16 problems, each stored kk-major (16 consecutive floats per kk), so
// the micro-kernel streams one contiguous panel instead of k cache lines ldx
// apart; a 6 x 16 tile (6 weight rows, 16 problems) then keeps 12 accumulators in
// registers over the whole inner dimension.  Per lane the arithmetic is exactly
// fma_block8's: acc = 0 (or C), then acc = fma(W[j, kk], X[b, kk], acc) for
// kk = 0..k-1 in order, so the results are the same bits as the unpacked path and
// do not depend on the batch.  Lanes past n (up to the next multiple of 16, still
// inside the kPadRows-padded buffers) compute on padding and are never read.
//
// The 6-row tile names its 12 accumulators one by one: written as an array, GCC
// keeps them on the stack and stores all 12 every step (store-bound, about half
// the FMA rate).
CSCORE_FMA_FN inline void fma_tile6x16(int k, const float* P, const float* W, int ldw,
                                       float* C, int ldc, int j0, bool accumulate) {
    float* c0 = C + static_cast<idx>(j0) * ldc;
#define CSCORE_ACC_INIT(r, v) \
    __m256 a##r##v = accumulate ? _mm256_loadu_ps(c0 + (r) * static_cast<idx>(ldc) + 8 * (v)) \
                                : _mm256_setzero_ps();
    CSCORE_ACC_INIT(0, 0) CSCORE_ACC_INIT(0, 1) CSCORE_ACC_INIT(1, 0) CSCORE_ACC_INIT(1, 1)
    CSCORE_ACC_INIT(2, 0) CSCORE_ACC_INIT(2, 1) CSCORE_ACC_INIT(3, 0) CSCORE_ACC_INIT(3, 1)
    CSCORE_ACC_INIT(4, 0) CSCORE_ACC_INIT(4, 1) CSCORE_ACC_INIT(5, 0) CSCORE_ACC_INIT(5, 1)
#undef CSCORE_ACC_INIT
    const float* w0 = W + static_cast<idx>(j0) * ldw;
    const float* w1 = w0 + ldw;
    const float* w2 = w1 + ldw;
    const float* w3 = w2 + ldw;
    const float* w4 = w3 + ldw;
    const float* w5 = w4 + ldw;
    for (int kk = 0; kk < k; ++kk) {
        const __m256 x0 = _mm256_loadu_ps(P + 16 * static_cast<idx>(kk));
        const __m256 x1 = _mm256_loadu_ps(P + 16 * static_cast<idx>(kk) + 8);
#define CSCORE_ACC_STEP(r)                               \
    {                                                    \
        const __m256 wr = _mm256_broadcast_ss(w##r + kk); \
        a##r##0 = _mm256_fmadd_ps(wr, x0, a##r##0);      \
        a##r##1 = _mm256_fmadd_ps(wr, x1, a##r##1);      \
    }
        CSCORE_ACC_STEP(0) CSCORE_ACC_STEP(1) CSCORE_ACC_STEP(2)
        CSCORE_ACC_STEP(3) CSCORE_ACC_STEP(4) CSCORE_ACC_STEP(5)
#undef CSCORE_ACC_STEP
    }
#define CSCORE_ACC_STORE(r, v) \
    _mm256_storeu_ps(c0 + (r) * static_cast<idx>(ldc) + 8 * (v), a##r##v);
    CSCORE_ACC_STORE(0, 0) CSCORE_ACC_STORE(0, 1) CSCORE_ACC_STORE(1, 0) CSCORE_ACC_STORE(1, 1)
    CSCORE_ACC_STORE(2, 0) CSCORE_ACC_STORE(2, 1) CSCORE_ACC_STORE(3, 0) CSCORE_ACC_STORE(3, 1)
    CSCORE_ACC_STORE(4, 0) CSCORE_ACC_STORE(4, 1) CSCORE_ACC_STORE(5, 0) CSCORE_ACC_STORE(5, 1)
#undef CSCORE_ACC_STORE
}

template <int J>
CSCORE_FMA_FN inline void fma_panel16(int k, const float* P, const float* W, int ldw,
                                      float* C, int ldc, int j0, bool accumulate) {
    __m256 acc[J][2];
    for (int r = 0; r < J; ++r)
        for (int v = 0; v < 2; ++v)
            acc[r][v] = accumulate
                            ? _mm256_loadu_ps(C + static_cast<idx>(j0 + r) * ldc + 8 * v)
                            : _mm256_setzero_ps();
    const float* w = W + static_cast<idx>(j0) * ldw;
    for (int kk = 0; kk < k; ++kk) {
        const __m256 x0 = _mm256_loadu_ps(P + 16 * static_cast<idx>(kk));
        const __m256 x1 = _mm256_loadu_ps(P + 16 * static_cast<idx>(kk) + 8);
        for (int r = 0; r < J; ++r) {
            const __m256 wr = _mm256_broadcast_ss(w + static_cast<idx>(r) * ldw + kk);
            acc[r][0] = _mm256_fmadd_ps(wr, x0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(wr, x1, acc[r][1]);
        }
    }
    for (int r = 0; r < J; ++r)
        for (int v = 0; v < 2; ++v)
            _mm256_storeu_ps(C + static_cast<idx>(j0 + r) * ldc + 8 * v, acc[r][v]);
}

CSCORE_FMA_FN inline void times_weights_packed(int n, int m, int k, const float* X, int ldx,
                                               const float* W, int ldw, float* C,
                                               bool accumulate) {
    thread_local std::vector<float> panel;  // grows once per thread, no per-call allocation
    const int nb = (n + 15) / 16;
    const std::size_t need = static_cast<std::size_t>(nb) * 16 * static_cast<std::size_t>(k);
    if (panel.size() < need) panel.resize(need);
    for (int bb = 0; bb < nb; ++bb) {
        float* dst = panel.data() + static_cast<idx>(bb) * 16 * k;
        const float* src = X + 16 * bb;
        for (int kk = 0; kk < k; ++kk) {
            const float* s = src + static_cast<idx>(kk) * ldx;
            _mm256_storeu_ps(dst + 16 * static_cast<idx>(kk), _mm256_loadu_ps(s));
            _mm256_storeu_ps(dst + 16 * static_cast<idx>(kk) + 8, _mm256_loadu_ps(s + 8));
        }
    }
    int j = 0;
    for (; j + 6 <= m; j += 6)
        for (int bb = 0; bb < nb; ++bb)
            fma_tile6x16(k, panel.data() + static_cast<idx>(bb) * 16 * k, W, ldw, C + 16 * bb,
                           ldx, j, accumulate);
    for (; j < m; ++j)
        for (int bb = 0; bb < nb; ++bb)
            fma_panel16<1>(k, panel.data() + static_cast<idx>(bb) * 16 * k, W, ldw, C + 16 * bb,
                           ldx, j, accumulate);
}

// accumulate: C += X W^T (each lane starts from its own C entry), else C = X W^T.
CSCORE_FMA_FN inline void times_weights_fma(int n, int m, int k, const float* X, int ldx,
                                            const float* W, int ldw, float* C,
                                            bool accumulate) {
    int j = 0;
    if (n > 4) {
        for (; j + 6 <= m; j += 6) fma_rows<6>(n, k, X, ldx, W, ldw, C, j, accumulate);
    } else {
        for (; j + 8 <= m; j += 8) fma_rows<8>(n, k, X, ldx, W, ldw, C, j, accumulate);
    }
    for (; j < m; ++j) fma_rows<1>(n, k, X, ldx, W, ldw, C, j, accumulate);
}

// AVX-512 (when cpu::active_isa() is avx512): the same per-lane arithmetic (one
// single-precision FMA per step, in the same order) on 16 lanes, so results equal
// the AVX2 path's bit for bit.

template <int J, int V>
CSCORE_AVX512_FN inline void fma_block16(int k, const float* X, int ldx, const float* W,
                                         int ldw, float* C, int b0, int j0, bool accumulate) {
    __m512 acc[J][V];
    for (int r = 0; r < J; ++r)
        for (int v = 0; v < V; ++v)
            acc[r][v] = accumulate
                            ? _mm512_loadu_ps(C + static_cast<idx>(j0 + r) * ldx + b0 + 16 * v)
                            : _mm512_setzero_ps();
    const float* w = W + static_cast<idx>(j0) * ldw;
    for (int kk = 0; kk < k; ++kk) {
        const float* x = X + static_cast<idx>(kk) * ldx + b0;
        __m512 xv[V];
        for (int v = 0; v < V; ++v) xv[v] = _mm512_loadu_ps(x + 16 * v);
        for (int r = 0; r < J; ++r) {
            const __m512 wr = _mm512_set1_ps(w[static_cast<idx>(r) * ldw + kk]);
            for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(wr, xv[v], acc[r][v]);
        }
    }
    for (int r = 0; r < J; ++r)
        for (int v = 0; v < V; ++v)
            _mm512_storeu_ps(C + static_cast<idx>(j0 + r) * ldx + b0 + 16 * v, acc[r][v]);
}

template <int J>
CSCORE_AVX512_FN inline void fma512_rows(int n, int k, const float* X, int ldx,
                                         const float* W, int ldw, float* C, int j0,
                                         bool acc) {
    int b = 0;
    for (; n - b > 16; b += 32) fma_block16<J, 2>(k, X, ldx, W, ldw, C, b, j0, acc);
    for (; n - b > 8; b += 16) fma_block16<J, 1>(k, X, ldx, W, ldw, C, b, j0, acc);
    if (n - b > 0) fma_rows<J>(n, k, X, ldx, W, ldw, C, j0, acc, b);
}

CSCORE_AVX512_FN inline void times_weights_avx512(int n, int m, int k, const float* X,
                                                  int ldx, const float* W, int ldw, float* C,
                                                  bool accumulate) {
    int j = 0;
    for (; j + 8 <= m; j += 8) fma512_rows<8>(n, k, X, ldx, W, ldw, C, j, accumulate);
    for (; j < m; ++j) fma512_rows<1>(n, k, X, ldx, W, ldw, C, j, accumulate);
}
#endif

}  // namespace detail

template <class T>
void times_weights(int n, int m, int k, const T* X, int chunk, const T* Wt, int ldw, T* C,
                   T beta = T(0)) {
    detail::times_weights_generic<T>(n, m, k, X, chunk, Wt, ldw, C, beta != T(0));
}

template <>
inline void times_weights<float>(int n, int m, int k, const float* X, int chunk,
                                 const float* Wt, int ldw, float* C, float beta) {
    const bool acc = beta != 0.0f;
#ifdef CSCORE_LSTM_FMA
    const cpu::Isa isa = cpu::active_isa();
    if (n > 8 && isa >= cpu::Isa::avx512) {
        detail::times_weights_avx512(n, m, k, X, chunk, Wt, ldw, C, acc);
        return;
    }
    if (isa >= cpu::Isa::avx2 && n > 8 && padded_chunk(n) <= chunk) {
        detail::times_weights_packed(n, m, k, X, chunk, Wt, ldw, C, acc);
        return;
    }
    if (isa >= cpu::Isa::avx2) {
        detail::times_weights_fma(n, m, k, X, chunk, Wt, ldw, C, acc);
        return;
    }
#endif
#ifdef CSCORE_SIMD
    if (padded_chunk(n) <= chunk) {
        detail::times_weights_generic_f32(n, m, k, X, chunk, Wt, ldw, C, acc);
        return;
    }
#endif
    detail::times_weights_generic<float>(n, m, k, X, chunk, Wt, ldw, C, acc);
}

}  // namespace cscore::lstm
