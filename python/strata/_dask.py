"""executor="dask": Strata's plan on a distributed.Client.

    client = distributed.Client(cluster)
    spec = strata.Spec(executor="dask", client=client, allowed_mem="1GB")

The calling process plans as always (the memory contract, fusion, tiers:
runtime/external_run.h) and submits the plan's chunk-level tasks to the
Dask scheduler as one graph with keys of its own, one Dask task per Strata
task, each depending on the Dask tasks of exactly the blocks it reads. On a
worker, a task runs through the engine's TaskRunner with the GIL released
(TaskHost); the worker makes the compute's arrays again from their records
(_recipe.py) and plans them once per compute, checking that its plan is the
calling process's.

Memory tier: a published block is the Dask task's result, a numpy array in
that worker's memory, moved to readers on other workers by Dask's own
transfer and dropped by Dask after its last reader: nothing is written to
storage. Disk and object tiers work as on one machine: work_dir must be a
filesystem every worker (and the calling process) sees, or use s3://.

Admission: every worker has the resource STRATA_RESOURCE ("strata-memory"),
its memory limit in bytes (set by a worker plugin when the worker was not
started with it, also on workers that join or restart later), and every
task asks for its op's projected memory, so that no worker runs more tasks
at once than its memory holds. total_system_mem defaults to the sum of the
workers' memory limits and workers (for planning) to their threads.

Failures: a retryable error (I/O, unavailable) is raised on the worker and
retried by Dask (retries=Spec.retries); any other error is returned, not
retried, and reaches the caller as the same exception with the same message
as on the threads executor. A worker that dies costs the tasks it ran or
held: Dask recomputes them elsewhere (the run's payload too: it is a key of
the graph as well as broadcast).
"""
import collections
import os
import time
import uuid
import weakref

from ._core import _engine
from ._external import StrataTaskError, forget, make_payload
from ._external import host as host_of
from ._recipe import recipe_of

STRATA_RESOURCE = "strata-memory"

_UNAVAILABLE = 14
_INTERNAL = 13

# Scheduler address -> the Client a Spec was made with.
_CLIENTS = weakref.WeakValueDictionary()


def _distributed(what):
    try:
        import distributed
    except ImportError as e:  # pragma: no cover - distributed is in the locked requirements
        raise ValueError(f"{what}: executor 'dask' needs the distributed package "
                         f"(pip install distributed)") from e
    return distributed


def _check_running(client, what, wait_s=None):
    """A Client that is (re)connecting to its scheduler is waited for as long
    as distributed itself goes on trying (the Client's connect timeout,
    distributed.comm.timeouts.connect: 30 s by default; after it the Client
    closes itself), then refused. Seen in CI under load: a shared Client
    "connecting" between two tests for more than the 10 s once allowed. A
    closed or unconnected one is refused at once; an asynchronous Client is
    not waited for (its loop is the caller's)."""
    if wait_s is None:
        wait_s = getattr(client, "_timeout", None)
        if not isinstance(wait_s, (int, float)) or wait_s <= 0:
            wait_s = 30.0
    status = getattr(client, "status", None)
    deadline = time.monotonic() + wait_s
    while (status in ("connecting", "newly-created") and not getattr(client, "asynchronous", False)
           and time.monotonic() < deadline):
        time.sleep(0.05)
        status = getattr(client, "status", None)
    if status != "running":
        raise ValueError(f"{what}: the distributed.Client is {status or 'not connected'}; "
                         f"executor 'dask' needs a running one")


def _workers(client, what, wait_s=10.0):
    """The cluster's workers, asked of the scheduler now. (Client.scheduler_info
    answers from a cache when the request fails, and distributed 2026's cache
    holds no workers: a loaded scheduler read as an empty cluster.) A cluster
    with none is waited for up to wait_s, as a nanny restarts a killed worker."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            info = client.sync(client.scheduler.identity, n_workers=-1)
            workers = dict(info.get("workers") or {})
        except Exception as e:
            raise ValueError(f"{what}: cannot reach the Dask scheduler: {e}") from e
        if workers:
            return workers
        if time.monotonic() >= deadline:
            raise ValueError(f"{what}: the Dask cluster has no workers")
        time.sleep(0.2)


def _fallback_memory():
    # A worker without a memory limit: what Strata would use on this machine.
    return _engine.Spec().resolved()["total_system_mem"]


class _StrataMemory:
    """What the worker plugin does: gives each worker the resource
    STRATA_RESOURCE (its memory limit) unless it was started with it; runs
    on workers that join later too. distributed registers only subclasses
    of its WorkerPlugin, so the plugin registered is _StrataMemoryPlugin
    (this and WorkerPlugin), made when first asked for: this module does not
    import distributed."""
    name = "strata-memory"

    async def setup(self, worker):
        if STRATA_RESOURCE in worker.state.total_resources:
            return
        manager = getattr(worker, "memory_manager", None)
        limit = getattr(manager, "memory_limit", None) or _fallback_memory()
        await worker.set_resources(**{STRATA_RESOURCE: float(limit)})

    def teardown(self, worker):
        pass


_PLUGIN_CLASS = []


def __getattr__(name):
    """_StrataMemoryPlugin, made on first use (here and where a worker
    unpickles the plugin by this name)."""
    if name != "_StrataMemoryPlugin":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if not _PLUGIN_CLASS:
        from distributed.diagnostics.plugin import WorkerPlugin
        cls = type("_StrataMemoryPlugin", (_StrataMemory, WorkerPlugin), {
            "__module__": __name__, "__doc__": "_StrataMemory as a distributed WorkerPlugin."})
        _PLUGIN_CLASS.append(cls)
    return _PLUGIN_CLASS[0]


class DaskExecutor:
    """PYTHON_EXECUTORS["dask"] (see _spec.py)."""

    def configure(self, kwargs, options):
        unknown = sorted(set(options) - {"client"})
        if unknown:
            raise TypeError(f"Spec: unexpected arguments {unknown}")
        distributed = _distributed("Spec")
        client = options.get("client")
        if client is None:
            try:
                client = distributed.default_client()
            except ValueError:
                raise ValueError("Spec: executor 'dask' needs a distributed.Client: pass "
                                 "client=, or create one first") from None
        elif not isinstance(client, distributed.Client):
            raise TypeError(f"Spec: client must be a distributed.Client, got "
                            f"{type(client).__name__}")
        _check_running(client, "Spec")
        workers = _workers(client, "Spec")
        if kwargs["total_system_mem"] is None:
            kwargs["total_system_mem"] = int(sum(w.get("memory_limit") or _fallback_memory()
                                                 for w in workers.values()))
        if not kwargs["workers"]:
            kwargs["workers"] = int(sum(w.get("nthreads", 1) for w in workers.values()))
        address = client.scheduler.address
        kwargs["scheduler"] = address
        _CLIENTS[address] = client
        return kwargs

    def compute(self, handles, callback, fuse):
        address = handles[0].spec.scheduler
        client = _CLIENTS.get(address)
        if client is None:
            distributed = _distributed("compute")
            try:
                client = distributed.default_client()
            except ValueError:
                client = None
            if client is None or client.scheduler.address != address:
                raise ValueError(f"compute: no distributed.Client is connected to {address}, "
                                 f"the scheduler of the arrays' Spec")
        _check_running(client, "compute")
        recipes = [recipe_of(h) for h in handles]
        retries = handles[0].spec.retries

        def submit(run):
            _Run(client, run, recipes, fuse, retries).go()

        return _engine.compute_external(handles, callback, fuse, submit)


# --- The calling process ----------------------------------------------------

class _Run:
    """One compute on a Client: the graph, its submission, and what comes back."""

    def __init__(self, client, run, recipes, fuse, retries):
        self.client = client
        self.run = run
        self.recipes = recipes
        self.fuse = fuse
        self.retries = retries
        self.worker_numbers = {}

    def go(self):
        distributed = _distributed("compute")
        from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

        run = self.run
        tasks = run.tasks()
        if not tasks:
            return
        ops = run.ops()
        token = uuid.uuid4().hex
        payload = make_payload(token, run, self.recipes, self.fuse, "dask")
        names = {o["index"]: f"strata-{o['op']}-op{o['index']:03d}-{token}" for o in ops}
        output_ops = {o["index"] for o in ops if o["output"]}
        projected = {o["index"]: o["projected_mem"] for o in ops}

        self._check_admission(tasks, ops)

        # The payload goes to every worker first, so that Dask places tasks
        # by their blocks, not by where one copy of the payload is. It is
        # also a key of the graph: distributed's active memory manager drops
        # the copies no queued task wants, and scattered data whose last
        # copy dies with a worker is lost for good, with every task still to
        # run (seen in CI); with the graph's run_spec the scheduler
        # recomputes it, as it does blocks.
        self._ensure_resources()
        payload_key = f"strata-payload-{token}"
        held = self.client.scatter({payload_key: payload}, broadcast=True,
                                   hash=False)[payload_key]
        layers = {payload_key: MaterializedLayer({payload_key: payload})}
        dependencies = {payload_key: set()}
        per_op = collections.defaultdict(dict)
        op_deps = collections.defaultdict(set)
        meta = {}
        wanted = []
        self.task_of = {}
        for op, block, inputs, _, returns in tasks:
            key = (names[op], block)
            per_op[op][key] = (_run_task, payload_key, op, block,
                               [(names[i], b) for i, b in inputs])
            op_deps[op].update(names[i] for i, _ in inputs)
            if returns and op not in output_ops:
                # A memory-tier block stays on the workers: the calling
                # process asks only for its figures.
                mkey = (f"strata-figures-{token}", len(meta))
                meta[mkey] = (_figures_of, key)
                wanted.append(mkey)
                self.task_of[str(mkey)] = (op, block)
            else:
                wanted.append(key)
                self.task_of[str(key)] = (op, block)
        for op, dsk in per_op.items():
            annotations = {"resources": {STRATA_RESOURCE: float(max(projected[op], 1))}}
            if self.retries:
                annotations["retries"] = self.retries
            layers[names[op]] = MaterializedLayer(dsk, annotations=annotations)
            dependencies[names[op]] = set(op_deps[op]) | {payload_key}
        if meta:
            layers[f"strata-figures-{token}"] = MaterializedLayer(meta)
            dependencies[f"strata-figures-{token}"] = set(names[o] for o in per_op)
        graph = HighLevelGraph(layers, dependencies)

        self.base = run.seconds() - time.time()
        futures = self.client.get(graph, wanted, sync=False)
        finished = False
        try:
            finished = self._collect(distributed, futures)
        finally:
            # Finished futures are released by dropping them. Cancelling
            # them would cost about a second: the scheduler's cancel of a
            # key cancels its dependents too, and a dependent another
            # cancel released first is polled for up to 1 s
            # (Scheduler._cancel_key, distributed 2022.12). Cancelling is
            # for tasks that may still run: a failure or Ctrl-C.
            if not finished:
                self.client.cancel(futures + [held])
            del futures, held
            try:
                self.client.run(forget, token)
            except Exception:  # the cluster may be gone: nothing left to forget then
                pass

    def _check_admission(self, tasks, ops):
        workers = _workers(self.client, "compute")
        room = []
        for w in workers.values():
            r = (w.get("resources") or {}).get(STRATA_RESOURCE)
            room.append(r if r is not None else (w.get("memory_limit") or _fallback_memory()))
        largest = max(room)
        for o in ops:
            if o["materialized"] and o["num_tasks"] and o["projected_mem"] > largest:
                raise MemoryError(
                    f"op '{o['op']}' ({o['name']}) projects {o['projected_mem']} bytes per "
                    f"task, more than any dask worker has ({int(largest)} bytes of "
                    f"{STRATA_RESOURCE}): give the workers more memory or lower allowed_mem")

    def _ensure_resources(self):
        # Registered once per client; the scheduler gives it to new workers.
        if getattr(self.client, "_strata_memory_plugin", False):
            return
        self.client.register_plugin(__getattr__("_StrataMemoryPlugin")(),
                                    name=_StrataMemory.name)
        self.client._strata_memory_plugin = True

    def _collect(self, distributed, futures):
        """True when every future finished and was reported to the run."""
        run = self.run
        ac = distributed.as_completed(futures, loop=self.client.loop)
        while not ac.is_empty():
            if run.cancelled:
                return
            if not ac.has_ready():
                time.sleep(0.005)
                continue
            batch = ac.next_batch(block=False)
            finished = [f for f in batch if f.status == "finished"]
            for f in batch:
                if f.status != "finished":
                    self._failed(f)
                    return
            for f, r in zip(finished, self.client.gather(finished)):
                if r.error is not None:
                    code, message, exception = r.error
                    run.task_failed(r.op, r.block, code, message, exception, 1)
                    return
                start, end, peak, rss = r.figures
                run.task_done(r.op, r.block, 1, self._worker_number(r.worker),
                              start + self.base, end + self.base, peak, rss, r.data)
        return True

    def _failed(self, future):
        op, block = self.task_of[str(future.key)]
        if future.status == "cancelled" and self.client.status != "running":
            raise RuntimeError("compute: the Dask tasks were cancelled (was the "
                               "distributed.Client closed during the compute?)")
        # With the client running, a cancelled future is one distributed 2026
        # gave up on when a killed worker took an input it could not
        # recompute (a block whose future was released): lost like the others.
        # A future whose worker died after finishing it comes back lost (no
        # exception): the block is gone with the worker, as for KilledWorker.
        exc = future.exception() if future.status == "error" else None
        if exc is None:
            self.run.task_failed(op, block, _UNAVAILABLE,
                                 f"the dask worker holding it died (future {future.status})",
                                 None, 1)
            return
        if isinstance(exc, StrataTaskError):
            self.run.task_failed(exc.op, exc.block, exc.code, exc.message, None,
                                 self.retries + 1)
            return
        if type(exc).__name__ == "KilledWorker":
            self.run.task_failed(op, block, _UNAVAILABLE,
                                 f"the dask workers running it died: {exc}", None, 1)
            return
        raise exc

    def _worker_number(self, address):
        return self.worker_numbers.setdefault(address, len(self.worker_numbers))


# --- A worker ---------------------------------------------------------------

class _Block:
    """What one Dask task returns: its block (memory tier and results), its
    figures (wall-clock start and end, measured peak, worker RSS), or the
    error that stopped it (code, message, Python exception or None)."""
    __slots__ = ("op", "block", "data", "figures", "error", "worker")

    def __init__(self, op, block, data=None, figures=None, error=None, worker=None):
        self.op, self.block, self.data = op, block, data
        self.figures, self.error, self.worker = figures, error, worker

    def __reduce__(self):
        return (_arrived, (self.op, self.block, self.data, self.figures, self.error, self.worker))


def _arrived(op, block, data, figures, error, worker):
    """A _Block unpickled where Dask moved it. Its array (an out-of-band
    pickle buffer) lies in the buffer Dask read the whole message into, at
    whatever offset the frames before it left, so it is seldom aligned for
    its dtype; the engine reads only aligned arrays (TaskHost.run copies
    others), so it is copied once here rather than by every task that reads
    it."""
    if data is not None and not data.flags.aligned:
        data = data.copy()
    return _Block(op, block, data, figures, error, worker)


def _worker_address():
    try:
        from distributed import get_worker
        return get_worker().address
    except Exception:
        return os.getpid()


def _run_task(payload, op, block, inputs):
    for x in inputs:
        if x.error is not None:
            return x  # an input failed: its error, not ours
    start = time.time()
    try:
        host = host_of(payload)
    except Exception as e:
        return _Block(op, block, error=(_INTERNAL, f"{type(e).__name__}: {e}", e))
    lent = [(x.op, x.block, x.data) for x in inputs
            if x.data is not None and x.op in host.memory_ops]
    data, (peak, rss), error = host.task_host.run(op, block, 1, lent)
    end = time.time()
    if error is not None:
        code, retryable, message, exception = error
        message = host.rename(message)
        if retryable and exception is None:
            raise StrataTaskError(op, block, code, message)
        return _Block(op, block, error=(code, message, exception))
    return _Block(op, block, data, (start, end, peak, rss), None, _worker_address())


def _figures_of(result):
    if result.error is not None:
        return result
    return _Block(result.op, result.block, None, result.figures, None, result.worker)
