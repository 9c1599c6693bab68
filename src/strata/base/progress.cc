#include "strata/base/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "strata/base/byte_size.h"

namespace strata {

bool ProgressBar::StderrIsTerminal() { return ::isatty(STDERR_FILENO) == 1; }

ProgressBar::ProgressBar(std::string label, int64_t total, int64_t bytes_per_item)
    : label_(std::move(label)),
      total_(total),
      bytes_per_item_(bytes_per_item),
      enabled_(StderrIsTerminal()),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressBar::~ProgressBar() {
  MutexLock lock(&mu_);
  if (enabled_ && !finished_) std::fputs("\n", stderr);
}

void ProgressBar::Advance(int64_t items) {
  MutexLock lock(&mu_);
  done_ += items;
  DrawLocked(false);
}

void ProgressBar::Finish() {
  MutexLock lock(&mu_);
  if (finished_) return;
  DrawLocked(true);
  if (enabled_) std::fputs("\n", stderr);
  finished_ = true;
}

void ProgressBar::DrawLocked(bool force) {
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  double seconds = std::chrono::duration<double>(now - start_).count();
  constexpr int kWidth = 30;
  int filled = total_ > 0 ? static_cast<int>(kWidth * done_ / total_) : kWidth;
  std::string bar(filled, '#');
  bar.resize(kWidth, '.');
  std::string rate;
  if (bytes_per_item_ > 0 && seconds > 0) {
    rate = fmt::format("  {}/s",
                       FormatBytes(static_cast<int64_t>(done_ * bytes_per_item_ / seconds)));
  }
  fmt::print(stderr, "\r{:<8} [{}] {}/{} chunks  {:.1f}s{}\033[K", label_, bar, done_, total_,
             seconds, rate);
  std::fflush(stderr);
}

}  // namespace strata
