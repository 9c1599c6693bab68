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
