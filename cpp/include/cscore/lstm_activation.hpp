// LSTM-CS: the cell update (gate nonlinearities, cell state, output), written
// once over the vector width (simd_math.hpp) for the two layouts that use it: the
// batch path, whose lanes are problems (one gate row per cell, one bias for the
// row), and the few-problems path, whose lanes are cells (biases per lane).
//
// float uses the vectorizable exp of simd_math.hpp, double the C library (for
// cross-checks).  float runs in 16-lane vectors when cpu::active_isa() is avx512,
// 8-lane ones from avx2, else 4-lane ones (baseline x86-64), the lanes left over
// in the narrower vectors and then one by one; every lane gets the same
// operations in the same order (no contraction: the AVX2 copy does not enable
// FMA, the AVX-512 one switches it off), so the width changes no bit.
#pragma once

#include <cmath>
#include <type_traits>

#include "cscore/cpu.hpp"
#include "cscore/lstm_base.hpp"
#include "cscore/simd_math.hpp"

namespace cscore::lstm {
namespace detail {

// The nonlinearities, in place: the approximations of simd_math.hpp, except for
// double (the C library).
template <class V>
CSCORE_SIMD_INLINE void sigmoid(V& x) {
    simd::sigmoid(x);
}
template <class V>
CSCORE_SIMD_INLINE void tanh_(V& x) {
    simd::tanh_(x);
}
inline void sigmoid(double& x) { x = 1.0 / (1.0 + std::exp(-x)); }
inline void tanh_(double& x) { x = std::tanh(x); }

// Where lane k of the gates i, f, g, o reads its pre-activation (without bias)
// and its bias: pre-activations at i[k] .. o[k] (f unused by the paper cell);
// biases bi .. bo, one value for all lanes (B = S: GateRows, lanes are problems)
// or bi[k] .. bo[k] (B = const S*: GateCells, lanes are cells).
template <class S, class B>
struct Gates {
    const S* i;
    const S* f;
    const S* g;
    const S* o;
    B bi, bf, bg, bo;
};
template <class S>
using GateRows = Gates<S, S>;
template <class S>
using GateCells = Gates<S, const S*>;

// x = pre-activation + bias of lanes [k, k + width).
template <class V, class S>
CSCORE_SIMD_INLINE void gate_input(const S* pre, S bias, int k, V& x) {
    simd::load(pre + k, x);
    x = x + bias;
}
template <class V, class S>
CSCORE_SIMD_INLINE void gate_input(const S* pre, const S* bias, int k, V& x) {
    V b;
    simd::load(pre + k, x);
    simd::load(bias + k, b);
    x = x + b;
}

// Lanes [k, k + width): c <- f c + i g (paper: c + i g; at the first channel,
// first, the state is zero), v <- o tanh(c).
template <class V, class S, class B>
CSCORE_SIMD_INLINE void update_lanes(Cell cell, const Gates<S, B>& gt, int k, S* c, S* v,
                                     bool first) {
    V i, gg, o;
    gate_input(gt.i, gt.bi, k, i);
    sigmoid(i);
    gate_input(gt.g, gt.bg, k, gg);
    tanh_(gg);
    gate_input(gt.o, gt.bo, k, o);
    sigmoid(o);
    V prev{};  // the incoming state (zero at the first channel)
    if (!first) {
        simd::load(c + k, prev);
        if (cell != Cell::paper) {
            V f;
            gate_input(gt.f, gt.bf, k, f);
            sigmoid(f);
            prev = f * prev;
        }
    }
    // (One lane takes i g itself at the first channel, a vector adds it to the zero
    // state: they differ only in the sign of a zero c, which tanh(c) drops.)
    V cn;
    if constexpr (simd::Lanes<V>::width == 1)
        cn = first ? i * gg : prev + i * gg;
    else
        cn = prev + i * gg;
    simd::store(c + k, cn);
    tanh_(cn);
    const V out = o * cn;
    simd::store(v + k, out);
}

// The next narrower type the lanes left over run in (a vector's scalar below 4).
template <class V>
struct Narrower {
    using type = simd::scalar_t<V>;
};
#ifdef CSCORE_SIMD
template <>
struct Narrower<simd::vf8> {
    using type = simd::vf4;
};
template <>
struct Narrower<simd::vf16> {
    using type = simd::vf8;
};
#endif

// Lanes [k, n): whole vectors of V, then the rest in narrower types.
template <class V, class S, class B>
CSCORE_SIMD_INLINE void update(Cell cell, const Gates<S, B>& gt, int k, int n, S* c, S* v,
                               bool first) {
    constexpr int W = simd::Lanes<V>::width;
    for (; k + W <= n; k += W) update_lanes<V>(cell, gt, k, c, v, first);
    if constexpr (W > 1) update<typename Narrower<V>::type>(cell, gt, k, n, c, v, first);
}

#ifdef CSCORE_LSTM_AVX2
template <class B>
CSCORE_AVX2_FN inline void update_avx2(Cell cell, const Gates<float, B>& gt, int n, float* c,
                                       float* v, bool first) {
    update<simd::vf8>(cell, gt, 0, n, c, v, first);
}

template <class B>
CSCORE_AVX512_ELEM_FN inline void update_avx512(Cell cell, const Gates<float, B>& gt, int n,
                                                float* c, float* v, bool first) {
    update<simd::vf16>(cell, gt, 0, n, c, v, first);
}
#endif

// Lanes [0, n) in the widest vectors the active instruction set has.
template <class S, class B>
inline void update_all(Cell cell, const Gates<S, B>& gt, int n, S* c, S* v, bool first) {
    if constexpr (std::is_same_v<S, float>) {
#ifdef CSCORE_LSTM_AVX2
        const cpu::Isa isa = cpu::active_isa();
        if (isa >= cpu::Isa::avx512) {
            update_avx512(cell, gt, n, c, v, first);
            return;
        }
        if (isa >= cpu::Isa::avx2) {
            update_avx2(cell, gt, n, c, v, first);
            return;
        }
#endif
#ifdef CSCORE_SIMD
        update<simd::vf4>(cell, gt, 0, n, c, v, first);
        return;
#endif
    }
    update<S>(cell, gt, 0, n, c, v, first);
}

// The batch layout: one cell for problems 0..n-1, all arrays problem-fastest (the
// gate rows of r, the cell state row c (in/out), the output row v).
template <class T>
inline void activate(Cell cell, int n, const GateRows<T>& r, T* c, T* v, bool first) {
    update_all(cell, r, n, c, v, first);
}

// The few-problems layout: one problem's cells 0..H-1, g its G*H gate
// pre-activations (gate-major, without bias), b the biases, c and v the cell
// state and output (H each).
inline void activate_cells(Cell cell, int H, const float* g, const float* b, float* c, float* v,
                           bool first) {
    const bool paper = cell == Cell::paper;
    const int gi = 0, gf = paper ? 0 : 1, gg = paper ? 1 : 2, go = paper ? 2 : 3;
    const GateCells<float> gt{g + gi * H, g + gf * H, g + gg * H, g + go * H,
                              b + gi * H, b + gf * H, b + gg * H, b + go * H};
    update_all(cell, gt, H, c, v, first);
}

}  // namespace detail
}  // namespace cscore::lstm
