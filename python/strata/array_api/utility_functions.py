"""The Array API's utility functions: all, any, diff."""
import operator

import numpy as np

from .._core import _strata
from .array_object import Array, _wrap, as_array


def all(x, /, *, axis=None, keepdims=False):
    return as_array(x, "all").all(axis, keepdims=keepdims)


def any(x, /, *, axis=None, keepdims=False):
    return as_array(x, "any").any(axis, keepdims=keepdims)


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    """The n-th discrete difference along axis (the standard's and numpy's
    diff); prepend/append are arrays or scalars joined along the axis first."""
    x = as_array(x, "diff")

    def extra(v, what):
        if v is None:
            return None
        if not isinstance(v, Array):
            v = as_array(np.asarray(v, dtype=x.dtype), f"diff: {what}")
        return v._h
    if isinstance(n, (bool, np.bool_)) or not hasattr(n, "__index__"):
        raise TypeError(f"diff: n must be an int, got {n!r}")
    return _wrap(_strata.diff(x._h, operator.index(axis), operator.index(n),
                              extra(prepend, "prepend"), extra(append, "append")))
