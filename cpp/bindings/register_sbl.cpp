#include "register.hpp"

namespace cscore::bindings {

void register_sbl(pybind11::module_& /*m*/) {}

}  // namespace cscore::bindings
