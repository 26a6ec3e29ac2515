// Several Gram columns in one sweep over the atoms (AVX, double): the entries
// dot(At_i, At_k) for a pair of atoms i, i + 1 and up to four columns k at once,
// each in its own register, so that every atom read from memory serves all the
// columns while it is in registers, and the loads of the next atoms overlap the
// arithmetic of these.  Per entry the operations of gram_block_avx (and of
// linalg::dot): lane t of an accumulator is the partial sum s_t over the
// indices = t mod 4, products and sums rounded separately (no FMA), then the
// tail and (s0 + s1) + (s2 + s3) in gram_finish.  Same bits, any grouping.
#pragma once

#include <algorithm>
#include <cstddef>

#include "cscore/cpu.hpp"
#include "cscore/greedy_avx2.hpp"

#ifdef CSCORE_GREEDY_AVX2
namespace cscore::greedy {

// Entries of rows rows[0..R) (atoms, M values each) against columns cols[0..C):
// out[c][r] = dot(rows[r], cols[c]).
template <int R, int C>
__attribute__((target("avx2"))) inline void gram_tile_avx(const double* const* rows, const double* const* cols,
                                                          std::ptrdiff_t M, double (&out)[4][2]) {
    const std::ptrdiff_t m4 = M - M % 4;
    __m256d acc[R][C];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_pd();
    for (std::ptrdiff_t t = 0; t < m4; t += 4) {
        __m256d cv[C];
        for (int c = 0; c < C; ++c) cv[c] = _mm256_loadu_pd(cols[c] + t);
        for (int r = 0; r < R; ++r) {
            const __m256d rv = _mm256_loadu_pd(rows[r] + t);
            for (int c = 0; c < C; ++c) acc[r][c] = _mm256_add_pd(acc[r][c], _mm256_mul_pd(rv, cv[c]));
        }
    }
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) out[c][r] = gram_finish(acc[r][c], rows[r], cols[c], m4, M);
}

// The tiles of gram_columns_avx for C columns.
template <int C>
__attribute__((target("avx2"))) CSCORE_NOINLINE void gram_sweep_avx(const double* At, std::ptrdiff_t M,
                                                                    const double* const* cols,
                                                                    std::ptrdiff_t i0, std::ptrdiff_t i1,
                                                                    double* const* outs) {
    double tile[4][2];
    std::ptrdiff_t i = i0;
    for (; i + 2 <= i1; i += 2) {
        const double* rows[2] = {At + i * M, At + (i + 1) * M};
        gram_tile_avx<2, C>(rows, cols, M, tile);
        for (int c = 0; c < C; ++c) outs[c][i] = tile[c][0], outs[c][i + 1] = tile[c][1];
    }
    if (i < i1) {
        const double* rows[1] = {At + i * M};
        gram_tile_avx<1, C>(rows, cols, M, tile);
        for (int c = 0; c < C; ++c) outs[c][i] = tile[c][0];
    }
}

// The AVX-512 form of gram_sweep_avx: an accumulator holds two entries, atom
// i in its low four lanes and atom i + 1 in its high four (each lane the same
// partial sum as in the AVX form), the column's four values broadcast to both
// halves; eight atoms against C columns per step.  Contraction is off (the
// target has FMA): products and sums round separately, the same bits.
template <int P, int C>
__attribute__((target("avx512f,avx2"), optimize("fp-contract=off"))) inline void gram_tile_avx512(
    const double* At, std::ptrdiff_t M, std::ptrdiff_t i, const double* const* cols, double* const* outs) {
    // The masked forms with every lane kept: the plain ones start from an
    // undefined vector, which GCC 12 reports as maybe-uninitialized.
    constexpr __mmask8 kAll = 0xFF, kLow = 0x0F;
    const std::ptrdiff_t m4 = M - M % 4;
    const double* rows[2 * P];
    for (int r = 0; r < 2 * P; ++r) rows[r] = At + (i + r) * M;
    __m512d acc[P][C];
    for (int p = 0; p < P; ++p)
        for (int c = 0; c < C; ++c) acc[p][c] = _mm512_setzero_pd();
    for (std::ptrdiff_t t = 0; t < m4; t += 4) {
        __m512d cv[C];
        for (int c = 0; c < C; ++c) cv[c] = _mm512_maskz_broadcast_f64x4(kAll, _mm256_loadu_pd(cols[c] + t));
        for (int p = 0; p < P; ++p) {
            const __m512d rv = _mm512_maskz_insertf64x4(
                kAll, _mm512_castpd256_pd512(_mm256_loadu_pd(rows[2 * p] + t)), _mm256_loadu_pd(rows[2 * p + 1] + t), 1);
            for (int c = 0; c < C; ++c) acc[p][c] = _mm512_add_pd(acc[p][c], _mm512_mul_pd(rv, cv[c]));
        }
    }
    for (int p = 0; p < P; ++p)
        for (int c = 0; c < C; ++c) {
            outs[c][i + 2 * p] =
                gram_finish(_mm512_maskz_extractf64x4_pd(kLow, acc[p][c], 0), rows[2 * p], cols[c], m4, M);
            outs[c][i + 2 * p + 1] =
                gram_finish(_mm512_maskz_extractf64x4_pd(kLow, acc[p][c], 1), rows[2 * p + 1], cols[c], m4, M);
        }
}

template <int C>
__attribute__((target("avx512f,avx2"), optimize("fp-contract=off"))) CSCORE_NOINLINE void gram_sweep_avx512(
    const double* At, std::ptrdiff_t M, const double* const* cols, std::ptrdiff_t i0, std::ptrdiff_t i1,
    double* const* outs) {
    std::ptrdiff_t i = i0;
    for (; i + 8 <= i1; i += 8) gram_tile_avx512<4, C>(At, M, i, cols, outs);
    for (; i + 2 <= i1; i += 2) gram_tile_avx512<1, C>(At, M, i, cols, outs);
    if (i < i1) gram_sweep_avx<C>(At, M, cols, i, i1, outs);
}

// Columns ks[0..nk) (nk <= 4) of the Gram matrix of At (N atoms of M values),
// column c from row from[c] (all rows when from is null) to N - 1, into
// outs[c][row]: the rows every column needs in one sweep, the few rows before
// (near the diagonal of a stored G) by gram_block_avx.
inline void gram_columns_avx(const double* At, std::ptrdiff_t M, std::ptrdiff_t N, const std::ptrdiff_t* ks,
                             int nk, double* const* outs, const std::ptrdiff_t* from) {
    std::ptrdiff_t common = 0;  // first row every column needs
    if (from != nullptr)
        for (int c = 0; c < nk; ++c) common = std::max(common, from[c]);
    common = std::min(common, N);
    for (int c = 0; c < nk && from != nullptr; ++c)
        if (from[c] < common) gram_block_avx(At, M, At + ks[c] * M, from[c], common - from[c], outs[c] + from[c]);
    const double* cols[4];
    for (int c = 0; c < nk; ++c) cols[c] = At + ks[c] * M;
    if (cpu::isa_at_least(cpu::Isa::avx512)) {
        switch (nk) {
            case 1: gram_sweep_avx512<1>(At, M, cols, common, N, outs); break;
            case 2: gram_sweep_avx512<2>(At, M, cols, common, N, outs); break;
            case 3: gram_sweep_avx512<3>(At, M, cols, common, N, outs); break;
            default: gram_sweep_avx512<4>(At, M, cols, common, N, outs); break;
        }
        return;
    }
    switch (nk) {
        case 1: gram_sweep_avx<1>(At, M, cols, common, N, outs); break;
        case 2: gram_sweep_avx<2>(At, M, cols, common, N, outs); break;
        case 3: gram_sweep_avx<3>(At, M, cols, common, N, outs); break;
        default: gram_sweep_avx<4>(At, M, cols, common, N, outs); break;
    }
}

}  // namespace cscore::greedy
#endif
