// Bindings for BCS and MT-BCS (cscore/bcs.hpp).  Arrays are cast and checked
// with the GIL held; the loop over problems runs without it.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "cscore/bcs.hpp"
#include "common.hpp"
#include "register.hpp"

namespace py = pybind11;

namespace cscore::bindings {

namespace {

using darray = py::array_t<double, py::array::c_style | py::array::forcecast>;
using cscore::bcs::idx_t;

py::array_t<double> vec_to_array(const std::vector<double>& v) {
    py::array_t<double> out(static_cast<py::ssize_t>(v.size()));
    auto* p = out.mutable_data();
    for (std::size_t i = 0; i < v.size(); ++i) p[i] = v[i];
    return out;
}

py::array_t<std::int64_t> idx_to_array(const std::vector<idx_t>& v) {
    py::array_t<std::int64_t> out(static_cast<py::ssize_t>(v.size()));
    auto* p = out.mutable_data();
    for (std::size_t i = 0; i < v.size(); ++i) p[i] = static_cast<std::int64_t>(v[i]);
    return out;
}

// Packs the per-problem Info records into Python objects.
py::dict pack_infos(const std::vector<cscore::bcs::Info>& infos) {
    const auto B = static_cast<py::ssize_t>(infos.size());
    py::array_t<std::int64_t> n_iter(B), stop(B), moves({B, static_cast<py::ssize_t>(4)});
    py::list index, alpha, sig_diag, ml, noise;
    for (py::ssize_t i = 0; i < B; ++i) {
        const auto& in = infos[static_cast<std::size_t>(i)];
        n_iter.mutable_at(i) = in.n_iter;
        stop.mutable_at(i) = static_cast<std::int64_t>(in.stop);
        moves.mutable_at(i, 0) = in.n_add;
        moves.mutable_at(i, 1) = in.n_reestimate;
        moves.mutable_at(i, 2) = in.n_delete;
        moves.mutable_at(i, 3) = in.n_refresh;
        index.append(idx_to_array(in.index));
        alpha.append(vec_to_array(in.alpha));
        sig_diag.append(vec_to_array(in.sig_diag));
        ml.append(vec_to_array(in.ml));
        noise.append(vec_to_array(in.noise_var));
    }
    py::dict d;
    d["n_iter"] = n_iter;
    d["stop"] = stop;
    d["moves"] = moves;
    d["index"] = index;
    d["alpha"] = alpha;
    d["sig_diag"] = sig_diag;
    d["ml"] = ml;
    d["noise_var"] = noise;
    return d;
}

cscore::bcs::Options make_options(double tol, long max_iter) {
    if (!(tol >= 0.0)) throw std::invalid_argument("tol must be >= 0");
    if (max_iter < 1) throw std::invalid_argument("max_iter must be >= 1");
    cscore::bcs::Options opt;
    opt.tol = tol;
    opt.max_iter = max_iter;
    return opt;
}

// A: (M, N); At: A transposed, (N, M), both C order; Y: (B, M); sigma2: (B,)
py::tuple bcs_batch(const darray& A, const darray& At, const darray& Y, const darray& sigma2, double tol,
                    long max_iter, int n_threads) {
    require(A.ndim() == 2 && At.ndim() == 2 && Y.ndim() == 2 && sigma2.ndim() == 1, "_bcs",
            "expected A (M, N), At (N, M), Y (B, M), sigma2 (B,)");
    const idx_t N = At.shape(0), M = At.shape(1), B = Y.shape(0);
    require(A.shape(0) == M && A.shape(1) == N && Y.shape(1) == M && sigma2.shape(0) == B,
            "_bcs", "inconsistent shapes");
    const auto opt = make_options(tol, max_iter);
    py::array_t<double> X({static_cast<py::ssize_t>(B), static_cast<py::ssize_t>(N)});
    std::vector<cscore::bcs::Info> infos(static_cast<std::size_t>(B));
    const double* arow = A.data();
    const double* a = At.data();
    const double* y = Y.data();
    const double* s2 = sigma2.data();
    double* x = X.mutable_data();
    for_each_problem(B, n_threads, [&](idx_t p) {
        infos[static_cast<std::size_t>(p)] =
            cscore::bcs::bcs_solve(arow, a, M, N, y + p * M, s2[p], opt, x + p * N);
    });
    return py::make_tuple(X, pack_infos(infos));
}

// A: (M, N); At: (N, M); Y: (B, L, M) tasks of each problem
py::tuple mtbcs_batch(const darray& A, const darray& At, const darray& Y, double a, double b, double tol,
                      long max_iter, int n_threads) {
    require(A.ndim() == 2 && At.ndim() == 2 && Y.ndim() == 3, "_mtbcs",
            "expected A (M, N), At (N, M), Y (B, L, M)");
    const idx_t N = At.shape(0), M = At.shape(1), B = Y.shape(0), L = Y.shape(1);
    require(A.shape(0) == M && A.shape(1) == N && Y.shape(2) == M, "_mtbcs",
            "inconsistent shapes");
    if (!(a > 0.0) || !(b > 0.0)) throw std::invalid_argument("a and b must be > 0");
    const auto opt = make_options(tol, max_iter);
    py::array_t<double> X({static_cast<py::ssize_t>(B), static_cast<py::ssize_t>(L),
                           static_cast<py::ssize_t>(N)});
    std::vector<cscore::bcs::Info> infos(static_cast<std::size_t>(B));
    const double* arow = A.data();
    const double* at = At.data();
    const double* y = Y.data();
    double* x = X.mutable_data();
    for_each_problem(B, n_threads, [&](idx_t p) {
        infos[static_cast<std::size_t>(p)] = cscore::bcs::mtbcs_solve(
            arow, at, M, N, y + p * L * M, L, a, b, opt, x + p * L * N);
    });
    return py::make_tuple(X, pack_infos(infos));
}

}  // namespace

void register_bcs(py::module_& m) {
    m.def("_bcs", &bcs_batch, py::arg("A"), py::arg("At"), py::arg("Y"), py::arg("sigma2"), py::arg("tol"),
          py::arg("max_iter"), py::arg("n_threads"),
          "BCS (fast RVM) on B independent problems; internal, use cscore.bcs.");
    m.def("_mtbcs", &mtbcs_batch, py::arg("A"), py::arg("At"), py::arg("Y"), py::arg("a"), py::arg("b"),
          py::arg("tol"), py::arg("max_iter"), py::arg("n_threads"),
          "MT-BCS on B multitask problems; internal, use cscore.mtbcs.");
}

}  // namespace cscore::bindings
