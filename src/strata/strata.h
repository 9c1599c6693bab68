// Strata's public C++ API: one include for users.
//
//   #include "strata/strata.h"
//
// Lazy arrays (Array, api/array.h) are built by the functions of the headers
// below, one header per theme, each opening with what it defines: creation,
// elementwise math with broadcasting, reductions, linear algebra,
// manipulation, rechunk, indexing, map_blocks, group-by, Zarr output and
// more. An operation returns an Array, possibly in an error state
// (api/array.h); plan() and compute() (api/compute.h) describe or run the
// computation and return Result. A file that needs only a few of them may
// include those headers alone. Three api headers are included on their own,
// not here: the Array API's linalg extension (namespace strata::linalg,
// api/linalg_extension.h), Python's subscript and setitem (api/subscript.h)
// and plan drawings (api/visualize.h).
#ifndef STRATA_STRATA_H_
#define STRATA_STRATA_H_

#include "strata/api/advanced_indexing.h"
#include "strata/api/array.h"
#include "strata/api/chunks.h"
#include "strata/api/compute.h"
#include "strata/api/creation.h"
#include "strata/api/creation_extras.h"
#include "strata/api/dtype_info.h"
#include "strata/api/elementwise.h"
#include "strata/api/groupby.h"
#include "strata/api/groupby_extras.h"
#include "strata/api/gufunc.h"
#include "strata/api/indexing.h"
#include "strata/api/io.h"
#include "strata/api/linalg.h"
#include "strata/api/manipulation.h"
#include "strata/api/manipulation_extras.h"
#include "strata/api/map_blocks.h"
#include "strata/api/math_extras.h"
#include "strata/api/nan_reductions.h"
#include "strata/api/overlap.h"
#include "strata/api/quantiles.h"
#include "strata/api/reduction.h"
#include "strata/api/scans.h"
#include "strata/api/searching.h"
#include "strata/api/set_functions.h"
#include "strata/api/sorting.h"

#endif  // STRATA_STRATA_H_
