#!/usr/bin/env python3
"""The weather-features pipeline of issue 37, verbatim through xarray's API:
Strata (its chunk manager) against xarray + Dask 2026 (the threaded
scheduler, and a 2-worker LocalCluster on 127.0.0.1) in the same reps,
under the protocol of bench/README.md; then the steps Cubed can run through
xarray on Strata, Dask and Cubed (FIELD below).

    .venv/bin/python bench/weather_pipeline.py [--size-gb 8] [--points 5000]
        [--output zarr|parquet] [--allowed-mem 2GB]
        [--work-dir /tmp/strata-bench-weather] [--keep-data] [--no-cluster]
        [--no-cubed-case] [--peers-python bench/.venv-peers/bin/python]
        [--python build/release/python] [--dir build/bench/weather_pipeline]
        [--reps 5] [--prepared] [--out bench/results/weather_pipeline.json]
    .venv/bin/python bench/weather_pipeline.py --smoke      (--size-gb 0.05, 1 rep)

The workload is examples/weather_pipeline.py's, imported (never copied):
  dataset   its generate(): synthetic IFS-like forecasts init_time x valid_time
            x lat x lon (u10, v10, t2m float32; 0.25-degree grid from 1 GB up,
            one field per chunk, Zarr v2), written once by Strata before the
            first rep (untimed) and read by every run. --keep-data keeps it in
            --work-dir afterwards and reuses a kept one of the same size and
            generator code (the JSON says whether it was reused:
            `dataset.reused`); without it the dataset is made afresh and
            removed at the end. Outputs and Strata's work dirs go in
            --work-dir too; --dir holds only the protocol's scratch.
  pipeline  its pipeline(), the same code for every contender:
                xr.open_zarr(src[, chunked_array_type="strata",
                                  from_array_kwargs={"spec": spec}])
                  .sel(lat=lats, lon=lons, method="nearest")   # --points DataArrays
                  .assign_coords(country=...)
                  -> wind speed np.hypot(u10, v10), t2m - 273.15
                  .groupby("country").mean(["point"])
            written (--output) to Zarr (xarray's to_zarr, v2) or to Parquet
            (Strata: .strata.to_parquet; Dask: .to_dask_dataframe().to_parquet);
  strata    run_strata() with strata.Spec(allowed_mem=--allowed-mem,
            work_dir=...) and Strata's defaults otherwise (workers = the
            available cores). Every strata compute of the process is observed
            (a HistoryCallback added where the package calls the engine,
            strata._core._strata.compute: xarray's to_zarr gives no way to
            pass callbacks), so the memory contract covers the opening's
            coordinate reads as well as the pipeline's one plan;
  dask      run_dask(), the lock's Dask as its users run it: the threaded
            scheduler with its default worker count (dask_defaults in the
            JSON); its process runs without strata's package on its path
            (xarray would import it to list chunk managers) and never
            imports strata (checked);
  dask-cluster  run_dask() on a distributed.Client of one LocalCluster (2
            worker processes on 127.0.0.1, Dask's defaults otherwise), started
            in a helper process before the first rep and closed after the
            last (bench/dask_rechunk.py's Cluster). Its processes are part of
            the workload (their CPU counts with the contender's); the workers'
            peak RSS is recorded per run (extra.worker_peak_rss_bytes).
Each run is a fresh .venv/bin/python process measured by the protocol (wall
time from fork to exit, so imports count; CPU; peak RSS; bytes under Strata's
work dir). The process also reports import_s and pipeline_s, and for Strata
the memory contract: every task's measured peak (its memory pool's) against
its projection and the projection against allowed_mem (contract_ok, tasks,
tasks_over_projection, tasks_over_allowed, max_measured_task_mem,
max_projected_task_mem, the largest measured/projected, per-op maxima, and the
pipeline compute's summary).
Before each run (untimed): the contender's output and work dir are removed
and the dataset is read once (warm input, for all alike). --prepared adds
"<name> (prepared)" contenders for strata and dask (page cache dropped, then
warmed, and 2 x allowed_mem of memory pre-touched): a separate column, never
the headline. After the first kept rep the outputs are compared with
Strata's (Zarr: xr.testing.assert_allclose; Parquet: the rows sorted by
country and times; rtol 1e-5, atol 1e-4: float32 inputs). Medians with
min-max and per-rep ratios dask/strata and dask-cluster/strata of wall time
and peak RSS; issue 37 asks for >= 5x and lower RSS: reported, never
pass/fail.
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol as P  # noqa: E402
from dask_rechunk import Cluster  # noqa: E402

EXAMPLES = os.path.join(P.REPO, "examples")
DEFAULT_WORK_DIR = "/tmp/strata-bench-weather"

# Makes (or only describes) the dataset with the example's generate(); prints
# JSON. Untimed.
DATASET = r'''
import hashlib, inspect, json, os, sys, time
examples, mode, src, size, allowed, work = sys.argv[1:7]
sys.path.insert(0, examples)
import weather_pipeline as wf
code = inspect.getsource(wf.grid_for) + inspect.getsource(wf.generate)
out = {"size_bytes": wf.parse_size(size), "grid": list(wf.grid_for(wf.parse_size(size))),
       "allowed_mem_bytes": wf.parse_size(allowed),
       "generator_sha256": hashlib.sha256(code.encode()).hexdigest()[:16]}
if mode == "generate":
    import shutil, strata
    t = time.perf_counter()
    wf.generate(src, out["size_bytes"], strata.Spec(work_dir=work, allowed_mem=allowed))
    out["generate_s"] = time.perf_counter() - t
    shutil.rmtree(work, ignore_errors=True)
if os.path.isdir(src):
    import xarray as xr
    ds = xr.open_zarr(src)
    first = ds[sorted(ds.data_vars)[0]]
    out["dims"] = {k: int(ds.sizes[k]) for k in first.dims}  # in the variables' order
    out["chunks"] = {k: list(ds[k].encoding.get("chunks", ())) for k in ds.data_vars}
    out["dataset_bytes"] = int(sum(v.nbytes for v in ds.data_vars.values()))
print(json.dumps(out))
'''

STRATA = r'''
import time
t0 = time.perf_counter()
import json, sys
examples, src, out, points, allowed, work, output = sys.argv[1:8]
sys.path.insert(0, examples)
import weather_pipeline as wf
import strata
from strata import _core
from strata.callbacks import _Dispatcher
from strata.diagnostics import HistoryCallback
# Every compute of the process, observed where the package calls the engine.
histories = []
engine_compute = _core._strata.compute
def observed(handles, dispatcher, fuse):
    history = HistoryCallback()
    histories.append(history)
    callbacks = [history] + (list(dispatcher.callbacks) if dispatcher is not None else [])
    return engine_compute(handles, _Dispatcher(callbacks), fuse)
_core._strata.compute = observed
spec = strata.Spec(work_dir=work, allowed_mem=allowed)
t1 = time.perf_counter()
wf.run_strata(src, out, int(points), spec, output=output)
t2 = time.perf_counter()
limit = spec.allowed_mem
tasks = [t for h in histories for t in h.tasks]
ok = bool(histories) and all(h.ok for h in histories)
over_p = [t for t in tasks if t["measured_peak_mem"] > t["projected_mem"]]
over_a = [t for t in tasks if t["projected_mem"] > limit]
worst = max((t["measured_peak_mem"] / t["projected_mem"] for t in tasks
             if t["projected_mem"] > 0), default=None)
main = max(histories, key=lambda h: len(h.tasks))   # the pipeline's plan
ops = {}
for h in histories:
    for k, o in h.ops.items():
        ops[k] = {f: o[f] for f in ("op", "num_tasks", "tasks_done", "projected_mem",
                                    "measured_peak_mem")}
print(json.dumps({
    "import_s": t1 - t0, "pipeline_s": t2 - t1, "output": output,
    "compute_ok": ok, "computes": len(histories), "allowed_mem": limit,
    "workers": spec.workers, "tasks": len(tasks),
    "contract_ok": bool(tasks) and not over_p and not over_a and ok,
    "tasks_over_projection": len(over_p), "tasks_over_allowed": len(over_a),
    "max_measured_task_mem": max((t["measured_peak_mem"] for t in tasks), default=0),
    "max_projected_task_mem": max((t["projected_mem"] for t in tasks), default=0),
    "max_measured_over_projected": worst, "ops": ops,
    "violations": [{k: t[k] for k in ("name", "op", "block", "projected_mem",
                                      "measured_peak_mem")} for t in (over_p + over_a)[:20]],
    **{f"compute_{k}": v for k, v in (main.summary or {}).items()}}))
'''

DASK = r'''
import time
t0 = time.perf_counter()
import json, sys
examples, src, out, points, output, address = sys.argv[1:7]
sys.path.insert(0, examples)
import weather_pipeline as wf
scheduler = "threads"
if address != "-":
    import distributed
    scheduler = distributed.Client(address)
t1 = time.perf_counter()
wf.run_dask(src, out, int(points), output=output, scheduler=scheduler)
t2 = time.perf_counter()
if address != "-":
    scheduler.close()
assert "strata" not in sys.modules, "the Dask contender imported strata"
print(json.dumps({"import_s": t1 - t0, "pipeline_s": t2 - t1, "output": output}))
'''

# The steps of the pipeline Cubed can run through xarray, the same code for
# every contender (the second case; --no-cubed-case leaves it out): xarray
# refuses the pointwise sel on every chunked array but Dask's ("Vectorized
# indexing is not supported"), and the group-by needs the points' labels, so
# Cubed's case is the features averaged over every grid point of each field. Written with operators only (not
# np.hypot: Cubed's arrays take no numpy ufuncs); the data hold no NaN
# (skipna=False). engine: strata, dask (threaded scheduler) or cubed (its
# processes executor, 2 workers, allowed_mem Strata's, intermediates in work).
FIELD = r'''
import time
t0 = time.perf_counter()
import json, os, sys
engine, src, out, allowed, work = sys.argv[1:6]
if engine != "strata":  # the peers without strata's package (xarray lists chunk managers)
    sys.path[:] = [p for p in sys.path if not os.path.isdir(os.path.join(p or ".", "strata"))]
import xarray as xr
def field_means(ds):
    feats = xr.Dataset({"wind_speed": (ds.u10 * ds.u10 + ds.v10 * ds.v10) ** 0.5,
                        "t2m_celsius": ds.t2m - 273.15})
    return feats.mean(["lat", "lon"], skipna=False)
if __name__ == "__main__":
    kw, said = {}, {}
    if engine == "strata":
        import strata
        kw = dict(chunked_array_type="strata",
                  from_array_kwargs={"spec": strata.Spec(work_dir=work, allowed_mem=allowed)})
    elif engine == "cubed":
        import cubed, cubed_xarray
        spec = cubed.Spec(work_dir=work, allowed_mem=allowed, executor_name="processes",
                          executor_options={"max_workers": 2})
        kw = dict(chunked_array_type="cubed", from_array_kwargs={"spec": spec})
        said = {"cubed": cubed.__version__}
    t1 = time.perf_counter()
    field_means(xr.open_zarr(src, **kw)).to_zarr(out, mode="w", zarr_format=2)
    t2 = time.perf_counter()
    if engine != "strata":
        assert "strata" not in sys.modules, "a peer imported strata"
    print(json.dumps({"import_s": t1 - t0, "pipeline_s": t2 - t1, **said}))
'''

# The outputs agree with Strata's: Zarr read back by xarray, or Parquet read
# by pandas as rows sorted by the dimensions (Dask's to_dask_dataframe keeps
# them as columns, Strata's to_parquet as the index).
CHECK = r'''
import os, sys, numpy as np, pandas as pd, xarray as xr
ours, theirs = sys.argv[1:3]
if os.path.exists(os.path.join(ours, "_SUCCESS")):
    def rows(path):
        f = pd.read_parquet(path)
        f = f.reset_index() if any(n is not None for n in f.index.names) else f
        return f.sort_values(["country", "init_time", "valid_time"]).reset_index(drop=True)
    a, b = rows(ours), rows(theirs)
    b = b[list(a.columns)]   # without Dask's __null_dask_index__
    pd.testing.assert_frame_equal(a, b, rtol=1e-5, atol=1e-4, check_dtype=False)
    print(f"agree (Parquet rows, rtol 1e-5 atol 1e-4; {len(a)} rows, columns {list(b.columns)})")
else:
    a = xr.open_zarr(ours).compute()
    b = xr.open_zarr(theirs).compute()
    a = a.transpose(*b.dims)
    xr.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-4)
    err = max(float(np.nanmax(np.abs(a[k].values - b[k].values))) for k in b.data_vars)
    print(f"agree (xr.testing.assert_allclose rtol 1e-5 atol 1e-4; sizes {dict(a.sizes)}, "
          f"variables {sorted(b.data_vars)}, max abs difference {err:.3g})")
'''


def dataset(py, env, mode, src, size, allowed, work):
    r = subprocess.run([py, "-c", DATASET, EXAMPLES, mode, src, size, allowed, work],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"weather_pipeline.py: error: the dataset ({mode}) failed:\n"
                         f"{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def prepare_dataset(py, env, args, size, allowed, work_dir):
    """The dataset in work_dir: a kept one of the same size when --keep-data,
    else made now. Returns its description (with "reused")."""
    src = os.path.join(work_dir, "ifs.zarr")
    marker = os.path.join(work_dir, "ifs.json")
    scratch = os.path.join(work_dir, "generate-work")
    wanted = dataset(py, env, "describe", os.path.join(work_dir, "none"), size, allowed, scratch)
    if args.keep_data and os.path.exists(marker) and os.path.isdir(src):
        with open(marker) as f:
            kept = json.load(f)
        if all(kept.get(k) == wanted[k] for k in ("size_bytes", "grid", "generator_sha256")):
            kept.update(reused=True, path=src, stored_bytes=P.tree_bytes(src),
                        allowed_mem_bytes=wanted["allowed_mem_bytes"])
            P.log(f"reusing the dataset in {src} ({kept['dims']})")
            return src, kept
        P.log(f"the kept dataset in {src} is of another size or generator: making it again")
    P.remove_path(src)
    P.remove_path(marker)
    free = shutil.disk_usage(work_dir).free
    if free < 1.2 * wanted["size_bytes"] + 2 * P.GB:
        raise SystemExit(f"weather_pipeline.py: error: {work_dir} has {free / P.GB:.1f} GB free; "
                         f"the dataset needs {wanted['size_bytes'] / P.GB:.1f} GB (+ margin)")
    P.log(f"generating the {size} dataset in {src} (untimed)")
    made = dataset(py, env, "generate", src, size, allowed, scratch)
    made["generated"] = datetime.datetime.now().isoformat(timespec="seconds")
    with open(marker, "w") as f:
        json.dump(made, f)
    made.update(reused=False, path=src, stored_bytes=P.tree_bytes(src))
    return src, made


def contract_note(runs):
    """One line over every kept Strata run's contract figures."""
    tasks = [r["extra"].get("tasks", 0) for r in runs]
    bad = [r for r in runs if not r["extra"].get("contract_ok")]
    return {"runs": len(runs), "runs_within_contract": len(runs) - len(bad),
            "tasks_per_run": sorted(set(tasks)),
            "max_measured_task_mem": max((r["extra"].get("max_measured_task_mem", 0)
                                          for r in runs), default=None),
            "max_projected_task_mem": max((r["extra"].get("max_projected_task_mem", 0)
                                           for r in runs), default=None),
            "allowed_mem": runs[0]["extra"].get("allowed_mem") if runs else None}


def cubed_case(b, args, py, env, dask_env, src, ds, size, allowed, work_dir, made):
    """The second case: FIELD (the steps Cubed can run) on strata, dask and
    Cubed, in the same protocol."""
    peers_py = os.path.abspath(args.peers_python)
    probe = subprocess.run([peers_py, "-c", "import json, cubed, cubed_xarray; "
                            "print(json.dumps({'cubed': cubed.__version__, 'cubed-xarray': "
                            "getattr(cubed_xarray, '__version__', None)}))"],
                           capture_output=True, text=True) if os.path.exists(peers_py) else None
    if probe is None or probe.returncode != 0:
        why = "it does not exist" if probe is None else \
            (probe.stderr.strip().splitlines() or ["?"])[-1]
        raise SystemExit(f"weather_pipeline.py: error: {peers_py} cannot run Cubed ({why}): "
                         "make it with bench/peers-env.sh, or leave the case out with "
                         "--no-cubed-case")
    b.doc.setdefault("packages", {}).update(json.loads(probe.stdout))
    # The peers' interpreter runs without strata's package on its path.
    peers_env = dict(dask_env)
    contenders, outs = [], {}
    for name in ("strata", "dask", "cubed"):
        out = os.path.join(work_dir, f"field-{name}.zarr")
        work = os.path.join(work_dir, f"field-work-{name}")
        made += [out, work]
        argv = [peers_py if name == "cubed" else py, "-c", FIELD, name, src, out,
                str(ds["allowed_mem_bytes"]), work]

        def setup(out=out, work=work):
            P.remove_path(out)
            P.clear_dir(work)
            P.warm(src)

        def finish(run, done, work=work):
            lines = [l for l in done.stdout.splitlines() if l.startswith("{")]
            if lines:
                run["extra"].update(json.loads(lines[-1]))
            run["extra"]["work_after_bytes"] = P.tree_bytes(work)

        contenders.append(P.Contender(name, argv, env={"strata": env, "dask": dask_env,
                                                       "cubed": peers_env}[name],
                                      setup=setup, finish=finish, label=name,
                                      watch_dirs={"work": work}))
        outs[name] = out
    checks = {}

    def after_rep(slot, rep):
        if checks:
            return
        for name in ("dask", "cubed"):
            r = subprocess.run([py, "-c", CHECK, outs["strata"], outs[name]],
                               capture_output=True, text=True, env=env)
            checks[f"strata vs {name}"] = (r.stdout.strip() if r.returncode == 0 else
                                           f"FAILED: {r.stderr.strip()[-500:]}")
        P.log(f"  checks: {checks}")

    case = b.case(f"{size} features, mean over lat x lon (the steps Cubed can run)",
                  contenders, ratios=[("dask", "strata"), ("cubed", "strata")],
                  ratio_keys=("wall_s", "peak_rss_bytes"), after_rep=after_rep,
                  describe={"size": size, "size_bytes": ds["size_bytes"],
                            "dims": ds.get("dims", {}), "steps": "cubed",
                            "dataset_bytes": ds.get("dataset_bytes"),
                            "allowed_mem": allowed, "output": "zarr",
                            "dataset_reused": ds["reused"]})
    case["checks"] = checks
    b.doc["scripts"]["field"] = FIELD.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--size-gb", type=float, default=None,
                    help="dataset size in GB (default 8, the real figure; 0.05 with --smoke)")
    ap.add_argument("--points", type=int, default=5000)
    ap.add_argument("--output", choices=["zarr", "parquet"], default="zarr",
                    help="where the means go (default zarr)")
    ap.add_argument("--allowed-mem", default=None, help="Strata's allowed_mem (default 2GB; "
                                                        "smoke: 200MB)")
    ap.add_argument("--work-dir", default=DEFAULT_WORK_DIR,
                    help="where the dataset, the outputs and Strata's work dirs go "
                         f"(default {DEFAULT_WORK_DIR}); what the benchmark made there is "
                         "removed at the end (the dataset too, unless --keep-data)")
    ap.add_argument("--keep-data", action="store_true",
                    help="keep the dataset in --work-dir after the run, and reuse a kept one "
                         "of the same size instead of generating it again")
    ap.add_argument("--no-cluster", action="store_true",
                    help="leave out the dask-cluster contender")
    ap.add_argument("--no-cubed-case", action="store_true",
                    help="leave out the second case: the steps Cubed can run (features, mean "
                         "over lat x lon) on strata, dask and Cubed")
    ap.add_argument("--peers-python", default="bench/.venv-peers/bin/python",
                    help="the interpreter with Cubed and cubed-xarray (bench/peers-env.sh)")
    ap.add_argument("--python", default="build/release/python",
                    help="the build tree's package directory (PYTHONPATH of the contenders)")
    ap.add_argument("--dir", default="build/bench/weather_pipeline",
                    help="the protocol's scratch (captured output; the .incomplete.json of a "
                         "failed run)")
    P.add_arguments(ap)
    args = ap.parse_args()
    if args.points < 1:
        ap.error("--points must be at least 1")
    size_gb = args.size_gb if args.size_gb is not None else (0.05 if args.smoke else 8.0)
    if not size_gb > 0:
        ap.error("--size-gb must be positive")
    size = f"{size_gb:g}GB"
    allowed = args.allowed_mem or ("200MB" if args.smoke else "2GB")
    py = sys.executable
    pkg = os.path.abspath(args.python)
    if not os.path.isdir(os.path.join(pkg, "strata")):
        sys.exit(f"weather_pipeline.py: error: no strata package in {pkg} "
                 "(cmake --build --preset release, or --python DIR)")
    env = P.package_env(pkg, py)
    # The Dask contenders run without strata's package: xarray would import
    # it to list its chunk managers (the entry point) though it never uses it.
    dask_env = dict(env, PYTHONPATH=os.environ.get("PYTHONPATH", ""))
    work_dir = os.path.abspath(args.work_dir)
    os.makedirs(work_dir, exist_ok=True)
    made = []  # what we put in work_dir besides the dataset, removed at the end
    cluster = None
    suffix = ".zarr" if args.output == "zarr" else ".parquet"
    try:
        with P.Bench("weather_pipeline", args, scratch=os.path.abspath(args.dir),
                     description="issue 37's weather-features pipeline (nearest points, "
                                 f"features, group mean by country, to {args.output}) verbatim "
                                 "through xarray's API: Strata's chunk manager against xarray + "
                                 "Dask (threads, and a 2-worker LocalCluster)") as b:
            b.doc["example"] = "examples/weather_pipeline.py (generate, run_strata, run_dask)"
            b.doc["scripts"] = {"strata": STRATA.strip(), "dask": DASK.strip(),
                                "check": CHECK.strip()}
            b.doc["dask_defaults"] = P.dask_defaults()
            b.doc["packages"] = P.python_package_versions("numpy", "pandas", "xarray", "dask",
                                                          "distributed", "zarr", "pyarrow")
            b.doc["work_dir"] = work_dir
            b.doc["keep_data"] = args.keep_data
            b.doc["output"] = args.output
            src, ds = prepare_dataset(py, env, args, size, allowed, work_dir)
            b.doc["dataset"] = ds
            helper_pids = []
            if not args.no_cluster:
                cluster = Cluster(dask_env)
                helper_pids = cluster.helper_pids
                b.doc["cluster"] = {k: cluster.info[k] for k in ("address", "memory_limits",
                                                                  "threads")}
            contenders, outs = [], {}
            variants = ["user"] + (["prepared"] if args.prepared else [])
            for variant in variants:
                names = ["strata", "dask"] + (["dask-cluster"] if cluster and
                                              variant == "user" else [])
                for name in names:
                    cname = name if variant == "user" else f"{name} ({variant})"
                    slug = f"{name}_{variant}"
                    out = os.path.join(work_dir, f"features-{slug}{suffix}")
                    work = os.path.join(work_dir, f"work-{slug}")
                    made += [out, work]
                    address = cluster.info["address"] if name == "dask-cluster" else "-"
                    argv = ([py, "-c", STRATA, EXAMPLES, src, out, str(args.points), allowed,
                             work, args.output] if name == "strata"
                            else [py, "-c", DASK, EXAMPLES, src, out, str(args.points),
                                  args.output, address])

                    def setup(out=out, work=work, variant=variant, name=name):
                        P.remove_path(out)
                        P.clear_dir(work)
                        if variant == "prepared":
                            P.drop_caches()
                        P.warm(src)
                        if variant == "prepared":
                            P.pretouch(2 * ds["allowed_mem_bytes"])
                        if name == "dask-cluster":
                            cluster.reset_peaks()

                    def finish(run, done, work=work, name=name):
                        lines = [l for l in done.stdout.splitlines() if l.startswith("{")]
                        if lines:
                            run["extra"].update(json.loads(lines[-1]))
                        run["extra"]["work_after_bytes"] = P.tree_bytes(work)
                        if name == "dask-cluster":
                            run["extra"].update(cluster.peaks())

                    contenders.append(P.Contender(cname, argv,
                                                  env=env if name == "strata" else dask_env,
                                                  setup=setup,
                                                  finish=finish, variant=variant, label=name,
                                                  watch_dirs={"work": work}))
                    outs[cname] = out
            checks = {}

            def after_rep(slot, rep):
                if checks:
                    return
                for cname in outs:
                    if cname.startswith("strata"):
                        continue
                    ours = "strata" if "(" not in cname else \
                        f"strata ({cname.split('(')[1].rstrip(')')})"
                    r = subprocess.run([py, "-c", CHECK, outs[ours], outs[cname]],
                                       capture_output=True, text=True, env=env)
                    checks[f"{ours} vs {cname}"] = (r.stdout.strip() if r.returncode == 0 else
                                                    f"FAILED: {r.stderr.strip()[-500:]}")
                for name, run in rep["runs"].items():
                    if name.startswith("strata") and not run["extra"].get("contract_ok"):
                        checks[f"{name} memory contract"] = (
                            f"FAILED: {run['extra'].get('tasks_over_projection')} tasks over "
                            f"their projection, {run['extra'].get('tasks_over_allowed')} "
                            f"projections over allowed_mem")
                P.log(f"  checks: {checks}")

            ratios = [("dask", "strata")]
            if cluster:
                ratios.append(("dask-cluster", "strata"))
            if args.prepared:
                ratios.append(("dask (prepared)", "strata (prepared)"))
            g = ds.get("dims", {})
            case = b.case(f"{size} {args.points} points to {args.output}", contenders,
                          ratios=ratios, ratio_keys=("wall_s", "peak_rss_bytes"),
                          after_rep=after_rep, helper_pids=helper_pids,
                          describe={"size": size, "size_bytes": ds["size_bytes"],
                                    "dims": g, "chunks": ds.get("chunks"),
                                    "dataset_bytes": ds.get("dataset_bytes"),
                                    "stored_bytes": ds.get("stored_bytes"),
                                    "points": args.points, "allowed_mem": allowed,
                                    "output": args.output, "dataset_reused": ds["reused"]})
            case["checks"] = checks
            for v in variants:
                s = "strata" if v == "user" else f"strata ({v})"
                case.setdefault("memory_contract", {})[s] = contract_note(
                    [rep["runs"][s] for rep in case["reps"]])
            if cluster is not None:  # idle, its processes would count as other work
                cluster.stop()
                cluster = None
            if not args.no_cubed_case:
                cubed_case(b, args, py, env, dask_env, src, ds, size, allowed, work_dir, made)
    finally:
        if cluster is not None:
            cluster.stop()
        for p in made:
            P.remove_path(p)
        if not args.keep_data:
            P.remove_path(os.path.join(work_dir, "ifs.zarr"))
            P.remove_path(os.path.join(work_dir, "ifs.json"))
        P.remove_path(os.path.join(work_dir, "generate-work"))
        try:
            os.rmdir(work_dir)  # only when nothing else is in it
        except OSError:
            pass


if __name__ == "__main__":
    main()
