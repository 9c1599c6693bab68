// shm_store_bench: put and get throughput of ShmStore for chunk-sized objects,
// against a plain memcpy of the same bytes in the same run.
//
//   shm_store_bench [--sizes 1048576,67108864] [--batch-bytes 67108864]
//                   [--reps 5] [--min-seconds 1]
//
// For each object size, one timed run handles a batch of objects
// (--batch-bytes / size, at least one):
//   memcpy         source buffer -> destination buffer, per object
//   put            Create + memcpy from the source + Seal, per object
//                  (the objects are deleted after the timed run)
//   get            Get + memcpy to the destination + Release, per object
//   get_zero_copy  Get + Release only: the cost of a pin, per object
// and memcpy, `put` and `get` again in a forked child process (how workers
// use the store), timed there; the child's ratios are to its own memcpy.
//
// Every buffer is touched before timing and the store's allocator hands the
// same pages back to the next batch, so the figures measure the store rather
// than first-touch page faults (fresh pages on the target VMs fault in at
// ~0.3 GB/s). The cases of one size run in turn, so that their ratios are fair
// on a busy machine; each figure is the best and the median of at least --reps
// runs, and at least --min-seconds per case. MB is 10^6 bytes.
//
// Output: one JSON document on stdout; progress on stderr.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "strata/base/byte_size.h"
#include "strata/core/memory_pool.h"
#include "strata/runtime/shm_store.h"

namespace strata {
namespace {

struct Options {
  std::vector<int64_t> sizes = {int64_t{1} << 20, int64_t{64} << 20};
  int64_t batch_bytes = int64_t{64} << 20;
  int reps = 5;
  double min_seconds = 1.0;
};

struct Throughput {
  double best_mbps = 0;
  double median_mbps = 0;
};

[[noreturn]] void Die(const std::string& what) {
  fmt::print(stderr, "shm_store_bench: {}\n", what);
  std::exit(1);
}

void Check(const Status& status, std::string_view what) {
  if (!status.ok()) Die(fmt::format("{}: {}", what, status.ToString()));
}

template <typename T>
T ValueOrDie(Result<T> result, std::string_view what) {
  Check(result.status(), what);
  return std::move(result).value();
}

// Runs the bodies in turn (after one untimed warm-up each) until each has run
// `reps` times and `min_seconds` per body have passed, so that all of them
// see the same machine (other processes, frequency) and their ratios are
// fair on a busy host. A body returns the seconds it wants counted, keeping
// setup and cleanup out of the timing. Throughput is `bytes` per run.
std::vector<Throughput> Measure(const Options& options, int64_t bytes,
                                const std::vector<std::function<double()>>& bodies) {
  using Clock = std::chrono::steady_clock;
  for (const auto& body : bodies) body();
  std::vector<std::vector<double>> seconds(bodies.size());
  const auto start = Clock::now();
  const double min_seconds = options.min_seconds * static_cast<double>(bodies.size());
  while (static_cast<int>(seconds[0].size()) < options.reps ||
         std::chrono::duration<double>(Clock::now() - start).count() < min_seconds) {
    for (size_t b = 0; b < bodies.size(); ++b) seconds[b].push_back(bodies[b]());
  }
  const double mb = static_cast<double>(bytes) / 1e6;
  std::vector<Throughput> out;
  for (auto& s : seconds) {
    std::sort(s.begin(), s.end());
    out.push_back({mb / s.front(), mb / s[s.size() / 2]});
  }
  return out;
}

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string ThroughputJson(const Throughput& t, const Throughput& memcpy_t) {
  return fmt::format(
      "{{\"best_MBps\": {:.1f}, \"median_MBps\": {:.1f}, \"best_vs_memcpy\": {:.4f}, "
      "\"median_vs_memcpy\": {:.4f}}}",
      t.best_mbps, t.median_mbps, t.best_mbps / memcpy_t.best_mbps,
      t.median_mbps / memcpy_t.median_mbps);
}

// The put and get loops, shared by this process and the forked child.
class Workload {
 public:
  Workload(ShmStore& store, int64_t size, int64_t count, const Buffer& source, Buffer& destination)
      : store_(store), size_(size), count_(count), source_(source), destination_(destination) {}

  // Creates, fills and seals objects (array, 0..count-1); returns the time.
  double Put(int64_t array) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < count_; ++i) {
      const ObjectId id{array, i};
      std::span<std::byte> bytes = ValueOrDie(store_.Create(id, size_), "create");
      std::memcpy(bytes.data(), source_.data() + Offset(i), static_cast<size_t>(size_));
      Check(store_.Seal(id), "seal");
    }
    return Since(t0);
  }

  void Delete(int64_t array) {
    for (int64_t i = 0; i < count_; ++i) Check(store_.Delete({array, i}), "delete");
  }

  // Reads every object of `array` into the destination; returns the time.
  double Get(int64_t array, bool copy) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < count_; ++i) {
      const ObjectId id{array, i};
      std::span<const std::byte> bytes = ValueOrDie(store_.Get(id, ShmStore::kNoWait), "get");
      if (copy) std::memcpy(destination_.data() + Offset(i), bytes.data(), bytes.size());
      Check(store_.Release(id), "release");
    }
    return Since(t0);
  }

  double Memcpy() {
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < count_; ++i) {
      std::memcpy(destination_.data() + Offset(i), source_.data() + Offset(i),
                  static_cast<size_t>(size_));
    }
    return Since(t0);
  }

 private:
  int64_t Offset(int64_t i) const { return i * size_; }

  ShmStore& store_;
  int64_t size_;
  int64_t count_;
  const Buffer& source_;
  Buffer& destination_;
};

Options ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (i + 1 >= argc) Die(fmt::format("{} needs a value", arg));
    std::string value = argv[++i];
    if (arg == "--sizes") {
      o.sizes.clear();
      size_t pos = 0;
      while (pos <= value.size()) {
        const size_t comma = std::min(value.find(',', pos), value.size());
        o.sizes.push_back(ValueOrDie(ParseByteSize(value.substr(pos, comma - pos)), "--sizes"));
        pos = comma + 1;
      }
    } else if (arg == "--batch-bytes") {
      o.batch_bytes = ValueOrDie(ParseByteSize(value), "--batch-bytes");
    } else if (arg == "--reps") {
      o.reps = std::stoi(value);
    } else if (arg == "--min-seconds") {
      o.min_seconds = std::stod(value);
    } else {
      Die(fmt::format("unknown option {}", arg));
    }
  }
  return o;
}

std::string ReadFirstLine(const char* path) {
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return "";
  char line[256] = {};
  if (std::fgets(line, sizeof(line), f) == nullptr) line[0] = '\0';
  std::fclose(f);
  std::string s(line);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

int Run(const Options& options) {
  MemoryPool& pool = *MemoryPool::Default();
  const int64_t largest = *std::max_element(options.sizes.begin(), options.sizes.end());
  const int64_t batch = std::max(options.batch_bytes, largest);
  // Room for the put batch and the get batch of the largest size.
  ShmStoreOptions store_options;
  store_options.name = "bench";
  store_options.capacity = 2 * batch + (int64_t{16} << 20);
  auto store = ValueOrDie(ShmStore::Create(store_options), "creating the store");

  Buffer source = ValueOrDie(pool.Allocate(batch), "allocating the source");
  Buffer destination = ValueOrDie(pool.Allocate(batch), "allocating the destination");
  for (int64_t i = 0; i < batch; i += 8) {
    const uint64_t v = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull;
    std::memcpy(source.data() + i, &v, static_cast<size_t>(std::min<int64_t>(8, batch - i)));
  }
  std::memset(destination.data(), 0, static_cast<size_t>(batch));

  std::vector<std::string> results;
  for (const int64_t size : options.sizes) {
    const int64_t count = std::max<int64_t>(1, options.batch_bytes / size);
    const int64_t bytes = count * size;
    Workload work(*store, size, count, source, destination);
    fmt::print(stderr, "{} objects of {}\n", count, FormatBytes(size));

    work.Put(2);  // what the gets read
    const std::vector<Throughput> t = Measure(options, bytes,
                                              {
                                                  [&] { return work.Memcpy(); },
                                                  [&] {
                                                    const double seconds = work.Put(1);
                                                    work.Delete(1);
                                                    return seconds;
                                                  },
                                                  [&] { return work.Get(2, true); },
                                                  [&] { return work.Get(2, false); },
                                              });
    const Throughput& memcpy_t = t[0];
    const Throughput& put_t = t[1];
    const Throughput& get_t = t[2];
    const Throughput& pin_t = t[3];
    if (std::memcmp(destination.data(), source.data(), static_cast<size_t>(bytes)) != 0) {
      Die("the bytes read back differ from those written");
    }

    // The same from a forked child, timed there and sent back through a pipe.
    int fds[2];
    if (pipe(fds) != 0) Die("pipe");
    const pid_t child = fork();
    if (child == 0) {
      const std::vector<Throughput> c = Measure(options, bytes,
                                                {
                                                    [&] { return work.Memcpy(); },
                                                    [&] {
                                                      const double seconds = work.Put(3);
                                                      work.Delete(3);
                                                      return seconds;
                                                    },
                                                    [&] { return work.Get(2, true); },
                                                });
      const double figures[6] = {c[0].best_mbps,   c[0].median_mbps, c[1].best_mbps,
                                 c[1].median_mbps, c[2].best_mbps,   c[2].median_mbps};
      const bool sent = write(fds[1], figures, sizeof(figures)) == sizeof(figures);
      _exit(sent ? 0 : 1);
    }
    double figures[6] = {};
    const bool received = read(fds[0], figures, sizeof(figures)) == sizeof(figures);
    int status = 0;
    waitpid(child, &status, 0);
    close(fds[0]);
    close(fds[1]);
    if (!received || !WIFEXITED(status) || WEXITSTATUS(status) != 0) Die("the child failed");
    work.Delete(2);
    const Throughput child_memcpy{figures[0], figures[1]};

    const double pin_us =
        1e6 * static_cast<double>(bytes) / 1e6 / pin_t.best_mbps / static_cast<double>(count);
    const double pin_median_us =
        1e6 * static_cast<double>(bytes) / 1e6 / pin_t.median_mbps / static_cast<double>(count);
    results.push_back(fmt::format(
        "    {{\"object_bytes\": {}, \"objects_per_run\": {},\n"
        "     \"memcpy\": {},\n"
        "     \"put\": {},\n"
        "     \"get\": {},\n"
        "     \"get_zero_copy\": {{\"best_us_per_object\": {:.2f}, \"median_us_per_object\": "
        "{:.2f}}},\n"
        "     \"memcpy_in_forked_child\": {},\n"
        "     \"put_in_forked_child\": {},\n"
        "     \"get_in_forked_child\": {}}}",
        size, count, ThroughputJson(memcpy_t, memcpy_t), ThroughputJson(put_t, memcpy_t),
        ThroughputJson(get_t, memcpy_t), pin_us, pin_median_us,
        ThroughputJson(child_memcpy, child_memcpy),
        ThroughputJson({figures[2], figures[3]}, child_memcpy),
        ThroughputJson({figures[4], figures[5]}, child_memcpy)));
  }

  const ShmStore::Stats stats = store->stats();
  fmt::print(
      "{{\n  \"context\": {{\"store_capacity\": {}, \"peak_used_bytes\": {}, \"reps\": {}, "
      "\"min_seconds\": {}, \"MB\": 1000000,\n"
      "              \"shmem_thp\": \"{}\", \"anon_thp\": \"{}\"}},\n"
      "  \"results\": [\n{}\n  ]\n}}\n",
      stats.capacity, stats.peak_used_bytes, options.reps, options.min_seconds,
      ReadFirstLine("/sys/kernel/mm/transparent_hugepage/shmem_enabled"),
      ReadFirstLine("/sys/kernel/mm/transparent_hugepage/enabled"), fmt::join(results, ",\n"));
  return 0;
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) { return strata::Run(strata::ParseOptions(argc, argv)); }
