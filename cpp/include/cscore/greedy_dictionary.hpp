// The dictionary side of the greedy decoders (greedy.hpp): storage aligned to
// cache lines (LineVector), the strided views over caller memory (View3), and
// Dictionary -- the normalized atoms An = A D^{-1} (and their transpose At), the
// norms 1 / ||a_j||, and the Gram matrix G = An^H An stored once, cached column
// by column or formed per step (GramMode), every way with the same bits.  Real
// or complex A (greedy_scalar.hpp); complex Gram entries come from
// greedy_complex.hpp, real double ones from gram_block_avx (greedy_avx2.hpp)
// where the CPU has AVX2.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "cscore/cpu.hpp"
#include "cscore/greedy_avx2.hpp"
#include "cscore/greedy_complex.hpp"
#include "cscore/greedy_gram_tiles.hpp"
#include "cscore/greedy_prepare.hpp"
#include "cscore/greedy_scalar.hpp"
#include "cscore/linalg.hpp"
#include "cscore/parallel.hpp"

namespace cscore::greedy {


// Storage aligned to 64 bytes (a cache line).  The kernels load 32-byte vectors
// from the dictionary, its Gram columns and the per-problem arrays; with the
// default allocator (16-byte alignment) every other such load would straddle two
// cache lines, which costs a second load.  Placement only: no result changes.
template <class T>
struct LineAllocator {
    using value_type = T;
    static constexpr std::align_val_t kAlign{64};
    LineAllocator() = default;
    template <class U>
    LineAllocator(const LineAllocator<U>&) noexcept {}  // NOLINT: rebinding
    // Blocks of 4 MiB and more (a large dictionary, its Gram matrix) are aligned
    // to 2 MiB and offered transparent huge pages where Linux has them: 512 times
    // fewer page faults on first touch and TLB misses in the passes over them.
    static constexpr std::size_t kHuge = std::size_t{1} << 21;
    static bool huge(std::size_t bytes) { return bytes >= 2 * kHuge; }
    T* allocate(std::size_t n) {
        const std::size_t bytes = n * sizeof(T);
        if (!huge(bytes)) return static_cast<T*>(::operator new(bytes, kAlign));
        const std::size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
        void* p = ::operator new(rounded, std::align_val_t{kHuge});
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        (void)::madvise(p, rounded, MADV_HUGEPAGE);
#endif
        return static_cast<T*>(p);
    }
    void deallocate(T* p, std::size_t n) noexcept {
        if (huge(n * sizeof(T)))
            ::operator delete(p, std::align_val_t{kHuge});
        else
            ::operator delete(p, kAlign);
    }
    template <class U>
    bool operator==(const LineAllocator<U>&) const noexcept { return true; }
    template <class U>
    bool operator!=(const LineAllocator<U>&) const noexcept { return false; }
};
template <class T>
using LineVector = std::vector<T, LineAllocator<T>>;

// n values on LineAllocator's storage, left uninitialized: for the dictionary's
// copies and its Gram matrix, whose every entry is written before it is read
// (a std::vector would first zero them all, a pass over memory for nothing).
template <class T>
class LineBuffer {
    static_assert(std::is_trivially_copyable_v<T>, "LineBuffer holds plain values");

  public:
    LineBuffer() = default;
    explicit LineBuffer(std::size_t n) : n_(n), p_(n != 0 ? LineAllocator<T>().allocate(n) : nullptr) {}
    LineBuffer(const LineBuffer&) = delete;
    LineBuffer& operator=(const LineBuffer&) = delete;
    LineBuffer(LineBuffer&& o) noexcept : n_(o.n_), p_(o.p_) { o.n_ = 0, o.p_ = nullptr; }
    LineBuffer& operator=(LineBuffer&& o) noexcept {
        if (this != &o) {
            this->~LineBuffer();
            n_ = o.n_, p_ = o.p_;
            o.n_ = 0, o.p_ = nullptr;
        }
        return *this;
    }
    ~LineBuffer() {
        if (p_ != nullptr) LineAllocator<T>().deallocate(p_, n_);
    }
    T* data() noexcept { return p_; }
    const T* data() const noexcept { return p_; }
    std::size_t size() const noexcept { return n_; }
    bool empty() const noexcept { return n_ == 0; }
    T& operator[](std::size_t i) noexcept { return p_[i]; }
    const T& operator[](std::size_t i) const noexcept { return p_[i]; }

  private:
    std::size_t n_ = 0;
    T* p_ = nullptr;
};

// A strided 3-D view (problem, row, channel) over caller memory, strides in elements.
template <class T>
struct View3 {
    T* data = nullptr;
    std::ptrdiff_t s0 = 0, s1 = 0, s2 = 0;
    T& operator()(std::ptrdiff_t p, std::ptrdiff_t i, std::ptrdiff_t c) const {
        return data[p * s0 + i * s1 + c * s2];
    }
};

// Entries out[i] = dot(At_{i0 + i}, ak), i < count, of a Gram column (At the
// normalized atoms, row-major N x M): linalg::dot's operations -- four partial
// sums over t mod 4, the tail t >= 4 floor(M / 4) into the first, then
// (s0 + s1) + (s2 + s3), products and sums rounded separately.  Never inlined
// (so never recompiled for another instruction set, where products could be
// fused): every Gram entry of a call, stored or computed on demand, has the
// same bits.
template <class T>
CSCORE_NOINLINE void gram_block_generic(const T* At, std::ptrdiff_t M, const T* ak, std::ptrdiff_t i0,
                                        std::ptrdiff_t count, T* out) {
    for (std::ptrdiff_t i = 0; i < count; ++i) out[i] = linalg::dot(At + (i0 + i) * M, ak, M);
}


// How the Gram columns G[:, k] = An^T a_k reach the kernel (every way gives the
// same bits, see gram_block).
enum class GramMode {
    stored,     // G formed once (N x N): many problems on one A with known atom counts
    cached,     // each column formed the first time an atom is selected, then kept:
                // a batch whose atom count is not known (tol), cost and memory grow
                // with the distinct atoms selected
    on_demand,  // formed per step into a work buffer: one problem (nothing to share)
};

// The dictionary, prepared once per call and shared read-only by all workers.
template <class T>
struct Dictionary {
    using R = Real<T>;
    std::ptrdiff_t M = 0, N = 0;
    LineVector<R> inv_norm;  // 1 / ||a_j||
    LineBuffer<T> An;        // normalized A, row-major M x N (empty when not needed)
    LineBuffer<T> At;        // normalized A transposed, row-major N x M (atoms contiguous)
    GramMode mode = GramMode::stored;
    LineBuffer<T> G;         // An^H An, N x N Hermitian (column j contiguous)
    // GramMode::cached: column k, formed once under its flag (thread-safe).
    std::unique_ptr<std::once_flag[]> col_once;
    std::unique_ptr<LineVector<T>[]> col_cache;
    std::unique_ptr<std::atomic<bool>[]> col_ready;  // column k complete in col_cache
    bool avx = false;  // Gram entries by gram_block_avx (same bits as the generic one)

    // Gram entries G[i0 + i, k], i < count, or G[idx[i], k] with a list idx (see
    // gram_block_generic, complex_gram_block).
    void gram_block(std::ptrdiff_t k, std::ptrdiff_t i0, std::ptrdiff_t count, T* out,
                    const std::ptrdiff_t* idx = nullptr) const {
        if constexpr (kIsComplex<T>) {
            complex_gram_block(At.data(), M, k, i0, count, out, idx);
        } else {
#ifdef CSCORE_GREEDY_AVX2
            if constexpr (std::is_same_v<T, double>) {
                if (avx) {
                    gram_block_avx(At.data(), M, At.data() + k * M, i0, count, out, idx);
                    return;
                }
            }
#endif
            if (idx == nullptr) {
                gram_block_generic(At.data(), M, At.data() + k * M, i0, count, out);
                return;
            }
            for (std::ptrdiff_t i = 0; i < count; ++i)
                gram_block_generic(At.data(), M, At.data() + k * M, idx[i], 1, out + i);
        }
    }

    // Complex A: At by tiles of 8 (rows of A read contiguously; a power-of-two
    // stride puts the lines written in one cache set, and 8 of them fit its
    // ways), each atom normalized in place, then An from At.
    void prepare_complex(const T* A, std::ptrdiff_t lda) {
        constexpr std::ptrdiff_t kTile = 8;
        for (std::ptrdiff_t i0 = 0; i0 < M; i0 += kTile)
            for (std::ptrdiff_t j0 = 0; j0 < N; j0 += kTile)
                for (std::ptrdiff_t i = i0; i < std::min(M, i0 + kTile); ++i)
                    for (std::ptrdiff_t j = j0; j < std::min(N, j0 + kTile); ++j) At[j * M + i] = A[i * lda + j];
        for (std::ptrdiff_t j = 0; j < N; ++j) {
            const R norm = complex_normalize(At.data() + j * M, M);
            if (!(norm > R(0))) throw std::invalid_argument("A has an all-zero column");
            inv_norm[static_cast<std::size_t>(j)] = R(1) / norm;
        }
        for (std::ptrdiff_t j0 = 0; j0 < N && !An.empty(); j0 += kTile)
            for (std::ptrdiff_t i0 = 0; i0 < M; i0 += kTile)
                for (std::ptrdiff_t j = j0; j < std::min(N, j0 + kTile); ++j)
                    for (std::ptrdiff_t i = i0; i < std::min(M, i0 + kTile); ++i) An[i * N + j] = At[j * M + i];
    }

    // A is row-major M x N with row stride lda (elements).  G is stored (or
    // cached) only when it has at most gram_limit entries.  Throws on a zero
    // column.
    Dictionary(const T* A, std::ptrdiff_t m, std::ptrdiff_t n, std::ptrdiff_t lda,
               std::ptrdiff_t gram_limit, GramMode want = GramMode::stored, bool need_an = true)
        : M(m), N(n), inv_norm(static_cast<std::size_t>(n)),
          An(need_an ? static_cast<std::size_t>(m * n) : 0), At(static_cast<std::size_t>(m * n)),
          mode(n <= gram_limit / std::max<std::ptrdiff_t>(n, 1) ? want : GramMode::on_demand),
          G(mode == GramMode::stored ? static_cast<std::size_t>(n * n) : 0) {
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
        avx = cpu::isa_at_least(cpu::Isa::avx2);
#endif
        if constexpr (kIsComplex<T>) {
            prepare_complex(A, lda);
        } else {
            // Columns normalized straight from A's rows (greedy_prepare.hpp).
            normalize_columns<T>(A, lda, M, N, inv_norm.data(), At.data(), need_an ? An.data() : nullptr);
        }
        if (mode == GramMode::cached) {
            col_once.reset(new std::once_flag[static_cast<std::size_t>(N)]);
            col_cache.reset(new LineVector<T>[static_cast<std::size_t>(N)]);
            col_ready.reset(new std::atomic<bool>[static_cast<std::size_t>(N)]);
            for (std::ptrdiff_t j = 0; j < N; ++j) col_ready[static_cast<std::size_t>(j)].store(false);
        }
    }

    // G (GramMode::stored; nothing otherwise): column j from row j down, four
    // columns per pass over the atoms below them (gram_columns), the blocks of
    // columns shared out to n_threads; then the upper triangle mirrored
    // (G_ij = conj(G_ji): the same products and sums).  Every entry has the bits
    // of gram_block one column at a time, whoever forms it.
    void form_gram(int n_threads) {
        if (mode != GramMode::stored) return;
        constexpr std::ptrdiff_t kCols = 4;
        const std::ptrdiff_t blocks = (N + kCols - 1) / kCols;
        std::atomic<std::ptrdiff_t> next{0};
        const std::ptrdiff_t workers = std::max<std::ptrdiff_t>(1, std::min<std::ptrdiff_t>(n_threads, blocks));
        parallel_for(workers, static_cast<int>(workers), [&](std::ptrdiff_t, std::ptrdiff_t, int) {
            for (;;) {
                const std::ptrdiff_t b = next.fetch_add(1, std::memory_order_relaxed);
                if (b >= blocks) break;
                const std::ptrdiff_t j0 = b * kCols;
                const int nk = static_cast<int>(std::min(kCols, N - j0));
                std::ptrdiff_t ks[kCols];
                T* outs[kCols];
                for (int c = 0; c < nk; ++c) ks[c] = j0 + c, outs[c] = G.data() + (j0 + c) * N;
                gram_columns(ks, nk, outs, ks);
            }
        });
        constexpr std::ptrdiff_t kTile = 32;
        for (std::ptrdiff_t j0 = 0; j0 < N; j0 += kTile)
            for (std::ptrdiff_t i0 = j0; i0 < N; i0 += kTile)
                for (std::ptrdiff_t j = j0; j < std::min(N, j0 + kTile); ++j)
                    for (std::ptrdiff_t i = std::max(i0, j + 1); i < std::min(N, i0 + kTile); ++i)
                        G[i * N + j] = Scalar<T>::conj(G[j * N + i]);
    }

    // Switches a GramMode::cached dictionary to a stored G (formed by form_gram)
    // when it has at most gram_limit entries; the cached columns are dropped.
    void store_gram(std::ptrdiff_t gram_limit, int n_threads) {
        if (mode != GramMode::cached || N > gram_limit / std::max<std::ptrdiff_t>(N, 1)) return;
        G = LineBuffer<T>(static_cast<std::size_t>(N * N));
        mode = GramMode::stored;
        form_gram(n_threads);
        col_cache.reset();
        col_once.reset();
        col_ready.reset();
    }

    // Columns ks[0..nk) of G into outs[0..nk) in one pass over the atoms, column
    // c from row from[c] down (from null: from row 0): a block of atoms small
    // enough to stay in L1 gives its entries to every column before the next
    // block is read.  Each entry by gram_block: the bits of one column at a time.
    void gram_columns(const std::ptrdiff_t* ks, int nk, T* const* outs,
                      const std::ptrdiff_t* from = nullptr) const {
#ifdef CSCORE_GREEDY_AVX2
        if constexpr (std::is_same_v<T, double>) {
            if (avx) {  // up to four columns per sweep, in registers (greedy_gram_tiles.hpp)
                for (int c0 = 0; c0 < nk; c0 += 4)
                    gram_columns_avx(At.data(), M, N, ks + c0, std::min(4, nk - c0), outs + c0,
                                     from == nullptr ? nullptr : from + c0);
                return;
            }
        }
#endif
        const std::ptrdiff_t fit = static_cast<std::ptrdiff_t>(std::size_t{32768} / (static_cast<std::size_t>(M) * sizeof(T)));
        const std::ptrdiff_t rows = std::max<std::ptrdiff_t>(8, fit / 8 * 8);
        for (std::ptrdiff_t i0 = 0; i0 < N; i0 += rows) {
            const std::ptrdiff_t count = std::min(rows, N - i0);
            for (int c = 0; c < nk; ++c) {
                const std::ptrdiff_t lo = from == nullptr ? i0 : std::max(i0, from[c]);
                if (lo < i0 + count) gram_block(ks[c], lo, i0 + count - lo, outs[c] + lo);
            }
        }
    }

    // Column k of G: a pointer into G or the cache, or computed into buf (N entries).
    const T* gram_column(std::ptrdiff_t k, T* buf) const {
        if (mode == GramMode::stored) return G.data() + k * N;
        if (mode == GramMode::cached) {
            const auto kk = static_cast<std::size_t>(k);
            std::call_once(col_once[kk], [&] {
                col_cache[kk].resize(static_cast<std::size_t>(N));
                T* col = col_cache[kk].data();
                // G[i, k] = conj(G[k, i]): taken from column i where it is complete
                // (the same products, in the same order: the same bits); the other
                // entries formed eight atoms at a time, then put in place.
                std::vector<std::ptrdiff_t> todo;
                todo.reserve(static_cast<std::size_t>(N));
                for (std::ptrdiff_t i = 0; i < N; ++i) {
                    if (col_ready[static_cast<std::size_t>(i)].load(std::memory_order_acquire))
                        col[i] = Scalar<T>::conj(col_cache[static_cast<std::size_t>(i)][kk]);
                    else
                        todo.push_back(i);
                }
                const auto nt = static_cast<std::ptrdiff_t>(todo.size());
                if (nt == N) {
                    gram_block(k, 0, N, col);
                } else {
                    std::vector<T> vals(todo.size());
                    gram_block(k, 0, nt, vals.data(), todo.data());
                    for (std::ptrdiff_t i = 0; i < nt; ++i) col[todo[static_cast<std::size_t>(i)]] = vals[static_cast<std::size_t>(i)];
                }
                col_ready[kk].store(true, std::memory_order_release);
            });
            return col_cache[kk].data();
        }
        gram_block(k, 0, N, buf);
        return buf;
    }
};

}  // namespace cscore::greedy
