"""xarray on Strata: Strata as xarray's chunk manager, `open_zarr`, and the
`.strata` accessor on DataArray and Dataset (importing this package
registers it).

    import strata.xarray
    ds = strata.xarray.open_zarr("ifs.zarr", spec=strata.Spec(allowed_mem="2GB"))
    # or "s3://bucket/ifs.zarr" (AWS_* variables, ?endpoint=...: docs/guide.md)
    wind = np.sqrt(ds.u ** 2 + ds.v ** 2)            # lazy strata arrays
    means = wind.strata.groupby("country").mean()     # one grouped reduction
    means.strata.to_zarr("means.zarr")                # one compute

strata.Array is an Array API array (xarray calls the strata namespace's
functions: nan-reductions, einsum, sliding windows, ...) and a NEP-18 duck
array (_numpy_dispatch.py), so xarray keeps it as the data of its variables:
selection (pointwise too: strata.Array takes xarray's explicit indexers,
_indexing.py), arithmetic, ufuncs, where/fillna, reductions, concat, dot,
weighted, coarsen, rolling, shift stay lazy. strata is also xarray's chunk
manager for its arrays (_chunkmanager.py): xarray's own
compute()/load()/persist()/to_zarr() run strata; `.chunk()` takes
chunked_array_type="strata" (or xr.set_options(chunk_manager="strata")).
`.strata.compute()` computes every variable of the object in one plan
(shared inputs read once), as xarray's compute() does through the chunk
manager.

Modules: _chunkmanager (the ChunkManagerEntrypoint), _indexing (xarray's
explicit-indexing protocol on strata.Array), _backend (open_zarr and the
Zarr group writing behind `.strata.to_zarr`), _accessor (`.strata`),
_groupby (`.strata.groupby`).
"""
from . import _chunkmanager
from ._accessor import StrataDataArrayAccessor, StrataDatasetAccessor
from ._backend import open_zarr
from ._groupby import StrataGroupBy
from ._indexing import declare_explicitly_indexed

declare_explicitly_indexed()

__all__ = ["open_zarr", "chunk_manager", "StrataDataArrayAccessor", "StrataDatasetAccessor",
           "StrataGroupBy"]


def chunk_manager():
    """Strata's xarray chunk manager (an xarray.namedarray.parallelcompat
    ChunkManagerEntrypoint), for `chunked_array_type=` where the entry point
    `strata` is not installed."""
    return _chunkmanager.chunk_manager()
