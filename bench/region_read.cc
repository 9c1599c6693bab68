// region_read: the bytes a region read of a Zarr array costs (bench/sharding.py).
//
//   region_read ARRAY ORIGIN SHAPE      e.g. region_read a.zarr 4500,4500 1000,1000
//
// Opens ARRAY and reads the region with ZarrArray::ReadRegion (a sharded
// array: each touched shard's index, then the inner chunks the region
// covers whole and, where the inner codec decodes runs, only the stored
// bytes of the others that hold the region), and reports what the process
// read from files while it did (rchar of /proc/self/io: every byte of every
// read and pread, the metadata excepted as it is read before) beside the
// stored bytes Strata counted (ThreadZarrBytesRead). Prints one JSON object.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "strata/base/status.h"
#include "strata/core/box.h"
#include "strata/core/memory_pool.h"
#include "strata/core/ndarray.h"
#include "strata/storage/open_store.h"
#include "strata/storage/store.h"
#include "strata/storage/zarr/zarr_array.h"

namespace {

int64_t FileBytesRead() {
  std::ifstream io("/proc/self/io");
  std::string key;
  int64_t value = 0;
  while (io >> key >> value) {
    if (key == "rchar:") return value;
  }
  return -1;
}

strata::Result<strata::Shape> ParseShape(const std::string& text) {
  strata::Shape out;
  size_t at = 0;
  while (at <= text.size()) {
    size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    try {
      out.push_back(std::stoll(text.substr(at, comma - at)));
    } catch (...) {
      return strata::InvalidArgumentError(fmt::format("'{}' is not a list of integers", text));
    }
    at = comma + 1;
  }
  return out;
}

strata::Status Run(const std::string& path, const std::string& origin, const std::string& shape) {
  using namespace strata;
  STRATA_ASSIGN_OR_RETURN(Shape o, ParseShape(origin));
  STRATA_ASSIGN_OR_RETURN(Shape s, ParseShape(shape));
  STRATA_ASSIGN_OR_RETURN(StoreAndPrefix at, OpenStoreUrl(path, /*create=*/false));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ZarrArray> array, ZarrArray::Open(at.store, at.prefix));
  MemoryPool& pool = *MemoryPool::Default();
  STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(pool, array->dtype(), s));
  const int64_t files_before = FileBytesRead();
  const int64_t stored_before = ThreadZarrBytesRead();
  STRATA_RETURN_IF_ERROR(array->ReadRegion(Box(o, s), out.view(), pool));
  const int64_t files = FileBytesRead() - files_before;
  const int64_t stored = ThreadZarrBytesRead() - stored_before;
  std::printf("{\"file_bytes_read\": %lld, \"zarr_bytes_counted\": %lld, \"region_bytes\": %lld}\n",
              static_cast<long long>(files), static_cast<long long>(stored),
              static_cast<long long>(NumElements(s) * array->dtype().size()));
  return Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: region_read ARRAY ORIGIN SHAPE (e.g. a.zarr 4500,4500 1000,1000)\n");
    return 2;
  }
  strata::Status s = Run(argv[1], argv[2], argv[3]);
  if (!s.ok()) {
    std::fprintf(stderr, "region_read: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
