#include "strata/storage/location.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "strata/base/temp_dir.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

Location Resolve(const std::string& url) {
  Result<Location> l = ResolveLocation(url);
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  return l.ok() ? *l : Location{};
}

TEST(LocationTest, LocalSpellingsOfOnePlaceAreEqual) {
  TempDir dir;
  const std::string a = dir.path() + "/a.zarr";
  fs::create_directories(a);
  fs::create_directories(dir.path() + "/x");
  fs::create_symlink(a, dir.path() + "/link.zarr");
  const std::string canonical = fs::canonical(a).string();
  for (const std::string& spelling :
       {a, a + "/", a + "//", dir.path() + "//a.zarr", dir.path() + "/x/../a.zarr",
        dir.path() + "/./a.zarr", dir.path() + "/link.zarr", "file://" + a}) {
    EXPECT_EQ(Resolve(spelling).path, canonical) << spelling;
  }
  // Relative to the working directory, and "." from inside.
  const fs::path cwd = fs::current_path();
  fs::current_path(a);
  EXPECT_EQ(Resolve(".").path, canonical);
  EXPECT_EQ(Resolve("../a.zarr").path, canonical);
  fs::current_path(cwd);
}

TEST(LocationTest, MissingPartIsNormalisedLexically) {
  TempDir dir;
  const std::string base = fs::canonical(dir.path()).string();
  EXPECT_EQ(Resolve(dir.path() + "/new/../b.zarr/").path, base + "/b.zarr");
  EXPECT_EQ(Resolve(dir.path() + "/new//c.zarr").path, base + "/new/c.zarr");
}

TEST(LocationTest, OverlapIsComponentWise) {
  TempDir dir;
  const std::string d = dir.path();
  auto overlaps = [&](const std::string& a, const std::string& b) {
    return Overlaps(Resolve(a), Resolve(b));
  };
  EXPECT_TRUE(overlaps(d + "/a.zarr", d + "/a.zarr/"));
  EXPECT_TRUE(overlaps(d + "/g.zarr", d + "/g.zarr/x"));
  EXPECT_TRUE(overlaps(d + "/g.zarr/x", d + "/g.zarr"));
  EXPECT_FALSE(overlaps(d + "/a.zarr", d + "/a.zarr2"));
  EXPECT_FALSE(overlaps(d + "/g.zarr/x", d + "/g.zarr/y"));
  EXPECT_FALSE(overlaps("memory://a", "memory://a"));  // each opens its own store
  EXPECT_FALSE(overlaps(d + "/a.zarr", "s3://b/" + d.substr(1) + "/a.zarr"));
}

TEST(LocationTest, S3KeysAreNormalised) {
  EXPECT_EQ(Resolve("s3://bkt//same.zarr").path, "same.zarr");
  EXPECT_EQ(Resolve("s3://bkt/same.zarr/").path, "same.zarr");
  EXPECT_EQ(Resolve("s3://bkt/a//b/?endpoint=http://x:1").path, "a/b");
  EXPECT_EQ(Resolve("s3://bkt").path, "");
  EXPECT_TRUE(Overlaps(Resolve("s3://bkt/same.zarr"), Resolve("s3://bkt//same.zarr/")));
  EXPECT_TRUE(Overlaps(Resolve("s3://bkt"), Resolve("s3://bkt/a.zarr")));
  EXPECT_TRUE(Overlaps(Resolve("s3://bkt/a"), Resolve("s3://bkt/a/b?region=eu-west-1")));
  EXPECT_FALSE(Overlaps(Resolve("s3://bkt/a"), Resolve("s3://other/a")));
  EXPECT_FALSE(Overlaps(Resolve("s3://bkt/a"), Resolve("s3://bkt/ab")));
  EXPECT_EQ(ResolveLocation("s3:///x").status().code(), StatusCode::kInvalidArgument);
}

TEST(LocationTest, CheckDisjointNamesBothAndHow) {
  TempDir dir;
  const std::string d = dir.path();
  EXPECT_TRUE(CheckDisjoint(d + "/a.zarr", "SRC", d + "/b.zarr", "DST").ok());
  Status same = CheckDisjoint(d + "/a.zarr", "SRC", d + "/a.zarr/", "DST");
  EXPECT_EQ(same.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(same.message().find("SRC and DST are the same location"), std::string_view::npos)
      << same.message();
  Status inside = CheckDisjoint(d + "/g.zarr/x", "SRC", d + "/g.zarr", "DST");
  EXPECT_NE(inside.message().find("SRC"), std::string_view::npos);
  EXPECT_NE(inside.message().find("lies inside DST"), std::string_view::npos) << inside.message();
  Status around = CheckDisjoint(d + "/a.zarr", "SRC", d + "/a.zarr/inner.zarr", "DST");
  EXPECT_NE(around.message().find("DST"), std::string_view::npos);
  EXPECT_NE(around.message().find("lies inside SRC"), std::string_view::npos) << around.message();
}

}  // namespace
}  // namespace strata
