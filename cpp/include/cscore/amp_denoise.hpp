// AMP and VAMP (amp.hpp): the denoisers -- the Bernoulli-Gaussian MMSE ("bg")
// and the row-l2 soft threshold ("l1") -- and the EM updates of the prior, with
// the initial parameters (EM-BG-AMP's rules).  The formulas are in amp.hpp's
// top comment.  The bg denoiser runs eight rows at a time (simd_math.hpp, in the
// vectors of the instruction set: kParts), every sum in a fixed order that
// depends only on N.
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

// Eight lanes as 8 / W vectors of W doubles (V: simd::vd8, vd4 or vd2).  The
// element-wise loops of AMP run eight entries at a time and keep their sums in
// eight lanes; each instruction set holds those eight lanes in its own vectors
// (vd8 for AVX-512, two vd4 for AVX2, four vd2 for the baseline), which does not
// change a single operation on any lane, and hsum8 adds the eight lanes in the
// order of simd::hsum on eight lanes, so every width gives the same bits.  (GCC
// lowers a comparison or a select on a vector wider than the instruction set's
// registers lane by lane, through memory: the reason for native widths.)
template <class V>
constexpr int kParts = 8 / simd::Lanes<V>::width;

// v = the first n (0 <= n <= 8) of p[0 .. 8), the rest zero.  (A full block is
// loaded straight into registers: a partial copy through memory would stall the
// next full-width read of it.)
template <class V>
CSCORE_AMP_INLINE void load8(const double* p, idx n, V (&v)[kParts<V>]) {
    constexpr idx W = simd::Lanes<V>::width;
    if (n == 8) {
#pragma GCC unroll 4
        for (int h = 0; h < kParts<V>; ++h) simd::load(p + h * W, v[h]);
        return;
    }
#pragma GCC unroll 4
    for (int h = 0; h < kParts<V>; ++h)
        simd::load_partial(p + h * W, std::clamp<idx>(n - h * W, 0, W), v[h]);
}

// p[0 .. n) = the first n (0 <= n <= 8) lanes of v.
template <class V>
CSCORE_AMP_INLINE void store8(double* p, const V (&v)[kParts<V>], idx n) {
    constexpr idx W = simd::Lanes<V>::width;
    if (n == 8) {
#pragma GCC unroll 4
        for (int h = 0; h < kParts<V>; ++h) simd::store(p + h * W, v[h]);
        return;
    }
#pragma GCC unroll 4
    for (int h = 0; h < kParts<V>; ++h) {
        const idx c = std::clamp<idx>(n - h * W, 0, W);
        if (c > 0) simd::store_partial(p + h * W, v[h], c);
    }
}

// The eight lanes of v[lo .. hi) summed pairwise, halves first (= simd::hsum on
// one eight-lane vector).
template <int lo, int hi, class V>
CSCORE_AMP_INLINE double sum_parts(const V* v) {
    if constexpr (hi - lo == 1) {
        return simd::hsum(v[lo]);
    } else {
        constexpr int mid = lo + (hi - lo) / 2;
        return sum_parts<lo, mid>(v) + sum_parts<mid, hi>(v);
    }
}
template <class V>
CSCORE_AMP_INLINE double hsum8(const V (&v)[kParts<V>]) {
    return sum_parts<0, kParts<V>>(v);
}

// What a denoiser call returns besides the estimate.
struct DenoiseOut {
    std::vector<double> vsum;  // sum_j var_jl, per channel
    std::vector<double> g, k, nu, vs;  // scratch of denoise_bg
    double sum_pi = 0.0;       // bg: sum_j pi_j
    double sum_pi_m2 = 0.0;    // bg: sum_j pi_j sum_l (g_l^2 r_jl^2 + nu_l)
};

// R, X: N x Lt column-major; act: N (row activity).  Eight rows at a time (the
// last block padded, its padding masked out of the sums), every sum in a fixed
// order that depends only on N; V: the vectors that hold the eight lanes.
template <class V>
CSCORE_AMP_INLINE void denoise_bg(const double* R, idx N, idx Lt, const double* tau, double lambda,
                       double phi, double* X, double* act, DenoiseOut& out) {
    constexpr int P = kParts<V>;
    constexpr int W = simd::Lanes<V>::width;
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
    const V zero{};
    V one;
    simd::set1(one, 1.0);
    V lane[P];  // the row of each lane within a block of eight
    for (int h = 0; h < P; ++h)
        for (int i = 0; i < W; ++i) lane[h][i] = static_cast<double>(h * W + i);
    // per-channel lane sums, as plain doubles (a std::vector of 64-byte vectors
    // would not be 64-byte aligned everywhere)
    std::vector<double>& vs = out.vs;
    vs.assign(8 * nl, 0.0);
    V spi[P], spm2[P];
    for (int h = 0; h < P; ++h) spi[h] = spm2[h] = zero;
    for (idx j0 = 0; j0 < N; j0 += 8) {
        const idx cnt = std::min<idx>(8, N - j0);
        V llr[P], m2[P], r[P], pi[P], q[P], count;
        for (int h = 0; h < P; ++h) {
            simd::set1(llr[h], c0);
            m2[h] = zero;
        }
        for (idx l = 0; l < Lt; ++l) {
            load8(R + j0 + l * N, cnt, r);
            for (int h = 0; h < P; ++h) {
                llr[h] += 0.5 * r[h] * r[h] * k[l];
                const V gr = g[l] * r[h];
                m2[h] += gr * gr + nu[l];
            }
        }
        for (int h = 0; h < P; ++h) {
            pi[h] = llr[h];
            simd::sigmoid_stable(pi[h]);
        }
        if (cnt < 8) {  // the padding (a full block's mask keeps every lane)
            simd::set1(count, static_cast<double>(cnt));
            for (int h = 0; h < P; ++h) pi[h] = lane[h] < count ? pi[h] : zero;
        }
        store8(act + j0, pi, cnt);
        for (int h = 0; h < P; ++h) {
            spi[h] += pi[h];
            spm2[h] += pi[h] * m2[h];
            q[h] = pi[h] * (one - pi[h]);
        }
        for (idx l = 0; l < Lt; ++l) {
            load8(R + j0 + l * N, cnt, r);
            V xo[P];
            for (int h = 0; h < P; ++h) {
                const V gr = g[l] * r[h];
                xo[h] = pi[h] * gr;
                V acc;
                std::memcpy(&acc, vs.data() + 8 * l + h * W, sizeof(acc));
                acc += pi[h] * nu[l] + q[h] * gr * gr;
                std::memcpy(vs.data() + 8 * l + h * W, &acc, sizeof(acc));
            }
            store8(X + j0 + l * N, xo, cnt);
        }
    }
    out.vsum.assign(static_cast<std::size_t>(Lt), 0.0);
    for (idx l = 0; l < Lt; ++l) {
        V acc[P];
        std::memcpy(acc, vs.data() + 8 * l, sizeof(acc));
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

template <class V = simd::vd8>
CSCORE_AMP_INLINE void denoise(const Options& opt, const double* R, idx N, idx Lt, const double* tau,
                    const Params& prm, double* X, double* act, DenoiseOut& out) {
    if (opt.denoiser == Denoiser::bg)
        denoise_bg<V>(R, N, Lt, tau, prm.lambda, prm.phi, X, act, out);
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
