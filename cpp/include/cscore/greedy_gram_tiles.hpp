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
    switch (nk) {
        case 1: gram_sweep_avx<1>(At, M, cols, common, N, outs); break;
        case 2: gram_sweep_avx<2>(At, M, cols, common, N, outs); break;
        case 3: gram_sweep_avx<3>(At, M, cols, common, N, outs); break;
        default: gram_sweep_avx<4>(At, M, cols, common, N, outs); break;
    }
}

}  // namespace cscore::greedy
#endif
