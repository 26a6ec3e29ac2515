#include "register.hpp"

namespace cscore::bindings {

void register_bcs(pybind11::module_& /*m*/) {}

}  // namespace cscore::bindings
