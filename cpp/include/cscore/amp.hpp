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
//
// The parts: amp_common.hpp (options, outputs, guard, batch slots),
// amp_denoise.hpp (denoisers and EM), amp_task.hpp (an AMP run), vamp.hpp (a
// VAMP run), amp_products.hpp (the shared products), simd_math.hpp (the vector
// math).  This header: the two decoders.
#pragma once

#include <vector>

#include "cscore/amp_common.hpp"
#include "cscore/amp_products.hpp"
#include "cscore/amp_task.hpp"
#include "cscore/cpu.hpp"
#include "cscore/parallel.hpp"
#include "cscore/vamp.hpp"

namespace cscore::amp {
namespace detail {

// AMP on P problems Y (P, M, L) C-contiguous; A row-major M x N with ||A||_F^2 = frob2.
inline void amp_decode(const double* A, idx M, idx N, double frob2, const double* Y, idx P, idx L,
                       const Options& opt, const Outputs& out, int n_threads, Control* ctl) {
    const idx Lt = opt.joint ? L : 1;
    const cpu::Isa isa = cpu::active_isa();
    PackedMatrix Ap, Atp;
    Ap.pack(A, M, N, N, 1, isa);   // A[j, kk] = A[j N + kk]
    Atp.pack(A, N, M, 1, N, isa);  // A^T[j, kk] = A[kk N + j]
    const AmpSteps steps = amp_steps(isa);
    const Batch b{Y, M, N, L, Lt, opt, out};
    parallel_for(
        opt.joint ? P : P * L, n_threads,
        [&](idx begin, idx end, int) {
            AmpIteration iterate;
            run_slots<AmpTask>(
                b, begin, end, [&](AmpTask& t) { t.size(M, N, Lt); },
                [&](AmpTask& t) { t.start(frob2, opt); },
                [&](const std::vector<AmpTask*>& act) { iterate(Ap, Atp, steps, act); }, ctl);
        },
        ctl);
}

// VAMP on P problems from the economy SVD A = U diag(s) V^T: U (M, R), Vt (R, N)
// row-major.  Slots as amp_decode.
inline void vamp_decode(const double* U, const double* s, const double* Vt, idx M, idx N, idx R,
                        const double* Y, idx P, idx L, const Options& opt, const Outputs& out,
                        int n_threads, Control* ctl) {
    const idx Lt = opt.joint ? L : 1;
    const cpu::Isa isa = cpu::active_isa();
    PackedMatrix UTp, Vtp, Vp;
    UTp.pack(U, R, M, 1, R, isa);   // U^T[k, i] = U[i R + k]
    Vtp.pack(Vt, R, N, N, 1, isa);  // V^T[k, j] = Vt[k N + j]
    Vp.pack(Vt, N, R, 1, N, isa);   // V[j, k] = Vt[k N + j]
    const VampSteps steps = vamp_steps(isa);
    const Batch b{Y, M, N, L, Lt, opt, out};
    parallel_for(
        opt.joint ? P : P * L, n_threads,
        [&](idx begin, idx end, int) {
            std::vector<double> tmp;
            VampIteration iterate;
            run_slots<VampTask>(
                b, begin, end, [&](VampTask& t) { t.size(M, N, R, Lt); },
                [&](VampTask& t) { t.start(UTp, s, opt, tmp); },
                [&](const std::vector<VampTask*>& act) { iterate(Vtp, Vp, steps, act); }, ctl);
        },
        ctl);
}

}  // namespace detail

using detail::amp_decode;
using detail::vamp_decode;

}  // namespace cscore::amp
