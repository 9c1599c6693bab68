"""The Array API's indexing functions: take and take_along_axis (x[key] is
Array.__getitem__)."""
import operator

import numpy as np

from .._core import _strata
from .array_object import Array, _wrap, as_array


def take(x, indices, /, *, axis=None):
    """numpy's take: the elements at `indices` (ints, a numpy array or a
    strata Array, computed first) along `axis` (x flattened when None)."""
    x = as_array(x, "take")
    if axis is None and x.ndim != 1:
        raise ValueError("take: axis is required for arrays of more than one dimension")
    idx = indices if isinstance(indices, Array) else _index_array(indices, "take")
    if idx.dtype.kind not in "iu":
        raise IndexError(f"take: indices must be integers, got {idx.dtype}")
    return _wrap(_strata.take_array(x._h, idx._h, None if axis is None else
                                    operator.index(axis)))


def _index_array(v, what):
    """A list or numpy array of indices (or a mask) as a strata Array."""
    a = np.asarray(v)
    if a.dtype.kind not in "iub":
        if a.size == 0:
            a = a.astype(np.int64)
        else:
            raise IndexError(f"{what}: index arrays must hold integers or bools, got {a.dtype}")
    return as_array(a, what)


def take_along_axis(x, indices, /, *, axis=-1):
    """numpy's take_along_axis (argsort's partner)."""
    x = as_array(x, "take_along_axis")
    i = as_array(indices, "take_along_axis")
    return _wrap(_strata.take_along_axis(x._h, i._h, operator.index(axis)))
