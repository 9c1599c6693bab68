#!/usr/bin/env python3
"""What `import strata` costs over the C++ underneath (issue 15).

    .venv/bin/python bench/python_overhead.py [--t 20] [--bin build/release/bin]
        [--python build/release/python] [protocol options, bench/README.md]
    (writes bench/results/python_overhead.json; --smoke for a quick end-to-end check)

Cases, each run under bench/protocol.py (interleaved rotated reps, >= 5,
disturbed reps redone, medians with min-max, ratios within a rep):
  quadratic_means  u, v float64 (t, 987, 1920), chunks (10, 987, 1920); the
                   means over axis 0 of u*u, v*v, u*v stacked into a Zarr
                   array, allowed_mem 2GB;
  seed_rechunk     Cubed #502's seed case: 10000 x 10000 float64, chunks
                   (10000, 1000) -> (1000, 10000), allowed_mem 400MB;
  plan             mean(sqrt(x) * 2 + 1, axis=0) over a random array of
                   --plan-shape in --plan-chunks (10^5 blocks by default),
                   planned --plan-reps times in one process; the figure is the
                   median seconds per plan after the first (extra plan_s).
Contenders, all with their defaults (workers = cores), as their users run
them:
  cpp     the C++ API: examples/quadratic_means, `strata rechunk`,
          bench/plan_bench.cc;
  python  the same written with `import strata` (the release build's package);
  dask    Dask from the .venv (requirements/dev.txt), threaded scheduler;
  numpy   zarr-python into numpy in memory, computed, written back with
          zarr-python (quadratic means and rechunk only).
Goals (issue 15): python within 1.05x of cpp's wall time; planning from
Python within 1.10x of planning from C++. Never pass/fail.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol as P  # noqa: E402

PY_QM = r'''
import sys, strata
u_path, v_path, out, allowed, work = sys.argv[1:6]
spec = strata.Spec(allowed_mem=allowed, work_dir=work)
u = strata.from_zarr(u_path, spec=spec)
v = strata.from_zarr(v_path, spec=spec)
m = strata.stack([strata.mean(u * u, axis=0), strata.mean(v * v, axis=0),
                  strata.mean(u * v, axis=0)])
strata.to_zarr(m, out, overwrite=True)
'''

DASK_QM = r'''
import sys, dask.array as da
u = da.from_zarr(sys.argv[1]); v = da.from_zarr(sys.argv[2])
m = da.stack([(u * u).mean(axis=0), (v * v).mean(axis=0), (u * v).mean(axis=0)])
m.to_zarr(sys.argv[3], overwrite=True)
'''

NUMPY_QM = r'''
import sys, numpy as np, zarr
u = zarr.open(sys.argv[1], mode="r")[...]; v = zarr.open(sys.argv[2], mode="r")[...]
m = np.stack([(u * u).mean(axis=0), (v * v).mean(axis=0), (u * v).mean(axis=0)])
zarr.create_array(sys.argv[3], data=m, chunks=(1,) + m.shape[1:], overwrite=True)
'''

PY_RECHUNK = r'''
import sys, strata
src, dst, chunks, allowed, work = sys.argv[1:6]
spec = strata.Spec(allowed_mem=allowed, work_dir=work)
x = strata.from_zarr(src, spec=spec)
strata.to_zarr(x.rechunk(tuple(int(c) for c in chunks.split(","))), dst, overwrite=True)
'''

DASK_RECHUNK = r'''
import sys, dask.array as da
chunks = tuple(int(c) for c in sys.argv[3].split(","))
da.from_zarr(sys.argv[1]).rechunk(chunks).to_zarr(sys.argv[2], overwrite=True)
'''

NUMPY_RECHUNK = r'''
import sys, zarr
a = zarr.open(sys.argv[1], mode="r")[...]
zarr.create_array(sys.argv[2], data=a, chunks=tuple(int(c) for c in sys.argv[3].split(",")),
                  overwrite=True)
'''

PY_PLAN = r'''
import json, sys, time, strata
shape = tuple(int(v) for v in sys.argv[1].split(","))
chunks = tuple(int(v) for v in sys.argv[2].split(","))
spec = strata.Spec(allowed_mem="2GB")
seconds = []
for _ in range(int(sys.argv[3])):
    t0 = time.perf_counter()
    x = strata.random.random(shape, chunks=chunks, seed=1, spec=spec)
    y = strata.mean(strata.sqrt(x) * 2 + 1, axis=0)
    p = strata.plan(y)
    seconds.append(time.perf_counter() - t0)
print(json.dumps({"tasks": p.num_tasks, "seconds": seconds}))
'''


def plan_figures(run, done):
    r = json.loads(done.stdout)
    run["extra"]["plan_tasks"] = r["tasks"]
    run["extra"]["plan_s"] = statistics.median(r["seconds"][1:] or r["seconds"])
    run["extra"]["first_plan_s"] = r["seconds"][0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--t", type=int, default=None, help="quadratic means length (default 20)")
    ap.add_argument("--bin", default="build/release/bin")
    ap.add_argument("--bench-bin", default="build/release/bench")
    ap.add_argument("--python", default="build/release/python",
                    help="the build tree's package directory (PYTHONPATH)")
    ap.add_argument("--dir", default="build/bench/python_overhead")
    ap.add_argument("--plan-shape", default=None, help="default 3160,3160 (smoke 316,316)")
    ap.add_argument("--plan-chunks", default="10,10")
    ap.add_argument("--plan-reps", type=int, default=5)
    ap.add_argument("--cases", nargs="+", default=["quadratic_means", "seed_rechunk", "plan"])
    P.add_arguments(ap)
    args = ap.parse_args()
    d = os.path.abspath(args.dir)
    strata_bin = os.path.abspath(os.path.join(args.bin, "strata"))
    py = sys.executable
    py_env = P.package_env(args.python, py)
    with P.Bench("python_overhead", args, scratch=d,
                 description="the same workloads from C++, Python (strata), Dask and "
                             "numpy") as b:
        b.doc["dask_defaults"] = P.dask_defaults()
        if "quadratic_means" in args.cases:
            t = args.t or 20
            plane = (98, 192) if args.smoke else (987, 1920)
            allowed = "64MB" if args.smoke else "2GB"
            # The inputs' names carry their whole shape: a --smoke run's
            # small arrays in the same --dir must not stand in for these.
            tag = f"{t}x{plane[0]}x{plane[1]}"
            u, v = os.path.join(d, f"u{tag}.zarr"), os.path.join(d, f"v{tag}.zarr")
            for path, seed in [(u, 1), (v, 2)]:
                if not os.path.exists(os.path.join(path, ".zarray")):
                    subprocess.run([strata_bin, "random", path, "--shape",
                                    f"{t},{plane[0]},{plane[1]}", "--chunks",
                                    f"10,{plane[0]},{plane[1]}", "--seed", str(seed),
                                    "--overwrite"], check=True)
            argvs = {
                "cpp": [os.path.join(args.bin, "quadratic_means"), u, v, "OUT", "--allowed-mem",
                        allowed, "--work-dir", "WORK"],
                "python": [py, "-c", PY_QM, u, v, "OUT", allowed, "WORK"],
                "dask": [py, "-c", DASK_QM, u, v, "OUT"],
                "numpy": [py, "-c", NUMPY_QM, u, v, "OUT"],
            }
            contenders = []
            for name, argv in argvs.items():
                out, work = os.path.join(d, f"qm_{name}.zarr"), os.path.join(d, f"work_{name}")
                argv = [out if a == "OUT" else work if a == "WORK" else a for a in argv]

                def setup(out=out, work=work):
                    shutil.rmtree(out, ignore_errors=True)
                    P.clear_dir(work)
                    P.warm(u)
                    P.warm(v)
                contenders.append(P.Contender(name, argv, env=py_env if name == "python" else None,
                                              setup=setup))
            b.case(f"quadratic_means t={t}", contenders,
                   ratios=[("python", "cpp"), ("dask", "python"), ("numpy", "python")],
                   ratio_keys=("wall_s", "peak_rss_bytes"),
                   describe={"t": t, "shape": [t, *plane], "chunks": [10, *plane],
                             "allowed_mem": allowed})
        if "seed_rechunk" in args.cases:
            n, allowed = (1000, "64MB") if args.smoke else (10000, "400MB")
            src = os.path.join(d, f"seed{n}x{n}_{n}x{n // 10}.zarr")
            if not os.path.exists(os.path.join(src, ".zarray")):
                subprocess.run([strata_bin, "random", src, "--shape", f"{n},{n}", "--chunks",
                                f"{n},{n // 10}", "--seed", "0", "--overwrite"], check=True)
            target = f"{n // 10},{n}"
            argvs = {
                "cpp": [strata_bin, "rechunk", src, "OUT", "--chunks", target, "--allowed-mem",
                        allowed, "--work-dir", "WORK", "--quiet", "--overwrite"],
                "python": [py, "-c", PY_RECHUNK, src, "OUT", target, allowed, "WORK"],
                "dask": [py, "-c", DASK_RECHUNK, src, "OUT", target],
                "numpy": [py, "-c", NUMPY_RECHUNK, src, "OUT", target],
            }
            contenders = []
            for name, argv in argvs.items():
                out, work = os.path.join(d, f"rc_{name}.zarr"), os.path.join(d, f"work_{name}")
                argv = [out if a == "OUT" else work if a == "WORK" else a for a in argv]

                def setup(out=out, work=work):
                    shutil.rmtree(out, ignore_errors=True)
                    P.clear_dir(work)
                    P.warm(src)
                contenders.append(P.Contender(name, argv, env=py_env if name == "python" else None,
                                              setup=setup))
            b.case(f"seed_rechunk {n}x{n}", contenders,
                   ratios=[("python", "cpp"), ("dask", "python"), ("numpy", "python")],
                   ratio_keys=("wall_s", "peak_rss_bytes"),
                   describe={"shape": [n, n], "source_chunks": [n, n // 10],
                             "target_chunks": [n // 10, n], "allowed_mem": allowed})
        if "plan" in args.cases:
            shape = args.plan_shape or ("316,316" if args.smoke else "3160,3160")
            reps = str(args.plan_reps)
            contenders = [
                P.Contender("cpp", [os.path.join(args.bench_bin, "plan_bench"), "--shape", shape,
                                    "--chunks", args.plan_chunks, "--reps", reps],
                            finish=plan_figures),
                P.Contender("python", [py, "-c", PY_PLAN, shape, args.plan_chunks, reps],
                            env=py_env, finish=plan_figures),
            ]
            b.case("plan", contenders, ratios=[("python", "cpp")],
                   ratio_keys=("plan_s", "first_plan_s"),
                   describe={"shape": shape, "chunks": args.plan_chunks,
                             "plans_per_process": args.plan_reps})


if __name__ == "__main__":
    main()
