// Array: the lazy array handle users compose, as in Cubed and Dask.
//
//   strata::Spec spec;  spec.allowed_mem = "400MB";
//   strata::Array a = strata::random::random({10000, 10000}, {10000, 1000}, 42, spec);
//   strata::Array b = strata::mean(a * a, {0});
//   strata::Result<strata::NDArray> r = strata::compute(b);
//
// Building an Array never touches data. An operation that cannot be built
// (shapes that do not broadcast, an axis out of range) returns an Array in an
// error state instead of throwing: its status() says why, every operation on
// it passes the error on, and plan()/compute() return it. So long expressions
// need no checks in between, and errors are still values.
//
// Thread-safety: an Array is an immutable value, cheap to copy.
#ifndef STRATA_API_ARRAY_H_
#define STRATA_API_ARRAY_H_

#include <complex>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "strata/base/status.h"
#include "strata/core/chunk_grid.h"
#include "strata/core/dtype.h"
#include "strata/plan/node.h"
#include "strata/plan/spec.h"

namespace strata {

class Array {
 public:
  // An error array: "an empty Array handle".
  Array();
  explicit Array(std::shared_ptr<const Node> node);
  static Array FromStatus(Status status);

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  const Shape& shape() const;
  int ndim() const { return static_cast<int>(shape().size()); }
  Index size() const { return NumElements(shape()); }
  DType dtype() const;
  // The chunk grid; chunksize() is its nominal (largest) chunk shape.
  const ChunkGrid& chunks() const;
  const Shape& chunksize() const { return chunks().chunk_shape(); }
  // Bytes of the elements; saturates at the int64 maximum rather than overflow (an
  // array built from metadata or a creation op always fits).
  int64_t nbytes() const {
    int64_t n;
    return __builtin_mul_overflow(size(), int64_t{dtype().size()}, &n)
               ? std::numeric_limits<int64_t>::max()
               : n;
  }
  // "array-007".
  std::string name() const;
  const std::shared_ptr<const Node>& node() const { return node_; }
  const std::shared_ptr<const Spec>& spec() const;

  // Shorthands for the free functions of the same names.
  Array rechunk(Shape chunks, ByteSize min_mem = {}) const;
  Array astype(DType dtype) const;
  Array reshape(Shape shape) const;
  Array T() const;  // reverses the axes

 private:
  std::shared_ptr<const Node> node_;
  Status status_;
};

// A scalar operand. Like a Python scalar in the Array API, it takes the dtype
// of the array it meets when their kinds agree (an int scalar with a float32
// array is float32; a float scalar with an int array gives float64).
class Scalar {
 public:
  enum class Kind { kBool, kInt, kFloat, kComplex };
  Scalar(bool v) : kind_(Kind::kBool), real_(v), int_(v) {}                     // NOLINT
  Scalar(int v) : kind_(Kind::kInt), real_(v), int_(v) {}                       // NOLINT
  Scalar(long v) : kind_(Kind::kInt), real_(double(v)), int_(v) {}              // NOLINT
  Scalar(long long v) : kind_(Kind::kInt), real_(double(v)), int_(v) {}         // NOLINT
  Scalar(unsigned v) : kind_(Kind::kInt), real_(v), int_(v) {}                  // NOLINT
  Scalar(unsigned long v) : kind_(Kind::kInt), real_(double(v)), int_(int64_t(v)) {}  // NOLINT
  Scalar(float v) : kind_(Kind::kFloat), real_(v) {}                            // NOLINT
  Scalar(double v) : kind_(Kind::kFloat), real_(v) {}                           // NOLINT
  Scalar(std::complex<double> v) : kind_(Kind::kComplex), real_(v.real()), imag_(v.imag()) {}  // NOLINT

  Kind kind() const { return kind_; }
  double real() const { return real_; }
  double imag() const { return imag_; }
  int64_t integer() const { return int_; }
  // The dtype this scalar takes beside an array of `array_dtype`.
  DType DTypeBeside(DType array_dtype) const;
  // The dtype of this scalar alone (bool, int64, float64, complex128).
  DType DefaultDType() const;

 private:
  Kind kind_;
  double real_ = 0;
  double imag_ = 0;
  int64_t int_ = 0;
};

}  // namespace strata

#endif  // STRATA_API_ARRAY_H_
