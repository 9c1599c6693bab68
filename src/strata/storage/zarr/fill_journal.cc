// The fill journal of an incomplete array (zarr_array.h, ZarrArray::Create).
#include "strata/storage/zarr/zarr_array.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "strata/base/process_info.h"

#include "strata/storage/zarr/zarr_array_internal.h"

namespace strata {


// ---------------------------------------------------------------------------
// The fill journal.

namespace {

constexpr size_t kFillJournalBatch = 4096;
constexpr int64_t kFillJournalSeconds = 1;

// "first count" lines, one per run of consecutive indices.
std::string EncodeFillJournal(std::vector<Index> indices) {
  std::sort(indices.begin(), indices.end());
  std::string text;
  for (size_t i = 0; i < indices.size();) {
    size_t j = i + 1;
    while (j < indices.size() && indices[j] <= indices[j - 1] + 1) ++j;
    text += fmt::format("{} {}\n", indices[i], indices[j - 1] - indices[i] + 1);
    i = j;
  }
  return text;
}

}  // namespace

void ZarrArray::ReadFillJournal(std::string_view text, Index num_blocks, std::vector<Index>& out) {
  // Written whole by one Set, so never torn; anything else that does not
  // parse is not trusted (its chunks are simply written again).
  std::vector<Index> got;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    if (eol == std::string_view::npos) return;
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol + 1);
    Index first = 0, count = 0;
    const size_t space = line.find(' ');
    if (space == std::string_view::npos) return;
    auto [p1, e1] = std::from_chars(line.data(), line.data() + space, first);
    auto [p2, e2] = std::from_chars(line.data() + space + 1, line.data() + line.size(), count);
    if (e1 != std::errc() || e2 != std::errc() || p1 != line.data() + space ||
        p2 != line.data() + line.size() || first < 0 || count < 1 || first > num_blocks - count) {
      return;
    }
    for (Index k = 0; k < count; ++k) got.push_back(first + k);
  }
  out.insert(out.end(), got.begin(), got.end());
}

Status ZarrArray::WriteFillJournal(std::vector<Index> batch) const {
  if (batch.empty()) return Status::Ok();
  const std::string key =
      Key(fmt::format("{}{}-{}-{:016x}-{}", kFillJournalPrefix, ::getpid(), ThisProcessStartTime(),
                      fill_journal_->nonce, fill_journal_->seq.fetch_add(1)));
  return store_->Set(key, EncodeFillJournal(std::move(batch)))
      .WithContext(fmt::format("recording the fill chunks of {}", url()));
}

Status ZarrArray::NoteFillChunk(std::span<const Index> block) const {
  if (!fill_journal_) return Status::Ok();
  FillJournal& j = *fill_journal_;
  const int64_t now = FillJournal::SteadyNanos();
  std::vector<Index> batch;
  {
    MutexLock lock(&j.mu);
    if (j.closed) return Status::Ok();
    j.pending.push_back(LinearIndex(block, grid_.grid_shape()));
    if (j.pending.size() < kFillJournalBatch &&
        now - j.last_write_ns < kFillJournalSeconds * 1'000'000'000) {
      return Status::Ok();
    }
    batch.swap(j.pending);
    j.last_write_ns = now;
  }
  return WriteFillJournal(std::move(batch));
}

Status ZarrArray::FlushFillJournal() const {
  if (!fill_journal_) return Status::Ok();
  std::vector<Index> batch;
  {
    MutexLock lock(&fill_journal_->mu);
    if (fill_journal_->closed) return Status::Ok();
    batch.swap(fill_journal_->pending);
  }
  return WriteFillJournal(std::move(batch));
}

}  // namespace strata
