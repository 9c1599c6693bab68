"""The Array API's data type functions: astype, finfo, iinfo, result_type,
can_cast, isdtype.

Each is the C++ function of api/dtype_info.h (result_type and can_cast from
the engine's own promotion rule, PromoteTypes), so `result_type(a, b)` is the
dtype `a + b` has; this module only converts dtypes and arrays to names.
"""
import builtins

import numpy as np

from .. import _core
from .._core import _strata, dtype_name
from .array_object import Array, as_array


def astype(x, dtype, /, *, copy=True, device=None):
    """x as `dtype` (x.astype(dtype, copy=copy, device=device))."""
    return as_array(x, "astype").astype(dtype, copy=copy, device=device)


def _dtype_of(x, what):
    """The Strata dtype name of an Array or a dtype."""
    if isinstance(x, Array):
        return x._h.dtype
    if isinstance(x, (bool, int, float, complex)) or x is None:
        raise TypeError(f"{what}: expected a strata.Array or a dtype, got {x!r}")
    return dtype_name(x, what)


class finfo_object:
    """Machine limits of a floating-point dtype (of a complex dtype's real
    components, as the standard says), from the engine's finfo."""

    def __init__(self, info):
        self.bits = info["bits"]
        self.eps = info["eps"]
        self.max = info["max"]
        self.min = info["min"]
        self.smallest_normal = info["smallest_normal"]
        self.dtype = _core.to_dtype(info["dtype"])

    def __repr__(self):
        return (f"finfo(bits={self.bits}, eps={self.eps}, max={self.max}, min={self.min}, "
                f"smallest_normal={self.smallest_normal}, dtype={self.dtype})")


class iinfo_object:
    """Limits of an integer dtype, from the engine's iinfo."""

    def __init__(self, info):
        self.bits = info["bits"]
        self.max = info["max"]
        self.min = info["min"]
        self.dtype = _core.to_dtype(info["dtype"])

    def __repr__(self):
        return f"iinfo(bits={self.bits}, max={self.max}, min={self.min}, dtype={self.dtype})"


def finfo(type, /):
    """finfo(dtype or array): bits, eps, max, min, smallest_normal, dtype.
    TypeError for bool and integer dtypes."""
    return finfo_object(_strata.finfo(_dtype_of(type, "finfo")))


def iinfo(type, /):
    """iinfo(dtype or array): bits, max, min, dtype. TypeError for bool and
    floating-point dtypes."""
    return iinfo_object(_strata.iinfo(_dtype_of(type, "iinfo")))


def result_type(*arrays_and_dtypes):
    """The dtype the standard's promotion gives for arrays and dtypes (and
    Python scalars, which take the dtype of the arrays they meet, as in
    elementwise ops; numpy scalars count as their dtype, as 0-d arrays do:
    xarray 2024.x passes its fill values so). ValueError when no array or
    dtype is given or when two dtypes do not promote (uint64 with a signed
    integer)."""
    operands = []
    for x in arrays_and_dtypes:
        if isinstance(x, Array):
            operands.append(x._h)
        elif isinstance(x, np.generic):
            operands.append(dtype_name(x.dtype, "result_type"))
        elif _core.is_python_scalar(x):
            operands.append(x)
        else:
            operands.append(_dtype_of(x, "result_type"))
    if builtins.all(_core.is_python_scalar(x) for x in operands):
        raise ValueError("result_type: at least one array or dtype is required")
    return _core.to_dtype(_strata.result_type(operands))


def can_cast(from_, to, /):
    """True when `from_` (a dtype or an array) promotes with `to` to `to`: the
    standard's casting without loss of kind or range."""
    return _strata.can_cast(_dtype_of(from_, "can_cast"), _dtype_of(to, "can_cast"))


def isdtype(dtype, kind):
    """isdtype(dtype, kind): kind is a dtype, one of the standard's kind names
    ('bool', 'signed integer', 'unsigned integer', 'integral', 'real
    floating', 'complex floating', 'numeric') or a tuple of them (any
    matches)."""
    name = dtype_name(dtype, "isdtype")
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return _strata.isdtype(name, [(k, True) if isinstance(k, str) else
                                  (dtype_name(k, "isdtype"), False) for k in kinds])
