"""Running and planning engine handles: run, plan, visualize. The GIL is
released while the engine plans and runs.

Below strata.Array, so that x.compute(), x.plan() and x.visualize() are the
code path strata.compute, strata.plan and strata.visualize take
(_compute.py, which converts Arrays to handles).
"""
import json
import os

from ._core import _strata
from ._spec import PYTHON_EXECUTORS
from .callbacks import _Dispatcher


def run(handles, callbacks=None, optimize_graph=True, **kwargs):
    """Computes the handles together (common inputs are read and computed
    once): a tuple of numpy arrays over the engine's buffers (None for
    to_zarr handles). Ctrl-C cancels the compute and raises KeyboardInterrupt."""
    if kwargs:
        raise TypeError(f"compute: unexpected arguments {sorted(kwargs)}")
    if callbacks is not None and not isinstance(callbacks, (list, tuple)):
        callbacks = [callbacks]
    dispatcher = _Dispatcher(callbacks) if callbacks else None
    executor = PYTHON_EXECUTORS.get(handles[0].spec.executor)
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


def plan(handles, optimize_graph=True):
    """Plans the handles without running anything (the GIL is released)."""
    return Plan(_strata.plan(handles, bool(optimize_graph)))


def visualize(handles, filename="strata", format=None):
    """Writes the plan as a picture with Graphviz's dot: filename.svg by
    default (format "svg", "png", "pdf" or "dot"). Returns the file's path."""
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
