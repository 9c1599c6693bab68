// Strata's public C++ API: one include for users.
//
//   #include "strata/strata.h"
//
// Lazy arrays (Array), creation functions, elementwise math with
// broadcasting, reductions, linear algebra, manipulation, indexing,
// map_blocks, group-by, Zarr input/output and compute. Every function returns
// an Array (possibly in an error state, see api/array.h) except compute() and
// plan(), which run or describe the computation and return Result.
#ifndef STRATA_STRATA_H_
#define STRATA_STRATA_H_

#include <complex>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "strata/api/array.h"
#include "strata/base/status.h"
#include "strata/core/kernels/elementwise.h"
#include "strata/core/kernels/reduction.h"
#include "strata/core/ndarray.h"
#include "strata/plan/planner.h"
#include "strata/plan/spec.h"
#include "strata/runtime/callbacks.h"
#include "strata/runtime/executor.h"
#include "strata/storage/codec/codec_spec.h"

namespace strata {

// ------------------------------------------------------------------ creation
// `chunks` empty means "auto": chunks of at most ~allowed_mem / 8 along the
// leading axes.

Array zeros(Shape shape, Shape chunks = {}, DType dtype = DTypeId::kFloat64, const Spec& spec = {});
Array ones(Shape shape, Shape chunks = {}, DType dtype = DTypeId::kFloat64, const Spec& spec = {});
Array full(Shape shape, Scalar value, Shape chunks = {}, std::optional<DType> dtype = std::nullopt,
           const Spec& spec = {});
// Uninitialised in numpy; here zeros (deterministic), without storage.
Array empty(Shape shape, Shape chunks = {}, DType dtype = DTypeId::kFloat64, const Spec& spec = {});
// [start, stop) by step; dtype int64 when all arguments are whole, else float64.
Array arange(double start, double stop, double step = 1, Shape chunks = {},
             std::optional<DType> dtype = std::nullopt, const Spec& spec = {});
Array linspace(double start, double stop, Index num, bool endpoint = true, Shape chunks = {},
               DType dtype = DTypeId::kFloat64, const Spec& spec = {});
// Ones on the k-th diagonal of an n x m matrix (m = n when 0).
Array eye(Index n, Index m = 0, Index k = 0, Shape chunks = {}, DType dtype = DTypeId::kFloat64,
          const Spec& spec = {});
// An in-memory array as a lazy one (the data is shared, not copied).
Array asarray(NDArray data, Shape chunks = {}, const Spec& spec = {});
Array asarray(std::shared_ptr<const NDArray> data, Shape chunks = {}, const Spec& spec = {});
// An existing Zarr array (v2 or v3), by path or URL. Its chunks are its Zarr chunks.
Array from_zarr(const std::string& path, const Spec& spec = {});
// A Zarr array already open (a caller that read its metadata need not open it
// again). `array` must not be null.
Array from_zarr(std::shared_ptr<ZarrArray> array, const Spec& spec = {});

namespace random {
// Uniform float64 in [0, 1). Each element is a function of its flat index and
// the seed (core/synthetic.h): the same in any chunking, worker count or order.
Array random(Shape shape, Shape chunks, uint64_t seed, const Spec& spec = {});
// Uniform integers in [low, high), chunk-independent like random().
Array integers(int64_t low, int64_t high, Shape shape, Shape chunks, uint64_t seed,
               DType dtype = DTypeId::kInt64, const Spec& spec = {});
}  // namespace random

// ---------------------------------------------------------------- elementwise

Array unary(UnaryOp op, const Array& x);
Array binary(BinaryOp op, const Array& a, const Array& b);
Array binary(BinaryOp op, const Array& a, Scalar b);
Array binary(BinaryOp op, Scalar a, const Array& b);

#define STRATA_UNARY(name, op) \
  inline Array name(const Array& x) { return unary(UnaryOp::op, x); }
STRATA_UNARY(abs, kAbs)
STRATA_UNARY(negative, kNegative)
STRATA_UNARY(positive, kPositive)
STRATA_UNARY(square, kSquare)
STRATA_UNARY(sqrt, kSqrt)
STRATA_UNARY(exp, kExp)
STRATA_UNARY(expm1, kExpm1)
STRATA_UNARY(log, kLog)
STRATA_UNARY(log1p, kLog1p)
STRATA_UNARY(log2, kLog2)
STRATA_UNARY(log10, kLog10)
STRATA_UNARY(sin, kSin)
STRATA_UNARY(cos, kCos)
STRATA_UNARY(tan, kTan)
STRATA_UNARY(arcsin, kArcsin)
STRATA_UNARY(arccos, kArccos)
STRATA_UNARY(arctan, kArctan)
STRATA_UNARY(sinh, kSinh)
STRATA_UNARY(cosh, kCosh)
STRATA_UNARY(tanh, kTanh)
STRATA_UNARY(floor, kFloor)
STRATA_UNARY(ceil, kCeil)
STRATA_UNARY(round, kRound)
STRATA_UNARY(trunc, kTrunc)
STRATA_UNARY(sign, kSign)
STRATA_UNARY(isnan, kIsnan)
STRATA_UNARY(isinf, kIsinf)
STRATA_UNARY(isfinite, kIsfinite)
STRATA_UNARY(logical_not, kLogicalNot)
STRATA_UNARY(bitwise_invert, kBitwiseInvert)
STRATA_UNARY(real, kReal)
STRATA_UNARY(imag, kImag)
STRATA_UNARY(conj, kConj)
#undef STRATA_UNARY

#define STRATA_BINARY(name, op)                                                        \
  inline Array name(const Array& a, const Array& b) { return binary(BinaryOp::op, a, b); } \
  inline Array name(const Array& a, Scalar b) { return binary(BinaryOp::op, a, b); }       \
  inline Array name(Scalar a, const Array& b) { return binary(BinaryOp::op, a, b); }
STRATA_BINARY(add, kAdd)
STRATA_BINARY(subtract, kSubtract)
STRATA_BINARY(multiply, kMultiply)
STRATA_BINARY(divide, kDivide)
STRATA_BINARY(floor_divide, kFloorDivide)
STRATA_BINARY(remainder, kRemainder)
STRATA_BINARY(pow, kPow)
STRATA_BINARY(equal, kEqual)
STRATA_BINARY(not_equal, kNotEqual)
STRATA_BINARY(less, kLess)
STRATA_BINARY(less_equal, kLessEqual)
STRATA_BINARY(greater, kGreater)
STRATA_BINARY(greater_equal, kGreaterEqual)
STRATA_BINARY(logical_and, kLogicalAnd)
STRATA_BINARY(logical_or, kLogicalOr)
STRATA_BINARY(logical_xor, kLogicalXor)
STRATA_BINARY(bitwise_and, kBitwiseAnd)
STRATA_BINARY(bitwise_or, kBitwiseOr)
STRATA_BINARY(bitwise_xor, kBitwiseXor)
STRATA_BINARY(bitwise_left_shift, kBitwiseLeftShift)
STRATA_BINARY(bitwise_right_shift, kBitwiseRightShift)
STRATA_BINARY(minimum, kMinimum)
STRATA_BINARY(maximum, kMaximum)
STRATA_BINARY(arctan2, kArctan2)
#undef STRATA_BINARY

#define STRATA_OPERATOR(sym, name)                                                   \
  inline Array operator sym(const Array& a, const Array& b) { return name(a, b); } \
  inline Array operator sym(const Array& a, Scalar b) { return name(a, b); }       \
  inline Array operator sym(Scalar a, const Array& b) { return name(a, b); }
STRATA_OPERATOR(+, add)
STRATA_OPERATOR(-, subtract)
STRATA_OPERATOR(*, multiply)
STRATA_OPERATOR(/, divide)
STRATA_OPERATOR(%, remainder)
STRATA_OPERATOR(==, equal)
STRATA_OPERATOR(!=, not_equal)
STRATA_OPERATOR(<, less)
STRATA_OPERATOR(<=, less_equal)
STRATA_OPERATOR(>, greater)
STRATA_OPERATOR(>=, greater_equal)
STRATA_OPERATOR(&, bitwise_and)
STRATA_OPERATOR(|, bitwise_or)
STRATA_OPERATOR(^, bitwise_xor)
STRATA_OPERATOR(&&, logical_and)
STRATA_OPERATOR(||, logical_or)
STRATA_OPERATOR(<<, bitwise_left_shift)
STRATA_OPERATOR(>>, bitwise_right_shift)
#undef STRATA_OPERATOR
inline Array operator-(const Array& x) { return negative(x); }
inline Array operator+(const Array& x) { return positive(x); }
inline Array operator~(const Array& x) { return bitwise_invert(x); }
inline Array operator!(const Array& x) { return logical_not(x); }

// cond ? a : b, broadcast.
Array where(const Array& cond, const Array& a, const Array& b);
Array where(const Array& cond, const Array& a, Scalar b);
Array where(const Array& cond, Scalar a, const Array& b);
Array where(const Array& cond, Scalar a, Scalar b);
// min(max(x, lo), hi); either bound may be omitted.
Array clip(const Array& x, std::optional<Scalar> lo, std::optional<Scalar> hi);
Array clip(const Array& x, const Array& lo, const Array& hi);
Array astype(const Array& x, DType dtype);

// ----------------------------------------------------------------- reductions
// `axes` empty means all axes. Negative axes count from the end.

struct ReduceOptions {
  bool keepdims = false;
  // Blocks merged per round of the tree reduction; 0 picks the most that
  // fit in allowed_mem (at least 2).
  int split_every = 0;
  int ddof = 0;  // var, std
};

Array reduce(ReduceOp op, const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array sum(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array prod(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array mean(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array min(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array max(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array var(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array std(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array all(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array any(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array count_nonzero(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
// One axis, or none for the flat index over the whole array.
Array argmin(const Array& x, std::optional<int> axis = std::nullopt, ReduceOptions options = {});
Array argmax(const Array& x, std::optional<int> axis = std::nullopt, ReduceOptions options = {});

// ------------------------------------------------ linear algebra, manipulation

Array matmul(const Array& a, const Array& b);
// Contracts a's `a_axes` with b's `b_axes`; the result has a's remaining axes
// then b's.
Array tensordot(const Array& a, const Array& b, std::vector<int> a_axes, std::vector<int> b_axes);
Array tensordot(const Array& a, const Array& b, int n_axes = 2);

Array permute_dims(const Array& x, std::vector<int> axes);
Array transpose(const Array& x);  // reverses the axes
Array expand_dims(const Array& x, int axis);
Array squeeze(const Array& x, std::vector<int> axes = {});
Array broadcast_to(const Array& x, Shape shape, Shape chunks = {});
Array concat(const std::vector<Array>& arrays, int axis = 0);
Array stack(const std::vector<Array>& arrays, int axis = 0);
Array flip(const Array& x, std::vector<int> axes = {});
Array reshape(const Array& x, Shape shape);
// New chunks, same data. How the data moves (one exchange through RAM, or
// rechunker's stages through disk or an object store) is the planner's
// choice; `min_mem` is the smallest intermediate chunk a stage may store
// (default max_mem / 20, as in Cubed).
Array rechunk(const Array& x, Shape chunks, ByteSize min_mem = {});

// ------------------------------------------------------------------- indexing

// One axis of a basic index: an integer (drops the axis) or a slice.
struct Slice {
  std::optional<Index> start, stop;
  Index step = 1;
};
struct IndexItem {
  enum class Kind { kInteger, kSlice };
  Kind kind;
  Index integer = 0;
  Slice slice;
  IndexItem(Index i) : kind(Kind::kInteger), integer(i) {}  // NOLINT
  IndexItem(int i) : kind(Kind::kInteger), integer(i) {}    // NOLINT
  IndexItem(Slice s) : kind(Kind::kSlice), slice(s) {}      // NOLINT
};
// x[items...]; missing trailing items select everything. Integer and boolean
// array indices, Ellipsis and newaxis: index() in api/advanced_indexing.h.
Array getitem(const Array& x, std::vector<IndexItem> items);
// x.take(indices, axis): the elements at `indices` along one axis.
Array take(const Array& x, std::vector<Index> indices, int axis);

// ----------------------------------------------------------------- map_blocks

struct BlockInfo {
  std::span<const Index> block;  // output block coordinates
  Box box;                       // its region of the output array
};
using MapBlocksFunction = std::function<Result<NDArray>(
    std::span<const ConstArrayView> blocks, const BlockInfo& info, MemoryPool& pool)>;
// Calls `fn` on corresponding blocks of `arrays` (chunkings are unified) and
// returns an array of `dtype` whose blocks are fn's results. `chunks`, when
// given, is the output's chunk shape (same number of blocks); `extra_mem` is
// the scratch memory fn needs per call.
Array map_blocks(MapBlocksFunction fn, const std::vector<Array>& arrays, DType dtype,
                 Shape chunks = {}, int64_t extra_mem = 0, std::string name = "map_blocks");
// The same with every option named. `calling_process_only`, when set, says
// why fn must run in the calling process (e.g. "calls a Python function"):
// such an op is refused on the processes and mpi executors, here when the
// inputs' spec names one and by the planner otherwise.
struct MapBlocksOptions {
  Shape chunks;
  int64_t extra_mem = 0;
  std::string name = "map_blocks";
  std::string calling_process_only;
};
Array map_blocks(const MapBlocksOptions& options, MapBlocksFunction fn,
                 const std::vector<Array>& arrays, DType dtype);

// ------------------------------------------------------------------- group-by

// Reduces `x` along `axis` by integer group `labels` (one per position along
// the axis, in [0, num_groups); negative labels are skipped). The result has
// `axis` replaced by num_groups (default: max label + 1). Float data skips
// NaN (xarray's skipna default); more ops and options: api/groupby_extras.h.
Array groupby_reduce(const Array& x, std::vector<int64_t> labels, int axis, ReduceOp op,
                     Index num_groups = 0);

// ------------------------------------------------------------------------ I/O

struct ToZarrOptions {
  std::vector<BytesCodecSpec> codecs;  // empty: blosc lz4 (zarr-python's default)
  bool no_compression = false;         // store raw bytes
  ZarrFormat zarr_format = ZarrFormat::kV2;
  bool overwrite = false;
  std::string attributes_json = "{}";
  // Zarr v3 sharding, as zarr-python 3's create_array(chunks=, shards=): x's
  // chunks become the inner chunks (read one by one), `shards` the stored
  // objects; each must be a multiple of the chunks. A task writes one whole
  // shard, encoding each inner chunk as soon as it is filled.
  std::optional<Shape> shards;
  // v3 only: one name per axis (xarray's dimensions), kept in zarr.json.
  std::optional<std::vector<std::optional<std::string>>> dimension_names;
  // The fill value (default: zero; v2's null is kept only in v2).
  std::optional<FillValue> fill_value;
  // Backfill (xarray's to_zarr(region=)): write x into the box starting at
  // `region_origin` (x's shape) of the existing array at `path`, whose
  // metadata stays as it is (codecs, chunks, fill value; the options above
  // are ignored). Chunks x covers partly are read, updated and rewritten
  // under a lock per chunk; none is ever torn. x is cast to the array's
  // dtype under numpy's same_kind rule (int into float, float64 into
  // float32); a cast across kinds (float into int) is InvalidArgument, as
  // are both options at once, a rank or extent that does not fit and a
  // missing array (NotFound).
  std::optional<Shape> region_origin;
  // Append (xarray's append_dim): the existing array grows along this axis
  // by x's extent there, x filling the new part; the other extents must
  // match. The new shape is written last: until the compute ends readers see
  // the old array.
  std::optional<int> append_dim;
};
// A lazy store of `x` into a Zarr array at `path` (chunks must be regular).
// compute() of the returned handle writes it; nothing is written before.
// InvalidArgument (as the handle's status) for shards that are not a
// multiple of the chunks, or sharding in Zarr v2.
Array to_zarr(const Array& x, const std::string& path, ToZarrOptions options = {});

// --------------------------------------------------------------------- running

// Plans the arrays without running anything.
Result<std::shared_ptr<const Plan>> plan(const std::vector<Array>& arrays,
                                         const PlanOptions& options = {});

// Runs the arrays' plan. Returns one NDArray per array (empty for to_zarr
// handles).
Result<std::vector<NDArray>> compute(const std::vector<Array>& arrays,
                                     const ComputeOptions& options = {},
                                     const PlanOptions& plan_options = {});
Result<NDArray> compute(const Array& array, const ComputeOptions& options = {},
                        const PlanOptions& plan_options = {});

}  // namespace strata

// The rest of the API, one header per theme (each may use the declarations
// above, so they come last).
#include "strata/api/advanced_indexing.h"
#include "strata/api/creation_extras.h"
#include "strata/api/dtype_info.h"
#include "strata/api/groupby_extras.h"
#include "strata/api/gufunc.h"
#include "strata/api/manipulation_extras.h"
#include "strata/api/math_extras.h"
#include "strata/api/nan_reductions.h"
#include "strata/api/overlap.h"
#include "strata/api/quantiles.h"
#include "strata/api/scans.h"
#include "strata/api/searching.h"
#include "strata/api/set_functions.h"
#include "strata/api/sorting.h"

#endif  // STRATA_STRATA_H_
