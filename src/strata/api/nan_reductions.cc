// api/nan_reductions.h: the NaN-aware ops through strata::reduce.
#include "strata/api/nan_reductions.h"

namespace strata {

Array nansum(const Array& x, std::vector<int> axes, ReduceOptions o) {
  return reduce(ReduceOp::kNanSum, x, std::move(axes), o);
}
Array nanprod(const Array& x, std::vector<int> axes, ReduceOptions o) {
  return reduce(ReduceOp::kNanProd, x, std::move(axes), o);
}
Array nanmean(const Array& x, std::vector<int> axes, ReduceOptions o) {
  return reduce(ReduceOp::kNanMean, x, std::move(axes), o);
}
Array nanvar(const Array& x, std::vector<int> axes, ReduceOptions o) {
  return reduce(ReduceOp::kNanVar, x, std::move(axes), o);
}
Array nanstd(const Array& x, std::vector<int> axes, ReduceOptions o) {
  return reduce(ReduceOp::kNanStd, x, std::move(axes), o);
}
Array nanmin(const Array& x, std::vector<int> axes, ReduceOptions o) {
  return reduce(ReduceOp::kNanMin, x, std::move(axes), o);
}
Array nanmax(const Array& x, std::vector<int> axes, ReduceOptions o) {
  return reduce(ReduceOp::kNanMax, x, std::move(axes), o);
}
Array nanargmin(const Array& x, std::optional<int> axis, ReduceOptions o) {
  return reduce(ReduceOp::kNanArgmin, x, axis ? std::vector<int>{*axis} : std::vector<int>{}, o);
}
Array nanargmax(const Array& x, std::optional<int> axis, ReduceOptions o) {
  return reduce(ReduceOp::kNanArgmax, x, axis ? std::vector<int>{*axis} : std::vector<int>{}, o);
}

}  // namespace strata
