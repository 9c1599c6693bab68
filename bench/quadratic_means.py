#!/usr/bin/env python3
"""Quadratic means (Cubed's standard benchmark): Strata against Dask and
Cubed, same inputs, under the protocol of bench/README.md.

    .venv/bin/python bench/quadratic_means.py [--t 50 200] [--reps 5] [--prepared]
        [--bin build/release/bin] [--peers-python bench/.venv-peers/bin/python] [--no-cubed]
        [--dir build/bench/quadratic_means]
        [--out bench/results/quadratic_means.json]
    .venv/bin/python bench/quadratic_means.py --smoke

u, v float64 of shape (t, 987, 1920), chunks (10, 987, 1920) (~150 MB), written
once by `strata random` (blosc lz4, zarr-python's default codec). Each run
computes mean over axis 0 of u*u, v*v and u*v, stacked into a (3, 987, 1920)
Zarr array, with allowed_mem 2GB:
  strata: examples/quadratic_means with its defaults (threads executor,
          workers = the available cores);
  dask:   Dask from the .venv (requirements/dev.txt) as its users run it, nothing configured
          (threaded scheduler, default worker count), da.from_zarr ... to_zarr;
  cubed:  Cubed from bench/.venv-peers (--peers-python; bench/peers-env.sh),
          its processes executor with 2 workers, allowed_mem Strata's, its
          intermediates in its work dir (--no-cubed leaves it out).
Both read the inputs from a warm page cache (read once before each run).
Each run is a fresh process measured by the protocol (wall time, CPU, peak
RSS, bytes under the work dir). After the first kept rep both outputs are
compared with numpy to a reference computed from the inputs (zarr-python).
Reports medians with min-max and the per-rep Dask/Strata ratio; never
pass/fail. --smoke: t=20 on (20, 98, 192) arrays.
"""
import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol as P  # noqa: E402

DASK = r'''
import sys, dask.array as da
u = da.from_zarr(sys.argv[1]); v = da.from_zarr(sys.argv[2])
m = da.stack([(u * u).mean(axis=0), (v * v).mean(axis=0), (u * v).mean(axis=0)])
m.to_zarr(sys.argv[3], overwrite=True)
'''

# Cubed (bench/.venv-peers, bench/peers-env.sh; Cubed's standard benchmark)
# as its users run it on one machine: its processes executor with 2 workers,
# allowed_mem Strata's, its intermediates in the contender's work dir.
CUBED = r'''
import sys, cubed
u_path, v_path, out, allowed, work = sys.argv[1:6]
if __name__ == "__main__":
    spec = cubed.Spec(work_dir=work, allowed_mem=allowed, executor_name="processes",
                      executor_options={"max_workers": 2})
    u = cubed.from_zarr(u_path, spec=spec); v = cubed.from_zarr(v_path, spec=spec)
    m = cubed.stack([cubed.mean(u * u, axis=0), cubed.mean(v * v, axis=0),
                     cubed.mean(u * v, axis=0)])
    cubed.to_zarr(m, out)
'''

# Checks an output against the means computed by numpy over the inputs, in
# slabs of 10 along t (so the check itself never holds u and v whole).
CHECK = r'''
import sys, numpy as np, zarr
u, v, out = (zarr.open(p, mode="r") for p in sys.argv[1:4])
t = u.shape[0]
acc = np.zeros((3,) + u.shape[1:])
for s in range(0, t, 10):
    a, b = u[s:s + 10], v[s:s + 10]
    acc[0] += (a * a).sum(0); acc[1] += (b * b).sum(0); acc[2] += (a * b).sum(0)
ref = acc / t
got = out[...]
err = float(np.max(np.abs(got - ref)))
ok = got.shape == ref.shape and np.allclose(got, ref, rtol=1e-12, atol=1e-12)
print(("equal to numpy" if ok else "DIFFERS from numpy") + f" (max abs difference {err:.3g})")
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--t", type=int, nargs="+", default=None, help="default 50 200 (smoke: 20)")
    ap.add_argument("--bin", default="build/release/bin")
    ap.add_argument("--peers-python", default="bench/.venv-peers/bin/python",
                    help="the interpreter with Cubed (bench/peers-env.sh)")
    ap.add_argument("--no-cubed", action="store_true", help="leave Cubed out")
    ap.add_argument("--dir", default="build/bench/quadratic_means")
    P.add_arguments(ap)
    args = ap.parse_args()
    ts = args.t or ([20] if args.smoke else [50, 200])
    plane = (98, 192) if args.smoke else (987, 1920)
    allowed = "64MB" if args.smoke else "2GB"
    d = os.path.abspath(args.dir)
    peers_py = os.path.abspath(args.peers_python)
    names = ("strata", "dask") + (() if args.no_cubed else ("cubed",))
    if not args.no_cubed:
        probe = subprocess.run([peers_py, "-c", "import cubed; print(cubed.__version__)"],
                               capture_output=True, text=True) \
            if os.path.exists(peers_py) else None
        if probe is None or probe.returncode != 0:
            sys.exit(f"quadratic_means.py: error: {peers_py} cannot run Cubed: make it with "
                     "bench/peers-env.sh, or leave Cubed out with --no-cubed")
        cubed_version = probe.stdout.strip()
    with P.Bench("quadratic_means", args, scratch=d,
                 description="mean(u*u), mean(v*v), mean(u*v) over axis 0, Strata against "
                             "Dask") as b:
        b.doc["dask_script"] = DASK.strip()
        b.doc["dask_defaults"] = P.dask_defaults()
        if not args.no_cubed:
            b.doc["cubed_script"] = CUBED.strip()
            b.doc["packages"] = {"cubed": cubed_version}
        for t in ts:
            u = os.path.join(d, f"u{t}.zarr")
            v = os.path.join(d, f"v{t}.zarr")
            shape = f"{t},{plane[0]},{plane[1]}"
            for path, seed in [(u, 1), (v, 2)]:
                if not os.path.exists(os.path.join(path, ".zarray")):
                    subprocess.run([os.path.join(args.bin, "strata"), "random", path, "--shape",
                                    shape, "--chunks", f"10,{plane[0]},{plane[1]}", "--seed",
                                    str(seed), "--overwrite"], check=True)
            stored = P.tree_bytes(u) + P.tree_bytes(v)
            state = {"checked": False}
            contenders, outs = [], {}
            for variant in ["user"] + (["prepared"] if args.prepared else []):
                for name in (names if variant == "user" else ("strata", "dask")):
                    cname = name if variant == "user" else f"{name} ({variant})"
                    slug = cname.replace(" ", "_").replace("(", "").replace(")", "")
                    out = os.path.join(d, f"out{t}_{slug}.zarr")
                    work = os.path.join(d, f"work_{slug}")
                    argv = ([os.path.join(args.bin, "quadratic_means"), u, v, out,
                             "--allowed-mem", allowed, "--work-dir", work] if name == "strata"
                            else [peers_py, "-c", CUBED, u, v, out, allowed, work]
                            if name == "cubed" else [sys.executable, "-c", DASK, u, v, out])

                    def setup(out=out, work=work, variant=variant):
                        shutil.rmtree(out, ignore_errors=True)
                        P.clear_dir(work)
                        if variant == "prepared":
                            P.drop_caches()
                        P.warm(u)
                        P.warm(v)
                        if variant == "prepared":
                            P.pretouch(2 * 8 * t * plane[0] * plane[1]
                                       + ((64 << 20) if args.smoke else (1 << 30)))

                    def finish(run, done, out=out, work=work):
                        run["extra"]["work_after_bytes"] = P.tree_bytes(work)
                        if state["checked"]:
                            shutil.rmtree(out, ignore_errors=True)

                    contenders.append(P.Contender(cname, argv, setup=setup, finish=finish,
                                                  variant=variant, label=name,
                                                  watch_dirs={"work": work}))
                    outs[cname] = out
            checks = {}

            def after_rep(slot, rep, outs=outs, checks=checks, u=u, v=v, state=state):
                if state["checked"]:
                    return
                for cname, out in outs.items():
                    r = subprocess.run([sys.executable, "-c", CHECK, u, v, out],
                                       capture_output=True, text=True)
                    checks[cname] = r.stdout.strip() if r.returncode == 0 else (
                        f"FAILED: {r.stderr.strip()[-500:]}")
                P.log(f"  checks: {checks}")
                state["checked"] = True
                for out in outs.values():
                    shutil.rmtree(out, ignore_errors=True)

            ratios = [("dask", "strata")] + ([] if args.no_cubed else [("cubed", "strata")])
            if args.prepared:
                ratios.append(("dask (prepared)", "strata (prepared)"))
            case = b.case(f"t={t}", contenders, ratios=ratios,
                          ratio_keys=("wall_s", "peak_rss_bytes"), after_rep=after_rep,
                          describe={"t": t, "shape": [t, *plane], "chunks": [10, *plane],
                                    "allowed_mem": allowed,
                                    "input_bytes_decoded": 2 * t * plane[0] * plane[1] * 8,
                                    "input_bytes_stored": stored})
            case["checks"] = checks
            for p in (u, v):
                shutil.rmtree(p, ignore_errors=True)
            for p in os.listdir(d):
                if p.startswith("work_"):
                    shutil.rmtree(os.path.join(d, p), ignore_errors=True)


if __name__ == "__main__":
    main()
