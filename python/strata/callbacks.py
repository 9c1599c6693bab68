"""Callbacks: what a compute tells Python while it runs (Cubed's names).

Subclass Callback (or write any object with some of these methods) and pass
it as compute(..., callbacks=[cb]). Methods run on the engine's threads
holding the GIL, one call at a time. An exception raised by a callback
cancels the compute and is raised by compute().
"""
import json
from dataclasses import dataclass, field


class Callback:
    def on_compute_start(self, event):
        """event: ComputeStartEvent (plan, ops, num_tasks)."""

    def on_operation_start(self, event):
        """event: OperationEvent, when the op's first task starts."""

    def on_task_end(self, event):
        """event: TaskEndEvent, after every task."""

    def on_operation_end(self, event):
        """event: OperationEvent, when the op's last task is done."""

    def on_compute_end(self, event):
        """event: ComputeEndEvent (ok, error, summary)."""


@dataclass
class OperationEvent:
    name: str           # the array the op makes ("array-007")
    op: str             # what it does ("add", "sum-partial", "rechunk")
    num_tasks: int
    projected_mem: int  # bytes per task


@dataclass
class ComputeStartEvent:
    ops: list           # OperationEvent for every op that runs tasks
    num_tasks: int
    plan_json: str = field(repr=False)

    @property
    def plan(self):
        """The plan as a dict (Plan::ToJson)."""
        return json.loads(self.plan_json)


@dataclass
class TaskEndEvent:
    name: str
    op: str
    block: tuple
    start: float              # seconds since the compute started
    end: float
    projected_mem: int        # bytes, from the plan
    measured_peak_mem: int    # bytes, the peak of the task's memory pool
    worker_rss: int
    attempts: int
    worker: int
    num_tasks: int = 1
    # Not run: nothing needs its block (a resumed run's finished work, or a
    # block no reader reads), reported so that progress reaches the end.
    skipped: bool = False


@dataclass
class ComputeEndEvent:
    ok: bool
    error: str
    summary: dict


class _Dispatcher:
    """What `_strata.compute` calls: turns its dicts into events and passes
    them to every callback that has the method."""

    def __init__(self, callbacks):
        self.callbacks = list(callbacks)
        for cb in self.callbacks:
            if not any(hasattr(cb, m) for m in ("on_compute_start", "on_operation_start",
                                                  "on_task_end", "on_operation_end",
                                                  "on_compute_end")):
                raise TypeError(f"callbacks: {type(cb).__name__} has none of the callback "
                                "methods (on_compute_start, on_task_end, ...)")

    def _send(self, method, event):
        for cb in self.callbacks:
            f = getattr(cb, method, None)
            if f is not None:
                f(event)

    def on_compute_start(self, d):
        self._send("on_compute_start", ComputeStartEvent(
            ops=[OperationEvent(**o) for o in d["ops"]], num_tasks=d["num_tasks"],
            plan_json=d["plan_json"]))

    def on_operation_start(self, d):
        self._send("on_operation_start", OperationEvent(**d))

    def on_task_end(self, d):
        self._send("on_task_end", TaskEndEvent(**d))

    def on_operation_end(self, d):
        self._send("on_operation_end", OperationEvent(**d))

    def on_compute_end(self, d):
        self._send("on_compute_end", ComputeEndEvent(**d))
