// first_touch: copying slices of pages another process wrote, the way a
// worker reads a slice of another worker's block (bench/processes.py).
//
//   first_touch [--mib 1024] [--reps 5]
//
// Each rep makes a fresh memfd region, maps it here, has a forked child make
// it huge pages (MADV_COLLAPSE where the kernel allows, as ShmStore does) and
// write all of it, and then copies it, 2 MB at a time, into a destination
// this process already touched, four ways:
//   own_heap          memcpy from an anonymous buffer this process wrote
//                     (what the threads executor does: the baseline)
//   mapping_first     MADV_POPULATE_READ then memcpy through this process's
//                     own mapping, each page touched here for the first time
//                     (what ShmIntermediateStore::GetRegion used to do)
//   mapping_again     the same copy once more (the pages are mapped now)
//   preadv            pread from the memfd: the kernel copies through its
//                     own mapping, shared by every process (what GetRegion
//                     does now)
// Inside W4 runs, GetRegion's copies through the mapping ran at 2.8 GB/s
// against 7.9 GB/s for the threads executor, slow right after a fresh mapping;
// in isolation, here, mapping_first keeps up with own_heap, so that slowdown
// needs the full run's conditions (two workers, 3.2 GB live, memory just freed
// by other processes) that this does not reproduce. preadv is the fastest of
// the four here too. Reports GB/s (10^9 bytes) as the median over reps and
// each case's ratio to own_heap in the same run. JSON on stdout.
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

namespace {

constexpr size_t kHuge = size_t{2} << 20;
constexpr size_t kSlice = 2'000'000;  // a 500x500 float64 slice, as in W4

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// `bytes` at a 2 MiB-aligned address: of `fd` (shared) or anonymous.
char* Map(size_t bytes, int fd) {
  char* reserved = static_cast<char*>(
      mmap(nullptr, bytes + kHuge, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  if (reserved == MAP_FAILED) return nullptr;
  char* at = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(reserved) + kHuge - 1) &
                                     ~uintptr_t{kHuge - 1});
  void* p = fd >= 0 ? mmap(at, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0)
                    : mmap(at, bytes, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  if (fd < 0) madvise(p, bytes, MADV_HUGEPAGE);
  return static_cast<char*>(p);
}

void Die(const char* what) {
  std::perror(what);
  std::exit(1);
}

// GB/s of copying `bytes` slice by slice with `copy(offset, dst)`.
template <typename Copy>
double Rate(size_t bytes, char* dst, Copy copy) {
  const double t = Now();
  for (size_t off = 0; off + kSlice <= bytes; off += kSlice) copy(off, dst);
  return static_cast<double>(bytes / kSlice * kSlice) / (Now() - t) / 1e9;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = 1024;
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--mib") {
      mib = std::strtoul(argv[i + 1], nullptr, 10);
    } else if (flag == "--reps") {
      reps = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "first_touch: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (mib < 4 || reps < 1) {
    std::fprintf(stderr, "first_touch: --mib must be >= 4 and --reps >= 1\n");
    return 2;
  }
  const size_t bytes = mib << 20;
  char* dst = Map(kSlice, -1);
  char* heap = Map(bytes, -1);
  if (!dst || !heap) Die("mmap");
  std::memset(dst, 1, kSlice);
  std::memset(heap, 7, bytes);
  std::map<std::string, std::vector<double>> rates;
  for (int rep = 0; rep < reps; ++rep) {
    std::fprintf(stderr, "rep %d/%d\n", rep + 1, reps);
    int fd = memfd_create("first_touch", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) Die("memfd");
    // Mapped before the writer makes the pages, as a worker maps the store
    // when it starts.
    char* region = Map(bytes, fd);
    if (!region) Die("mmap region");
    pid_t child = fork();
    if (child < 0) Die("fork");
    if (child == 0) {  // the writer: makes the pages, as another worker would
      char* region = Map(bytes, fd);
      if (!region) _exit(1);
      for (size_t off = 0; off < bytes; off += kHuge) (void)*reinterpret_cast<volatile char*>(region + off);
      madvise(region, bytes, MADV_COLLAPSE);  // best effort, as ShmStore
      std::memset(region, 7, bytes);
      _exit(0);
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      Die("writer");
    }
    rates["own_heap"].push_back(Rate(bytes, dst, [&](size_t off, char* d) {
      std::memcpy(d, heap + off, kSlice);
    }));
    auto through_mapping = [&](size_t off, char* d) {
      // As GetRegion did: map the slice's pages in one call, then copy.
      uintptr_t lo = reinterpret_cast<uintptr_t>(region + off) & ~uintptr_t{4095};
      uintptr_t hi = (reinterpret_cast<uintptr_t>(region + off + kSlice) + 4095) & ~uintptr_t{4095};
      madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_POPULATE_READ);
      std::memcpy(d, region + off, kSlice);
    };
    rates["mapping_first"].push_back(Rate(bytes, dst, through_mapping));
    rates["mapping_again"].push_back(Rate(bytes, dst, through_mapping));
    rates["preadv"].push_back(Rate(bytes, dst, [&](size_t off, char* d) {
      iovec v{d, kSlice};
      if (preadv(fd, &v, 1, static_cast<off_t>(off)) != static_cast<ssize_t>(kSlice)) Die("preadv");
    }));
    munmap(region, bytes);
    close(fd);
  }
  const double base = Median(rates["own_heap"]);
  std::printf("{\n  \"benchmark\": \"first touch of another process's shared pages\",\n");
  std::printf("  \"region_bytes\": %zu,\n  \"slice_bytes\": %zu,\n  \"reps\": %d,\n", bytes, kSlice,
              reps);
  std::printf("  \"median_gb_per_s\": {");
  const char* sep = "";
  for (const auto& [name, v] : rates) {
    std::printf("%s\"%s\": %.2f", sep, name.c_str(), Median(v));
    sep = ", ";
  }
  std::printf("},\n  \"ratio_to_own_heap\": {");
  sep = "";
  for (const auto& [name, v] : rates) {
    std::printf("%s\"%s\": %.3f", sep, name.c_str(), Median(v) / base);
    sep = ", ";
  }
  std::printf("}\n}\n");
  return 0;
}
