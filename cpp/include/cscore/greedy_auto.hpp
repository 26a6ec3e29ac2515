// tol="auto" of the greedy decoders (greedy.hpp): once a greedy path has ended,
// residual ratio thresholding picks the steps that added signal
// (rrt_signal_steps, with holds_signal for paths no step of which passed the
// ratio test and the incomplete beta function log_ibeta), the residual after
// them gives the noise level, and auto_cut keeps the first prefix of the path
// whose residual is below the paper's threshold for that noise.  The rules
// mirror python/cscore/decoders/stopping.py.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "cscore/greedy_dictionary.hpp"
#include "cscore/greedy_scalar.hpp"
#include "cscore/greedy_steps.hpp"
#include "cscore/greedy_workspace.hpp"

namespace cscore::greedy {

// ln I_x(a, b), the regularized incomplete beta function, given
// log_front = a ln x + b ln(1 - x) - ln B(a, b), for 0 < x < 1: the continued
// fraction (modified Lentz) on the side of the mean where it converges fast.
inline double log_ibeta(double a, double b, double x, double log_front) {
    const auto cf = [](double p, double q, double t) {
        constexpr double tiny = 1e-300;
        double c = 1.0, d = 1.0 - (p + q) * t / (p + 1.0);
        d = 1.0 / (std::abs(d) < tiny ? tiny : d);
        double h = d;
        for (int m = 1; m <= 300; ++m) {
            const double m2 = 2.0 * m;
            const double num_even = m * (q - m) * t / ((p + m2 - 1.0) * (p + m2));
            const double num_odd = -(p + m) * (p + q + m) * t / ((p + m2) * (p + m2 + 1.0));
            double delta = 1.0;
            for (const double num : {num_even, num_odd}) {
                d = 1.0 + num * d;
                d = 1.0 / (std::abs(d) < tiny ? tiny : d);
                c = 1.0 + num / c;
                if (std::abs(c) < tiny) c = tiny;
                delta = d * c;
                h *= delta;
            }
            if (std::abs(delta - 1.0) < 1e-15) break;
        }
        return h;
    };
    if (x < (a + 1.0) / (a + b + 2.0)) return log_front + std::log(cf(a, b, x) / a);
    return std::log1p(-std::exp(log_front + std::log(cf(b, a, 1.0 - x) / b)));
}

// ln I_x(a, b) for x in [0, 1] (-inf at 0, 0 at 1); lnbeta = ln B(a, b).
inline double log_ibeta_at(double a, double b, double lnbeta, double x) {
    if (!(x > 0.0)) return -std::numeric_limits<double>::infinity();
    if (!(x < 1.0)) return 0.0;
    return log_ibeta(a, b, x, a * std::log(x) + b * std::log1p(-x) - lnbeta);
}

// Whether a path that no step of the residual-ratio test took for signal still
// rejects pure noise (step 2b of python/cscore/decoders/stopping.py): the block
// test on E(k) / E(0), or one channel's ratio test; energy(k) is the summed,
// chan(k, c) channel c's squared residual after k steps.
template <class Energy, class Chan>
bool holds_signal(const Options& opt, std::ptrdiff_t n, std::ptrdiff_t L, const Energy& energy,
                  const Chan& chan) {
    const std::ptrdiff_t K = opt.max_atoms;
    const double* t = opt.auto_signal;
    const double e0 = energy(0);
    const auto ratio = [](double e, double prev) {
        const double r = prev > 0.0 ? e / prev : 1.0;
        return std::isnan(r) ? 1.0 : std::min(std::max(r, 0.0), 1.0);
    };
    for (std::ptrdiff_t k = 1; k <= n; ++k) {
        const double x = ratio(energy(k), e0);
        if (log_ibeta_at(opt.auto_a[k - 1], t[k - 1], t[K + k - 1], x) + t[2 * K + k - 1] <= 0.0)
            return true;
    }
    if (L == 1) return false;
    for (std::ptrdiff_t c = 0; c < L; ++c)
        for (std::ptrdiff_t k = 1; k <= n; ++k) {
            const double x = ratio(chan(k, c), chan(k - 1, c));
            if (log_ibeta_at(t[3 * K + k - 1], 0.5, t[4 * K + k - 1], x) + t[5 * K + k - 1] <= 0.0)
                return true;
        }
    return false;
}

// The step k_rrt of residual ratio thresholding on a path with squared residual
// norms E(0..n) (summed over channels): the last step whose ratio
// RR(k)^2 = E(k) / E(k - 1) is below its threshold; when none is, the step with
// the smallest union-bound p-value (see python/cscore/decoders/stopping.py) if
// the path holds signal (holds_signal, when opt.auto_signal is set), else 0.
template <class Energy, class Chan>
std::ptrdiff_t rrt_signal_steps(const Options& opt, std::ptrdiff_t n, std::ptrdiff_t L,
                                const Energy& energy, const Chan& chan) {
    const auto ratio = [&](std::ptrdiff_t k) {
        const double prev = energy(k - 1);
        const double rr2 = prev > 0.0 ? energy(k) / prev : 1.0;
        return std::isnan(rr2) ? 1.0 : std::min(std::max(rr2, 0.0), 1.0);
    };
    for (std::ptrdiff_t k = n; k >= 1; --k)
        if (ratio(k) < opt.auto_gamma2[k - 1]) return k;
    if (opt.auto_signal != nullptr && !holds_signal(opt, n, L, energy, chan)) return 0;
    std::ptrdiff_t best_k = 0;
    double best = std::numeric_limits<double>::infinity();
    for (std::ptrdiff_t k = 1; k <= n; ++k) {
        const double x = ratio(k), a = opt.auto_a[k - 1], b = opt.auto_b;
        double log_i = 0.0;  // ln I_x(a, b): 0 at x = 1
        if (!(x > 0.0)) {
            log_i = -std::numeric_limits<double>::infinity();
        } else if (x < 1.0) {
            log_i = log_ibeta(a, b, x, a * std::log(x) + b * std::log1p(-x) - opt.auto_lnbeta[k - 1]);
        }
        const double logp = log_i + opt.auto_logu[k - 1];
        if (logp < best || best_k == 0) {
            best = logp;
            best_k = k;
        }
    }
    return best_k;
}

// The squared residual norm of every channel after every prefix k = 0..n of the
// path into ws.epath ((n + 1) x L): the explicit residual at the end plus the tail
// of z (sums of squares: no cancellation).  Leaves gamma and res for all n atoms.
template <class T, bool kFma>
void path_energies(const Dictionary<T>& D, Workspace<T>& ws, std::ptrdiff_t n) {
    const std::ptrdiff_t L = ws.L;
    explicit_residual<T, kFma>(D, ws, n);
    if (ws.epath.size() < static_cast<std::size_t>((n + 1) * L)) ws.epath.resize(static_cast<std::size_t>((n + 1) * L));
    Real<T>* E = ws.epath.data();
    for (std::ptrdiff_t c = 0; c < L; ++c) {
        Real<T> acc = ws.res[static_cast<std::size_t>(c)] * ws.res[static_cast<std::size_t>(c)];
        E[n * L + c] = acc;
        for (std::ptrdiff_t k = n - 1; k >= 0; --k) {
            const T zk = ws.z[static_cast<std::size_t>(k * L + c)];
            acc += Scalar<T>::abs2(zk);
            E[k * L + c] = acc;
        }
    }
}

// tol="auto" once the greedy path (n steps) has ended: residual ratio
// thresholding on the path, the noise level from the residual after the signal
// steps, the paper's threshold from it, and the cut: the first step whose summed
// channel residual norms are <= the threshold, at most opt.auto_cap atoms.
// Leaves gamma and res for the cut and returns its length; the noise level, the
// threshold and the signal steps go to *sigma, *tol, *n_signal (scaled units).
template <class T, bool kFma>
std::ptrdiff_t auto_cut(const Dictionary<T>& D, Workspace<T>& ws, std::ptrdiff_t n,
                        const Options& opt, Real<T>* sigma, Real<T>* tol, std::int64_t* n_signal) {
    const std::ptrdiff_t M = D.M, L = ws.L;
    path_energies<T, kFma>(D, ws, n);
    const Real<T>* E = ws.epath.data();
    const auto energy = [&](std::ptrdiff_t k) {
        double e = 0.0;
        for (std::ptrdiff_t c = 0; c < L; ++c) e += static_cast<double>(E[k * L + c]);
        return e;
    };
    const auto chan = [&](std::ptrdiff_t k, std::ptrdiff_t c) {
        return static_cast<double>(E[k * L + c]);
    };
    const std::ptrdiff_t k_sig = rrt_signal_steps(opt, n, L, energy, chan);
    const double dof = static_cast<double>(L * std::max<std::ptrdiff_t>(M - k_sig, 1));
    const double s = std::sqrt(energy(k_sig) / dof);
    const double t = static_cast<double>(L) * s * std::sqrt(static_cast<double>(M * L));
    std::ptrdiff_t cut = n;
    for (std::ptrdiff_t k = 0; k <= n; ++k) {
        double total = 0.0;
        for (std::ptrdiff_t c = 0; c < L; ++c) total += std::sqrt(static_cast<double>(E[k * L + c]));
        if (total <= t * (1.0 + 1e-12)) {
            cut = k;
            break;
        }
    }
    cut = std::min(cut, opt.auto_cap);
    if (cut < n) explicit_residual<T, kFma>(D, ws, cut);
    *sigma = static_cast<Real<T>>(s);
    *tol = static_cast<Real<T>>(t);
    *n_signal = k_sig;
    return cut;
}

}  // namespace cscore::greedy
