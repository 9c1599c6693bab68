// apply_gufunc: a C++ function over blocks that are whole along their core
// dimensions (NumPy's generalized ufuncs; Dask's apply_gufunc).
//
//   // a least-squares slope per (lat, lon) over the whole time axis:
//   Array slope = apply_gufunc(fit, "(t),(t)->()", {time_values, t2m_moved}, DTypeId::kFloat64);
//
// The signature names the core dimensions of each input and of each
// output, e.g. "(i,j),(j)->(i)"; they are the trailing axes of each array.
// Every input is rechunked so that its core dimensions are one chunk (a task
// then holds whole core slices; unless allow_rechunk is false); the loop dimensions (the leading ones)
// broadcast across inputs and share chunks, as in elementwise ops. fn gets one
// block per input, each with the loop dimensions of the output block
// (broadcast with stride 0 where an input has extent 1) followed by its core
// dimensions, and must return the output block: loop dimensions then the
// output's core dimensions. An output core dimension not among the inputs'
// needs its size in `output_sizes`.
//
// Several outputs ("(i)->(),(i)") take a GufuncFunction returning one block
// per output, called once per block: its results are packed side by side
// into one block of an intermediate array (kept, as any intermediate, in
// the fastest tier that holds it), which each output then reads its part of.
//
// Errors (InvalidArgument when built): a malformed signature, a wrong number
// of inputs or of dtypes, an input of lower rank than its core dimensions, a
// core dimension with two different sizes or of extent 0, a core dimension
// in several chunks when allow_rechunk is false, loop dimensions that do not
// broadcast, an output dimension of unknown size, a negative extra_mem,
// (with calling_process_only) the processes or mpi executor; when run, fn's
// errors and a block of the wrong shape or dtype (or the wrong number of
// blocks), naming the block.
//
// Thread-safety: fn is called from worker threads, concurrently. Pure
// functions of immutable Array values otherwise.
#ifndef STRATA_API_GUFUNC_H_
#define STRATA_API_GUFUNC_H_

#include <map>
#include <string>
#include <vector>

#include "strata/api/array.h"
#include "strata/api/map_blocks.h"

namespace strata {

struct GufuncOptions {
  // Sizes of output core dimensions that no input has.
  std::map<std::string, Index> output_sizes;
  int64_t extra_mem = 0;  // scratch fn needs per call
  // false: an input whose core dimensions span several chunks is refused
  // (Dask's and Cubed's default) instead of rechunked into one chunk there.
  bool allow_rechunk = true;
  // The op's name in the plan and in errors ("apply_gufunc-fit").
  std::string name = "apply_gufunc";
  // As MapBlocksOptions::calling_process_only.
  std::string calling_process_only;
};

// The core dimensions a signature names: one list per input and per output
// ("(i,j),(j)->(i)": {{"i", "j"}, {"j"}} and {{"i"}}). InvalidArgument,
// prefixed by `op`, for a malformed signature or one without an output.
struct GufuncSignature {
  std::vector<std::vector<std::string>> inputs;
  std::vector<std::vector<std::string>> outputs;
};
Result<GufuncSignature> ParseGufuncSignature(std::string_view signature,
                                             std::string_view op = "apply_gufunc");

Array apply_gufunc(MapBlocksFunction fn, std::string_view signature,
                   const std::vector<Array>& inputs, DType dtype,
                   std::map<std::string, Index> output_sizes = {}, int64_t extra_mem = 0);
Array apply_gufunc(MapBlocksFunction fn, std::string_view signature,
                   const std::vector<Array>& inputs, DType dtype, GufuncOptions options);

// One block per output, in the signature's order. BlockInfo gives the block's
// coordinates along the loop dimensions and its region of them (the outputs'
// core dimensions are whole).
using GufuncFunction = std::function<Result<std::vector<NDArray>>(
    std::span<const ConstArrayView> blocks, const BlockInfo& loop, MemoryPool& pool)>;

// Any number of outputs (one dtype each); the arrays in the signature's order
// (each in an error state when the call is refused).
std::vector<Array> apply_gufunc(GufuncFunction fn, std::string_view signature,
                                const std::vector<Array>& inputs, const std::vector<DType>& dtypes,
                                GufuncOptions options);

}  // namespace strata

#endif  // STRATA_API_GUFUNC_H_
