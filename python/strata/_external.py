"""What the dask and ray executors share (runtime/external_run.h, both halves).

The calling process sends each compute's arrays to the workers once, as a
payload: a token (uuid4 hex) and the cloudpickled records of how the arrays
were made (_recipe.py), with the plan's fingerprint. A worker makes the
arrays again from the records and plans them once per compute (Host, kept
for the latest few computes by token), checking that its plan is the calling
process's, and runs each task through the engine's TaskHost.

Thread-safety: host() and forget() may be called from any thread; a Host's
TaskHost runs tasks concurrently (its run releases the GIL).
"""
import collections
import pickle
import re
import threading

from ._core import _engine
from ._recipe import Replayer

TOKEN_LEN = 32  # uuid4().hex


class StrataTaskError(Exception):
    """A retryable Strata error on a worker (Dask or Ray retries it)."""

    def __init__(self, op, block, code, message):
        super().__init__(op, block, code, message)
        self.op, self.block, self.code, self.message = op, block, code, message

    def __str__(self):
        return self.message


def fingerprint(op):
    """What must agree between the calling process's plan and a worker's."""
    return (op["op"], op["num_tasks"], op["tier"], op["projected_mem"], op["materialized"])


def make_payload(token, run, recipes, fuse, executor):
    """The bytes every worker of `executor` gets for one compute, or
    ValueError when cloudpickle cannot send how the arrays were made."""
    ops = run.ops()
    try:
        return token.encode() + _dumps({
            "recipes": recipes, "fuse": fuse, "run_dir": run.run_dir,
            "object_prefix": run.object_prefix, "executor": executor,
            "memory_ops": {o["index"] for o in ops if o["tier"] == "memory"},
            "ops": [fingerprint(o) for o in ops],
            "names": [[o["name"]] + list(o["fused_names"]) for o in ops],
        })
    except Exception as e:
        raise ValueError(
            f"compute: the arrays cannot be sent to the {executor} workers: cloudpickle cannot "
            f"pickle how they were made (a function given to map_blocks, map_overlap or "
            f"apply_gufunc, or something it refers to): {type(e).__name__}: {e}") from e


def _dumps(obj):
    import cloudpickle  # map_blocks functions defined in scripts and notebooks travel by value
    return cloudpickle.dumps(obj, protocol=5)


class Host:
    """A compute's plan on this worker (made once per compute)."""

    def __init__(self, blob):
        d = pickle.loads(blob)
        handles = Replayer()(d["recipes"])
        plan = _engine.plan(handles, d["fuse"])
        self.task_host = _engine.TaskHost(plan, d["run_dir"], d["object_prefix"])
        self.memory_ops = d["memory_ops"]
        here = self.task_host.ops()
        theirs = d["ops"]
        mine = [fingerprint(o) for o in here]
        if mine != theirs:
            diff = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b),
                        min(len(mine), len(theirs)))
            raise ValueError(
                f"a {d['executor']} worker planned the compute differently from the calling "
                f"process (op {diff}: {mine[diff] if diff < len(mine) else 'none'} here, "
                f"{theirs[diff] if diff < len(theirs) else 'none'} there): every worker needs "
                f"the same strata build")
        # Array names count the arrays a process made: this worker's names
        # become the calling process's in messages.
        self.names = {}
        for o, names in zip(here, d["names"]):
            for a, b in zip([o["name"]] + list(o["fused_names"]), names):
                self.names[a] = b

    def rename(self, message):
        return re.sub(r"array-\d{3,}", lambda m: self.names.get(m.group(0), m.group(0)), message)


_HOSTS = collections.OrderedDict()  # token -> Host, the latest few computes; guarded by _LOCK
_LOCK = threading.Lock()


def host(payload):
    """The Host of the compute whose payload this is (made on first use)."""
    token = bytes(payload[:TOKEN_LEN]).decode()
    with _LOCK:
        h = _HOSTS.get(token)
        if h is None:
            h = Host(payload[TOKEN_LEN:])
            _HOSTS[token] = h
            while len(_HOSTS) > 4:
                _HOSTS.popitem(last=False)
        else:
            _HOSTS.move_to_end(token)
        return h


def forget(token):
    """Drops the Host of a finished compute."""
    with _LOCK:
        _HOSTS.pop(token, None)
