"""The one benchmark protocol every script in bench/ uses (bench/README.md says why).

A benchmark is a list of *cases* (a workload at one size); a case has
*contenders* (Strata, a peer, a baseline), each a command run as a fresh
process. For every case:

  * reps (default 5): each rep runs every contender once, in an order rotated
    by one per rep, so no contender always runs first or last;
  * before each run: the contender's untimed setup (remove its output, warm
    its input, ...), then `sync`, then a quiet sample of the machine (the CPU
    used by everything else over `pre_sample_s`, waiting up to `quiet_wait_s`
    for it to fall under the threshold) and the 1-minute load average;
  * during each run: wall time, CPU of the contender's process tree (wait4's
    rusage, which includes every waited-for descendant, or what a 50 ms
    sampler saw if that is more), peak RSS (the largest process from wait4, and
    the sampled sum over the tree), and the CPU everything else used: the busy
    time of /proc/stat over the run minus the contender tree, minus this
    harness, minus helper processes that are part of the workload (an S3
    server), minus kernel threads (writeback and reclaim the contender caused),
    plus steal time (another VM on our cores);
  * a run is *disturbed* when that other CPU exceeds `threshold_cores` (0.10)
    of one core on average over the run, plus `tolerance_cpu_s` (the
    resolution of /proc/stat: 10 ms per CPU at each end); then the whole rep is
    discarded (its runs are kept in the JSON with the reason) and done again,
    at most `max_redos` times per case; past that the benchmark fails loudly
    (ProtocolError, exit status 3) and leaves what it measured in an
    `.incomplete.json` beside the output, never in bench/results/;
  * summaries over the kept reps: median with min and max of every numeric
    figure of every contender; ratios only between runs of the same rep
    (median of the per-rep ratios, with min and max).

Smoke mode (--smoke) runs 1 rep without the disturbance check, to test a
script end to end on tiny sizes on a busy machine; its JSON says so, goes to
build/bench/smoke/ by default, and bench/report.py refuses it.

Nothing here knows about Strata: scripts build contenders, and a contender's
`finish` callback adds figures the command reported (a history file, phases
it printed) to its run under "extra".
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Callable, Iterable, Sequence

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
RESULTS_DIR = os.path.join(REPO, "bench", "results")
SMOKE_DIR = os.path.join(REPO, "build", "bench", "smoke")

DEFAULT_REPS = 5
DEFAULT_THRESHOLD_CORES = 0.10
DEFAULT_MAX_REDOS = 10
USER_HZ = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count() or 1
# /proc/stat counts in USER_HZ ticks per CPU: a reading is exact to one tick
# per CPU at each end of the run.
DEFAULT_TOLERANCE_CPU_S = 2.0 * NCPU / USER_HZ
PAGE = os.sysconf("SC_PAGE_SIZE")
GB = 10**9


class ProtocolError(RuntimeError):
    """Not enough undisturbed reps within the redo budget: the figures would lie."""


class ContenderFailed(RuntimeError):
    """A contender's command exited non-zero (or was killed)."""


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Statistics and rotation: pure functions.

def stat(values: Sequence[float]) -> dict:
    """Median, min, max and count of values (None when there are none)."""
    vals = [v for v in values if v is not None]
    if not vals:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "n": len(vals)}


def rotation(names: Sequence[str], slot: int) -> list[str]:
    """The order of rep `slot`: names rotated left by slot (mod len)."""
    if not names:
        return []
    k = slot % len(names)
    return list(names[k:]) + list(names[:k])


def run_value(run: dict, key: str):
    """A figure of one run: a top-level measurement or one of its extras."""
    if key in run:
        return run[key]
    return run.get("extra", {}).get(key)


def paired_ratio(reps: Iterable[dict], num: str, den: str, key: str = "wall_s") -> dict:
    """num/den of `key` within each rep (never across reps), summarised.

    `reps` are kept reps ({"runs": {contender: run}}); a rep lacking either
    contender or with a zero denominator is skipped."""
    per_rep = []
    for rep in reps:
        a, b = rep["runs"].get(num), rep["runs"].get(den)
        if a is None or b is None:
            continue
        va, vb = run_value(a, key), run_value(b, key)
        if va is None or vb is None or vb == 0:
            continue
        per_rep.append(va / vb)
    out = stat(per_rep)
    out.update({"numerator": num, "denominator": den, "key": key, "per_rep": per_rep})
    return out


def numeric_keys(runs: Sequence[dict]) -> list[str]:
    """Numeric figures present in any run (measurements and extras)."""
    keys: dict[str, None] = {}
    for r in runs:
        for k, v in list(r.items()) + list(r.get("extra", {}).items()):
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                keys.setdefault(k, None)
    return list(keys)


def summarize(runs: Sequence[dict]) -> dict:
    """Every numeric figure of a contender's kept runs as median/min/max."""
    return {k: stat([run_value(r, k) for r in runs]) for k in numeric_keys(runs)}


# --------------------------------------------------------------------------
# Measuring the machine.

@dataclasses.dataclass
class Snapshot:
    """CPU counters at one instant. Seconds, summed over all CPUs."""
    t: float
    busy_s: float = 0.0       # user + nice + system (+ guest, inside user)
    steal_s: float = 0.0      # time our vCPUs wanted to run and the host ran someone else
    irq_s: float = 0.0        # irq + softirq (recorded, not counted: see README)
    self_s: float = 0.0       # this harness process, all its threads
    # kernel threads (kthreadd and its children): (pid, starttime) -> CPU s
    kthreads: dict = dataclasses.field(default_factory=dict)
    procs: dict | None = None  # (pid, starttime) -> (comm, ppid, cpu_s), for the why


def other_cpu(before: Snapshot, after: Snapshot, ours_s: float) -> dict:
    """CPU used by everything but us between two snapshots.

    ours_s: CPU of the contender tree and of the workload's helpers. The
    harness's own CPU and kernel threads' are subtracted and reported apart;
    steal time is added (another tenant of the host ran on our cores)."""
    busy = after.busy_s - before.busy_s
    harness = after.self_s - before.self_s
    kthreads = kernel_threads_cpu(before.kthreads, after.kthreads)
    steal = after.steal_s - before.steal_s
    other = busy - ours_s - harness - kthreads + steal
    return {"window_s": after.t - before.t, "busy_cpu_s": busy, "harness_cpu_s": harness,
            "kernel_threads_cpu_s": kthreads, "steal_cpu_s": steal,
            "irq_cpu_s": after.irq_s - before.irq_s, "other_cpu_s": other}


def kernel_threads_cpu(before: dict, after: dict) -> float:
    """CPU the kernel threads used between two scans ((pid, starttime) ->
    CPU s): each thread's own increase, a thread started meanwhile counted
    whole. A thread that exited meanwhile counts nothing: its CPU since the
    first scan is unknown (so it stays in "other"), and its CPU before that
    was not in the window. (Totals subtracted, an exiting kworker's whole
    life came off the window and made "other" seconds too large.)"""
    return sum(max(0.0, cpu - before.get(key, 0.0)) for key, cpu in after.items())


def is_disturbed(other_cpu_s: float, wall_s: float, threshold_cores: float,
                 tolerance_cpu_s: float) -> bool:
    """True when everything else used more than threshold_cores of one core
    on average over wall_s (beyond the counters' resolution)."""
    return other_cpu_s > threshold_cores * wall_s + tolerance_cpu_s


def top_others(before: dict | None, after: dict | None, exclude: set[int], n: int = 5) -> list:
    """The programs (processes alive at both ends, not ours, grouped by name)
    that used the most CPU: [{"comm", "processes", "cpu_s"}]. Processes that
    started and ended within the window are not seen here (their CPU is in
    other_cpu_s all the same)."""
    if not before or not after:
        return []
    by_comm: dict[str, list] = {}
    for key, (comm, ppid, cpu) in after.items():
        if key[0] in exclude or ppid == 2 or key[0] == 2 or key not in before:
            continue
        d = cpu - before[key][2]
        if d > 0:
            row = by_comm.setdefault(comm, [0, 0.0])
            row[0] += 1
            row[1] += d
    rows = [{"comm": c, "processes": k, "cpu_s": round(v, 3)} for c, (k, v) in by_comm.items()]
    rows.sort(key=lambda r: -r["cpu_s"])
    return rows[:n]


def discard_reason(name: str, run: dict, threshold_cores: float) -> str:
    """Why `name`'s run disturbed its rep, in one line: everything else's CPU,
    then what it was: steal time (the host ran another guest on our cores),
    the programs that used the most, or processes too short-lived to see."""
    why = []
    steal = run.get("other", {}).get("steal_cpu_s", 0.0)
    if steal >= 0.01:
        why.append(f"steal {steal:.2f} s")
    why += [f"{p['comm']}" + (f" x{p['processes']}" if p["processes"] > 1 else "")
            + f" {p['cpu_s']:.2f} s" for p in run["top_other_processes"][:3]]
    return (f"{name}: everything else used {run['other_cpu_s']:.2f} s of CPU in "
            f"{run['wall_s']:.2f} s ({run['other_cores']:.2f} cores > {threshold_cores}; "
            f"{', '.join(why) or 'short-lived processes'})")


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def parse_proc_stat_line(text: str):
    """(comm, ppid, cpu_s, starttime) from /proc/PID/stat (comm may hold ') ')."""
    lpar, rpar = text.index("("), text.rindex(")")
    comm = text[lpar + 1:rpar]
    f = text[rpar + 2:].split()
    # after comm: state ppid pgrp session tty tpgid flags minflt cminflt majflt
    # cmajflt utime stime cutime cstime priority nice threads itrealvalue starttime
    ppid = int(f[1])
    cpu = (int(f[11]) + int(f[12])) / USER_HZ
    return comm, ppid, cpu, int(f[19])


def children(pid: int) -> list[int]:
    """Direct children of pid (every thread's), from /proc/PID/task/*/children."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except (FileNotFoundError, ProcessLookupError):
        return []
    out = []
    for tid in tids:
        text = _read(f"/proc/{pid}/task/{tid}/children")
        if text:
            out.extend(int(x) for x in text.split())
    return out


def process_tree(root: int) -> list[int]:
    seen, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.append(pid)
        todo.extend(children(pid))
    return seen


class LiveTree:
    """The processes under a helper's root, looked up afresh each time it is
    iterated: a cluster (Ray's raylet, Dask's nanny) starts workers after
    the benchmark took its first look, and their CPU is the cluster's too."""

    def __init__(self, *roots: int):
        self.roots = roots

    def __iter__(self):
        return iter([p for r in self.roots for p in process_tree(r)])

    def __add__(self, other):
        return LiveTree(*self.roots, *other.roots)


def pid_cpu_s(pid: int) -> float | None:
    text = _read(f"/proc/{pid}/stat")
    return parse_proc_stat_line(text)[2] if text else None


class LinuxMachine:
    """The real machine: /proc, getrusage, monotonic time."""

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def loadavg(self) -> list[float]:
        return list(os.getloadavg())

    def snapshot(self, with_procs: bool = True, scan_first: bool = True) -> Snapshot:
        """The CPU counters, and a scan of /proc (kernel threads' CPU and,
        with_procs, every process's for the record). The scan takes a few ms:
        scan_first puts it before the counters (a snapshot taken before a
        run), else after them (after a run), so the counters' window is the
        run's."""
        if scan_first:
            kthreads, procs = self._scan(with_procs)
        ru = resource.getrusage(resource.RUSAGE_SELF)
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        t = self.now()
        if not scan_first:
            kthreads, procs = self._scan(with_procs)
        # user nice system idle iowait irq softirq steal guest guest_nice
        v += [0] * (10 - len(v))
        return Snapshot(t=t, busy_s=(v[0] + v[1] + v[2]) / USER_HZ,
                        irq_s=(v[5] + v[6]) / USER_HZ, steal_s=v[7] / USER_HZ,
                        self_s=ru.ru_utime + ru.ru_stime, kthreads=kthreads,
                        procs=procs if with_procs else None)

    @staticmethod
    def _scan(with_procs):
        procs = {}
        kthreads = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            text = _read(f"/proc/{name}/stat")
            if not text:
                continue
            try:
                comm, ppid, cpu, start = parse_proc_stat_line(text)
            except (ValueError, IndexError):
                continue
            pid = int(name)
            if pid == 2 or ppid == 2:
                kthreads[(pid, start)] = cpu
            if with_procs:
                procs[(pid, start)] = (comm, ppid, cpu)
        return kthreads, procs

    def describe(self) -> dict:
        return describe_machine()


def describe_machine() -> dict:
    def first(path, prefix):
        text = _read(path) or ""
        for line in text.splitlines():
            if line.startswith(prefix):
                return line.split(":", 1)[1].strip()
        return None

    mem_total = first("/proc/meminfo", "MemTotal")
    cg_mem = (_read("/sys/fs/cgroup/memory.max") or "").strip() or None
    cg_cpu = (_read("/sys/fs/cgroup/cpu.max") or "").strip() or None
    thp = (_read("/sys/kernel/mm/transparent_hugepage/enabled") or "").strip() or None
    return {
        "cpu_model": first("/proc/cpuinfo", "model name"),
        "cpus": NCPU,
        "cpus_usable": len(os.sched_getaffinity(0)),
        "mem_total_bytes": int(mem_total.split()[0]) * 1024 if mem_total else None,
        "cgroup_memory_max": cg_mem, "cgroup_cpu_max": cg_cpu,
        "kernel": platform.release(), "os": (_read("/etc/debian_version") or "").strip(),
        "transparent_hugepages": thp, "python": sys.version.split()[0],
        "root": os.geteuid() == 0,
        "note": "shared VM: other people's work is measured and disturbed reps redone",
    }


def git_description(repo: str = REPO) -> dict:
    def git(*a):
        out = subprocess.run(["git", "-C", repo, *a], capture_output=True, text=True)
        return out.stdout.rstrip("\n") if out.returncode == 0 else None

    dirty = git("status", "--porcelain")
    return {"commit": git("rev-parse", "HEAD"), "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
            "dirty_files": [l for l in dirty.splitlines() if l.strip()] if dirty else []}


# --------------------------------------------------------------------------
# Running one contender.

@dataclasses.dataclass
class Contender:
    """One command measured in every rep.

    setup(): untimed, before each run (remove the output, warm the input,
      drop caches for a prepared variant, ...).
    finish(run, result): untimed, after each successful run; adds figures to
      run["extra"] (result has .stdout, .stderr as text).
    variant: "user" for what a user gets (the headline), or a label such as
      "prepared" (page cache dropped, memory pre-touched) for a separate column.
    watch_dirs: name -> directory whose total bytes are polled during the run
      (peak kept in extra[name + "_peak_bytes"]).
    """
    name: str
    argv: list[str]
    env: dict | None = None
    cwd: str | None = None
    setup: Callable[[], None] | None = None
    finish: Callable[[dict, "Completed"], None] | None = None
    variant: str = "user"
    label: str | None = None
    watch_dirs: dict | None = None
    timeout_s: float | None = None

    def describe(self) -> dict:
        return {"argv": self.argv, "variant": self.variant, "label": self.label or self.name,
                "env": {k: v for k, v in (self.env or {}).items()
                        if k not in os.environ or os.environ[k] != v} or None}


@dataclasses.dataclass
class Completed:
    returncode: int
    stdout: str
    stderr: str


def tree_bytes(path: str) -> int:
    """Total size of the files under path (0 when it does not exist)."""
    total = 0
    try:
        entries = list(os.scandir(path))
    except (FileNotFoundError, NotADirectoryError):
        return 0
    for e in entries:
        try:
            if e.is_dir(follow_symlinks=False):
                total += tree_bytes(e.path)
            else:
                total += e.stat(follow_symlinks=False).st_size
        except FileNotFoundError:
            pass
    return total


class TreeSampler(threading.Thread):
    """Every `period` s: the summed RSS and CPU of root's process tree, and
    the bytes under each watched directory; keeps the peaks."""

    def __init__(self, root: int, period: float, watch_dirs: dict | None = None):
        super().__init__(daemon=True)
        self.root, self.period = root, period
        self.watch = dict(watch_dirs or {})
        self.peak_rss = 0
        self.cpu_seen: dict[int, float] = {}
        self.max_processes = 0
        self.dir_peaks = {k: 0 for k in self.watch}
        self.samples = 0
        self.stop = threading.Event()

    def sample(self):
        rss = 0
        pids = list(self.root) if isinstance(self.root, LiveTree) else process_tree(self.root)
        for pid in pids:
            st = _read(f"/proc/{pid}/stat")
            sm = _read(f"/proc/{pid}/statm")
            if not st or not sm:
                continue
            try:
                _, _, cpu, _ = parse_proc_stat_line(st)
                rss += int(sm.split()[1]) * PAGE
            except (ValueError, IndexError):
                continue
            self.cpu_seen[pid] = max(cpu, self.cpu_seen.get(pid, 0.0))
        self.peak_rss = max(self.peak_rss, rss)
        self.max_processes = max(self.max_processes, len(pids))
        for k, path in self.watch.items():
            self.dir_peaks[k] = max(self.dir_peaks[k], tree_bytes(path))
        self.samples += 1

    def run(self):
        while True:
            self.sample()
            if self.stop.wait(self.period):
                break
        for k, path in self.watch.items():  # what is left at the end counts too
            self.dir_peaks[k] = max(self.dir_peaks[k], tree_bytes(path))

    @property
    def tree_cpu_s(self) -> float:
        return sum(self.cpu_seen.values())


def run_process(c: Contender, machine: LinuxMachine, *, poll_s: float = 0.05,
                helper_pids: Sequence[int] = (), scratch: str | None = None) -> tuple[dict, Completed]:
    """Runs c.argv once as a fresh process and measures it (see module doc)."""
    out_f = tempfile.TemporaryFile(dir=scratch)
    err_f = tempfile.TemporaryFile(dir=scratch)
    env = dict(os.environ, **(c.env or {})) if c.env else None
    helpers_before = {p: pid_cpu_s(p) or 0.0 for p in helper_pids}   # (a LiveTree: now)
    before = machine.snapshot()
    t0 = machine.now()
    proc = subprocess.Popen(c.argv, stdout=out_f, stderr=err_f, env=env, cwd=c.cwd,
                            start_new_session=True)
    sampler = TreeSampler(proc.pid, poll_s, c.watch_dirs)
    sampler.start()
    helper_sampler = (TreeSampler(helper_pids, poll_s) if isinstance(helper_pids, LiveTree)
                      else None)
    if helper_sampler:
        helper_sampler.start()
    status = ru = None
    try:
        if c.timeout_s is None:
            _, status, ru = os.wait4(proc.pid, 0)
        else:
            deadline = t0 + c.timeout_s
            while True:
                pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if machine.now() > deadline:
                    raise ContenderFailed(f"{c.name}: still running after {c.timeout_s} s")
                time.sleep(0.02)
    finally:
        if status is None:  # interrupted or timed out: end the group we started
            for sig in (15, 9):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                time.sleep(0.5)
            try:
                os.wait4(proc.pid, 0)
            except ChildProcessError:
                pass
            sampler.stop.set()
            if helper_sampler:
                helper_sampler.stop.set()
    t1 = machine.now()
    after = machine.snapshot(scan_first=False)
    sampler.stop.set()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    # A LiveTree's processes as sampled during the run too: a cluster's
    # workers started for the run and gone at its end (Ray's job workers) used
    # CPU that is the run's, not a disturbance.
    if helper_sampler:
        helper_sampler.stop.set()
        helper_sampler.join()
    seen = helper_sampler.cpu_seen if helper_sampler else {}
    helpers_after = set(helper_pids) | set(helpers_before) | set(seen)
    helper_cpu = sum(max(pid_cpu_s(p) or 0.0, seen.get(p, 0.0), helpers_before.get(p, 0.0))
                     - helpers_before.get(p, 0.0) for p in helpers_after)
    wall = t1 - t0
    rusage_cpu = ru.ru_utime + ru.ru_stime
    tree_cpu = max(rusage_cpu, sampler.tree_cpu_s)
    acct = other_cpu(before, after, tree_cpu + helper_cpu)
    out_f.seek(0)
    err_f.seek(0)
    done = Completed(proc.returncode, out_f.read().decode(errors="replace"),
                     err_f.read().decode(errors="replace"))
    out_f.close()
    err_f.close()
    run = {
        "wall_s": wall,
        "returncode": proc.returncode,
        "cpu_user_s": ru.ru_utime, "cpu_sys_s": ru.ru_stime,
        "tree_cpu_s": tree_cpu,
        "cpu_cores": tree_cpu / wall if wall > 0 else None,
        "max_rss_process_bytes": ru.ru_maxrss * 1024,
        "tree_rss_sampled_peak_bytes": sampler.peak_rss,
        "peak_rss_bytes": max(ru.ru_maxrss * 1024, sampler.peak_rss),
        "tree_processes_max": sampler.max_processes,
        "helper_cpu_s": helper_cpu,
        "major_faults": ru.ru_majflt, "minor_faults": ru.ru_minflt,
        "voluntary_switches": ru.ru_nvcsw, "involuntary_switches": ru.ru_nivcsw,
        "other": acct,
        "other_cpu_s": acct["other_cpu_s"],
        # everything else's CPU per second of the counters' window (the run
        # plus a few microseconds of this harness on either side)
        "other_cores": acct["other_cpu_s"] / max(acct["window_s"], wall, 1e-9),
        "top_other_processes": top_others(before.procs, after.procs,
                                          set(sampler.cpu_seen) | {os.getpid(), *helpers_after}),
        "extra": {},
    }
    for k, v in sampler.dir_peaks.items():
        run["extra"][f"{k}_peak_bytes"] = v
    return run, done


# --------------------------------------------------------------------------
# The protocol.

@dataclasses.dataclass
class Settings:
    reps: int = DEFAULT_REPS
    threshold_cores: float = DEFAULT_THRESHOLD_CORES
    tolerance_cpu_s: float = DEFAULT_TOLERANCE_CPU_S
    max_redos: int = DEFAULT_MAX_REDOS
    check: bool = True            # discard disturbed reps (off only in smoke mode)
    pre_sample_s: float = 1.0     # the quiet sample before each run
    quiet_wait_s: float = 60.0    # wait at most this long for a quiet machine before a run
    poll_s: float = 0.05
    sync_before_run: bool = True
    smoke: bool = False

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d["disturbed_when"] = ("other_cpu_s > threshold_cores * max(wall_s, counter window) + "
                               "tolerance_cpu_s, "
                               "other = /proc/stat busy - contender tree - harness - helpers - "
                               "kernel threads + steal")
        return d


class Protocol:
    """Runs cases under Settings on a machine; `runner(contender)` returns
    (run, Completed) and defaults to a real process (run_process)."""

    def __init__(self, settings: Settings, machine=None, runner=None, scratch: str | None = None,
                 say: Callable[[str], None] = log):
        self.s = settings
        self.last_case = None
        self.machine = machine or LinuxMachine()
        self.scratch = scratch
        self.say = say
        self.runner = runner or (lambda c, helpers: run_process(
            c, self.machine, poll_s=self.s.poll_s, helper_pids=helpers, scratch=self.scratch))

    def quiet_sample(self) -> dict:
        """The CPU everything else uses right now (no run of ours going on),
        waiting for it to drop under the threshold for up to quiet_wait_s."""
        waited = 0.0
        samples = []
        while True:
            a = self.machine.snapshot(with_procs=False)
            self.machine.sleep(self.s.pre_sample_s)
            b = self.machine.snapshot(with_procs=False)
            acct = other_cpu(a, b, 0.0)
            window = acct["window_s"] or self.s.pre_sample_s
            cores = acct["other_cpu_s"] / window
            samples.append(round(cores, 3))
            quiet = not is_disturbed(acct["other_cpu_s"], window, self.s.threshold_cores,
                                     self.s.tolerance_cpu_s)
            if quiet or not self.s.check or waited >= self.s.quiet_wait_s - 1e-6:
                return {"other_cores": cores, "quiet": quiet, "waited_s": round(waited, 2),
                        "samples_cores": samples}
            waited += window

    def run_one(self, c: Contender, helpers: Sequence[int]) -> dict:
        if c.setup:
            c.setup()
        if self.s.sync_before_run:
            os.sync()
        before = self.quiet_sample()
        load = self.machine.loadavg()
        run, done = self.runner(c, helpers)
        run["contender"] = c.name
        run["variant"] = c.variant
        run["load_before"] = load
        run["load_1min_before"] = load[0]
        run["other_cores_before"] = before["other_cores"]
        run["quiet_before"] = before
        if done.returncode != 0:
            raise ContenderFailed(
                f"{c.name} exited {done.returncode}: {' '.join(map(str, c.argv))[:300]}\n"
                f"{done.stderr[-3000:]}")
        window = max(run.get("other", {}).get("window_s") or 0.0, run["wall_s"])
        run["disturbed"] = is_disturbed(run["other_cpu_s"], window, self.s.threshold_cores,
                                        self.s.tolerance_cpu_s)
        if c.finish:
            c.finish(run, done)
        return run

    def run_case(self, name: str, contenders: Sequence[Contender], *,
                 ratios: Sequence[tuple[str, str]] = (), ratio_keys: Sequence[str] = ("wall_s",),
                 after_rep: Callable[[int, dict], None] | None = None,
                 helper_pids: Sequence[int] = (), describe: dict | None = None) -> dict:
        """Runs `contenders` under the protocol; returns the case's JSON.

        ratios: (numerator, denominator) contender pairs; each is computed
        per rep for every key in ratio_keys. after_rep(slot, rep) runs after a
        rep is kept (e.g. output checks after the first)."""
        names = [c.name for c in contenders]
        if len(set(names)) != len(names):
            raise ValueError(f"{name}: contender names repeat: {names}")
        by_name = {c.name: c for c in contenders}
        case = {"case": name, "describe": describe or {},
                "contenders": {c.name: c.describe() for c in contenders},
                "reps": [], "discarded": [], "complete": False}
        self.last_case = case  # what a failure leaves behind
        attempt = 0
        while len(case["reps"]) < self.s.reps:
            slot = len(case["reps"])
            order = rotation(names, slot)
            rep = {"slot": slot, "attempt": attempt, "order": order, "runs": {}}
            attempt += 1
            for cname in order:
                self.say(f"{name} rep {slot + 1}/{self.s.reps} (attempt {attempt}): {cname}")
                run = self.run_one(by_name[cname], helper_pids)
                rep["runs"][cname] = run
                self.say(f"  {run['wall_s']:.2f} s, {run['tree_cpu_s']:.2f} s CPU, "
                         f"peak RSS {run['peak_rss_bytes'] / 1e6:.0f} MB, other "
                         f"{run['other_cores']:.2f} cores (before {run['other_cores_before']:.2f}), "
                         f"load {run['load_1min_before']:.2f}"
                         + (" DISTURBED" if run["disturbed"] else ""))
                if run["disturbed"] and self.s.check:
                    rep["discarded_because"] = discard_reason(cname, run, self.s.threshold_cores)
                    break
            if "discarded_because" in rep:
                case["discarded"].append(rep)
                self.say(f"  rep discarded: {rep['discarded_because']}")
                if len(case["discarded"]) > self.s.max_redos:
                    raise ProtocolError(
                        f"{name}: only {len(case['reps'])} of {self.s.reps} reps undisturbed "
                        f"after {len(case['discarded'])} discarded (redo budget "
                        f"{self.s.max_redos}); last: {rep['discarded_because']}. Run on a quiet "
                        f"machine (see bench/README.md).")
                continue
            case["reps"].append(rep)
            if after_rep:
                after_rep(slot, rep)
        case["complete"] = True
        return self._finish_case(case, ratios, ratio_keys)

    @staticmethod
    def _finish_case(case, ratios, ratio_keys):
        names = list(case["contenders"])
        case["summary"] = {n: summarize([r["runs"][n] for r in case["reps"] if n in r["runs"]])
                           for n in names}
        case["ratios"] = {}
        for num, den in ratios:
            for key in ratio_keys:
                label = f"{num}/{den}" + ("" if key == "wall_s" else f":{key}")
                case["ratios"][label] = paired_ratio(case["reps"], num, den, key)
        return case


# --------------------------------------------------------------------------
# Whole benchmarks: arguments, the JSON document, failing loudly.

def add_arguments(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("protocol (bench/README.md)")
    g.add_argument("--reps", type=int, default=None,
                   help=f"kept reps per case (default {DEFAULT_REPS}; 1 with --smoke)")
    g.add_argument("--max-redos", type=int, default=DEFAULT_MAX_REDOS,
                   help="disturbed reps redone per case before failing")
    g.add_argument("--threshold-cores", type=float, default=DEFAULT_THRESHOLD_CORES,
                   help="a run is disturbed when everything else used more than this many "
                        "cores on average")
    g.add_argument("--quiet-wait", type=float, default=60.0,
                   help="seconds to wait for a quiet machine before each run")
    g.add_argument("--prepared", action="store_true",
                   help="also run each contender's prepared variant (page cache dropped, "
                        "memory pre-touched): a separate column, never the headline")
    g.add_argument("--smoke", action=_SmokeAction, nargs=0, default=False,
                   help="1 rep on tiny sizes, no disturbance check: tests the script end to "
                        "end; its JSON is not a result (its data go to DIR-smoke unless "
                        "--dir is given)")
    g.add_argument("--out", default=None,
                   help="where the JSON goes (default bench/results/NAME.json, or "
                        "build/bench/smoke/NAME.json with --smoke; '-' for stdout)")


class _SmokeAction(argparse.Action):
    """--smoke, which also moves a script's default --dir to DIR-smoke: the
    scripts keep generated inputs in --dir and reuse them when they exist,
    so a smoke run's tiny arrays must never be found by a full run."""

    def __call__(self, parser, namespace, values, option_string=None):
        namespace.smoke = True
        default = parser.get_default("dir")
        if default is not None and getattr(namespace, "dir", None) == default:
            namespace.dir = default.rstrip("/") + "-smoke"


def settings_from(args) -> Settings:
    if args.smoke:
        return Settings(reps=args.reps or 1, check=False, pre_sample_s=0.1, quiet_wait_s=0.0,
                        max_redos=args.max_redos, threshold_cores=args.threshold_cores,
                        smoke=True)
    reps = args.reps or DEFAULT_REPS
    return Settings(reps=reps, threshold_cores=args.threshold_cores, max_redos=args.max_redos,
                    quiet_wait_s=args.quiet_wait)


def stop_on_sigterm() -> None:
    """Makes SIGTERM end this process as Ctrl-C does (KeyboardInterrupt), so
    run_process's cleanup ends the contender's process group it started. By
    default SIGTERM ends Python at once, and the contender, in a session of
    its own, runs on with nobody measuring it. Main thread only."""
    def stop(signum, frame):
        raise KeyboardInterrupt(f"stopped by signal {signum}")
    signal.signal(signal.SIGTERM, stop)


class Bench:
    """One benchmark run: its settings, protocol, document and output file.

        with Bench("rechunk", args) as b:
            case = b.protocol.run_case(...)
            b.doc["workloads"].append(...)

    On leaving, writes the JSON. If the protocol could not get undisturbed
    reps, or a contender failed, writes what was measured to
    NAME.incomplete.json under the scratch directory (never bench/results/),
    prints the reason and exits 3 (protocol) or 1 (contender)."""

    def __init__(self, name: str, args, scratch: str, description: str = "",
                 protocol: Protocol | None = None):
        self.name = name
        self.args = args
        if threading.current_thread() is threading.main_thread():
            stop_on_sigterm()
        self.settings = protocol.s if protocol else settings_from(args)
        os.makedirs(scratch, exist_ok=True)
        self.scratch = scratch
        self.protocol = protocol or Protocol(self.settings, scratch=scratch)
        if args.out:
            self.out = args.out
        else:
            self.out = os.path.join(SMOKE_DIR if args.smoke else RESULTS_DIR, f"{name}.json")
        self.t0 = time.time()
        m = self.protocol.machine
        self.doc = {
            "format": "strata-bench-protocol/1",
            "benchmark": name,
            "description": description,
            "command": " ".join([os.path.relpath(sys.argv[0], REPO)
                                 if os.path.isabs(sys.argv[0]) else sys.argv[0]] + sys.argv[1:]),
            "smoke": self.settings.smoke,
            "complete": False,
            "protocol": self.settings.to_json(),
            "date_start": datetime.datetime.now().isoformat(timespec="seconds"),
            "git": git_description(),
            "machine": m.describe(),
            "load_start": m.loadavg(),
            "prepared_variant": bool(args.prepared),
            "cases": [],
        }

    def case(self, name, contenders, **kw) -> dict:
        """Runs a case and appends it to the document (even if it fails)."""
        self.protocol.last_case = None
        try:
            case = self.protocol.run_case(name, contenders, **kw)
        except BaseException:
            if self.protocol.last_case is not None:
                self.protocol._finish_case(self.protocol.last_case, kw.get("ratios", ()),
                                           kw.get("ratio_keys", ("wall_s",)))
                self.doc["cases"].append(self.protocol.last_case)
            raise
        self.doc["cases"].append(case)
        return case

    def __enter__(self):
        return self

    def _finalize(self):
        self.doc["date_end"] = datetime.datetime.now().isoformat(timespec="seconds")
        self.doc["load_end"] = self.protocol.machine.loadavg()
        self.doc["duration_s"] = round(time.time() - self.t0, 1)
        runs = [r for c in self.doc["cases"] for rep in c.get("reps", [])
                for r in rep["runs"].values()]
        self.doc["load_1min_before_runs"] = stat([r["load_1min_before"] for r in runs])
        self.doc["other_cores_during_kept_runs"] = stat([r["other_cores"] for r in runs])
        self.doc["discarded_reps"] = sum(len(c.get("discarded", [])) for c in self.doc["cases"])

    def __exit__(self, kind, exc, tb):
        self._finalize()
        if exc is None:
            self.doc["complete"] = True
            write_json(self.doc, self.out)
            log(f"{self.name}: wrote {self.out} ({self.doc['duration_s']} s, "
                f"{self.doc['discarded_reps']} reps discarded)")
            return False
        if isinstance(exc, (ProtocolError, ContenderFailed)):
            self.doc["failure"] = str(exc.args[0])
            path = os.path.join(self.scratch, f"{self.name}.incomplete.json")
            write_json(self.doc, path)
            print(f"{os.path.basename(sys.argv[0])}: error: {exc.args[0]}\n"
                  f"  what was measured is in {path}; nothing was written to {self.out}",
                  file=sys.stderr)
            raise SystemExit(3 if isinstance(exc, ProtocolError) else 1)
        return False


def write_json(doc: dict, path: str) -> None:
    text = json.dumps(doc, indent=1, default=str) + "\n"
    if path == "-":
        sys.stdout.write(text)
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


# --------------------------------------------------------------------------
# Setup helpers scripts share (untimed, before a run).

def drop_caches() -> bool:
    """sync and drop the page cache (root only); False when we may not."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def warm(path: str) -> None:
    """Reads every file under path once, into the page cache."""
    for root, _, files in os.walk(path):
        for name in files:
            with open(os.path.join(root, name), "rb", buffering=0) as f:
                while f.read(16 << 20):
                    pass


def mem_available() -> int:
    text = _read("/proc/meminfo") or ""
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


PRETOUCH = "import sys, numpy as np; np.ones(int(sys.argv[1]) // 8)"


def pretouch(nbytes: int) -> int:
    """Writes min(nbytes, MemAvailable - 3 GiB) of fresh memory in a child
    process that then exits; returns the bytes touched.

    On this VM the first write to guest memory the host has taken back costs
    ~0.55 s of system time per GB. Every user's first run pays that; a
    prepared variant takes it out to show the engine's own cost."""
    n = min(nbytes, mem_available() - (3 << 30))
    if n > 0:
        subprocess.run([sys.executable, "-c", PRETOUCH, str(n)], check=True)
    return max(n, 0)


def remove_path(path: str) -> None:
    """Removes a file or a directory tree, if there is one."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.remove(path)


def clear_dir(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path, exist_ok=True)


def package_env(package_dir: str, python: str = sys.executable, **extra: str) -> dict:
    """The environment of a contender importing the package in `package_dir`
    (a build tree's): this one's, with `extra` and the directory first on
    PYTHONPATH. The package is byte-compiled for `python` first, as pip does
    when it installs a wheel: run from a build tree with bytecode not written
    (PYTHONDONTWRITEBYTECODE), it would compile every module at each import,
    which no installed package pays."""
    package_dir = os.path.abspath(package_dir)
    subprocess.run([python, "-m", "compileall", "-q", package_dir], check=True,
                   stdout=subprocess.DEVNULL)
    return dict(os.environ, **extra, PYTHONPATH=os.pathsep.join(
        [package_dir] + [p for p in [os.environ.get("PYTHONPATH")] if p]))


def python_package_versions(*names: str) -> dict:
    """Versions of the Python packages, as this interpreter (the .venv's) imports them."""
    code = ("import importlib, json, sys\nout = {}\nfor n in sys.argv[1:]:\n"
            "    try:\n        out[n] = importlib.import_module(n).__version__\n"
            "    except Exception as e:\n        out[n] = f'unavailable: {e}'\n"
            "print(json.dumps(out))")
    r = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True)
    return json.loads(r.stdout) if r.returncode == 0 else {"error": r.stderr[-300:]}


def dask_defaults() -> dict:
    """What a Dask user gets here without configuring anything."""
    code = ("import json, dask, dask.array as da, dask.system\n"
            "x = da.ones(4, chunks=2)\n"
            "print(json.dumps({'dask': dask.__version__, 'scheduler': "
            "str(dask.base.get_scheduler(collections=[x]).__module__), "
            "'num_workers_default': dask.system.CPU_COUNT, "
            "'config_num_workers': dask.config.get('num_workers', None)}))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return json.loads(r.stdout) if r.returncode == 0 else {"error": r.stderr[-300:]}
