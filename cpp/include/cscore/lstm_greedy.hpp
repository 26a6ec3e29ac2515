// LSTM-CS decoding: the greedy loop of Algorithm 2 (Palangi, Ward and Deng 2016)
// shared by LSTM-CS and BLSTM-CS, with its options and outputs, the tol="auto"
// path end, and each channel's incremental least squares (a thin QR of the
// support, float64, grown by one column per atom).  The predictor (the LSTM's
// logits) is passed in.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cscore/lstm_base.hpp"
#include "cscore/parallel.hpp"
#include "cscore/path_end.hpp"
#include "cscore/result.hpp"

namespace cscore::lstm {

// Relative size below which a new atom's component orthogonal to the support
// counts as zero (the atom is linearly dependent on the support).
constexpr double kDependentTol = 1e-10;

struct DecodeOptions {
    int k_max = 1;                  // greedy iterations at most (atoms per channel)
    double tol = -1.0;              // < 0: no residual rule
    bool exclude_selected = true;   // argmax over atoms not in the support
    bool k_from_user = true;        // k_max came from n_nonzero (else: the cap)
    int n_threads = 1;
    int chunk = kChunk;             // problems per LSTM batch (results do not depend on it)
    // tol="auto" (python/cscore/decoders/stopping.py): when rrt.gamma2 is set, each
    // problem's path ends by itself (path_end.hpp, PathStop) and out.path_norms is filled.
    PathEndRule rrt;
};

// Outputs, row-major, for B problems.
struct DecodeOutput {
    double* S = nullptr;          // (B, N, L)
    std::int64_t* atoms = nullptr;  // (B, L, k_max), -1 padded, in selection order
    double* resid = nullptr;      // (B, L) final residual l2 norms
    std::int64_t* n_iter = nullptr; // (B)
    std::int32_t* stop = nullptr;   // (B) StopReason
    double* path_norms = nullptr;   // (B, L, k_max + 1) channel residual norms after every
                                    // step, the last repeated past the path's end (auto only)
};

// tol="auto": where one problem's greedy path may end (path_end.hpp), on its
// squared residual summed over channels, relative to the largest channel norm of
// y; a zero y ends the path at once.
struct PathStop {
    double scale = 0.0;  // largest channel norm of y
    PathEnd end;

    // Channel norms `nrm` (L) after step s; true when the path ends here.
    bool update(const double* nrm, int L, int s, const DecodeOptions& opt) {
        if (s == 0) {
            scale = 0.0;
            for (int j = 0; j < L; ++j) scale = std::max(scale, nrm[j]);
        }
        double e = 0.0;
        if (scale > 0.0)
            for (int j = 0; j < L; ++j) {
                const double t = nrm[j] / scale;
                e += t * t;
            }
        if (s == 0) {
            end.start(e);
            return !(scale > 0.0);
        }
        return end.step(e, s, opt.rrt);
    }
};

// The LSTM's input from a residual r (M): x = r / max|r| (zero stays zero),
// written to x[m * stride].
template <class T>
inline void maxabs_input(const double* r, idx M, T* x, idx stride) {
    double mx = 0.0;
    for (idx m = 0; m < M; ++m) mx = std::max(mx, std::abs(r[m]));
    for (idx m = 0; m < M; ++m) x[m * stride] = mx > 0.0 ? static_cast<T>(r[m] / mx) : T(0);
}

// Incremental least squares for one channel: thin QR of the support columns.
// Q, Rt, z and atoms grow with the atoms added (their capacity is kept between
// problems), so a decode stopped by `tol` after k atoms touches O(M k + k^2)
// memory per channel, not O(M k_max + k_max^2).
struct ChannelLS {
    int k = 0;
    bool stopped = false;
    std::vector<double> r;      // residual (M)
    std::vector<double> Q;      // M x k, orthonormal columns
    std::vector<double> Rt;     // upper triangle packed by columns: column t at t(t+1)/2
    std::vector<double> z;      // Q^T y (k)
    std::vector<std::int64_t> atoms;    // the support, in order (k)
    std::vector<unsigned char> chosen;  // N flags

    static std::size_t packed(int t) {
        return static_cast<std::size_t>(t) * static_cast<std::size_t>(t + 1) / 2;
    }

    void reset(const double* y, idx M, int N) {
        k = 0;
        stopped = false;
        r.assign(y, y + M);
        Q.clear();
        Rt.clear();
        z.clear();
        atoms.clear();
        chosen.assign(static_cast<std::size_t>(N), 0);
    }

    // Appends atom `a` (column a_col of A, norm a_norm); false if dependent.
    bool append(std::int64_t a, const double* a_col, double a_norm, idx M) {
        const std::size_t q_at = static_cast<std::size_t>(k) * static_cast<std::size_t>(M);
        const std::size_t r_at = packed(k);
        Q.resize(q_at + static_cast<std::size_t>(M));
        Rt.resize(r_at + static_cast<std::size_t>(k) + 1, 0.0);  // a new column: zeros
        double* q = Q.data() + q_at;
        double* rc = Rt.data() + r_at;
        std::copy(a_col, a_col + M, q);
        for (int pass = 0; pass < 2; ++pass) {
            for (int i = 0; i < k; ++i) {
                const double* qi = Q.data() + static_cast<idx>(i) * M;
                double h = 0.0;
                for (idx m = 0; m < M; ++m) h += qi[m] * q[m];
                rc[i] += h;
                for (idx m = 0; m < M; ++m) q[m] -= h * qi[m];
            }
        }
        double rho = 0.0;
        for (idx m = 0; m < M; ++m) rho += q[m] * q[m];
        rho = std::sqrt(rho);
        if (!(rho > kDependentTol * a_norm)) {
            Q.resize(q_at);
            Rt.resize(r_at);
            return false;
        }
        const double inv = 1.0 / rho;
        double zk = 0.0;
        for (idx m = 0; m < M; ++m) {
            q[m] *= inv;
            zk += q[m] * r[static_cast<std::size_t>(m)];
        }
        for (idx m = 0; m < M; ++m) r[static_cast<std::size_t>(m)] -= zk * q[m];
        rc[k] = rho;
        z.push_back(zk);
        atoms.push_back(a);
        chosen[static_cast<std::size_t>(a)] = 1;
        ++k;
        return true;
    }

    // Coefficients on the support (R c = z), written into S column (stride L).
    void coefficients(double* s_col, idx stride) const {
        std::vector<double> c(static_cast<std::size_t>(k));
        for (int i = k - 1; i >= 0; --i) {
            double acc = z[static_cast<std::size_t>(i)];
            for (int t = i + 1; t < k; ++t)
                acc -= Rt[packed(t) + static_cast<std::size_t>(i)] * c[static_cast<std::size_t>(t)];
            c[static_cast<std::size_t>(i)] = acc / Rt[packed(i) + static_cast<std::size_t>(i)];
        }
        for (int i = 0; i < k; ++i)
            s_col[atoms[static_cast<std::size_t>(i)] * stride] = c[static_cast<std::size_t>(i)];
    }

    // l2 norm of the residual, immune to overflow and underflow of the squares:
    // outside [2^-500, 2^500] the entries are first scaled by a power of two
    // (exact), so |Y| ~ 1e-165 or 1e154 gives the right norm (not 0 or inf).
    double residual_norm() const {
        double mx = 0.0;
        for (double v : r) mx = std::max(mx, std::abs(v));
        int e = 0;
        if (mx > 0x1p500 || (mx > 0.0 && mx < 0x1p-500)) (void)std::frexp(mx, &e);
        double s = 0.0;
        for (double v : r) {
            const double t = std::ldexp(v, -e);
            s += t * t;
        }
        return std::ldexp(std::sqrt(s), e);
    }
};

// The greedy loop of Algorithm 2, shared by LSTM-CS and BLSTM-CS (blstm.hpp).
//
// Per greedy iteration, for the problems still active in a chunk:
//   1. every channel's current residual is normalized, x_j = r_j / max|r_j|
//      (zero stays zero), into `xin` (L blocks of chunk x M, problem-fastest);
//   2. predict(n, xin, zall) fills `zall` (L blocks of chunk x N, problem-fastest)
//      with every channel's logits, without c_out;
//   3. for each channel j: the largest logit + c_out (over atoms not yet in the
//      channel's support when exclude_selected) is its new atom, and the channel
//      is re-fitted by least squares (ChannelLS::append).
// For the unidirectional LSTM this is the same as interleaving 2 and 3 channel
// by channel (channel j's input does not depend on other channels' refits).
//
// `make_predictor()` is called once per worker thread; it returns a callable
// `void(int n, const T* xin, T* zall)` holding that thread's work buffers.
// Results do not depend on the number of threads (chunks are fixed).
template <class T, class MakePredictor>
void greedy_decode(int M, int N, const T* c_out, const double* At, const double* col_norms,
                   const double* Y, idx B, int L, const DecodeOptions& opt,
                   const DecodeOutput& out, MakePredictor make_predictor,
                   Control* ctl = nullptr) {
    const int k_max = opt.k_max;
    const idx chunk = decode_chunk(opt.chunk, B);
    const idx n_chunks = (B + chunk - 1) / chunk;
    parallel_for(n_chunks, opt.n_threads, [&](idx c0, idx c1, int) {
        auto predict = make_predictor();
        std::vector<ChannelLS> ls(static_cast<std::size_t>(chunk * L));
        std::vector<double> ybuf(static_cast<std::size_t>(M));
        std::vector<T> xin(static_cast<std::size_t>(L * chunk * M), T(0));
        std::vector<T> zall(static_cast<std::size_t>(L * chunk * N), T(0));
        std::vector<idx> active;
        active.reserve(static_cast<std::size_t>(chunk));
        const bool rrt = opt.rrt.gamma2 != nullptr;
        const idx kp1 = static_cast<idx>(k_max) + 1;
        std::vector<PathStop> path(rrt ? static_cast<std::size_t>(chunk) : 0);
        std::vector<double> nrm(static_cast<std::size_t>(L));
        for (idx ch = c0; ch < c1 && !should_stop(ctl); ++ch) {
            const idx p0 = ch * chunk;
            const idx n_prob = std::min(chunk, B - p0);
            active.clear();
            for (idx q = 0; q < n_prob; ++q) {
                const idx p = p0 + q;
                active.push_back(q);
                out.n_iter[p] = 0;
                out.stop[p] = static_cast<std::int32_t>(
                    opt.k_from_user ? StopReason::n_nonzero : StopReason::max_iter);
                for (int j = 0; j < L; ++j) {
                    for (idx m = 0; m < M; ++m) ybuf[static_cast<std::size_t>(m)] = Y[(p * M + m) * L + j];
                    ls[static_cast<std::size_t>(q * L + j)].reset(ybuf.data(), M, N);
                }
            }
            for (int it = 0; it < k_max; ++it) {
                if (should_stop(ctl)) return;  // cancelled: outputs are discarded
                // Drop problems that meet the residual rule or whose channels all stopped.
                std::size_t keep = 0;
                for (idx q : active) {
                    const idx p = p0 + q;
                    double res = 0.0;
                    bool all_stopped = true;
                    for (int j = 0; j < L; ++j) {
                        const ChannelLS& c = ls[static_cast<std::size_t>(q * L + j)];
                        nrm[static_cast<std::size_t>(j)] = c.residual_norm();
                        res += nrm[static_cast<std::size_t>(j)];
                        all_stopped = all_stopped && c.stopped;
                    }
                    bool path_end = false;
                    if (rrt) {
                        for (int j = 0; j < L; ++j)
                            out.path_norms[(p * L + j) * kp1 + it] = nrm[static_cast<std::size_t>(j)];
                        path_end = path[static_cast<std::size_t>(q)].update(nrm.data(), L, it, opt);
                    }
                    if (opt.tol >= 0.0 && res <= opt.tol) {
                        out.stop[p] = static_cast<std::int32_t>(StopReason::tol);
                    } else if (all_stopped) {
                        out.stop[p] = static_cast<std::int32_t>(StopReason::dependent);
                    } else if (path_end) {
                        // tol="auto": the path ends here (the caller cuts it and says why)
                    } else {
                        active[keep++] = q;
                    }
                }
                active.resize(keep);
                if (active.empty()) break;
                const int n = static_cast<int>(active.size());
                // 1. x = r / max|r| for every channel (zero stays zero)
                for (int j = 0; j < L; ++j) {
                    T* xj = xin.data() + static_cast<idx>(j) * chunk * M;
                    for (int col = 0; col < n; ++col) {
                        const ChannelLS& c = ls[static_cast<std::size_t>(active[static_cast<std::size_t>(col)] * L + j)];
                        maxabs_input(c.r.data(), M, xj + col, chunk);
                    }
                }
                // 2. logits of every channel
                predict(n, xin.data(), zall.data());
                // 3. each channel's atom, then its least-squares refit
                for (int j = 0; j < L; ++j) {
                    const T* zj = zall.data() + static_cast<idx>(j) * chunk * N;
                    for (int col = 0; col < n; ++col) {
                        ChannelLS& c = ls[static_cast<std::size_t>(active[static_cast<std::size_t>(col)] * L + j)];
                        if (c.stopped) continue;
                        int best = -1;
                        T best_v = T(0);
                        for (int a = 0; a < N; ++a) {
                            if (opt.exclude_selected && c.chosen[static_cast<std::size_t>(a)]) continue;
                            const T v = zj[col + static_cast<idx>(a) * chunk] + c_out[a];
                            if (best < 0 || v > best_v) {
                                best = a;
                                best_v = v;
                            }
                        }
                        if (best < 0 || c.chosen[static_cast<std::size_t>(best)] ||
                            !c.append(best, At + static_cast<idx>(best) * M, col_norms[best], M)) {
                            c.stopped = true;
                        }
                    }
                }
                for (idx q : active) out.n_iter[p0 + q] += 1;
            }
            for (idx q = 0; q < n_prob; ++q) {
                const idx p = p0 + q;
                for (int j = 0; j < L; ++j) {
                    const ChannelLS& c = ls[static_cast<std::size_t>(q * L + j)];
                    c.coefficients(out.S + p * N * L + j, L);
                    out.resid[p * L + j] = c.residual_norm();
                    std::int64_t* aj = out.atoms + (p * L + j) * k_max;
                    std::copy(c.atoms.begin(), c.atoms.end(), aj);
                    std::fill(aj + c.k, aj + k_max, std::int64_t(-1));
                    if (rrt) {  // the norm at the path's end, repeated past it
                        double* pn = out.path_norms + (p * L + j) * kp1;
                        std::fill(pn + out.n_iter[p], pn + kp1, out.resid[p * L + j]);
                    }
                }
            }
        }
    }, ctl);
}

}  // namespace cscore::lstm
