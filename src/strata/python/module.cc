// The `_strata` extension module: the C++ API for the `strata` package.
#include "strata/python/binding.h"

PYBIND11_MODULE(_strata, m) {
  m.doc() = "Strata's C++ engine; use it through the `strata` package.";
  strata::python::RegisterErrors(m);
  strata::python::RegisterArray(m);
  strata::python::RegisterArrayExtras(m);
  strata::python::RegisterLinalg(m);
  strata::python::RegisterCompute(m);
  strata::python::RegisterBlockFunctions(m);
  strata::python::RegisterExternalRun(m);
  strata::python::RegisterStore(m);
  strata::python::RegisterHierarchy(m);
}
