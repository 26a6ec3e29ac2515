// Ctrl-C for long batched calls.  The kernels (cpp/include/cscore) stay free of
// Python: they only see a cscore::Control, whose poll callback (run on the calling
// thread, at most every 50 ms, while the GIL is released) briefly takes the GIL
// and runs PyErr_CheckSignals().  When a handler raised (KeyboardInterrupt), the
// workers stop between problems, every thread is joined, and the binding rethrows
// the Python error once it holds the GIL again.
#pragma once

#include <pybind11/pybind11.h>

#include "cscore/parallel.hpp"

namespace cscore::bindings {

class Interruptible {
  public:
    // Construct with the GIL held (reads whether this is the main thread: only
    // the main thread runs Python signal handlers, so other threads never poll).
    Interruptible() : main_thread_(is_main_thread()), ctl_(make_poll()) {}

    cscore::Control* control() { return &ctl_; }

    // Call with the GIL held after the compute loop: raises the pending Python
    // error (usually KeyboardInterrupt) if a signal handler raised one.
    void rethrow_if_interrupted() const {
        if (raised_) throw pybind11::error_already_set();
    }

  private:
    static bool is_main_thread() {
        namespace py = pybind11;
        py::module_ threading = py::module_::import("threading");
        return threading.attr("current_thread")().is(threading.attr("main_thread")());
    }

    std::function<bool()> make_poll() {
        if (!main_thread_) return {};
        return [this]() {
            pybind11::gil_scoped_acquire gil;
            if (PyErr_CheckSignals() != 0) {
                raised_ = true;  // the error stays set on this thread until rethrown
                return true;
            }
            return false;
        };
    }

    bool main_thread_ = false;
    bool raised_ = false;
    cscore::Control ctl_;
};

}  // namespace cscore::bindings
