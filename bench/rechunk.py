#!/usr/bin/env python3
"""Rechunk workloads of issue 4: Strata against Dask, the peers and this machine's bound,
under the protocol of bench/README.md.

    .venv/bin/python bench/rechunk.py [--workloads W1 W4 W5] [--reps 5] [--prepared]
        [--cliff-dask] [--peers [dask-cluster rechunker cubed]]
        [--peers-python bench/.venv-peers/bin/python]
        [--bin build/release/bin] [--bound build/release/bench/rechunk_bound]
        [--dir build/bench/rechunk] [--out bench/results/rechunk.json]
    .venv/bin/python bench/rechunk.py --smoke            # 1 rep, tiny sizes, no check

Every source is a float64 Zarr v2 array written once by `strata random` (blosc
lz4 clevel 5 byte shuffle, zarr-python's default codec) and kept between reps.
Contenders, every one writing DST with the source's codec:
  strata: `strata rechunk SRC DST --chunks .. --allowed-mem .. --work-dir WORK
          --history H --quiet` (its default workers: the available cores);
  dask:   Dask from the .venv (requirements/dev.txt) as its users run it, with nothing configured
          (threaded scheduler, default worker count: the CPU count),
          da.from_zarr(SRC).rechunk(chunks).to_zarr(DST);
  bound:  bench/rechunk_bound.cc with 2 threads: read + decode every source
          chunk into RAM, gather + encode + write every target chunk, no
          planning or safety.
The peers of W1 and W4 (--peers, default all), each run by the interpreter
of bench/.venv-peers (--peers-python; bench/peers-env.sh makes it) as a
fresh process, as its users run it:
  dask-cluster: Dask on a running 2-worker LocalCluster (127.0.0.1, worker
          processes, threads_per_worker=1, Dask's default memory limit: the
          machine's memory split between the workers), started once before
          the first rep and closed after the last (its start-up is not timed:
          a user with a running cluster; its processes' CPU counts with the
          contender's), da.from_zarr(SRC).rechunk(chunks).to_zarr(DST) with
          Dask's default method (the JSON records the one the graph was built
          with, rechunk_method, and array.rechunk.method); peak RSS: the
          client's plus every worker's (total_peak_rss_bytes);
  rechunker: rechunker.rechunk(zarr.open_array(SRC), chunks, max_mem=allowed_mem,
          DST, temp_store=WORK/temp.zarr).execute() (its default executor: Dask's
          threaded scheduler), run by bench/.venv-rechunker (--rechunker-python):
          every rechunker release needs zarr-python < 3;
  cubed:  cubed.Spec(work_dir=WORK, allowed_mem, executor_name="processes",
          executor_options={"max_workers": 2}), cubed.from_zarr(SRC).rechunk(chunks),
          cubed.to_zarr(DST).
rechunker's and Cubed's intermediate bytes (intermediate_bytes_written) are
what their work dir holds after the run (neither removes its intermediates),
beside its polled peak (work_peak_bytes).
Workloads:
  W1  10000x10000, (10000,1000) -> (1000,10000), allowed_mem 400MB (Cubed #502)
  W4  20000x20000, (20000,500) -> (500,20000), allowed_mem 1GB
  W5  the cliff: (R,20000), (R,500) -> (500,20000) with R chosen so that the
      array is 0.5x..3x --total-system-mem (2GB), allowed_mem 400MB (source
      codec --cliff-codec: blosc is read in place, with no intermediate;
      zstd:level=1 is published to RAM and spilled past it); Strata
      and the bound (Dask with --cliff-dask), seconds per GB, with the tier
      each plan chose. Strata runs here without --quiet, so that the plan it
      executes (tiers, spill or multistage, and why) is recorded from its own
      output; `strata plan --json` is recorded too, with whether it agrees.
Before each run (untimed): the contender's previous output and work dir are
removed and the source is read once (warm input, for everyone alike). With
--prepared every contender also runs as "<name> (prepared)": page cache
dropped (root only), source warmed, and about as much memory as the run will
touch written and freed by a child process first, which takes the VM's
first-touch cost (~0.55 s/GB here) out: a separate column, never the headline.
After the first kept rep each output is checked: the bound's with `strata
verify` against the source (W1, W4), the others by comparing their chunk
files byte for byte with the bound's (same codec, same bytes), falling back to
`strata verify`. Reports medians with min-max and per-rep ratios; never a
pass/fail. Tables: bench/report.py bench/results/rechunk.json.
"""
import argparse
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol as P  # noqa: E402

GB = 10**9

DASK = r'''
import json, sys, dask.array as da
x = da.from_zarr(sys.argv[1])
x.rechunk(tuple(json.loads(sys.argv[3]))).to_zarr(sys.argv[2], overwrite=True)
'''

# The peers (bench/.venv-peers, bench/peers-env.sh), each run as its users run
# it, each printing one JSON line of what it chose.
# Dask on a running 2-worker LocalCluster (dask_rechunk.py's Cluster), with
# the rechunk method Dask picks by default on a distributed Client: the
# configured array.rechunk.method and the method the graph was built with.
DASK_CLUSTER = r'''
import json, sys, dask, distributed, dask.array as da
address, src, dst, chunks = sys.argv[1:5]
client = distributed.Client(address)
configured = dask.config.get("array.rechunk.method", None)
y = da.from_zarr(src).rechunk(tuple(json.loads(chunks)))
names = " ".join(str(k) for k in y.dask.layers)
method = "p2p" if "p2p" in names else "tasks"
y.to_zarr(dst, overwrite=True)
print(json.dumps({"rechunk_method": method, "rechunk_method_configured": configured}))
client.close()
'''

# rechunker with its default executor (Dask's threaded scheduler), max_mem
# Strata's allowed_mem, its temp store in the contender's work dir.
RECHUNKER = r'''
import json, sys, zarr, rechunker
src, dst, chunks, max_mem, temp = sys.argv[1:6]
source = zarr.open_array(src, mode="r")
plan = rechunker.rechunk(source, tuple(json.loads(chunks)), int(max_mem), dst, temp_store=temp)
plan.execute()
print(json.dumps({"rechunker": rechunker.__version__}))
'''

# Cubed with its processes executor (2 worker processes), allowed_mem
# Strata's, every intermediate in work_dir. With a 6th argument "probe":
# whether Cubed's planner accepts the rechunk at that allowed_mem (the plan
# made and checked by Plan._finalize, what compute validates first; nothing
# computed), printing "ok" or the refusal.
CUBED = r'''
import json, sys, cubed
src, dst, chunks, allowed, work = sys.argv[1:6]
if __name__ == "__main__":
    spec = cubed.Spec(work_dir=work, allowed_mem=int(allowed), executor_name="processes",
                      executor_options={"max_workers": 2})
    x = cubed.from_zarr(src, spec=spec)
    if sys.argv[6:] == ["probe"]:
        out = cubed.to_zarr(x.rechunk(tuple(json.loads(chunks))), dst, compute=False)
        try:
            out._plan._finalize().validate()   # Array.plan is a method of Cubed 0.27
            print("ok")
        except ValueError as e:
            print(e)
    else:
        cubed.to_zarr(x.rechunk(tuple(json.loads(chunks))), dst)
        print(json.dumps({"cubed": cubed.__version__}))
'''


def cubed_allowed_mem(peers_py, src, chunks_json, allowed, work):
    """(the allowed_mem Cubed runs at, its refusal of ours or None): ours
    when its planner accepts it, else the smallest of 1.25x, 1.5x, 2x, 3x,
    4x ours it accepts (Cubed refuses the seed case W1 at 400MB: Cubed's
    issue 502), else ours (the run then fails as Cubed does)."""
    refusal = None
    for factor in (1, 1.25, 1.5, 2, 3, 4):
        mem = str(int(int(allowed) * factor))
        out = subprocess.run([peers_py, "-c", CUBED, src, os.path.join(work, "probe.zarr"),
                              chunks_json, mem, work, "probe"], capture_output=True, text=True)
        said = (out.stdout.strip().splitlines() or [out.stderr.strip()[-300:]])[-1]
        shutil.rmtree(os.path.join(work, "probe.zarr"), ignore_errors=True)
        if said == "ok":
            return mem, refusal
        if factor == 1:
            refusal = said
    return allowed, refusal


PEERS = ("dask-cluster", "rechunker", "cubed")
# what each peer's interpreter must import, and the versions it reports
PEERS_PROBE = {
    "dask-cluster": "import json, dask, distributed; print(json.dumps({'dask': dask.__version__, "
                    "'distributed': distributed.__version__}))",
    "rechunker": "import json, rechunker, zarr; print(json.dumps({'rechunker': "
                 "rechunker.__version__, 'zarr (rechunker)': zarr.__version__}))",
    "cubed": "import json, cubed; print(json.dumps({'cubed': cubed.__version__}))",
}

# The in-RAM rechunk workloads, shared with bench/processes.py and
# bench/mpi.py: shape, source chunks, target chunks, allowed_mem, seed.
WORKLOADS = {
    "W1": ([10000, 10000], [10000, 1000], [1000, 10000], "400MB", 1),
    "W4": ([20000, 20000], [20000, 500], [500, 20000], "1GB", 4),
}
# The same shapes scaled down for --smoke (seconds, not minutes).
SMOKE_WORKLOADS = {
    "W1": ([1000, 1000], [1000, 100], [100, 1000], "40MB", 1),
    "W4": ([2000, 2000], [2000, 50], [50, 2000], "40MB", 4),
}
CLIFF = {"cols": 20000, "col_chunk": 500, "total_system_mem": "2GB", "allowed_mem": "400MB",
         "fractions": [0.5, 0.625, 0.75, 1.0, 1.5, 2.0, 3.0]}
SMOKE_CLIFF = {"cols": 2000, "col_chunk": 50, "total_system_mem": "128MB", "allowed_mem": "32MB",
               "fractions": [0.25, 1.0, 2.0]}


def workloads(args):
    return SMOKE_WORKLOADS if args.smoke else WORKLOADS


def executor_bench_args(default_dir):
    """The options of bench/processes.py and bench/mpi.py, parsed."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", nargs="+", default=["W1", "W4"], choices=sorted(WORKLOADS))
    ap.add_argument("--bin", default="build/release/bin")
    ap.add_argument("--dir", default=default_dir)
    P.add_arguments(ap)
    return ap.parse_args()


def make_source(strata, path, shape, chunks, seed, codec=None):
    if not os.path.exists(os.path.join(path, ".zarray")):
        P.log(f"writing source {path}")
        subprocess.run([strata, "random", path, "--shape", ",".join(map(str, shape)), "--chunks",
                        ",".join(map(str, chunks)), "--seed", str(seed), "--overwrite"] +
                       (["--codec", codec] if codec else []), check=True)
    return P.tree_bytes(path)


def same_chunks(a, b):
    """True when directories a and b hold the same chunk files, byte for byte."""
    try:
        fa = sorted(f for f in os.listdir(a) if not f.startswith("."))
        fb = sorted(f for f in os.listdir(b) if not f.startswith("."))
    except FileNotFoundError:
        return False
    if fa != fb:
        return False
    match, mismatch, errors = filecmp.cmpfiles(a, b, fa, shallow=False)
    return not mismatch and not errors


def verify(strata, src, dst, reference=None):
    """A one-line verdict on dst: identical chunk files to reference, or
    strata verify's answer against src (starting with FAILED when it is not equal)."""
    if reference and same_chunks(dst, reference):
        return "chunk files identical to the reference output"
    out = subprocess.run([strata, "verify", src, dst], capture_output=True, text=True)
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 else (
        f"FAILED: {out.stdout.strip()[:500]} {out.stderr.strip()[:500]}")


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


def history_end(path):
    """The last compute_end line of a --history file (None if there is none)."""
    end, workers_rss = None, 0
    try:
        with open(path) as f:
            for line in f:
                j = json.loads(line)
                if j.get("event") == "compute_end":
                    end = j
                elif j.get("event") == "task":
                    workers_rss = max(workers_rss, j.get("worker_rss", 0))
    except FileNotFoundError:
        return None
    if end is not None:
        end["max_worker_rss"] = workers_rss
    return end


HISTORY_FIGURES = ("seconds", "tasks", "peak_pool_bytes", "intermediate_bytes_written",
                   "peak_resident_intermediate_bytes", "bytes_between_ranks")


def add_history(run, path):
    """Puts a run's compute_end figures into run["extra"] (compute_s, ...)."""
    end = history_end(path)
    if end is None:
        raise P.ContenderFailed(f"{path}: no compute_end in the history file")
    for k in HISTORY_FIGURES:
        if k in end:
            run["extra"]["compute_s" if k == "seconds" else k] = end[k]
    if end.get("max_worker_rss"):
        run["extra"]["max_worker_rss_bytes"] = end["max_worker_rss"]
    if "rank_peak_pool_bytes" in end:
        run["extra"]["max_rank_peak_pool_bytes"] = max(end["rank_peak_pool_bytes"])


def remove(*paths):
    for p in paths:
        P.remove_path(p)


def touch_bytes(logical):
    """What a run on an array of `logical` bytes may newly touch (decoded
    chunks, page cache of the output, spill, and the process itself):
    pre-touched in --prepared."""
    return int(2.2 * logical) + ((1 << 30) if logical >= (256 << 20) else (64 << 20))


class Outputs:
    """Each contender's destination, history file and work dir; outputs are
    removed right after their run once the first kept rep has been checked
    (so the page cache does not fill with old outputs)."""

    def __init__(self, d):
        self.d, self.checked = d, False

    def paths(self, name):
        slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
        return (os.path.join(self.d, f"out_{slug}.zarr"), os.path.join(self.d, f"hist_{slug}.jsonl"),
                os.path.join(self.d, f"work_{slug}"))


def variants(args):
    return ["user"] + (["prepared"] if args.prepared else [])


def contender(name, variant, argv_for, src, outputs, logical, finish=None, env=None):
    """A Contender whose setup removes its outputs and warms the source (and,
    prepared, drops the page cache and pre-touches memory), and whose finish
    records the output's size, then removes it once outputs were checked."""
    cname = name if variant == "user" else f"{name} ({variant})"
    dst, hist, work = outputs.paths(cname)

    def setup():
        remove(dst, hist)
        P.clear_dir(work)
        if variant == "prepared":
            P.drop_caches()
        P.warm(src)
        if variant == "prepared":
            P.pretouch(touch_bytes(logical))

    def done(run, completed):
        run["extra"]["dst_bytes"] = P.tree_bytes(dst)
        run["extra"]["work_after_bytes"] = P.tree_bytes(work)
        if finish:
            finish(run, completed, hist)
        if outputs.checked:
            remove(dst)

    return P.Contender(cname, argv_for(dst, hist, work), setup=setup, finish=done, env=env,
                       variant=variant, watch_dirs={"work": work},
                       label=name), dst


def check_outputs(strata, src, dsts, reference):
    """Verdicts for every output: the reference (the bound's) against the
    source, the others byte for byte against it or by strata verify."""
    checks = {}
    if reference:
        checks[reference] = verify(strata, src, dsts[reference])
    for name, dst in dsts.items():
        if name != reference:
            checks[name] = verify(strata, src, dst, dsts.get(reference))
    P.log(f"  checks: {checks}")
    return checks


def checked_case(b, name, contenders, dsts, strata, src, outputs, reference, ratios,
                 ratio_keys, describe, helper_pids=()):
    """A case whose outputs are checked after its first rep (against
    `reference`'s, check_outputs) and then removed. Returns the case, its
    checks in."""
    checks = {}

    def after_rep(slot, rep):
        if not outputs.checked:
            checks.update(check_outputs(strata, src, dsts, reference))
            outputs.checked = True
            remove(*dsts.values())

    case = b.case(name, contenders, ratios=ratios, ratio_keys=ratio_keys, after_rep=after_rep,
                  describe=describe, helper_pids=helper_pids)
    case["checks"] = checks
    return case


def executor_case(b, args, name, contenders, dsts, strata, src, outputs, executor, describe):
    """An executor against threads on one workload (checked_case): the ratio
    executor/threads of wall time, compute time and peak RSS, and of the
    prepared variants when they run."""
    ratios = [(executor, "threads")]
    if args.prepared:
        ratios.append((f"{executor} (prepared)", "threads (prepared)"))
    return checked_case(b, name, contenders, dsts, strata, src, outputs, "threads", ratios,
                        ("wall_s", "compute_s", "peak_rss_bytes"), describe)


def mem_bytes(text):
    """'400MB' -> 400000000 (the units strata's --allowed-mem takes here: MB, GB)."""
    m = re.fullmatch(r"([0-9.]+)(MB|GB)", text)
    if not m:
        raise SystemExit(f"rechunk.py: cannot read the memory size {text!r} (want e.g. 400MB)")
    return int(float(m.group(1)) * {"MB": 10**6, "GB": GB}[m.group(2)])


def peer_python(args, peer):
    """The interpreter a peer runs in: rechunker's own venv (it needs zarr < 3), else the peers'."""
    return os.path.abspath(args.rechunker_python if peer == "rechunker" else args.peers_python)


def peers_ready(args):
    """The peers' versions, or a one-line SystemExit saying why one cannot run."""
    versions = {}
    for peer in args.peers:
        python = peer_python(args, peer)
        if not os.path.exists(python):
            raise SystemExit(f"rechunk.py: no interpreter for {peer} at {python}: make it with "
                             "bench/peers-env.sh, or leave the peers out with --peers (no names)")
        probe = subprocess.run([python, "-c", PEERS_PROBE[peer]], capture_output=True, text=True)
        if probe.returncode != 0:
            raise SystemExit(f"rechunk.py: {python} cannot run {peer}: "
                             f"{(probe.stderr.strip().splitlines() or ['?'])[-1]}")
        versions.update(json.loads(probe.stdout))
    return versions


def printed(run, completed):
    """The JSON line a peer printed last, into run["extra"]."""
    lines = completed.stdout.strip().splitlines()
    if lines:
        run["extra"].update(json.loads(lines[-1]))


def work_written(run, completed, hist):
    """A peer's intermediate bytes: what its work dir holds after the run
    (rechunker's temp store, Cubed's intermediate Zarr arrays), or the polled
    peak (work_peak_bytes) when that is more (a peer that deletes them)."""
    printed(run, completed)
    run["extra"]["intermediate_bytes_written"] = max(run["extra"]["work_after_bytes"],
                                                     run["extra"].get("work_peak_bytes", 0))


def run_workload(b, args, name, cluster=None):
    shape, src_chunks, dst_chunks, allowed_mem, seed = workloads(args)[name]
    d = os.path.join(os.path.abspath(args.dir), name)
    os.makedirs(d, exist_ok=True)
    strata = os.path.join(args.bin, "strata")
    src = os.path.join(d, "src.zarr")
    stored = make_source(strata, src, shape, src_chunks, seed)
    logical = 8 * shape[0] * shape[1]
    chunks_arg = ",".join(map(str, dst_chunks))
    chunks_json = json.dumps(dst_chunks)
    allowed = str(mem_bytes(allowed_mem))
    peers_py = peer_python(args, "cubed")
    outputs = Outputs(d)
    cubed_mem, cubed_refusal = allowed, None
    if "cubed" in args.peers:
        probe_dir = os.path.join(d, "cubed-probe")
        os.makedirs(probe_dir, exist_ok=True)
        cubed_mem, cubed_refusal = cubed_allowed_mem(peers_py, src, chunks_json, allowed, probe_dir)
        shutil.rmtree(probe_dir, ignore_errors=True)
    argv = {
        "strata": lambda dst, hist, work: [
            strata, "rechunk", src, dst, "--chunks", chunks_arg, "--allowed-mem", allowed_mem,
            "--work-dir", work, "--history", hist, "--quiet"],
        "dask": lambda dst, hist, work: [sys.executable, "-c", DASK, src, dst, chunks_json],
        "bound": lambda dst, hist, work: [args.bound, src, "--chunks", chunks_arg, dst,
                                          "--threads", "2"],
        "dask-cluster": lambda dst, hist, work: [
            peers_py, "-c", DASK_CLUSTER, cluster.info["address"], src, dst, chunks_json],
        "rechunker": lambda dst, hist, work: [
            peer_python(args, "rechunker"), "-c", RECHUNKER, src, dst, chunks_json, allowed,
            os.path.join(work, "temp.zarr")],
        "cubed": lambda dst, hist, work: [peers_py, "-c", CUBED, src, dst, chunks_json,
                                          cubed_mem, work],
    }

    def cluster_finish(run, completed, hist):
        printed(run, completed)
        peaks = cluster.peaks()
        run["extra"].update(peaks)
        # the client's peak plus every worker's: what the contender held at most
        run["extra"]["total_peak_rss_bytes"] = (run["peak_rss_bytes"] +
                                                sum(peaks["worker_peak_rss_each_bytes"]))

    finish = {
        "strata": lambda run, c, hist: add_history(run, hist),
        "dask": None,
        "bound": lambda run, c, hist: run["extra"].update(
            {f"phase_{k}": v for k, v in json.loads(c.stdout.strip().splitlines()[-1]).items()
             if isinstance(v, (int, float))}),
        "dask-cluster": cluster_finish,
        "rechunker": work_written,
        "cubed": work_written,
    }
    peers = list(args.peers)
    contenders, dsts = [], {}
    for variant in variants(args):
        for c in ("bound", "strata", "dask", *peers):
            cont, dst = contender(c, variant, argv[c], src, outputs, logical, finish[c])
            if c == "dask-cluster":
                setup = cont.setup

                def reset(setup=setup):
                    setup()
                    cluster.reset_peaks()
                cont.setup = reset
            contenders.append(cont)
            dsts[cont.name] = dst
    ratios = [("dask", "strata"), ("strata", "bound"), ("strata", "dask")]
    ratios += [(p, "strata") for p in peers]
    if args.prepared:
        ratios += [("dask (prepared)", "strata (prepared)"), ("strata (prepared)", "bound (prepared)"),
                   ("strata", "strata (prepared)")]
        ratios += [(f"{p} (prepared)", "strata (prepared)") for p in peers]
    describe = {"workload": name, "shape": shape, "source_chunks": src_chunks,
                "target_chunks": dst_chunks, "allowed_mem": allowed_mem,
                "logical_bytes": logical, "source_stored_bytes": stored, "peers": peers}
    if "cubed" in peers:
        describe["cubed_allowed_mem"] = int(cubed_mem)
        describe["cubed_refused_ours"] = cubed_refusal
    if cluster:
        describe["cluster"] = {
            "startup": "started once before the first rep and closed after the last: its "
                       "start-up is not timed (a user with a running cluster)",
            **{k: cluster.info[k] for k in ("memory_limits", "threads")}}
    # The idle cluster's processes (scheduler, nannies, workers) are the
    # dask-cluster contender's, not a disturbance of the others' runs.
    case = checked_case(b, name, contenders, dsts, strata, src, outputs, "bound", ratios,
                        ("wall_s", "peak_rss_bytes"), describe,
                        helper_pids=cluster.helper_pids if cluster else ())
    case["plan"] = strata_plan(strata, src, dst_chunks, ["--allowed-mem", allowed_mem, "--work-dir",
                                                         outputs.paths("strata")[2]])
    shutil.rmtree(d, ignore_errors=True)


def run_cliff(b, args):
    cfg = SMOKE_CLIFF if args.smoke else CLIFF
    cfg = dict(cfg, total_system_mem=args.total_system_mem or cfg["total_system_mem"],
               allowed_mem=args.cliff_allowed_mem or cfg["allowed_mem"],
               fractions=args.cliff_fractions or cfg["fractions"])
    d = os.path.join(os.path.abspath(args.dir), "W5")
    os.makedirs(d, exist_ok=True)
    strata = os.path.join(args.bin, "strata")
    tsm = cfg["total_system_mem"]
    tsm_bytes = int(float(re.sub(r"[A-Za-z]+$", "", tsm)) *
                    {"GB": GB, "MB": 10**6}[re.search(r"[A-Za-z]+$", tsm).group(0)])
    cols, col_chunk = cfg["cols"], cfg["col_chunk"]
    target = [col_chunk, cols]
    b.doc["cliff"] = {"shape": f"(R, {cols}) float64", "source_chunks": f"(R, {col_chunk})",
                      "target_chunks": target, "allowed_mem": cfg["allowed_mem"],
                      "total_system_mem": tsm, "total_system_mem_bytes": tsm_bytes,
                      "source_codec": args.cliff_codec or "blosc (strata random's default)",
                      "strata_command": f"strata rechunk SRC DST --chunks {col_chunk},{cols} "
                                        f"--allowed-mem {cfg['allowed_mem']} --total-system-mem "
                                        f"{tsm} --work-dir WORK --history H (not --quiet: the "
                                        "printed plan is recorded)"}
    for frac in cfg["fractions"]:
        rows = int(round(frac * tsm_bytes / (cols * 8)))
        logical = rows * cols * 8
        shape, src_chunks = [rows, cols], [rows, col_chunk]
        src = os.path.join(d, f"src_{rows}.zarr")
        stored = make_source(strata, src, shape, src_chunks, seed=5, codec=args.cliff_codec)
        outputs = Outputs(d)
        opts = ["--allowed-mem", cfg["allowed_mem"], "--total-system-mem", tsm]
        chunks_arg = f"{col_chunk},{cols}"
        plan_seen = {}

        def strata_finish(run, c, hist, plan_seen=plan_seen):
            add_history(run, hist)
            if "run_plan" not in plan_seen:
                plan_seen["run_plan"] = parse_run_plan(c.stdout)

        argv = {
            "bound": lambda dst, hist, work: [args.bound, src, "--chunks", chunks_arg, dst,
                                              "--threads", "2"],
            "strata": lambda dst, hist, work: [strata, "rechunk", src, dst, "--chunks", chunks_arg,
                                               *opts, "--work-dir", work, "--history", hist],
            "dask": lambda dst, hist, work: [sys.executable, "-c", DASK, src, dst,
                                             json.dumps(target)],
        }
        names = ["bound", "strata"] + (["dask"] if args.cliff_dask else [])
        contenders, dsts = [], {}
        for variant in variants(args):
            for c in names:
                cont, dst = contender(c, variant, argv[c], src, outputs, logical,
                                      strata_finish if c == "strata" else None)
                per_gb = (lambda run, completed, f=cont.finish:
                          (f(run, completed), run["extra"].update(
                              s_per_gb=run["wall_s"] / (logical / GB))))
                cont.finish = per_gb
                contenders.append(cont)
                dsts[cont.name] = dst
        checks = {}

        def after_rep(slot, rep, outputs=outputs, dsts=dsts, checks=checks, src=src):
            if not outputs.checked:
                checks.update(check_outputs(strata, src, dsts, "bound"))
                outputs.checked = True
                remove(*dsts.values())

        ratios = [("strata", "bound")] + ([("dask", "strata")] if args.cliff_dask else [])
        if args.prepared:
            ratios += [("strata (prepared)", "bound (prepared)")]
        case = b.case(f"W5 {frac:g}x", contenders, ratios=ratios, after_rep=after_rep, describe={
            "workload": "W5", "size_over_total_system_mem": round(logical / tsm_bytes, 4),
            "size_gb": logical / GB, "rows": rows, "shape": shape, "source_chunks": src_chunks,
            "target_chunks": target, "logical_bytes": logical, "source_stored_bytes": stored})
        case["checks"] = checks
        case["strata_run_plan"] = plan_seen.get("run_plan")
        pj = strata_plan(strata, src, target, opts + ["--work-dir", outputs.paths("strata")[2]])
        case["strata_plan_json"] = pj
        run_tiers = {a: t["tier"] for a, t in (plan_seen.get("run_plan") or {})
                     .get("tiers", {}).items()}
        plan_tiers = {op["array"]: op["tier"] for op in pj.get("ops", []) if op["tier"] != "-"}
        case["strata_plan_json_agrees_with_run"] = "error" not in pj and plan_tiers == run_tiers
        shutil.rmtree(src, ignore_errors=True)
    shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", nargs="+", default=["W1", "W4", "W5"],
                    choices=["W1", "W4", "W5"])
    ap.add_argument("--cliff-fractions", type=float, nargs="+", default=None,
                    help="array sizes as fractions of --total-system-mem (default "
                         "0.5 0.625 0.75 1 1.5 2 3)")
    ap.add_argument("--total-system-mem", default=None, help="W5's (default 2GB)")
    ap.add_argument("--cliff-allowed-mem", default=None, help="W5's (default 400MB)")
    ap.add_argument("--cliff-dask", action="store_true", help="W5 with Dask too")
    ap.add_argument("--cliff-codec", default=None,
                    help="W5's source codec (strata random --codec; default blosc, which the "
                         "planner reads in place: zstd makes it publish the source, so that the "
                         "memory and spill tiers are what is measured)")
    ap.add_argument("--bin", default="build/release/bin")
    ap.add_argument("--bound", default="build/release/bench/rechunk_bound")
    ap.add_argument("--dir", default="build/bench/rechunk")
    ap.add_argument("--peers", nargs="*", default=list(PEERS), choices=PEERS,
                    help="W1, W4's peers run by --peers-python (default all; no names: none)")
    ap.add_argument("--peers-python", default="bench/.venv-peers/bin/python",
                    help="the interpreter of Dask's cluster and Cubed (bench/peers-env.sh)")
    ap.add_argument("--rechunker-python", default="bench/.venv-rechunker/bin/python",
                    help="rechunker's interpreter (zarr-python 2; bench/peers-env.sh)")
    ap.add_argument("--svg", default=None,
                    help="also draw the cliff chart (bench/report.py --svg does it from the JSON)")
    P.add_arguments(ap)
    args = ap.parse_args()
    versions = peers_ready(args)  # before the benchmark starts: a missing peer is a usage error
    with P.Bench("rechunk", args, scratch=os.path.abspath(args.dir),
                 description="strata rechunk against Dask and the machine's bound (issue 4)") as b:
        b.doc["dask_script"] = DASK.strip()
        b.doc["dask_defaults"] = P.dask_defaults()
        b.doc["peers"] = {"versions": versions,
                          "python": {p: peer_python(args, p) for p in args.peers},
                          "scripts": {"dask-cluster": DASK_CLUSTER.strip(),
                                      "rechunker": RECHUNKER.strip(), "cubed": CUBED.strip()}}
        cluster = None
        if "dask-cluster" in args.peers and {"W1", "W4"} & set(args.workloads):
            import dask_rechunk as dr  # it imports this module: imported here, not at the top
            cluster = dr.Cluster(os.environ, python=args.peers_python, threads_per_worker=1)
        try:
            for name in ("W1", "W4"):
                if name in args.workloads:
                    run_workload(b, args, name, cluster)
        finally:
            if cluster:
                cluster.stop()
        if "W5" in args.workloads:
            run_cliff(b, args)
    if args.svg and "W5" in args.workloads:
        import report
        report.cliff_svg(b.doc, args.svg)


if __name__ == "__main__":
    main()
