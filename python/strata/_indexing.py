"""x[key]: the key converted for the C++ subscript (integers, slices, None,
Ellipsis) or, with integer or boolean arrays in it, the C++ index()
(api/advanced_indexing.h)."""
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


def _terms(x, key, what):
    """The key's terms for `_strata.subscript` (no arrays) or `_strata.index`
    (arrays as strata Arrays: lists and numpy arrays are converted, integer
    or bool)."""
    from ._creation import asarray
    if not isinstance(key, tuple):
        key = (key,)
    terms, has_array = [], False
    for k in key:
        t = _term(k)
        if t is None and k is not None:
            if isinstance(k, Array):
                a = k
            elif isinstance(k, (np.ndarray, list)):
                n = np.asarray(k)
                if n.dtype.kind not in "iub":
                    if n.size:
                        raise IndexError(f"{what}: index arrays must hold integers or bools, "
                                         f"got {n.dtype}")
                    n = n.astype(np.int64)
                a = asarray(n)
            else:
                raise IndexError(f"{what}: unsupported index type {type(k).__name__} "
                                 "(integers, slices, None, ..., integer or boolean arrays)")
            if a.dtype.kind not in "iub":
                raise IndexError(f"{what}: index arrays must hold integers or bools, "
                                 f"got {a.dtype}")
            terms.append(a._h)
            has_array = True
            continue
        if isinstance(t, slice):
            # Slice parts that are integer arrays or numpy ints: plain ints.
            t = slice(*(None if v is None else operator.index(v)
                        for v in (t.start, t.stop, t.step)))
        terms.append(t)
    return tuple(terms), has_array


def getitem(x, key):
    """x[key] with NumPy's semantics: integers, slices, None, Ellipsis,
    integer arrays on several axes (broadcast together) and boolean masks
    (counted first: the count is the shape). Only the blocks the indices
    touch are read."""
    terms, has_array = _terms(x, key, "index")
    if not has_array:
        return _wrap(_strata.subscript(x._h, terms))
    return _wrap(_strata.index(x._h, terms))


def vindex(x, key):
    """Dask's x.vindex[key]: pointwise selection, the broadcast dimensions of
    the array indices first."""
    terms, _ = _terms(x, key, "vindex")
    return _wrap(_strata.vindex(x._h, terms))


class VIndexer:
    """x.vindex: `x.vindex[ilat, ilon]` selects points (Dask's vindex)."""

    __slots__ = ("_x",)

    def __init__(self, x):
        self._x = x

    def __getitem__(self, key):
        return vindex(self._x, key)


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
