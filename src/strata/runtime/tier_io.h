// Raw block files of the disk tiers (the disk tier, the memory tier's spill,
// the shared-memory tier's fallback): a block is its C-order bytes, read and
// written straight between files and strided views in as few system calls
// as the layout allows; and how a tier splits one op's blocks into stored
// chunks (StoredLayout).
//
// Thread-safety: free functions; StoredLayout is immutable.
#ifndef STRATA_RUNTIME_TIER_IO_H_
#define STRATA_RUNTIME_TIER_IO_H_

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/base/status.h"
#include "strata/core/chunk_grid.h"
#include "strata/core/ndarray.h"

namespace strata {

// How a disk or object tier lays one op's blocks out: each block whole, or
// split into the chunks of a finer stored grid that tile every block (each
// block is then several files or objects, named by their keys in the stored
// grid, and a region read touches only the stored chunks it meets).
//
// Thread-safety: immutable; share freely.
class StoredLayout {
 public:
  // `stored`, when given, must refine `blocks` (same shape; every block a
  // union of whole stored chunks).
  StoredLayout(ChunkGrid blocks, std::optional<ChunkGrid> stored);
  // One stored piece of a block that a region meets.
  struct Piece {
    std::string key;     // Zarr v2 chunk key in the stored grid (or the block's)
    Shape shape;         // the stored piece's shape
    Box in_piece;        // the part read or written, in the piece's coordinates
    Box in_region;       // the same part, in the region's coordinates
  };
  // The pieces of block `block` that `region` (block coordinates) meets.
  std::vector<Piece> Pieces(std::span<const Index> block, const Box& region) const;
  std::vector<Piece> Pieces(std::span<const Index> block) const;
  const ChunkGrid& blocks() const { return blocks_; }

 private:
  ChunkGrid blocks_;
  std::optional<ChunkGrid> stored_;
};

// Reads `region` of a raw C-order block of `layout` shape stored at `offset`
// in file `fd` into `out`: runs contiguous in both go in one piece, and runs
// that follow each other in the file in one preadv.
Status PreadRegion(int fd, int64_t offset, const Shape& layout, const Box& region,
                   const ArrayView& out, std::string_view what);

// Writes `data` (any strides) to a new file at `path` as raw C-order bytes,
// its contiguous runs gathered by writev.
Status WriteViewToFile(const std::string& path, const ConstArrayView& data);

// Publish-once: writes `data` under a temporary name beside `path`, then
// links it to `path`. True when this call published the file; false when
// `path` was there already (it is left as it is: the other attempt of a task
// with a backup, or a retry, wrote the same bytes). A reader only ever opens
// a complete file, and no file a reader has is rewritten. Where the
// filesystem has no hard links the temporary file is renamed instead.
Result<bool> PublishViewToFile(const std::string& path, const ConstArrayView& data);

// Writes `bytes` to a new file at `path` (replacing any).
Status WriteFile(const std::string& path, std::span<const std::byte> bytes);

// Reads `region` of the raw block of `layout` shape in file `path` into `out`.
Status ReadRegionFromFile(const std::string& path, const Shape& layout, const Box& region,
                          const ArrayView& out);

}  // namespace strata

#endif  // STRATA_RUNTIME_TIER_IO_H_
