"""How each array handle was made, so that another process can make it again.

Every call into the engine (`_strata`) that returns an array handle records,
on the handle, the call and its arguments (other handles by their own
records, Specs by value). A dask worker replays the records of the arrays a
compute asks for and plans them itself: it gets the same plan as the calling
process (the same ops in the same order; `_dask.py` checks), without the
plan or the graph ever being serialized. Python functions given to
map_blocks travel inside the records (cloudpickle).

Recording costs one small object per array; it keeps alive only what the
arrays keep alive anyway (their inputs, numpy sources, functions). A record
also keeps the call's arguments as given (the input handles), so that the
package can read how an array was made (_regroup.py: per-group reductions
joined into one are planned as one grouped reduction).
"""
import types

from . import _strata as _engine


class _Call:
    """One call into the engine: fn(*args, **kwargs). `given` holds the
    positional arguments as they were passed (handles, not records), for
    code in this process that reads how an array was made (_regroup.py);
    it is never pickled."""
    __slots__ = ("fn", "args", "kwargs", "given")

    def __init__(self, fn, args, kwargs, given=()):
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.given = given

    def __getstate__(self):
        return (self.fn, self.args, self.kwargs)

    def __setstate__(self, state):
        self.fn, self.args, self.kwargs = state
        self.given = ()


class _Made:
    """An array handle: the call that made it (and its position when the
    call returned several)."""
    __slots__ = ("call", "item")

    def __init__(self, call, item=None):
        self.call = call
        self.item = item


class _SpecValue:
    """A `_strata.Spec`, by value (resolved, so that the worker plans with
    the same sizes whatever its machine)."""
    __slots__ = ("kwargs",)

    def __init__(self, spec):
        r = spec.resolved()
        self.kwargs = dict(work_dir=spec.work_dir, allowed_mem=r["allowed_mem"],
                           reserved_mem=r["reserved_mem"],
                           total_system_mem=r["total_system_mem"], executor=r["executor"],
                           workers=r["workers"], tier=r["tier"],
                           object_store_url=r["object_store_url"], retries=r["retries"],
                           fuse=r["fuse"], scheduler=spec.scheduler,
                           ram_tier_mem=r["ram_tier_mem"] or None)


class _Unrecorded:
    """A handle made where nothing recorded it."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


def _capture(x):
    if isinstance(x, _engine.Array):
        made = getattr(x, "_recipe", None)
        return made if made is not None else _Unrecorded(x.name)
    if isinstance(x, _engine.Spec):
        return _SpecValue(x)
    if type(x) in (list, tuple):
        return type(x)(_capture(v) for v in x)
    if type(x) is dict:
        return {k: _capture(v) for k, v in x.items()}
    return x


def _record(name, fn):
    def call(*args, **kwargs):
        out = fn(*args, **kwargs)
        if isinstance(out, _engine.Array):
            out._recipe = _Made(_Call(name, _capture(args), _capture(kwargs), args))
        elif type(out) in (list, tuple) and out and all(isinstance(o, _engine.Array) for o in out):
            c = _Call(name, _capture(args), _capture(kwargs), args)
            for i, o in enumerate(out):
                o._recipe = _Made(c, i)
        return out
    call.__name__ = name
    call.__doc__ = fn.__doc__
    return call


class RecordingEngine(types.ModuleType):
    """`_strata` with every function recorded (see the module comment);
    classes and constants are the engine's own."""

    def __init__(self, engine):
        super().__init__(engine.__name__, engine.__doc__)
        self._engine = engine

    def __getattr__(self, name):
        attr = getattr(self._engine, name)
        if isinstance(attr, types.BuiltinFunctionType) and not name.startswith("_"):
            attr = _record(name, attr)
        setattr(self, name, attr)  # looked up once
        return attr


def recipe_of(handle):
    """What makes `handle` again; ValueError when some part was not recorded."""
    made = getattr(handle, "_recipe", None)
    if made is None:
        raise ValueError(f"array {handle.name} cannot be sent to dask workers: it was not "
                         f"made through the strata package")
    return made


class Replayer:
    """Makes recorded arrays again, each call once (shared inputs stay shared)."""

    def __init__(self):
        self._calls = {}
        self._specs = {}

    def __call__(self, x):
        if isinstance(x, _Made):
            key = id(x.call)
            if key not in self._calls:
                c = x.call
                fn = getattr(_engine, c.fn)
                self._calls[key] = (c, fn(*self(c.args), **self(c.kwargs)))
            out = self._calls[key][1]
            return out if x.item is None else out[x.item]
        if isinstance(x, _SpecValue):
            key = tuple(sorted(x.kwargs.items()))
            if key not in self._specs:
                self._specs[key] = _engine.Spec(**x.kwargs)
            return self._specs[key]
        if isinstance(x, _Unrecorded):
            raise ValueError(f"array {x.name} cannot be made on a dask worker: it was not made "
                             f"through the strata package")
        if type(x) in (list, tuple):
            return type(x)(self(v) for v in x)
        if type(x) is dict:
            return {k: self(v) for k, v in x.items()}
        return x
