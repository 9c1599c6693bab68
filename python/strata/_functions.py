"""The Array API's functions over the C++ ops: elementwise, reductions,
linear algebra, manipulation, searching. Each converts its arguments and calls
the one C++ op of the same meaning."""
import builtins
import operator

import numpy as np

from . import _core
from ._array import Array, _as_operand, _binary, _wrap
from ._core import _strata, dtype_name, shape_tuple


def _array(x, what):
    if isinstance(x, Array):
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        from ._creation import asarray
        return asarray(x)
    raise TypeError(f"{what}: expected a strata.Array, got {type(x).__name__}")


def _make_unary(api_name, op):
    def f(x, /):
        return _wrap(_strata.unary(op, _array(x, api_name)._h))
    f.__name__ = f.__qualname__ = api_name
    f.__doc__ = f"Elementwise {api_name} (the C++ op '{op}')."
    return f


def _make_binary(api_name, op):
    def f(x1, x2, /):
        if not isinstance(x1, Array) and not isinstance(x2, Array) and \
                not isinstance(x1, np.ndarray) and not isinstance(x2, np.ndarray):
            raise TypeError(f"{api_name}: at least one argument must be an array")
        return _binary(op, x1, x2)
    f.__name__ = f.__qualname__ = api_name
    f.__doc__ = f"Elementwise {api_name} with broadcasting (the C++ op '{op}')."
    return f


def elementwise_functions():
    """{name: function} for every elementwise op the C++ API has, under its
    C++ name and its Array API name."""
    out = {}
    for op in _strata.unary_ops():
        out[op] = _make_unary(op, op)
    for op in _strata.binary_ops():
        out[op] = _make_binary(op, op)
    # numpy's arc* names under the Array API's a* names (arccos -> acos,
    # arctan2 -> atan2, arccosh -> acosh), whichever of them the C++ API uses.
    unary, binary = set(_strata.unary_ops()), set(_strata.binary_ops())
    for short in ("acos", "asin", "atan", "acosh", "asinh", "atanh", "atan2"):
        long = "arc" + short[1:]
        for name, op in ((short, long), (long, short)):
            if name not in out and op in out:
                make = _make_unary if op in unary else _make_binary
                out[name] = make(name, op)
    return out


# ------------------------------------------------------------------ reductions

def _axes(axis, ndim):
    """None (every axis) or a list of ints."""
    if axis is None:
        return None
    if isinstance(axis, (bool, np.bool_)):
        raise TypeError(f"axis must be an int or a tuple of ints, got {axis!r}")
    if hasattr(axis, "__index__"):
        return [operator.index(axis)]
    if not isinstance(axis, (tuple, list)) or not builtins.all(
            hasattr(a, "__index__") and not isinstance(a, (bool, np.bool_)) for a in axis):
        raise TypeError(f"axis must be None, an int or a tuple of ints, got {axis!r}")
    return [operator.index(a) for a in axis]


def _reduce(name, x, axis, keepdims, ddof=0, split_every=0):
    x = _array(x, name)
    axes = _axes(axis, x.ndim)
    if axes == []:
        # axis=(): nothing is reduced, so x's shape stays (keepdims or not).
        # The C++ API reads [] as "every axis", so the reduction runs over a
        # new length-1 axis instead, which it then drops.
        y = _wrap(_strata.expand_dims(x._h, 0))
        return _wrap(_strata.reduce(name, y._h, [0], False, split_every, ddof))
    return _wrap(_strata.reduce(name, x._h, axes, bool(keepdims), split_every, ddof))


def _cast_first(x, dtype, what):
    x = _array(x, what)
    if dtype is not None and np.dtype(dtype) != x.dtype:
        x = _wrap(_strata.astype(x._h, dtype_name(dtype, what)))
    return x


def _of_dtype(r, dtype):
    """A sum's or prod's result in the `dtype` asked for: the engine
    accumulates small integers in 64 bits, the standard returns `dtype`
    (wrapping, as numpy's sum(dtype=uint8) does)."""
    if dtype is not None and r.dtype != np.dtype(dtype):
        r = _wrap(_strata.astype(r._h, dtype_name(dtype)))
    return r


def sum(x, /, *, axis=None, dtype=None, keepdims=False, split_every=None):
    return _of_dtype(_reduce("sum", _cast_first(x, dtype, "sum"), axis, keepdims,
                             split_every=split_every or 0), dtype)


def prod(x, /, *, axis=None, dtype=None, keepdims=False, split_every=None):
    return _of_dtype(_reduce("prod", _cast_first(x, dtype, "prod"), axis, keepdims,
                             split_every=split_every or 0), dtype)


def mean(x, /, *, axis=None, keepdims=False, split_every=None):
    return _reduce("mean", x, axis, keepdims, split_every=split_every or 0)


def min(x, /, *, axis=None, keepdims=False, split_every=None):
    return _reduce("min", x, axis, keepdims, split_every=split_every or 0)


def max(x, /, *, axis=None, keepdims=False, split_every=None):
    return _reduce("max", x, axis, keepdims, split_every=split_every or 0)


def _moment(name, x, axis, correction, keepdims, split_every):
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
        return _reduce(name, x, axis, keepdims, int(c), split_every or 0)
    x = _array(x, name)
    r = _reduce("var", x, axis, keepdims, 0, split_every or 0)
    axes = range(x.ndim) if axis is None else [a % x.ndim for a in _axes(axis, x.ndim)]
    n = 1
    for a in set(axes):
        n *= x.shape[a]
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = float(np.float64(n) / np.float64(builtins.max(n - c, 0.0)))
    r = r * factor
    return r if name == "var" else _wrap(_strata.unary("sqrt", r._h))


def var(x, /, *, axis=None, correction=0.0, keepdims=False, split_every=None):
    return _moment("var", x, axis, correction, keepdims, split_every)


def std(x, /, *, axis=None, correction=0.0, keepdims=False, split_every=None):
    return _moment("std", x, axis, correction, keepdims, split_every)


def all(x, /, *, axis=None, keepdims=False):
    return _reduce("all", x, axis, keepdims)


def any(x, /, *, axis=None, keepdims=False):
    return _reduce("any", x, axis, keepdims)


def count_nonzero(x, /, *, axis=None, keepdims=False):
    return _reduce("count_nonzero", x, axis, keepdims)


def _one_axis(axis, what):
    if axis is None:
        return None
    if isinstance(axis, (bool, np.bool_)) or not hasattr(axis, "__index__"):
        raise TypeError(f"{what}: axis must be an int or None, got {axis!r}")
    return operator.index(axis)


def argmin(x, /, *, axis=None, keepdims=False):
    x = _array(x, "argmin")
    return _wrap(_strata.argmin(x._h, _one_axis(axis, "argmin"), bool(keepdims)))


def argmax(x, /, *, axis=None, keepdims=False):
    x = _array(x, "argmax")
    return _wrap(_strata.argmax(x._h, _one_axis(axis, "argmax"), bool(keepdims)))


# ----------------------------------------------------------------- elementwise

def where(condition, x1, x2, /):
    c = _array(condition, "where")
    return _wrap(_strata.where(c._h, _as_operand(x1, "where"), _as_operand(x2, "where")))


def _bound(v, dtype):
    """A clip bound as the engine takes it. A Python int beyond an integer
    dtype's range is that range's end (x's elements are all inside it), as
    numpy 2's clip answers, rather than the wrapped value a cast gives."""
    if type(v) is int and dtype.kind in "iu":
        info = np.iinfo(dtype)
        return builtins.min(builtins.max(v, int(info.min)), int(info.max))
    return _as_operand(v, "clip")


def clip(x, /, min=None, max=None):
    x = _array(x, "clip")
    lo = None if min is None else _bound(min, x.dtype)
    hi = None if max is None else _bound(max, x.dtype)
    if isinstance(lo, _strata.Array) != isinstance(hi, _strata.Array):
        # One bound an array, the other a scalar or absent: both as arrays
        # (an absent one as the end of x's range, which bounds nothing).
        from ._creation import full
        if lo is None or hi is None:
            if x.dtype.kind in "iu":
                info = np.iinfo(x.dtype)
                end = int(info.min) if lo is None else int(info.max)
            else:
                end = -float("inf") if lo is None else float("inf")
            lo, hi = (end, hi) if lo is None else (lo, end)
        if not isinstance(lo, _strata.Array):
            lo = full((), lo, dtype=x.dtype)._h
        else:
            hi = full((), hi, dtype=x.dtype)._h
    return _wrap(_strata.clip(x._h, lo, hi))


def astype(x, dtype, /, *, copy=True, device=None):
    """x as `dtype`. copy=False returns x itself when the dtype is x's;
    copy=True always a new Array object (lazy arrays share their data, but
    setitem rebinds the object, which must not be x)."""
    x = _array(x, "astype")
    if device not in (None, "cpu"):
        raise ValueError(f"astype: strata arrays live on the 'cpu' device, not {device!r}")
    name = dtype_name(dtype, "astype")
    if name == x._h.dtype:
        return _wrap(x._h) if copy else x
    return _wrap(_strata.astype(x._h, name))


# ------------------------------------------------------------- linear algebra

def matmul(x1, x2, /):
    a, b = _array(x1, "matmul"), _array(x2, "matmul")
    return _wrap(_strata.matmul(a._h, b._h))


def tensordot(x1, x2, /, *, axes=2):
    a, b = _array(x1, "tensordot"), _array(x2, "tensordot")
    if isinstance(axes, (bool, np.bool_)):
        raise TypeError("tensordot: axes must be an int or a pair of sequences")
    if hasattr(axes, "__index__"):
        n = operator.index(axes)
        if n < 0:
            raise ValueError(f"tensordot: axes must be non-negative, got {n}")
        a_axes = list(range(a.ndim - n, a.ndim))
        b_axes = list(range(n))
    else:
        a_axes, b_axes = axes
        a_axes = [operator.index(i) for i in a_axes]
        b_axes = [operator.index(i) for i in b_axes]
    return _wrap(_strata.tensordot(a._h, b._h, a_axes, b_axes))


def matrix_transpose(x, /):
    return _wrap(_strata.matrix_transpose(_array(x, "matrix_transpose")._h))


# --------------------------------------------------------------- manipulation

def permute_dims(x, /, axes):
    x = _array(x, "permute_dims")
    return _wrap(_strata.permute_dims(x._h, [operator.index(a) for a in axes]))


def expand_dims(x, /, axis=0):
    """x with a new axis of length 1 at `axis` (in [-x.ndim - 1, x.ndim]).
    Another axis raises numpy's AxisError, both the IndexError the standard
    asks for and numpy's ValueError."""
    x = _array(x, "expand_dims")
    a = operator.index(axis)
    if not -x.ndim - 1 <= a <= x.ndim:
        raise np.exceptions.AxisError(f"expand_dims: axis {a} is out of range for an array of "
                                      f"rank {x.ndim} (the new axis goes in "
                                      f"[{-x.ndim - 1}, {x.ndim}])")
    return _wrap(_strata.expand_dims(x._h, a))


def squeeze(x, /, axis):
    x = _array(x, "squeeze")
    axes = _axes(axis, x.ndim)
    if not axes:
        return x
    return _wrap(_strata.squeeze(x._h, axes))


def broadcast_to(x, /, shape):
    x = _array(x, "broadcast_to")
    return _wrap(_strata.broadcast_to(x._h, list(shape_tuple(shape))))


def broadcast_arrays(*arrays):
    """The arrays broadcast against each other, with common chunks (lazy)."""
    xs = [_array(a, "broadcast_arrays") for a in arrays]
    return [_wrap(h) for h in _strata.broadcast_arrays([a._h for a in xs])]


def meshgrid(*arrays, indexing="xy"):
    """Coordinate grids from 1-D arrays (numpy's meshgrid): each output block
    reads one block of one input; nothing is copied until computed."""
    xs = [_array(a, "meshgrid") for a in arrays]
    if not isinstance(indexing, str):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    return [_wrap(h) for h in _strata.meshgrid([a._h for a in xs], indexing)]


def vecdot(x1, x2, /, *, axis=-1):
    """The dot product of x1 and x2 along `axis` (of their broadcast shape),
    conjugating x1 when complex: a fused multiply and a sum."""
    a, b = _array(x1, "vecdot"), _array(x2, "vecdot")
    return _wrap(_strata.vecdot(a._h, b._h, operator.index(axis)))


def _arrays(arrays, what):
    if isinstance(arrays, Array) or not isinstance(arrays, (list, tuple)):
        raise TypeError(f"{what}: expected a list or tuple of arrays, "
                        f"got {type(arrays).__name__}")
    return [_array(a, what) for a in arrays]


def concat(arrays, /, *, axis=0):
    xs = _arrays(arrays, "concat")
    if axis is None:
        # The Array API's axis=None: the arrays flattened, then joined.
        xs = [_wrap(_strata.reshape(a._h, [a.size])) for a in xs]
        axis = 0
    return _wrap(_strata.concat([a._h for a in xs], operator.index(axis)))


concatenate = concat


def stack(arrays, /, *, axis=0):
    xs = _arrays(arrays, "stack")
    return _wrap(_strata.stack([a._h for a in xs], operator.index(axis)))


def flip(x, /, *, axis=None):
    x = _array(x, "flip")
    axes = _axes(axis, x.ndim)
    if axes == []:
        return x
    return _wrap(_strata.flip(x._h, axes or []))


def reshape(x, /, shape, *, copy=None):
    x = _array(x, "reshape")
    if copy is False:
        raise ValueError("reshape: strata arrays are lazy; copy=False cannot be promised")
    return _wrap(_strata.reshape(x._h, list(shape_tuple(shape))))


def rechunk(x, /, chunks):
    return _array(x, "rechunk").rechunk(chunks)


def take(x, indices, /, *, axis=None):
    """numpy's take: the elements at `indices` (ints, a numpy array or a
    strata Array, computed first) along `axis` (x flattened when None)."""
    x = _array(x, "take")
    if axis is None and x.ndim != 1:
        raise ValueError("take: axis is required for arrays of more than one dimension")
    idx = indices if isinstance(indices, Array) else _index_array(indices, "take")
    if idx.dtype.kind not in "iu":
        raise IndexError(f"take: indices must be integers, got {idx.dtype}")
    return _wrap(_strata.take_array(x._h, idx._h, None if axis is None else
                                    operator.index(axis)))


def _index_array(v, what):
    """A list or numpy array of indices (or a mask) as a strata Array."""
    from ._creation import asarray
    a = np.asarray(v)
    if a.dtype.kind not in "iub":
        if a.size == 0:
            a = a.astype(np.int64)
        else:
            raise IndexError(f"{what}: index arrays must hold integers or bools, got {a.dtype}")
    return asarray(a)


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
    x = _array(x, "groupby_reduce")
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


__all__ = [n for n in dir() if not n.startswith("_") and n not in ("builtins", "operator",
                                                                     "np", "Array",
                                                                     "dtype_name",
                                                                     "shape_tuple")]
