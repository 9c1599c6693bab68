"""Zarr input and output: from_zarr, to_zarr, store (local paths and s3://)."""
import json
import os

from ._array import Array, _wrap
from ._core import _strata, spec_arg


def _location(store, path, what):
    """A path or URL from what Cubed and Dask accept as a store: a string, a
    PathLike, or a zarr-python array/DirectoryStore (by its directory)."""
    if isinstance(store, os.PathLike):
        store = os.fspath(store)
    if not isinstance(store, str):
        zstore = getattr(store, "store", store)
        directory = getattr(zstore, "path", None) or getattr(zstore, "dir_path", None)
        if callable(directory):
            directory = directory()
        if not isinstance(directory, str):
            raise TypeError(f"{what}: expected a path, an s3:// URL or a zarr array in a "
                            f"directory store, got {type(store).__name__}")
        inner = getattr(store, "path", "") if store is not zstore else ""
        store = os.path.join(directory, inner) if inner else directory
    if path:
        store = store.rstrip("/") + "/" + str(path).lstrip("/")
    return store


def from_zarr(store, path=None, spec=None):
    """A Zarr array (v2 or v3) as a lazy Array; its chunks are its Zarr chunks.
    Nothing but the metadata is read until compute."""
    return _wrap(_strata.from_zarr(_location(store, path, "from_zarr"), spec_arg(spec)))


def _to_zarr_handle(x, store, path, overwrite, zarr_format, codec, attrs, fill_value=None,
                    dimension_names=None):
    if not isinstance(x, Array):
        raise TypeError(f"to_zarr: expected a strata.Array, got {type(x).__name__}")
    if dimension_names is not None:
        dimension_names = [None if n is None else str(n) for n in dimension_names]
        if len(dimension_names) != x.ndim:
            raise ValueError(f"to_zarr: {len(dimension_names)} dimension_names for an array of "
                             f"{x.ndim} dimensions")
    return _strata.to_zarr(x._h, _location(store, path, "to_zarr"), codec, int(zarr_format),
                           bool(overwrite), json.dumps(attrs or {}), fill_value,
                           dimension_names)


def to_zarr(x, store, path=None, *, compute=True, overwrite=False, zarr_format=2, codec=None,
            attrs=None, fill_value=None, dimension_names=None, **compute_kwargs):
    """Writes x to a Zarr array at `store` (a path or s3:// URL).

    With compute=False returns a lazy handle to pass to strata.compute (with
    other arrays, sharing their inputs). codec is the CLI's syntax
    ("zstd:level=3", "none"; default blosc lz4). fill_value: the array's Zarr
    fill value (default 0; "null" for Zarr v2's null, which writes every
    chunk). dimension_names: Zarr v3's names per axis."""
    handle = _wrap(_to_zarr_handle(x, store, path, overwrite, zarr_format, codec, attrs,
                                   fill_value, dimension_names))
    if not compute:
        return handle
    from ._compute import compute as _compute
    _compute(handle, **compute_kwargs)
    return None


def store(sources, targets, *, compute=True, overwrite=False, zarr_format=2, codec=None,
          **compute_kwargs):
    """Writes each source to its target in one compute (Cubed's store)."""
    if isinstance(sources, Array):
        sources, targets = [sources], [targets]
    if len(sources) != len(targets):
        raise ValueError(f"store: {len(sources)} sources but {len(targets)} targets")
    handles = [_wrap(_to_zarr_handle(s, t, None, overwrite, zarr_format, codec, None))
               for s, t in zip(sources, targets)]
    if not compute:
        return handles
    from ._compute import compute as _compute
    _compute(*handles, **compute_kwargs)
    return None
