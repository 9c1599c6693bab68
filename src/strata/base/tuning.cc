#include "strata/base/tuning.h"

#include <cstdlib>
#include <cstring>

namespace strata {

const Tuning& GetTuning() {
  static const Tuning tuning = [] {
    Tuning t;
    const char* tiny = std::getenv("STRATA_TINY");
    if (tiny && std::strcmp(tiny, "1") == 0) {
      t.tiny = true;
      t.stream_strip_bytes = 256;
      t.stream_part_bytes = 2048;
      t.auto_chunk_min_bytes = 4096;
      t.ram_for_intermediates_cap = 64 << 10;
      t.max_split_every = 2;
    }
    return t;
  }();
  return tuning;
}

}  // namespace strata
