// rechunk_bound: this machine's bound for rechunking a Zarr v2 array.
//
//   rechunk_bound SRC --chunks 1000,10000 DST [--threads 2]
//
// The least work any rechunker must do, with no planning, scheduling, memory
// budget or safety: read every source chunk file once and decode it (libblosc,
// or nothing for an uncompressed array) into RAM, where all source chunks stay
// at once; then, for every target chunk, gather its elements from the decoded
// source chunks into one buffer (one memcpy per contiguous run), encode it with
// the source's codec (same cname, clevel, shuffle, blocksize) and write it with
// open/write/close (no temporary file, no rename, no fsync). Finally DST's
// .zarray (SRC's with the new chunks) is written, so DST is a valid Zarr v2
// array that zarr-python and Strata can open.
//
// Two phases of --threads threads each (read+decode, then
// gather+encode+write), each thread with one reusable buffer per role. All
// buffers are mmap'ed aligned to 2 MiB with MADV_HUGEPAGE, as Strata's
// allocator does, because 4 KiB page faults are slow on the target VMs (a
// version reading into std::vector took 73k faults and 3-5x longer than
// Strata on W1). The whole decoded
// source is held in RAM, so the array must fit (it does for W1 and W4).
//
// Supported: zarr_format 2, order "C", no filters, compressor blosc or null,
// any rank, edge chunks (padded with the fill value, which must be 0/null),
// missing source chunks (read as zeros), either dimension_separator.
//
// Output: one JSON document on stdout with the time of each phase.
#include <blosc.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using Dims = std::vector<int64_t>;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "rechunk_bound: %s\n", message.c_str());
  std::exit(1);
}

// Anonymous memory aligned to 2 MiB and advised to use transparent huge pages,
// as Strata's allocator does: on the target VMs every 4 KiB page fault is
// expensive, so a bound that faulted in 4 KiB pages would not be a bound.
class Mapping {
 public:
  static constexpr size_t kHuge = size_t{2} << 20;
  Mapping() = default;
  explicit Mapping(size_t size) : size_((size + kHuge - 1) / kHuge * kHuge) {
    if (size_ == 0) return;
    const size_t length = size_ + kHuge;
    void* p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) Die("mmap of " + std::to_string(size_) + " bytes failed");
    const auto base = reinterpret_cast<uintptr_t>(p);
    const uintptr_t aligned = (base + kHuge - 1) & ~(kHuge - 1);
    if (aligned > base) munmap(p, aligned - base);
    if (base + length > aligned + size_) {
      munmap(reinterpret_cast<void*>(aligned + size_), base + length - (aligned + size_));
    }
    data_ = reinterpret_cast<char*>(aligned);
    madvise(data_, size_, MADV_HUGEPAGE);
  }
  Mapping(Mapping&& o) noexcept { *this = std::move(o); }
  Mapping& operator=(Mapping&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  ~Mapping() {
    if (data_) munmap(data_, size_);
  }
  char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
};

Dims ParseDims(const std::string& text) {
  Dims out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::stoll(item));
  if (out.empty()) Die("empty chunk shape '" + text + "'");
  return out;
}

int64_t Product(const Dims& d) {
  int64_t p = 1;
  for (int64_t x : d) p *= x;
  return p;
}

Dims GridShape(const Dims& shape, const Dims& chunks) {
  Dims g(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) g[i] = (shape[i] + chunks[i] - 1) / chunks[i];
  return g;
}

// Block coordinates of flat (C-order) block number `n`.
Dims Unflatten(int64_t n, const Dims& grid) {
  Dims b(grid.size());
  for (size_t i = grid.size(); i-- > 0;) {
    b[i] = n % grid[i];
    n /= grid[i];
  }
  return b;
}

std::string ChunkKey(const Dims& block, const std::string& sep) {
  std::string key;
  for (size_t i = 0; i < block.size(); ++i) {
    if (i) key += sep;
    key += std::to_string(block[i]);
  }
  return key;
}

// Reads the whole file into `buf` (of `capacity` bytes) and returns its size,
// or -1 when it is missing.
int64_t ReadFile(const std::string& path, char* buf, size_t capacity) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return -1;
    Die("open " + path + ": " + std::strerror(errno));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) Die("fstat " + path);
  const auto size = static_cast<size_t>(st.st_size);
  if (size > capacity) Die(path + " is larger than a chunk can encode to");
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, buf + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) Die("read " + path + ": " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return static_cast<int64_t>(size);
}

void WriteFile(const std::string& path, const char* data, size_t size) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Die("create " + path + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) Die("write " + path + ": " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) Die("close " + path + ": " + std::strerror(errno));
}

template <typename Fn>
void Parallel(int threads, int64_t count, Fn fn) {
  std::atomic<int64_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int64_t i; (i = next.fetch_add(1)) < count;) fn(t, i);
    });
  }
  for (auto& th : pool) th.join();
}

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string src, dst, chunks_arg;
  int threads = 2;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--chunks" && i + 1 < argc) {
      chunks_arg = argv[++i];
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (a == "-h" || a == "--help") {
      std::puts("usage: rechunk_bound SRC --chunks C0,C1,... DST [--threads 2]");
      return 0;
    } else if (src.empty()) {
      src = a;
    } else if (dst.empty()) {
      dst = a;
    } else {
      Die("unexpected argument '" + a + "'");
    }
  }
  if (src.empty() || dst.empty() || chunks_arg.empty() || threads < 1) {
    Die("usage: rechunk_bound SRC --chunks C0,C1,... DST [--threads 2]");
  }
  const auto t_start = Clock::now();

  // Source metadata.
  nlohmann::json meta;
  {
    std::ifstream in(src + "/.zarray");
    if (!in) Die("cannot read " + src + "/.zarray");
    in >> meta;
  }
  if (meta.value("zarr_format", 0) != 2) Die("only Zarr v2 is supported");
  if (meta.value("order", "C") != "C") Die("only order C is supported");
  if (meta.contains("filters") && !meta["filters"].is_null()) Die("filters are not supported");
  const Dims shape = meta["shape"].get<Dims>();
  const Dims src_chunks = meta["chunks"].get<Dims>();
  const Dims dst_chunks = ParseDims(chunks_arg);
  const size_t rank = shape.size();
  if (dst_chunks.size() != rank) Die("--chunks has the wrong rank");
  const std::string dtype = meta["dtype"].get<std::string>();
  const int itemsize = std::stoi(dtype.substr(2));
  const std::string sep = meta.value("dimension_separator", ".");
  const auto& fill = meta["fill_value"];
  if (!fill.is_null() && !(fill.is_number() && fill.get<double>() == 0.0)) {
    Die("only a fill value of 0 or null is supported");
  }
  const nlohmann::json comp = meta["compressor"];
  const bool blosc = !comp.is_null();
  std::string cname = "lz4";
  int clevel = 5, shuffle = 1;
  size_t blocksize = 0;
  if (blosc) {
    if (comp.value("id", "") != "blosc") Die("only the blosc compressor (or none) is supported");
    cname = comp.value("cname", "lz4");
    clevel = comp.value("clevel", 5);
    shuffle = comp.value("shuffle", 1);
    blocksize = comp.value("blocksize", 0);
    if (shuffle == -1) shuffle = itemsize == 1 ? BLOSC_BITSHUFFLE : BLOSC_SHUFFLE;
  }

  const Dims src_grid = GridShape(shape, src_chunks);
  const Dims dst_grid = GridShape(shape, dst_chunks);
  const int64_t n_src = Product(src_grid), n_dst = Product(dst_grid);
  const size_t src_chunk_bytes = static_cast<size_t>(Product(src_chunks)) * itemsize;
  const size_t dst_chunk_bytes = static_cast<size_t>(Product(dst_chunks)) * itemsize;
  // C-order strides (in elements) inside one chunk.
  auto strides_of = [&](const Dims& c) {
    Dims s(rank, 1);
    for (size_t i = rank - 1; i-- > 0;) s[i] = s[i + 1] * c[i + 1];
    return s;
  };
  const Dims src_strides = strides_of(src_chunks), dst_strides = strides_of(dst_chunks);

  // Phase 1: read and decode every source chunk into one arena.
  Mapping arena(src_chunk_bytes * static_cast<size_t>(n_src));
  const size_t max_encoded = src_chunk_bytes + BLOSC_MAX_OVERHEAD;
  std::vector<Mapping> encoded(blosc ? threads : 0);
  for (auto& m : encoded) m = Mapping(max_encoded);
  std::atomic<int64_t> bytes_read{0};
  Parallel(threads, n_src, [&](int t, int64_t n) {
    const Dims block = Unflatten(n, src_grid);
    char* out = arena.data() + static_cast<size_t>(n) * src_chunk_bytes;
    const std::string path = src + "/" + ChunkKey(block, sep);
    // Uncompressed chunks are read straight into place.
    char* buf = blosc ? encoded[t].data() : out;
    const int64_t size = ReadFile(path, buf, blosc ? max_encoded : src_chunk_bytes);
    if (size < 0) {
      std::memset(out, 0, src_chunk_bytes);
      return;
    }
    bytes_read += size;
    if (!blosc) {
      if (static_cast<size_t>(size) != src_chunk_bytes) Die(path + ": wrong size");
      return;
    }
    int got = blosc_decompress_ctx(buf, out, src_chunk_bytes, 1);
    if (got != static_cast<int>(src_chunk_bytes)) Die(path + ": blosc decode failed");
  });
  const auto t_decoded = Clock::now();

  // Phase 2: gather, encode and write every target chunk.
  std::filesystem::create_directories(dst);
  std::vector<Mapping> gather(threads), out(threads);
  for (int t = 0; t < threads; ++t) {
    gather[t] = Mapping(dst_chunk_bytes);
    out[t] = Mapping(dst_chunk_bytes + BLOSC_MAX_OVERHEAD);
  }
  std::atomic<int64_t> bytes_written{0};
  Parallel(threads, n_dst, [&](int t, int64_t n) {
    const Dims block = Unflatten(n, dst_grid);
    Dims lo(rank), hi(rank);
    bool edge = false;
    for (size_t i = 0; i < rank; ++i) {
      lo[i] = block[i] * dst_chunks[i];
      hi[i] = std::min(lo[i] + dst_chunks[i], shape[i]);
      edge = edge || hi[i] - lo[i] < dst_chunks[i];
    }
    char* g = gather[t].data();
    if (edge) std::memset(g, 0, dst_chunk_bytes);
    // Source blocks overlapping [lo, hi).
    Dims s_lo(rank), s_hi(rank);
    for (size_t i = 0; i < rank; ++i) {
      s_lo[i] = lo[i] / src_chunks[i];
      s_hi[i] = (hi[i] - 1) / src_chunks[i] + 1;
    }
    Dims sb = s_lo;
    while (true) {
      int64_t sflat = 0;
      for (size_t i = 0; i < rank; ++i) sflat = sflat * src_grid[i] + sb[i];
      const char* s = arena.data() + static_cast<size_t>(sflat) * src_chunk_bytes;
      // Intersection box in global coordinates.
      Dims a(rank), b(rank);
      for (size_t i = 0; i < rank; ++i) {
        a[i] = std::max(lo[i], sb[i] * src_chunks[i]);
        b[i] = std::min(hi[i], (sb[i] + 1) * src_chunks[i]);
      }
      const size_t run = static_cast<size_t>(b[rank - 1] - a[rank - 1]) * itemsize;
      Dims idx = a;  // iterates over all axes but the last
      while (true) {
        int64_t so = 0, d = 0;
        for (size_t i = 0; i < rank; ++i) {
          so += (idx[i] - sb[i] * src_chunks[i]) * src_strides[i];
          d += (idx[i] - lo[i]) * dst_strides[i];
        }
        std::memcpy(g + d * itemsize, s + so * itemsize, run);
        size_t k = rank - 1;
        while (k-- > 0) {
          if (++idx[k] < b[k]) break;
          idx[k] = a[k];
        }
        if (k == static_cast<size_t>(-1)) break;
      }
      size_t k = rank;
      while (k-- > 0) {
        if (++sb[k] < s_hi[k]) break;
        sb[k] = s_lo[k];
      }
      if (k == static_cast<size_t>(-1)) break;
    }
    const std::string path = dst + "/" + ChunkKey(block, sep);
    if (!blosc) {
      WriteFile(path, g, dst_chunk_bytes);
      bytes_written += static_cast<int64_t>(dst_chunk_bytes);
      return;
    }
    int size = blosc_compress_ctx(clevel, shuffle, static_cast<size_t>(itemsize), dst_chunk_bytes,
                                  g, out[t].data(), dst_chunk_bytes + BLOSC_MAX_OVERHEAD,
                                  cname.c_str(), blocksize, 1);
    if (size <= 0) Die("blosc encode failed for " + path);
    WriteFile(path, out[t].data(), static_cast<size_t>(size));
    bytes_written += size;
  });
  meta["chunks"] = dst_chunks;
  const std::string doc = meta.dump(4);
  WriteFile(dst + "/.zarray", doc.data(), doc.size());
  const auto t_end = Clock::now();

  nlohmann::json report = {
      {"threads", threads},
      {"source_chunks", n_src},
      {"target_chunks", n_dst},
      {"decoded_bytes", static_cast<int64_t>(src_chunk_bytes) * n_src},
      {"bytes_read", bytes_read.load()},
      {"bytes_written", bytes_written.load()},
      {"read_decode_s", Seconds(t_start, t_decoded)},
      {"gather_encode_write_s", Seconds(t_decoded, t_end)},
      {"total_s", Seconds(t_start, t_end)},
  };
  std::puts(report.dump().c_str());
  return 0;
}
