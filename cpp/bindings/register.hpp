// Declarations of the per-family registration functions.  module.cpp is the
// only PYBIND11_MODULE; each family lives in its own register_<family>.cpp.
#pragma once

#include <pybind11/pybind11.h>

namespace cscore::bindings {

void register_greedy(pybind11::module_& m);
void register_bcs(pybind11::module_& m);
void register_sbl(pybind11::module_& m);
void register_lstm(pybind11::module_& m);
void register_esn(pybind11::module_& m);
void register_blstm(pybind11::module_& m);
void register_amp(pybind11::module_& m);

}  // namespace cscore::bindings
