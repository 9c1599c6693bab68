#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "strata/base/byte_size.h"
#include "strata/base/mpi.h"
#include "strata/base/system_info.h"
#include "strata/base/temp_dir.h"
#include "strata/storage/open_store.h"
#include "strata/storage/zarr/hierarchy.h"
#include "strata/storage/zarr/zarr_array.h"
#include "strata/tools/cf_encoding.h"
#include "strata/tools/dataset_util.h"
#include "strata/tools/dataset_write.h"
#include "strata/strata.h"
#include "strata/tools/commands.h"

namespace strata {
namespace {

// `spec` checked, with what ResolveSpec adjusted (e.g. total_system_mem)
// said as warnings.
Result<Spec> Checked(const Spec& spec) {
  STRATA_RETURN_IF_ERROR(ValidateSpec(spec));
  if (spec.executor != ExecutorKind::kMpi) {  // collective under mpi: resolved when planning
    STRATA_ASSIGN_OR_RETURN(ResolvedSpec resolved, ResolveSpec(spec));
    for (const std::string& w : resolved.warnings) fmt::print(stderr, "strata: warning: {}\n", w);
  }
  return spec;
}

void PrintPlan(const Plan& plan, bool json) {
  std::string text = json ? plan.ToJson() + "\n" : plan.ToText();
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// Writes array metadata (no chunks) for a source described on the command
// line, so that a plan can be made with no data anywhere.
Status WriteMetadataOnly(const std::string& dir, const RechunkOptions& o) {
  ArrayMetadata m;
  m.zarr_format = ZarrFormat::kV2;
  m.shape = o.shape;
  m.chunk_shape = o.source_chunks;
  m.encoding.dtype = o.dtype;
  m.encoding.bytes_codecs = DefaultCodecs();
  m.fill_value = ZeroFillValue(o.dtype);
  STRATA_ASSIGN_OR_RETURN(StoreAndPrefix at, OpenStoreUrl(dir, /*create=*/true));
  ZarrArray::CreateOptions create;
  create.deferred_metadata = false;
  return ZarrArray::Create(at.store, at.prefix, m, create).status();
}

// One line: the hosts MPI grouped the ranks on (ranks sharing memory), each
// with its ranks and the memory it counts, and total_system_mem (by default
// the hosts' sum). `rank_memory` is every rank's DefaultTotalSystemMemory().
void PrintHosts(const mpi::HostLayout& layout, const std::vector<int64_t>& rank_memory,
                int64_t total_system_mem, bool total_given) {
  std::string line = fmt::format("mpi: {} ranks on {} hosts:", layout.host_of_rank.size(),
                                 layout.hosts);
  int64_t sum = 0;
  for (int h = 0; h < layout.hosts; ++h) {
    std::string ranks;
    int64_t memory = 0;
    for (size_t r = 0; r < layout.host_of_rank.size(); ++r) {
      if (layout.host_of_rank[r] != h) continue;
      if (ranks.empty()) memory = rank_memory[r];
      ranks += fmt::format("{}{}", ranks.empty() ? "" : ",", r);
    }
    sum += memory;
    line += fmt::format("{} {} [ranks {}] {} ({} bytes)", h == 0 ? "" : ";", layout.host_names[h],
                        ranks, FormatBytes(memory), memory);
  }
  const char* why = total_system_mem == sum ? ", their sum"
                    : total_given           ? ", from --total-system-mem"
                                            : "";
  line += fmt::format("; hosts' memory sums to {} ({} bytes); total_system_mem {} ({} bytes{})\n",
                      FormatBytes(sum), sum, FormatBytes(total_system_mem), total_system_mem, why);
  std::fwrite(line.data(), 1, line.size(), stdout);
}

// The options of writing the rechunked copy of an array of metadata `sm`.
Result<ToZarrOptions> TargetOptions(const RechunkOptions& o, const ArrayMetadata& sm) {
  ToZarrOptions to;
  to.zarr_format = o.zarr_format.value_or(sm.zarr_format);
  std::vector<BytesCodecSpec> codecs = o.codecs.value_or(sm.read_chunk_encoding().bytes_codecs);
  if (to.zarr_format != sm.zarr_format && !o.codecs) codecs = DefaultCodecs();
  to.no_compression = codecs.empty();
  to.codecs = codecs;
  to.overwrite = o.overwrite;
  if (o.shards) {
    if (o.zarr_format == ZarrFormat::kV2) {
      return InvalidArgumentError("--shards needs --zarr-format 3 (Zarr v2 has no sharding)");
    }
    to.zarr_format = ZarrFormat::kV3;  // sharding is v3's: --shards implies it
    to.shards = o.shards;
  }
  // The fill value, attributes and dimension names go along, in the target's
  // format's way.
  CarriedAttributes carried = CarryAttributes(sm, to.zarr_format);
  to.fill_value = std::move(carried.fill_value);
  to.attributes_json = std::move(carried.attributes_json);
  to.dimension_names = std::move(carried.dimension_names);
  return to;
}

// The target chunks of one array: as given, or by dimension name.
Result<Shape> TargetChunks(const RechunkOptions& o, const ArrayMetadata& sm,
                           const std::string& what) {
  if (!o.named_chunks.empty()) {
    return ChunksByName(o.named_chunks, DimensionNamesOf(sm), sm.shape, sm.read_chunk_shape());
  }
  if (o.chunks.size() != sm.shape.size()) {
    return InvalidArgumentError(fmt::format("--chunks {} does not match the rank of {} ({})",
                                            ShapeToString(o.chunks), what,
                                            ShapeToString(sm.shape)));
  }
  return o.chunks;
}

struct Summary : Callback {
  void OnComputeEnd(const Plan&, const Status&, const ComputeSummary& s) override { summary = s; }
  ComputeSummary summary;
};

// Plans and runs the stores `outs`, printing the plan and a summary.
Status RunStores(const RechunkOptions& o, const Spec& spec, const std::vector<Array>& outs) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const Plan> p, plan(outs));
  if (o.plan_only) {
    PrintPlan(*p, o.json);
    return Status::Ok();
  }
  if (!o.quiet) PrintPlan(*p, /*json=*/false);
  ComputeOptions options;
  std::shared_ptr<HistoryCallback> history;
  if (!o.history.empty()) {
    history = std::make_shared<HistoryCallback>(o.history);
    STRATA_RETURN_IF_ERROR(history->status());
    options.callbacks.push_back(history);
  }
  if (!o.quiet) options.callbacks.push_back(std::make_shared<ProgressCallback>());
  auto summary = std::make_shared<Summary>();
  options.callbacks.push_back(summary);
  STRATA_RETURN_IF_ERROR(Execute(*p, options).status());
  // Under mpi, the hosts the ranks were grouped on and the memory each
  // counted (collective, so every rank asks, quiet or not).
  mpi::HostLayout hosts;
  std::vector<int64_t> host_memory;
  if (spec.executor == ExecutorKind::kMpi) {
    STRATA_ASSIGN_OR_RETURN(hosts, mpi::Layout());
    STRATA_ASSIGN_OR_RETURN(host_memory, mpi::AllGather(DefaultTotalSystemMemory()));
  }
  if (!o.quiet) {
    const ComputeSummary& s = summary->summary;
    fmt::print("rechunked {} -> {}: {} tasks in {:.2f} s; peak memory {}; intermediates: {} "
               "written to disk or object storage, peak {} in RAM\n",
               o.src, o.dst, s.tasks, s.seconds, FormatBytes(s.peak_pool_bytes),
               FormatBytes(s.intermediate_bytes_written),
               FormatBytes(s.peak_resident_intermediate_bytes));
    if (spec.executor == ExecutorKind::kMpi) {
      PrintHosts(hosts, host_memory, p->spec().total_system_mem, o.spec.total_system_mem.is_set());
      fmt::print("mpi: {} ranks; {} ({} bytes) moved between ranks; peak memory per rank",
                 s.rank_memory_share.size(), FormatBytes(s.bytes_between_ranks),
                 s.bytes_between_ranks);
      for (size_t r = 0; r < s.rank_peak_pool_bytes.size(); ++r) {
        fmt::print(" {}/{}", FormatBytes(s.rank_peak_pool_bytes[r]),
                   FormatBytes(s.rank_memory_share[r]));
      }
      fmt::print(" (peak/share)\n");
    }
    if (s.backup_attempts > 0 || s.hung_workers_killed > 0) {
      fmt::print("reliability: {} backup attempts of stragglers ({} finished first); {} hung "
                 "workers killed\n",
                 s.backup_attempts, s.backups_won, s.hung_workers_killed);
    }
  }
  return Status::Ok();
}

// Every array of a group, in one plan: each with its chunks by dimension
// name; member groups, attributes and coordinates kept; consolidated
// metadata written once everything is.
Status RechunkGroup(const RechunkOptions& o, const Spec& spec, Store& src_store,
                    const std::string& src_prefix) {
  if (o.named_chunks.empty()) {
    return InvalidArgumentError(fmt::format(
        "{} is a group: give --chunks by dimension name (e.g. time=-1,lat=10,lon=10)", o.src));
  }
  if (o.shards) return InvalidArgumentError("--shards applies to one array, not to a group");
  STRATA_ASSIGN_OR_RETURN(Hierarchy h, ReadHierarchy(src_store, src_prefix));
  const ZarrFormat format = o.zarr_format.value_or(h.zarr_format());
  std::unique_ptr<TempDir> scratch;
  std::string dst = o.dst;
  if (o.plan_only) {
    scratch = std::make_unique<TempDir>("strata-plan");
    dst = scratch->path() + "/target.zarr";
  }
  STRATA_ASSIGN_OR_RETURN(StoreAndPrefix out, OpenStoreUrl(dst, /*create=*/true));
  std::vector<Array> outs;
  std::vector<std::pair<std::string, GroupMetadata>> groups;
  for (const HierarchyNode& n : h.nodes) {
    if (!n.is_array) {
      GroupMetadata g = n.group;
      g.zarr_format = format;
      groups.emplace_back(n.path, std::move(g));
      continue;
    }
    const std::string what = JoinUrl(o.src, n.path);
    STRATA_ASSIGN_OR_RETURN(Shape chunks, TargetChunks(o, *n.array, what));
    Array x = from_zarr(what, spec);
    Array y = x.rechunk(chunks);
    if (!y.ok()) return y.status().WithContext(n.path);
    RechunkOptions member = o;
    member.zarr_format = format;
    STRATA_ASSIGN_OR_RETURN(ToZarrOptions to, TargetOptions(member, *n.array));
    to.overwrite = false;  // the group is replaced as a whole, below
    Array stored = to_zarr(y, JoinUrl(dst, n.path), to);
    if (!stored.ok()) return stored.status().WithContext(n.path);
    outs.push_back(std::move(stored));
  }
  if (outs.empty()) return InvalidArgumentError(fmt::format("{} holds no arrays", o.src));
  if (!o.plan_only) {
    // The groups first (the root replacing whatever DST holds, on request),
    // then the arrays' tasks, then the consolidated metadata.
    for (const auto& [path, g] : groups) {
      STRATA_RETURN_IF_ERROR(CreateGroup(*out.store, JoinKey(out.prefix, path), g,
                                         path.empty() && o.overwrite));
    }
  }
  STRATA_RETURN_IF_ERROR(RunStores(o, spec, outs));
  if (o.plan_only) return Status::Ok();
  return WriteConsolidatedMetadata(*out.store, out.prefix);
}

// Whether write-region runs as a dataset job (dataset_write.h): groups,
// names, an interrupted job's journal in DST, or two arrays whose CF
// encodings differ (their stored numbers cannot be copied as they are).
Result<bool> NeedsDatasetJob(const WriteRegionOptions& w) {
  if (!w.at_named.empty() || w.append_name) return true;
  STRATA_ASSIGN_OR_RETURN(StoreAndPrefix src, OpenStoreUrl(w.src, /*create=*/false));
  STRATA_ASSIGN_OR_RETURN(StoreAndPrefix dst, OpenStoreUrl(w.dst, /*create=*/false));
  STRATA_ASSIGN_OR_RETURN(NodeInfo s, InspectNode(*src.store, src.prefix));
  STRATA_ASSIGN_OR_RETURN(NodeInfo d, InspectNode(*dst.store, dst.prefix));
  if (s.kind == NodeInfo::Kind::kGroup || d.kind == NodeInfo::Kind::kGroup) return true;
  STRATA_ASSIGN_OR_RETURN(bool journal,
                          dst.store->Exists(JoinKey(dst.prefix, kDatasetJournalKey)));
  if (journal) return true;
  if (!s.array || !d.array) return false;  // incomplete: the engine's path says so
  STRATA_ASSIGN_OR_RETURN(CfEncoding se, ParseCfEncoding(*s.array, "SRC"));
  STRATA_ASSIGN_OR_RETURN(CfEncoding de, ParseCfEncoding(*d.array, "DST"));
  return (se.from_attributes || de.from_attributes) && !se.SameAs(de);
}

// An append to one array of a dataset with consolidated metadata would grow
// that array alone: xarray (reading .zmetadata) would keep the old length
// and, once it is re-consolidated, find variables of different lengths.
// Refused for local paths, pointing at the dataset job.
Status CheckNotDatasetMember(const WriteRegionOptions& w) {
  if (w.dst.rfind("s3://", 0) == 0 || w.dst.rfind("memory://", 0) == 0) return Status::Ok();
  std::string path = w.dst.rfind("file://", 0) == 0 ? w.dst.substr(7) : w.dst;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) return Status::Ok();
  Result<StoreAndPrefix> at = OpenStoreUrl(parent.string(), /*create=*/false);
  if (!at.ok()) return Status::Ok();
  Result<NodeInfo> node = InspectNode(*at->store, at->prefix);
  if (!node.ok() || node->kind != NodeInfo::Kind::kGroup) return Status::Ok();
  Result<Hierarchy> h = ReadHierarchy(*at->store, at->prefix);
  if (!h.ok() || !h->from_consolidated) return Status::Ok();
  return FailedPreconditionError(fmt::format(
      "{} is a variable of the dataset {} (consolidated metadata): appending to it alone would "
      "leave its variables at different lengths; append the dataset as a whole (strata "
      "write-region PATCH_GROUP {} --append-dim DIM), which grows every variable and the "
      "consolidated metadata together",
      w.dst, parent.string(), parent.string()));
}

Status RunDatasetJob(const WriteRegionOptions& w) {
  DatasetWriteOptions o;
  o.src = w.src;
  o.dst = w.dst;
  o.quiet = w.quiet;
  o.at = w.at_named;
  if (w.at) {
    for (size_t i = 0; i < w.at->size(); ++i) o.at.emplace_back(std::to_string(i), (*w.at)[i]);
  }
  if (w.append_name) o.append_dim = *w.append_name;
  if (w.append_dim) o.append_dim = std::to_string(*w.append_dim);
  STRATA_ASSIGN_OR_RETURN(DatasetWriteReport r, RunDatasetWrite(o));
  if (!w.quiet) {
    if (r.finished_interrupted) {
      fmt::print("{}: finished the interrupted run of this job (its publish was under way)\n",
                 w.dst);
      return Status::Ok();
    }
    if (r.recovered) fmt::print("{}: an interrupted job was finished first\n", w.dst);
    fmt::print("{}: {} {} variable{} ({} chunk{} written, {} now all fill; {} copied as "
               "stored, the rest converted to DST's encoding); {} checked equal; published\n",
               w.dst, o.append_dim ? "appended to" : "backfilled", r.members_written,
               r.members_written == 1 ? "" : "s", r.chunks_written,
               r.chunks_written == 1 ? "" : "s", r.chunks_erased, r.members_copied,
               r.members_checked);
  }
  return Status::Ok();
}

}  // namespace

Status RunWriteRegion(const WriteRegionOptions& w) {
  STRATA_ASSIGN_OR_RETURN(bool dataset, NeedsDatasetJob(w));
  if (w.append_dim || w.append_name) {
    Result<NodeInfo> dst = [&]() -> Result<NodeInfo> {
      STRATA_ASSIGN_OR_RETURN(StoreAndPrefix at, OpenStoreUrl(w.dst, /*create=*/false));
      return InspectNode(*at.store, at.prefix);
    }();
    if (dst.ok() && dst->kind != NodeInfo::Kind::kGroup) {
      STRATA_RETURN_IF_ERROR(CheckNotDatasetMember(w));
    }
  }
  if (dataset) return RunDatasetJob(w);
  RechunkOptions o;
  o.src = w.src;
  o.dst = w.dst;
  o.quiet = w.quiet;
  o.spec.allowed_mem = w.allowed_mem;
  STRATA_ASSIGN_OR_RETURN(o.spec.executor, ParseExecutor(w.executor));
  o.spec.workers = w.workers;
  STRATA_ASSIGN_OR_RETURN(const Spec spec, Checked(o.spec));
  if (spec.executor == ExecutorKind::kMpi) {
    STRATA_RETURN_IF_ERROR(mpi::Init().WithContext("executor mpi"));
    if (mpi::Rank() != 0) o.quiet = true;
  }
  Array x = from_zarr(w.src, spec);
  if (!x.ok()) return x.status();
  ToZarrOptions to;
  to.region_origin = w.at;
  to.append_dim = w.append_dim;
  Array out = to_zarr(x, w.dst, to);
  if (!out.ok()) return out.status();
  return RunStores(o, spec, {out});
}

Status RunRechunk(const RechunkOptions& given) {
  STRATA_ASSIGN_OR_RETURN(const Spec spec, Checked(given.spec));
  // Under mpi every rank runs this (and joins the job first); rank 0 alone
  // prints.
  if (spec.executor == ExecutorKind::kMpi) {
    STRATA_RETURN_IF_ERROR(mpi::Init().WithContext("executor mpi"));
  }
  RechunkOptions o = given;
  if (spec.executor == ExecutorKind::kMpi && mpi::Rank() != 0) o.quiet = true;
  std::unique_ptr<TempDir> scratch;
  std::string src = o.src;
  if (src.empty()) {
    if (!o.plan_only) return InvalidArgumentError("rechunk needs SRC");
    scratch = std::make_unique<TempDir>("strata-plan");
    src = scratch->path() + "/source.zarr";
    STRATA_RETURN_IF_ERROR(WriteMetadataOnly(src, o));
  }
  // The source is opened once: its metadata decides the defaults of DST (as
  // strata copy does), and the graph reads the same open array.
  STRATA_ASSIGN_OR_RETURN(StoreAndPrefix at, OpenStoreUrl(src, /*create=*/false));
  STRATA_ASSIGN_OR_RETURN(NodeInfo node, InspectNode(*at.store, at.prefix));
  if (node.kind == NodeInfo::Kind::kGroup) return RechunkGroup(o, spec, *at.store, at.prefix);
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ZarrArray> source, ZarrArray::Open(at.store, at.prefix));
  const ArrayMetadata& sm = source->metadata();
  STRATA_ASSIGN_OR_RETURN(Shape chunks, TargetChunks(o, sm, src));
  Array x = from_zarr(source, spec);
  Array y = x.rechunk(chunks);
  if (!y.ok()) return y.status();
  STRATA_ASSIGN_OR_RETURN(ToZarrOptions to, TargetOptions(o, sm));
  // `strata plan` shows the plan of writing the result (nothing is written:
  // to_zarr only creates its array when a compute starts).
  if (o.plan_only && !scratch) scratch = std::make_unique<TempDir>("strata-plan");
  Array out = to_zarr(y, o.plan_only ? scratch->path() + "/target.zarr" : o.dst, to);
  if (!out.ok()) return out.status();
  return RunStores(o, spec, {out});
}

}  // namespace strata
