#include "register.hpp"

namespace cscore::bindings {

void register_greedy(pybind11::module_& /*m*/) {}

}  // namespace cscore::bindings
