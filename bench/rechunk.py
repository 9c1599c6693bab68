#!/usr/bin/python3
"""Rechunk workloads of issue 4: Strata against Dask and this machine's bound.

    /usr/bin/python3 bench/rechunk.py [--workloads W1 W4 W5] [--reps 3] [--cliff-reps 3]
        [--bin build/release/bin] [--bound build/release/bench/rechunk_bound]
        [--dir build/bench/rechunk] [--svg bench/results/rechunk_cliff.svg]
        > bench/results/rechunk.json
    /usr/bin/python3 bench/rechunk.py --svg-from bench/results/rechunk.json  # chart only

Every source is a float64 Zarr v2 array written once by `strata random` (blosc
lz4 clevel 5 byte shuffle, zarr-python's default codec) and kept between reps.
Contenders, all with 2 threads, all writing DST with the source's codec:
  strata: `strata rechunk SRC DST --chunks .. --allowed-mem .. --workers 2
          --work-dir WORK --quiet`;
  dask:   Debian's python3-dask, threaded scheduler with 2 workers,
          da.from_zarr(SRC).rechunk(chunks).to_zarr(DST);
  bound:  bench/rechunk_bound.cc: read + decode every source chunk into RAM,
          gather + encode + write every target chunk, no planning or safety.
Workloads:
  W1  10000x10000, (10000,1000) -> (1000,10000), allowed_mem 400MB (Cubed #502)
  W4  20000x20000, (20000,500) -> (500,20000), allowed_mem 1GB
  W5  the cliff: (R,20000), (R,500) -> (500,20000) with R chosen so that the
      array is 0.5x..3x --total-system-mem (2GB), allowed_mem 400MB; Strata
      (and the bound) only, seconds per GB, with the tier each plan chose.
      Strata runs here without --quiet, so that the plan it executes (tiers,
      spill or multistage, and why) is recorded from its own output: `strata
      plan` has no DST and plans a returned result instead of to_zarr, which
      changes the tiers and fails outright from 2 GB on. `strata plan --json`
      is recorded too, with whether it agrees with the run.
Each run is a fresh process timed from outside with /usr/bin/time (wall time
and peak RSS); a thread polls the bytes under WORK every 50 ms and keeps the
maximum (Strata removes its intermediates at the end), and the bytes left
under WORK afterwards are counted too. Before every run the page cache is
dropped (sync; echo 3 > /proc/sys/vm/drop_caches, when we are root) and the
source is then read once, so every contender reads its input from the page
cache and writes into free memory (on this VM, writing into a page cache full
of old pages is 3-4x slower); nothing is fsync'ed. Then (unless --no-pretouch)
a child process writes and frees about as much memory as the run will need,
because on this VM first writes to memory the host has taken back cost ~0.55 s
of system time per GB and would otherwise land on whichever contender runs
first (W4: 2.8 to 14 s for the same command). Contenders alternate within
each rep, in a rotated order, so that they share the machine's noise; the
1-minute load average is recorded with every run. Reports medians and ratios
of the same run, never a pass/fail. After the first rep
each output is checked: the bound's with `strata verify` against the source
(W1, W4), the others by comparing their chunk files byte for byte with the
bound's (same codec, same bytes), falling back to `strata verify`.
"""
import argparse
import datetime
import filecmp
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time

GB = 10**9

DASK = r'''
import json, sys, dask, dask.array as da
dask.config.set(scheduler="threads", num_workers=int(sys.argv[4]))
x = da.from_zarr(sys.argv[1])
x.rechunk(tuple(json.loads(sys.argv[3]))).to_zarr(sys.argv[2], overwrite=True)
'''


# The in-RAM rechunk workloads, shared with bench/processes.py and
# bench/mpi.py: shape, source chunks, target chunks, allowed_mem, seed.
WORKLOADS = {
    "W1": ([10000, 10000], [10000, 1000], [1000, 10000], "400MB", 1),
    "W4": ([20000, 20000], [20000, 500], [500, 20000], "1GB", 4),
}



def executor_bench_args(default_dir):
    """The options of bench/processes.py and bench/mpi.py, parsed."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", nargs="+", default=["W1", "W4"], choices=sorted(WORKLOADS))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--bin", default="build/release/bin")
    ap.add_argument("--dir", default=default_dir)
    ap.add_argument("--pretouch", action=argparse.BooleanOptionalAction, default=True,
                    help="touch (and free) the memory a run will need just before it, in a "
                         "child process (see pretouch())")
    return ap.parse_args()


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def drop_caches():
    try:
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def warm(path):
    """Reads every file under path once (into the page cache)."""
    for root, _, files in os.walk(path):
        for name in files:
            with open(os.path.join(root, name), "rb", buffering=0) as f:
                while f.read(16 << 20):
                    pass


def tree_bytes(path):
    total = 0
    try:
        entries = list(os.scandir(path))
    except (FileNotFoundError, NotADirectoryError):
        return 0
    for e in entries:
        try:
            if e.is_dir(follow_symlinks=False):
                total += tree_bytes(e.path)
            else:
                total += e.stat(follow_symlinks=False).st_size
        except FileNotFoundError:
            pass
    return total


def clear_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path, exist_ok=True)


class Poller(threading.Thread):
    """Keeps the largest byte count seen under `path`, polled every `period` s."""

    def __init__(self, path, period=0.05):
        super().__init__(daemon=True)
        self.path, self.period, self.peak = path, period, 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, tree_bytes(self.path))
            self.stop.wait(self.period)
        self.peak = max(self.peak, tree_bytes(self.path))


def mem_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


PRETOUCH = "import sys, numpy as np; np.ones(int(sys.argv[1]) // 8)"


def pretouch(nbytes):
    """Writes `nbytes` of fresh memory in a child process that then exits.

    On this VM the first write to guest memory the host has taken back costs
    ~0.55 s of system time per GB, and whichever contender ran first after a
    large free paid it (sys time 0.4-12 s for the same W4 run). Touching the
    memory a run will need just before it makes the runs comparable.
    """
    n = min(nbytes, mem_available() - (3 << 30))
    if n > 0:
        subprocess.run(["/usr/bin/python3", "-c", PRETOUCH, str(n)], check=True)
    return max(n, 0)


def timed_run(cmd, src, work, dropped_flags, touch_bytes=0):
    """One fresh process on a dropped-then-warmed page cache."""
    clear_dir(work)
    dropped_flags.append(drop_caches())
    warm(src)
    touched = pretouch(touch_bytes) if touch_bytes else 0
    load = loadavg()[0]
    poller = Poller(work)
    poller.start()
    out = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + cmd, capture_output=True, text=True)
    poller.stop.set()
    poller.join()
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}): {out.stderr[-3000:]}")
    wall, rss_kb = out.stderr.strip().splitlines()[-1].split()
    return {"wall_s": float(wall), "rss_bytes": int(rss_kb) * 1024, "work_peak_bytes": poller.peak,
            "work_after_bytes": tree_bytes(work), "load_1min": load, "pretouched_bytes": touched,
            "stdout": out.stdout,
            "stderr": out.stderr}


def make_source(strata, path, shape, chunks, seed):
    if not os.path.exists(os.path.join(path, ".zarray")):
        log(f"writing source {path}")
        subprocess.run([strata, "random", path, "--shape", ",".join(map(str, shape)), "--chunks",
                        ",".join(map(str, chunks)), "--seed", str(seed), "--overwrite"],
                       check=True)
    return tree_bytes(path)


def alternate(name, cmds, dsts, hists, src, work, dropped, touch, reps, annotate):
    """Runs each contender's command (cmds: name -> argv) `reps` times,
    alternating the order within each rep, each on a fresh destination and
    history file; annotate(run, history_path) adds figures from the history.
    Returns the runs per contender and whether the first rep's outputs are
    the same chunk files ("chunk files identical" or "OUTPUTS DIFFER")."""
    names = list(cmds)
    runs = {e: [] for e in names}
    check = None
    for rep in range(reps):
        order = names if rep % 2 == 0 else names[::-1]
        for e in order:
            shutil.rmtree(dsts[e], ignore_errors=True)
            if os.path.exists(hists[e]):
                os.remove(hists[e])
            log(f"{name} rep {rep + 1}/{reps}: {e}")
            r = timed_run(cmds[e], src, work, dropped, touch)
            r.pop("stdout")
            r.pop("stderr")
            annotate(r, hists[e])
            runs[e].append(r)
            log(f"  {r['wall_s']:.2f} s, rss {r['rss_bytes'] / 1e6:.0f} MB, intermediates on "
                f"disk {r.get('intermediate_bytes_written')} B, work peak "
                f"{r['work_peak_bytes'] / 1e6:.0f} MB, load {r['load_1min']}")
        if rep == 0:
            same = all(same_chunks(dsts[names[0]], dsts[e]) for e in names[1:])
            check = "chunk files identical" if same else "OUTPUTS DIFFER"
            log(f"  check: {check}")
    return runs, check


def same_chunks(a, b):
    """True when directories a and b hold the same chunk files, byte for byte."""
    fa = sorted(f for f in os.listdir(a) if not f.startswith("."))
    fb = sorted(f for f in os.listdir(b) if not f.startswith("."))
    if fa != fb:
        return False
    match, mismatch, errors = filecmp.cmpfiles(a, b, fa, shallow=False)
    return not mismatch and not errors


def verify(strata, src, dst, reference=None):
    if reference and same_chunks(dst, reference):
        return "chunk files identical to the bound's output"
    out = subprocess.run([strata, "verify", src, dst], capture_output=True, text=True)
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 else (
        f"FAILED: {out.stdout.strip()[:500]} {out.stderr.strip()[:500]}")


def summarize(runs):
    walls = [r["wall_s"] for r in runs]
    rss = [r["rss_bytes"] for r in runs]
    return {"median_s": statistics.median(walls), "times_s": walls,
            "peak_rss_bytes": max(rss), "median_rss_bytes": int(statistics.median(rss)),
            "work_peak_bytes": max(r["work_peak_bytes"] for r in runs),
            "work_after_bytes": max(r["work_after_bytes"] for r in runs),
            "load_1min": [r["load_1min"] for r in runs],
            "pretouched_bytes": [r["pretouched_bytes"] for r in runs]}


def strata_plan(strata, src, chunks, opts):
    cmd = [strata, "plan", src, "--chunks", ",".join(map(str, chunks))] + opts + ["--json"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        return {"command": " ".join(cmd), "error": out.stderr.strip()}
    p = json.loads(out.stdout)
    return {"command": " ".join(cmd), "ram_tier_capacity": p.get("ram_tier_capacity"),
            "ops": [{k: op.get(k) for k in ("array", "op", "kind", "tasks", "projected_mem",
                                             "tier", "tier_reason", "note")}
                    for op in p.get("ops", [])], "decisions": p.get("decisions")}


def parse_run_plan(text):
    """The plan and summary that a non-quiet `strata rechunk` prints."""
    lines = text.splitlines()
    keep = [l for l in lines if re.match(r"^(plan:|RAM for|array-\d+|tier |fused |rechunked )", l)]
    tiers = {}
    for l in keep:
        m = re.match(r"^tier (array-\d+) -> (\w+): (.*)$", l)
        if m:
            tiers[m.group(1)] = {"tier": m.group(2), "reason": m.group(3)}
    notes = [re.sub(r"\s+", " ", l) for l in keep if l.startswith("array-") and "rechunk" in l]
    summary = next((l for l in keep if l.startswith("rechunked ")), "")
    ram = next((l for l in keep if l.startswith("RAM for")), "")
    return {"ram_for_intermediates": ram, "tiers": tiers, "rechunk_op": notes, "summary": summary,
            "plan_text": keep}


def touch_for(args, logical):
    """Bytes to pretouch before a run on an array of `logical` bytes: what the
    run may newly touch (decoded chunks, page cache of the output, spill)."""
    return int(2.2 * logical) + (1 << 30) if args.pretouch else 0


def run_workload(args, name, shape, src_chunks, dst_chunks, allowed_mem, seed, dropped):
    d = os.path.join(args.dir, name)
    os.makedirs(d, exist_ok=True)
    strata = os.path.join(args.bin, "strata")
    src = os.path.join(d, "src.zarr")
    work = os.path.join(d, "work")
    stored = make_source(strata, src, shape, src_chunks, seed)
    chunks_arg = ",".join(map(str, dst_chunks))
    dsts = {c: os.path.join(d, f"out_{c}.zarr") for c in ("strata", "dask", "bound")}
    cmds = {
        "strata": [strata, "rechunk", src, dsts["strata"], "--chunks", chunks_arg,
                   "--allowed-mem", allowed_mem, "--workers", "2", "--work-dir", work, "--quiet"],
        "dask": ["/usr/bin/python3", "-c", DASK, src, dsts["dask"], json.dumps(dst_chunks), "2"],
        "bound": [args.bound, src, "--chunks", chunks_arg, dsts["bound"], "--threads", "2"],
    }
    runs = {c: [] for c in cmds}
    checks = {}
    order = ["bound", "strata", "dask"]
    for rep in range(args.reps):
        for c in order[rep % 3:] + order[:rep % 3]:  # rotated, so no contender always goes first
            shutil.rmtree(dsts[c], ignore_errors=True)
            log(f"{name} rep {rep + 1}/{args.reps}: {c}")
            r = timed_run(cmds[c], src, work, dropped, touch_for(args, 8 * shape[0] * shape[1]))
            r["dst_bytes"] = tree_bytes(dsts[c])
            if c == "bound":
                r["phases"] = json.loads(r["stdout"].strip().splitlines()[-1])
            runs[c].append(r)
            log(f"  {r['wall_s']:.2f} s, rss {r['rss_bytes'] / 1e6:.0f} MB, "
                f"work peak {r['work_peak_bytes'] / 1e6:.0f} MB, load {r['load_1min']}")
        if rep == 0:  # rep 0 runs every contender in order, so all outputs exist now
            checks["bound"] = verify(strata, src, dsts["bound"])
            for c in ("strata", "dask"):
                checks[c] = verify(strata, src, dsts[c], dsts["bound"])
            log(f"  checks: {checks}")
    res = {c: summarize(runs[c]) for c in runs}
    for c in runs:
        res[c]["dst_bytes"] = runs[c][-1]["dst_bytes"]
    res["bound"]["phases_s"] = [{k: r["phases"][k] for k in
                                 ("read_decode_s", "gather_encode_write_s", "total_s")}
                                for r in runs["bound"]]
    s, k, b = res["strata"], res["dask"], res["bound"]
    row = {
        "workload": name, "shape": shape, "source_chunks": src_chunks, "target_chunks": dst_chunks,
        "allowed_mem": allowed_mem, "logical_bytes": 8 * shape[0] * shape[1],
        "source_stored_bytes": stored,
        "commands": {c: " ".join(v if c != "dask" else v[:2] + ["<DASK script>"] + v[3:])
                     for c, v in cmds.items()},
        "plan": strata_plan(strata, src, dst_chunks, ["--allowed-mem", allowed_mem, "--workers",
                                                      "2", "--work-dir", work]),
        "results": res, "output_checks": checks,
        "ratios": {
            "strata_over_dask_time": round(s["median_s"] / k["median_s"], 3),
            "strata_over_bound_time": round(s["median_s"] / b["median_s"], 3),
            "dask_over_strata_time": round(k["median_s"] / s["median_s"], 3),
            "strata_over_dask_peak_rss": round(s["peak_rss_bytes"] / k["peak_rss_bytes"], 3),
            "strata_over_bound_peak_rss": round(s["peak_rss_bytes"] / b["peak_rss_bytes"], 3),
        },
    }
    shutil.rmtree(d, ignore_errors=True)
    return row


def run_cliff(args, dropped):
    d = os.path.join(args.dir, "W5")
    os.makedirs(d, exist_ok=True)
    strata = os.path.join(args.bin, "strata")
    work = os.path.join(d, "work")
    tsm = args.total_system_mem
    tsm_bytes = int(float(tsm.rstrip("GB")) * GB)
    opts = ["--allowed-mem", args.cliff_allowed_mem, "--total-system-mem", tsm, "--workers", "2",
            "--work-dir", work]
    points = []
    for size_gb in args.cliff_sizes_gb:
        rows = int(round(size_gb * GB / (20000 * 8)))
        shape, src_chunks, dst_chunks = [rows, 20000], [rows, 500], [500, 20000]
        src = os.path.join(d, f"src_{rows}.zarr")
        dsts = {c: os.path.join(d, f"out_{c}.zarr") for c in ("strata", "bound", "dask")}
        stored = make_source(strata, src, shape, src_chunks, seed=5)
        logical = rows * 20000 * 8
        # Not --quiet: the run prints the plan it executes (strata plan has no
        # DST, so it plans a returned result instead of to_zarr; see README).
        contenders = {}
        if args.cliff_bound:
            contenders["bound"] = [args.bound, src, "--chunks", "500,20000", dsts["bound"],
                                   "--threads", "2"]
        contenders["strata"] = [strata, "rechunk", src, dsts["strata"], "--chunks",
                                "500,20000"] + opts
        if args.cliff_dask:
            contenders["dask"] = ["/usr/bin/python3", "-c", DASK, src, dsts["dask"], "[500,20000]",
                                  "2"]
        point = {"size_gb": logical / GB, "rows": rows, "size_over_total_system_mem":
                 round(logical / tsm_bytes, 4), "source_stored_bytes": stored,
                 "strata_plan_json": strata_plan(strata, src, dst_chunks, opts)}
        rr = {c: [] for c in contenders}
        order = list(contenders)
        for rep in range(args.cliff_reps):
            for c in order[rep % len(order):] + order[:rep % len(order)]:
                shutil.rmtree(dsts[c], ignore_errors=True)
                log(f"W5 {logical / GB:.2f} GB rep {rep + 1}: {c}")
                r = timed_run(contenders[c], src, work, dropped, touch_for(args, logical))
                rr[c].append(r)
                log(f"  {r['wall_s']:.2f} s, rss {r['rss_bytes'] / 1e6:.0f} MB, "
                    f"work peak {r['work_peak_bytes'] / 1e6:.0f} MB, load {r['load_1min']}")
                if c == "strata" and rep == 0:
                    point["strata_run_plan"] = parse_run_plan(r["stdout"])
            if rep == 0:  # every contender has run once
                point["output_check"] = verify(
                    strata, src, dsts["strata"], dsts["bound"] if args.cliff_bound else None)
                log(f"  {point['output_check']}")
        for c in contenders:
            summ = summarize(rr[c])
            summ["s_per_gb"] = round(summ["median_s"] / (logical / GB), 3)
            summ["peak_rss_over_total_system_mem"] = round(summ["peak_rss_bytes"] / tsm_bytes, 3)
            point[c] = summ
        run_tiers = {a: t["tier"] for a, t in point.get("strata_run_plan", {})
                     .get("tiers", {}).items()}
        pj = point["strata_plan_json"]
        plan_tiers = {op["array"]: op["tier"] for op in pj.get("ops", []) if op["tier"] != "-"}
        point["strata_plan_json_agrees_with_run"] = "error" not in pj and plan_tiers == run_tiers
        shutil.rmtree(src, ignore_errors=True)
        for dst in dsts.values():
            shutil.rmtree(dst, ignore_errors=True)
        points.append(point)
    spg = [p["strata"]["s_per_gb"] for p in points]
    worst = max((max(spg[i] / spg[j] for j in (i - 1, i + 1) if 0 <= j < len(spg))
                 for i in range(len(spg))), default=None) if len(spg) > 1 else None
    shutil.rmtree(d, ignore_errors=True)
    return {"shape": "(R, 20000) float64", "source_chunks": "(R, 500)",
            "target_chunks": [500, 20000], "allowed_mem": args.cliff_allowed_mem,
            "total_system_mem": tsm, "reps": args.cliff_reps,
            "strata_command": "strata rechunk SRC DST --chunks 500,20000 " + " ".join(opts)
                              + " (not --quiet: the printed plan is recorded)",
            "points": points,
            "max_strata_s_per_gb_over_a_neighbour": round(worst, 3) if worst else None}


def render_svg(cliff, path):
    pts = cliff["points"]
    W, H, L, R, T, B = 640, 400, 70, 150, 40, 60
    xs = [p["size_over_total_system_mem"] for p in pts]
    series = [("strata", "#1f77b4"), ("bound", "#2ca02c"), ("dask", "#d62728")]
    ys = [p[c]["s_per_gb"] for p in pts for c, _ in series if c in p]
    xmax = max(xs) * 1.05
    ymax = max(ys) * 1.15
    sx = lambda x: L + (W - L - R) * x / xmax
    sy = lambda y: H - B - (H - T - B) * y / ymax
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
         f'font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{L}" y="22" font-size="14">Rechunk cliff (W5): seconds per GB vs array size / '
         f'total_system_mem ({cliff["total_system_mem"]}), allowed_mem {cliff["allowed_mem"]}</text>',
         f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/>',
         f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>']
    step = 0.5
    x = 0.0
    while x <= xmax:
        o.append(f'<line x1="{sx(x):.1f}" y1="{H - B}" x2="{sx(x):.1f}" y2="{H - B + 5}" '
                 f'stroke="black"/><text x="{sx(x):.1f}" y="{H - B + 18}" '
                 f'text-anchor="middle">{x:g}</text>')
        x += step
    ystep = [v for v in (0.5, 1, 2, 5, 10, 20, 50) if ymax / v <= 8][0]
    y = 0.0
    while y <= ymax:
        o.append(f'<line x1="{L - 5}" y1="{sy(y):.1f}" x2="{W - R}" y2="{sy(y):.1f}" '
                 f'stroke="#ddd"/><text x="{L - 8}" y="{sy(y) + 4:.1f}" '
                 f'text-anchor="end">{y:g}</text>')
        y += ystep
    o.append(f'<text x="{(L + W - R) / 2}" y="{H - 8}" text-anchor="middle">array size / '
             f'total_system_mem</text>')
    o.append(f'<text x="{L - 8}" y="{H - B + 30}" text-anchor="end" font-size="9" '
             f'fill="#888">load</text>')
    ram = re.search(r"([0-9.]+) GB", pts[0].get("strata_run_plan", {})
                    .get("ram_for_intermediates", ""))
    if ram:  # where the exchange stops fitting in the RAM tier
        xr = float(ram.group(1)) * GB / (float(cliff["total_system_mem"].rstrip("GB")) * GB)
        o.append(f'<line x1="{sx(xr):.1f}" y1="{T}" x2="{sx(xr):.1f}" y2="{H - B}" '
                 f'stroke="#999" stroke-dasharray="4,3"/><text x="{sx(xr) + 4:.1f}" y="{T + 12}" '
                 f'font-size="10" fill="#666">RAM tier full ({ram.group(1)} GB)</text>')
    o.append(f'<text x="18" y="{(T + H - B) / 2}" text-anchor="middle" '
             f'transform="rotate(-90 18 {(T + H - B) / 2})">wall seconds per GB</text>')
    for i, (c, color) in enumerate(series):
        cp = [(p["size_over_total_system_mem"], p[c]["s_per_gb"], p) for p in pts if c in p]
        if not cp:
            continue
        o.append('<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>'.format(
            color, " ".join(f"{sx(a):.1f},{sy(b):.1f}" for a, b, _ in cp)))
        for a, b, p in cp:
            o.append(f'<circle cx="{sx(a):.1f}" cy="{sy(b):.1f}" r="4" fill="{color}"/>')
            if c == "strata":
                tiers = p.get("strata_run_plan", {}).get("tiers", {})
                tier = ",".join(sorted({t["tier"] for t in tiers.values()})) or "?"
                note = " ".join(p.get("strata_run_plan", {}).get("rechunk_op", []))
                if "spill" in note:
                    tier = "spill"
                elif tier == "memory":
                    tier = "RAM"
                o.append(f'<text x="{sx(a):.1f}" y="{sy(b) - 8 - 11 * (pts.index(p) % 2):.1f}" '
                         f'text-anchor="middle" font-size="10" fill="{color}">{tier}</text>')
                load = statistics.median(p[c]["load_1min"])
                o.append(f'<text x="{sx(a):.1f}" y="{H - B + 30}" text-anchor="middle" '
                         f'font-size="9" fill="#888">{load:.1f}</text>')
        ly = T + 20 + 18 * i
        o.append(f'<line x1="{W - R + 15}" y1="{ly}" x2="{W - R + 35}" y2="{ly}" stroke="{color}" '
                 f'stroke-width="2"/><text x="{W - R + 40}" y="{ly + 4}">{c}</text>')
    for k, line in enumerate(["labels: where the", "exchanged pieces went", "(RAM, or RAM + spill",
                              "to local disk)", "grey: median 1-min", "load avg of the runs",
                              "(2 shared cores)"]):
        o.append(f'<text x="{W - R + 15}" y="{T + 80 + 13 * k}" font-size="10">{line}</text>')
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", nargs="+", default=["W1", "W4", "W5"])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cliff-reps", type=int, default=3)
    ap.add_argument("--cliff-sizes-gb", type=float, nargs="+",
                    default=[1, 1.25, 1.5, 2, 3, 4, 6])
    ap.add_argument("--total-system-mem", default="2GB")
    ap.add_argument("--cliff-allowed-mem", default="400MB")
    ap.add_argument("--cliff-bound", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--cliff-dask", action=argparse.BooleanOptionalAction, default=False)
    ap.add_argument("--pretouch", action=argparse.BooleanOptionalAction, default=True,
                    help="touch the memory a run will need just before it (see pretouch())")
    ap.add_argument("--bin", default="build/release/bin")
    ap.add_argument("--bound", default="build/release/bench/rechunk_bound")
    ap.add_argument("--dir", default="build/bench/rechunk")
    ap.add_argument("--svg", default="bench/results/rechunk_cliff.svg")
    ap.add_argument("--svg-from", metavar="JSON", help="only re-render the chart from a result")
    args = ap.parse_args()
    if args.svg_from:
        with open(args.svg_from) as f:
            render_svg(json.load(f)["cliff"], args.svg)
        return
    os.makedirs(args.dir, exist_ok=True)
    start = time.time()
    load_start = loadavg()
    dropped = []
    rows, cliff = [], None
    for name in ("W1", "W4"):
        if name in args.workloads:
            rows.append(run_workload(args, name, *WORKLOADS[name], dropped))
    if "W5" in args.workloads:
        cliff = run_cliff(args, dropped)
        render_svg(cliff, args.svg)
    with open("/proc/meminfo") as f:
        mem_total = int(f.readline().split()[1]) * 1024
    doc = {
        "benchmark": "rechunk (issue 4)",
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": {"cores": os.cpu_count(), "mem_total_bytes": mem_total,
                    "loadavg_start": load_start, "loadavg_end": loadavg(),
                    "note": "2 cores shared with other engineers' builds and tests: noisy"},
        "page_cache": ("dropped before every timed run, then the source read once (warm "
                       "source, free memory for writes)" if dropped and all(dropped)
                       else "could NOT be dropped before every run (not root?)"),
        "page_cache_dropped_every_run": bool(dropped) and all(dropped),
        "memory_pretouched": args.pretouch and (
            "before every run a child process wrote and freed min(2.2 x array bytes + 1 GiB, "
            "MemAvailable - 3 GiB) of memory: on this VM first writes to memory the host took "
            "back cost ~0.55 s sys per GB and otherwise land on whichever contender runs "
            "first (W4 measured 2.8-14 s for the same command without this)"),
        "timing": "wall seconds and peak RSS from /usr/bin/time -f '%e %M' of a fresh process",
        "GB": GB, "reps": args.reps, "dask_script": DASK.strip(), "workloads": rows,
        "cliff": cliff,
        "benchmark_seconds": round(time.time() - start, 1),
    }
    json.dump(doc, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
