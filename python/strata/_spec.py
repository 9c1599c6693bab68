"""strata.Spec: the resources a computation may use (Cubed's Spec)."""
import os

from ._core import _strata

# Executors driven from Python (the dask and ray executors, _dask.py and
# _ray.py, register themselves here): name -> an object with
#   configure(kwargs, options) -> the `_strata.Spec` arguments, given the
#       Spec's own and the executor's options (e.g. client=); raises
#       TypeError/ValueError for bad ones;
#   compute(handles, callback, fuse) -> the results, as `_strata.compute`.
# A Python executor plans as the threads executor does.
PYTHON_EXECUTORS = {}


class Spec:
    """Resources for every array built with `spec=`, as in Cubed.

    Spec(work_dir=None, allowed_mem=None, reserved_mem=None,
         total_system_mem=None, executor="threads", workers=None,
         tier="auto", object_store_url=None, retries=2, fuse=True)

    Sizes are bytes or text such as "2GB"; allowed_mem is per task and
    includes reserved_mem. executor is "threads" (default), "inline",
    "processes", "mpi", "dask" (with client=, a distributed.Client; by
    default distributed's current client) or "ray" (with address=, a Ray
    cluster's address; by default the cluster this process is connected
    to, else ray.init()'s). A bad setting raises ValueError now.
    """

    def __init__(self, work_dir=None, allowed_mem=None, reserved_mem=None,
                 total_system_mem=None, executor=None, workers=None, tier="auto",
                 object_store_url=None, retries=2, fuse=True, **executor_options):
        name = executor or "threads"
        if not isinstance(name, str):
            raise TypeError(f"Spec: executor must be a name such as 'threads', "
                            f"got {type(name).__name__}")
        self._executor_name = name
        self._executor_options = executor_options
        impl = PYTHON_EXECUTORS.get(name)
        if executor_options and impl is None:
            raise TypeError(f"Spec: unexpected arguments {sorted(executor_options)}")
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)):
            raise TypeError(f"Spec: workers must be an int, got {workers!r}")
        # Each setting's type and range are checked where _strata.Spec
        # converts it (TypeError/ValueError naming it); a path-like work_dir
        # is its path, anything else is passed on as it is to be refused.
        if isinstance(work_dir, os.PathLike):
            work_dir = os.fspath(work_dir)
        kwargs = dict(
            work_dir="" if work_dir is None else work_dir, allowed_mem=allowed_mem,
            reserved_mem=reserved_mem, total_system_mem=total_system_mem,
            executor=name, workers=workers or 0, tier=tier,
            object_store_url=object_store_url or "", retries=retries, fuse=fuse)
        if impl is not None:
            kwargs = impl.configure(kwargs, executor_options)
        self._cpp = _strata.Spec(**kwargs)

    @classmethod
    def _from_cpp(cls, cpp):
        s = cls.__new__(cls)
        s._cpp = cpp
        s._executor_name = cpp.executor
        s._executor_options = {}
        return s

    def _resolved(self):
        return self._cpp.resolved()

    @property
    def work_dir(self):
        return self._cpp.work_dir or None

    @property
    def allowed_mem(self):
        return self._resolved()["allowed_mem"]

    @property
    def reserved_mem(self):
        return self._resolved()["reserved_mem"]

    @property
    def total_system_mem(self):
        return self._resolved()["total_system_mem"]

    @property
    def executor(self):
        return self._executor_name

    @property
    def executor_name(self):
        return self._executor_name

    @property
    def workers(self):
        return self._resolved()["workers"]

    @property
    def tier(self):
        return self._cpp.tier

    def __repr__(self):
        r = self._resolved()
        return (f"strata.Spec(work_dir={self.work_dir!r}, allowed_mem={r['allowed_mem']}, "
                f"reserved_mem={r['reserved_mem']}, total_system_mem={r['total_system_mem']}, "
                f"executor={self._executor_name!r}, workers={r['workers']}, tier={r['tier']!r})")
