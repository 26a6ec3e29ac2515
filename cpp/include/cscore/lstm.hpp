// LSTM-CS inference (Palangi, Ward and Deng 2016, Algorithm 2) on plain buffers.
//
// The LSTM runs in precision T (float in production, double for cross-checks),
// batched over a chunk of problems: each LSTM step is one GEMM for the gates,
// [W | R] [x; v], and one for the logits, U v (column-major chunks, one column
// per problem).  The least squares on each channel's support stays float64 and
// is updated incrementally (classical Gram-Schmidt with re-orthogonalization,
// i.e. a thin QR of the support columns grown by one column per atom).
//
// The parts, one concept a header: lstm_base.hpp (weights, layouts, batch
// geometry), lstm_activation.hpp (the cell update), lstm_times.hpp (the batch
// products), lstm_small.hpp (few problems per call), lstm_greedy.hpp (the greedy
// loop and the least squares).  This header: the LSTM step on a chunk of
// problems, the forward pass, and LSTM-CS decoding.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "cscore/lstm_activation.hpp"
#include "cscore/lstm_base.hpp"
#include "cscore/lstm_greedy.hpp"
#include "cscore/lstm_small.hpp"
#include "cscore/lstm_times.hpp"
#include "cscore/parallel.hpp"

namespace cscore::lstm {

// Work buffers for one chunk of problems.  Everything is stored problem-fastest
// (column-major with the problem as the row index, leading dimension `chunk`),
// so that the GEMMs read the weights in their stored (row-major) layout as the
// B operand -- OpenBLAS then packs the small operand per call, not the weights
// twice -- and the activations vectorize over problems.
template <class T>
struct LstmWork {
    int chunk = 0;
    int ld = 0;          // M + H
    std::vector<T> xv;   // chunk x (M+H): input x (columns 0..M-1), state v (M..)
    std::vector<T> c;    // chunk x H cell state
    std::vector<T> g;    // chunk x G*H gate pre-activations
    std::vector<T> z;    // chunk x N logits (without c_out)

    // `chunk` (the leading dimension) is rounded up to whole kPadRows so that the
    // SIMD lanes past the last problem stay inside the buffers.
    LstmWork(const Weights<T>& w, int chunk_)
        : LstmWork(w, padded_chunk(chunk_), 0) {}
    LstmWork(const Weights<T>& w, int padded, int)
        : chunk(padded),
          ld(w.M + w.H),
          xv(static_cast<std::size_t>(ld) * static_cast<std::size_t>(padded)),
          c(static_cast<std::size_t>(w.H) * static_cast<std::size_t>(padded)),
          g(static_cast<std::size_t>(w.gates()) * static_cast<std::size_t>(w.H) *
            static_cast<std::size_t>(padded)),
          z(static_cast<std::size_t>(w.N) * static_cast<std::size_t>(padded)) {}

    // input entry m of problem b
    T& x(idx b, idx m) { return xv[static_cast<std::size_t>(b + m * chunk)]; }
    // logit a of problem b (without c_out)
    T logit(idx b, idx a) const { return z[static_cast<std::size_t>(b + a * chunk)]; }
};

// The cell part of one LSTM step for problems 0..n-1 of `work` (inputs set by the
// caller): gates and state update, no logits.  first: zero incoming state, so
// R v is skipped.  On return the new state v is in columns M.. of xv.
template <class T>
void lstm_cell(const Weights<T>& w, LstmWork<T>& work, int n, bool first) {
    const int H = w.H, M = w.M, GH = w.gates() * w.H, ld = work.ld, ch = work.chunk;
    // gates = [x v] [W | R]^T  (only x W^T at channel 0)
    times_weights<T>(n, GH, first ? M : ld, work.xv.data(), ch, w.WR, ld, work.g.data());
    const T* g = work.g.data();
    const bool paper = w.cell == Cell::paper;
    // gate order: paper i, g, o; lstm i, f, g, o
    const int gi = 0, gf = paper ? 0 : 1, gg = paper ? 1 : 2, go = paper ? 2 : 3;
    for (int h = 0; h < H; ++h) {
        auto row = [&](int gate) { return g + static_cast<idx>(gate * H + h) * ch; };
        auto bias = [&](int gate) { return w.b[gate * H + h]; };
        const detail::GateRows<T> r{row(gi),   row(gf),   row(gg),   row(go),
                                    bias(gi), bias(gf), bias(gg), bias(go)};
        detail::activate<T>(w.cell, n, r, work.c.data() + static_cast<idx>(h) * ch,
                            work.xv.data() + static_cast<idx>(M + h) * ch, first);
    }
}

// z (problem-fastest, leading dimension work.chunk) = v U^T + beta z, for the
// state v of problems 0..n-1 left in `work` by lstm_cell (no c_out).
template <class T>
void add_logits(const Weights<T>& w, const LstmWork<T>& work, int n, T* z, T beta) {
    const int ch = work.chunk;
    times_weights<T>(n, w.N, w.H, work.xv.data() + static_cast<idx>(w.M) * ch, ch, w.U,
                     w.u_ld(), z, beta);
}

// One LSTM step: lstm_cell, then the logits (without c_out) into work.z.
template <class T>
void lstm_step(const Weights<T>& w, LstmWork<T>& work, int n, bool first) {
    lstm_cell(w, work, n, first);
    add_logits(w, work, n, work.z.data(), T(0));
}

// Forward pass over channels: X (B, L, M) row-major -> out (B, L, N) with the
// state carried from channel to channel (zero at channel 0).
template <class T>
void lstm_logits(const Weights<T>& w, const T* X, idx B, int L, T* out, int n_threads,
                 int chunk = kChunk, Control* ctl = nullptr) {
    const idx n_chunks = (B + chunk - 1) / chunk;
    const int M = w.M, N = w.N;
    parallel_for(n_chunks, n_threads, [&](idx c0, idx c1, int) {
        LstmWork<T> work(w, chunk);
        for (idx ch = c0; ch < c1 && !should_stop(ctl); ++ch) {
            const idx p0 = ch * chunk;
            const int n = static_cast<int>(std::min<idx>(chunk, B - p0));
            for (int j = 0; j < L; ++j) {
                for (idx b = 0; b < n; ++b) {
                    const T* src = X + ((p0 + b) * L + j) * M;
                    for (idx m = 0; m < M; ++m) work.x(b, m) = src[m];
                }
                lstm_step(w, work, n, j == 0);
                for (idx b = 0; b < n; ++b) {
                    T* dst = out + ((p0 + b) * L + j) * N;
                    for (idx a = 0; a < N; ++a) dst[a] = work.logit(b, a) + w.c_out[a];
                }
            }
        }
    }, ctl);
}

// Copies channel block `xj` (chunk x M, problem-fastest) into the LSTM input.
template <class T>
inline void set_input(LstmWork<T>& work, const T* xj, int M) {
    std::copy(xj, xj + static_cast<idx>(M) * work.chunk, work.xv.data());
}

// Decodes B problems Y (B, M, L) row-major float64 with the sensing matrix given
// column by column: At (N, M) row-major (= A column-major), col_norms (N).
// `out.S` must be zero-initialized by the caller.  The LSTM runs over channels
// 0..L-1 with its state carried from channel to channel (zero at channel 0).
template <class T>
void decode(const Weights<T>& w, const double* At, const double* col_norms, const double* Y,
            idx B, int L, const DecodeOptions& opt, const DecodeOutput& out,
            Control* ctl = nullptr) {
    const int chunk = decode_chunk(opt.chunk, B), M = w.M, N = w.N;
    greedy_decode<T>(M, N, w.c_out, At, col_norms, Y, B, L, opt, out, [&]() {
        return [&w, chunk, L, M, N, few = FewProblems<T>(w, nullptr, L),
                work = std::vector<LstmWork<T>>()](int n, const T* xin, T* zall) mutable {
            if (few.run(n, xin, zall, chunk)) return;  // few problems: same bits
            if (work.empty()) work.emplace_back(w, chunk);  // set up on first use
            LstmWork<T>& wk = work.front();
            for (int j = 0; j < L; ++j) {
                set_input(wk, xin + static_cast<idx>(j) * chunk * M, M);
                lstm_cell(w, wk, n, j == 0);
                add_logits(w, wk, n, zall + static_cast<idx>(j) * chunk * N, T(0));
            }
        };
    }, ctl);
}

}  // namespace cscore::lstm
