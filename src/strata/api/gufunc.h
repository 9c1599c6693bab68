// apply_gufunc: a C++ function over blocks that are whole along their core
// dimensions (NumPy's generalized ufuncs; Dask's apply_gufunc).
//
//   // a least-squares slope per (lat, lon) over the whole time axis:
//   Array slope = apply_gufunc(fit, "(t),(t)->()", {time_values, t2m_moved}, DTypeId::kFloat64);
//
// The signature names the core dimensions of each input and of the single
// output, e.g. "(i,j),(j)->(i)"; they are the trailing axes of each array.
// Every input is rechunked so that its core dimensions are one chunk (a task
// then holds whole core slices); the loop dimensions (the leading ones)
// broadcast across inputs and share chunks, as in elementwise ops. fn gets one
// block per input, each with the loop dimensions of the output block
// (broadcast with stride 0 where an input has extent 1) followed by its core
// dimensions, and must return the output block: loop dimensions then the
// output's core dimensions. An output core dimension not among the inputs'
// needs its size in `output_sizes`.
//
// Errors (InvalidArgument when built): a malformed signature, a wrong number
// of inputs, an input of lower rank than its core dimensions, a core dimension
// with two different sizes, loop dimensions that do not broadcast, an output
// dimension of unknown size; when run, fn's errors and a block of the wrong
// shape or dtype, naming the block.
//
// Thread-safety: fn is called from worker threads, concurrently.
#ifndef STRATA_API_GUFUNC_H_
#define STRATA_API_GUFUNC_H_

#include <map>
#include <string>
#include <vector>

#include "strata/api/array.h"
#include "strata/api/map_blocks.h"

namespace strata {

Array apply_gufunc(MapBlocksFunction fn, std::string_view signature,
                   const std::vector<Array>& inputs, DType dtype,
                   std::map<std::string, Index> output_sizes = {}, int64_t extra_mem = 0);

}  // namespace strata

#endif  // STRATA_API_GUFUNC_H_
