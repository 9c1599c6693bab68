#include "strata/core/ndarray.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <complex>

#include "strata/base/utf8.h"
#include "strata/core/dtype_dispatch.h"
#include "strata/core/float16.h"

namespace strata {
namespace {

// A copy plan after merging axes: an outer loop over `outer_shape` with the
// given strides, and an inner run of `run_elements` elements that is
// contiguous in both src and dst when `run_contiguous`.
struct CopyLoop {
  Shape shape;
  Shape src_strides;
  Shape dst_strides;
};

// Drops size-1 axes and merges axis i into i+1 when both arrays step through
// them as one (stride[i] == stride[i+1] * shape[i+1]).
CopyLoop Simplify(const Shape& shape, const Shape& a_strides, const Shape& b_strides) {
  CopyLoop loop;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    if (!loop.shape.empty()) {
      Index& n = loop.shape.back();
      if (loop.src_strides.back() == a_strides[i] * shape[i] &&
          loop.dst_strides.back() == b_strides[i] * shape[i]) {
        n *= shape[i];
        loop.src_strides.back() = a_strides[i];
        loop.dst_strides.back() = b_strides[i];
        continue;
      }
    }
    loop.shape.push_back(shape[i]);
    loop.src_strides.push_back(a_strides[i]);
    loop.dst_strides.push_back(b_strides[i]);
  }
  return loop;
}

template <int kSize>
void CopyElements(const std::byte* src, Index src_stride, std::byte* dst, Index dst_stride,
                  Index n) {
  for (Index i = 0; i < n; ++i) {
    std::memcpy(dst, src, kSize);
    src += src_stride;
    dst += dst_stride;
  }
}

void CopyStridedRun(const std::byte* src, Index src_stride, std::byte* dst, Index dst_stride,
                    Index n, int element_size) {
  switch (element_size) {
    case 1: return CopyElements<1>(src, src_stride, dst, dst_stride, n);
    case 2: return CopyElements<2>(src, src_stride, dst, dst_stride, n);
    case 4: return CopyElements<4>(src, src_stride, dst, dst_stride, n);
    case 8: return CopyElements<8>(src, src_stride, dst, dst_stride, n);
    case 16: return CopyElements<16>(src, src_stride, dst, dst_stride, n);
  }
  for (Index i = 0; i < n; ++i) {
    std::memcpy(dst + i * dst_stride, src + i * src_stride, element_size);
  }
}

}  // namespace

Shape ContiguousStrides(std::span<const Index> shape, Index element_size) {
  Shape strides(shape.size());
  Index s = element_size;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<Index>(shape[i], 1);
  }
  return strides;
}

void CopyArray(const ConstArrayView& src, const ArrayView& dst) {
  STRATA_CHECK(src.dtype() == dst.dtype());
  STRATA_CHECK(src.shape() == dst.shape())
      << ShapeToString(src.shape()) << " vs " << ShapeToString(dst.shape());
  if (src.num_elements() == 0) return;
  const int esize = src.dtype().size();
  CopyLoop loop = Simplify(src.shape(), src.byte_strides(), dst.byte_strides());
  if (loop.shape.empty()) {  // a single element
    std::memcpy(dst.data(), src.data(), esize);
    return;
  }
  const int r = static_cast<int>(loop.shape.size());
  const Index inner = loop.shape[r - 1];
  const bool memcpy_run = loop.src_strides[r - 1] == esize && loop.dst_strides[r - 1] == esize;
  Shape outer(loop.shape.begin(), loop.shape.end() - 1);
  Shape idx(outer.size(), 0);
  do {
    const std::byte* s = src.data();
    std::byte* d = dst.data();
    for (size_t i = 0; i < outer.size(); ++i) {
      s += idx[i] * loop.src_strides[i];
      d += idx[i] * loop.dst_strides[i];
    }
    if (memcpy_run) {
      std::memcpy(d, s, static_cast<size_t>(inner * esize));
    } else {
      CopyStridedRun(s, loop.src_strides[r - 1], d, loop.dst_strides[r - 1], inner, esize);
    }
  } while (NextIndex(idx, outer));
}

void FillArray(const ArrayView& dst, std::span<const std::byte> element) {
  const int esize = dst.dtype().size();
  STRATA_CHECK(static_cast<int>(element.size()) == esize);
  if (dst.num_elements() == 0) return;
  bool all_zero = std::all_of(element.begin(), element.end(),
                              [](std::byte b) { return b == std::byte{0}; });
  if (dst.is_contiguous()) {
    std::byte* p = dst.data();
    Index n = dst.num_elements();
    if (all_zero) {
      std::memset(p, 0, static_cast<size_t>(n * esize));
      return;
    }
    // Doubling memcpy: write one element, then copy what is written.
    std::memcpy(p, element.data(), esize);
    Index done = 1;
    while (done < n) {
      Index chunk = std::min(done, n - done);
      std::memcpy(p + done * esize, p, static_cast<size_t>(chunk * esize));
      done += chunk;
    }
    return;
  }
  Shape idx(dst.rank(), 0);
  do {
    std::memcpy(dst.ElementPointer(idx), element.data(), esize);
  } while (NextIndex(idx, dst.shape()));
}

void ByteSwapInPlace(std::span<std::byte> bytes, int component_size) {
  const size_t n = bytes.size() / component_size;
  std::byte* p = bytes.data();
  switch (component_size) {
    case 1:
      return;
    case 2:
      for (size_t i = 0; i < n; ++i) {
        uint16_t v;
        std::memcpy(&v, p + 2 * i, 2);
        v = __builtin_bswap16(v);
        std::memcpy(p + 2 * i, &v, 2);
      }
      return;
    case 4:
      for (size_t i = 0; i < n; ++i) {
        uint32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        v = __builtin_bswap32(v);
        std::memcpy(p + 4 * i, &v, 4);
      }
      return;
    case 8:
      for (size_t i = 0; i < n; ++i) {
        uint64_t v;
        std::memcpy(&v, p + 8 * i, 8);
        v = __builtin_bswap64(v);
        std::memcpy(p + 8 * i, &v, 8);
      }
      return;
    default:
      for (size_t i = 0; i < n; ++i) std::reverse(p + i * component_size, p + (i + 1) * component_size);
  }
}

Result<NDArray> NDArray::Allocate(MemoryPool& pool, DType dtype, Shape shape) {
  STRATA_ASSIGN_OR_RETURN(Index n, CheckedNumElements(shape, "array shape"));
  Index bytes;
  if (__builtin_mul_overflow(n, static_cast<Index>(dtype.size()), &bytes)) {
    return InvalidArgumentError("array of shape " + ShapeToString(shape) + " is too large");
  }
  NDArray a;
  STRATA_ASSIGN_OR_RETURN(a.buffer_, pool.Allocate(bytes));
  a.dtype_ = dtype;
  a.shape_ = std::move(shape);
  return a;
}

Result<NDArray> NDArray::Zeros(MemoryPool& pool, DType dtype, Shape shape) {
  STRATA_ASSIGN_OR_RETURN(NDArray a, Allocate(pool, dtype, std::move(shape)));
  std::memset(a.data(), 0, static_cast<size_t>(a.nbytes()));
  return a;
}

NDArray NDArray::FromBuffer(Buffer buffer, DType dtype, Shape shape) {
  STRATA_CHECK(buffer.size() == NumElements(shape) * dtype.size())
      << "buffer of " << buffer.size() << " bytes for shape " << ShapeToString(shape);
  NDArray a;
  a.buffer_ = std::move(buffer);
  a.dtype_ = dtype;
  a.shape_ = std::move(shape);
  return a;
}

Result<NDArray> NDArray::CopyOf(MemoryPool& pool, const ConstArrayView& view) {
  STRATA_ASSIGN_OR_RETURN(NDArray a, Allocate(pool, view.dtype(), view.shape()));
  CopyArray(view, a.view());
  return a;
}

void NDArray::Reshape(Shape shape) {
  STRATA_CHECK(NumElements(shape) == num_elements());
  shape_ = std::move(shape);
}

namespace {

std::string FormatReal(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return fmt::format("{}", v);
}

}  // namespace

std::string FormatElement(DType dtype, const std::byte* element) {
  const int size = dtype.size();
  switch (dtype.id()) {
    case DTypeId::kFloat16: {
      uint16_t h;
      std::memcpy(&h, element, 2);
      return FormatReal(HalfToDouble(h));
    }
    case DTypeId::kFixedBytes: {
      std::string out = "b'";
      for (int i = 0; i < size && element[i] != std::byte{0}; ++i) {
        const auto c = static_cast<unsigned char>(element[i]);
        if (c == '\\' || c == '\'') {
          out += '\\';
          out += static_cast<char>(c);
        } else if (c >= 0x20 && c < 0x7f) {
          out += static_cast<char>(c);
        } else {
          out += fmt::format("\\x{:02x}", c);
        }
      }
      return out + "'";
    }
    case DTypeId::kFixedUnicode: {
      std::string out = "'";
      for (int i = 0; i < dtype.length(); ++i) {
        uint32_t cp;
        std::memcpy(&cp, element + 4 * i, 4);
        if (cp == 0) break;
        if (!AppendUtf8(cp, out)) out += fmt::format("\\U{:08x}", cp);
      }
      return out + "'";
    }
    case DTypeId::kRawBytes: {
      std::string out = "0x";
      for (int i = 0; i < size; ++i) out += fmt::format("{:02x}", static_cast<unsigned>(element[i]));
      return out;
    }
    default:
      break;
  }
  return VisitDType(dtype, [&](auto tag) -> std::string {
    using T = typename decltype(tag)::type;
    T v;
    std::memcpy(&v, element, sizeof(T));
    if constexpr (std::is_same_v<T, bool>) {
      return v ? "true" : "false";
    } else if constexpr (kIsComplex<T>) {
      return fmt::format("({}{}{}j)", FormatReal(v.real()), v.imag() < 0 ? "" : "+",
                         FormatReal(v.imag()));
    } else if constexpr (std::is_floating_point_v<T>) {
      return FormatReal(v);
    } else {
      return fmt::format("{}", v);
    }
  });
}

bool ArraysEqual(const ConstArrayView& a, const ConstArrayView& b, bool nan_equal) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.num_elements() == 0) return true;
  if (!a.dtype().is_numeric()) {
    // float16 compares as numbers (0 == -0; NaN == NaN when nan_equal), the
    // fixed-length types byte by byte.
    const size_t esize = static_cast<size_t>(a.dtype().size());
    const bool half = a.dtype().is_float16();
    Shape idx(a.rank(), 0);
    do {
      const std::byte* x = a.ElementPointer(idx);
      const std::byte* y = b.ElementPointer(idx);
      if (half) {
        uint16_t u, v;
        std::memcpy(&u, x, 2);
        std::memcpy(&v, y, 2);
        const double du = HalfToDouble(u), dv = HalfToDouble(v);
        if (nan_equal && std::isnan(du) && std::isnan(dv)) continue;
        if (!(du == dv)) return false;
      } else if (std::memcmp(x, y, esize) != 0) {
        return false;
      }
    } while (NextIndex(idx, a.shape()));
    return true;
  }
  return VisitDType(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Shape idx(a.rank(), 0);
    do {
      T x, y;
      std::memcpy(&x, a.ElementPointer(idx), sizeof(T));
      std::memcpy(&y, b.ElementPointer(idx), sizeof(T));
      if constexpr (std::is_floating_point_v<T>) {
        if (nan_equal && std::isnan(x) && std::isnan(y)) continue;
        if (!(x == y)) return false;
      } else if constexpr (kIsComplex<T>) {
        auto same = [&](auto u, auto v) { return u == v || (nan_equal && std::isnan(u) && std::isnan(v)); };
        if (!same(x.real(), y.real()) || !same(x.imag(), y.imag())) return false;
      } else {
        if (x != y) return false;
      }
    } while (NextIndex(idx, a.shape()));
    return true;
  });
}

}  // namespace strata
