#!/usr/bin/env python3
"""strata copy of the 800 MB seed array, against peers and baselines measured in the
same reps, under the protocol of bench/README.md.

    .venv/bin/python bench/copy_bench.py [--reps 5] [--prepared] [--strata build/release/bin/strata]
        [--peers-python bench/.venv-peers/bin/python | --no-peers]
        [--dir build/bench/copy] [--out bench/results/copy_bench.json]
    .venv/bin/python bench/copy_bench.py --smoke

Workloads: `strata copy` keeping the codec (bytes moved and checked, not
re-encoded), re-encoding to zstd level 1, and decompressing to raw. Baselines:
`cp -r` of the same directory (the file system's own copy), writing the same
number of raw bytes with dd (the write bound), and a numpy copy of the same
bytes in memory (its own timing of np.copyto, median of 5 after a warm-up,
printed by the process; the process's wall time is recorded too). Peers,
run by the interpreter of bench/.venv-peers (--peers-python; bench/peers-env.sh
makes it; --no-peers leaves them out), recompressing to the target of `strata
copy --codec zstd:level=1` (a Zarr v2 array, same chunks, zstd level 1):
zarr-python 3 + numcodecs (every chunk read and written by one assignment,
`out[...] = src[...]`, with zarr's own async concurrency defaults) and
TensorStore (its zarr driver on both sides, `out.write(src)`). All are
contenders of one case, interleaved in rotated order. Before every run the
previous output is removed and the source read once (warm input); with
--prepared each also runs with the page cache dropped first (the earlier
headline of this benchmark: on this VM writing into a page cache full of old
pages is 3-4x slower than into free memory), as a separate column. After the
first kept rep each output is checked (`strata verify` against the source;
cp's files byte for byte). Reports medians with min-max and per-rep ratios to
`cp -r` (and the peers' to `strata copy zstd`); never a pass/fail. --smoke: a
1000 x 1000 array.
"""
import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol as P  # noqa: E402

MEMCPY = r'''
import statistics, sys, time, numpy as np
a = np.ones(int(sys.argv[1]) // 8); b = np.empty_like(a); np.copyto(b, a)
ts = []
for _ in range(5):
    t0 = time.perf_counter(); np.copyto(b, a); ts.append(time.perf_counter() - t0)
print(statistics.median(ts))
'''

# The peers (bench/.venv-peers, bench/peers-env.sh) recompressing the seed
# array to the target codec of `strata copy --codec zstd:level=1`: a Zarr v2
# array of the same shape and chunks whose compressor is zstd level 1.
# zarr-python 3 + numcodecs: every chunk read and written by one assignment,
# with zarr's own async concurrency (its defaults).
ZARR = r'''
import json, sys, numcodecs, zarr
src, dst = sys.argv[1:3]
a = zarr.open_array(src, mode="r")
out = zarr.create_array(dst, shape=a.shape, chunks=a.chunks, dtype=a.dtype, zarr_format=2,
                        compressors=numcodecs.Zstd(level=1), filters=None,
                        fill_value=a.fill_value)
out[...] = a[...]
print(json.dumps({"zarr": zarr.__version__, "async_concurrency":
                  zarr.config.get("async.concurrency")}))
'''

# TensorStore: its zarr driver on both sides, the copy a write of the source
# TensorStore into the target (TensorStore streams it chunk by chunk).
TENSORSTORE = r'''
import importlib.metadata, json, sys, tensorstore as ts
src, dst = sys.argv[1:3]
a = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": src}}, read=True).result()
meta = a.spec().to_json()["metadata"]
out = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": dst},
               "metadata": {"shape": meta["shape"], "chunks": meta["chunks"],
                            "dtype": meta["dtype"], "order": meta["order"],
                            "fill_value": meta["fill_value"], "filters": None,
                            "compressor": {"id": "zstd", "level": 1}}},
              create=True, delete_existing=True).result()
out.write(a).result()
print(json.dumps({"tensorstore": importlib.metadata.version("tensorstore")}))
'''
PEERS_PROBE = "import zarr, numcodecs, tensorstore"


def peers_ready(python):
    """None when `python` imports the peers, else why not (one line)."""
    if not os.path.exists(python):
        return f"no peers interpreter at {python} (bench/peers-env.sh makes it)"
    probe = subprocess.run([python, "-c", PEERS_PROBE], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"{python} cannot import the peers: " + \
            (probe.stderr.strip().splitlines() or ["?"])[-1]
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--strata", default="build/release/bin/strata")
    ap.add_argument("--dir", default="build/bench/copy")
    ap.add_argument("--peers-python", default="bench/.venv-peers/bin/python",
                    help="the interpreter with zarr-python and TensorStore (bench/peers-env.sh)")
    ap.add_argument("--no-peers", action="store_true",
                    help="leave out the zarr-python and TensorStore contenders")
    P.add_arguments(ap)
    args = ap.parse_args()
    n = 1000 if args.smoke else 10000
    shape, chunks = [n, n], [n, n // 10]
    logical = n * n * 8
    d = os.path.abspath(args.dir)
    why = None if args.no_peers else peers_ready(args.peers_python)
    if why:  # before the benchmark starts: a missing peer is a usage error
        raise SystemExit(f"copy_bench.py: {why}; or run with --no-peers")
    with P.Bench("copy_bench", args, scratch=d,
                 description="strata copy of the seed array against cp, dd and memcpy") as b:
        os.makedirs(d, exist_ok=True)
        src = os.path.join(d, "seed.zarr")
        subprocess.run([args.strata, "random", src, "--shape", f"{n},{n}", "--chunks",
                        f"{n},{n // 10}", "--seed", "1", "--overwrite"], check=True)
        stored = P.tree_bytes(src)
        workloads = [
            ("strata copy", "strata copy (same codec: moved + checked)",
             lambda dst: [args.strata, "copy", src, dst]),
            ("strata copy zstd", "strata copy --codec zstd:level=1",
             lambda dst: [args.strata, "copy", src, dst, "--codec", "zstd:level=1"]),
            ("strata copy none", "strata copy --codec none (decompress)",
             lambda dst: [args.strata, "copy", src, dst, "--codec", "none"]),
            ("cp -r", "baseline: cp -r (same stored bytes)", lambda dst: ["cp", "-r", src, dst]),
            ("dd", f"baseline: dd of {logical // 10**6} MB of zeros (write bound)",
             lambda dst: ["dd", "if=/dev/zero", f"of={dst}", "bs=8M",
                          f"count={max(1, logical // (8 << 20))}", "status=none"]),
            ("memcpy", f"baseline: memcpy of {logical // 10**6} MB in memory",
             lambda dst: [sys.executable, "-c", MEMCPY, str(logical)]),
        ]
        if not args.no_peers:
            py = os.path.abspath(args.peers_python)
            workloads[3:3] = [
                ("zarr-python zstd", "zarr-python 3 + numcodecs to zstd level 1 (its defaults)",
                 lambda dst: [py, "-c", ZARR, src, dst]),
                ("tensorstore zstd", "TensorStore (zarr driver) to zstd level 1",
                 lambda dst: [py, "-c", TENSORSTORE, src, dst]),
            ]
        state = {"checked": False}
        contenders, outs = [], {}
        for variant in ["user"] + (["prepared"] if args.prepared else []):
            for name, label, argv in workloads:
                cname = name if variant == "user" else f"{name} (prepared)"
                dst = os.path.join(d, "out_" + cname.replace(" ", "_").replace("(", "")
                                   .replace(")", "").replace("-", ""))

                def setup(dst=dst, variant=variant):
                    P.remove_path(dst)
                    if variant == "prepared":
                        P.drop_caches()
                    P.warm(src)

                def finish(run, done, name=name, dst=dst):
                    # time_s: the figure of the table (memcpy's own timing of the copy,
                    # the others' wall time)
                    run["extra"]["time_s"] = run["wall_s"]
                    if name == "memcpy":
                        run["extra"]["memcpy_s"] = float(done.stdout.strip().splitlines()[-1])
                        run["extra"]["time_s"] = run["extra"]["memcpy_s"]
                    elif name.startswith(("zarr-python", "tensorstore")):
                        run["extra"].update(json.loads(done.stdout.strip().splitlines()[-1]))
                    run["extra"]["dst_bytes"] = (P.tree_bytes(dst) if os.path.isdir(dst) else
                                                 os.path.getsize(dst) if os.path.exists(dst)
                                                 else 0)
                    if state["checked"]:
                        P.remove_path(dst)

                contenders.append(P.Contender(cname, argv(dst), setup=setup, finish=finish,
                                              variant=variant, label=label))
                outs[cname] = (name, dst)
        checks = {}

        def after_rep(slot, rep):
            if state["checked"]:
                return
            for cname, (name, dst) in outs.items():
                if name.startswith(("strata", "zarr-python", "tensorstore")):
                    r = subprocess.run([args.strata, "verify", src, dst], capture_output=True,
                                       text=True)
                    checks[cname] = (r.stdout.strip().splitlines() or [""])[0] \
                        if r.returncode == 0 else f"FAILED: {r.stdout.strip()[:300]}"
                elif name == "cp -r":
                    files = sorted(os.listdir(src))
                    _, bad, err = filecmp.cmpfiles(src, dst, files, shallow=False)
                    checks[cname] = ("files identical to the source" if not bad and not err
                                     else f"FAILED: {bad + err}")
                elif name == "dd":
                    size = os.path.getsize(dst)
                    checks[cname] = f"{size} bytes written"
            P.log(f"  checks: {checks}")
            state["checked"] = True
            for name, dst in outs.values():
                P.remove_path(dst)

        ratios = [(c.name, "cp -r") for c in contenders if c.name != "cp -r"]
        if args.prepared:
            ratios = [(c.name, "cp -r (prepared)" if c.variant == "prepared" else "cp -r")
                      for c in contenders if not c.name.startswith("cp -r")]
        # the peers against the same re-encoding by strata, within each rep
        ratios += [(c.name, "strata copy zstd" + (" (prepared)" if c.variant == "prepared"
                                                  else ""))
                   for c in contenders if c.name.startswith(("zarr-python", "tensorstore"))]
        case = b.case("copy", contenders, ratios=ratios, ratio_keys=("time_s",),
                      after_rep=after_rep, describe={
            "shape": shape, "chunks": chunks, "dtype": "float64",
            "codec": "blosc lz4 clevel 5 byte shuffle", "logical_bytes": logical,
            "stored_bytes": stored, "labels": {c.name: c.label for c in contenders}})
        case["checks"] = checks
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
