"""executor="ray": Strata's plan on a Ray cluster.

    spec = strata.Spec(executor="ray", address="10.0.0.1:6379", allowed_mem="1GB")
    spec = strata.Spec(executor="ray")   # the Ray this process is connected to,
                                         # else ray.init(): RAY_ADDRESS or a new
                                         # local instance, shut down at exit

The calling process plans as always (the memory contract, fusion, tiers:
runtime/external_run.h) and submits the plan's chunk-level tasks to Ray,
one Ray task per Strata task, each given as arguments the ObjectRefs of
exactly the blocks it reads. On a worker, a task runs through the engine's
TaskRunner with the GIL released (TaskHost); the worker makes the compute's
arrays again from their records (_recipe.py, _external.py) once per
compute, checking that its plan is the calling process's.

Memory tier: a published block is the Ray task's first return, an object in
Ray's shared-memory object store. A reader gets it as a numpy view on the
store's buffer (Ray maps it; nothing is copied) and the engine reads that
view in place. The calling process drops its ObjectRef of a block as soon
as the block's last reader has been submitted, so Ray frees the block when
that reader is done; Ray places a task on the node holding most of its
arguments' bytes, moves blocks between nodes itself, and spills objects to
disk when the store is full. Nothing is written to storage. The RAM tier's
capacity is the object store's (Spec's ram_tier_mem, the sum over nodes);
tiers that do not fit go to disk or S3 as the planner decides, and the plan
says which: work_dir must then be a filesystem every node sees, or use s3://.

Admission: every task asks Ray for its op's projected memory (the `memory`
resource) and one CPU, so that no node runs more tasks at once than its
memory resource holds. total_system_mem defaults to the nodes' memory and
object-store resources together, and workers (for planning) to their CPUs.

Failures: a retryable error (I/O, unavailable) is raised on the worker and
retried by Ray (max_retries=Spec.retries); any other error is returned, not
retried, and reaches the caller as the same exception with the same message
as on the threads executor. A worker process that dies costs a retry of its
task (Ray's max_retries). A node that is lost costs the tasks it ran and the
blocks it held: Ray's lineage reconstruction runs the tasks that made those
blocks again (the calling process owns every object, so it keeps their
lineage), within the same max_retries.
"""
import atexit
import collections
import os
import socket
import threading
import time
import uuid

from ._core import _engine
from ._external import StrataTaskError, make_payload
from ._external import host as host_of
from ._recipe import recipe_of

_UNAVAILABLE = 14
_INTERNAL = 13
# A task whose memory-tier input is missing because its producer failed: the
# producer's own error is the one reported.
_INPUT_FAILED = -1

# Ray's switch for single-machine instances (ray_constants.ENABLE_RAY_CLUSTER):
# off, a new instance's processes listen on 127.0.0.1 only.
_LOOPBACK_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"

_LOCK = threading.Lock()
_STARTED = []      # True once this module ray.init()-ed; guarded by _LOCK
_REMOTE = {}       # "task" -> the ray.remote of _run_task; guarded by _LOCK


def _ray(what):
    try:
        import ray
    except ImportError as e:  # pragma: no cover - ray is in the locked requirements
        raise ValueError(f"{what}: executor 'ray' needs the ray package "
                         f"(pip install 'strata[ray]')") from e
    return ray


def _check_reachable(address, what):
    """A "host:port" GCS address that does not answer is refused now: ray.init
    would wait about a minute for it."""
    host, sep, port = address.rpartition(":")
    if not sep or "://" in address or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as e:
        raise ValueError(f"{what}: cannot reach the Ray cluster at {address}: "
                         f"{e.strerror or e}") from None


def _connect(address, what):
    """ray, connected to `address` (None: the cluster this process is on,
    else ray.init()'s choice: RAY_ADDRESS or a new local instance)."""
    ray = _ray(what)
    with _LOCK:
        if ray.is_initialized():
            current = ray.get_runtime_context().gcs_address
            if address and address != "auto" and "://" not in address and address != current:
                raise ValueError(f"{what}: this process is connected to the Ray cluster at "
                                 f"{current}, not {address} (ray.shutdown() first)")
            return ray
        if address and address != "auto":
            _check_reachable(address, what)
        try:
            if address:
                ray.init(address=address, log_to_driver=False)
            else:
                # A local instance of this process's own: on loopback (Ray
                # binds a single-machine instance there when it is told it
                # cannot make clusters), no dashboard, shut down when the
                # process ends.
                saved = os.environ.get(_LOOPBACK_ONLY)
                os.environ[_LOOPBACK_ONLY] = "0"
                try:
                    ray.init(include_dashboard=False, log_to_driver=False)
                finally:
                    if saved is None:
                        os.environ.pop(_LOOPBACK_ONLY, None)
                    else:
                        os.environ[_LOOPBACK_ONLY] = saved
                if not _STARTED:
                    atexit.register(_shutdown)
                _STARTED.append(True)
        except Exception as e:
            raise ValueError(f"{what}: cannot connect to the Ray cluster at "
                             f"{address or 'a new local instance'}: "
                             f"{type(e).__name__}: {e}") from e
        return ray


def _shutdown():
    """Stops the local Ray instance this module started (at exit)."""
    import ray
    if ray.is_initialized():
        ray.shutdown()


def _alive_nodes(ray, what):
    try:
        nodes = [n for n in ray.nodes() if n.get("Alive")]
    except Exception as e:
        raise ValueError(f"{what}: cannot reach the Ray cluster: {e}") from e
    if not nodes:
        raise ValueError(f"{what}: the Ray cluster has no live nodes")
    return nodes


class RayExecutor:
    """PYTHON_EXECUTORS["ray"] (see _spec.py)."""

    def configure(self, kwargs, options):
        unknown = sorted(set(options) - {"address"})
        if unknown:
            raise TypeError(f"Spec: unexpected arguments {unknown}")
        address = options.get("address")
        if address is not None and not isinstance(address, str):
            raise TypeError(f"Spec: address must be the address of a Ray cluster such as "
                            f"'10.0.0.1:6379', got {type(address).__name__}")
        ray = _connect(address, "Spec")
        nodes = _alive_nodes(ray, "Spec")
        store = int(sum(n["Resources"].get("object_store_memory", 0) for n in nodes))
        if kwargs["total_system_mem"] is None:
            kwargs["total_system_mem"] = int(sum(n["Resources"].get("memory", 0)
                                                 for n in nodes)) + store
        if not kwargs["workers"]:
            kwargs["workers"] = max(1, int(sum(n["Resources"].get("CPU", 0) for n in nodes)))
        kwargs["ram_tier_mem"] = store or None
        kwargs["scheduler"] = ray.get_runtime_context().gcs_address
        return kwargs

    def compute(self, handles, callback, fuse):
        address = handles[0].spec.scheduler
        ray = _ray("compute")
        if ray.is_initialized():
            current = ray.get_runtime_context().gcs_address
            if current != address:
                raise ValueError(f"compute: this process is connected to the Ray cluster at "
                                 f"{current}, not {address}, the cluster of the arrays' Spec")
        else:
            _connect(address, "compute")
        recipes = [recipe_of(h) for h in handles]
        retries = handles[0].spec.retries

        def submit(run):
            _Run(ray, run, recipes, fuse, retries).go()

        return _engine.compute_external(handles, callback, fuse, submit)


# --- The calling process ----------------------------------------------------

def _remote(ray):
    with _LOCK:
        if "task" not in _REMOTE:
            _REMOTE["task"] = ray.remote(_run_task)
        return _REMOTE["task"]


class _Run:
    """One compute on Ray: submission, reference dropping, what comes back."""

    def __init__(self, ray, run, recipes, fuse, retries):
        self.ray = ray
        self.run = run
        self.recipes = recipes
        self.fuse = fuse
        self.retries = retries
        self.worker_numbers = {}

    def go(self):
        ray = self.ray
        run = self.run
        tasks = run.tasks()
        if not tasks:
            return
        ops = run.ops()
        token = uuid.uuid4().hex
        payload = make_payload(token, run, self.recipes, self.fuse, "ray")
        self._check_admission(ops)
        output_ops = {o["index"] for o in ops if o["output"]}
        names = {o["index"]: o["op"] for o in ops}
        remote = _remote(ray)

        # Readers of each block still to be submitted: the calling process
        # holds a block's ObjectRef only until its last reader is submitted;
        # then the submitted readers hold it, and Ray frees the block when
        # they are done.
        readers = collections.Counter()
        for _, _, inputs, _, _ in tasks:
            readers.update(tuple(i) for i in inputs)
        blocks = {}
        self.outputs = {}   # info ref -> block ref of a result block
        self.pending = {}   # info ref -> (op, block)
        self.base = run.seconds() - time.time()
        held = ray.put(payload)
        finished = False
        try:
            for op, block, inputs, projected, _ in tasks:
                keys = [tuple(i) for i in inputs]
                block_ref, info_ref = remote.options(
                    num_returns=2, num_cpus=1, memory=max(int(projected), 1),
                    max_retries=self.retries, retry_exceptions=[StrataTaskError],
                    name=f"strata-{names[op]}-op{op:03d}-{block}",
                ).remote(held, op, block, keys, *[blocks[k] for k in keys])
                for k in keys:
                    readers[k] -= 1
                    if readers[k] == 0:
                        del blocks[k]
                if readers[(op, block)] > 0:
                    blocks[(op, block)] = block_ref
                if op in output_ops:
                    self.outputs[info_ref] = block_ref
                self.pending[info_ref] = (op, block)
                del block_ref
            assert not blocks, "every block's last reader was submitted"
            finished = self._collect()
        finally:
            if not finished:
                self._stop()
            # Dropping the references frees the run's objects; the workers
            # keep the plans of their latest few computes (_external.host).
            self.outputs.clear()
            self.pending.clear()
            del held

    def _check_admission(self, ops):
        nodes = _alive_nodes(self.ray, "compute")
        largest = max(n["Resources"].get("memory", 0) for n in nodes)
        for o in ops:
            if o["materialized"] and o["num_tasks"] and o["projected_mem"] > largest:
                raise MemoryError(
                    f"op '{o['op']}' ({o['name']}) projects {o['projected_mem']} bytes per "
                    f"task, more than any ray node has ({int(largest)} bytes of its memory "
                    f"resource): give the nodes more memory or lower allowed_mem")

    def _collect(self):
        """True when every task finished and was reported to the run."""
        ray = self.ray
        run = self.run
        while self.pending:
            if run.cancelled:
                return False
            refs = list(self.pending)
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0.05, fetch_local=True)
            for ref in ready:
                op, block = self.pending.pop(ref)
                try:
                    info = ray.get(ref)
                except Exception as e:
                    self._failed(op, block, e)
                    return False
                if info.error is not None:
                    code, message, exception = info.error
                    if code == _INPUT_FAILED:
                        continue  # its input's producer reports the error
                    run.task_failed(op, block, code, message, exception, 1)
                    return False
                data = None
                block_ref = self.outputs.pop(ref, None)
                if block_ref is not None:
                    data = ray.get(block_ref)  # a view on the object store: task_done copies it
                start, end, peak, rss = info.figures
                run.task_done(op, block, 1, self._worker_number(info.worker),
                              start + self.base, end + self.base, peak, rss, data)
                del data, block_ref
        return True

    def _failed(self, op, block, error):
        exceptions = self.ray.exceptions
        cause = getattr(error, "cause", None)
        if isinstance(cause, StrataTaskError):
            self.run.task_failed(cause.op, cause.block, cause.code, cause.message, None,
                                 self.retries + 1)
            return
        lost = tuple(getattr(exceptions, n) for n in (
            "WorkerCrashedError", "NodeDiedError", "ObjectLostError", "OwnerDiedError",
            "ObjectReconstructionFailedError", "LocalRayletDiedError")
            if hasattr(exceptions, n))
        if isinstance(error, lost):
            first = str(error).strip().splitlines()[0] if str(error).strip() else ""
            self.run.task_failed(op, block, _UNAVAILABLE,
                                 f"the ray worker running it died ({type(error).__name__}: "
                                 f"{first})", None, self.retries + 1)
            return
        raise error

    def _stop(self, settle_s=30.0):
        """After a failure, the tasks already submitted are let finish (those
        downstream of the failed one fail at once on their input), up to
        settle_s; only what is left then, or everything on Ctrl-C, is
        cancelled. ray.cancel races with a task's completion in Ray 2.60:
        cancelling a task whose reply is on its way aborts the calling
        process (task_manager.cc: "Tried to complete task that was not
        pending"), seen with force=False too, under load, on a failed
        compute's cancel."""
        refs = list(self.pending)
        if refs and not self.run.cancelled:
            try:
                ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=settle_s,
                                         fetch_local=False)
                if len(ready) == len(refs):
                    return
            except Exception:
                pass
        self._cancel()

    def _cancel(self):
        """Stops what still runs (Ctrl-C, or a failure whose tasks did not
        settle) and waits for it, so that no task writes into the run's
        directory or prefix after the calling process removed them. Not
        force=True: killing the workers raced with their tasks' completion
        and aborted the calling process in Ray 2.60 (see _stop). A queued
        task is dropped; a running one ends when its engine call returns (it
        cannot be interrupted inside C++ anyway)."""
        ray = self.ray
        refs = list(self.pending)
        for ref in refs:
            try:
                ray.cancel(ref, force=False, recursive=False)
            except Exception:  # finished meanwhile, or the cluster is gone
                pass
        if refs:
            try:
                ray.wait(refs, num_returns=len(refs), timeout=60, fetch_local=False)
            except Exception:
                pass

    def _worker_number(self, worker):
        return self.worker_numbers.setdefault(worker, len(self.worker_numbers))


# --- A worker ---------------------------------------------------------------

class _Info:
    """What the calling process learns of a task (its second return): the
    figures (wall-clock start and end, measured peak, worker RSS) and the
    worker, or the error that stopped it (code, message, exception)."""
    __slots__ = ("figures", "error", "worker")

    def __init__(self, figures=None, error=None, worker=None):
        self.figures, self.error, self.worker = figures, error, worker

    def __reduce__(self):
        return (_Info, (self.figures, self.error, self.worker))


def _worker_id():
    import ray
    return f"{ray.get_runtime_context().get_node_id()[:12]}:{os.getpid()}"


def _run_task(payload, op, block, keys, *inputs):
    """One Strata task on a Ray worker: returns (its block or None, _Info)."""
    start = time.time()
    try:
        h = host_of(payload)
    except Exception as e:
        return None, _Info(error=(_INTERNAL, f"{type(e).__name__}: {e}", e))
    lent = []
    for (i, b), x in zip(keys, inputs):
        if i in h.memory_ops:
            if x is None:
                return None, _Info(error=(_INPUT_FAILED, "", None))
            lent.append((i, b, x))  # a read-only view on the object store's buffer
    data, (peak, rss), error = h.task_host.run(op, block, 1, lent)
    del lent, inputs
    end = time.time()
    if error is not None:
        code, retryable, message, exception = error
        message = h.rename(message)
        if retryable and exception is None:
            raise StrataTaskError(op, block, code, message)
        return None, _Info(error=(code, message, exception))
    return data, _Info(figures=(start, end, peak, rss), worker=_worker_id())
