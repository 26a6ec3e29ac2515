#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <thread>

#include "cscore/blas.hpp"
#include "register.hpp"

namespace py = pybind11;

namespace {

// Stores BLAS/LAPACK function pointers taken from capsules (SciPy's
// cython_blas / cython_lapack `__pyx_capi__`).  Called once at import.
void set_blas(const py::dict& capsules) {
    for (auto item : capsules) {
        const auto name = item.first.cast<std::string>();
        py::capsule cap = item.second.cast<py::capsule>();
        void* ptr = PyCapsule_GetPointer(cap.ptr(), PyCapsule_GetName(cap.ptr()));
        if (ptr == nullptr) throw py::error_already_set();
        cscore::blas::registry()[name] = ptr;
    }
}

py::list blas_names() {
    py::list out;
    for (const auto& kv : cscore::blas::registry()) out.append(kv.first);
    return out;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
    m.doc() = "cscore compiled core (internal; use the cscore package API)";
    m.def("_set_blas", &set_blas, py::arg("capsules"),
          "Register BLAS/LAPACK function pointers from a dict name -> PyCapsule.");
    m.def("_blas_names", &blas_names, "Names of the registered BLAS/LAPACK routines.");
    m.def("hardware_concurrency", []() { return std::thread::hardware_concurrency(); },
          "Number of hardware threads reported by the C++ runtime.");
    cscore::bindings::register_greedy(m);
    cscore::bindings::register_bcs(m);
    cscore::bindings::register_sbl(m);
    cscore::bindings::register_lstm(m);
    cscore::bindings::register_esn(m);
    cscore::bindings::register_blstm(m);
    cscore::bindings::register_amp(m);
}
