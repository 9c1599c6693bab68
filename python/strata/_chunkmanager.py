"""Strata as xarray's chunk manager for strata arrays, so that

    xr.open_zarr("ifs.zarr", chunked_array_type="strata", chunks={})
    ds.chunk({"time": 24}, chunked_array_type="strata",
             from_array_kwargs={"spec": strata.Spec(allowed_mem="2GB")})
    ds.compute(); ds.persist(); ds.to_zarr("out.zarr")

run on Strata through xarray's own methods. xarray finds this class through
the `xarray.chunkmanagers` entry point `strata` (the package's
`strata-<version>.dist-info/entry_points.txt`, which the build writes beside
the package); without that metadata, pass the instance:
`chunked_array_type=strata.xarray.chunk_manager()`.

xarray loads this module through the entry point; strata.xarray imports it
too. Importing it hooks strata into xarray where the chunk-manager API has
no hook (_install): Dataset.chunk / Variable.chunk without
chunked_array_type rechunk a Strata-backed object with strata (xarray's
default manager, Dask, would wrap the strata arrays), and xarray's
as_indexable gives strata arrays vectorized (pointwise) indexing.

What each hook does:
- from_array: numpy data is shared (strata.asarray); xarray's lazy backend
  arrays (a Zarr variable being opened, with its CF decoding) become a lazy
  strata array whose blocks are read through the backend by a Python
  function on the engine's worker threads (map_blocks, the GIL held per
  block; the processes and mpi executors refuse it), nothing read until a
  compute. Variables of dtypes strata has none for (strings, datetimes) are
  read into memory, as strata.xarray.open_zarr reads coordinates.
  `from_array_kwargs={"spec": ...}` sets the arrays' Spec.
- normalize_chunks: strata's own rules (api/chunks.h, Dask's notation).
- compute / persist: one strata.compute for every array given.
- store (Dataset.to_zarr): xarray creates the Zarr arrays and their
  metadata, then each variable is written by strata.to_zarr into its region,
  all in one compute; targets in a local directory only (xarray opens
  s3:// stores through fsspec, which is not strata's; write S3 datasets with
  `.strata.to_zarr`).
- map_blocks / apply_gufunc: strata.map_blocks for functions that keep the
  block shape (no drop_axis/new_axis; gufunc signatures without core
  dimensions or whose output has the first input's core dimensions);
  anything else is NotImplementedError naming what is missing.
- reduction, scan, shuffle, blockwise, unify_chunks: xarray's defaults
  (NotImplementedError): groupby(...).first/last, ffill/bfill, interp on
  strata arrays are not supported through this manager.
"""
import functools
import os

import numpy as np
from xarray.namedarray.parallelcompat import ChunkManagerEntrypoint

import strata
from ._array import Array
from ._core import DTYPES


def _strata_dtype(dtype):
    """Whether strata has this dtype: one of its names, in native byte
    order (zarr-python 3 gives native dtypes as explicit little-endian)."""
    d = np.dtype(dtype)
    return d.name in DTYPES and (d.byteorder in ("=", "|") or d == d.newbyteorder("="))


def _offsets(chunks):
    """Start of every block along each axis, from normalized chunks."""
    out = []
    for sizes in chunks:
        starts, at = [], 0
        for s in sizes:
            starts.append(at)
            at += s
        out.append(starts)
    return out


class StrataChunkManager(ChunkManagerEntrypoint):
    """xarray's ChunkManagerEntrypoint over strata.Array (see the module
    comment). Stateless; thread-safe as strata is."""

    available = True

    def __init__(self):
        self.array_cls = Array

    def is_chunked_array(self, data):
        return isinstance(data, Array)

    def chunks(self, data):
        return data.chunks

    def normalize_chunks(self, chunks, shape=None, limit=None, dtype=None,
                         previous_chunks=None):
        if shape is None:
            raise ValueError("normalize_chunks: strata needs the array's shape")
        dtype = np.dtype(dtype if dtype is not None else "float64")
        if not _strata_dtype(dtype):
            dtype = np.dtype("float64")   # only the block sizes are wanted
        if isinstance(chunks, (list, tuple)):
            chunks = tuple(tuple(c) if isinstance(c, (list, tuple)) else
                           (-1 if c is None else c) for c in chunks)
        # limit and previous_chunks are Dask's hints for "auto"; strata sizes
        # auto axes from the Spec's allowed_mem (api/chunks.h).
        return strata.empty(tuple(shape), dtype=dtype, chunks=chunks).chunks

    def from_array(self, data, chunks, **kwargs):
        spec = kwargs.pop("spec", None)   # the rest are Dask's (name, lock, ...)
        if isinstance(data, Array):
            return self.rechunk(data, chunks)
        if isinstance(data, np.ndarray) and _strata_dtype(data.dtype):
            return strata.asarray(np.ascontiguousarray(data), chunks=chunks, spec=spec)
        dtype = np.dtype(data.dtype)
        if not _strata_dtype(dtype):
            return np.asarray(data)
        return self._lazy_read(data, DTYPES[dtype.name], chunks, spec)

    def _lazy_read(self, data, dtype, chunks, spec):
        """A lazy strata array whose blocks are data[block] (xarray's lazily
        indexed backend arrays take tuples of slices)."""
        shape = tuple(int(n) for n in data.shape)
        grid = strata.empty(shape, dtype=np.bool_, chunks=chunks, spec=spec)
        starts = _offsets(grid.chunks)

        def read(block, block_id=None):
            key = tuple(slice(s[i], s[i] + n) for s, i, n in zip(starts, block_id, block.shape))
            return np.ascontiguousarray(np.asarray(data[key], dtype=dtype))
        block_bytes = dtype.itemsize * int(np.prod(grid.chunksize, dtype=np.int64))
        # The block the backend returns (copied into the task's memory), and
        # about as much again for the stored chunks it decodes to slice it.
        return strata.map_blocks(read, grid, dtype=dtype, extra_mem=2 * block_bytes,
                                 name="from_array-xarray")

    def rechunk(self, data, chunks, **kwargs):
        # xarray's {axis: size}: Array.rechunk keeps the other axes' chunks.
        return data.rechunk(chunks)

    def compute(self, *data, **kwargs):
        arrays = [d for d in data if isinstance(d, Array)]
        results = iter(strata.compute(*arrays, **kwargs) if arrays else ())
        return tuple(next(results) if isinstance(d, Array) else d for d in data)

    def persist(self, *data, **kwargs):
        arrays = [d for d in data if isinstance(d, Array)]
        results = iter(strata.compute(*arrays, **kwargs) if arrays else ())
        return tuple(strata.asarray(next(results), chunks=d.chunks, spec=d.spec)
                     if isinstance(d, Array) else d for d in data)

    @property
    def array_api(self):
        return strata

    def map_blocks(self, func, *args, dtype=None, chunks=None, drop_axis=None, new_axis=None,
                   **kwargs):
        if drop_axis not in (None, [], ()) or new_axis not in (None, [], ()):
            raise NotImplementedError("strata chunk manager: map_blocks with drop_axis or "
                                      "new_axis is not supported")
        if chunks is not None:
            raise NotImplementedError("strata chunk manager: map_blocks with chunks= is not "
                                      "supported (blocks keep their shape)")
        kwargs.pop("meta", None)
        return self._map(func, args, dtype, kwargs, "map_blocks")

    def _map(self, func, args, dtype, kwargs, what):
        """func over the blocks of the strata arrays among args (other
        arguments passed as they are), blocks keeping their shape."""
        positions = [i for i, a in enumerate(args) if isinstance(a, Array)]
        if not positions:
            raise TypeError(f"strata chunk manager: {what} needs a strata array argument")
        if dtype is None:
            raise ValueError(f"strata chunk manager: {what} needs the output dtype")
        args = list(args)

        def on_blocks(*blocks):
            full = list(args)
            for i, b in zip(positions, blocks):
                full[i] = b
            return np.asarray(func(*full, **kwargs), dtype=dtype)
        return strata.map_blocks(on_blocks, *[args[i] for i in positions], dtype=dtype,
                                 name=f"{what}-{getattr(func, '__name__', 'function')}")

    def apply_gufunc(self, func, signature, *args, axes=None, keepdims=False,
                     output_dtypes=None, vectorize=None, **kwargs):
        ins, arrow, outs = signature.replace(" ", "").partition("->")
        core_in = [c.strip("()") for c in ins.split("),(")] if ins else []
        if not arrow or "),(" in outs or outs.count("(") != 1:
            raise NotImplementedError(f"strata chunk manager: apply_gufunc {signature}: one "
                                      "output only")
        core_out = outs.strip("()")
        # Block by block, the blocks keeping their shape: every input's core
        # dimensions (whole in one block, as xarray checks) are the output's.
        if axes is not None or keepdims or any(c not in ("", core_out) for c in core_in) or \
                (core_out and core_out not in core_in):
            raise NotImplementedError(
                f"strata chunk manager: apply_gufunc {signature}: only functions that keep the "
                "block shape are supported (the output has the inputs' core dimensions, or "
                "there are none)")
        for key in ("allow_rechunk", "output_sizes", "meta"):
            kwargs.pop(key, None)
        if output_dtypes is None:
            raise ValueError("strata chunk manager: apply_gufunc needs output_dtypes")
        dtype = output_dtypes[0] if isinstance(output_dtypes, (list, tuple)) else output_dtypes
        if vectorize:
            func = np.vectorize(func, signature=signature, otypes=[dtype])
        return self._map(func, args, dtype, kwargs, "apply_gufunc")

    def store(self, sources, targets, **kwargs):
        if isinstance(sources, Array):   # one source and one target, as Dask's store
            sources, targets = [sources], [targets]
            if kwargs.get("regions") is not None:
                kwargs["regions"] = [kwargs["regions"]]
        regions = kwargs.get("regions") or [None] * len(sources)
        compute = kwargs.get("compute", True)
        handles = []
        for source, target, region in zip(sources, targets, regions):
            url = _zarr_array_url(target)
            region = tuple(region) if region is not None else None
            handles.append(strata.to_zarr(source, url, region=region, compute=False))
        if not compute:
            return handles
        strata.compute(*handles)
        return None


@functools.lru_cache(maxsize=1)
def chunk_manager():
    """The StrataChunkManager instance (for `chunked_array_type=` when the
    entry point is not installed)."""
    return StrataChunkManager()


# ---------------------------------------------------------------- .chunk()

def _chunked_data(obj):
    """The chunked arrays (strata's, Dask's, ...) among obj's variables."""
    from xarray.namedarray.pycompat import is_chunked_array
    variables = obj.variables.values() if hasattr(obj, "data_vars") else [obj]
    return [v._data for v in variables if is_chunked_array(v._data)]


def _keeps_strata(chunk):
    """Dataset.chunk or Variable.chunk, made to rechunk strata arrays with
    strata: without chunked_array_type, xarray picks its default chunk
    manager (Dask, when both are installed) for every variable, and Dask's
    from_array would wrap the strata arrays, so that a Strata-backed
    dataset's .chunk() left Strata. Here an object whose chunked data are
    all strata arrays is chunked by strata's manager (its numpy variables
    become strata arrays too, as with chunked_array_type="strata"); any
    other object, and any explicit chunked_array_type, go as xarray says."""
    import inspect
    position = list(inspect.signature(chunk).parameters).index("chunked_array_type")

    @functools.wraps(chunk)
    def wrapper(self, *args, **kwargs):
        if len(args) < position and kwargs.get("chunked_array_type") is None:
            chunked = _chunked_data(self)
            if chunked and all(isinstance(d, Array) for d in chunked):
                kwargs["chunked_array_type"] = chunk_manager()
        return chunk(self, *args, **kwargs)
    wrapper.__strata_keeps_strata__ = True
    return wrapper


# ---------------------------------------------------------------- indexing

def _strata_indexable(as_indexable):
    """xarray's as_indexable, giving strata arrays an adapter that does
    vectorized (pointwise) indexing: xarray wraps every Array API array in
    ArrayApiIndexingAdapter, which refuses it, so `sel` with DataArray
    indexers and `isel` with two lists failed on strata arrays, which index
    pointwise lazily (numpy's advanced indexing)."""
    from xarray.core.indexing import ArrayApiIndexingAdapter
    from xarray.core.nputils import NumpyVIndexAdapter

    class StrataIndexingAdapter(ArrayApiIndexingAdapter):
        """ArrayApiIndexingAdapter with xarray's vectorized indexing, as its
        numpy adapter does it (numpy's advanced indexing, then the
        broadcast axes moved where xarray wants them)."""
        __slots__ = ()

        def _vindex_get(self, indexer):
            return NumpyVIndexAdapter(self.array)[indexer.tuple]

    @functools.wraps(as_indexable)
    def wrapper(array):
        if isinstance(array, Array):
            return StrataIndexingAdapter(array)
        return as_indexable(array)
    wrapper.__strata_indexable__ = True
    return wrapper


def _install():
    """Hooks strata into xarray, once: Dataset.chunk (DataArray.chunk goes
    through it) and Variable.chunk (_keeps_strata), and xarray's
    as_indexable (_strata_indexable)."""
    import xarray as xr
    from xarray.core import indexing, variable
    for cls in (xr.Dataset, xr.Variable):
        if not getattr(cls.chunk, "__strata_keeps_strata__", False):
            cls.chunk = _keeps_strata(cls.chunk)
    if not getattr(indexing.as_indexable, "__strata_indexable__", False):
        indexing.as_indexable = _strata_indexable(indexing.as_indexable)
    # variable.py imported the name itself.
    variable.as_indexable = indexing.as_indexable


_install()


def _zarr_array_url(target):
    """Where a zarr-python 3 array xarray created lives, as a strata path
    (a LocalStore's directory and the array's path in it)."""
    store = getattr(target, "store", None)
    path = getattr(target, "path", "") or ""
    root = getattr(store, "root", None)
    if type(store).__name__ == "LocalStore" and root is not None:
        return os.path.join(str(root), path) if path else str(root)
    raise NotImplementedError(f"strata chunk manager: cannot write into a zarr-python "
                              f"{type(store).__name__}; write to a local path, or to an s3:// "
                              "group with .strata.to_zarr")
