"""Running plans: compute, plan, visualize (strata.compute and friends; the
methods x.compute(), x.plan(), x.visualize() take the same path, _execute.py).
The GIL is released while the engine plans and runs."""
from . import _execute
from ._execute import Plan  # noqa: F401  (strata.Plan)
from .array_api.array_object import Array


def _handles(arrays, what):
    if len(arrays) == 1 and isinstance(arrays[0], (list, tuple)):
        arrays = tuple(arrays[0])
    if not arrays:
        raise ValueError(f"{what}: no arrays given")
    for a in arrays:
        if not isinstance(a, Array):
            raise TypeError(f"{what}: expected strata.Array objects, got {type(a).__name__}")
    return [a._h for a in arrays]


def compute(*arrays, callbacks=None, optimize_graph=True, **kwargs):
    """Computes the arrays together (common inputs are read and computed once)
    and returns a tuple of numpy arrays over the engine's buffers (None for
    to_zarr handles). Ctrl-C cancels the compute and raises KeyboardInterrupt.

    optimize_graph=False (Dask's name) is the fusion switch for this call: no
    fusion pass runs, exactly as with Spec(fuse=False)."""
    if kwargs:
        raise TypeError(f"compute: unexpected arguments {sorted(kwargs)}")
    return _execute.run(_handles(arrays, "compute"), callbacks, optimize_graph)


def plan(*arrays, optimize_graph=True):
    """Plans the arrays without running anything (the GIL is released).
    optimize_graph=False: no fusion, as Spec(fuse=False) (see compute)."""
    return _execute.plan(_handles(arrays, "plan"), optimize_graph)


def visualize(*arrays, filename="strata", format=None, optimize_graph=True):
    """Writes the plan as a picture with Graphviz's dot: filename.svg by
    default (format "svg", "png", "pdf" or "dot"). Returns the file's path.
    (optimize_graph is accepted for Cubed's signature; the picture is of the
    optimized plan.)"""
    return _execute.visualize(_handles(arrays, "visualize"), filename, format)
