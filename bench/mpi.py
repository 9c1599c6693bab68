#!/usr/bin/env python3
"""The mpi executor against the threads executor on W1 and W4 (issue 7),
under the protocol of bench/README.md.

    .venv/bin/python bench/mpi.py [--workloads W1 W4] [--reps 5] [--prepared]
        [--bin build/release/bin] [--dir build/bench/mpi] [--out bench/results/mpi.json]
    .venv/bin/python bench/mpi.py --smoke

W1 and W4 of bench/rechunk.py, `strata rechunk`: once with `--executor threads
--workers 2`, once as `mpirun -np 2 --mca pml ob1 strata rechunk ... --executor
mpi` (two ranks, one task at a time each; on this one machine MPI moves blocks
through shared memory: Open MPI's ob1 with the vader transport and CMA single
copy. `--mca pml ob1` skips probing for UCX, which costs ~0.3 s of start-up
here and is meant for real interconnects). Both fit in RAM, so both exchange
the data in memory and write no intermediate bytes. Each run is measured by
the protocol as a whole process tree (mpirun and its ranks: wall time
including mpirun's start-up, CPU, peak RSS of the largest process and of the
tree); the history's compute_end gives the compute time (Execute's start to
end: without process and MPI start-up), each rank's pool peak and the bytes
that moved between ranks. A third case times `mpirun -np 2 /bin/true` (the
launcher's own cost) under the same protocol. The first kept rep's outputs are
compared chunk file by chunk file. Reports medians with min-max and per-rep
ratios mpi/threads of wall and compute time; never pass/fail.
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol as P  # noqa: E402
import rechunk as rb  # noqa: E402

EXECUTORS = ("threads", "mpi")
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
MPIRUN = ["mpirun", "-np", "2", "--oversubscribe", "--mca", "pml", "ob1"]


def run_workload(b, args, name):
    shape, src_chunks, dst_chunks, allowed, seed = rb.workloads(args)[name]
    strata = os.path.join(args.bin, "strata")
    d = os.path.join(os.path.abspath(args.dir), name)
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "src.zarr")
    stored = rb.make_source(strata, src, shape, src_chunks, seed)
    logical = 8 * shape[0] * shape[1]
    outputs = rb.Outputs(d)

    def common(dst, hist, work):
        return [src, dst, "--chunks", ",".join(map(str, dst_chunks)), "--allowed-mem", allowed,
                "--work-dir", work, "--history", hist, "--quiet"]

    argv = {
        "threads": lambda dst, hist, work: [strata, "rechunk", *common(dst, hist, work),
                                            "--workers", "2", "--executor", "threads"],
        "mpi": lambda dst, hist, work: [*MPIRUN, strata, "rechunk", *common(dst, hist, work),
                                        "--executor", "mpi"],
    }
    contenders, dsts = [], {}
    for variant in rb.variants(args):
        for e in EXECUTORS:
            c, dst = rb.contender(e, variant, argv[e], src, outputs, logical,
                                  lambda run, done, hist: rb.add_history(run, hist), env=MPI_ENV)
            contenders.append(c)
            dsts[c.name] = dst
    describe = {"workload": name, "shape": shape, "source_chunks": src_chunks,
                "target_chunks": dst_chunks, "allowed_mem": allowed, "workers": 2, "ranks": 2,
                "logical_bytes": logical, "source_stored_bytes": stored}
    rb.executor_case(b, args, name, contenders, dsts, strata, src, outputs, "mpi", describe)
    shutil.rmtree(d, ignore_errors=True)


def main():
    args = rb.executor_bench_args("build/bench/mpi")
    with P.Bench("mpi", args, scratch=os.path.abspath(args.dir),
                 description="the mpi executor (2 ranks) against threads (2 workers), "
                             "one machine (issue 7)") as b:
        b.case("mpirun -np 2 /bin/true", [P.Contender("mpirun", [*MPIRUN, "/bin/true"],
                                                        env=MPI_ENV)],
               describe={"workload": "the launcher's own cost"})
        for w in args.workloads:
            run_workload(b, args, w)


if __name__ == "__main__":
    main()
