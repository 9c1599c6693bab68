#!/usr/bin/python3
"""Sharded Zarr v3 writes and partial reads, under the protocol of
bench/README.md.

    /usr/bin/python3 bench/sharding.py [--reps 5] [--strata build/release/bin/strata]
        [--dir build/bench/sharding] [--out bench/results/sharding.json]
    /usr/bin/python3 bench/sharding.py --smoke

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
(4500, 4500), which touches four inner chunks) of the sharded output costs -- each touched
shard's index plus the inner chunks the region touches, exactly the ranges
ZarrArray::ReadRegion asks the store for (sharding_test.cc checks the same
ranges with a counting store) -- against the array's stored bytes. Goal:
<= 2%.

--smoke: a 1000 x 1000 array, shards (1000, 1000), inner chunks (100, 100).
"""
import argparse
import json
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol as P  # noqa: E402


def shard_read_bytes(array_dir, region_lo, region_hi):
    """Bytes a reader of region [lo, hi) fetches from a sharded array: each
    touched shard's index, then the inner chunks the region touches (exactly
    what ZarrArray::ReadRegion asks the store for)."""
    meta = json.load(open(os.path.join(array_dir, "zarr.json")))
    shard = meta["chunk_grid"]["configuration"]["chunk_shape"]
    conf = meta["codecs"][0]["configuration"]
    inner = conf["chunk_shape"]
    crc = any(c["name"] == "crc32c" for c in conf["index_codecs"])
    at_end = conf.get("index_location", "end") == "end"
    per = [s // i for s, i in zip(shard, inner)]
    n_inner = per[0] * per[1]
    index_size = 16 * n_inner + (4 if crc else 0)
    total = 0
    for si in range(region_lo[0] // shard[0], (region_hi[0] - 1) // shard[0] + 1):
        for sj in range(region_lo[1] // shard[1], (region_hi[1] - 1) // shard[1] + 1):
            key = os.path.join(array_dir, "c", str(si), str(sj))
            with open(key, "rb") as f:
                blob = f.read()
            table = blob[-index_size:] if at_end else blob[:index_size]
            total += index_size
            for ii in range(per[0]):
                for jj in range(per[1]):
                    lo0 = si * shard[0] + ii * inner[0]
                    lo1 = sj * shard[1] + jj * inner[1]
                    if lo0 >= region_hi[0] or lo0 + inner[0] <= region_lo[0]:
                        continue
                    if lo1 >= region_hi[1] or lo1 + inner[1] <= region_lo[1]:
                        continue
                    k = ii * per[1] + jj
                    offset, nbytes = struct.unpack_from("<QQ", table, 16 * k)
                    if offset != 2**64 - 1:
                        total += nbytes
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--strata", default="build/release/bin/strata")
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
            read = shard_read_bytes(sharded_out, lo, hi)
            reads[name] = {"origin": lo, "shape": [side, side], "bytes_read": read,
                           "fraction_of_bytes_read": read / total}
            P.log(f"partial read ({name}): {read} of {total} bytes ({100 * read / total:.2f}%)")
        b.doc["partial_read"] = {
            "regions": reads, "region_fraction_of_elements": side * side / (n * n),
            "array_stored_bytes": total, "goal": "<= 2% of the array's bytes (aligned region)",
            "how": "the touched shards' indexes plus the inner chunks the region touches, "
                   "counted from the shard indexes (what ZarrArray::ReadRegion fetches; "
                   "src/strata/storage/zarr/sharding_test.cc checks the same with a counting "
                   "store)",
        }
        P.clear_dir(d)


if __name__ == "__main__":
    main()
