"""Strata: bounded-memory chunked arrays, an Array API namespace.

    import strata
    spec = strata.Spec(work_dir="tmp", allowed_mem="2GB")
    u = strata.from_zarr("u.zarr", spec=spec)
    m = strata.mean(u * u, axis=0)
    result = m.compute()            # a numpy array over the engine's buffer

Arrays are lazy: building them touches no data; compute(), numpy conversion
and bool()/int()/float() run the plan (in C++, without the GIL). Every task's
memory is checked against allowed_mem before anything runs (PlanError).
The engine is C++ (src/strata/); this package converts arguments.
"""
import math as _math

from ._core import PlanError, _strata  # noqa: F401
from ._core import DTYPES as _DTYPES
from ._array import Array
from ._spec import Spec
from ._creation import (arange, asarray, empty, empty_like, eye, from_array,  # noqa: F401
                        from_dlpack, full, full_like, linspace, ones, ones_like, tril, triu,
                        zeros, zeros_like)
from ._functions import (all, any, argmax, argmin, astype, broadcast_arrays,  # noqa: F401
                         broadcast_to, clip, concat, concatenate, count_nonzero, expand_dims,
                         flip, groupby_reduce, matmul, matrix_transpose, max, mean, meshgrid,
                         min, permute_dims, prod, rechunk, reshape, squeeze, stack, std, sum,
                         take, tensordot, var, vecdot, where)
from ._functions import elementwise_functions as _elementwise_functions
from ._extras import (argsort, broadcast_shapes, cumprod, cumsum,  # noqa: F401
                      cumulative_prod, cumulative_sum, diff, isin, moveaxis, nanargmax,
                      median, nanargmin, nancumprod, nancumsum, nanmax, nanmean, nanmedian,
                      nanmin, nanprod, nanquantile, nanstd, nansum, nanvar, nonzero, pad,
                      quantile, repeat, roll, searchsorted, sort, take_along_axis, tile,
                      unique_all, unique_counts, unique_inverse, unique_values, unstack)
from ._dtypes import can_cast, finfo, iinfo, isdtype, result_type  # noqa: F401
from ._io import from_zarr, store, to_zarr  # noqa: F401
from ._info import __array_namespace_info__  # noqa: F401
from ._compute import Plan, compute, plan, visualize  # noqa: F401
from ._block_functions import apply_gufunc, map_blocks, map_overlap  # noqa: F401
# numpy's names that xarray looks up on the array's namespace.
from ._numpy_dispatch import einsum, gradient, lib, transpose  # noqa: F401
from . import callbacks, diagnostics, fft, linalg, random  # noqa: F401
from .callbacks import Callback  # noqa: F401
from .diagnostics import HistoryCallback, TqdmProgressBar  # noqa: F401
from ._spec import PYTHON_EXECUTORS as _PYTHON_EXECUTORS
from ._dask import DaskExecutor as _DaskExecutor

_PYTHON_EXECUTORS["dask"] = _DaskExecutor()  # distributed is imported when first used

__array_api_version__ = "2024.12"

# Every elementwise op of the C++ API, by its C++ and Array API names.
globals().update(_elementwise_functions())

# Data types (numpy dtype objects).
bool = _DTYPES["bool"]
int8 = _DTYPES["int8"]
int16 = _DTYPES["int16"]
int32 = _DTYPES["int32"]
int64 = _DTYPES["int64"]
uint8 = _DTYPES["uint8"]
uint16 = _DTYPES["uint16"]
uint32 = _DTYPES["uint32"]
uint64 = _DTYPES["uint64"]
float32 = _DTYPES["float32"]
float64 = _DTYPES["float64"]
complex64 = _DTYPES["complex64"]
complex128 = _DTYPES["complex128"]

# Constants.
e = _math.e
pi = _math.pi
inf = _math.inf
nan = _math.nan
newaxis = None
