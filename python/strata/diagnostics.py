"""Diagnostics built on callbacks: a history of the compute as dicts, and
tqdm progress bars (one per op), as Cubed's."""
import json

from .callbacks import Callback


class HistoryCallback(Callback):
    """Records a compute: after it, `.plan` (dict), `.tasks` (one dict per
    task: op, block, start/end seconds, projected and measured peak memory),
    `.ops` ({array name: totals and maxima}) and `.summary`; `.history` has
    them all in one dict, `.to_json(path)` writes it."""

    def __init__(self):
        self.plan = None
        self.tasks = []
        self.ops = {}
        self.summary = None
        self.ok = None
        self.error = None

    def on_compute_start(self, event):
        self.plan = event.plan
        self.tasks = []
        self.ops = {o.name: {"op": o.op, "num_tasks": o.num_tasks,
                             "projected_mem": o.projected_mem, "measured_peak_mem": 0,
                             "tasks_done": 0, "task_seconds": 0.0}
                    for o in event.ops}

    def on_task_end(self, event):
        t = dict(event.__dict__)
        t["allowed_mem"] = self.plan["spec"]["allowed_mem"] if self.plan else None
        self.tasks.append(t)
        o = self.ops.get(event.name)
        if o is not None:
            o["measured_peak_mem"] = max(o["measured_peak_mem"], event.measured_peak_mem)
            o["tasks_done"] += 1
            o["task_seconds"] += event.end - event.start

    def on_compute_end(self, event):
        self.ok = event.ok
        self.error = event.error
        self.summary = event.summary

    @property
    def history(self):
        return {"plan": self.plan, "ops": self.ops, "tasks": self.tasks,
                "summary": self.summary, "ok": self.ok, "error": self.error}

    def to_json(self, path):
        with open(path, "w") as f:
            json.dump(self.history, f, indent=1)


class TqdmProgressBar(Callback):
    """One tqdm bar per op (Debian's python3-tqdm), as Cubed's. Keyword
    arguments go to every tqdm()."""

    def __init__(self, **tqdm_kwargs):
        self.tqdm_kwargs = tqdm_kwargs
        self.bars = {}

    def on_compute_start(self, event):
        from tqdm.auto import tqdm
        self.bars = {}
        for i, op in enumerate(event.ops):
            kwargs = dict(desc=f"{op.name} ({op.op})", total=op.num_tasks, position=i,
                          unit="task")
            kwargs.update(self.tqdm_kwargs)
            self.bars[op.name] = tqdm(**kwargs)

    def on_task_end(self, event):
        bar = self.bars.get(event.name)
        if bar is not None:
            bar.update(event.num_tasks)

    def on_compute_end(self, event):
        for bar in self.bars.values():
            bar.close()
