// LSTM-CS with few problems per call (a stream decoding frames one at a time):
// the panel products over output rows, their work buffers, one direction of the
// LSTM over the channels, and FewProblems, the predictor lstm::decode and
// blstm::decode try first.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#endif

#include "cscore/cpu.hpp"
#include "cscore/lstm_activation.hpp"
#include "cscore/lstm_base.hpp"
#include "cscore/simd_math.hpp"

namespace cscore::lstm {

// Few problems per call (a stream decoding frames one at a time).
//
// With fewer problems than SIMD lanes the batch kernel above leaves most lanes
// idle and broadcasts every weight.  Here the vector runs over output rows
// instead.  Each output entry (one problem, one channel, one row j) is still the
// batch kernel's chain: acc = 0 (or its stored value), then
// acc = acc + W[j, kk] * x[kk] for kk in order -- one FMA per step when
// cpu::active_isa() is avx2 or above, a rounded multiply then a rounded add on the
// generic path -- so the bits are the batch kernel's, whatever the batch, the
// thread count, or which path ran.  The weights come from the panel layout
// (Weights::WRp / Up, or their float16 bits WRh / Uh): each panel of kPanel rows
// is one contiguous stream.
//
// Per greedy iteration, x W^T of all L channels (the first M steps of every gate
// chain) is one pass over W; each channel then continues its chains with R v
// (none at the first channel, as lstm_cell with `first`).  Keeping the
// accumulator in memory between the two parts is exact (it is a float), so the
// split changes no bit either.  The cell update runs over the cells with the
// operations of the batch path's (activate_cells, lstm_activation.hpp).

namespace detail {

#ifdef CSCORE_LSTM_FMA

CSCORE_F16C_FN inline __m256 load_w8(const float* p) { return _mm256_loadu_ps(p); }
CSCORE_F16C_FN inline __m256 load_w8(const std::uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));  // exact
}

// One column times 8 * V rows of one panel (row stride ldp): C[r] (+)= sum over
// kk of Wp[kk * ldp + r] * X[kk], one FMA per kk in order.
template <int V, class Wt>
CSCORE_F16C_FN inline void panel_fma(int k, const Wt* Wp, int ldp, const float* X, float* C,
                                     bool accumulate) {
    // (loops unrolled by hand-set pragmas: left to itself GCC keeps acc on the
    // stack and stores it every step)
    __m256 acc[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v)
        acc[v] = accumulate ? _mm256_loadu_ps(C + 8 * v) : _mm256_setzero_ps();
    for (int kk = 0; kk < k; ++kk) {
        const Wt* wr = Wp + static_cast<idx>(kk) * ldp;
        const __m256 x = _mm256_broadcast_ss(X + kk);
#pragma GCC unroll 8
        for (int v = 0; v < V; ++v) acc[v] = _mm256_fmadd_ps(load_w8(wr + 8 * v), x, acc[v]);
    }
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) _mm256_storeu_ps(C + 8 * v, acc[v]);
}

// Panel after panel, column after column: one panel (up to kPanel * kfull
// weights, 150 KB for the 512-cell R) is read from memory once and from L2 for
// the further columns, with 8 accumulators (64 rows) in registers.  (Measured:
// faster than pairs of columns on 32-row sub-blocks, and wider column groups
// made GCC keep the accumulators on the stack.)  mp: rows (panel_rows), kfull:
// inputs per row in the layout.
template <class Wt>
CSCORE_F16C_FN inline void panel_times_fma(int nc, int mp, int kfull, int k0, int k,
                                           const Wt* Wp, const float* X, int ldx, float* C,
                                           int ldc, bool acc) {
    for (int p0 = 0; p0 < mp; p0 += kPanel) {
        const int wd = std::min(kPanel, mp - p0);  // this panel's width (row stride)
        const Wt* wp = Wp + static_cast<idx>(p0) * kfull + static_cast<idx>(k0) * wd;
        for (int c = 0; c < nc; ++c) {
            const float* x = X + static_cast<idx>(c) * ldx;
            float* cc = C + static_cast<idx>(c) * ldc + p0;
            if (wd == kPanel) {
                panel_fma<8>(k, wp, wd, x, cc, acc);
                continue;
            }
            int s = 0;
            for (; wd - s >= 32; s += 32) panel_fma<4>(k, wp + s, wd, x, cc + s, acc);
            for (; s < wd; s += 16) panel_fma<2>(k, wp + s, wd, x, cc + s, acc);
        }
    }
}
#endif

#ifdef CSCORE_SIMD
// The generic path's chain (acc = acc + w * x: a rounded multiply, then a rounded
// add) on 4 rows at a time; otherwise as panel_fma.
template <int V>
inline void panel_mul_add(int k, const float* Wp, int ldp, const float* X, float* C,
                          bool accumulate) {
    simd::vf4 acc[V];
    for (int v = 0; v < V; ++v) {
        acc[v] = simd::vf4{};
        if (accumulate) simd::load(C + 4 * v, acc[v]);
    }
    for (int kk = 0; kk < k; ++kk) {
        const float* wr = Wp + static_cast<idx>(kk) * ldp;
        const float x = X[kk];
        for (int v = 0; v < V; ++v) {
            simd::vf4 w;
            simd::load(wr + 4 * v, w);
            acc[v] = acc[v] + w * x;
        }
    }
    for (int v = 0; v < V; ++v) simd::store(C + 4 * v, acc[v]);
}

inline void panel_times_generic(int nc, int mp, int kfull, int k0, int k, const float* Wp,
                                const float* X, int ldx, float* C, int ldc, bool acc) {
    for (int p0 = 0; p0 < mp; p0 += kPanel) {
        const int wd = std::min(kPanel, mp - p0);
        const float* wp = Wp + static_cast<idx>(p0) * kfull + static_cast<idx>(k0) * wd;
        for (int c = 0; c < nc; ++c) {
            const float* x = X + static_cast<idx>(c) * ldx;
            float* cc = C + static_cast<idx>(c) * ldc + p0;
            int s = 0;
            for (; wd - s >= 32; s += 32) panel_mul_add<8>(k, wp + s, wd, x, cc + s, acc);
            for (; s < wd; s += 16) panel_mul_add<4>(k, wp + s, wd, x, cc + s, acc);
        }
    }
}
#endif

// Which kernel the few-problems path uses for these weights (none: batch kernel).
enum class PanelKernel : int { none = 0, generic = 1, fma_f32 = 2, fma_f16 = 3 };

inline PanelKernel panel_kernel(const Weights<float>& w) {
#ifdef CSCORE_LSTM_FMA
    if (cpu::isa_at_least(cpu::Isa::avx2)) {
        if (w.WRh != nullptr && w.Uh != nullptr) return PanelKernel::fma_f16;
        if (w.WRp != nullptr && w.Up != nullptr) return PanelKernel::fma_f32;
        return PanelKernel::none;
    }
#endif
#ifdef CSCORE_SIMD
    if (w.WRp != nullptr && w.Up != nullptr) return PanelKernel::generic;
#endif
    (void)w;
    return PanelKernel::none;
}

// C (nc columns, column c at C + c * ldc, panel_rows(m) rows) (+)= inputs
// k0..k0+k-1 of a panel layout (float Wp or float16 Wh, kfull inputs per row)
// times X (column c at X + c * ldx).
inline void panel_times(PanelKernel kern, int nc, int m, int kfull, int k0, int k,
                        const float* Wp, const std::uint16_t* Wh, const float* X, int ldx,
                        float* C, int ldc, bool acc) {
    const int mp = panel_rows(m);
    switch (kern) {
#ifdef CSCORE_LSTM_FMA
        case PanelKernel::fma_f16:
            panel_times_fma(nc, mp, kfull, k0, k, Wh, X, ldx, C, ldc, acc);
            return;
        case PanelKernel::fma_f32:
            panel_times_fma(nc, mp, kfull, k0, k, Wp, X, ldx, C, ldc, acc);
            return;
#endif
#ifdef CSCORE_SIMD
        case PanelKernel::generic:
            panel_times_generic(nc, mp, kfull, k0, k, Wp, X, ldx, C, ldc, acc);
            return;
#endif
        default:
            break;
    }
    (void)Wp, (void)Wh, (void)X, (void)C, (void)ldx, (void)ldc, (void)acc, (void)nc, (void)k;
    (void)kfull, (void)k0, (void)mp;
    throw std::logic_error("lstm: no panel kernel");
}

}  // namespace detail

// Work buffers of the few-problems path: up to kSmallMax problems times L
// channels, one column per (channel j, problem col) at index j * n + col.
struct SmallWork {
    int L = 0, M = 0, H = 0, GHp = 0, Np = 0;
    std::vector<float> x;  // inputs, M per column
    std::vector<float> g;  // gate pre-activations, GHp per column
    std::vector<float> c;  // cell state, H per problem
    std::vector<float> v;  // cell output, H per problem
    std::vector<float> z;  // logits (without c_out), Np per column

    SmallWork() = default;
    SmallWork(const Weights<float>& w, int L_)
        : L(L_),
          M(w.M),
          H(w.H),
          GHp(panel_rows(w.gates() * w.H)),
          Np(panel_rows(w.N)),
          x(static_cast<std::size_t>(L_) * kSmallMax * static_cast<std::size_t>(w.M)),
          g(static_cast<std::size_t>(L_) * kSmallMax * static_cast<std::size_t>(GHp)),
          c(static_cast<std::size_t>(kSmallMax) * static_cast<std::size_t>(w.H)),
          v(static_cast<std::size_t>(kSmallMax) * static_cast<std::size_t>(w.H)),
          z(static_cast<std::size_t>(L_) * kSmallMax * static_cast<std::size_t>(Np)) {}
};

// One direction of the LSTM over the channels (reverse: L-1..0, else 0..L-1)
// for the n <= kSmallMax problems whose inputs are in s.x; logits into s.z,
// added to what is there when add_logits (a BLSTM's backward direction).
inline void small_direction(detail::PanelKernel kern, const Weights<float>& w, SmallWork& s,
                            int n, bool reverse, bool add_logits) {
    const int M = w.M, H = w.H, L = s.L, kf = M + H, GH = w.gates() * w.H;
    const idx GHp = s.GHp, Np = s.Np;
    // x W^T of every channel: the first M steps of each gate chain
    detail::panel_times(kern, n * L, GH, kf, 0, M, w.WRp, w.WRh, s.x.data(), M, s.g.data(),
                        s.GHp, false);
    for (int t = 0; t < L; ++t) {
        const int j = reverse ? L - 1 - t : t;
        float* gj = s.g.data() + static_cast<idx>(j) * n * GHp;
        if (t > 0)  // the chains go on with R v (zero state at the first channel)
            detail::panel_times(kern, n, GH, kf, M, H, w.WRp, w.WRh, s.v.data(), H, gj, s.GHp,
                                true);
        for (int col = 0; col < n; ++col)
            detail::activate_cells(w.cell, H, gj + col * GHp, w.b, s.c.data() + static_cast<idx>(col) * H,
                                   s.v.data() + static_cast<idx>(col) * H, t == 0);
        detail::panel_times(kern, n, w.N, H, 0, H, w.Up, w.Uh, s.v.data(), H,
                            s.z.data() + static_cast<idx>(j) * n * Np, s.Np, add_logits);
    }
}

// The few-problems predictor of lstm::decode and blstm::decode: one direction,
// or two (bw non-null: the backward one, whose logits are added).  run() returns
// false (and does nothing) when the batch kernel must run instead: more than
// kSmallMax problems, precision T other than float, or no panel layout/kernel.
template <class T>
struct FewProblems {
    FewProblems(const Weights<T>&, const Weights<T>*, int) {}
    bool run(int, const T*, T*, idx) { return false; }
};

template <>
struct FewProblems<float> {
    const Weights<float>* fw;
    const Weights<float>* bw;
    detail::PanelKernel kern;
    SmallWork s;

    FewProblems(const Weights<float>& f, const Weights<float>* b, int L)
        : fw(&f), bw(b), kern(detail::panel_kernel(f)) {
        if (b != nullptr && detail::panel_kernel(*b) != kern) kern = detail::PanelKernel::none;
        if (kern != detail::PanelKernel::none) s = SmallWork(f, L);
    }

    // xin: L blocks of chunk x M, zall: L blocks of chunk x N (problem-fastest).
    bool run(int n, const float* xin, float* zall, idx chunk) {
        if (kern == detail::PanelKernel::none || n > kSmallMax) return false;
        const int L = s.L, M = s.M, N = fw->N;
        for (int j = 0; j < L; ++j)
            for (int col = 0; col < n; ++col) {
                const float* src = xin + static_cast<idx>(j) * chunk * M + col;
                float* dst = s.x.data() + (static_cast<idx>(j) * n + col) * M;
                for (int m = 0; m < M; ++m) dst[m] = src[static_cast<idx>(m) * chunk];
            }
        small_direction(kern, *fw, s, n, false, false);
        if (bw != nullptr) small_direction(kern, *bw, s, n, true, true);
        for (int j = 0; j < L; ++j)
            for (int col = 0; col < n; ++col) {
                const float* src = s.z.data() + (static_cast<idx>(j) * n + col) * s.Np;
                float* dst = zall + static_cast<idx>(j) * chunk * N + col;
                for (int a = 0; a < N; ++a) dst[static_cast<idx>(a) * chunk] = src[a];
            }
        return true;
    }
};

}  // namespace cscore::lstm
