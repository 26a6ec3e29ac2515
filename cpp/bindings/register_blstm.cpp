// Bindings for bidirectional LSTM-CS inference (cpp/include/cscore/blstm.hpp).
// Arguments are checked by python/cscore/lstm_cs/blstm.py; here only shapes are
// re-checked (cheaply) before the GIL is released around the compute loop.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cscore/blstm.hpp"
#include "interrupt.hpp"
#include "register.hpp"

namespace py = pybind11;

namespace cscore::bindings {
namespace {

template <class T>
using carr = py::array_t<T, py::array::c_style>;

template <class A>
void expect_shape(const char* name, const A& a, std::initializer_list<py::ssize_t> shape) {
    if (a.ndim() != static_cast<py::ssize_t>(shape.size()))
        throw std::invalid_argument(std::string(name) + ": wrong number of dimensions");
    py::ssize_t d = 0;
    for (py::ssize_t s : shape) {
        if (a.shape(d) != s) throw std::invalid_argument(std::string(name) + ": wrong shape");
        ++d;
    }
}

template <class T>
blstm::Weights<T> make_weights(const carr<T>& WRf, const carr<T>& bf, const carr<T>& WRb,
                               const carr<T>& bb, const carr<T>& U, const carr<T>& c_out,
                               const std::string& cell, int M) {
    lstm::Cell c;
    if (cell == "paper") {
        c = lstm::Cell::paper;
    } else if (cell == "lstm") {
        c = lstm::Cell::lstm;
    } else {
        throw std::invalid_argument("unknown cell type: " + cell);
    }
    if (U.ndim() != 2 || U.shape(1) % 2 != 0 || U.shape(1) < 2)
        throw std::invalid_argument("U must be (N, 2H)");
    const int N = static_cast<int>(U.shape(0));
    const int H = static_cast<int>(U.shape(1) / 2);
    const py::ssize_t GH = static_cast<py::ssize_t>(c == lstm::Cell::paper ? 3 : 4) * H;
    expect_shape("WRf", WRf, {GH, static_cast<py::ssize_t>(M) + H});
    expect_shape("WRb", WRb, {GH, static_cast<py::ssize_t>(M) + H});
    expect_shape("bf", bf, {GH});
    expect_shape("bb", bb, {GH});
    expect_shape("c_out", c_out, {static_cast<py::ssize_t>(N)});
    return blstm::Weights<T>(c, H, M, N, WRf.data(), bf.data(), WRb.data(), bb.data(),
                             U.data(), c_out.data());
}

template <class T>
py::array_t<T> logits(const carr<T>& WRf, const carr<T>& bf, const carr<T>& WRb,
                      const carr<T>& bb, const carr<T>& U, const carr<T>& c_out,
                      const std::string& cell, const carr<T>& X, int n_threads) {
    if (X.ndim() != 3) throw std::invalid_argument("X must be (B, L, M)");
    if (n_threads < 1) throw std::invalid_argument("n_threads must be >= 1");
    const auto w = make_weights(WRf, bf, WRb, bb, U, c_out, cell, static_cast<int>(X.shape(2)));
    const py::ssize_t B = X.shape(0), L = X.shape(1);
    py::array_t<T> out({B, L, static_cast<py::ssize_t>(w.N())});
    T* o = out.mutable_data();
    const T* x = X.data();
    Interruptible intr;
    {
        // Only raw buffers below; no Python object is touched.
        py::gil_scoped_release release;
        blstm::blstm_logits(w, x, B, static_cast<int>(L), o, n_threads, lstm::kChunk,
                            intr.control());
    }
    intr.rethrow_if_interrupted();
    return out;
}

template <class T>
py::tuple decode(const carr<T>& WRf, const carr<T>& bf, const carr<T>& WRb, const carr<T>& bb,
                 const carr<T>& U, const carr<T>& c_out, const std::string& cell,
                 const carr<double>& At, const carr<double>& col_norms, const carr<double>& Y,
                 int k_max, double tol, bool exclude_selected, bool k_from_user, int n_threads,
                 int chunk) {
    if (Y.ndim() != 3) throw std::invalid_argument("Y must be (B, M, L)");
    const py::ssize_t B = Y.shape(0), M = Y.shape(1), L = Y.shape(2);
    const auto w = make_weights(WRf, bf, WRb, bb, U, c_out, cell, static_cast<int>(M));
    const py::ssize_t N = w.N();
    expect_shape("At", At, {N, M});
    expect_shape("col_norms", col_norms, {N});
    if (k_max < 1 || k_max > std::min<py::ssize_t>(M, N))
        throw std::invalid_argument("k_max must be in [1, min(M, N)]");
    if (n_threads < 1) throw std::invalid_argument("n_threads must be >= 1");
    if (chunk < 1) throw std::invalid_argument("chunk must be >= 1");

    py::array_t<double> S({B, N, L});
    py::array_t<std::int64_t> atoms({B, L, static_cast<py::ssize_t>(k_max)});
    py::array_t<double> resid({B, L});
    py::array_t<std::int64_t> n_iter(B);
    py::array_t<std::int32_t> stop(B);
    lstm::DecodeOptions opt;
    opt.k_max = k_max;
    opt.tol = tol;
    opt.exclude_selected = exclude_selected;
    opt.k_from_user = k_from_user;
    opt.n_threads = n_threads;
    opt.chunk = chunk;
    lstm::DecodeOutput out;
    out.S = S.mutable_data();
    out.atoms = atoms.mutable_data();
    out.resid = resid.mutable_data();
    out.n_iter = n_iter.mutable_data();
    out.stop = stop.mutable_data();
    std::fill(out.S, out.S + B * N * L, 0.0);
    const double* at = At.data();
    const double* cn = col_norms.data();
    const double* y = Y.data();
    Interruptible intr;
    {
        // Only raw buffers below; no Python object is touched.
        py::gil_scoped_release release;
        blstm::decode(w, at, cn, y, B, static_cast<int>(L), opt, out, intr.control());
    }
    intr.rethrow_if_interrupted();
    return py::make_tuple(S, atoms, resid, n_iter, stop);
}

template <class T>
void def_typed(py::module_& m, const char* suffix) {
    m.def((std::string("_blstm_logits_") + suffix).c_str(), &logits<T>, py::arg("WRf"),
          py::arg("bf"), py::arg("WRb"), py::arg("bb"), py::arg("U"), py::arg("c_out"),
          py::arg("cell"), py::arg("X"), py::arg("n_threads"),
          "BLSTM-CS forward over channels: X (B, L, M) -> (B, L, N).");
    m.def((std::string("_blstm_decode_") + suffix).c_str(), &decode<T>, py::arg("WRf"),
          py::arg("bf"), py::arg("WRb"), py::arg("bb"), py::arg("U"), py::arg("c_out"),
          py::arg("cell"), py::arg("At"), py::arg("col_norms"), py::arg("Y"),
          py::arg("k_max"), py::arg("tol"), py::arg("exclude_selected"),
          py::arg("k_from_user"), py::arg("n_threads"),
          py::arg("chunk") = static_cast<int>(lstm::kChunk),
          "BLSTM-CS greedy decoding of a batch Y (B, M, L); returns (S, atoms, resid, "
          "n_iter, stop).");
}

}  // namespace

void register_blstm(py::module_& m) {
    def_typed<float>(m, "f32");
    def_typed<double>(m, "f64");
}

}  // namespace cscore::bindings
