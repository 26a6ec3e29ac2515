#include <pybind11/pybind11.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <string>
#include <thread>

#include "cscore/blas.hpp"
#include "cscore/column_stats.hpp"
#include "cscore/cpu.hpp"
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

// (variable, value, recognized): the environment variable that set the
// instruction set ("" when none did), its value (decoded as os.environ decodes
// it), and whether it was understood.
py::tuple cpu_isa_request() {
    const auto& st = cscore::cpu::isa_setting();
    PyObject* value = PyUnicode_DecodeFSDefaultAndSize(st.value.data(),
                                                       static_cast<Py_ssize_t>(st.value.size()));
    if (value == nullptr) throw py::error_already_set();
    return py::make_tuple(st.variable, py::reinterpret_steal<py::str>(value), st.recognized);
}

// (col_max, finite) of a C-contiguous float32/float64 matrix: column_stats.hpp.
py::tuple column_abs_max(const py::array& A) {
    if (A.ndim() != 2 || !(A.flags() & py::array::c_style))
        throw std::invalid_argument("_column_abs_max: A must be a C-contiguous 2-D array");
    const std::ptrdiff_t M = A.shape(0), N = A.shape(1);
    py::array_t<double> col_max(N);
    double* out = col_max.mutable_data();
    bool finite = true;
    if (A.dtype().is(py::dtype::of<double>())) {
        const double* a = static_cast<const double*>(A.data());
        py::gil_scoped_release release;
        finite = cscore::column_abs_max(a, M, N, N, out);
    } else if (A.dtype().is(py::dtype::of<float>())) {
        const float* a = static_cast<const float*>(A.data());
        py::gil_scoped_release release;
        finite = cscore::column_abs_max(a, M, N, N, out);
    } else {
        throw std::invalid_argument("_column_abs_max: A must be float32 or float64");
    }
    return py::make_tuple(col_max, finite);
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
    m.def("cpu_isa", []() { return std::string(cscore::cpu::isa_name(cscore::cpu::active_isa())); },
          "Instruction set the kernels use: 'avx512', 'avx2' or 'generic' (the best the "
          "CPU supports, capped by the CSCORE_ISA environment variable).");
    m.def("cpu_isa_supported",
          []() { return std::string(cscore::cpu::isa_name(cscore::cpu::supported_isa())); },
          "Best instruction set the CPU supports: 'avx512', 'avx2' or 'generic'.");
    m.def("_cpu_isa_request", &cpu_isa_request,
          "(variable, value, recognized) of the environment setting read for cpu_isa.");
    m.def("_column_abs_max", &column_abs_max, py::arg("A"),
          "(largest |a_ij| per column as float64, whether every entry is finite) of a "
          "C-contiguous float32/float64 matrix, in one pass (internal).");
    cscore::bindings::register_greedy(m);
    cscore::bindings::register_bcs(m);
    cscore::bindings::register_sbl(m);
    cscore::bindings::register_lstm(m);
    cscore::bindings::register_esn(m);
    cscore::bindings::register_blstm(m);
    cscore::bindings::register_amp(m);
}
