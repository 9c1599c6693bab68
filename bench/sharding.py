#!/usr/bin/env python3
"""Sharded Zarr v3 writes and partial reads, under the protocol of
bench/README.md.

    .venv/bin/python bench/sharding.py [--reps 5] [--strata build/release/bin/strata]
        [--dir build/bench/sharding] [--out bench/results/sharding.json]
    .venv/bin/python bench/sharding.py --smoke

Case "copy": `strata copy` of the 800 MB seed array (10000 x 10000 float64,
chunks (10000, 1000), blosc) into a sharded v3 array -- shards (10000,
10000), inner chunks (1000, 1000) -- against the unsharded write of the same
data in the same reps: `strata copy --zarr-format 3` (chunks as the source's).
Case "rechunk": `strata rechunk --chunks 1000,1000 --shards 10000,10000`
against `strata rechunk --chunks 1000,1000 --zarr-format 3` (unsharded).
Goal: sharded <= 1.2x unsharded (per-rep ratio). After the first kept rep
every output is checked with `strata verify` against the source.

Partial reads (a figure, not a timed case): the bytes reading a 1% region
(1000 x 1000, aligned to the inner chunks at (4000, 4000), and unaligned at
(4500, 4500), which touches four inner chunks) of the sharded output costs,
measured by bench/region_read (ZarrArray::ReadRegion: each touched shard's
index, the inner chunks the region covers whole, and of the others only the
blosc blocks holding the region; the bytes the process read from files,
rchar of /proc/self/io) -- against the array's stored bytes. Goal: <= 2%.
An unaligned region of 1% needs half of each of four inner chunks' rows
(C order), so 2% is its floor with these inner chunks.

Under the threads executor the one shard is split into parts (a task per
part of whole inner chunks, each appended to the shard's file as it is
encoded; the plan's decisions say so): one task per shard would leave a
worker idle.

--smoke: a 1000 x 1000 array, shards (1000, 1000), inner chunks (100, 100).
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol as P  # noqa: E402


def region_read(tool, array_dir, origin, shape):
    """What a region read costs, measured: bench/region_read (ZarrArray::
    ReadRegion) reports the bytes the process read from files meanwhile
    (rchar of /proc/self/io)."""
    r = subprocess.run([tool, array_dir, ",".join(map(str, origin)), ",".join(map(str, shape))],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--strata", default="build/release/bin/strata")
    ap.add_argument("--region-read", default="build/release/bench/region_read",
                    help="bench/region_read.cc's binary (the partial-read figure)")
    ap.add_argument("--dir", default="build/bench/sharding")
    P.add_arguments(ap)
    args = ap.parse_args()
    n = 1000 if args.smoke else 10000
    inner = n // 10
    d = os.path.abspath(args.dir)
    with P.Bench("sharding", args, scratch=d,
                 description="sharded v3 writes against unsharded ones; partial reads") as b:
        os.makedirs(d, exist_ok=True)
        src = os.path.join(d, "seed.zarr")
        subprocess.run([args.strata, "random", src, "--shape", f"{n},{n}", "--chunks",
                        f"{n},{n // 10}", "--seed", "1", "--overwrite"], check=True)
        stored = P.tree_bytes(src)
        shards = f"{n},{n}"
        chunks = f"{inner},{inner}"
        cases = {
            "copy": [
                ("copy sharded", ["copy", src, "{dst}", "--shards", shards, "--chunks", chunks]),
                ("copy unsharded", ["copy", src, "{dst}", "--zarr-format", "3"]),
            ],
            "rechunk": [
                ("rechunk sharded", ["rechunk", src, "{dst}", "--chunks", chunks, "--shards",
                                     shards, "--quiet"]),
                ("rechunk unsharded", ["rechunk", src, "{dst}", "--chunks", chunks,
                                       "--zarr-format", "3", "--quiet"]),
            ],
        }
        sharded_out = None
        for case_name, workloads in cases.items():
            contenders, outs, checks = [], {}, {}
            state = {"checked": False}
            for name, argv in workloads:
                dst = os.path.join(d, name.replace(" ", "_") + ".zarr")
                outs[name] = dst

                def setup(dst=dst):
                    P.remove_path(dst)
                    P.warm(src)

                def finish(run, done, dst=dst):
                    run["extra"]["dst_bytes"] = P.tree_bytes(dst)

                contenders.append(P.Contender(
                    name, [args.strata] + [a.replace("{dst}", dst) for a in argv],
                    setup=setup, finish=finish, label="strata " + " ".join(argv[:1] + argv[3:])))

            def after_rep(slot, rep, outs=outs, checks=checks, state=state):
                if state["checked"]:
                    return
                for name, dst in outs.items():
                    r = subprocess.run([args.strata, "verify", src, dst], capture_output=True,
                                       text=True)
                    checks[name] = ((r.stdout.strip().splitlines() or [""])[0]
                                    if r.returncode == 0 else f"FAILED: {r.stdout[:300]}")
                P.log(f"  checks: {checks}")
                state["checked"] = True

            sharded = workloads[0][0]
            case = b.case(case_name, contenders, ratios=[(sharded, workloads[1][0])],
                          after_rep=after_rep, describe={
                "shape": [n, n], "source_chunks": [n, n // 10], "dtype": "float64",
                "shards": [n, n], "inner_chunks": [inner, inner], "stored_bytes": stored,
                "goal": "sharded <= 1.2x unsharded (per-rep ratio of wall time)"})
            case["checks"] = checks
            if case_name == "copy":
                sharded_out = outs[sharded]
                # A fresh sharded output for the partial-read figure.
                P.remove_path(sharded_out)
                subprocess.run([args.strata] + [a.replace("{dst}", sharded_out)
                                                for a in workloads[0][1]], check=True)
        # Partial reads: 1% of the elements, aligned and not.
        side = n // 10
        total = P.tree_bytes(sharded_out)
        reads = {}
        for name, origin in [("aligned", 4 * side), ("unaligned", int(4.5 * side))]:
            lo = [origin, origin]
            hi = [origin + side, origin + side]
            measured = region_read(args.region_read, sharded_out, lo, [side, side])
            read = measured["file_bytes_read"]
            reads[name] = {"origin": lo, "shape": [side, side], "bytes_read": read,
                           "fraction_of_bytes_read": read / total, "measured": measured}
            P.log(f"partial read ({name}): {read} of {total} bytes ({100 * read / total:.2f}%)")
        b.doc["partial_read"] = {
            "regions": reads, "region_fraction_of_elements": side * side / (n * n),
            "array_stored_bytes": total, "goal": "<= 2% of the array's bytes (aligned region)",
            "how": "measured: bench/region_read reads the region with ZarrArray::ReadRegion "
                   "(each touched shard's index, the inner chunks covered whole, and of the "
                   "others only the blosc blocks holding the region) and reports the bytes the "
                   "process read from files meanwhile (rchar of /proc/self/io); "
                   "src/strata/storage/zarr/sharding_test.cc checks the ranges with a counting "
                   "store",
        }
        P.clear_dir(d)


if __name__ == "__main__":
    main()
