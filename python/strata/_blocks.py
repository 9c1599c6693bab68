"""Python functions over blocks, on engine handles: map_blocks and
map_overlap (blocks with a halo from their neighbours), with Dask's
signatures and, as far as the engine allows, its semantics (the differences
are in each docstring). Below strata.Array, so that x.map_blocks(...) is the
code path of strata.map_blocks(..., x) (_block_functions.py, which converts
Arrays to handles and adds apply_gufunc).

Each is one C++ op (src/strata/api/map_blocks.cc, overlap.h, gufunc.h); the
function runs on the engine's worker threads holding the GIL for each call
only (src/strata/python/block_functions.cc). Its inputs are read-only numpy
views of the engine's blocks, valid during the call. Its result is cast to
the declared dtype where numpy's same_kind casting allows (else the block is
refused with an error naming the op, the function and the block) and copied
into the task's memory pool, so that the projection counts it and the
measured peak sees it. What the function allocates besides its result is
outside the engine's pools: declare it with extra_mem (Cubed's
extra_projected_mem), which joins every task's memory projection. An
exception raised by the function is raised by compute() as itself, with the
op and the block in a note.

The processes and mpi executors refuse these ops (the function lives in
this interpreter); the dask executor sends the function to its workers with
cloudpickle (a function cloudpickle cannot pickle is refused when the
compute starts).
"""
import functools
import inspect
import numbers
import operator

import numpy as np

from ._core import _strata, dtype_name


def _accepts_block_id(func):
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return "block_id" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _function_name(func):
    while isinstance(func, functools.partial):
        func = func.func
    return getattr(func, "__name__", type(func).__name__)


def _label(op, func, name):
    if name is not None:
        if not isinstance(name, str):
            raise TypeError(f"{op}: name must be a string, got {type(name).__name__}")
        return name
    return f"{op}-{_function_name(func)}"


def _extra_mem(extra_mem, extra_projected_mem, op):
    """Bytes the function needs per call beyond its inputs and result
    (strata's extra_mem, or Cubed's name for it)."""
    if extra_projected_mem is not None:
        if extra_mem:
            raise TypeError(f"{op}: give extra_mem or extra_projected_mem, not both")
        extra_mem = extra_projected_mem
    if isinstance(extra_mem, (bool, np.bool_)) or not isinstance(extra_mem, numbers.Integral):
        raise TypeError(f"{op}: extra_mem must be a number of bytes, got {extra_mem!r}")
    return int(extra_mem)


def _callable(func, op):
    if not callable(func):
        raise TypeError(f"{op}: {func!r} is not callable")


def _with_kwargs(func, kwargs):
    return functools.partial(func, **kwargs) if kwargs else func


# ================================================================ map_blocks

def map_blocks(func, handles, dtype=None, chunks=None, extra_mem=0, extra_projected_mem=None,
               name=None, **kwargs):
    """Applies func to corresponding blocks of the array arguments (Dask's and
    Cubed's map_blocks). func gets read-only numpy blocks (valid during the
    call only) and returns a numpy block; it runs on the engine's worker
    threads holding the GIL for each call, so it cannot run on the processes
    or mpi executors (refused with ValueError). func gets block_id= when its
    signature has it; other keyword arguments are passed on. dtype defaults to
    the first array's (Dask infers it by calling func); chunks is the output's
    block shape (as many blocks)."""
    _callable(func, "map_blocks")
    if dtype is None:
        dtype = handles[0].dtype
    if chunks is not None:
        chunks = [int(c[0]) if isinstance(c, tuple) else int(c) for c in chunks]
    extra = _extra_mem(extra_mem, extra_projected_mem, "map_blocks")
    return _strata.map_blocks(_with_kwargs(func, kwargs), list(handles), dtype_name(dtype),
                              chunks, extra, _label("map_blocks", func, name),
                              _accepts_block_id(func))


# =============================================================== map_overlap

_BOUNDARY_MODES = ("none", "reflect", "periodic", "nearest")
# Keyword arguments Dask's map_overlap gives to map_blocks, not to func.
_MAP_BLOCKS_ONLY = ("chunks", "drop_axis", "new_axis")


def _axis_key(axis, ndim, what):
    try:
        a = operator.index(axis)
    except TypeError:
        raise TypeError(f"map_overlap: {what} keys must be axes (ints), got {axis!r}") from None
    if not -ndim <= a < ndim:
        raise ValueError(f"map_overlap: axis {axis} of {what} is out of range for an array of "
                         f"{ndim} dimensions")
    return a % ndim


def _per_axis(value, ndim, default, what):
    """Dask's forms: one value for every axis, a tuple (one per axis) or a
    dict {axis: value} (missing axes take `default`)."""
    if isinstance(value, dict):
        out = [default] * ndim
        for axis, v in value.items():
            out[_axis_key(axis, ndim, what)] = v
        return out
    if isinstance(value, tuple):
        if len(value) != ndim:
            raise ValueError(f"map_overlap: {what} {value!r} has {len(value)} entries for an "
                             f"array of {ndim} dimensions (give one per axis, or a dict)")
        return list(value)
    return [value] * ndim


def _depths(depth, ndim):
    """(before, after) per axis. A tuple gives one entry per axis; an entry
    may be an int or, in a dict or a tuple, a (before, after) pair (Dask's
    asymmetric depth)."""
    if depth is None:
        depth = 0
    if not isinstance(depth, (dict, tuple)) and (
            isinstance(depth, (bool, np.bool_)) or not isinstance(depth, numbers.Integral)):
        raise TypeError(f"map_overlap: depth must be an int, a tuple (one per axis) or a dict "
                        f"{{axis: depth}}, got {depth!r}")
    before, after = [], []
    for d in _per_axis(depth, ndim, 0, "depth"):
        if isinstance(d, tuple):
            if len(d) != 2:
                raise ValueError(f"map_overlap: an asymmetric depth is a (before, after) pair, "
                                 f"got {d!r}")
            b, a = d
        else:
            b = a = d
        try:
            before.append(operator.index(b))
            after.append(operator.index(a))
        except TypeError:
            raise TypeError(f"map_overlap: depths must be ints, got {d!r}") from None
    return before, after


def _boundaries(boundary, ndim):
    """Mode names per axis for the engine and the one constant value."""
    if boundary is None:
        boundary = "none"
    modes, constants = [], []
    for b in _per_axis(boundary, ndim, "none", "boundary"):
        if isinstance(b, str):
            if b not in _BOUNDARY_MODES:
                raise ValueError(f"map_overlap: unknown boundary {b!r} (expected 'none', "
                                 f"'reflect', 'periodic', 'nearest' or a constant value)")
            modes.append(b)
        elif isinstance(b, (numbers.Number, np.generic)):
            modes.append("constant")
            if not any(c == b or (c != c and b != b) for c in constants):
                constants.append(b)
        else:
            raise TypeError(f"map_overlap: a boundary is 'none', 'reflect', 'periodic', "
                            f"'nearest' or a constant value, got {b!r}")
    if len(constants) > 1:
        raise NotImplementedError(f"map_overlap: constant boundaries of different values on "
                                  f"different axes ({constants}) are not supported; use one "
                                  f"value")
    return modes, (constants[0] if constants else 0)


def _one_for_all(value, arrays, coerce, what):
    """Dask allows one depth/boundary per array (a list); strata's halo is
    the same for every array."""
    if not isinstance(value, list):
        return coerce(value)
    if len(value) != len(arrays):
        raise ValueError(f"map_overlap: {what} is a list of {len(value)} entries for "
                         f"{len(arrays)} arrays")
    got = [coerce(v) for v in value]
    if any(g != got[0] for g in got):
        raise NotImplementedError(f"map_overlap: a different {what} per array is not "
                                  f"supported; every array gets the same halo")
    return got[0]


def map_overlap(func, handles, depth=None, boundary=None, trim=True, align_arrays=True,
                allow_rechunk=True, dtype=None, meta=None, extra_mem=0,
                extra_projected_mem=None, name=None, **kwargs):
    """Applies func to each block extended by `depth` elements of its
    neighbours along each axis (Dask's map_overlap).

    depth: an int, a tuple (one per axis) or a dict {axis: depth}; an entry
    may be a (before, after) pair. The halo may be deeper than a block (it
    then comes from several blocks; nothing is rechunked for it, so
    allow_rechunk changes nothing). boundary: 'none' (the default, as Dask's:
    no halo past the array's edges, edge blocks are smaller), 'reflect'
    (mirrored with the edge), 'periodic', 'nearest', or a constant value; per
    axis as a tuple or a dict (one constant value for all axes). trim=True:
    func returns the extended block and it is trimmed back; trim=False: func
    returns the block without its halo. Several arrays must have one shape
    (their chunks are unified unless align_arrays=False, which refuses
    different chunks); func gets one extended block of each. func gets
    block_id= when its signature has it; other keyword arguments are passed
    on. dtype defaults to meta's, else the first array's (Dask infers it by
    calling func); Dask's chunks=, drop_axis= and new_axis= are not
    supported (the output has the input's shape and chunks).

    The projection of each task counts the blocks its halo comes from, the
    extended block, func's result and the output block, plus extra_mem
    (Cubed: extra_projected_mem) for what func allocates itself."""
    _callable(func, "map_overlap")
    for k in _MAP_BLOCKS_ONLY:
        if k in kwargs:
            raise NotImplementedError(
                f"map_overlap: {k}= is not supported: the output has the input's shape and "
                f"chunks (func returns its block with the halo, or without it with trim=False)")
    arrays = list(handles)
    ndim = len(arrays[0].shape)
    before, after = _one_for_all(depth, arrays, lambda d: _depths(d, ndim), "depth")
    modes, constant = _one_for_all(boundary, arrays, lambda b: _boundaries(b, ndim),
                                   "boundary")
    if not align_arrays and any(a.chunks != arrays[0].chunks for a in arrays):
        raise ValueError(f"map_overlap: the arrays' chunks differ "
                         f"({[a.chunksize for a in arrays]}) and align_arrays is False")
    if dtype is None:
        dtype = np.asarray(meta).dtype if meta is not None else arrays[0].dtype
    extra = _extra_mem(extra_mem, extra_projected_mem, "map_overlap")
    label = _label("map_overlap", func, name)
    f = _with_kwargs(func, kwargs)
    if not any(before) and not any(after):
        # No halo: map_blocks (Dask does the same); one array, or one shape.
        if any(a.shape != arrays[0].shape for a in arrays):
            raise ValueError(f"map_overlap: the arrays have shapes "
                             f"{[a.shape for a in arrays]}; they must have one shape")
        return _strata.map_blocks(f, arrays, dtype_name(dtype), None, extra, label,
                                  _accepts_block_id(func))
    return _strata.map_overlap(f, arrays, dtype_name(dtype), before, after, modes,
                               constant, bool(trim), extra, label, _accepts_block_id(func))
