// Planning cost from C++, the baseline for bench/python_overhead.py: builds
// mean(sqrt(x) * 2 + 1, axis 0) over a random array whose grid has the given
// number of blocks, plans it `reps` times in this process and prints JSON
// (seconds per plan, tasks). The Python side builds the same expression.
//
//   plan_bench --shape 3160,3160 --chunks 10,10 --reps 5
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "strata/strata.h"

namespace {

strata::Shape ParseShape(const std::string& s) {
  strata::Shape out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(std::stoll(s.substr(pos, comma - pos)));
    pos = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  strata::Shape shape = {3160, 3160}, chunks = {10, 10};
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--shape") shape = ParseShape(argv[i + 1]);
    if (flag == "--chunks") chunks = ParseShape(argv[i + 1]);
    if (flag == "--reps") reps = std::atoi(argv[i + 1]);
  }
  strata::Spec spec;
  spec.allowed_mem = "2GB";
  std::vector<double> seconds;
  int64_t tasks = 0;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    strata::Array x = strata::random::random(shape, chunks, 1, spec);
    strata::Array y = strata::mean(strata::sqrt(x) * 2 + 1, {0});
    auto p = strata::plan({y});
    auto t1 = std::chrono::steady_clock::now();
    if (!p.ok()) {
      std::cerr << "plan_bench: " << p.status().ToString() << "\n";
      return 1;
    }
    tasks = (*p)->total_tasks();
    seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  std::cout << "{\"tasks\": " << tasks << ", \"seconds\": [";
  for (size_t i = 0; i < seconds.size(); ++i) std::cout << (i ? ", " : "") << seconds[i];
  std::cout << "]}\n";
  return 0;
}
