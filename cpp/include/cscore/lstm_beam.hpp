// Beam-search rescue of the channels a greedy LSTM-CS decode left unexplained
// (python/cscore/decoders/learned/beam.py documents the method; this is its
// compiled search).
//
// For one problem, every channel j marked for rescue is decoded again from an
// empty support, keeping `width` partial supports:
//   * context: the LSTM state entering channel j at greedy iteration t is the
//     LSTM run over channels 0..j-1 on their residuals after t atoms of their
//     decoded paths (the final residual once a path has ended), as in the greedy
//     decode; it is computed here in blocks of kCtxRows iterations, only as far
//     as a search reaches, and shared by the problem's later channels (channel
//     j's chain is a prefix of channel j+1's);
//   * expansion: each partial support's residual, max-abs normalised, takes one
//     LSTM step from that state (x W^T plus the context's R v + b: the recurrent
//     product is computed once per iteration, not once per partial support); its
//     `candidates` best-scored atoms not in it are its children;
//   * ranking: a child's least-squares residual norm comes from the parent's
//     orthonormal basis, ||r'||^2 = ||r||^2 - (p^T r)^2 / ||p||^2 with p the new
//     column with the basis projected out (twice); the `width` distinct supports
//     with the smallest norms are kept (ties: the earlier parent and candidate);
//   * stop: the first support whose residual norm is <= tol sqrt((M - s) / M)
//     (s atoms) is the channel's result; none within `limit` atoms: no result.
//
// The network runs in float32 through lstm.hpp's batch-independent products
// (times_weights, activate), the least squares in float64.  Each channel's
// search depends only on its own problem, so results do not depend on the batch
// or the thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "cscore/linalg.hpp"
#include "cscore/lstm.hpp"
#include "cscore/parallel.hpp"

namespace cscore::lstm::beam {

// Greedy iterations per context block (rows of one context product).
constexpr int kCtxRows = 8;

struct Options {
    int width = 8;       // partial supports kept per step
    int candidates = 4;  // children per partial support
    int n_threads = 1;
};

// One batch: B problems, Y (B, M, L) row-major; the greedy decode's atoms
// (B, L, k_in), -1 padded; per problem the tolerance; per channel the search
// limit in atoms (0: not searched).  Output: `found` (B, L, k_out) -1 padded,
// the support (selection order) each searched channel's search returned.
struct Batch {
    const double* Y = nullptr;
    const std::int64_t* atoms = nullptr;
    int k_in = 0;
    const double* tol = nullptr;
    const std::int32_t* limits = nullptr;
    std::int64_t* found = nullptr;
    int k_out = 0;
    idx B = 0;
    int L = 0;
};

namespace detail {

// Problems whose searches step together (their rows share every product).
constexpr int kChunkProblems = 8;
// Rows per LSTM product at most (or `width`, if larger; larger sets are split:
// no result depends on it).
constexpr int kMaxRows = 256;

// The chain over channels at one block of kCtxRows greedy iterations: `next` is
// the channel it has reached; G (kCtxRows x G*H, row-major) holds the gates
// entering it, R v + b of channel next-1 (b alone at channel 0), and c
// (kCtxRows x H) that channel's cell state (zero at channel 0).
// Searched channels of one problem step together, each reading the chain where
// it enters that channel: `at` keeps a copy of (G, c) for every searched channel
// the chain has reached (channel, then G and c one after the other).
struct CtxBlock {
    int next = -1;
    std::vector<float> G, c;
    std::vector<std::pair<int, std::vector<float>>> at;

    void keep() {
        std::vector<float> gc(G);
        gc.insert(gc.end(), c.begin(), c.end());
        at.emplace_back(next, std::move(gc));
    }
    // (G, c) entering channel j, which the chain has reached.
    std::pair<const float*, const float*> entering(int j, int GHn) const {
        for (const auto& e : at)
            if (e.first == j) return {e.second.data(), e.second.data() + static_cast<idx>(kCtxRows) * GHn};
        return {nullptr, nullptr};
    }
};

// A problem's context: its channels, greedy paths, the LSTM inputs along them.
struct ProblemCtx {
    std::vector<double> y;                          // (L, M)
    std::vector<std::vector<std::int64_t>> paths;   // greedy atoms per channel
    std::vector<std::vector<float>> inputs;         // per channel, (len+1, M), lazily
    std::vector<CtxBlock> blocks;
    std::vector<unsigned char> searched;             // per channel
};

// The dictionary: At (N, M) row-major columns of A, squared norms and norms.
struct Dictionary {
    int M = 0, N = 0;
    const double* At = nullptr;
    const double* col2 = nullptr;
    const double* col_norms = nullptr;
};

// One channel's partial supports (at most `width`), t atoms each.
struct Beam {
    std::vector<std::int64_t> supp;    // width x limit, selection order
    std::vector<std::uint64_t> mask;   // width x words, the same as sets
    std::vector<double> Q;             // width x limit x M orthonormal bases
    std::vector<double> r;             // width x M residuals
    int n = 0;

    void reserve(int width, int limit, int words, int M) {
        const std::size_t W = static_cast<std::size_t>(width);
        supp.assign(W * static_cast<std::size_t>(limit), -1);
        mask.assign(W * static_cast<std::size_t>(words), 0);
        Q.assign(W * static_cast<std::size_t>(limit) * static_cast<std::size_t>(M), 0.0);
        r.assign(W * static_cast<std::size_t>(M), 0.0);
        n = 0;
    }
};

// One channel's search.
struct Task {
    int prob = 0;          // index in the chunk
    int j = 0;             // channel
    int limit = 0;         // atoms at most
    int ctx_last = 0;      // iterations after which its context no longer changes
    double tol = 0.0;
    bool done = false;
    std::int64_t* out = nullptr;
    Beam cur, nxt;
    std::vector<float> z;  // cur.n x N scores of the step
};

// The searches of a chunk of problems, stepped together (one per thread).
class ChunkSearch {
  public:
    // Wx: the input weights W (G*H x M, row-major, contiguous: the columns
    // 0..M-1 of w.WR), streamed by every step.
    ChunkSearch(const Weights<float>& w, const float* Wx, const Dictionary& d, const Options& opt)
        : w_(w), Wx_(Wx), d_(d), opt_(opt), rows_(std::max(kMaxRows, opt.width)),
          work_(w, rows_), GH_(w.gates() * w.H),
          words_((d.N + 63) / 64) {}

    // Searches the channels with limits > 0 of problems ps (at most
    // kChunkProblems); writes their rows of `found`.
    void run(const Batch& bt, const idx* ps, int np) {
        const int L = bt.L, M = d_.M;
        probs_.resize(static_cast<std::size_t>(np));
        tasks_.clear();
        for (int q = 0; q < np; ++q) {
            const idx p = ps[q];
            ProblemCtx& pc = probs_[static_cast<std::size_t>(q)];
            pc.y.assign(static_cast<std::size_t>(M) * static_cast<std::size_t>(L), 0.0);
            for (int m = 0; m < M; ++m)
                for (int j = 0; j < L; ++j)
                    pc.y[static_cast<std::size_t>(j * M + m)] = bt.Y[(p * M + m) * L + j];
            pc.paths.assign(static_cast<std::size_t>(L), {});
            pc.inputs.assign(static_cast<std::size_t>(L), {});
            pc.blocks.clear();
            pc.searched.assign(static_cast<std::size_t>(L), 0);
            for (int j = 0; j < L; ++j)
                pc.searched[static_cast<std::size_t>(j)] = std::min<int>(bt.limits[p * L + j], bt.k_out) > 0;
            for (int j = 0; j < L; ++j)
                for (int t = 0; t < bt.k_in; ++t) {
                    const std::int64_t a = bt.atoms[(p * L + j) * bt.k_in + t];
                    if (a >= 0) pc.paths[static_cast<std::size_t>(j)].push_back(a);
                }
            int ctx_last = 0;  // longest path of the channels before j
            for (int j = 0; j < L; ++j) {
                const int limit = std::min<int>(bt.limits[p * L + j], bt.k_out);
                if (limit > 0) {
                    tasks_.emplace_back();
                    Task& tk = tasks_.back();
                    tk.prob = q;
                    tk.j = j;
                    tk.limit = limit;
                    tk.ctx_last = ctx_last;
                    tk.tol = bt.tol[p];
                    tk.out = bt.found + (p * L + j) * bt.k_out;
                    tk.cur.reserve(opt_.width, limit, words_, M);
                    tk.nxt.reserve(opt_.width, limit, words_, M);
                    std::copy(pc.y.data() + static_cast<idx>(j) * M,
                              pc.y.data() + static_cast<idx>(j + 1) * M, tk.cur.r.begin());
                    tk.cur.n = 1;
                }
                ctx_last = std::max(ctx_last, static_cast<int>(pc.paths[static_cast<std::size_t>(j)].size()));
            }
        }
        for (int t = 0;; ++t) {
            active_.clear();
            for (Task& tk : tasks_)
                if (!tk.done && t < tk.limit) active_.push_back(&tk);
            if (active_.empty()) break;
            contexts(t);
            score(t);
            for (Task* tk : active_) {
                expand(*tk, t);
                if (!select(*tk, t)) {
                    tk->done = true;
                    continue;
                }
                std::swap(tk->cur, tk->nxt);
                const double rn = std::sqrt(linalg::dot<double>(tk->cur.r.data(), tk->cur.r.data(), M));
                // explained: noise alone after t + 1 atoms leaves about sigma sqrt(M - t - 1)
                if (rn <= tk->tol * std::sqrt(static_cast<double>(M - t - 1) / M)) {
                    std::copy(tk->cur.supp.begin(), tk->cur.supp.begin() + t + 1, tk->out);
                    tk->done = true;
                }
            }
        }
    }

  private:
    const Weights<float>& w_;
    const float* Wx_;
    Dictionary d_;
    Options opt_;
    int rows_;  // rows per product at most
    LstmWork<float> work_;
    int GH_;
    int words_;
    std::vector<ProblemCtx> probs_;
    std::vector<Task> tasks_;
    std::vector<Task*> active_;
    std::vector<const float*> rowG_, rowC_;  // per row of a product: its gates and cells in
    std::vector<double> e_, pn2_;            // a task's candidates: fit, column norms^2
    std::vector<int> cand_, order_;
    std::vector<std::uint64_t> key_;

    // Normalised inputs of channel j of problem q after 0..len atoms of its greedy
    // path (as the greedy decode computes them: ChannelLS, then r / max|r|).
    const std::vector<float>& inputs(int q, int j) {
        ProblemCtx& pc = probs_[static_cast<std::size_t>(q)];
        std::vector<float>& x = pc.inputs[static_cast<std::size_t>(j)];
        if (!x.empty()) return x;
        const int M = d_.M;
        const auto& path = pc.paths[static_cast<std::size_t>(j)];
        const int len = static_cast<int>(path.size());
        x.resize(static_cast<std::size_t>(len + 1) * static_cast<std::size_t>(M));
        ChannelLS ls;
        ls.reset(pc.y.data() + static_cast<idx>(j) * M, M, d_.N);
        for (int t = 0; t <= len; ++t) {
            if (t > 0) {
                const std::int64_t a = path[static_cast<std::size_t>(t - 1)];
                if (!ls.stopped && !ls.append(a, d_.At + a * M, d_.col_norms[a], M))
                    ls.stopped = true;
            }
            maxabs_input(ls.r.data(), M, x.data() + static_cast<idx>(t) * M, 1);
        }
        return x;
    }

    CtxBlock& block(int q, int kb) {
        ProblemCtx& pc = probs_[static_cast<std::size_t>(q)];
        auto& blocks = pc.blocks;
        if (blocks.size() <= static_cast<std::size_t>(kb)) blocks.resize(static_cast<std::size_t>(kb) + 1);
        CtxBlock& blk = blocks[static_cast<std::size_t>(kb)];
        if (blk.next < 0) {  // channel 0: zero state, gates b
            blk.G.resize(static_cast<std::size_t>(kCtxRows) * static_cast<std::size_t>(GH_));
            blk.c.assign(static_cast<std::size_t>(kCtxRows) * static_cast<std::size_t>(w_.H), 0.0f);
            for (int r = 0; r < kCtxRows; ++r)
                std::copy(w_.b, w_.b + GH_, blk.G.data() + static_cast<idx>(r) * GH_);
            blk.next = 0;
            if (pc.searched[0]) blk.keep();
        }
        return blk;
    }

    static int context_iter(const Task& tk, int t) { return std::min(t, tk.ctx_last); }

    // Advances every block the active tasks read at iteration t to their channel:
    // one chain step (all such blocks' rows in one product) per round.
    void contexts(int t) {
        const int M = w_.M, H = w_.H, ch = work_.chunk;
        std::vector<std::pair<int, int>> todo;  // (problem, block) one channel behind
        for (;;) {
            todo.clear();
            for (const Task* tk : active_) {
                const int kb = context_iter(*tk, t) / kCtxRows;
                CtxBlock& blk = block(tk->prob, kb);
                if (blk.next < tk->j &&
                    std::find(todo.begin(), todo.end(), std::make_pair(tk->prob, kb)) == todo.end())
                    todo.emplace_back(tk->prob, kb);
            }
            if (todo.empty()) return;
            const int per = rows_ / kCtxRows;
            for (std::size_t g0 = 0; g0 < todo.size(); g0 += static_cast<std::size_t>(per)) {
                const int nb = static_cast<int>(std::min<std::size_t>(todo.size() - g0, static_cast<std::size_t>(per)));
                const int n = nb * kCtxRows;
                rowG_.resize(static_cast<std::size_t>(n));
                rowC_.resize(static_cast<std::size_t>(n));
                for (int bi = 0; bi < nb; ++bi) {
                    const auto [q, kb] = todo[g0 + static_cast<std::size_t>(bi)];
                    CtxBlock& blk = block(q, kb);
                    const std::vector<float>& x = inputs(q, blk.next);
                    const int len = static_cast<int>(x.size()) / M - 1;
                    for (int r = 0; r < kCtxRows; ++r) {
                        const int row = bi * kCtxRows + r;
                        const int it = std::min(kb * kCtxRows + r, len);
                        for (int m = 0; m < M; ++m) work_.x(row, m) = x[static_cast<std::size_t>(it * M + m)];
                        rowG_[static_cast<std::size_t>(row)] = blk.G.data() + static_cast<idx>(r) * GH_;
                        rowC_[static_cast<std::size_t>(row)] = blk.c.data() + static_cast<idx>(r) * H;
                    }
                }
                step(n);
                // the state out of the channel: its cells, and R v + b for the next one
                times_weights<float>(n, GH_, H, work_.xv.data() + static_cast<idx>(M) * ch, ch,
                                     w_.WR + M, work_.ld, work_.g.data());
                for (int bi = 0; bi < nb; ++bi) {
                    const auto [q, kb] = todo[g0 + static_cast<std::size_t>(bi)];
                    CtxBlock& blk = block(q, kb);
                    for (int r = 0; r < kCtxRows; ++r) {
                        const int row = bi * kCtxRows + r;
                        for (int h = 0; h < H; ++h)
                            blk.c[static_cast<std::size_t>(r * H + h)] = work_.c[static_cast<std::size_t>(row + h * ch)];
                        for (int qq = 0; qq < GH_; ++qq)
                            blk.G[static_cast<std::size_t>(r * GH_ + qq)] =
                                work_.g[static_cast<std::size_t>(row + qq * ch)] + w_.b[qq];
                    }
                    ++blk.next;
                    if (probs_[static_cast<std::size_t>(q)].searched[static_cast<std::size_t>(blk.next)])
                        blk.keep();
                }
            }
        }
    }

    // One LSTM step of rows 0..n-1 of work_ (inputs set): gates x W^T + rowG_[row],
    // incoming cells rowC_[row].  On return v is in work_.xv's columns M.., c in work_.c.
    void step(int n) {
        const int H = w_.H, M = w_.M, ch = work_.chunk;
        times_weights<float>(n, GH_, M, work_.xv.data(), ch, Wx_, M, work_.g.data());
        // (problem-fastest buffers: the row index runs innermost)
        // (problem-fastest buffers: the rows run innermost, in runs of one G and c)
        for (int h0 = 0; h0 < n;) {
            int h1 = h0 + 1;
            const float* G = rowG_[static_cast<std::size_t>(h0)];
            const float* c = rowC_[static_cast<std::size_t>(h0)];
            while (h1 < n && rowG_[static_cast<std::size_t>(h1)] == G && rowC_[static_cast<std::size_t>(h1)] == c) ++h1;
            for (int q = 0; q < GH_; ++q) {
                float* gq = work_.g.data() + static_cast<idx>(q) * ch;
                for (int h = h0; h < h1; ++h) gq[h] += G[q];
            }
            for (int hh = 0; hh < H; ++hh) {
                float* cq = work_.c.data() + static_cast<idx>(hh) * ch;
                for (int h = h0; h < h1; ++h) cq[h] = c[hh];
            }
            h0 = h1;
        }
        const bool paper = w_.cell == Cell::paper;
        const int gi = 0, gf = paper ? 0 : 1, gg = paper ? 1 : 2, go = paper ? 2 : 3;
        const float* g = work_.g.data();
        for (int hh = 0; hh < H; ++hh) {
            auto rowp = [&](int gate) { return g + static_cast<idx>(gate * H + hh) * ch; };
            const lstm::detail::GateRows<float> gr{rowp(gi), rowp(gf), rowp(gg), rowp(go),
                                                   0.0f, 0.0f, 0.0f, 0.0f};
            lstm::detail::activate<float>(w_.cell, n, gr, work_.c.data() + static_cast<idx>(hh) * ch,
                                          work_.xv.data() + static_cast<idx>(M + hh) * ch, false);
        }
    }

    // Scores (with c_out) of the atoms for every partial support of every active
    // task at iteration t, into each task's z.
    void score(int t) {
        const int M = d_.M, N = d_.N, H = w_.H, ch = work_.chunk;
        std::size_t a0 = 0;
        while (a0 < active_.size()) {  // groups of tasks with at most rows_ rows
            std::size_t a1 = a0;
            int n = 0;
            while (a1 < active_.size() && n + active_[a1]->cur.n <= rows_) n += active_[a1++]->cur.n;
            rowG_.resize(static_cast<std::size_t>(n));
            rowC_.resize(static_cast<std::size_t>(n));
            int row = 0;
            for (std::size_t a = a0; a < a1; ++a) {
                const Task& tk = *active_[a];
                const int te = context_iter(tk, t);
                const auto [Gb, cb] = block(tk.prob, te / kCtxRows).entering(tk.j, GH_);
                const float* G = Gb + static_cast<idx>(te % kCtxRows) * GH_;
                const float* c = cb + static_cast<idx>(te % kCtxRows) * H;
                for (int h = 0; h < tk.cur.n; ++h, ++row) {
                    maxabs_input(tk.cur.r.data() + static_cast<idx>(h) * M, M, &work_.x(row, 0), ch);
                    rowG_[static_cast<std::size_t>(row)] = G;
                    rowC_[static_cast<std::size_t>(row)] = c;
                }
            }
            step(n);
            add_logits(w_, work_, n, work_.z.data(), 0.0f);
            row = 0;
            for (std::size_t a = a0; a < a1; ++a) {
                Task& tk = *active_[a];
                tk.z.resize(static_cast<std::size_t>(tk.cur.n) * static_cast<std::size_t>(N));
                for (int h = 0; h < tk.cur.n; ++h, ++row)
                    for (int at = 0; at < N; ++at)
                        tk.z[static_cast<std::size_t>(h * N + at)] =
                            work_.z[static_cast<std::size_t>(row + at * ch)] + w_.c_out[at];
            }
            a0 = a1;
        }
    }

    bool in_mask(const std::uint64_t* mk, std::int64_t a) const {
        return (mk[a >> 6] >> (a & 63)) & 1u;
    }

    // The candidates of every partial support of tk and their residual norms^2
    // after the fit (e_, pn2_, cand_).
    void expand(const Task& tk, int t) {
        const int M = d_.M, N = d_.N, C = opt_.candidates, n = tk.cur.n;
        const std::size_t rows = static_cast<std::size_t>(n) * static_cast<std::size_t>(C);
        const std::size_t qstride = static_cast<std::size_t>(tk.limit) * static_cast<std::size_t>(M);
        cand_.assign(rows, -1);
        e_.assign(rows, std::numeric_limits<double>::infinity());
        pn2_.assign(rows, 0.0);
        for (int h = 0; h < n; ++h) {
            const std::uint64_t* mk = tk.cur.mask.data() + static_cast<idx>(h) * words_;
            const float* z = tk.z.data() + static_cast<idx>(h) * N;
            // best C atoms not in the support: larger score first, then smaller index
            int* ch = cand_.data() + static_cast<idx>(h) * C;
            int got = 0;
            for (int a = 0; a < N; ++a) {
                if (in_mask(mk, a) || std::isnan(z[a])) continue;
                int pos = got < C ? got++ : C;
                while (pos > 0 && z[a] > z[ch[pos - 1]]) --pos;
                if (pos >= C) continue;
                for (int s = std::min(got, C) - 1; s > pos; --s) ch[s] = ch[s - 1];
                ch[pos] = a;
            }
            // The fit's gain without projecting: r is orthogonal to the basis Q, so
            // p^T r = a^T r and ||p||^2 = ||a||^2 - ||Q^T a||^2 (p = a minus its
            // projection).  Only the kept children's columns are projected (select).
            const double* Qh = tk.cur.Q.data() + static_cast<std::size_t>(h) * qstride;
            const double* r = tk.cur.r.data() + static_cast<idx>(h) * M;
            const double rr = linalg::dot<double>(r, r, M);
            for (int c = 0; c < got; ++c) {
                const int a = ch[c];
                const std::size_t k = static_cast<std::size_t>(h * C + c);
                const double* col = d_.At + static_cast<idx>(a) * M;
                double proj = 0.0;
                for (int i = 0; i < t; ++i) {
                    const double hi = linalg::dot<double>(Qh + static_cast<idx>(i) * M, col, M);
                    proj += hi * hi;
                }
                const double pn = d_.col2[a] - proj, pr = linalg::dot<double>(col, r, M);
                pn2_[k] = pn;
                if (pn > 1e-10 * d_.col2[a]) e_[k] = rr - pr * pr / pn;
            }
        }
    }

    // Keeps the `width` distinct supports with the smallest e_ as tk.nxt; false if none.
    bool select(Task& tk, int t) {
        const int M = d_.M, C = opt_.candidates, lim = tk.limit;
        const std::size_t qstride = static_cast<std::size_t>(lim) * static_cast<std::size_t>(M);
        const int rows = tk.cur.n * C;
        order_.resize(static_cast<std::size_t>(rows));
        std::iota(order_.begin(), order_.end(), 0);
        std::stable_sort(order_.begin(), order_.end(), [&](int a, int b) {
            return e_[static_cast<std::size_t>(a)] < e_[static_cast<std::size_t>(b)];
        });
        Beam& nx = tk.nxt;
        const Beam& cu = tk.cur;
        nx.n = 0;
        key_.resize(static_cast<std::size_t>(words_));
        for (int k : order_) {
            if (!std::isfinite(e_[static_cast<std::size_t>(k)])) break;
            const int h = k / C, a = cand_[static_cast<std::size_t>(k)];
            const std::uint64_t* pm = cu.mask.data() + static_cast<idx>(h) * words_;
            std::copy(pm, pm + words_, key_.begin());
            key_[static_cast<std::size_t>(a >> 6)] |= std::uint64_t(1) << (a & 63);
            bool dup = false;
            for (int s = 0; s < nx.n && !dup; ++s)
                dup = std::equal(key_.begin(), key_.end(), nx.mask.begin() + static_cast<idx>(s) * words_);
            if (dup) continue;
            const int s = nx.n++;
            std::copy(key_.begin(), key_.end(), nx.mask.begin() + static_cast<idx>(s) * words_);
            std::int64_t* sp = nx.supp.data() + static_cast<idx>(s) * lim;
            std::copy(cu.supp.data() + static_cast<idx>(h) * lim, cu.supp.data() + static_cast<idx>(h) * lim + t, sp);
            sp[t] = a;
            // basis: the parent's plus the normalised projected column
            double* Qs = nx.Q.data() + static_cast<std::size_t>(s) * qstride;
            const double* Qp = cu.Q.data() + static_cast<std::size_t>(h) * qstride;
            std::copy(Qp, Qp + static_cast<idx>(t) * M, Qs);
            // the new column with the basis projected out (twice), normalised
            double* q = Qs + static_cast<idx>(t) * M;
            std::copy(d_.At + static_cast<idx>(a) * M, d_.At + static_cast<idx>(a + 1) * M, q);
            for (int pass = 0; pass < 2; ++pass)
                for (int i = 0; i < t; ++i) {
                    const double* qi = Qs + static_cast<idx>(i) * M;
                    const double hcoef = linalg::dot<double>(qi, q, M);
                    for (int m = 0; m < M; ++m) q[m] -= hcoef * qi[m];
                }
            const double qn = std::sqrt(linalg::dot<double>(q, q, M));
            for (int m = 0; m < M; ++m) q[m] /= qn;
            const double* r = cu.r.data() + static_cast<idx>(h) * M;
            const double qr = linalg::dot<double>(q, r, M);
            double* rs = nx.r.data() + static_cast<idx>(s) * M;
            for (int m = 0; m < M; ++m) rs[m] = r[m] - q[m] * qr;
            if (nx.n == opt_.width) break;
        }
        return nx.n > 0;
    }
};

}  // namespace detail

// Runs the searches: problems in fixed chunks of kChunkProblems (of the problems
// with a search), chunks in parallel.  Results do not depend on the thread count
// or the chunking (every product's rows are independent lanes).
inline void rescue(const Weights<float>& w, const double* At, const Batch& bt,
                   const Options& opt, Control* ctl = nullptr) {
    std::vector<double> col2(static_cast<std::size_t>(w.N)), col_norms(col2.size());
    for (int a = 0; a < w.N; ++a) {
        const double s = linalg::dot<double>(At + static_cast<idx>(a) * w.M, At + static_cast<idx>(a) * w.M, w.M);
        col2[static_cast<std::size_t>(a)] = s;
        col_norms[static_cast<std::size_t>(a)] = std::sqrt(s);
    }
    const detail::Dictionary d{w.M, w.N, At, col2.data(), col_norms.data()};
    const int GH = w.gates() * w.H;
    std::vector<float> Wx(static_cast<std::size_t>(GH) * static_cast<std::size_t>(w.M));
    for (int q = 0; q < GH; ++q)
        std::copy(w.WR + static_cast<idx>(q) * (w.M + w.H), w.WR + static_cast<idx>(q) * (w.M + w.H) + w.M,
                  Wx.data() + static_cast<idx>(q) * w.M);
    std::fill(bt.found, bt.found + bt.B * bt.L * bt.k_out, std::int64_t(-1));
    std::vector<idx> todo;
    for (idx p = 0; p < bt.B; ++p)
        for (int j = 0; j < bt.L; ++j)
            if (bt.limits[p * bt.L + j] > 0) {
                todo.push_back(p);
                break;
            }
    const idx n_chunks = (static_cast<idx>(todo.size()) + detail::kChunkProblems - 1) / detail::kChunkProblems;
    parallel_for(n_chunks, opt.n_threads, [&](idx c0, idx c1, int) {
        detail::ChunkSearch s(w, Wx.data(), d, opt);
        for (idx c = c0; c < c1 && !should_stop(ctl); ++c) {
            const idx p0 = c * detail::kChunkProblems;
            const int np = static_cast<int>(std::min<idx>(detail::kChunkProblems, static_cast<idx>(todo.size()) - p0));
            s.run(bt, todo.data() + p0, np);
        }
    }, ctl);
}

}  // namespace cscore::lstm::beam
