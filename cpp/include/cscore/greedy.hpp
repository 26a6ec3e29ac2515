// Greedy sparse decoders: OMP (one channel) and SOMP (L channels, joint support),
// for real (float, double) and complex (std::complex<float>, std::complex<double>)
// A and Y from one source.
//
// Formulation (Gram-based "Batch-OMP", Rubinstein, Zibulevsky & Elad 2008, in its
// progressive-Cholesky form).  Columns are normalized once, An = A D^{-1} with
// D = diag(||a_j||), and G = An^H An is formed once per call and shared by every
// problem of the batch.  Per problem only the correlations alpha = An^H Y (one
// small gemm) touch the measurements.  With L the Cholesky factor of G_II = L L^H
// for the support I (|I| = n) keep
//     Q = G_{:,I} L^{-H}   (N x n),   z = L^{-1} An_I^H Y   (n x L).
// Then the current correlations are An^H R = An^H Y - Q z, and adding atom k is
//     w      = conj(Q[k, :])^T                (= L^{-1} G_{I,k}: no solve needed)
//     d      = G_kk - w^H w,  l = sqrt(d)     (new pivot; d ~ 0 -> dependent atom)
//     q_new  = (G_{:,k} - Q w) / l            (N x n work: the only O(N n) step)
//     z_new  = alpha[k, :] / l                 (new row of z)
//     alpha -= q_new z_new                     (refreshed correlations)
//     ||r_c||^2 -= |z_new[c]|^2                (residual energy per channel)
// and at the end the coefficients are gamma = L^{-H} z (for the normalized atoms),
// x = D^{-1} gamma.  No per-step solve, no A^H r product.  The residual energy is
// an estimate that loses accuracy by cancellation near zero, so when it is close
// to a `tol` decision the residual is recomputed explicitly.  For real data the
// conjugates are no-ops.
//
// Selection: the atom maximizing sum_c |alpha[j, c]|^2 (the l2 norm over channels
// of An_j^H R; for L = 1 plain OMP).  Ties go to the lowest index.
//
// Stopping per problem: residual (sum over channels of channel l2 norms) <= tol;
// n_nonzero atoms; all min(M, N) atoms used; or "dependent": the best correlation
// vanished (the residual is orthogonal to every atom), the best atom was already
// selected, or its new pivot is not positive (numerically dependent atom).
//
// This file holds the driver: one problem's steps (start_problem, select_atom,
// add_atom, the tol="auto" and path-energy ends, write_outputs), a chunk of
// problems, and decode() over the batch with threads.  The pieces it drives:
//   greedy_scalar.hpp      real/complex traits (conj, abs2, real part, products)
//   greedy_complex.hpp     the complex-only kernels and Cholesky factor
//   greedy_avx2.hpp        the hand-vectorized AVX2 double kernels
//   greedy_dictionary.hpp  normalized atoms and the Gram matrix (stored/cached/on demand)
//   greedy_prepare.hpp     the column norms and normalized atoms, columns in vector lanes
//   greedy_gram_tiles.hpp  up to four Gram columns per sweep over the atoms (AVX)
//   greedy_ahead.hpp       one problem's Gram columns formed ahead (large A, on demand)
//   greedy_workspace.hpp   Options, Outputs and the per-thread Workspace
//   greedy_steps.hpp       loading, correlations, score refresh, explicit residual, tol test
//   greedy_auto.hpp        tol="auto": residual ratio thresholding and the cut
// Complex data always runs the generic build (its products are never fused), real
// data the AVX2 build where the CPU has it (see decode_range_avx2).
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "cscore/cpu.hpp"
#include "cscore/greedy_auto.hpp"
#include "cscore/greedy_avx2.hpp"
#include "cscore/greedy_dictionary.hpp"
#include "cscore/greedy_scalar.hpp"
#include "cscore/greedy_steps.hpp"
#include "cscore/greedy_workspace.hpp"
#include "cscore/linalg.hpp"
#include "cscore/parallel.hpp"
#include "cscore/path_end.hpp"
#include "cscore/result.hpp"

namespace cscore::greedy {

// Writes problem p's outputs (X was zeroed by zero_chunk) from its coefficients
// gamma (n x L, normalized atoms), its explicit residual norms res (L) and its
// atoms (n of them; the rest of the row is padded with -1).
template <class T>
CSCORE_FORCE_INLINE void write_outputs(const Dictionary<T>& D, std::ptrdiff_t L, std::ptrdiff_t K,
                                       const T* gamma, const Real<T>* res, const std::int64_t* atoms,
                                       std::ptrdiff_t p, std::ptrdiff_t n, int scale_exp,
                                       StopReason reason, bool stopped_dependent, Real<T> ytot2,
                                       const Outputs<T>& out) {
    using R = Real<T>;
    constexpr R eps = std::numeric_limits<R>::epsilon();
    // ldexp(v, 0) == v: the call is skipped for unscaled problems.
    const auto unscale = [scale_exp](auto v) {
        return scale_exp == 0 ? v : Scalar<decltype(v)>::ldexp(v, -scale_exp);
    };
    R res_total = R(0);
    for (std::ptrdiff_t c = 0; c < L; ++c) {
        out.residual[p * L + c] = unscale(res[c]);
        res_total += res[c];
    }
    for (std::ptrdiff_t i = 0; i < n; ++i) {
        const std::ptrdiff_t j = atoms[i];
        for (std::ptrdiff_t c = 0; c < L; ++c)
            out.X(p, j, c) = unscale(gamma[i * L + c] * D.inv_norm[static_cast<std::size_t>(j)]);
    }
    std::int64_t* row = out.atoms + p * K;
    std::copy(atoms, atoms + n, row);
    std::fill(row + n, row + K, std::int64_t{-1});
    out.n_iter[p] = n;
    out.stop[p] = static_cast<std::int8_t>(reason);
    // Worth a warning only when the early stop left a residual that is not
    // rounding noise: "the requested precision might not have been met".
    const R ynorm = std::sqrt(ytot2);
    out.warn[p] = static_cast<std::uint8_t>(stopped_dependent && res_total > std::sqrt(eps) * ynorm);
}

// A decoded problem whose fit is still to be finished (see decode_one).
template <class T>
struct Pending {
    std::ptrdiff_t q = 0, p = 0, n = 0;  // chunk index, problem index, support size
    int scale_exp = 0;
    StopReason reason = StopReason::exhausted;
    bool stopped_dependent = false;
    Real<T> ytot2 = Real<T>(0);
};

// One problem's state while decode_one runs (the chunk's problem q, problem p).
// What a kernel is given by address (NextAtom, PathEnd) is kept apart, so that
// the compiler can keep these fields in registers.
template <class T>
struct Problem {
    using R = Real<T>;
    std::ptrdiff_t q = 0, p = 0;
    int scale_exp = 0;       // y was scaled by 2^scale_exp (load_chunk)
    R tol = R(0);            // opt.tol in the scaled units
    R ytot2 = R(0);          // sum_c ||y_c||^2
    R vanish = R(0);         // a best score at or below this is rounding noise
    std::ptrdiff_t n = 0;    // atoms in the support
    StopReason reason = StopReason::exhausted;
    bool stopped_dependent = false;
    bool have_explicit = false;  // ws.res / ws.gamma valid for the current n
};

// The fused step's next atom, found by the step before (avx2::omp_step for OMP,
// avx2::somp_step for SOMP).
template <class T>
struct NextAtom {
    std::ptrdiff_t k = 0;
    Real<T> best = Real<T>(0);  // its score
};

// Whether problems of T run the hand-vectorized double kernels (the AVX2 build,
// kBlasGemv false); there each step is fused into one pass (OMP and SOMP).
template <class T, bool kBlasGemv>
inline constexpr bool kAvx2Double =
#ifdef CSCORE_GREEDY_AVX2
    !kBlasGemv && std::is_same_v<T, double>;
#else
    false;
#endif

// Starts problem pb.p (the chunk's problem pb.q): points ws at its measurements
// and correlations, takes the channel energies, empties the support.
template <class T>
CSCORE_FORCE_INLINE void start_problem(const Options& opt, Workspace<T>& ws, Problem<T>& pb, PathEnd& end) {
    using R = Real<T>;
    const std::ptrdiff_t M = ws.M, N = ws.N, L = ws.L;
    constexpr R eps = std::numeric_limits<R>::epsilon();
    ws.y = ws.ychunk.data() + pb.q * L * M;
    ws.alpha = ws.achunk.data() + pb.q * L * N;
    pb.scale_exp = ws.scale_exp[static_cast<std::size_t>(pb.q)];
    pb.tol = static_cast<R>(std::ldexp(opt.tol, pb.scale_exp));
    R ytot2 = R(0);
    for (std::ptrdiff_t c = 0; c < L; ++c) {
        const R e = Scalar<T>::sum_sq(ws.y + c * M, M);
        ws.yy[static_cast<std::size_t>(c)] = e;
        ws.energy[static_cast<std::size_t>(c)] = e;
        ytot2 += e;
    }
    pb.ytot2 = ytot2;
    std::fill(ws.selected.begin(), ws.selected.end(), static_cast<unsigned char>(0));
    ws.ahead.reset();
    ws.chol.reset();
    // A correlation (squared, summed over channels) at or below this is rounding
    // noise: the residual is orthogonal to every atom.
    pb.vanish = (R(32) * eps) * (R(32) * eps) * ytot2;
    end.start(static_cast<double>(ytot2));
}

// The next atom: the first of the largest scores (the scores were refreshed with
// alpha; at n = 0 they are formed here), or the forced path's next atom; -1 when
// that path ends.  Its score goes to *best.
template <class T, bool kBlasGemv>
CSCORE_FORCE_INLINE std::ptrdiff_t select_atom(const Options& opt, Workspace<T>& ws, std::ptrdiff_t p,
                                               std::ptrdiff_t n, NextAtom<T>& next, Real<T>* best) {
    const std::ptrdiff_t N = ws.N;
    if (opt.forced != nullptr) {
        const std::ptrdiff_t k = opt.forced[p * opt.forced_ld + n];
        *best = std::numeric_limits<Real<T>>::max();
        return k < 0 || k >= N ? -1 : k;
    }
#ifdef CSCORE_GREEDY_AVX2
    if constexpr (kAvx2Double<T, kBlasGemv>) {
        // After the first atom the step found the next one (omp_step, somp_step).
        if (n == 0) {
            if (ws.L == 1) {
                next.k = avx2::argmax_sq(ws.alpha, N, ws.score.data(), &next.best);
            } else {
                update_scores<T>(ws, nullptr, nullptr);
                next.k = avx2::argmax_first(ws.score.data(), N);
                next.best = ws.score[static_cast<std::size_t>(next.k)];
            }
        }
        *best = next.best;
        return next.k;
    }
#endif
    if (n == 0) update_scores<T>(ws, nullptr, nullptr);
    const std::ptrdiff_t k = linalg::argmax_first(ws.score.data(), N);
    *best = ws.score[static_cast<std::size_t>(k)];
    return k;
}

// The new column qn = (G_{:,k} - Q w) / l of Q (inv = 1 / l) and the refreshed
// correlations and scores (alpha -= qn zn).  The AVX2 path does it in one pass
// that also finds the next atom (avx2::omp_step for L = 1, avx2::somp_step for
// L >= 2).  Skipped after the last atom: nothing reads this step's Q column,
// correlations, scores or next atom then (the loop only stops: tol test, cap).
template <class T, bool kBlasGemv>
CSCORE_FORCE_INLINE void refresh_correlations(const Options& opt, Workspace<T>& ws, std::ptrdiff_t n,
                                              NextAtom<T>& next, const T* gk, Real<T> inv, T* qn,
                                              const T* zn) {
    if (n + 1 >= opt.max_atoms) return;
    const std::ptrdiff_t N = ws.N;
    const T* Q = ws.Q.data();
    const T* w = ws.w.data();
    if constexpr (kIsComplex<T>) {
        complex_q_column(N, n, gk, Q, N, w, inv, qn);
        update_scores(ws, qn, zn);
    } else if constexpr (kBlasGemv) {
        linalg::scaled_residual_gemv(N, n, gk, Q, N, w, inv, qn);
        update_scores(ws, qn, zn);
#ifdef CSCORE_GREEDY_AVX2
    } else if constexpr (kAvx2Double<T, kBlasGemv>) {
        if (ws.L == 1)
            next.k = avx2::omp_step(N, n, gk, Q, N, w, inv, qn, zn[0], ws.alpha, ws.score.data(),
                                    &next.best);
        else
            next.k = avx2::somp_step(N, n, gk, Q, N, w, inv, qn, zn, ws.L, ws.alpha, N, ws.score.data(),
                                     &next.best);
#endif
    } else {
        for (std::ptrdiff_t j = 0; j < N; ++j) qn[j] = gk[j];
        linalg::sub_gemv(N, n, Q, N, w, qn);
        for (std::ptrdiff_t j = 0; j < N; ++j) qn[j] *= inv;
        update_scores(ws, qn, zn);
    }
    (void)next;
}

// Adds atom k to a support of n atoms (see the header): w = conj(Q[k, :]), the
// new pivot, the new row of z and the energies, then the new Q column and the
// correlations.  False, with the support unchanged, for a dependent atom.
template <class T, bool kBlasGemv>
CSCORE_FORCE_INLINE bool add_atom(const Dictionary<T>& D, const Options& opt, Workspace<T>& ws,
                                  std::ptrdiff_t n, NextAtom<T>& next, std::ptrdiff_t k) {
    using S = Scalar<T>;
    using R = Real<T>;
    const std::ptrdiff_t N = D.N, L = ws.L;
    ws.ensure(n);
    T* Q = ws.Q.data();
    T* w = ws.w.data();
    for (std::ptrdiff_t i = 0; i < n; ++i) w[i] = S::conj(Q[i * N + k]);
    const T* gk = ws.ahead.enabled ? ws.ahead.column(D, k, ws.alpha, L, ws.selected.data())
                                   : D.gram_column(k, ws.gcol.data());
    const R gkk = S::real(gk[k]);
    if (!ws.chol.append_row(w, gkk)) return false;
    const R lnn = ws.chol.pivot(n);
    const R inv = R(1) / lnn;
    T* qn = Q + n * N;
    T* zn = ws.z.data() + n * L;
    for (std::ptrdiff_t c = 0; c < L; ++c) {
        const T zc = ws.alpha[c * N + k] * inv;
        zn[c] = zc;
        ws.energy[static_cast<std::size_t>(c)] -= S::abs2(zc);
    }
    refresh_correlations<T, kBlasGemv>(opt, ws, n, next, gk, inv, qn, zn);
    ws.selected[static_cast<std::size_t>(k)] = 1;
    ws.atoms[static_cast<std::size_t>(n)] = k;
    return true;
}

// Whether the auto path ends after this step (Options::auto_end, on the
// channels' summed energies).
template <class T>
CSCORE_FORCE_INLINE bool path_ends(const Options& opt, const Workspace<T>& ws, std::ptrdiff_t n, PathEnd& end) {
    double e = 0.0;
    for (std::ptrdiff_t c = 0; c < ws.L; ++c) e += static_cast<double>(ws.energy[static_cast<std::size_t>(c)]);
    return end.step(e, static_cast<int>(n), opt.auto_end);
}

// Runs the greedy loop of problem pb until a stopping rule holds (see the
// header); the support's size, the stop reason and whether ws holds the explicit
// residual go to pb.
template <class T, bool kBlasGemv>
CSCORE_FORCE_INLINE void run_path(const Dictionary<T>& D, const Options& opt, Workspace<T>& ws,
                                  Problem<T>& pb, PathEnd& end) {
    constexpr bool kFma = !kBlasGemv;  // the AVX2/FMA build (see explicit_residual)
    const bool use_tol = opt.tol >= 0.0;
    const bool path_end = opt.auto_end.reset2 != nullptr;
    const Real<T> tol = pb.tol, vanish = pb.vanish;
    NextAtom<T> next;
    std::ptrdiff_t n = 0;
    bool have_explicit = false;  // ws.res / ws.gamma valid for the current n
    StopReason reason = StopReason::exhausted;
    for (;;) {
        if (use_tol && residual_below<T, kFma>(D, ws, n, tol, have_explicit)) {
            reason = StopReason::tol;
            break;
        }
        if (n >= opt.max_atoms) {
            reason = opt.cap_is_n_nonzero ? StopReason::n_nonzero : StopReason::exhausted;
            break;
        }
        Real<T> best;
        const std::ptrdiff_t k = select_atom<T, kBlasGemv>(opt, ws, pb.p, n, next, &best);
        if (k < 0) break;  // the given path ends
        if (!(best > vanish) || ws.selected[static_cast<std::size_t>(k)] ||
            !add_atom<T, kBlasGemv>(D, opt, ws, n, next, k)) {
            reason = StopReason::dependent;
            pb.stopped_dependent = true;
            break;
        }
        have_explicit = false;
        ++n;
        if (path_end && path_ends(opt, ws, n, end)) {
            reason = StopReason::exhausted;
            break;
        }
    }
    pb.n = n;
    pb.have_explicit = have_explicit;
    pb.reason = reason;
}

// tol="auto" after the path: the cut (auto_cut) and its outputs.
template <class T, bool kFma>
CSCORE_FORCE_INLINE void finish_auto(const Dictionary<T>& D, const Options& opt, Workspace<T>& ws,
                                     Problem<T>& pb, const Outputs<T>& out) {
    using R = Real<T>;
    R s = R(0), t = R(0);
    std::int64_t k_sig = 0;
    const std::ptrdiff_t cut = auto_cut<T, kFma>(D, ws, pb.n, opt, &s, &t, &k_sig);
    pb.stopped_dependent = pb.stopped_dependent && cut == pb.n;
    pb.reason = StopReason::tol;
    pb.n = cut;
    pb.have_explicit = true;
    const int e = pb.scale_exp;
    out.sigma[pb.p] = e == 0 ? s : std::ldexp(s, -e);
    out.tol[pb.p] = e == 0 ? t : std::ldexp(t, -e);
    out.n_signal[pb.p] = k_sig;
}

// The squared residual norms after every step of the path into out.path_energy
// (the last one repeated up to max_atoms).
template <class T, bool kFma>
CSCORE_FORCE_INLINE void write_path_energies(const Dictionary<T>& D, Workspace<T>& ws, Problem<T>& pb,
                                             const Outputs<T>& out) {
    path_energies<T, kFma>(D, ws, pb.n);
    pb.have_explicit = true;
    const std::ptrdiff_t K = ws.K, L = ws.L, n = pb.n, p = pb.p;
    const int e2 = 2 * pb.scale_exp;
    for (std::ptrdiff_t k = 0; k <= K; ++k)
        for (std::ptrdiff_t c = 0; c < L; ++c) {
            const Real<T> e = ws.epath[static_cast<std::size_t>(std::min(k, n) * L + c)];
            out.path_energy[(p * (K + 1) + k) * L + c] = e2 == 0 ? e : std::ldexp(e, -e2);
        }
}

// Decodes problem p (the chunk's problem q, loaded by load_chunk with its
// correlations from chunk_correlations) into the outputs.  In double on the AVX2
// path, one pass per step computes the new Q column, updates the correlations and
// scores and finds the next atom (avx2::omp_step, avx2::somp_step); the other
// cases run the same arithmetic as separate passes.
// With `defer`, a problem whose fit is still to be solved (always the case of
// plain OMP: no tol, no tol="auto", no path energies) is left in ws for the
// caller to finish (finish_pair), its summary in *defer.
template <class T, bool kBlasGemv>
CSCORE_FORCE_INLINE void decode_one(const Dictionary<T>& D, std::ptrdiff_t q, std::ptrdiff_t p,
                                    const Options& opt, Workspace<T>& ws, const Outputs<T>& out,
                                    Pending<T>* defer = nullptr) {
    constexpr bool kFma = !kBlasGemv;
    Problem<T> pb;
    pb.q = q;
    pb.p = p;
    PathEnd end;  // the auto path's end (Options::auto_end)
    start_problem(opt, ws, pb, end);
    run_path<T, kBlasGemv>(D, opt, ws, pb, end);
    if (opt.auto_gamma2 != nullptr) finish_auto<T, kFma>(D, opt, ws, pb, out);
    if (out.path_energy != nullptr) write_path_energies<T, kFma>(D, ws, pb, out);
    if (defer != nullptr && !pb.have_explicit) {
        *defer = Pending<T>{q, p, pb.n, pb.scale_exp, pb.reason, pb.stopped_dependent, pb.ytot2};
        return;
    }
    if (!pb.have_explicit) explicit_residual<T, kFma>(D, ws, pb.n);
    write_outputs(D, ws.L, ws.K, ws.gamma.data(), ws.res.data(), ws.atoms.data(), p, pb.n, pb.scale_exp,
                  pb.reason, pb.stopped_dependent, pb.ytot2, out);
}

#ifdef CSCORE_GREEDY_AVX2
// z <- L^{-T} z and z1 <- L1^{-T} z1 for two factors of the same size n: the
// operations of solve_lt_one_fma on each (same bits), interleaved so that the
// two latency-bound chains overlap.
CSCORE_FORCE_INLINE void solve_lt_two_fma(const linalg::GrowingCholesky<double>& chol,
                                          const linalg::GrowingCholesky<double>& chol1,
                                          std::ptrdiff_t n, double* z, double* z1) {
    const double* Lf = chol.data();
    const double* Lf1 = chol1.data();
    const std::ptrdiff_t ld = chol.ld(), ld1 = chol1.ld();
    for (std::ptrdiff_t i = n - 1; i >= 0; --i) {
        double acc = z[i], acc1 = z1[i];
        for (std::ptrdiff_t j = i + 1; j < n; ++j) {
            acc = std::fma(-Lf[j * ld + i], z[j], acc);
            acc1 = std::fma(-Lf1[j * ld1 + i], z1[j], acc1);
        }
        const double inv = 1.0 / Lf[i * ld + i], inv1 = 1.0 / Lf1[i * ld1 + i];
        z[i] = acc * inv;
        z1[i] = acc1 * inv1;
    }
}

// Finishes two plain OMP problems left by decode_one (L = 1, double, AVX2): the
// first one's state in ws.*_b, the second's in ws.  The fits (the back
// substitutions, latency-bound) of the two run interleaved when their supports
// have the same size; then, as explicit_residual and write_outputs do for one
// problem, the explicit residual, its norm and the outputs of each.
CSCORE_FORCE_INLINE void finish_pair(const Dictionary<double>& D, Workspace<double>& ws,
                                     const Pending<double>* pend, const Outputs<double>& out) {
    const std::ptrdiff_t M = D.M;
    const linalg::GrowingCholesky<double>* chol[2] = {&ws.chol_b, &ws.chol};
    const double* z[2] = {ws.z_b.data(), ws.z.data()};
    if (ws.gamma_b.size() < static_cast<std::size_t>(pend[0].n))
        ws.gamma_b.resize(static_cast<std::size_t>(pend[0].n));
    double* gamma[2] = {ws.gamma_b.data(), ws.gamma.data()};
    const std::int64_t* atoms[2] = {ws.atoms_b.data(), ws.atoms.data()};
    double* r[2] = {ws.r_b.data(), ws.r.data()};
    for (int t = 0; t < 2; ++t) std::copy(z[t], z[t] + pend[t].n, gamma[t]);
    if (pend[0].n == pend[1].n) {
        solve_lt_two_fma(*chol[0], *chol[1], pend[0].n, gamma[0], gamma[1]);
    } else {
        for (int t = 0; t < 2; ++t) solve_lt_one_fma(*chol[t], pend[t].n, gamma[t]);
    }
    for (int t = 0; t < 2; ++t) {
        const Pending<double>& f = pend[t];
        avx2::residual_vector(ws.ychunk.data() + f.q * M, D.At.data(), M, atoms[t], gamma[t], 1, f.n, r[t]);
        const double res = scaled_norm(r[t], M);
        write_outputs(D, 1, ws.K, gamma[t], &res, atoms[t], f.p, f.n, f.scale_exp, f.reason,
                      f.stopped_dependent, f.ytot2, out);
    }
}
#endif

// Decodes the chunk [begin, end): loads it, forms its correlations, zeroes its
// block of X, then decodes its problems one by one.
template <class T, bool kBlasGemv>
CSCORE_FORCE_INLINE void decode_chunk(const Dictionary<T>& D, const View3<const T>& Y,
                                      std::ptrdiff_t begin, std::ptrdiff_t end, const Options& opt,
                                      Workspace<T>& ws, const Outputs<T>& out, Control* ctl) {
    const std::ptrdiff_t count = end - begin;
    load_chunk(Y, begin, count, ws);
    chunk_correlations<T, kBlasGemv>(D, count, ws);
    zero_chunk(out.X, begin, count, D.N, ws.L);
    // Plain OMP (AVX2, double) finishes its problems two at a time (finish_pair);
    // decode_one has this one call site either way.
    bool pairs = false;
#ifdef CSCORE_GREEDY_AVX2
    if constexpr (!kBlasGemv && std::is_same_v<T, double>)
        pairs = ws.L == 1 && opt.tol < 0.0 && opt.auto_gamma2 == nullptr && opt.forced == nullptr &&
                out.path_energy == nullptr;
#endif
    Pending<T> pend[2];
    int held = 0;  // problems decoded and waiting for finish_pair
    for (std::ptrdiff_t q = 0; q < count && !should_stop(ctl); ++q) {
        const bool defer = pairs && (held == 1 || q + 1 < count);
        decode_one<T, kBlasGemv>(D, q, begin + q, opt, ws, out, defer ? &pend[held] : nullptr);
        if (!defer) continue;
        if (held == 0) {
            std::swap(ws.chol, ws.chol_b);
            std::swap(ws.z, ws.z_b);
            std::swap(ws.atoms, ws.atoms_b);
            held = 1;
            continue;
        }
#ifdef CSCORE_GREEDY_AVX2
        if constexpr (!kBlasGemv && std::is_same_v<T, double>) finish_pair(D, ws, pend, out);
#endif
        held = 0;
    }
}

// Asks the cache for problems [begin, begin + count) of Y and their block of X
// when the problems are adjacent in memory (OMP's y (M, B) and x (N, B)): each
// chunk then reads M and writes N short runs of lines far apart, too many
// streams for the hardware prefetchers.  (Other layouts hold each problem
// contiguously, which the hardware prefetchers follow.)  No result depends on it.
template <class T>
inline void prefetch_chunk(const View3<const T>& Y, const View3<T>& X, std::ptrdiff_t begin,
                           std::ptrdiff_t count, std::ptrdiff_t M, std::ptrdiff_t N, std::ptrdiff_t L) {
#if defined(__GNUC__) || defined(__clang__)
    constexpr std::ptrdiff_t kLine = 64 / static_cast<std::ptrdiff_t>(sizeof(T));
    if (Y.s0 == 1 && std::abs(Y.s1) > count) {
        for (std::ptrdiff_t c = 0; c < L; ++c)
            for (std::ptrdiff_t i = 0; i < M; ++i) {
                const T* row = &Y(begin, i, c);
                for (std::ptrdiff_t q = 0; q < count; q += kLine) __builtin_prefetch(row + q, 0, 2);
                __builtin_prefetch(row + count - 1, 0, 2);
            }
    }
    if (X.s0 == 1 && std::abs(X.s1) > count) {
        for (std::ptrdiff_t c = 0; c < L; ++c)
            for (std::ptrdiff_t j = 0; j < N; ++j) {
                T* row = &X(begin, j, c);
                for (std::ptrdiff_t q = 0; q < count; q += kLine) __builtin_prefetch(row + q, 1, 2);
                __builtin_prefetch(row + count - 1, 1, 2);
            }
    }
#else
    (void)Y, (void)X, (void)begin, (void)count, (void)M, (void)N, (void)L;
#endif
}

// Decodes problems [begin, end) (at most kChunk).  The generic version relies on
// the registered BLAS gemv for the O(N n) step (complex data: the portable loops
// of greedy_complex.hpp); the AVX2 version (x86 with
// GCC/Clang, chosen at run time when cpu::active_isa() is avx2 or above, see
// cpu.hpp) inlines the whole kernel compiled for AVX2, which beats a BLAS call at
// these small sizes.  Either way every problem runs the same code for the whole
// call, whatever the thread count or the chunk it falls in.
template <class T>
void decode_range_generic(const Dictionary<T>& D, const View3<const T>& Y, std::ptrdiff_t begin,
                          std::ptrdiff_t end, const Options& opt, Workspace<T>& ws,
                          const Outputs<T>& out, Control* ctl) {
    decode_chunk<T, true>(D, Y, begin, end, opt, ws, out, ctl);
}

#ifdef CSCORE_GREEDY_AVX2
template <class T>
__attribute__((target("avx2,fma"))) void decode_range_avx2(const Dictionary<T>& D,
                                                           const View3<const T>& Y,
                                                           std::ptrdiff_t begin, std::ptrdiff_t end,
                                                           const Options& opt, Workspace<T>& ws,
                                                           const Outputs<T>& out, Control* ctl) {
    decode_chunk<T, false>(D, Y, begin, end, opt, ws, out, ctl);
}
#endif

// Decodes P problems Y (P, M, L) into the outputs with up to n_threads threads.
// Results do not depend on n_threads: every problem runs the same code.  With a
// Control, workers stop between problems once it is cancelled (outputs are then
// incomplete and the caller must discard them).
template <class T>
void decode(const T* A, std::ptrdiff_t M, std::ptrdiff_t N, std::ptrdiff_t lda,
            const View3<const T>& Y, std::ptrdiff_t P, std::ptrdiff_t L, const Options& opt,
            const Outputs<T>& out, int n_threads, Control* ctl = nullptr) {
    if (opt.max_atoms < 1 || opt.max_atoms > std::min(M, N))
        throw std::invalid_argument("max_atoms must be in [1, min(M, N)]");
    // Forming G costs about N^2 M / 2; computing the selected atoms' columns on
    // demand costs N M per atom.  Store G only when the batch selects enough atoms
    // (P * max_atoms >= N / 2) to repay it.  With tol alone the atom count is not
    // known (max_atoms is only a bound): a batch then keeps each column once
    // formed (cost and memory grow with the distinct atoms selected) and a single
    // problem forms its columns on demand.  Every way gives the same bits.
    const bool count_known = opt.tol < 0.0 || opt.cap_is_n_nonzero;
    GramMode mode = GramMode::on_demand;
    if (count_known && 2 * P * opt.max_atoms >= N)
        mode = GramMode::stored;
    else if (P > 1)
        mode = GramMode::cached;
    // One problem on the AVX2 path takes its correlations from At (avx2::gemv_rows,
    // the bits of gemv_t_rows over An): An, a second copy of A, is not formed.
    // Complex data takes its correlations from At too (complex_correlations).
#ifdef CSCORE_GREEDY_AVX2
    const bool need_an =
        !kIsComplex<T> && !(std::is_same_v<T, double> && P == 1 && cpu::isa_at_least(cpu::Isa::avx2));
#else
    const bool need_an = !kIsComplex<T>;
#endif
    Dictionary<T> D(A, M, N, lda, opt.gram_limit, mode, need_an);
    D.form_gram(n_threads);
    const std::ptrdiff_t K = opt.max_atoms;
    // Complex data always runs the generic build (its products are never fused).
#ifdef CSCORE_GREEDY_AVX2
    const bool avx2 = !kIsComplex<T> && cpu::isa_at_least(cpu::Isa::avx2);
#else
    const bool avx2 = false;
#endif
    // One range of problems [begin, end) on this worker's workspace.
    const auto decode_range = [&](Workspace<T>& ws, std::ptrdiff_t begin, std::ptrdiff_t end) {
#ifdef CSCORE_GREEDY_AVX2
        if constexpr (!kIsComplex<T>) {
            if (avx2) {
                decode_range_avx2<T>(D, Y, begin, end, opt, ws, out, ctl);
                return;
            }
        }
#endif
        (void)avx2;
        decode_range_generic<T>(D, Y, begin, end, opt, ws, out, ctl);
    };
    // A batch stopped by tol alone does not know its atom count.  The first
    // problem is decoded alone (its columns cached) and its count n0 stands for
    // the others': when 2 P n0 >= N, G is stored after all (the rule of a known
    // count) and the other problems read it.  Cached and stored columns have the
    // same bits, so no result depends on it.
    std::ptrdiff_t first = 0;
    if (D.mode == GramMode::cached && P > 1) {
        Workspace<T> ws(M, N, L, K);
        ws.ahead.configure(D);
        decode_range(ws, 0, 1);
        first = 1;
        const std::ptrdiff_t n0 = std::max<std::ptrdiff_t>(out.n_iter[0], 1);
        if (2 * P * n0 >= N && !should_stop(ctl)) D.store_gram(opt.gram_limit, n_threads);
    }
    // Problems are handed out in fixed chunks from a shared counter, so a thread
    // that gets less CPU (a busy machine) simply takes fewer chunks.  Each problem
    // is still computed by the same code, so results do not depend on the split.
    const std::ptrdiff_t rest = P - first;
    const std::ptrdiff_t n_chunks = (rest + kChunk - 1) / kChunk;
    const std::ptrdiff_t workers = std::max<std::ptrdiff_t>(1, std::min<std::ptrdiff_t>(n_threads, n_chunks));
    std::atomic<std::ptrdiff_t> next{0};
    parallel_for(workers, static_cast<int>(workers), [&](std::ptrdiff_t, std::ptrdiff_t, int) {
        Workspace<T> ws(M, N, L, K);
        ws.ahead.configure(D);
        for (;;) {
            const std::ptrdiff_t c = next.fetch_add(1, std::memory_order_relaxed);
            if (c >= n_chunks || should_stop(ctl)) break;
            const std::ptrdiff_t begin = first + c * kChunk, end = std::min(P, begin + kChunk);
            // The next chunk (this worker's if it is the only one) is requested
            // while this one is decoded.
            if (end < P) prefetch_chunk(Y, out.X, end, std::min(P, end + kChunk) - end, M, N, L);
            decode_range(ws, begin, end);
        }
    }, ctl);
}

}  // namespace cscore::greedy
