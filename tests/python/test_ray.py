"""executor="ray": Strata's tasks on one local Ray instance per module (2
CPUs, a 1 GB memory resource, an 80 MB object store spilling into a
directory of the test's own, everything on 127.0.0.1, no dashboard, no
usage stats), against the threads executor: byte-identical results for
every tier and the engine suites the dask executor runs, memory-tier blocks
as objects in Ray's store that nothing writes to storage and nothing keeps
afterwards, Ray's spilling within the memory contract, admission by the
memory resource, a worker process killed mid-run, Ctrl-C in a driver of its
own, errors with the threads executor's messages, bad addresses. The
instance is shut down at the end and no Ray process of it is left."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import pytest

import strata
from external_executor_cases import (DATA, ERROR_CASES, Events,  # noqa: F401
                                     assert_error_matches_threads, both, same_bytes,
                                     threads_spec)

ray = pytest.importorskip("ray")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from s3_server import S3Server  # noqa: E402

MB = 2 ** 20
STORE = 80 * MB         # Ray's object store: smaller than the spill test's intermediate
NODE_MEMORY = 1 << 30   # the node's `memory` resource, what admission counts against
# Ray's settings for the instance: no usage report, no token file in $HOME,
# and (Ray's single-machine mode) every process on 127.0.0.1.
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled",
           "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
S3_NAMES = ("AWS_ENDPOINT_URL", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
            "AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN", "AWS_PROFILE")


def descendants():
    """(pid, name) of this process's descendants, from /proc/*/stat (no
    subprocess: a fork of this process, with Ray's threads in it and ASan
    preloaded, can hang before its exec)."""
    parent = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z":
            parent[int(entry)] = (int(fields[1]), name)
    found, frontier = [], {os.getpid()}
    while frontier:
        children = {p for p, (pp, _) in parent.items() if pp in frontier}
        found += [(p, parent[p][1]) for p in children]
        frontier = children
    return found


def ray_processes():
    """This process's Ray processes (the instance's gcs_server, raylet and
    workers are its descendants; the S3 server's node is not Ray's)."""
    return [(p, n) for p, n in descendants() if n != "node"]


class Instance:
    def __init__(self, temp_dir, spill_dir, s3):
        self.temp_dir, self.spill_dir, self.s3 = temp_dir, spill_dir, s3

    def spilled_files(self):
        return [os.path.join(d, f) for d, _, fs in os.walk(self.spill_dir) for f in fs]


@pytest.fixture(scope="module")
def instance():
    # The S3 server is started first: its credentials and endpoint are in
    # the environment every Ray process inherits (the object-tier test).
    s3 = S3Server(["raybucket"])
    saved = {k: os.environ.get(k) for k in list(RAY_ENV) + list(S3_NAMES)}
    os.environ.update(RAY_ENV)
    os.environ.update({k: v for k, v in s3.env().items() if k in S3_NAMES})
    # Short paths: Ray's sockets live under its temp dir.
    temp_dir = tempfile.mkdtemp(prefix="strt", dir="/tmp")
    spill_dir = tempfile.mkdtemp(prefix="strs", dir="/tmp")
    try:
        ray.init(num_cpus=2, object_store_memory=STORE, _memory=NODE_MEMORY,
                 include_dashboard=False, log_to_driver=False, _temp_dir=temp_dir,
                 object_spilling_directory=spill_dir)
        yield Instance(temp_dir, spill_dir, s3)
    finally:
        ray.shutdown()
        deadline = time.time() + 60
        while ray_processes() and time.time() < deadline:
            time.sleep(0.2)
        left = ray_processes()
        s3.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(temp_dir, ignore_errors=True)
        spilled = [os.path.join(d, f) for d, _, fs in os.walk(spill_dir) for f in fs]
        shutil.rmtree(spill_dir, ignore_errors=True)
        assert not left, f"Ray processes left after shutdown: {left}"
        assert not spilled, f"spilled objects left: {spilled}"


@pytest.fixture
def ray_spec(instance, tmp_path):
    return strata.Spec(executor="ray", work_dir=tmp_path / "ray-work", allowed_mem="100MB",
                       reserved_mem="1MB")



def owned_objects():
    """The objects this process owns or refers to (every block of a run is
    owned by the calling process, which submitted its task)."""
    worker = ray._private.worker.global_worker
    return len(worker.core_worker.get_all_reference_counts())


def no_objects_left(before):
    deadline = time.time() + 10
    while owned_objects() > before and time.time() < deadline:
        time.sleep(0.05)
    return owned_objects() <= before


def dir_is_empty(path):
    return not os.path.exists(path) or not os.listdir(path)


def test_an_address_that_does_not_answer_is_refused(tmp_path):
    # A process of its own, not connected to any Ray. First in the module:
    # this process has no Ray threads yet to make its fork hang.
    code = ("import strata\n"
            "try:\n"
            "    strata.Spec(executor='ray', address='127.0.0.1:1')\n"
            "except ValueError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env={**os.environ, **RAY_ENV})
    assert out.stdout.strip().startswith(
        "Spec: cannot reach the Ray cluster at 127.0.0.1:1: Connection refused"), out


def test_spec_defaults_come_from_the_cluster(instance, ray_spec):
    node = [n for n in ray.nodes() if n["Alive"]][0]["Resources"]
    assert ray_spec.executor == "ray"
    assert ray_spec.total_system_mem == node["memory"] + node["object_store_memory"]
    assert ray_spec._resolved()["ram_tier_mem"] == STORE
    assert ray_spec.workers == 2
    # total_system_mem is the cluster's, not capped by this machine.
    assert strata.Spec(executor="ray", total_system_mem="1PB").total_system_mem == 10 ** 15


def test_memory_tier_rechunk_keeps_blocks_in_the_object_store(instance, ray_spec, threads_spec,
                                                              tmp_path):
    def build(spec):
        return (strata.asarray(DATA, chunks=(48, 4), spec=spec) + 1).rechunk((4, 40))

    ops = strata.plan(build(ray_spec)).to_dict()["ops"]
    assert any(o.get("tier") == "memory" for o in ops), ops
    before = owned_objects()
    events = Events()
    out = both(build, ray_spec, threads_spec, callbacks=[events])
    assert np.array_equal(out, DATA + 1)
    # Nothing was written but the results, and no object of the run is left.
    assert events.summary["intermediate_bytes_written"] == 0
    assert dir_is_empty(tmp_path / "ray-work")
    assert no_objects_left(before)
    assert not instance.spilled_files()
    # Every task reported its measured peak within its projection, and the
    # tasks ran in more than one worker process.
    assert len({e.worker for e in events.tasks}) >= 2, [e.worker for e in events.tasks]
    for e in events.tasks:
        assert 0 < e.measured_peak_mem <= e.projected_mem, e


def test_a_block_is_read_in_place_from_the_object_store(instance):
    # What a reader is given: a read-only numpy view on the store's buffer,
    # aligned and contiguous, which TaskHost.run lends to the engine as it is.
    from strata._ray import _run_task  # noqa: F401 (the task the blocks go to)

    @ray.remote
    def look(block):
        return (block.flags.writeable, block.flags.aligned, block.flags.c_contiguous,
                block.ctypes.data % 64)

    big = np.arange(512 * 1024, dtype=np.float64)  # 4 MB: in the store, not inlined
    assert ray.get(look.remote(ray.put(big))) == (False, True, True, 0)


def test_every_tier_matches_threads(instance, tmp_path, threads_spec):
    def build(s):
        return (strata.asarray(DATA, chunks=(48, 4), spec=s) + 1).rechunk((4, 40))

    for tier, url in (("disk", None), ("object", "s3://raybucket/work")):
        spec = strata.Spec(executor="ray", work_dir=tmp_path / f"shared-{tier}",
                           allowed_mem="100MB", reserved_mem="1MB", tier=tier,
                           object_store_url=url)
        ops = strata.plan(build(spec)).to_dict()["ops"]
        assert any(o.get("tier") == tier for o in ops), ops
        events = Events()
        both(build, spec, threads_spec, callbacks=[events])
        assert events.summary["intermediate_bytes_written"] > 0
        # The run's directory and objects are gone after the compute.
        assert dir_is_empty(tmp_path / f"shared-{tier}")
    left = [os.path.join(d, f) for d, _, fs in os.walk(instance.s3.dir) for f in fs]
    assert not [p for p in left if "/op0" in p], left


def test_an_object_store_smaller_than_the_intermediate_spills(instance, tmp_path):
    # 120 MB of intermediates through an 80 MB store, 60 MB of which this
    # process holds (a ballast object) while the compute runs: Ray spills
    # objects into the test's directory, restores them for their readers and
    # removes them when they are freed. Each reader takes two blocks (12 MB):
    # Ray pins a task's arguments whole, so a reader of every block (a full
    # transpose) would need them all in the store at once (docs/ray.md,
    # Limits).
    spec = strata.Spec(executor="ray", work_dir=tmp_path / "work", allowed_mem="64MB",
                       reserved_mem="1MB", tier="memory")
    x = strata.random.random((3000, 5000), chunks=(3000, 250), spec=spec, seed=3) + 1
    y = strata.sum(x.rechunk((3000, 500)), axis=1)
    plan = strata.plan(y).to_dict()
    assert any(o.get("tier") == "memory" for o in plan["ops"]), plan["ops"]
    spilled = []

    class WatchSpill(strata.Callback):
        def on_task_end(self, event):
            spilled.append(len(instance.spilled_files()))

    events = Events()
    before = owned_objects()
    ballast = ray.put(np.ones(60 * MB // 8))
    out = y.compute(callbacks=[events, WatchSpill()])
    del ballast
    expected = strata.sum(strata.random.random((3000, 5000), chunks=(3000, 250), seed=3) + 1,
                          axis=1).compute()
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    assert max(spilled) > 0, "nothing was spilled"
    assert events.summary["intermediate_bytes_written"] == 0
    for e in events.tasks:
        assert 0 < e.measured_peak_mem <= e.projected_mem <= spec.allowed_mem, e
    assert no_objects_left(before)
    deadline = time.time() + 20
    while instance.spilled_files() and time.time() < deadline:
        time.sleep(0.1)
    assert not instance.spilled_files()
    assert dir_is_empty(tmp_path / "work")


def test_engine_operations_match_threads(ray_spec, threads_spec):
    b = np.random.default_rng(3).random((40, 24))
    weights = np.array([0.25, 0.5, 0.25])

    def elementwise(s):
        x = strata.asarray(DATA, chunks=(16, 10), spec=s)
        return strata.sqrt(x * 2 + 1) - x / 3

    def reduction(s):
        x = strata.asarray(DATA, chunks=(10, 7), spec=s)
        return strata.sum(x * x, axis=0) + strata.mean(x, axis=0)

    def full_reduction(s):
        return strata.max(strata.asarray(DATA, chunks=(5, 5), spec=s))

    def matmul(s):
        return strata.matmul(strata.asarray(DATA, chunks=(16, 10), spec=s),
                             strata.asarray(b, chunks=(10, 12), spec=s))

    def random_and_concat(s):
        r = strata.random.random((30, 20), chunks=(7, 6), spec=s, seed=5)
        return strata.concat([r, r * 2], axis=1)

    def python_map_blocks(s):
        x = strata.asarray(DATA, chunks=(12, 10), spec=s)
        offset = 7.0
        return strata.map_blocks(lambda blk: blk * offset + blk.sum(), x)

    def smooth(s):
        x = strata.asarray(DATA, chunks=(12, 10), spec=s)
        return strata.map_overlap(
            lambda b: weights[0] * np.roll(b, 1, 0) + weights[1] * b + weights[2] * np.roll(b, -1, 0),
            x, depth=(1, 2), boundary="reflect")

    def two_arrays(s):
        x = strata.asarray(DATA, chunks=(12, 10), spec=s)
        y = strata.asarray(DATA * 2, chunks=(16, 8), spec=s)
        return strata.map_overlap(lambda u, v, block_id=None: (u - v)[1:-1, 1:-1] + block_id[0],
                                  x, y, depth=1, boundary=0.5, trim=False)

    def gufunc(s):
        x = strata.asarray(DATA, chunks=(12, 40), spec=s)
        return strata.apply_gufunc(lambda b: b.mean(-1) - weights.sum(), "(i)->()", x)

    def gufunc_second_output(s):
        x = strata.asarray(DATA, chunks=(12, 10), spec=s)
        return strata.apply_gufunc(lambda b: (b.min(-1), b.argmax(-1)), "(i)->(),()", x,
                                   allow_rechunk=True)[1]

    def gradient(s):
        coords = np.cumsum(np.arange(1.0, 49.0))
        return np.gradient(strata.asarray(DATA, chunks=(12, 10), spec=s), coords, axis=0,
                           edge_order=2)

    for build in (elementwise, reduction, full_reduction, matmul, random_and_concat,
                  python_map_blocks, smooth, two_arrays, gufunc, gufunc_second_output, gradient):
        both(build, ray_spec, threads_spec)


def test_a_function_cloudpickle_cannot_send_is_refused(ray_spec):
    lock = threading.Lock()

    def holds_a_lock(b):
        with lock:
            return b

    x = strata.map_overlap(holds_a_lock, strata.asarray(DATA, chunks=(12, 10), spec=ray_spec),
                           depth=1)
    with pytest.raises(ValueError, match="cannot be sent to the ray workers: cloudpickle "
                       "cannot pickle how they were made"):
        x.compute()


def compare_trees(a, b):
    names = []
    for dirpath, _, files in os.walk(a):
        for f in files:
            rel = os.path.relpath(os.path.join(dirpath, f), a)
            names.append(rel)
            with open(os.path.join(dirpath, f), "rb") as x, open(os.path.join(b, rel), "rb") as y:
                assert x.read() == y.read(), rel
    assert sorted(names) == sorted(os.path.relpath(os.path.join(d, f), b)
                                   for d, _, fs in os.walk(b) for f in fs)


def test_zarr_region_writes_and_appends_match_threads(ray_spec, threads_spec, tmp_path):
    src = tmp_path / "src.zarr"
    strata.to_zarr(strata.asarray(DATA, chunks=(8, 8)), str(src))
    expected = DATA.copy()
    expected[5:25, 3:18] = DATA[:20, :15] * 2
    expected = np.concatenate([expected, DATA[:9] + 1])
    for name, spec in (("ray", ray_spec), ("threads", threads_spec)):
        x = strata.from_zarr(str(src), spec=spec)
        strata.to_zarr((x + 1).rechunk((16, 20)), str(tmp_path / f"{name}.zarr"))
        path = str(tmp_path / f"{name}-region.zarr")
        strata.to_zarr(strata.asarray(DATA, chunks=(8, 8)), path)
        strata.to_zarr(strata.asarray(DATA[:20, :15] * 2, chunks=(7, 6), spec=spec), path,
                       region=(slice(5, 25), slice(3, 18)))
        strata.to_zarr(strata.asarray(DATA[:9] + 1, chunks=(4, 40), spec=spec), path,
                       append_dim=0)
        same_bytes(strata.from_zarr(path).compute(), expected)
    compare_trees(tmp_path / "threads.zarr", tmp_path / "ray.zarr")
    compare_trees(tmp_path / "threads-region.zarr", tmp_path / "ray-region.zarr")


@pytest.mark.parametrize("case", ERROR_CASES)
def test_errors_have_the_threads_messages(case, ray_spec, threads_spec, tmp_path):
    before = owned_objects()
    assert_error_matches_threads(case, ray_spec, threads_spec, tmp_path)
    # A failed run leaves no object behind either.
    assert no_objects_left(before)
    assert dir_is_empty(tmp_path / "ray-work")


def test_bad_addresses_and_options(instance):
    with pytest.raises(TypeError, match="address must be the address of a Ray cluster"):
        strata.Spec(executor="ray", address=6379)
    with pytest.raises(TypeError, match="unexpected"):
        strata.Spec(executor="ray", client="x")
    with pytest.raises(TypeError, match="unexpected"):
        strata.Spec(executor="threads", address="127.0.0.1:1")
    # Connected to this instance: another cluster's address is refused.
    with pytest.raises(ValueError, match="connected to the Ray cluster at .*, not 127.0.0.1:1 "):
        strata.Spec(executor="ray", address="127.0.0.1:1")
    # The instance's own address is this instance.
    here = ray.get_runtime_context().gcs_address
    assert strata.Spec(executor="ray", address=here, allowed_mem="100MB").workers == 2


def test_task_larger_than_any_node_is_refused(instance):
    spec = strata.Spec(executor="ray", allowed_mem=int(NODE_MEMORY * 1.02),
                       reserved_mem=int(NODE_MEMORY * 1.01))
    with pytest.raises(MemoryError, match="more than any ray node has"):
        strata.ones((10, 10), chunks=5, spec=spec).compute()


def test_admission_by_the_memory_resource(instance):
    # Each task projects more than half the node's memory resource: the two
    # CPUs never run two tasks at once.
    spec = strata.Spec(executor="ray", allowed_mem=NODE_MEMORY, reserved_mem=int(NODE_MEMORY * 0.6))

    def slow(blk):
        time.sleep(0.2)
        return blk * 2

    y = strata.map_blocks(slow, strata.asarray(DATA, chunks=(8, 40), spec=spec))
    events = Events()
    same_bytes(y.compute(callbacks=[events]), DATA * 2)
    tasks = sorted((e.start, e.end, e.projected_mem) for e in events.tasks)
    assert len(tasks) == 6
    assert all(NODE_MEMORY / 2 < p <= NODE_MEMORY for _, _, p in tasks), tasks
    for (s0, e0, _), (s1, e1, _) in zip(tasks, tasks[1:]):
        assert s1 >= e0 - 0.01, tasks


def test_worker_process_killed_mid_run_costs_a_retry(ray_spec, tmp_path):
    marker = tmp_path / "killed"

    def dies_once(blk, block_id=None):
        if block_id == (2, 1) and not marker.exists():
            marker.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)  # the worker process, mid-task
        return blk + 1

    x = strata.asarray(DATA, chunks=(8, 8), spec=ray_spec)
    y = strata.map_blocks(dies_once, x).rechunk((48, 8)) * 2
    before = owned_objects()
    same_bytes(y.compute(), (DATA + 1) * 2)
    assert marker.exists()
    assert no_objects_left(before)


# A Ray driver of its own on the module's instance (argv: the instance's
# address, the work dir, a folder where every task leaves its worker's pid):
# a run of 600 tasks of 50 ms (15 s on the instance's 2 CPUs) whose blocks
# are objects in the store, read by a rechunk.
CTRL_C_DRIVER = """
import os, sys, time
import ray, strata
address, work_dir, pids = sys.argv[1:4]
ray.init(address=address, log_to_driver=False)
spec = strata.Spec(executor="ray", work_dir=work_dir, allowed_mem="100MB", reserved_mem="1MB")

def slow(b):
    open(os.path.join(pids, str(os.getpid())), "w").close()
    time.sleep(0.05)
    return b + 1

x = strata.ones((600, 10), chunks=(1, 10), spec=spec)
y = strata.map_blocks(slow, x).rechunk((600, 5))
assert any(o.get("tier") == "memory" for o in strata.plan(y).to_dict()["ops"])
refs = ray._private.worker.global_worker.core_worker.get_all_reference_counts
before = len(refs())
print("ready", flush=True)
try:
    y.compute()
    print("finished", flush=True)
finally:
    # What the run left in this process (the Ray references it owns) and in
    # work_dir when compute() returned or raised.
    left = os.listdir(work_dir) if os.path.exists(work_dir) else []
    print("left", len(refs()) - before, left, flush=True)
"""


def test_ctrl_c_cancels_a_ray_compute(instance, tmp_path):
    driver, pids, work = tmp_path / "driver.py", tmp_path / "pids", tmp_path / "ray-work"
    driver.write_text(CTRL_C_DRIVER)
    pids.mkdir()
    # Output to files and close_fds=False: subprocess then starts the driver
    # with posix_spawn, never a fork of this process and its Ray threads.
    with open(tmp_path / "out", "w") as out, open(tmp_path / "err", "w") as err:
        proc = subprocess.Popen([sys.executable, str(driver), ray.get_runtime_context().gcs_address,
                                 str(work), str(pids)], stdout=out, stderr=err, close_fds=False)
    try:
        deadline = time.time() + 120
        while len(os.listdir(pids)) < 2 and proc.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        assert len(os.listdir(pids)) >= 2, ((tmp_path / "out").read_text(),
                                            (tmp_path / "err").read_text()[-3000:])
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        interrupted = time.time()
        proc.wait(timeout=60)
        took = time.time() - interrupted
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out, err = (tmp_path / "out").read_text(), (tmp_path / "err").read_text()
    # Ended by the KeyboardInterrupt, well before the run would have finished.
    assert proc.returncode != 0, (out, err[-3000:])
    assert "KeyboardInterrupt" in err, err[-3000:]
    assert "finished" not in out, out
    assert took < 20, took
    # The run's references were all dropped and its directory removed by the
    # time compute() raised.
    assert out.splitlines()[-1] == "left 0 []", (out, err[-3000:])
    # The worker processes of its job (the instance's, so this process's
    # descendants) ended with it.
    ran = {int(p) for p in os.listdir(pids)}

    def still_running():
        return [(p, n) for p, n in descendants() if p in ran]
    deadline = time.time() + 30
    while still_running() and time.time() < deadline:
        time.sleep(0.1)
    assert not still_running(), ran
    assert dir_is_empty(work)


def test_the_admin_jobs_from_the_command_line(instance, tmp_path, capsys):
    # python -m strata, in this process (connected to the instance): rechunk,
    # copy with a new codec and an append, the same bytes as on threads.
    from strata.__main__ import main

    src = str(tmp_path / "src.zarr")
    strata.to_zarr(strata.asarray(DATA, chunks=(48, 4)), src)
    for executor in ("ray", "threads"):
        out = tmp_path / executor
        common = ["--executor", executor, "--allowed-mem", "100MB", "--reserved-mem", "1MB",
                  "--quiet"]
        assert main(["rechunk", src, str(out / "r.zarr"), "--chunks", "4,40", *common]) == 0
        assert main(["copy", src, str(out / "c.zarr"), "--codec", "zstd:level=3", *common]) == 0
        assert main(["write-region", str(out / "r.zarr"), str(out / "c.zarr"), "--append-dim",
                     "0", *common]) == 0
    compare_trees(tmp_path / "threads", tmp_path / "ray")
    same_bytes(strata.from_zarr(str(tmp_path / "ray" / "c.zarr")).compute(),
               np.concatenate([DATA, DATA]))
    assert main(["rechunk", src, str(tmp_path / "x.zarr"), "--chunks", "4,40", "--executor",
                 "threads", "--address", "127.0.0.1:1"]) == 1
    assert capsys.readouterr().err.strip() == (
        "strata: error: --address is for --executor ray or dask, not threads")
