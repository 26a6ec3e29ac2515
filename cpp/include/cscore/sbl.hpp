// T-SBL and T-MSBL (Zhang & Rao 2011) on plain column-major buffers, written
// once over the scalar type V: double, or std::complex<double> for complex
// T-MSBL (T-SBL is real only).
//
// The algorithm, the order of its updates and the spectral formulation are
// described in python/cscore/decoders/sbl.py (module docstring); this header is
// the same computation without Python overhead.  Each iteration needs one
// symmetric (Hermitian) eigendecomposition of min(M, K) x min(M, K) (K = rows
// still kept): of P = Phi Gamma Phi^H when K > M, of G Phi^H Phi G when K <= M
// (sbl_linalg.hpp).  Real T-MSBL replaces it with a Cholesky factorization when
// it can.  T-SBL's (M L) x (M L) system decouples through the
// eigendecomposition of the L x L matrix B into L systems that all share that
// one decomposition.
//
// The complex form is the circular Gaussian model: rows of S are CN(0, gamma_i B)
// with B Hermitian, and every transpose of the real updates becomes a conjugate
// transpose (the factors of 2 cancel); gamma_i = Re(mu_i B^-1 mu_i^H) / L + Sigma_ii.
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
#include "cscore/result.hpp"
#include "cscore/sbl_linalg.hpp"

namespace cscore::sbl {

struct Params {
    bool exact = false;          // true: T-SBL (real only), false: T-MSBL
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

// One problem's iteration state and its steps, in the originals' order.
template <class V>
class Solver {
public:
    Solver(int M, int N, int L, const V* A, const V* Y, const Params& prm)
        : M_(M), N_(N), L_(L), Y_(Y), prm_(prm), Phi_(A, A + static_cast<idx>(M) * N),
          gamma_(uz(N), 1.0),
          mu_(uz(static_cast<idx>(N) * L), V(0)),
          keep_(uz(N)), B_(uz(static_cast<idx>(L) * L), V(0)),
          Binv_(B_.size()), lam_(prm.lam), K_(N), fixed_(!prm.exact && prm.fixed_b != nullptr) {
        std::iota(keep_.begin(), keep_.end(), 0);
        set_identity(B_);
        if (!fixed_) return;
        // A fixed B = I (the rule for L >= 10) takes the identity's quadratic
        // form, whose value is the same (B^-1 = I exactly) at L times less work.
        fixed_identity_ = true;
        for (idx q = 0; q < static_cast<idx>(L) * L; ++q) {
            B_[uz(q)] = V(prm.fixed_b[q]);
            fixed_identity_ = fixed_identity_ && prm.fixed_b[q] == (q % (L + 1) == 0 ? 1.0 : 0.0);
        }
        herm_inverse(L, B_.data(), Binv_.data(), eig_);
    }

    // Iterates to the stopping rule; writes X (N x L), gamma (N, zero for pruned
    // rows) and B (L x L).
    Info run(V* X, double* gamma_out, V* B_out) {
        Info info;
        int count = 0, K_old = N_;
        while (true) {
            if (prm_.exact) ++count;
            prune();
            if (K_ == 0) {
                info.stop = StopReason::exhausted;
                mu_.clear();
                break;
            }
            mu_old_.swap(mu_);
            mu_.assign(uz(static_cast<idx>(K_) * L_), V(0));
            sig_.resize(uz(K_));
            if constexpr (is_real<V>) {
                if (prm_.exact) {
                    tsbl_mean();
                    tsbl_gamma();
                    if (prm_.learn_lambda) lambda_update(residual2());
                }
            }
            if (!prm_.exact) {
                tmsbl_mean();
                if (prm_.learn_lambda) lambda_update(residual2());
                tmsbl_gamma();
                ++count;
            }
            // stopping rule (as in the originals: cap first, then the mean's change)
            if (count >= prm_.max_iter) {
                info.stop = StopReason::max_iter;
                break;
            }
            if (K_ == K_old && settled()) {
                info.stop = StopReason::tol;
                break;
            }
            K_old = K_;
        }
        write(X, gamma_out, B_out);
        info.n_iter = count;
        info.lam = lam_;
        return info;
    }

private:
    // B (L x L) = I.
    void set_identity(std::vector<V>& B) const {
        std::fill(B.begin(), B.end(), V(0));
        for (int j = 0; j < L_; ++j) B[at(j, j, L_)] = V(1);
    }

    // Removes the rows whose gamma fell below prune (their columns of Phi); K shrinks.
    void prune() {
        double gmin = std::numeric_limits<double>::infinity();
        for (int i = 0; i < K_; ++i) gmin = std::min(gmin, gamma_[uz(i)]);
        if (K_ == 0 || !(gmin < prm_.prune)) return;
        int k = 0;
        for (int i = 0; i < K_; ++i) {
            const auto ui = uz(i), uk = uz(k);
            if (!(gamma_[ui] > prm_.prune)) continue;
            if (k != i) {
                std::copy(Phi_.begin() + static_cast<idx>(i) * M_, Phi_.begin() + static_cast<idx>(i + 1) * M_,
                          Phi_.begin() + static_cast<idx>(k) * M_);
                gamma_[uk] = gamma_[ui];
                keep_[uk] = keep_[ui];
            }
            ++k;
        }
        K_ = k;
    }

    // ||Y - Phi mu||_F^2.
    double residual2() {
        res_.assign(Y_, Y_ + static_cast<idx>(M_) * L_);
        blas::gemm<V>(false, false, M_, L_, K_, V(-1), Phi_.data(), M_, mu_.data(), K_, V(1), res_.data(), M_);
        double s = 0.0;
        for (const V& x : res_) s += abs2(x);
        return s;
    }

    // tr(P (P + lam I)^-1) for the current gamma.
    double trace_ratio() {
        if constexpr (is_real<V>) {
            if (lam_ > 0 && chol2_.factor(M_, K_, Phi_.data(), gamma_.data(), lam_))
                return chol2_.trace_ratio();  // T-SBL: the new gamma; T-MSBL: the current one
            spec2_.build(M_, K_, Phi_.data(), gamma_.data(), false);
            return spec2_.trace_ratio(lam_);
        } else {
            return spec_.trace_ratio(lam_);  // built this iteration from the current gamma
        }
    }

    // The noise variance's update: the enhanced sum_m p_m / (lam + p_m), p =
    // diag(P), or the paper's tr(P (P + lam I)^-1).
    void lambda_update(double r2) {
        double t;
        if (prm_.enhance_lambda) {
            p_.assign(uz(M_), 0.0);
            for (int i = 0; i < K_; ++i) {
                const V* col = Phi_.data() + static_cast<idx>(i) * M_;
                for (int r = 0; r < M_; ++r) p_[uz(r)] += abs2(col[r]) * gamma_[uz(i)];
            }
            t = 0.0;
            for (double x : p_) t += x / (lam_ + x);
        } else {
            t = trace_ratio();
        }
        lam_ = r2 / (static_cast<double>(M_) * L_) + lam_ * t / M_;
    }

    // T-MSBL: mu = Gamma Phi^H (P + lam' I)^-1 Y and Sigma_ii.
    void tmsbl_mean() {
        const double lamp = lam_ + 1e-16;  // the originals add 1e-16
        if constexpr (is_real<V>) {
            if (chol_.factor(M_, K_, Phi_.data(), gamma_.data(), lamp)) {
                chol_.mean(Y_, L_, mu_.data(), K_);
                chol_.post_var(sig_.data());
                return;
            }
        }
        spec_.build(M_, K_, Phi_.data(), gamma_.data());
        T_.resize(uz(static_cast<idx>(spec_.n) * L_));
        c_.assign(uz(L_), lamp);
        spec_.project(Y_, L_, T_.data());
        spec_.mean(T_.data(), L_, c_.data(), mu_.data());
        spec_.post_var(lamp, sig_.data());
    }

    // T-MSBL: B (I while K <= M, or fixed) and gamma_i = Re(mu_i B^-1 mu_i^H) / L + Sigma_ii.
    void tmsbl_gamma() {
        const bool identity = fixed_identity_ || (!fixed_ && K_ <= M_);
        if (identity && !fixed_) {
            set_identity(B_);
        } else if (!fixed_) {
            for (int c = 0; c < L_; ++c)
                for (int r = 0; r < L_; ++r) {
                    V s(prm_.matrix_reg ? prm_.matrix_reg[at(r, c, L_)] : 0.0);
                    for (int i = 0; i < K_; ++i)
                        s += mul(conj(mu_[at(i, r, K_)]), mu_[at(i, c, K_)]) / gamma_[uz(i)];
                    B_[at(r, c, L_)] = s;
                }
            normalize_and_invert(L_, B_, Binv_, eig_);
        }
        for (int i = 0; i < K_; ++i) {
            double q = 0.0;
            if (identity) {
                for (int r = 0; r < L_; ++r) q += abs2(mu_[at(i, r, K_)]);
            } else {
                for (int c = 0; c < L_; ++c) {
                    V s(0);
                    for (int r = 0; r < L_; ++r) s += mul(mu_[at(i, r, K_)], Binv_[at(r, c, L_)]);
                    q += re(mul(conj(mu_[at(i, c, K_)]), s));
                }
            }
            gamma_[uz(i)] = q / L_ + sig_[uz(i)];
        }
    }

    // T-SBL (real): the mean and the per-channel diagonals S in the eigenbasis Q of B.
    void tsbl_mean() {
        Q_ = B_;
        bq_.resize(uz(L_));
        eig_(L_, Q_.data(), bq_.data(), true);
        const double bmax = std::max(bq_.back(), std::numeric_limits<double>::min());
        c_.resize(uz(L_));
        for (int j = 0; j < L_; ++j) {
            const auto uj = uz(j);
            bq_[uj] = std::max(bq_[uj], std::numeric_limits<double>::epsilon() * bmax);
            c_[uj] = lam_ / bq_[uj];
        }
        Yq_.resize(uz(static_cast<idx>(M_) * L_));
        blas::gemm<double>(false, false, M_, L_, L_, 1.0, Y_, M_, Q_.data(), L_, 0.0, Yq_.data(), M_);
        mut_.resize(uz(static_cast<idx>(K_) * L_));
        S_.resize(mut_.size());
        bool ok = true;  // one Cholesky factorization per decoupled channel
        for (int j = 0; j < L_ && ok; ++j) {
            ok = chol_.factor(M_, K_, Phi_.data(), gamma_.data(), c_[uz(j)]);
            if (!ok) break;
            chol_.mean(Yq_.data() + static_cast<idx>(j) * M_, 1, mut_.data() + static_cast<idx>(j) * K_, K_);
            chol_.post_var(S_.data() + static_cast<idx>(j) * K_);
        }
        if (!ok) {  // numerically singular: one eigendecomposition serves all channels
            spec_.build(M_, K_, Phi_.data(), gamma_.data());
            T_.resize(uz(static_cast<idx>(spec_.n) * L_));
            spec_.project(Yq_.data(), L_, T_.data());
            spec_.mean(T_.data(), L_, c_.data(), mut_.data());
            for (int j = 0; j < L_; ++j) spec_.post_var(c_[uz(j)], S_.data() + static_cast<idx>(j) * K_);
        }
        for (int j = 0; j < L_; ++j)
            for (int i = 0; i < K_; ++i) S_[at(i, j, K_)] *= bq_[uz(j)];
        blas::gemm<double>(false, true, K_, L_, L_, 1.0, mut_.data(), K_, Q_.data(), L_, 0.0, mu_.data(), K_);
    }

    // T-SBL (real): B (I while K <= M) and gamma from the mean and S.
    void tsbl_gamma() {
        const auto L = uz(L_);
        Binv_rot_.assign(L, 1.0);
        quad_.assign(uz(K_), 0.0);
        if (K_ <= M_) {
            set_identity(B_);
            for (int r = 0; r < L_; ++r)
                for (int i = 0; i < K_; ++i) quad_[uz(i)] += mu_[at(i, r, K_)] * mu_[at(i, r, K_)];
        } else {
            tsbl_learn_b();
            for (int i = 0; i < K_; ++i) {
                double q = 0.0;
                for (int c = 0; c < L_; ++c) {
                    double v = 0.0;
                    for (int r = 0; r < L_; ++r) v += mu_[at(i, r, K_)] * Binv_[at(r, c, L_)];
                    q += v * mu_[at(i, c, K_)];
                }
                quad_[uz(i)] = q;
            }
        }
        for (int i = 0; i < K_; ++i) {
            double v = quad_[uz(i)];
            for (int j = 0; j < L_; ++j) v += S_[at(i, j, K_)] * Binv_rot_[uz(j)];
            gamma_[uz(i)] = v / L_;
        }
    }

    // T-SBL (real, K > M): B = Q diag(sum_i S_ij / gamma_i) Q' + sum_i mu_i' mu_i / gamma_i,
    // normalized and inverted, and the diagonal of Q' B^-1 Q.
    void tsbl_learn_b() {
        std::vector<double> s(uz(L_), 0.0);
        for (int j = 0; j < L_; ++j)
            for (int i = 0; i < K_; ++i) s[uz(j)] += S_[at(i, j, K_)] / gamma_[uz(i)];
        for (int c = 0; c < L_; ++c)
            for (int r = 0; r <= c; ++r) {
                double v = 0.0;
                for (int k = 0; k < L_; ++k) v += Q_[at(r, k, L_)] * Q_[at(c, k, L_)] * s[uz(k)];
                for (int i = 0; i < K_; ++i) v += mu_[at(i, r, K_)] * mu_[at(i, c, K_)] / gamma_[uz(i)];
                B_[at(r, c, L_)] = v;
                B_[at(c, r, L_)] = v;
            }
        normalize_and_invert(L_, B_, Binv_, eig_);
        for (int j = 0; j < L_; ++j) {
            double v = 0.0;
            for (int r = 0; r < L_; ++r)
                for (int c = 0; c < L_; ++c) v += Q_[at(r, j, L_)] * Binv_[at(r, c, L_)] * Q_[at(c, j, L_)];
            Binv_rot_[uz(j)] = v;
        }
    }

    // max |mu - mu_old| < tol (called only when no row was pruned).
    bool settled() const {
        double dmu = 0.0;
        for (std::size_t q = 0; q < mu_.size(); ++q) dmu = std::max(dmu, std::abs(mu_[q] - mu_old_[q]));
        return dmu < prm_.tol;
    }

    void write(V* X, double* gamma_out, V* B_out) const {
        std::fill(X, X + static_cast<idx>(N_) * L_, V(0));
        std::fill(gamma_out, gamma_out + N_, 0.0);
        for (int i = 0; i < K_; ++i) {
            const int row = keep_[uz(i)];
            gamma_out[row] = gamma_[uz(i)];
            for (int j = 0; j < L_; ++j) X[at(row, j, N_)] = mu_[at(i, j, K_)];
        }
        std::copy(B_.begin(), B_.end(), B_out);
    }

    const int M_, N_, L_;
    const V* Y_;
    const Params& prm_;
    std::vector<V> Phi_;
    std::vector<double> gamma_;
    std::vector<V> mu_, mu_old_;
    std::vector<int> keep_;
    std::vector<V> B_, Binv_, res_, T_;
    std::vector<double> sig_, p_, c_;
    double lam_;
    int K_;
    const bool fixed_;
    bool fixed_identity_ = false;
    Spectral<V> spec_, spec2_;
    Chol chol_, chol2_;  // real only
    Eig<V> eig_;
    std::vector<double> Q_, bq_, Yq_, mut_, S_, quad_, Binv_rot_;  // T-SBL (real)
};

}  // namespace detail

// Solve one problem.  A: M x N column-major; Y: M x L column-major.  Writes
// X (N x L column-major), gamma (N, zero for pruned rows) and B (L x L,
// Hermitian for complex V).  prm.exact (T-SBL) needs real V; matrix_reg and
// fixed_b are real L x L.  Complex V needs LAPACK zheevd (std::runtime_error
// otherwise; see complex_supported).
template <class V>
inline Info solve(int M, int N, int L, const V* A, const V* Y, const Params& prm, V* X,
                  double* gamma_out, V* B_out) {
    if constexpr (!detail::is_real<V>)
        if (prm.exact) throw std::invalid_argument("T-SBL (exact) takes real data only");
    return detail::Solver<V>(M, N, L, A, Y, prm).run(X, gamma_out, B_out);
}

// True when the LAPACK routines complex T-MSBL needs were registered.
inline bool complex_supported() { return blas::Eigh<std::complex<double>>::available(); }

}  // namespace cscore::sbl
