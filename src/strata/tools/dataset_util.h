// Helpers the verbs share for datasets (Zarr groups): joining member paths to
// URLs and target chunks given by dimension name ("time=-1,lat=10"); the
// attributes and dimension names an array carries are CarryAttributes's
// (commands.h).
#ifndef STRATA_TOOLS_DATASET_UTIL_H_
#define STRATA_TOOLS_DATASET_UTIL_H_

#include <string>
#include <utility>
#include <vector>

#include "strata/base/status.h"
#include "strata/core/box.h"
#include "strata/storage/zarr/metadata.h"

namespace strata {

// "data/ds.zarr" + "temp" -> "data/ds.zarr/temp"; an S3 URL keeps its query
// after the path ("s3://b/ds.zarr?endpoint=..." -> "s3://b/ds.zarr/temp?endpoint=...").
std::string JoinUrl(const std::string& url, const std::string& member);

// Target chunks by dimension name: "time=-1,lat=10,lon=10" (-1: the whole
// axis). InvalidArgument naming the bad part.
using NamedChunks = std::vector<std::pair<std::string, Index>>;
Result<NamedChunks> ParseNamedChunks(std::string_view text);

// The chunks of an array with dimensions `dims`: a named axis takes its
// value (clipped to the extent; -1 the extent), the others keep `current`.
Shape ChunksByName(const NamedChunks& named, const std::vector<std::optional<std::string>>& dims,
                   const Shape& shape, const Shape& current);

// A region's origin by dimension name: "init_time=4,lat=0" (indices >= 0).
// InvalidArgument naming the bad part.
Result<std::vector<std::pair<std::string, Index>>> ParseNamedOrigin(std::string_view text);

}  // namespace strata

#endif  // STRATA_TOOLS_DATASET_UTIL_H_
