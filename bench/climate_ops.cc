// climate_ops: the operations of bench/climate_ops.py over the public C++ API,
// as a user program would run them.
//
//   climate_ops make OUT.zarr --shape T,LAT,LON --chunks C0,C1,C2 [--nan 0.1] [--seed 0]
//                [--allowed-mem SIZE] [--workers N]
//   climate_ops run OP IN.zarr [--out OUT.zarr] [--points FILE] [--allowed-mem SIZE]
//                [--workers N]
//
// make writes a (time, lat, lon) float64 array: uniform values with a share of
// NaN (chunk-independent, the same in any chunking), blosc lz4 (zarr-python's
// default codec). OPs, each over the time axis (axis 0):
//   nanmean    the mean over time skipping NaN, returned to memory
//   groupby    the mean per month (12 labels of a 365-day calendar, as an
//              int32 label array) skipping NaN, returned to memory
//   cumsum     the cumulative sum over time, written to --out
//   points     the time series at the (lat, lon) points of --points (a text
//              file of "lat lon" lines), returned to memory
//   diff       the difference between consecutive times, written to --out
// Prints one JSON line: op, seconds (plan + compute), tasks, the largest
// measured and projected task memory, the most chunk buffers the process held
// in use at once (chunk_buffers_peak) and with the allocator's idle ones
// (buffers_held_peak: what the OS saw of them), and a checksum of the result
// (for results in memory) so that runs can be compared with Dask's.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "strata/strata.h"

namespace {

int Usage(const std::string& why) {
  std::fprintf(stderr,
               "climate_ops: error: %s\n"
               "usage: climate_ops make OUT.zarr --shape T,LAT,LON --chunks C0,C1,C2 [--nan F]\n"
               "       climate_ops run nanmean|groupby|cumsum|points|diff IN.zarr [--out OUT]\n"
               "                   [--points FILE] [--allowed-mem SIZE] [--workers N]\n",
               why.c_str());
  return 2;
}

class Peaks : public strata::Callback {
 public:
  void OnTaskEnd(const strata::TaskEndEvent& e) override {
    measured = std::max(measured, e.measured_peak);
    projected = std::max(projected, e.projected_mem);
    ++tasks;
  }
  int64_t measured = 0, projected = 0, tasks = 0;
};

// Month (0..11) of day d of a 365-day calendar.
int32_t MonthOf(int64_t d) {
  static const int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int64_t day = d % 365;
  for (int m = 0; m < 12; ++m) {
    if (day < kDays[m]) return m;
    day -= kDays[m];
  }
  return 11;
}

double Checksum(const strata::NDArray& a) {
  strata::NDArray f = *strata::NDArray::Allocate(*strata::MemoryPool::Default(),
                                                 strata::DTypeId::kFloat64, a.shape());
  if (!strata::Cast(a.view(), f.view()).ok()) return 0;
  double s = 0;
  for (double v : f.values<double>()) {
    if (!std::isnan(v)) s += v;
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return Usage("a command and a path are needed");
  const std::string command = argv[1];
  std::vector<std::string> positional;
  strata::Spec spec;
  spec.allowed_mem = "2GB";  // workers: the available cores (Spec's default)
  std::string shape_text, chunks_text, out, points_file;
  double nan_share = 0.1;
  uint64_t seed = 0;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--shape") {
      shape_text = value();
    } else if (arg == "--chunks") {
      chunks_text = value();
    } else if (arg == "--nan") {
      nan_share = std::atof(value().c_str());
    } else if (arg == "--seed") {
      seed = std::strtoull(value().c_str(), nullptr, 10);
    } else if (arg == "--out") {
      out = value();
    } else if (arg == "--points") {
      points_file = value();
    } else if (arg == "--allowed-mem") {
      spec.allowed_mem = value();
    } else if (arg == "--workers") {
      spec.workers = std::atoi(value().c_str());
      if (spec.workers < 1) return Usage("--workers needs a positive number");
    } else if (!arg.empty() && arg[0] == '-') {
      return Usage("unknown option " + arg);
    } else {
      positional.push_back(arg);
    }
  }
  auto start = std::chrono::steady_clock::now();
  auto peaks = std::make_shared<Peaks>();
  strata::ComputeOptions options;
  options.callbacks.push_back(peaks);

  if (command == "make") {
    if (positional.size() != 1) return Usage("make needs one output path");
    strata::Result<strata::Shape> shape = strata::ParseShape(shape_text, "--shape");
    strata::Result<strata::Shape> chunks = strata::ParseShape(chunks_text, "--chunks");
    if (!shape.ok() || !chunks.ok() || shape->size() != 3 || chunks->size() != 3) {
      return Usage("--shape and --chunks need three extents");
    }
    strata::Array u = strata::random::random(*shape, *chunks, seed, spec);
    strata::Array v = strata::random::random(*shape, *chunks, seed + 1, spec);
    strata::Array x = strata::where(u < nan_share, strata::Scalar(std::nan("")), v * 300.0);
    strata::ToZarrOptions zo;
    zo.overwrite = true;
    strata::Result<strata::NDArray> r =
        strata::compute(strata::to_zarr(x, positional[0], zo), options);
    if (!r.ok()) {
      std::fprintf(stderr, "climate_ops: error: %s\n", r.status().ToString().c_str());
      return 1;
    }
    std::printf("{\"made\": \"%s\"}\n", positional[0].c_str());
    return 0;
  }
  if (command != "run" || positional.size() != 2) return Usage("run needs an op and a path");
  const std::string op = positional[0];
  strata::Array x = strata::from_zarr(positional[1], spec);
  if (!x.ok()) {
    std::fprintf(stderr, "climate_ops: error: %s\n", x.status().ToString().c_str());
    return 1;
  }
  strata::Array result;
  bool in_memory = true;
  if (op == "nanmean") {
    result = strata::nanmean(x, {0});
  } else if (op == "groupby") {
    const strata::Index t = x.shape()[0];
    strata::NDArray labels =
        *strata::NDArray::Allocate(*strata::MemoryPool::Default(), strata::DTypeId::kInt32, {t});
    for (strata::Index d = 0; d < t; ++d) labels.data_as<int32_t>()[d] = MonthOf(d);
    strata::GroupbyOptions go;
    go.num_groups = 12;
    go.skipna = true;
    result = strata::groupby_reduce(x, strata::asarray(std::move(labels), {x.chunksize()[0]}, spec),
                                    0, strata::ReduceOp::kMean, go);
  } else if (op == "cumsum" || op == "diff") {
    if (out.empty()) return Usage(op + " needs --out");
    strata::Array y = op == "cumsum" ? strata::cumulative_sum(x, 0) : strata::diff(x, 0);
    strata::ToZarrOptions zo;
    zo.overwrite = true;
    result = strata::to_zarr(y, out, zo);
    in_memory = false;
  } else if (op == "points") {
    std::ifstream in(points_file);
    if (!in) return Usage("points needs --points FILE");
    std::vector<strata::Index> lat, lon;
    strata::Index a, b;
    while (in >> a >> b) {
      lat.push_back(a);
      lon.push_back(b);
    }
    result = strata::index(x, {strata::Slice{}, lat, lon});
  } else {
    return Usage("unknown op " + op);
  }
  strata::Result<strata::NDArray> r = strata::compute(result, options);
  if (!r.ok()) {
    std::fprintf(stderr, "climate_ops: error: %s\n", r.status().ToString().c_str());
    return 1;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "{\"op\": \"%s\", \"seconds\": %.4f, \"tasks\": %lld, \"max_measured_task_mem\": %lld, "
      "\"max_projected_task_mem\": %lld, \"chunk_buffers_peak\": %lld, "
      "\"buffers_held_peak\": %lld, \"checksum\": %.10g}\n",
      op.c_str(), seconds, static_cast<long long>(peaks->tasks),
      static_cast<long long>(peaks->measured), static_cast<long long>(peaks->projected),
      static_cast<long long>(strata::MemoryPool::Default()->peak_bytes()),
      static_cast<long long>(strata::MemoryPool::Default()->allocator()->stats().peak_bytes_held),
      in_memory ? Checksum(*r) : 0.0);
  return 0;
}
