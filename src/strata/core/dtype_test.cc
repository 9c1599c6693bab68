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
  for (const char* bad : {"<M8[ns]", "|O", "f8", "<x4", "|U10", "<S0", "|V2000000", ""}) {
    Result<DTypeWithEndian> r = ParseZarrV2DType(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("unsupported Zarr v2 dtype"), std::string_view::npos);
  }
  EXPECT_EQ(ParseDTypeName("float128").status().code(), StatusCode::kInvalidArgument);
}

TEST(DTypeTest, StorageTypes) {
  const DType half = DTypeId::kFloat16;
  EXPECT_EQ(half.size(), 2);
  EXPECT_FALSE(half.is_numeric());
  EXPECT_EQ(half.ZarrV2Name(Endian::kBig), ">f2");
  EXPECT_EQ(ParseZarrV2DType("<f2")->dtype, half);
  EXPECT_EQ(*ParseDTypeName("float16"), half);

  const DType s7 = DType::FixedBytes(7), u13 = DType::FixedUnicode(13), v8 = DType::RawBytes(8);
  EXPECT_EQ(s7.size(), 7);
  EXPECT_EQ(s7.component_size(), 1);
  EXPECT_EQ(u13.size(), 52);
  EXPECT_EQ(u13.component_size(), 4);  // UTF-32 code units swap as 4-byte words
  EXPECT_EQ(v8.size(), 8);
  EXPECT_NE(s7, DType::FixedBytes(8));
  EXPECT_NE(s7, DType::RawBytes(7));
  EXPECT_EQ(s7.ToString(), "S7");
  EXPECT_EQ(u13.ToString(), "U13");
  EXPECT_EQ(u13.name(), "fixed_length_utf32");
  EXPECT_EQ(s7.name(), "null_terminated_bytes");
  EXPECT_EQ(v8.name(), "raw_bytes");
  for (DType t : {s7, u13, v8}) {
    EXPECT_TRUE(t.is_fixed_length());
    for (Endian e : {Endian::kLittle, Endian::kBig}) {
      Result<DTypeWithEndian> parsed = ParseZarrV2DType(t.ZarrV2Name(e));
      ASSERT_TRUE(parsed.ok()) << t.ZarrV2Name(e);
      EXPECT_EQ(parsed->dtype, t);
    }
    EXPECT_EQ(*ParseDTypeName(t.ToString()), t);
  }
  EXPECT_EQ(ParseZarrV2DType(">U13")->endian, Endian::kBig);
  EXPECT_EQ(ParseZarrV2DType("|S7")->dtype, s7);
  EXPECT_EQ(u13.ZarrV2Name(Endian::kLittle), "<U13");
  EXPECT_EQ(s7.ZarrV2Name(Endian::kBig), "|S7");
}

}  // namespace
}  // namespace strata
