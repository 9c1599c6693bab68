"""NumPy's protocols on strata.Array: `__array_ufunc__` (NEP 13) and
`__array_function__` (NEP 18), so that numpy functions and libraries written
against numpy (xarray above all) build lazy strata arrays.

This module is above the namespace's modules (array_api/), which it maps
numpy's functions to; importing it registers its handlers in
strata.Array's dispatch tables (array_object.NUMPY_FUNCTIONS and
NUMPY_UFUNC_METHODS: NEP 18's `implements` pattern). strata/__init__.py
imports it.

Every entry maps a numpy function to strata operations; nothing here computes
except the functions whose numpy result is a Python value by definition
(`array_equal`, `allclose`, `array_equiv`), which compute as `bool(x)` does.
A numpy function or ufunc without an entry raises NotImplementedError naming
it: never a silent compute, never a numpy fallback that materialises.

An entry names the strata function it calls (looked up in the namespace,
_NAMESPACE below); a few are composed from strata operations where the
composition is exact (fmax and fmin from where and isnan, sliding_window_view
a stack of shifted slices).

The dtypes follow numpy 2 (NEP 50): a ufunc's loop is chosen by
`ufunc.resolve_dtypes`, with only Python scalars "weak" (numpy scalars and
0-d arrays count by their dtype, as n-d arrays do).
"""
import builtins
import math
import operator
import types

import numpy as np

from . import _block_functions
from .array_api import (creation_functions, data_type_functions, elementwise_functions,
                        indexing_functions, linear_algebra_functions, manipulation_functions,
                        searching_functions, set_functions, sorting_functions,
                        statistical_functions, utility_functions)
from .array_api.array_object import NUMPY_FUNCTIONS, NUMPY_UFUNC_METHODS, Array

HANDLED_FUNCTIONS = NUMPY_FUNCTIONS

# The namespace's functions this module maps numpy's to, by name (the names
# strata/__init__.py exports from the same modules).
_NAMESPACE = types.SimpleNamespace()
for _module in (_block_functions, creation_functions, data_type_functions, elementwise_functions,
                indexing_functions, linear_algebra_functions, manipulation_functions,
                searching_functions, set_functions, sorting_functions, statistical_functions,
                utility_functions):
    for _name, _value in vars(_module).items():
        if not _name.startswith("_") and callable(_value):
            setattr(_NAMESPACE, _name, _value)


def _strata():
    return _NAMESPACE


def _Array():
    return Array


def _needs(strata_name, numpy_name):
    """The strata function `strata_name`, or NotImplementedError naming the
    numpy function that needs it."""
    f = getattr(_NAMESPACE, strata_name, None)
    if f is None:
        raise NotImplementedError(
            f"{numpy_name} on a strata.Array needs strata.{strata_name}, which strata "
            "does not have")
    return f


def _has(strata_name):
    return getattr(_NAMESPACE, strata_name, None) is not None


def _unsupported(numpy_name, what):
    raise NotImplementedError(f"{numpy_name} on a strata.Array: {what} is not supported")


def _no_out(numpy_name, out):
    if out is not None and not (isinstance(out, tuple) and builtins.all(o is None for o in out)):
        raise TypeError(f"{numpy_name}: out= is not supported on strata arrays (they are lazy "
                        "and immutable); use the returned array")


def _no_where(numpy_name, where):
    if where is not True and where is not np._NoValue:
        _unsupported(numpy_name, "where=")


def _as_array(x, what="argument"):
    """x as a strata.Array: Arrays as they are, numpy arrays and scalars
    shared (zero-copy where possible), lists through numpy."""
    Array = _Array()
    if isinstance(x, Array):
        return x
    return _strata().asarray(np.asarray(x))


def _normalize_axis(axis, ndim, what):
    a = operator.index(axis)
    if not -ndim <= a < ndim:
        raise np.exceptions.AxisError(f"{what}: axis {axis} is out of bounds for an array of "
                                      f"dimension {ndim}")
    return a % ndim


def _axes_tuple(axis, ndim, what):
    if axis is None:
        return tuple(range(ndim))
    # A sequence of axes may come as a tuple, a list, a range or a numpy
    # array (xarray's vectorized indexing passes the last two to moveaxis).
    if isinstance(axis, (tuple, list, range)) or np.ndim(axis) > 0:
        return tuple(_normalize_axis(a, ndim, what) for a in np.asarray(axis).ravel().tolist())
    return (_normalize_axis(axis, ndim, what),)


def implements(*numpy_functions):
    def register(f):
        for nf in numpy_functions:
            HANDLED_FUNCTIONS[nf] = f
        return f
    return register


# ================================================================ ufuncs

# numpy ufunc name -> strata function name (looked up when called).
_UFUNC_NAMES = {
    "absolute": "abs", "fabs": "abs", "negative": "negative", "positive": "positive",
    "square": "square", "sqrt": "sqrt", "exp": "exp", "expm1": "expm1", "log": "log",
    "log1p": "log1p", "log2": "log2", "log10": "log10", "sin": "sin", "cos": "cos",
    "tan": "tan", "arcsin": "asin", "arccos": "acos", "arctan": "atan", "sinh": "sinh",
    "cosh": "cosh", "tanh": "tanh", "arcsinh": "asinh", "arccosh": "acosh",
    "arctanh": "atanh", "floor": "floor", "ceil": "ceil", "rint": "round", "trunc": "trunc",
    "sign": "sign", "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite",
    "logical_not": "logical_not", "invert": "bitwise_invert", "conjugate": "conj",
    "signbit": "signbit", "reciprocal": "reciprocal", "cbrt": "cbrt",
    "add": "add", "subtract": "subtract", "multiply": "multiply", "divide": "divide",
    "true_divide": "divide", "floor_divide": "floor_divide", "remainder": "remainder",
    "power": "pow", "equal": "equal", "not_equal": "not_equal", "less": "less",
    "less_equal": "less_equal", "greater": "greater", "greater_equal": "greater_equal",
    "logical_and": "logical_and", "logical_or": "logical_or", "logical_xor": "logical_xor",
    "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor",
    "left_shift": "bitwise_left_shift", "right_shift": "bitwise_right_shift",
    "minimum": "minimum", "maximum": "maximum", "arctan2": "atan2", "hypot": "hypot",
    "copysign": "copysign", "logaddexp": "logaddexp", "nextafter": "nextafter",
}


def _fmax(a, b):
    s = _strata()
    return s.where(s.isnan(a), b, s.where(s.isnan(b), a, s.maximum(a, b)))


def _fmin(a, b):
    s = _strata()
    return s.where(s.isnan(a), b, s.where(s.isnan(b), a, s.minimum(a, b)))


# ufuncs composed of strata ops where the composition is numpy's definition.
_UFUNC_COMPOSED = {
    "fmax": _fmax,
    "fmin": _fmin,
    "deg2rad": lambda x: x * (math.pi / 180.0),
    "rad2deg": lambda x: x * (180.0 / math.pi),
    "radians": lambda x: x * (math.pi / 180.0),
    "degrees": lambda x: x * (180.0 / math.pi),
    "float_power": lambda a, b: _strata().pow(a, b),   # operands cast to float64 first
    "exp2": lambda x: _strata().pow(2.0, x),
}

# ufunc.reduce -> the strata reduction.
_UFUNC_REDUCTIONS = {
    "add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
    "logical_and": "all", "logical_or": "any", "fmax": "nanmax", "fmin": "nanmin",
}
_UFUNC_ACCUMULATIONS = {"add": "cumulative_sum", "multiply": "cumulative_prod"}


def _is_scalar(x):
    return isinstance(x, (bool, int, float, complex, np.generic)) or \
        (isinstance(x, np.ndarray) and x.ndim == 0)


def _loop_dtypes(ufunc, inputs):
    """The dtypes of numpy's loop for these inputs (ins then outs), by NEP 50
    (numpy 2): arrays of any rank and numpy scalars count by their dtype,
    Python int, float and complex are "weak" (they take the others' dtype of
    their kind; ufunc.resolve_dtypes takes their types for that)."""
    Array = _Array()
    descr = []
    for x in inputs:
        if isinstance(x, (Array, np.ndarray, np.generic)):
            descr.append(np.dtype(x.dtype))
        elif isinstance(x, bool):
            descr.append(np.dtype(bool))
        elif isinstance(x, (int, float, complex)):
            descr.append(type(x))
        else:
            raise TypeError(f"numpy.{ufunc.__name__}: unsupported operand type "
                            f"{type(x).__name__}")
    return ufunc.resolve_dtypes(tuple(descr) + (None,) * ufunc.nout)


_COMPARISONS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")


def _operand(x, dtype, ufunc):
    """An input cast to its loop dtype: Arrays lazily (astype), numpy arrays
    and scalars as strata arrays or Python scalars of that dtype. A Python
    int that `dtype` cannot hold raises numpy 2's OverflowError, except in
    comparisons, where it goes to strata's operator as it is (which answers
    them exactly, as numpy 2 does)."""
    Array = _Array()
    s = _strata()
    if isinstance(x, Array):
        return x if x.dtype == dtype else s.astype(x, dtype)
    if isinstance(x, np.ndarray) and x.ndim > 0:
        return s.asarray(x if x.dtype == dtype else x.astype(dtype))
    if type(x) is int and np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        if info.min <= x <= info.max or ufunc.__name__ in _COMPARISONS:
            return x
        raise OverflowError(f"Python integer {x} out of bounds for {np.dtype(dtype)}")
    return np.asarray(x).astype(dtype).item()


def _call_ufunc(ufunc, inputs, kwargs):
    name = f"numpy.{ufunc.__name__}"
    _no_out(name, kwargs.pop("out", None))
    _no_where(name, kwargs.pop("where", True))
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("casting", None)
    kwargs.pop("subok", None)
    if kwargs.pop("order", "K") not in ("K", "C", "A"):
        _unsupported(name, "order='F'")
    if kwargs.pop("signature", None) is not None:
        _unsupported(name, "signature=")
    axis = kwargs.pop("axis", -1) if ufunc.__name__ == "vecdot" else None
    if kwargs:
        raise TypeError(f"{name}: unexpected arguments {sorted(kwargs)}")
    s = _strata()
    if ufunc.__name__ == "matmul":
        a, b = (_as_array(x) for x in inputs)
        return s.matmul(a, b)
    if ufunc.__name__ == "vecdot":  # numpy 2's gufunc, the Array API's vecdot
        a, b = (_as_array(x) for x in inputs)
        return s.vecdot(a, b, axis=axis)
    if ufunc.__name__ == "divmod":
        return (_call_ufunc(np.floor_divide, inputs, {"dtype": dtype}),
                _call_ufunc(np.remainder, inputs, {"dtype": dtype}))
    if ufunc.signature is not None:
        _unsupported(name, f"the generalized ufunc {ufunc.__name__}")
    if ufunc.nout != 1:
        _unsupported(name, f"the {ufunc.nout}-output ufunc {ufunc.__name__}")
    loop = _loop_dtypes(ufunc, inputs)
    if dtype is not None:
        loop = tuple([np.dtype(dtype)] * ufunc.nin) + tuple(loop[ufunc.nin:])
        if ufunc.__name__ not in ("equal", "not_equal", "less", "less_equal", "greater",
                                  "greater_equal", "isnan", "isinf", "isfinite", "signbit",
                                  "logical_and", "logical_or", "logical_xor", "logical_not"):
            loop = loop[:ufunc.nin] + (np.dtype(dtype),)
    if ufunc.__name__ == "float_power":
        loop = tuple(np.dtype("complex128") if np.dtype(d).kind == "c" else
                     np.dtype("float64") for d in loop)
    operands = [_operand(x, d, ufunc) for x, d in zip(inputs, loop[:ufunc.nin])]
    Array = _Array()
    if not builtins.any(isinstance(o, Array) for o in operands):
        # Every operand a scalar (a 0-d input computed as a scalar would be):
        # one of them as a 0-d strata array, so that the result is lazy.
        operands[0] = s.asarray(np.asarray(operands[0], dtype=loop[0]))
    if ufunc.__name__ in _UFUNC_COMPOSED and not _has(ufunc.__name__):
        result = _UFUNC_COMPOSED[ufunc.__name__](*operands)
    elif ufunc.__name__ in _UFUNC_NAMES:
        result = _needs(_UFUNC_NAMES[ufunc.__name__], name)(*operands)
    else:
        raise NotImplementedError(f"{name} (a ufunc) is not implemented for strata.Array")
    out_dtype = np.dtype(loop[-1])
    if result.dtype != out_dtype:
        result = s.astype(result, out_dtype)
    return result


def _reduce_ufunc(ufunc, inputs, kwargs):
    name = f"numpy.{ufunc.__name__}.reduce"
    if ufunc.__name__ not in _UFUNC_REDUCTIONS:
        raise NotImplementedError(f"{name} is not implemented for strata.Array")
    (x,) = inputs
    _no_out(name, kwargs.pop("out", None))
    _no_where(name, kwargs.pop("where", True))
    if kwargs.pop("initial", np._NoValue) is not np._NoValue:
        _unsupported(name, "initial=")
    axis = kwargs.pop("axis", 0)
    dtype = kwargs.pop("dtype", None)
    keepdims = kwargs.pop("keepdims", False)
    if kwargs:
        raise TypeError(f"{name}: unexpected arguments {sorted(kwargs)}")
    x = _as_array(x)
    if dtype is not None:
        x = _strata().astype(x, dtype)
    f = _needs(_UFUNC_REDUCTIONS[ufunc.__name__], name)
    return f(x, axis=None if axis is None else _axes_tuple(axis, x.ndim, name),
             keepdims=keepdims)


def _accumulate_ufunc(ufunc, inputs, kwargs):
    name = f"numpy.{ufunc.__name__}.accumulate"
    if ufunc.__name__ not in _UFUNC_ACCUMULATIONS:
        raise NotImplementedError(f"{name} is not implemented for strata.Array")
    (x,) = inputs
    _no_out(name, kwargs.pop("out", None))
    axis = kwargs.pop("axis", 0)
    dtype = kwargs.pop("dtype", None)
    if kwargs:
        raise TypeError(f"{name}: unexpected arguments {sorted(kwargs)}")
    f = _needs(_UFUNC_ACCUMULATIONS[ufunc.__name__], name)
    return f(_as_array(x), axis=axis, dtype=dtype)


# ================================================================ functions

# ---------------------------------------------------------- reductions

def _reduction(strata_name, numpy_name, a, axis, dtype, out, keepdims, where=np._NoValue,
               initial=np._NoValue, **kwargs):
    _no_out(numpy_name, out)
    _no_where(numpy_name, where)
    if initial is not np._NoValue:
        _unsupported(numpy_name, "initial=")
    x = _as_array(a)
    if dtype is not None and strata_name not in ("sum", "prod", "nansum", "nanprod"):
        x = _strata().astype(x, dtype)
    f = _needs(strata_name, numpy_name)
    ax = None if axis is None else _axes_tuple(axis, x.ndim, numpy_name)
    if dtype is not None and strata_name in ("sum", "prod"):
        return f(x, axis=ax, dtype=dtype, keepdims=bool(keepdims), **kwargs)
    r = f(x, axis=ax, keepdims=bool(keepdims), **kwargs)
    if dtype is not None and r.dtype != np.dtype(dtype):
        r = _strata().astype(r, dtype)
    return r


@implements(np.sum)
def _sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue,
         where=np._NoValue):
    return _reduction("sum", "numpy.sum", a, axis, dtype, out, keepdims, where, initial)


@implements(np.prod)
def _prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue,
          where=np._NoValue):
    return _reduction("prod", "numpy.prod", a, axis, dtype, out, keepdims, where, initial)


@implements(np.mean)
def _mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=np._NoValue):
    x = _as_array(a)
    if dtype is None and x.dtype.kind in "biu":
        dtype = np.float64
    return _reduction("mean", "numpy.mean", x, axis, dtype, out, keepdims, where)


@implements(np.amax, np.max)
def _max(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=np._NoValue):
    return _reduction("max", "numpy.max", a, axis, None, out, keepdims, where, initial)


@implements(np.amin, np.min)
def _min(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=np._NoValue):
    return _reduction("min", "numpy.min", a, axis, None, out, keepdims, where, initial)


def _moment(name, a, axis, dtype, out, ddof, keepdims, where):
    numpy_name = f"numpy.{name}"
    _no_out(numpy_name, out)
    _no_where(numpy_name, where)
    x = _as_array(a)
    if dtype is not None:
        x = _strata().astype(x, dtype)
    elif x.dtype.kind in "biu":
        x = _strata().astype(x, np.float64)
    f = _needs(name, numpy_name)
    ax = None if axis is None else _axes_tuple(axis, x.ndim, numpy_name)
    return f(x, axis=ax, correction=ddof, keepdims=bool(keepdims))


@implements(np.std)
def _std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=np._NoValue):
    return _moment("std", a, axis, dtype, out, ddof, keepdims, where)


@implements(np.var)
def _var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=np._NoValue):
    return _moment("var", a, axis, dtype, out, ddof, keepdims, where)


@implements(np.all)
def _all(a, axis=None, out=None, keepdims=False, *, where=np._NoValue):
    return _reduction("all", "numpy.all", a, axis, None, out, keepdims, where)


@implements(np.any)
def _any(a, axis=None, out=None, keepdims=False, *, where=np._NoValue):
    return _reduction("any", "numpy.any", a, axis, None, out, keepdims, where)


@implements(np.count_nonzero)
def _count_nonzero(a, axis=None, *, keepdims=False):
    x = _as_array(a)
    ax = None if axis is None else _axes_tuple(axis, x.ndim, "numpy.count_nonzero")
    return _strata().count_nonzero(x, axis=ax, keepdims=bool(keepdims))


def _arg(name, a, axis, out, keepdims):
    numpy_name = f"numpy.{name}"
    _no_out(numpy_name, out)
    x = _as_array(a)
    if axis is not None:
        axis = _normalize_axis(axis, x.ndim, numpy_name)
    kd = False if keepdims is np._NoValue else bool(keepdims)
    return _needs(name, numpy_name)(x, axis=axis, keepdims=kd)


@implements(np.argmax)
def _argmax(a, axis=None, out=None, *, keepdims=np._NoValue):
    return _arg("argmax", a, axis, out, keepdims)


@implements(np.argmin)
def _argmin(a, axis=None, out=None, *, keepdims=np._NoValue):
    return _arg("argmin", a, axis, out, keepdims)


@implements(np.nanargmax)
def _nanargmax(a, axis=None, out=None, *, keepdims=np._NoValue):
    x = _as_array(a)
    if x.dtype.kind not in "fc":
        return _arg("argmax", x, axis, out, keepdims)
    return _arg("nanargmax", x, axis, out, keepdims)


@implements(np.nanargmin)
def _nanargmin(a, axis=None, out=None, *, keepdims=np._NoValue):
    x = _as_array(a)
    if x.dtype.kind not in "fc":
        return _arg("argmin", x, axis, out, keepdims)
    return _arg("nanargmin", x, axis, out, keepdims)


# NaN-aware reductions: strata's own when bound (one pass, issue 16);
# otherwise numpy's definitions over existing ops (exact: numpy's nansum is
# a sum with NaN replaced by 0, nanmean that sum over the non-NaN count,
# nanvar the mean squared deviation from nanmean over count - ddof).

def _not_nan_count(x, axis, keepdims):
    s = _strata()
    return s.sum(s.astype(s.logical_not(s.isnan(x)), np.int64), axis=axis, keepdims=keepdims)


def _nan_setup(numpy_name, a, axis, out, where):
    _no_out(numpy_name, out)
    _no_where(numpy_name, where)
    x = _as_array(a)
    ax = None if axis is None else _axes_tuple(axis, x.ndim, numpy_name)
    return x, ax


@implements(np.nansum)
def _nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue,
            where=np._NoValue):
    if initial is not np._NoValue:
        _unsupported("numpy.nansum", "initial=")
    x, ax = _nan_setup("numpy.nansum", a, axis, out, where)
    s = _strata()
    if x.dtype.kind not in "fc":
        return _reduction("sum", "numpy.nansum", x, axis, dtype, None, keepdims)
    if _has("nansum"):
        r = s.nansum(x, axis=ax, keepdims=bool(keepdims))
    else:
        r = s.sum(s.where(s.isnan(x), 0.0, x), axis=ax, keepdims=bool(keepdims))
    return r if dtype is None or r.dtype == np.dtype(dtype) else s.astype(r, dtype)


@implements(np.nanprod)
def _nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue,
             where=np._NoValue):
    if initial is not np._NoValue:
        _unsupported("numpy.nanprod", "initial=")
    x, ax = _nan_setup("numpy.nanprod", a, axis, out, where)
    s = _strata()
    if x.dtype.kind not in "fc":
        return _reduction("prod", "numpy.nanprod", x, axis, dtype, None, keepdims)
    if _has("nanprod"):
        r = s.nanprod(x, axis=ax, keepdims=bool(keepdims))
    else:
        r = s.prod(s.where(s.isnan(x), 1.0, x), axis=ax, keepdims=bool(keepdims))
    return r if dtype is None or r.dtype == np.dtype(dtype) else s.astype(r, dtype)


@implements(np.nanmean)
def _nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=np._NoValue):
    x, ax = _nan_setup("numpy.nanmean", a, axis, out, where)
    s = _strata()
    if dtype is not None:
        x = s.astype(x, dtype)
    if x.dtype.kind not in "fc":
        return _mean(x, axis=axis, keepdims=keepdims)
    if _has("nanmean"):
        return s.nanmean(x, axis=ax, keepdims=bool(keepdims))
    total = s.sum(s.where(s.isnan(x), 0.0, x), axis=ax, keepdims=bool(keepdims))
    count = s.astype(_not_nan_count(x, ax, bool(keepdims)), total.dtype)
    return total / count


def _nanminmax(name, a, axis, out, keepdims, initial, where):
    numpy_name = f"numpy.{name}"
    if initial is not np._NoValue:
        _unsupported(numpy_name, "initial=")
    x, ax = _nan_setup(numpy_name, a, axis, out, where)
    s = _strata()
    plain = name[3:]
    if x.dtype.kind not in "fc":
        return getattr(s, plain)(x, axis=ax, keepdims=bool(keepdims))
    if _has(name):
        return getattr(s, name)(x, axis=ax, keepdims=bool(keepdims))
    if x.dtype.kind == "c":
        _needs(name, numpy_name)
    fill = -math.inf if plain == "max" else math.inf
    r = getattr(s, plain)(s.where(s.isnan(x), fill, x), axis=ax, keepdims=bool(keepdims))
    # All-NaN slices: NaN, as numpy's (which also warns).
    return s.where(_not_nan_count(x, ax, bool(keepdims)) == 0, math.nan, r)


@implements(np.nanmax)
def _nanmax(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=np._NoValue):
    return _nanminmax("nanmax", a, axis, out, keepdims, initial, where)


@implements(np.nanmin)
def _nanmin(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=np._NoValue):
    return _nanminmax("nanmin", a, axis, out, keepdims, initial, where)


def _nanmoment(name, a, axis, dtype, out, ddof, keepdims, where):
    numpy_name = f"numpy.{name}"
    x, ax = _nan_setup(numpy_name, a, axis, out, where)
    s = _strata()
    if dtype is not None:
        x = s.astype(x, dtype)
    if x.dtype.kind not in "fc":
        return _moment(name[3:], x, axis, None, None, ddof, keepdims, np._NoValue)
    if _has(name):
        return getattr(s, name)(x, axis=ax, ddof=ddof, keepdims=bool(keepdims))
    if x.dtype.kind == "c":
        _needs(name, numpy_name)
    nan = s.isnan(x)
    count = s.astype(_not_nan_count(x, ax, True), x.dtype)
    mean = s.sum(s.where(nan, 0.0, x), axis=ax, keepdims=True) / count
    d = s.where(nan, 0.0, x - mean)
    dof = count - ddof
    var = s.sum(d * d, axis=ax, keepdims=True) / dof
    var = s.where(dof <= 0, math.nan, var)
    if not keepdims:
        var = s.squeeze(var, axis=ax if ax is not None else tuple(range(x.ndim)))
    return var if name == "nanvar" else s.sqrt(var)


@implements(np.nanvar)
def _nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=np._NoValue):
    return _nanmoment("nanvar", a, axis, dtype, out, ddof, keepdims, where)


@implements(np.nanstd)
def _nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=np._NoValue):
    return _nanmoment("nanstd", a, axis, dtype, out, ddof, keepdims, where)


def _quantile_axes(x, axis, numpy_name):
    # xarray's quantile passes its axes as a numpy array (np.arange(-1, -n-1, -1)).
    return None if axis is None else _axes_tuple(axis, x.ndim, numpy_name)


@implements(np.median)
def _median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    _no_out("numpy.median", out)
    x = _as_array(a)
    return _needs("median", "numpy.median")(x, axis=_quantile_axes(x, axis, "numpy.median"),
                                            keepdims=keepdims)


@implements(np.nanmedian)
def _nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=np._NoValue):
    _no_out("numpy.nanmedian", out)
    kd = False if keepdims is np._NoValue else keepdims
    x = _as_array(a)
    return _needs("nanmedian", "numpy.nanmedian")(
        x, axis=_quantile_axes(x, axis, "numpy.nanmedian"), keepdims=kd)


def _quantile(name, a, q, axis, out, method, keepdims, interpolation):
    numpy_name = f"numpy.{name}"
    _no_out(numpy_name, out)
    if interpolation is not None:
        method = interpolation
    kd = False if keepdims is np._NoValue else keepdims
    x = _as_array(a)
    return _needs(name, numpy_name)(x, q, axis=_quantile_axes(x, axis, numpy_name),
                                    method=method, keepdims=kd)


@implements(np.quantile)
def _np_quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                 keepdims=False, *, interpolation=None):
    return _quantile("quantile", a, q, axis, out, method, keepdims, interpolation)


@implements(np.nanquantile)
def _np_nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                    keepdims=np._NoValue, *, interpolation=None):
    return _quantile("nanquantile", a, q, axis, out, method, keepdims, interpolation)


@implements(np.percentile)
def _np_percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                   keepdims=False, *, interpolation=None):
    return _np_quantile(a, np.asarray(q) / 100.0, axis, out, overwrite_input, method,
                        keepdims, interpolation=interpolation)


@implements(np.nanpercentile)
def _np_nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                      keepdims=np._NoValue, *, interpolation=None):
    return _np_nanquantile(a, np.asarray(q) / 100.0, axis, out, overwrite_input, method,
                           keepdims, interpolation=interpolation)


# ---------------------------------------------------------- scans

def _scan_axis(x, axis, numpy_name):
    if axis is None:
        if x.ndim > 1:
            x = _strata().reshape(x, (x.size,))
        return x, 0
    return x, _normalize_axis(axis, x.ndim, numpy_name)


@implements(np.cumsum)
def _cumsum(a, axis=None, dtype=None, out=None):
    _no_out("numpy.cumsum", out)
    x, ax = _scan_axis(_as_array(a), axis, "numpy.cumsum")
    return _needs("cumulative_sum", "numpy.cumsum")(x, axis=ax, dtype=dtype)


@implements(np.cumprod)
def _cumprod(a, axis=None, dtype=None, out=None):
    _no_out("numpy.cumprod", out)
    x, ax = _scan_axis(_as_array(a), axis, "numpy.cumprod")
    return _needs("cumulative_prod", "numpy.cumprod")(x, axis=ax, dtype=dtype)


def _nanscan(name, plain, neutral, a, axis, dtype, out):
    numpy_name = f"numpy.{name}"
    _no_out(numpy_name, out)
    x, ax = _scan_axis(_as_array(a), axis, numpy_name)
    s = _strata()
    if dtype is not None:
        x = s.astype(x, dtype)
    if x.dtype.kind not in "fc":
        return _needs(plain, numpy_name)(x, axis=ax)
    if _has(name):
        return getattr(s, name)(x, axis=ax)
    return _needs(plain, numpy_name)(s.where(s.isnan(x), neutral, x), axis=ax)


@implements(np.nancumsum)
def _nancumsum(a, axis=None, dtype=None, out=None):
    return _nanscan("nancumsum", "cumulative_sum", 0.0, a, axis, dtype, out)


@implements(np.nancumprod)
def _nancumprod(a, axis=None, dtype=None, out=None):
    return _nanscan("nancumprod", "cumulative_prod", 1.0, a, axis, dtype, out)


@implements(np.diff)
def _diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    x = _as_array(a)
    s = _strata()
    ax = _normalize_axis(axis, x.ndim, "numpy.diff")
    if n < 0:
        raise ValueError(f"numpy.diff: order must be non-negative but got {n}")
    parts = []
    for extra in (prepend, append):
        if extra is np._NoValue:
            parts.append(None)
            continue
        e = _as_array(extra) if not _is_scalar(extra) else None
        if e is None:
            shape = list(x.shape)
            shape[ax] = 1
            e = s.full(tuple(shape), np.asarray(extra).item(), dtype=x.dtype)
        elif e.ndim == 0:
            shape = list(x.shape)
            shape[ax] = 1
            e = s.broadcast_to(e, tuple(shape))
        parts.append(e)
    joined = [p for p in (parts[0], x, parts[1]) if p is not None]
    x = s.concat(joined, axis=ax) if len(joined) > 1 else x
    if _has("diff"):
        return s.diff(x, axis=ax, n=n)
    for _ in range(n):
        hi = [slice(None)] * x.ndim
        lo = [slice(None)] * x.ndim
        hi[ax] = slice(1, None)
        lo[ax] = slice(None, -1)
        x = x[tuple(hi)] != x[tuple(lo)] if x.dtype == np.bool_ else \
            x[tuple(hi)] - x[tuple(lo)]
    return x


# ---------------------------------------------------------- elementwise functions

@implements(np.where)
def _where(condition, x=np._NoValue, y=np._NoValue):
    if x is np._NoValue and y is np._NoValue:
        return _nonzero(condition)
    if x is np._NoValue or y is np._NoValue:
        raise ValueError("numpy.where: either both or neither of x and y should be given")
    s = _strata()
    c = _as_array(condition)
    if c.dtype != np.bool_:
        c = s.astype(c, np.bool_)
    ops = []
    # numpy's result dtype (Python scalars weak); both branches cast to it.
    target = np.result_type(*[_dtype_or_value(v) for v in (x, y)])
    for v in (x, y):
        if isinstance(v, _Array()):
            ops.append(v if v.dtype == target else s.astype(v, target))
        elif isinstance(v, np.ndarray) and v.ndim > 0:
            ops.append(s.asarray(v.astype(target, copy=False)))
        else:
            ops.append(s.asarray(np.asarray(v, dtype=target)))
    return s.where(c, ops[0], ops[1])


@implements(np.clip)
def _clip(a, a_min, a_max, out=None, **kwargs):
    _no_out("numpy.clip", out)
    if kwargs:
        _unsupported("numpy.clip", f"arguments {sorted(kwargs)}")
    s = _strata()
    x = _as_array(a)
    lo = a_min if a_min is None or _is_scalar(a_min) else _as_array(a_min)
    hi = a_max if a_max is None or _is_scalar(a_max) else _as_array(a_max)
    if isinstance(lo, np.generic) or isinstance(lo, np.ndarray):
        lo = np.asarray(lo).item()
    if isinstance(hi, np.generic) or isinstance(hi, np.ndarray):
        hi = np.asarray(hi).item()
    return s.clip(x, lo, hi)


@implements(np.around, np.round)
def _around(a, decimals=0, out=None):
    _no_out("numpy.around", out)
    s = _strata()
    x = _as_array(a)
    if decimals == 0:
        return s.round(x)
    # numpy's definition: multiply by 10**decimals, rint, divide.
    factor = 10.0 ** decimals
    if decimals > 0:
        return s.round(x * factor) / factor
    return s.round(x / (10.0 ** -decimals)) * (10.0 ** -decimals)


@implements(np.isclose)
def _isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    s = _strata()
    x = _as_array(a)
    y = _as_array(b)
    dt = np.result_type(x.dtype, y.dtype, np.float64 if x.dtype.kind in "biu" else x.dtype)
    x = x if x.dtype == dt else s.astype(x, dt)
    y = y if y.dtype == dt else s.astype(y, dt)
    finite = s.logical_and(s.isfinite(x), s.isfinite(y))
    close = s.less_equal(s.abs(x - y), atol + rtol * s.abs(y))
    r = s.where(finite, close, s.equal(x, y))
    if equal_nan:
        r = s.logical_or(r, s.logical_and(s.isnan(x), s.isnan(y)))
    return r


@implements(np.allclose)
def _allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Computes (numpy's result is a Python bool)."""
    return bool(_strata().all(_isclose(a, b, rtol, atol, equal_nan)))


@implements(np.array_equal)
def _array_equal(a1, a2, equal_nan=False):
    """Computes (numpy's result is a Python bool)."""
    x, y = _as_array(a1), _as_array(a2)
    if x.shape != y.shape:
        return False
    s = _strata()
    eq = s.equal(x, y)
    if equal_nan and x.dtype.kind in "fc":
        eq = s.logical_or(eq, s.logical_and(s.isnan(x), s.isnan(y)))
    return bool(s.all(eq))


@implements(np.array_equiv)
def _array_equiv(a1, a2):
    """Computes (numpy's result is a Python bool)."""
    x, y = _as_array(a1), _as_array(a2)
    try:
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        return False
    return bool(_strata().all(_strata().equal(x, y)))


@implements(np.nan_to_num)
def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    s = _strata()
    a = _as_array(x)
    if a.dtype.kind not in "fc":
        return a
    if a.dtype.kind == "c":
        _unsupported("numpy.nan_to_num", "a complex array")
    info = np.finfo(a.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    r = s.where(s.isnan(a), float(nan), a)
    r = s.where(s.logical_and(s.isinf(r), r > 0), float(posinf), r)
    return s.where(s.logical_and(s.isinf(r), r < 0), float(neginf), r)


@implements(np.real)
def _real(val):
    return _as_array(val).real


@implements(np.imag)
def _imag(val):
    return _as_array(val).imag


@implements(np.iscomplexobj)
def _iscomplexobj(x):
    return np.dtype(x.dtype).kind == "c"


@implements(np.isrealobj)
def _isrealobj(x):
    return np.dtype(x.dtype).kind != "c"


# ---------------------------------------------------------- dtypes and shapes

def _dtype_or_value(x):
    """What numpy's type functions take for x: an Array's dtype (numpy 2
    counts arrays of every rank by dtype), anything else as it is."""
    if isinstance(x, _Array()):
        return x.dtype
    return x


@implements(np.result_type)
def _result_type(*arrays_and_dtypes):
    return np.result_type(*[_dtype_or_value(x) for x in arrays_and_dtypes])


@implements(np.can_cast)
def _can_cast(from_, to, casting="safe"):
    return np.can_cast(_dtype_or_value(from_), to, casting)


@implements(np.min_scalar_type)
def _min_scalar_type(a):
    return np.dtype(a.dtype)


@implements(np.ndim)
def _ndim(a):
    return a.ndim


@implements(np.shape)
def _shape(a):
    return a.shape


@implements(np.size)
def _size(a, axis=None):
    return a.size if axis is None else a.shape[axis]


@implements(np.copy)
def _copy(a, order="K", subok=False):
    return _strata().asarray(a, copy=True)


@implements(np.astype) if hasattr(np, "astype") else (lambda f: f)
def _astype(x, dtype, /, *, copy=True):
    return _strata().astype(_as_array(x), dtype, copy=copy)


def _like(name, a, dtype, shape, fill=None):
    s = _strata()
    x = _as_array(a)
    dtype = x.dtype if dtype is None else np.dtype(dtype)
    if shape is None:
        shape = x.shape
        chunks = x.chunks
    else:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        chunks = "auto"
    spec = x.spec
    if name == "full":
        if isinstance(fill, (np.generic, np.ndarray)):
            fill = np.asarray(fill).item()
        return s.full(shape, fill, dtype=dtype, chunks=chunks, spec=spec)
    return getattr(s, name)(shape, dtype=dtype, chunks=chunks, spec=spec)


@implements(np.zeros_like)
def _zeros_like(a, dtype=None, order="K", subok=True, shape=None):
    return _like("zeros", a, dtype, shape)


@implements(np.ones_like)
def _ones_like(a, dtype=None, order="K", subok=True, shape=None):
    return _like("ones", a, dtype, shape)


@implements(np.empty_like)
def _empty_like(prototype, dtype=None, order="K", subok=True, shape=None):
    return _like("empty", prototype, dtype, shape)


@implements(np.full_like)
def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None):
    return _like("full", a, dtype, shape, fill_value)


# ---------------------------------------------------------- manipulation

@implements(np.reshape)
def _reshape(a, newshape, order="C"):
    if order != "C":
        _unsupported("numpy.reshape", f"order={order!r}")
    x = _as_array(a)
    shape = (newshape,) if isinstance(newshape, (int, np.integer)) else tuple(newshape)
    return _strata().reshape(x, shape)


@implements(np.ravel)
def _ravel(a, order="C"):
    if order not in ("C", "K", "A"):
        _unsupported("numpy.ravel", f"order={order!r}")
    x = _as_array(a)
    return x if x.ndim == 1 else _strata().reshape(x, (x.size,))


@implements(np.transpose)
def _transpose(a, axes=None):
    """numpy's transpose (strata.transpose: xarray calls it on the array's
    namespace); the Array API's name is permute_dims."""
    x = _as_array(a)
    if axes is None:
        axes = tuple(range(x.ndim))[::-1]
    axes = tuple(_normalize_axis(i, x.ndim, "numpy.transpose") for i in axes)
    if axes == tuple(range(x.ndim)):
        return x
    return _strata().permute_dims(x, axes)


@implements(np.moveaxis)
def _moveaxis(a, source, destination):
    x = _as_array(a)
    src = _axes_tuple(source, x.ndim, "numpy.moveaxis")
    dst = _axes_tuple(destination, x.ndim, "numpy.moveaxis")
    if len(src) != len(dst):
        raise ValueError("numpy.moveaxis: `source` and `destination` arguments must have the "
                         "same number of elements")
    order = [n for n in range(x.ndim) if n not in src]
    for d, s_ in sorted(zip(dst, src)):
        order.insert(d, s_)
    return _transpose(x, order)


@implements(np.swapaxes)
def _swapaxes(a, axis1, axis2):
    x = _as_array(a)
    order = list(range(x.ndim))
    i = _normalize_axis(axis1, x.ndim, "numpy.swapaxes")
    j = _normalize_axis(axis2, x.ndim, "numpy.swapaxes")
    order[i], order[j] = order[j], order[i]
    return _transpose(x, order)


@implements(np.expand_dims)
def _expand_dims(a, axis):
    x = _as_array(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out_ndim = x.ndim + len(axes)
    axes = sorted(_normalize_axis(i, out_ndim, "numpy.expand_dims") for i in axes)
    if len(set(axes)) != len(axes):
        raise ValueError("numpy.expand_dims: repeated axis")
    s = _strata()
    for i in axes:
        x = s.expand_dims(x, axis=i)
    return x


@implements(np.squeeze)
def _squeeze(a, axis=None):
    x = _as_array(a)
    if axis is None:
        axes = tuple(i for i, n in enumerate(x.shape) if n == 1)
    else:
        axes = _axes_tuple(axis, x.ndim, "numpy.squeeze")
        for i in axes:
            if x.shape[i] != 1:
                raise ValueError("numpy.squeeze: cannot select an axis to squeeze out which "
                                 "has size not equal to one")
    return _strata().squeeze(x, axis=axes) if axes else x


@implements(np.broadcast_to)
def _broadcast_to(array, shape, subok=False):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    x = _as_array(array)
    return x if x.shape == shape else _strata().broadcast_to(x, shape)


# numpy 2's functions under the Array API's names: strata's of the same name
# (the same semantics; out= is numpy's alone).
@implements(np.matrix_transpose)
def _matrix_transpose(x, /):
    return _strata().matrix_transpose(_as_array(x))


@implements(np.unstack)
def _unstack(x, /, *, axis=0):
    return _strata().unstack(_as_array(x), axis=axis)


@implements(np.cumulative_sum)
def _cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    _no_out("numpy.cumulative_sum", out)
    return _strata().cumulative_sum(_as_array(x), axis=axis, dtype=dtype,
                                    include_initial=include_initial)


@implements(np.cumulative_prod)
def _cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    _no_out("numpy.cumulative_prod", out)
    return _strata().cumulative_prod(_as_array(x), axis=axis, dtype=dtype,
                                     include_initial=include_initial)


@implements(np.unique_values)
def _unique_values(x):
    return _strata().unique_values(_as_array(x))


@implements(np.unique_counts)
def _unique_counts(x):
    return _strata().unique_counts(_as_array(x))


@implements(np.unique_inverse)
def _unique_inverse(x):
    return _strata().unique_inverse(_as_array(x))


@implements(np.unique_all)
def _unique_all(x):
    return _strata().unique_all(_as_array(x))


@implements(np.broadcast_arrays)
def _broadcast_arrays(*args, subok=False):
    return list(_strata().broadcast_arrays(*[_as_array(a) for a in args]))


@implements(np.concatenate)
def _concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    _no_out("numpy.concatenate", out)
    s = _strata()
    xs = [_as_array(a) for a in arrays]
    if not xs:
        raise ValueError("numpy.concatenate: need at least one array to concatenate")
    target = np.dtype(dtype) if dtype is not None else np.result_type(*[x.dtype for x in xs])
    xs = [x if x.dtype == target else s.astype(x, target) for x in xs]
    if axis is None:
        xs = [s.reshape(x, (x.size,)) for x in xs]
        axis = 0
    if len(xs) == 1:
        return xs[0]
    return s.concat(xs, axis=_normalize_axis(axis, xs[0].ndim, "numpy.concatenate"))


@implements(np.stack)
def _stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    _no_out("numpy.stack", out)
    s = _strata()
    xs = [_as_array(a) for a in arrays]
    if not xs:
        raise ValueError("numpy.stack: need at least one array to stack")
    target = np.dtype(dtype) if dtype is not None else np.result_type(*[x.dtype for x in xs])
    xs = [x if x.dtype == target else s.astype(x, target) for x in xs]
    return s.stack(xs, axis=_normalize_axis(axis, xs[0].ndim + 1, "numpy.stack"))


@implements(np.flip)
def _flip(m, axis=None):
    x = _as_array(m)
    return _strata().flip(x, axis=None if axis is None else _axes_tuple(axis, x.ndim,
                                                                         "numpy.flip"))


@implements(np.roll)
def _roll(a, shift, axis=None):
    x = _as_array(a)
    s = _strata()
    if _has("roll"):
        return s.roll(x, shift, axis=axis)
    if axis is None:
        return _reshape(_roll(_ravel(x), shift, 0), x.shape)
    axes = _axes_tuple(axis, x.ndim, "numpy.roll")
    shifts = (shift,) * len(axes) if isinstance(shift, (int, np.integer)) else tuple(shift)
    for ax, sh in zip(axes, shifts):
        n = x.shape[ax]
        k = int(sh) % n if n else 0
        if k == 0:
            continue
        head = [slice(None)] * x.ndim
        tail = [slice(None)] * x.ndim
        head[ax] = slice(n - k, None)
        tail[ax] = slice(0, n - k)
        x = s.concat([x[tuple(head)], x[tuple(tail)]], axis=ax)
    return x


@implements(np.take)
def _take(a, indices, axis=None, out=None, mode="raise"):
    _no_out("numpy.take", out)
    if mode != "raise":
        _unsupported("numpy.take", f"mode={mode!r}")
    x = _as_array(a)
    if axis is None:
        x, axis = _ravel(x), 0
    axis = _normalize_axis(axis, x.ndim, "numpy.take")
    if isinstance(indices, (int, np.integer)):
        key = [slice(None)] * x.ndim
        key[axis] = int(indices)
        return x[tuple(key)]
    idx = indices if isinstance(indices, _Array()) else np.asarray(indices)
    if idx.ndim != 1:
        _unsupported("numpy.take", "indices of more than one dimension")
    return _strata().take(x, idx, axis=axis)


@implements(np.tensordot)
def _tensordot(a, b, axes=2):
    x, y = _as_array(a), _as_array(b)
    if not isinstance(axes, (int, np.integer)):
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
        axes = ([_normalize_axis(i, x.ndim, "numpy.tensordot") for i in ax_a],
                [_normalize_axis(i, y.ndim, "numpy.tensordot") for i in ax_b])
    return _strata().tensordot(x, y, axes=axes)


@implements(np.dot)
def _dot(a, b, out=None):
    _no_out("numpy.dot", out)
    x, y = _as_array(a), _as_array(b)
    if x.ndim == 0 or y.ndim == 0:
        return x * y
    return _tensordot(x, y, axes=([x.ndim - 1], [y.ndim - 2 if y.ndim >= 2 else 0]))


@implements(np.vdot)
def _vdot(a, b):
    s = _strata()
    x, y = _ravel(_as_array(a)), _ravel(_as_array(b))
    if x.dtype.kind == "c":
        x = s.conj(x)
    return s.sum(x * y)


@implements(np.einsum)
def _einsum(*operands, out=None, optimize=False, dtype=None, order="K", casting="safe"):
    _no_out("numpy.einsum", out)
    if not operands or not isinstance(operands[0], str):
        _unsupported("numpy.einsum", "the sublist form (give the subscripts as a string)")
    subscripts, arrays = operands[0], [_as_array(a) for a in operands[1:]]
    # numpy's einsum computes in the operands' common dtype.
    common = np.result_type(*[a.dtype for a in arrays])
    arrays = [a if a.dtype == common else _strata().astype(a, common) for a in arrays]
    r = einsum(subscripts, *arrays)
    if dtype is not None:
        r = _strata().astype(r, dtype)
    return r


def einsum(subscripts, *arrays):
    """numpy's einsum over strata arrays (explicit or implicit output, '...'
    broadcasting). Two operands without shared kept indices are one
    tensordot; otherwise the operands are aligned by index, multiplied (one
    fused elementwise op) and summed over the contracted indices. As numpy's,
    it computes in the operands' common dtype (bool and float: float)."""
    s = _strata()
    arrays = [_as_array(a) for a in arrays]
    common = np.result_type(*[a.dtype for a in arrays]) if arrays else None
    arrays = [a if a.dtype == common else s.astype(a, common) for a in arrays]
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        ins, out = subscripts.split("->")
        implicit = False
    else:
        ins, out, implicit = subscripts, None, True
    ins = ins.split(",")
    if len(ins) != len(arrays):
        raise ValueError(f"numpy.einsum: {len(ins)} operands in the subscripts, "
                         f"{len(arrays)} given")
    used = set("".join(ins) + (out or "")) - set(".")
    free = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used]
    ell_ndim = 0
    for term, x in zip(ins, arrays):
        if "..." in term:
            ell_ndim = builtins.max(ell_ndim, x.ndim - (len(term) - 3))
    ell = "".join(free[:ell_ndim])
    expanded = []
    for term, x in zip(ins, arrays):
        if "..." in term:
            n = x.ndim - (len(term) - 3)
            term = term.replace("...", ell[ell_ndim - n:])
        if len(term) != x.ndim:
            raise ValueError(f"numpy.einsum: operand of shape {x.shape} for subscripts "
                             f"{term!r}")
        if len(set(term)) != len(term):
            _unsupported("numpy.einsum", "a repeated index within one operand (a trace)")
        expanded.append(term)
    if implicit:
        counts = {}
        for t in expanded:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    else:
        out = out.replace("...", ell)
    sizes = {}
    for t, x in zip(expanded, arrays):
        for c, n in zip(t, x.shape):
            if sizes.get(c, 1) == 1:
                sizes[c] = n
            elif n not in (1, sizes[c]):
                raise ValueError(f"numpy.einsum: index {c!r} has sizes {sizes[c]} and {n}")
    contracted = [c for c in sizes if c not in out]
    if len(arrays) == 2:
        (ta, tb), (xa, xb) = expanded, arrays
        shared = [c for c in ta if c in tb]
        if shared and builtins.all(c in contracted for c in shared) and builtins.all(
                xa.shape[ta.index(c)] == xb.shape[tb.index(c)] for c in shared) and \
                builtins.all(c in out for c in ta + tb if c not in shared):
            r = s.tensordot(xa, xb, axes=([ta.index(c) for c in shared],
                                          [tb.index(c) for c in shared]))
            got = [c for c in ta if c not in shared] + [c for c in tb if c not in shared]
            return _transpose(r, [got.index(c) for c in out])
    order = list(out) + contracted
    aligned = []
    for t, x in zip(expanded, arrays):
        perm = [t.index(c) for c in order if c in t]
        y = _transpose(x, perm) if perm != list(range(x.ndim)) else x
        shape = tuple(sizes[c] if c in t and x.shape[t.index(c)] != 1 else 1 for c in order)
        y = s.reshape(y, shape) if y.shape != shape else y
        aligned.append(y)
    prod = aligned[0]
    for y in aligned[1:]:
        prod = prod * y
    full = tuple(sizes[c] for c in order)
    if prod.shape != full:
        prod = s.broadcast_to(prod, full)
    if contracted:
        prod = s.sum(prod, axis=tuple(range(len(out), len(order))), dtype=prod.dtype)
    return prod


@implements(np.pad)
def _pad(array, pad_width, mode="constant", **kwargs):
    x = _as_array(array)
    s = _strata()
    w = np.asarray(pad_width)
    if w.dtype.kind not in "iu":
        raise TypeError("numpy.pad: `pad_width` must be of integral type.")
    pairs = [tuple(int(v) for v in p) for p in np.broadcast_to(w, (x.ndim, 2))]
    scalar_constant = np.ndim(kwargs.get("constant_values", 0)) == 0
    if _has("pad") and (mode != "constant" or scalar_constant):
        if "constant_values" in kwargs:
            kwargs["constant_values"] = np.asarray(kwargs["constant_values"]).item()
        return s.pad(x, pairs, mode=mode, **kwargs)
    if mode != "constant" or set(kwargs) - {"constant_values"}:
        _needs("pad", f"numpy.pad(mode={mode!r})")
    cv = np.broadcast_to(np.asarray(kwargs.get("constant_values", 0)), (x.ndim, 2))
    for ax, (before, after) in enumerate(pairs):
        parts = []
        for width, value in ((before, cv[ax][0]), (None, None), (after, cv[ax][1])):
            if width is None:
                parts.append(x)
            elif width > 0:
                shape = list(x.shape)
                shape[ax] = width
                v = np.asarray(value).astype(x.dtype).item()
                parts.append(s.full(tuple(shape), v, dtype=x.dtype, chunks=x.chunksize,
                                    spec=x.spec))
        if len(parts) > 1:
            x = s.concat(parts, axis=ax)
    return x


@implements(np.lib.stride_tricks.sliding_window_view)
def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    if writeable:
        _unsupported("numpy.lib.stride_tricks.sliding_window_view", "writeable=True")
    a = _as_array(x)
    s = _strata()
    window = (window_shape,) if isinstance(window_shape, (int, np.integer)) else \
        tuple(window_shape)
    if axis is None:
        axes = tuple(range(a.ndim))
    else:
        axes = _axes_tuple(axis, a.ndim, "numpy.lib.stride_tricks.sliding_window_view")
    if len(window) != len(axes):
        raise ValueError("numpy.lib.stride_tricks.sliding_window_view: window_shape and axis "
                         "must have the same length")
    if _has("sliding_window_view"):
        return s.sliding_window_view(a, window, axis=axes)
    # Window k of each axis is the slice [k : n - w + 1 + k]; the windows are
    # stacked as a new last axis (numpy's order: one new axis per window
    # dimension, in the order given). Each is a view-like slice: no compute.
    out = a
    for ax, w in zip(axes, window):
        n = a.shape[ax]
        if w > n or w < 0:
            raise ValueError("numpy.lib.stride_tricks.sliding_window_view: window shape "
                             "cannot be larger than input array shape")
        pieces = []
        for k in range(w):
            key = [slice(None)] * out.ndim
            key[ax] = slice(k, n - w + 1 + k)
            pieces.append(out[tuple(key)])
        out = s.stack(pieces, axis=out.ndim)
    return out


# xarray (2025 on) asks the array's namespace for numpy's layout:
# xp.lib.stride_tricks.sliding_window_view (rolling(...).construct).
lib = types.ModuleType("strata.lib", "numpy's lib names xarray reaches through the namespace")
lib.stride_tricks = types.ModuleType("strata.lib.stride_tricks")
lib.stride_tricks.sliding_window_view = sliding_window_view


@implements(np.meshgrid)
def _meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if sparse:
        _unsupported("numpy.meshgrid", "sparse=True")
    return list(_strata().meshgrid(*[_as_array(x) for x in xi], indexing=indexing))


# ---------------------------------------------------------- functions over blocks

@implements(np.gradient)
def gradient(f, *varargs, axis=None, edge_order=1):
    """numpy's gradient (strata.gradient; xarray's differentiate calls it on
    the array's namespace, xarray 2024.x through numpy) as one map_overlap
    per axis: each block with edge_order elements of its neighbours, none
    past the array's edges, so that numpy's own gradient of the extended
    block is exact on the block (central differences inside, numpy's
    one-sided ones at the array's edges)."""
    name = "numpy.gradient"
    x = _as_array(f)
    s = _strata()
    axes = _axes_tuple(axis, x.ndim, name)
    if edge_order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported")
    if x.dtype == np.bool_:
        _unsupported(name, "a boolean array (numpy's subtract is not defined for booleans)")
    if not varargs:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacing = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise TypeError("invalid number of arguments")
    for i, (ax, h) in enumerate(zip(axes, spacing)):
        if isinstance(h, _Array()):
            _unsupported(name, "spacing given as a strata.Array (give numpy coordinates)")
        if np.ndim(h) == 1:
            h = np.asarray(h)
            if len(h) != x.shape[ax]:
                raise ValueError("when 1d, distances must match the length of the "
                                 "corresponding dimension")
            spacing[i] = h
        elif np.ndim(h) != 0:
            raise ValueError("distances must be either scalars or 1d")
        if x.shape[ax] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                             "least (edge_order + 1) elements are required.")
    otype = x.dtype if x.dtype.kind in "fc" else np.dtype(np.float64)
    outs = []
    for ax, h in zip(axes, spacing):
        starts = np.concatenate([[0], np.cumsum(x.chunks[ax])]).tolist()

        def along(block, block_id=None, ax=ax, h=h, starts=starts):
            if np.ndim(h) == 1:  # the coordinates of the extended block
                lo = max(0, starts[block_id[ax]] - edge_order)
                h = h[lo:lo + block.shape[ax]]
            return np.gradient(block, h, axis=ax, edge_order=edge_order)

        outs.append(s.map_overlap(along, x, depth={ax: edge_order}, boundary="none",
                                  dtype=otype, name=f"gradient-axis{ax}"))
    return outs[0] if len(outs) == 1 else outs


@implements(np.apply_along_axis)
def _apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """numpy's apply_along_axis as strata.apply_gufunc over that axis (made
    one chunk). The shape and dtype of func1d's result come from one call on
    a line of ones of the axis's length (numpy calls it on the data's first
    line, which would compute)."""
    name = "numpy.apply_along_axis"
    x = _as_array(arr)
    axis = _normalize_axis(axis, x.ndim, name)
    n = x.shape[axis]
    if 0 in x.shape[:axis] + x.shape[axis + 1:]:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    if n == 0:
        _unsupported(name, "an axis of extent 0")
    probe = np.asarray(func1d(np.ones(n, dtype=x.dtype), *args, **kwargs))
    core = [f"out{j}" for j in range(probe.ndim)]

    def along_axis(block):
        return np.apply_along_axis(func1d, -1, block, *args, **kwargs)

    return _strata().apply_gufunc(
        along_axis, f"(n)->({','.join(core)})", x,
        axes=[(axis,), tuple(range(axis, axis + probe.ndim))],
        output_dtypes=probe.dtype, output_sizes=dict(zip(core, probe.shape)),
        allow_rechunk=True, name=f"apply_along_axis-{getattr(func1d, '__name__', 'func1d')}")


# ---------------------------------------------------------- data-dependent (issue 16)

@implements(np.nonzero)
def _nonzero(a):
    return _needs("nonzero", "numpy.nonzero")(_as_array(a))


@implements(np.sort)
def _sort(a, axis=-1, kind=None, order=None):
    x = _as_array(a)
    if axis is None:
        x, axis = _ravel(x), 0
    return _needs("sort", "numpy.sort")(x, axis=axis)


@implements(np.argsort)
def _argsort(a, axis=-1, kind=None, order=None):
    x = _as_array(a)
    if axis is None:
        x, axis = _ravel(x), 0
    return _needs("argsort", "numpy.argsort")(x, axis=axis)


@implements(np.searchsorted)
def _searchsorted(a, v, side="left", sorter=None):
    return _needs("searchsorted", "numpy.searchsorted")(_as_array(a), v, side=side,
                                                        sorter=sorter)


@implements(np.isin)
def _isin(element, test_elements, assume_unique=False, invert=False):
    return _needs("isin", "numpy.isin")(_as_array(element), test_elements, invert=invert)


@implements(np.unique)
def _unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
            *, equal_nan=True):
    if axis is not None or return_index or return_inverse or return_counts:
        _unsupported("numpy.unique", "axis= and the return_* options")
    return _needs("unique_values", "numpy.unique")(_ravel(_as_array(ar)))


@implements(np.repeat)
def _repeat(a, repeats, axis=None):
    return _needs("repeat", "numpy.repeat")(_as_array(a), repeats, axis=axis)


@implements(np.tile)
def _tile(A, reps):
    return _needs("tile", "numpy.tile")(_as_array(A), reps)


# ================================================================ registration

NUMPY_UFUNC_METHODS.update({"__call__": _call_ufunc, "reduce": _reduce_ufunc,
                            "accumulate": _accumulate_ufunc})
