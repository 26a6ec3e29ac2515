// A minimal fork-join helper for decoding batches of independent problems, with
// cooperative cancellation and graceful degradation when threads cannot be made.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace cscore {

// Cancellation shared by the workers of one call.  Workers call stop() between
// problems (cheap: an atomic load, plus a clock read on the calling thread) and
// return early once it is true.  The calling thread also runs `poll` at most
// every `period` (the bindings pass a function that takes the GIL and checks for
// a pending signal, e.g. Ctrl-C); when poll returns true every worker stops.
// The kernels never see Python: poll is an opaque callback.
class Control {
  public:
    explicit Control(std::function<bool()> poll = {},
                     std::chrono::milliseconds period = std::chrono::milliseconds(50))
        : poll_(std::move(poll)),
          period_(period),
          caller_(std::this_thread::get_id()),
          last_(std::chrono::steady_clock::now()) {}

    Control(const Control&) = delete;
    Control& operator=(const Control&) = delete;

    // True once the call was cancelled.  On the calling thread, polls when due.
    bool stop() {
        if (cancelled_.load(std::memory_order_relaxed)) return true;
        if (poll_ && std::this_thread::get_id() == caller_) {
            const auto now = std::chrono::steady_clock::now();
            if (now - last_ >= period_) {
                last_ = now;
                poll_now();
            }
        }
        return cancelled_.load(std::memory_order_relaxed);
    }

    // Runs poll now (calling thread only); true when the call is cancelled.
    bool poll_now() {
        if (poll_ && !cancelled_.load(std::memory_order_relaxed) && poll_()) cancel();
        return cancelled();
    }

    void cancel() noexcept { cancelled_.store(true, std::memory_order_relaxed); }
    bool cancelled() const noexcept { return cancelled_.load(std::memory_order_relaxed); }
    std::chrono::milliseconds period() const noexcept { return period_; }

  private:
    std::function<bool()> poll_;
    std::chrono::milliseconds period_;
    std::thread::id caller_;
    std::chrono::steady_clock::time_point last_;
    std::atomic<bool> cancelled_{false};
};

// Null-safe helper for kernels: true when `ctl` asks the worker to stop.
inline bool should_stop(Control* ctl) { return ctl != nullptr && ctl->stop(); }

// Calls fn(begin, end, worker) on contiguous chunks covering [0, n) using up to
// n_threads threads (the calling thread is one of them).  Chunks are static and
// every problem is computed by the same code whatever the split, so results do
// not depend on the thread count.
//
// Robustness: a thread that cannot be created (address-space or process limits)
// is not an error: its chunk runs on the calling thread instead, so the result
// is the same.  No exception crosses a thread: the first one thrown by a worker
// is rethrown in the caller after every worker joined.  With a Control, the
// calling thread keeps polling it while it waits for the other workers, and a
// worker's exception cancels the others.
//
// At most max_threads() threads run: 4x the hardware threads (at least 8, at
// most 256).  More never speeds anything up, and each extra caller of the BLAS
// costs it a buffer (OpenBLAS reserves tens of MB of address space per calling
// thread and stalls, rather than failing, when that reservation is refused).
inline int max_threads() {
    static const int cap = [] {
        const unsigned hw = std::thread::hardware_concurrency();
        return static_cast<int>(std::min(256u, std::max(8u, 4u * hw)));
    }();
    return cap;
}

template <class Fn>
void parallel_for(std::ptrdiff_t n, int n_threads, Fn&& fn, Control* ctl = nullptr) {
    if (n <= 0) return;
    const std::ptrdiff_t workers = std::max<std::ptrdiff_t>(
        1, std::min<std::ptrdiff_t>(std::min(n_threads, max_threads()), n));
    if (workers == 1) {
        fn(std::ptrdiff_t{0}, n, 0);
        return;
    }
    std::exception_ptr error;
    std::mutex mutex;
    std::condition_variable done_cv;
    std::ptrdiff_t running = 0;  // guarded by mutex
    auto record = [&](std::exception_ptr e) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!error) error = e;
        if (ctl != nullptr) ctl->cancel();
    };
    auto run = [&](std::ptrdiff_t w) {
        const std::ptrdiff_t begin = n * w / workers;
        const std::ptrdiff_t end = n * (w + 1) / workers;
        try {
            fn(begin, end, static_cast<int>(w));
        } catch (...) {
            record(std::current_exception());
        }
    };
    std::vector<std::thread> pool;
    std::vector<std::ptrdiff_t> orphans;  // chunks whose thread could not be created
    try {
        pool.reserve(static_cast<std::size_t>(workers - 1));
        orphans.reserve(static_cast<std::size_t>(workers - 1));
    } catch (...) {
        // Not even room for the bookkeeping: run everything here.
        fn(std::ptrdiff_t{0}, n, 0);
        return;
    }
    for (std::ptrdiff_t w = 1; w < workers; ++w) {
        {
            std::lock_guard<std::mutex> lock(mutex);
            ++running;
        }
        try {
            pool.emplace_back([&, w] {
                run(w);
                std::lock_guard<std::mutex> lock(mutex);
                --running;
                done_cv.notify_all();
            });
        } catch (...) {  // std::system_error (EAGAIN) or std::bad_alloc
            std::lock_guard<std::mutex> lock(mutex);
            --running;
            orphans.push_back(w);  // capacity reserved: cannot throw
        }
    }
    run(0);
    for (std::ptrdiff_t w : orphans) run(w);
    if (ctl != nullptr) {
        std::unique_lock<std::mutex> lock(mutex);
        while (running > 0) {
            if (done_cv.wait_for(lock, ctl->period(), [&] { return running == 0; })) break;
            lock.unlock();
            ctl->poll_now();
            lock.lock();
        }
    }
    for (auto& t : pool) t.join();
    if (error) std::rethrow_exception(error);
}

}  // namespace cscore
