"""Running plans: compute, plan, visualize. The GIL is released while the
engine plans and runs."""
import json
import os

from ._array import Array
from ._core import _strata
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
