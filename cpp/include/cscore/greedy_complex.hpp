// Greedy sparse decoders (OMP, SOMP) for complex A and Y.
//
// The same Gram-based Batch-OMP in progressive-Cholesky form as greedy.hpp (read
// its header first), with conjugate transposes: columns are normalized once,
// An = A D^{-1}, and G = An^H An (Hermitian, real unit diagonal).  Per problem
// alpha = An^H Y, and with L the Cholesky factor of G_II = L L^H (real positive
// diagonal) for the support I (|I| = n) the kernel keeps
//     Q = G_{:,I} L^{-H}   (N x n),   z = L^{-1} An_I^H Y   (n x L),
// so that An^H R = An^H Y - Q z.  Adding atom k:
//     w      = conj(Q[k, :])^T                (= L^{-1} G_{I,k})
//     d      = G_kk - w^H w,  l = sqrt(d)     (real; d ~ 0 -> dependent atom)
//     q_new  = (G_{:,k} - Q w) / l
//     z_new  = alpha[k, :] / l
//     alpha -= q_new z_new
//     ||r_c||^2 -= |z_new[c]|^2
// and at the end gamma = L^{-H} z, x = D^{-1} gamma.  Selection maximizes
// sum_c |alpha[j, c]|^2 (ties to the lowest index); stopping rules, the residual
// bracket for `tol`, the scaling of extreme Y by a power of two and the
// "dependent" warning are those of greedy.hpp.
//
// Complex products are written out on real and imaginary parts (std::complex's
// operator* goes through a NaN-recovering library call without -ffast-math), in
// a fixed order: results do not depend on the thread count.  This is a separate
// kernel so that the real kernel's code (and its bit-exact results) is untouched;
// it is portable C++ (no BLAS: SciPy's complex BLAS is not registered).
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "cscore/greedy.hpp"
#include "cscore/parallel.hpp"
#include "cscore/result.hpp"

namespace cscore::greedy_complex {

template <class R>
using Cx = std::complex<R>;

// conj(a) * b
template <class R>
inline Cx<R> cmul_conj(Cx<R> a, Cx<R> b) {
    return {a.real() * b.real() + a.imag() * b.imag(), a.real() * b.imag() - a.imag() * b.real()};
}

// a * b
template <class R>
inline Cx<R> cmul(Cx<R> a, Cx<R> b) {
    return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

template <class R>
inline R abs2(Cx<R> a) {
    return a.real() * a.real() + a.imag() * a.imag();
}

// sum_i conj(a[i]) * b[i], two interleaved partial sums (a fixed order).
template <class R>
inline Cx<R> cdot(const Cx<R>* a, const Cx<R>* b, std::ptrdiff_t n) {
    R re0 = R(0), im0 = R(0), re1 = R(0), im1 = R(0);
    std::ptrdiff_t i = 0;
    for (; i + 2 <= n; i += 2) {
        re0 += a[i].real() * b[i].real() + a[i].imag() * b[i].imag();
        im0 += a[i].real() * b[i].imag() - a[i].imag() * b[i].real();
        re1 += a[i + 1].real() * b[i + 1].real() + a[i + 1].imag() * b[i + 1].imag();
        im1 += a[i + 1].real() * b[i + 1].imag() - a[i + 1].imag() * b[i + 1].real();
    }
    for (; i < n; ++i) {
        re0 += a[i].real() * b[i].real() + a[i].imag() * b[i].imag();
        im0 += a[i].real() * b[i].imag() - a[i].imag() * b[i].real();
    }
    return {re0 + re1, im0 + im1};
}

// l2 norm of v[0..n) scaled by its largest part, immune to overflow/underflow.
template <class R>
inline R scaled_norm(const Cx<R>* v, std::ptrdiff_t n) {
    R amax = R(0);
    for (std::ptrdiff_t i = 0; i < n; ++i)
        amax = std::max(amax, std::max(std::abs(v[i].real()), std::abs(v[i].imag())));
    if (!(amax > R(0))) return R(0);
    R ss = R(0);
    for (std::ptrdiff_t i = 0; i < n; ++i) ss += abs2(Cx<R>(v[i].real() / amax, v[i].imag() / amax));
    return amax * std::sqrt(ss);
}

// The normalized dictionary, shared read-only by all workers.
template <class R>
struct Dictionary {
    std::ptrdiff_t M = 0, N = 0;
    std::vector<R> inv_norm;   // 1 / ||a_j||
    std::vector<Cx<R>> At;     // normalized atoms, N x M (atom j contiguous)
    bool has_gram = true;
    std::vector<Cx<R>> G;      // G[k * N + i] = a_i^H a_k (column k contiguous)

    Dictionary(const Cx<R>* A, std::ptrdiff_t m, std::ptrdiff_t n, std::ptrdiff_t lda,
               std::ptrdiff_t gram_limit, bool store_gram)
        : M(m), N(n), inv_norm(static_cast<std::size_t>(n)), At(static_cast<std::size_t>(m * n)),
          has_gram(store_gram && n <= gram_limit / std::max<std::ptrdiff_t>(n, 1)),
          G(has_gram ? static_cast<std::size_t>(n * n) : 0) {
        for (std::ptrdiff_t j = 0; j < N; ++j) {
            Cx<R>* col = At.data() + j * M;
            for (std::ptrdiff_t i = 0; i < M; ++i) col[i] = A[i * lda + j];
            const R norm = scaled_norm(col, M);
            if (!(norm > R(0))) throw std::invalid_argument("A has an all-zero column");
            inv_norm[static_cast<std::size_t>(j)] = R(1) / norm;
            for (std::ptrdiff_t i = 0; i < M; ++i) col[i] = Cx<R>(col[i].real() / norm, col[i].imag() / norm);
        }
        if (!has_gram) return;
        for (std::ptrdiff_t k = 0; k < N; ++k)
            for (std::ptrdiff_t i = k; i < N; ++i) {
                const Cx<R> g = entry(i, k);
                G[static_cast<std::size_t>(k * N + i)] = g;
                G[static_cast<std::size_t>(i * N + k)] = std::conj(g);
            }
    }

    // a_i^H a_k, for i >= k (the other half is its conjugate).
    Cx<R> entry(std::ptrdiff_t i, std::ptrdiff_t k) const {
        return cdot(At.data() + i * M, At.data() + k * M, M);
    }

    // Column k of G: stored, or computed into buf (N entries), bit for bit alike.
    const Cx<R>* gram_column(std::ptrdiff_t k, Cx<R>* buf) const {
        if (has_gram) return G.data() + k * N;
        for (std::ptrdiff_t i = 0; i < N; ++i) buf[i] = i >= k ? entry(i, k) : std::conj(entry(k, i));
        return buf;
    }
};

template <class R>
struct Outputs {
    greedy::View3<Cx<R>> X;          // (P, N, L)
    R* residual = nullptr;           // (P, L)
    std::int64_t* n_iter = nullptr;  // (P,)
    std::int8_t* stop = nullptr;     // (P,)
    std::uint8_t* warn = nullptr;    // (P,)
    std::int64_t* atoms = nullptr;   // (P, max_atoms)
};

template <class R>
struct Workspace {
    std::ptrdiff_t M, N, L, K;
    std::vector<Cx<R>> y, alpha, Q, z, gamma, w, gcol, r, chol;  // chol: K x K row-major
    std::vector<R> score, yy, energy, res;
    std::vector<std::int64_t> atoms;
    std::vector<unsigned char> selected;

    Workspace(std::ptrdiff_t m, std::ptrdiff_t n, std::ptrdiff_t l, std::ptrdiff_t k)
        : M(m), N(n), L(l), K(k), y(sz(l * m)), alpha(sz(l * n)), Q(sz(n * k)), z(sz(k * l)),
          gamma(sz(k * l)), w(sz(k)), gcol(sz(n)), r(sz(m)), chol(sz(k * k)), score(sz(n)),
          yy(sz(l)), energy(sz(l)), res(sz(l)), atoms(sz(k)), selected(sz(n)) {}

    static std::size_t sz(std::ptrdiff_t v) { return static_cast<std::size_t>(std::max<std::ptrdiff_t>(v, 1)); }
    Cx<R>& at(std::vector<Cx<R>>& v, std::ptrdiff_t i) { return v[static_cast<std::size_t>(i)]; }
};

// gamma = L^{-H} z for the n atoms of the support, then every channel's explicit
// residual norm into ws.res; returns their sum.
template <class R>
R explicit_residual(const Dictionary<R>& D, Workspace<R>& ws, std::ptrdiff_t n) {
    const std::ptrdiff_t M = D.M, L = ws.L, K = ws.K;
    std::copy(ws.z.begin(), ws.z.begin() + n * L, ws.gamma.begin());
    for (std::ptrdiff_t i = n - 1; i >= 0; --i) {
        for (std::ptrdiff_t j = i + 1; j < n; ++j) {
            const Cx<R> lji = ws.at(ws.chol, j * K + i);
            for (std::ptrdiff_t c = 0; c < L; ++c)
                ws.at(ws.gamma, i * L + c) -= cmul_conj(lji, ws.at(ws.gamma, j * L + c));
        }
        const R inv = R(1) / ws.at(ws.chol, i * K + i).real();
        for (std::ptrdiff_t c = 0; c < L; ++c) ws.at(ws.gamma, i * L + c) *= inv;
    }
    R total = R(0);
    for (std::ptrdiff_t c = 0; c < L; ++c) {
        const Cx<R>* yc = ws.y.data() + c * M;
        std::copy(yc, yc + M, ws.r.begin());
        for (std::ptrdiff_t i = 0; i < n; ++i) {
            const Cx<R> g = ws.at(ws.gamma, i * L + c);
            const Cx<R>* a = D.At.data() + ws.atoms[static_cast<std::size_t>(i)] * M;
            for (std::ptrdiff_t m = 0; m < M; ++m) ws.at(ws.r, m) -= cmul(g, a[m]);
        }
        const R nrm = scaled_norm(ws.r.data(), M);
        ws.res[static_cast<std::size_t>(c)] = nrm;
        total += nrm;
    }
    return total;
}

// Whether the residual measure (sum of channel norms) is <= tol, bracketed by the
// energy estimates first (greedy.hpp), explicitly only when they cannot decide.
template <class R>
bool below_tol(const Dictionary<R>& D, Workspace<R>& ws, std::ptrdiff_t n, R tol, bool& have_explicit) {
    constexpr R eps = std::numeric_limits<R>::epsilon();
    R lo = R(0), hi = R(0);
    for (std::ptrdiff_t c = 0; c < ws.L; ++c) {
        const R e = ws.energy[static_cast<std::size_t>(c)];
        const R slack = R(1000) * R(static_cast<double>(n + 1)) * eps * ws.yy[static_cast<std::size_t>(c)];
        lo += std::sqrt(std::max(e - slack, R(0)));
        hi += std::sqrt(std::max(e + slack, R(0)));
    }
    if (hi <= tol && n > 0) return true;
    if (lo > tol) return false;
    if (n == 0) {
        R t = R(0);
        for (std::ptrdiff_t c = 0; c < ws.L; ++c) t += std::sqrt(ws.yy[static_cast<std::size_t>(c)]);
        return t <= tol;
    }
    have_explicit = true;
    return explicit_residual(D, ws, n) <= tol;
}

// alpha[:, c] -= z[c] q (unless q is null), and score[j] = sum_c |alpha[j, c]|^2.
template <class R>
void update_scores(Workspace<R>& ws, const Cx<R>* q, const Cx<R>* z) {
    const std::ptrdiff_t N = ws.N;
    for (std::ptrdiff_t c = 0; c < ws.L; ++c) {
        Cx<R>* a = ws.alpha.data() + c * N;
        if (q != nullptr)
            for (std::ptrdiff_t j = 0; j < N; ++j) a[j] -= cmul(z[c], q[j]);
        for (std::ptrdiff_t j = 0; j < N; ++j)
            ws.score[static_cast<std::size_t>(j)] = (c == 0 ? R(0) : ws.score[static_cast<std::size_t>(j)]) + abs2(a[j]);
    }
}

// Loads problem p into ws (channel-major), scaled by a power of two when its
// entries are extreme; returns the scale exponent.
template <class R>
int load_problem(const greedy::View3<const Cx<R>>& Y, std::ptrdiff_t p, Workspace<R>& ws) {
    const std::ptrdiff_t M = ws.M, L = ws.L;
    R ymax = R(0);
    for (std::ptrdiff_t c = 0; c < L; ++c)
        for (std::ptrdiff_t i = 0; i < M; ++i) {
            const Cx<R> v = Y(p, i, c);
            ws.at(ws.y, c * M + i) = v;
            ymax = std::max(ymax, std::max(std::abs(v.real()), std::abs(v.imag())));
        }
    int scale_exp = 0;
    constexpr int kExpHi = std::numeric_limits<R>::max_exponent / 2 - 16;
    constexpr int kExpLo = std::numeric_limits<R>::min_exponent / 2 + 16;
    if (ymax > std::ldexp(R(1), kExpHi) || (ymax > R(0) && ymax < std::ldexp(R(1), kExpLo))) {
        int e = 0;
        (void)std::frexp(ymax, &e);
        scale_exp = -e;
        for (auto& v : ws.y) v = Cx<R>(std::ldexp(v.real(), scale_exp), std::ldexp(v.imag(), scale_exp));
    }
    return scale_exp;
}

// Appends atom k (see the header); false when it is numerically dependent.
template <class R>
bool add_atom(const Dictionary<R>& D, Workspace<R>& ws, std::ptrdiff_t n, std::ptrdiff_t k) {
    const std::ptrdiff_t N = ws.N, L = ws.L, K = ws.K;
    Cx<R>* Q = ws.Q.data();
    R ww = R(0);
    for (std::ptrdiff_t i = 0; i < n; ++i) {
        ws.at(ws.w, i) = std::conj(Q[i * N + k]);
        ww += abs2(ws.at(ws.w, i));
    }
    const Cx<R>* gk = D.gram_column(k, ws.gcol.data());
    const R gkk = gk[k].real();
    const R d = gkk - ww;
    if (!(d > linalg::dependent_pivot_rtol<R>() * gkk)) return false;
    const R lnn = std::sqrt(d), inv = R(1) / lnn;
    for (std::ptrdiff_t i = 0; i < n; ++i) ws.at(ws.chol, n * K + i) = Q[i * N + k];  // conj(w_i)
    ws.at(ws.chol, n * K + n) = Cx<R>(lnn, R(0));
    Cx<R>* qn = Q + n * N;
    for (std::ptrdiff_t j = 0; j < N; ++j) qn[j] = gk[j];
    for (std::ptrdiff_t i = 0; i < n; ++i) {
        const Cx<R> wi = ws.at(ws.w, i);
        const Cx<R>* qi = Q + i * N;
        for (std::ptrdiff_t j = 0; j < N; ++j) qn[j] -= cmul(qi[j], wi);
    }
    for (std::ptrdiff_t j = 0; j < N; ++j) qn[j] *= inv;
    Cx<R>* zn = ws.z.data() + n * L;
    for (std::ptrdiff_t c = 0; c < L; ++c) {
        const Cx<R> zc = ws.at(ws.alpha, c * N + k) * inv;
        zn[c] = zc;
        ws.energy[static_cast<std::size_t>(c)] -= abs2(zc);
    }
    update_scores(ws, qn, zn);
    return true;
}

// Decodes problem p of Y into the outputs.
template <class R>
void decode_one(const Dictionary<R>& D, const greedy::View3<const Cx<R>>& Y, std::ptrdiff_t p,
                const greedy::Options& opt, Workspace<R>& ws, const Outputs<R>& out) {
    const std::ptrdiff_t M = D.M, N = D.N, L = ws.L, K = ws.K;
    constexpr R eps = std::numeric_limits<R>::epsilon();
    const int scale_exp = load_problem(Y, p, ws);
    const R tol = static_cast<R>(std::ldexp(opt.tol, scale_exp));
    R ytot2 = R(0);
    for (std::ptrdiff_t c = 0; c < L; ++c) {
        const Cx<R>* yc = ws.y.data() + c * M;
        R e = R(0);
        for (std::ptrdiff_t i = 0; i < M; ++i) e += abs2(yc[i]);
        ws.yy[static_cast<std::size_t>(c)] = e;
        ws.energy[static_cast<std::size_t>(c)] = e;
        ytot2 += e;
        for (std::ptrdiff_t j = 0; j < N; ++j)
            ws.at(ws.alpha, c * N + j) = cdot(D.At.data() + j * M, yc, M);
    }
    std::fill(ws.selected.begin(), ws.selected.end(), static_cast<unsigned char>(0));
    const R vanish = (R(32) * eps) * (R(32) * eps) * ytot2;
    StopReason reason = StopReason::exhausted;
    bool stopped_dependent = false, have_explicit = false;
    std::ptrdiff_t n = 0;
    update_scores<R>(ws, nullptr, nullptr);
    for (;;) {
        if (opt.tol >= 0.0 && below_tol(D, ws, n, tol, have_explicit)) {
            reason = StopReason::tol;
            break;
        }
        if (n >= opt.max_atoms) {
            reason = opt.cap_is_n_nonzero ? StopReason::n_nonzero : StopReason::exhausted;
            break;
        }
        const std::ptrdiff_t k = linalg::argmax_first(ws.score.data(), N);
        if (!(ws.score[static_cast<std::size_t>(k)] > vanish) || ws.selected[static_cast<std::size_t>(k)] ||
            !add_atom(D, ws, n, k)) {
            reason = StopReason::dependent;
            stopped_dependent = true;
            break;
        }
        have_explicit = false;
        ws.selected[static_cast<std::size_t>(k)] = 1;
        ws.atoms[static_cast<std::size_t>(n)] = k;
        ++n;
    }
    if (!have_explicit) explicit_residual(D, ws, n);
    R res_total = R(0);
    for (std::ptrdiff_t c = 0; c < L; ++c) {
        out.residual[p * L + c] = std::ldexp(ws.res[static_cast<std::size_t>(c)], -scale_exp);
        res_total += ws.res[static_cast<std::size_t>(c)];
    }
    for (std::ptrdiff_t j = 0; j < N; ++j)
        for (std::ptrdiff_t c = 0; c < L; ++c) out.X(p, j, c) = Cx<R>(R(0), R(0));
    for (std::ptrdiff_t i = 0; i < n; ++i) {
        const std::ptrdiff_t j = ws.atoms[static_cast<std::size_t>(i)];
        const R s = D.inv_norm[static_cast<std::size_t>(j)];
        for (std::ptrdiff_t c = 0; c < L; ++c) {
            const Cx<R> g = ws.at(ws.gamma, i * L + c);
            out.X(p, j, c) = Cx<R>(std::ldexp(g.real() * s, -scale_exp), std::ldexp(g.imag() * s, -scale_exp));
        }
    }
    for (std::ptrdiff_t i = 0; i < K; ++i) out.atoms[p * K + i] = i < n ? ws.atoms[static_cast<std::size_t>(i)] : -1;
    out.n_iter[p] = n;
    out.stop[p] = static_cast<std::int8_t>(reason);
    out.warn[p] = static_cast<std::uint8_t>(stopped_dependent && res_total > std::sqrt(eps) * std::sqrt(ytot2));
}

// Decodes P problems Y (P, M, L) with up to n_threads threads; results do not
// depend on n_threads (fixed chunks from a shared counter, as greedy::decode).
template <class R>
void decode(const Cx<R>* A, std::ptrdiff_t M, std::ptrdiff_t N, std::ptrdiff_t lda,
            const greedy::View3<const Cx<R>>& Y, std::ptrdiff_t P, std::ptrdiff_t L,
            const greedy::Options& opt, const Outputs<R>& out, int n_threads, Control* ctl = nullptr) {
    if (opt.max_atoms < 1 || opt.max_atoms > std::min(M, N))
        throw std::invalid_argument("max_atoms must be in [1, min(M, N)]");
    const bool store_gram = 2 * P * opt.max_atoms >= N;
    const Dictionary<R> D(A, M, N, lda, opt.gram_limit, store_gram);
    constexpr std::ptrdiff_t kChunk = 32;
    const std::ptrdiff_t n_chunks = (P + kChunk - 1) / kChunk;
    const std::ptrdiff_t workers = std::max<std::ptrdiff_t>(1, std::min<std::ptrdiff_t>(n_threads, n_chunks));
    std::atomic<std::ptrdiff_t> next{0};
    parallel_for(workers, static_cast<int>(workers), [&](std::ptrdiff_t, std::ptrdiff_t, int) {
        Workspace<R> ws(M, N, L, opt.max_atoms);
        for (;;) {
            const std::ptrdiff_t c = next.fetch_add(1, std::memory_order_relaxed);
            if (c >= n_chunks || should_stop(ctl)) break;
            const std::ptrdiff_t end = std::min(P, (c + 1) * kChunk);
            for (std::ptrdiff_t p = c * kChunk; p < end && !should_stop(ctl); ++p)
                decode_one<R>(D, Y, p, opt, ws, out);
        }
    }, ctl);
}

}  // namespace cscore::greedy_complex
