#include "strata/api/array.h"

#include "strata/api/chunks.h"
#include "strata/api/elementwise.h"
#include "strata/api/internal.h"
#include "strata/api/manipulation.h"

namespace strata {
namespace {

const Shape& EmptyShape() {
  static const Shape* s = new Shape();
  return *s;
}
const ChunkGrid& EmptyGrid() {
  static const ChunkGrid* g = new ChunkGrid();
  return *g;
}

}  // namespace

Array::Array() : status_(InvalidArgumentError("an empty Array handle")) {}

Array::Array(std::shared_ptr<const Node> node) : node_(std::move(node)) {
  if (!node_) status_ = InvalidArgumentError("an empty Array handle");
}

Array Array::FromStatus(Status status) {
  Array a;
  a.status_ = status.ok() ? InternalError("Array::FromStatus with OK") : std::move(status);
  return a;
}

const Shape& Array::shape() const { return node_ ? node_->shape : EmptyShape(); }
DType Array::dtype() const { return node_ ? node_->dtype : DType(); }
const ChunkGrid& Array::chunks() const { return node_ ? node_->grid : EmptyGrid(); }
std::string Array::name() const { return node_ ? node_->name : "<error>"; }

const std::shared_ptr<const Spec>& Array::spec() const {
  static const std::shared_ptr<const Spec> kDefault = std::make_shared<const Spec>();
  return node_ && node_->spec ? node_->spec : kDefault;
}

Array Array::rechunk(Shape chunks, ByteSize min_mem) const {
  return strata::rechunk(*this, std::move(chunks), std::move(min_mem));
}
Array Array::astype(DType dtype) const { return strata::astype(*this, dtype); }
Array Array::reshape(Shape shape) const { return strata::reshape(*this, std::move(shape)); }
Array Array::T() const { return strata::transpose(*this); }

DType Scalar::DefaultDType() const {
  switch (kind_) {
    case Kind::kBool: return DTypeId::kBool;
    case Kind::kInt: return DTypeId::kInt64;
    case Kind::kFloat: return DTypeId::kFloat64;
    case Kind::kComplex: return DTypeId::kComplex128;
  }
  return DTypeId::kFloat64;
}

DType Scalar::DTypeBeside(DType a) const {
  switch (kind_) {
    case Kind::kBool:
      return a;
    case Kind::kInt:
      return a.is_bool() ? DType(DTypeId::kInt64) : a;
    case Kind::kFloat:
      return a.is_float() || a.is_complex() ? a : DType(DTypeId::kFloat64);
    case Kind::kComplex:
      if (a.is_complex()) return a;
      if (a.id() == DTypeId::kFloat32) return DTypeId::kComplex64;
      return DTypeId::kComplex128;
  }
  return a;
}

}  // namespace strata
