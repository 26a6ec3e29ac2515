// Binding helpers shared by register_lstm.cpp and register_blstm.cpp: shape
// checks, the cell-name parsing, and the DecodeOptions/DecodeOutput set-up and
// result arrays of the greedy decoders (lstm::decode, blstm::decode).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "cscore/lstm.hpp"
#include "common.hpp"

namespace cscore::bindings::lstm_common {

namespace py = pybind11;

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

inline lstm::Cell parse_cell(const std::string& cell) {
    if (cell == "paper") return lstm::Cell::paper;
    if (cell == "lstm") return lstm::Cell::lstm;
    throw std::invalid_argument("unknown cell type: " + cell);
}

// The optional panel layout of one LSTM direction (lstm::Weights::WRp / Up or
// their float16 bits WRh / Uh): `panels` is None or a pair (WRp, Up) of 1-D
// float32 or uint16 arrays of panel_rows(G*H) * (M+H) and panel_rows(N) * H
// numbers.  The arrays are kept in `keep` for the call.  Float64 decodes
// (T = double) take None only.
struct PanelHolder {
    py::array WR, U;
};

template <class T>
void attach_panels(lstm::Weights<T>& w, const py::object& panels, PanelHolder& keep) {
    if (panels.is_none()) return;
    if (!std::is_same<T, float>::value)
        throw std::invalid_argument("panels: only float32 decodes take a panel layout");
    const py::tuple pair = panels.cast<py::tuple>();
    if (pair.size() != 2) throw std::invalid_argument("panels must be a pair (WR, U)");
    const bool half = py::isinstance<py::array_t<std::uint16_t>>(pair[0]);
    if (half) {
        keep.WR = carr<std::uint16_t>::ensure(pair[0]);
        keep.U = carr<std::uint16_t>::ensure(pair[1]);
    } else {
        keep.WR = carr<float>::ensure(pair[0]);
        keep.U = carr<float>::ensure(pair[1]);
    }
    if (!keep.WR || !keep.U) throw std::invalid_argument("panels: arrays expected");
    const py::ssize_t GHp = lstm::panel_rows(w.gates() * w.H), Np = lstm::panel_rows(w.N);
    expect_shape("panels WR", keep.WR, {GHp * (static_cast<py::ssize_t>(w.M) + w.H)});
    expect_shape("panels U", keep.U, {Np * static_cast<py::ssize_t>(w.H)});
    if (half) {
        w.WRh = static_cast<const std::uint16_t*>(keep.WR.data());
        w.Uh = static_cast<const std::uint16_t*>(keep.U.data());
    } else {
        w.WRp = static_cast<const T*>(keep.WR.data());
        w.Up = static_cast<const T*>(keep.U.data());
    }
}

// Allocates the (B, L, N) logits of X (B, L, M) and runs
// `kernel(x, B, L, out, control)` with the GIL released (only raw buffers).
template <class T, class Kernel>
py::array_t<T> run_logits(const carr<T>& X, py::ssize_t N, Kernel&& kernel) {
    const py::ssize_t B = X.shape(0), L = X.shape(1);
    py::array_t<T> out({B, L, N});
    T* o = out.mutable_data();
    const T* x = X.data();
    run_released([&](cscore::Control* ctl) { kernel(x, B, static_cast<int>(L), o, ctl); });
    return out;
}

// The tol="auto" path ends (lstm::PathStop): `rrt` is None or a tuple
// (gamma2, reset2, patience[, check, check_last]), two float64 arrays of k_max
// thresholds, an int >= 1 and an optional check step >= 0 (0: none) with the
// latest step taken for signal that still ends the path there; the arrays are
// kept in `keep` for the call.
struct RrtHolder {
    carr<double> gamma2, reset2;
};

inline bool attach_rrt(lstm::DecodeOptions& opt, const py::object& rrt, RrtHolder& keep) {
    if (rrt.is_none()) return false;
    const py::tuple t = rrt.cast<py::tuple>();
    if (t.size() != 3 && t.size() != 5)
        throw std::invalid_argument("rrt must be (gamma2, reset2, patience[, check, check_last])");
    keep.gamma2 = carr<double>::ensure(t[0]);
    keep.reset2 = carr<double>::ensure(t[1]);
    if (!keep.gamma2 || !keep.reset2) throw std::invalid_argument("rrt: arrays expected");
    expect_shape("rrt gamma2", keep.gamma2, {static_cast<py::ssize_t>(opt.k_max)});
    expect_shape("rrt reset2", keep.reset2, {static_cast<py::ssize_t>(opt.k_max)});
    opt.rrt.patience = t[2].cast<int>();
    if (opt.rrt.patience < 1) throw std::invalid_argument("rrt patience must be >= 1");
    opt.rrt.check = t.size() == 5 ? t[3].cast<int>() : 0;
    opt.rrt.check_last = t.size() == 5 ? t[4].cast<int>() : 0;
    if (opt.rrt.check < 0) throw std::invalid_argument("rrt check must be >= 0");
    opt.rrt.gamma2 = keep.gamma2.data();
    opt.rrt.reset2 = keep.reset2.data();
    return true;
}

// Checks the decode arguments against N (atoms) and M (measurements), allocates
// the result arrays, and runs `kernel(at, col_norms, y, B, L, opt, out, control)`
// with the GIL released.  Returns (S, atoms, resid, n_iter, stop), and with `rrt`
// (see attach_rrt) also path_norms (B, L, k_max + 1).
template <class Kernel>
py::tuple run_decode(py::ssize_t N, const carr<double>& At, const carr<double>& col_norms,
                     const carr<double>& Y, int k_max, double tol, bool exclude_selected,
                     bool k_from_user, int n_threads, int chunk, const py::object& rrt,
                     Kernel&& kernel) {
    const py::ssize_t B = Y.shape(0), M = Y.shape(1), L = Y.shape(2);
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
    RrtHolder keep;
    const bool with_rrt = attach_rrt(opt, rrt, keep);
    py::array_t<double> path_norms(
        std::vector<py::ssize_t>{with_rrt ? B : 0, L, static_cast<py::ssize_t>(k_max) + 1});
    lstm::DecodeOutput out;
    out.path_norms = with_rrt ? path_norms.mutable_data() : nullptr;
    out.S = S.mutable_data();
    out.atoms = atoms.mutable_data();
    out.resid = resid.mutable_data();
    out.n_iter = n_iter.mutable_data();
    out.stop = stop.mutable_data();
    std::fill(out.S, out.S + B * N * L, 0.0);
    const double* at = At.data();
    const double* cn = col_norms.data();
    const double* y = Y.data();
    run_released([&](cscore::Control* ctl) {
        kernel(at, cn, y, B, static_cast<int>(L), opt, out, ctl);
    });
    if (with_rrt) return py::make_tuple(S, atoms, resid, n_iter, stop, path_norms);
    return py::make_tuple(S, atoms, resid, n_iter, stop);
}

}  // namespace cscore::bindings::lstm_common

namespace cscore::bindings {
// The array and shape helpers every LSTM binding uses, by their plain names.
using lstm_common::carr;
using lstm_common::expect_shape;
}  // namespace cscore::bindings
