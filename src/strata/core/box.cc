#include "strata/core/box.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace strata {

Index NumElements(std::span<const Index> shape) {
  Index n = 1;
  for (Index d : shape) {
    STRATA_CHECK(d >= 0) << "negative extent " << d;
    STRATA_CHECK(!__builtin_mul_overflow(n, d, &n)) << "element count overflows int64";
  }
  return n;
}

Result<Index> CheckedNumElements(std::span<const Index> shape, std::string_view what) {
  Index n = 1;
  for (Index d : shape) {
    if (d < 0) {
      return InvalidArgumentError(
          fmt::format("{} {} has a negative extent", what, ShapeToString(shape)));
    }
    if (__builtin_mul_overflow(n, d, &n)) {
      return InvalidArgumentError(
          fmt::format("{} {} has more elements than fit in int64", what, ShapeToString(shape)));
    }
  }
  return n;
}

std::string ShapeToString(std::span<const Index> shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

std::string JoinIndices(std::span<const Index> indices, char separator) {
  if (indices.empty()) return "0";  // Zarr's key for the single chunk of a rank-0 array
  std::string out;
  for (size_t i = 0; i < indices.size(); ++i) {
    if (i) out += separator;
    out += std::to_string(indices[i]);
  }
  return out;
}

Result<Shape> ParseShape(std::string_view text, std::string_view what) {
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError(
        fmt::format("invalid {} '{}': {} (expected integers such as 10000,1000)", what, text, why));
  };
  std::string s;
  for (char c : text) {
    if (c != '(' && c != ')' && c != '[' && c != ']' && !std::isspace(static_cast<unsigned char>(c)))
      s += c;
  }
  Shape shape;
  if (s.empty()) return shape;  // rank 0
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (item.empty()) {
      if (comma == std::string::npos && !shape.empty()) break;  // trailing comma: "(5,)"
      return bad("empty item");
    }
    Index v = 0;
    for (char c : item) {
      if (c < '0' || c > '9') return bad(fmt::format("'{}' is not a non-negative integer", item));
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, c - '0', &v)) {
        return bad("too large");
      }
    }
    shape.push_back(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return shape;
}

bool Box::empty() const {
  return std::any_of(shape.begin(), shape.end(), [](Index d) { return d == 0; });
}

// Never overflows whatever `other` holds (a region from outside, before
// CheckBox): this box's end is in range, and other.origin >= origin >= 0.
bool Box::Contains(const Box& other) const {
  for (int i = 0; i < rank(); ++i) {
    Index room;
    if (other.origin[i] < origin[i] || other.shape[i] < 0 ||
        __builtin_sub_overflow(end(i), other.origin[i], &room) || other.shape[i] > room) {
      return false;
    }
  }
  return true;
}

std::string Box::ToString() const {
  std::string out = "[";
  for (int i = 0; i < rank(); ++i) {
    if (i) out += ", ";
    Index stop;
    if (__builtin_add_overflow(origin[i], shape[i], &stop)) {
      // Only a box CheckBox refuses: say what it holds.
      out += fmt::format("{}:{}+{}", origin[i], origin[i], shape[i]);
    } else {
      out += fmt::format("{}:{}", origin[i], stop);
    }
  }
  return out + "]";
}

Box Intersect(const Box& a, const Box& b) {
  STRATA_CHECK(a.rank() == b.rank());
  Box out;
  out.origin.resize(a.rank());
  out.shape.resize(a.rank());
  for (int i = 0; i < a.rank(); ++i) {
    Index lo = std::max(a.origin[i], b.origin[i]);
    Index hi = std::min(a.end(i), b.end(i));
    out.origin[i] = lo;
    out.shape[i] = std::max<Index>(0, hi - lo);
  }
  return out;
}

Box Translate(const Box& box, std::span<const Index> new_origin) {
  Box out = box;
  for (int i = 0; i < box.rank(); ++i) out.origin[i] -= new_origin[i];
  return out;
}

Index LinearIndex(std::span<const Index> indices, std::span<const Index> shape) {
  Index linear = 0;
  for (size_t i = 0; i < shape.size(); ++i) linear = linear * shape[i] + indices[i];
  return linear;
}

void UnravelIndex(Index linear, std::span<const Index> shape, std::span<Index> out) {
  for (size_t i = shape.size(); i-- > 0;) {
    out[i] = shape[i] == 0 ? 0 : linear % shape[i];
    linear = shape[i] == 0 ? 0 : linear / shape[i];
  }
}

bool NextIndex(std::span<Index> indices, std::span<const Index> shape) {
  for (size_t i = shape.size(); i-- > 0;) {
    if (++indices[i] < shape[i]) return true;
    indices[i] = 0;
  }
  return false;
}

bool NextIndexInRange(std::span<Index> indices, std::span<const Index> begin,
                      std::span<const Index> end) {
  for (size_t i = indices.size(); i-- > 0;) {
    if (++indices[i] < end[i]) return true;
    indices[i] = begin[i];
  }
  return false;
}

}  // namespace strata
