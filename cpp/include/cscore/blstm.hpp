// Bidirectional LSTM-CS inference (Palangi's thesis, section 4.6) on plain buffers.
//
// Two LSTMs of the layout in lstm.hpp share the channel sequence: the forward one
// runs over channels 0..L-1, the backward one over L-1..0, both from a zero state.
// At channel j the logits are U [v_fwd(j); v_bwd(j)] + c_out with U (N, 2H), i.e.
// U[:, :H] v_fwd + U[:, H:] v_bwd: two products into the same logits buffer.
//
// Decoding is lstm::greedy_decode (Algorithm 2's greedy loop, per-channel
// supports, incremental QR least squares, the same stopping rules).  Per greedy
// iteration all L channels' current residuals are normalized first, both
// directions run over them, then each channel takes its atom and is re-fitted.
// The backward pass needs every channel's residual before any channel can be
// predicted, so (unlike the unidirectional decoder) there is no interleaving.
//
// Weight layout (row-major, as cscore.lstm_cs.model.BLSTMCSWeights):
//   WRf, WRb  (G*H, M+H)  = [W | R] of the forward / backward LSTM
//   bf, bb    (G*H)
//   U         (N, 2H)
//   c_out     (N)
#pragma once

#include <vector>

#include "cscore/lstm.hpp"

namespace cscore::blstm {

using lstm::idx;

template <class T>
struct Weights {
    lstm::Weights<T> fw;  // fw.U = U (first H columns), fw.ldU = 2H
    lstm::Weights<T> bw;  // bw.U = U + H (last H columns), bw.ldU = 2H

    // Both directions from the stored arrays (same cell type and sizes).
    Weights(lstm::Cell cell, int H, int M, int N, const T* WRf, const T* bf, const T* WRb,
            const T* bb, const T* U, const T* c_out) {
        for (lstm::Weights<T>* w : {&fw, &bw}) {
            w->cell = cell;
            w->H = H;
            w->M = M;
            w->N = N;
            w->c_out = c_out;
            w->ldU = 2 * H;
        }
        fw.WR = WRf;
        fw.b = bf;
        fw.U = U;
        bw.WR = WRb;
        bw.b = bb;
        bw.U = U + H;
    }
    int M() const { return fw.M; }
    int N() const { return fw.N; }
    const T* c_out() const { return fw.c_out; }
};

// Per-thread state: one work area per direction.
template <class T>
struct BiWork {
    lstm::LstmWork<T> f, b;
    BiWork(const Weights<T>& w, int chunk) : f(w.fw, chunk), b(w.bw, chunk) {}
};

// Logits (without c_out) of every channel for problems 0..n-1:
// xin  L blocks of chunk x M (problem-fastest), the channel inputs;
// zall L blocks of chunk x N (problem-fastest), written.
template <class T>
void bilstm_logits_chunk(const Weights<T>& w, BiWork<T>& work, int n, int L, const T* xin,
                         T* zall) {
    const int M = w.M(), N = w.N();
    const idx chunk = work.f.chunk;
    for (int j = 0; j < L; ++j) {  // forward: channels 0..L-1, sets z_j
        lstm::set_input(work.f, xin + j * chunk * M, M);
        lstm::lstm_cell(w.fw, work.f, n, j == 0);
        lstm::add_logits(w.fw, work.f, n, zall + j * chunk * N, T(0));
    }
    for (int j = L - 1; j >= 0; --j) {  // backward: channels L-1..0, adds to z_j
        lstm::set_input(work.b, xin + j * chunk * M, M);
        lstm::lstm_cell(w.bw, work.b, n, j == L - 1);
        lstm::add_logits(w.bw, work.b, n, zall + j * chunk * N, T(1));
    }
}

// Forward pass: X (B, L, M) row-major -> out (B, L, N) logits including c_out.
template <class T>
void blstm_logits(const Weights<T>& w, const T* X, idx B, int L, T* out, int n_threads,
                  int chunk_ = lstm::kChunk, Control* ctl = nullptr) {
    const int chunk = lstm::padded_chunk(chunk_);
    const idx n_chunks = (B + chunk - 1) / chunk;
    const int M = w.M(), N = w.N();
    parallel_for(n_chunks, n_threads, [&](idx c0, idx c1, int) {
        BiWork<T> work(w, chunk);
        std::vector<T> xin(static_cast<std::size_t>(L) * chunk * M, T(0));
        std::vector<T> zall(static_cast<std::size_t>(L) * chunk * N, T(0));
        for (idx ch = c0; ch < c1 && !should_stop(ctl); ++ch) {
            const idx p0 = ch * chunk;
            const int n = static_cast<int>(std::min<idx>(chunk, B - p0));
            // (layout: channel block j starts at j*chunk*M; entry (b, m) at b + m*chunk)
            for (idx b = 0; b < n; ++b)
                for (int j = 0; j < L; ++j) {
                    const T* src = X + ((p0 + b) * L + j) * M;
                    T* xj = xin.data() + static_cast<idx>(j) * chunk * M;
                    for (idx m = 0; m < M; ++m) xj[b + m * chunk] = src[m];
                }
            bilstm_logits_chunk(w, work, n, L, xin.data(), zall.data());
            for (idx b = 0; b < n; ++b)
                for (int j = 0; j < L; ++j) {
                    const T* zj = zall.data() + static_cast<idx>(j) * chunk * N;
                    T* dst = out + ((p0 + b) * L + j) * N;
                    for (idx a = 0; a < N; ++a) dst[a] = zj[b + a * chunk] + w.c_out()[a];
                }
        }
    }, ctl);
}

// Decodes B problems Y (B, M, L) with Algorithm 2's greedy loop and the
// bidirectional predictor (see the file comment); arguments as lstm::decode.
template <class T>
void decode(const Weights<T>& w, const double* At, const double* col_norms, const double* Y,
            idx B, int L, const lstm::DecodeOptions& opt, const lstm::DecodeOutput& out,
            Control* ctl = nullptr) {
    const int chunk = lstm::decode_chunk(opt.chunk, B);
    lstm::greedy_decode<T>(w.M(), w.N(), w.c_out(), At, col_norms, Y, B, L, opt, out, [&]() {
        return [&w, L, chunk, few = lstm::FewProblems<T>(w.fw, &w.bw, L),
                work = std::vector<BiWork<T>>()](int n, const T* xin, T* zall) mutable {
            if (few.run(n, xin, zall, chunk)) return;  // few problems: same bits
            if (work.empty()) work.emplace_back(w, chunk);  // set up on first use
            bilstm_logits_chunk(w, work.front(), n, L, xin, zall);
        };
    }, ctl);
}

}  // namespace cscore::blstm
