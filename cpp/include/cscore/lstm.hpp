// LSTM-CS inference (Palangi, Ward and Deng 2016, Algorithm 2) on plain buffers.
//
// The LSTM runs in precision T (float in production, double for cross-checks),
// batched over a chunk of problems: each LSTM step is one GEMM for the gates,
// [W | R] [x; v], and one for the logits, U v (column-major chunks, one column
// per problem).  The least squares on each channel's support stays float64 and
// is updated incrementally (classical Gram-Schmidt with re-orthogonalization,
// i.e. a thin QR of the support columns grown by one column per atom).
//
// Weight layout (row-major, as the numpy arrays of cscore.lstm_cs.model):
//   WR    (G*H, M+H)  = [W | R], gates stacked i,g,o ("paper") or i,f,g,o ("lstm")
//   b     (G*H)
//   U     (N, H)
//   c_out (N)
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#endif

#include "cscore/blas.hpp"
#include "cscore/cpu.hpp"
#include "cscore/parallel.hpp"
#include "cscore/path_end.hpp"
#include "cscore/result.hpp"

namespace cscore::lstm {

using idx = std::ptrdiff_t;

enum class Cell : int { paper = 0, lstm = 1 };

// Default problems per LSTM batch.  Fixed (never derived from the thread count)
// so that every problem sees the same GEMM shapes whatever the number of threads.
constexpr int kChunk = 64;

// Work buffers hold whole multiples of this many problem rows (SIMD padding).
constexpr int kPadRows = 32;

// `chunk` rounded up to whole kPadRows: the leading dimension of every
// problem-fastest buffer (LstmWork's and the greedy loop's), so that the SIMD
// lanes past the last problem stay inside them.
inline int padded_chunk(int chunk) { return (chunk + kPadRows - 1) / kPadRows * kPadRows; }

// The leading dimension a decode of B problems uses: padded_chunk(chunk), or of
// B when the whole batch is smaller than a chunk (fewer bytes to set up per call;
// no result depends on it).
inline int decode_chunk(int chunk, std::ptrdiff_t B) {
    return padded_chunk(static_cast<int>(std::min<std::ptrdiff_t>(chunk, std::max<std::ptrdiff_t>(B, 1))));
}

// Relative size below which a new atom's component orthogonal to the support
// counts as zero (the atom is linearly dependent on the support).
constexpr double kDependentTol = 1e-10;

template <class T>
struct Weights {
    Cell cell = Cell::paper;
    int H = 0;  // cells
    int M = 0;  // input size
    int N = 0;  // outputs (atoms)
    const T* WR = nullptr;
    const T* b = nullptr;
    const T* U = nullptr;
    const T* c_out = nullptr;
    int ldU = 0;  // row stride of U (0: H; 2H when U is one half of a BLSTM's (N, 2H))
    // Optional second layout for few problems per call (see "Few problems" below):
    // [W | R] and U (this direction's half of it for a BLSTM) with their rows
    // padded with zeros to panel_rows(G*H) (panel_rows(N)) and cut into panels of
    // kPanel rows (the last one narrower when the rows are not whole panels),
    // panel after panel, each stored input-major: entry (row j, input kk) of
    // panel p, width w, at p * kPanel * K + kk * w + (j - p * kPanel), K = M+H
    // (H for U); WRp holds panel_rows(G*H) * (M+H) numbers, Up panel_rows(N) * H.
    // The same numbers as WR and U (float32), or their IEEE half-precision bits
    // (WRh, Uh) when WR and U hold float16-representable values (the
    // weights_dtype="float16" option).  Null: the batch kernel only.
    const T* WRp = nullptr;
    const T* Up = nullptr;
    const std::uint16_t* WRh = nullptr;
    const std::uint16_t* Uh = nullptr;
    int gates() const { return cell == Cell::paper ? 3 : 4; }
    int u_ld() const { return ldU > 0 ? ldU : H; }
};

// ---------------------------------------------------------------------------
// Elementwise nonlinearities.  float: a vectorizable exp (range reduction to
// [-ln2/2, ln2/2] and a degree-6 Taylor polynomial, about 1 ulp), from which
// sigmoid and tanh follow; double: the C library (used for cross-checks).
namespace detail {

// Branch-free (so that loops over it vectorize): clamp, round t = x / ln2 to the
// nearest integer n with the 1.5 * 2^23 trick, r = x - n ln2 (ln2 split in two
// parts), exp(r) by its Taylor polynomial, times 2^n built in the exponent bits.
inline float exp_approx(float x) {
    // Comparisons written so that NaN also maps to the clamp (-87): the exponent
    // arithmetic below must only ever see |n| <= 127 (a NaN or inf would make the
    // integer conversion overflow, which is undefined behaviour).
    x = x > -87.0f ? x : -87.0f;
    x = x < 88.0f ? x : 88.0f;
    const float magic = 12582912.0f;  // 1.5 * 2^23
    const float shifted = x * 1.44269504088896341f + magic;
    const float nf = shifted - magic;
    std::int32_t n_bits;
    std::memcpy(&n_bits, &shifted, sizeof(n_bits));
    const std::int32_t n = n_bits - 0x4B400000;  // the integer in the low mantissa bits
    const float r = (x - nf * 0.693359375f) + nf * 2.12194440e-4f;
    float p = 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const std::int32_t bits = (n + 127) * (1 << 23);
    float scale;
    std::memcpy(&scale, &bits, sizeof(scale));
    return p * scale;
}

inline float sigmoid(float x) { return 1.0f / (1.0f + exp_approx(-x)); }

// tanh x = 2 sigmoid(2x) - 1 (absolute error about 1e-7).
inline float tanh_(float x) { return 2.0f / (1.0f + exp_approx(-2.0f * x)) - 1.0f; }

inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
inline double tanh_(double x) { return std::tanh(x); }

#if defined(__GNUC__)
// The same functions on 4 floats at a time (GCC/Clang vector extensions): a
// scalar loop over exp_approx is not vectorized by GCC under its default
// -ftrapping-math (the clamp's comparisons), so the SIMD is spelled out.
#define CSCORE_LSTM_SIMD 1
typedef float vf4 __attribute__((vector_size(16)));
typedef std::int32_t vi4 __attribute__((vector_size(16)));

inline vf4 load4(const float* p) {
    vf4 v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}
inline void store4(float* p, vf4 v) { std::memcpy(p, &v, sizeof(v)); }
inline vf4 bcast4(float s) { return vf4{s, s, s, s}; }

inline vf4 exp_approx(vf4 x) {
    const vf4 lo = bcast4(-87.0f), hi = bcast4(88.0f), magic = bcast4(12582912.0f);
    x = x > lo ? x : lo;  // NaN -> lo, as in the scalar version
    x = x < hi ? x : hi;
    const vf4 shifted = x * 1.44269504088896341f + magic;
    const vf4 nf = shifted - magic;
    vi4 n;
    std::memcpy(&n, &shifted, sizeof(n));
    n -= 0x4B400000;
    const vf4 r = (x - nf * 0.693359375f) + nf * 2.12194440e-4f;
    vf4 p = bcast4(1.0f / 720.0f);
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const vi4 bits = (n + 127) * (1 << 23);
    vf4 scale;
    std::memcpy(&scale, &bits, sizeof(scale));
    return p * scale;
}

inline vf4 sigmoid(vf4 x) { return 1.0f / (1.0f + exp_approx(-x)); }
inline vf4 tanh_(vf4 x) { return 2.0f / (1.0f + exp_approx(-2.0f * x)) - 1.0f; }
#endif

// The cell update for one cell h across problems b in [b0, n), all arrays
// problem-fastest: gi/gf/gg/go are the pre-activation rows (without bias) of the
// gates i, f, g, o (gf unused by the paper cell), bi.. the biases, c the cell
// state row (in/out), v the output row.
template <class T>
struct GateRows {
    const T* i;
    const T* f;
    const T* g;
    const T* o;
    T bi, bf, bg, bo;
};

template <class T>
inline void activate_scalar(Cell cell, int b0, int n, const GateRows<T>& r, T* c, T* v,
                            bool first) {
    for (int b = b0; b < n; ++b) {
        const T i = sigmoid(r.i[b] + r.bi);
        const T gg = tanh_(r.g[b] + r.bg);
        const T o = sigmoid(r.o[b] + r.bo);
        T cn;
        if (cell == Cell::paper) {
            cn = first ? i * gg : c[b] + i * gg;
        } else {
            const T f = sigmoid(r.f[b] + r.bf);
            cn = first ? i * gg : f * c[b] + i * gg;
        }
        c[b] = cn;
        v[b] = o * tanh_(cn);
    }
}

template <class T>
inline void activate(Cell cell, int n, const GateRows<T>& r, T* c, T* v, bool first) {
    activate_scalar(cell, 0, n, r, c, v, first);
}

#ifdef CSCORE_LSTM_SIMD
inline void activate_sse(Cell cell, int n, const GateRows<float>& r, float* c, float* v,
                         bool first) {
    const int n4 = n - n % 4;
    const vf4 zero = bcast4(0.0f);
    for (int b = 0; b < n4; b += 4) {
        const vf4 i = sigmoid(load4(r.i + b) + r.bi);
        const vf4 gg = tanh_(load4(r.g + b) + r.bg);
        const vf4 o = sigmoid(load4(r.o + b) + r.bo);
        vf4 cn;
        if (cell == Cell::paper) {
            cn = (first ? zero : load4(c + b)) + i * gg;
        } else {
            const vf4 f = sigmoid(load4(r.f + b) + r.bf);
            cn = (first ? zero : f * load4(c + b)) + i * gg;
        }
        store4(c + b, cn);
        store4(v + b, o * tanh_(cn));
    }
    activate_scalar(cell, n4, n, r, c, v, first);
}
#endif

#if defined(CSCORE_LSTM_SIMD) && defined(__x86_64__) && !defined(__AVX2__)
// The same with 8 floats at a time, chosen at run time when cpu::active_isa() is
// avx2 or above (the default build targets baseline x86-64).  Same operations in
// the same order as the scalar and 4-wide code (no FMA contraction), hence the
// same results.
#define CSCORE_LSTM_AVX2 1
#define CSCORE_AVX2_FN __attribute__((target("avx2")))
typedef float vf8 __attribute__((vector_size(32)));
typedef std::int32_t vi8 __attribute__((vector_size(32)));

CSCORE_AVX2_FN inline vf8 load8(const float* p) {
    vf8 v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}
CSCORE_AVX2_FN inline void store8(float* p, vf8 v) { std::memcpy(p, &v, sizeof(v)); }
CSCORE_AVX2_FN inline vf8 bcast8(float s) { return vf8{s, s, s, s, s, s, s, s}; }

CSCORE_AVX2_FN inline vf8 exp_approx8(vf8 x) {
    const vf8 lo = bcast8(-87.0f), hi = bcast8(88.0f), magic = bcast8(12582912.0f);
    x = x > lo ? x : lo;  // NaN -> lo, as in the scalar version
    x = x < hi ? x : hi;
    const vf8 shifted = x * 1.44269504088896341f + magic;
    const vf8 nf = shifted - magic;
    vi8 n;
    std::memcpy(&n, &shifted, sizeof(n));
    n -= 0x4B400000;
    const vf8 r = (x - nf * 0.693359375f) + nf * 2.12194440e-4f;
    vf8 p = bcast8(1.0f / 720.0f);
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const vi8 bits = (n + 127) * (1 << 23);
    vf8 scale;
    std::memcpy(&scale, &bits, sizeof(scale));
    return p * scale;
}
CSCORE_AVX2_FN inline vf8 sigmoid8(vf8 x) { return 1.0f / (1.0f + exp_approx8(-x)); }
CSCORE_AVX2_FN inline vf8 tanh8(vf8 x) { return 2.0f / (1.0f + exp_approx8(-2.0f * x)) - 1.0f; }

CSCORE_AVX2_FN inline void activate_avx2(Cell cell, int n, const GateRows<float>& r, float* c,
                                         float* v, bool first) {
    const int n8 = n - n % 8;
    const vf8 zero = bcast8(0.0f);
    for (int b = 0; b < n8; b += 8) {
        const vf8 i = sigmoid8(load8(r.i + b) + r.bi);
        const vf8 gg = tanh8(load8(r.g + b) + r.bg);
        const vf8 o = sigmoid8(load8(r.o + b) + r.bo);
        vf8 cn;
        if (cell == Cell::paper) {
            cn = (first ? zero : load8(c + b)) + i * gg;
        } else {
            const vf8 f = sigmoid8(load8(r.f + b) + r.bf);
            cn = (first ? zero : f * load8(c + b)) + i * gg;
        }
        store8(c + b, cn);
        store8(v + b, o * tanh8(cn));
    }
    const GateRows<float> rest{r.i + n8, r.f + n8, r.g + n8, r.o + n8, r.bi, r.bf, r.bg, r.bo};
    activate_sse(cell, n - n8, rest, c + n8, v + n8, first);
}
#endif

#ifdef CSCORE_LSTM_SIMD
template <>
inline void activate<float>(Cell cell, int n, const GateRows<float>& r, float* c, float* v,
                            bool first) {
#ifdef CSCORE_LSTM_AVX2
    if (cpu::isa_at_least(cpu::Isa::avx2)) {
        activate_avx2(cell, n, r, c, v, first);
        return;
    }
#endif
    activate_sse(cell, n, r, c, v, first);
}
#endif

}  // namespace detail

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

// C (n x m) = X (n x k) * Wt (k x m) + beta C, X and C problem-fastest with leading
// dimension ldx = ldc = chunk, Wt column-major with leading dimension ldw (that is,
// a row-major (m, ldw) weight array, using its first k columns).
//
// Batch independence: every entry C[b, j] is computed by the same sequence of
// operations whatever n is and wherever problem b sits in the chunk: acc = 0
// (beta = 0) or acc = C[b, j] (beta = 1, the only other value allowed),
// then acc = acc + W[j, kk] * X[b, kk] for kk = 0..k-1 in order (one fused
// multiply-add per step when cpu::active_isa() is avx2 or above, chosen once per
// process; a multiply and an add otherwise).  The vector code runs problems in
// SIMD lanes, which are independent, so a problem decodes bit-identically alone
// or in any batch.  (A
// BLAS call does not promise that: gemv and gemm, or gemm edge kernels, sum in
// different orders.)  Lanes past n read and write padding rows: the buffers are
// padded to whole kPadRows rows (see LstmWork).

namespace detail {

template <class T>
void times_weights_generic(int n, int m, int k, const T* X, int ldx, const T* W, int ldw,
                           T* C, bool accumulate = false) {
    for (int j = 0; j < m; ++j) {
        T* c = C + static_cast<idx>(j) * ldx;
        const T* w = W + static_cast<idx>(j) * ldw;
        if (!accumulate)
            for (int b = 0; b < n; ++b) c[b] = T(0);
        for (int kk = 0; kk < k; ++kk) {
            const T wk = w[kk];
            const T* x = X + static_cast<idx>(kk) * ldx;
            for (int b = 0; b < n; ++b) c[b] = c[b] + wk * x[b];
        }
    }
}

#ifdef CSCORE_LSTM_SIMD
// The generic float path with its accumulators in registers: 4 weight rows times
// 4 problems per tile, each lane computing exactly times_weights_generic's
// c = c + w * x (a rounded multiply, then a rounded add) for kk = 0..k-1 in
// order, so the bits are the same.  Lanes past n (within the padded buffers)
// compute on padding; rows past the last multiple of 4 use the plain loop.
inline void times_weights_generic_f32(int n, int m, int k, const float* X, int ldx,
                                      const float* W, int ldw, float* C, bool accumulate) {
    const int nb = (n + 3) / 4 * 4;
    int j = 0;
    for (; j + 4 <= m; j += 4) {
        const float* w0 = W + static_cast<idx>(j) * ldw;
        const float* w1 = w0 + ldw;
        const float* w2 = w1 + ldw;
        const float* w3 = w2 + ldw;
        float* c0 = C + static_cast<idx>(j) * ldx;
        for (int b = 0; b < nb; b += 4) {
            const vf4 zero = {0.0f, 0.0f, 0.0f, 0.0f};
            vf4 a0 = accumulate ? load4(c0 + b) : zero;
            vf4 a1 = accumulate ? load4(c0 + ldx + b) : zero;
            vf4 a2 = accumulate ? load4(c0 + 2 * static_cast<idx>(ldx) + b) : zero;
            vf4 a3 = accumulate ? load4(c0 + 3 * static_cast<idx>(ldx) + b) : zero;
            for (int kk = 0; kk < k; ++kk) {
                const vf4 x = load4(X + static_cast<idx>(kk) * ldx + b);
                a0 = a0 + w0[kk] * x;
                a1 = a1 + w1[kk] * x;
                a2 = a2 + w2[kk] * x;
                a3 = a3 + w3[kk] * x;
            }
            store4(c0 + b, a0);
            store4(c0 + ldx + b, a1);
            store4(c0 + 2 * static_cast<idx>(ldx) + b, a2);
            store4(c0 + 3 * static_cast<idx>(ldx) + b, a3);
        }
    }
    if (j < m)
        times_weights_generic<float>(n, m - j, k, X, ldx, W + static_cast<idx>(j) * ldw, ldw,
                                     C + static_cast<idx>(j) * ldx, accumulate);
}
#endif

#if defined(__GNUC__) && defined(__x86_64__)
#define CSCORE_LSTM_FMA 1
#define CSCORE_FMA_FN __attribute__((target("avx2,fma")))

// J weight rows times V vectors of 8 problems (8 * V lanes starting at b0).
template <int J, int V>
CSCORE_FMA_FN inline void fma_block8(int k, const float* X, int ldx, const float* W, int ldw,
                                     float* C, int b0, int j0, bool accumulate) {
    __m256 acc[J][V];
    for (int r = 0; r < J; ++r)
        for (int v = 0; v < V; ++v)
            acc[r][v] = accumulate
                            ? _mm256_loadu_ps(C + static_cast<idx>(j0 + r) * ldx + b0 + 8 * v)
                            : _mm256_setzero_ps();
    const float* w = W + static_cast<idx>(j0) * ldw;
    for (int kk = 0; kk < k; ++kk) {
        const float* x = X + static_cast<idx>(kk) * ldx + b0;
        __m256 xv[V];
        for (int v = 0; v < V; ++v) xv[v] = _mm256_loadu_ps(x + 8 * v);
        for (int r = 0; r < J; ++r) {
            const __m256 wr = _mm256_broadcast_ss(w + static_cast<idx>(r) * ldw + kk);
            for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(wr, xv[v], acc[r][v]);
        }
    }
    for (int r = 0; r < J; ++r)
        for (int v = 0; v < V; ++v)
            _mm256_storeu_ps(C + static_cast<idx>(j0 + r) * ldx + b0 + 8 * v, acc[r][v]);
}

// The same on 4 lanes (few problems): identical per-lane arithmetic.
template <int J>
CSCORE_FMA_FN inline void fma_block4(int k, const float* X, int ldx, const float* W, int ldw,
                                     float* C, int b0, int j0, bool accumulate) {
    __m128 acc[J];
    for (int r = 0; r < J; ++r)
        acc[r] = accumulate ? _mm_loadu_ps(C + static_cast<idx>(j0 + r) * ldx + b0)
                            : _mm_setzero_ps();
    const float* w = W + static_cast<idx>(j0) * ldw;
    for (int kk = 0; kk < k; ++kk) {
        const __m128 xv = _mm_loadu_ps(X + static_cast<idx>(kk) * ldx + b0);
        for (int r = 0; r < J; ++r)
            acc[r] = _mm_fmadd_ps(_mm_broadcast_ss(w + static_cast<idx>(r) * ldw + kk), xv, acc[r]);
    }
    for (int r = 0; r < J; ++r) _mm_storeu_ps(C + static_cast<idx>(j0 + r) * ldx + b0, acc[r]);
}

template <int J>
CSCORE_FMA_FN inline void fma_rows(int n, int k, const float* X, int ldx, const float* W,
                                   int ldw, float* C, int j0, bool acc, int b = 0) {
    for (; n - b > 8; b += 16) fma_block8<J, 2>(k, X, ldx, W, ldw, C, b, j0, acc);
    for (; n - b > 4; b += 8) fma_block8<J, 1>(k, X, ldx, W, ldw, C, b, j0, acc);
    for (; n - b > 0; b += 4) fma_block4<J>(k, X, ldx, W, ldw, C, b, j0, acc);
}

// The register-blocked AVX2 kernel for batches (n > 8).  X is first copied into
// panels of 16 problems, each stored kk-major (16 consecutive floats per kk), so
// the micro-kernel streams one contiguous panel instead of k cache lines ldx
// apart; a 6 x 16 tile (6 weight rows, 16 problems) then keeps 12 accumulators in
// registers over the whole inner dimension.  Per lane the arithmetic is exactly
// fma_block8's: acc = 0 (or C), then acc = fma(W[j, kk], X[b, kk], acc) for
// kk = 0..k-1 in order, so the results are the same bits as the unpacked path and
// do not depend on the batch.  Lanes past n (up to the next multiple of 16, still
// inside the kPadRows-padded buffers) compute on padding and are never read.
//
// The 6-row tile names its 12 accumulators one by one: written as an array, GCC
// keeps them on the stack and stores all 12 every step (store-bound, about half
// the FMA rate).
CSCORE_FMA_FN inline void fma_tile6x16(int k, const float* P, const float* W, int ldw,
                                       float* C, int ldc, int j0, bool accumulate) {
    float* c0 = C + static_cast<idx>(j0) * ldc;
#define CSCORE_ACC_INIT(r, v) \
    __m256 a##r##v = accumulate ? _mm256_loadu_ps(c0 + (r) * static_cast<idx>(ldc) + 8 * (v)) \
                                : _mm256_setzero_ps();
    CSCORE_ACC_INIT(0, 0) CSCORE_ACC_INIT(0, 1) CSCORE_ACC_INIT(1, 0) CSCORE_ACC_INIT(1, 1)
    CSCORE_ACC_INIT(2, 0) CSCORE_ACC_INIT(2, 1) CSCORE_ACC_INIT(3, 0) CSCORE_ACC_INIT(3, 1)
    CSCORE_ACC_INIT(4, 0) CSCORE_ACC_INIT(4, 1) CSCORE_ACC_INIT(5, 0) CSCORE_ACC_INIT(5, 1)
#undef CSCORE_ACC_INIT
    const float* w0 = W + static_cast<idx>(j0) * ldw;
    const float* w1 = w0 + ldw;
    const float* w2 = w1 + ldw;
    const float* w3 = w2 + ldw;
    const float* w4 = w3 + ldw;
    const float* w5 = w4 + ldw;
    for (int kk = 0; kk < k; ++kk) {
        const __m256 x0 = _mm256_loadu_ps(P + 16 * static_cast<idx>(kk));
        const __m256 x1 = _mm256_loadu_ps(P + 16 * static_cast<idx>(kk) + 8);
#define CSCORE_ACC_STEP(r)                               \
    {                                                    \
        const __m256 wr = _mm256_broadcast_ss(w##r + kk); \
        a##r##0 = _mm256_fmadd_ps(wr, x0, a##r##0);      \
        a##r##1 = _mm256_fmadd_ps(wr, x1, a##r##1);      \
    }
        CSCORE_ACC_STEP(0) CSCORE_ACC_STEP(1) CSCORE_ACC_STEP(2)
        CSCORE_ACC_STEP(3) CSCORE_ACC_STEP(4) CSCORE_ACC_STEP(5)
#undef CSCORE_ACC_STEP
    }
#define CSCORE_ACC_STORE(r, v) \
    _mm256_storeu_ps(c0 + (r) * static_cast<idx>(ldc) + 8 * (v), a##r##v);
    CSCORE_ACC_STORE(0, 0) CSCORE_ACC_STORE(0, 1) CSCORE_ACC_STORE(1, 0) CSCORE_ACC_STORE(1, 1)
    CSCORE_ACC_STORE(2, 0) CSCORE_ACC_STORE(2, 1) CSCORE_ACC_STORE(3, 0) CSCORE_ACC_STORE(3, 1)
    CSCORE_ACC_STORE(4, 0) CSCORE_ACC_STORE(4, 1) CSCORE_ACC_STORE(5, 0) CSCORE_ACC_STORE(5, 1)
#undef CSCORE_ACC_STORE
}

template <int J>
CSCORE_FMA_FN inline void fma_panel16(int k, const float* P, const float* W, int ldw,
                                      float* C, int ldc, int j0, bool accumulate) {
    __m256 acc[J][2];
    for (int r = 0; r < J; ++r)
        for (int v = 0; v < 2; ++v)
            acc[r][v] = accumulate
                            ? _mm256_loadu_ps(C + static_cast<idx>(j0 + r) * ldc + 8 * v)
                            : _mm256_setzero_ps();
    const float* w = W + static_cast<idx>(j0) * ldw;
    for (int kk = 0; kk < k; ++kk) {
        const __m256 x0 = _mm256_loadu_ps(P + 16 * static_cast<idx>(kk));
        const __m256 x1 = _mm256_loadu_ps(P + 16 * static_cast<idx>(kk) + 8);
        for (int r = 0; r < J; ++r) {
            const __m256 wr = _mm256_broadcast_ss(w + static_cast<idx>(r) * ldw + kk);
            acc[r][0] = _mm256_fmadd_ps(wr, x0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(wr, x1, acc[r][1]);
        }
    }
    for (int r = 0; r < J; ++r)
        for (int v = 0; v < 2; ++v)
            _mm256_storeu_ps(C + static_cast<idx>(j0 + r) * ldc + 8 * v, acc[r][v]);
}

CSCORE_FMA_FN inline void times_weights_packed(int n, int m, int k, const float* X, int ldx,
                                               const float* W, int ldw, float* C,
                                               bool accumulate) {
    thread_local std::vector<float> panel;  // grows once per thread, no per-call allocation
    const int nb = (n + 15) / 16;
    const std::size_t need = static_cast<std::size_t>(nb) * 16 * static_cast<std::size_t>(k);
    if (panel.size() < need) panel.resize(need);
    for (int bb = 0; bb < nb; ++bb) {
        float* dst = panel.data() + static_cast<idx>(bb) * 16 * k;
        const float* src = X + 16 * bb;
        for (int kk = 0; kk < k; ++kk) {
            const float* s = src + static_cast<idx>(kk) * ldx;
            _mm256_storeu_ps(dst + 16 * static_cast<idx>(kk), _mm256_loadu_ps(s));
            _mm256_storeu_ps(dst + 16 * static_cast<idx>(kk) + 8, _mm256_loadu_ps(s + 8));
        }
    }
    int j = 0;
    for (; j + 6 <= m; j += 6)
        for (int bb = 0; bb < nb; ++bb)
            fma_tile6x16(k, panel.data() + static_cast<idx>(bb) * 16 * k, W, ldw, C + 16 * bb,
                           ldx, j, accumulate);
    for (; j < m; ++j)
        for (int bb = 0; bb < nb; ++bb)
            fma_panel16<1>(k, panel.data() + static_cast<idx>(bb) * 16 * k, W, ldw, C + 16 * bb,
                           ldx, j, accumulate);
}

// accumulate: C += X W^T (each lane starts from its own C entry), else C = X W^T.
CSCORE_FMA_FN inline void times_weights_fma(int n, int m, int k, const float* X, int ldx,
                                            const float* W, int ldw, float* C,
                                            bool accumulate) {
    int j = 0;
    if (n > 4) {
        for (; j + 6 <= m; j += 6) fma_rows<6>(n, k, X, ldx, W, ldw, C, j, accumulate);
    } else {
        for (; j + 8 <= m; j += 8) fma_rows<8>(n, k, X, ldx, W, ldw, C, j, accumulate);
    }
    for (; j < m; ++j) fma_rows<1>(n, k, X, ldx, W, ldw, C, j, accumulate);
}

// AVX-512 (when cpu::active_isa() is avx512): the same per-lane arithmetic (one
// single-precision FMA per step, in the same order) on 16 lanes, so results equal
// the AVX2 path's bit for bit.
#define CSCORE_AVX512_FN __attribute__((target("avx512f,avx2,fma")))

template <int J, int V>
CSCORE_AVX512_FN inline void fma_block16(int k, const float* X, int ldx, const float* W,
                                         int ldw, float* C, int b0, int j0, bool accumulate) {
    __m512 acc[J][V];
    for (int r = 0; r < J; ++r)
        for (int v = 0; v < V; ++v)
            acc[r][v] = accumulate
                            ? _mm512_loadu_ps(C + static_cast<idx>(j0 + r) * ldx + b0 + 16 * v)
                            : _mm512_setzero_ps();
    const float* w = W + static_cast<idx>(j0) * ldw;
    for (int kk = 0; kk < k; ++kk) {
        const float* x = X + static_cast<idx>(kk) * ldx + b0;
        __m512 xv[V];
        for (int v = 0; v < V; ++v) xv[v] = _mm512_loadu_ps(x + 16 * v);
        for (int r = 0; r < J; ++r) {
            const __m512 wr = _mm512_set1_ps(w[static_cast<idx>(r) * ldw + kk]);
            for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(wr, xv[v], acc[r][v]);
        }
    }
    for (int r = 0; r < J; ++r)
        for (int v = 0; v < V; ++v)
            _mm512_storeu_ps(C + static_cast<idx>(j0 + r) * ldx + b0 + 16 * v, acc[r][v]);
}

template <int J>
CSCORE_AVX512_FN inline void fma512_rows(int n, int k, const float* X, int ldx,
                                         const float* W, int ldw, float* C, int j0,
                                         bool acc) {
    int b = 0;
    for (; n - b > 16; b += 32) fma_block16<J, 2>(k, X, ldx, W, ldw, C, b, j0, acc);
    for (; n - b > 8; b += 16) fma_block16<J, 1>(k, X, ldx, W, ldw, C, b, j0, acc);
    if (n - b > 0) fma_rows<J>(n, k, X, ldx, W, ldw, C, j0, acc, b);
}

CSCORE_AVX512_FN inline void times_weights_avx512(int n, int m, int k, const float* X,
                                                  int ldx, const float* W, int ldw, float* C,
                                                  bool accumulate) {
    int j = 0;
    for (; j + 8 <= m; j += 8) fma512_rows<8>(n, k, X, ldx, W, ldw, C, j, accumulate);
    for (; j < m; ++j) fma512_rows<1>(n, k, X, ldx, W, ldw, C, j, accumulate);
}
#endif

}  // namespace detail

template <class T>
void times_weights(int n, int m, int k, const T* X, int chunk, const T* Wt, int ldw, T* C,
                   T beta = T(0)) {
    detail::times_weights_generic<T>(n, m, k, X, chunk, Wt, ldw, C, beta != T(0));
}

template <>
inline void times_weights<float>(int n, int m, int k, const float* X, int chunk,
                                 const float* Wt, int ldw, float* C, float beta) {
    const bool acc = beta != 0.0f;
#ifdef CSCORE_LSTM_FMA
    const cpu::Isa isa = cpu::active_isa();
    if (n > 8 && isa >= cpu::Isa::avx512) {
        detail::times_weights_avx512(n, m, k, X, chunk, Wt, ldw, C, acc);
        return;
    }
    if (isa >= cpu::Isa::avx2 && n > 8 && padded_chunk(n) <= chunk) {
        detail::times_weights_packed(n, m, k, X, chunk, Wt, ldw, C, acc);
        return;
    }
    if (isa >= cpu::Isa::avx2) {
        detail::times_weights_fma(n, m, k, X, chunk, Wt, ldw, C, acc);
        return;
    }
#endif
#ifdef CSCORE_LSTM_SIMD
    if (padded_chunk(n) <= chunk) {
        detail::times_weights_generic_f32(n, m, k, X, chunk, Wt, ldw, C, acc);
        return;
    }
#endif
    detail::times_weights_generic<float>(n, m, k, X, chunk, Wt, ldw, C, acc);
}

// ---------------------------------------------------------------------------
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
// operations of activate_scalar / activate_sse / activate_avx2, in their order.
constexpr int kPanel = 64;     // output rows per panel of WRp / Up
constexpr int kPanelStep = 16; // rows are padded to a multiple of this (the last panel's width)
constexpr int kSmallMax = 4;   // problems per call up to which the few-problems path runs

// m rounded up to whole kPanelStep (the rows of a panel layout).
inline int panel_rows(int m) { return (m + kPanelStep - 1) / kPanelStep * kPanelStep; }

namespace detail {

#ifdef CSCORE_LSTM_FMA
#define CSCORE_F16C_FN __attribute__((target("avx2,fma,f16c")))

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

#ifdef CSCORE_LSTM_SIMD
// The generic path's chain (acc = acc + w * x: a rounded multiply, then a rounded
// add) on 4 rows at a time; otherwise as panel_fma.
template <int V>
inline void panel_mul_add(int k, const float* Wp, int ldp, const float* X, float* C,
                          bool accumulate) {
    vf4 acc[V];
    for (int v = 0; v < V; ++v) acc[v] = accumulate ? load4(C + 4 * v) : bcast4(0.0f);
    for (int kk = 0; kk < k; ++kk) {
        const float* wr = Wp + static_cast<idx>(kk) * ldp;
        const float x = X[kk];
        for (int v = 0; v < V; ++v) acc[v] = acc[v] + load4(wr + 4 * v) * x;
    }
    for (int v = 0; v < V; ++v) store4(C + 4 * v, acc[v]);
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
#ifdef CSCORE_LSTM_SIMD
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
#ifdef CSCORE_LSTM_SIMD
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

// One problem's cell update over cells h0..H-1: g holds the G*H gate
// pre-activations (gate-major, without bias), b the biases, c and v the cell
// state and output (H each).  Per cell, activate_scalar's operations.
inline void activate_cells_scalar(Cell cell, int h0, int H, const float* g, const float* b,
                                  float* c, float* v, bool first) {
    const bool paper = cell == Cell::paper;
    const int gi = 0, gf = paper ? 0 : 1, gg = paper ? 1 : 2, go = paper ? 2 : 3;
    for (int h = h0; h < H; ++h) {
        const GateRows<float> r{g + gi * H + h, g + gf * H + h, g + gg * H + h, g + go * H + h,
                                b[gi * H + h],  b[gf * H + h],  b[gg * H + h],  b[go * H + h]};
        activate_scalar(cell, 0, 1, r, c + h, v + h, first);
    }
}

#ifdef CSCORE_LSTM_SIMD
// The same, 4 cells at a time (activate_sse's operations).
inline void activate_cells_sse(Cell cell, int h0, int H, const float* g, const float* b,
                               float* c, float* v, bool first) {
    const bool paper = cell == Cell::paper;
    const int gi = 0, gf = paper ? 0 : 1, gg = paper ? 1 : 2, go = paper ? 2 : 3;
    const vf4 zero = bcast4(0.0f);
    int h = h0;
    for (; h + 4 <= H; h += 4) {
        const vf4 i = sigmoid(load4(g + gi * H + h) + load4(b + gi * H + h));
        const vf4 gv = tanh_(load4(g + gg * H + h) + load4(b + gg * H + h));
        const vf4 o = sigmoid(load4(g + go * H + h) + load4(b + go * H + h));
        vf4 cn;
        if (paper) {
            cn = (first ? zero : load4(c + h)) + i * gv;
        } else {
            const vf4 f = sigmoid(load4(g + gf * H + h) + load4(b + gf * H + h));
            cn = (first ? zero : f * load4(c + h)) + i * gv;
        }
        store4(c + h, cn);
        store4(v + h, o * tanh_(cn));
    }
    activate_cells_scalar(cell, h, H, g, b, c, v, first);
}
#endif

#ifdef CSCORE_LSTM_AVX2
// 8 cells at a time (activate_avx2's operations).
CSCORE_AVX2_FN inline void activate_cells_avx2(Cell cell, int H, const float* g, const float* b,
                                               float* c, float* v, bool first) {
    const bool paper = cell == Cell::paper;
    const int gi = 0, gf = paper ? 0 : 1, gg = paper ? 1 : 2, go = paper ? 2 : 3;
    const vf8 zero = bcast8(0.0f);
    int h = 0;
    for (; h + 8 <= H; h += 8) {
        const vf8 i = sigmoid8(load8(g + gi * H + h) + load8(b + gi * H + h));
        const vf8 gv = tanh8(load8(g + gg * H + h) + load8(b + gg * H + h));
        const vf8 o = sigmoid8(load8(g + go * H + h) + load8(b + go * H + h));
        vf8 cn;
        if (paper) {
            cn = (first ? zero : load8(c + h)) + i * gv;
        } else {
            const vf8 f = sigmoid8(load8(g + gf * H + h) + load8(b + gf * H + h));
            cn = (first ? zero : f * load8(c + h)) + i * gv;
        }
        store8(c + h, cn);
        store8(v + h, o * tanh8(cn));
    }
    activate_cells_sse(cell, h, H, g, b, c, v, first);
}
#endif

inline void activate_cells(Cell cell, int H, const float* g, const float* b, float* c, float* v,
                           bool first) {
#ifdef CSCORE_LSTM_AVX2
    if (cpu::isa_at_least(cpu::Isa::avx2)) {
        activate_cells_avx2(cell, H, g, b, c, v, first);
        return;
    }
#endif
#ifdef CSCORE_LSTM_SIMD
    activate_cells_sse(cell, 0, H, g, b, c, v, first);
#else
    activate_cells_scalar(cell, 0, H, g, b, c, v, first);
#endif
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

// ---------------------------------------------------------------------------
// Decoding.

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
struct ChannelLS {
    int k = 0;
    bool stopped = false;
    std::vector<double> r;      // residual (M)
    std::vector<double> Q;      // M x k_max, orthonormal columns
    std::vector<double> Rt;     // k_max x k_max upper triangle, column-major
    std::vector<double> z;      // Q^T y
    std::vector<std::int64_t> atoms;
    std::vector<unsigned char> chosen;  // N flags

    void reset(const double* y, idx M, int N, int k_max) {
        k = 0;
        stopped = false;
        r.assign(y, y + M);
        Q.assign(static_cast<std::size_t>(M) * static_cast<std::size_t>(k_max), 0.0);
        Rt.assign(static_cast<std::size_t>(k_max) * static_cast<std::size_t>(k_max), 0.0);
        z.assign(static_cast<std::size_t>(k_max), 0.0);
        atoms.assign(static_cast<std::size_t>(k_max), -1);
        chosen.assign(static_cast<std::size_t>(N), 0);
    }

    // Appends atom `a` (column a_col of A, norm a_norm); false if dependent.
    bool append(std::int64_t a, const double* a_col, double a_norm, idx M, int k_max) {
        double* q = Q.data() + static_cast<idx>(k) * M;
        double* rc = Rt.data() + static_cast<idx>(k) * k_max;
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
            std::fill(q, q + M, 0.0);
            std::fill(rc, rc + k, 0.0);
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
        z[static_cast<std::size_t>(k)] = zk;
        atoms[static_cast<std::size_t>(k)] = a;
        chosen[static_cast<std::size_t>(a)] = 1;
        ++k;
        return true;
    }

    // Coefficients on the support (R c = z), written into S column (stride L).
    void coefficients(double* s_col, idx stride, int k_max) const {
        std::vector<double> c(static_cast<std::size_t>(k));
        for (int i = k - 1; i >= 0; --i) {
            double acc = z[static_cast<std::size_t>(i)];
            for (int t = i + 1; t < k; ++t)
                acc -= Rt[static_cast<std::size_t>(static_cast<idx>(t) * k_max + i)] *
                       c[static_cast<std::size_t>(t)];
            c[static_cast<std::size_t>(i)] =
                acc / Rt[static_cast<std::size_t>(static_cast<idx>(i) * k_max + i)];
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
                    ls[static_cast<std::size_t>(q * L + j)].reset(ybuf.data(), M, N, k_max);
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
                            !c.append(best, At + static_cast<idx>(best) * M,
                                      col_norms[best], M, k_max)) {
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
                    c.coefficients(out.S + p * N * L + j, L, k_max);
                    out.resid[p * L + j] = c.residual_norm();
                    std::copy(c.atoms.begin(), c.atoms.end(),
                              out.atoms + (p * L + j) * k_max);
                    if (rrt) {  // the norm at the path's end, repeated past it
                        double* pn = out.path_norms + (p * L + j) * kp1;
                        std::fill(pn + out.n_iter[p], pn + kp1, out.resid[p * L + j]);
                    }
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
