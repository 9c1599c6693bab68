// ObjectIntermediateStore: the object tier. Blocks of an intermediate are
// objects under a prefix of any Store (in practice an S3Store rooted at
// Spec::object_store_url), as raw C-order bytes of the exact block shape.
// Each object is DELETEd when its block's last reader finishes, and
// Cleanup() removes whatever is left, so a bucket needs no lifecycle rule.
//
// GetRegion asks, per stored object, for the one byte range that spans the
// region (a single GET) into a staging buffer of at most one object, then
// copies the region out: per-run range requests would cost one round trip per
// row. That staging buffer (and Put's, for a block kept as several objects)
// comes from the calling task's pool, and the planner counts it in the
// projection of tasks that read or write this tier.
//
// Thread-safety: every method is safe to call concurrently.
#ifndef STRATA_RUNTIME_OBJECT_TIER_H_
#define STRATA_RUNTIME_OBJECT_TIER_H_

#include <atomic>
#include <memory>
#include <string>

#include "strata/runtime/intermediate_store.h"
#include "strata/storage/store.h"

namespace strata {

class ObjectIntermediateStore : public IntermediateStore {
 public:
  // Blocks go to `store` under `prefix` (e.g. "strata-run-123/array-004"),
  // in chunks of `stored` when given (see StoredLayout).
  ObjectIntermediateStore(std::shared_ptr<Store> store, std::string prefix, ChunkGrid grid,
                          DType dtype, std::optional<ChunkGrid> stored = {});
  ~ObjectIntermediateStore() override;
  Status Put(std::span<const Index> block, NDArray data, MemoryPool& staging) override;
  Result<std::shared_ptr<const NDArray>> Get(std::span<const Index> block,
                                             MemoryPool& pool) override;
  Status GetRegion(std::span<const Index> block, const Box& region, const ArrayView& out,
                   MemoryPool& staging) override;
  Status Erase(std::span<const Index> block) override;
  int64_t resident_bytes() const override { return 0; }
  int64_t bytes_written() const override { return bytes_written_.load(); }
  Status Cleanup() override;
  // The prefix belongs to another process's run (a dask worker writes into
  // the calling process's run): Cleanup and the destructor leave it.
  void Disown() { owner_ = false; }

 private:
  std::string Key(const std::string& piece) const;

  std::shared_ptr<Store> store_;
  std::string prefix_;
  StoredLayout layout_;
  DType dtype_;
  std::atomic<int64_t> bytes_written_{0};
  bool owner_ = true;
};

}  // namespace strata

#endif  // STRATA_RUNTIME_OBJECT_TIER_H_
