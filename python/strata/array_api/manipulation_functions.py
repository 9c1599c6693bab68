"""The Array API's manipulation functions, and numpy's (moveaxis, repeat,
tile, pad, transpose, broadcast_shapes) and Dask's (rechunk) extras."""
import operator

import numpy as np

from .. import _regroup
from .._core import _strata, axes_arg, int_list_arg, one_axis_arg, shape_tuple
from .array_object import Array, _wrap, as_array


def transpose(x, /, axes=None):
    """numpy's transpose (x.transpose(axes); xarray calls it on the array's
    namespace): the axes reversed when None; the Array API's name is
    permute_dims."""
    return as_array(x, "transpose").transpose(axes)


def permute_dims(x, /, axes):
    x = as_array(x, "permute_dims")
    return _wrap(_strata.permute_dims(x._h, [operator.index(a) for a in axes]))


def expand_dims(x, /, axis=0):
    """x with a new axis of length 1 at `axis` (in [-x.ndim - 1, x.ndim]).
    Another axis raises numpy's AxisError, both the IndexError the standard
    asks for and numpy's ValueError."""
    x = as_array(x, "expand_dims")
    a = operator.index(axis)
    if not -x.ndim - 1 <= a <= x.ndim:
        raise np.exceptions.AxisError(f"expand_dims: axis {a} is out of range for an array of "
                                      f"rank {x.ndim} (the new axis goes in "
                                      f"[{-x.ndim - 1}, {x.ndim}])")
    return _wrap(_strata.expand_dims(x._h, a))


def squeeze(x, /, axis=None):
    """x without the length-1 axes `axis` (None, numpy's default: every
    length-1 axis); x.squeeze(axis)."""
    return as_array(x, "squeeze").squeeze(axis)


def broadcast_to(x, /, shape):
    x = as_array(x, "broadcast_to")
    return _wrap(_strata.broadcast_to(x._h, list(shape_tuple(shape))))


def broadcast_arrays(*arrays):
    """The arrays broadcast against each other, with common chunks (lazy)."""
    xs = [as_array(a, "broadcast_arrays") for a in arrays]
    return [_wrap(h) for h in _strata.broadcast_arrays([a._h for a in xs])]


def _arrays(arrays, what):
    if isinstance(arrays, Array) or not isinstance(arrays, (list, tuple)):
        raise TypeError(f"{what}: expected a list or tuple of arrays, "
                        f"got {type(arrays).__name__}")
    return [as_array(a, what) for a in arrays]


def concat(arrays, /, *, axis=0):
    """The arrays joined along `axis`. Per-group reductions joined (xarray's
    own group-by) are planned as one grouped reduction (_regroup.py)."""
    xs = _arrays(arrays, "concat")
    if axis is None:
        # The Array API's axis=None: the arrays flattened, then joined.
        xs = [_wrap(_strata.reshape(a._h, [a.size])) for a in xs]
        axis = 0
    handles = [a._h for a in xs]
    grouped = _regroup.concat(handles, operator.index(axis))
    return _wrap(grouped if grouped is not None else _strata.concat(handles, operator.index(axis)))


concatenate = concat


def stack(arrays, /, *, axis=0):
    """The arrays joined along a new axis `axis`; per-group reductions as one
    grouped reduction, as concat."""
    xs = _arrays(arrays, "stack")
    handles = [a._h for a in xs]
    grouped = _regroup.stack(handles, operator.index(axis))
    return _wrap(grouped if grouped is not None else _strata.stack(handles, operator.index(axis)))


def flip(x, /, *, axis=None):
    x = as_array(x, "flip")
    axes = axes_arg(axis, x.ndim)
    if axes == []:
        return x
    return _wrap(_strata.flip(x._h, axes or []))


def reshape(x, /, shape, *, copy=None, order="C"):
    """x with `shape` (x.reshape(shape, copy=copy, order=order); numpy's
    order in "C" only)."""
    return as_array(x, "reshape").reshape(shape, copy=copy, order=order)


def rechunk(x, /, chunks):
    return as_array(x, "rechunk").rechunk(chunks)


def broadcast_shapes(*shapes):
    """The shape the shapes broadcast to (numpy's rules), or ValueError."""
    return tuple(_strata.broadcast_shapes([list(shape_tuple(s)) for s in shapes]))


def moveaxis(x, source, destination, /):
    x = as_array(x, "moveaxis")
    return _wrap(_strata.moveaxis(x._h, int_list_arg(source, "moveaxis: source"),
                                  int_list_arg(destination, "moveaxis: destination")))


def repeat(x, repeats, /, *, axis=None):
    """Each element repeated `repeats` times (an int, one count per element,
    or an integer Array, which is computed first) along axis (x flattened
    when None)."""
    x = as_array(x, "repeat")
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
    return _wrap(_strata.repeat(x._h, r, one_axis_arg(axis, "repeat")))


def roll(x, /, shift, *, axis=None):
    """Elements shifted along axis with wrap-around (x flattened when None)."""
    x = as_array(x, "roll")
    shifts = int_list_arg(shift, "roll: shift")
    axes = [] if axis is None else int_list_arg(axis, "roll: axis")
    if axes and len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if axes and len(shifts) != len(axes):
        raise ValueError(f"roll: {len(shifts)} shifts for {len(axes)} axes")
    if not axes and len(shifts) != 1:
        raise ValueError("roll: without axis, shift must be a single int")
    return _wrap(_strata.roll(x._h, shifts, axes))


def tile(x, repetitions, /):
    x = as_array(x, "tile")
    return _wrap(_strata.tile(x._h, int_list_arg(repetitions, "tile")))


def unstack(x, /, *, axis=0):
    x = as_array(x, "unstack")
    return tuple(_wrap(h) for h in _strata.unstack(x._h, operator.index(axis)))


def pad(x, pad_width, mode="constant", *, constant_values=0):
    """numpy's pad: pad_width an int, a (before, after) pair, or one pair per
    axis; mode constant, edge, reflect, symmetric or wrap. Each output block
    reads only the input blocks its elements come from."""
    x = as_array(x, "pad")
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
