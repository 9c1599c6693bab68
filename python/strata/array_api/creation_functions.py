"""Creation functions: the Array API's, with Cubed's `chunks=` and `spec=`."""
import builtins
import numbers
import operator

import numpy as np

from .. import _core
from .._core import (_strata, chunks_arg, dtype_name, numpy_to_share, shape_tuple,
                     spec_arg)
from .array_object import Array, _wrap, as_array


def _check_device(device):
    if device not in (None, "cpu"):
        raise ValueError(f"strata arrays live on the 'cpu' device, not {device!r}")


def zeros(shape, *, dtype=None, device=None, chunks="auto", spec=None):
    _check_device(device)
    s = shape_tuple(shape)
    return _wrap(_strata.zeros(s, chunks_arg(chunks, len(s)), dtype_name(dtype or "float64"),
                               spec_arg(spec)))


def ones(shape, *, dtype=None, device=None, chunks="auto", spec=None):
    _check_device(device)
    s = shape_tuple(shape)
    return _wrap(_strata.ones(s, chunks_arg(chunks, len(s)), dtype_name(dtype or "float64"),
                              spec_arg(spec)))


def empty(shape, *, dtype=None, device=None, chunks="auto", spec=None):
    _check_device(device)
    s = shape_tuple(shape)
    return _wrap(_strata.empty(s, chunks_arg(chunks, len(s)), dtype_name(dtype or "float64"),
                               spec_arg(spec)))


def full(shape, fill_value, *, dtype=None, device=None, chunks="auto", spec=None):
    _check_device(device)
    s = shape_tuple(shape)
    if isinstance(fill_value, Array):
        if fill_value.ndim != 0:
            raise ValueError("full: fill_value must be a scalar")
        fill_value = fill_value.compute().item()
    if isinstance(fill_value, np.generic):
        if dtype is None:
            dtype = fill_value.dtype
        fill_value = fill_value.item()
    if not _core.is_python_scalar(fill_value):
        raise TypeError(f"full: fill_value must be a bool, int, float or complex, "
                        f"got {type(fill_value).__name__}")
    return _wrap(_strata.full(s, fill_value, chunks_arg(chunks, len(s)),
                              None if dtype is None else dtype_name(dtype), spec_arg(spec)))


def _like_fill(fill_value, what):
    """fill_value as a Python scalar (numpy scalars and 0-d Arrays too)."""
    if isinstance(fill_value, Array):
        if fill_value.ndim != 0:
            raise ValueError(f"{what}: fill_value must be a scalar")
        fill_value = fill_value.compute().item()
    if isinstance(fill_value, np.generic):
        fill_value = fill_value.item()
    if not _core.is_python_scalar(fill_value):
        raise TypeError(f"{what}: fill_value must be a bool, int, float or complex, "
                        f"got {type(fill_value).__name__}")
    return fill_value


def _like(what, x, fill_value, dtype, device, chunks, spec):
    """The engine's *_like (api/creation_extras.h): x's shape, dtype unless
    given, and chunks (x's exact grid unless given), as Dask's. With a spec
    other than x's, the same constant array is made under that spec."""
    _check_device(device)
    if not isinstance(x, Array):
        raise TypeError(f"{what}: expected a strata.Array, got {type(x).__name__}")
    name = None if dtype is None else dtype_name(dtype, what)
    if spec is not None:
        return full(x.shape, fill_value, dtype=name or x.dtype, chunks=chunks or x.chunks,
                    spec=spec)
    c = None if chunks is None else chunks_arg(chunks, x.ndim)
    if what == "full_like":
        return _wrap(_strata.full_like(x._h, fill_value, name, c))
    return _wrap(getattr(_strata, what)(x._h, name, c))


def zeros_like(x, /, *, dtype=None, device=None, chunks=None, spec=None):
    """zeros with x's shape, dtype (unless given), chunks and spec, as Dask's."""
    return _like("zeros_like", x, 0, dtype, device, chunks, spec)


def ones_like(x, /, *, dtype=None, device=None, chunks=None, spec=None):
    return _like("ones_like", x, 1, dtype, device, chunks, spec)


def empty_like(x, /, *, dtype=None, device=None, chunks=None, spec=None):
    return _like("empty_like", x, 0, dtype, device, chunks, spec)


def full_like(x, /, fill_value, *, dtype=None, device=None, chunks=None, spec=None):
    return _like("full_like", x, _like_fill(fill_value, "full_like"), dtype, device, chunks,
                 spec)


def tril(x, /, *, k=0):
    """The lower triangle of the last two axes (elements above diagonal k are 0)."""
    if not isinstance(x, Array):
        raise TypeError(f"tril: expected a strata.Array, got {type(x).__name__}")
    return _wrap(_strata.tril(x._h, operator.index(k)))


def triu(x, /, *, k=0):
    """The upper triangle of the last two axes (elements below diagonal k are 0)."""
    if not isinstance(x, Array):
        raise TypeError(f"triu: expected a strata.Array, got {type(x).__name__}")
    return _wrap(_strata.triu(x._h, operator.index(k)))


def _real(v, what):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Real, np.generic)):
        raise TypeError(f"{what} must be a real number, got {type(v).__name__}")
    return v


def arange(start, /, stop=None, step=1, *, dtype=None, device=None, chunks="auto", spec=None):
    _check_device(device)
    if stop is None:
        start, stop = 0, start
    for v, what in ((start, "arange: start"), (stop, "arange: stop"), (step, "arange: step")):
        _real(v, what)
    # The dtype of Python ints is int64 (the Array API's default integer).
    if dtype is None and not all(isinstance(v, numbers.Integral) for v in (start, stop, step)):
        dtype = "float64"
    return _wrap(_strata.arange(float(start), float(stop), float(step), chunks_arg(chunks, 1),
                                None if dtype is None else dtype_name(dtype), spec_arg(spec)))


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True, chunks="auto",
             spec=None):
    _check_device(device)
    if isinstance(start, complex) or isinstance(stop, complex):
        raise TypeError("linspace: complex start/stop are not supported")
    return _wrap(_strata.linspace(float(start), float(stop), int(num), bool(endpoint),
                                  chunks_arg(chunks, 1), dtype_name(dtype or "float64"),
                                  spec_arg(spec)))


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None, chunks="auto", spec=None):
    _check_device(device)
    n = int(n_rows)
    m = n if n_cols is None else int(n_cols)
    # A diagonal outside the matrix (any Python int, even past int64) is
    # the one just outside: all zeros.
    k = builtins.min(builtins.max(operator.index(k), -n), m)
    return _wrap(_strata.eye(n, m, k, chunks_arg(chunks, 2),
                             dtype_name(dtype or "float64"), spec_arg(spec)))




def asarray(obj, /, *, dtype=None, device=None, copy=None, chunks="auto", spec=None):
    """obj as a strata Array. numpy arrays (and anything numpy converts) are
    shared, not copied, when they are C-contiguous, aligned and of a supported
    dtype; copy=True copies, copy=False refuses to."""
    _check_device(device)
    if isinstance(obj, Array):
        if dtype is not None and np.dtype(dtype) != obj.dtype:
            if copy is False:
                raise ValueError("asarray: changing the dtype needs a copy, and copy=False")
            obj = _wrap(_strata.astype(obj._h, dtype_name(dtype)))
        if chunks != "auto" and chunks is not None:
            obj = obj.rechunk(chunks)
        elif copy:
            # Lazy arrays are immutable, but setitem and in-place operators
            # rebind the Python object: a copy is a new object.
            obj = _wrap(obj._h)
        return obj
    if isinstance(obj, (list, tuple)) and any(isinstance(v, Array) for v in obj):
        obj = [np.asarray(v) for v in obj]
    a = numpy_to_share(obj, dtype, copy)
    return _wrap(_strata.asarray(a, chunks_arg(chunks, a.ndim), spec_arg(spec)))


def from_array(x, chunks="auto", spec=None):
    """Cubed's from_array: a numpy (or array-like) as a strata Array, shared
    without a copy where possible."""
    return asarray(x, chunks=chunks, spec=spec)


def from_dlpack(x, /, *, device=None, copy=None, chunks="auto", spec=None):
    """An object with __dlpack__ (a numpy array, a computed result) as an
    Array: numpy's from_dlpack (device and copy are the 2023.12 standard's:
    copy=True copies, copy=False refuses to, None shares when it can), then
    the engine's from_external, which views C-ordered memory in place and
    gathers strided memory (a transposed or sliced view) per block."""
    _check_device(device)
    if isinstance(x, Array):
        return asarray(x, copy=copy, chunks=chunks)
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: {type(x).__name__} has no __dlpack__")
    a = np.from_dlpack(x, copy=copy)
    dtype_name(a.dtype, "from_dlpack")
    return _wrap(_strata.from_external(a, chunks_arg(chunks, a.ndim), spec_arg(spec)))


def meshgrid(*arrays, indexing="xy"):
    """Coordinate grids from 1-D arrays (numpy's meshgrid): each output block
    reads one block of one input; nothing is copied until computed."""
    xs = [as_array(a, "meshgrid") for a in arrays]
    if not isinstance(indexing, str):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    return [_wrap(h) for h in _strata.meshgrid([a._h for a in xs], indexing)]
