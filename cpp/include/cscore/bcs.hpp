// Bayesian compressive sensing: BCS (Ji, Xue & Carin 2008) and multitask BCS
// (Ji, Dunson & Carin 2009).  Both are the fast sequential marginal-likelihood
// algorithm of Tipping & Faul (2003): one atom per iteration is added,
// re-estimated or deleted, whichever raises the marginal likelihood the most.
//
// Notation (one problem): A is (M, N) and stored column by column (At, atom j
// at At + j*M); the selected atoms are Phi = A[:, index], with precisions alpha.
//   Sig = (diag(alpha) + beta Phi' Phi)^-1,  mu_l = beta Sig Phi' t_l,
//   S_j = beta a_j'a_j - beta^2 a_j' Phi Sig Phi' a_j,
//   Q_jl = beta a_j't_l - beta^2 a_j' Phi Sig Phi' t_l.
// BCS has one task and a fixed noise precision beta = 1/sigma2 (the noise
// variance is not re-estimated during the iterations, as in the authors'
// BCS_fast_rvm.m; a final re-estimate is reported).  MT-BCS has L tasks that
// share A and alpha, and integrates the noise precision out under a Gamma(a, b)
// prior: beta = 1 in the formulas above and the per-task scalar
// G_l = t_l't_l + 2b - t_l'Phi Sig Phi' t_l enters the likelihood.
//
// Sig is kept up to date with the rank-one formulas of Tipping & Faul (O(m^2)
// per step plus one A' v product), and is recomputed from a Cholesky
// factorization of Sig^-1 = diag(alpha) + beta Phi'Phi every max(`kRefreshEvery`,
// 4 m) updates, whenever an update leaves an impossible state (S <= 0, alpha <= S for
// a selected atom, non-finite values), and at the end for the returned weights.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "cscore/result.hpp"

namespace cscore::bcs {

using idx_t = std::ptrdiff_t;

struct Options {
    double tol = 1e-8;      // eta: relative threshold on the change of the ML gain
    long max_iter = 10000;  // loop bound of the originals (count = 1..10000)
};

// What one problem returns besides the weights.
struct Info {
    long n_iter = 0;                     // value of the iteration counter at exit
    StopReason stop = StopReason::tol;   // tol, max_iter, exhausted, dependent
    std::vector<idx_t> index;            // selected atoms, in selection order
    std::vector<double> alpha;           // their precisions
    std::vector<double> sig_diag;        // diag(Sig): posterior variances (BCS: errbars^2)
    std::vector<double> ml;              // ML gain of each iteration (the originals' ML)
    std::vector<double> noise_var;       // BCS: re-estimated sigma2; MT: E[sigma_l^2 | y]
    long n_add = 0, n_reestimate = 0, n_delete = 0;  // moves made (the initial atom not counted)
    long n_refresh = 0;                  // Cholesky recomputations forced by an impossible state
};

namespace detail {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr long kRefreshEvery = 50;

inline double dot(const double* a, const double* b, idx_t n) {
    double s = 0.0;
    for (idx_t i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
}

// log|x|: the real part of MATLAB's log, which mt_CS.m applies (sum(real(ml))).
inline double rlog(double x) { return std::log(std::fabs(x)); }

// Sequential sparse Bayesian learning state shared by BCS and MT-BCS.
class Engine {
public:
    Engine(const double* A, const double* At, idx_t M, idx_t N, const double* T, idx_t L,
           double beta)
        : A_(A), At_(At), M_(M), N_(N), T_(T), L_(L), beta_(beta),
          pos_(static_cast<std::size_t>(N), -1), S_(static_cast<std::size_t>(N)),
          Q_(static_cast<std::size_t>(N * L)), G_(static_cast<std::size_t>(L), 0.0),
          PHIt_(static_cast<std::size_t>(N * L)), PHI2_(static_cast<std::size_t>(N)),
          u_(static_cast<std::size_t>(M)), comm_(static_cast<std::size_t>(N)) {
        for (idx_t j = 0; j < N; ++j) {
            const double* a = col(j);
            PHI2_[j] = dot(a, a, M);
            for (idx_t l = 0; l < L; ++l) PHIt_[l * N + j] = dot(a, T + l * M, M);
        }
        grow(8);
    }

    const double* col(idx_t j) const { return At_ + j * M_; }
    idx_t m() const { return static_cast<idx_t>(index_.size()); }
    double& sig(idx_t i, idx_t k) { return Sig_[i * cap_ + k]; }
    double& mu(idx_t l, idx_t i) { return mu_[l * cap_ + i]; }

    // ---- the state, read by the decision rules ----
    const double* A_;   // (M, N) row-major: A' u as row-wise axpys (vectorizes)
    const double* At_;  // (N, M) row-major: contiguous atoms
    idx_t M_, N_;
    const double* T_;
    idx_t L_;
    double beta_;
    std::vector<idx_t> index_;
    std::vector<idx_t> pos_;     // position of atom j in index_, or -1
    std::vector<double> alpha_;
    std::vector<double> S_, Q_, G_, PHIt_, PHI2_;
    std::vector<double> Sig_, mu_;
    idx_t cap_ = 0;
    long updates_since_refresh_ = 0;

    // Start from one atom with precision alpha0 (both rules start this way).
    void init(idx_t j, double alpha0, double G2base) {
        index_.assign(1, j);
        alpha_.assign(1, alpha0);
        pos_[j] = 0;
        const double sigv = 1.0 / (alpha0 + beta_ * PHI2_[j]);
        sig(0, 0) = sigv;
        atx(col(j), comm_.data());
        for (idx_t k = 0; k < N_; ++k) comm_[k] *= beta_;
        for (idx_t k = 0; k < N_; ++k) S_[k] = beta_ * PHI2_[k] - sigv * comm_[k] * comm_[k];
        for (idx_t l = 0; l < L_; ++l) {
            const double pt = PHIt_[l * N_ + j];
            mu(l, 0) = sigv * beta_ * pt;
            for (idx_t k = 0; k < N_; ++k)
                Q_[l * N_ + k] = beta_ * PHIt_[l * N_ + k] - sigv * beta_ * pt * comm_[k];
            const double* t = T_ + l * M_;
            G_[l] = dot(t, t, M_) + G2base - sigv * pt * pt;
        }
        G2base_ = G2base;
    }

    // u = Phi w (w has m entries)
    void phi_times(const double* w) {
        std::fill(u_.begin(), u_.end(), 0.0);
        for (idx_t i = 0; i < m(); ++i) {
            const double* a = col(index_[i]);
            const double wi = w[i];
            for (idx_t r = 0; r < M_; ++r) u_[r] += a[r] * wi;
        }
    }
    // out = A' v, summing over rows in order (the same rounding as a dot product)
    void atx(const double* v, double* out) const {
        std::fill(out, out + N_, 0.0);
        for (idx_t r = 0; r < M_; ++r) {
            const double* row = A_ + r * N_;
            const double vr = v[r];
            for (idx_t k = 0; k < N_; ++k) out[k] += row[k] * vr;
        }
    }
    // comm = beta A' u
    void at_times_u() {
        atx(u_.data(), comm_.data());
        if (beta_ != 1.0)
            for (idx_t k = 0; k < N_; ++k) comm_[k] *= beta_;
    }

    void reestimate(idx_t which, double Alpha) {
        const idx_t mm = m();
        sigi_.assign(static_cast<std::size_t>(mm), 0.0);
        for (idx_t i = 0; i < mm; ++i) sigi_[i] = sig(i, which);
        const double Sigii = sigi_[which];
        const double delta = Alpha - alpha_[which];
        const double ki = delta / (1.0 + Sigii * delta);
        for (idx_t i = 0; i < mm; ++i)
            for (idx_t k = 0; k < mm; ++k) sig(i, k) -= ki * sigi_[i] * sigi_[k];
        phi_times(sigi_.data());
        at_times_u();
        for (idx_t k = 0; k < N_; ++k) S_[k] += ki * comm_[k] * comm_[k];
        for (idx_t l = 0; l < L_; ++l) {
            const double mui = mu(l, which);
            for (idx_t i = 0; i < mm; ++i) mu(l, i) -= ki * mui * sigi_[i];
            double* q = &Q_[l * N_];
            for (idx_t k = 0; k < N_; ++k) q[k] += ki * mui * comm_[k];
            G_[l] += ki * mui * mui;
        }
        alpha_[which] = Alpha;
        ++updates_since_refresh_;
    }

    void add(idx_t j, double Alpha) {
        const idx_t mm = m();
        if (mm + 1 > cap_) grow(std::max<idx_t>(2 * cap_, mm + 1));
        const double Sigii = 1.0 / (Alpha + S_[j]);
        const double* aj = col(j);
        bvec_.assign(static_cast<std::size_t>(mm), 0.0);
        for (idx_t i = 0; i < mm; ++i) bvec_[i] = dot(col(index_[i]), aj, M_);
        comm1_.assign(static_cast<std::size_t>(mm), 0.0);
        for (idx_t i = 0; i < mm; ++i) {
            double s = 0.0;
            for (idx_t k = 0; k < mm; ++k) s += sig(i, k) * bvec_[k];
            comm1_[i] = beta_ * s;
        }
        // e = a_j - Phi comm1 (before the new atom joins)
        phi_times(comm1_.data());
        for (idx_t r = 0; r < M_; ++r) u_[r] = aj[r] - u_[r];
        for (idx_t i = 0; i < mm; ++i) {
            for (idx_t k = 0; k < mm; ++k) sig(i, k) += Sigii * comm1_[i] * comm1_[k];
            sig(i, mm) = -Sigii * comm1_[i];
            sig(mm, i) = -Sigii * comm1_[i];
        }
        sig(mm, mm) = Sigii;
        at_times_u();
        for (idx_t k = 0; k < N_; ++k) S_[k] -= Sigii * comm_[k] * comm_[k];
        for (idx_t l = 0; l < L_; ++l) {
            const double mui = Sigii * Q_[l * N_ + j];
            for (idx_t i = 0; i < mm; ++i) mu(l, i) -= mui * comm1_[i];
            mu(l, mm) = mui;
            double* q = &Q_[l * N_];
            for (idx_t k = 0; k < N_; ++k) q[k] -= mui * comm_[k];
            // t_l' e = PHIt_j - PHIt_sel' comm1
            double te = PHIt_[l * N_ + j];
            for (idx_t i = 0; i < mm; ++i) te -= PHIt_[l * N_ + index_[i]] * comm1_[i];
            G_[l] -= Sigii * te * te;
        }
        index_.push_back(j);
        alpha_.push_back(Alpha);
        pos_[j] = mm;
        ++updates_since_refresh_;
    }

    void remove(idx_t which) {
        const idx_t mm = m();
        sigi_.assign(static_cast<std::size_t>(mm), 0.0);
        for (idx_t i = 0; i < mm; ++i) sigi_[i] = sig(i, which);
        const double Sigii = sigi_[which];
        for (idx_t i = 0; i < mm; ++i)
            for (idx_t k = 0; k < mm; ++k) sig(i, k) -= sigi_[i] * sigi_[k] / Sigii;
        phi_times(sigi_.data());  // with the atom still in Phi
        at_times_u();
        for (idx_t k = 0; k < N_; ++k) S_[k] += comm_[k] * comm_[k] / Sigii;
        for (idx_t l = 0; l < L_; ++l) {
            const double mui = mu(l, which);
            for (idx_t i = 0; i < mm; ++i) mu(l, i) -= mui / Sigii * sigi_[i];
            double* q = &Q_[l * N_];
            for (idx_t k = 0; k < N_; ++k) q[k] += mui / Sigii * comm_[k];
            G_[l] += mui * mui / Sigii;
        }
        // drop row/column `which`, keeping the order of the others
        for (idx_t i = 0; i < mm; ++i) {
            if (i == which) continue;
            const idx_t ri = i < which ? i : i - 1;
            for (idx_t k = 0; k < mm; ++k) {
                if (k == which) continue;
                const idx_t rk = k < which ? k : k - 1;
                sig(ri, rk) = sig(i, k);
            }
        }
        for (idx_t l = 0; l < L_; ++l)
            for (idx_t i = which; i + 1 < mm; ++i) mu(l, i) = mu(l, i + 1);
        pos_[index_[which]] = -1;
        index_.erase(index_.begin() + which);
        alpha_.erase(alpha_.begin() + which);
        for (idx_t i = which; i < m(); ++i) pos_[index_[i]] = i;
        ++updates_since_refresh_;
    }

    // Recompute Sig and mu (and, with full, S, Q, G) from a Cholesky
    // factorization of Sig^-1.  Returns false when Sig^-1 is not numerically
    // positive definite (the rank-one state is then left as it was).
    bool refresh(bool full) {
        const idx_t mm = m();
        updates_since_refresh_ = 0;
        if (mm == 0) {
            for (idx_t k = 0; k < N_; ++k) S_[k] = beta_ * PHI2_[k];
            for (idx_t l = 0; l < L_; ++l) {
                for (idx_t k = 0; k < N_; ++k) Q_[l * N_ + k] = beta_ * PHIt_[l * N_ + k];
                const double* t = T_ + l * M_;
                G_[l] = dot(t, t, M_) + G2base_;
            }
            return true;
        }
        // H = diag(alpha) + beta Phi'Phi, lower Cholesky factor in H (row-major, ld mm)
        std::vector<double> H(static_cast<std::size_t>(mm * mm));
        for (idx_t i = 0; i < mm; ++i)
            for (idx_t k = 0; k <= i; ++k) {
                double v = beta_ * dot(col(index_[i]), col(index_[k]), M_);
                if (i == k) v += alpha_[i];
                H[i * mm + k] = v;
            }
        for (idx_t j = 0; j < mm; ++j) {
            double d = H[j * mm + j];
            for (idx_t k = 0; k < j; ++k) d -= H[j * mm + k] * H[j * mm + k];
            if (!(d > 0.0) || !std::isfinite(d)) return false;
            d = std::sqrt(d);
            H[j * mm + j] = d;
            for (idx_t i = j + 1; i < mm; ++i) {
                double v = H[i * mm + j];
                for (idx_t k = 0; k < j; ++k) v -= H[i * mm + k] * H[j * mm + k];
                H[i * mm + j] = v / d;
            }
        }
        // Linv (lower), then Sig = Linv' Linv
        std::vector<double> Li(static_cast<std::size_t>(mm * mm), 0.0);
        for (idx_t c = 0; c < mm; ++c) {
            Li[c * mm + c] = 1.0 / H[c * mm + c];
            for (idx_t i = c + 1; i < mm; ++i) {
                double v = 0.0;
                for (idx_t k = c; k < i; ++k) v -= H[i * mm + k] * Li[k * mm + c];
                Li[i * mm + c] = v / H[i * mm + i];
            }
        }
        for (idx_t i = 0; i < mm; ++i)
            for (idx_t k = 0; k <= i; ++k) {
                double v = 0.0;
                for (idx_t r = i; r < mm; ++r) v += Li[r * mm + i] * Li[r * mm + k];
                sig(i, k) = v;
                sig(k, i) = v;
            }
        for (idx_t l = 0; l < L_; ++l)
            for (idx_t i = 0; i < mm; ++i) {
                double v = 0.0;
                for (idx_t k = 0; k < mm; ++k) v += sig(i, k) * PHIt_[l * N_ + index_[k]];
                mu(l, i) = beta_ * v;
            }
        if (!full) return true;
        // S_j = beta PHI2_j - beta^2 || Linv Phi' a_j ||^2
        std::vector<double> Bm(static_cast<std::size_t>(mm * N_)), bj(static_cast<std::size_t>(mm));
        for (idx_t i = 0; i < mm; ++i) atx(col(index_[i]), &Bm[i * N_]);
        for (idx_t j = 0; j < N_; ++j) {
            for (idx_t i = 0; i < mm; ++i) bj[i] = Bm[i * N_ + j];
            double w2 = 0.0;
            for (idx_t i = 0; i < mm; ++i) {
                double v = 0.0;
                for (idx_t k = 0; k <= i; ++k) v += Li[i * mm + k] * bj[k];
                w2 += v * v;
            }
            S_[j] = beta_ * PHI2_[j] - beta_ * beta_ * w2;
        }
        // Q_l = beta A'(t_l - Phi mu_l),  G_l = t_l't_l + 2b - PHIt_sel' mu_l / beta
        for (idx_t l = 0; l < L_; ++l) {
            phi_times(&mu_[l * cap_]);
            const double* t = T_ + l * M_;
            for (idx_t r = 0; r < M_; ++r) u_[r] = t[r] - u_[r];
            at_times_u();
            for (idx_t k = 0; k < N_; ++k) Q_[l * N_ + k] = comm_[k];
            double g = dot(t, t, M_) + G2base_;
            for (idx_t i = 0; i < mm; ++i) g -= PHIt_[l * N_ + index_[i]] * mu(l, i) / beta_;
            G_[l] = g;
        }
        return true;
    }

    // Is the state one the decision rule can use?
    bool sane() const {
        for (idx_t k = 0; k < N_; ++k)
            if (pos_[k] < 0 && (!(S_[k] > 0.0) || !std::isfinite(S_[k]))) return false;
        for (idx_t i = 0; i < m(); ++i) {
            const double d = Sig_[i * cap_ + i];
            if (!(d > 0.0) || !std::isfinite(d) || !(alpha_[i] > 0.0) || !(alpha_[i] < kInf))
                return false;
        }
        for (double v : Q_)
            if (!std::isfinite(v)) return false;
        for (double v : G_)
            if (!std::isfinite(v)) return false;
        return true;
    }

    // For a selected atom (position i) the exact identities Sig_ii = 1/(alpha_i + s_i),
    // mu_i = Sig_ii q_i give s_i, q_i, S_i = alpha_i s_i / (alpha_i + s_i) and
    // Q_i = alpha_i q_i / (alpha_i + s_i) without the cancellation that the
    // running S, Q vectors suffer when beta a_i'a_i >> alpha_i (tiny noise).
    struct InModel {
        double s, S, sig, alpha;
    };
    InModel in_model(idx_t i) const {
        const double d = Sig_[i * cap_ + i], a = alpha_[i];
        const double sv = 1.0 / d - a;
        return {sv, a * sv * d, d, a};
    }
    double q_in(idx_t l, idx_t i) const { return mu_[l * cap_ + i] / Sig_[i * cap_ + i]; }
    double Q_in(idx_t l, idx_t i) const { return alpha_[i] * mu_[l * cap_ + i]; }

    void write_weights(double* x) {
        for (idx_t l = 0; l < L_; ++l) {
            double* xl = x + l * N_;
            std::fill(xl, xl + N_, 0.0);
            for (idx_t i = 0; i < m(); ++i) xl[index_[i]] = mu(l, i);
        }
    }

    double residual_sq(idx_t l) {
        phi_times(&mu_[l * cap_]);
        const double* t = T_ + l * M_;
        double r = 0.0;
        for (idx_t k = 0; k < M_; ++k) r += (t[k] - u_[k]) * (t[k] - u_[k]);
        return r;
    }

private:
    void grow(idx_t cap) {
        std::vector<double> ns(static_cast<std::size_t>(cap * cap), 0.0);
        std::vector<double> nm(static_cast<std::size_t>(cap * L_), 0.0);
        for (idx_t i = 0; i < cap_; ++i)
            for (idx_t k = 0; k < cap_; ++k) ns[i * cap + k] = Sig_[i * cap_ + k];
        for (idx_t l = 0; l < L_; ++l)
            for (idx_t i = 0; i < cap_; ++i) nm[l * cap + i] = mu_[l * cap_ + i];
        Sig_.swap(ns);
        mu_.swap(nm);
        cap_ = cap;
    }

    double G2base_ = 0.0;
    std::vector<double> u_, comm_, sigi_, bvec_, comm1_;
};

// Index of the largest entry, ignoring NaN (MATLAB's max); -1 when none is > -inf.
inline idx_t argmax(const std::vector<double>& v, double& best) {
    best = -kInf;
    idx_t at = -1;
    for (std::size_t j = 0; j < v.size(); ++j)
        if (v[j] > best) {
            best = v[j];
            at = static_cast<idx_t>(j);
        }
    return at;
}

// Makes the state usable (refreshing it when it is not); false if impossible.
inline bool ensure_sane(Engine& e, long& n_forced) {
    // a refresh costs about m updates, so space refreshes at least 4 m updates apart
    if (e.updates_since_refresh_ >= std::max<long>(kRefreshEvery, 4 * static_cast<long>(e.m())))
        e.refresh(true);
    if (e.sane()) return true;
    ++n_forced;
    return e.refresh(true) && e.sane();
}

// Carry out the chosen move on atom idx: re-estimate its precision to alpha if
// it is in the model, else add it with alpha (keep = true); delete it if it is in
// the model and should go (keep = false).  Counts the move in info.
inline void apply_move(Engine& e, idx_t idx, bool keep, double alpha, Info& info) {
    const idx_t p = e.pos_[idx];
    if (keep) {
        if (p >= 0) {
            e.reestimate(p, alpha);
            ++info.n_reestimate;
        } else {
            e.add(idx, alpha);
            ++info.n_add;
        }
    } else if (p >= 0) {
        e.remove(p);
        ++info.n_delete;
    }
}

// Each iteration's candidate moves: per atom the likelihood gain (ml), whether
// the atom would be kept (grow: added or re-estimated; else deleted) and the
// precision it would get.
struct Moves {
    std::vector<double> ml, alpha;
    std::vector<char> grow;
    explicit Moves(idx_t N)
        : ml(static_cast<std::size_t>(N)), alpha(static_cast<std::size_t>(N)),
          grow(static_cast<std::size_t>(N)) {}
};

// The loop both algorithms share, for iterations first..opt.max_iter: make the
// state sane, score every atom (score(j) returns atom j's gain and fills
// mv.grow[j], mv.alpha[j]), take the best move, stop when the change of the
// gain falls below opt.tol * tol_scale(info.ml, the largest gain so far), else
// carry the move out.  Sets info.stop; returns the iteration counter at exit
// (opt.max_iter when the cap ended the loop).
template <class Score, class Scale>
inline long run_moves(Engine& e, long first, const Options& opt, Info& info, Moves& mv,
                      Score&& score, Scale&& tol_scale) {
    double mlmax = -kInf;
    for (double v : info.ml) mlmax = std::max(mlmax, v);
    for (long count = first; count <= opt.max_iter; ++count) {
        if (!ensure_sane(e, info.n_refresh)) {
            info.stop = StopReason::dependent;
            return count;
        }
        for (std::size_t j = 0; j < mv.ml.size(); ++j) mv.ml[j] = score(static_cast<idx_t>(j));
        double best;
        const idx_t idx = argmax(mv.ml, best);
        if (idx < 0) {  // nothing can change any more
            info.stop = StopReason::exhausted;
            return count;
        }
        info.ml.push_back(best);
        mlmax = std::max(mlmax, best);
        const std::size_t c = info.ml.size();
        if (count > 2 && std::fabs(info.ml[c - 1] - info.ml[c - 2]) < tol_scale(info.ml, mlmax) * opt.tol) {
            info.stop = StopReason::tol;
            return count;
        }
        apply_move(e, idx, mv.grow[idx] != 0, mv.alpha[idx], info);
    }
    info.stop = StopReason::max_iter;
    return opt.max_iter;
}

// BCS: the gain of the best move on atom j (Tipping & Faul's add, re-estimate or
// delete), its direction and its precision in mv.
inline double bcs_score(const Engine& e, idx_t j, Moves& mv) {
    const idx_t p = e.pos_[j];
    double S = e.S_[j], Q = e.Q_[j], s = S, q = Q;
    if (p >= 0) {
        const auto im = e.in_model(p);
        S = im.S;
        s = im.s;
        Q = e.Q_in(0, p);
        q = e.q_in(0, p);
    }
    const double theta = q * q - s;
    mv.grow[j] = theta > 0.0;
    if (theta > 0.0) {
        const double Alpha = s * s / theta;
        mv.alpha[j] = Alpha;
        if (p >= 0) {
            const double a = e.alpha_[p];
            const double d = (a - Alpha) / (Alpha * a);
            return Q * Q * d / (S * d + 1.0) - std::log(1.0 + S * d);
        }
        return (Q * Q - S) / S + std::log(S / (Q * Q));
    }
    if (p >= 0) {
        const double a = e.alpha_[p];
        const double as = a * e.in_model(p).sig;  // = 1 - S/a
        return Q * Q / (S - a) - std::log(as);
    }
    return -kInf;
}

// MT-BCS's initial atom: the largest likelihood gain (from G2_l = t_l't_l + 2b)
// with a positive precision.  Returns the atom (-1 when none) and its precision
// and gain in alpha0, ml0; uses mv.ml as scratch.
inline idx_t mt_first_atom(const Engine& e, const std::vector<double>& G2, double K, Moves& mv,
                           double& alpha0, double& ml0) {
    const idx_t N = static_cast<idx_t>(mv.ml.size()), L = static_cast<idx_t>(G2.size());
    for (idx_t j = 0; j < N; ++j) {
        double v = 0.0;
        for (idx_t l = 0; l < L; ++l) {
            const double pt = e.PHIt_[l * N + j];
            const double X = G2[l] * e.PHI2_[j] / (pt * pt);
            v += K * std::log(X / K) - (K - 1.0) * std::log((X - 1.0) / (K - 1.0));
        }
        mv.ml[j] = v;
    }
    for (;;) {
        double best;
        const idx_t j = argmax(mv.ml, best);
        if (j < 0) return -1;
        double den = 0.0;
        for (idx_t l = 0; l < L; ++l) {
            const double pt = e.PHIt_[l * N + j], p2 = e.PHI2_[j];
            den += (K * pt * pt / G2[l] - p2) / (p2 * (p2 - pt * pt / G2[l]));
        }
        const double al = static_cast<double>(L) / den;
        if (al > 0.0) {
            alpha0 = al;
            ml0 = best;
            return j;
        }
        mv.ml[j] = -kInf;  // mt_CS.m sets 0 here, which can loop forever
    }
}

// MT-BCS: the gain of the best move on atom j over the L tasks (K = M + 2a),
// its direction and its precision (theta) in mv.
inline double mt_score(const Engine& e, idx_t j, idx_t L, double K, Moves& mv) {
    const idx_t N = static_cast<idx_t>(mv.ml.size());
    const idx_t p = e.pos_[j];
    const auto im = p >= 0 ? e.in_model(p) : Engine::InModel{e.S_[j], e.S_[j], 0.0, 0.0};
    const double S = im.S, s = im.s, al = im.alpha;
    // per task: Q, q and g (g = G + Q^2/(alpha - S) = G + mu_i^2/Sig_ii in the model)
    const auto Qf = [&](idx_t l) { return p >= 0 ? e.Q_in(l, p) : e.Q_[l * N + j]; };
    const auto qf = [&](idx_t l) { return p >= 0 ? e.q_in(l, p) : e.Q_[l * N + j]; };
    const auto gf = [&](idx_t l) {
        if (p < 0) return e.G_[l];
        const double mui = e.mu_[l * e.cap_ + p];
        return e.G_[l] + mui * mui / im.sig;
    };
    double den = 0.0;
    for (idx_t l = 0; l < L; ++l) {
        const double q = qf(l), g = gf(l);
        const double q2g = q * q / g;
        den += (K * q2g - s) / (s * (s - q2g));
    }
    const double th = static_cast<double>(L) / den;
    mv.alpha[j] = th;
    mv.grow[j] = th > 0.0;
    double v = 0.0;
    if (th > 0.0) {
        if (p >= 0) {  // re-estimate: Alpha1 = theta, Alpha0 = alpha
            const double d = 1.0 / th - 1.0 / al;
            for (idx_t l = 0; l < L; ++l) {
                const double q = qf(l), g = gf(l);
                v += (K - 1.0) * rlog(1.0 + S * d) +
                     K * rlog(((al + s) * g - q * q) * th / (((th + s) * g - q * q) * al));
            }
        } else {  // add
            for (idx_t l = 0; l < L; ++l) {
                const double q = e.Q_[l * N + j];
                const double g = e.G_[l];
                v += rlog(th / (th + s)) - K * rlog(1.0 - (q * q / g) / (th + s));
            }
        }
        return v;
    }
    if (p < 0) return -kInf;
    const double as = al * im.sig;  // delete; = 1 - S/alpha = (alpha - S)/alpha
    for (idx_t l = 0; l < L; ++l) {
        const double Q = Qf(l);
        v += -rlog(as) - K * rlog(1.0 + Q * Q / (e.G_[l] * al * as));
    }
    return v;
}

}  // namespace detail

// One BCS problem (BCS_fast_rvm.m).  A: (M, N) row-major and At: the same matrix
// transposed, (N, M) row-major; t: M measurements;
// sigma2: the (fixed) noise variance; x: N outputs.
inline Info bcs_solve(const double* A, const double* At, idx_t M, idx_t N, const double* t,
                      double sigma2, const Options& opt, double* x) {
    using detail::kInf;
    Info info;
    std::fill(x, x + N, 0.0);
    info.noise_var.assign(1, sigma2);
    detail::Engine e(A, At, M, N, t, 1, 1.0 / sigma2);
    // initial atom: largest (a_j't)^2 / a_j'a_j
    idx_t j0 = -1;
    double maxr = -kInf;
    for (idx_t j = 0; j < N; ++j) {
        const double r = e.PHIt_[j] * e.PHIt_[j] / e.PHI2_[j];
        if (r > maxr) {
            maxr = r;
            j0 = j;
        }
    }
    if (j0 < 0 || !(maxr > sigma2)) {  // no atom explains more than the noise
        info.stop = StopReason::exhausted;
        return info;
    }
    e.init(j0, e.PHI2_[j0] / (maxr - sigma2), 0.0);
    detail::Moves mv(N);
    info.n_iter = detail::run_moves(
        e, 1, opt, info, mv, [&](idx_t j) { return detail::bcs_score(e, j, mv); },
        [](const std::vector<double>& ml, double) { return std::fabs(ml.back() - ml.front()); });
    e.refresh(false);
    e.write_weights(x);
    const idx_t m = e.m();
    info.index = e.index_;
    info.alpha = e.alpha_;
    info.sig_diag.resize(static_cast<std::size_t>(m));
    double asig = 0.0;
    for (idx_t i = 0; i < m; ++i) {
        info.sig_diag[i] = e.sig(i, i);
        asig += e.alpha_[i] * e.sig(i, i);
    }
    // re-estimated noise variance, as BCS_fast_rvm.m reports it
    const double denom = static_cast<double>(M - m) + asig;
    info.noise_var.assign(1, denom > 0.0 ? e.residual_sq(0) / denom : sigma2);
    return info;
}

// One MT-BCS problem (mt_CS.m) with L tasks sharing A (given as A and At, see
// bcs_solve).  T: (L, M) tasks;
// x: (L, N) outputs.  a, b: Gamma prior on the noise precision.
inline Info mtbcs_solve(const double* A, const double* At, idx_t M, idx_t N, const double* T,
                        idx_t L, double a, double b, const Options& opt, double* x) {
    Info info;
    std::fill(x, x + N * L, 0.0);
    info.noise_var.assign(static_cast<std::size_t>(L), 0.0);
    detail::Engine e(A, At, M, N, T, L, 1.0);
    const double K = static_cast<double>(M) + 2.0 * a;
    std::vector<double> G2(static_cast<std::size_t>(L));
    for (idx_t l = 0; l < L; ++l) G2[l] = detail::dot(T + l * M, T + l * M, M) + 2.0 * b;
    const auto finish_noise = [&]() {
        for (idx_t l = 0; l < L; ++l) info.noise_var[l] = K > 2.0 ? e.G_[l] / (K - 2.0) : 0.0;
    };
    detail::Moves mv(N);
    double alpha0 = 0.0, ml0 = 0.0;
    const idx_t j0 = detail::mt_first_atom(e, G2, K, mv, alpha0, ml0);
    if (j0 < 0) {
        info.stop = StopReason::exhausted;
        for (idx_t l = 0; l < L; ++l) e.G_[l] = G2[l];
        finish_noise();
        return info;
    }
    e.init(j0, alpha0, 2.0 * b);
    info.ml.push_back(ml0);
    info.n_iter = detail::run_moves(
        e, 2, opt, info, mv, [&](idx_t j) { return detail::mt_score(e, j, L, K, mv); },
        [](const std::vector<double>& ml, double mlmax) { return mlmax - ml.back(); });
    e.refresh(true);
    e.write_weights(x);
    info.index = e.index_;
    info.alpha = e.alpha_;
    info.sig_diag.resize(e.index_.size());
    for (idx_t i = 0; i < e.m(); ++i) info.sig_diag[i] = e.sig(i, i);
    finish_noise();
    return info;
}

}  // namespace cscore::bcs
