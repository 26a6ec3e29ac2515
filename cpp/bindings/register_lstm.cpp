// Bindings for LSTM-CS inference (cpp/include/cscore/lstm.hpp).  Arguments are
// checked by python/cscore/lstm_cs/decoder.py; here only shapes are re-checked
// (cheaply) before the GIL is released around the compute loop.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "cscore/lstm.hpp"
#include "cscore/lstm_beam.hpp"
#include "interrupt.hpp"
#include "lstm_common.hpp"
#include "register.hpp"

namespace py = pybind11;

namespace cscore::bindings {
namespace {

template <class T>
lstm::Weights<T> make_weights(const carr<T>& WR, const carr<T>& b, const carr<T>& U,
                              const carr<T>& c_out, const std::string& cell, int M) {
    lstm::Weights<T> w;
    w.cell = lstm_common::parse_cell(cell);
    if (U.ndim() != 2 || WR.ndim() != 2) throw std::invalid_argument("WR and U must be 2-D");
    w.M = M;
    w.N = static_cast<int>(U.shape(0));
    w.H = static_cast<int>(U.shape(1));
    const py::ssize_t GH = static_cast<py::ssize_t>(w.gates()) * w.H;
    expect_shape("WR", WR, {GH, static_cast<py::ssize_t>(M) + w.H});
    expect_shape("b", b, {GH});
    expect_shape("c_out", c_out, {static_cast<py::ssize_t>(w.N)});
    w.WR = WR.data();
    w.b = b.data();
    w.U = U.data();
    w.c_out = c_out.data();
    return w;
}

template <class T>
py::array_t<T> logits(const carr<T>& WR, const carr<T>& b, const carr<T>& U,
                      const carr<T>& c_out, const std::string& cell, const carr<T>& X,
                      int n_threads) {
    if (X.ndim() != 3) throw std::invalid_argument("X must be (B, L, M)");
    const auto w = make_weights(WR, b, U, c_out, cell, static_cast<int>(X.shape(2)));
    return lstm_common::run_logits<T>(
        X, static_cast<py::ssize_t>(w.N),
        [&w, n_threads](const T* x, py::ssize_t Bn, int Ln, T* o, cscore::Control* ctl) {
            lstm::lstm_logits(w, x, Bn, Ln, o, n_threads, lstm::kChunk, ctl);
        });
}

template <class T>
py::tuple decode(const carr<T>& WR, const carr<T>& b, const carr<T>& U, const carr<T>& c_out,
                 const std::string& cell, const carr<double>& At, const carr<double>& col_norms,
                 const carr<double>& Y, int k_max, double tol, bool exclude_selected,
                 bool k_from_user, int n_threads, int chunk, const py::object& panels,
                 const py::object& rrt) {
    if (Y.ndim() != 3) throw std::invalid_argument("Y must be (B, M, L)");
    auto w = make_weights(WR, b, U, c_out, cell, static_cast<int>(Y.shape(1)));
    lstm_common::PanelHolder keep;
    lstm_common::attach_panels(w, panels, keep);
    return lstm_common::run_decode(
        w.N, At, col_norms, Y, k_max, tol, exclude_selected, k_from_user, n_threads, chunk, rrt,
        [&w](const double* at, const double* cn, const double* y, py::ssize_t Bn, int Ln,
             const lstm::DecodeOptions& opt, lstm::DecodeOutput& out, cscore::Control* ctl) {
            lstm::decode(w, at, cn, y, Bn, Ln, opt, out, ctl);
        });
}

// The beam-search rescue (lstm_beam.hpp) of the channels with limits > 0.
py::array_t<std::int64_t> beam_search(const carr<float>& WR, const carr<float>& b,
                                      const carr<float>& U, const carr<float>& c_out,
                                      const std::string& cell, const carr<double>& At,
                                      const carr<double>& Y, const carr<std::int64_t>& atoms,
                                      const carr<double>& tol, const carr<std::int32_t>& limits,
                                      int k_out, int width, int candidates, int n_threads) {
    if (Y.ndim() != 3) throw std::invalid_argument("Y must be (B, M, L)");
    const auto w = make_weights(WR, b, U, c_out, cell, static_cast<int>(Y.shape(1)));
    const py::ssize_t B = Y.shape(0), M = Y.shape(1), L = Y.shape(2);
    expect_shape("At", At, {static_cast<py::ssize_t>(w.N), M});
    if (atoms.ndim() != 3 || atoms.shape(0) != B || atoms.shape(1) != L)
        throw std::invalid_argument("atoms must be (B, L, k)");
    expect_shape("tol", tol, {B});
    expect_shape("limits", limits, {B, L});
    if (width < 1 || candidates < 1 || candidates > w.N)
        throw std::invalid_argument("width >= 1 and 1 <= candidates <= N required");
    if (n_threads < 1) throw std::invalid_argument("n_threads must be >= 1");
    if (k_out < 1 || k_out > std::min<py::ssize_t>(M, w.N))
        throw std::invalid_argument("k_out must be in [1, min(M, N)]");
    const std::int32_t* lim = limits.data();
    for (py::ssize_t i = 0; i < B * L; ++i)
        if (lim[i] < 0 || lim[i] > k_out) throw std::invalid_argument("limits must be in [0, k_out]");
    py::array_t<std::int64_t> found({B, L, static_cast<py::ssize_t>(k_out)});
    lstm::beam::Batch bt;
    bt.Y = Y.data();
    bt.atoms = atoms.data();
    bt.k_in = static_cast<int>(atoms.shape(2));
    bt.tol = tol.data();
    bt.limits = lim;
    bt.found = found.mutable_data();
    bt.k_out = k_out;
    bt.B = B;
    bt.L = static_cast<int>(L);
    lstm::beam::Options opt;
    opt.width = width;
    opt.candidates = candidates;
    opt.n_threads = n_threads;
    const double* at = At.data();
    run_released([&](cscore::Control* ctl) { lstm::beam::rescue(w, at, bt, opt, ctl); });
    return found;
}

template <class T>
void def_typed(py::module_& m, const char* suffix) {
    m.def((std::string("_lstm_logits_") + suffix).c_str(), &logits<T>, py::arg("WR"),
          py::arg("b"), py::arg("U"), py::arg("c_out"), py::arg("cell"), py::arg("X"),
          py::arg("n_threads"), "LSTM-CS forward over channels: X (B, L, M) -> (B, L, N).");
    m.def((std::string("_lstm_decode_") + suffix).c_str(), &decode<T>, py::arg("WR"),
          py::arg("b"), py::arg("U"), py::arg("c_out"), py::arg("cell"), py::arg("At"),
          py::arg("col_norms"), py::arg("Y"), py::arg("k_max"), py::arg("tol"),
          py::arg("exclude_selected"), py::arg("k_from_user"), py::arg("n_threads"),
          py::arg("chunk") = static_cast<int>(lstm::kChunk), py::arg("panels") = py::none(),
          py::arg("rrt") = py::none(),
          "LSTM-CS Algorithm 2 on a batch Y (B, M, L); returns (S, atoms, resid, n_iter, "
          "stop).  panels: None or (WRp, Up), the panel layout of [W | R] and U (float32, "
          "or the float16 bits as uint16) that decodes of at most _lstm_small_max problems "
          "use (same results).  rrt: None, or (gamma2, reset2, patience) for tol=\"auto\": "
          "each problem's path ends by itself (lstm::PathStop) and a sixth array, "
          "the channel residual norms after every step (B, L, k_max + 1), is returned.");
    m.attr("_lstm_panel") = static_cast<int>(lstm::kPanel);
    m.attr("_lstm_panel_step") = static_cast<int>(lstm::kPanelStep);
    m.attr("_lstm_small_max") = static_cast<int>(lstm::kSmallMax);
}

}  // namespace

void register_lstm(py::module_& m) {
    def_typed<float>(m, "f32");
    m.def("_lstm_beam_f32", &beam_search, py::arg("WR"), py::arg("b"), py::arg("U"),
          py::arg("c_out"), py::arg("cell"), py::arg("At"), py::arg("Y"), py::arg("atoms"),
          py::arg("tol"), py::arg("limits"), py::arg("k_out"), py::arg("width"),
          py::arg("candidates"), py::arg("n_threads"),
          "Beam-search rescue of LSTM-CS channels (lstm_beam.hpp): Y (B, M, L), the greedy "
          "atoms (B, L, k), tol (B,), limits (B, L) int32 (0: not searched) -> the supports "
          "found (B, L, k_out), -1 padded (all -1: none).");
    def_typed<double>(m, "f64");
}

}  // namespace cscore::bindings
