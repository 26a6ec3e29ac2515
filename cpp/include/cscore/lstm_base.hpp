// LSTM-CS: the weights and their layouts, the batch geometry every kernel
// shares (chunks of problems, padding, panels), and the instruction-set switches
// of the kernels (lstm_times.hpp, lstm_small.hpp, lstm_activation.hpp).
//
// Weight layout (row-major, as the numpy arrays of cscore.lstm_cs.model):
//   WR    (G*H, M+H)  = [W | R], gates stacked i,g,o ("paper") or i,f,g,o ("lstm")
//   b     (G*H)
//   U     (N, H)
//   c_out (N)
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cscore/simd_math.hpp"

// Kernels compiled for instruction sets above the build's baseline, chosen at run
// time by cpu::active_isa().  CSCORE_LSTM_AVX2: 8- and 16-lane float vectors
// (the cell update), only when the build itself does not target AVX2; the
// AVX-512 copy has contraction off (AVX-512 has FMA), so both keep the rounded
// multiply and add of the scalar code.  CSCORE_LSTM_FMA: the FMA products (avx2
// and avx512).
#if defined(CSCORE_SIMD) && defined(__x86_64__) && !defined(__AVX2__)
#define CSCORE_LSTM_AVX2 1
#define CSCORE_AVX2_FN __attribute__((target("avx2")))
#define CSCORE_AVX512_ELEM_FN __attribute__((target("avx512f,avx2"), optimize("fp-contract=off")))
#endif
#if defined(__GNUC__) && defined(__x86_64__)
#define CSCORE_LSTM_FMA 1
#define CSCORE_FMA_FN __attribute__((target("avx2,fma")))
#define CSCORE_AVX512_FN __attribute__((target("avx512f,avx2,fma")))
#define CSCORE_F16C_FN __attribute__((target("avx2,fma,f16c")))
#endif

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

// The panel layout of the few-problems path (Weights::WRp / Up, lstm_small.hpp).
constexpr int kPanel = 64;     // output rows per panel of WRp / Up
constexpr int kPanelStep = 16; // rows are padded to a multiple of this (the last panel's width)
constexpr int kSmallMax = 4;   // problems per call up to which the few-problems path runs

// m rounded up to whole kPanelStep (the rows of a panel layout).
inline int panel_rows(int m) { return (m + kPanelStep - 1) / kPanelStep * kPanelStep; }

}  // namespace cscore::lstm
