// VAMP in its SVD form (amp.hpp): the state of one run, its LMMSE, denoiser and
// check stages, and one iteration of a worker's runs with the three shared
// products (VampIteration).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "cscore/amp_common.hpp"
#include "cscore/amp_denoise.hpp"
#include "cscore/amp_products.hpp"

namespace cscore::amp {
namespace detail {

// State of one VAMP run, advanced like AmpTask: a worker's runs do their own
// iterations and share the three products of each (V^T r2, V w, V^T x1), done for
// all of them at once by amp_products.hpp (same chain per entry whatever the batch).
// UT = U^T packed (R x M), s: the R singular values, Vt = V^T packed (R x N),
// V packed (N x R).
struct VampTask : Run {
    Buffer yt, r2, r1, x1, Vr, Wk, T;
    Buffer br2, bx1;  // best-iterate snapshot
    DenoiseOut d;
    idx R = 0;
    const double* s = nullptr;
    std::vector<double> yperp, g2, g1, tau, a1, a2, bg2;
    std::vector<double> t1, t2, t3;  // lmmse's terms, summed in order after

    void size(idx M_, idx N_, idx R_, idx Lt_) {
        size_run(M_, N_, Lt_);
        R = R_;
        for (Buffer* b : {&yt, &Vr, &Wk}) b->resize(R * Lt);
        for (Buffer* b : {&r2, &r1, &x1, &T, &br2, &bx1}) b->resize(N * Lt);
    }
    // The state kept of the best iterate, as (current, copy) pairs.
    template <class F>
    void best_pairs(F&& f) {
        f(r2, br2);
        f(x1, bx1);
        f(act, bact);
        f(prm, bprm);
        f(g2, bg2);
    }
    void snapshot() { best_pairs([](auto& cur, auto& best) { assign(best, cur); }); }
    void restore() { best_pairs([](auto& cur, auto& best) { assign(cur, best); }); }

    // Starts a run on y (M x Lt, in `y`); UT: U^T packed, for U^T y.
    void start(const PackedMatrix& UT, const double* s_, const Options& o,
               std::vector<double>& tmp) {
        s = s_;
        x1.fill(0.0);
        if (!begin(o)) return;
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
        arm();
        snapshot();
        active = true;
    }

    // With Vr = V^T r2: the LMMSE stage in the SVD basis (w into Wk).  The terms
    // of its three sums first (a loop the compiler vectorizes: one division per
    // term, as written), then the sums, each in the order of k.  The steps below
    // are compiled per instruction set (VampSteps); V: the vectors of the
    // denoiser (amp_denoise.hpp).
    CSCORE_AMP_INLINE void lmmse() {
        res.n_iter = ++it;
        t1.resize(static_cast<std::size_t>(R));
        t2.resize(static_cast<std::size_t>(R));
        t3.resize(static_cast<std::size_t>(R));
        double* const d1 = t1.data();
        double* const d2 = t2.data();
        double* const d3 = t3.data();
        for (idx l = 0; l < Lt; ++l) {
            const double gw = 1.0 / prm.psi[l];
            const double g2l = g2[l];
            const double* const ytl = yt.data() + l * R;
            const double* const vrl = Vr.data() + l * R;
            double* const wkl = Wk.data() + l * R;
            for (idx k = 0; k < R; ++k) {
                const double sk = s[k], den = gw * sk * sk + g2l;
                const double ytk = ytl[k], vr = vrl[k];
                const double wk = gw * sk / den * (ytk - sk * vr);
                wkl[k] = wk;
                d1[k] = gw * sk * sk / den;
                d2[k] = sk * sk / den;
                const double e = ytk - sk * (vr + wk);
                d3[k] = e * e;
            }
            double dsum = 0.0, trace = 0.0, res2 = 0.0;
            for (idx k = 0; k < R; ++k) {
                dsum += d1[k];
                trace += d2[k];
                res2 += d3[k];
            }
            a2[l] = clamp(1.0 - dsum / static_cast<double>(N), kAlphaMin, 1.0 - kAlphaMin);
            if (learn_noise)
                prm.psi[l] = std::max((yperp[l] + res2 + trace) / static_cast<double>(M), kVarFloor);
            g1[l] = g2[l] * (1.0 - a2[l]) / a2[l];
            tau[l] = 1.0 / g1[l];
        }
    }

    // With T = V w: r1, the denoiser (estimate into x1), EM, the new r2 and gamma2.
    template <class V>
    CSCORE_AMP_INLINE void denoise_stage() {
        for (idx l = 0; l < Lt; ++l) {
            const double f = 1.0 / (1.0 - a2[l]);
            for (idx j = l * N; j < (l + 1) * N; ++j) r1[j] = r2[j] + f * T[j];
        }
        // The new estimate goes to T (x1 keeps the previous one).
        denoise<V>(*opt, r1.data(), N, Lt, tau.data(), prm, T.data(), act.data(), d);
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
    CSCORE_AMP_INLINE void check() {
        double rho2 = 0.0;
        for (idx l = 0; l < Lt; ++l) {
            rho2 += yperp[l];
            for (idx k = 0; k < R; ++k) {
                const double e = yt[k + l * R] - s[k] * Vr[k + l * R];
                rho2 += e * e;
            }
        }
        bool finite = params_finite() && all_finite(r2.data(), N * Lt);
        for (idx l = 0; l < Lt; ++l) finite = finite && std::isfinite(g2[l]) && g2[l] > 0.0;
        judge(rho2, finite, [&] { snapshot(); }, [&] { restore(); });
    }

    // The estimate (in the problem's units after finish()).
    const double* estimate() const { return x1.data(); }

    void finish() { unscale(x1); }
};

// VAMP's steps for one instruction set, as AmpSteps (amp_task.hpp): the same
// rounded operations in each copy, so the same bits.
struct VampSteps {
    void (*lmmse)(VampTask&);
    void (*denoise_stage)(VampTask&);
    void (*check)(VampTask&);
};
inline void lmmse_base(VampTask& t) { t.lmmse(); }
inline void denoise_stage_base(VampTask& t) { t.denoise_stage<simd::vd2>(); }
inline void check_base(VampTask& t) { t.check(); }
#ifdef CSCORE_AMP_SIMD
CSCORE_AMP_ELEM2 inline void lmmse_avx2(VampTask& t) { t.lmmse(); }
CSCORE_AMP_ELEM2 inline void denoise_stage_avx2(VampTask& t) { t.denoise_stage<simd::vd4>(); }
CSCORE_AMP_ELEM2 inline void check_avx2(VampTask& t) { t.check(); }
CSCORE_AMP_ELEM512 inline void lmmse_avx512(VampTask& t) { t.lmmse(); }
CSCORE_AMP_ELEM512 inline void denoise_stage_avx512(VampTask& t) { t.denoise_stage<simd::vd8>(); }
CSCORE_AMP_ELEM512 inline void check_avx512(VampTask& t) { t.check(); }
#endif
inline VampSteps vamp_steps(cpu::Isa isa) {
#ifdef CSCORE_AMP_SIMD
    if (isa == cpu::Isa::avx512) return {lmmse_avx512, denoise_stage_avx512, check_avx512};
    if (isa == cpu::Isa::avx2) return {lmmse_avx2, denoise_stage_avx2, check_avx2};
#endif
    (void)isa;
    return {lmmse_base, denoise_stage_base, check_base};
}

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
    void operator()(const PackedMatrix& Vt, const PackedMatrix& V, const VampSteps& steps,
                    const std::vector<VampTask*>& act) {
        auto r2 = [](VampTask& t, idx l) -> const double* { return t.r2.data() + l * t.N; };
        auto x1 = [](VampTask& t, idx l) -> const double* { return t.x1.data() + l * t.N; };
        auto vr = [](VampTask& t, idx l) { return t.Vr.data() + l * t.R; };
        auto wk = [](VampTask& t, idx l) -> const double* { return t.Wk.data() + l * t.R; };
        auto tt = [](VampTask& t, idx l) { return t.T.data() + l * t.N; };
        product(Vt, act, r2, vr);
        for (VampTask* t : act) steps.lmmse(*t);
        product(V, act, wk, tt);
        for (VampTask* t : act) steps.denoise_stage(*t);
        product(Vt, act, x1, vr);
        for (VampTask* t : act) steps.check(*t);
    }
};

}  // namespace detail
}  // namespace cscore::amp
