#include "strata/core/dtype.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(DTypeTest, ZarrV2NamesRoundTrip) {
  for (int i = 0; i < kNumDTypes; ++i) {
    DType t(static_cast<DTypeId>(i));
    for (Endian e : {Endian::kLittle, Endian::kBig}) {
      Result<DTypeWithEndian> parsed = ParseZarrV2DType(t.ZarrV2Name(e));
      ASSERT_TRUE(parsed.ok()) << t.ZarrV2Name(e);
      EXPECT_EQ(parsed->dtype, t);
      if (t.size() > 1) EXPECT_EQ(parsed->endian, e);
    }
    EXPECT_EQ(*ParseDTypeName(t.name()), t);
  }
}

TEST(DTypeTest, KnownNames) {
  EXPECT_EQ(DType(DTypeId::kFloat64).ZarrV2Name(Endian::kLittle), "<f8");
  EXPECT_EQ(DType(DTypeId::kInt32).ZarrV2Name(Endian::kBig), ">i4");
  EXPECT_EQ(DType(DTypeId::kBool).ZarrV2Name(Endian::kLittle), "|b1");
  EXPECT_EQ(DType(DTypeId::kComplex128).ZarrV2Name(Endian::kLittle), "<c16");
  EXPECT_EQ(ParseZarrV2DType(">f4")->dtype, DType(DTypeId::kFloat32));
  EXPECT_EQ(ParseZarrV2DType(">f4")->endian, Endian::kBig);
  EXPECT_EQ(ParseZarrV2DType("|u1")->dtype, DType(DTypeId::kUInt8));
  EXPECT_EQ(DType(DTypeId::kComplex64).component_size(), 4);
}

TEST(DTypeTest, RejectsUnsupported) {
  for (const char* bad : {"<U10", "|S5", "<M8[ns]", "<f2", "f8", "<x4", "|V8", ""}) {
    Result<DTypeWithEndian> r = ParseZarrV2DType(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("unsupported Zarr v2 dtype"), std::string_view::npos);
  }
  EXPECT_EQ(ParseDTypeName("float128").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata
