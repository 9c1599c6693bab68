"""The Array API's statistical functions, numpy's NaN-aware and cumulative
ones, quantiles, and Strata's group-by (groupby_reduce).

sum, prod, mean, min, max, var, std are the Array methods of the same name
(strata.sum(x, ...) is x.sum(...))."""
import operator

import numpy as np

from .. import _ops
from .._core import _strata, axes_arg, one_axis_arg
from .array_object import Array, _wrap, as_array


def sum(x, /, *, axis=None, dtype=None, keepdims=False, split_every=None):
    return as_array(x, "sum").sum(axis, dtype=dtype, keepdims=keepdims,
                                  split_every=split_every)


def prod(x, /, *, axis=None, dtype=None, keepdims=False, split_every=None):
    return as_array(x, "prod").prod(axis, dtype=dtype, keepdims=keepdims,
                                    split_every=split_every)


def mean(x, /, *, axis=None, dtype=None, keepdims=False, split_every=None):
    return as_array(x, "mean").mean(axis, dtype=dtype, keepdims=keepdims,
                                    split_every=split_every)


def min(x, /, *, axis=None, keepdims=False, split_every=None):
    return as_array(x, "min").min(axis, keepdims=keepdims, split_every=split_every)


def max(x, /, *, axis=None, keepdims=False, split_every=None):
    return as_array(x, "max").max(axis, keepdims=keepdims, split_every=split_every)


def var(x, /, *, axis=None, correction=None, ddof=None, dtype=None, keepdims=False,
        split_every=None):
    """The variance with the standard's correction= (numpy's ddof=, the same
    number; 0 when neither is given)."""
    return as_array(x, "var").var(axis, correction=correction, ddof=ddof, dtype=dtype,
                                  keepdims=keepdims, split_every=split_every)


def std(x, /, *, axis=None, correction=None, ddof=None, dtype=None, keepdims=False,
        split_every=None):
    return as_array(x, "std").std(axis, correction=correction, ddof=ddof, dtype=dtype,
                                  keepdims=keepdims, split_every=split_every)


def _reduce(name, x, axis, keepdims, ddof=0, split_every=None):
    return _wrap(_ops.reduce(name, as_array(x, name)._h, axis, keepdims, ddof, split_every))


def _in_dtype(x, dtype, what):
    """x, cast to dtype when one is given (numpy's dtype= of the nan-
    functions, which xarray passes, None included)."""
    return _wrap(_ops.in_dtype(as_array(x, what)._h, dtype, what))


def nansum(x, /, *, axis=None, dtype=None, keepdims=False, split_every=None):
    """numpy's nansum: NaN counts as 0 (an all-NaN slice sums to 0)."""
    return _reduce("nansum", _in_dtype(x, dtype, "nansum"), axis, keepdims,
                   split_every=split_every)


def nanprod(x, /, *, axis=None, dtype=None, keepdims=False, split_every=None):
    return _reduce("nanprod", _in_dtype(x, dtype, "nanprod"), axis, keepdims,
                   split_every=split_every)


def nanmean(x, /, *, axis=None, dtype=None, keepdims=False, split_every=None):
    """numpy's nanmean: the mean of the non-NaN elements (NaN for an all-NaN
    slice), count and sum carried together in one pass."""
    return _reduce("nanmean", _in_dtype(x, dtype, "nanmean"), axis, keepdims,
                   split_every=split_every)


def nanmin(x, /, *, axis=None, keepdims=False, split_every=None):
    return _reduce("nanmin", x, axis, keepdims, split_every=split_every)


def nanmax(x, /, *, axis=None, keepdims=False, split_every=None):
    return _reduce("nanmax", x, axis, keepdims, split_every=split_every)


def _ddof(ddof, what):
    if isinstance(ddof, (bool, np.bool_)) or not hasattr(ddof, "__index__"):
        raise TypeError(f"{what}: ddof must be an int, got {ddof!r}")
    d = operator.index(ddof)
    if d < 0:
        raise ValueError(f"{what}: ddof must be non-negative, got {d}")
    return d


def nanvar(x, /, *, axis=None, dtype=None, ddof=0, keepdims=False, split_every=None):
    """numpy's nanvar (NaN where the non-NaN count - ddof <= 0)."""
    return _reduce("nanvar", _in_dtype(x, dtype, "nanvar"), axis, keepdims,
                   _ddof(ddof, "nanvar"), split_every)


def nanstd(x, /, *, axis=None, dtype=None, ddof=0, keepdims=False, split_every=None):
    return _reduce("nanstd", _in_dtype(x, dtype, "nanstd"), axis, keepdims,
                   _ddof(ddof, "nanstd"), split_every)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """The Array API's cumulative_sum: a blockwise scan plus a carry pass (no
    rechunk of the axis)."""
    return _wrap(_ops.cumulative("cumulative_sum", as_array(x, "cumulative_sum")._h, axis,
                                 dtype, include_initial))


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    return _wrap(_ops.cumulative("cumulative_prod", as_array(x, "cumulative_prod")._h, axis,
                                 dtype, include_initial))


def cumsum(x, /, axis=None, dtype=None):
    """numpy's cumsum (x flattened when axis is None); x.cumsum(...)."""
    return as_array(x, "cumsum").cumsum(axis, dtype)


def cumprod(x, /, axis=None, dtype=None):
    """numpy's cumprod (x flattened when axis is None); x.cumprod(...)."""
    return as_array(x, "cumprod").cumprod(axis, dtype)


def nancumsum(x, /, axis=None, dtype=None):
    """numpy's nancumsum: NaN counts as 0."""
    x = _in_dtype(x, dtype, "nancumsum")
    return _wrap(_strata.nancumsum(x._h, one_axis_arg(axis, "nancumsum")))


def nancumprod(x, /, axis=None, dtype=None):
    x = _in_dtype(x, dtype, "nancumprod")
    return _wrap(_strata.nancumprod(x._h, one_axis_arg(axis, "nancumprod")))


def _quantile(name, x, q, axis, method, keepdims, skipna):
    x = as_array(x, name)
    if isinstance(q, Array):
        q = q.compute()
    qa = np.asarray(q)
    if qa.dtype.kind not in "fiub":
        raise TypeError(f"{name}: q must be real numbers, got {qa.dtype}")
    qa = qa.astype(np.float64)
    if isinstance(method, (bytes, bytearray)) or not isinstance(method, str):
        raise TypeError(f"{name}: method must be a str, got {type(method).__name__}")
    axes = axes_arg(axis, x.ndim)
    r = _wrap(_strata.quantile(x._h, qa.ravel().tolist(), qa.ndim == 0, axes, method,
                               bool(keepdims), skipna))
    if qa.ndim > 1:
        r = _wrap(_strata.reshape(r._h, list(qa.shape) + list(r.shape[1:])))
    return r


def quantile(x, /, q, *, axis=None, method="linear", keepdims=False):
    """numpy's quantile (q in [0, 1], numpy's 13 methods, numpy's dtypes): the
    axes are made one chunk, the other axes' chunks shrunk to fit allowed_mem
    (ValueError naming the axes and the budget when one slice does not fit).
    A slice holding NaN gives NaN."""
    return _quantile("quantile", x, q, axis, method, keepdims, False)


def nanquantile(x, /, q, *, axis=None, method="linear", keepdims=False):
    """quantile leaving NaN out (NaN for a slice of NaN only)."""
    return _quantile("nanquantile", x, q, axis, method, keepdims, True)


def median(x, /, *, axis=None, keepdims=False):
    """numpy's median (mean of the two middle values), as quantile is planned."""
    x = as_array(x, "median")
    return _wrap(_strata.median(x._h, axes_arg(axis, x.ndim), bool(keepdims), False))


def nanmedian(x, /, *, axis=None, keepdims=False):
    x = as_array(x, "nanmedian")
    return _wrap(_strata.median(x._h, axes_arg(axis, x.ndim), bool(keepdims), True))


_GROUPBY_FUNCS = {"sum", "mean", "count", "min", "max", "var", "std", "argmin", "argmax",
                  "first", "last", "prod", "nansum", "nanmean", "nanmin", "nanmax", "nanvar",
                  "nanstd", "nanargmin", "nanargmax", "nanfirst", "nanlast"}


def groupby_reduce(x, labels, /, *, axis, func="sum", num_groups=0, skipna=None, ddof=0,
                   split_every=None):
    """Reduces x along axis by integer group labels (Strata's group-by,
    flox's groupby_reduce): func one of sum, mean, count, min, max, var, std,
    argmin, argmax, first, last (and nan* forms). skipna (default: True for
    floats, as xarray) leaves NaN out of its group. labels: a 1-d integer
    sequence, numpy array or strata Array (chunked; read beside x's blocks).
    num_groups=0: the largest label + 1 (computed first for an Array)."""
    x = as_array(x, "groupby_reduce")
    if not isinstance(func, str) or func not in _GROUPBY_FUNCS:
        raise ValueError(f"groupby_reduce: unknown func {func!r} (expected one of "
                         f"{', '.join(sorted(_GROUPBY_FUNCS))})")
    if isinstance(labels, Array):
        if labels.ndim != 1 or labels.dtype.kind not in "iu":
            raise TypeError("groupby_reduce: labels must be a 1-d array of integers")
        lab = labels._h
    else:
        a = np.asarray(labels)
        if a.ndim != 1 or a.dtype.kind not in "iu":
            raise TypeError("groupby_reduce: labels must be a 1-d array of integers")
        lab = [int(v) for v in a]
    if skipna is not None and not isinstance(skipna, (bool, np.bool_)):
        raise TypeError(f"groupby_reduce: skipna must be a bool or None, got {skipna!r}")
    return _wrap(_strata.groupby_reduce_ex(
        x._h, lab, operator.index(axis), func, int(num_groups),
        None if skipna is None else bool(skipna), operator.index(ddof), split_every or 0))
