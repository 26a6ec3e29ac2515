// AMP (amp.hpp): the state of one run and its iteration, in three element-wise
// steps around the two products, compiled for the baseline, AVX2 and AVX-512
// (AmpSteps), and one iteration of a worker's runs with shared products
// (AmpIteration).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <tuple>
#include <vector>

#include "cscore/amp_common.hpp"
#include "cscore/amp_denoise.hpp"
#include "cscore/amp_products.hpp"
#include "cscore/cpu.hpp"
#include "cscore/simd_math.hpp"

namespace cscore::amp {
namespace detail {

// Workspace and state of one AMP run.  A worker advances a group of runs together
// (AmpIteration): each run does its own iteration (its Onsager term, EM parameters,
// damping guard and stopping); only the two products of an iteration are done for
// the whole group at once (amp_products.hpp), column by column in a fixed order,
// so a run's result does not depend on the other runs of its group.
//
// The best iterate's X, S and AX are kept without copies: a snapshot only marks
// them as the current buffers (`kept`), and the next step that writes one of them
// writes the other buffer of its pair and swaps the two (the same values as an
// in-place update); a restore swaps back where the current one was written since.
struct AmpTask : Run {
    Buffer X, Xh, S, AX, T;
    Buffer bX, bS, bAX;  // best-iterate snapshot (or a free buffer: see kept)
    bool keptX = false, keptS = false, keptAX = false;  // the best is the current
    DenoiseOut d;
    double frob2 = 0.0;
    std::vector<double> vbar, bvbar, tau, mup;

    void size(idx M_, idx N_, idx Lt_) {
        size_run(M_, N_, Lt_);
        for (Buffer* b : {&S, &AX, &bS, &bAX}) b->resize(M * Lt);
        for (Buffer* b : {&X, &Xh, &T, &bX}) b->resize(N * Lt);
    }
    // The rest of the best iterate's state, as (current, copy) pairs.
    template <class F>
    void best_pairs(F&& f) {
        f(act, bact);
        f(prm, bprm);
        f(vbar, bvbar);
    }
    void snapshot() {
        best_pairs([](auto& cur, auto& best) { assign(best, cur); });
        keptX = keptS = keptAX = true;
    }
    void restore() {
        best_pairs([](auto& cur, auto& best) { assign(cur, best); });
        for (auto [cur, best, kept] : {std::tuple{&X, &bX, &keptX}, std::tuple{&S, &bS, &keptS},
                                       std::tuple{&AX, &bAX, &keptAX}}) {
            if (!*kept) cur->swap(*best);
            *kept = true;
        }
    }
    // Where a step writes the new values of `cur` (its pair's other buffer while
    // `cur` holds the best iterate), and the swap that makes them current.
    static double* target(Buffer& cur, Buffer& best, bool kept) {
        return kept ? best.data() : cur.data();
    }
    static void commit(Buffer& cur, Buffer& best, bool& kept) {
        if (kept) cur.swap(best);
        kept = false;
    }
    double* AX_target() { return target(AX, bAX, keptAX); }
    void commit_AX() { commit(AX, bAX, keptAX); }

    // Starts a run on y (M x Lt column-major, already in `y`; scaled here).
    void start(double frob2_, const Options& o) {
        frob2 = frob2_;
        X.fill(0.0);
        if (!begin(o)) return;
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
        arm();
        snapshot();
        active = o.max_iter > 0;
    }

    // z = y - A x + mu_p s, tau = ||z||^2/M, s <- damped z/tau (before r = x + tau A^T s).
    // V: the vectors that hold eight lanes (amp_denoise.hpp), here and below.
    template <class V>
    CSCORE_AMP_INLINE void before_At() {
        constexpr int P = kParts<V>;
        res.n_iter = ++it;
        const double* yy = y.data();
        for (idx l = 0; l < Lt; ++l) {
            mup[l] = vbar[l] / static_cast<double>(M);  // vbar holds sum_j var_j
            const idx o = l * M;
            const double mu = mup[l];
            V acc[P] = {}, yv[P], axv[P], sv[P];
            for (idx i = 0; i < M; i += 8) {  // ||z||^2 (z itself is recomputed below)
                const idx cnt = std::min<idx>(8, M - i);
                load8(yy + o + i, cnt, yv);
                load8(AX.data() + o + i, cnt, axv);
                load8(S.data() + o + i, cnt, sv);
                for (int h = 0; h < P; ++h) {
                    const V z = yv[h] - axv[h] + mu * sv[h];
                    acc[h] += z * z;
                }
            }
            const double zz = hsum8(acc);
            tau[l] = std::max(zz / static_cast<double>(M), kVarFloor);
            if (learn_noise) {  // EM noise update (uniform-variance GAMP output rule)
                const double psi = prm.psi[l], f = psi / (mup[l] + psi);
                prm.psi[l] = std::max(zz / static_cast<double>(M) * f * f + mup[l] * f, kVarFloor);
            }
            const double inv_tau = 1.0 / tau[l];  // a multiply per entry, not a division
            const double* const so = S.data();
            double* const sn = target(S, bS, keptS);
            for (idx i = o; i < o + M; ++i) {
                const double z = yy[i] - AX[i] + mu * so[i];  // the same z as above
                const double s_new = z * inv_tau;
                sn[i] = (1.0 - beta) * s_new + beta * so[i];
            }
        }
        commit(S, bS, keptS);
    }

    // With T = A^T s: r = x + tau T, denoise, EM, damped update of x.
    template <class V>
    CSCORE_AMP_INLINE void after_At() {
        constexpr int P = kParts<V>;
        for (idx l = 0; l < Lt; ++l)  // r = x + tau T, in T (keeps the working set small)
            for (idx j = l * N; j < (l + 1) * N; ++j) T[j] = X[j] + tau[l] * T[j];
        denoise<V>(*opt, T.data(), N, Lt, tau.data(), prm, Xh.data(), act.data(), d);
        em_prior(*opt, N, Lt, d, prm);
        // damped update; ||x_t - x_{t-1}||^2 and ||x_t||^2 on the way
        V adx[P] = {}, ax2[P] = {}, xh[P], xo[P], xn[P];
        const idx NL = N * Lt;
        double* const xnew = target(X, bX, keptX);
        for (idx i = 0; i < NL; i += 8) {
            const idx cnt = std::min<idx>(8, NL - i);
            load8(Xh.data() + i, cnt, xh);
            load8(X.data() + i, cnt, xo);
            for (int h = 0; h < P; ++h) {
                xn[h] = (1.0 - beta) * xh[h] + beta * xo[h];
                const V dx = xn[h] - xo[h];
                adx[h] += dx * dx;
                ax2[h] += xn[h] * xn[h];
            }
            store8(xnew + i, xn, cnt);
        }
        commit(X, bX, keptX);
        dx2 = hsum8(adx);
        x2 = hsum8(ax2);
        for (idx l = 0; l < Lt; ++l) vbar[l] = (1.0 - beta) * d.vsum[l] + beta * vbar[l];
    }

    // With AX = A x: the residual, the divergence guard and the stopping rule.
    template <class V>
    CSCORE_AMP_INLINE void after_A() {
        constexpr int P = kParts<V>;
        const double* yy = y.data();
        V acc[P] = {}, yv[P], axv[P];
        const idx ML = M * Lt;
        for (idx i = 0; i < ML; i += 8) {
            const idx cnt = std::min<idx>(8, ML - i);
            load8(yy + i, cnt, yv);
            load8(AX.data() + i, cnt, axv);
            for (int h = 0; h < P; ++h) {
                const V e = yv[h] - axv[h];
                acc[h] += e * e;
            }
        }
        const double rho2 = hsum8(acc);
        bool finite = params_finite();
        for (idx l = 0; l < Lt; ++l) finite = finite && std::isfinite(vbar[l]);
        judge(rho2, finite, [&] { snapshot(); }, [&] { restore(); });
    }

    // The estimate (in the problem's units after finish()).
    const double* estimate() const { return X.data(); }

    void finish() { unscale(X); }
};

// The element-wise steps for one instruction set: compiled three times (baseline,
// AVX2, AVX-512; chosen with the products' instruction set) from the one inlined
// body above, each holding eight lanes in its own vectors (vd2, vd4, vd8).
// Floating-point contraction is off in the SIMD copies, so all three compute the
// same rounded operations: the instruction set changes the speed of these steps,
// never their bits.
struct AmpSteps {
    void (*before_At)(AmpTask&);
    void (*after_At)(AmpTask&);
    void (*after_A)(AmpTask&);
};
inline void before_At_base(AmpTask& t) { t.before_At<simd::vd2>(); }
inline void after_At_base(AmpTask& t) { t.after_At<simd::vd2>(); }
inline void after_A_base(AmpTask& t) { t.after_A<simd::vd2>(); }
#ifdef CSCORE_AMP_SIMD
CSCORE_AMP_ELEM2 inline void before_At_avx2(AmpTask& t) { t.before_At<simd::vd4>(); }
CSCORE_AMP_ELEM2 inline void after_At_avx2(AmpTask& t) { t.after_At<simd::vd4>(); }
CSCORE_AMP_ELEM2 inline void after_A_avx2(AmpTask& t) { t.after_A<simd::vd4>(); }
CSCORE_AMP_ELEM512 inline void before_At_avx512(AmpTask& t) { t.before_At<simd::vd8>(); }
CSCORE_AMP_ELEM512 inline void after_At_avx512(AmpTask& t) { t.after_At<simd::vd8>(); }
CSCORE_AMP_ELEM512 inline void after_A_avx512(AmpTask& t) { t.after_A<simd::vd8>(); }
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
                outp.push_back(t->AX_target() + l * t->M);
            }
        }
        multiply(A, static_cast<pidx>(in.size()), in.data(), outp.data(), tmp);
        for (AmpTask* t : act) {
            t->commit_AX();
            steps.after_A(*t);
        }
    }
};

}  // namespace detail
}  // namespace cscore::amp
