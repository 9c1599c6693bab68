"""strata.fft: the Array API's FFT extension (2024.12), as Dask's da.fft.

A transform needs all of an axis at once: each transformed axis is made one
chunk (a rechunk, which the planner refuses with ValueError when one such
block does not fit allowed_mem), then numpy's own transform runs on every
block (apply_gufunc, the transformed axes its core dimensions), so the
values and dtypes are numpy 2's (single precision stays single). Other axes
keep their chunks. fftshift/ifftshift are rolls;
fftfreq/rfftfreq are small creation functions (numpy's, then asarray).

Input dtypes are the standard's: complex for fft/ifft/fftn/ifftn/hfft, real
for rfft/rfftn/ihfft, complex for irfft/irfftn; other kinds raise TypeError.
"""
import operator as _operator

import numpy as _np

from ._block_functions import apply_gufunc as _apply_gufunc
from ._core import DTYPES as _DTYPES, dtype_name as _dtype_name
from .array_api.array_object import as_array as _array
from .array_api.creation_functions import asarray as _asarray
from .array_api.manipulation_functions import roll as _roll

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = ("backward", "ortho", "forward")
_COMPLEX = {"float32": "complex64", "float64": "complex128", "complex64": "complex64",
            "complex128": "complex128"}
_REAL = {"complex64": "float32", "complex128": "float64", "float32": "float32",
         "float64": "float64"}


def _input(x, what, kinds):
    x = _array(x, f"fft.{what}")
    if x.dtype.kind not in kinds:
        wanted = {"c": "complex", "f": "real floating-point"}[kinds]
        raise TypeError(f"fft.{what}: expected a {wanted} array, got {x.dtype}")
    return x


def _norm(norm, what):
    if norm not in _NORMS:
        raise ValueError(f"fft.{what}: norm must be one of {', '.join(_NORMS)}, got {norm!r}")
    return norm


def _axis(axis, ndim, what):
    a = _operator.index(axis)
    if not -ndim <= a < ndim:
        raise ValueError(f"fft.{what}: axis {axis} is out of range for an array of {ndim} "
                         "dimensions")
    return a % ndim


def _length(n, what):
    n = _operator.index(n)
    if n < 1:
        raise ValueError(f"fft.{what}: invalid number of data points ({n}) specified")
    return n


def _transform(x, func, core, out_lengths, out_dtype, what, **kwargs):
    """numpy's `func` over `axes` of x, the output `out_lengths` long along
    them: a generalized ufunc whose core dimensions are those axes (`core`,
    made one chunk), so that func sees them last, in that order."""
    if x.ndim == 0:
        raise ValueError(f"fft.{what}: a 0-d array has no axis to transform")
    for a in core:
        if x.shape[a] == 0:
            raise ValueError(f"fft.{what}: invalid number of data points (0) along axis {a}")
    k = len(core)
    signature = "({})->({})".format(",".join(f"i{j}" for j in range(k)),
                                    ",".join(f"o{j}" for j in range(k)))
    dtype = _DTYPES[out_dtype]

    def block(b):
        return _np.asarray(func(b, **kwargs), dtype=dtype)
    return _apply_gufunc(block, signature, x, axes=[tuple(core), tuple(core)],
                         output_dtypes=out_dtype, allow_rechunk=True, name=f"fft-{what}",
                         output_sizes={f"o{j}": n for j, n in enumerate(out_lengths)})


def _one(what, func, x, n, axis, norm, kinds, length, out_of):
    x = _input(x, what, kinds)
    _norm(norm, what)
    a = _axis(axis, x.ndim, what)
    n_in = x.shape[a] if n is None else _length(n, what)
    out = length(n_in, x.shape[a], n is None)
    return _transform(x, func, [a], [out], out_of[x._h.dtype], what, n=n, axis=-1, norm=norm)


def _many(what, func, x, s, axes, norm, kinds, last_length, out_of):
    x = _input(x, what, kinds)
    _norm(norm, what)
    if axes is None:
        axes = list(range(x.ndim)) if s is None else list(range(x.ndim - len(s), x.ndim))
    else:
        axes = [_axis(a, x.ndim, what) for a in axes]
    if len(set(axes)) != len(axes):
        raise ValueError(f"fft.{what}: repeated axes {axes}")
    if s is not None:
        s = [_length(v, what) for v in s]
        if len(s) != len(axes):
            raise ValueError(f"fft.{what}: s and axes have different lengths")
    lengths = [x.shape[a] for a in axes] if s is None else list(s)
    if lengths:
        lengths[-1] = last_length(lengths[-1], x.shape[axes[-1]], s is None)
    return _transform(x, func, axes, lengths, out_of[x._h.dtype], what, s=s,
                      axes=tuple(range(-len(axes), 0)), norm=norm)


def _same(n, m, default):
    return n


def _half(n, m, default):  # rfft, ihfft: n // 2 + 1 complex outputs
    return n // 2 + 1


def _full(n, m, default):  # irfft, hfft: 2 (m - 1) real outputs unless n is given
    if default:
        if m < 2:
            raise ValueError(f"fft: invalid number of data points ({2 * (m - 1)}) specified")
        return 2 * (m - 1)
    return n


def fft(x, /, *, n=None, axis=-1, norm="backward"):
    return _one("fft", _np.fft.fft, x, n, axis, norm, "c", _same, _COMPLEX)


def ifft(x, /, *, n=None, axis=-1, norm="backward"):
    return _one("ifft", _np.fft.ifft, x, n, axis, norm, "c", _same, _COMPLEX)


def fftn(x, /, *, s=None, axes=None, norm="backward"):
    return _many("fftn", _np.fft.fftn, x, s, axes, norm, "c", _same, _COMPLEX)


def ifftn(x, /, *, s=None, axes=None, norm="backward"):
    return _many("ifftn", _np.fft.ifftn, x, s, axes, norm, "c", _same, _COMPLEX)


def rfft(x, /, *, n=None, axis=-1, norm="backward"):
    return _one("rfft", _np.fft.rfft, x, n, axis, norm, "f", _half, _COMPLEX)


def irfft(x, /, *, n=None, axis=-1, norm="backward"):
    return _one("irfft", _np.fft.irfft, x, n, axis, norm, "c", _full, _REAL)


def rfftn(x, /, *, s=None, axes=None, norm="backward"):
    return _many("rfftn", _np.fft.rfftn, x, s, axes, norm, "f", _half, _COMPLEX)


def irfftn(x, /, *, s=None, axes=None, norm="backward"):
    return _many("irfftn", _np.fft.irfftn, x, s, axes, norm, "c", _full, _REAL)


def hfft(x, /, *, n=None, axis=-1, norm="backward"):
    return _one("hfft", _np.fft.hfft, x, n, axis, norm, "c", _full, _REAL)


def ihfft(x, /, *, n=None, axis=-1, norm="backward"):
    return _one("ihfft", _np.fft.ihfft, x, n, axis, norm, "f", _half, _COMPLEX)


def _freq(what, func, n, d, dtype, device):
    if device not in (None, "cpu"):
        raise ValueError(f"fft.{what}: strata arrays live on the 'cpu' device, not {device!r}")
    name = "float64" if dtype is None else _dtype_name(dtype, f"fft.{what}")
    if _DTYPES[name].kind != "f":
        raise TypeError(f"fft.{what}: dtype must be a real floating-point dtype, got {name}")
    return _asarray(func(_length(n, what), d=d).astype(_DTYPES[name]))


def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    return _freq("fftfreq", _np.fft.fftfreq, n, d, dtype, device)


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    return _freq("rfftfreq", _np.fft.rfftfreq, n, d, dtype, device)


def _shift(what, x, axes, sign):
    x = _array(x, f"fft.{what}")
    if axes is None:
        axes = list(range(x.ndim))
    elif not isinstance(axes, (tuple, list)):
        axes = [axes]
    axes = [_axis(a, x.ndim, what) for a in axes]
    if not axes:
        return x
    return _roll(x, [sign * (x.shape[a] // 2) for a in axes], axis=axes)


def fftshift(x, /, *, axes=None):
    return _shift("fftshift", x, axes, 1)


def ifftshift(x, /, *, axes=None):
    return _shift("ifftshift", x, axes, -1)

