"""kill -9 in the middle of a rechunk, then the same command again.

For each way a rechunk moves data (memory, spill, disk, the object tier, and
worker processes sharing memory) the run is killed with SIGKILL at several
points (once its run directory exists, once the first output chunk is
written, once half of them are), then rerun. Afterwards: the destination
equals the source (`strata verify`), it holds no temporary names, work_dir
(and $TMPDIR) and the object tier's prefix are empty, and no process of the
killed run is left.
"""
import os
import signal
import subprocess
import time

import pytest

from test_s3 import BUCKET, S3Server

SHAPE, SRC_CHUNKS, DST_CHUNKS = "1600,1600", "1600,80", "80,1600"
TOTAL_DST_CHUNKS = 20


@pytest.fixture(scope="module")
def source(strata, tmp_path_factory):
    path = tmp_path_factory.mktemp("kill") / "src.zarr"
    strata("random", path, "--shape", SHAPE, "--chunks", SRC_CHUNKS, "--seed", "3")
    return path


@pytest.fixture(scope="module")
def s3():
    server = S3Server([BUCKET])
    yield server
    server.stop()


TIERS = {
    "memory": ["--tier", "memory"],
    "spill": ["--tier", "spill"],
    "disk": ["--tier", "disk", "--allowed-mem", "40MB"],
    # A 40 MB budget makes the object tier hold a stage's chunks: with the
    # default budget the rechunk is one task reading the source directly.
    "object": ["--tier", "object", "--tier-object", f"s3://{BUCKET}/tier", "--allowed-mem", "40MB"],
    "processes": ["--tier", "memory", "--executor", "processes"],
}


def chunk_files(path):
    if not os.path.isdir(path):
        return 0
    return sum(1 for f in os.listdir(path) if not f.startswith("."))


def run_dirs(work):
    return [f for f in os.listdir(work) if "strata-" in f] if os.path.isdir(work) else []


def processes_naming(text):
    """Pids of live processes whose command line mentions `text`."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().decode(errors="replace")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmd and state != "Z":
            out.append(int(pid))
    return out


def s3_keys_under(s3, prefix):
    root = os.path.join(s3.dir, BUCKET, prefix)
    found = []
    for dirpath, _, files in os.walk(root):
        found += [os.path.join(dirpath, f) for f in files]
    return found


POINTS = {
    "run-dir": lambda work, dst: bool(run_dirs(work)),
    "first-chunk": lambda work, dst: chunk_files(dst) >= 1,
    "half": lambda work, dst: chunk_files(dst) >= TOTAL_DST_CHUNKS // 2,
}


@pytest.mark.parametrize("tier", list(TIERS))
@pytest.mark.parametrize("point", list(POINTS))
def test_kill_then_rerun(strata, source, s3, tmp_path, tier, point):
    work = tmp_path / "work"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    dst = tmp_path / f"dst-{tier}-{point}.zarr"
    env = s3.env(TMPDIR=str(tmp))
    args = [strata.path, "rechunk", str(source), str(dst), "--chunks", DST_CHUNKS,
            "--work-dir", str(work), "--workers", "2" if tier == "processes" else "1",
            "--quiet", *TIERS[tier]]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while proc.poll() is None and not POINTS[point](work, dst) and time.monotonic() < deadline:
        time.sleep(0.002)
    killed = proc.poll() is None
    print(f"KILL {tier} {point} killed={killed} chunks={chunk_files(dst)}")
    if point == "run-dir":
        assert killed, (f"the run finished (exit {proc.returncode}) before its run directory "
                        f"was seen: {proc.stderr.read().decode(errors='replace')}")
    if killed:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    # No process of the killed run survives it (workers die with their parent).
    deadline = time.monotonic() + 10
    while processes_naming(str(dst)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_naming(str(dst)) == []
    if killed:
        rerun = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
        assert rerun.returncode == 0, rerun.stderr
    else:
        assert proc.returncode == 0, proc.stderr.read()
    assert strata("verify", source, dst).returncode == 0
    temps = [f for _, _, files in os.walk(dst) for f in files if ".strata-tmp-" in f]
    assert temps == []
    assert not os.path.exists(dst / ".strata-incomplete")
    assert run_dirs(work) == [] and run_dirs(tmp) == []
    assert s3_keys_under(s3, "tier") == []


def test_a_killed_worker_leaves_no_temporary_in_the_finished_array(strata, tmp_path):
    """A worker process SIGKILLed while it writes a chunk costs a retry, and
    the array it finishes holds no temporary file of the dead writer (one in
    two such kills left `.9.0.strata-tmp-<pid>-...` behind)."""
    src = tmp_path / "big.zarr"
    # Chunks of 16 MiB: written piece by piece through a temporary file
    # (ZarrArray's streamed writes), so a worker is caught in the middle.
    strata("random", src, "--shape", "4096,4096", "--chunks", "4096,512", "--seed", "5")
    dst = tmp_path / "dst.zarr"
    args = [strata.path, "rechunk", str(src), str(dst), "--chunks", "512,4096",
            "--executor", "processes", "--workers", "2", "--quiet",
            "--work-dir", str(tmp_path / "work")]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    killed = None
    deadline = time.monotonic() + 300
    while proc.poll() is None and killed is None and time.monotonic() < deadline:
        for name in (os.listdir(dst) if os.path.isdir(dst) else []):
            if ".strata-tmp-" not in name:
                continue
            pid = int(name.split(".strata-tmp-")[1].split("-")[0])
            if pid != proc.pid:  # a worker's, not the coordinator's
                os.kill(pid, signal.SIGKILL)
                killed = (pid, name)
                break
        time.sleep(0.001)
    assert killed, "no worker was seen writing a chunk"
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode(errors="replace")
    assert strata("verify", src, dst).returncode == 0
    temps = [f for _, _, files in os.walk(dst) for f in files if ".strata-tmp-" in f]
    assert temps == [], (killed, temps)
