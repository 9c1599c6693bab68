"""Running plans: compute, plan, visualize, and map_blocks with a Python
function. The GIL is released while the engine plans and runs."""
import inspect
import json
import os

import numpy as np

from ._array import Array, _wrap
from ._core import _strata, dtype_name
from .callbacks import _Dispatcher


def _handles(arrays, what):
    if len(arrays) == 1 and isinstance(arrays[0], (list, tuple)):
        arrays = tuple(arrays[0])
    if not arrays:
        raise ValueError(f"{what}: no arrays given")
    for a in arrays:
        if not isinstance(a, Array):
            raise TypeError(f"{what}: expected strata.Array objects, got {type(a).__name__}")
    return [a._h for a in arrays]


def _python_executor(handles):
    from ._spec import PYTHON_EXECUTORS
    name = handles[0].spec.executor
    return PYTHON_EXECUTORS.get(name)


def compute(*arrays, callbacks=None, optimize_graph=True, **kwargs):
    """Computes the arrays together (common inputs are read and computed once)
    and returns a tuple of numpy arrays over the engine's buffers (None for
    to_zarr handles). Ctrl-C cancels the compute and raises KeyboardInterrupt."""
    if kwargs:
        raise TypeError(f"compute: unexpected arguments {sorted(kwargs)}")
    handles = _handles(arrays, "compute")
    if callbacks is not None and not isinstance(callbacks, (list, tuple)):
        callbacks = [callbacks]
    dispatcher = _Dispatcher(callbacks) if callbacks else None
    executor = _python_executor(handles)
    if executor is not None:
        results = executor.compute(handles, dispatcher, bool(optimize_graph))
    else:
        results = _strata.compute(handles, dispatcher, bool(optimize_graph))
    return tuple(results)


class Plan:
    """A plan (nothing has run): its ops, tasks, projected memory and tiers."""

    def __init__(self, cpp):
        self._cpp = cpp

    @property
    def num_tasks(self):
        return self._cpp.total_tasks

    def to_dict(self):
        return json.loads(self._cpp.to_json())

    def to_text(self):
        return self._cpp.to_text()

    def to_dot(self):
        return self._cpp.to_dot()

    def __repr__(self):
        return self.to_text()


def plan(*arrays, optimize_graph=True):
    """Plans the arrays without running anything (the GIL is released)."""
    return Plan(_strata.plan(_handles(arrays, "plan"), bool(optimize_graph)))


def visualize(*arrays, filename="strata", format=None, optimize_graph=True):
    """Writes the plan as a picture with Graphviz's dot: filename.svg by
    default (format "svg", "png", "pdf" or "dot"). Returns the file's path."""
    handles = _handles(arrays, "visualize")
    filename = os.fspath(filename)
    root, ext = os.path.splitext(filename)
    if format is None:
        format = ext[1:] if ext[1:] in ("svg", "png", "pdf", "dot") else "svg"
        if ext[1:] == format:
            filename = root
    if format not in ("svg", "png", "pdf", "dot"):
        raise ValueError(f"visualize: format must be svg, png, pdf or dot, not {format!r}")
    path = f"{filename}.{format}"
    _strata.visualize(handles, path)
    return path


def _accepts_block_id(func):
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return "block_id" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def map_blocks(func, *args, dtype=None, chunks=None, extra_mem=0, name=None, **kwargs):
    """Applies func to corresponding blocks of the array arguments (Dask's and
    Cubed's map_blocks). func gets read-only numpy blocks (valid during the
    call only) and returns a numpy block; it runs on the engine's worker
    threads holding the GIL for each call, so it cannot run on the processes
    or mpi executors (refused with ValueError). func gets block_id= when its
    signature has it; other keyword arguments are passed on. dtype defaults to
    the first array's; chunks is the output's block shape (as many blocks)."""
    if not callable(func):
        raise TypeError(f"map_blocks: {func!r} is not callable")
    arrays = list(args)
    if not arrays or not all(isinstance(a, Array) for a in arrays):
        raise TypeError("map_blocks: pass the arrays as positional arguments "
                        "(other arguments as keywords)")
    if dtype is None:
        dtype = arrays[0].dtype
    if chunks is not None:
        chunks = [int(c[0]) if isinstance(c, tuple) else int(c) for c in chunks]
    f = func
    if kwargs:
        import functools
        f = functools.partial(func, **kwargs)
    label = name or f"map_blocks-{getattr(func, '__name__', 'function')}"
    return _wrap(_strata.map_blocks(f, [a._h for a in arrays], dtype_name(dtype), chunks,
                                    int(extra_mem), label, _accepts_block_id(func)))
