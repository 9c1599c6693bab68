"""x[key], x[key] = value and x.vindex[key] on engine handles: the key
converted for the C++ subscript (integers, slices, None, Ellipsis) or, with
integer or boolean arrays in it, the C++ index() (api/advanced_indexing.h).

Below strata.Array: strata.Array turns the Arrays in a key into handles (a
0-d integer Array into its int) before calling here.
"""
import operator

import numpy as np

from ._core import _strata, numpy_to_share


def handle_of_numpy(a):
    """A numpy array as an engine handle, shared without a copy when it can be."""
    a = numpy_to_share(a, None, None)
    return _strata.asarray(a, "auto", None)


def _term(k):
    if k is None or k is Ellipsis or isinstance(k, slice):
        return k
    if isinstance(k, (bool, np.bool_)):
        raise IndexError("boolean scalar indices are not supported")
    if hasattr(k, "__index__") and not isinstance(k, (_strata.Array, np.ndarray)):
        return operator.index(k)
    return None  # an array index


def _terms(key, what):
    """The key's terms for `_strata.subscript` (no arrays) or `_strata.index`
    (arrays as handles: lists and numpy arrays are converted, integer or
    bool)."""
    if not isinstance(key, tuple):
        key = (key,)
    terms, has_array = [], False
    for k in key:
        t = _term(k)
        if t is None and k is not None:
            if isinstance(k, _strata.Array):
                a = k
            elif isinstance(k, (np.ndarray, list)):
                n = np.asarray(k)
                if n.dtype.kind not in "iub":
                    if n.size:
                        raise IndexError(f"{what}: index arrays must hold integers or bools, "
                                         f"got {n.dtype}")
                    n = n.astype(np.int64)
                a = handle_of_numpy(n)
            else:
                raise IndexError(f"{what}: unsupported index type {type(k).__name__} "
                                 "(integers, slices, None, ..., integer or boolean arrays)")
            if np.dtype(a.dtype).kind not in "iub":
                raise IndexError(f"{what}: index arrays must hold integers or bools, "
                                 f"got {a.dtype}")
            terms.append(a)
            has_array = True
            continue
        if isinstance(t, slice):
            # Slice parts that are integer arrays or numpy ints: plain ints.
            t = slice(*(None if v is None else operator.index(v)
                        for v in (t.start, t.stop, t.step)))
        terms.append(t)
    return tuple(terms), has_array


def explicit_key(key):
    """The key of one of xarray's explicit indexers (BasicIndexer,
    VectorizedIndexer: they hold it in `.tuple`, and xarray passes them to
    strata arrays, which strata.xarray declares ExplicitlyIndexed); any
    other key as it is. Dask's vindex semantics are xarray's vectorized
    indexing (sliced axes after the broadcast ones)."""
    if not isinstance(key, tuple) and hasattr(key, "tuple") and \
            isinstance(getattr(key, "tuple"), tuple):
        return key.tuple
    return key


def getitem(h, key):
    """h[key] with NumPy's semantics: integers, slices, None, Ellipsis,
    integer arrays on several axes (broadcast together) and boolean masks
    (counted first: the count is the shape). Only the blocks the indices
    touch are read."""
    terms, has_array = _terms(key, "index")
    if not has_array:
        return _strata.subscript(h, terms)
    return _strata.index(h, terms)


def vindex(h, key):
    """Dask's x.vindex[key]: pointwise selection, the broadcast dimensions of
    the array indices first."""
    terms, _ = _terms(key, "vindex")
    return _strata.vindex(h, terms)


def setitem(h, key, value):
    """The handle of x with x[key] = value (Dask's semantics: x becomes a new
    lazy array; arrays derived from x before keep their values). value: a
    handle or a Python scalar."""
    if isinstance(key, (_strata.Array, np.ndarray)) and np.dtype(key.dtype) == np.bool_:
        mask = key if isinstance(key, _strata.Array) else handle_of_numpy(key)
        # x[mask] = value with a mask of x's shape: where(mask, value, x).
        if tuple(mask.shape) != tuple(h.shape):
            raise IndexError(f"setitem: a boolean mask of shape {tuple(mask.shape)} for an "
                             f"array of shape {tuple(h.shape)} (only masks of the array's "
                             "shape are supported)")
        if isinstance(value, _strata.Array):
            if tuple(value.shape) not in ((), tuple(h.shape)):
                raise ValueError("setitem: with a boolean mask the value must be a scalar or "
                                 "have the array's shape")
            if value.dtype != h.dtype:
                value = _strata.astype(value, h.dtype)
        return _strata.where(mask, value, h)
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
    return _strata.setitem(h, tuple(terms), value)
