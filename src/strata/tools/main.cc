// The `strata` command line. Parses arguments with CLI11 and hands each verb
// to its Run* function (commands.h). Errors are one line on stderr,
// "strata: error: ...": exit code 2 for usage, 1 for everything else.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdio>
#include <string>

#include "strata/base/byte_size.h"
#include "strata/base/system_info.h"
#include "strata/plan/spec.h"
#include "strata/storage/location.h"
#include "strata/tools/commands.h"
#include "strata/tools/dataset_util.h"

namespace strata {
namespace {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

// A usage error: bad or inconsistent arguments, caught before doing anything.
struct UsageError {
  std::string message;
};

int Fail(const Status& status, int code = kExitError) {
  fmt::print(stderr, "strata: error: {}\n", status.message());
  return code;
}

template <typename T>
T OrUsage(Result<T> r) {
  if (!r.ok()) throw UsageError{std::string(r.status().message())};
  return std::move(r).value();
}

void OrUsage(const Status& s) {
  if (!s.ok()) throw UsageError{std::string(s.message())};
}

// A size option given on the command line must parse ('' included): a bad
// one is a usage error, not a failure of the run.
void CheckSizeOption(const CLI::App* sub, const std::string& name, const std::string& value) {
  if (sub->count(name) == 0) return;
  OrUsage(ParseByteSize(value).status().WithContext(name));
}

// --shards: a shape each of whose extents is a multiple of `chunks`.
Shape ParseShardsOption(const std::string& text, const Shape& chunks, std::string_view chunks_name) {
  Shape shards = OrUsage(ParseShape(text, "--shards"));
  if (shards.size() != chunks.size()) {
    throw UsageError{fmt::format("--shards {} does not match the rank of {} {}",
                                 ShapeToString(shards), chunks_name, ShapeToString(chunks))};
  }
  for (size_t i = 0; i < shards.size(); ++i) {
    if (shards[i] < 1 || shards[i] % chunks[i] != 0) {
      throw UsageError{fmt::format("--shards {} must be a multiple of {} {} (the inner chunks)",
                                   ShapeToString(shards), chunks_name, ShapeToString(chunks))};
    }
  }
  return shards;
}

ZarrFormat ParseFormat(int v) {
  if (v != 2 && v != 3) throw UsageError{fmt::format("--zarr-format must be 2 or 3, got {}", v)};
  return v == 2 ? ZarrFormat::kV2 : ZarrFormat::kV3;
}

// The dask and ray executors are driven from Python (a distributed.Client or
// a Ray driver lives in the calling process): their command line is
// `python -m strata` (python/strata/__main__.py).
ExecutorKind ParseCliExecutor(const std::string& name, std::string_view verb) {
  const ExecutorKind kind = OrUsage(ParseExecutor(name));
  if (IsExternalExecutor(kind)) {
    throw UsageError{fmt::format(
        "--executor {0} runs from Python: python -m strata {1} ... --executor {0} "
        "[--address HOST:PORT]",
        name, verb)};
  }
  return kind;
}

int Main(int argc, char** argv) {
  CLI::App app{"strata: bounded-memory processing of chunked N-d arrays (Zarr v2/v3)", "strata"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "strata 0.1.0");
  const int default_workers = AvailableCores();

  // strata random
  std::string r_dst, r_shape, r_chunks, r_dtype = "float64", r_codec = "blosc", r_shards;
  uint64_t r_seed = 0;
  int r_format = 0, r_workers = default_workers;
  bool r_overwrite = false;
  CLI::App* random = app.add_subcommand(
      "random", "Write chunk-independent synthetic data (value = f(flat index, seed)) to DST");
  random->add_option("DST", r_dst, "Destination array path")->required();
  random->add_option("--shape", r_shape, "Array shape, e.g. 10000,10000")->required();
  random->add_option("--chunks", r_chunks, "Chunk shape, e.g. 10000,1000")->required();
  random->add_option("--dtype", r_dtype, "Data type (bool, int8..uint64, float16, float32, float64, complex64, complex128)")
      ->capture_default_str();
  random->add_option("--seed", r_seed, "Seed")->capture_default_str();
  random->add_option("--codec", r_codec, "Codec, e.g. blosc, zstd:level=3, none")->capture_default_str();
  random->add_option("--zarr-format", r_format,
                     "Zarr format of DST: 2 or 3 (default 2; 3 with --shards)");
  random->add_option("--shards", r_shards,
                     "Zarr v3 shards, e.g. 10000,10000: --chunks are then the inner chunks");
  random->add_option("--workers", r_workers, "Threads")->capture_default_str();
  random->add_flag("--overwrite", r_overwrite, "Replace an existing array at DST");

  // strata info
  std::string i_path;
  bool i_json = false;
  CLI::App* info = app.add_subcommand("info", "Describe the Zarr array or group at PATH");
  info->add_option("PATH", i_path, "Array or group path")->required();
  info->add_flag("--json", i_json, "Print JSON");

  // strata copy
  std::string c_src, c_dst, c_codec, c_shards, c_chunks;
  int c_format = 0, c_workers = default_workers;
  bool c_overwrite = false;
  CLI::App* copy = app.add_subcommand("copy", "Re-encode SRC into DST (same shape and chunks)");
  copy->add_option("SRC", c_src, "Source array")->required();
  copy->add_option("DST", c_dst, "Destination array")->required();
  copy->add_option("--codec", c_codec, "New codec (default: keep SRC's), e.g. zstd:level=3, none");
  copy->add_option("--zarr-format", c_format, "Zarr format of DST: 2 or 3 (default: SRC's)");
  copy->add_option("--shards", c_shards,
                   "Write a sharded Zarr v3 array with shards of this shape (implies "
                   "--zarr-format 3)");
  copy->add_option("--chunks", c_chunks, "With --shards: the inner chunks (default: SRC's chunks)");
  copy->add_option("--workers", c_workers, "Threads")->capture_default_str();
  copy->add_flag("--overwrite", c_overwrite, "Replace an existing array at DST");

  // strata verify
  std::string v_a, v_b;
  int v_workers = default_workers, v_max_report = 10;
  CLI::App* verify = app.add_subcommand(
      "verify", "Compare two arrays element by element (NaN equals NaN); exit 0 only if equal");
  verify->add_option("A", v_a, "First array")->required();
  verify->add_option("B", v_b, "Second array")->required();
  verify->add_option("--workers", v_workers, "Threads")->capture_default_str();
  verify->add_option("--max-report", v_max_report, "Differences to list")->capture_default_str();

  // strata rechunk / strata plan (shared options)
  RechunkOptions rk;
  std::string rk_chunks, rk_codec, rk_shape, rk_source_chunks, rk_dtype = "float64", rk_shards;
  // Bound as text, parsed once into rk.spec below.
  std::string rk_allowed_mem = "2GB", rk_reserved_mem, rk_total_system_mem;
  std::string rk_executor = "threads", rk_tier = "auto";
  int rk_format = 0;
  rk.spec.workers = default_workers;
  auto add_rechunk_options = [&](CLI::App* sub) {
    sub->add_option("--chunks", rk_chunks,
                    "Target chunk shape, e.g. 1000,10000, or by dimension name, e.g. "
                    "time=-1,lat=10,lon=10 (-1: the whole axis; required for a group)")
        ->required();
    sub->add_option("--allowed-mem", rk_allowed_mem, "Memory one task may use")
        ->capture_default_str();
    sub->add_option("--reserved-mem", rk_reserved_mem, "Memory a task needs before any chunk");
    sub->add_option("--total-system-mem", rk_total_system_mem,
                    "Memory for all tasks and RAM intermediates (default 80% of RAM)");
    sub->add_option("--workers", rk.spec.workers, "Worker threads or processes")
        ->capture_default_str();
    sub->add_option("--executor", rk_executor,
                    "inline, threads, processes (worker processes sharing chunks through "
                    "shared memory), or mpi (every rank of an mpirun/srun job; see docs/guide.md); "
                    "ray and dask: python -m strata")
        ->capture_default_str();
    sub->add_option("--tier", rk_tier, "Where intermediates go: auto, memory, spill, disk, object")
        ->capture_default_str();
    sub->add_option("--work-dir", rk.spec.work_dir, "Directory for disk intermediates and spill");
    sub->add_option("--tier-object", rk.spec.object_store_url,
                    "Object-store prefix for the object tier, e.g. s3://bucket/tmp");
    sub->add_flag("!--no-backups", rk.spec.backup_tasks,
                  "Never start backup attempts of straggling tasks");
    sub->add_option("--backup-slowdown", rk.spec.backup_slowdown,
                    "A task running longer than this x its op's median task time gets a backup "
                    "attempt on another worker")
        ->capture_default_str();
    sub->add_option("--heartbeat-timeout", rk.spec.heartbeat_timeout,
                    "Seconds without a heartbeat after which a worker process is killed as hung "
                    "(processes) or the job ends (mpi)")
        ->capture_default_str();
  };
  CLI::App* rechunk = app.add_subcommand(
      "rechunk", "Rewrite SRC with new chunks into DST, intermediates in the fastest tier that fits");
  rechunk->add_option("SRC", rk.src, "Source array")->required();
  rechunk->add_option("DST", rk.dst, "Destination array")->required();
  add_rechunk_options(rechunk);
  rechunk->add_option("--codec", rk_codec, "Codec of DST (default: SRC's), e.g. zstd:level=3, none");
  rechunk->add_option("--zarr-format", rk_format, "Zarr format of DST: 2 or 3 (default: SRC's)");
  rechunk->add_option("--shards", rk_shards,
                      "Write a sharded Zarr v3 array: shards of this shape holding inner chunks "
                      "of --chunks (implies --zarr-format 3)");
  rechunk->add_option("--history", rk.history, "Append per-task history (JSON lines) to FILE");
  rechunk->add_flag("--overwrite", rk.overwrite, "Replace an existing array at DST");
  rechunk->add_flag("--quiet", rk.quiet, "Print nothing but errors");
  CLI::App* plan = app.add_subcommand(
      "plan", "Print the plan of rechunking SRC (or an array described by --shape/--source-chunks) "
              "without running it");
  plan->add_option("SRC", rk.src, "Source array (optional with --shape)");
  add_rechunk_options(plan);
  plan->add_option("--shape", rk_shape, "Shape of a described source (no data needed)");
  plan->add_option("--source-chunks", rk_source_chunks, "Chunks of the described source");
  plan->add_option("--dtype", rk_dtype, "Data type of the described source")->capture_default_str();
  plan->add_flag("--json", rk.json, "Print JSON");

  // strata write-region
  WriteRegionOptions wr;
  std::string wr_at;
  std::string wr_append;
  wr.workers = default_workers;
  CLI::App* write_region = app.add_subcommand(
      "write-region", "Backfill or append: write SRC into a region of the existing array DST");
  write_region->add_option("SRC", wr.src, "The values: an array of the region's shape, or a "
                           "group (a patch dataset)")->required();
  write_region->add_option("DST", wr.dst, "An existing array, or group (the archive)")->required();
  write_region->add_option("--at", wr_at, "Origin of the region in DST, e.g. 100,0, or by "
                           "dimension name, e.g. init_time=4");
  write_region->add_option("--append-dim", wr_append,
                           "Append along this axis or dimension name instead (DST grows by "
                           "SRC's extent)");
  write_region->add_option("--allowed-mem", wr.allowed_mem, "Memory one task may use")
      ->capture_default_str();
  write_region->add_option("--executor", wr.executor, "inline, threads, processes or mpi")
      ->capture_default_str();
  write_region->add_option("--workers", wr.workers, "Worker threads or processes")
      ->capture_default_str();
  write_region->add_flag("--quiet", wr.quiet, "Print nothing but errors");

  if (argc >= 2 && argv[1][0] != '-') {
    std::string verb = argv[1];
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) known = known || sub->get_name() == verb;
    if (!known) {
      fmt::print(stderr, "strata: error: unknown command '{}' (expected random, info, copy, verify, rechunk, plan "
                 "or write-region)\n",
                 verb);
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "strata: error: {}\n", e.what());
    return kExitUsage;
  }

  try {
    auto check_workers = [](int w) {
      if (w < 1 || w > 1024) throw UsageError{fmt::format("--workers must be 1..1024, got {}", w)};
      return w;
    };
    if (random->parsed()) {
      RandomOptions o;
      o.dst = r_dst;
      o.shape = OrUsage(ParseShape(r_shape, "--shape"));
      o.chunks = OrUsage(ParseShape(r_chunks, "--chunks"));
      if (o.chunks.size() != o.shape.size()) {
        throw UsageError{fmt::format("--chunks {} does not match the rank of --shape {}",
                                     ShapeToString(o.chunks), ShapeToString(o.shape))};
      }
      for (Index c : o.chunks) {
        if (c < 1) {
          throw UsageError{fmt::format("--chunks {} must be at least 1 along every axis",
                                       ShapeToString(o.chunks))};
        }
      }
      o.dtype = OrUsage(ParseDTypeName(r_dtype));
      if (o.dtype.is_fixed_length()) {
        throw UsageError{fmt::format("--dtype {}: random data is numeric (or float16)", r_dtype)};
      }
      o.seed = r_seed;
      o.codecs = OrUsage(ParseCodecArgument(r_codec));
      o.zarr_format = r_format == 0 ? (r_shards.empty() ? ZarrFormat::kV2 : ZarrFormat::kV3)
                                    : ParseFormat(r_format);
      o.workers = check_workers(r_workers);
      o.overwrite = r_overwrite;
      if (!r_shards.empty()) o.shards = ParseShardsOption(r_shards, o.chunks, "--chunks");
      Status s = RunRandom(o);
      return s.ok() ? 0 : Fail(s);
    }
    if (info->parsed()) {
      Status s = RunInfo({i_path, i_json});
      return s.ok() ? 0 : Fail(s);
    }
    if (copy->parsed()) {
      CopyOptions o;
      o.src = c_src;
      o.dst = c_dst;
      if (!c_codec.empty()) o.codecs = OrUsage(ParseCodecArgument(c_codec));
      if (c_format != 0) o.zarr_format = ParseFormat(c_format);
      o.workers = check_workers(c_workers);
      o.overwrite = c_overwrite;
      if (!c_chunks.empty()) {
        if (c_shards.empty()) throw UsageError{"copy --chunks needs --shards (use rechunk to change chunks)"};
        o.chunks = OrUsage(ParseShape(c_chunks, "--chunks"));
      }
      if (!c_shards.empty()) {
        if (o.zarr_format == ZarrFormat::kV2) throw UsageError{"--shards needs --zarr-format 3"};
        o.shards = OrUsage(ParseShape(c_shards, "--shards"));
        if (o.chunks) o.shards = ParseShardsOption(c_shards, *o.chunks, "--chunks");
      }
      OrUsage(CheckDisjoint(o.src, "SRC", o.dst, "DST"));
      Status s = RunCopy(o);
      return s.ok() ? 0 : Fail(s);
    }
    if (rechunk->parsed() || plan->parsed()) {
      rk.plan_only = plan->parsed();
      if (rk_chunks.find('=') != std::string::npos) {
        rk.named_chunks = OrUsage(ParseNamedChunks(rk_chunks));
      } else {
        rk.chunks = OrUsage(ParseShape(rk_chunks, "--chunks"));
      }
      for (Index c : rk.chunks) {
        if (c < 1) {
          throw UsageError{fmt::format("--chunks {} must be at least 1 along every axis",
                                       ShapeToString(rk.chunks))};
        }
      }
      check_workers(rk.spec.workers);
      CLI::App* sub = rk.plan_only ? plan : rechunk;
      CheckSizeOption(sub, "--allowed-mem", rk_allowed_mem);
      CheckSizeOption(sub, "--reserved-mem", rk_reserved_mem);
      CheckSizeOption(sub, "--total-system-mem", rk_total_system_mem);
      if (!rk.plan_only) {
        // Nothing written (DST, work_dir, the object tier) may overlap SRC,
        // and DST may not hold the intermediates.
        OrUsage(CheckDisjoint(rk.src, "SRC", rk.dst, "DST"));
        if (!rk.spec.work_dir.empty()) {
          OrUsage(CheckDisjoint(rk.src, "SRC", rk.spec.work_dir, "--work-dir"));
          OrUsage(CheckDisjoint(rk.dst, "DST", rk.spec.work_dir, "--work-dir"));
        }
        if (!rk.spec.object_store_url.empty()) {
          OrUsage(CheckDisjoint(rk.src, "SRC", rk.spec.object_store_url, "--tier-object"));
          OrUsage(CheckDisjoint(rk.dst, "DST", rk.spec.object_store_url, "--tier-object"));
        }
      }
      if (!(rk.spec.backup_slowdown > 1 && rk.spec.backup_slowdown <= 1e6)) {
        throw UsageError{fmt::format("--backup-slowdown must be more than 1, got {}",
                                     rk.spec.backup_slowdown)};
      }
      if (!(rk.spec.heartbeat_timeout > 0 && rk.spec.heartbeat_timeout <= 86400)) {
        throw UsageError{fmt::format("--heartbeat-timeout must be more than 0 and at most "
                                     "86400 seconds, got {}",
                                     rk.spec.heartbeat_timeout)};
      }
      rk.spec.allowed_mem = rk_allowed_mem;
      if (!rk_reserved_mem.empty()) rk.spec.reserved_mem = rk_reserved_mem;
      if (!rk_total_system_mem.empty()) rk.spec.total_system_mem = rk_total_system_mem;
      rk.spec.executor = ParseCliExecutor(rk_executor, "rechunk");
      rk.spec.tier = OrUsage(ParseTierChoice(rk_tier));
      if (!rk_codec.empty()) rk.codecs = OrUsage(ParseCodecArgument(rk_codec));
      if (!rk_shards.empty()) {
        if (rk_format == 2) throw UsageError{"--shards needs --zarr-format 3"};
        if (!rk.named_chunks.empty()) {
          throw UsageError{"--shards needs --chunks as a shape (the inner chunks)"};
        }
        rk.shards = ParseShardsOption(rk_shards, rk.chunks, "--chunks");
      }
      if (rk_format != 0) rk.zarr_format = ParseFormat(rk_format);
      if (rk.plan_only) {
        if (rk.src.empty() == rk_shape.empty()) {
          throw UsageError{"plan needs either SRC or --shape with --source-chunks"};
        }
        if (!rk_shape.empty()) {
          rk.shape = OrUsage(ParseShape(rk_shape, "--shape"));
          if (rk_source_chunks.empty()) throw UsageError{"--shape needs --source-chunks"};
          rk.source_chunks = OrUsage(ParseShape(rk_source_chunks, "--source-chunks"));
          if (rk.source_chunks.size() != rk.shape.size()) {
            throw UsageError{fmt::format("--source-chunks {} does not match the rank of --shape {}",
                                         ShapeToString(rk.source_chunks),
                                         ShapeToString(rk.shape))};
          }
          rk.dtype = OrUsage(ParseDTypeName(rk_dtype));
        }
      }
      Status s = RunRechunk(rk);
      return s.ok() ? 0 : Fail(s);
    }
    if (write_region->parsed()) {
      if (wr_at.empty() == wr_append.empty()) {
        throw UsageError{"write-region needs exactly one of --at and --append-dim"};
      }
      if (wr_at.find('=') != std::string::npos) {
        wr.at_named = OrUsage(ParseNamedOrigin(wr_at));
      } else if (!wr_at.empty()) {
        wr.at = OrUsage(ParseShape(wr_at, "--at"));
      }
      if (!wr_append.empty()) {
        int axis = -1;
        const char* last = wr_append.data() + wr_append.size();
        auto [end, ec] = std::from_chars(wr_append.data(), last, axis);
        if (ec == std::errc() && end == last) {
          if (axis < 0) {
            throw UsageError{fmt::format(
                "--append-dim {}: an axis of DST is 0 or more (0 for the first axis), or a "
                "dimension name",
                axis)};
          }
          wr.append_dim = axis;
        } else {
          wr.append_name = wr_append;
        }
      }
      check_workers(wr.workers);
      ParseCliExecutor(wr.executor, "write-region");
      CheckSizeOption(write_region, "--allowed-mem", wr.allowed_mem);
      // SRC is read while DST is rewritten: they may not overlap.
      OrUsage(CheckDisjoint(wr.src, "SRC", wr.dst, "DST"));
      Status s = RunWriteRegion(wr);
      return s.ok() ? 0 : Fail(s);
    }
    if (verify->parsed()) {
      VerifyOptions o{v_a, v_b, check_workers(v_workers), v_max_report};
      Result<bool> equal = RunVerify(o);
      if (!equal.ok()) return Fail(equal.status());
      return *equal ? 0 : kExitError;
    }
  } catch (const UsageError& e) {
    fmt::print(stderr, "strata: error: {}\n", e.message);
    return kExitUsage;
  }
  return kExitUsage;
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) { return strata::Main(argc, argv); }
