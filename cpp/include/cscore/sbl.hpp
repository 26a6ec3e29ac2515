// T-SBL and T-MSBL (Zhang & Rao 2011) on plain column-major buffers.
//
// The algorithm, the order of its updates and the spectral formulation are
// described in python/cscore/sbl.py (module docstring); this header is the same
// computation without Python overhead.  Each iteration needs one symmetric
// eigendecomposition of min(M, K) x min(M, K) (K = rows still kept): of
// P = Phi Gamma Phi' when K > M, of G Phi' Phi G when K <= M.  T-SBL's
// (M L) x (M L) system decouples through the eigendecomposition of the L x L
// matrix B into L systems that all share that one decomposition.
//
// Eigendecompositions use LAPACK dsyevd when registered (see blas.hpp) and a
// cyclic Jacobi method otherwise.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <vector>

#include "cscore/blas.hpp"
#include "cscore/result.hpp"

namespace cscore::sbl {

using idx = std::ptrdiff_t;

struct Params {
    bool exact = false;          // true: T-SBL, false: T-MSBL
    double prune = 1e-3;         // pruning threshold on gamma
    double lam = 1e-3;           // initial (or fixed) lambda
    bool learn_lambda = true;
    bool enhance_lambda = true;
    const double* matrix_reg = nullptr;  // L x L, T-MSBL only (nullptr: zero)
    const double* fixed_b = nullptr;     // L x L, T-MSBL only (nullptr: learn B)
    int max_iter = 2000;
    double tol = 1e-8;
};

struct Info {
    int n_iter = 0;
    StopReason stop = StopReason::max_iter;
    double lam = 0.0;
};

namespace detail {

using dsyevd_fn = void(const char*, const char*, const int*, double*, const int*, double*,
                       double*, const int*, int*, const int*, int*);

// Cyclic Jacobi eigensolver (fallback when LAPACK is not registered).
inline void jacobi_eig(int n, double* a, double* w, std::vector<double>& v) {
    v.assign(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), 0.0);
    for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i) * static_cast<std::size_t>(n + 1)] = 1.0;
    auto at = [n](double* m, int r, int c) -> double& { return m[r + static_cast<idx>(c) * n]; };
    for (int sweep = 0; sweep < 100; ++sweep) {
        double off = 0.0, tot = 0.0;
        for (int c = 0; c < n; ++c)
            for (int r = 0; r < n; ++r) {
                const double x = at(a, r, c) * at(a, r, c);
                tot += x;
                if (r != c) off += x;
            }
        if (off <= 1e-30 * tot || off == 0.0) break;
        for (int p = 0; p < n - 1; ++p)
            for (int q = p + 1; q < n; ++q) {
                const double apq = at(a, p, q);
                if (apq == 0.0) continue;
                const double theta = (at(a, q, q) - at(a, p, p)) / (2.0 * apq);
                const double t = (theta >= 0 ? 1.0 : -1.0) /
                                 (std::fabs(theta) + std::sqrt(theta * theta + 1.0));
                const double cs = 1.0 / std::sqrt(t * t + 1.0), sn = t * cs;
                for (int k = 0; k < n; ++k) {  // columns p, q
                    const double akp = at(a, k, p), akq = at(a, k, q);
                    at(a, k, p) = cs * akp - sn * akq;
                    at(a, k, q) = sn * akp + cs * akq;
                }
                for (int k = 0; k < n; ++k) {  // rows p, q
                    const double apk = at(a, p, k), aqk = at(a, q, k);
                    at(a, p, k) = cs * apk - sn * aqk;
                    at(a, q, k) = sn * apk + cs * aqk;
                }
                for (int k = 0; k < n; ++k) {
                    const double vkp = at(v.data(), k, p), vkq = at(v.data(), k, q);
                    at(v.data(), k, p) = cs * vkp - sn * vkq;
                    at(v.data(), k, q) = sn * vkp + cs * vkq;
                }
            }
    }
    std::vector<int> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::vector<double> diag(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) diag[static_cast<std::size_t>(i)] = at(a, i, i);
    std::sort(order.begin(), order.end(), [&](int x, int y) {
        return diag[static_cast<std::size_t>(x)] < diag[static_cast<std::size_t>(y)];
    });
    for (int i = 0; i < n; ++i) {
        const int o = order[static_cast<std::size_t>(i)];
        w[i] = diag[static_cast<std::size_t>(o)];
        for (int k = 0; k < n; ++k) at(a, k, i) = at(v.data(), k, o);
    }
}

// Eigendecomposition of the symmetric n x n column-major `a` (lower triangle
// read): ascending eigenvalues in w, eigenvectors overwrite a when `vectors`.
struct Eig {
    std::vector<double> work, jv;
    std::vector<int> iwork;
    void operator()(int n, double* a, double* w, bool vectors) {
        if (n <= 0) return;
        static dsyevd_fn* f = reinterpret_cast<dsyevd_fn*>(blas::lookup("dsyevd"));
        if (f != nullptr && n > 8) {  // tiny (L x L) matrices: Jacobi is faster
            const char jobz = vectors ? 'V' : 'N', uplo = 'L';
            const int lwork = vectors ? 1 + 6 * n + 2 * n * n : 2 * n + 1;
            const int liwork = vectors ? 3 + 5 * n : 1;
            work.resize(static_cast<std::size_t>(lwork));
            iwork.resize(static_cast<std::size_t>(liwork));
            int info = 0;
            std::vector<double> backup(a, a + static_cast<idx>(n) * n);
            f(&jobz, &uplo, &n, a, &n, w, work.data(), &lwork, iwork.data(), &liwork, &info);
            if (info == 0) return;
            std::copy(backup.begin(), backup.end(), a);  // LAPACK failed: use Jacobi
        }
        for (int c = 0; c < n; ++c)  // symmetrize from the lower triangle
            for (int r = 0; r < c; ++r) a[r + static_cast<idx>(c) * n] = a[c + static_cast<idx>(r) * n];
        jacobi_eig(n, a, w, jv);
    }
};

// The spectral kernel: eigendecomposition of P = Phi Gamma Phi' on its smaller side.
struct Spectral {
    int M = 0, K = 0, n = 0;
    bool gram = false;
    const double* Phi = nullptr;    // M x K, ld M
    const double* gamma = nullptr;  // K
    std::vector<double> g, tmp, E, e, Z, Td;
    std::vector<char> keep;
    Eig eig;

    void build(int M_, int K_, const double* Phi_, const double* gamma_, bool vectors = true) {
        M = M_; K = K_; Phi = Phi_; gamma = gamma_;
        gram = K <= M;
        n = gram ? K : M;
        const auto sz = [](idx a, idx b) { return static_cast<std::size_t>(a * b); };
        tmp.resize(sz(M, K));
        E.resize(sz(n, n));
        e.resize(static_cast<std::size_t>(n));
        if (gram) {
            g.resize(static_cast<std::size_t>(K));
            for (int i = 0; i < K; ++i) g[static_cast<std::size_t>(i)] = std::sqrt(gamma[i]);
            for (int i = 0; i < K; ++i) {
                const double gi = g[static_cast<std::size_t>(i)];
                for (int r = 0; r < M; ++r) tmp[r + static_cast<idx>(i) * M] = Phi[r + static_cast<idx>(i) * M] * gi;
            }
            blas::gemm<double>(true, false, K, K, M, 1.0, tmp.data(), M, tmp.data(), M, 0.0, E.data(), K);
        } else {
            for (int i = 0; i < K; ++i)
                for (int r = 0; r < M; ++r) tmp[r + static_cast<idx>(i) * M] = Phi[r + static_cast<idx>(i) * M] * gamma[i];
            blas::gemm<double>(false, true, M, M, K, 1.0, tmp.data(), M, Phi, M, 0.0, E.data(), M);
        }
        eig(n, E.data(), e.data(), vectors);
        double emax = 0.0;
        for (auto& x : e) {
            x = std::max(x, 0.0);
            emax = std::max(emax, x);
        }
        const double cut = 16.0 * K * std::numeric_limits<double>::epsilon() * emax;
        keep.resize(static_cast<std::size_t>(n));
        for (int k = 0; k < n; ++k) keep[static_cast<std::size_t>(k)] = e[static_cast<std::size_t>(k)] > cut;
        if (vectors && !gram) {  // Z = W' Phi (M x K)
            Z.resize(sz(M, K));
            blas::gemm<double>(true, false, M, K, M, 1.0, E.data(), M, Phi, M, 0.0, Z.data(), M);
        }
    }

    // T (n x m) = eigen-coordinates of R (M x m, ld M).
    void project(const double* R, int m, double* T) {
        if (gram) {
            tmp.resize(static_cast<std::size_t>(K) * static_cast<std::size_t>(m));
            blas::gemm<double>(true, false, K, m, M, 1.0, Phi, M, R, M, 0.0, tmp.data(), K);
            for (int j = 0; j < m; ++j)
                for (int i = 0; i < K; ++i) tmp[i + static_cast<idx>(j) * K] *= g[static_cast<std::size_t>(i)];
            blas::gemm<double>(true, false, K, m, K, 1.0, E.data(), K, tmp.data(), K, 0.0, T, n);
        } else {
            blas::gemm<double>(true, false, M, m, M, 1.0, E.data(), M, R, M, 0.0, T, n);
        }
    }

    // out (K x m, ld K) = Gamma Phi' (P + c_j I)^-1 R[:, j], from T = project(R).
    void mean(const double* T, int m, const double* c, double* out) {
        Td.resize(static_cast<std::size_t>(n) * static_cast<std::size_t>(m));
        for (int j = 0; j < m; ++j)
            for (int k = 0; k < n; ++k) {
                const auto kk = static_cast<std::size_t>(k);
                Td[kk + static_cast<std::size_t>(j) * static_cast<std::size_t>(n)] =
                    keep[kk] ? T[k + static_cast<idx>(j) * n] / (e[kk] + c[j]) : 0.0;
            }
        if (gram) {
            blas::gemm<double>(false, false, K, m, K, 1.0, E.data(), K, Td.data(), K, 0.0, out, K);
            for (int j = 0; j < m; ++j)
                for (int i = 0; i < K; ++i) out[i + static_cast<idx>(j) * K] *= g[static_cast<std::size_t>(i)];
        } else {
            blas::gemm<double>(true, false, K, m, M, 1.0, Z.data(), M, Td.data(), M, 0.0, out, K);
            for (int j = 0; j < m; ++j)
                for (int i = 0; i < K; ++i) out[i + static_cast<idx>(j) * K] *= gamma[i];
        }
    }

    // out[i] = gamma_i - gamma_i^2 phi_i' (P + c I)^-1 phi_i.
    void post_var(double c, double* out) {
        std::vector<double>& d = Td;
        d.resize(static_cast<std::size_t>(n));
        for (int k = 0; k < n; ++k) {
            const auto kk = static_cast<std::size_t>(k);
            d[kk] = 1.0 / (e[kk] + c);
        }
        if (gram) {
            for (int i = 0; i < K; ++i) {
                double s = 0.0;  // sum_k V_ik^2 d_k
                for (int k = 0; k < K; ++k) {
                    const double v = E[i + static_cast<idx>(k) * K];
                    s += v * v * d[static_cast<std::size_t>(k)];
                }
                out[i] = gamma[i] * c * s;
            }
        } else {
            for (int k = 0; k < n; ++k)
                if (!keep[static_cast<std::size_t>(k)]) d[static_cast<std::size_t>(k)] = 0.0;
            for (int i = 0; i < K; ++i) {
                double s = 0.0;
                const double* z = Z.data() + static_cast<idx>(i) * M;
                for (int k = 0; k < M; ++k) s += z[k] * z[k] * d[static_cast<std::size_t>(k)];
                out[i] = gamma[i] - gamma[i] * gamma[i] * s;
            }
        }
    }

    double trace_ratio(double lam) const {
        double s = 0.0;
        for (double x : e) s += x / (x + lam);
        return s;
    }
};

// The same quantities as Spectral for one value of c, through a Cholesky
// factorization (several times cheaper than an eigendecomposition):
//  * K <= M: C = G Phi' Phi G + c I (K x K); Gamma Phi' (P + c I)^-1 R =
//    G C^-1 G Phi' R and gamma_i - gamma_i^2 phi_i'(P + c I)^-1 phi_i = gamma_i c (C^-1)_ii;
//  * K > M:  C = P + c I (M x M); with H = C^-1 Phi, Gamma H' R and
//    gamma_i - gamma_i^2 (Phi' H)_ii (the originals' form).
// tr(P (P + c I)^-1) = n - c tr(C^-1).  factor() returns false (callers then use
// Spectral) when LAPACK is not registered or C is numerically singular: a squared
// pivot of its factor below 16 n eps max diag C.
struct Chol {
    using potr_fn = void(const char*, const int*, double*, const int*, int*);
    int M = 0, K = 0, n = 0;
    bool gram = false;
    double c = 0.0;
    const double* Phi = nullptr;
    const double* gamma = nullptr;
    std::vector<double> C, g, H, tmp;

    double& at(int i, int j) { return C[static_cast<std::size_t>(i + static_cast<idx>(j) * n)]; }

    bool factor(int M_, int K_, const double* Phi_, const double* gamma_, double c_) {
        static potr_fn* potrf = reinterpret_cast<potr_fn*>(blas::lookup("dpotrf"));
        static potr_fn* potri = reinterpret_cast<potr_fn*>(blas::lookup("dpotri"));
        if (potrf == nullptr || potri == nullptr) return false;
        M = M_; K = K_; Phi = Phi_; gamma = gamma_; c = c_;
        gram = K <= M;
        n = gram ? K : M;
        const auto un = static_cast<std::size_t>(n);
        C.resize(un * un);
        if (gram) {
            g.resize(static_cast<std::size_t>(K));
            for (int i = 0; i < K; ++i) g[static_cast<std::size_t>(i)] = std::sqrt(gamma[i]);
            blas::gemm<double>(true, false, K, K, M, 1.0, Phi, M, Phi, M, 0.0, C.data(), K);
            for (int j = 0; j < K; ++j)
                for (int i = j; i < K; ++i) at(i, j) *= g[static_cast<std::size_t>(i)] * g[static_cast<std::size_t>(j)];
        } else {
            H.resize(static_cast<std::size_t>(M) * static_cast<std::size_t>(K));
            for (int i = 0; i < K; ++i)
                for (int r = 0; r < M; ++r) H[static_cast<std::size_t>(r + static_cast<idx>(i) * M)] = Phi[r + static_cast<idx>(i) * M] * gamma[i];
            blas::gemm<double>(false, true, M, M, K, 1.0, H.data(), M, Phi, M, 0.0, C.data(), M);
        }
        double dmax = 0.0;
        for (int i = 0; i < n; ++i) {
            at(i, i) += c;
            dmax = std::max(dmax, at(i, i));
        }
        const char uplo = 'L';
        int info = 0;
        potrf(&uplo, &n, C.data(), &n, &info);
        if (info != 0) return false;
        const double floor = 16.0 * n * std::numeric_limits<double>::epsilon() * dmax;
        for (int i = 0; i < n; ++i)
            if (!(at(i, i) * at(i, i) > floor)) return false;
        potri(&uplo, &n, C.data(), &n, &info);
        if (info != 0) return false;
        for (int j = 0; j < n; ++j)  // mirror the lower triangle
            for (int i = 0; i < j; ++i) at(i, j) = at(j, i);
        if (!gram)  // H = C^-1 Phi
            blas::gemm<double>(false, false, M, K, M, 1.0, C.data(), M, Phi, M, 0.0, H.data(), M);
        return true;
    }

    // out (K x m, leading dimension ldo) = Gamma Phi' (P + c I)^-1 R, R: M x m (ld M).
    void mean(const double* R, int m, double* out, int ldo) {
        if (gram) {
            tmp.resize(static_cast<std::size_t>(K) * static_cast<std::size_t>(m));
            blas::gemm<double>(true, false, K, m, M, 1.0, Phi, M, R, M, 0.0, tmp.data(), K);
            for (int j = 0; j < m; ++j)
                for (int i = 0; i < K; ++i) tmp[static_cast<std::size_t>(i + static_cast<idx>(j) * K)] *= g[static_cast<std::size_t>(i)];
            blas::gemm<double>(false, false, K, m, K, 1.0, C.data(), K, tmp.data(), K, 0.0, out, ldo);
            for (int j = 0; j < m; ++j)
                for (int i = 0; i < K; ++i) out[i + static_cast<idx>(j) * ldo] *= g[static_cast<std::size_t>(i)];
        } else {
            blas::gemm<double>(true, false, K, m, M, 1.0, H.data(), M, R, M, 0.0, out, ldo);
            for (int j = 0; j < m; ++j)
                for (int i = 0; i < K; ++i) out[i + static_cast<idx>(j) * ldo] *= gamma[i];
        }
    }

    // out[i] = gamma_i - gamma_i^2 phi_i' (P + c I)^-1 phi_i.
    void post_var(double* out) {
        if (gram) {
            for (int i = 0; i < K; ++i) out[i] = gamma[i] * c * at(i, i);
            return;
        }
        for (int i = 0; i < K; ++i) {
            double d = 0.0;
            const double* ph = Phi + static_cast<idx>(i) * M;
            const double* h = H.data() + static_cast<idx>(i) * M;
            for (int r = 0; r < M; ++r) d += ph[r] * h[r];
            out[i] = gamma[i] - gamma[i] * gamma[i] * d;
        }
    }

    // tr(P (P + c I)^-1).
    double trace_ratio() {
        double t = 0.0;
        for (int i = 0; i < n; ++i) t += at(i, i);
        return n - c * t;
    }
};

// Inverse of a symmetric positive definite L x L matrix through its eigendecomposition.
inline void sym_inverse(int L, const double* B, double* Binv, Eig& eig) {
    std::vector<double> Q(B, B + static_cast<idx>(L) * L), b(static_cast<std::size_t>(L));
    eig(L, Q.data(), b.data(), true);
    const double bmax = std::max(b.back(), std::numeric_limits<double>::min());
    for (auto& x : b) x = std::max(x, std::numeric_limits<double>::epsilon() * bmax);
    for (int c = 0; c < L; ++c)
        for (int r = 0; r < L; ++r) {
            double s = 0.0;
            for (int k = 0; k < L; ++k)
                s += Q[r + static_cast<idx>(k) * L] * Q[c + static_cast<idx>(k) * L] / b[static_cast<std::size_t>(k)];
            Binv[r + static_cast<idx>(c) * L] = s;
        }
}

// Scale B (L x L) to unit Frobenius norm, as both originals do after each
// update of B, then write its inverse into Binv.
inline void normalize_and_invert(int L, std::vector<double>& B, std::vector<double>& Binv,
                                 Eig& eig) {
    double fro = 0.0;
    for (double x : B) fro += x * x;
    fro = std::sqrt(fro);
    if (fro > 0)
        for (auto& x : B) x /= fro;
    sym_inverse(L, B.data(), Binv.data(), eig);
}

}  // namespace detail

// Solve one problem.  A: M x N column-major; Y: M x L column-major.  Writes
// X (N x L column-major), gamma (N, zero for pruned rows) and B (L x L).
inline Info solve(int M, int N, int L, const double* A, const double* Y, const Params& prm,
                  double* X, double* gamma_out, double* B_out) {

    const auto usz = [](idx a) { return static_cast<std::size_t>(a); };
    std::vector<double> Phi(A, A + static_cast<idx>(M) * N);
    std::vector<double> gamma(usz(N), 1.0), mu(usz(static_cast<idx>(N) * L), 0.0), mu_old;
    std::vector<int> keep(usz(N));
    std::iota(keep.begin(), keep.end(), 0);
    std::vector<double> B(usz(static_cast<idx>(L) * L), 0.0), Binv(B.size()), T, sig, S, Yq, Q, bq,
        mut, res, p, quad, Binv_rot;
    for (int j = 0; j < L; ++j) B[usz(j + static_cast<idx>(j) * L)] = 1.0;
    const bool fixed = !prm.exact && prm.fixed_b != nullptr;
    if (fixed) std::copy(prm.fixed_b, prm.fixed_b + static_cast<idx>(L) * L, B.begin());
    detail::Spectral spec, spec2;
    detail::Chol chol, chol2;
    detail::Eig eig;
    if (fixed) detail::sym_inverse(L, B.data(), Binv.data(), eig);
    double lam = prm.lam;
    int K = N, K_old = N;
    Info info;
    int count = 0;

    auto residual2 = [&]() {
        res.assign(Y, Y + static_cast<idx>(M) * L);
        blas::gemm<double>(false, false, M, L, K, -1.0, Phi.data(), M, mu.data(), K, 1.0, res.data(), M);
        double s = 0.0;
        for (double x : res) s += x * x;
        return s;
    };
    auto lambda_update = [&](double r2) {
        double t;
        if (prm.enhance_lambda) {
            p.assign(usz(M), 0.0);
            for (int i = 0; i < K; ++i) {
                const double* col = Phi.data() + static_cast<idx>(i) * M;
                for (int r = 0; r < M; ++r) p[usz(r)] += col[r] * col[r] * gamma[usz(i)];
            }
            t = 0.0;
            for (double x : p) t += x / (lam + x);
        } else if (lam > 0 && chol2.factor(M, K, Phi.data(), gamma.data(), lam)) {
            t = chol2.trace_ratio();  // T-SBL: the new gamma; T-MSBL: the current one
        } else {
            spec2.build(M, K, Phi.data(), gamma.data(), false);
            t = spec2.trace_ratio(lam);
        }
        lam = r2 / (static_cast<double>(M) * L) + lam * t / M;
    };

    while (true) {
        if (prm.exact) ++count;
        // ---- prune
        double gmin = std::numeric_limits<double>::infinity();
        for (int i = 0; i < K; ++i) gmin = std::min(gmin, gamma[usz(i)]);
        if (K > 0 && gmin < prm.prune) {
            int k = 0;
            for (int i = 0; i < K; ++i) {
                if (gamma[usz(i)] > prm.prune) {
                    if (k != i) {
                        std::copy(Phi.begin() + static_cast<idx>(i) * M, Phi.begin() + static_cast<idx>(i + 1) * M,
                                  Phi.begin() + static_cast<idx>(k) * M);
                        gamma[usz(k)] = gamma[usz(i)];
                        keep[usz(k)] = keep[usz(i)];
                    }
                    ++k;
                }
            }
            K = k;
        }
        if (K == 0) {
            info.stop = StopReason::exhausted;
            mu.clear();
            break;
        }
        mu_old.swap(mu);
        mu.assign(usz(static_cast<idx>(K) * L), 0.0);
        sig.resize(usz(K));
        if (!prm.exact) {
            // ================= T-MSBL
            const double lamp = lam + 1e-16;  // the originals add 1e-16
            if (chol.factor(M, K, Phi.data(), gamma.data(), lamp)) {
                chol.mean(Y, L, mu.data(), K);
                chol.post_var(sig.data());
            } else {
                spec.build(M, K, Phi.data(), gamma.data());
                T.resize(usz(static_cast<idx>(spec.n) * L));
                std::vector<double> c(usz(L), lamp);
                spec.project(Y, L, T.data());
                spec.mean(T.data(), L, c.data(), mu.data());
                spec.post_var(lamp, sig.data());
            }
            if (prm.learn_lambda) lambda_update(residual2());
            bool identity = false;
            if (!fixed) {
                if (K <= M) {
                    identity = true;
                    std::fill(B.begin(), B.end(), 0.0);
                    for (int j = 0; j < L; ++j) B[usz(j + static_cast<idx>(j) * L)] = 1.0;
                } else {
                    for (int c2 = 0; c2 < L; ++c2)
                        for (int r = 0; r < L; ++r) {
                            double s = prm.matrix_reg ? prm.matrix_reg[r + static_cast<idx>(c2) * L] : 0.0;
                            for (int i = 0; i < K; ++i)
                                s += mu[usz(i + static_cast<idx>(r) * K)] * mu[usz(i + static_cast<idx>(c2) * K)] / gamma[usz(i)];
                            B[usz(r + static_cast<idx>(c2) * L)] = s;
                        }
                    detail::normalize_and_invert(L, B, Binv, eig);
                }
            }
            for (int i = 0; i < K; ++i) {
                double q = 0.0;
                if (identity) {
                    for (int r = 0; r < L; ++r) q += mu[usz(i + static_cast<idx>(r) * K)] * mu[usz(i + static_cast<idx>(r) * K)];
                } else {
                    for (int c2 = 0; c2 < L; ++c2) {
                        double s = 0.0;
                        for (int r = 0; r < L; ++r) s += mu[usz(i + static_cast<idx>(r) * K)] * Binv[usz(r + static_cast<idx>(c2) * L)];
                        q += s * mu[usz(i + static_cast<idx>(c2) * K)];
                    }
                }
                gamma[usz(i)] = q / L + sig[usz(i)];
            }
            ++count;
        } else {
            // ================= T-SBL
            Q = B;
            bq.resize(usz(L));
            eig(L, Q.data(), bq.data(), true);
            const double bmax = std::max(bq.back(), std::numeric_limits<double>::min());
            std::vector<double> c(usz(L));
            for (int j = 0; j < L; ++j) {
                bq[usz(j)] = std::max(bq[usz(j)], std::numeric_limits<double>::epsilon() * bmax);
                c[usz(j)] = lam / bq[usz(j)];
            }
            Yq.resize(usz(static_cast<idx>(M) * L));
            blas::gemm<double>(false, false, M, L, L, 1.0, Y, M, Q.data(), L, 0.0, Yq.data(), M);
            mut.resize(usz(static_cast<idx>(K) * L));
            S.resize(usz(static_cast<idx>(K) * L));
            bool ok = true;  // one Cholesky factorization per decoupled channel
            for (int j = 0; j < L && ok; ++j) {
                ok = chol.factor(M, K, Phi.data(), gamma.data(), c[usz(j)]);
                if (!ok) break;
                chol.mean(Yq.data() + static_cast<idx>(j) * M, 1, mut.data() + static_cast<idx>(j) * K, K);
                chol.post_var(S.data() + static_cast<idx>(j) * K);
            }
            if (!ok) {  // numerically singular: one eigendecomposition serves all channels
                spec.build(M, K, Phi.data(), gamma.data());
                T.resize(usz(static_cast<idx>(spec.n) * L));
                spec.project(Yq.data(), L, T.data());
                spec.mean(T.data(), L, c.data(), mut.data());
                for (int j = 0; j < L; ++j) spec.post_var(c[usz(j)], S.data() + static_cast<idx>(j) * K);
            }
            for (int j = 0; j < L; ++j)
                for (int i = 0; i < K; ++i) S[usz(i + static_cast<idx>(j) * K)] *= bq[usz(j)];
            blas::gemm<double>(false, true, K, L, L, 1.0, mut.data(), K, Q.data(), L, 0.0, mu.data(), K);
            Binv_rot.assign(usz(L), 1.0);
            quad.assign(usz(K), 0.0);
            if (K <= M) {
                std::fill(B.begin(), B.end(), 0.0);
                for (int j = 0; j < L; ++j) B[usz(j + static_cast<idx>(j) * L)] = 1.0;
                for (int r = 0; r < L; ++r)
                    for (int i = 0; i < K; ++i) quad[usz(i)] += mu[usz(i + static_cast<idx>(r) * K)] * mu[usz(i + static_cast<idx>(r) * K)];
            } else {
                std::vector<double> s(usz(L), 0.0);
                for (int j = 0; j < L; ++j)
                    for (int i = 0; i < K; ++i) s[usz(j)] += S[usz(i + static_cast<idx>(j) * K)] / gamma[usz(i)];
                for (int c2 = 0; c2 < L; ++c2)
                    for (int r = 0; r <= c2; ++r) {
                        double v = 0.0;
                        for (int k = 0; k < L; ++k)
                            v += Q[usz(r + static_cast<idx>(k) * L)] * Q[usz(c2 + static_cast<idx>(k) * L)] * s[usz(k)];
                        for (int i = 0; i < K; ++i)
                            v += mu[usz(i + static_cast<idx>(r) * K)] * mu[usz(i + static_cast<idx>(c2) * K)] / gamma[usz(i)];
                        B[usz(r + static_cast<idx>(c2) * L)] = v;
                        B[usz(c2 + static_cast<idx>(r) * L)] = v;
                    }
                detail::normalize_and_invert(L, B, Binv, eig);
                for (int j = 0; j < L; ++j) {
                    double v = 0.0;
                    for (int r = 0; r < L; ++r)
                        for (int c2 = 0; c2 < L; ++c2)
                            v += Q[usz(r + static_cast<idx>(j) * L)] * Binv[usz(r + static_cast<idx>(c2) * L)] *
                                 Q[usz(c2 + static_cast<idx>(j) * L)];
                    Binv_rot[usz(j)] = v;
                }
                for (int i = 0; i < K; ++i) {
                    double q = 0.0;
                    for (int c2 = 0; c2 < L; ++c2) {
                        double v = 0.0;
                        for (int r = 0; r < L; ++r) v += mu[usz(i + static_cast<idx>(r) * K)] * Binv[usz(r + static_cast<idx>(c2) * L)];
                        q += v * mu[usz(i + static_cast<idx>(c2) * K)];
                    }
                    quad[usz(i)] = q;
                }
            }
            for (int i = 0; i < K; ++i) {
                double v = quad[usz(i)];
                for (int j = 0; j < L; ++j) v += S[usz(i + static_cast<idx>(j) * K)] * Binv_rot[usz(j)];
                gamma[usz(i)] = v / L;
            }
            if (prm.learn_lambda) lambda_update(residual2());
        }
        // ---- stopping rule (as in the originals: cap first, then the mean's change)
        if (count >= prm.max_iter) {
            info.stop = StopReason::max_iter;
            break;
        }
        if (K == K_old) {
            double dmu = 0.0;
            for (std::size_t q = 0; q < mu.size(); ++q) dmu = std::max(dmu, std::fabs(mu[q] - mu_old[q]));
            if (dmu < prm.tol) {
                info.stop = StopReason::tol;
                break;
            }
        }
        K_old = K;
    }
    std::fill(X, X + static_cast<idx>(N) * L, 0.0);
    std::fill(gamma_out, gamma_out + N, 0.0);
    for (int i = 0; i < K; ++i) {
        gamma_out[keep[usz(i)]] = gamma[usz(i)];
        for (int j = 0; j < L; ++j) X[keep[usz(i)] + static_cast<idx>(j) * N] = mu[usz(i + static_cast<idx>(j) * K)];
    }
    std::copy(B.begin(), B.end(), B_out);
    info.n_iter = count;
    info.lam = lam;
    return info;
}

}  // namespace cscore::sbl
