// Typed field readers, extension objects and attributes (metadata_internal.h).
#include "strata/storage/zarr/metadata_internal.h"

#include <algorithm>
#include <limits>

namespace strata::internal_zarr {

const OrderedJson* Find(const OrderedJson& object, std::string_view key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

Result<const OrderedJson*> Require(const OrderedJson& object, std::string_view key,
                                   const Doc& doc) {
  const OrderedJson* value = Find(object, key);
  if (value == nullptr) return doc.Missing(key);
  return value;
}

// The value of an integer JSON number, or nullopt when it is not one (floats,
// even integral ones, are not integers here).
std::optional<int64_t> AsInt64(const OrderedJson& value) {
  if (value.is_number_unsigned()) {
    uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  return std::nullopt;
}

Result<int64_t> ReadInt(const OrderedJson& value, std::string_view field, int64_t lo, int64_t hi,
                        const Doc& doc) {
  std::optional<int64_t> v = AsInt64(value);
  if (!v.has_value() || *v < lo || *v > hi) {
    return doc.Invalid("'{}' must be an integer from {} to {}, got {}", field, lo, hi,
                       Excerpt(value));
  }
  return *v;
}

Result<std::string> ReadString(const OrderedJson& value, std::string_view field, const Doc& doc) {
  if (!value.is_string()) {
    return doc.Invalid("'{}' must be a string, got {}", field, Excerpt(value));
  }
  return value.get<std::string>();
}

Result<bool> ReadBool(const OrderedJson& value, std::string_view field, const Doc& doc) {
  if (!value.is_boolean()) {
    return doc.Invalid("'{}' must be true or false, got {}", field, Excerpt(value));
  }
  return value.get<bool>();
}

// A list of integers >= min_value ("shape" 0, chunk shapes 1).
Result<Shape> ReadIndexList(const OrderedJson& value, std::string_view field, Index min_value,
                            const Doc& doc) {
  auto bad = [&] {
    return doc.Invalid("'{}' must be a list of {} integers, got {}", field,
                       min_value == 0 ? "non-negative" : "positive", Excerpt(value));
  };
  if (!value.is_array()) return bad();
  Shape shape;
  for (const OrderedJson& element : value) {
    std::optional<int64_t> v = AsInt64(element);
    if (!v.has_value() || *v < min_value) return bad();
    shape.push_back(*v);
  }
  return shape;
}

// Checks that `object` (a codec configuration, a compressor) has no keys
// outside `known`.
Status CheckKnownKeys(const OrderedJson& object, std::initializer_list<std::string_view> known,
                      std::string_view what, const Doc& doc) {
  for (const auto& [key, value] : object.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return doc.Invalid("unknown key '{}' in {}", key, what);
    }
  }
  return Status::Ok();
}

Result<NamedConfiguration> ReadNamedConfiguration(const OrderedJson& value, std::string_view field,
                                                  const Doc& doc) {
  NamedConfiguration out;
  if (value.is_string()) {
    out.name = value.get<std::string>();
    return out;
  }
  const OrderedJson* name = value.is_object() ? Find(value, "name") : nullptr;
  if (name == nullptr || !name->is_string()) {
    return doc.Invalid("'{}' must be a name or an object with a string 'name', got {}", field,
                       Excerpt(value));
  }
  out.name = name->get<std::string>();
  for (const auto& [key, member] : value.items()) {
    if (key == "name" || key == "must_understand") continue;
    if (key != "configuration") {
      return doc.Invalid("unknown key '{}' in '{}' {}", key, field, Excerpt(value));
    }
    if (!member.is_object()) {
      return doc.Invalid("'{}.configuration' must be an object, got {}", field, Excerpt(member));
    }
    out.configuration = member;
  }
  return out;
}

std::string_view VariableLengthKind(std::string_view name) {
  if (name == "string" || name == "variable_length_utf8" || name == "vlen-utf8") {
    return "variable-length UTF-8 strings";
  }
  if (name == "variable_length_bytes" || name == "vlen-bytes") return "variable-length bytes";
  if (name == "vlen-array") return "variable-length arrays";
  if (name == "json2" || name == "pickle" || name == "msgpack2") {
    return "variable-length Python objects";
  }
  return {};
}

// Strata's chunks hold fixed-size elements only: an array of
// variable-length strings (or other objects) is refused in one message that
// names its data type (`dtype`, as the document spells it) and what it holds.
Status RefuseVariableLength(std::string_view dtype, std::string_view what, const Doc& doc) {
  return InvalidArgumentError(fmt::format(
      "unsupported {} in {}: {} are not supported (Strata holds fixed-size elements only; "
      "fixed-length strings, numpy '<U<n>' or '|S<n>', zarr v3 fixed_length_utf32 or "
      "null_terminated_bytes, are)",
      dtype, doc.name, what));
}

Result<OrderedJson> ParseAttributes(std::string_view text, const Doc& doc) {
  STRATA_ASSIGN_OR_RETURN(OrderedJson attributes, ParseJson(text, doc));
  if (!attributes.is_object()) {
    return doc.Invalid("the attributes must be a JSON object, got {}", Excerpt(attributes));
  }
  return attributes;
}

}  // namespace strata::internal_zarr
