"""x[key]: the key converted for the C++ subscript (integers, slices, None,
Ellipsis) and take (one integer array along one axis)."""
import operator

import numpy as np

from ._array import Array, _wrap
from ._core import _strata


def _term(k):
    if k is None or k is Ellipsis or isinstance(k, slice):
        return k
    if isinstance(k, (bool, np.bool_)):
        raise IndexError("boolean scalar indices are not supported")
    if isinstance(k, Array) and k.ndim == 0 and k.dtype.kind in "iu":
        return operator.index(k)
    if hasattr(k, "__index__") and not isinstance(k, (Array, np.ndarray)):
        return operator.index(k)
    return None  # an array index


def getitem(x, key):
    if not isinstance(key, tuple):
        key = (key,)
    terms = []
    array_axes = []
    axis = 0
    for k in key:
        t = _term(k)
        if t is None and k is not None:
            if not isinstance(k, (Array, np.ndarray, list)):
                raise IndexError(f"index: unsupported index type {type(k).__name__} "
                                 "(integers, slices, None, ..., or one integer array)")
            array_axes.append((len(terms), axis, k))
            terms.append(slice(None))
            axis += 1
            continue
        if isinstance(t, slice):
            # Slice parts that are integer arrays or numpy ints: plain ints.
            t = slice(*(None if v is None else operator.index(v)
                        for v in (t.start, t.stop, t.step)))
        terms.append(t)
        if t is not None and t is not Ellipsis:
            axis += 1
        elif t is Ellipsis:
            axis = x.ndim - sum(1 for u in key[len(terms):] if u is not None and u is not Ellipsis)
    if not array_axes:
        return _wrap(_strata.subscript(x._h, tuple(terms)))
    if len(array_axes) > 1 or Ellipsis in terms or None in terms:
        raise IndexError("index: only one integer array index is supported, with slices "
                         "on the other axes")
    position, along, k = array_axes[0]
    idx = k.compute() if isinstance(k, Array) else np.asarray(k)
    if idx.dtype.kind == "b":
        raise IndexError("index: boolean mask indexing is not supported yet")
    if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
        raise IndexError("index: an array index must be a 1-d array of integers")
    base = _wrap(_strata.subscript(x._h, tuple(terms)))
    # Integers before the array axis have dropped axes.
    dropped = sum(1 for t in terms[:position] if isinstance(t, int))
    return _wrap(_strata.take(base._h, [int(i) for i in idx], along - dropped))


def setitem(x, key, value):
    """The handle of x with x[key] = value (Dask's semantics: x becomes a new
    lazy array; arrays derived from x before keep their values)."""
    from ._array import _as_operand
    from ._functions import astype, where
    v = _as_operand(value, "setitem")
    if isinstance(key, (Array, np.ndarray)) and np.dtype(key.dtype) == np.bool_:
        # x[mask] = value with a mask of x's shape: where(mask, value, x).
        from ._creation import asarray
        mask = asarray(key)
        if mask.shape != x.shape:
            raise IndexError(f"setitem: a boolean mask of shape {mask.shape} for an array of "
                             f"shape {x.shape} (only masks of the array's shape are supported)")
        if isinstance(v, _strata.Array):
            if v.shape != () and v.shape != x.shape:
                raise ValueError("setitem: with a boolean mask the value must be a scalar or "
                                 "have the array's shape")
            v = astype(_wrap(v), x.dtype)
        return where(mask, v, x)._h
    if not isinstance(key, tuple):
        key = (key,)
    terms = []
    for k in key:
        t = _term(k)
        if t is None and k is not None:
            raise IndexError("setitem: integer array indices are not supported in assignment "
                             "(integers, slices, None, ... or a boolean mask of the array's "
                             "shape)")
        if isinstance(t, slice):
            t = slice(*(None if u is None else operator.index(u)
                        for u in (t.start, t.stop, t.step)))
        terms.append(t)
    return _strata.setitem(x._h, tuple(terms), v)
