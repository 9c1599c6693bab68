"""Zarr input and output on engine handles: from_zarr, to_zarr, store (local
paths and s3://).

Below strata.Array, so that x.to_zarr(...) is the code path of
strata.to_zarr(x, ...) (_io.py, which converts Arrays to handles)."""
import json
import numbers
import operator
import os

import numpy as np

from . import _execute
from ._core import _strata, int64_arg, spec_arg


def _location(store, path, what):
    """A path or URL from what Cubed and Dask accept as a store: a string, a
    PathLike, or a zarr-python 3 array/LocalStore (by its directory, `root`)."""
    if isinstance(store, os.PathLike):
        store = os.fspath(store)
    if not isinstance(store, str):
        zstore = getattr(store, "store", store)
        directory = getattr(zstore, "root", None)
        if isinstance(directory, os.PathLike):
            directory = os.fspath(directory)
        if not isinstance(directory, str):
            raise TypeError(f"{what}: expected a path, an s3:// URL or a zarr array in a "
                            f"directory store, got {type(store).__name__}")
        inner = getattr(store, "path", "") if store is not zstore else ""
        store = os.path.join(directory, inner) if inner else directory
    if path:
        store = store.rstrip("/") + "/" + str(path).lstrip("/")
    return store


def from_zarr(store, path=None, spec=None):
    """The handle of a Zarr array (v2 or v3); its chunks are its Zarr chunks.
    Nothing but the metadata is read until compute."""
    return _strata.from_zarr(_location(store, path, "from_zarr"), spec_arg(spec))


def _to_zarr_handle(h, store, path, overwrite, zarr_format, codec, attrs, fill_value=None,
                    dimension_names=None, region=None, append_dim=None):
    ndim = len(h.shape)
    location = _location(store, path, "to_zarr")
    if region is not None or append_dim is not None:
        given = [name for name, value in (
            ("overwrite", overwrite or None), ("zarr_format", zarr_format), ("codec", codec),
            ("attrs", attrs), ("fill_value", fill_value),
            ("dimension_names", dimension_names)) if value is not None]
        what = "region=" if region is not None else "append_dim="
        if given:
            raise ValueError(f"to_zarr: {', '.join(given)} describe a new array; with {what} "
                             "the existing array keeps its own metadata")
        if region is not None and append_dim is not None:
            raise ValueError("to_zarr: give region= or append_dim=, not both")
        region_origin = None if region is None else _region_origin(h, location, region)
        if append_dim is not None:
            append_dim = _axis(append_dim, ndim, "append_dim")
        return _strata.to_zarr(h, location, region_origin=region_origin,
                               append_dim=append_dim)
    if dimension_names is not None:
        dimension_names = [None if n is None else str(n) for n in dimension_names]
        if len(dimension_names) != ndim:
            raise ValueError(f"to_zarr: {len(dimension_names)} dimension_names for an array of "
                             f"{ndim} dimensions")
    zarr_format = 2 if zarr_format is None else zarr_format
    return _strata.to_zarr(h, location, codec, int(zarr_format),
                           bool(overwrite), json.dumps(attrs or {}), fill_value,
                           dimension_names)


def _axis(axis, ndim, what):
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"to_zarr: {what} must be an axis (an int), got {axis!r}")
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"to_zarr: {what}={axis} is out of range for an array of {ndim} "
                         "dimensions")
    return axis % ndim


def _existing_shape(location):
    """The shape of the Zarr array at `location` (its metadata only)."""
    try:
        return tuple(_strata.from_zarr(location, None).shape)
    except FileNotFoundError as e:
        # As the engine says it for origins: "to_zarr PATH: PATH does not exist".
        text = str(e).removeprefix("from_zarr: ")
        raise FileNotFoundError(f"to_zarr {location}: {text}") from None


def _region_origin(h, location, region):
    """`region` (per axis of x, a slice of the existing array or the origin
    as an int) as origins. Slices are xarray's and zarr-python's: step 1,
    None for the array's ends, negative bounds from the end; each must
    select x's extent on its axis, inside the array."""
    shape = tuple(h.shape)
    if not isinstance(region, (tuple, list)):
        raise TypeError(f"to_zarr: region must be a tuple with a slice or an int per axis, got "
                        f"{type(region).__name__}")
    if len(region) != len(shape):
        raise ValueError(f"to_zarr: region has {len(region)} entries for an array of {len(shape)} "
                         "dimensions")
    extents = None
    origin = []
    for axis, r in enumerate(region):
        if isinstance(r, slice):
            if r.step is not None and _index(r.step, axis, r) != 1:
                raise ValueError(f"to_zarr: region[{axis}] is {r}: its step must be 1")
            if extents is None:
                extents = _existing_shape(location)
                if len(extents) != len(shape):
                    raise ValueError(f"to_zarr: x has {len(shape)} dimensions, the array at "
                                     f"{location!r} has {len(extents)}")
            n = extents[axis]
            start = 0 if r.start is None else _index(r.start, axis, r)
            stop = n if r.stop is None else _index(r.stop, axis, r)
            start, stop = (start + n if start < 0 else start), (stop + n if stop < 0 else stop)
            if not 0 <= start <= stop <= n:
                raise ValueError(f"to_zarr: region[{axis}] is {r}, outside axis {axis} of the "
                                 f"array at {location!r} (extent {n})")
            if stop - start != shape[axis]:
                raise ValueError(f"to_zarr: region[{axis}] is {r}, {stop - start} elements, but "
                                 f"x has {shape[axis]} on axis {axis}")
            origin.append(start)
        else:
            origin.append(_index(r, axis, r))
    return origin


def _index(v, axis, r):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
        raise TypeError(f"to_zarr: region[{axis}] must be a slice of ints or an int, got {r!r}")
    return int64_arg(operator.index(v), f"to_zarr: region[{axis}]", r)


def to_zarr(h, store, path=None, *, compute=True, overwrite=False, zarr_format=None, codec=None,
            attrs=None, fill_value=None, dimension_names=None, region=None, append_dim=None,
            **compute_kwargs):
    """Writes x to a Zarr array at `store` (a path or s3:// URL).

    With compute=False returns a lazy handle to pass to strata.compute (with
    other arrays, sharing their inputs). codec is the CLI's syntax
    ("zstd:level=3", "none"; default blosc lz4). fill_value: the array's Zarr
    fill value (default 0; "null" for Zarr v2's null, which writes every
    chunk). dimension_names: Zarr v3's names per axis. zarr_format: 2
    (default) or 3.

    Into an existing array (its metadata, codecs and chunks kept; the
    options above describe new arrays and are refused with these):
    region= backfills a box of it, a tuple with per axis a slice of the
    array (step 1, of x's extent there; zarr-python's `z[region] = x`) or
    the box's origin as an int; append_dim= grows it along that axis by
    x's extent there (the other extents must match; the new shape is
    written last, so until the compute ends readers see the old array).
    Chunks x covers partly are read, updated and rewritten under a lock per
    chunk. x is cast to the array's dtype if numpy's same_kind rule allows
    (a ValueError otherwise). A missing array is FileNotFoundError."""
    handle = _to_zarr_handle(h, store, path, overwrite, zarr_format, codec, attrs,
                             fill_value, dimension_names, region, append_dim)
    if not compute:
        return handle
    _execute.run([handle], **compute_kwargs)
    return None


def store(sources, targets, *, compute=True, overwrite=False, zarr_format=2, codec=None,
          **compute_kwargs):
    """Writes each source (a handle) to its target in one compute (Cubed's
    store); with compute=False returns the to_zarr handles."""
    if len(sources) != len(targets):
        raise ValueError(f"store: {len(sources)} sources but {len(targets)} targets")
    handles = [_to_zarr_handle(s, t, None, overwrite, zarr_format, codec, None)
               for s, t in zip(sources, targets)]
    if not compute:
        return handles
    _execute.run(handles, **compute_kwargs)
    return None
