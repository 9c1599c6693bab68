#include "strata/tools/dataset_write.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstring>
#include <numeric>

#include "strata/base/temp_dir.h"
#include "strata/core/ndarray.h"
#include "strata/storage/local_store.h"
#include "strata/storage/zarr/hierarchy.h"
#include "strata/storage/zarr/zarr_array.h"

namespace strata {
namespace {

using ::testing::HasSubstr;

// A dataset as xarray writes one (v2, consolidated): time(time) int64 hours
// since 2000-01-01, lat(lat) float64, t2m(time, lat) int16 packed with
// scale 0.5, offset 250, _FillValue -1. Chunks of 2 along time.
class DatasetWriteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto local = LocalStore::Open(dir_.path());
    ASSERT_TRUE(local.ok());
    store_ = std::shared_ptr<Store>(std::move(*local));
  }

  // Writes an array with `values` (as int64, cast to the dtype).
  void WriteArray(const std::string& path, const std::string& dtype, Shape shape, Shape chunks,
                  const std::string& fill, const std::string& attrs,
                  const std::vector<double>& values) {
    std::string zarray = "{\"zarr_format\": 2, \"shape\": [";
    for (size_t i = 0; i < shape.size(); ++i) zarray += (i ? "," : "") + std::to_string(shape[i]);
    zarray += "], \"chunks\": [";
    for (size_t i = 0; i < chunks.size(); ++i) {
      zarray += (i ? "," : "") + std::to_string(chunks[i]);
    }
    zarray += "], \"dtype\": \"" + dtype + "\", \"fill_value\": " + fill +
              ", \"order\": \"C\", \"filters\": null, \"compressor\": null}";
    Result<ArrayMetadata> m = ParseZarrV2ArrayMetadata(zarray, attrs);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    ZarrArray::CreateOptions create;
    create.deferred_metadata = false;
    create.overwrite = true;
    auto a = ZarrArray::Create(store_, path, *m, create);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    auto pool = MemoryPool::Default();
    auto data = NDArray::Allocate(*pool, m->dtype(), shape);
    ASSERT_TRUE(data.ok());
    for (size_t i = 0; i < values.size(); ++i) {
      std::byte* p = data->data() + i * m->dtype().size();
      switch (m->dtype().size()) {
        case 2: { int16_t v = static_cast<int16_t>(values[i]); std::memcpy(p, &v, 2); break; }
        case 8:
          if (m->dtype().is_float()) {
            double v = values[i];
            std::memcpy(p, &v, 8);
          } else {
            int64_t v = static_cast<int64_t>(values[i]);
            std::memcpy(p, &v, 8);
          }
          break;
      }
    }
    ASSERT_TRUE((*a)->WriteRegion(Box::FromShape(shape), data->view(), *pool).ok());
  }

  static constexpr const char* kT2mAttrs =
      R"({"_ARRAY_DIMENSIONS": ["time", "lat"], "scale_factor": 0.5, "add_offset": 250.0})";
  static constexpr const char* kTimeAttrs =
      R"({"_ARRAY_DIMENSIONS": ["time"], "units": "hours since 2000-01-01",)"
      R"( "calendar": "proleptic_gregorian"})";

  // The archive: 3 times (0, 6, 12 h), 2 lats, t2m stored 0..5.
  void MakeArchive() {
    ASSERT_TRUE(CreateGroup(*store_, "archive", GroupMetadata{}, true).ok());
    WriteArray("archive/time", "<i8", {3}, {2}, "null", kTimeAttrs, {0, 6, 12});
    WriteArray("archive/lat", "<f8", {2}, {2}, "\"NaN\"", R"({"_ARRAY_DIMENSIONS": ["lat"]})",
               {10.0, 20.0});
    WriteArray("archive/t2m", "<i2", {3, 2}, {2, 2}, "-1", kT2mAttrs, {0, 1, 2, 3, 4, 5});
    ASSERT_TRUE(WriteConsolidatedMetadata(*store_, "archive").ok());
  }

  // A patch of 2 times (18, 24 h) in the archive's encoding except where
  // the arguments say; values are what it stores.
  void MakePatch(const std::string& time_units, double scale,
                 const std::vector<double>& times, const std::vector<double>& t2m) {
    ASSERT_TRUE(CreateGroup(*store_, "patch", GroupMetadata{}, true).ok());
    WriteArray("patch/time", "<i8", {2}, {2}, "null",
               R"({"_ARRAY_DIMENSIONS": ["time"], "units": ")" + time_units + "\"}", times);
    WriteArray("patch/lat", "<f8", {2}, {2}, "\"NaN\"", R"({"_ARRAY_DIMENSIONS": ["lat"]})",
               {10.0, 20.0});
    WriteArray("patch/t2m", "<i2", {2, 2}, {2, 2}, "-1",
               R"({"_ARRAY_DIMENSIONS": ["time", "lat"], "scale_factor": )" +
                   std::to_string(scale) + R"(, "add_offset": 250.0})",
               t2m);
  }

  DatasetWriteOptions Append() {
    DatasetWriteOptions o;
    o.src = "patch";
    o.dst = "archive";
    o.append_dim = "time";
    o.src_store = store_;
    o.dst_store = store_;
    return o;
  }

  // The stored values of an array, as doubles.
  std::vector<double> Read(const std::string& path) {
    auto a = ZarrArray::Open(store_, path);
    STRATA_CHECK(a.ok()) << a.status().ToString();
    auto pool = MemoryPool::Default();
    auto data = NDArray::Allocate(*pool, (*a)->dtype(), (*a)->shape());
    STRATA_CHECK((*a)->ReadRegion(Box::FromShape((*a)->shape()), data->view(), *pool).ok());
    std::vector<double> out;
    for (Index i = 0; i < data->num_elements(); ++i) {
      const std::byte* p = data->data() + i * (*a)->dtype().size();
      if ((*a)->dtype().size() == 2) {
        int16_t v;
        std::memcpy(&v, p, 2);
        out.push_back(v);
      } else if ((*a)->dtype().is_float()) {
        double v;
        std::memcpy(&v, p, 8);
        out.push_back(v);
      } else {
        int64_t v;
        std::memcpy(&v, p, 8);
        out.push_back(static_cast<double>(v));
      }
    }
    return out;
  }

  // The shape of `member` in the consolidated metadata.
  Shape ConsolidatedShape(const std::string& member) {
    auto h = ReadHierarchy(*store_, "archive");
    STRATA_CHECK(h.ok());
    STRATA_CHECK(h->from_consolidated);
    for (const HierarchyNode& n : h->nodes) {
      if (n.path == member) return n.array->shape;
    }
    return {};
  }

  TempDir dir_{"strata-dataset-write"};
  std::shared_ptr<Store> store_;
};

TEST_F(DatasetWriteTest, AppendConvertsTimesAndPackingAndConsolidates) {
  MakeArchive();
  // Times in minutes since 2000-01-02 (18 h = -360 min, 24 h = 0), t2m with
  // scale 0.25 (stored 8 -> 252 K -> archive 4), one missing.
  MakePatch("minutes since 2000-01-02", 0.25, {-360, 0}, {8, 12, -1, 16});
  Result<DatasetWriteReport> r = RunDatasetWrite(Append());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->members_written, 2);  // time, t2m
  EXPECT_EQ(r->members_checked, 1);  // lat
  EXPECT_EQ(Read("archive/time"), (std::vector<double>{0, 6, 12, 18, 24}));
  EXPECT_EQ(Read("archive/t2m"), (std::vector<double>{0, 1, 2, 3, 4, 5, 4, 6, -1, 8}));
  EXPECT_EQ(ConsolidatedShape("t2m"), (Shape{5, 2}));
  EXPECT_EQ(ConsolidatedShape("time"), (Shape{5}));
  // Nothing of the job is left in the group: journal, staging, lock.
  EXPECT_NE(::access((dir_.path() + "/archive/.strata-job.lock").c_str(), F_OK), 0);
  auto journal = store_->Exists("archive/.strata-journal");
  ASSERT_TRUE(journal.ok());
  EXPECT_FALSE(*journal);
  auto staged = store_->List("archive/.strata-staging/");
  ASSERT_TRUE(staged.ok());
  EXPECT_TRUE(staged->empty());
}

TEST_F(DatasetWriteTest, AFailureBeforeThePublishChangesNothingAndARerunCompletes) {
  MakeArchive();
  MakePatch("hours since 2000-01-01", 0.5, {18, 24}, {6, 7, 8, 9});
  DatasetWriteOptions o = Append();
  o.fail_before_publish = true;
  Result<DatasetWriteReport> r = RunDatasetWrite(o);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  // Nothing visible moved: shapes, consolidated metadata, values.
  EXPECT_EQ(ConsolidatedShape("t2m"), (Shape{3, 2}));
  EXPECT_EQ(Read("archive/t2m"), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(Read("archive/time"), (std::vector<double>{0, 6, 12}));
  // The rerun rolls the staged job back and does it again, once.
  r = RunDatasetWrite(Append());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->recovered);
  EXPECT_FALSE(r->finished_interrupted);
  EXPECT_EQ(Read("archive/t2m"), (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(ConsolidatedShape("t2m"), (Shape{5, 2}));
}

TEST_F(DatasetWriteTest, AFailureInsideThePublishIsRolledForwardOnce) {
  MakeArchive();
  MakePatch("hours since 2000-01-01", 0.5, {18, 24}, {6, 7, 8, 9});
  DatasetWriteOptions o = Append();
  o.fail_after_renames = 1;
  Result<DatasetWriteReport> r = RunDatasetWrite(o);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("run the same command again to finish it"));
  // Consolidated readers still see the old dataset.
  EXPECT_EQ(ConsolidatedShape("t2m"), (Shape{3, 2}));
  EXPECT_EQ(ConsolidatedShape("time"), (Shape{3}));
  // The same job again finishes the publish and appends nothing more.
  r = RunDatasetWrite(Append());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->finished_interrupted);
  EXPECT_EQ(Read("archive/t2m"), (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(Read("archive/time"), (std::vector<double>{0, 6, 12, 18, 24}));
  EXPECT_EQ(ConsolidatedShape("t2m"), (Shape{5, 2}));
}

TEST_F(DatasetWriteTest, WithoutConsolidatedMetadataStagedArraysAreNoMembers) {
  MakeArchive();
  ASSERT_TRUE(store_->Erase("archive/.zmetadata").ok());
  MakePatch("hours since 2000-01-01", 0.5, {18, 24}, {6, 7, 8, 9});
  DatasetWriteOptions o = Append();
  o.fail_before_publish = true;
  EXPECT_EQ(RunDatasetWrite(o).status().code(), StatusCode::kUnavailable);
  // A listing of the group sees its members only (not the staged arrays).
  auto listed = [&] {
    auto h = ReadHierarchy(*store_, "archive");
    STRATA_CHECK(h.ok()) << h.status().ToString();
    EXPECT_FALSE(h->from_consolidated);
    std::vector<std::string> paths;
    for (const HierarchyNode& n : h->nodes) paths.push_back(n.path);
    return paths;
  };
  EXPECT_EQ(listed(), (std::vector<std::string>{"", "lat", "t2m", "time"}));
  Result<DatasetWriteReport> r = RunDatasetWrite(Append());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(listed(), (std::vector<std::string>{"", "lat", "t2m", "time"}));
  EXPECT_EQ(Read("archive/t2m"), (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  // No consolidated metadata appears where there was none.
  EXPECT_FALSE(*store_->Exists("archive/.zmetadata"));
}

TEST_F(DatasetWriteTest, BackfillKeepsOldChunksUntilThePublish) {
  MakeArchive();
  MakePatch("hours since 2000-01-01", 0.5, {6, 12}, {60, 61, 62, 63});
  DatasetWriteOptions o = Append();
  o.append_dim.reset();
  o.at = {{"time", 1}};
  o.fail_before_publish = true;
  EXPECT_EQ(RunDatasetWrite(o).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(Read("archive/t2m"), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  o.fail_before_publish = false;
  Result<DatasetWriteReport> r = RunDatasetWrite(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Read("archive/t2m"), (std::vector<double>{0, 1, 60, 61, 62, 63}));
  EXPECT_EQ(ConsolidatedShape("t2m"), (Shape{3, 2}));
}

TEST_F(DatasetWriteTest, RefusesUnrepresentableValuesBeforeWritingAnything) {
  MakeArchive();
  // 3 hours past the epoch lands between the archive's hours? No: hours
  // are whole; 90 minutes is not.
  MakePatch("minutes since 2000-01-01", 0.5, {1080, 1530}, {6, 7, 8, 9});
  Result<DatasetWriteReport> r = RunDatasetWrite(Append());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("time: 2000-01-02T01:30:00 is not a whole number of hours"));
  EXPECT_EQ(ConsolidatedShape("time"), (Shape{3}));
  EXPECT_EQ(Read("archive/time"), (std::vector<double>{0, 6, 12}));
  // Out of the packed range: 40000 * 0.5 + 250 = 20250 K needs 40000 in int16.
  MakePatch("hours since 2000-01-01", 1.0, {18, 24}, {20000, 0, 0, 0});
  r = RunDatasetWrite(Append());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("t2m: value 20250 is outside what the target"));
  EXPECT_EQ(Read("archive/t2m"), (std::vector<double>{0, 1, 2, 3, 4, 5}));
}

TEST_F(DatasetWriteTest, RefusesAPatchThatDoesNotFit) {
  MakeArchive();
  MakePatch("hours since 2000-01-01", 0.5, {18, 24}, {6, 7, 8, 9});
  WriteArray("patch/lat", "<f8", {2}, {2}, "\"NaN\"", R"({"_ARRAY_DIMENSIONS": ["lat"]})",
             {10.0, 25.0});
  Result<DatasetWriteReport> r = RunDatasetWrite(Append());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("lat: the job does not write it"));
  // A DST variable along time that SRC lacks.
  MakePatch("hours since 2000-01-01", 0.5, {18, 24}, {6, 7, 8, 9});
  ASSERT_TRUE(store_->ErasePrefix("patch/time/").ok());
  r = RunDatasetWrite(Append());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("DST's 'time' has dimension time but SRC has no"));
  // A backfill past the end.
  MakePatch("hours since 2000-01-01", 0.5, {18, 24}, {6, 7, 8, 9});
  DatasetWriteOptions o = Append();
  o.append_dim.reset();
  o.at = {{"time", 2}};
  r = RunDatasetWrite(o);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("2 elements of time at 2 do not fit DST's 3"));
}

TEST_F(DatasetWriteTest, RefusesAStaleConsolidatedMetadataAndASecondJob) {
  MakeArchive();
  MakePatch("hours since 2000-01-01", 0.5, {18, 24}, {6, 7, 8, 9});
  // Another job holds the lock.
  const std::string lock_path = dir_.path() + "/archive/.strata-job.lock";
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  Result<DatasetWriteReport> r = RunDatasetWrite(Append());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("another strata job is writing archive"));
  // The refused job left the holder's lock file alone.
  EXPECT_EQ(::access(lock_path.c_str(), F_OK), 0);
  ::close(fd);
  // An earlier per-array append that left .zmetadata behind.
  WriteArray("archive/lat", "<f8", {3}, {2}, "\"NaN\"", R"({"_ARRAY_DIMENSIONS": ["lat"]})",
             {10.0, 20.0, 30.0});
  r = RunDatasetWrite(Append());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("consolidated metadata gives 'lat' the shape"));
}

}  // namespace
}  // namespace strata
