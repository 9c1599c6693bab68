"""Zarr input and output: from_zarr, to_zarr, store (local paths and s3://).
x.to_zarr(...) takes the same path (_zarr_io.py, on engine handles)."""
from . import _zarr_io
from .array_api.array_object import Array, _wrap


def from_zarr(store, path=None, spec=None):
    """A Zarr array (v2 or v3) as a lazy Array; its chunks are its Zarr chunks.
    Nothing but the metadata is read until compute."""
    return _wrap(_zarr_io.from_zarr(store, path, spec))


def to_zarr(x, store, path=None, **kwargs):
    if not isinstance(x, Array):
        raise TypeError(f"to_zarr: expected a strata.Array, got {type(x).__name__}")
    return x.to_zarr(store, path, **kwargs)


to_zarr.__doc__ = _zarr_io.to_zarr.__doc__


def store(sources, targets, **kwargs):
    """Writes each source to its target in one compute (Cubed's store); with
    compute=False returns the lazy to_zarr Arrays to pass to strata.compute."""
    if isinstance(sources, Array):
        sources, targets = [sources], [targets]
    for s in sources:
        if not isinstance(s, Array):
            raise TypeError(f"store: expected strata.Array sources, got {type(s).__name__}")
    handles = _zarr_io.store([s._h for s in sources], targets, **kwargs)
    return None if handles is None else [_wrap(h) for h in handles]
