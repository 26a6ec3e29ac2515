#include "register.hpp"

namespace cscore::bindings {

void register_lstm(pybind11::module_& /*m*/) {}

}  // namespace cscore::bindings
