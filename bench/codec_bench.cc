// codec_bench: encode and decode throughput of Strata's chunk codecs on one
// large float64 chunk, against memcpy of the same bytes and, for blosc,
// against libblosc's own decompression into a preallocated buffer.
//
//   codec_bench [--rows 10000] [--cols 1000] [--reps 5] [--min-seconds 1]
//               [--filter SUBSTRING]
//
// The chunk holds splitmix64(flat index) mapped to a uniform double in [0, 1):
// random mantissas (what real measurements look like to a compressor) with
// exponent bytes that shuffling makes compressible. Every buffer comes from a
// MemoryPool, whose allocator recycles large buffers, so repetitions measure
// the codecs rather than page faults (fresh pages on the target VMs fault at
// ~0.3 GB/s). Each figure is the best and the median of at least --reps runs
// lasting --min-seconds in total; Strata's blosc decode and libblosc's own run
// alternately (twice the runs) so that their ratio is fair on a busy machine.
// MB is 10^6 bytes of decoded data.
//
// Output: one JSON document on stdout; progress on stderr.
#include <blosc.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "strata/core/memory_pool.h"
#include "strata/core/ndarray.h"
#include "strata/storage/codec/chunk_codec.h"
#include "strata/storage/codec/codec_spec.h"

namespace strata {
namespace {

struct Options {
  Index rows = 10000;
  Index cols = 1000;
  int reps = 5;
  double min_seconds = 1.0;
  std::string filter;
};

struct Throughput {
  double best_mbps = 0;
  double median_mbps = 0;
};

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Runs `body` (after one untimed warm-up) until both `reps` runs and
// `min_seconds` have passed; throughput is `bytes` per run.
Throughput Measure(const Options& options, int64_t bytes, const std::function<void()>& body) {
  using Clock = std::chrono::steady_clock;
  body();
  std::vector<double> seconds;
  const auto start = Clock::now();
  while (static_cast<int>(seconds.size()) < options.reps ||
         std::chrono::duration<double>(Clock::now() - start).count() < options.min_seconds) {
    const auto t0 = Clock::now();
    body();
    seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(seconds.begin(), seconds.end());
  const double mb = static_cast<double>(bytes) / 1e6;
  return {mb / seconds.front(), mb / seconds[seconds.size() / 2]};
}

// Like Measure, for two bodies run alternately, so that both see the same
// machine (other processes, frequency) and their ratio is fair.
std::pair<Throughput, Throughput> MeasurePair(const Options& options, int64_t bytes,
                                              const std::function<void()>& a,
                                              const std::function<void()>& b) {
  using Clock = std::chrono::steady_clock;
  a();
  b();
  std::vector<double> seconds_a, seconds_b;
  const auto start = Clock::now();
  while (static_cast<int>(seconds_a.size()) < 2 * options.reps ||
         std::chrono::duration<double>(Clock::now() - start).count() < 2 * options.min_seconds) {
    for (auto [body, seconds] : {std::pair{&a, &seconds_a}, std::pair{&b, &seconds_b}}) {
      const auto t0 = Clock::now();
      (*body)();
      seconds->push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
  }
  const double mb = static_cast<double>(bytes) / 1e6;
  auto summarise = [&](std::vector<double>& s) {
    std::sort(s.begin(), s.end());
    return Throughput{mb / s.front(), mb / s[s.size() / 2]};
  };
  return {summarise(seconds_a), summarise(seconds_b)};
}

std::string ThroughputJson(const Throughput& t, const Throughput& memcpy_t) {
  return fmt::format(
      "{{\"best_MBps\": {:.1f}, \"median_MBps\": {:.1f}, \"best_vs_memcpy\": {:.4f}}}", t.best_mbps,
      t.median_mbps, t.best_mbps / memcpy_t.best_mbps);
}

[[noreturn]] void Die(const std::string& what) {
  fmt::print(stderr, "codec_bench: {}\n", what);
  std::exit(1);
}

template <typename T>
T ValueOrDie(Result<T> result, std::string_view what) {
  if (!result.ok()) Die(fmt::format("{}: {}", what, result.status().ToString()));
  return std::move(result).value();
}

Options ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (i + 1 >= argc) Die(fmt::format("{} needs a value", arg));
    std::string value = argv[++i];
    if (arg == "--rows") {
      o.rows = std::stoll(value);
    } else if (arg == "--cols") {
      o.cols = std::stoll(value);
    } else if (arg == "--reps") {
      o.reps = std::stoi(value);
    } else if (arg == "--min-seconds") {
      o.min_seconds = std::stod(value);
    } else if (arg == "--filter") {
      o.filter = value;
    } else {
      Die(fmt::format("unknown option {}", arg));
    }
  }
  return o;
}

int Run(const Options& options) {
  MemoryPool& pool = *MemoryPool::Default();
  const Shape shape = {options.rows, options.cols};
  const DType dtype = DTypeId::kFloat64;

  NDArray chunk = ValueOrDie(NDArray::Allocate(pool, dtype, shape), "allocating the chunk");
  std::span<double> values = chunk.values<double>();
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<double>(SplitMix64(i) >> 11) * 0x1.0p-53;
  }
  const int64_t bytes = chunk.nbytes();

  // The destination every decode writes into, touched once so that no timed
  // run pays for its page faults.
  NDArray out = ValueOrDie(NDArray::Zeros(pool, dtype, shape), "allocating the destination");

  fmt::print(stderr, "memcpy of {} bytes\n", bytes);
  const Throughput memcpy_t = Measure(
      options, bytes, [&] { std::memcpy(out.data(), chunk.data(), static_cast<size_t>(bytes)); });

  struct Case {
    BytesCodecSpec spec;
    bool native_blosc;  // also time libblosc's own decompression
  };
  const std::vector<Case> cases = {
      {BloscSpec{"lz4", 5, 1, 0, 0}, true},  // zarr-python's default compressor
      {BloscSpec{"zstd", 3, 1, 0, 0}, true},
      {BloscSpec{"lz4", 5, 0, 0, 0}, true},
      {ZstdSpec{1, false}, false},
      {ZstdSpec{3, false}, false},
      {ZlibSpec{1}, false},
      {GzipSpec{1}, false},
      {Lz4Spec{1}, false},
  };

  std::vector<std::string> results;
  for (const Case& c : cases) {
    const std::string name = DescribeCodec(c.spec);
    if (name.find(options.filter) == std::string::npos) continue;
    auto codec = ValueOrDie(
        ChunkCodec::Make(ChunkEncoding{dtype, Endian::kLittle, {}, {c.spec}}, shape), name);

    fmt::print(stderr, "{}: encode\n", name);
    Buffer encoded;
    const Throughput encode_t = Measure(options, bytes, [&] {
      encoded.Reset();  // recycled by the pool's allocator for the next run
      encoded = ValueOrDie(codec->Encode(chunk.view(), pool), "encoding");
    });

    fmt::print(stderr, "{}: decode ({} encoded bytes)\n", name, encoded.size());
    auto strata_decode = [&] {
      Status s = codec->Decode(encoded.span(), out.view(), pool);
      if (!s.ok()) Die(fmt::format("decoding: {}", s.ToString()));
    };
    // libblosc on its own: the same frame into the same preallocated buffer.
    auto native_decode = [&] {
      int n = blosc_decompress_ctx(encoded.data(), out.data(), static_cast<size_t>(bytes), 1);
      if (n != bytes) Die("blosc_decompress_ctx failed");
    };
    Throughput decode_t, native_t;
    if (c.native_blosc) {
      std::tie(decode_t, native_t) = MeasurePair(options, bytes, strata_decode, native_decode);
    } else {
      decode_t = Measure(options, bytes, strata_decode);
    }
    strata_decode();
    if (std::memcmp(out.data(), chunk.data(), static_cast<size_t>(bytes)) != 0) {
      Die(fmt::format("{} did not round-trip", name));
    }
    std::string native;
    if (c.native_blosc) {
      native = fmt::format(
          ",\n     \"blosc_native_decode\": {},\n"
          "     \"decode_vs_blosc_native\": {{\"best\": {:.4f}, \"median\": {:.4f}}}",
          ThroughputJson(native_t, memcpy_t), decode_t.best_mbps / native_t.best_mbps,
          decode_t.median_mbps / native_t.median_mbps);
    }
    results.push_back(fmt::format(
        "    {{\"codec\": \"{}\", \"encoded_bytes\": {}, \"compression_ratio\": {:.4f},\n"
        "     \"encode\": {},\n     \"decode_into_destination\": {}{}}}",
        name, encoded.size(), static_cast<double>(bytes) / static_cast<double>(encoded.size()),
        ThroughputJson(encode_t, memcpy_t), ThroughputJson(decode_t, memcpy_t), native));
  }

  fmt::print(
      "{{\n  \"context\": {{\"chunk_shape\": [{}, {}], \"dtype\": \"float64\", \"chunk_bytes\": {},"
      " \"reps\": {}, \"min_seconds\": {}, \"blosc\": \"{}\", \"MB\": 1000000}},\n"
      "  \"memcpy\": {},\n  \"codecs\": [\n{}\n  ]\n}}\n",
      options.rows, options.cols, bytes, options.reps, options.min_seconds,
      blosc_get_version_string(), ThroughputJson(memcpy_t, memcpy_t), fmt::join(results, ",\n"));
  return 0;
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) { return strata::Run(strata::ParseOptions(argc, argv)); }
