"""The operations of issue 16 over the C++ API: NaN-aware reductions,
cumulative sums and products, diff, sorting, searching, set functions,
nonzero, take_along_axis, moveaxis/repeat/roll/tile/unstack, broadcast_shapes
and pad. Each converts its arguments and calls the one C++ op of the same
meaning (src/strata/api/).

What computes eagerly (the result's shape depends on the data, as with Dask's
unknown chunks): unique_values/unique_counts/unique_inverse/unique_all,
nonzero, boolean-mask indexing, repeat with counts given as an Array. Every
other function here is lazy until compute().
"""
import operator
from collections import namedtuple

import numpy as np

from ._array import Array, _wrap
from ._core import _strata, dtype_name, shape_tuple
from ._functions import _array, _axes, _one_axis, _reduce


# ------------------------------------------------------ NaN-aware reductions

def _in_dtype(x, dtype, what):
    """x, cast to dtype when one is given (numpy's dtype= of the nan-
    functions, which xarray passes, None included)."""
    x = _array(x, what)
    return x if dtype is None or np.dtype(dtype) == x.dtype else x.astype(dtype)


def nansum(x, /, *, axis=None, dtype=None, keepdims=False, split_every=None):
    """numpy's nansum: NaN counts as 0 (an all-NaN slice sums to 0)."""
    return _reduce("nansum", _in_dtype(x, dtype, "nansum"), axis, keepdims,
                   split_every=split_every or 0)


def nanprod(x, /, *, axis=None, dtype=None, keepdims=False, split_every=None):
    return _reduce("nanprod", _in_dtype(x, dtype, "nanprod"), axis, keepdims,
                   split_every=split_every or 0)


def nanmean(x, /, *, axis=None, dtype=None, keepdims=False, split_every=None):
    """numpy's nanmean: the mean of the non-NaN elements (NaN for an all-NaN
    slice), count and sum carried together in one pass."""
    return _reduce("nanmean", _in_dtype(x, dtype, "nanmean"), axis, keepdims,
                   split_every=split_every or 0)


def nanmin(x, /, *, axis=None, keepdims=False, split_every=None):
    return _reduce("nanmin", x, axis, keepdims, split_every=split_every or 0)


def nanmax(x, /, *, axis=None, keepdims=False, split_every=None):
    return _reduce("nanmax", x, axis, keepdims, split_every=split_every or 0)


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
                   _ddof(ddof, "nanvar"), split_every or 0)


def nanstd(x, /, *, axis=None, dtype=None, ddof=0, keepdims=False, split_every=None):
    return _reduce("nanstd", _in_dtype(x, dtype, "nanstd"), axis, keepdims,
                   _ddof(ddof, "nanstd"), split_every or 0)


def nanargmin(x, /, *, axis=None, keepdims=False):
    """numpy's nanargmin; an all-NaN slice fails the compute (ValueError)."""
    x = _array(x, "nanargmin")
    a = _one_axis(axis, "nanargmin")
    return _wrap(_strata.reduce("nanargmin", x._h, None if a is None else [a], bool(keepdims)))


def nanargmax(x, /, *, axis=None, keepdims=False):
    x = _array(x, "nanargmax")
    a = _one_axis(axis, "nanargmax")
    return _wrap(_strata.reduce("nanargmax", x._h, None if a is None else [a], bool(keepdims)))


# ----------------------------------------------------------- scans and diff

def _scan(name, x, axis, dtype, include_initial):
    x = _array(x, name)
    if axis is None and x.ndim > 1:
        raise ValueError(f"{name}: axis is required for arrays of more than one dimension")
    a = _one_axis(axis, name)
    return _wrap(getattr(_strata, name)(x._h, a, None if dtype is None else
                                        dtype_name(dtype, name), bool(include_initial)))


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """The Array API's cumulative_sum: a blockwise scan plus a carry pass (no
    rechunk of the axis)."""
    return _scan("cumulative_sum", x, axis, dtype, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    return _scan("cumulative_prod", x, axis, dtype, include_initial)


def cumsum(x, /, axis=None, dtype=None):
    """numpy's cumsum (x flattened when axis is None)."""
    x = _array(x, "cumsum")
    return _wrap(_strata.cumulative_sum(x._h, _one_axis(axis, "cumsum"),
                                        None if dtype is None else dtype_name(dtype, "cumsum"),
                                        False))


def cumprod(x, /, axis=None, dtype=None):
    x = _array(x, "cumprod")
    return _wrap(_strata.cumulative_prod(x._h, _one_axis(axis, "cumprod"),
                                         None if dtype is None else dtype_name(dtype, "cumprod"),
                                         False))


def nancumsum(x, /, axis=None, dtype=None):
    """numpy's nancumsum: NaN counts as 0."""
    x = _in_dtype(x, dtype, "nancumsum")
    return _wrap(_strata.nancumsum(x._h, _one_axis(axis, "nancumsum")))


def nancumprod(x, /, axis=None, dtype=None):
    x = _in_dtype(x, dtype, "nancumprod")
    return _wrap(_strata.nancumprod(x._h, _one_axis(axis, "nancumprod")))


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    """The n-th discrete difference along axis (the standard's and numpy's
    diff); prepend/append are arrays or scalars joined along the axis first."""
    from ._creation import asarray
    x = _array(x, "diff")

    def extra(v, what):
        if v is None:
            return None
        if not isinstance(v, Array):
            v = asarray(np.asarray(v, dtype=x.dtype))
        return v._h
    if isinstance(n, (bool, np.bool_)) or not hasattr(n, "__index__"):
        raise TypeError(f"diff: n must be an int, got {n!r}")
    return _wrap(_strata.diff(x._h, operator.index(axis), operator.index(n),
                              extra(prepend, "prepend"), extra(append, "append")))


# ------------------------------------------------------------------ sorting

def sort(x, /, *, axis=-1, descending=False, stable=True):
    """Sorted along axis (NaN last; descending: NaN first, stable). The axis
    is made one chunk when it fits allowed_mem; otherwise ValueError naming
    the axis and the budget."""
    x = _array(x, "sort")
    return _wrap(_strata.sort(x._h, operator.index(axis), bool(descending), bool(stable)))


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    x = _array(x, "argsort")
    return _wrap(_strata.argsort(x._h, operator.index(axis), bool(descending), bool(stable)))


def _quantile(name, x, q, axis, method, keepdims, skipna):
    x = _array(x, name)
    if isinstance(q, Array):
        q = q.compute()
    qa = np.asarray(q)
    if qa.dtype.kind not in "fiub":
        raise TypeError(f"{name}: q must be real numbers, got {qa.dtype}")
    qa = qa.astype(np.float64)
    if isinstance(method, (bytes, bytearray)) or not isinstance(method, str):
        raise TypeError(f"{name}: method must be a str, got {type(method).__name__}")
    axes = _axes(axis, x.ndim)
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
    x = _array(x, "median")
    return _wrap(_strata.median(x._h, _axes(axis, x.ndim), bool(keepdims), False))


def nanmedian(x, /, *, axis=None, keepdims=False):
    x = _array(x, "nanmedian")
    return _wrap(_strata.median(x._h, _axes(axis, x.ndim), bool(keepdims), True))


def take_along_axis(x, indices, /, *, axis=-1):
    """numpy's take_along_axis (argsort's partner)."""
    x = _array(x, "take_along_axis")
    i = _array(indices, "take_along_axis")
    return _wrap(_strata.take_along_axis(x._h, i._h, operator.index(axis)))


# ---------------------------------------------------------------- searching

def _array_or_scalar(v, like, what):
    from ._creation import asarray
    if isinstance(v, Array):
        return v
    if isinstance(v, (np.ndarray, np.generic, list, tuple)):
        return asarray(np.asarray(v))
    if isinstance(v, (bool, int, float, complex)):
        return asarray(np.asarray(v, dtype=like.dtype if like is not None else None))
    raise TypeError(f"{what}: expected a strata.Array, got {type(v).__name__}")


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    """Insertion points of x2's elements in the sorted 1-d x1 (int64, x2's
    shape); x1 is read whole by every task (it must fit allowed_mem)."""
    a = _array(x1, "searchsorted")
    b = _array_or_scalar(x2, a, "searchsorted")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    s = None if sorter is None else _array(sorter, "searchsorted")._h
    return _wrap(_strata.searchsorted(a._h, b._h, side, s))


def isin(x1, x2, /, *, invert=False):
    """True where an element of x1 is in x2 (bool, x1's shape)."""
    a = _array(x1, "isin")
    b = _array_or_scalar(x2, a, "isin")
    return _wrap(_strata.isin(a._h, b._h, bool(invert)))


def nonzero(x, /):
    """The indices of the nonzero elements, one int64 array per axis, in C
    order. Computes eagerly (counts first): the count is the shape."""
    x = _array(x, "nonzero")
    if x.ndim == 0:
        raise ValueError("nonzero: 0-d arrays are not supported (the standard leaves them out)")
    return tuple(_wrap(h) for h in _strata.nonzero(x._h))


# ------------------------------------------------------------ set functions

UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])
UniqueAllResult = namedtuple("UniqueAllResult",
                             ["values", "indices", "inverse_indices", "counts"])


def unique_values(x, /):
    """Sorted unique values (every NaN distinct). Computes eagerly."""
    return _wrap(_strata.unique_values(_array(x, "unique_values")._h))


def unique_counts(x, /):
    v, c = _strata.unique_counts(_array(x, "unique_counts")._h)
    return UniqueCountsResult(_wrap(v), _wrap(c))


def unique_inverse(x, /):
    v, i = _strata.unique_inverse(_array(x, "unique_inverse")._h)
    return UniqueInverseResult(_wrap(v), _wrap(i))


def unique_all(x, /):
    v, i, inv, c = _strata.unique_all(_array(x, "unique_all")._h)
    return UniqueAllResult(_wrap(v), _wrap(i), _wrap(inv), _wrap(c))


# ------------------------------------------------------------- manipulation

def broadcast_shapes(*shapes):
    """The shape the shapes broadcast to (numpy's rules), or ValueError."""
    return tuple(_strata.broadcast_shapes([list(shape_tuple(s)) for s in shapes]))


def _int_list(v, what):
    if isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{what}: expected an int or a tuple of ints, got {v!r}")
    if hasattr(v, "__index__"):
        return [operator.index(v)]
    try:
        items = list(v)
    except TypeError:
        raise TypeError(f"{what}: expected an int or a tuple of ints, got "
                        f"{type(v).__name__}") from None
    if not all(hasattr(i, "__index__") and not isinstance(i, (bool, np.bool_)) for i in items):
        raise TypeError(f"{what}: expected ints, got {v!r}")
    return [operator.index(i) for i in items]


def moveaxis(x, source, destination, /):
    x = _array(x, "moveaxis")
    return _wrap(_strata.moveaxis(x._h, _int_list(source, "moveaxis: source"),
                                  _int_list(destination, "moveaxis: destination")))


def repeat(x, repeats, /, *, axis=None):
    """Each element repeated `repeats` times (an int, one count per element,
    or an integer Array, which is computed first) along axis (x flattened
    when None)."""
    x = _array(x, "repeat")
    if isinstance(repeats, Array):
        r = repeats._h
    elif isinstance(repeats, (bool, np.bool_)):
        raise TypeError("repeat: repeats must be an int or a sequence of ints")
    elif hasattr(repeats, "__index__"):
        r = operator.index(repeats)
    else:
        a = np.asarray(repeats)
        if a.ndim > 1 or (a.size and a.dtype.kind not in "iu"):
            raise TypeError("repeat: repeats must be an int or a 1-d sequence of ints")
        r = [int(v) for v in a.reshape(-1)]
    return _wrap(_strata.repeat(x._h, r, _one_axis(axis, "repeat")))


def roll(x, /, shift, *, axis=None):
    """Elements shifted along axis with wrap-around (x flattened when None)."""
    x = _array(x, "roll")
    shifts = _int_list(shift, "roll: shift")
    axes = [] if axis is None else _int_list(axis, "roll: axis")
    if axes and len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if axes and len(shifts) != len(axes):
        raise ValueError(f"roll: {len(shifts)} shifts for {len(axes)} axes")
    if not axes and len(shifts) != 1:
        raise ValueError("roll: without axis, shift must be a single int")
    return _wrap(_strata.roll(x._h, shifts, axes))


def tile(x, repetitions, /):
    x = _array(x, "tile")
    return _wrap(_strata.tile(x._h, _int_list(repetitions, "tile")))


def unstack(x, /, *, axis=0):
    x = _array(x, "unstack")
    return tuple(_wrap(h) for h in _strata.unstack(x._h, operator.index(axis)))


def pad(x, pad_width, mode="constant", *, constant_values=0):
    """numpy's pad: pad_width an int, a (before, after) pair, or one pair per
    axis; mode constant, edge, reflect, symmetric or wrap. Each output block
    reads only the input blocks its elements come from."""
    x = _array(x, "pad")
    w = np.asarray(pad_width)
    if w.dtype.kind not in "iu" or w.ndim > 2 or (w.ndim == 2 and w.shape[1] != 2):
        raise ValueError(f"pad: pad_width must be an int, a pair or one pair per axis, "
                         f"got {pad_width!r}")
    if w.ndim == 0:
        pairs = [(int(w), int(w))]
    elif w.ndim == 1:
        if w.size == 1:
            pairs = [(int(w[0]), int(w[0]))]
        elif w.size == 2:
            pairs = [(int(w[0]), int(w[1]))]
        else:
            raise ValueError(f"pad: pad_width must be an int, a pair or one pair per axis, "
                             f"got {pad_width!r}")
    else:
        pairs = [(int(a), int(b)) for a, b in w]
    if not isinstance(mode, str):
        raise TypeError(f"pad: mode must be a string, got {type(mode).__name__}")
    if isinstance(constant_values, np.generic):
        constant_values = constant_values.item()
    return _wrap(_strata.pad(x._h, pairs, mode, constant_values))


__all__ = [n for n in dir() if not n.startswith("_") and n not in (
    "operator", "namedtuple", "np", "Array", "dtype_name", "shape_tuple")]
