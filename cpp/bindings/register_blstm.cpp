// Bindings for bidirectional LSTM-CS inference (cpp/include/cscore/blstm.hpp).
// Arguments are checked by python/cscore/lstm_cs/blstm.py; here only shapes are
// re-checked (cheaply) before the GIL is released around the compute loop.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "cscore/blstm.hpp"
#include "interrupt.hpp"
#include "lstm_common.hpp"
#include "register.hpp"

namespace py = pybind11;

namespace cscore::bindings {
namespace {

template <class T>
blstm::Weights<T> make_weights(const carr<T>& WRf, const carr<T>& bf, const carr<T>& WRb,
                               const carr<T>& bb, const carr<T>& U, const carr<T>& c_out,
                               const std::string& cell, int M) {
    const lstm::Cell c = lstm_common::parse_cell(cell);
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
    return lstm_common::run_logits<T>(
        X, static_cast<py::ssize_t>(w.N()),
        [&w, n_threads](const T* x, py::ssize_t Bn, int Ln, T* o, cscore::Control* ctl) {
            blstm::blstm_logits(w, x, Bn, Ln, o, n_threads, lstm::kChunk, ctl);
        });
}

template <class T>
py::tuple decode(const carr<T>& WRf, const carr<T>& bf, const carr<T>& WRb, const carr<T>& bb,
                 const carr<T>& U, const carr<T>& c_out, const std::string& cell,
                 const carr<double>& At, const carr<double>& col_norms, const carr<double>& Y,
                 int k_max, double tol, bool exclude_selected, bool k_from_user, int n_threads,
                 int chunk, const py::object& panels_f, const py::object& panels_b,
                 const py::object& rrt) {
    if (Y.ndim() != 3) throw std::invalid_argument("Y must be (B, M, L)");
    auto w = make_weights(WRf, bf, WRb, bb, U, c_out, cell, static_cast<int>(Y.shape(1)));
    lstm_common::PanelHolder keep_f, keep_b;
    lstm_common::attach_panels(w.fw, panels_f, keep_f);
    lstm_common::attach_panels(w.bw, panels_b, keep_b);
    return lstm_common::run_decode(
        w.N(), At, col_norms, Y, k_max, tol, exclude_selected, k_from_user, n_threads, chunk, rrt,
        [&w](const double* at, const double* cn, const double* y, py::ssize_t Bn, int Ln,
             const lstm::DecodeOptions& opt, lstm::DecodeOutput& out, cscore::Control* ctl) {
            blstm::decode(w, at, cn, y, Bn, Ln, opt, out, ctl);
        });
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
          py::arg("chunk") = static_cast<int>(lstm::kChunk), py::arg("panels_f") = py::none(),
          py::arg("panels_b") = py::none(), py::arg("rrt") = py::none(),
          "BLSTM-CS greedy decoding of a batch Y (B, M, L); returns (S, atoms, resid, "
          "n_iter, stop).  panels_f / panels_b: None or each direction's (WRp, Up) panel "
          "layout, U's half of that direction; rrt: as _lstm_decode_f32.");
}

}  // namespace

void register_blstm(py::module_& m) {
    def_typed<float>(m, "f32");
    def_typed<double>(m, "f64");
}

}  // namespace cscore::bindings
