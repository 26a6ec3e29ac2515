// A minimal fork-join helper for decoding batches of independent problems.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace cscore {

// Calls fn(begin, end, worker) on contiguous chunks covering [0, n) using up to
// n_threads threads (the calling thread is one of them).  Chunks are static and
// every problem is computed by the same code whatever the split, so results do
// not depend on the thread count.  The first exception thrown by a worker is
// rethrown in the caller after all workers joined.
template <class Fn>
void parallel_for(std::ptrdiff_t n, int n_threads, Fn&& fn) {
    if (n <= 0) return;
    const std::ptrdiff_t workers =
        std::max<std::ptrdiff_t>(1, std::min<std::ptrdiff_t>(n_threads, n));
    if (workers == 1) {
        fn(std::ptrdiff_t{0}, n, 0);
        return;
    }
    std::exception_ptr error;
    std::mutex error_mutex;
    auto run = [&](std::ptrdiff_t w) {
        const std::ptrdiff_t begin = n * w / workers;
        const std::ptrdiff_t end = n * (w + 1) / workers;
        try {
            fn(begin, end, static_cast<int>(w));
        } catch (...) {
            std::lock_guard<std::mutex> lock(error_mutex);
            if (!error) error = std::current_exception();
        }
    };
    std::vector<std::thread> pool;
    pool.reserve(static_cast<std::size_t>(workers - 1));
    for (std::ptrdiff_t w = 1; w < workers; ++w) pool.emplace_back(run, w);
    run(0);
    for (auto& t : pool) t.join();
    if (error) std::rethrow_exception(error);
}

}  // namespace cscore
