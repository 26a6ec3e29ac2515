// Bindings for the greedy decoders (OMP, SOMP).  The Python layer
// (python/cscore/decoders/greedy.py) validates the user's input and allocates
// every output; this glue only checks the internal contract (dtypes, shapes,
// strides), then releases the GIL around the C++ loop.  float32, float64,
// complex64 and complex128 run one kernel (greedy.hpp, templated on the scalar
// type); the residual norms are real either way.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <complex>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cscore/greedy.hpp"
#include "common.hpp"
#include "register.hpp"

namespace py = pybind11;

namespace cscore::bindings {

namespace {

constexpr const char* kFn = "_greedy_decode";

void require(bool ok, const std::string& what) { bindings::require(ok, kFn, what); }

// tol="auto" inputs and outputs (see greedy::Options); absent for the other rules.
struct AutoArgs {
    py::array gamma2, a, lnbeta, logu;  // (max_atoms,) float64
    double b = 0.5;
    std::ptrdiff_t cap = 1;
    py::array sigma, tol, n_signal;  // (P,) outputs
    py::object path_end;  // None or (reset2 (max_atoms,) float64, patience, check, check_last)
    py::array reset2;     // kept alive for the call
    py::object signal;    // None or (6, max_atoms) float64: stopping.signal_tables
    py::array signal_arr;  // kept alive for the call
};

// A given path (see greedy::Options::forced) and the residual energies along it.
struct PathArgs {
    py::array atoms;   // (P, max_atoms) int64, -1 padded
    py::array energy;  // (P, max_atoms + 1, L) output
};

// The dtypes of Y and of the outputs every decode writes, and that those are writeable.
template <class T>
void check_types(const py::array& Y, const py::array& X, const py::array& residual, const py::array& n_iter,
                 const py::array& stop, const py::array& warn, const py::array& atoms) {
    require(has_dtype<T>(Y) && has_dtype<T>(X) && has_dtype<greedy::Real<T>>(residual),
            "A, Y and X must share one dtype, residual its real type");
    require(has_dtype<std::int64_t>(n_iter) && has_dtype<std::int8_t>(stop) &&
                has_dtype<std::uint8_t>(warn) && has_dtype<std::int64_t>(atoms),
            "bad dtype for n_iter/stop/warn/atoms");
    require(X.writeable() && residual.writeable() && n_iter.writeable() && stop.writeable() &&
                warn.writeable() && atoms.writeable(),
            "outputs must be writeable");
}

// The shapes (P problems, L channels, max_atoms) and C order of the per-problem outputs.
void check_output_shapes(const py::array& residual, const py::array& n_iter, const py::array& stop,
                         const py::array& warn, const py::array& atoms, std::ptrdiff_t P, std::ptrdiff_t L,
                         std::ptrdiff_t max_atoms) {
    const auto c_contig = py::array::c_style;
    require(residual.ndim() == 2 && residual.shape(0) == P && residual.shape(1) == L &&
                (residual.flags() & c_contig),
            "residual must be C-contiguous (P, L)");
    require(n_iter.ndim() == 1 && n_iter.shape(0) == P && (n_iter.flags() & c_contig) &&
                stop.ndim() == 1 && stop.shape(0) == P && (stop.flags() & c_contig) &&
                warn.ndim() == 1 && warn.shape(0) == P && (warn.flags() & c_contig),
            "n_iter, stop, warn must be C-contiguous (P,)");
    require(atoms.ndim() == 2 && atoms.shape(0) == P && atoms.shape(1) == max_atoms &&
                (atoms.flags() & c_contig),
            "atoms must be C-contiguous (P, max_atoms)");
}

// tol="auto" (AutoArgs) into opt and out, after checking it.
template <class T>
void set_auto(AutoArgs& autos, std::ptrdiff_t P, std::ptrdiff_t max_atoms, greedy::Options& opt,
              greedy::Outputs<T>& out) {
    const auto c_contig = py::array::c_style;
    for (const py::array* arr : {&autos.gamma2, &autos.a, &autos.lnbeta, &autos.logu})
        require(has_dtype<double>(*arr) && arr->ndim() == 1 && arr->shape(0) == max_atoms &&
                    (arr->flags() & c_contig),
                "auto thresholds must be C-contiguous float64 (max_atoms,)");
    require(has_dtype<T>(autos.sigma) && has_dtype<T>(autos.tol) && has_dtype<std::int64_t>(autos.n_signal),
            "bad dtype for sigma/tol/n_signal");
    for (const py::array* arr : {&autos.sigma, &autos.tol, &autos.n_signal})
        require(arr->ndim() == 1 && arr->shape(0) == P && (arr->flags() & c_contig) && arr->writeable(),
                "sigma, tol, n_signal must be writeable C-contiguous (P,)");
    require(autos.cap >= 1 && autos.cap <= max_atoms, "auto cap out of range");
    opt.auto_gamma2 = static_cast<const double*>(autos.gamma2.data());
    opt.auto_a = static_cast<const double*>(autos.a.data());
    opt.auto_lnbeta = static_cast<const double*>(autos.lnbeta.data());
    opt.auto_logu = static_cast<const double*>(autos.logu.data());
    opt.auto_b = autos.b;
    opt.auto_cap = autos.cap;
    if (!autos.signal.is_none()) {
        autos.signal_arr = py::array::ensure(autos.signal);
        const py::array& g = autos.signal_arr;
        require(g && has_dtype<double>(g) && g.ndim() == 2 && g.shape(0) == 6 && g.shape(1) == max_atoms &&
                    (g.flags() & c_contig),
                "signal must be C-contiguous float64 (6, max_atoms)");
        opt.auto_signal = static_cast<const double*>(g.data());
    }
    if (!autos.path_end.is_none()) {
        const py::tuple t = autos.path_end.cast<py::tuple>();
        require(t.size() == 4, "path_end must be (reset2, patience, check, check_last)");
        autos.reset2 = py::array::ensure(t[0]);
        require(autos.reset2 && has_dtype<double>(autos.reset2) && autos.reset2.ndim() == 1 &&
                    autos.reset2.shape(0) == max_atoms && (autos.reset2.flags() & c_contig),
                "path_end reset2 must be C-contiguous float64 (max_atoms,)");
        opt.auto_end.gamma2 = opt.auto_gamma2;
        opt.auto_end.reset2 = static_cast<const double*>(autos.reset2.data());
        opt.auto_end.patience = t[1].cast<int>();
        opt.auto_end.check = t[2].cast<int>();
        opt.auto_end.check_last = t[3].cast<int>();
        require(opt.auto_end.patience >= 1 && opt.auto_end.check >= 0,
                "path_end patience must be >= 1 and check >= 0");
    }
    out.sigma = static_cast<T*>(autos.sigma.mutable_data());
    out.tol = static_cast<T*>(autos.tol.mutable_data());
    out.n_signal = static_cast<std::int64_t*>(autos.n_signal.mutable_data());
}

// A given path (PathArgs) into opt and out, after checking it.
template <class T>
void set_path(PathArgs& path, std::ptrdiff_t P, std::ptrdiff_t L, std::ptrdiff_t max_atoms,
              greedy::Options& opt, greedy::Outputs<T>& out) {
    const auto c_contig = py::array::c_style;
    require(has_dtype<std::int64_t>(path.atoms) && path.atoms.ndim() == 2 && path.atoms.shape(0) == P &&
                path.atoms.shape(1) == max_atoms && (path.atoms.flags() & c_contig),
            "path atoms must be C-contiguous int64 (P, max_atoms)");
    require(has_dtype<T>(path.energy) && path.energy.ndim() == 3 && path.energy.shape(0) == P &&
                path.energy.shape(1) == max_atoms + 1 && path.energy.shape(2) == L &&
                (path.energy.flags() & c_contig) && path.energy.writeable(),
            "path energy must be a writeable C-contiguous (P, max_atoms + 1, L) array");
    opt.forced = static_cast<const std::int64_t*>(path.atoms.data());
    opt.forced_ld = max_atoms;
    out.path_energy = static_cast<T*>(path.energy.mutable_data());
}

// T: the element type of A, Y and X (float, double or their complex); the
// residual norms are of its real type.
template <class T>
void run(const py::array& A, const py::array& Y, py::array& X, py::array& residual,
         py::array& n_iter, py::array& stop, py::array& warn, py::array& atoms,
         std::ptrdiff_t max_atoms, bool cap_is_n_nonzero, double tol, int n_threads,
         std::ptrdiff_t gram_limit, AutoArgs* autos = nullptr, PathArgs* path = nullptr) {
    require(A.ndim() == 2 && (A.flags() & py::array::c_style), "A must be a C-contiguous 2-D array");
    require(Y.ndim() == 3 && X.ndim() == 3, "Y and X must be 3-D views (P, M, L) and (P, N, L)");
    check_types<T>(Y, X, residual, n_iter, stop, warn, atoms);
    const std::ptrdiff_t M = A.shape(0), N = A.shape(1);
    const std::ptrdiff_t P = Y.shape(0), L = Y.shape(2);
    require(Y.shape(1) == M && X.shape(0) == P && X.shape(1) == N && X.shape(2) == L,
            "shapes of A, Y and X disagree");
    require(M >= 1 && N >= 1 && L >= 1, "empty dimensions");
    require(max_atoms >= 1 && max_atoms <= std::min(M, N), "max_atoms out of range");
    check_output_shapes(residual, n_iter, stop, warn, atoms, P, L, max_atoms);
    require(n_threads >= 1, "n_threads must be >= 1");

    greedy::View3<const T> yv{static_cast<const T*>(Y.data()), elem_stride(Y, 0, kFn),
                              elem_stride(Y, 1, kFn), elem_stride(Y, 2, kFn)};
    greedy::Outputs<T> out;
    out.X = greedy::View3<T>{static_cast<T*>(X.mutable_data()), elem_stride(X, 0, kFn),
                             elem_stride(X, 1, kFn), elem_stride(X, 2, kFn)};
    out.residual = static_cast<greedy::Real<T>*>(residual.mutable_data());
    out.n_iter = static_cast<std::int64_t*>(n_iter.mutable_data());
    out.stop = static_cast<std::int8_t*>(stop.mutable_data());
    out.warn = static_cast<std::uint8_t*>(warn.mutable_data());
    out.atoms = static_cast<std::int64_t*>(atoms.mutable_data());
    greedy::Options opt;
    opt.max_atoms = max_atoms;
    opt.cap_is_n_nonzero = cap_is_n_nonzero;
    opt.tol = tol;
    opt.gram_limit = gram_limit;
    if constexpr (!greedy::kIsComplex<T>) {  // tol='auto' and forced paths: real data only
        if (autos != nullptr) set_auto<T>(*autos, P, max_atoms, opt, out);
        if (path != nullptr) set_path<T>(*path, P, L, max_atoms, opt, out);
    } else {
        require(autos == nullptr && path == nullptr, "tol='auto' and paths need real data");
    }
    const T* a = static_cast<const T*>(A.data());
    // Raw pointers into arrays the caller keeps alive from here on.
    run_released([&](Control* ctl) { greedy::decode<T>(a, M, N, N, yv, P, L, opt, out, n_threads, ctl); });
}

void greedy_decode(const py::array& A, const py::array& Y, py::array X, py::array residual,
                   py::array n_iter, py::array stop, py::array warn, py::array atoms,
                   std::ptrdiff_t max_atoms, bool cap_is_n_nonzero, double tol, int n_threads,
                   std::ptrdiff_t gram_limit) {
    if (has_dtype<double>(A)) {
        run<double>(A, Y, X, residual, n_iter, stop, warn, atoms, max_atoms, cap_is_n_nonzero,
                    tol, n_threads, gram_limit);
    } else if (has_dtype<float>(A)) {
        run<float>(A, Y, X, residual, n_iter, stop, warn, atoms, max_atoms, cap_is_n_nonzero,
                   tol, n_threads, gram_limit);
    } else if (has_dtype<std::complex<double>>(A)) {
        run<std::complex<double>>(A, Y, X, residual, n_iter, stop, warn, atoms, max_atoms,
                                  cap_is_n_nonzero, tol, n_threads, gram_limit);
    } else if (has_dtype<std::complex<float>>(A)) {
        run<std::complex<float>>(A, Y, X, residual, n_iter, stop, warn, atoms, max_atoms,
                                 cap_is_n_nonzero, tol, n_threads, gram_limit);
    } else {
        throw std::invalid_argument(
            "_greedy_decode: A must be float32, float64, complex64 or complex128");
    }
}

void greedy_decode_auto(const py::array& A, const py::array& Y, py::array X, py::array residual,
                        py::array n_iter, py::array stop, py::array warn, py::array atoms,
                        py::array sigma, py::array tol, py::array n_signal, std::ptrdiff_t max_atoms,
                        std::ptrdiff_t cap, py::array gamma2, py::array a,
                        py::array lnbeta, py::array logu, double b, int n_threads,
                        std::ptrdiff_t gram_limit, const py::object& path_end,
                        const py::object& signal) {
    AutoArgs autos{gamma2, a, lnbeta, logu, b, cap, sigma, tol, n_signal, path_end, py::array(),
                   signal, py::array()};
    if (has_dtype<double>(A)) {
        run<double>(A, Y, X, residual, n_iter, stop, warn, atoms, max_atoms, false, -1.0,
                    n_threads, gram_limit, &autos);
    } else if (has_dtype<float>(A)) {
        run<float>(A, Y, X, residual, n_iter, stop, warn, atoms, max_atoms, false, -1.0,
                   n_threads, gram_limit, &autos);
    } else {
        throw std::invalid_argument("_greedy_decode_auto: A must be float32 or float64");
    }
}

void greedy_path(const py::array& A, const py::array& Y, py::array path_atoms, py::array X,
                 py::array residual, py::array energy, py::array n_iter, py::array stop,
                 py::array warn, py::array atoms, int n_threads, std::ptrdiff_t gram_limit) {
    const std::ptrdiff_t K = path_atoms.ndim() == 2 ? path_atoms.shape(1) : 0;
    PathArgs path{path_atoms, energy};
    if (has_dtype<double>(A)) {
        run<double>(A, Y, X, residual, n_iter, stop, warn, atoms, K, false, -1.0, n_threads,
                    gram_limit, nullptr, &path);
    } else if (has_dtype<float>(A)) {
        run<float>(A, Y, X, residual, n_iter, stop, warn, atoms, K, false, -1.0, n_threads,
                   gram_limit, nullptr, &path);
    } else {
        throw std::invalid_argument("_greedy_path: A must be float32 or float64");
    }
}

}  // namespace

void register_greedy(py::module_& m) {
    m.def("_greedy_decode", &greedy_decode, py::arg("A"), py::arg("Y"), py::arg("X"),
          py::arg("residual"), py::arg("n_iter"), py::arg("stop"), py::arg("warn"),
          py::arg("atoms"), py::arg("max_atoms"), py::arg("cap_is_n_nonzero"), py::arg("tol"),
          py::arg("n_threads"), py::arg("gram_limit"),
          "Greedy (S)OMP decode of P problems Y (P, M, L) into preallocated outputs "
          "(internal; use cscore.omp / cscore.somp).");
    m.def("_greedy_decode_auto", &greedy_decode_auto, py::arg("A"), py::arg("Y"), py::arg("X"),
          py::arg("residual"), py::arg("n_iter"), py::arg("stop"), py::arg("warn"),
          py::arg("atoms"), py::arg("sigma"), py::arg("tol"), py::arg("n_signal"),
          py::arg("max_atoms"), py::arg("cap"), py::arg("gamma2"),
          py::arg("a"), py::arg("lnbeta"), py::arg("logu"), py::arg("b"), py::arg("n_threads"),
          py::arg("gram_limit"), py::arg("path_end") = py::none(), py::arg("signal") = py::none(),
          "Greedy (S)OMP decode with tol='auto' (residual ratio thresholding on the path, "
          "then the paper's rule on the estimated noise; signal: the test that Y holds any "
          "signal, which lets the fallback step run) into preallocated outputs "
          "(internal; use cscore.omp / cscore.somp with tol='auto').");
    m.def("_greedy_path", &greedy_path, py::arg("A"), py::arg("Y"), py::arg("path_atoms"),
          py::arg("X"), py::arg("residual"), py::arg("energy"), py::arg("n_iter"),
          py::arg("stop"), py::arg("warn"), py::arg("atoms"), py::arg("n_threads"),
          py::arg("gram_limit"),
          "Least-squares fits along given atom paths (P, K) of P problems Y (P, M, L): the "
          "fit on each whole path and the squared residual norms after every prefix "
          "(internal; used by tol='auto' of decoders with their own greedy paths).");
}

}  // namespace cscore::bindings
