// Gram columns formed ahead for one problem (GramMode::on_demand): when the
// selected atom's column is not at hand, the pass over the atoms that forms it
// also forms the columns of the next best candidates, those with the largest
// current scores (sum over channels of |alpha_j|^2) among the atoms not yet
// selected.  The next atoms of OMP are mostly among them (measured at 512 x 2048
// to 2048 x 16384: the atom of the next step is among the top 3 of this step's
// scores 86-99 % of the time), so about one pass in four remains.  A pass over
// a dictionary that does not fit in the core's cache runs at the memory's
// bandwidth, so forming four columns in one pass costs little more than one.
//
// Results do not change: each column is formed by Dictionary::gram_columns with
// the bits of gram_block, whichever pass forms it; only when it is formed
// changes.  The slots are per problem (Workspace); reset() empties them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cscore/greedy_dictionary.hpp"
#include "cscore/greedy_scalar.hpp"

namespace cscore::greedy {

template <class T>
struct ColumnsAhead {
    using R = Real<T>;
    static constexpr int kSlots = 8;   // columns kept (the one asked for and those ahead)
    static constexpr int kAhead = 3;   // candidates formed with each missing column
    // Below this many dictionary bytes the atoms stay in the core's cache and a
    // pass costs its arithmetic: forming columns ahead would only add work.
    static constexpr std::size_t kMinBytes = std::size_t{1} << 21;

    bool enabled = false;
    std::ptrdiff_t N = 0;
    LineVector<T> cols;  // kSlots x N, allocated on first use
    std::ptrdiff_t atom[kSlots];
    std::uint64_t stamp[kSlots];
    std::uint64_t clock = 0;

    ColumnsAhead() { reset(); }

    void configure(const Dictionary<T>& D) {
        N = D.N;
        enabled = D.mode == GramMode::on_demand &&
                  static_cast<std::size_t>(D.M) * static_cast<std::size_t>(D.N) * sizeof(T) >= kMinBytes;
    }

    void reset() {
        for (int s = 0; s < kSlots; ++s) atom[s] = -1, stamp[s] = 0;
    }

    int slot_of(std::ptrdiff_t k) const {
        for (int s = 0; s < kSlots; ++s)
            if (atom[s] == k) return s;
        return -1;
    }

    // A free slot, else the one filled longest ago (never one in `keep`).
    int take_slot(const int* keep, int n_keep) {
        int best = -1;
        for (int s = 0; s < kSlots; ++s) {
            if (std::find(keep, keep + n_keep, s) != keep + n_keep) continue;
            if (atom[s] < 0) return s;
            if (best < 0 || stamp[s] < stamp[best]) best = s;
        }
        return best;
    }

    // Column k of G for a problem whose current correlations are alpha (L x N,
    // channel-major) and whose support is marked in selected.  The pointer is
    // valid until the next call.
    CSCORE_NOINLINE const T* column(const Dictionary<T>& D, std::ptrdiff_t k, const T* alpha, std::ptrdiff_t L,
                    const unsigned char* selected) {
        if (cols.empty()) cols.resize(static_cast<std::size_t>(kSlots * N));
        int s = slot_of(k);
        if (s >= 0) {
            atom[s] = -1;  // used once: a selected atom's column is not asked for again
            return cols.data() + s * N;
        }
        // The missing column and the best kAhead candidates not at hand.
        std::ptrdiff_t cand[kAhead];
        R cs[kAhead];
        int nc = 0;
        for (std::ptrdiff_t j = 0; j < N; ++j) {
            if (j == k || selected[j]) continue;
            R sc = R(0);
            for (std::ptrdiff_t c = 0; c < L; ++c) sc += Scalar<T>::abs2(alpha[c * N + j]);
            if (nc == kAhead && !(sc > cs[kAhead - 1])) continue;
            if (slot_of(j) >= 0) continue;
            int pos = nc < kAhead ? nc++ : kAhead - 1;
            while (pos > 0 && sc > cs[pos - 1]) {
                cand[pos] = cand[pos - 1], cs[pos] = cs[pos - 1];
                --pos;
            }
            cand[pos] = j, cs[pos] = sc;
        }
        std::ptrdiff_t ks[kAhead + 1];
        T* outs[kAhead + 1];
        int used[kAhead + 1];
        ks[0] = k;
        for (int i = 0; i < nc; ++i) ks[i + 1] = cand[i];
        const int nk = nc + 1;
        for (int i = 0; i < nk; ++i) {
            used[i] = take_slot(used, i);
            atom[used[i]] = ks[i];
            stamp[used[i]] = ++clock;
            outs[i] = cols.data() + used[i] * N;
        }
        D.gram_columns(ks, nk, outs);
        atom[used[0]] = -1;
        return outs[0];
    }
};

}  // namespace cscore::greedy
