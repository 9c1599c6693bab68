"""The Array API's searching functions (argmax, argmin, count_nonzero,
nonzero, searchsorted, where) and numpy's nanargmax and nanargmin."""
import numpy as np

from .. import _ops
from .._core import _strata, one_axis_arg
from .array_object import Array, _as_operand, _wrap, as_array


def argmin(x, /, *, axis=None, keepdims=False):
    return as_array(x, "argmin").argmin(axis, keepdims=keepdims)


def argmax(x, /, *, axis=None, keepdims=False):
    return as_array(x, "argmax").argmax(axis, keepdims=keepdims)


def nanargmin(x, /, *, axis=None, keepdims=False):
    """numpy's nanargmin; an all-NaN slice fails the compute (ValueError)."""
    x = as_array(x, "nanargmin")
    a = one_axis_arg(axis, "nanargmin")
    return _wrap(_strata.reduce("nanargmin", x._h, None if a is None else [a], bool(keepdims)))


def nanargmax(x, /, *, axis=None, keepdims=False):
    x = as_array(x, "nanargmax")
    a = one_axis_arg(axis, "nanargmax")
    return _wrap(_strata.reduce("nanargmax", x._h, None if a is None else [a], bool(keepdims)))


def count_nonzero(x, /, *, axis=None, keepdims=False):
    return _wrap(_ops.reduce("count_nonzero", as_array(x, "count_nonzero")._h, axis, keepdims))


def where(condition, x1, x2, /):
    c = as_array(condition, "where")
    return _wrap(_strata.where(c._h, _as_operand(x1, "where"), _as_operand(x2, "where")))


def array_or_scalar(v, like, what):
    """v as an Array: a list, tuple or scalar through numpy (a Python scalar
    in `like`'s dtype)."""
    if isinstance(v, Array):
        return v
    if isinstance(v, (np.ndarray, np.generic, list, tuple)):
        return as_array(np.asarray(v), what)
    if isinstance(v, (bool, int, float, complex)):
        return as_array(np.asarray(v, dtype=like.dtype if like is not None else None), what)
    raise TypeError(f"{what}: expected a strata.Array, got {type(v).__name__}")


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    """Insertion points of x2's elements in the sorted 1-d x1 (int64, x2's
    shape); x1 is read whole by every task (it must fit allowed_mem)."""
    a = as_array(x1, "searchsorted")
    b = array_or_scalar(x2, a, "searchsorted")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    s = None if sorter is None else as_array(sorter, "searchsorted")._h
    return _wrap(_strata.searchsorted(a._h, b._h, side, s))


def nonzero(x, /):
    """The indices of the nonzero elements, one int64 array per axis, in C
    order. Computes eagerly (counts first): the count is the shape."""
    x = as_array(x, "nonzero")
    if x.ndim == 0:
        raise ValueError("nonzero: 0-d arrays are not supported (the standard leaves them out)")
    return tuple(_wrap(h) for h in _strata.nonzero(x._h))
