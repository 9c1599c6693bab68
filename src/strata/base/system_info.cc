#include "strata/base/system_info.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace strata {
namespace {

std::optional<int64_t> ReadLimitFile(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string text;
  in >> text;
  if (text.empty() || text == "max") return std::nullopt;
  try {
    long long v = std::stoll(text);
    // cgroup v1 reports "no limit" as a huge page-aligned number.
    if (v <= 0 || v >= (int64_t{1} << 60)) return std::nullopt;
    return v;
  } catch (...) {
    return std::nullopt;
  }
}

int64_t StatusField(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  std::string prefix = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) {
      std::istringstream fields(line.substr(prefix.size()));
      int64_t kb = 0;
      fields >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

}  // namespace

int64_t PhysicalMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return int64_t{4} << 30;
  return static_cast<int64_t>(pages) * page_size;
}

std::optional<int64_t> CgroupMemoryLimitBytes() {
  if (auto v2 = ReadLimitFile("/sys/fs/cgroup/memory.max")) return v2;
  return ReadLimitFile("/sys/fs/cgroup/memory/memory.limit_in_bytes");
}

int64_t DefaultTotalSystemMemory() {
  int64_t mem = PhysicalMemoryBytes();
  if (auto limit = CgroupMemoryLimitBytes()) mem = std::min(mem, *limit);
  return mem / 10 * 8;
}

int AvailableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

int64_t CurrentRssBytes() { return StatusField("VmRSS"); }
int64_t PeakRssBytes() { return StatusField("VmHWM"); }

}  // namespace strata
