#!/usr/bin/env python3
"""strata copy of the 800 MB seed array, against baselines measured in the
same reps, under the protocol of bench/README.md.

    .venv/bin/python bench/copy_bench.py [--reps 5] [--prepared] [--strata build/release/bin/strata]
        [--dir build/bench/copy] [--out bench/results/copy_bench.json]
    .venv/bin/python bench/copy_bench.py --smoke

Workloads: `strata copy` keeping the codec (bytes moved and checked, not
re-encoded), re-encoding to zstd level 1, and decompressing to raw. Baselines:
`cp -r` of the same directory (the file system's own copy), writing the same
number of raw bytes with dd (the write bound), and a numpy copy of the same
bytes in memory (its own timing of np.copyto, median of 5 after a warm-up,
printed by the process; the process's wall time is recorded too). All six are
contenders of one case, interleaved in rotated order. Before every run the
previous output is removed and the source read once (warm input); with
--prepared each also runs with the page cache dropped first (the earlier
headline of this benchmark: on this VM writing into a page cache full of old
pages is 3-4x slower than into free memory), as a separate column. After the
first kept rep each output is checked (`strata verify` against the source;
cp's files byte for byte). Reports medians with min-max and per-rep ratios to
`cp -r`; never a pass/fail. --smoke: a 1000 x 1000 array.
"""
import argparse
import filecmp
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--strata", default="build/release/bin/strata")
    ap.add_argument("--dir", default="build/bench/copy")
    P.add_arguments(ap)
    args = ap.parse_args()
    n = 1000 if args.smoke else 10000
    shape, chunks = [n, n], [n, n // 10]
    logical = n * n * 8
    d = os.path.abspath(args.dir)
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
                if name.startswith("strata"):
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
        case = b.case("copy", contenders, ratios=ratios, ratio_keys=("time_s",),
                      after_rep=after_rep, describe={
            "shape": shape, "chunks": chunks, "dtype": "float64",
            "codec": "blosc lz4 clevel 5 byte shuffle", "logical_bytes": logical,
            "stored_bytes": stored, "labels": {c.name: c.label for c in contenders}})
        case["checks"] = checks
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
