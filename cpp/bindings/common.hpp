// Helpers shared by the binding files (register_*.cpp, lstm_common.hpp): checks
// of the internal argument contract (the Python layer validates the user's input
// first, so a failed check here is a bug in cscore, raised as ValueError), and
// the run of a kernel with the GIL released and Ctrl-C honoured, over a whole
// call or problem by problem on threads.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <stdexcept>
#include <string>

#include "cscore/parallel.hpp"
#include "interrupt.hpp"

namespace cscore::bindings {

// Throws std::invalid_argument("<fn>: <what>") unless `ok`.
inline void require(bool ok, const char* fn, const std::string& what) {
    if (!ok) throw std::invalid_argument(std::string(fn) + ": " + what);
}

// True when the array's element type is exactly T.
template <class T>
bool has_dtype(const pybind11::array& a) {
    return a.dtype().num() == pybind11::dtype::of<T>().num();
}

// The stride of `axis` in elements (a stride that is not a whole number of
// elements fails the check of `fn`).
inline std::ptrdiff_t elem_stride(const pybind11::array& a, pybind11::ssize_t axis,
                                  const char* fn) {
    const auto s = a.strides(axis);
    require(s % a.itemsize() == 0, fn, "strides must be multiples of the item size");
    return static_cast<std::ptrdiff_t>(s / a.itemsize());
}

// Runs `work(control)` with the GIL released, then (with the GIL held again)
// rethrows the Python error of a signal handler that ran meanwhile (Ctrl-C).
// Call with the GIL held; `work` may touch raw buffers only, no Python object
// (the Ctrl-C poll of `control` takes the GIL itself).
template <class Work>
void run_released(Work&& work) {
    Interruptible intr;
    {
        pybind11::gil_scoped_release release;
        work(intr.control());
    }
    intr.rethrow_if_interrupted();
}

// Runs `solve(p)` for every problem p in [0, n) on up to n_threads threads, with
// the GIL released (as run_released).  The split is parallel_for's static one,
// so results do not depend on the thread count; after Ctrl-C the workers stop
// between problems.
template <class Solve>
void for_each_problem(std::ptrdiff_t n, int n_threads, Solve&& solve) {
    run_released([&](Control* ctl) {
        parallel_for(n, n_threads, [&](std::ptrdiff_t begin, std::ptrdiff_t end, int) {
            for (std::ptrdiff_t p = begin; p < end && !should_stop(ctl); ++p) solve(p);
        }, ctl);
    });
}

}  // namespace cscore::bindings
