"""Python functions over blocks: map_blocks, map_overlap (blocks with a halo
from their neighbours) and apply_gufunc (blocks whole along core
dimensions), with Dask's signatures and, as far as the engine allows, its
semantics (the differences are in each docstring).

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
import warnings

import numpy as np

from ._array import Array, _wrap
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

def map_blocks(func, *args, dtype=None, chunks=None, extra_mem=0, extra_projected_mem=None,
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
    arrays = list(args)
    if not arrays or not all(isinstance(a, Array) for a in arrays):
        raise TypeError("map_blocks: pass the arrays as positional arguments "
                        "(other arguments as keywords)")
    if dtype is None:
        dtype = arrays[0].dtype
    if chunks is not None:
        chunks = [int(c[0]) if isinstance(c, tuple) else int(c) for c in chunks]
    extra = _extra_mem(extra_mem, extra_projected_mem, "map_blocks")
    return _wrap(_strata.map_blocks(_with_kwargs(func, kwargs), [a._h for a in arrays],
                                    dtype_name(dtype), chunks, extra,
                                    _label("map_blocks", func, name), _accepts_block_id(func)))


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


def map_overlap(func, *args, depth=None, boundary=None, trim=True, align_arrays=True,
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
    if not args:
        raise TypeError("map_overlap: no arrays given (usage: map_overlap(func, x, y, ...))")
    for a in args:
        if not isinstance(a, Array):
            raise TypeError(f"map_overlap: the positional arguments after func must be "
                            f"strata.Array objects (other arguments as keywords), got "
                            f"{type(a).__name__}")
    for k in _MAP_BLOCKS_ONLY:
        if k in kwargs:
            raise NotImplementedError(
                f"map_overlap: {k}= is not supported: the output has the input's shape and "
                f"chunks (func returns its block with the halo, or without it with trim=False)")
    arrays = list(args)
    ndim = arrays[0].ndim
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
    handles = [a._h for a in arrays]
    if not any(before) and not any(after):
        # No halo: map_blocks (Dask does the same); one array, or one shape.
        if any(a.shape != arrays[0].shape for a in arrays):
            raise ValueError(f"map_overlap: the arrays have shapes "
                             f"{[a.shape for a in arrays]}; they must have one shape")
        return _wrap(_strata.map_blocks(f, handles, dtype_name(dtype), None, extra, label,
                                        _accepts_block_id(func)))
    return _wrap(_strata.map_overlap(f, handles, dtype_name(dtype), before, after, modes,
                                     constant, bool(trim), extra, label,
                                     _accepts_block_id(func)))


# ============================================================== apply_gufunc

def _normalize_axes(axes, axis, keepdims, input_cores, output_cores):
    """Dask's _validate_normalize_axes: the axes of each input and output
    that are its core dimensions (numpy's rules for axes=, axis=,
    keepdims=)."""
    nin, nout = len(input_cores), len(output_cores)
    if axes is not None and axis is not None:
        raise ValueError("apply_gufunc: give axes= or axis=, not both")
    if axes is not None and not isinstance(axes, list):
        raise ValueError("apply_gufunc: axes must be a list (one entry per argument)")
    filtered = [cd for cd in input_cores if len(cd)]
    with_core = sum(1 for cd in output_cores if len(cd))
    outs = list(output_cores)
    if keepdims:
        if with_core:
            raise ValueError("apply_gufunc: keepdims can only be used for scalar outputs")
        if not filtered:
            raise ValueError("apply_gufunc: keepdims needs inputs with core dimensions")
        outs = [filtered[0]] * nout
    cores = list(input_cores) + outs
    if axis is not None:
        if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, numbers.Integral):
            raise ValueError("apply_gufunc: axis must be an integer")
        if filtered:
            if len(filtered[0]) != 1:
                raise ValueError("apply_gufunc: axis can be used only with one core dimension")
            if any(cd != filtered[0] for cd in filtered):
                raise ValueError("apply_gufunc: to use axis, all core dimensions must be equal")
    if axes is None:
        if axis is not None:
            axes = [(int(axis),) if cd else () for cd in cores]
        else:
            axes = [tuple(range(-len(cd), 0)) for cd in cores]
    axes = [(a,) if isinstance(a, numbers.Integral) else tuple(a) for a in axes]
    if (with_core == 0 and len(axes) not in (nin, nin + nout)) or \
            (with_core > 0 and len(axes) != nin + nout):
        raise ValueError("apply_gufunc: the number of axes entries is not the number of input "
                         "and output arguments")
    output_axes = axes[nin:] or [tuple(range(-len(cd), 0)) for cd in outs]
    input_axes = axes[:nin]
    for i, (iax, icd) in enumerate(zip(input_axes, input_cores)):
        if len(iax) != len(icd):
            raise ValueError(f"apply_gufunc: axes entry {i} has {len(iax)} axes, the signature "
                             f"gives input {i} {len(icd)} core dimensions")
    if not keepdims:
        for i, (oax, ocd) in enumerate(zip(output_axes, outs)):
            if len(oax) != len(ocd):
                raise ValueError(f"apply_gufunc: the axes entry of output {i} has {len(oax)} "
                                 f"axes, the signature gives it {len(ocd)} core dimensions")
    else:
        if any(icd != input_cores[0] for icd in input_cores):
            raise ValueError("apply_gufunc: to use keepdims, all core dimensions must be equal")
        output_axes = [input_axes[0]] * nout
    return input_axes, output_axes


def _permute(x, perm):
    from ._functions import permute_dims
    return x if list(perm) == list(range(x.ndim)) else permute_dims(x, perm)


def _core_axes_last(x, iax, i):
    n = x.ndim
    for a in iax:
        if not -n <= a < n:
            raise ValueError(f"apply_gufunc: axis {a} of input {i} is out of range for its "
                             f"{n} dimensions")
    iax = tuple(a if a < 0 else a - n for a in iax)
    if len(set(iax)) != len(iax):
        raise ValueError(f"apply_gufunc: input {i} names an axis twice in {iax}")
    order = tuple(a for a in range(-n, 0) if a not in iax) + iax
    return _permute(x, [a % n for a in order])


def _core_axes_placed(x, oax, i):
    n = x.ndim
    places = [None] * n
    try:
        for src, dst in zip(range(-len(oax), 0), oax):
            places[dst] = src
    except (IndexError, TypeError):
        raise ValueError(f"apply_gufunc: output axes {oax} of output {i} are out of range for "
                         f"its {n} dimensions") from None
    j = 0
    for k in range(n):
        if places[k] is None:
            places[k] = j
            j += 1
    return _permute(x, [p % n for p in places])


def _infer_dtypes(func, arrays, several, nout):
    """Dask's dtype inference: func called on arrays of ones, one element
    along every axis."""
    probes = [np.ones((1,) * a.ndim, dtype=a.dtype) for a in arrays]
    try:
        # Warnings about these made-up arrays (a fit through one point) are
        # not the user's.
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = func(*probes)
    except Exception as e:
        raise ValueError(f"apply_gufunc: cannot infer the output dtypes: "
                         f"{_function_name(func)} raised {type(e).__name__}: {e} on arrays of "
                         f"ones; pass output_dtypes=") from e
    if several:
        if not isinstance(out, (tuple, list)) or len(out) != nout:
            raise ValueError(f"apply_gufunc: {_function_name(func)} should return {nout} "
                             f"arrays (the signature has {nout} outputs), it returned "
                             f"{type(out).__name__}")
        return [np.asarray(o).dtype for o in out]
    return [np.asarray(out).dtype]


def _dtype_list(output_dtypes, several, nout):
    if several:
        if not isinstance(output_dtypes, (tuple, list)):
            raise ValueError(f"apply_gufunc: for a function with {nout} outputs, give a tuple "
                             f"or list of {nout} output_dtypes, not a single item")
        if len(output_dtypes) != nout:
            raise ValueError(f"apply_gufunc: for a function with {nout} outputs, give {nout} "
                             f"output_dtypes, not {len(output_dtypes)}")
        return list(output_dtypes)
    if isinstance(output_dtypes, (tuple, list)):
        if len(output_dtypes) != 1:
            raise ValueError("apply_gufunc: for a function with one output, give one output "
                             "dtype, not a tuple or list")
        return list(output_dtypes)
    return [output_dtypes]


def apply_gufunc(func, signature, *args, axes=None, axis=None, keepdims=False,
                 output_dtypes=None, output_sizes=None, vectorize=None, allow_rechunk=False,
                 meta=None, extra_mem=0, extra_projected_mem=None, name=None, **kwargs):
    """Applies func to blocks that are whole along the core dimensions of
    `signature` (numpy's generalized ufuncs; Dask's apply_gufunc, the same
    arguments). func gets one numpy block per argument (loop dimensions,
    then its core dimensions, read-only) and returns a block (or a tuple,
    one per output: "(i)->(),()"); with several outputs it runs once per
    block and the outputs share its result. Loop dimensions broadcast and
    their chunks are unified as for elementwise ops. A core dimension in
    several chunks is refused unless allow_rechunk=True (then it is
    rechunked into one chunk; this may need much more memory per task).
    axes/axis/keepdims as numpy's; output_dtypes defaults to what func
    returns on arrays of ones (as Dask); output_sizes for output core
    dimensions no input has; vectorize=True wraps func in numpy.vectorize;
    other keyword arguments are passed to func. Arguments that are not
    strata arrays (numpy arrays, scalars) are converted. A core dimension of
    extent 0 is refused."""
    _callable(func, "apply_gufunc")
    if not isinstance(signature, str):
        raise TypeError(f"apply_gufunc: signature must be a string, got "
                        f"{type(signature).__name__}")
    input_cores, output_cores = _strata.gufunc_signature(signature)
    nout = len(output_cores)
    several = nout > 1
    if len(args) != len(input_cores):
        raise ValueError(f"apply_gufunc: signature {signature!r} has {len(input_cores)} inputs, "
                         f"{len(args)} arrays given")
    spec = next((a.spec for a in args if isinstance(a, Array)), None)
    from ._creation import asarray
    arrays = [a if isinstance(a, Array) else asarray(np.asarray(a), spec=spec) for a in args]
    f = _with_kwargs(func, kwargs)
    if meta is not None:
        if output_dtypes is not None:
            raise ValueError("apply_gufunc: give meta= or output_dtypes=, not both")
        output_dtypes = [np.asarray(m).dtype for m in meta] if isinstance(meta, (tuple, list)) \
            else np.asarray(meta).dtype
    if output_dtypes is None:
        probe = np.vectorize(f, signature=signature) if vectorize else f
        dtypes = _infer_dtypes(probe, arrays, several, nout)
    else:
        dtypes = _dtype_list(output_dtypes, several, nout)
    names = [dtype_name(d, "apply_gufunc: output_dtypes") for d in dtypes]
    if vectorize:
        f = np.vectorize(f, signature=signature, otypes=[np.dtype(n) for n in names])
    if output_sizes is None:
        output_sizes = {}
    if not isinstance(output_sizes, dict):
        raise TypeError("apply_gufunc: output_sizes must be a dict {dimension name: size}")
    input_axes, output_axes = _normalize_axes(axes, axis, keepdims, input_cores, output_cores)
    moved = [_core_axes_last(a, iax, i) for i, (a, iax) in enumerate(zip(arrays, input_axes))]
    extra = _extra_mem(extra_mem, extra_projected_mem, "apply_gufunc")
    outs = _strata.apply_gufunc(f, signature, [a._h for a in moved], names,
                                {str(k): operator.index(v) for k, v in output_sizes.items()},
                                extra, bool(allow_rechunk), _label("apply_gufunc", func, name))
    results = []
    for i, (h, oax) in enumerate(zip(outs, output_axes)):
        out = _wrap(h)
        if keepdims:
            from ._functions import expand_dims
            for _ in oax:
                out = expand_dims(out, axis=out.ndim)
        results.append(_core_axes_placed(out, oax, i))
    return tuple(results) if several else results[0]
