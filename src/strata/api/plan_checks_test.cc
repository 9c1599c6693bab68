// The library refuses what the CLI refuses: writing where a computation reads
// (in any spelling of the path), two outputs into one place, and grids with
// more blocks than the planner keeps state for. Nothing is written.
#include "strata/api/plan_checks.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "strata/api/api_test_util.h"
#include "strata/base/temp_dir.h"
#include "strata/strata.h"

namespace strata {
namespace {

using testing_util::SmallSpec;

std::string Tree(const std::string& dir) {
  std::string out;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    out += e.path().string() + ":" +
           (e.is_regular_file() ? std::to_string(e.file_size()) : std::string("d")) + "\n";
  }
  return out;
}

TEST(PlanChecksTest, ToZarrOfItsOwnSourceIsRefused) {
  TempDir dir;
  Spec spec = SmallSpec();
  const std::string src = dir.path() + "/a.zarr";
  ASSERT_TRUE(compute(to_zarr(random::random({20, 12}, {5, 6}, 1, spec), src)).ok());
  std::filesystem::create_symlink(src, dir.path() + "/link.zarr");
  std::filesystem::create_directories(dir.path() + "/x");
  const std::string before = Tree(dir.path());
  ToZarrOptions overwrite;
  overwrite.overwrite = true;
  for (const std::string& dst :
       {src, src + "/", dir.path() + "//a.zarr", dir.path() + "/x/../a.zarr",
        dir.path() + "/link.zarr", src + "/inner.zarr", dir.path()}) {
    Array x = from_zarr(src, spec).rechunk({10, 3});
    Array out = to_zarr(x, dst, overwrite);
    EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument) << dst;
    EXPECT_NE(out.status().message().find("reads the Zarr array"), std::string_view::npos)
        << out.status().ToString();
    Result<NDArray> r = compute(out);
    EXPECT_FALSE(r.ok());
    // An elementwise chain in between changes nothing.
    EXPECT_FALSE(compute(to_zarr(from_zarr(src, spec) * 2.0, dst, overwrite)).ok());
  }
  EXPECT_EQ(Tree(dir.path()), before);
}

TEST(PlanChecksTest, TwoOutputsIntoOnePlaceAreRefused) {
  TempDir dir;
  Spec spec = SmallSpec();
  Array a = random::random({8, 8}, {4, 4}, 1, spec);
  Array one = to_zarr(a, dir.path() + "/out.zarr");
  Array two = to_zarr(a + 1.0, dir.path() + "/out.zarr/");
  Result<std::vector<NDArray>> r = compute(std::vector<Array>{one, two});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("another output of the same computation"),
            std::string_view::npos)
      << r.status().ToString();
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/out.zarr"));
  // Disjoint outputs are fine.
  EXPECT_TRUE(compute(std::vector<Array>{to_zarr(a, dir.path() + "/p.zarr"),
                                         to_zarr(a, dir.path() + "/q.zarr")})
                  .ok());
}

TEST(PlanChecksTest, TooManyBlocksIsRefusedBeforePlanning) {
  Spec spec = SmallSpec();
  Array huge = zeros({Index{1} << 31, Index{1} << 31}, {1, 1}, DTypeId::kUInt8, spec);
  Result<std::shared_ptr<const Plan>> p = plan({huge});
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("blocks, more than the 268435456 Strata plans"),
            std::string_view::npos)
      << p.status().ToString();
  Array d32 = zeros(Shape(32, 2), Shape(32, 1), DTypeId::kUInt8, spec);
  EXPECT_EQ(plan({d32}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata
