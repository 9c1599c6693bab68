"""The Array API's elementwise functions: every elementwise op of the C++ API,
under its C++ name and its Array API name (acos and arccos, ...), and clip."""
import numpy as np

from .._core import _strata
from .array_object import Array, _binary, _wrap, as_array


def _make_unary(api_name, op):
    def f(x, /):
        return _wrap(_strata.unary(op, as_array(x, api_name)._h))
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


def _elementwise_functions():
    """{name: function} for every elementwise op the C++ API has, under its
    C++ name and its Array API name."""
    out = {}
    for op in _strata.unary_ops():
        out[op] = _make_unary(op, op)
    for op in _strata.binary_ops():
        out[op] = _make_binary(op, op)
    # numpy's arc* names under the Array API's a* names (arccos -> acos,
    # arctan2 -> atan2, arccosh -> acosh), whichever of them the C++ API uses.
    unary = set(_strata.unary_ops())
    for short in ("acos", "asin", "atan", "acosh", "asinh", "atanh", "atan2"):
        long = "arc" + short[1:]
        for name, op in ((short, long), (long, short)):
            if name not in out and op in out:
                make = _make_unary if op in unary else _make_binary
                out[name] = make(name, op)
    return out


def clip(x, /, min=None, max=None):
    """x clipped to [min, max] (x.clip(min, max))."""
    return as_array(x, "clip").clip(min, max)


_ELEMENTWISE = _elementwise_functions()
globals().update(_ELEMENTWISE)
__all__ = sorted(_ELEMENTWISE) + ["clip"]
