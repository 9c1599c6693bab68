"""The operations that both an Array method and the namespace function of the
same name run, on engine handles (`_strata.Array`): reductions, scans, casts,
clip and round.

This module sits below strata.Array (array_api/array_object.py): it takes
and returns handles, so that `x.sum(...)` and `strata.sum(x, ...)` are one
code path (one semantics per name) without the Array class importing the
namespace modules built on it. Arguments are converted here; what they mean
is decided in C++ (src/strata/api/).
"""
import builtins

import numpy as np

from ._core import _strata, axes_arg, dtype_name, one_axis_arg


def astype(h, dtype, what="astype"):
    """h as `dtype` (h itself when it has that dtype already)."""
    name = dtype_name(dtype, what)
    return h if name == h.dtype else _strata.astype(h, name)


# ------------------------------------------------------------------ reductions

def reduce(name, h, axis, keepdims, ddof=0, split_every=None):
    """The engine's reduction `name` over `axis` (None: every axis)."""
    axes = axes_arg(axis, len(h.shape))
    if axes == []:
        # axis=(): nothing is reduced, so x's shape stays (keepdims or not).
        # The C++ API reads [] as "every axis", so the reduction runs over a
        # new length-1 axis instead, which it then drops.
        return _strata.reduce(name, _strata.expand_dims(h, 0), [0], False,
                              split_every or 0, ddof)
    return _strata.reduce(name, h, axes, bool(keepdims), split_every or 0, ddof)


def sum_like(name, h, axis, dtype, keepdims, split_every):
    """sum, prod, nansum or nanprod accumulated in `dtype` and returned in it:
    the engine accumulates small integers in 64 bits, the standard returns
    `dtype` (wrapping, as numpy's sum(dtype=uint8) does)."""
    if dtype is not None:
        h = astype(h, dtype, name)
    r = reduce(name, h, axis, keepdims, split_every=split_every)
    return r if dtype is None else astype(r, dtype, name)


def in_dtype(h, dtype, what):
    """h cast to `dtype` when one is given (numpy's dtype= of mean, nanmean,
    nanvar, ..., which xarray passes, None included)."""
    return h if dtype is None else astype(h, dtype, what)


def moment(name, h, axis, correction, keepdims, split_every):
    """var or std with the standard's `correction` (numpy's ddof). A whole
    correction is the engine's ddof; a fractional one rescales the ddof=0
    result by n / (n - correction) (its square root for std), with numpy's
    inf or NaN when n - correction <= 0."""
    if isinstance(correction, (bool, np.bool_)) or not isinstance(
            correction, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: correction must be a number, got {correction!r}")
    c = float(correction)
    if not c >= 0:
        raise ValueError(f"{name}: correction must be non-negative, got {correction}")
    if c == int(c):
        return reduce(name, h, axis, keepdims, int(c), split_every)
    r = reduce("var", h, axis, keepdims, 0, split_every)
    ndim = len(h.shape)
    axes = range(ndim) if axis is None else [a % ndim for a in axes_arg(axis, ndim)]
    n = 1
    for a in set(axes):
        n *= h.shape[a]
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = float(np.float64(n) / np.float64(builtins.max(n - c, 0.0)))
    r = _strata.binary("multiply", r, factor)
    return r if name == "var" else _strata.unary("sqrt", r)


def correction_of(name, correction, ddof):
    """The `correction` of var/std given as the standard's `correction` or
    numpy's `ddof` (one of them)."""
    if ddof is None:
        return 0.0 if correction is None else correction
    if correction is not None:
        raise TypeError(f"{name}: give correction= or numpy's ddof=, not both")
    return ddof


def arg(name, h, axis, keepdims):
    """argmin or argmax over one axis (None: the flattened array)."""
    return getattr(_strata, name)(h, one_axis_arg(axis, name), bool(keepdims))


def cumulative(name, h, axis, dtype, include_initial):
    """cumulative_sum or cumulative_prod along one axis (None: a 1-d x's)."""
    if axis is None and len(h.shape) > 1:
        raise ValueError(f"{name}: axis is required for arrays of more than one dimension")
    return getattr(_strata, name)(h, one_axis_arg(axis, name),
                                  None if dtype is None else dtype_name(dtype, name),
                                  bool(include_initial))


def numpy_cumulative(name, h, axis, dtype):
    """numpy's cumsum or cumprod: x flattened when axis is None."""
    return getattr(_strata, {"cumsum": "cumulative_sum", "cumprod": "cumulative_prod"}[name])(
        h, one_axis_arg(axis, name), None if dtype is None else dtype_name(dtype, name), False)


# ----------------------------------------------------------------- elementwise

def _bound(v, dtype):
    """A clip bound as the engine takes it (a handle or a Python scalar). A
    Python int beyond an integer dtype's range is that range's end (x's
    elements are all inside it), as numpy 2's clip answers, rather than the
    wrapped value a cast gives."""
    if type(v) is int and dtype.kind in "iu":
        info = np.iinfo(dtype)
        return builtins.min(builtins.max(v, int(info.min)), int(info.max))
    return v


def clip(h, lo, hi):
    """h clipped to [lo, hi]; each bound None, a Python scalar or a handle."""
    dtype = np.dtype(h.dtype)
    lo = None if lo is None else _bound(lo, dtype)
    hi = None if hi is None else _bound(hi, dtype)
    if isinstance(lo, _strata.Array) != isinstance(hi, _strata.Array):
        # One bound an array, the other a scalar or absent: both as arrays
        # (an absent one as the end of x's range, which bounds nothing).
        if lo is None or hi is None:
            if dtype.kind in "iu":
                info = np.iinfo(dtype)
                end = int(info.min) if lo is None else int(info.max)
            else:
                end = -float("inf") if lo is None else float("inf")
            lo, hi = (end, hi) if lo is None else (lo, end)
        if not isinstance(lo, _strata.Array):
            lo = _strata.full((), lo, "auto", h.dtype, None)
        else:
            hi = _strata.full((), hi, "auto", h.dtype, None)
    return _strata.clip(h, lo, hi)


def round_to(h, decimals):
    """numpy's round(x, decimals): multiply by 10**decimals, round half to
    even, divide (decimals=0: the standard's round)."""
    if isinstance(decimals, (bool, np.bool_)) or not hasattr(decimals, "__index__"):
        raise TypeError(f"round: decimals must be an int, got {decimals!r}")
    decimals = int(decimals)
    if decimals == 0:
        return _strata.unary("round", h)
    if decimals > 0:
        factor = 10.0 ** decimals
        return _strata.binary("divide", _strata.unary(
            "round", _strata.binary("multiply", h, factor)), factor)
    factor = 10.0 ** -decimals
    return _strata.binary("multiply", _strata.unary(
        "round", _strata.binary("divide", h, factor)), factor)
