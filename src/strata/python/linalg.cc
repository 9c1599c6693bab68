// strata.linalg's C++ side (api/linalg_extension.h): argument conversion only.
// A matrix LAPACK cannot factor (FailedPrecondition from a linalg op) becomes
// strata.linalg.LinAlgError in errors.cc.
#include "strata/api/linalg_extension.h"
#include "strata/python/binding.h"

namespace strata::python {

void RegisterLinalg(py::module_& m) {
  py::module_ l = m.def_submodule("linalg", "api/linalg_extension.h");
  l.def("cross", [](const Array& a, const Array& b, int axis) {
    return Checked(linalg::cross(a, b, axis));
  });
  l.def("diagonal", [](const Array& x, Index offset) {
    return Checked(linalg::diagonal(x, offset));
  });
  l.def("trace", [](const Array& x, Index offset, std::optional<std::string> dtype) {
    std::optional<DType> d;
    if (dtype) d = ToDType(*dtype);
    return Checked(linalg::trace(x, offset, d));
  });
  l.def("outer", [](const Array& a, const Array& b) { return Checked(linalg::outer(a, b)); });
  l.def("vector_norm", [](const Array& x, std::optional<std::vector<int>> axes, bool keepdims,
                          double ord) {
    return Checked(linalg::vector_norm(x, std::move(axes), keepdims, ord));
  });
  l.def("matrix_norm", [](const Array& x, const std::string& ord, bool keepdims) {
    return Checked(linalg::matrix_norm(x, ord, keepdims));
  });
  l.def("matrix_power", [](const Array& x, int64_t n) {
    return Checked(linalg::matrix_power(x, n));
  });
  l.def("cholesky", [](const Array& x, bool upper) { return Checked(linalg::cholesky(x, upper)); });
  l.def("det", [](const Array& x) { return Checked(linalg::det(x)); });
  l.def("eigh", [](const Array& x) {
    linalg::EighResult r = linalg::eigh(x);
    return py::make_tuple(Checked(r.eigenvalues), Checked(r.eigenvectors));
  });
  l.def("eigvalsh", [](const Array& x) { return Checked(linalg::eigvalsh(x)); });
  l.def("inv", [](const Array& x) { return Checked(linalg::inv(x)); });
  l.def("pinv", [](const Array& x, std::optional<double> rtol) {
    return Checked(linalg::pinv(x, rtol));
  });
  l.def("pinv", [](const Array& x, const Array& rtol) { return Checked(linalg::pinv(x, rtol)); });
  l.def("matrix_rank", [](const Array& x, std::optional<double> rtol) {
    return Checked(linalg::matrix_rank(x, rtol));
  });
  l.def("matrix_rank", [](const Array& x, const Array& rtol) {
    return Checked(linalg::matrix_rank(x, rtol));
  });
  l.def("qr", [](const Array& x, const std::string& mode) {
    linalg::QrResult r = linalg::qr(x, mode);
    return py::make_tuple(Checked(r.Q), Checked(r.R));
  });
  l.def("slogdet", [](const Array& x) {
    linalg::SlogdetResult r = linalg::slogdet(x);
    return py::make_tuple(Checked(r.sign), Checked(r.logabsdet));
  });
  l.def("solve", [](const Array& a, const Array& b) { return Checked(linalg::solve(a, b)); });
  l.def("svd", [](const Array& x, bool full_matrices) {
    linalg::SvdResult r = linalg::svd(x, full_matrices);
    return py::make_tuple(Checked(r.U), Checked(r.S), Checked(r.Vh));
  });
  l.def("svdvals", [](const Array& x) { return Checked(linalg::svdvals(x)); });
}

}  // namespace strata::python
