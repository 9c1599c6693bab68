"""The Array API's data type functions: finfo, iinfo, result_type, can_cast,
isdtype.

result_type and can_cast answer from the engine's own promotion rule
(PromoteTypes in core/kernels/elementwise.h, bound as
`_strata.promote_types`), so `result_type(a, b)` is the dtype `a + b` has.
finfo and iinfo give the IEEE and integer limits of Strata's dtypes as Python
numbers (numpy's dtype objects are Strata's, so numpy supplies the values).
"""
import builtins

import numpy as np

from . import _core
from ._core import _strata, dtype_name
from ._info import _KINDS


def _dtype_of(x, what):
    """The Strata dtype name of an Array or a dtype."""
    from ._array import Array
    if isinstance(x, Array):
        return x._h.dtype
    if isinstance(x, (bool, int, float, complex)) or x is None:
        raise TypeError(f"{what}: expected a strata.Array or a dtype, got {x!r}")
    return dtype_name(x, what)


class finfo_object:
    """Machine limits of a floating-point dtype (of a complex dtype's real
    components, as the standard says)."""

    def __init__(self, dtype):
        f = np.finfo(dtype)
        self.bits = int(f.bits)
        self.eps = float(f.eps)
        self.max = float(f.max)
        self.min = float(f.min)
        self.smallest_normal = float(f.smallest_normal)
        self.dtype = _core.to_dtype(f.dtype.name)

    def __repr__(self):
        return (f"finfo(bits={self.bits}, eps={self.eps}, max={self.max}, min={self.min}, "
                f"smallest_normal={self.smallest_normal}, dtype={self.dtype})")


class iinfo_object:
    """Limits of an integer dtype."""

    def __init__(self, dtype):
        i = np.iinfo(dtype)
        self.bits = int(i.bits)
        self.max = int(i.max)
        self.min = int(i.min)
        self.dtype = _core.to_dtype(np.dtype(dtype).name)

    def __repr__(self):
        return f"iinfo(bits={self.bits}, max={self.max}, min={self.min}, dtype={self.dtype})"


def finfo(type, /):
    """finfo(dtype or array): bits, eps, max, min, smallest_normal, dtype.
    TypeError for bool and integer dtypes."""
    name = _dtype_of(type, "finfo")
    if not isdtype(_core.to_dtype(name), ("real floating", "complex floating")):
        raise TypeError(f"finfo: {name} is not a floating-point dtype")
    return finfo_object(name)


def iinfo(type, /):
    """iinfo(dtype or array): bits, max, min, dtype. TypeError for bool and
    floating-point dtypes."""
    name = _dtype_of(type, "iinfo")
    if not isdtype(_core.to_dtype(name), "integral"):
        raise TypeError(f"iinfo: {name} is not an integer dtype")
    return iinfo_object(name)


def result_type(*arrays_and_dtypes):
    """The dtype the standard's promotion gives for arrays and dtypes (and
    Python scalars, which take the dtype of the arrays they meet, as in
    elementwise ops). ValueError when nothing is given or when two dtypes do
    not promote (uint64 with a signed integer)."""
    names, scalars = [], []
    for x in arrays_and_dtypes:
        if _core.is_python_scalar(x):
            scalars.append(x)
        else:
            names.append(_dtype_of(x, "result_type"))
    if not names:
        raise ValueError("result_type: at least one array or dtype is required")
    out = names[0]
    for n in names[1:]:
        out = _strata.promote_types(out, n)
    for s in scalars:
        # A scalar of a higher kind than the arrays (a float with integer
        # arrays) promotes as an array of the default dtype of its kind.
        kind = (builtins.bool if isinstance(s, builtins.bool) else
                int if isinstance(s, int) else float if isinstance(s, float) else complex)
        if kind is complex and not isdtype(_core.to_dtype(out), "complex floating"):
            out = _strata.promote_types(out, "complex64" if out == "float32" else "complex128")
        elif kind is float and isdtype(_core.to_dtype(out), ("bool", "integral")):
            out = "float64"
        elif kind is int and out == "bool":
            out = "int64"
    return _core.to_dtype(out)


def can_cast(from_, to, /):
    """True when `from_` (a dtype or an array) promotes with `to` to `to`: the
    standard's casting without loss of kind or range."""
    a = _dtype_of(from_, "can_cast")
    b = _dtype_of(to, "can_cast")
    try:
        return _strata.promote_types(a, b) == b
    except ValueError:  # uint64 and a signed integer: no common dtype
        return False


def isdtype(dtype, kind):
    """isdtype(dtype, kind): kind is a dtype, one of the standard's kind names
    ('bool', 'signed integer', 'unsigned integer', 'integral', 'real
    floating', 'complex floating', 'numeric') or a tuple of them (any
    matches)."""
    name = dtype_name(dtype, "isdtype")
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r} (expected one of "
                             f"{', '.join(repr(k) for k in _KINDS)})")
        return name in _KINDS[kind]
    return name == dtype_name(kind, "isdtype")
