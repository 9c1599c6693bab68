// api/advanced_indexing.h against numpy: integer arrays on several axes with
// broadcasting (adjacent and not), Ellipsis and newaxis, boolean masks alone
// and mixed with integers and integer arrays, vindex, take with a Strata
// array, nonzero; errors as numpy's; a pointwise selection from a Zarr array
// reads exactly the chunks its points fall in, each once.
#include "strata/api/advanced_indexing.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "strata/api/numpy_oracle_test_util.h"
#include "strata/api/api_test_util.h"
#include "strata/base/temp_dir.h"
#include "strata/storage/open_store.h"
#include "strata/storage/store.h"
#include "strata/storage/zarr/zarr_array.h"
#include "strata/strata.h"

namespace strata {
namespace {

using testing_util::Chunkings;
using testing_util::Compute;
using testing_util::Copy;
using testing_util::ExpectArrayNear;
using testing_util::Lazy;
using testing_util::NumpyOracle;
using testing_util::RandomHost;
using testing_util::SmallSpec;

NDArray Ints(const std::vector<int64_t>& v, Shape shape = {}) {
  if (shape.empty()) shape = {static_cast<Index>(v.size())};
  NDArray a = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kInt64, shape);
  std::copy(v.begin(), v.end(), a.data_as<int64_t>());
  return a;
}

struct Case {
  std::string what;
  Array got;
  int id;
};

TEST(AdvancedIndexingTest, AgainstNumpy) {
  const Shape shape = {5, 6, 7};
  const NDArray h = RandomHost(DTypeId::kFloat64, shape, 1);
  const NDArray i0 = Ints({1, 3, -1, 0, 3});
  const NDArray i1 = Ints({5, 0, 2, 2, 4});
  const NDArray i2 = Ints({0, 6, 3, 1, 6});
  const NDArray ij = Ints({0, 1, 2, 3}, {2, 2});
  const NDArray col = Ints({1, 4, 0}, {3, 1});
  NDArray mask56 = RandomHost(DTypeId::kBool, {5, 6}, 2);
  NDArray mask5 = RandomHost(DTypeId::kBool, {5}, 3);
  NDArray mask6 = RandomHost(DTypeId::kBool, {6}, 4);
  NDArray mask67 = RandomHost(DTypeId::kBool, {6, 7}, 5);
  NDArray mask567 = RandomHost(DTypeId::kBool, shape, 6);
  NDArray two5 = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kBool, {5});
  for (Index i = 0; i < 5; ++i) two5.data_as<bool>()[i] = i == 1 || i == 4;
  NumpyOracle np;
  std::vector<Case> cases;
  for (const Shape& chunks : Chunkings(shape, 7, 2)) {
    Array x = Lazy(h, chunks);
    auto arr = [&](const NDArray& a) { return Indexer(Lazy(a, Shape(a.rank(), 2))); };
    const std::string cs = " chunks " + ShapeToString(chunks);
    auto add = [&](std::string what, Array got, std::string expr, std::vector<const NDArray*> in) {
      in.insert(in.begin(), &h);
      cases.push_back({what + cs, std::move(got), np.Add(expr, in)});
    };
    // Integer arrays: adjacent (in place) and not (first), broadcasting.
    add("non-adjacent", index(x, {arr(i0), Slice{}, arr(i2)}), "a[b, :, c]", {&i0, &i2});
    add("adjacent", index(x, {Slice{}, arr(i1), arr(i2)}), "a[:, b, c]", {&i1, &i2});
    add("three", index(x, {arr(i0), arr(i1), arr(i2)}), "a[b, c, d]", {&i0, &i1, &i2});
    add("2-d with an integer", index(x, {arr(ij), 2}), "a[b, 2]", {&ij});
    add("integer apart", index(x, {0, Slice{}, arr(i2)}), "a[0, :, b]", {&i2});
    add("broadcast", index(x, {Slice{}, arr(col), arr(i1)}), "a[:, b, c]", {&col, &i1});
    add("host vector", index(x, {std::vector<Index>{4, 0, 4}}), "a[[4, 0, 4]]", {});
    add("with a slice step", index(x, {Slice{1, std::nullopt, 2}, arr(i1)}), "a[1::2, b]", {&i1});
    // Ellipsis and newaxis.
    add("ellipsis", index(x, {ellipsis, arr(i2)}), "a[..., b]", {&i2});
    add("ellipsis middle", index(x, {1, ellipsis, 3}), "a[1, ..., 3]", {});
    add("newaxis", index(x, {newaxis, Slice{1, 4}, ellipsis, newaxis}), "a[None, 1:4, ..., None]",
        {});
    add("newaxis with array", index(x, {arr(i0), newaxis, arr(i1)}), "a[b, None, c]", {&i0, &i1});
    // Masks.
    add("mask 2-d", index(x, {Lazy(mask56, {2, 4})}), "a[b]", {&mask56});
    add("mask 3-d", index(x, {Lazy(mask567, {3, 2, 5})}), "a[b]", {&mask567});
    add("mask on axis 1", index(x, {Slice{}, Lazy(mask6, {4})}), "a[:, b]", {&mask6});
    add("integer then mask", index(x, {0, Lazy(mask67, {2, 3})}), "a[0, b]", {&mask67});
    add("mask then integer", index(x, {Lazy(mask5, {3}), 3}), "a[b, 3]", {&mask5});
    add("mask apart", index(x, {Lazy(mask5, {3}), Slice{}, 3}), "a[b, :, 3]", {&mask5});
    add("mask with array", index(x, {Lazy(two5, {2}), Slice{}, arr(Ints({1, 2}))}),
        "a[b, :, [1, 2]]", {&two5});
    add("boolean_mask", boolean_mask(x, Lazy(mask56, {3, 3})), "a[b]", {&mask56});
    // vindex: broadcast dimensions first.
    add("vindex adjacent", vindex(x, {Slice{}, arr(i1), arr(i2)}), "np.moveaxis(a[:, b, c], 1, 0)",
        {&i1, &i2});
    add("vindex leading", vindex(x, {arr(i0), arr(i1)}), "a[b, c]", {&i0, &i1});
    // take with a Strata array.
    add("take axis 1", take(x, Lazy(i1, {3}), 1), "np.take(a, b, axis=1)", {&i1});
    add("take flat", take(x, Lazy(ij, {1, 2}), std::nullopt), "np.take(a, b)", {&ij});
    add("take 2-d axis -1", take(x, Lazy(ij, {2, 1}), -1), "np.take(a, b, axis=-1)", {&ij});
  }
  // nonzero of several dtypes and ranks.
  std::vector<std::pair<std::vector<Array>, int>> nz;
  uint32_t seed = 20;
  for (DType t : {DType(DTypeId::kBool), DType(DTypeId::kInt8), DType(DTypeId::kFloat32)}) {
    for (const Shape& s : std::vector<Shape>{{9}, {4, 5}, {3, 4, 5}, {0, 3}}) {
      NDArray hz = RandomHost(t, s, seed++);
      for (const Shape& c : Chunkings(s, seed++, 1)) {
        nz.push_back({nonzero(Lazy(hz, c)), np.Add("np.nonzero(a)", {&hz})});
      }
    }
  }
  NDArray none = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kBool, {3, 3});
  std::fill_n(none.data_as<bool>(), 9, false);
  nz.push_back({nonzero(Lazy(none, {2, 2})), np.Add("np.nonzero(a)", {&none})});
  // numpy's errors.
  const NDArray oob = Ints({0, 6});
  int oob_id = np.Add("a[:, b]", {&h, &oob});
  np.Run();
  for (Case& c : cases) {
    ASSERT_TRUE(c.got.ok()) << c.what << ": " << c.got.status().ToString();
    ExpectArrayNear(Compute(c.got), np.First(c.id), 0, 0, c.what + " = " + np.expr(c.id));
  }
  for (auto& [got, id] : nz) {
    std::vector<NDArray> want = np.Result(id);
    ASSERT_EQ(got.size(), want.size());
    for (size_t d = 0; d < got.size(); ++d) {
      ASSERT_TRUE(got[d].ok()) << got[d].status().ToString();
      ExpectArrayNear(Compute(got[d]), want[d], 0, 0, "nonzero axis " + std::to_string(d));
    }
  }
  EXPECT_NE(np.Error(oob_id).find("out of bounds"), std::string::npos);
  Array x = Lazy(h, {2, 3, 4});
  Array bad = index(x, {Slice{}, Indexer(Lazy(oob, {2}))});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("index 6 is out of bounds for axis 1 with size 6"),
            std::string::npos)
      << bad.status().message();
}

TEST(AdvancedIndexingTest, Errors) {
  Array x = random::random({4, 5}, {2, 2}, 1, SmallSpec());
  auto invalid = [](const Array& a, const std::string& text) {
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(a.status().message().find(text), std::string::npos) << a.status().message();
  };
  invalid(index(x, {ellipsis, 1, ellipsis}), "single ellipsis");
  invalid(index(x, {1, 2, 3}), "too many indices");
  invalid(index(x, {Indexer(x)}), "integer or boolean type, not float64");
  invalid(index(x, {Indexer(x > 0.5), 1}), "too many indices");
  invalid(index(x, {Indexer(random::random({3}, {3}, 1, SmallSpec()) > 0.5)}),
          "does not match the leading axes");
  invalid(index(x, {std::vector<Index>{-5}}), "index -5 is out of bounds for axis 0 with size 4");
  invalid(take(x, x, 0), "integer dtype");
  EXPECT_FALSE(nonzero(random::random({}, {}, 1, SmallSpec()))[0].ok());
  // An error in an index array is passed on.
  Array broken = reshape(x, {3});
  EXPECT_EQ(index(x, {Indexer(broken)}).status().message(), broken.status().message());
}

// A Store that counts the reads of each key.
class CountingStore : public Store {
 public:
  explicit CountingStore(std::shared_ptr<Store> base) : base_(std::move(base)) {}
  Result<Buffer> Get(std::string_view key, MemoryPool& pool) override {
    Count(key);
    return base_->Get(key, pool);
  }
  Result<Buffer> GetRange(std::string_view key, int64_t offset, int64_t length,
                          MemoryPool& pool) override {
    Count(key);
    return base_->GetRange(key, offset, length, pool);
  }
  Status GetInto(std::string_view key, std::span<std::byte> out) override {
    Count(key);
    return base_->GetInto(key, out);
  }
  Result<std::optional<int64_t>> Size(std::string_view key) override { return base_->Size(key); }
  Status Set(std::string_view key, std::span<const std::byte> value) override {
    return base_->Set(key, value);
  }
  Status Erase(std::string_view key) override { return base_->Erase(key); }
  Result<std::vector<std::string>> List(std::string_view prefix) override {
    return base_->List(prefix);
  }
  std::string url() const override { return base_->url(); }

  // Reads of chunk keys ("1.2.0"), by key.
  std::map<std::string, int> chunk_reads() {
    std::lock_guard lock(mu_);
    return reads_;
  }

 private:
  void Count(std::string_view key) {
    if (key.find(".z") != std::string_view::npos ||
        key.find("zarr.json") != std::string_view::npos) {
      return;  // metadata
    }
    std::lock_guard lock(mu_);
    ++reads_[std::string(key)];
  }
  std::shared_ptr<Store> base_;
  std::mutex mu_;
  std::map<std::string, int> reads_;
};

TEST(AdvancedIndexingTest, PointwiseSelectionReadsOnlyTheChunksItNeeds) {
  // (time, lat, lon) with 4 x 5 x 6 = 120 chunks; 7 stations at (lat, lon)
  // points falling in 3 distinct (lat, lon) chunks, out of block order: every
  // time block of those 3 chunks is read once (12 reads), nothing else.
  TempDir dir;
  const std::string path = dir.path() + "/t2m.zarr";
  Array t2m = random::random({16, 20, 30}, {4, 4, 5}, 3, SmallSpec());
  ASSERT_TRUE(compute(to_zarr(t2m, path)).ok());
  Result<StoreAndPrefix> at = OpenStoreUrl(path, false);
  ASSERT_TRUE(at.ok());
  auto counting = std::make_shared<CountingStore>(at->store);
  Result<std::shared_ptr<ZarrArray>> z = ZarrArray::Open(counting, at->prefix);
  ASSERT_TRUE(z.ok()) << z.status().ToString();
  Node node;
  node.op_name = "from_zarr";
  node.kind = NodeKind::kZarrSource;
  node.shape = (*z)->shape();
  node.dtype = (*z)->dtype();
  node.grid = (*z)->grid();
  node.zarr = *z;
  // Reads are counted: a straggler's backup (on a loaded machine) would
  // read its chunks a second time.
  Spec spec = SmallSpec();
  spec.backup_tasks = false;
  node.spec = std::make_shared<const Spec>(spec);
  Array x(MakeNode(std::move(node)));
  const std::vector<Index> lat = {19, 0, 1, 9, 3, 18, 2};
  const std::vector<Index> lon = {29, 0, 4, 12, 1, 26, 3};
  Array series = index(x, {Slice{}, lat, lon});
  ASSERT_TRUE(series.ok()) << series.status().ToString();
  ASSERT_EQ(series.shape(), Shape({16, 7}));
  NDArray got = Compute(series);
  std::map<std::string, int> reads = counting->chunk_reads();
  std::set<std::string> want;
  for (size_t p = 0; p < lat.size(); ++p) {
    for (Index t = 0; t < 4; ++t) {
      want.insert(fmt::format("{}.{}.{}", t, lat[p] / 4, lon[p] / 5));
    }
  }
  EXPECT_EQ(reads.size(), want.size());
  for (const auto& [key, n] : reads) {
    EXPECT_TRUE(want.count(key)) << "read " << key << ", which holds no point";
    EXPECT_EQ(n, 1) << key << " read " << n << " times";
  }
  // And the values are right.
  NDArray whole = Compute(t2m);
  for (Index t = 0; t < 16; ++t) {
    for (size_t p = 0; p < lat.size(); ++p) {
      EXPECT_EQ(got.data_as<double>()[t * 7 + p],
                whole.data_as<double>()[(t * 20 + lat[p]) * 30 + lon[p]]);
    }
  }
}

}  // namespace
}  // namespace strata
