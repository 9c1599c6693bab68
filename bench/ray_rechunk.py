#!/usr/bin/env python3
"""Strata's executor="ray" against threads, against executor="dask" and
against Cubed's Ray executor (issue 38), under the protocol of
bench/README.md.

    .venv/bin/python bench/ray_rechunk.py [--workloads W4 W1] [--size N] [--reps 5]
        [--bin build/release/bin] [--python build/release/python]
        [--peers-python bench/.venv-peers/bin/python]
        [--dir build/bench/ray_rechunk] [--out bench/results/ray_rechunk.json]
    .venv/bin/python bench/ray_rechunk.py --smoke --size 4000     (1 rep)

Workloads (bench/rechunk.py's): W4, 20000^2 float64, (20000, 500) -> (500,
20000), allowed_mem 1GB; W1, the seed case of Cubed #502, 10000^2, (10000,
1000) -> (1000, 10000), allowed_mem 400MB. --size N scales the array to N^2
with the same number of chunks (allowed_mem scaled with the bytes, at least
40MB). Each source is a Zarr v2 array (blosc lz4) written once by `strata
random`; every contender writes a Zarr array with the same codec.

The clusters, each started once in a helper process before the first rep
and closed after the last, their processes counted with the contender's CPU
(not as disturbance):
  - Ray: one local instance (ray.init, as many CPUs as cores, Ray's default
    object store, no dashboard, every process on 127.0.0.1);
  - Dask: bench/dask_rechunk.py's LocalCluster (2 worker processes).
Contenders, every one a fresh process:
  - threads:    strata.Spec(allowed_mem=...), from_zarr -> rechunk -> to_zarr;
  - strata-ray: the same with Spec(executor="ray", address=<the instance>):
                the exchange's blocks are objects in Ray's store;
  - strata-dask: the same with Spec(executor="dask", client=<the cluster>);
  - cubed-ray:  Cubed (bench/.venv-peers, bench/peers-env.sh) with its Ray
                executor on the same instance, every intermediate in its
                work_dir as Zarr (cubed.Spec(work_dir, allowed_mem)); the
                job's Ray workers run the peers' interpreter (runtime_env
                py_executable: the instance's own is the main venv's, which
                has no Cubed). Run
                only when --peers-python imports cubed and ray (bench/peers.in
                has both; make the venv with bench/peers-env.sh); otherwise
                the case records why not.
Figures besides the protocol's: the compute's summary for Strata
(intermediate bytes written, peak held), Cubed's intermediate bytes (what
its work_dir holds after the run, or the polled peak if more), the peak RSS of the largest Ray
process during the run (VmHWM; the node's processes are this machine's), the
node's peak: the summed PSS of the Ray instance's processes, sampled every
50 ms (NodeSampler; add the driver's peak RSS for the whole node), and
the bytes written under the work dirs (polled). Ratios per rep:
strata-ray/threads, strata-dask/strata-ray, cubed-ray/strata-ray. Never
pass/fail.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dask_rechunk as dr  # noqa: E402
import protocol as P  # noqa: E402
import pss_tree  # noqa: E402
import rechunk as rb  # noqa: E402

RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled",
           "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}  # a single-machine instance on loopback

RAY_CLUSTER = r'''
import json, os, sys, ray
if __name__ == "__main__":
    ray.init(include_dashboard=False, log_to_driver=False)
    node = [n for n in ray.nodes() if n["Alive"]][0]
    print(json.dumps({"address": ray.get_runtime_context().gcs_address,
                      "resources": node["Resources"]}), flush=True)
    sys.stdin.read()  # until the benchmark closes our stdin
    ray.shutdown()
'''

STRATA = r'''
import json, sys, strata
executor, address, src, dst, chunks, allowed, work = sys.argv[1:8]
options = {}
if executor == "ray":
    options["address"] = address
elif executor == "dask":
    import distributed
    options["client"] = distributed.Client(address)
spec = strata.Spec(executor=None if executor == "threads" else executor, allowed_mem=allowed,
                   work_dir=work, **options)
class Summary(strata.Callback):
    def on_compute_end(self, event):
        print(json.dumps(event.summary), flush=True)
x = strata.from_zarr(src, spec=spec)
strata.to_zarr(x.rechunk(tuple(json.loads(chunks))), dst, overwrite=True, callbacks=[Summary()])
'''

CUBED = r'''
import json, sys, ray, cubed, cubed.array_api as xp
from cubed.runtime.executors.ray import RayExecutor
address, src, dst, chunks, allowed, work = sys.argv[1:7]
# the instance's workers run the main environment's interpreter, which has no
# Cubed: this job's workers run ours (the same Ray release)
ray.init(address=address, log_to_driver=False, runtime_env={"py_executable": sys.executable})
spec = cubed.Spec(work_dir=work, allowed_mem=int(allowed))
x = cubed.from_zarr(src, spec=spec)
cubed.to_zarr(x.rechunk(tuple(json.loads(chunks))), dst, executor=RayExecutor())
'''

CUBED_PROBE = "import cubed, ray; print(cubed.__version__, ray.__version__)"


class RayCluster:
    """The local Ray instance, in a helper process of its own."""

    def __init__(self, env):
        self.proc = subprocess.Popen([sys.executable, "-c", RAY_CLUSTER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)
        line = self.proc.stdout.readline()
        try:
            self.info = json.loads(line)
        except ValueError:
            self.stop()
            raise SystemExit(f"the Ray instance did not start ({line!r})")
        self.helper_pids = P.LiveTree(self.proc.pid)

    def stop(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=120)
        except Exception:
            self.proc.kill()

    def reset_peaks(self):
        for pid in P.process_tree(self.proc.pid):
            try:
                with open(f"/proc/{pid}/clear_refs", "w") as f:
                    f.write("5")  # resets VmHWM to the current RSS
            except OSError:
                pass
        if getattr(self, "node", None):
            self.node.stop.set()  # a failed run's
        self.node = NodeSampler(self.proc.pid)
        self.node.start()

    def peaks(self):
        hwm = [dr.proc_field(pid, "status", "VmHWM") or 0
               for pid in P.process_tree(self.proc.pid)]
        self.node.stop.set()
        self.node.join()
        return {"ray_process_peak_rss_bytes": max(hwm, default=0),
                "ray_node_peak_pss_bytes": self.node.peak}


class NodeSampler(threading.Thread):
    """The node's memory during a run: the peak over samples (every 50 ms) of
    the summed PSS of the Ray instance's processes (GCS, raylet with the
    object store's shared memory, the workers, counted once however many
    map a page). With the driver's peak RSS (the protocol's peak_rss_bytes)
    it bounds what the run took from the machine, Ray's one node."""

    def __init__(self, root):
        super().__init__(daemon=True)
        self.root = root
        self.peak = 0
        self.stop = threading.Event()

    def run(self):
        while True:
            total = 0
            for pid in pss_tree.tree(self.root):
                r = pss_tree.rollup(pid)
                total += r["Pss"] if r else 0
            self.peak = max(self.peak, total)
            if self.stop.wait(0.05):
                return


def workload(name, size):
    shape, src_chunks, dst_chunks, allowed, seed = rb.WORKLOADS[name]
    allowed = _bytes(allowed)
    if size:
        n = shape[0] // src_chunks[1]  # chunks along the split axis
        allowed = max(int(allowed * (size / shape[0]) ** 2), 40 * 10**6)
        shape, src_chunks, dst_chunks = [size, size], [size, size // n], [size // n, size]
    return shape, src_chunks, dst_chunks, allowed, seed


def _bytes(text):
    units = {"MB": 10**6, "GB": 10**9}
    return int(float(text[:-2]) * units[text[-2:]])


def peers_ready(python):
    if not python or not os.path.exists(python):
        return None, f"no peers interpreter at {python} (bench/peers-env.sh makes it)"
    probe = subprocess.run([python, "-c", CUBED_PROBE], capture_output=True, text=True)
    if probe.returncode != 0:
        return None, (f"{python} cannot import cubed and ray: "
                      f"{probe.stderr.strip().splitlines()[-1:]}")
    return probe.stdout.strip(), None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", nargs="+", default=["W4", "W1"], choices=["W4", "W1"])
    ap.add_argument("--size", type=int, default=None,
                    help="scale the arrays to size x size (default: the workload's; 2000 "
                         "with --smoke)")
    ap.add_argument("--bin", default="build/release/bin")
    ap.add_argument("--python", default="build/release/python",
                    help="the build tree's package directory (PYTHONPATH of the clusters and "
                         "the contenders)")
    ap.add_argument("--peers-python", default="bench/.venv-peers/bin/python",
                    help="the interpreter with Cubed and Ray (cubed-ray)")
    ap.add_argument("--dir", default="build/bench/ray_rechunk")
    P.add_arguments(ap)
    args = ap.parse_args()
    size = args.size or (2000 if args.smoke else None)
    strata = os.path.join(args.bin, "strata")
    d = os.path.abspath(args.dir)
    os.makedirs(d, exist_ok=True)
    env = P.package_env(args.python, **RAY_ENV)
    cubed_version, no_cubed = peers_ready(args.peers_python)
    with P.Bench("ray_rechunk", args, scratch=d,
                 description="executor=ray against threads, executor=dask and Cubed's Ray "
                             "executor (issue 38)") as b:
        ray_cluster = RayCluster(env)
        dask_cluster = dr.Cluster(env)
        try:
            for name in args.workloads:
                shape, src_chunks, dst_chunks, allowed, seed = workload(name, size)
                wd = os.path.join(d, name)
                os.makedirs(wd, exist_ok=True)
                src = os.path.join(wd, "src.zarr")
                stored = rb.make_source(strata, src, shape, src_chunks, seed)
                logical = 8 * shape[0] * shape[1]
                outputs = rb.Outputs(wd)
                chunks = json.dumps(dst_chunks)
                addresses = {"threads": "", "ray": ray_cluster.info["address"],
                             "dask": dask_cluster.info["address"]}
                argv = {
                    f"{'strata-' if e != 'threads' else ''}{e}":
                        (lambda e: lambda dst, hist, work: [
                            sys.executable, "-c", STRATA, e, addresses[e], src, dst, chunks,
                            str(allowed), work])(e)
                    for e in ("threads", "ray", "dask")}
                cubed_mem, cubed_refusal = str(allowed), None
                if cubed_version:
                    # Cubed refuses W1 at 400MB (its issue 502): it runs at the
                    # smallest allowed_mem its planner accepts (rechunk.py's probe).
                    probe_dir = os.path.join(wd, "cubed-probe")
                    os.makedirs(probe_dir, exist_ok=True)
                    cubed_mem, cubed_refusal = rb.cubed_allowed_mem(
                        os.path.abspath(args.peers_python), src, chunks, str(allowed), probe_dir)
                    shutil.rmtree(probe_dir, ignore_errors=True)
                    argv["cubed-ray"] = lambda dst, hist, work, mem=cubed_mem: [
                        os.path.abspath(args.peers_python), "-c", CUBED,
                        ray_cluster.info["address"], src, dst, chunks, mem, work]

                def finish(cname):
                    def f(run, completed, hist):
                        run["extra"].update(ray_cluster.peaks())
                        if cname.startswith("strata") or cname == "threads":
                            summary = json.loads(completed.stdout.strip().splitlines()[-1])
                            run["extra"].update({k: v for k, v in summary.items()
                                                 if isinstance(v, (int, float))})
                        else:  # Cubed writes its intermediate Zarr arrays in work_dir
                            run["extra"]["intermediate_bytes_written"] = max(
                                run["extra"]["work_after_bytes"],
                                run["extra"].get("work_peak_bytes", 0))
                    return f

                contenders, dsts = [], {}
                for cname, a in argv.items():
                    c, dst = rb.contender(cname, "user", a, src, outputs, logical,
                                          finish(cname), env=env)
                    setup = c.setup

                    def reset(setup=setup):
                        setup()
                        ray_cluster.reset_peaks()
                    c.setup = reset
                    contenders.append(c)
                    dsts[cname] = dst
                ratios = [("strata-ray", "threads"), ("strata-dask", "strata-ray")]
                if cubed_version:
                    ratios.append(("cubed-ray", "strata-ray"))
                checks = {}

                def after_rep(slot, rep, outputs=outputs, dsts=dsts, src=src, checks=checks):
                    if not outputs.checked:
                        checks.update(rb.check_outputs(strata, src, dsts, "threads"))
                        outputs.checked = True
                        rb.remove(*dsts.values())

                case = b.case(
                    name if not size else f"{name}-{size}", contenders, ratios=ratios,
                    ratio_keys=("wall_s", "peak_rss_bytes", "ray_process_peak_rss_bytes",
                                "ray_node_peak_pss_bytes"),
                    after_rep=after_rep,
                    helper_pids=ray_cluster.helper_pids + dask_cluster.helper_pids,
                    describe={"shape": shape, "source_chunks": src_chunks,
                              "target_chunks": dst_chunks, "allowed_mem": allowed,
                              "logical_bytes": logical, "source_stored_bytes": stored,
                              "ray_resources": ray_cluster.info["resources"],
                              "cubed": cubed_version or f"not run: {no_cubed}",
                              "cubed_allowed_mem": int(cubed_mem),
                              "cubed_refused_ours": cubed_refusal})
                case["checks"] = checks
        finally:
            dask_cluster.stop()
            ray_cluster.stop()


if __name__ == "__main__":
    main()
