"""The Array API's linear algebra functions (the extension's are strata.linalg)."""
import operator

import numpy as np

from .._core import _strata
from .array_object import _wrap, as_array


def matmul(x1, x2, /):
    a, b = as_array(x1, "matmul"), as_array(x2, "matmul")
    return _wrap(_strata.matmul(a._h, b._h))


def tensordot(x1, x2, /, *, axes=2):
    a, b = as_array(x1, "tensordot"), as_array(x2, "tensordot")
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
    return _wrap(_strata.matrix_transpose(as_array(x, "matrix_transpose")._h))


def vecdot(x1, x2, /, *, axis=-1):
    """The dot product of x1 and x2 along `axis` (of their broadcast shape),
    conjugating x1 when complex: a fused multiply and a sum."""
    a, b = as_array(x1, "vecdot"), as_array(x2, "vecdot")
    return _wrap(_strata.vecdot(a._h, b._h, operator.index(axis)))
