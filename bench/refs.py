#!/usr/bin/env python3
"""The same workloads on two builds of Strata, in one interleaved run: did a
change move the figures? Under the protocol of bench/README.md.

    .venv/bin/python bench/refs.py --before REF --after REF [--workloads W1 W4]
        [--executor threads] [--reps 5] [--dir build/bench/refs] [--out bench/results/refs.json]
    .venv/bin/python bench/refs.py --before REF --smoke       # 1 rep, tiny sizes

Each ref (a commit, branch or tag; --after defaults to HEAD) is checked out
into a git worktree under --dir and its `strata` built there with the release
preset (ccache makes a ref already built elsewhere cheap), so that both
binaries are what the refs build, side by side. The sources are the
workloads of bench/rechunk.py (W1, W4: float64 Zarr v2, blosc, written once
by the --after binary and shared). Contenders, per workload: `strata rechunk
SRC DST --chunks .. --allowed-mem .. --work-dir WORK --executor E --quiet`
of the before and the after build, interleaved and rotated in every rep as
the protocol does. The ratio after/before is taken within each rep. After
the first kept rep both outputs must hold the same chunk files (the engine
writes the same bytes whatever the build). Never a pass/fail.
"""
import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol as P  # noqa: E402
import rechunk as R  # noqa: E402


def git(*args, cwd=P.REPO):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def build_ref(ref, root):
    """The `strata` binary of `ref`, built in a worktree under `root`."""
    commit = git("rev-parse", "--verify", f"{ref}^{{commit}}")
    tree = os.path.join(root, commit[:12])
    if not os.path.exists(os.path.join(tree, ".git")):
        P.log(f"checking out {ref} ({commit[:12]}) into {tree}")
        subprocess.run(["git", "worktree", "add", "--detach", tree, commit], cwd=P.REPO,
                       check=True, capture_output=True)
    binary = os.path.join(tree, "build", "release", "bin", "strata")
    env = dict(os.environ)
    env.setdefault("CMAKE_CXX_COMPILER_LAUNCHER", "ccache")
    P.log(f"building strata at {commit[:12]}")
    subprocess.run(["cmake", "--preset", "release", "-DSTRATA_BUILD_TESTS=OFF",
                    "-DSTRATA_BUILD_BENCH=OFF"], cwd=tree, check=True, env=env,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", "--preset", "release", "--target", "strata"], cwd=tree,
                   check=True, env=env, stdout=subprocess.DEVNULL)
    return commit, binary


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, help="the ref to compare against")
    ap.add_argument("--after", default="HEAD")
    ap.add_argument("--workloads", nargs="+", default=["W1", "W4"], choices=sorted(R.WORKLOADS))
    ap.add_argument("--executor", default="threads")
    ap.add_argument("--dir", default="build/bench/refs")
    P.add_arguments(ap)
    args = ap.parse_args()
    root = os.path.abspath(args.dir)
    os.makedirs(root, exist_ok=True)
    builds = {}
    for label, ref in (("before", args.before), ("after", args.after)):
        commit, binary = build_ref(ref, os.path.join(root, "trees"))
        builds[label] = {"ref": ref, "commit": commit, "binary": binary}
    data = os.path.join(root, "data")
    with P.Bench("refs", args, scratch=data) as b:
        b.doc["builds"] = {k: {"ref": v["ref"], "commit": v["commit"]} for k, v in builds.items()}
        b.doc["executor"] = args.executor
        checks = {}
        for name in args.workloads:
            shape, src_chunks, dst_chunks, allowed, seed = R.workloads(args)[name]
            src = os.path.join(data, f"{name}-src.zarr")
            nbytes = R.make_source(builds["after"]["binary"], src, shape, src_chunks, seed)
            contenders = []
            outputs = {}
            for label, build in builds.items():
                dst = os.path.join(data, f"{name}-{label}.zarr")
                work = os.path.join(data, f"{name}-{label}-work")
                outputs[label] = dst

                def setup(dst=dst, work=work):
                    shutil.rmtree(dst, ignore_errors=True)
                    shutil.rmtree(work, ignore_errors=True)
                    P.tree_bytes(src)  # warm the input, for everyone alike

                contenders.append(P.Contender(
                    label,
                    [build["binary"], "rechunk", src, dst, "--chunks",
                     ",".join(map(str, dst_chunks)), "--allowed-mem", allowed, "--work-dir", work,
                     "--executor", args.executor, "--quiet"],
                    setup=setup, watch_dirs={"work": work}))

            def check(slot, rep, name=name, outputs=outputs):
                if name in checks:
                    return
                same = R.same_chunks(outputs["before"], outputs["after"])
                checks[name] = ("chunk files identical" if same else
                                R.verify(builds["after"]["binary"], outputs["before"],
                                         outputs["after"]))

            b.case(name, contenders, ratios=[("after", "before")], after_rep=check,
                   describe={"shape": shape, "source_chunks": src_chunks,
                             "target_chunks": dst_chunks, "allowed_mem": allowed,
                             "bytes": nbytes, "executor": args.executor})
        b.doc["checks"] = checks


if __name__ == "__main__":
    main()
