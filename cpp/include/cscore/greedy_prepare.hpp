// Preparing a real dictionary for the greedy decoders (greedy_dictionary.hpp):
// the column norms and the normalized atoms, W adjacent columns of A at a time
// with one column per vector lane.
//
// Per column j the operations are those of the scalar loop this replaces, in
// the same order: amax = max_i |a_ij|; ss = sum_i (a_ij / amax)^2 accumulated
// in row order (product and sum rounded separately); norm = amax sqrt(ss); the
// atom a_ij / amax / sqrt(ss).  A lane holds one column, so vectors change no
// column's order and every value keeps its bits; the quotients a_ij / amax are
// kept from the sum for the last pass (one division fewer per entry).  The
// columns are read as A stores them (rows of W contiguous values), so the
// transpose At is written from the strip instead of being read back.
//
// Compiled three ways from one source (simd_math.hpp's vector types): AVX-512
// (8 doubles or 16 floats per lane group), AVX2 (4 or 8), and one column at a
// time (W = 1, any CPU).  Contraction into FMA is off where the target has FMA.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "cscore/cpu.hpp"
#include "cscore/simd_math.hpp"

namespace cscore::greedy {


// Columns [j0, j0 + W) of A (row-major M x ?, row stride lda): their inverse
// norms into inv_norm[j0..], the normalized atoms into At (rows j, N x M) and,
// when An is not null, into An (row-major M x N).  t: scratch of M * W values.
// Returns false (nothing else defined) when a column is all zero.
template <class V, class T, int W>
CSCORE_SIMD_INLINE bool normalize_strip(const T* A, std::ptrdiff_t lda, std::ptrdiff_t M,
                                        std::ptrdiff_t N, std::ptrdiff_t j0, T* t, T* inv_norm,
                                        T* At, T* An) {
    V amax, ss, v;
    simd::set1(amax, T(0));
    for (std::ptrdiff_t i = 0; i < M; ++i) {
        simd::load(A + i * lda + j0, v);
        const V a = v < T(0) ? -v : v;
        amax = amax < a ? a : amax;  // std::max(amax, |a|): exact in any order
    }
    T am[W], s[W];
    simd::store(am, amax);
    for (int l = 0; l < W; ++l)
        if (!(am[l] > T(0))) return false;
    simd::set1(ss, T(0));
    for (std::ptrdiff_t i = 0; i < M; ++i) {
        simd::load(A + i * lda + j0, v);
        const V q = v / amax;
        simd::store(t + i * W, q);
        const V p = q * q;
        ss = ss + p;
    }
    T sv[W];
    simd::store(sv, ss);
    for (int l = 0; l < W; ++l) {
        s[l] = std::sqrt(sv[l]);
        inv_norm[j0 + l] = T(1) / (am[l] * s[l]);
    }
    V sq;
    simd::load(s, sq);
    for (std::ptrdiff_t i = 0; i < M; ++i) {
        simd::load(t + i * W, v);
        const V r = v / sq;
        if (An != nullptr) simd::store(An + i * N + j0, r);
        T rr[W];
        simd::store(rr, r);
        for (int l = 0; l < W; ++l) At[(j0 + l) * M + i] = rr[l];
    }
    return true;
}

// All N columns: strips of W, then the remaining columns one at a time.
template <class V, class T, int W>
CSCORE_SIMD_INLINE bool normalize_all(const T* A, std::ptrdiff_t lda, std::ptrdiff_t M,
                                      std::ptrdiff_t N, T* inv_norm, T* At, T* An) {
    std::vector<T> t(static_cast<std::size_t>(M * W));
    std::ptrdiff_t j = 0;
    for (; j + W <= N; j += W)
        if (!normalize_strip<V, T, W>(A, lda, M, N, j, t.data(), inv_norm, At, An)) return false;
    for (; j < N; ++j)
        if (!normalize_strip<T, T, 1>(A, lda, M, N, j, t.data(), inv_norm, At, An)) return false;
    return true;
}

#if defined(CSCORE_SIMD) && (defined(__GNUC__) || defined(__clang__)) && \
    (defined(__x86_64__) || defined(__i386__))
#define CSCORE_PREPARE_X86 1
template <class T>
__attribute__((target("avx512f,avx2"), optimize("fp-contract=off"))) bool normalize_avx512(
    const T* A, std::ptrdiff_t lda, std::ptrdiff_t M, std::ptrdiff_t N, T* inv_norm, T* At, T* An) {
    if constexpr (std::is_same_v<T, double>)
        return normalize_all<simd::vd8, double, 8>(A, lda, M, N, inv_norm, At, An);
    else
        return normalize_all<simd::vf16, float, 16>(A, lda, M, N, inv_norm, At, An);
}
template <class T>
__attribute__((target("avx2"))) bool normalize_avx2(const T* A, std::ptrdiff_t lda, std::ptrdiff_t M,
                                                    std::ptrdiff_t N, T* inv_norm, T* At, T* An) {
    if constexpr (std::is_same_v<T, double>)
        return normalize_all<simd::vd4, double, 4>(A, lda, M, N, inv_norm, At, An);
    else
        return normalize_all<simd::vf8, float, 8>(A, lda, M, N, inv_norm, At, An);
}
#endif

// The normalized dictionary of a real A (see the file comment) with the widest
// vectors the CPU runs; throws on an all-zero column.
template <class T>
void normalize_columns(const T* A, std::ptrdiff_t lda, std::ptrdiff_t M, std::ptrdiff_t N, T* inv_norm,
                       T* At, T* An) {
    bool ok;
#ifdef CSCORE_PREPARE_X86
    if (cpu::isa_at_least(cpu::Isa::avx512))
        ok = normalize_avx512<T>(A, lda, M, N, inv_norm, At, An);
    else if (cpu::isa_at_least(cpu::Isa::avx2))
        ok = normalize_avx2<T>(A, lda, M, N, inv_norm, At, An);
    else
#endif
        ok = normalize_all<T, T, 1>(A, lda, M, N, inv_norm, At, An);
    if (!ok) throw std::invalid_argument("A has an all-zero column");
}

}  // namespace cscore::greedy
