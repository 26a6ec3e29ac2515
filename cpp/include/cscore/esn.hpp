// Echo state network kernels (thesis chapter 2): the reservoir recursion over
// variable-length sequences with a sparse recurrent matrix, and the m-step
// truncated backward pass that accumulates the closed-form gradients.
//
// Layout: F frames of all sequences concatenated row-major; sequence s covers
// frames [offsets[s], offsets[s+1]).  The recurrent matrix W_rec (N x N) is CSR
// (indptr, indices, data); row i holds the weights into unit i.
//
// Every function splits work by sequence (forward, backward) or by rows of
// W_rec (rec_grad); each output element is computed by one thread in a fixed
// order, so results are bit-identical whatever n_threads is.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "cscore/parallel.hpp"

namespace cscore::esn {

struct Csr {
    const std::int64_t* indptr;
    const std::int64_t* indices;
    const double* data;
    std::int64_t n;  // N (square)
};

inline double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

// H[f, :] = sigmoid(A[f, :] + W_rec h_{f-1}), h = 0 before each sequence.
// A holds the input drive (X W) already computed, F x N.
inline void forward(const double* A, const Csr& R, const std::int64_t* offsets,
                    std::int64_t n_seq, double* H, int n_threads) {
    const std::int64_t N = R.n;
    parallel_for(n_seq, n_threads, [&](std::ptrdiff_t s0, std::ptrdiff_t s1, int) {
        for (std::ptrdiff_t s = s0; s < s1; ++s) {
            for (std::int64_t f = offsets[s]; f < offsets[s + 1]; ++f) {
                const double* a = A + f * N;
                double* h = H + f * N;
                if (f == offsets[s]) {
                    for (std::int64_t i = 0; i < N; ++i) h[i] = sigmoid(a[i]);
                    continue;
                }
                const double* hp = H + (f - 1) * N;
                for (std::int64_t i = 0; i < N; ++i) {
                    double z = a[i];
                    for (std::int64_t p = R.indptr[i]; p < R.indptr[i + 1]; ++p)
                        z += R.data[p] * hp[R.indices[p]];
                    h[i] = sigmoid(z);
                }
            }
        }
    });
}

// D = sum_{k=0}^{m} Delta^(k) where
//   Delta^(0)_f = sigma'_f o G_f,
//   Delta^(k)_f = sigma'_f o (Delta^(k-1)_{f+1} W_rec)   (zero at a sequence's end),
// sigma'_f = H_f o (1 - H_f).  This is the gradient at the pre-activations when
// the error at every frame is propagated back m steps through the recursion.
inline void backward(const double* H, const double* G, const Csr& R,
                     const std::int64_t* offsets, std::int64_t n_seq, int m, double* D,
                     int n_threads) {
    const std::int64_t N = R.n;
    parallel_for(n_seq, n_threads, [&](std::ptrdiff_t s0, std::ptrdiff_t s1, int) {
        std::vector<double> cur, nxt;
        for (std::ptrdiff_t s = s0; s < s1; ++s) {
            const std::int64_t f0 = offsets[s], L = offsets[s + 1] - f0;
            for (std::int64_t f = f0; f < f0 + L; ++f)
                for (std::int64_t i = 0; i < N; ++i) {
                    const double h = H[f * N + i];
                    D[f * N + i] = h * (1.0 - h) * G[f * N + i];
                }
            if (m <= 0 || L < 2) continue;
            cur.assign(D + f0 * N, D + (f0 + L) * N);
            nxt.assign(static_cast<std::size_t>(L * N), 0.0);
            for (int k = 1; k <= m; ++k) {
                std::fill(nxt.begin(), nxt.end(), 0.0);
                // nxt_t = (cur_{t+1} W_rec) for t < L-1: scatter over the CSR rows.
                for (std::int64_t t = 0; t + 1 < L; ++t) {
                    const double* c = cur.data() + (t + 1) * N;
                    double* o = nxt.data() + t * N;
                    for (std::int64_t i = 0; i < N; ++i) {
                        const double ci = c[i];
                        if (ci == 0.0) continue;
                        for (std::int64_t p = R.indptr[i]; p < R.indptr[i + 1]; ++p)
                            o[R.indices[p]] += ci * R.data[p];
                    }
                }
                for (std::int64_t t = 0; t + 1 < L; ++t) {
                    double* o = nxt.data() + t * N;
                    double* d = D + (f0 + t) * N;
                    const double* h = H + (f0 + t) * N;
                    for (std::int64_t i = 0; i < N; ++i) {
                        o[i] *= h[i] * (1.0 - h[i]);
                        d[i] += o[i];
                    }
                }
                cur.swap(nxt);
            }
        }
    });
}

// g[p] = sum over frames f that are not the first of their sequence of
// D[f, i] * H[f-1, j] for the nonzero p = (i, j) of W_rec: the gradient with
// respect to the nonzero entries of the sparse recurrent matrix.
inline void rec_grad(const double* D, const double* H, const Csr& R,
                     const std::int64_t* offsets, std::int64_t n_seq, double* g,
                     int n_threads) {
    const std::int64_t N = R.n;
    parallel_for(N, n_threads, [&](std::ptrdiff_t r0, std::ptrdiff_t r1, int) {
        for (std::int64_t p = R.indptr[r0]; p < R.indptr[r1]; ++p) g[p] = 0.0;
        for (std::int64_t s = 0; s < n_seq; ++s) {
            for (std::int64_t f = offsets[s] + 1; f < offsets[s + 1]; ++f) {
                const double* d = D + f * N;
                const double* hp = H + (f - 1) * N;
                for (std::ptrdiff_t i = r0; i < r1; ++i) {
                    const double di = d[i];
                    if (di == 0.0) continue;
                    for (std::int64_t p = R.indptr[i]; p < R.indptr[i + 1]; ++p)
                        g[p] += di * hp[R.indices[p]];
                }
            }
        }
    });
}

}  // namespace cscore::esn
