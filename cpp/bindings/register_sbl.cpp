// Bindings for T-SBL / T-MSBL, real and complex (cpp/include/cscore/sbl.hpp).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <complex>
#include <type_traits>
#include <vector>

#include "cscore/sbl.hpp"
#include "common.hpp"
#include "register.hpp"

namespace py = pybind11;

namespace cscore::bindings {

namespace {

using farr = py::array_t<double, py::array::f_style | py::array::forcecast>;
using carr = py::array_t<double, py::array::c_style | py::array::forcecast>;

// One batch of T-SBL / T-MSBL problems with scalar S (double, or complex<double> for
// complex T-MSBL).  A: (M, N); Yt: (B, L, M) C-order (each problem's Y column-major);
// matrix_reg and fixed_b real (L, L) or None.  Returns X (B, L, N), gamma (B, N),
// B (B, L, L) in S, lambda, n_iter and stop codes.
template <class S>
py::tuple solve_batch(const char* fn, const py::array_t<S, py::array::f_style | py::array::forcecast>& A,
                      const py::array_t<S, py::array::c_style | py::array::forcecast>& Yt,
                      bool exact, double prune, double lam, bool learn_lambda,
                      bool enhance_lambda, const py::object& matrix_reg,
                      const py::object& fixed_b, int max_iter, double tol, int n_threads) {
    require(A.ndim() == 2 && Yt.ndim() == 3, fn, "bad ranks");
    const auto M = static_cast<int>(A.shape(0)), N = static_cast<int>(A.shape(1));
    const auto nb = static_cast<std::ptrdiff_t>(Yt.shape(0));
    const auto L = static_cast<int>(Yt.shape(1));
    require(static_cast<int>(Yt.shape(2)) == M, fn, "Y rows != A rows");
    require(max_iter >= 1 && n_threads >= 1, fn, "bad max_iter/n_threads");
    if constexpr (!std::is_same_v<S, double>)
        require(sbl::complex_supported(), fn, "LAPACK zheevd not registered (cscore._blas.register)");
    std::vector<double> reg, fb;
    auto take = [L, fn](const py::object& o, std::vector<double>& dst) {
        if (o.is_none()) return false;
        farr a = o.cast<farr>();
        require(a.ndim() == 2 && a.shape(0) == L && a.shape(1) == L, fn, "L x L matrix expected");
        dst.assign(a.data(), a.data() + static_cast<std::ptrdiff_t>(L) * L);
        return true;
    };
    sbl::Params prm;
    prm.exact = exact;
    prm.prune = prune;
    prm.lam = lam;
    prm.learn_lambda = learn_lambda;
    prm.enhance_lambda = enhance_lambda;
    prm.max_iter = max_iter;
    prm.tol = tol;
    if (take(matrix_reg, reg)) prm.matrix_reg = reg.data();
    if (take(fixed_b, fb)) prm.fixed_b = fb.data();

    py::array_t<S> X({nb, static_cast<py::ssize_t>(L), static_cast<py::ssize_t>(N)});
    py::array_t<double> G({nb, static_cast<py::ssize_t>(N)});
    py::array_t<S> Bo({nb, static_cast<py::ssize_t>(L), static_cast<py::ssize_t>(L)});
    py::array_t<double> lam_out(nb);
    py::array_t<int> n_iter(nb), stop(nb);
    const S* a = A.data();
    const S* y = Yt.data();
    S* x = X.mutable_data();
    double* g = G.mutable_data();
    S* bo = Bo.mutable_data();
    double* lo = lam_out.mutable_data();
    int* it = n_iter.mutable_data();
    int* st = stop.mutable_data();
    for_each_problem(nb, n_threads, [&](std::ptrdiff_t b) {
        const auto info = sbl::solve<S>(M, N, L, a, y + b * M * L, prm, x + b * N * L, g + b * N,
                                         bo + b * L * L);
        lo[b] = info.lam;
        it[b] = info.n_iter;
        st[b] = static_cast<int>(info.stop);
    });
    return py::make_tuple(X, G, Bo, lam_out, n_iter, stop);
}

py::tuple sbl_solve(const farr& A, const carr& Yt, bool exact, double prune, double lam,
                    bool learn_lambda, bool enhance_lambda, const py::object& matrix_reg,
                    const py::object& fixed_b, int max_iter, double tol, int n_threads) {
    return solve_batch<double>("sbl_solve", A, Yt, exact, prune, lam, learn_lambda,
                               enhance_lambda, matrix_reg, fixed_b, max_iter, tol, n_threads);
}

using zfarr = py::array_t<std::complex<double>, py::array::f_style | py::array::forcecast>;
using zcarr = py::array_t<std::complex<double>, py::array::c_style | py::array::forcecast>;

// Complex T-MSBL (no exact T-SBL for complex data).
py::tuple sbl_solve_complex(const zfarr& A, const zcarr& Yt, double prune, double lam,
                            bool learn_lambda, bool enhance_lambda, const py::object& matrix_reg,
                            const py::object& fixed_b, int max_iter, double tol, int n_threads) {
    return solve_batch<std::complex<double>>("sbl_solve_complex", A, Yt, false, prune, lam,
                                             learn_lambda, enhance_lambda, matrix_reg, fixed_b,
                                             max_iter, tol, n_threads);
}

}  // namespace

void register_sbl(py::module_& m) {
    m.def("_sbl_solve_complex", &sbl_solve_complex, py::arg("A"), py::arg("Yt"), py::arg("prune"),
          py::arg("lam"), py::arg("learn_lambda"), py::arg("enhance_lambda"),
          py::arg("matrix_reg"), py::arg("fixed_b"), py::arg("max_iter"), py::arg("tol"),
          py::arg("n_threads"), "Complex T-MSBL on a batch; internal, see cscore.tmsbl.");
    m.def("_sbl_solve", &sbl_solve, py::arg("A"), py::arg("Yt"), py::arg("exact"), py::arg("prune"),
          py::arg("lam"), py::arg("learn_lambda"), py::arg("enhance_lambda"), py::arg("matrix_reg"),
          py::arg("fixed_b"), py::arg("max_iter"), py::arg("tol"), py::arg("n_threads"),
          "T-SBL (exact=True) / T-MSBL on a batch; internal, see cscore.sbl.");
}

}  // namespace cscore::bindings
