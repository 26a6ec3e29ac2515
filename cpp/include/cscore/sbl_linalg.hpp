// The linear algebra of one T-SBL / T-MSBL iteration (sbl.hpp), written once
// over the scalar type V (double, or std::complex<double> for complex T-MSBL).
//
// Every quantity of an iteration comes from P = Phi Gamma Phi^H (M x M) or its
// gram form G Phi^H Phi G (K x K, G = Gamma^(1/2)), whichever is smaller:
//  * Spectral: the eigendecomposition of that matrix, from which the mean
//    Gamma Phi^H (P + c I)^-1 R and the diagonal gamma_i - gamma_i^2
//    phi_i^H (P + c I)^-1 phi_i follow for any c (python/cscore/decoders/sbl.py
//    derives the formulas);
//  * Chol (real only): the same for one c through a Cholesky factorization.
// For real V, ^H is the transpose and every operation is the real kernel's.
//
// Eigendecompositions: LAPACK dsyevd / zheevd (blas.hpp's Eigh, from SciPy's
// capsules).  Real matrices up to 8 x 8 (and any real matrix when dsyevd is
// not registered or fails) use a cyclic Jacobi method; complex ones always go
// through zheevd (SciPy, a hard dependency, exports it).
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "cscore/blas.hpp"

namespace cscore::sbl::detail {

using idx = std::ptrdiff_t;
using cx = std::complex<double>;

template <class V>
inline constexpr bool is_real = !blas::is_complex<V>;

// Column-major offset of (i, j) with leading dimension ld, and an index as a size.
inline std::size_t at(idx i, idx j, idx ld) { return static_cast<std::size_t>(i + j * ld); }
inline std::size_t uz(idx i) { return static_cast<std::size_t>(i); }

// |a|^2 and a * b, written out for complex (no NaN-recovering library call).
inline double abs2(double a) { return a * a; }
inline double abs2(cx a) { return a.real() * a.real() + a.imag() * a.imag(); }
inline double mul(double a, double b) { return a * b; }
inline cx mul(cx a, cx b) {
    return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}
inline double re(double a) { return a; }
inline double re(cx a) { return a.real(); }
using blas::conj;

// Cyclic Jacobi eigensolver of a real symmetric matrix (see Eig).
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

// Eigendecomposition of the symmetric / Hermitian n x n column-major `a` (lower
// triangle read): ascending eigenvalues in w, orthonormal eigenvectors overwrite
// a when `vectors` (always for the Jacobi method).
template <class V>
struct Eig {
    blas::Eigh<V> lapack;
    std::vector<double> jv, backup;

    void operator()(int n, V* a, double* w, bool vectors) {
        if (n <= 0) return;
        if constexpr (!is_real<V>) {
            if (!lapack(n, a, w, vectors))
                throw std::runtime_error("complex T-MSBL: LAPACK zheevd is not registered (SciPy's "
                                         "cython_lapack) or did not converge");
        } else {
            if (lapack.available() && n > 8) {  // tiny (L x L) matrices: Jacobi is faster
                backup.assign(a, a + static_cast<idx>(n) * n);
                if (lapack(n, a, w, vectors)) return;
                std::copy(backup.begin(), backup.end(), a);  // LAPACK failed: use Jacobi
            }
            for (int c = 0; c < n; ++c)  // symmetrize from the lower triangle
                for (int r = 0; r < c; ++r) a[at(r, c, n)] = a[at(c, r, n)];
            jacobi_eig(n, a, w, jv);
        }
    }
};

// The spectral kernel: eigendecomposition of P = Phi Gamma Phi^H on its smaller side.
template <class V>
struct Spectral {
    int M = 0, K = 0, n = 0;
    bool gram = false;
    const V* Phi = nullptr;         // M x K, ld M
    const double* gamma = nullptr;  // K
    std::vector<double> g, e, d;
    std::vector<V> tmp, E, Z, Td;
    std::vector<char> keep;
    Eig<V> eig;

    void build(int M_, int K_, const V* Phi_, const double* gamma_, bool vectors = true) {
        M = M_; K = K_; Phi = Phi_; gamma = gamma_;
        gram = K <= M;
        n = gram ? K : M;
        const auto sz = [](idx a, idx b) { return static_cast<std::size_t>(a * b); };
        tmp.resize(sz(M, K));
        E.resize(sz(n, n));
        e.resize(uz(n));
        if (gram) {  // E = (Phi G)^H (Phi G)
            g.resize(uz(K));
            for (int i = 0; i < K; ++i) g[uz(i)] = std::sqrt(gamma[i]);
            for (int i = 0; i < K; ++i) {
                const double gi = g[uz(i)];
                for (int r = 0; r < M; ++r) tmp[at(r, i, M)] = Phi[at(r, i, M)] * gi;
            }
            blas::gemm<V>(true, false, K, K, M, V(1), tmp.data(), M, tmp.data(), M, V(0), E.data(), K);
        } else {  // E = Phi Gamma Phi^H
            for (int i = 0; i < K; ++i)
                for (int r = 0; r < M; ++r) tmp[at(r, i, M)] = Phi[at(r, i, M)] * gamma[i];
            blas::gemm<V>(false, true, M, M, K, V(1), tmp.data(), M, Phi, M, V(0), E.data(), M);
        }
        eig(n, E.data(), e.data(), vectors);
        double emax = 0.0;
        for (auto& x : e) {
            x = std::max(x, 0.0);
            emax = std::max(emax, x);
        }
        const double cut = 16.0 * K * std::numeric_limits<double>::epsilon() * emax;
        keep.resize(uz(n));
        for (int k = 0; k < n; ++k) keep[uz(k)] = e[uz(k)] > cut;
        if (vectors && !gram) {  // Z = W^H Phi (M x K)
            Z.resize(sz(M, K));
            blas::gemm<V>(true, false, M, K, M, V(1), E.data(), M, Phi, M, V(0), Z.data(), M);
        }
    }

    // T (n x m) = eigen-coordinates of R (M x m, ld M).
    void project(const V* R, int m, V* T) {
        if (gram) {
            tmp.resize(uz(K) * uz(m));
            blas::gemm<V>(true, false, K, m, M, V(1), Phi, M, R, M, V(0), tmp.data(), K);
            for (int j = 0; j < m; ++j)
                for (int i = 0; i < K; ++i) tmp[at(i, j, K)] *= g[uz(i)];
            blas::gemm<V>(true, false, K, m, K, V(1), E.data(), K, tmp.data(), K, V(0), T, n);
        } else {
            blas::gemm<V>(true, false, M, m, M, V(1), E.data(), M, R, M, V(0), T, n);
        }
    }

    // out (K x m, ld K) = Gamma Phi^H (P + c_j I)^-1 R[:, j], from T = project(R).
    void mean(const V* T, int m, const double* c, V* out) {
        Td.resize(uz(n) * uz(m));
        for (int j = 0; j < m; ++j)
            for (int k = 0; k < n; ++k) {
                const auto kk = uz(k);
                Td[at(k, j, n)] = keep[kk] ? T[at(k, j, n)] / (e[kk] + c[j]) : V(0);
            }
        if (gram) {
            blas::gemm<V>(false, false, K, m, K, V(1), E.data(), K, Td.data(), K, V(0), out, K);
            for (int j = 0; j < m; ++j)
                for (int i = 0; i < K; ++i) out[at(i, j, K)] *= g[uz(i)];
        } else {
            blas::gemm<V>(true, false, K, m, M, V(1), Z.data(), M, Td.data(), M, V(0), out, K);
            for (int j = 0; j < m; ++j)
                for (int i = 0; i < K; ++i) out[at(i, j, K)] *= gamma[i];
        }
    }

    // out[i] = gamma_i - gamma_i^2 phi_i^H (P + c I)^-1 phi_i.
    void post_var(double c, double* out) {
        d.resize(uz(n));
        for (int k = 0; k < n; ++k) {
            const auto kk = uz(k);
            d[kk] = 1.0 / (e[kk] + c);
        }
        if (gram) {
            for (int i = 0; i < K; ++i) {
                double s = 0.0;  // sum_k |V_ik|^2 d_k
                for (int k = 0; k < K; ++k) s += abs2(E[at(i, k, K)]) * d[uz(k)];
                out[i] = gamma[i] * c * s;
            }
        } else {
            for (int k = 0; k < n; ++k)
                if (!keep[uz(k)]) d[uz(k)] = 0.0;
            for (int i = 0; i < K; ++i) {
                double s = 0.0;
                const V* z = Z.data() + static_cast<idx>(i) * M;
                for (int k = 0; k < M; ++k) s += abs2(z[k]) * d[uz(k)];
                out[i] = gamma[i] - gamma[i] * gamma[i] * s;
            }
        }
    }

    // tr(P (P + lam I)^-1) from the eigenvalues.
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


// Inverse of a symmetric / Hermitian positive definite L x L matrix through its
// eigendecomposition, eigenvalues clamped below at eps * max.
template <class V>
inline void herm_inverse(int L, const V* B, V* Binv, Eig<V>& eig) {
    std::vector<V> Q(B, B + static_cast<idx>(L) * L);
    std::vector<double> b(uz(L));
    eig(L, Q.data(), b.data(), true);
    const double bmax = std::max(b.back(), std::numeric_limits<double>::min());
    for (auto& x : b) x = std::max(x, std::numeric_limits<double>::epsilon() * bmax);
    for (int c = 0; c < L; ++c)
        for (int r = 0; r < L; ++r) {
            V s(0);
            for (int k = 0; k < L; ++k)
                s += mul(Q[at(r, k, L)], conj(Q[at(c, k, L)])) / b[uz(k)];
            Binv[at(r, c, L)] = s;
        }
}

// Scale B (L x L) to unit Frobenius norm, as both originals do after each
// update of B, then write its inverse into Binv.
template <class V>
inline void normalize_and_invert(int L, std::vector<V>& B, std::vector<V>& Binv, Eig<V>& eig) {
    double fro = 0.0;
    for (const V& x : B) fro += abs2(x);
    fro = std::sqrt(fro);
    if (fro > 0)
        for (auto& x : B) x /= fro;
    herm_inverse(L, B.data(), Binv.data(), eig);
}

}  // namespace cscore::sbl::detail
