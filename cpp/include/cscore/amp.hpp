// Approximate message passing decoders: AMP (Donoho, Maleki & Montanari, PNAS
// 2009) and VAMP in its SVD form (Rangan, Schniter & Fletcher, IEEE Trans. Inf.
// Theory 2019), with a soft-threshold ("l1") or a Bernoulli-Gaussian MMSE ("bg")
// denoiser whose prior and noise variance are learned by EM as in EM-BG-AMP
// (Vila & Schniter, IEEE Trans. Signal Process. 2013).
//
// Model.  Y = A X + W with A (M x N), X (N x L) and W white with variance psi_l in
// channel l.  For "bg" every row x_j of X is zero with probability 1 - lambda and
// N(0, phi I_L) otherwise (joint, row-sparse prior; with joint=false every channel
// is an independent single-channel problem with its own lambda, phi, psi).
//
// Denoisers act on r = x + N(0, diag(tau)) row by row (tau_l per channel):
//   bg:  LLR_j = log(lambda/(1-lambda)) + sum_l [ 0.5 log(tau_l/(phi+tau_l))
//                                               + 0.5 r_jl^2 g_l / tau_l ],
//        g_l = phi/(phi+tau_l),  pi_j = 1/(1+exp(-LLR_j))  (posterior activity),
//        E[x_jl|r] = pi_j g_l r_jl,
//        var_jl    = pi_j nu_l + pi_j (1-pi_j) g_l^2 r_jl^2,  nu_l = phi tau_l/(phi+tau_l),
//        d E[x_jl|r] / d r_jl = var_jl / tau_l.
//   l1:  u = r / sqrt(tau) (per channel), n = ||u||_2,
//        x_jl = r_jl max(0, 1 - alpha/n): a row-l2 (group) soft threshold at alpha
//        in whitened units (for one channel: soft threshold at alpha sqrt(tau)),
//        d x_jl / d r_jl = 1 - alpha/n + alpha u_l^2/n^3 on active rows, else 0;
//        its "variance" is tau_l times that derivative.
// Only the per-channel (diagonal) part of each row's L x L Jacobian enters the
// Onsager / divergence terms: the prior and the noise are invariant under a sign
// flip of any one channel, so the off-diagonal entries average to zero.
//
// EM (one update after every denoiser call, Vila & Schniter 2013 with a
// zero-mean slab):  lambda <- mean_j pi_j,
//   phi <- sum_j pi_j sum_l (g_l^2 r_jl^2 + nu_l) / (L sum_j pi_j);
// the noise variance from the output side (AMP: the uniform-variance GAMP rule
//   psi <- |z|^2/M (psi/(mu_p+psi))^2 + mu_p psi/(mu_p+psi), mu_p = sum_j var_j / M;
// VAMP: psi <- (||y - A x2||^2 + tr(A C2 A^T)) / M from the LMMSE posterior).
//
// AMP (A with ||A||_F^2 = N, arranged by the caller), written as uniform-variance
// GAMP so that damping (beta) is that of Rangan et al. / Vila et al. (2015):
//   mu_p = sum_j var_j / M,  z = y - A x + mu_p s,  tau = ||z||^2 / M,
//   s <- (1-beta) z/tau + beta s,  r = x + tau A^T s,
//   x <- (1-beta) eta(r; tau) + beta x,  var <- (1-beta) var_eta + beta var.
// With beta = 0 this is exactly z_t = y - A x_t + (1/delta) z_{t-1} <eta'>, and
// tau = ||z||^2/M is the empirical effective-noise estimate of DMM (measured
// faster and more robust than GAMP's model value mu_p + psi).
//
// VAMP (A = U diag(s) V^T, economy SVD of rank R given by the caller):
//   LMMSE:  d_k = gw s_k^2/(gw s_k^2 + g2),  alpha2 = 1 - sum_k d_k / N,
//           r1 = r2 + V diag(gw s_k/(gw s_k^2+g2)) (U^T y - diag(s) V^T r2) / (1-alpha2),
//           g1 = g2 (1-alpha2)/alpha2                         (gw = 1/psi)
//   denoise: x1 = eta(r1; 1/g1), alpha1 = <eta'>,
//           r2 = (x1 - alpha1 r1)/(1-alpha1),  g2 = g1 (1-alpha1)/alpha1,
//   damping on (r2, 1/sqrt(g2)).  The estimate is x1.
//
// Safety.  Both monitor the residual rho_t = ||y - A x_t||_F of the estimate.  A
// non-finite state, or rho_t > max(2 rho_best, ||y||) (rho_best: the smallest
// residual so far; ||y||: the zero estimate's), restores the state of the best
// iterate and raises the damping (beta <- 1 - (1-beta)/2); after kMaxEscalations
// raises the run stops there with stop reason "diverged".  So the estimate
// returned is always finite.  (A residual that merely rises from an early minimum
// below ||y||/2, as the l1 iterates' often does, is not divergence.)
//
// Every problem is scaled to unit mean-square measurement inside (and scaled back),
// so the variance floors below are relative.  All arithmetic is in double; the
// BLAS (single-threaded, see the bindings) does the products; a problem's result
// depends only on its own data, never on the batch or the thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <vector>

#include "cscore/blas.hpp"
#include "cscore/parallel.hpp"

namespace cscore::amp {

using idx = std::ptrdiff_t;

enum class Denoiser : int { l1 = 0, bg = 1 };

// Stop codes (python/cscore/decoders/amp.py maps them to strings).
enum class Stop : std::int8_t { tol = 0, max_iter = 1, diverged = 2 };

constexpr double kVarFloor = 1e-24;     // variances, relative to unit mean-square y
constexpr double kAlphaMin = 1e-10;     // VAMP divergences kept in [min, 1 - min]
constexpr double kLambdaMin = 1e-8;     // EM sparsity rate kept in [min, 1 - min]
constexpr int kMaxEscalations = 5;      // damping raises before "diverged"
constexpr double kDivergeFactor = 2.0;  // rho > max(factor * rho_best, ||y||) diverges

struct Options {
    Denoiser denoiser = Denoiser::bg;
    bool joint = true;
    long max_iter = 200;
    double tol = 1e-5;
    double damping = 0.0;
    double alpha = 1.0;         // l1 threshold multiplier (whitened units)
    double sparsity = 0.1;      // lambda: initial value, or the fixed one
    bool learn_sparsity = true;
    double slab_var = -1.0;     // phi fixed (x units) when > 0, else learned
    double noise_var = -1.0;    // psi fixed when > 0, else learned
    double snr0 = 100.0;        // psi_0 = ||y_l||^2 / ((snr0 + 1) M)
};

// Per-problem outputs, C-contiguous: X, activity (P, N, L); params (P, L, 3) =
// (lambda, phi, psi); n_iter, stop, damping (P, L).  With joint=true the L
// channels of a problem share one run and get the same values.
struct Outputs {
    double* X = nullptr;
    double* activity = nullptr;
    double* params = nullptr;
    std::int64_t* n_iter = nullptr;
    std::int8_t* stop = nullptr;
    double* damping = nullptr;
};

namespace detail {

// 64-byte aligned buffer, so that the BLAS sees the same alignment for every
// problem (its kernels may sum in a different order for a different alignment).
class Buffer {
  public:
    Buffer() = default;
    explicit Buffer(idx n) { resize(n); }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer() { release(); }
    void resize(idx n) {
        if (n <= cap_) {
            n_ = n;
            return;
        }
        release();
        const idx alloc = std::max<idx>(n, 1);
        p_ = static_cast<double*>(::operator new(static_cast<std::size_t>(alloc) * sizeof(double),
                                                 std::align_val_t(64)));
        cap_ = alloc;
        n_ = n;
    }
    double* data() { return p_; }
    const double* data() const { return p_; }
    double& operator[](idx i) { return p_[i]; }
    double operator[](idx i) const { return p_[i]; }
    idx size() const { return n_; }
    void fill(double v) { std::fill(p_, p_ + n_, v); }
    void copy_from(const Buffer& o) { std::copy(o.p_, o.p_ + o.n_, p_); }

  private:
    void release() {
        if (p_ != nullptr) ::operator delete(p_, std::align_val_t(64));
        p_ = nullptr;
        cap_ = n_ = 0;
    }
    double* p_ = nullptr;
    idx cap_ = 0, n_ = 0;
};

inline double sumsq(const double* a, idx n) {
    double s = 0.0;
    for (idx i = 0; i < n; ++i) s += a[i] * a[i];
    return s;
}

inline bool all_finite(const double* a, idx n) {
    for (idx i = 0; i < n; ++i)
        if (!std::isfinite(a[i])) return false;
    return true;
}

inline double clamp(double v, double lo, double hi) { return std::min(std::max(v, lo), hi); }

inline double sigmoid(double t) {
    if (t >= 0.0) return 1.0 / (1.0 + std::exp(-t));
    const double e = std::exp(t);
    return e / (1.0 + e);
}

// C (m x n) = op(A) B with A column-major; a gemv when n == 1 (no packing).
inline void product(bool trans_a, int m, int n, int k, const double* A, int lda, const double* B,
                    int ldb, double* C, int ldc) {
    if (n == 1) {
        const int rows = trans_a ? k : m, cols = trans_a ? m : k;
        blas::gemv<double>(trans_a, rows, cols, 1.0, A, lda, B, 1, 0.0, C, 1);
    } else {
        blas::gemm<double>(trans_a, false, m, n, k, 1.0, A, lda, B, ldb, 0.0, C, ldc);
    }
}

// What a denoiser call returns besides the estimate.
struct DenoiseOut {
    std::vector<double> vsum;  // sum_j var_jl, per channel
    double sum_pi = 0.0;       // bg: sum_j pi_j
    double sum_pi_m2 = 0.0;    // bg: sum_j pi_j sum_l (g_l^2 r_jl^2 + nu_l)
};

// R, X: N x Lt column-major; act: N (row activity).
inline void denoise_bg(const double* R, idx N, idx Lt, const double* tau, double lambda,
                       double phi, double* X, double* act, DenoiseOut& out) {
    std::vector<double> g(static_cast<std::size_t>(Lt)), k(g.size()), nu(g.size());
    double c0 = std::log(lambda / (1.0 - lambda));
    for (idx l = 0; l < Lt; ++l) {
        g[l] = phi / (phi + tau[l]);
        k[l] = g[l] / tau[l];
        nu[l] = tau[l] * g[l];  // phi tau / (phi + tau), without overflow
        c0 += 0.5 * std::log(tau[l] / (phi + tau[l]));
    }
    out.vsum.assign(static_cast<std::size_t>(Lt), 0.0);
    double spi = 0.0, spm2 = 0.0;
    for (idx j = 0; j < N; ++j) {
        double llr = c0, m2 = 0.0;
        for (idx l = 0; l < Lt; ++l) {
            const double r = R[j + l * N];
            llr += 0.5 * r * r * k[l];
            const double gr = g[l] * r;
            m2 += gr * gr + nu[l];
        }
        const double pi = sigmoid(llr);
        act[j] = pi;
        spi += pi;
        spm2 += pi * m2;
        const double q = pi * (1.0 - pi);
        for (idx l = 0; l < Lt; ++l) {
            const double gr = g[l] * R[j + l * N];
            X[j + l * N] = pi * gr;
            out.vsum[l] += pi * nu[l] + q * gr * gr;
        }
    }
    out.sum_pi = spi;
    out.sum_pi_m2 = spm2;
}

inline void denoise_l1(const double* R, idx N, idx Lt, const double* tau, double alpha, double* X,
                       double* act, DenoiseOut& out) {
    std::vector<double> inv_sig(static_cast<std::size_t>(Lt));
    for (idx l = 0; l < Lt; ++l) inv_sig[l] = 1.0 / std::sqrt(tau[l]);
    out.vsum.assign(static_cast<std::size_t>(Lt), 0.0);
    out.sum_pi = out.sum_pi_m2 = 0.0;
    for (idx j = 0; j < N; ++j) {
        double n2 = 0.0;
        for (idx l = 0; l < Lt; ++l) {
            const double u = R[j + l * N] * inv_sig[l];
            n2 += u * u;
        }
        const double n = std::sqrt(n2);
        if (!(n > alpha)) {
            act[j] = 0.0;
            for (idx l = 0; l < Lt; ++l) X[j + l * N] = 0.0;
            continue;
        }
        act[j] = 1.0;
        const double shrink = 1.0 - alpha / n, a_n3 = alpha / (n2 * n);
        for (idx l = 0; l < Lt; ++l) {
            const double r = R[j + l * N], u = r * inv_sig[l];
            X[j + l * N] = r * shrink;
            out.vsum[l] += tau[l] * (shrink + a_n3 * u * u);
        }
    }
}

// The learned (or fixed) parameters of one run, in the scaled problem's units.
struct Params {
    double lambda = 0.1, phi = 1.0;
    std::vector<double> psi;
};

inline void denoise(const Options& opt, const double* R, idx N, idx Lt, const double* tau,
                    const Params& prm, double* X, double* act, DenoiseOut& out) {
    if (opt.denoiser == Denoiser::bg)
        denoise_bg(R, N, Lt, tau, prm.lambda, prm.phi, X, act, out);
    else
        denoise_l1(R, N, Lt, tau, opt.alpha, X, act, out);
}

// EM update of the prior (lambda, phi) from a bg denoiser call.
inline void em_prior(const Options& opt, idx N, idx Lt, const DenoiseOut& d, Params& prm) {
    if (opt.denoiser != Denoiser::bg) return;
    if (opt.learn_sparsity)
        prm.lambda = clamp(d.sum_pi / static_cast<double>(N), kLambdaMin, 1.0 - kLambdaMin);
    if (!(opt.slab_var > 0.0) && d.sum_pi > 0.0)
        prm.phi = std::max(d.sum_pi_m2 / (static_cast<double>(Lt) * d.sum_pi), kVarFloor);
}

// Initial parameters (EM-BG-AMP's rules): psi_l = ||y_l||^2/((snr0+1) M),
// phi = (||y||^2 - M sum_l psi_l) / (||A||_F^2 lambda L); fixed values when given.
// `scale2` is the factor by which the problem's variances were divided.
inline Params init_params(const Options& opt, const double* y, idx M, idx Lt, double frob2,
                          double scale2) {
    Params prm;
    prm.lambda = opt.sparsity;
    prm.psi.assign(static_cast<std::size_t>(Lt), 0.0);
    double ny2 = 0.0, psum = 0.0;
    for (idx l = 0; l < Lt; ++l) {
        const double e = sumsq(y + l * M, M);
        ny2 += e;
        prm.psi[l] = opt.noise_var > 0.0 ? opt.noise_var / scale2
                                         : e / ((opt.snr0 + 1.0) * static_cast<double>(M));
        prm.psi[l] = std::max(prm.psi[l], kVarFloor);
        psum += prm.psi[l];
    }
    if (opt.slab_var > 0.0) {
        prm.phi = opt.slab_var / scale2;
    } else {
        const double num = ny2 - static_cast<double>(M) * psum;
        prm.phi = num / (frob2 * prm.lambda * static_cast<double>(Lt));
        if (!(prm.phi > kVarFloor)) prm.phi = ny2 / (frob2 * prm.lambda * static_cast<double>(Lt));
        prm.phi = std::max(prm.phi, kVarFloor);
    }
    return prm;
}

// Result of one run (one problem, or one channel with joint=false), unscaled by
// the caller.
struct RunResult {
    long n_iter = 0;
    Stop stop = Stop::tol;
    double damping = 0.0;
    Params prm;
};

// Shared divergence bookkeeping: the best residual so far and the escalation
// count.  `check` returns +1 (new best), 0 (fine), -1 (diverged: restore).
inline double escalate(double beta) { return 1.0 - 0.5 * (1.0 - beta); }

// The divergence guard of AMP and VAMP: y2 = ||y||^2 after scaling (the zero
// estimate's residual, the first best iterate).
struct Guard {
    explicit Guard(double y2) : best2(y2), ynorm(std::sqrt(y2)) {}
    double best2 = 0.0, ynorm = 0.0;
    int escalations = 0;
    int check(double rho2, bool finite) const {
        if (!finite || !std::isfinite(rho2)) return -1;
        const double lim = std::max(kDivergeFactor * std::sqrt(best2), ynorm);
        if (std::sqrt(rho2) > lim) return -1;
        return rho2 < best2 ? 1 : 0;
    }
    enum class Next { go_on, retry, diverged };
    // After an iteration with residual rho2: a diverging one restores the best
    // iterate and raises the damping `beta` (retry), or gives up after
    // kMaxEscalations (diverged); an improving one becomes the best (snapshot).
    template <class Snapshot, class Restore>
    Next update(double rho2, bool finite, double& beta, Snapshot&& snapshot, Restore&& restore) {
        const int verdict = check(rho2, finite);
        if (verdict < 0) {
            restore();
            if (++escalations > kMaxEscalations) return Next::diverged;
            beta = escalate(beta);
            return Next::retry;
        }
        if (verdict > 0) {
            best2 = rho2;
            snapshot();
        }
        return Next::go_on;
    }
};

// ----------------------------------------------------------------------------- AMP

// Workspace of one worker (reused across its problems; every use overwrites it).
struct AmpWork {
    Buffer y, X, Xh, S, AX, Z, T, R, act;
    Buffer bX, bS, bAX, bact;  // best-iterate snapshot
    DenoiseOut d;
    void size(idx M, idx N, idx Lt) {
        for (Buffer* b : {&y, &S, &AX, &Z, &bS, &bAX}) b->resize(M * Lt);
        for (Buffer* b : {&X, &Xh, &T, &R, &bX}) b->resize(N * Lt);
        act.resize(N);
        bact.resize(N);
    }
};

// One AMP run on y (M x Lt column-major, in w.y, overwritten by the scaled copy).
// At: the matrix as column-major N x M (i.e. A row-major), ||A||_F^2 = frob2.
// On return w.X holds the estimate (original units) and w.act the activity.
inline RunResult amp_run(const double* At, idx M, idx N, idx Lt, double frob2, const Options& opt,
                         AmpWork& w, Control* ctl) {
    RunResult res;
    res.damping = opt.damping;
    const idx ML = M * Lt, NL = N * Lt;
    const double ny2 = sumsq(w.y.data(), ML);
    w.X.fill(0.0);
    w.act.fill(0.0);
    if (!(ny2 > 0.0)) {  // zero measurements: zero estimate, nothing learned
        res.prm.lambda = opt.sparsity;
        res.prm.phi = 0.0;
        res.prm.psi.assign(static_cast<std::size_t>(Lt), 0.0);
        return res;
    }
    const double scale2 = ny2 / static_cast<double>(ML), scale = std::sqrt(scale2);
    for (idx i = 0; i < ML; ++i) w.y[i] /= scale;
    const double* y = w.y.data();
    Params prm = init_params(opt, y, M, Lt, frob2, scale2);
    const bool bg = opt.denoiser == Denoiser::bg;
    const bool learn_noise = bg && !(opt.noise_var > 0.0);
    // vbar: sum_j var_jl (the prior's N lambda phi to start; unused while s = 0)
    std::vector<double> vbar(static_cast<std::size_t>(Lt),
                             bg ? static_cast<double>(N) * prm.lambda * prm.phi : 0.0);
    std::vector<double> tau(static_cast<std::size_t>(Lt)), mup(tau.size());
    w.S.fill(0.0);
    w.AX.fill(0.0);
    double beta = opt.damping;
    const int m = static_cast<int>(M), n = static_cast<int>(N), lt = static_cast<int>(Lt);

    // Best-iterate snapshot (starts at the zero estimate).
    Guard guard(static_cast<double>(ML));  // ||y||^2 after scaling
    Params bprm = prm;
    std::vector<double> bvbar = vbar;
    auto snapshot = [&] {
        w.bX.copy_from(w.X);
        w.bS.copy_from(w.S);
        w.bAX.copy_from(w.AX);
        w.bact.copy_from(w.act);
        bprm = prm;
        bvbar = vbar;
    };
    auto restore = [&] {
        w.X.copy_from(w.bX);
        w.S.copy_from(w.bS);
        w.AX.copy_from(w.bAX);
        w.act.copy_from(w.bact);
        prm = bprm;
        vbar = bvbar;
    };
    snapshot();

    res.stop = Stop::max_iter;
    for (long it = 0; it < opt.max_iter; ++it) {
        if (should_stop(ctl)) break;
        res.n_iter = it + 1;
        // z = y - A x + mu_p s, tau = ||z||^2/M, s <- damped z/tau.
        for (idx l = 0; l < Lt; ++l) {
            mup[l] = vbar[l] / static_cast<double>(M);  // vbar holds sum_j var_j
            double zz = 0.0;
            for (idx i = l * M; i < (l + 1) * M; ++i) {
                const double z = y[i] - w.AX[i] + mup[l] * w.S[i];
                w.Z[i] = z;
                zz += z * z;
            }
            tau[l] = std::max(zz / static_cast<double>(M), kVarFloor);
            if (learn_noise) {  // EM noise update (uniform-variance GAMP output rule)
                const double psi = prm.psi[l], f = psi / (mup[l] + psi);
                prm.psi[l] = std::max(zz / static_cast<double>(M) * f * f + mup[l] * f, kVarFloor);
            }
            for (idx i = l * M; i < (l + 1) * M; ++i) {
                const double s_new = w.Z[i] / tau[l];
                w.S[i] = (1.0 - beta) * s_new + beta * w.S[i];
            }
        }
        // r = x + tau A^T s
        product(false, n, lt, m, At, n, w.S.data(), m, w.T.data(), n);
        for (idx l = 0; l < Lt; ++l)
            for (idx j = l * N; j < (l + 1) * N; ++j) w.R[j] = w.X[j] + tau[l] * w.T[j];
        denoise(opt, w.R.data(), N, Lt, tau.data(), prm, w.Xh.data(), w.act.data(), w.d);
        em_prior(opt, N, Lt, w.d, prm);
        // damped update; ||x_t - x_{t-1}||^2 and ||x_t||^2 on the way
        double dx2 = 0.0, x2 = 0.0;
        for (idx i = 0; i < NL; ++i) {
            const double xn = (1.0 - beta) * w.Xh[i] + beta * w.X[i];
            const double dx = xn - w.X[i];
            dx2 += dx * dx;
            x2 += xn * xn;
            w.X[i] = xn;
        }
        for (idx l = 0; l < Lt; ++l)
            vbar[l] = (1.0 - beta) * w.d.vsum[l] + beta * vbar[l];
        product(true, m, lt, n, At, n, w.X.data(), n, w.AX.data(), m);
        double rho2 = 0.0;
        for (idx i = 0; i < ML; ++i) {
            const double e = y[i] - w.AX[i];
            rho2 += e * e;
        }
        bool finite = std::isfinite(x2) && std::isfinite(prm.phi) && std::isfinite(prm.lambda);
        for (idx l = 0; l < Lt; ++l)
            finite = finite && std::isfinite(vbar[l]) && std::isfinite(prm.psi[l]);
        const Guard::Next next = guard.update(rho2, finite, beta, snapshot, restore);
        if (next == Guard::Next::diverged) {
            res.stop = Stop::diverged;
            break;
        }
        if (next == Guard::Next::retry) continue;
        if (dx2 <= opt.tol * opt.tol * x2) {
            res.stop = Stop::tol;
            break;
        }
    }
    for (idx i = 0; i < NL; ++i) w.X[i] *= scale;
    res.damping = beta;
    prm.phi *= scale2;
    for (double& p : prm.psi) p *= scale2;
    res.prm = prm;
    return res;
}

// ----------------------------------------------------------------------------- VAMP

struct VampWork {
    Buffer y, yt, r2, r1, x1, Vr, Wk, T, act;
    Buffer br2, bx1, bact;
    DenoiseOut d;
    void size(idx M, idx N, idx R, idx Lt) {
        y.resize(M * Lt);
        for (Buffer* b : {&yt, &Vr, &Wk}) b->resize(R * Lt);
        for (Buffer* b : {&r2, &r1, &x1, &T, &br2, &bx1}) b->resize(N * Lt);
        act.resize(N);
        bact.resize(N);
    }
};

// One VAMP run.  UT: U^T as column-major R x M (U row-major M x R); s: the R
// singular values; V: column-major N x R (V^T row-major R x N).
inline RunResult vamp_run(const double* UT, const double* s, const double* V, idx M, idx N, idx R,
                          idx Lt, const Options& opt, VampWork& w, Control* ctl) {
    RunResult res;
    res.damping = opt.damping;
    const idx ML = M * Lt, NL = N * Lt;
    const double ny2 = sumsq(w.y.data(), ML);
    w.x1.fill(0.0);
    w.act.fill(0.0);
    if (!(ny2 > 0.0)) {
        res.prm.lambda = opt.sparsity;
        res.prm.phi = 0.0;
        res.prm.psi.assign(static_cast<std::size_t>(Lt), 0.0);
        return res;
    }
    const double scale2 = ny2 / static_cast<double>(ML), scale = std::sqrt(scale2);
    for (idx i = 0; i < ML; ++i) w.y[i] /= scale;
    const int m = static_cast<int>(M), n = static_cast<int>(N), r = static_cast<int>(R),
              lt = static_cast<int>(Lt);
    double frob2 = 0.0;
    for (idx k = 0; k < R; ++k) frob2 += s[k] * s[k];
    Params prm = init_params(opt, w.y.data(), M, Lt, frob2, scale2);
    const bool bg = opt.denoiser == Denoiser::bg;
    const bool learn_noise = !(opt.noise_var > 0.0);
    // U^T y and the energy of y outside the range of U.
    product(false, r, lt, m, UT, r, w.y.data(), m, w.yt.data(), r);
    std::vector<double> yperp(static_cast<std::size_t>(Lt)), g2(yperp.size()), g1(yperp.size()),
        tau(yperp.size()), a1(yperp.size()), a2(yperp.size());
    for (idx l = 0; l < Lt; ++l) {
        const double e = sumsq(w.y.data() + l * M, M);
        yperp[l] = std::max(e - sumsq(w.yt.data() + l * R, R), 0.0);
        // prior precision: bg 1/(lambda phi); l1 the energy-matched 1/v0, v0 = ||y_l||^2/||A||_F^2
        const double v0 = bg ? prm.lambda * prm.phi : e / frob2;
        g2[l] = 1.0 / std::max(v0, kVarFloor);
    }
    w.r2.fill(0.0);
    double beta = opt.damping;

    Guard guard(static_cast<double>(ML));
    Params bprm = prm;
    std::vector<double> bg2 = g2;
    auto snapshot = [&] {
        w.br2.copy_from(w.r2);
        w.bx1.copy_from(w.x1);
        w.bact.copy_from(w.act);
        bprm = prm;
        bg2 = g2;
    };
    auto restore = [&] {
        w.r2.copy_from(w.br2);
        w.x1.copy_from(w.bx1);
        w.act.copy_from(w.bact);
        prm = bprm;
        g2 = bg2;
    };
    snapshot();

    res.stop = Stop::max_iter;
    for (long it = 0; it < opt.max_iter; ++it) {
        if (should_stop(ctl)) break;
        res.n_iter = it + 1;
        // LMMSE stage in the SVD basis.
        product(true, r, lt, n, V, n, w.r2.data(), n, w.Vr.data(), r);
        for (idx l = 0; l < Lt; ++l) {
            const double gw = 1.0 / prm.psi[l];
            double dsum = 0.0, trace = 0.0, res2 = 0.0;
            for (idx k = 0; k < R; ++k) {
                const double sk = s[k], den = gw * sk * sk + g2[l];
                const double ytk = w.yt[k + l * R], vr = w.Vr[k + l * R];
                const double wk = gw * sk / den * (ytk - sk * vr);
                w.Wk[k + l * R] = wk;
                dsum += gw * sk * sk / den;
                trace += sk * sk / den;
                const double e = ytk - sk * (vr + wk);
                res2 += e * e;
            }
            a2[l] = clamp(1.0 - dsum / static_cast<double>(N), kAlphaMin, 1.0 - kAlphaMin);
            if (learn_noise)
                prm.psi[l] = std::max((yperp[l] + res2 + trace) / static_cast<double>(M), kVarFloor);
            g1[l] = g2[l] * (1.0 - a2[l]) / a2[l];
            tau[l] = 1.0 / g1[l];
        }
        product(false, n, lt, r, V, n, w.Wk.data(), r, w.T.data(), n);
        for (idx l = 0; l < Lt; ++l) {
            const double f = 1.0 / (1.0 - a2[l]);
            for (idx j = l * N; j < (l + 1) * N; ++j) w.r1[j] = w.r2[j] + f * w.T[j];
        }
        // Denoiser stage; the new estimate goes to T (x1 keeps the previous one).
        denoise(opt, w.r1.data(), N, Lt, tau.data(), prm, w.T.data(), w.act.data(), w.d);
        em_prior(opt, N, Lt, w.d, prm);
        double dx2 = 0.0, x2 = 0.0;
        for (idx i = 0; i < NL; ++i) {
            const double dx = w.T[i] - w.x1[i];
            dx2 += dx * dx;
            x2 += w.T[i] * w.T[i];
        }
        w.x1.copy_from(w.T);
        for (idx l = 0; l < Lt; ++l) {
            a1[l] = clamp(w.d.vsum[l] / (static_cast<double>(N) * tau[l]), kAlphaMin,
                          1.0 - kAlphaMin);
            const double g2n = g1[l] * (1.0 - a1[l]) / a1[l];
            const double c = 1.0 / (1.0 - a1[l]);
            for (idx j = l * N; j < (l + 1) * N; ++j) {
                const double r2n = c * (w.x1[j] - a1[l] * w.r1[j]);
                w.r2[j] = (1.0 - beta) * r2n + beta * w.r2[j];
            }
            const double sd = (1.0 - beta) / std::sqrt(g2n) + beta / std::sqrt(g2[l]);
            g2[l] = 1.0 / (sd * sd);
        }
        // Residual of the estimate: ||y_perp||^2 + ||U^T y - diag(s) V^T x1||^2.
        product(true, r, lt, n, V, n, w.x1.data(), n, w.Vr.data(), r);
        double rho2 = 0.0;
        for (idx l = 0; l < Lt; ++l) {
            rho2 += yperp[l];
            for (idx k = 0; k < R; ++k) {
                const double e = w.yt[k + l * R] - s[k] * w.Vr[k + l * R];
                rho2 += e * e;
            }
        }
        bool finite = std::isfinite(x2) && std::isfinite(prm.phi) && std::isfinite(prm.lambda) &&
                      all_finite(w.r2.data(), NL);
        for (idx l = 0; l < Lt; ++l)
            finite = finite && std::isfinite(g2[l]) && g2[l] > 0.0 && std::isfinite(prm.psi[l]);
        const Guard::Next next = guard.update(rho2, finite, beta, snapshot, restore);
        if (next == Guard::Next::diverged) {
            res.stop = Stop::diverged;
            break;
        }
        if (next == Guard::Next::retry) continue;
        if (dx2 <= opt.tol * opt.tol * x2) {
            res.stop = Stop::tol;
            break;
        }
    }
    for (idx i = 0; i < NL; ++i) w.x1[i] *= scale;
    res.damping = beta;
    prm.phi *= scale2;
    for (double& p : prm.psi) p *= scale2;
    res.prm = prm;
    return res;
}

// ----------------------------------------------------------------------------- batches

// Copies channels [l0, l0 + Lt) of problem p of Y (P, M, L) C-contiguous into a
// column-major M x Lt buffer.
inline void load_y(const double* Y, idx p, idx M, idx L, idx l0, idx Lt, double* y) {
    const double* Yp = Y + p * M * L;
    for (idx l = 0; l < Lt; ++l)
        for (idx i = 0; i < M; ++i) y[i + l * M] = Yp[i * L + l0 + l];
}

inline void store(const Outputs& out, idx p, idx N, idx L, idx l0, idx Lt, const double* X,
                  const double* act, const RunResult& rr) {
    double* Xp = out.X + p * N * L;
    double* Ap = out.activity + p * N * L;
    for (idx j = 0; j < N; ++j)
        for (idx l = 0; l < Lt; ++l) {
            Xp[j * L + l0 + l] = X[j + l * N];
            Ap[j * L + l0 + l] = act[j];
        }
    for (idx l = 0; l < Lt; ++l) {
        const idx q = p * L + l0 + l;
        out.params[3 * q] = rr.prm.lambda;
        out.params[3 * q + 1] = rr.prm.phi;
        out.params[3 * q + 2] = rr.prm.psi[l];
        out.n_iter[q] = rr.n_iter;
        out.stop[q] = static_cast<std::int8_t>(rr.stop);
        out.damping[q] = rr.damping;
    }
}

// AMP on P problems Y (P, M, L) C-contiguous; A row-major M x N with ||A||_F^2 = frob2.
inline void amp_decode(const double* A, idx M, idx N, double frob2, const double* Y, idx P, idx L,
                       const Options& opt, const Outputs& out, int n_threads, Control* ctl) {
    const idx Lt = opt.joint ? L : 1;
    const idx tasks = opt.joint ? P : P * L;
    parallel_for(
        tasks, n_threads,
        [&](idx begin, idx end, int) {
            AmpWork w;
            w.size(M, N, Lt);
            for (idx t = begin; t < end; ++t) {
                if (should_stop(ctl)) return;
                const idx p = opt.joint ? t : t / L, l0 = opt.joint ? 0 : t % L;
                load_y(Y, p, M, L, l0, Lt, w.y.data());
                const RunResult rr = amp_run(A, M, N, Lt, frob2, opt, w, ctl);
                store(out, p, N, L, l0, Lt, w.X.data(), w.act.data(), rr);
            }
        },
        ctl);
}

// VAMP on P problems from the economy SVD A = U diag(s) V^T: U (M, R), Vt (R, N)
// row-major.
inline void vamp_decode(const double* U, const double* s, const double* Vt, idx M, idx N, idx R,
                        const double* Y, idx P, idx L, const Options& opt, const Outputs& out,
                        int n_threads, Control* ctl) {
    const idx Lt = opt.joint ? L : 1;
    const idx tasks = opt.joint ? P : P * L;
    parallel_for(
        tasks, n_threads,
        [&](idx begin, idx end, int) {
            VampWork w;
            w.size(M, N, R, Lt);
            for (idx t = begin; t < end; ++t) {
                if (should_stop(ctl)) return;
                const idx p = opt.joint ? t : t / L, l0 = opt.joint ? 0 : t % L;
                load_y(Y, p, M, L, l0, Lt, w.y.data());
                const RunResult rr = vamp_run(U, s, Vt, M, N, R, Lt, opt, w, ctl);
                store(out, p, N, L, l0, Lt, w.x1.data(), w.act.data(), rr);
            }
        },
        ctl);
}

}  // namespace detail

using detail::amp_decode;
using detail::vamp_decode;

}  // namespace cscore::amp
