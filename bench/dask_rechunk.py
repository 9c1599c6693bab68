#!/usr/bin/env python3
"""Strata's executor="dask" against Dask's own rechunk, on the same
LocalCluster in the same run (issue 20), under the protocol of
bench/README.md.

    .venv/bin/python bench/dask_rechunk.py [--size 20000] [--reps 5]
        [--bin build/release/bin] [--python build/release/python]
        [--dir build/bench/dask_rechunk] [--out bench/results/dask_rechunk.json]
    .venv/bin/python bench/dask_rechunk.py --smoke          (--size 2000, 1 rep)

W4 of bench/rechunk.py: a size x size float64 Zarr v2 array (blosc lz4,
written once by `strata random`), chunks (size, size/40) -> (size/40, size),
allowed_mem 1GB at size 20000 (scaled with the array's bytes below it, at
least 40MB), written to a Zarr array with the same codec.

The cluster: one LocalCluster with 2 worker processes on 127.0.0.1 (Dask's
defaults otherwise: threads per worker = cores / 2, memory limit = RAM / 2),
started once in a helper process before the first rep and closed after the
last. Its processes (nannies and workers) are part of the workload: the
protocol counts their CPU with the contender's, not as disturbance. Every
contender is a fresh process that connects a Client to it:
  - strata-dask: strata.from_zarr(...).rechunk(...) to_zarr, with
    strata.Spec(executor="dask", client=client, allowed_mem=...) (the plan:
    one memory-tier exchange; blocks move between workers by Dask's
    transfer);
  - dask: dask.array.from_zarr(...).rechunk(...).to_zarr(...) on the same
    Client, as a Dask user writes it, with the method Dask picks by default
    on a distributed Client (p2p on distributed 2026; recorded per run as
    rechunk_method, from the graph's layer names).
Figures per run besides the protocol's (wall, CPU of contender + cluster):
the peak RSS of each worker during the run (VmHWM after resetting it through
/proc/PID/clear_refs before the run), the bytes the workers wrote (write_bytes
of /proc/PID/io: the output's chunks, plus any spill), the peak size of the
workers' local directories (Dask's spill), and for Strata the compute's
summary (intermediate bytes written, peak of intermediates held). The first
kept rep's outputs are checked with `strata verify` against the source.
Medians with min-max and the per-rep ratio dask/strata-dask; never
pass/fail.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol as P  # noqa: E402
import rechunk as rb  # noqa: E402

CLUSTER = r'''
import json, os, sys, distributed
if __name__ == "__main__":
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else None  # None: Dask's default
    cluster = distributed.LocalCluster(n_workers=2, processes=True, host="127.0.0.1",
                                       threads_per_worker=threads,
                                       dashboard_address="127.0.0.1:0")  # HTTP on loopback only
    client = distributed.Client(cluster)
    pids = client.run(os.getpid)
    dirs = client.run(lambda dask_worker: dask_worker.local_directory)
    limits = {a: w["memory_limit"] for a, w in client.scheduler_info()["workers"].items()}
    print(json.dumps({"address": cluster.scheduler_address, "pids": pids, "dirs": dirs,
                      "memory_limits": limits,
                      "threads": {a: w["nthreads"] for a, w in
                                  client.scheduler_info()["workers"].items()}}), flush=True)
    sys.stdin.read()  # until the benchmark closes our stdin
    client.close()
    cluster.close()
'''

STRATA = r'''
import json, sys, distributed, strata
address, src, dst, chunks, allowed, work = sys.argv[1:7]
client = distributed.Client(address)
spec = strata.Spec(executor="dask", client=client, allowed_mem=allowed, work_dir=work)
class Summary(strata.Callback):
    def on_compute_end(self, event):
        print(json.dumps(event.summary), flush=True)
x = strata.from_zarr(src, spec=spec)
strata.to_zarr(x.rechunk(tuple(json.loads(chunks))), dst, overwrite=True, callbacks=[Summary()])
client.close()
'''

DASK = r'''
import json, sys, distributed, dask.array as da
address, src, dst, chunks = sys.argv[1:5]
client = distributed.Client(address)
y = da.from_zarr(src).rechunk(tuple(json.loads(chunks)))
method = "p2p" if any("p2p" in str(k) for k in y.dask.layers) else "tasks"
y.to_zarr(dst, overwrite=True)
print(json.dumps({"rechunk_method": method}), flush=True)
client.close()
'''


def proc_field(pid, path, name):
    try:
        with open(f"/proc/{pid}/{path}") as f:
            for line in f:
                if line.startswith(name):
                    return int(line.split()[1]) * (1024 if path == "status" else 1)
    except OSError:
        return None
    return None


class Cluster:
    """The LocalCluster, in a helper process of its own: run by `python`
    (default this interpreter), with `threads_per_worker` threads in each of
    its 2 workers (default Dask's: cores / 2), memory limit Dask's default
    (the machine's memory split between the workers)."""

    def __init__(self, env, python=None, threads_per_worker=None):
        self.proc = subprocess.Popen([python or sys.executable, "-c", CLUSTER] +
                                     ([str(threads_per_worker)] if threads_per_worker else []),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env)
        line = self.proc.stdout.readline()
        try:
            self.info = json.loads(line)
        except ValueError:
            self.stop()
            raise SystemExit(f"the LocalCluster did not start ({line!r})")
        self.workers = list(self.info["pids"].values())
        self.helper_pids = P.LiveTree(self.proc.pid)

    def stop(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        except Exception:
            self.proc.kill()

    def reset_peaks(self):
        self.io_before = {}
        for pid in self.workers:
            try:
                with open(f"/proc/{pid}/clear_refs", "w") as f:
                    f.write("5")  # resets VmHWM to the current RSS
            except OSError:
                pass
            self.io_before[pid] = proc_field(pid, "io", "write_bytes") or 0

    def peaks(self):
        hwm = [proc_field(pid, "status", "VmHWM") or 0 for pid in self.workers]
        written = sum((proc_field(pid, "io", "write_bytes") or 0) - self.io_before.get(pid, 0)
                      for pid in self.workers)
        return {"worker_peak_rss_bytes": max(hwm), "worker_peak_rss_each_bytes": hwm,
                "worker_write_bytes": written}


def workload(size):
    col = max(size // 40, 1)
    logical = 8 * size * size
    allowed = max(int(10**9 * logical / (8 * 20000 * 20000)), 40 * 10**6)
    return [size, size], [size, col], [col, size], allowed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=None,
                    help="the array is size x size float64 (default 20000; 2000 with --smoke)")
    ap.add_argument("--bin", default="build/release/bin")
    ap.add_argument("--python", default="build/release/python",
                    help="the build tree's package directory (PYTHONPATH of the cluster and "
                         "the contenders)")
    ap.add_argument("--dir", default="build/bench/dask_rechunk")
    P.add_arguments(ap)
    args = ap.parse_args()
    size = args.size or (2000 if args.smoke else 20000)
    shape, src_chunks, dst_chunks, allowed = workload(size)
    strata = os.path.join(args.bin, "strata")
    d = os.path.abspath(args.dir)
    os.makedirs(d, exist_ok=True)
    env = P.package_env(args.python)
    with P.Bench("dask_rechunk", args, scratch=d,
                 description="executor=dask against dask.array rechunk on the same "
                             "LocalCluster (issue 20)") as b:
        b.doc["packages"] = P.python_package_versions("numpy", "dask", "distributed", "zarr")
        src = os.path.join(d, "src.zarr")
        stored = rb.make_source(strata, src, shape, src_chunks, 4)
        logical = 8 * shape[0] * shape[1]
        cluster = Cluster(env)
        try:
            outputs = rb.Outputs(d)
            address = cluster.info["address"]
            chunks = json.dumps(dst_chunks)
            argv = {
                "strata-dask": lambda dst, hist, work: [
                    sys.executable, "-c", STRATA, address, src, dst, chunks, str(allowed),
                    work],
                "dask": lambda dst, hist, work: [
                    sys.executable, "-c", DASK, address, src, dst, chunks],
            }

            def finish(name):
                def f(run, completed, hist):
                    run["extra"].update(cluster.peaks())
                    summary = json.loads(completed.stdout.strip().splitlines()[-1])
                    run["extra"].update({k: v for k, v in summary.items()
                                         if isinstance(v, (int, float, str))})
                return f

            contenders, dsts = [], {}
            for name in ("strata-dask", "dask"):
                c, dst = rb.contender(name, "user", argv[name], src, outputs, logical,
                                      finish(name), env=env)
                setup = c.setup

                def reset(setup=setup):
                    setup()
                    cluster.reset_peaks()
                c.setup = reset
                c.watch_dirs = dict(c.watch_dirs or {}, dask_local=os.path.dirname(
                    next(iter(cluster.info["dirs"].values()))))
                contenders.append(c)
                dsts[name] = dst
            checks = {}

            def after_rep(slot, rep):
                if not outputs.checked:
                    checks.update(rb.check_outputs(strata, src, dsts, None))
                    outputs.checked = True
                    rb.remove(*dsts.values())

            case = b.case("W4" if size == 20000 else f"W4-{size}", contenders,
                          ratios=[("dask", "strata-dask")],
                          ratio_keys=("wall_s", "worker_peak_rss_bytes"),
                          after_rep=after_rep, helper_pids=cluster.helper_pids,
                          describe={"shape": shape, "source_chunks": src_chunks,
                                    "target_chunks": dst_chunks, "allowed_mem": allowed,
                                    "logical_bytes": logical, "source_stored_bytes": stored,
                                    "cluster": {k: cluster.info[k] for k in
                                                ("memory_limits", "threads")}})
            case["checks"] = checks
        finally:
            cluster.stop()


if __name__ == "__main__":
    main()
