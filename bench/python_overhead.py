#!/usr/bin/python3
"""What the Python package costs over the C++ underneath (issue 15).

    /usr/bin/python3 bench/python_overhead.py [--reps 5] [--t 20] [--workers 2]
        [--build build/release] [--dir build/bench/python] > bench/results/python_overhead.json

Workloads, each written four ways and run in the same reps:
  quadratic_means  u, v float64 (t, 987, 1920), chunks (10, 987, 1920); the
                   means over axis 0 of u*u, v*v, u*v stacked into a Zarr array,
                   allowed_mem 2GB;
  seed_rechunk     Cubed #502's seed case: 10000 x 10000 float64, chunks
                   (10000, 1000) -> (1000, 10000), allowed_mem 400MB.
Contenders (all with --workers threads, all fresh processes, timed from
outside with /usr/bin/time: wall seconds and peak RSS):
  cpp     the C++ API: examples/quadratic_means, `strata rechunk`;
  python  the same with `import strata` (this package, release build);
  dask    Debian's python3-dask, threaded scheduler, as its users write it;
  numpy   zarr-python into numpy in memory, computed, written back.
Planning: mean(sqrt(x) * 2 + 1, axis=0) over a grid of --plan-blocks blocks
(~10^5 tasks) planned in-process --plan-reps times, from C++
(bench/plan_bench.cc) and from Python (strata.plan), each in its own process.

Protocol (GUIDE.md, issue 14): contenders interleaved in a rotated order in
each rep, >= 5 reps, the 1-minute load average and the CPU the rest of the
machine used during each run recorded; a run during which other processes
used more than 10% of a core is redone (up to --redo times, then kept and
flagged). Page cache warm (inputs read before each run), nothing pre-touched.
Reports medians with min-max, and ratios to cpp within each rep (median of
the per-rep ratios). Never pass/fail.
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

PY_QM = r'''
import sys, strata
u_path, v_path, out, workers, work = sys.argv[1:6]
spec = strata.Spec(allowed_mem="2GB", workers=int(workers), work_dir=work)
u = strata.from_zarr(u_path, spec=spec)
v = strata.from_zarr(v_path, spec=spec)
m = strata.stack([strata.mean(u * u, axis=0), strata.mean(v * v, axis=0),
                  strata.mean(u * v, axis=0)])
strata.to_zarr(m, out, overwrite=True)
'''

DASK_QM = r'''
import sys, dask, dask.array as da
dask.config.set(scheduler="threads", num_workers=int(sys.argv[4]))
u = da.from_zarr(sys.argv[1]); v = da.from_zarr(sys.argv[2])
m = da.stack([(u * u).mean(axis=0), (v * v).mean(axis=0), (u * v).mean(axis=0)])
m.to_zarr(sys.argv[3], overwrite=True)
'''

NUMPY_QM = r'''
import sys, numpy as np, zarr
u = zarr.open(sys.argv[1], mode="r")[...]; v = zarr.open(sys.argv[2], mode="r")[...]
m = np.stack([(u * u).mean(axis=0), (v * v).mean(axis=0), (u * v).mean(axis=0)])
zarr.save_array(sys.argv[3], m, chunks=(1,) + m.shape[1:])
'''

PY_RECHUNK = r'''
import sys, strata
src, dst, workers, work = sys.argv[1:5]
spec = strata.Spec(allowed_mem="400MB", workers=int(workers), work_dir=work)
strata.from_zarr(src, spec=spec).rechunk((1000, 10000)).to_zarr(dst, overwrite=True)
'''

DASK_RECHUNK = r'''
import sys, dask, dask.array as da
dask.config.set(scheduler="threads", num_workers=int(sys.argv[3]))
da.from_zarr(sys.argv[1]).rechunk((1000, 10000)).to_zarr(sys.argv[2], overwrite=True)
'''

NUMPY_RECHUNK = r'''
import sys, zarr
a = zarr.open(sys.argv[1], mode="r")[...]
zarr.save_array(sys.argv[2], a, chunks=(1000, 10000))
'''

PY_PLAN = r'''
import json, sys, time, strata
shape = tuple(int(v) for v in sys.argv[1].split(",")); chunks = tuple(int(v) for v in sys.argv[2].split(","))
reps = int(sys.argv[3])
spec = strata.Spec(allowed_mem="2GB")
seconds = []
for _ in range(reps):
    t0 = time.perf_counter()
    x = strata.random.random(shape, chunks=chunks, seed=1, spec=spec)
    y = strata.mean(strata.sqrt(x) * 2 + 1, axis=0)
    p = strata.plan(y)
    seconds.append(time.perf_counter() - t0)
print(json.dumps({"tasks": p.num_tasks, "seconds": seconds}))
'''


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def busy_seconds():
    """CPU seconds the whole machine has spent busy (all cores)."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def warm(paths):
    for p in paths:
        for root, _, files in os.walk(p):
            for f in files:
                with open(os.path.join(root, f), "rb") as fh:
                    while fh.read(1 << 24):
                        pass


def timed(cmd, env):
    """(wall s, peak RSS bytes, CPU s of other processes per wall s)."""
    before_busy = busy_seconds()
    before_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy = busy_seconds() - before_busy
    own = (after_children.ru_utime - before_children.ru_utime +
           after_children.ru_stime - before_children.ru_stime)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:3]} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return wall, after_children.ru_maxrss * 1024, max(0.0, busy - own) / wall, proc.stdout


def summarize(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "n": len(values)}


def run_workload(name, contenders, inputs, reps, redo, cleanup):
    runs = {c: [] for c in contenders}
    ratios = {c: [] for c in contenders if c != "cpp"}
    order = list(contenders)
    for rep in range(reps):
        rot = order[rep % len(order):] + order[:rep % len(order)]
        walls = {}
        for c in rot:
            cmd, env = contenders[c]
            for attempt in range(redo + 1):
                cleanup()
                warm(inputs)
                load = loadavg()
                wall, rss, other, _ = timed(cmd, env)
                disturbed = other > 0.10
                if not disturbed or attempt == redo:
                    break
                log(f"  {name} {c}: others used {other:.2f} cores, redoing")
            runs[c].append({"rep": rep, "wall_s": wall, "peak_rss": rss, "load1": load,
                            "other_cores": other, "disturbed": disturbed})
            walls[c] = wall
            log(f"  {name} rep {rep} {c}: {wall:.2f} s, {rss / 1e6:.0f} MB, load {load:.1f}, "
                f"others {other:.2f} cores")
        for c in ratios:
            ratios[c].append(walls[c] / walls["cpp"])
    return {
        "runs": runs,
        "wall_s": {c: summarize([r["wall_s"] for r in runs[c]]) for c in runs},
        "peak_rss": {c: summarize([r["peak_rss"] for r in runs[c]]) for c in runs},
        "time_vs_cpp": {c: summarize(v) for c, v in ratios.items()},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--redo", type=int, default=2)
    ap.add_argument("--t", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--dir", default="build/bench/python")
    ap.add_argument("--plan-shape", default="3000,3000")
    ap.add_argument("--plan-chunks", default="10,10")
    ap.add_argument("--plan-reps", type=int, default=5)
    ap.add_argument("--workloads", nargs="+", default=["quadratic_means", "seed_rechunk", "plan"])
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    strata_bin = os.path.join(build, "bin", "strata")
    os.makedirs(args.dir, exist_ok=True)
    d = os.path.abspath(args.dir)
    work = os.path.join(d, "work")
    env = dict(os.environ)
    py_env = dict(env, PYTHONPATH=os.path.join(build, "python"))
    w = str(args.workers)
    result = {"machine": {"cpus": os.cpu_count(), "load1_start": loadavg()},
              "args": vars(args), "workloads": {}}

    def rm(*paths):
        def f():
            for p in paths:
                shutil.rmtree(p, ignore_errors=True)
            os.makedirs(work, exist_ok=True)
        return f

    if "quadratic_means" in args.workloads:
        t = args.t
        u, v = os.path.join(d, f"u{t}.zarr"), os.path.join(d, f"v{t}.zarr")
        for path, seed in [(u, 1), (v, 2)]:
            if not os.path.exists(os.path.join(path, ".zarray")):
                subprocess.run([strata_bin, "random", path, "--shape", f"{t},987,1920", "--chunks",
                                "10,987,1920", "--seed", str(seed), "--overwrite"], check=True)
        out = os.path.join(d, "qm_out.zarr")
        contenders = {
            "cpp": ([os.path.join(build, "bin", "quadratic_means"), u, v, out, "--allowed-mem",
                     "2GB", "--workers", w, "--work-dir", work], env),
            "python": (["/usr/bin/python3", "-c", PY_QM, u, v, out, w, work], py_env),
            "dask": (["/usr/bin/python3", "-c", DASK_QM, u, v, out, w], env),
            "numpy": (["/usr/bin/python3", "-c", NUMPY_QM, u, v, out], env),
        }
        log(f"quadratic_means t={t}")
        result["workloads"]["quadratic_means"] = run_workload(
            "quadratic_means", contenders, [u, v], args.reps, args.redo, rm(out))

    if "seed_rechunk" in args.workloads:
        src = os.path.join(d, "seed.zarr")
        if not os.path.exists(os.path.join(src, ".zarray")):
            subprocess.run([strata_bin, "random", src, "--shape", "10000,10000", "--chunks",
                            "10000,1000", "--seed", "0", "--overwrite"], check=True)
        dst = os.path.join(d, "seed_out.zarr")
        contenders = {
            "cpp": ([strata_bin, "rechunk", src, dst, "--chunks", "1000,10000", "--allowed-mem",
                     "400MB", "--workers", w, "--work-dir", work, "--quiet", "--overwrite"], env),
            "python": (["/usr/bin/python3", "-c", PY_RECHUNK, src, dst, w, work], py_env),
            "dask": (["/usr/bin/python3", "-c", DASK_RECHUNK, src, dst, w], env),
            "numpy": (["/usr/bin/python3", "-c", NUMPY_RECHUNK, src, dst], env),
        }
        log("seed_rechunk")
        result["workloads"]["seed_rechunk"] = run_workload(
            "seed_rechunk", contenders, [src], args.reps, args.redo, rm(dst))

    if "plan" in args.workloads:
        log("plan")
        per = {"cpp": [], "python": []}
        tasks = {}
        cmds = {
            "cpp": ([os.path.join(build, "bench", "plan_bench"), "--shape", args.plan_shape,
                     "--chunks", args.plan_chunks, "--reps", str(args.plan_reps)], env),
            "python": (["/usr/bin/python3", "-c", PY_PLAN, args.plan_shape, args.plan_chunks,
                        str(args.plan_reps)], py_env),
        }
        ratios = []
        for rep in range(args.reps):
            order = ["cpp", "python"] if rep % 2 == 0 else ["python", "cpp"]
            med = {}
            for c in order:
                _, _, other, out = timed(*cmds[c])
                r = json.loads(out)
                tasks[c] = r["tasks"]
                # The first plan of a process pays for first use; the median of the rest.
                med[c] = statistics.median(r["seconds"][1:] or r["seconds"])
                per[c].append({"rep": rep, "seconds": r["seconds"], "median_s": med[c],
                               "load1": loadavg(), "other_cores": other})
                log(f"  plan rep {rep} {c}: {med[c] * 1e3:.1f} ms for {r['tasks']} tasks")
            ratios.append(med["python"] / med["cpp"])
        result["workloads"]["plan"] = {
            "tasks": tasks, "runs": per,
            "plan_s": {c: summarize([r["median_s"] for r in per[c]]) for c in per},
            "python_vs_cpp": summarize(ratios)}
    result["machine"]["load1_end"] = loadavg()
    json.dump(result, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
