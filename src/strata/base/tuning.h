// Tuning: the engine's internal sizes that a test configuration shrinks so
// that the suites run every path with everything split and spilled, as
// DuckDB runs its whole suite with a vector size of 2. STRATA_TINY=1 in the
// environment (the `tiny` CTest preset sets it) turns it on for the process.
//
// Results never depend on these sizes; plans, task counts, fan-in and the
// bytes spilled do, so a test that asserts those under the defaults checks
// Tuning::tiny.
//
// Thread-safety: read once on first use, then immutable.
#ifndef STRATA_BASE_TUNING_H_
#define STRATA_BASE_TUNING_H_

#include <cstdint>

namespace strata {

struct Tuning {
  bool tiny = false;
  // Strips a streamed elementwise chain is computed in (per level).
  int64_t stream_strip_bytes = int64_t{1} << 20;
  // Strips a streamed chain whose leaves are big Zarr chunks reads them in
  // (Node::stream_part_strip): several stored blocks of a chunk each.
  int64_t stream_part_bytes = int64_t{16} << 20;
  // The smallest target of "auto" chunks.
  int64_t auto_chunk_min_bytes = int64_t{1} << 20;
  // A cap on the RAM of the memory tier (-1: none): past it every
  // intermediate block spills to local disk.
  int64_t ram_for_intermediates_cap = -1;
  // The most states a reduction or group-by round merges when it chooses.
  int max_split_every = 16;
  // The most bytes of states a reduction's combine task chooses to merge
  // (at least 2 states): the states it waits for are live at once, each a
  // fresh buffer to fault in, while merging few at a time frees them for the
  // next partials to reuse.
  int64_t max_combine_state_bytes = int64_t{64} << 20;
};

// The process's tuning: the defaults, or the tiny sizes under STRATA_TINY=1.
const Tuning& GetTuning();

}  // namespace strata

#endif  // STRATA_BASE_TUNING_H_
