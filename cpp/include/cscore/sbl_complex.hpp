// T-MSBL (Zhang & Rao 2011) for complex A and Y, on column-major buffers.
//
// The complex (circular Gaussian) form of the updates of sbl.hpp, with
// conjugate transposes: rows of S are CN(0, gamma_i B) with B Hermitian,
//     mu    = Gamma Phi^H (Phi Gamma Phi^H + lam' I)^-1 Y,
//     Sigma_ii = gamma_i - gamma_i^2 phi_i^H (P + lam' I)^-1 phi_i   (real),
//     lam  <- ||Y - Phi mu||_F^2 / (M L) + lam t / M,
//     B     = sum_i mu_i^H mu_i / gamma_i + R, Frobenius-normalized (Hermitian;
//             I while K <= M, fixed when given or L >= 10),
//     gamma_i = Re(mu_i B^-1 mu_i^H) / L + Sigma_ii,
// in the same order, with the same pruning, presets, lambda rules (t: the
// enhanced sum_m p_m / (lam + p_m), p = diag(P), or tr(P (P + lam I)^-1)) and
// stopping rule as the real kernel.  The circular model's factors of 2 cancel,
// so the formulas are the real ones with ^T replaced by ^H.
//
// Every step goes through the Hermitian eigendecomposition of P = Phi Gamma Phi^H
// (K > M) or of G Phi^H Phi G (K <= M), as the real kernel's spectral path (see
// python/cscore/decoders/sbl.py), with the same truncation of eigenvalues below
// 16 K eps e_max.  The eigensolver is a cyclic complex Jacobi method (SciPy
// exports no complex LAPACK routine registered with the core): portable,
// deterministic, O(n^3) per sweep on n = min(M, K) -- meant for the moderate
// sizes of array processing (M up to a few hundred).  Plain loops, no BLAS.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <limits>
#include <numeric>
#include <vector>

#include "cscore/result.hpp"
#include "cscore/sbl.hpp"

namespace cscore::sbl_complex {

using idx = std::ptrdiff_t;
using cx = std::complex<double>;

inline std::size_t usz(idx a) { return static_cast<std::size_t>(a); }
inline double abs2(cx a) { return a.real() * a.real() + a.imag() * a.imag(); }
// a * b and conj(a) * b, written out (no NaN-recovering library call).
inline cx mul(cx a, cx b) {
    return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}
inline cx mulc(cx a, cx b) {
    return {a.real() * b.real() + a.imag() * b.imag(), a.real() * b.imag() - a.imag() * b.real()};
}

// Eigendecomposition of the Hermitian n x n column-major `a` (both triangles
// read): ascending eigenvalues in w, orthonormal eigenvectors in the columns of
// a.  Cyclic Jacobi: each rotation first turns a_pq real by a phase on column q,
// then is the real Jacobi rotation of sbl.hpp.
inline void herm_eig(int n, cx* a, double* w, std::vector<cx>& v) {
    const idx N = n;
    v.assign(usz(N * N), cx(0.0, 0.0));
    for (idx i = 0; i < N; ++i) v[usz(i * (N + 1))] = cx(1.0, 0.0);
    auto at = [N](cx* m, idx r, idx c) -> cx& { return m[r + c * N]; };
    for (int sweep = 0; sweep < 100; ++sweep) {
        double off = 0.0, tot = 0.0;
        for (idx c = 0; c < N; ++c)
            for (idx r = 0; r < N; ++r) {
                const double x = abs2(at(a, r, c));
                tot += x;
                if (r != c) off += x;
            }
        if (off <= 1e-30 * tot || off == 0.0) break;
        for (idx p = 0; p < N - 1; ++p)
            for (idx q = p + 1; q < N; ++q) {
                const cx apq = at(a, p, q);
                const double mag = std::abs(apq);
                if (mag == 0.0) continue;
                const cx ph(apq.real() / mag, -apq.imag() / mag);  // e^{-i arg a_pq}
                for (idx k = 0; k < N; ++k) at(a, k, q) = mul(at(a, k, q), ph);          // A D
                for (idx k = 0; k < N; ++k) at(a, q, k) = mulc(ph, at(a, q, k));         // D^H A D
                for (idx k = 0; k < N; ++k) at(v.data(), k, q) = mul(at(v.data(), k, q), ph);
                at(a, p, q) = cx(mag, 0.0);
                at(a, q, p) = cx(mag, 0.0);
                const double theta = (at(a, q, q).real() - at(a, p, p).real()) / (2.0 * mag);
                const double t = (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(theta * theta + 1.0));
                const double cs = 1.0 / std::sqrt(t * t + 1.0), sn = t * cs;
                for (idx k = 0; k < N; ++k) {  // columns p, q
                    const cx akp = at(a, k, p), akq = at(a, k, q);
                    at(a, k, p) = cs * akp - sn * akq;
                    at(a, k, q) = sn * akp + cs * akq;
                }
                for (idx k = 0; k < N; ++k) {  // rows p, q
                    const cx apk = at(a, p, k), aqk = at(a, q, k);
                    at(a, p, k) = cs * apk - sn * aqk;
                    at(a, q, k) = sn * apk + cs * aqk;
                }
                for (idx k = 0; k < N; ++k) {
                    const cx vkp = at(v.data(), k, p), vkq = at(v.data(), k, q);
                    at(v.data(), k, p) = cs * vkp - sn * vkq;
                    at(v.data(), k, q) = sn * vkp + cs * vkq;
                }
            }
    }
    std::vector<idx> order(usz(N));
    std::iota(order.begin(), order.end(), idx{0});
    std::vector<double> diag(usz(N));
    for (idx i = 0; i < N; ++i) diag[usz(i)] = at(a, i, i).real();
    std::stable_sort(order.begin(), order.end(), [&](idx x, idx y) { return diag[usz(x)] < diag[usz(y)]; });
    for (idx i = 0; i < N; ++i) {
        const idx o = order[usz(i)];
        w[i] = diag[usz(o)];
        for (idx k = 0; k < N; ++k) at(a, k, i) = at(v.data(), k, o);
    }
}

// Inverse of a Hermitian positive semidefinite L x L matrix through its
// eigendecomposition, eigenvalues clamped below at eps * max (as sbl.hpp).
inline void herm_inverse(int L, const cx* B, cx* Binv) {
    std::vector<cx> Q(B, B + static_cast<idx>(L) * L), v;
    std::vector<double> b(usz(L));
    herm_eig(L, Q.data(), b.data(), v);
    const double bmax = std::max(b.back(), std::numeric_limits<double>::min());
    for (auto& x : b) x = std::max(x, std::numeric_limits<double>::epsilon() * bmax);
    for (idx c = 0; c < L; ++c)
        for (idx r = 0; r < L; ++r) {
            cx s(0.0, 0.0);
            for (idx k = 0; k < L; ++k) s += mulc(Q[usz(c + k * L)], Q[usz(r + k * L)]) / b[usz(k)];
            Binv[usz(r + c * L)] = s;
        }
}

// The spectral kernel of sbl.hpp with conjugate transposes.
struct Spectral {
    idx M = 0, K = 0, n = 0;
    bool gram = false;
    const cx* Phi = nullptr;        // M x K
    const double* gamma = nullptr;  // K
    std::vector<double> g, e;
    std::vector<cx> tmp, E, Z, jv;
    std::vector<char> keep;

    void build(idx M_, idx K_, const cx* Phi_, const double* gamma_) {
        M = M_; K = K_; Phi = Phi_; gamma = gamma_;
        gram = K <= M;
        n = gram ? K : M;
        E.assign(usz(n * n), cx(0.0, 0.0));
        e.resize(usz(n));
        if (gram) {  // E = (Phi G)^H (Phi G)
            g.resize(usz(K));
            for (idx i = 0; i < K; ++i) g[usz(i)] = std::sqrt(gamma[i]);
            for (idx j = 0; j < K; ++j)
                for (idx i = 0; i < K; ++i) {
                    cx s(0.0, 0.0);
                    for (idx r = 0; r < M; ++r) s += mulc(Phi[r + i * M], Phi[r + j * M]);
                    E[usz(i + j * K)] = s * (g[usz(i)] * g[usz(j)]);
                }
        } else {  // E = Phi Gamma Phi^H
            for (idx i = 0; i < K; ++i)
                for (idx c = 0; c < M; ++c) {
                    const cx pc = std::conj(Phi[c + i * M]) * gamma[i];
                    for (idx r = 0; r < M; ++r) E[usz(r + c * M)] += mul(Phi[r + i * M], pc);
                }
        }
        herm_eig(static_cast<int>(n), E.data(), e.data(), jv);
        double emax = 0.0;
        for (auto& x : e) {
            x = std::max(x, 0.0);
            emax = std::max(emax, x);
        }
        const double cut = 16.0 * static_cast<double>(K) * std::numeric_limits<double>::epsilon() * emax;
        keep.resize(usz(n));
        for (idx k = 0; k < n; ++k) keep[usz(k)] = e[usz(k)] > cut;
        if (!gram) {  // Z = W^H Phi (M x K)
            Z.assign(usz(M * K), cx(0.0, 0.0));
            for (idx i = 0; i < K; ++i)
                for (idx k = 0; k < M; ++k) {
                    cx s(0.0, 0.0);
                    for (idx r = 0; r < M; ++r) s += mulc(E[usz(r + k * M)], Phi[r + i * M]);
                    Z[usz(k + i * M)] = s;
                }
        }
    }

    // T (n x m) = eigen-coordinates of R (M x m).
    void project(const cx* R, idx m, cx* T) {
        if (gram) {
            tmp.resize(usz(K * m));
            for (idx j = 0; j < m; ++j)
                for (idx i = 0; i < K; ++i) {
                    cx s(0.0, 0.0);
                    for (idx r = 0; r < M; ++r) s += mulc(Phi[r + i * M], R[r + j * M]);
                    tmp[usz(i + j * K)] = s * g[usz(i)];
                }
        }
        const cx* src = gram ? tmp.data() : R;
        for (idx j = 0; j < m; ++j)
            for (idx k = 0; k < n; ++k) {
                cx s(0.0, 0.0);
                for (idx r = 0; r < n; ++r) s += mulc(E[usz(r + k * n)], src[r + j * n]);
                T[k + j * n] = s;
            }
    }

    // out (K x m) = Gamma Phi^H (P + c I)^-1 R, from T = project(R).
    void mean(const cx* T, idx m, double c, cx* out) const {
        std::vector<double> d(usz(n));
        for (idx k = 0; k < n; ++k) d[usz(k)] = keep[usz(k)] ? 1.0 / (e[usz(k)] + c) : 0.0;
        for (idx j = 0; j < m; ++j)
            for (idx i = 0; i < K; ++i) {
                cx s(0.0, 0.0);
                if (gram) {
                    for (idx k = 0; k < n; ++k) s += mul(E[usz(i + k * n)], T[k + j * n]) * d[usz(k)];
                    out[i + j * K] = s * g[usz(i)];
                } else {
                    for (idx k = 0; k < n; ++k) s += mulc(Z[usz(k + i * M)], T[k + j * n]) * d[usz(k)];
                    out[i + j * K] = s * gamma[i];
                }
            }
    }

    // out[i] = gamma_i - gamma_i^2 phi_i^H (P + c I)^-1 phi_i.
    void post_var(double c, double* out) const {
        for (idx i = 0; i < K; ++i) {
            double s = 0.0;
            for (idx k = 0; k < n; ++k) {
                const double dk = 1.0 / (e[usz(k)] + c);
                if (gram) {
                    s += abs2(E[usz(i + k * n)]) * dk;
                } else if (keep[usz(k)]) {
                    s += abs2(Z[usz(k + i * M)]) * dk;
                }
            }
            out[i] = gram ? gamma[i] * c * s : gamma[i] - gamma[i] * gamma[i] * s;
        }
    }

    double trace_ratio(double lam) const {
        double s = 0.0;
        for (double x : e) s += x / (x + lam);
        return s;
    }
};

// Removes the rows whose gamma fell below prune (their columns of Phi); K shrinks.
inline void prune_rows(double prune, idx M, idx& K, std::vector<cx>& Phi, std::vector<double>& gamma,
                       std::vector<idx>& keep) {
    double gmin = std::numeric_limits<double>::infinity();
    for (idx i = 0; i < K; ++i) gmin = std::min(gmin, gamma[usz(i)]);
    if (K == 0 || !(gmin < prune)) return;
    idx k = 0;
    for (idx i = 0; i < K; ++i) {
        if (!(gamma[usz(i)] > prune)) continue;
        if (k != i) {
            std::copy(Phi.begin() + i * M, Phi.begin() + (i + 1) * M, Phi.begin() + k * M);
            gamma[usz(k)] = gamma[usz(i)];
            keep[usz(k)] = keep[usz(i)];
        }
        ++k;
    }
    K = k;
}

// B = sum_i mu_i^H mu_i / gamma_i + R (L x L), Frobenius-normalized, and its inverse.
inline void learn_b(idx K, idx L, const std::vector<cx>& mu, const std::vector<double>& gamma,
                    const double* reg, std::vector<cx>& B, std::vector<cx>& Binv) {
    double fro = 0.0;
    for (idx c = 0; c < L; ++c)
        for (idx r = 0; r < L; ++r) {
            cx s(reg != nullptr ? reg[r + c * L] : 0.0, 0.0);
            for (idx i = 0; i < K; ++i) s += mulc(mu[usz(i + r * K)], mu[usz(i + c * K)]) / gamma[usz(i)];
            B[usz(r + c * L)] = s;
            fro += abs2(s);
        }
    fro = std::sqrt(fro);
    if (fro > 0)
        for (auto& x : B) x /= fro;
    herm_inverse(static_cast<int>(L), B.data(), Binv.data());
}

// Solve one problem.  A: M x N column-major; Y: M x L column-major.  Writes X
// (N x L column-major), gamma (N, zero for pruned rows) and B (L x L, Hermitian).
// prm.exact must be false (T-SBL has no complex form here); matrix_reg and
// fixed_b are real L x L.
inline sbl::Info solve(int M_, int N_, int L_, const cx* A, const cx* Y, const sbl::Params& prm,
                       cx* X, double* gamma_out, cx* B_out) {
    const idx M = M_, N = N_, L = L_;
    std::vector<cx> Phi(A, A + M * N), mu(usz(N * L), cx(0.0, 0.0)), mu_old, T, res;
    std::vector<double> gamma(usz(N), 1.0), sig;
    std::vector<idx> keep(usz(N));
    std::iota(keep.begin(), keep.end(), idx{0});
    std::vector<cx> B(usz(L * L), cx(0.0, 0.0)), Binv(B.size());
    for (idx j = 0; j < L; ++j) B[usz(j + j * L)] = cx(1.0, 0.0);
    const bool fixed = prm.fixed_b != nullptr;
    // A fixed B = I (the rule for L >= 10) takes the identity's quadratic form,
    // whose value is the same (B^-1 = I exactly) at L times less work.
    bool fixed_identity = fixed;
    if (fixed) {
        for (idx q = 0; q < L * L; ++q) {
            B[usz(q)] = cx(prm.fixed_b[q], 0.0);
            fixed_identity = fixed_identity && prm.fixed_b[q] == (q % (L + 1) == 0 ? 1.0 : 0.0);
        }
        herm_inverse(L_, B.data(), Binv.data());
    }
    Spectral spec;
    double lam = prm.lam;
    idx K = N, K_old = N;
    sbl::Info info;
    int count = 0;
    while (true) {
        prune_rows(prm.prune, M, K, Phi, gamma, keep);
        if (K == 0) {
            info.stop = StopReason::exhausted;
            mu.clear();
            break;
        }
        mu_old.swap(mu);
        mu.assign(usz(K * L), cx(0.0, 0.0));
        sig.resize(usz(K));
        const double lamp = lam + 1e-16;  // the originals add 1e-16
        spec.build(M, K, Phi.data(), gamma.data());
        T.resize(usz(spec.n * L));
        spec.project(Y, L, T.data());
        spec.mean(T.data(), L, lamp, mu.data());
        spec.post_var(lamp, sig.data());
        if (prm.learn_lambda) {
            res.assign(Y, Y + M * L);
            double r2 = 0.0;
            for (idx c = 0; c < L; ++c)
                for (idx r = 0; r < M; ++r) {
                    cx s = res[usz(r + c * M)];
                    for (idx i = 0; i < K; ++i) s -= mul(Phi[usz(r + i * M)], mu[usz(i + c * K)]);
                    r2 += abs2(s);
                }
            double t = 0.0;
            if (prm.enhance_lambda) {
                for (idx r = 0; r < M; ++r) {
                    double p = 0.0;
                    for (idx i = 0; i < K; ++i) p += abs2(Phi[usz(r + i * M)]) * gamma[usz(i)];
                    t += p / (lam + p);
                }
            } else {
                t = spec.trace_ratio(lam);  // the eigenvalues of the current P
            }
            lam = r2 / (static_cast<double>(M) * static_cast<double>(L)) + lam * t / static_cast<double>(M);
        }
        const bool identity = fixed_identity || (!fixed && K <= M);
        if (identity && !fixed) {
            std::fill(B.begin(), B.end(), cx(0.0, 0.0));
            for (idx j = 0; j < L; ++j) B[usz(j + j * L)] = cx(1.0, 0.0);
        } else if (!fixed) {
            learn_b(K, L, mu, gamma, prm.matrix_reg, B, Binv);
        }
        for (idx i = 0; i < K; ++i) {
            double q = 0.0;
            if (identity) {
                for (idx r = 0; r < L; ++r) q += abs2(mu[usz(i + r * K)]);
            } else {
                for (idx c = 0; c < L; ++c) {
                    cx s(0.0, 0.0);
                    for (idx r = 0; r < L; ++r) s += mul(mu[usz(i + r * K)], Binv[usz(r + c * L)]);
                    q += mulc(mu[usz(i + c * K)], s).real();  // Re(mu_i B^-1 mu_i^H)
                }
            }
            gamma[usz(i)] = q / static_cast<double>(L) + sig[usz(i)];
        }
        ++count;
        if (count >= prm.max_iter) {
            info.stop = StopReason::max_iter;
            break;
        }
        if (K == K_old) {
            double dmu = 0.0;
            for (std::size_t q = 0; q < mu.size(); ++q) dmu = std::max(dmu, std::abs(mu[q] - mu_old[q]));
            if (dmu < prm.tol) {
                info.stop = StopReason::tol;
                break;
            }
        }
        K_old = K;
    }
    std::fill(X, X + N * L, cx(0.0, 0.0));
    std::fill(gamma_out, gamma_out + N, 0.0);
    for (idx i = 0; i < K; ++i) {
        gamma_out[keep[usz(i)]] = gamma[usz(i)];
        for (idx j = 0; j < L; ++j) X[keep[usz(i)] + j * N] = mu[usz(i + j * K)];
    }
    std::copy(B.begin(), B.end(), B_out);
    info.n_iter = count;
    info.lam = lam;
    return info;
}

}  // namespace cscore::sbl_complex
