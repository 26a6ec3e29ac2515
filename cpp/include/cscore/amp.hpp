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
// so the variance floors below are relative.  All arithmetic is in double.
//
// Batches.  A worker advances up to kAmpSlots runs together: each run does its own
// iteration (its Onsager term, EM parameters, guard and stopping), and only the
// products of an iteration are done for all active runs at once, by cscore's own
// panel kernel (amp_products.hpp), which computes every entry by the same chain of
// fused multiply-adds whatever the other columns; a run that ends hands its slot
// to the worker's next problem.  So a problem's result depends only on its own
// data, never on the batch, the slots or the thread count, and is the same with
// the avx2 and avx512 kernels (the generic one rounds each multiply).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <vector>

#include "cscore/amp_products.hpp"
#include "cscore/blas.hpp"
#include "cscore/cpu.hpp"
#include "cscore/parallel.hpp"

namespace cscore::amp {

// The element-wise steps of AMP are compiled three times (baseline, AVX2,
// AVX-512; chosen with the products' instruction set) from one inlined body.
// Floating-point contraction is off in the SIMD copies, so all three compute the
// same rounded operations: the instruction set changes the speed of these steps,
// never their bits.
#if defined(__GNUC__)
#define CSCORE_AMP_INLINE inline __attribute__((always_inline))
#else
#define CSCORE_AMP_INLINE inline
#endif

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
    std::vector<double> g, k, nu, vs;  // scratch of denoise_bg
    double sum_pi = 0.0;       // bg: sum_j pi_j
    double sum_pi_m2 = 0.0;    // bg: sum_j pi_j sum_l (g_l^2 r_jl^2 + nu_l)
};

// Eight doubles as one value (GCC/Clang vector extension; in the baseline build,
// four SSE2 operations).  Element-wise IEEE arithmetic, so the results are those of
// the same scalar operations, on every instruction set.
typedef double v8d __attribute__((vector_size(64)));
typedef long long v8l __attribute__((vector_size(64)));

#define CSCORE_V8(s) (v8d{(s), (s), (s), (s), (s), (s), (s), (s)})

// Loads n <= 8 doubles into v (the rest zero).  (Vectors pass by reference: a
// 64-byte vector by value would change the ABI between instruction sets.)
CSCORE_AMP_INLINE void load8(const double* p, idx n, v8d& v) {
    v = CSCORE_V8(0.0);
    if (n == 8) {
        std::memcpy(&v, p, sizeof(v));
    } else {
        double t[8] = {};
        for (idx i = 0; i < n; ++i) t[i] = p[i];
        std::memcpy(&v, t, sizeof(v));
    }
}

CSCORE_AMP_INLINE void store8(double* p, const v8d& v, idx n) {
    if (n == 8) {
        std::memcpy(p, &v, sizeof(v));
    } else {
        double t[8];
        std::memcpy(t, &v, sizeof(v));
        for (idx i = 0; i < n; ++i) p[i] = t[i];
    }
}

// The lanes summed in a fixed order.
CSCORE_AMP_INLINE double hsum8(const v8d& v) {
    return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

// exp(x) to about one ulp for x in [-708, 709] (clamped there): x = n ln2 + r,
// |r| <= ln2/2, a degree-12 Taylor polynomial of exp(r) (error < 2e-16), times 2^n.
CSCORE_AMP_INLINE void vexp(v8d& x) {
    const v8d lo = CSCORE_V8(-708.0), hi = CSCORE_V8(709.0);
    x = x < lo ? lo : x;
    x = x > hi ? hi : x;
    const v8d magic = CSCORE_V8(6755399441055744.0);  // 1.5 * 2^52: adding it rounds to an integer
    const v8d shifted = x * 1.4426950408889634 + magic;
    const v8d nf = shifted - magic;
    v8l n, mbits;
    std::memcpy(&n, &shifted, sizeof(n));
    const v8d mg = magic;
    std::memcpy(&mbits, &mg, sizeof(mbits));
    n -= mbits;
    const v8d r = (x - nf * 6.93147180369123816490e-01) - nf * 1.90821492927058770002e-10;
    v8d p = CSCORE_V8(1.0 / 479001600.0);
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    const v8l bits = (n + 1023) << 52;
    v8d s;
    std::memcpy(&s, &bits, sizeof(s));
    x = p * s;
}

// 1 / (1 + exp(-t)) without overflow.
CSCORE_AMP_INLINE void vsigmoid(v8d& t) {
    const v8d zero = CSCORE_V8(0.0), one = CSCORE_V8(1.0);
    v8d e = t < zero ? t : -t;  // -|t|
    vexp(e);
    const v8d d = one / (one + e);  // one division for both signs
    t = t >= zero ? d : e * d;
}

// R, X: N x Lt column-major; act: N (row activity).  Eight rows at a time (the
// last block padded, its padding masked out of the sums), every sum in a fixed
// order that depends only on N.
CSCORE_AMP_INLINE void denoise_bg(const double* R, idx N, idx Lt, const double* tau, double lambda,
                       double phi, double* X, double* act, DenoiseOut& out) {
    const auto nl = static_cast<std::size_t>(Lt);
    std::vector<double>&g = out.g, &k = out.k, &nu = out.nu;
    g.resize(nl);
    k.resize(nl);
    nu.resize(nl);
    double c0 = std::log(lambda / (1.0 - lambda));
    for (idx l = 0; l < Lt; ++l) {
        g[l] = phi / (phi + tau[l]);
        k[l] = g[l] / tau[l];
        nu[l] = tau[l] * g[l];  // phi tau / (phi + tau), without overflow
        c0 += 0.5 * std::log(tau[l] / (phi + tau[l]));
    }
    const v8d zero = CSCORE_V8(0.0), one = CSCORE_V8(1.0);
    const v8d lane = {0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0};
    // per-channel lane sums, as plain doubles (a std::vector of 64-byte vectors
    // would not be 64-byte aligned everywhere)
    std::vector<double>& vs = out.vs;
    vs.assign(8 * nl, 0.0);
    v8d spi = zero, spm2 = zero;
    for (idx j0 = 0; j0 < N; j0 += 8) {
        const idx cnt = std::min<idx>(8, N - j0);
        v8d llr = CSCORE_V8(c0), m2 = zero, r;
        for (idx l = 0; l < Lt; ++l) {
            load8(R + j0 + l * N, cnt, r);
            llr += 0.5 * r * r * k[l];
            const v8d gr = g[l] * r;
            m2 += gr * gr + nu[l];
        }
        v8d pi = llr;
        vsigmoid(pi);
        pi = lane < CSCORE_V8(static_cast<double>(cnt)) ? pi : zero;
        store8(act + j0, pi, cnt);
        spi += pi;
        spm2 += pi * m2;
        const v8d q = pi * (one - pi);
        for (idx l = 0; l < Lt; ++l) {
            load8(R + j0 + l * N, cnt, r);
            const v8d gr = g[l] * r;
            store8(X + j0 + l * N, pi * gr, cnt);
            v8d acc;
            std::memcpy(&acc, vs.data() + 8 * l, sizeof(acc));
            acc += pi * nu[l] + q * gr * gr;
            std::memcpy(vs.data() + 8 * l, &acc, sizeof(acc));
        }
    }
    out.vsum.assign(static_cast<std::size_t>(Lt), 0.0);
    for (idx l = 0; l < Lt; ++l) {
        v8d acc;
        std::memcpy(&acc, vs.data() + 8 * l, sizeof(acc));
        out.vsum[l] = hsum8(acc);
    }
    out.sum_pi = hsum8(spi);
    out.sum_pi_m2 = hsum8(spm2);
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

CSCORE_AMP_INLINE void denoise(const Options& opt, const double* R, idx N, idx Lt, const double* tau,
                    const Params& prm, double* X, double* act, DenoiseOut& out) {
    if (opt.denoiser == Denoiser::bg)
        denoise_bg(R, N, Lt, tau, prm.lambda, prm.phi, X, act, out);
    else
        denoise_l1(R, N, Lt, tau, opt.alpha, X, act, out);
}

// EM update of the prior (lambda, phi) from a bg denoiser call.
CSCORE_AMP_INLINE void em_prior(const Options& opt, idx N, idx Lt, const DenoiseOut& d, Params& prm) {
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

// Workspace and state of one AMP run.  A worker advances a group of runs together
// (AmpIteration): each run does its own iteration (its Onsager term, EM parameters,
// damping guard and stopping); only the two products of an iteration are done for
// the whole group at once (amp_products.hpp), column by column in a fixed order,
// so a run's result does not depend on the other runs of its group.
struct AmpTask {
    Buffer y, X, Xh, S, AX, T, act;
    Buffer bX, bS, bAX, bact;  // best-iterate snapshot
    DenoiseOut d;
    idx M = 0, N = 0, Lt = 0;
    double frob2 = 0.0;
    const Options* opt = nullptr;
    RunResult res;
    Params prm, bprm;
    std::vector<double> vbar, bvbar, tau, mup;
    double beta = 0.0, scale = 1.0, scale2 = 1.0;
    Guard guard{1.0};
    bool learn_noise = false, active = false;
    long it = 0;
    double dx2 = 0.0, x2 = 0.0;

    void size(idx M_, idx N_, idx Lt_) {
        M = M_;
        N = N_;
        Lt = Lt_;
        for (Buffer* b : {&y, &S, &AX, &bS, &bAX}) b->resize(M * Lt);
        for (Buffer* b : {&X, &Xh, &T, &bX}) b->resize(N * Lt);
        act.resize(N);
        bact.resize(N);
    }
    void snapshot() {
        bX.copy_from(X);
        bS.copy_from(S);
        bAX.copy_from(AX);
        bact.copy_from(act);
        bprm = prm;
        bvbar = vbar;
    }
    void restore() {
        X.copy_from(bX);
        S.copy_from(bS);
        AX.copy_from(bAX);
        act.copy_from(bact);
        prm = bprm;
        vbar = bvbar;
    }

    // Starts a run on y (M x Lt column-major, already in `y`; scaled here).
    void start(double frob2_, const Options& o) {
        frob2 = frob2_;
        opt = &o;
        res = RunResult{};
        res.damping = o.damping;
        const idx ML = M * Lt;
        const double ny2 = sumsq(y.data(), ML);
        X.fill(0.0);
        act.fill(0.0);
        active = false;
        it = 0;
        if (!(ny2 > 0.0)) {  // zero measurements: zero estimate, nothing learned
            res.prm.lambda = o.sparsity;
            res.prm.phi = 0.0;
            res.prm.psi.assign(static_cast<std::size_t>(Lt), 0.0);
            scale = 0.0;
            return;
        }
        scale2 = ny2 / static_cast<double>(ML);
        scale = std::sqrt(scale2);
        for (idx i = 0; i < ML; ++i) y[i] /= scale;
        prm = init_params(o, y.data(), M, Lt, frob2, scale2);
        const bool bg = o.denoiser == Denoiser::bg;
        learn_noise = bg && !(o.noise_var > 0.0);
        // vbar: sum_j var_jl (the prior's N lambda phi to start; unused while s = 0)
        vbar.assign(static_cast<std::size_t>(Lt),
                    bg ? static_cast<double>(N) * prm.lambda * prm.phi : 0.0);
        tau.assign(static_cast<std::size_t>(Lt), 0.0);
        mup.assign(tau.size(), 0.0);
        S.fill(0.0);
        AX.fill(0.0);
        beta = o.damping;
        guard = Guard(static_cast<double>(ML));  // ||y||^2 after scaling
        snapshot();
        res.stop = Stop::max_iter;
        active = o.max_iter > 0;
    }

    // z = y - A x + mu_p s, tau = ||z||^2/M, s <- damped z/tau (before r = x + tau A^T s).
    CSCORE_AMP_INLINE void before_At() {
        res.n_iter = ++it;
        const double* yy = y.data();
        for (idx l = 0; l < Lt; ++l) {
            mup[l] = vbar[l] / static_cast<double>(M);  // vbar holds sum_j var_j
            const idx o = l * M;
            const double mu = mup[l];
            v8d acc = CSCORE_V8(0.0), yv, axv, sv;
            for (idx i = 0; i < M; i += 8) {  // ||z||^2 (z itself is recomputed below)
                const idx cnt = std::min<idx>(8, M - i);
                load8(yy + o + i, cnt, yv);
                load8(AX.data() + o + i, cnt, axv);
                load8(S.data() + o + i, cnt, sv);
                const v8d z = yv - axv + mu * sv;
                acc += z * z;
            }
            const double zz = hsum8(acc);
            tau[l] = std::max(zz / static_cast<double>(M), kVarFloor);
            if (learn_noise) {  // EM noise update (uniform-variance GAMP output rule)
                const double psi = prm.psi[l], f = psi / (mup[l] + psi);
                prm.psi[l] = std::max(zz / static_cast<double>(M) * f * f + mup[l] * f, kVarFloor);
            }
            const double inv_tau = 1.0 / tau[l];  // a multiply per entry, not a division
            for (idx i = o; i < o + M; ++i) {
                const double z = yy[i] - AX[i] + mu * S[i];  // the same z as above
                const double s_new = z * inv_tau;
                S[i] = (1.0 - beta) * s_new + beta * S[i];
            }
        }
    }

    // With T = A^T s: r = x + tau T, denoise, EM, damped update of x.
    CSCORE_AMP_INLINE void after_At() {
        for (idx l = 0; l < Lt; ++l)  // r = x + tau T, in T (keeps the working set small)
            for (idx j = l * N; j < (l + 1) * N; ++j) T[j] = X[j] + tau[l] * T[j];
        denoise(*opt, T.data(), N, Lt, tau.data(), prm, Xh.data(), act.data(), d);
        em_prior(*opt, N, Lt, d, prm);
        // damped update; ||x_t - x_{t-1}||^2 and ||x_t||^2 on the way
        v8d adx = CSCORE_V8(0.0), ax2 = adx, xh, xo;
        const idx NL = N * Lt;
        for (idx i = 0; i < NL; i += 8) {
            const idx cnt = std::min<idx>(8, NL - i);
            load8(Xh.data() + i, cnt, xh);
            load8(X.data() + i, cnt, xo);
            const v8d xn = (1.0 - beta) * xh + beta * xo;
            const v8d dx = xn - xo;
            adx += dx * dx;
            ax2 += xn * xn;
            store8(X.data() + i, xn, cnt);
        }
        dx2 = hsum8(adx);
        x2 = hsum8(ax2);
        for (idx l = 0; l < Lt; ++l) vbar[l] = (1.0 - beta) * d.vsum[l] + beta * vbar[l];
    }

    // With AX = A x: the residual, the divergence guard and the stopping rule.
    CSCORE_AMP_INLINE void after_A() {
        const double* yy = y.data();
        v8d acc = CSCORE_V8(0.0), yv, axv;
        const idx ML = M * Lt;
        for (idx i = 0; i < ML; i += 8) {
            const idx cnt = std::min<idx>(8, ML - i);
            load8(yy + i, cnt, yv);
            load8(AX.data() + i, cnt, axv);
            const v8d e = yv - axv;
            acc += e * e;
        }
        const double rho2 = hsum8(acc);
        bool finite = std::isfinite(x2) && std::isfinite(prm.phi) && std::isfinite(prm.lambda);
        for (idx l = 0; l < Lt; ++l)
            finite = finite && std::isfinite(vbar[l]) && std::isfinite(prm.psi[l]);
        const Guard::Next next = guard.update(
            rho2, finite, beta, [&] { snapshot(); }, [&] { restore(); });
        if (next == Guard::Next::diverged) {
            res.stop = Stop::diverged;
            active = false;
        } else if (next == Guard::Next::go_on && dx2 <= opt->tol * opt->tol * x2) {
            res.stop = Stop::tol;
            active = false;
        } else if (it >= opt->max_iter) {
            active = false;  // stop stays max_iter
        }
    }

    // Back to the problem's units (X and the parameters).
    void finish() {
        if (scale == 0.0) return;  // zero measurements: nothing was scaled
        for (idx i = 0; i < N * Lt; ++i) X[i] *= scale;
        res.damping = beta;
        prm.phi *= scale2;
        for (double& p : prm.psi) p *= scale2;
        res.prm = prm;
    }
};

// The element-wise steps for one instruction set (see CSCORE_AMP_INLINE).
struct AmpSteps {
    void (*before_At)(AmpTask&);
    void (*after_At)(AmpTask&);
    void (*after_A)(AmpTask&);
};
inline void before_At_base(AmpTask& t) { t.before_At(); }
inline void after_At_base(AmpTask& t) { t.after_At(); }
inline void after_A_base(AmpTask& t) { t.after_A(); }
#ifdef CSCORE_AMP_SIMD
#define CSCORE_AMP_ELEM2 __attribute__((target("avx2"), optimize("fp-contract=off")))
#define CSCORE_AMP_ELEM512 __attribute__((target("avx512f,avx2"), optimize("fp-contract=off")))
CSCORE_AMP_ELEM2 inline void before_At_avx2(AmpTask& t) { t.before_At(); }
CSCORE_AMP_ELEM2 inline void after_At_avx2(AmpTask& t) { t.after_At(); }
CSCORE_AMP_ELEM2 inline void after_A_avx2(AmpTask& t) { t.after_A(); }
CSCORE_AMP_ELEM512 inline void before_At_avx512(AmpTask& t) { t.before_At(); }
CSCORE_AMP_ELEM512 inline void after_At_avx512(AmpTask& t) { t.after_At(); }
CSCORE_AMP_ELEM512 inline void after_A_avx512(AmpTask& t) { t.after_A(); }
#endif
inline AmpSteps amp_steps(cpu::Isa isa) {
#ifdef CSCORE_AMP_SIMD
    if (isa == cpu::Isa::avx512) return {before_At_avx512, after_At_avx512, after_A_avx512};
    if (isa == cpu::Isa::avx2) return {before_At_avx2, after_At_avx2, after_A_avx2};
#endif
    (void)isa;
    return {before_At_base, after_At_base, after_A_base};
}

// One iteration of the runs `act`: every run's pre-product step, one product with
// A^T for all of them, their denoiser steps, one product with A, their checks.
// A: packed M x N; At: packed N x M.
struct AmpIteration {
    std::vector<const double*> in;
    std::vector<double*> outp;
    std::vector<double> tmp;
    void operator()(const PackedMatrix& A, const PackedMatrix& At, const AmpSteps& steps,
                    const std::vector<AmpTask*>& act) {
        in.clear();
        outp.clear();
        for (AmpTask* t : act) {
            steps.before_At(*t);
            for (idx l = 0; l < t->Lt; ++l) {
                in.push_back(t->S.data() + l * t->M);
                outp.push_back(t->T.data() + l * t->N);
            }
        }
        multiply(At, static_cast<pidx>(in.size()), in.data(), outp.data(), tmp);
        in.clear();
        outp.clear();
        for (AmpTask* t : act) {
            steps.after_At(*t);
            for (idx l = 0; l < t->Lt; ++l) {
                in.push_back(t->X.data() + l * t->N);
                outp.push_back(t->AX.data() + l * t->M);
            }
        }
        multiply(A, static_cast<pidx>(in.size()), in.data(), outp.data(), tmp);
        for (AmpTask* t : act) steps.after_A(*t);
    }
};

// ----------------------------------------------------------------------------- VAMP

// State of one VAMP run, advanced like AmpTask: a worker's runs do their own
// iterations and share the three products of each (V^T r2, V w, V^T x1), done for
// all of them at once by amp_products.hpp (same chain per entry whatever the batch).
// UT = U^T packed (R x M), s: the R singular values, Vt = V^T packed (R x N),
// V packed (N x R).
struct VampTask {
    Buffer y, yt, r2, r1, x1, Vr, Wk, T, act;
    Buffer br2, bx1, bact;
    DenoiseOut d;
    idx M = 0, N = 0, R = 0, Lt = 0;
    const double* s = nullptr;
    const Options* opt = nullptr;
    RunResult res;
    Params prm, bprm;
    std::vector<double> yperp, g2, g1, tau, a1, a2, bg2;
    double beta = 0.0, scale = 1.0, scale2 = 1.0, dx2 = 0.0, x2 = 0.0;
    Guard guard{1.0};
    bool learn_noise = false, active = false;
    long it = 0;

    void size(idx M_, idx N_, idx R_, idx Lt_) {
        M = M_;
        N = N_;
        R = R_;
        Lt = Lt_;
        y.resize(M * Lt);
        for (Buffer* b : {&yt, &Vr, &Wk}) b->resize(R * Lt);
        for (Buffer* b : {&r2, &r1, &x1, &T, &br2, &bx1}) b->resize(N * Lt);
        act.resize(N);
        bact.resize(N);
    }
    void snapshot() {
        br2.copy_from(r2);
        bx1.copy_from(x1);
        bact.copy_from(act);
        bprm = prm;
        bg2 = g2;
    }
    void restore() {
        r2.copy_from(br2);
        x1.copy_from(bx1);
        act.copy_from(bact);
        prm = bprm;
        g2 = bg2;
    }

    // Starts a run on y (M x Lt, in `y`); UT: U^T packed, for U^T y.
    void start(const PackedMatrix& UT, const double* s_, const Options& o,
               std::vector<double>& tmp) {
        s = s_;
        opt = &o;
        res = RunResult{};
        res.damping = o.damping;
        const idx ML = M * Lt;
        const double ny2 = sumsq(y.data(), ML);
        x1.fill(0.0);
        act.fill(0.0);
        active = false;
        it = 0;
        if (!(ny2 > 0.0)) {
            res.prm.lambda = o.sparsity;
            res.prm.phi = 0.0;
            res.prm.psi.assign(static_cast<std::size_t>(Lt), 0.0);
            scale = 0.0;
            return;
        }
        scale2 = ny2 / static_cast<double>(ML);
        scale = std::sqrt(scale2);
        for (idx i = 0; i < ML; ++i) y[i] /= scale;
        double frob2 = 0.0;
        for (idx k = 0; k < R; ++k) frob2 += s[k] * s[k];
        prm = init_params(o, y.data(), M, Lt, frob2, scale2);
        const bool bg = o.denoiser == Denoiser::bg;
        learn_noise = !(o.noise_var > 0.0);
        // U^T y and the energy of y outside the range of U.
        std::vector<const double*> in;
        std::vector<double*> outp;
        for (idx l = 0; l < Lt; ++l) {
            in.push_back(y.data() + l * M);
            outp.push_back(yt.data() + l * R);
        }
        multiply(UT, static_cast<pidx>(Lt), in.data(), outp.data(), tmp);
        const auto nl = static_cast<std::size_t>(Lt);
        yperp.assign(nl, 0.0);
        g2.assign(nl, 0.0);
        g1.assign(nl, 0.0);
        tau.assign(nl, 0.0);
        a1.assign(nl, 0.0);
        a2.assign(nl, 0.0);
        for (idx l = 0; l < Lt; ++l) {
            const double e = sumsq(y.data() + l * M, M);
            yperp[l] = std::max(e - sumsq(yt.data() + l * R, R), 0.0);
            // prior precision: bg 1/(lambda phi); l1 the energy-matched 1/v0, v0 = ||y_l||^2/||A||_F^2
            const double v0 = bg ? prm.lambda * prm.phi : e / frob2;
            g2[l] = 1.0 / std::max(v0, kVarFloor);
        }
        r2.fill(0.0);
        beta = o.damping;
        guard = Guard(static_cast<double>(ML));
        snapshot();
        res.stop = Stop::max_iter;
        active = true;
    }

    // With Vr = V^T r2: the LMMSE stage in the SVD basis (w into Wk).
    void lmmse() {
        res.n_iter = ++it;
        for (idx l = 0; l < Lt; ++l) {
            const double gw = 1.0 / prm.psi[l];
            double dsum = 0.0, trace = 0.0, res2 = 0.0;
            for (idx k = 0; k < R; ++k) {
                const double sk = s[k], den = gw * sk * sk + g2[l];
                const double ytk = yt[k + l * R], vr = Vr[k + l * R];
                const double wk = gw * sk / den * (ytk - sk * vr);
                Wk[k + l * R] = wk;
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
    }

    // With T = V w: r1, the denoiser (estimate into x1), EM, the new r2 and gamma2.
    void denoise_stage() {
        for (idx l = 0; l < Lt; ++l) {
            const double f = 1.0 / (1.0 - a2[l]);
            for (idx j = l * N; j < (l + 1) * N; ++j) r1[j] = r2[j] + f * T[j];
        }
        // The new estimate goes to T (x1 keeps the previous one).
        denoise(*opt, r1.data(), N, Lt, tau.data(), prm, T.data(), act.data(), d);
        em_prior(*opt, N, Lt, d, prm);
        dx2 = 0.0;
        x2 = 0.0;
        for (idx i = 0; i < N * Lt; ++i) {
            const double dx = T[i] - x1[i];
            dx2 += dx * dx;
            x2 += T[i] * T[i];
        }
        x1.copy_from(T);
        for (idx l = 0; l < Lt; ++l) {
            a1[l] = clamp(d.vsum[l] / (static_cast<double>(N) * tau[l]), kAlphaMin,
                          1.0 - kAlphaMin);
            const double g2n = g1[l] * (1.0 - a1[l]) / a1[l];
            const double c = 1.0 / (1.0 - a1[l]);
            for (idx j = l * N; j < (l + 1) * N; ++j) {
                const double r2n = c * (x1[j] - a1[l] * r1[j]);
                r2[j] = (1.0 - beta) * r2n + beta * r2[j];
            }
            const double sd = (1.0 - beta) / std::sqrt(g2n) + beta / std::sqrt(g2[l]);
            g2[l] = 1.0 / (sd * sd);
        }
    }

    // With Vr = V^T x1: the residual ||y_perp||^2 + ||U^T y - diag(s) V^T x1||^2, the
    // guard and the stopping rule.
    void check() {
        double rho2 = 0.0;
        for (idx l = 0; l < Lt; ++l) {
            rho2 += yperp[l];
            for (idx k = 0; k < R; ++k) {
                const double e = yt[k + l * R] - s[k] * Vr[k + l * R];
                rho2 += e * e;
            }
        }
        bool finite = std::isfinite(x2) && std::isfinite(prm.phi) && std::isfinite(prm.lambda) &&
                      all_finite(r2.data(), N * Lt);
        for (idx l = 0; l < Lt; ++l)
            finite = finite && std::isfinite(g2[l]) && g2[l] > 0.0 && std::isfinite(prm.psi[l]);
        const Guard::Next next = guard.update(
            rho2, finite, beta, [&] { snapshot(); }, [&] { restore(); });
        if (next == Guard::Next::diverged) {
            res.stop = Stop::diverged;
            active = false;
        } else if (next == Guard::Next::go_on && dx2 <= opt->tol * opt->tol * x2) {
            res.stop = Stop::tol;
            active = false;
        } else if (it >= opt->max_iter) {
            active = false;
        }
    }

    void finish() {
        if (scale == 0.0) return;
        for (idx i = 0; i < N * Lt; ++i) x1[i] *= scale;
        res.damping = beta;
        prm.phi *= scale2;
        for (double& p : prm.psi) p *= scale2;
        res.prm = prm;
    }
};

// One VAMP iteration of the runs `act` (three shared products).
struct VampIteration {
    std::vector<const double*> in;
    std::vector<double*> outp;
    std::vector<double> tmp;
    template <class Src, class Dst>
    void product(const PackedMatrix& W, const std::vector<VampTask*>& act, Src src, Dst dst) {
        in.clear();
        outp.clear();
        for (VampTask* t : act)
            for (idx l = 0; l < t->Lt; ++l) {
                in.push_back(src(*t, l));
                outp.push_back(dst(*t, l));
            }
        multiply(W, static_cast<pidx>(in.size()), in.data(), outp.data(), tmp);
    }
    void operator()(const PackedMatrix& Vt, const PackedMatrix& V,
                    const std::vector<VampTask*>& act) {
        auto r2 = [](VampTask& t, idx l) -> const double* { return t.r2.data() + l * t.N; };
        auto x1 = [](VampTask& t, idx l) -> const double* { return t.x1.data() + l * t.N; };
        auto vr = [](VampTask& t, idx l) { return t.Vr.data() + l * t.R; };
        auto wk = [](VampTask& t, idx l) -> const double* { return t.Wk.data() + l * t.R; };
        auto tt = [](VampTask& t, idx l) { return t.T.data() + l * t.N; };
        product(Vt, act, r2, vr);
        for (VampTask* t : act) t->lmmse();
        product(V, act, wk, tt);
        for (VampTask* t : act) t->denoise_stage();
        product(Vt, act, x1, vr);
        for (VampTask* t : act) t->check();
    }
};

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

// Runs advanced together by one worker: a run that ends hands its slot to the
// worker's next problem, so the products keep this many columns until the
// worker's problems run out.  Any number gives the same results; 32 runs' state
// (about 40 KB each at N = 500, M = 250) and the packed A and A^T stay near the L2
// cache (measured on the BG benchmark, AVX-512: 32 slots 1.40-1.47x the dgemm
// time of the multiply-adds, 64 slots 1.47-1.55x, 16 slots 1.48-1.73x).
constexpr idx kAmpSlots = 32;

// AMP on P problems Y (P, M, L) C-contiguous; A row-major M x N with ||A||_F^2 = frob2.
inline void amp_decode(const double* A, idx M, idx N, double frob2, const double* Y, idx P, idx L,
                       const Options& opt, const Outputs& out, int n_threads, Control* ctl) {
    const idx Lt = opt.joint ? L : 1;
    const idx tasks = opt.joint ? P : P * L;
    const cpu::Isa isa = cpu::active_isa();
    PackedMatrix Ap, Atp;
    Ap.pack(A, M, N, N, 1, isa);   // A[j, kk] = A[j N + kk]
    Atp.pack(A, N, M, 1, N, isa);  // A^T[j, kk] = A[kk N + j]
    const AmpSteps steps = amp_steps(isa);
    parallel_for(
        tasks, n_threads,
        [&](idx begin, idx end, int) {
            const idx nslots = std::min(kAmpSlots, end - begin);
            std::vector<std::unique_ptr<AmpTask>> slot;
            std::vector<idx> which(static_cast<std::size_t>(nslots), -1);
            for (idx i = 0; i < nslots; ++i) {
                slot.push_back(std::make_unique<AmpTask>());
                slot.back()->size(M, N, Lt);
            }
            idx next = begin;
            // Stores a finished run and starts the next problem in its slot (runs
            // that end at once, zero measurements, are stored on the spot).
            auto refill = [&](idx i) {
                AmpTask& w = *slot[i];
                for (;;) {
                    if (which[i] >= 0) {
                        const idx t = which[i], p = opt.joint ? t : t / L,
                                  l0 = opt.joint ? 0 : t % L;
                        w.finish();
                        store(out, p, N, L, l0, Lt, w.X.data(), w.act.data(), w.res);
                        which[i] = -1;
                    }
                    if (next >= end) return;
                    const idx t = next++, p = opt.joint ? t : t / L, l0 = opt.joint ? 0 : t % L;
                    load_y(Y, p, M, L, l0, Lt, w.y.data());
                    w.start(frob2, opt);
                    which[i] = t;
                    if (w.active) return;
                }
            };
            for (idx i = 0; i < nslots; ++i) refill(i);
            AmpIteration iterate;
            std::vector<AmpTask*> act;
            for (;;) {
                if (should_stop(ctl)) return;
                act.clear();
                for (idx i = 0; i < nslots; ++i)
                    if (which[i] >= 0 && slot[i]->active) act.push_back(slot[i].get());
                if (act.empty()) break;
                iterate(Ap, Atp, steps, act);
                for (idx i = 0; i < nslots; ++i)
                    if (which[i] >= 0 && !slot[i]->active) refill(i);
            }
            for (idx i = 0; i < nslots; ++i)
                if (which[i] >= 0) refill(i);  // (nothing left to start)
        },
        ctl);
}

// VAMP on P problems from the economy SVD A = U diag(s) V^T: U (M, R), Vt (R, N)
// row-major.  Slots as amp_decode.
inline void vamp_decode(const double* U, const double* s, const double* Vt, idx M, idx N, idx R,
                        const double* Y, idx P, idx L, const Options& opt, const Outputs& out,
                        int n_threads, Control* ctl) {
    const idx Lt = opt.joint ? L : 1;
    const idx tasks = opt.joint ? P : P * L;
    const cpu::Isa isa = cpu::active_isa();
    PackedMatrix UTp, Vtp, Vp;
    UTp.pack(U, R, M, 1, R, isa);   // U^T[k, i] = U[i R + k]
    Vtp.pack(Vt, R, N, N, 1, isa);  // V^T[k, j] = Vt[k N + j]
    Vp.pack(Vt, N, R, 1, N, isa);   // V[j, k] = Vt[k N + j]
    parallel_for(
        tasks, n_threads,
        [&](idx begin, idx end, int) {
            const idx nslots = std::min(kAmpSlots, end - begin);
            std::vector<std::unique_ptr<VampTask>> slot;
            std::vector<idx> which(static_cast<std::size_t>(nslots), -1);
            for (idx i = 0; i < nslots; ++i) {
                slot.push_back(std::make_unique<VampTask>());
                slot.back()->size(M, N, R, Lt);
            }
            std::vector<double> tmp;
            idx next = begin;
            auto refill = [&](idx i) {
                VampTask& w = *slot[i];
                for (;;) {
                    if (which[i] >= 0) {
                        const idx t = which[i], p = opt.joint ? t : t / L,
                                  l0 = opt.joint ? 0 : t % L;
                        w.finish();
                        store(out, p, N, L, l0, Lt, w.x1.data(), w.act.data(), w.res);
                        which[i] = -1;
                    }
                    if (next >= end) return;
                    const idx t = next++, p = opt.joint ? t : t / L, l0 = opt.joint ? 0 : t % L;
                    load_y(Y, p, M, L, l0, Lt, w.y.data());
                    w.start(UTp, s, opt, tmp);
                    which[i] = t;
                    if (w.active) return;
                }
            };
            for (idx i = 0; i < nslots; ++i) refill(i);
            VampIteration iterate;
            std::vector<VampTask*> act;
            for (;;) {
                if (should_stop(ctl)) return;
                act.clear();
                for (idx i = 0; i < nslots; ++i)
                    if (which[i] >= 0 && slot[i]->active) act.push_back(slot[i].get());
                if (act.empty()) break;
                iterate(Vtp, Vp, act);
                for (idx i = 0; i < nslots; ++i)
                    if (which[i] >= 0 && !slot[i]->active) refill(i);
            }
        },
        ctl);
}

}  // namespace detail

using detail::amp_decode;
using detail::vamp_decode;

}  // namespace cscore::amp
