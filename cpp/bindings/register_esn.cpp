// Bindings for the echo state network kernels (cpp/include/cscore/esn.hpp).
// Arguments are checked by python/cscore/seq/_ops.py; here shapes and index
// ranges are re-checked with the GIL held, then the GIL is released around the
// loops (only raw buffers are touched there).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "cscore/esn.hpp"
#include "register.hpp"

namespace py = pybind11;

namespace cscore::bindings {
namespace {

using darr = py::array_t<double, py::array::c_style | py::array::forcecast>;
using iarr = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;

esn::Csr make_csr(const iarr& indptr, const iarr& indices, const darr& data) {
    if (indptr.ndim() != 1 || indices.ndim() != 1 || data.ndim() != 1)
        throw std::invalid_argument("W_rec: indptr, indices and data must be 1-D");
    const std::int64_t n = indptr.shape(0) - 1;
    if (n < 1) throw std::invalid_argument("W_rec: empty indptr");
    if (indices.shape(0) != data.shape(0))
        throw std::invalid_argument("W_rec: indices and data differ in length");
    const std::int64_t* ip = indptr.data();
    if (ip[0] != 0 || ip[n] != indices.shape(0))
        throw std::invalid_argument("W_rec: indptr does not match indices");
    for (std::int64_t i = 0; i < n; ++i)
        if (ip[i + 1] < ip[i]) throw std::invalid_argument("W_rec: indptr not monotone");
    const std::int64_t* ix = indices.data();
    for (py::ssize_t p = 0; p < indices.shape(0); ++p)
        if (ix[p] < 0 || ix[p] >= n) throw std::invalid_argument("W_rec: column out of range");
    return esn::Csr{ip, ix, data.data(), n};
}

void check_frames(const char* name, const darr& a, std::int64_t N, const iarr& offsets) {
    if (a.ndim() != 2 || a.shape(1) != N)
        throw std::invalid_argument(std::string(name) + ": must be (F, N) with N = W_rec size");
    if (offsets.ndim() != 1 || offsets.shape(0) < 1)
        throw std::invalid_argument("offsets: must be 1-D and non-empty");
    const std::int64_t* o = offsets.data();
    const py::ssize_t S = offsets.shape(0) - 1;
    if (o[0] != 0 || o[S] != a.shape(0))
        throw std::invalid_argument("offsets: must start at 0 and end at F");
    for (py::ssize_t s = 0; s < S; ++s)
        if (o[s + 1] < o[s]) throw std::invalid_argument("offsets: not monotone");
}

darr forward(const darr& A, const iarr& indptr, const iarr& indices, const darr& data,
             const iarr& offsets, int n_threads) {
    const auto R = make_csr(indptr, indices, data);
    check_frames("A", A, R.n, offsets);
    darr H({A.shape(0), A.shape(1)});
    double* h = H.mutable_data();
    {
        py::gil_scoped_release release;
        esn::forward(A.data(), R, offsets.data(), offsets.shape(0) - 1, h, n_threads);
    }
    return H;
}

darr backward(const darr& H, const darr& G, const iarr& indptr, const iarr& indices,
              const darr& data, const iarr& offsets, int m, int n_threads) {
    const auto R = make_csr(indptr, indices, data);
    check_frames("H", H, R.n, offsets);
    check_frames("G", G, R.n, offsets);
    if (m < 0) throw std::invalid_argument("m: must be >= 0");
    darr D({H.shape(0), H.shape(1)});
    double* d = D.mutable_data();
    {
        py::gil_scoped_release release;
        esn::backward(H.data(), G.data(), R, offsets.data(), offsets.shape(0) - 1, m, d,
                      n_threads);
    }
    return D;
}

darr rec_grad(const darr& D, const darr& H, const iarr& indptr, const iarr& indices,
              const darr& data, const iarr& offsets, int n_threads) {
    const auto R = make_csr(indptr, indices, data);
    check_frames("D", D, R.n, offsets);
    check_frames("H", H, R.n, offsets);
    darr g(indices.shape(0));
    double* out = g.mutable_data();
    {
        py::gil_scoped_release release;
        esn::rec_grad(D.data(), H.data(), R, offsets.data(), offsets.shape(0) - 1, out,
                      n_threads);
    }
    return g;
}

}  // namespace

void register_esn(py::module_& m) {
    m.def("esn_forward", &forward, py::arg("A"), py::arg("indptr"), py::arg("indices"),
          py::arg("data"), py::arg("offsets"), py::arg("n_threads") = 1,
          "Reservoir states H = sigmoid(A + W_rec h_prev) over concatenated sequences.");
    m.def("esn_backward", &backward, py::arg("H"), py::arg("G"), py::arg("indptr"),
          py::arg("indices"), py::arg("data"), py::arg("offsets"), py::arg("m"),
          py::arg("n_threads") = 1,
          "Sum over k = 0..m of the k-step back-propagated pre-activation gradients.");
    m.def("esn_rec_grad", &rec_grad, py::arg("D"), py::arg("H"), py::arg("indptr"),
          py::arg("indices"), py::arg("data"), py::arg("offsets"), py::arg("n_threads") = 1,
          "Gradient on the nonzeros of W_rec: sum_f D[f, i] H[f-1, j].");
}

}  // namespace cscore::bindings
