#include "strata/base/process_info.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>

namespace strata {
namespace {

// The text of /proc/<pid>/stat after the command name's closing parenthesis
// (the name may hold spaces and parentheses), or "" when it cannot be read.
std::string StatAfterName(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text;
  if (!in || !std::getline(in, text)) return "";
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= text.size()) return "";
  return text.substr(paren + 2);  // starts at field 3, the state
}

}  // namespace

std::optional<uint64_t> ProcessStartTime(pid_t pid) {
  const std::string rest = StatAfterName(pid);
  if (rest.empty()) return std::nullopt;
  const char* p = rest.c_str();
  for (int field = 3; field < 22 && *p; ++field) {
    while (*p && *p != ' ') ++p;
    while (*p == ' ') ++p;
  }
  if (!*p) return std::nullopt;
  return std::strtoull(p, nullptr, 10);
}

bool ProcessAlive(pid_t pid, std::optional<uint64_t> start_time) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  const std::string rest = StatAfterName(pid);
  if (rest.empty()) return false;
  if (rest[0] == 'Z' || rest[0] == 'X') return false;
  if (start_time && *start_time != 0) {
    std::optional<uint64_t> now = ProcessStartTime(pid);
    return now && *now == *start_time;
  }
  return true;
}

const std::string& BootId() {
  static const std::string id = [] {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string text;
    if (in) std::getline(in, text);
    return text;
  }();
  return id;
}

uint64_t ThisProcessStartTime() {
  // Per process: a forked child has its own start time.
  static thread_local pid_t cached_pid = 0;
  static thread_local uint64_t cached = 0;
  const pid_t pid = ::getpid();
  if (pid != cached_pid) {
    cached = ProcessStartTime(pid).value_or(0);
    cached_pid = pid;
  }
  return cached;
}

}  // namespace strata
