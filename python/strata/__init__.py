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

The package's layers, lowest first (each imports only those below it;
docs/python-api.md):
  _core, _recipe, _spec, callbacks     the engine and argument conversion
  _ops, _indexing, _execute, _zarr_io, _blocks
                                       operations on engine handles, shared by
                                       Array methods and namespace functions
  array_api/array_object               strata.Array
  array_api/*_functions, inspection    the namespace, one module per chapter
  _io, _compute, _block_functions      Zarr, running plans, block functions
  linalg, fft, random                  the extensions
  _numpy_protocol                      numpy's __array_function__/__array_ufunc__
  xarray, _chunkmanager, _dask, diagnostics
"""
import math as _math

from ._core import PlanError, _strata  # noqa: F401
from ._core import DTYPES as _DTYPES
from ._spec import Spec  # noqa: F401
from .array_api.array_object import Array  # noqa: F401
from .array_api.creation_functions import (arange, asarray, empty, empty_like,  # noqa: F401
                                           eye, from_array, from_dlpack, full, full_like,
                                           linspace, meshgrid, ones, ones_like, tril, triu,
                                           zeros, zeros_like)
from .array_api.data_type_functions import (astype, can_cast, finfo, iinfo,  # noqa: F401
                                            isdtype, result_type)
from .array_api.elementwise_functions import *  # noqa: F401,F403
from .array_api.indexing_functions import take, take_along_axis  # noqa: F401
from .array_api.inspection import __array_namespace_info__  # noqa: F401
from .array_api.linear_algebra_functions import (matmul, matrix_transpose,  # noqa: F401
                                                 tensordot, vecdot)
from .array_api.manipulation_functions import (broadcast_arrays,  # noqa: F401
                                               broadcast_shapes, broadcast_to, concat,
                                               concatenate, expand_dims, flip, moveaxis, pad,
                                               permute_dims, rechunk, repeat, reshape, roll,
                                               squeeze, stack, tile, transpose, unstack)
from .array_api.searching_functions import (argmax, argmin, count_nonzero,  # noqa: F401
                                            nanargmax, nanargmin, nonzero, searchsorted,
                                            where)
from .array_api.set_functions import (isin, unique_all, unique_counts,  # noqa: F401
                                      unique_inverse, unique_values)
from .array_api.sorting_functions import argsort, sort  # noqa: F401
from .array_api.statistical_functions import (cumprod, cumsum,  # noqa: F401
                                              cumulative_prod, cumulative_sum,
                                              groupby_reduce, max, mean, median, min,
                                              nancumprod, nancumsum, nanmax, nanmean,
                                              nanmedian, nanmin, nanprod, nanquantile, nanstd,
                                              nansum, nanvar, prod, quantile, std, sum, var)
from .array_api.utility_functions import all, any, diff  # noqa: F401
from ._io import from_zarr, store, to_zarr  # noqa: F401
from ._compute import Plan, compute, plan, visualize  # noqa: F401
from ._block_functions import apply_gufunc, map_blocks, map_overlap  # noqa: F401
from . import callbacks, diagnostics, fft, linalg, random  # noqa: F401
# numpy's protocols on Array; numpy's names xarray looks up on the namespace.
from ._numpy_protocol import einsum, gradient, lib  # noqa: F401
from .callbacks import Callback  # noqa: F401
from .diagnostics import HistoryCallback, TqdmProgressBar  # noqa: F401
from ._spec import PYTHON_EXECUTORS as _PYTHON_EXECUTORS
from ._dask import DaskExecutor as _DaskExecutor
from ._ray import RayExecutor as _RayExecutor

_PYTHON_EXECUTORS["dask"] = _DaskExecutor()  # distributed is imported when first used
_PYTHON_EXECUTORS["ray"] = _RayExecutor()  # ray likewise

__array_api_version__ = "2024.12"

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
