"""strata.linalg: the Array API's linear-algebra extension (2021.12).

Every function is one C++ op (src/strata/api/linalg_extension.h):

- chunked, for arrays of any size under allowed_mem: cross, diagonal, trace,
  outer, vector_norm, matrix_norm (ord 'fro', 1, -1, inf, -inf),
  matrix_power (repeated squaring with matmul), matmul, tensordot, vecdot,
  matrix_transpose; and qr / svd(full_matrices=False) / svdvals of a
  tall-and-skinny 2-D matrix (several row blocks, or too big for one task)
  by TSQR, as Dask and Cubed do;
- whole-matrix (the last two axes in one chunk, batched over the leading
  axes; refused with ValueError when one matrix does not fit allowed_mem):
  cholesky, det, eigh, eigvalsh, inv, pinv, matrix_rank, slogdet, solve,
  qr, svd, svdvals, matrix_norm('nuc', 2, -2).

float32 and float64 (integers become float64, as in numpy); complex input is
refused with ValueError. A matrix the op cannot handle (singular for inv and
solve, not positive definite for cholesky) raises LinAlgError (a ValueError)
from the compute that meets it.
"""
import math as _math
import operator as _operator
from collections import namedtuple as _namedtuple

from ._core import _strata, dtype_name as _dtype_name
from .array_api.array_object import Array as _Array, _wrap, as_array as _array
from .array_api.linear_algebra_functions import (matmul, matrix_transpose,  # noqa: F401
                                                 tensordot, vecdot)

LinAlgError = _strata.LinAlgError

EighResult = _namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = _namedtuple("QRResult", ["Q", "R"])
SlogdetResult = _namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = _namedtuple("SVDResult", ["U", "S", "Vh"])

_L = _strata.linalg

__all__ = ["LinAlgError", "cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv",
           "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer",
           "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
           "vector_norm"]


def _h(x, what):
    return _array(x, f"linalg.{what}")._h


def _int(v, what, name):
    if isinstance(v, bool):
        raise TypeError(f"linalg.{what}: {name} must be an int, got bool")
    try:
        return _operator.index(v)
    except TypeError:
        raise TypeError(f"linalg.{what}: {name} must be an int, got {type(v).__name__}") from None


def _rtol(rtol, what):
    if rtol is None:
        return None
    if isinstance(rtol, _Array):
        return rtol._h
    if isinstance(rtol, bool) or not isinstance(rtol, (int, float)):
        raise TypeError(f"linalg.{what}: rtol must be a float, got {type(rtol).__name__}")
    return float(rtol)


def cholesky(x, /, *, upper=False):
    return _wrap(_L.cholesky(_h(x, "cholesky"), bool(upper)))


def cross(x1, x2, /, *, axis=-1):
    return _wrap(_L.cross(_h(x1, "cross"), _h(x2, "cross"), _int(axis, "cross", "axis")))


def det(x, /):
    return _wrap(_L.det(_h(x, "det")))


def diagonal(x, /, *, offset=0):
    return _wrap(_L.diagonal(_h(x, "diagonal"), _int(offset, "diagonal", "offset")))


def eigh(x, /):
    return EighResult(*map(_wrap, _L.eigh(_h(x, "eigh"))))


def eigvalsh(x, /):
    return _wrap(_L.eigvalsh(_h(x, "eigvalsh")))


def inv(x, /):
    return _wrap(_L.inv(_h(x, "inv")))


_MATRIX_ORDS = {"fro": "fro", "nuc": "nuc", 1: "1", -1: "-1", 2: "2", -2: "-2",
                _math.inf: "inf", -_math.inf: "-inf"}


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    key = ord
    if isinstance(ord, bool) or not isinstance(ord, (str, int, float)) or \
            (not isinstance(ord, str) and ord not in _MATRIX_ORDS) or \
            (isinstance(ord, str) and ord not in ("fro", "nuc")):
        raise ValueError(f"linalg.matrix_norm: ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or "
                         f"-inf, got {ord!r}")
    return _wrap(_L.matrix_norm(_h(x, "matrix_norm"), _MATRIX_ORDS[key], bool(keepdims)))


def matrix_power(x, n, /):
    return _wrap(_L.matrix_power(_h(x, "matrix_power"), _int(n, "matrix_power", "n")))


def matrix_rank(x, /, *, rtol=None):
    return _wrap(_L.matrix_rank(_h(x, "matrix_rank"), _rtol(rtol, "matrix_rank")))


def outer(x1, x2, /):
    return _wrap(_L.outer(_h(x1, "outer"), _h(x2, "outer")))


def pinv(x, /, *, rtol=None):
    return _wrap(_L.pinv(_h(x, "pinv"), _rtol(rtol, "pinv")))


def qr(x, /, *, mode="reduced"):
    if mode not in ("reduced", "complete"):
        raise ValueError(f"linalg.qr: mode must be 'reduced' or 'complete', got {mode!r}")
    return QRResult(*map(_wrap, _L.qr(_h(x, "qr"), mode)))


def slogdet(x, /):
    return SlogdetResult(*map(_wrap, _L.slogdet(_h(x, "slogdet"))))


def solve(x1, x2, /):
    return _wrap(_L.solve(_h(x1, "solve"), _h(x2, "solve")))


def svd(x, /, *, full_matrices=True):
    return SVDResult(*map(_wrap, _L.svd(_h(x, "svd"), bool(full_matrices))))


def svdvals(x, /):
    return _wrap(_L.svdvals(_h(x, "svdvals")))


def trace(x, /, *, offset=0, dtype=None):
    d = None if dtype is None else _dtype_name(dtype, "linalg.trace")
    return _wrap(_L.trace(_h(x, "trace"), _int(offset, "trace", "offset"), d))


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    if axis is None:
        axes = None
    elif isinstance(axis, tuple):
        axes = [_int(a, "vector_norm", "axis") for a in axis]
    else:
        axes = [_int(axis, "vector_norm", "axis")]
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise ValueError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    return _wrap(_L.vector_norm(_h(x, "vector_norm"), axes, bool(keepdims), float(ord)))
