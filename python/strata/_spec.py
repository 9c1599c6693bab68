"""strata.Spec: the resources a computation may use (Cubed's Spec)."""
from ._core import _strata

# Executors implemented in Python (the dask executor of issue 20 registers
# itself here): name -> callable(arrays, spec, callbacks) returning results.
PYTHON_EXECUTORS = {}


class Spec:
    """Resources for every array built with `spec=`, as in Cubed.

    Spec(work_dir=None, allowed_mem=None, reserved_mem=None,
         total_system_mem=None, executor="threads", workers=None,
         tier="auto", object_store_url=None, retries=2, fuse=True)

    Sizes are bytes or text such as "2GB"; allowed_mem is per task and
    includes reserved_mem. executor is "threads" (default), "inline",
    "processes" or "mpi". A bad setting raises ValueError now.
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
        if executor_options and name not in PYTHON_EXECUTORS:
            raise TypeError(f"Spec: unexpected arguments {sorted(executor_options)}")
        # A Python executor plans as the threads executor does.
        cpp_executor = "threads" if name in PYTHON_EXECUTORS else name
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)):
            raise TypeError(f"Spec: workers must be an int, got {workers!r}")
        self._cpp = _strata.Spec(
            work_dir="" if work_dir is None else str(work_dir), allowed_mem=allowed_mem,
            reserved_mem=reserved_mem, total_system_mem=total_system_mem,
            executor=cpp_executor, workers=workers or 0, tier=tier,
            object_store_url=object_store_url or "", retries=retries, fuse=fuse)

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
