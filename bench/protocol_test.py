"""Unit tests of bench/protocol.py: rotation, per-rep ratios, the disturbance
accounting and the discard/redo logic, with a fake clock and CPU source; and
one real process to check the /proc and wait4 plumbing.

    .venv/bin/python -m pytest -q bench/protocol_test.py
"""
import argparse
import subprocess
import json
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol as P  # noqa: E402


# --------------------------------------------------------------------------
# Pure functions.

def test_rotation_moves_every_contender_through_every_position():
    names = ["bound", "strata", "dask"]
    orders = [P.rotation(names, k) for k in range(3)]
    assert orders == [["bound", "strata", "dask"], ["strata", "dask", "bound"],
                      ["dask", "bound", "strata"]]
    assert P.rotation(names, 3) == names
    for pos in range(3):
        assert sorted(o[pos] for o in orders) == sorted(names)
    assert P.rotation([], 2) == []


def test_stat_median_min_max():
    assert P.stat([3.0, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0, "n": 3}
    assert P.stat([1.0, 4.0])["median"] == 2.5
    assert P.stat([]) == {"median": None, "min": None, "max": None, "n": 0}
    assert P.stat([None, 5.0])["n"] == 1


def rep(**walls):
    return {"runs": {k: {"wall_s": v, "extra": {"rss": 10 * v}} for k, v in walls.items()}}


def test_ratios_pair_runs_of_the_same_rep_only():
    # Dask is slow in rep 0 and fast in rep 1, and so is Strata: per-rep
    # ratios are 2.0 and 2.0; ratios of medians or cross-rep pairs would not be.
    reps = [rep(dask=10.0, strata=5.0), rep(dask=2.0, strata=1.0), rep(dask=6.0, strata=3.0)]
    r = P.paired_ratio(reps, "dask", "strata")
    assert r["per_rep"] == [2.0, 2.0, 2.0]
    assert r["median"] == 2.0 and r["min"] == 2.0 and r["max"] == 2.0
    reps = [rep(dask=9.0, strata=3.0), rep(dask=4.0, strata=4.0), rep(dask=10.0, strata=5.0)]
    r = P.paired_ratio(reps, "dask", "strata")
    assert r["per_rep"] == [3.0, 1.0, 2.0]
    assert (r["median"], r["min"], r["max"]) == (2.0, 1.0, 3.0)


def test_ratio_of_an_extra_and_skipping_incomplete_reps():
    reps = [rep(a=2.0, b=1.0), rep(a=3.0), rep(a=1.0, b=0.0), rep(a=4.0, b=2.0)]
    r = P.paired_ratio(reps, "a", "b", key="rss")
    assert r["per_rep"] == [2.0, 2.0]
    assert r["key"] == "rss"


def test_summarize_covers_measurements_and_extras():
    runs = [{"wall_s": 1.0, "disturbed": False, "extra": {"compute_s": 0.5, "tier": "memory"}},
            {"wall_s": 3.0, "disturbed": False, "extra": {"compute_s": 0.7}}]
    s = P.summarize(runs)
    assert s["wall_s"] == {"median": 2.0, "min": 1.0, "max": 3.0, "n": 2}
    assert s["compute_s"]["median"] == pytest.approx(0.6)
    assert "disturbed" not in s and "tier" not in s


def test_other_cpu_subtracts_ours_harness_and_kernel_threads_and_adds_steal():
    a = P.Snapshot(t=10.0, busy_s=100.0, steal_s=1.0, self_s=2.0, kthreads={(2, 1): 5.0})
    b = P.Snapshot(t=12.0, busy_s=104.5, steal_s=1.25, self_s=2.1, kthreads={(2, 1): 5.2})
    acct = P.other_cpu(a, b, ours_s=3.5)
    # busy 4.5 - ours 3.5 - harness 0.1 - kthreads 0.2 + steal 0.25 = 0.95
    assert acct["other_cpu_s"] == pytest.approx(0.95)
    assert acct["window_s"] == 2.0
    assert acct["harness_cpu_s"] == pytest.approx(0.1)


def test_kernel_threads_that_come_and_go_count_only_their_own_cpu_in_the_window():
    # kworker 40 exits during the run after 3.9 s of CPU in its life; 41 starts
    # and uses 0.3 s; 2 (kthreadd) uses 0.05 s. The window's kernel-thread CPU
    # is 0.35 s, never minus the exited thread's life (which once made a quiet
    # 20 s run look disturbed by 3.9 s of "other" CPU).
    before = {(2, 1): 1.0, (40, 500): 3.9}
    after = {(2, 1): 1.05, (41, 900): 0.3}
    assert P.kernel_threads_cpu(before, after) == pytest.approx(0.35)
    a = P.Snapshot(t=0.0, busy_s=100.0, kthreads=before)
    b = P.Snapshot(t=20.0, busy_s=110.0, kthreads=after)
    assert P.other_cpu(a, b, ours_s=9.0)["other_cpu_s"] == pytest.approx(0.65)
    # A pid reused by a new thread is a new thread (its start time differs).
    assert P.kernel_threads_cpu({(40, 500): 3.9}, {(40, 800): 0.2}) == pytest.approx(0.2)


def test_disturbed_means_more_than_a_tenth_of_a_core_beyond_the_tolerance():
    assert not P.is_disturbed(0.99, 10.0, 0.10, 0.0)
    assert not P.is_disturbed(1.0, 10.0, 0.10, 0.0)
    assert P.is_disturbed(1.01, 10.0, 0.10, 0.0)
    assert not P.is_disturbed(1.03, 10.0, 0.10, 0.04)
    assert P.is_disturbed(1.05, 10.0, 0.10, 0.04)
    assert not P.is_disturbed(-0.02, 1.0, 0.10, 0.0)


def test_a_discarded_run_names_steal_and_the_busiest_programs():
    run = {"wall_s": 4.84, "other_cpu_s": 0.76, "other_cores": 0.157,
           "other": {"steal_cpu_s": 0.67},
           "top_other_processes": [{"comm": "process_api", "processes": 1, "cpu_s": 0.01},
                                   {"comm": "python", "processes": 2, "cpu_s": 0.05}]}
    assert P.discard_reason("strata", run, 0.1) == (
        "strata: everything else used 0.76 s of CPU in 4.84 s (0.16 cores > 0.1; "
        "steal 0.67 s, process_api 0.01 s, python x2 0.05 s)")
    run["other"]["steal_cpu_s"] = 0.0
    run["top_other_processes"] = []
    assert P.discard_reason("strata", run, 0.1).endswith("(0.16 cores > 0.1; short-lived processes)")


def test_parse_proc_stat_line_with_a_hostile_comm():
    text = ("4242 (a) b) (c) S 7 4242 4242 0 -1 4194304 0 0 0 0 250 50 7 3 20 0 1 0 "
            "12345 0 0")
    comm, ppid, cpu, start = P.parse_proc_stat_line(text)
    assert comm == "a) b) (c"
    assert ppid == 7
    assert cpu == pytest.approx(300 / P.USER_HZ)
    assert start == 12345


def test_top_others_skips_ours_and_kernel_threads():
    before = {(10, 1): ("cc1plus", 5, 1.0), (11, 1): ("kworker/0:1", 2, 0.0),
              (12, 1): ("strata", 1, 0.0), (13, 1): ("ninja", 1, 2.0),
              (15, 1): ("cc1plus", 5, 0.0)}
    after = {(10, 1): ("cc1plus", 5, 3.5), (11, 1): ("kworker/0:1", 2, 9.0),
             (12, 1): ("strata", 1, 8.0), (13, 1): ("ninja", 1, 2.1), (14, 9): ("ld", 13, 1.0),
             (15, 1): ("cc1plus", 5, 0.5)}
    tops = P.top_others(before, after, exclude={12})
    assert [t["comm"] for t in tops] == ["cc1plus", "ninja"]
    assert tops[0] == {"comm": "cc1plus", "processes": 2, "cpu_s": 3.0}


# --------------------------------------------------------------------------
# The protocol with a fake machine and runner.

class FakeMachine:
    """A clock and a CPU counter: others use `others(t)` cores at time t."""

    def __init__(self, others=lambda t: 0.0):
        self.t = 0.0
        self.busy = 0.0
        self.others = others

    def now(self):
        return self.t

    def advance(self, dt, ours_cores=0.0):
        steps = max(1, int(dt / 0.01))
        for i in range(steps):
            self.busy += (self.others(self.t) + ours_cores) * dt / steps
            self.t += dt / steps

    def sleep(self, s):
        self.advance(s)

    def loadavg(self):
        return [0.25, 0.2, 0.1]

    def snapshot(self, with_procs=True):
        return P.Snapshot(t=self.t, busy_s=self.busy, procs={} if with_procs else None)

    def describe(self):
        return {"fake": True}


class FakeRunner:
    """Runs a contender for `walls[name]` seconds of fake time at 1 core."""

    def __init__(self, machine, walls):
        self.m, self.walls, self.log = machine, walls, []

    def __call__(self, c, helpers):
        self.log.append(c.name)
        wall = self.walls[c.name]
        before = self.m.snapshot()
        self.m.advance(wall, ours_cores=1.0)
        after = self.m.snapshot()
        acct = P.other_cpu(before, after, ours_s=wall)
        run = {"wall_s": wall, "tree_cpu_s": wall, "peak_rss_bytes": 100 * 10**6,
               "other": acct, "other_cpu_s": acct["other_cpu_s"],
               "other_cores": acct["other_cpu_s"] / wall, "top_other_processes": [],
               "extra": {}}
        return run, P.Completed(0, "", "")


def settings(**kw):
    base = dict(reps=5, tolerance_cpu_s=0.0, pre_sample_s=1.0, quiet_wait_s=0.0,
                sync_before_run=False)
    base.update(kw)
    return P.Settings(**base)


def make(walls, others=lambda t: 0.0, **kw):
    m = FakeMachine(others)
    r = FakeRunner(m, walls)
    return P.Protocol(settings(**kw), machine=m, runner=r, say=lambda s: None), m, r


def contenders(*names):
    return [P.Contender(n, ["true"]) for n in names]


def test_quiet_machine_keeps_every_rep_in_rotated_order():
    proto, m, r = make({"strata": 1.0, "dask": 3.0})
    case = proto.run_case("W1", contenders("strata", "dask"), ratios=[("dask", "strata")])
    assert case["complete"] and not case["discarded"]
    assert [rep["order"] for rep in case["reps"]] == [["strata", "dask"], ["dask", "strata"]] * 2 \
        + [["strata", "dask"]]
    assert r.log == [n for rep in case["reps"] for n in rep["order"]]
    assert case["summary"]["dask"]["wall_s"]["median"] == 3.0
    assert case["ratios"]["dask/strata"]["median"] == 3.0
    assert case["ratios"]["dask/strata"]["per_rep"] == [3.0] * 5
    for rep in case["reps"]:
        for run in rep["runs"].values():
            assert run["load_1min_before"] == 0.25
            assert run["other_cores_before"] == 0.0
            assert run["disturbed"] is False


def test_a_disturbed_run_discards_its_rep_and_the_rep_is_redone_in_the_same_slot():
    # Someone else uses 0.5 cores from t=3 to t=6.
    proto, m, r = make({"strata": 1.0, "dask": 1.0},
                       others=lambda t: 0.5 if 3.0 <= t < 6.0 else 0.0)
    case = proto.run_case("W1", contenders("strata", "dask"), ratios=[("dask", "strata")])
    assert case["complete"]
    assert len(case["reps"]) == 5
    assert len(case["discarded"]) >= 1
    d = case["discarded"][0]
    assert "discarded_because" in d and "cores > 0.1" in d["discarded_because"]
    # the rep stopped at its first disturbed run: nothing after it ran
    disturbed = [n for n in d["order"] if d["runs"].get(n, {}).get("disturbed")]
    assert list(d["runs"])[-1] == disturbed[0]
    # the kept rep that replaced it has the same slot and the same order
    kept = case["reps"][d["slot"]]
    assert kept["order"] == d["order"] and kept["attempt"] > d["attempt"]
    assert all(not run["disturbed"] for rep in case["reps"] for run in rep["runs"].values())
    # every run that happened is in the JSON: kept or discarded
    recorded = sum(len(x["runs"]) for x in case["reps"] + case["discarded"])
    assert recorded == len(r.log)
    json.dumps(case)


def test_disturbance_just_under_the_threshold_is_kept():
    proto, m, r = make({"a": 2.0}, others=lambda t: 0.09)
    case = proto.run_case("c", contenders("a"))
    assert not case["discarded"]
    proto, m, r = make({"a": 2.0}, others=lambda t: 0.11)
    with pytest.raises(P.ProtocolError):
        proto.run_case("c", contenders("a"))


def test_redo_budget_exhausted_fails_loudly_with_what_was_measured():
    proto, m, r = make({"a": 1.0, "b": 1.0}, others=lambda t: 0.0 if t < 4.0 else 1.0,
                       max_redos=3)
    with pytest.raises(P.ProtocolError) as e:
        proto.run_case("W4", contenders("a", "b"))
    msg = str(e.value)
    assert "W4: only" in msg and "of 5 reps undisturbed" in msg and "quiet machine" in msg
    case = proto.last_case
    assert not case["complete"]
    assert len(case["discarded"]) == 4  # the budget (3) plus the one that broke it
    assert 1 <= len(case["reps"]) < 5


def test_smoke_mode_keeps_disturbed_runs_but_marks_them():
    proto, m, r = make({"a": 1.0}, others=lambda t: 2.0, check=False, reps=1)
    case = proto.run_case("c", contenders("a"))
    assert case["complete"] and not case["discarded"]
    assert case["reps"][0]["runs"]["a"]["disturbed"] is True


def test_quiet_sample_waits_for_the_machine_to_calm_down():
    proto, m, r = make({"a": 1.0}, others=lambda t: 1.0 if t < 5.0 else 0.0, quiet_wait_s=30.0,
                       reps=1)
    case = proto.run_case("c", contenders("a"))
    run = case["reps"][0]["runs"]["a"]
    assert run["quiet_before"]["quiet"] is True
    assert run["quiet_before"]["waited_s"] >= 4.0
    assert run["quiet_before"]["samples_cores"][0] == pytest.approx(1.0)
    assert not case["discarded"]


def test_quiet_sample_gives_up_after_quiet_wait_and_records_it():
    proto, m, r = make({"a": 1.0}, others=lambda t: 1.0, quiet_wait_s=3.0, reps=1,
                       check=True, max_redos=0)
    with pytest.raises(P.ProtocolError):
        proto.run_case("c", contenders("a"))
    run = proto.last_case["discarded"][0]["runs"]["a"]
    assert run["quiet_before"]["quiet"] is False
    assert run["quiet_before"]["waited_s"] == pytest.approx(3.0)


def test_setup_and_finish_run_around_every_run():
    calls = []
    proto, m, r = make({"a": 1.0}, reps=2)
    c = P.Contender("a", ["true"], setup=lambda: calls.append("setup"),
                    finish=lambda run, done: run["extra"].update(compute_s=0.5))
    case = proto.run_case("c", [c], after_rep=lambda slot, rep: calls.append(f"rep{slot}"))
    assert calls == ["setup", "rep0", "setup", "rep1"]
    assert case["summary"]["a"]["compute_s"]["median"] == 0.5


def test_a_failing_contender_is_an_error_not_a_figure():
    m = FakeMachine()

    def runner(c, helpers):
        run, _ = FakeRunner(m, {"a": 1.0})(c, helpers)
        return run, P.Completed(2, "", "strata: error: no such array")

    proto = P.Protocol(settings(), machine=m, runner=runner, say=lambda s: None)
    with pytest.raises(P.ContenderFailed, match="no such array"):
        proto.run_case("c", contenders("a"))


def test_repeated_contender_names_are_refused():
    proto, m, r = make({"a": 1.0})
    with pytest.raises(ValueError):
        proto.run_case("c", contenders("a", "a"))


def bench_args(tmp_path, **kw):
    a = dict(reps=None, max_redos=2, threshold_cores=0.1, quiet_wait=0.0, prepared=False,
             smoke=False, out=str(tmp_path / "out.json"))
    a.update(kw)
    return argparse.Namespace(**a)


def test_bench_writes_the_document_with_machine_git_load_and_runs(tmp_path):
    proto, m, r = make({"a": 1.0, "b": 2.0})
    args = bench_args(tmp_path)
    with P.Bench("demo", args, scratch=str(tmp_path), protocol=proto) as b:
        b.case("c1", contenders("a", "b"), ratios=[("b", "a")])
    doc = json.load(open(args.out))
    assert doc["complete"] is True and doc["smoke"] is False
    assert doc["machine"] == {"fake": True}
    assert "commit" in doc["git"]
    assert doc["protocol"]["reps"] == 5 and doc["protocol"]["threshold_cores"] == 0.10
    assert doc["cases"][0]["ratios"]["b/a"]["median"] == 2.0
    assert len(doc["cases"][0]["reps"]) == 5
    assert doc["load_1min_before_runs"]["median"] == 0.25


def test_bench_that_cannot_get_quiet_reps_exits_3_and_writes_nothing_to_out(tmp_path, capsys):
    proto, m, r = make({"a": 1.0}, others=lambda t: 1.0, max_redos=2)
    args = bench_args(tmp_path)
    with pytest.raises(SystemExit) as e:
        with P.Bench("demo", args, scratch=str(tmp_path), protocol=proto) as b:
            b.case("c1", contenders("a"))
    assert e.value.code == 3
    assert not os.path.exists(args.out)
    err = capsys.readouterr().err
    assert "error: c1: only 0 of 5 reps undisturbed" in err
    doc = json.load(open(tmp_path / "demo.incomplete.json"))
    assert doc["complete"] is False and "failure" in doc
    assert len(doc["cases"][0]["discarded"]) == 3


def test_settings_from_args():
    ns = argparse.Namespace(reps=None, max_redos=10, threshold_cores=0.1, quiet_wait=60.0,
                            smoke=True)
    s = P.settings_from(ns)
    assert s.reps == 1 and s.check is False and s.smoke is True
    ns.smoke = False
    s = P.settings_from(ns)
    assert s.reps == 5 and s.check is True


# --------------------------------------------------------------------------
# The real plumbing: one short process tree on this machine.

CHILD = r"""
import os, sys, time
pid = os.fork()
if pid == 0:
    buf = bytearray(64 << 20)          # 64 MiB touched in the child
    for i in range(0, len(buf), 4096):
        buf[i] = 1
    t = time.process_time()
    while time.process_time() - t < 0.25:
        pass
    os._exit(0)
os.waitpid(pid, 0)
os.makedirs(sys.argv[1], exist_ok=True)
open(os.path.join(sys.argv[1], "f"), "wb").write(b"x" * 100000)
print("done")
"""


def test_run_process_measures_the_whole_tree(tmp_path):
    watched = str(tmp_path / "work")
    c = P.Contender("tree", [sys.executable, "-c", CHILD, watched],
                    watch_dirs={"work": watched})
    run, done = P.run_process(c, P.LinuxMachine(), poll_s=0.02, scratch=str(tmp_path))
    assert done.returncode == 0 and done.stdout.strip() == "done"
    assert run["tree_cpu_s"] >= 0.2          # the child's CPU is the contender's
    assert run["peak_rss_bytes"] >= 64 << 20  # and so is its memory
    assert run["max_rss_process_bytes"] >= 64 << 20
    assert run["wall_s"] >= 0.25
    assert run["extra"]["work_peak_bytes"] == 100000
    assert isinstance(run["other_cores"], float)
    for k in ("busy_cpu_s", "harness_cpu_s", "kernel_threads_cpu_s", "steal_cpu_s"):
        assert k in run["other"]


def test_run_process_reports_a_failing_command(tmp_path):
    c = P.Contender("fail", [sys.executable, "-c", "import sys; print('bad', file=sys.stderr);"
                             " sys.exit(4)"])
    run, done = P.run_process(c, P.LinuxMachine(), scratch=str(tmp_path))
    assert done.returncode == 4 and "bad" in done.stderr


def test_run_process_timeout_ends_the_group_it_started(tmp_path):
    c = P.Contender("slow", ["/bin/sh", "-c", "sleep 30 & sleep 30"], timeout_s=0.3)
    with pytest.raises(P.ContenderFailed, match="still running"):
        P.run_process(c, P.LinuxMachine(), scratch=str(tmp_path))


HARNESS = r"""
import sys
sys.path.insert(0, sys.argv[1])
import protocol as P
P.stop_on_sigterm()
c = P.Contender("slow", ["/bin/sh", "-c", "echo $$ > " + sys.argv[2] + "; sleep 60 & sleep 60"])
P.run_process(c, P.LinuxMachine(), scratch=sys.argv[3])
"""


def test_sigterm_to_the_harness_ends_the_contender_group_it_started(tmp_path):
    # Without the handler SIGTERM ends the harness at once, and the contender
    # (in a session of its own) runs on.
    pidfile = tmp_path / "pid"
    harness = subprocess.Popen([sys.executable, "-c", HARNESS,
                                os.path.dirname(os.path.abspath(__file__)), str(pidfile),
                                str(tmp_path)])
    t0 = time.time()
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.time() - t0 < 20:
        time.sleep(0.02)
    group = int(pidfile.read_text())
    harness.terminate()
    assert harness.wait(timeout=20) != 0
    t0 = time.time()
    alive = True
    while alive and time.time() - t0 < 10:
        try:
            os.killpg(group, 0)
            time.sleep(0.05)
        except ProcessLookupError:
            alive = False
    if alive:
        os.killpg(group, 9)
    assert not alive, "the contender's process group outlived the harness"


WAIT_FOR_CPU = r"""
import sys, time
sys.path.insert(0, sys.argv[3])
import protocol as P
pid, want = int(sys.argv[1]), float(sys.argv[2])
start, t0 = P.pid_cpu_s(pid), time.time()
while P.pid_cpu_s(pid) - start < want and time.time() - t0 < 30:
    time.sleep(0.02)
"""


def test_cpu_used_outside_the_contender_tree_is_counted_as_other(tmp_path):
    # A busy loop that is not the contender's; the contender waits until the
    # loop has burned 0.3 s of CPU. Whatever else the machine is doing,
    # everything else's CPU must include what the loop burned.
    burner = __import__("subprocess").Popen(
        [sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 60: pass"])
    try:
        before = P.pid_cpu_s(burner.pid)
        c = P.Contender("waiter", [sys.executable, "-c", WAIT_FOR_CPU, str(burner.pid), "0.3",
                                   os.path.dirname(os.path.abspath(__file__))])
        run, done = P.run_process(c, P.LinuxMachine(), scratch=str(tmp_path))
        burned = P.pid_cpu_s(burner.pid) - before
    finally:
        burner.kill()
        burner.wait()
    assert done.returncode == 0
    assert burned >= 0.3
    assert run["other_cpu_s"] >= 0.8 * burned - P.DEFAULT_TOLERANCE_CPU_S


def test_the_machine_block_names_the_host_cpu_model():
    with open("/proc/cpuinfo") as f:
        models = [l.split(":", 1)[1].strip() for l in f if l.startswith("model name")]
    assert P.describe_machine()["cpu_model"] == (models[0] if models else None)


def test_live_tree_sees_processes_started_after_it_was_made():
    # The root starts its child only when told (a line on its stdin).
    root = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; sys.stdin.readline(); "
                             "subprocess.run(['sleep', '5'])"], stdin=subprocess.PIPE, text=True)
    try:
        tree = P.LiveTree(root.pid)
        assert list(tree) == [root.pid]
        root.stdin.write("go\n")
        root.stdin.flush()
        deadline = time.time() + 5
        while len(list(tree)) < 2 and time.time() < deadline:
            time.sleep(0.05)
        assert len(list(tree)) == 2 and list(tree)[0] == root.pid
        assert list(tree + P.LiveTree(os.getpid()))[-1] != root.pid
    finally:
        for pid in reversed(list(P.LiveTree(root.pid))):
            os.kill(pid, 9)
        root.wait()
