// What one greedy decode call is asked and where it writes (greedy.hpp): Options
// (the stopping rules, tol="auto"'s tables, a forced path), Outputs (caller
// memory per problem), and each worker's Workspace -- the chunk's measurements
// and correlations, the growing support's Q, z, gamma and Cholesky factor
// (linalg::GrowingCholesky for real data, ComplexCholesky for complex).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cscore/greedy_ahead.hpp"
#include "cscore/greedy_complex.hpp"
#include "cscore/greedy_dictionary.hpp"
#include "cscore/greedy_scalar.hpp"
#include "cscore/linalg.hpp"
#include "cscore/path_end.hpp"

namespace cscore::greedy {

struct Options {
    std::ptrdiff_t max_atoms = 1;  // hard cap on the support size (<= min(M, N))
    bool cap_is_n_nonzero = true;  // report reaching the cap as "n_nonzero" (else "exhausted")
    double tol = -1.0;             // stop when the residual measure <= tol; < 0: unused
    std::ptrdiff_t gram_limit = std::ptrdiff_t{1} << 25;  // store G up to this many entries
    // tol="auto" (see auto_cut): set auto_gamma2 to run it.  The path runs up to
    // max_atoms steps; at most auto_cap atoms are kept.  Per step k = 1..max_atoms (index
    // k - 1): auto_gamma2 the squared residual-ratio threshold, auto_a the first
    // parameter of the ratio's Beta law, (M - k) L / 2, auto_lnbeta ln B(a_k, b)
    // and auto_logu the log of the union bound's factor; auto_b is b = L / 2.
    const double* auto_gamma2 = nullptr;
    const double* auto_a = nullptr;
    const double* auto_lnbeta = nullptr;
    const double* auto_logu = nullptr;
    double auto_b = 0.5;
    std::ptrdiff_t auto_cap = 1;
    // The test that the measurements hold any signal, run when no step passes the
    // residual-ratio test (rows of stopping.signal_tables, each max_atoms long:
    // b, ln B(a_k, b), the block test's log factor; a1, ln B(a1, 1/2), the channel
    // test's log factor).  nullptr: the fallback step is always taken.
    const double* auto_signal = nullptr;
    // Optional end of the auto path before max_atoms (path_end.hpp): used when
    // auto_end.reset2 is set (with auto_end.gamma2 = auto_gamma2).
    PathEndRule auto_end;
    // A given path instead of the greedy choice: problem p adds the atoms
    // forced[p * forced_ld + i], i = 0, 1, ... (until -1 or max_atoms); the fit
    // and residuals are those of that path (used to fit another decoder's path).
    const std::int64_t* forced = nullptr;
    std::ptrdiff_t forced_ld = 0;
};

// Per-problem outputs (caller memory); norms and energies are of T's real type.
template <class T>
struct Outputs {
    View3<T> X;                 // (P, N, L) coefficients, fully written
    Real<T>* residual = nullptr;  // (P, L) final residual l2 norm per channel
    std::int64_t* n_iter = nullptr;    // (P,)
    std::int8_t* stop = nullptr;       // (P,) StopReason code
    std::uint8_t* warn = nullptr;      // (P,) 1: stopped "dependent" with a residual left
    std::int64_t* atoms = nullptr;     // (P, max_atoms) selection order, -1 padded
    Real<T>* sigma = nullptr;          // (P,) tol="auto": estimated noise level
    Real<T>* tol = nullptr;            // (P,) tol="auto": the threshold used
    std::int64_t* n_signal = nullptr;  // (P,) tol="auto": steps judged to add signal
    Real<T>* path_energy = nullptr;    // (P, max_atoms + 1, L) optional: squared residual
                                       // norm after each step (the last one repeated)
};

// Problems are handed to the workers in chunks of this many (see decode()).
constexpr std::ptrdiff_t kChunk = 32;

// Per-thread scratch space.  The arrays sized by the support (Q, z, gamma, w,
// atoms, the factors) start at room for min(K, kStartAtoms) atoms and grow (room
// doubled, at most K) as atoms are added (ensure), so a decode stopped by tol
// after n atoms holds memory for about n atoms, not K = min(M, N).  Growing
// moves values only: no result depends on it.
constexpr std::ptrdiff_t kStartAtoms = 64;

// The Cholesky factor of the support's Gram matrix for scalar type T.
template <class T>
using Factor = std::conditional_t<kIsComplex<T>, ComplexCholesky<Real<T>>, linalg::GrowingCholesky<T>>;

template <class T>
struct Workspace {
    using R = Real<T>;
    std::ptrdiff_t M, N, L, K;
    LineVector<T> ychunk;  // kChunk x (L x M): the chunk's measurements, channel-major per problem
    LineVector<T> achunk;  // kChunk x (L x N): the chunk's correlations, channel-major per problem
    std::vector<int> scale_exp;  // kChunk: power-of-two scale applied to each problem
    T* y = nullptr;         // L x M  measurements of the current problem (in ychunk)
    T* alpha = nullptr;     // L x N  its current correlations (in achunk)
    LineVector<R> score;   // N  sum over channels of |alpha[j, c]|^2
    LineVector<T> Q;       // N x cap, column-major
    LineVector<T> z;       // cap x L
    LineVector<T> gamma;   // cap x L
    LineVector<T> w;       // cap  new row of the Cholesky factor
    LineVector<T> gcol;    // N  a Gram column computed on demand
    ColumnsAhead<T> ahead;  // on demand, large A: columns formed ahead (greedy_ahead.hpp)
    LineVector<T> r;       // M
    std::vector<R> yy;      // L  ||y_c||^2
    std::vector<R> energy;  // L  residual energy estimates
    std::vector<R> res;     // L  explicit residual norms
    std::vector<R> epath;   // (n + 1) x L  tol="auto": residual energy after each step
    std::vector<std::int64_t> atoms;  // cap
    std::vector<unsigned char> selected;  // N
    Factor<T> chol;
    // Plain OMP finishes its problems two at a time (decode_chunk, finish_pair):
    // the first one's factor, coefficients and atoms wait here (swapped, not copied).
    Factor<T> chol_b;
    LineVector<T> z_b, gamma_b, r_b;
    std::vector<std::int64_t> atoms_b;

    Workspace(std::ptrdiff_t m, std::ptrdiff_t n, std::ptrdiff_t l, std::ptrdiff_t k)
        : M(m), N(n), L(l), K(k), ychunk(sz(kChunk * l * m)), achunk(sz(kChunk * l * n)),
          scale_exp(static_cast<std::size_t>(kChunk)), score(sz(n)), Q(sz(n * start(k))),
          z(sz(start(k) * l)), gamma(sz(start(k) * l)), w(sz(start(k))), gcol(sz(n)), r(sz(m)),
          yy(sz(l)), energy(sz(l)), res(sz(l)), epath(sz((start(k) + 1) * l)), atoms(sz(start(k))),
          selected(sz(n)), chol(start(k)), chol_b(start(k)), z_b(sz(start(k) * l)),
          gamma_b(sz(start(k) * l)), r_b(sz(m)), atoms_b(sz(start(k))) {}

    static std::size_t sz(std::ptrdiff_t v) { return static_cast<std::size_t>(std::max<std::ptrdiff_t>(v, 1)); }
    static std::ptrdiff_t start(std::ptrdiff_t k) { return std::min(k, kStartAtoms); }

    // Room for n + 1 atoms in the arrays the next step writes (Q, z, w, atoms, chol).
    // The test runs every step (inlined there); the growth (grow) rarely.
    CSCORE_FORCE_INLINE void ensure(std::ptrdiff_t n) {
        if (n < chol.capacity() && static_cast<std::size_t>(n) < atoms.size() &&
            static_cast<std::size_t>((n + 1) * L) <= z.size() &&
            static_cast<std::size_t>((n + 1) * L) <= gamma.size() && static_cast<std::size_t>(n) < w.size() &&
            static_cast<std::size_t>((n + 1) * N) <= Q.size())
            return;
        grow(n);
    }

    // Room doubled (at least kStartAtoms, at most K) past n + 1 atoms.
    void grow(std::ptrdiff_t n) {
        const std::ptrdiff_t cap = std::min(K, std::max<std::ptrdiff_t>(2 * (n + 1), kStartAtoms));
        const auto room = [](auto& v, std::ptrdiff_t size) {
            if (v.size() < static_cast<std::size_t>(size)) v.resize(static_cast<std::size_t>(size));
        };
        room(Q, N * cap);
        room(z, cap * L);
        room(gamma, cap * L);
        room(w, cap);
        room(atoms, cap);
        chol.reserve(cap);
    }
};

}  // namespace cscore::greedy
