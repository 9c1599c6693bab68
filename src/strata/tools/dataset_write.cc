// Dataset backfill and append, staged and journaled (dataset_write.h).
#include "strata/tools/dataset_write.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "strata/core/box.h"
#include "strata/core/memory_pool.h"
#include "strata/core/ndarray.h"
#include "strata/storage/local_store.h"
#include "strata/storage/open_store.h"
#include "strata/storage/zarr/hierarchy.h"
#include "strata/storage/zarr/zarr_array.h"
#include "strata/tools/cf_encoding.h"

namespace strata {
namespace {

using JsonDoc = nlohmann::json;

// Members outside the job's dimensions are compared whole; past this they
// are refused rather than read into memory.
constexpr int64_t kMaxComparedBytes = int64_t{256} << 20;

// One array the job writes (or checks).
struct Member {
  std::string path;  // relative to the group; "" for a one-array job
  std::shared_ptr<ZarrArray> src;
  std::shared_ptr<ZarrArray> dst;     // as published
  std::shared_ptr<ZarrArray> reader;  // DST with the job's shape (old chunks are read from it)
  ArrayMetadata new_metadata;
  Box target;  // where SRC lands in the new shape
  bool grows = false;
  bool write = true;  // false: outside the job's dimensions, must hold DST's values
  std::shared_ptr<const CfConverter> converter;
};

// What the journal records of one member.
struct StagedMember {
  std::string path;
  std::vector<std::string> chunks;  // staged, renamed over DST's at publish
  std::vector<std::string> erase;   // all fill value now: erased at publish
  std::vector<std::pair<std::string, std::string>> metadata;  // written at publish (grown)
};

struct Journal {
  std::string state;  // "staging" or "publishing"
  std::string job;    // what the job was, to recognise a rerun
  bool consolidated = false;
  std::vector<StagedMember> members;
};

std::string JournalText(const Journal& j) {
  JsonDoc out = JsonDoc::object();
  out["strata_dataset_job"] = 1;
  out["state"] = j.state;
  out["job"] = j.job;
  out["consolidated"] = j.consolidated;
  JsonDoc members = JsonDoc::array();
  for (const StagedMember& m : j.members) {
    JsonDoc jm = JsonDoc::object();
    jm["path"] = m.path;
    jm["chunks"] = m.chunks;
    jm["erase"] = m.erase;
    JsonDoc docs = JsonDoc::object();
    for (const auto& [key, text] : m.metadata) docs[key] = text;
    jm["metadata"] = docs;
    members.push_back(std::move(jm));
  }
  out["members"] = std::move(members);
  return out.dump();
}

Result<Journal> ParseJournal(const std::string& text, const std::string& where) {
  JsonDoc j = JsonDoc::parse(text, nullptr, /*allow_exceptions=*/false);
  auto bad = [&] {
    return DataLossError(fmt::format(
        "{} is not a strata job journal that can be read; move it away only if no strata job "
        "was writing there",
        where));
  };
  if (!j.is_object() || !j.contains("state") || !j["state"].is_string() ||
      !j.contains("members") || !j["members"].is_array()) {
    return bad();
  }
  Journal out;
  try {
    out.state = j["state"].get<std::string>();
    out.job = j.value("job", "");
    out.consolidated = j.value("consolidated", false);
    for (const JsonDoc& jm : j["members"]) {
      StagedMember m;
      m.path = jm.at("path").get<std::string>();
      m.chunks = jm.at("chunks").get<std::vector<std::string>>();
      m.erase = jm.at("erase").get<std::vector<std::string>>();
      for (const auto& [key, value] : jm.at("metadata").items()) {
        m.metadata.emplace_back(key, value.get<std::string>());
      }
      out.members.push_back(std::move(m));
    }
  } catch (const std::exception&) {
    return bad();
  }
  if (out.state != "staging" && out.state != "publishing") return bad();
  return out;
}

std::string StagingPrefix(const std::string& prefix) {
  return JoinKey(prefix, kDatasetStagingDir);
}

// The publish (dataset_write.h step 3), idempotent: a staged chunk already
// renamed is simply absent.
Status Publish(Store& store, const std::string& prefix, const Journal& journal,
               int64_t fail_after_renames) {
  int64_t renamed = 0;
  for (const StagedMember& m : journal.members) {
    const std::string base = JoinKey(prefix, m.path);
    const std::string staged = JoinKey(StagingPrefix(prefix), m.path);
    for (const std::string& name : m.chunks) {
      if (fail_after_renames >= 0 && renamed >= fail_after_renames) {
        return UnavailableError("publish interrupted (test)");
      }
      Status s = store.Rename(JoinKey(staged, name), JoinKey(base, name));
      if (!s.ok() && !IsNotFound(s)) return s.WithContext(fmt::format("publishing {}", m.path));
      ++renamed;
    }
    for (const std::string& name : m.erase) {
      STRATA_RETURN_IF_ERROR(store.Erase(JoinKey(base, name)));
    }
  }
  STRATA_RETURN_IF_ERROR(store.ErasePrefix(StagingPrefix(prefix) + "/"));
  for (const StagedMember& m : journal.members) {
    for (const auto& [key, text] : m.metadata) {
      STRATA_RETURN_IF_ERROR(store.Set(JoinKey(JoinKey(prefix, m.path), key), text)
                                 .WithContext(fmt::format("publishing {}", m.path)));
    }
  }
  if (journal.consolidated) STRATA_RETURN_IF_ERROR(WriteConsolidatedMetadata(store, prefix));
  return store.Erase(JoinKey(prefix, kDatasetJournalKey));
}

// Finishes or rolls back what a journal records; the journal, or nullopt.
Result<std::optional<Journal>> Recover(Store& store, const std::string& prefix) {
  const std::string key = JoinKey(prefix, kDatasetJournalKey);
  Result<std::string> text = store.GetString(key);
  if (!text.ok()) {
    if (IsNotFound(text.status())) return std::optional<Journal>();
    return text.status();
  }
  STRATA_ASSIGN_OR_RETURN(Journal journal, ParseJournal(*text, JoinKey(store.url(), key)));
  if (journal.state == "publishing") {
    STRATA_RETURN_IF_ERROR(Publish(store, prefix, journal, -1)
                               .WithContext("finishing an interrupted job's publish"));
  } else {
    // Staged only: nothing visible changed. Drop it.
    STRATA_RETURN_IF_ERROR(store.ErasePrefix(StagingPrefix(prefix) + "/"));
    STRATA_RETURN_IF_ERROR(store.Erase(key));
  }
  return std::optional<Journal>(std::move(journal));
}

// An exclusive lock on a local DST for the job's length (nothing elsewhere).
class JobLock {
 public:
  static Result<JobLock> Take(Store& store, const std::string& prefix, const std::string& what) {
    JobLock lock;
    auto* local = dynamic_cast<LocalStore*>(&store);
    if (local == nullptr) return lock;
    STRATA_ASSIGN_OR_RETURN(lock.path_, local->PathOf(JoinKey(prefix, kDatasetLockKey)));
    // The holder removes the file when it is done (zarr-python warns about
    // strange objects in a group): a lock taken on a file already removed
    // is no lock, so take it again on the new one.
    for (int attempt = 0; attempt < 100; ++attempt) {
      lock.fd_ = ::open(lock.path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (lock.fd_ < 0) {
        return PermissionDeniedError(fmt::format("cannot create the job lock {}", lock.path_));
      }
      if (::flock(lock.fd_, LOCK_EX | LOCK_NB) != 0) {
        ::close(std::exchange(lock.fd_, -1));  // not ours: the destructor must not unlink it
        return FailedPreconditionError(fmt::format(
            "another strata job is writing {} (it holds {}); run this one when it has finished",
            what, lock.path_));
      }
      struct stat held, named;
      if (::fstat(lock.fd_, &held) == 0 && ::stat(lock.path_.c_str(), &named) == 0 &&
          held.st_ino == named.st_ino && held.st_dev == named.st_dev) {
        return lock;
      }
      ::close(lock.fd_);
      lock.fd_ = -1;
    }
    return UnavailableError(fmt::format("could not take the job lock {}", lock.path_));
  }
  JobLock() = default;
  JobLock(JobLock&& o) noexcept : fd_(std::exchange(o.fd_, -1)), path_(std::move(o.path_)) {}
  JobLock& operator=(JobLock&& o) noexcept {
    std::swap(fd_, o.fd_);
    std::swap(path_, o.path_);
    return *this;
  }
  ~JobLock() {
    if (fd_ >= 0) {
      ::unlink(path_.c_str());  // while still held: see Take
      ::close(fd_);
    }
  }

 private:
  int fd_ = -1;
  std::string path_;
};

std::string DimName(const std::vector<std::optional<std::string>>& dims, int axis) {
  if (axis < static_cast<int>(dims.size()) && dims[axis]) return *dims[axis];
  return fmt::format("axis {}", axis);
}

// The value of a job coordinate (an --at key) for `axis`, if named.
std::optional<Index> AtFor(const DatasetWriteOptions& o,
                           const std::vector<std::optional<std::string>>& dims, int axis,
                           bool one_array) {
  for (const auto& [key, start] : o.at) {
    if (axis < static_cast<int>(dims.size()) && dims[axis] && *dims[axis] == key) return start;
    if (one_array && key == std::to_string(axis)) return start;
  }
  return std::nullopt;
}

bool IsAppendAxis(const DatasetWriteOptions& o, const std::vector<std::optional<std::string>>& dims,
                  int axis, bool one_array) {
  if (!o.append_dim) return false;
  if (axis < static_cast<int>(dims.size()) && dims[axis] && *dims[axis] == *o.append_dim) {
    return true;
  }
  return one_array && *o.append_dim == std::to_string(axis);
}

// Places member `m` (src and dst opened) in the job: its target box, its new
// shape, whether it is written or only compared.
Status PlaceMember(const DatasetWriteOptions& o, bool one_array, Member& m) {
  const ArrayMetadata& sm = m.src->metadata();
  const ArrayMetadata& dm = m.dst->metadata();
  const std::string name = m.path.empty() ? o.dst : m.path;
  if (sm.rank() != dm.rank()) {
    return InvalidArgumentError(fmt::format("{}: SRC has {} dimensions, DST {}", name, sm.rank(),
                                            dm.rank()));
  }
  const auto sdims = DimensionNamesOf(sm), ddims = DimensionNamesOf(dm);
  for (int i = 0; i < sm.rank(); ++i) {
    const bool named = i < static_cast<int>(sdims.size()) && sdims[i];
    const bool dnamed = i < static_cast<int>(ddims.size()) && ddims[i];
    if (named && dnamed && *sdims[i] != *ddims[i]) {
      return InvalidArgumentError(fmt::format("{}: dimension {} is '{}' in SRC and '{}' in DST",
                                              name, i, *sdims[i], *ddims[i]));
    }
  }
  const auto& dims = ddims.empty() ? sdims : ddims;
  Shape origin(sm.rank(), 0);
  Shape new_shape = dm.shape;
  bool touches = false;
  for (int i = 0; i < sm.rank(); ++i) {
    const std::string dim = DimName(dims, i);
    if (IsAppendAxis(o, dims, i, one_array)) {
      origin[i] = dm.shape[i];
      new_shape[i] = dm.shape[i] + sm.shape[i];
      m.grows = sm.shape[i] > 0;
      touches = true;
      continue;
    }
    std::optional<Index> at = AtFor(o, dims, i, one_array);
    if (at) {
      touches = true;
      if (*at < 0 || *at + sm.shape[i] > dm.shape[i]) {
        return InvalidArgumentError(fmt::format(
            "{}: {} elements of {} at {} do not fit DST's {} (0 .. {})", name, sm.shape[i], dim,
            *at, dm.shape[i], dm.shape[i]));
      }
      origin[i] = *at;
      continue;
    }
    if (sm.shape[i] != dm.shape[i]) {
      return InvalidArgumentError(fmt::format(
          "{}: {} has {} elements in SRC and {} in DST; {}", name, dim, sm.shape[i], dm.shape[i],
          o.append_dim ? "only the append dimension may differ"
                       : fmt::format("name {} in --at to write part of it", dim)));
    }
  }
  m.write = touches;
  m.target = Box(origin, sm.shape);
  m.new_metadata = dm;
  m.new_metadata.shape = new_shape;
  STRATA_ASSIGN_OR_RETURN(CfEncoding from, ParseCfEncoding(sm, "SRC " + name));
  STRATA_ASSIGN_OR_RETURN(CfEncoding to, ParseCfEncoding(dm, "DST " + name));
  STRATA_ASSIGN_OR_RETURN(CfConverter c, CfConverter::Make(from, to, name));
  m.converter = std::make_shared<const CfConverter>(std::move(c));
  return Status::Ok();
}

// SRC's values, in DST's encoding, equal DST's (members outside the job's
// dimensions: lat and lon beside an append along time).
Status CheckEqual(const Member& m, MemoryPool& pool) {
  const std::string name = m.path.empty() ? "the array" : m.path;
  const int64_t bytes = m.src->metadata().rank() == 0
                            ? 1
                            : NumElements(m.src->shape()) *
                                  std::max(m.src->dtype().size(), m.dst->dtype().size());
  if (bytes > kMaxComparedBytes) {
    return InvalidArgumentError(fmt::format(
        "{}: SRC holds it whole but the job does not write it (none of its dimensions is "
        "named in --at or --append-dim); it is too large to check against DST ({} bytes): "
        "drop it from SRC",
        name, bytes));
  }
  const Box all = Box::FromShape(m.src->shape());
  STRATA_ASSIGN_OR_RETURN(NDArray s, NDArray::Allocate(pool, m.src->dtype(), all.shape));
  STRATA_RETURN_IF_ERROR(m.src->ReadRegion(all, s.view(), pool));
  STRATA_ASSIGN_OR_RETURN(NDArray converted, NDArray::Allocate(pool, m.dst->dtype(), all.shape));
  Status cs = m.converter->Convert(s.data(), converted.data(), all.num_elements());
  STRATA_ASSIGN_OR_RETURN(NDArray d, NDArray::Allocate(pool, m.dst->dtype(), all.shape));
  STRATA_RETURN_IF_ERROR(m.dst->ReadRegion(all, d.view(), pool));
  if (!cs.ok() || !ArraysEqual(converted.view(), d.view(), /*nan_equal=*/true)) {
    return InvalidArgumentError(fmt::format(
        "{}: the job does not write it (none of its dimensions is named in --at or "
        "--append-dim), but SRC's values differ from DST's; drop it from SRC or fix it",
        name));
  }
  return Status::Ok();
}

// Stages member `m`: every chunk of the new shape that its target touches,
// encoded anew under the staging prefix.
Status StageMember(const std::shared_ptr<Store>& shared, const std::string& prefix,
                   const Member& m, MemoryPool& pool, StagedMember& out,
                   DatasetWriteReport& report) {
  ZarrArray::CreateOptions create;
  create.overwrite = true;
  STRATA_ASSIGN_OR_RETURN(
      std::shared_ptr<ZarrArray> staging,
      ZarrArray::Create(shared, JoinKey(StagingPrefix(prefix), m.path), m.new_metadata, create));
  const ChunkGrid& grid = staging->grid();
  Shape first, last;
  grid.BlockRangeOf(m.target, first, last);
  for (int i = 0; i < grid.rank(); ++i) {
    if (first[i] >= last[i]) return Status::Ok();  // nothing to write
  }
  const std::string name = m.path.empty() ? "the array" : m.path;
  Shape block = first;
  while (true) {
    const Box box = grid.BlockBox(block);
    const Box part = Intersect(box, m.target);
    STRATA_ASSIGN_OR_RETURN(NDArray chunk, NDArray::Allocate(pool, m.dst->dtype(), box.shape));
    if (!(part == box)) {
      // Old values stay where the patch does not reach (read from the
      // published chunk: nothing is renamed before the publish).
      STRATA_RETURN_IF_ERROR(m.reader->ReadChunk(block, chunk.view(), pool).status());
    }
    Shape src_origin(part.rank()), in_chunk(part.rank());
    for (int i = 0; i < part.rank(); ++i) {
      src_origin[i] = part.origin[i] - m.target.origin[i];
      in_chunk[i] = part.origin[i] - box.origin[i];
    }
    STRATA_ASSIGN_OR_RETURN(NDArray s, NDArray::Allocate(pool, m.src->dtype(), part.shape));
    STRATA_RETURN_IF_ERROR(m.src->ReadRegion(Box(src_origin, part.shape), s.view(), pool));
    STRATA_ASSIGN_OR_RETURN(NDArray d, NDArray::Allocate(pool, m.dst->dtype(), part.shape));
    // The converter's errors name the variable and the value.
    STRATA_RETURN_IF_ERROR(m.converter->Convert(s.data(), d.data(), part.num_elements()));
    CopyArray(d.view(), chunk.view().Slice(Box(in_chunk, part.shape)));
    const std::string key = m.new_metadata.ChunkKey(block);
    if (staging->IsFillChunk(chunk.view())) {
      out.erase.push_back(key);
      ++report.chunks_erased;
    } else {
      STRATA_RETURN_IF_ERROR(staging->WriteChunk(block, chunk.view(), pool)
                                 .WithContext(fmt::format("staging {} chunk {}", name, key)));
      out.chunks.push_back(key);
      ++report.chunks_written;
    }
    int i = grid.rank() - 1;
    for (; i >= 0; --i) {
      if (++block[i] < last[i]) break;
      block[i] = first[i];
    }
    if (i < 0) break;
  }
  return Status::Ok();
}

std::string JobText(const DatasetWriteOptions& o) {
  // A local SRC by its canonical path, so that a rerun spelled differently
  // ("./patch.zarr/") is still recognised as the interrupted job.
  std::string src = o.src;
  if (!o.src_store && src.find("://") == std::string::npos) {
    std::error_code ec;
    std::filesystem::path p = std::filesystem::weakly_canonical(std::filesystem::absolute(src), ec);
    if (!ec) src = p.string();
    while (src.size() > 1 && src.back() == '/') src.pop_back();
  }
  std::string out = fmt::format("src={}", src);
  if (o.append_dim) out += fmt::format(" append_dim={}", *o.append_dim);
  for (const auto& [key, start] : o.at) out += fmt::format(" at {}={}", key, start);
  return out;
}

Result<StoreAndPrefix> OpenSide(const std::shared_ptr<Store>& given, const std::string& url) {
  if (given) return StoreAndPrefix{given, url};
  return OpenStoreUrl(url, /*create=*/false);
}

}  // namespace

Result<bool> RecoverDatasetJob(Store& store, const std::string& prefix) {
  STRATA_ASSIGN_OR_RETURN(std::optional<Journal> j, Recover(store, prefix));
  return j.has_value();
}

Result<DatasetWriteReport> RunDatasetWrite(const DatasetWriteOptions& o) {
  if (o.at.empty() == !o.append_dim) {
    return InvalidArgumentError("write-region needs exactly one of --at and --append-dim");
  }
  STRATA_ASSIGN_OR_RETURN(StoreAndPrefix src, OpenSide(o.src_store, o.src));
  STRATA_ASSIGN_OR_RETURN(StoreAndPrefix dst, OpenSide(o.dst_store, o.dst));
  Store& store = *dst.store;
  const std::string& prefix = dst.prefix;
  DatasetWriteReport report;
  STRATA_ASSIGN_OR_RETURN(JobLock lock, JobLock::Take(store, prefix, o.dst));
  const std::string job = JobText(o);
  {
    STRATA_ASSIGN_OR_RETURN(std::optional<Journal> interrupted, Recover(store, prefix));
    if (interrupted) {
      report.recovered = true;
      if (interrupted->state == "publishing" && interrupted->job == job) {
        report.finished_interrupted = true;
        return report;
      }
    }
  }
  // What a killed run staged without a journal (killed before writing it).
  STRATA_RETURN_IF_ERROR(store.ErasePrefix(StagingPrefix(prefix) + "/"));
  STRATA_RETURN_IF_ERROR(store.ReclaimTempFiles(prefix.empty() ? "" : prefix + "/"));

  // 1. Plan.
  STRATA_ASSIGN_OR_RETURN(NodeInfo src_node, InspectNode(*src.store, src.prefix));
  STRATA_ASSIGN_OR_RETURN(NodeInfo dst_node, InspectNode(store, prefix));
  const bool src_group = src_node.kind == NodeInfo::Kind::kGroup;
  const bool dst_group = dst_node.kind == NodeInfo::Kind::kGroup;
  if (src_group != dst_group) {
    return InvalidArgumentError(
        fmt::format("SRC is {} and DST is {}: both must be groups or arrays",
                    src_group ? "a group" : "an array", dst_group ? "a group" : "an array"));
  }
  const bool one_array = !dst_group;
  if (!one_array) {
    auto is_axis = [](const std::string& key) {
      return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
        return c >= '0' && c <= '9';
      });
    };
    const bool by_axis = (o.append_dim && is_axis(*o.append_dim)) ||
                         std::any_of(o.at.begin(), o.at.end(),
                                     [&](const auto& item) { return is_axis(item.first); });
    if (by_axis) {
      return InvalidArgumentError(fmt::format(
          "{} is a group: name the dimension (--at init_time=4, --append-dim init_time), not an "
          "axis (its variables have different axes)",
          o.dst));
    }
  }
  std::vector<Member> members;
  bool consolidated = false;
  if (one_array) {
    Member m;
    STRATA_ASSIGN_OR_RETURN(m.src, ZarrArray::Open(src.store, src.prefix));
    STRATA_ASSIGN_OR_RETURN(m.dst, ZarrArray::Open(dst.store, prefix));
    members.push_back(std::move(m));
  } else {
    STRATA_ASSIGN_OR_RETURN(Hierarchy sh, ReadHierarchy(*src.store, src.prefix));
    STRATA_ASSIGN_OR_RETURN(Hierarchy dh, ReadHierarchy(store, prefix));
    consolidated = dh.from_consolidated;
    std::map<std::string, const HierarchyNode*> in_dst;
    for (const HierarchyNode& n : dh.nodes) in_dst[n.path] = &n;
    for (const HierarchyNode& n : sh.nodes) {
      if (!n.is_array) continue;
      auto it = in_dst.find(n.path);
      if (it == in_dst.end() || !it->second->is_array) {
        return InvalidArgumentError(fmt::format(
            "SRC has variable '{}' that DST lacks (backfill and append write existing "
            "variables only)",
            n.path));
      }
      Member m;
      m.path = n.path;
      STRATA_ASSIGN_OR_RETURN(m.src, ZarrArray::Open(src.store, JoinKey(src.prefix, n.path)));
      STRATA_ASSIGN_OR_RETURN(m.dst, ZarrArray::Open(dst.store, JoinKey(prefix, n.path)));
      if (m.dst->shape() != it->second->array->shape) {
        return FailedPreconditionError(fmt::format(
            "DST's consolidated metadata gives '{}' the shape {}, its own metadata {} (an "
            "earlier write did not update the consolidated metadata); repair DST first",
            n.path, ShapeToString(it->second->array->shape), ShapeToString(m.dst->shape())));
      }
      members.push_back(std::move(m));
    }
    if (o.append_dim) {
      // Every DST variable along the append dimension must grow with the rest.
      for (const HierarchyNode& n : dh.nodes) {
        if (!n.is_array) continue;
        const bool along = std::find(n.dimensions.begin(), n.dimensions.end(),
                                     std::optional<std::string>(*o.append_dim)) !=
                           n.dimensions.end();
        const bool in_src = std::any_of(members.begin(), members.end(),
                                        [&](const Member& m) { return m.path == n.path; });
        if (along && !in_src) {
          return InvalidArgumentError(fmt::format(
              "DST's '{}' has dimension {} but SRC has no '{}': appending would leave it "
              "shorter than the rest",
              n.path, *o.append_dim, n.path));
        }
      }
    }
  }
  for (Member& m : members) STRATA_RETURN_IF_ERROR(PlaceMember(o, one_array, m));
  if (std::none_of(members.begin(), members.end(), [](const Member& m) { return m.write; })) {
    return InvalidArgumentError(fmt::format(
        "no variable of SRC has the dimension{} {}", o.at.size() > 1 ? "s" : "",
        o.append_dim ? *o.append_dim : [&] {
          std::string names;
          for (const auto& [k, v] : o.at) names += (names.empty() ? "" : ", ") + k;
          return names;
        }()));
  }
  auto pool = MemoryPool::Default()->NewChild({"write-region"});
  for (Member& m : members) {
    if (!m.write) {
      STRATA_RETURN_IF_ERROR(CheckEqual(m, *pool));
      ++report.members_checked;
      continue;
    }
    if (m.grows) {
      const int axis = [&] {
        for (int i = 0; i < m.new_metadata.rank(); ++i) {
          if (m.new_metadata.shape[i] != m.dst->shape()[i]) return i;
        }
        return 0;
      }();
      STRATA_ASSIGN_OR_RETURN(m.reader,
                              ZarrArray::OpenForAppend(dst.store, JoinKey(prefix, m.path), axis,
                                                       m.new_metadata.shape[axis]));
    } else {
      m.reader = m.dst;
    }
  }

  // 2. Stage.
  Journal journal;
  journal.state = "staging";
  journal.job = job;
  const std::string journal_key = JoinKey(prefix, kDatasetJournalKey);
  STRATA_RETURN_IF_ERROR(store.Set(journal_key, JournalText(journal)));
  bool grows = false;
  for (const Member& m : members) {
    if (!m.write) continue;
    StagedMember staged;
    staged.path = m.path;
    Status s = StageMember(dst.store, prefix, m, *pool, staged, report);
    if (!s.ok()) {
      // A value DST cannot hold (or an IO error): drop what was staged, so
      // that the refusal leaves DST as it was, journal and all.
      (void)store.ErasePrefix(StagingPrefix(prefix) + "/");
      (void)store.Erase(journal_key);
      return s;
    }
    if (m.grows) {
      staged.metadata = m.new_metadata.Encode();
      grows = true;
    }
    ++report.members_written;
    if (m.converter->copies_bytes()) ++report.members_copied;
    journal.members.push_back(std::move(staged));
  }
  journal.consolidated = consolidated && grows;
  if (o.fail_before_publish) return UnavailableError("stopped before the publish (test)");

  // 3. Publish.
  journal.state = "publishing";
  STRATA_RETURN_IF_ERROR(store.Set(journal_key, JournalText(journal)));
  Status published = Publish(store, prefix, journal, o.fail_after_renames);
  if (!published.ok()) {
    return Status(published.code(),
                  fmt::format("{} (the publish is journaled in {}: run the same command again "
                              "to finish it)",
                              published.message(), JoinKey(store.url(), journal_key)));
  }
  return report;
}

}  // namespace strata
