"""The extension module and the conversions every part of the package shares.

Everything that decides something about arrays is in C++ (src/strata/api/);
this module only turns Python objects into what `_strata` takes.
"""
import numbers
import operator

import numpy as np

from . import _strata as _engine  # the C++ engine
from ._recipe import RecordingEngine

# The engine with every array recorded as it is made (_recipe.py), so that
# the dask executor's workers can make the same arrays again.
_strata = RecordingEngine(_engine)

PlanError = _strata.PlanError

# At exit, computes still running (on daemon threads) are cancelled and
# waited for, so that no engine thread outlives the interpreter.
import atexit as _atexit  # noqa: E402
_atexit.register(_strata._shutdown)

# The dtypes Strata computes with, as numpy dtype objects (as Cubed does), so
# that `x.dtype == strata.float64` and `np.dtype(x.dtype)` both work.
_DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                "uint64", "float32", "float64", "complex64", "complex128")
DTYPES = {name: np.dtype(name) for name in _DTYPE_NAMES}


def dtype_name(dtype, what="dtype"):
    """The Strata name of `dtype` (a numpy dtype, a type, a name), or TypeError."""
    if dtype is None:
        raise TypeError(f"{what}: a dtype is required")
    try:
        d = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"{what}: {dtype!r} is not a dtype") from e
    if d.name not in DTYPES or (d.byteorder not in ("=", "|") and d != d.newbyteorder("=")):
        raise TypeError(f"{what}: {d} is not a dtype Strata supports "
                        f"(it has {', '.join(_DTYPE_NAMES)})")
    return d.name


def to_dtype(name):
    return DTYPES[name]


def shape_tuple(shape, what="shape"):
    """An int or a sequence of ints as a tuple of ints."""
    if isinstance(shape, (bool, np.bool_)):
        raise TypeError(f"{what}: expected an int or a tuple of ints, got {shape!r}")
    if isinstance(shape, numbers.Integral) or hasattr(shape, "__index__"):
        return (int64_arg(operator.index(shape), what, shape),)
    try:
        items = tuple(shape)
    except TypeError:
        raise TypeError(f"{what}: expected an int or a tuple of ints, got "
                        f"{type(shape).__name__}") from None
    out = []
    for s in items:
        if isinstance(s, (bool, np.bool_)) or not hasattr(s, "__index__"):
            raise TypeError(f"{what}: expected ints, got {s!r} in {shape!r}")
        out.append(int64_arg(operator.index(s), what, shape))
    return tuple(out)


def int64_arg(value, what, whole):
    """`value` when it fits in int64 (every extent and index is one)."""
    if not -2**63 <= value < 2**63:
        raise ValueError(f"{what}: {value} in {whole!r} is out of range (an extent or index "
                         f"is at most 2**63 - 1)")
    return value


def chunks_arg(chunks, ndim):
    """Python's ways of writing chunks, in the forms `_strata` converts.

    A dict {axis: size} (Dask) becomes a tuple with "auto" elsewhere; the
    rules themselves (auto sizing, -1/None, sizes) are in api/chunks.h.
    """
    if chunks is None:
        return "auto"
    if isinstance(chunks, dict):
        out = ["auto"] * ndim
        for axis, c in chunks.items():
            out[axis_index(axis, ndim, "chunks")] = c
        return tuple(out)
    if isinstance(chunks, (bool, np.bool_)):
        raise TypeError(f"chunks: expected 'auto', an int or a tuple, got {chunks!r}")
    if isinstance(chunks, np.integer):
        return int(chunks)
    if isinstance(chunks, list):
        return tuple(chunks)
    return chunks


def axis_index(axis, ndim, what):
    """`axis` (an int, negative from the end) as 0..ndim-1, or a ValueError
    naming `what`."""
    a = operator.index(axis)
    if not -ndim <= a < ndim:
        raise ValueError(f"{what}: axis {axis} is out of range for rank {ndim}")
    return a % ndim


def spec_arg(spec):
    """The `_strata.Spec` of a strata.Spec (or None for the defaults)."""
    if spec is None:
        return None
    cpp = getattr(spec, "_cpp", None)
    if cpp is None:
        raise TypeError(f"spec: expected a strata.Spec, got {type(spec).__name__}")
    return cpp


def is_python_scalar(x):
    return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)


def numpy_to_share(obj, dtype, copy):
    """obj as a numpy array Strata can share: C-contiguous, aligned, native
    byte order, a supported dtype. Copies only when it must (or copy=True)."""
    if isinstance(obj, np.ndarray):
        a = obj
    elif is_python_scalar(obj) or isinstance(obj, (list, tuple)):
        a = np.asarray(obj)
        if a.dtype.kind == "O" or a.dtype.kind == "U":
            raise TypeError(f"asarray: cannot make an array of {type(obj).__name__} "
                            f"holding {a.dtype} values")
    elif hasattr(obj, "__array__") or hasattr(obj, "__array_interface__") or \
            hasattr(obj, "__dlpack__"):
        a = np.asarray(obj) if not hasattr(obj, "__dlpack__") or hasattr(obj, "__array__") \
            else np.from_dlpack(obj)
    else:
        try:
            a = np.asarray(memoryview(obj))
        except TypeError:
            raise TypeError(f"asarray: cannot make an array from {type(obj).__name__}") from None
    if dtype is not None:
        target = DTYPES[dtype_name(dtype, "asarray: dtype")]
        if a.dtype != target:
            if copy is False:
                raise ValueError(f"asarray: {a.dtype} to {target} needs a copy, and copy=False")
            a = a.astype(target)
            copy = None
    try:
        dtype_name(a.dtype, "asarray")
    except TypeError:
        if a.dtype.kind in "biufc" and a.dtype.byteorder not in ("=", "|"):
            a = a.astype(a.dtype.newbyteorder("="))
        else:
            raise
    if copy:
        return np.array(a, order="C", copy=True)
    if not (a.flags.c_contiguous and a.flags.aligned):
        if copy is False:
            raise ValueError("asarray: a non-contiguous array needs a copy, and copy=False")
        a = np.ascontiguousarray(a)
    return a


def axes_arg(axis, ndim):
    """A reduction's `axis` as None (every axis) or a list of ints."""
    if axis is None:
        return None
    if isinstance(axis, (bool, np.bool_)):
        raise TypeError(f"axis must be an int or a tuple of ints, got {axis!r}")
    if hasattr(axis, "__index__"):
        return [operator.index(axis)]
    if not isinstance(axis, (tuple, list)) or not all(
            hasattr(a, "__index__") and not isinstance(a, (bool, np.bool_)) for a in axis):
        raise TypeError(f"axis must be None, an int or a tuple of ints, got {axis!r}")
    return [operator.index(a) for a in axis]


def one_axis_arg(axis, what):
    """An `axis` that names one axis (or None) as an int or None."""
    if axis is None:
        return None
    if isinstance(axis, (bool, np.bool_)) or not hasattr(axis, "__index__"):
        raise TypeError(f"{what}: axis must be an int or None, got {axis!r}")
    return operator.index(axis)


def int_list_arg(v, what):
    """An int or a sequence of ints as a list of ints."""
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
