"""Python functions over blocks: map_blocks, map_overlap (blocks with a halo
from their neighbours) and apply_gufunc (blocks whole along core
dimensions), with Dask's signatures and, as far as the engine allows, its
semantics (the differences are in each docstring).

map_blocks and map_overlap convert their Arrays and call _blocks.py, the
code path x.map_blocks and x.map_overlap take too; see _blocks.py for how
the function runs (threads, GIL, memory, errors).
"""
import numbers
import operator
import warnings

import numpy as np

from . import _blocks
from ._blocks import _callable, _extra_mem, _function_name, _label, _with_kwargs
from ._core import _strata, dtype_name
from .array_api.array_object import Array, _wrap
from .array_api.creation_functions import asarray
from .array_api.manipulation_functions import expand_dims, permute_dims


def map_blocks(func, *args, **kwargs):
    """Applies func to corresponding blocks of the array arguments (Dask's and
    Cubed's map_blocks): see _blocks.map_blocks for the keywords."""
    if not args or not all(isinstance(a, Array) for a in args):
        raise TypeError("map_blocks: pass the arrays as positional arguments "
                        "(other arguments as keywords)")
    return _wrap(_blocks.map_blocks(func, [a._h for a in args], **kwargs))


map_blocks.__doc__ = _blocks.map_blocks.__doc__


def map_overlap(func, *args, **kwargs):
    if not args:
        raise TypeError("map_overlap: no arrays given (usage: map_overlap(func, x, y, ...))")
    for a in args:
        if not isinstance(a, Array):
            raise TypeError(f"map_overlap: the positional arguments after func must be "
                            f"strata.Array objects (other arguments as keywords), got "
                            f"{type(a).__name__}")
    return _wrap(_blocks.map_overlap(func, [a._h for a in args], **kwargs))


map_overlap.__doc__ = _blocks.map_overlap.__doc__


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
            for _ in oax:
                out = expand_dims(out, axis=out.ndim)
        results.append(_core_axes_placed(out, oax, i))
    return tuple(results) if several else results[0]
