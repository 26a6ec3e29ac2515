// AMP and VAMP (amp.hpp): the denoisers -- the Bernoulli-Gaussian MMSE ("bg")
// and the row-l2 soft threshold ("l1") -- and the EM updates of the prior, with
// the initial parameters (EM-BG-AMP's rules).  The formulas are in amp.hpp's
// top comment.  The bg denoiser runs eight rows at a time (simd_math.hpp), every
// sum in a fixed order that depends only on N.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "cscore/amp_common.hpp"
#include "cscore/simd_math.hpp"

namespace cscore::amp {
namespace detail {

// What a denoiser call returns besides the estimate.
struct DenoiseOut {
    std::vector<double> vsum;  // sum_j var_jl, per channel
    std::vector<double> g, k, nu, vs;  // scratch of denoise_bg
    double sum_pi = 0.0;       // bg: sum_j pi_j
    double sum_pi_m2 = 0.0;    // bg: sum_j pi_j sum_l (g_l^2 r_jl^2 + nu_l)
};

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
    const simd::vd8 zero{};
    simd::vd8 one;
    simd::set1(one, 1.0);
    const simd::vd8 lane = {0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0};
    // per-channel lane sums, as plain doubles (a std::vector of 64-byte vectors
    // would not be 64-byte aligned everywhere)
    std::vector<double>& vs = out.vs;
    vs.assign(8 * nl, 0.0);
    simd::vd8 spi = zero, spm2 = zero;
    for (idx j0 = 0; j0 < N; j0 += 8) {
        const idx cnt = std::min<idx>(8, N - j0);
        simd::vd8 llr, m2 = zero, r, count;
        simd::set1(llr, c0);
        for (idx l = 0; l < Lt; ++l) {
            simd::load_partial(R + j0 + l * N, cnt, r);
            llr += 0.5 * r * r * k[l];
            const simd::vd8 gr = g[l] * r;
            m2 += gr * gr + nu[l];
        }
        simd::vd8 pi = llr;
        simd::sigmoid_stable(pi);
        simd::set1(count, static_cast<double>(cnt));
        pi = lane < count ? pi : zero;
        simd::store_partial(act + j0, pi, cnt);
        spi += pi;
        spm2 += pi * m2;
        const simd::vd8 q = pi * (one - pi);
        for (idx l = 0; l < Lt; ++l) {
            simd::load_partial(R + j0 + l * N, cnt, r);
            const simd::vd8 gr = g[l] * r;
            simd::store_partial(X + j0 + l * N, pi * gr, cnt);
            simd::vd8 acc;
            std::memcpy(&acc, vs.data() + 8 * l, sizeof(acc));
            acc += pi * nu[l] + q * gr * gr;
            std::memcpy(vs.data() + 8 * l, &acc, sizeof(acc));
        }
    }
    out.vsum.assign(static_cast<std::size_t>(Lt), 0.0);
    for (idx l = 0; l < Lt; ++l) {
        simd::vd8 acc;
        std::memcpy(&acc, vs.data() + 8 * l, sizeof(acc));
        out.vsum[l] = simd::hsum(acc);
    }
    out.sum_pi = simd::hsum(spi);
    out.sum_pi_m2 = simd::hsum(spm2);
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

}  // namespace detail
}  // namespace cscore::amp
