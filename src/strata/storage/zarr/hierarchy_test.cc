// ReadHierarchy's options for readers other than Strata's own
// (strata.xarray): consolidated metadata used, required or ignored; each
// node's document; arrays of variable-length strings kept as nodes.
#include "strata/storage/zarr/hierarchy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "strata/storage/memory_store.h"

namespace strata {
namespace {

constexpr std::string_view kGroup =
    R"({"zarr_format": 3, "node_type": "group", "attributes": {"title": "t"}})";

// A float32 array whose fill value is a NaN with a payload, in hex.
constexpr std::string_view kFloat = R"({
  "zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "float32",
  "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
  "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
  "fill_value": "0x7fc00001", "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
  "dimension_names": ["x"], "attributes": {}})";

// zarr-python 3's variable-length strings (a coordinate of names).
constexpr std::string_view kStrings = R"({
  "zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "string",
  "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
  "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
  "fill_value": "", "codecs": [{"name": "vlen-utf8", "configuration": {}}],
  "dimension_names": ["x"], "attributes": {"long_name": "station"}})";

class HierarchyOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(store_.Set("ds/zarr.json", kGroup).ok());
    ASSERT_TRUE(store_.Set("ds/t/zarr.json", kFloat).ok());
    ASSERT_TRUE(store_.Set("ds/name/zarr.json", kStrings).ok());
  }
  void Consolidate() {
    std::string root = std::string(kGroup);
    root.pop_back();  // the closing brace
    root += R"(, "consolidated_metadata": {"kind": "inline", "must_understand": false, )";
    root += R"("metadata": {"t": )" + std::string(kFloat) + R"(, "name": )" +
            std::string(kStrings) + "}}}";
    ASSERT_TRUE(store_.Set("ds/zarr.json", root).ok());
  }
  MemoryStore store_;
};

TEST_F(HierarchyOptionsTest, VariableLengthArraysRefusedByDefault) {
  Result<Hierarchy> h = ReadHierarchy(store_, "ds");
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(h.status().message().find("variable-length"), std::string_view::npos)
      << h.status().ToString();
}

TEST_F(HierarchyOptionsTest, VariableLengthArraysKeptAsNodes) {
  for (bool consolidated : {false, true}) {
    if (consolidated) Consolidate();
    HierarchyOptions options;
    options.keep_variable_length = true;
    options.keep_documents = true;
    Result<Hierarchy> h = ReadHierarchy(store_, "ds", options);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    EXPECT_EQ(h->from_consolidated, consolidated);
    ASSERT_EQ(h->nodes.size(), 3u);
    const HierarchyNode& name = h->nodes[1];
    EXPECT_EQ(name.path, "name");
    EXPECT_TRUE(name.is_array && name.variable_length && !name.array);
    EXPECT_EQ(name.variable_length_shape, Shape({4}));
    EXPECT_EQ(name.dimensions, (std::vector<std::optional<std::string>>{"x"}));
    EXPECT_NE(name.attributes_json().find("station"), std::string::npos);
    EXPECT_NE(name.document.find("vlen-utf8"), std::string::npos);
    const HierarchyNode& t = h->nodes[2];
    ASSERT_TRUE(t.array.has_value());
    uint32_t bits = 0;
    ASSERT_EQ(t.array->fill_value.bytes.size(), sizeof bits);
    std::memcpy(&bits, t.array->fill_value.bytes.data(), sizeof bits);
    EXPECT_EQ(bits, 0x7fc00001u);  // the payload kept
    EXPECT_NE(t.document.find("0x7fc00001"), std::string::npos);
    EXPECT_NE(h->nodes[0].document.find("title"), std::string::npos);
  }
}

TEST_F(HierarchyOptionsTest, ConsolidatedRequiredOrIgnored) {
  HierarchyOptions options;
  options.keep_variable_length = true;
  options.consolidated = HierarchyOptions::Consolidated::kRequire;
  Result<Hierarchy> h = ReadHierarchy(store_, "ds", options);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(h.status().message().find("has no consolidated metadata"), std::string_view::npos)
      << h.status().ToString();

  Consolidate();
  h = ReadHierarchy(store_, "ds", options);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_TRUE(h->from_consolidated);

  // Ignored: the members' own metadata, read by listing, even with a stale
  // consolidated copy (here, one without the array added after it).
  ASSERT_TRUE(store_.Set("ds/u/zarr.json", kFloat).ok());
  options.consolidated = HierarchyOptions::Consolidated::kIgnore;
  h = ReadHierarchy(store_, "ds", options);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_FALSE(h->from_consolidated);
  EXPECT_EQ(h->nodes.size(), 4u);
}

}  // namespace
}  // namespace strata
