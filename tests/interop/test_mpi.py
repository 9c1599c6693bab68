"""`strata rechunk --executor mpi` under mpirun: the same bytes as threads,
and a rank that dies ends the run with an error and leaves DST incomplete.

Skipped when mpirun is absent or the binary was built without MPI.
"""
import os
import shutil
import signal
import subprocess
import time

import pytest

from conftest import tree_digest

MPIRUN = shutil.which("mpirun")
pytestmark = pytest.mark.skipif(MPIRUN is None, reason="mpirun not installed")


def mpi_env():
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               ASAN_OPTIONS="detect_leaks=0")
    return env


def mpirun(strata, ranks, *args):
    return [MPIRUN, "-np", str(ranks), "--oversubscribe", strata.path, *map(str, args)]


@pytest.fixture
def source(strata, tmp_path):
    src = tmp_path / "src.zarr"
    strata("random", src, "--shape", "1500,1200", "--chunks", "1500,60", "--seed", "4")
    return src


def test_rechunk_on_three_ranks_matches_threads(strata, tmp_path, source):
    before = tree_digest(source)
    proc = subprocess.run(
        mpirun(strata, 3, "rechunk", source, tmp_path / "mpi.zarr", "--chunks", "60,1200",
               "--allowed-mem", "64MB", "--executor", "mpi"),
        capture_output=True, text=True, timeout=600, env=mpi_env())
    if "has no MPI" in proc.stderr:
        pytest.skip("strata built without MPI")
    assert proc.returncode == 0, proc.stderr
    # Rank 0 alone prints the plan and the summary.
    assert proc.stdout.count("plan:") == 1, proc.stdout
    assert "executor mpi x 3" in proc.stdout
    assert "moved between ranks" in proc.stdout
    strata("rechunk", source, tmp_path / "threads.zarr", "--chunks", "60,1200",
           "--allowed-mem", "64MB", "--workers", "2", "--quiet")
    assert tree_digest(tmp_path / "mpi.zarr") == tree_digest(tmp_path / "threads.zarr")
    assert tree_digest(source) == before


def rank_pids(mpirun_pid):
    """pid -> MPI rank of the processes mpirun started."""
    ranks = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != mpirun_pid:
                continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
            if b"OMPI_COMM_WORLD_RANK" in env:
                ranks[int(entry)] = int(env[b"OMPI_COMM_WORLD_RANK"])
        except (OSError, ValueError, IndexError):
            continue
    return ranks


def test_a_rank_that_dies_fails_the_run_and_leaves_dst_incomplete(strata, tmp_path):
    src = tmp_path / "big.zarr"
    strata("random", src, "--shape", "4000,4000", "--chunks", "4000,50", "--seed", "9")
    before = tree_digest(src)
    dst = tmp_path / "out.zarr"
    proc = subprocess.Popen(
        mpirun(strata, 3, "rechunk", src, dst, "--chunks", "50,4000", "--allowed-mem", "64MB",
               "--executor", "mpi", "--quiet"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=mpi_env())
    # Wait until the ranks are writing DST, then kill rank 1.
    deadline = time.time() + 120
    killed = False
    while time.time() < deadline and proc.poll() is None:
        chunks = [n for n in os.listdir(dst) if not n.startswith(".")] if dst.exists() else []
        if chunks:
            for pid, rank in rank_pids(proc.pid).items():
                if rank == 1:
                    os.kill(pid, signal.SIGKILL)
                    killed = True
            break
        time.sleep(0.01)
    stdout, stderr = proc.communicate(timeout=300)
    if "has no MPI" in stderr:
        pytest.skip("strata built without MPI")
    if not killed:
        pytest.fail(f"the run ended before a rank could be killed: {stderr}")
    assert proc.returncode != 0
    assert "rank 1" in stderr and ("signal 9" in stderr or "Killed" in stderr), stderr
    # DST is visibly incomplete; SRC untouched.
    assert (dst / ".strata-incomplete").exists()
    assert not (dst / ".zarray").exists()
    info = strata("info", dst)
    assert "INCOMPLETE" in info.stdout, info.stdout
    assert tree_digest(src) == before


def test_a_rank_that_hangs_ends_the_job_with_a_clear_error(strata, tmp_path):
    """SIGSTOP of rank 2 mid-run: MPI cannot go on without it, so the job
    ends (no hang) within about heartbeat_timeout, naming the rank."""
    src = tmp_path / "big.zarr"
    strata("random", src, "--shape", "4000,4000", "--chunks", "4000,50", "--seed", "9")
    before = tree_digest(src)
    dst = tmp_path / "out.zarr"
    proc = subprocess.Popen(
        mpirun(strata, 3, "rechunk", src, dst, "--chunks", "50,4000", "--allowed-mem", "64MB",
               "--executor", "mpi", "--heartbeat-timeout", "3", "--no-backups", "--quiet"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=mpi_env())
    stopped = []
    try:
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None and not stopped:
            if dst.exists() and any(not n.startswith(".") for n in os.listdir(dst)):
                for pid, rank in rank_pids(proc.pid).items():
                    if rank == 2:
                        os.kill(pid, signal.SIGSTOP)
                        stopped.append(pid)
            time.sleep(0.01)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        for pid in stopped:  # whatever mpirun left of it
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        if proc.poll() is None:
            proc.kill()
    if "has no MPI" in stderr:
        pytest.skip("strata built without MPI")
    if not stopped:
        pytest.fail(f"the run ended before a rank could be stopped: {stderr}")
    assert proc.returncode != 0
    assert "rank 2 sent no heartbeat for 3.0 s" in stderr, stderr
    assert (dst / ".strata-incomplete").exists()
    assert not (dst / ".zarray").exists()
    assert tree_digest(src) == before
