// NDArray (an owning, aligned, C-order chunk buffer) and strided views.
//
// An NDArray owns a Buffer from a MemoryPool plus a dtype and shape; it is the
// unit every codec, kernel and tier hands around. ArrayView/ConstArrayView
// describe elements anywhere in memory by byte strides: a sub-box of a chunk,
// a stepped slice, a transposed (Fortran-order) chunk. CopyArray moves data
// between any two views of the same shape, merging axes so that the longest
// contiguous runs go through memcpy.
//
// Thread-safety: views are values; an NDArray is owned by one thread at a time.
// A view does not keep its memory alive: whoever made it keeps the owner.
#ifndef STRATA_CORE_NDARRAY_H_
#define STRATA_CORE_NDARRAY_H_

#include <cstring>
#include <span>
#include <string>
#include <type_traits>

#include "strata/base/status.h"
#include "strata/core/box.h"
#include "strata/core/dtype.h"
#include "strata/core/memory_pool.h"

namespace strata {

// Byte strides of a dense C-order array of `shape` with `element_size`-byte elements.
Shape ContiguousStrides(std::span<const Index> shape, Index element_size);

template <typename ByteT>
class StridedView {
  static_assert(std::is_same_v<std::remove_const_t<ByteT>, std::byte>);

 public:
  StridedView() = default;
  StridedView(ByteT* data, DType dtype, Shape shape, Shape byte_strides)
      : data_(data), dtype_(dtype), shape_(std::move(shape)), strides_(std::move(byte_strides)) {}

  // A dense C-order view.
  static StridedView Contiguous(ByteT* data, DType dtype, Shape shape) {
    Shape strides = ContiguousStrides(shape, dtype.size());
    return StridedView(data, dtype, std::move(shape), std::move(strides));
  }

  // A const view of a mutable one.
  template <typename OtherT,
            typename = std::enable_if_t<std::is_const_v<ByteT> && !std::is_const_v<OtherT>>>
  StridedView(const StridedView<OtherT>& other)  // NOLINT
      : data_(other.data()), dtype_(other.dtype()), shape_(other.shape()),
        strides_(other.byte_strides()) {}

  ByteT* data() const { return data_; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Shape& byte_strides() const { return strides_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  Index num_elements() const { return NumElements(shape_); }

  // True when the elements are dense and in C order.
  bool is_contiguous() const { return strides_ == ContiguousStrides(shape_, dtype_.size()); }

  // The sub-box `box` (in this view's coordinates).
  StridedView Slice(const Box& box) const {
    STRATA_DCHECK(box.rank() == rank());
    ByteT* p = data_;
    for (int i = 0; i < rank(); ++i) {
      STRATA_DCHECK(box.origin[i] >= 0 && box.end(i) <= shape_[i]);
      if (box.shape[i] > 0) p += box.origin[i] * strides_[i];
    }
    return StridedView(p, dtype_, box.shape, strides_);
  }

  // Every `steps[i]`-th element of `box` along each axis (steps may be negative:
  // then the slice starts at the box's end - 1 and walks backwards).
  StridedView Stepped(const Box& box, std::span<const Index> steps) const {
    ByteT* p = data_;
    Shape shape(rank()), strides(rank());
    for (int i = 0; i < rank(); ++i) {
      Index step = steps[i];
      STRATA_DCHECK(step != 0);
      Index n = box.shape[i] == 0 ? 0 : (box.shape[i] + std::abs(step) - 1) / std::abs(step);
      Index start = step > 0 ? box.origin[i] : box.end(i) - 1;
      if (n > 0) p += start * strides_[i];
      shape[i] = n;
      strides[i] = strides_[i] * step;
    }
    return StridedView(p, dtype_, std::move(shape), std::move(strides));
  }

  // The view with axes permuted: result axis i is this view's axis perm[i].
  StridedView Transpose(std::span<const int> perm) const {
    Shape shape(rank()), strides(rank());
    for (int i = 0; i < rank(); ++i) {
      shape[i] = shape_[perm[i]];
      strides[i] = strides_[perm[i]];
    }
    return StridedView(data_, dtype_, std::move(shape), std::move(strides));
  }

  // The same bytes seen with a new shape (requires a contiguous view).
  StridedView Reshaped(Shape shape) const {
    STRATA_CHECK(is_contiguous());
    STRATA_CHECK(NumElements(shape) == num_elements());
    return Contiguous(data_, dtype_, std::move(shape));
  }

  // Address of the element at `indices`.
  ByteT* ElementPointer(std::span<const Index> indices) const {
    ByteT* p = data_;
    for (int i = 0; i < rank(); ++i) p += indices[i] * strides_[i];
    return p;
  }

  // Span of the bytes of a contiguous view.
  std::span<ByteT> bytes() const {
    STRATA_DCHECK(is_contiguous());
    return {data_, static_cast<size_t>(num_elements() * dtype_.size())};
  }

 private:
  ByteT* data_ = nullptr;
  DType dtype_;
  Shape shape_;
  Shape strides_;
};

using ArrayView = StridedView<std::byte>;
using ConstArrayView = StridedView<const std::byte>;

// Copies `src` into `dst`; same dtype and shape required (CHECKed).
void CopyArray(const ConstArrayView& src, const ArrayView& dst);

// Writes `element` (dtype-size bytes) into every element of `dst`.
void FillArray(const ArrayView& dst, std::span<const std::byte> element);

// Reverses the bytes of each `component_size`-byte value in `bytes` (endian
// conversion; complex values swap each component).
void ByteSwapInPlace(std::span<std::byte> bytes, int component_size);

class NDArray {
 public:
  NDArray() = default;
  NDArray(NDArray&&) = default;
  NDArray& operator=(NDArray&&) = default;

  // An uninitialised array from `pool`; ResourceExhausted from the pool's cap.
  static Result<NDArray> Allocate(MemoryPool& pool, DType dtype, Shape shape);
  // Same, filled with zeros.
  static Result<NDArray> Zeros(MemoryPool& pool, DType dtype, Shape shape);
  // Wraps a buffer holding exactly the array's bytes (CHECKed).
  static NDArray FromBuffer(Buffer buffer, DType dtype, Shape shape);
  // A deep copy (from `pool`) of any view.
  static Result<NDArray> CopyOf(MemoryPool& pool, const ConstArrayView& view);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  Index num_elements() const { return NumElements(shape_); }
  int64_t nbytes() const { return num_elements() * dtype_.size(); }

  std::byte* data() { return buffer_.data(); }
  const std::byte* data() const { return buffer_.data(); }
  template <typename T>
  T* data_as() {
    return reinterpret_cast<T*>(buffer_.data());
  }
  template <typename T>
  const T* data_as() const {
    return reinterpret_cast<const T*>(buffer_.data());
  }
  template <typename T>
  std::span<T> values() {
    return {data_as<T>(), static_cast<size_t>(num_elements())};
  }
  template <typename T>
  std::span<const T> values() const {
    return {data_as<T>(), static_cast<size_t>(num_elements())};
  }

  ArrayView view() { return ArrayView::Contiguous(buffer_.data(), dtype_, shape_); }
  ConstArrayView view() const { return ConstArrayView::Contiguous(buffer_.data(), dtype_, shape_); }
  std::span<std::byte> bytes() { return {buffer_.data(), static_cast<size_t>(nbytes())}; }
  std::span<const std::byte> bytes() const {
    return {buffer_.data(), static_cast<size_t>(nbytes())};
  }

  Buffer& buffer() { return buffer_; }
  Buffer release_buffer() && { return std::move(buffer_); }

  // Changes the shape without moving data (same element count, CHECKed).
  void Reshape(Shape shape);

 private:
  Buffer buffer_;
  DType dtype_;
  Shape shape_;
};

// One element as text, for messages and `strata info`/`verify`: numbers as
// numpy prints them (NaN, Infinity), complex as "(1+2j)", bool as true/false,
// fixed-length bytes and unicode as quoted strings (non-printable bytes as
// \xNN, up to the first NUL), raw bytes as hex.
std::string FormatElement(DType dtype, const std::byte* element);

// True when both views have the same dtype, shape and element bytes. Floating
// point NaNs compare equal to NaNs when `nan_equal` (bitwise for everything else).
bool ArraysEqual(const ConstArrayView& a, const ConstArrayView& b, bool nan_equal = true);

}  // namespace strata

#endif  // STRATA_CORE_NDARRAY_H_
