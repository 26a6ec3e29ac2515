// Bindings for T-SBL / T-MSBL (cpp/include/cscore/sbl.hpp) and complex T-MSBL
// (cpp/include/cscore/sbl_complex.hpp).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <complex>
#include <vector>

#include "cscore/sbl.hpp"
#include "cscore/sbl_complex.hpp"
#include "common.hpp"
#include "register.hpp"

namespace py = pybind11;

namespace cscore::bindings {

namespace {

using farr = py::array_t<double, py::array::f_style | py::array::forcecast>;
using carr = py::array_t<double, py::array::c_style | py::array::forcecast>;

constexpr const char* kFn = "sbl_solve";

// A: (M, N) float64; Yt: (B, L, M) C-order (each problem's Y column-major).
py::tuple sbl_solve(const farr& A, const carr& Yt, bool exact, double prune, double lam,
                    bool learn_lambda, bool enhance_lambda, const py::object& matrix_reg,
                    const py::object& fixed_b, int max_iter, double tol, int n_threads) {
    require(A.ndim() == 2 && Yt.ndim() == 3, kFn, "bad ranks");
    const auto M = static_cast<int>(A.shape(0)), N = static_cast<int>(A.shape(1));
    const auto nb = static_cast<std::ptrdiff_t>(Yt.shape(0));
    const auto L = static_cast<int>(Yt.shape(1));
    require(static_cast<int>(Yt.shape(2)) == M, kFn, "Y rows != A rows");
    require(max_iter >= 1 && n_threads >= 1, kFn, "bad max_iter/n_threads");
    std::vector<double> reg, fb;
    auto take = [L](const py::object& o, std::vector<double>& dst) {
        if (o.is_none()) return false;
        farr a = o.cast<farr>();
        require(a.ndim() == 2 && a.shape(0) == L && a.shape(1) == L, kFn,
                "L x L matrix expected");
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

    py::array_t<double> X({nb, static_cast<py::ssize_t>(L), static_cast<py::ssize_t>(N)});
    py::array_t<double> G({nb, static_cast<py::ssize_t>(N)});
    py::array_t<double> Bo({nb, static_cast<py::ssize_t>(L), static_cast<py::ssize_t>(L)});
    py::array_t<double> lam_out(nb);
    py::array_t<int> n_iter(nb), stop(nb);
    const double* a = A.data();
    const double* y = Yt.data();
    double* x = X.mutable_data();
    double* g = G.mutable_data();
    double* bo = Bo.mutable_data();
    double* lo = lam_out.mutable_data();
    int* it = n_iter.mutable_data();
    int* st = stop.mutable_data();
    for_each_problem(nb, n_threads, [&](std::ptrdiff_t b) {
        const auto info =
            sbl::solve(M, N, L, a, y + b * M * L, prm, x + b * N * L, g + b * N, bo + b * L * L);
        lo[b] = info.lam;
        it[b] = info.n_iter;
        st[b] = static_cast<int>(info.stop);
    });
    return py::make_tuple(X, G, Bo, lam_out, n_iter, stop);
}

using zfarr = py::array_t<std::complex<double>, py::array::f_style | py::array::forcecast>;
using zcarr = py::array_t<std::complex<double>, py::array::c_style | py::array::forcecast>;

// Complex T-MSBL.  A: (M, N) complex128; Yt: (B, L, M) C-order; matrix_reg and
// fixed_b real (L, L) or None.  Returns X (B, L, N) and B (B, L, L) complex.
py::tuple sbl_solve_complex(const zfarr& A, const zcarr& Yt, double prune, double lam,
                            bool learn_lambda, bool enhance_lambda, const py::object& matrix_reg,
                            const py::object& fixed_b, int max_iter, double tol, int n_threads) {
    constexpr const char* fn = "sbl_solve_complex";
    require(A.ndim() == 2 && Yt.ndim() == 3, fn, "bad ranks");
    const auto M = static_cast<int>(A.shape(0)), N = static_cast<int>(A.shape(1));
    const auto nb = static_cast<std::ptrdiff_t>(Yt.shape(0));
    const auto L = static_cast<int>(Yt.shape(1));
    require(static_cast<int>(Yt.shape(2)) == M, fn, "Y rows != A rows");
    require(max_iter >= 1 && n_threads >= 1, fn, "bad max_iter/n_threads");
    std::vector<double> reg, fb;
    auto take = [L, fn](const py::object& o, std::vector<double>& dst) {
        if (o.is_none()) return false;
        farr a = o.cast<farr>();
        require(a.ndim() == 2 && a.shape(0) == L && a.shape(1) == L, fn, "L x L matrix expected");
        dst.assign(a.data(), a.data() + static_cast<std::ptrdiff_t>(L) * L);
        return true;
    };
    sbl::Params prm;
    prm.exact = false;
    prm.prune = prune;
    prm.lam = lam;
    prm.learn_lambda = learn_lambda;
    prm.enhance_lambda = enhance_lambda;
    prm.max_iter = max_iter;
    prm.tol = tol;
    if (take(matrix_reg, reg)) prm.matrix_reg = reg.data();
    if (take(fixed_b, fb)) prm.fixed_b = fb.data();

    using cx = std::complex<double>;
    py::array_t<cx> X({nb, static_cast<py::ssize_t>(L), static_cast<py::ssize_t>(N)});
    py::array_t<double> G({nb, static_cast<py::ssize_t>(N)});
    py::array_t<cx> Bo({nb, static_cast<py::ssize_t>(L), static_cast<py::ssize_t>(L)});
    py::array_t<double> lam_out(nb);
    py::array_t<int> n_iter(nb), stop(nb);
    const cx* a = A.data();
    const cx* y = Yt.data();
    cx* x = X.mutable_data();
    double* g = G.mutable_data();
    cx* bo = Bo.mutable_data();
    double* lo = lam_out.mutable_data();
    int* it = n_iter.mutable_data();
    int* st = stop.mutable_data();
    for_each_problem(nb, n_threads, [&](std::ptrdiff_t b) {
        const auto info = sbl_complex::solve(M, N, L, a, y + b * M * L, prm, x + b * N * L,
                                             g + b * N, bo + b * L * L);
        lo[b] = info.lam;
        it[b] = info.n_iter;
        st[b] = static_cast<int>(info.stop);
    });
    return py::make_tuple(X, G, Bo, lam_out, n_iter, stop);
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
