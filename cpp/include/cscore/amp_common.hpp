// AMP and VAMP (amp.hpp): what both decoders share -- their options and outputs,
// aligned buffers, the learned parameters and a run's result, the divergence
// guard, and the batch bookkeeping: a worker advances up to kAmpSlots runs
// together and hands the slot of a run that ends to its next problem.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "cscore/parallel.hpp"

namespace cscore::amp {

// Forced inline: the element-wise steps of AMP are compiled once per instruction
// set from one body (amp_task.hpp), so what they call must inline into each copy.
#if defined(__GNUC__)
#define CSCORE_AMP_INLINE inline __attribute__((always_inline))
#else
#define CSCORE_AMP_INLINE inline
#endif

using idx = std::ptrdiff_t;

enum class Denoiser : int { l1 = 0, bg = 1 };

// Stop codes (python/cscore/decoders/amp.py maps them to strings).
enum class Stop : std::int8_t { tol = 0, max_iter = 1, diverged = 2 };

constexpr double kVarFloor = 1e-24;     // variances, relative to unit mean-square y
constexpr double kAlphaMin = 1e-10;     // VAMP divergences kept in [min, 1 - min]
constexpr double kLambdaMin = 1e-8;     // EM sparsity rate kept in [min, 1 - min]
constexpr int kMaxEscalations = 5;      // damping raises before "diverged"
constexpr double kDivergeFactor = 2.0;  // rho > max(factor * rho_best, ||y||) diverges

struct Options {
    Denoiser denoiser = Denoiser::bg;
    bool joint = true;
    long max_iter = 200;
    double tol = 1e-5;
    double damping = 0.0;
    double alpha = 1.0;         // l1 threshold multiplier (whitened units)
    double sparsity = 0.1;      // lambda: initial value, or the fixed one
    bool learn_sparsity = true;
    double slab_var = -1.0;     // phi fixed (x units) when > 0, else learned
    double noise_var = -1.0;    // psi fixed when > 0, else learned
    double snr0 = 100.0;        // psi_0 = ||y_l||^2 / ((snr0 + 1) M)
};

// Per-problem outputs, C-contiguous: X, activity (P, N, L); params (P, L, 3) =
// (lambda, phi, psi); n_iter, stop, damping (P, L).  With joint=true the L
// channels of a problem share one run and get the same values.
struct Outputs {
    double* X = nullptr;
    double* activity = nullptr;
    double* params = nullptr;
    std::int64_t* n_iter = nullptr;
    std::int8_t* stop = nullptr;
    double* damping = nullptr;
};

namespace detail {

// 64-byte aligned buffer, so that the BLAS sees the same alignment for every
// problem (its kernels may sum in a different order for a different alignment).
class Buffer {
  public:
    Buffer() = default;
    explicit Buffer(idx n) { resize(n); }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer() { release(); }
    void resize(idx n) {
        if (n <= cap_) {
            n_ = n;
            return;
        }
        release();
        const idx alloc = std::max<idx>(n, 1);
        p_ = static_cast<double*>(::operator new(static_cast<std::size_t>(alloc) * sizeof(double),
                                                 std::align_val_t(64)));
        cap_ = alloc;
        n_ = n;
    }
    double* data() { return p_; }
    const double* data() const { return p_; }
    double& operator[](idx i) { return p_[i]; }
    double operator[](idx i) const { return p_[i]; }
    idx size() const { return n_; }
    void fill(double v) { std::fill(p_, p_ + n_, v); }
    void copy_from(const Buffer& o) { std::copy(o.p_, o.p_ + o.n_, p_); }
    void swap(Buffer& o) noexcept {
        std::swap(p_, o.p_);
        std::swap(cap_, o.cap_);
        std::swap(n_, o.n_);
    }

  private:
    void release() {
        if (p_ != nullptr) ::operator delete(p_, std::align_val_t(64));
        p_ = nullptr;
        cap_ = n_ = 0;
    }
    double* p_ = nullptr;
    idx cap_ = 0, n_ = 0;
};

inline double sumsq(const double* a, idx n) {
    double s = 0.0;
    for (idx i = 0; i < n; ++i) s += a[i] * a[i];
    return s;
}

inline bool all_finite(const double* a, idx n) {
    for (idx i = 0; i < n; ++i)
        if (!std::isfinite(a[i])) return false;
    return true;
}

inline double clamp(double v, double lo, double hi) { return std::min(std::max(v, lo), hi); }

// The learned (or fixed) parameters of one run, in the scaled problem's units.
struct Params {
    double lambda = 0.1, phi = 1.0;
    std::vector<double> psi;
};

// Result of one run (one problem, or one channel with joint=false), unscaled by
// the caller.
struct RunResult {
    long n_iter = 0;
    Stop stop = Stop::tol;
    double damping = 0.0;
    Params prm;
};

// Shared divergence bookkeeping: the best residual so far and the escalation
// count.  `check` returns +1 (new best), 0 (fine), -1 (diverged: restore).
inline double escalate(double beta) { return 1.0 - 0.5 * (1.0 - beta); }

// The divergence guard of AMP and VAMP: y2 = ||y||^2 after scaling (the zero
// estimate's residual, the first best iterate).
struct Guard {
    explicit Guard(double y2) : best2(y2), ynorm(std::sqrt(y2)) {}
    double best2 = 0.0, ynorm = 0.0;
    int escalations = 0;
    int check(double rho2, bool finite) const {
        if (!finite || !std::isfinite(rho2)) return -1;
        const double lim = std::max(kDivergeFactor * std::sqrt(best2), ynorm);
        if (std::sqrt(rho2) > lim) return -1;
        return rho2 < best2 ? 1 : 0;
    }
    enum class Next { go_on, retry, diverged };
    // After an iteration with residual rho2: a diverging one restores the best
    // iterate and raises the damping `beta` (retry), or gives up after
    // kMaxEscalations (diverged); an improving one becomes the best (snapshot).
    template <class Snapshot, class Restore>
    Next update(double rho2, bool finite, double& beta, Snapshot&& snapshot, Restore&& restore) {
        const int verdict = check(rho2, finite);
        if (verdict < 0) {
            restore();
            if (++escalations > kMaxEscalations) return Next::diverged;
            beta = escalate(beta);
            return Next::retry;
        }
        if (verdict > 0) {
            best2 = rho2;
            snapshot();
        }
        return Next::go_on;
    }
};

// The best-iterate copy of one piece of a run's state (dst = src).
inline void assign(Buffer& dst, const Buffer& src) { dst.copy_from(src); }
template <class T>
void assign(T& dst, const T& src) {
    dst = src;
}

// What an AMP or a VAMP run holds besides its own vectors (AmpTask, VampTask
// derive from it): y, the row activity, the learned parameters, the damping, the
// guard and the counters; and the steps both take alike.
struct Run {
    Buffer y, act, bact;  // bact: the best iterate's activity
    idx M = 0, N = 0, Lt = 0;
    const Options* opt = nullptr;
    RunResult res;
    Params prm, bprm;
    double beta = 0.0, scale = 1.0, scale2 = 1.0, dx2 = 0.0, x2 = 0.0;
    Guard guard{1.0};
    bool learn_noise = false, active = false;
    long it = 0;

    void size_run(idx M_, idx N_, idx Lt_) {
        M = M_;
        N = N_;
        Lt = Lt_;
        y.resize(M * Lt);
        act.resize(N);
        bact.resize(N);
    }

    // Starts a run on the y loaded (M x Lt column-major): false for a zero y (zero
    // estimate, nothing learned; the run ends at once), else y is scaled to unit
    // mean square.
    bool begin(const Options& o) {
        opt = &o;
        res = RunResult{};
        res.damping = o.damping;
        const idx ML = M * Lt;
        const double ny2 = sumsq(y.data(), ML);
        act.fill(0.0);
        active = false;
        it = 0;
        if (!(ny2 > 0.0)) {
            res.prm.lambda = o.sparsity;
            res.prm.phi = 0.0;
            res.prm.psi.assign(static_cast<std::size_t>(Lt), 0.0);
            scale = 0.0;
            return false;
        }
        scale2 = ny2 / static_cast<double>(ML);
        scale = std::sqrt(scale2);
        for (idx i = 0; i < ML; ++i) y[i] /= scale;
        return true;
    }

    // The damping, and the guard with the zero estimate as the first best iterate
    // (its residual is ||y||^2 = M Lt after scaling).  The caller then snapshots.
    void arm() {
        beta = opt->damping;
        guard = Guard(static_cast<double>(M * Lt));
        res.stop = Stop::max_iter;
    }

    bool params_finite() const {
        bool finite = std::isfinite(x2) && std::isfinite(prm.phi) && std::isfinite(prm.lambda);
        for (idx l = 0; l < Lt; ++l) finite = finite && std::isfinite(prm.psi[l]);
        return finite;
    }

    // After an iteration with residual rho2: the divergence guard, then the
    // stopping rule (||x_t - x_{t-1}|| <= tol ||x_t||, or max_iter).
    template <class Snapshot, class Restore>
    void judge(double rho2, bool finite, Snapshot&& snapshot, Restore&& restore) {
        const Guard::Next next = guard.update(rho2, finite, beta, snapshot, restore);
        if (next == Guard::Next::diverged) {
            res.stop = Stop::diverged;
            active = false;
        } else if (next == Guard::Next::go_on && dx2 <= opt->tol * opt->tol * x2) {
            res.stop = Stop::tol;
            active = false;
        } else if (it >= opt->max_iter) {
            active = false;  // stop stays max_iter
        }
    }

    // Back to the problem's units: the estimate x (N x Lt) and the parameters.
    void unscale(Buffer& x) {
        if (scale == 0.0) return;  // zero measurements: nothing was scaled
        for (idx i = 0; i < N * Lt; ++i) x[i] *= scale;
        res.damping = beta;
        prm.phi *= scale2;
        for (double& p : prm.psi) p *= scale2;
        res.prm = prm;
    }
};

// Copies channels [l0, l0 + Lt) of problem p of Y (P, M, L) C-contiguous into a
// column-major M x Lt buffer.
inline void load_y(const double* Y, idx p, idx M, idx L, idx l0, idx Lt, double* y) {
    const double* Yp = Y + p * M * L;
    for (idx l = 0; l < Lt; ++l)
        for (idx i = 0; i < M; ++i) y[i + l * M] = Yp[i * L + l0 + l];
}

inline void store(const Outputs& out, idx p, idx N, idx L, idx l0, idx Lt, const double* X,
                  const double* act, const RunResult& rr) {
    double* Xp = out.X + p * N * L;
    double* Ap = out.activity + p * N * L;
    for (idx j = 0; j < N; ++j)
        for (idx l = 0; l < Lt; ++l) {
            Xp[j * L + l0 + l] = X[j + l * N];
            Ap[j * L + l0 + l] = act[j];
        }
    for (idx l = 0; l < Lt; ++l) {
        const idx q = p * L + l0 + l;
        out.params[3 * q] = rr.prm.lambda;
        out.params[3 * q + 1] = rr.prm.phi;
        out.params[3 * q + 2] = rr.prm.psi[l];
        out.n_iter[q] = rr.n_iter;
        out.stop[q] = static_cast<std::int8_t>(rr.stop);
        out.damping[q] = rr.damping;
    }
}

// Runs advanced together by one worker: a run that ends hands its slot to the
// worker's next problem, so the products keep this many columns until the
// worker's problems run out.  Any number gives the same results; 32 runs' state
// (about 40 KB each at N = 500, M = 250) and the packed A and A^T stay near the L2
// cache (measured on the BG benchmark, AVX-512: 32 slots 1.40-1.47x the dgemm
// time of the multiply-adds, 64 slots 1.47-1.55x, 16 slots 1.48-1.73x).
constexpr idx kAmpSlots = 32;

// What the runs of one decode share: Y (P, M, L), the outputs, and where run t's
// data sit (problem t, or with joint=false channel t % L of problem t / L; Lt
// channels a run).
struct Batch {
    const double* Y;
    idx M, N, L, Lt;
    const Options& opt;
    const Outputs& out;
    idx problem(idx t) const { return opt.joint ? t : t / L; }
    idx channel(idx t) const { return opt.joint ? 0 : t % L; }
};

// Runs [begin, end) of one worker, up to kAmpSlots at a time.  Task: a Run
// (AmpTask, VampTask) with finish() and estimate();
// setup(task) sizes a slot once, start(task) starts a run on the y loaded into it,
// iterate(runs) advances the active runs by one iteration.  A run that ends is
// stored and its slot starts the next run (runs that end at once, zero
// measurements, are stored on the spot).
template <class Task, class Setup, class Start, class Iterate>
void run_slots(const Batch& b, idx begin, idx end, Setup&& setup, Start&& start,
               Iterate&& iterate, Control* ctl) {
    const idx nslots = std::min(kAmpSlots, end - begin);
    std::vector<std::unique_ptr<Task>> slot;
    std::vector<idx> which(static_cast<std::size_t>(nslots), -1);  // the run in each slot
    for (idx i = 0; i < nslots; ++i) {
        slot.push_back(std::make_unique<Task>());
        setup(*slot.back());
    }
    idx next = begin;
    auto refill = [&](idx i) {
        Task& w = *slot[i];
        for (;;) {
            if (which[i] >= 0) {
                const idx t = which[i];
                w.finish();
                store(b.out, b.problem(t), b.N, b.L, b.channel(t), b.Lt, w.estimate(),
                      w.act.data(), w.res);
                which[i] = -1;
            }
            if (next >= end) return;
            const idx t = next++;
            load_y(b.Y, b.problem(t), b.M, b.L, b.channel(t), b.Lt, w.y.data());
            start(w);
            which[i] = t;
            if (w.active) return;
        }
    };
    for (idx i = 0; i < nslots; ++i) refill(i);
    std::vector<Task*> act;
    for (;;) {
        if (should_stop(ctl)) return;
        act.clear();
        for (idx i = 0; i < nslots; ++i)
            if (which[i] >= 0 && slot[i]->active) act.push_back(slot[i].get());
        if (act.empty()) break;
        iterate(act);
        for (idx i = 0; i < nslots; ++i)
            if (which[i] >= 0 && !slot[i]->active) refill(i);
    }
}

}  // namespace detail
}  // namespace cscore::amp
