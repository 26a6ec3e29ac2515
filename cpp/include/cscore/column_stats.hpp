// One pass over a real matrix for its checks: the largest |a_ij| of each column
// and whether every entry is finite.  The decoders refuse non-finite entries
// and all-zero columns and bring columns of extreme scale to unit scale
// (python/cscore/_validation.py, decoders/_greedy_dense.py); this reads A once
// for all three instead of once each.  Maxima are exact in any order.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>

#include "cscore/cpu.hpp"

namespace cscore {

// Rows [0, M) of A (row-major, row stride lda) into col_max[0, N) (float64);
// returns whether every entry is finite (col_max is then meaningful).
template <class T>
inline bool column_abs_max_rows(const T* A, std::ptrdiff_t M, std::ptrdiff_t N, std::ptrdiff_t lda,
                                double* col_max) {
    constexpr T big = std::numeric_limits<T>::max();
    bool finite = true;
    for (std::ptrdiff_t j = 0; j < N; ++j) col_max[j] = 0.0;
    for (std::ptrdiff_t i = 0; i < M; ++i) {
        const T* row = A + i * lda;
        unsigned ok = 1;
        for (std::ptrdiff_t j = 0; j < N; ++j) {
            const T v = std::fabs(row[j]);
            const double d = static_cast<double>(v);
            col_max[j] = d > col_max[j] ? d : col_max[j];
            ok &= static_cast<unsigned>(v <= big);  // false for inf and NaN
        }
        finite = finite && ok != 0;
    }
    return finite;
}

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
template <class T>
__attribute__((target("avx2"))) bool column_abs_max_avx2(const T* A, std::ptrdiff_t M, std::ptrdiff_t N,
                                                         std::ptrdiff_t lda, double* col_max) {
    return column_abs_max_rows(A, M, N, lda, col_max);
}
#endif

// column_abs_max_rows with the vectors the CPU has.
template <class T>
bool column_abs_max(const T* A, std::ptrdiff_t M, std::ptrdiff_t N, std::ptrdiff_t lda, double* col_max) {
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
    if (cpu::isa_at_least(cpu::Isa::avx2)) return column_abs_max_avx2(A, M, N, lda, col_max);
#endif
    return column_abs_max_rows(A, M, N, lda, col_max);
}

}  // namespace cscore
