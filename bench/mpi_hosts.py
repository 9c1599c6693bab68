#!/usr/bin/env python3
"""The mpi executor on three simulated hosts against the threads executor on
one (issue 20), under the protocol of bench/README.md.

    .venv/bin/python bench/mpi_hosts.py [--workloads W1 W4] [--memory-tier] [--reps 5]
        [--prepared] [--bin build/release/bin] [--dir build/bench/mpi_hosts]
        [--out bench/results/mpi_hosts.json]
    .venv/bin/python bench/mpi_hosts.py --smoke

Needs root (network namespaces), iproute2, util-linux and Open MPI. The hosts
are tests/interop/test_mpi_hosts.py's, made by the module it shares with this
script (tests/interop/mpi_hosts_cluster.py): three network namespaces, each
with its own hostname (UTS namespace) and address on a private bridge
(10.213.0.0/24) held by a fourth namespace where mpirun runs; one Open MPI
daemon per host, started through a launcher agent that enters the host's
namespaces (`--mca plm_rsh_agent`, where a cluster has ssh); ranks talk over
TCP only (`--mca btl tcp,self`, restricted to the bridge's subnet; `--mca pml
ob1` skips probing for UCX, as bench/mpi.py does). Nothing outside those
namespaces is contacted. They are made once before the first case and
deleted at the end, whatever happens (a run that was killed leaves them
behind; the next run, or the test, deletes them).

W1 and W4 of bench/rechunk.py, `strata rechunk`: once with `--executor
threads --workers 2` on the machine itself (one host), once as mpirun across
the 3 hosts, one rank on each, `strata rechunk ... --executor mpi`. All the
hosts share this machine's filesystem (the source, the output and the work
dir are the same paths for every rank) and its 2 cores: 3 ranks, plus their
daemons and mpirun, are oversubscribed on 2 cores, and every byte between
hosts goes through the kernel's TCP stack and a software bridge on the same
cores. What this measures is therefore the cost of distributing the work
(launching across hosts, TCP instead of shared memory, one task at a time
per rank, 3 processes on 2 cores), not a speed-up: the ratio is what it is.
When the planner reads the blosc source in place (each target task decodes
its rows of the source itself, as it does with its defaults at W1 and W4's
full sizes on one host: bench/results/mpi.json), no block moves between
ranks; `--memory-tier` adds a case per workload with `--tier memory` for
both contenders, where every block is published by the rank that read it
and fetched over the bridge by the rank that writes its target.

Each run is measured by the protocol as a whole process tree: wall time
including the launch across hosts, CPU, peak RSS of the largest process and
of the tree. Open MPI's daemons daemonize, and mpirun exits before its
launcher agents do, so that on their own they would leave the tree (their
CPU counted as someone else's, their memory unseen): both contenders
therefore run under a small Python child subreaper (REAPER below) that
reaps them, so that wait4's rusage holds the namespace entry, mpirun, the
agents, the daemons and the ranks exactly. Its start-up (tens of ms) is in
both contenders' wall time. The history's compute_end gives the compute
time (Execute's start to end), each rank's pool peak (`rank_peak_pool_bytes`:
rank<i>_peak_pool_bytes in the JSON) and the block bytes that moved between
ranks; the bridge's counters (the bytes the three hosts sent into it, read
before and after the run, untimed) give what actually crossed between hosts,
MPI's own traffic included (and a few hundred bytes a second of IPv6
neighbour discovery, which the idle bridge carries too). A first case times mpirun across the hosts running `hostname` (the launcher's
own cost), and checks that each rank ran on its own host. The first kept
rep's outputs are compared chunk file by chunk file with threads'. Reports
medians with min-max and per-rep ratios mpi/threads of wall and compute
time; never pass/fail. Tables: bench/report.py bench/results/mpi_hosts.json.
"""
import argparse
import os
import shutil
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "interop"))
import mpi_hosts_cluster as mh  # noqa: E402
import protocol as P  # noqa: E402
import rechunk as rb  # noqa: E402

SLOTS = [1, 1, 1]  # one rank per host
MPIRUN_OPTIONS = ["--mca", "pml", "ob1"]
HOSTNAME = shutil.which("hostname") or "/bin/hostname"
# Runs its arguments as a child subreaper and, once that child has exited,
# reaps every orphan left under it before exiting with the child's status.
# mpirun's daemons daemonize (their parent exits) and mpirun exits before
# its launcher agents do: without this, the daemons and the ranks under
# them leave the contender's process tree, their CPU counts as someone
# else's (every run "disturbed") and their RSS is not seen. Reaped here,
# wait4's rusage has all of them, exactly.
REAPER = r"""
import ctypes, os, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, _ = os.wait4(pid, 0)
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
sys.exit(os.waitstatus_to_exitcode(status))
"""


def reaped(argv):
    """argv run under REAPER (both contenders, so that its start-up is in both)."""
    return [sys.executable, "-S", "-c", REAPER, *map(str, argv)]


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", nargs="+", default=["W1", "W4"], choices=sorted(rb.WORKLOADS))
    ap.add_argument("--memory-tier", action="store_true",
                    help="also run each workload with --tier memory (blocks move between hosts)")
    ap.add_argument("--bin", default="build/release/bin")
    ap.add_argument("--dir", default="build/bench/mpi_hosts")
    P.add_arguments(ap)
    return ap.parse_args()


def launcher_case(b, cluster):
    """mpirun across the hosts running `hostname`: the launcher's cost, and
    proof that each rank ran on a host of its own."""
    def finish(run, done):
        names = sorted(done.stdout.split())
        if names != sorted(cluster.hostnames):
            raise P.ContenderFailed(f"ranks ran on {names}, not one on each of "
                                    f"{cluster.hostnames}")
        run["extra"]["hosts"] = len(set(names))

    argv = reaped(cluster.mpirun_argv(SLOTS, HOSTNAME, mpirun_options=MPIRUN_OPTIONS))
    b.case("mpirun 3 hosts hostname",
           [P.Contender("mpirun", argv, env=cluster.env(), finish=finish, timeout_s=120)],
           describe={"workload": "the launcher's own cost across the 3 hosts", "hosts": 3,
                     "ranks": sum(SLOTS)})


def run_workload(b, args, cluster, name, tier):
    shape, src_chunks, dst_chunks, allowed, seed = rb.workloads(args)[name]
    strata = os.path.join(os.path.abspath(args.bin), "strata")
    d = os.path.join(os.path.abspath(args.dir), name)
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "src.zarr")
    stored = rb.make_source(strata, src, shape, src_chunks, seed)
    logical = 8 * shape[0] * shape[1]
    outputs = rb.Outputs(os.path.join(d, tier or "default"))
    os.makedirs(outputs.d, exist_ok=True)
    tier_args = ["--tier", tier] if tier else []

    def common(dst, hist, work):
        return [src, dst, "--chunks", ",".join(map(str, dst_chunks)), "--allowed-mem", allowed,
                *tier_args, "--work-dir", work, "--history", hist, "--quiet"]

    argv = {
        "threads": lambda dst, hist, work: reaped([
            strata, "rechunk", *common(dst, hist, work), "--workers", "2", "--executor",
            "threads"]),
        "mpi": lambda dst, hist, work: reaped(cluster.mpirun_argv(
            SLOTS, strata, "rechunk", *common(dst, hist, work), "--executor", "mpi",
            mpirun_options=MPIRUN_OPTIONS)),
    }

    def finish_threads(run, done, hist):
        rb.add_history(run, hist)

    def finish_mpi(run, done, hist, bridge):
        rb.add_history(run, hist)
        run["extra"]["bridge_bytes"] = cluster.bridge_bytes() - bridge["before"]
        peaks = rb.history_end(hist).get("rank_peak_pool_bytes") or []
        if len(peaks) != sum(SLOTS):
            raise P.ContenderFailed(f"{hist}: {len(peaks)} ranks in the history, not "
                                    f"{sum(SLOTS)}")
        for r, peak in enumerate(peaks):
            run["extra"][f"rank{r}_peak_pool_bytes"] = peak

    contenders, dsts = [], {}
    for variant in rb.variants(args):
        for e in ("threads", "mpi"):
            bridge = {}
            finish = (finish_threads if e == "threads" else
                      lambda run, done, hist, bridge=bridge: finish_mpi(run, done, hist, bridge))
            c, dst = rb.contender(e, variant, argv[e], src, outputs, logical, finish,
                                  env=cluster.env() if e == "mpi" else mh.MPI_ENV)
            if e == "mpi":  # the bridge's counters, read last before the run
                def setup(inner=c.setup, bridge=bridge):
                    inner()
                    bridge["before"] = cluster.bridge_bytes()
                c.setup = setup
            c.timeout_s = 1800
            contenders.append(c)
            dsts[c.name] = dst
    label = name + (f" {tier} tier" if tier else "")
    describe = {"workload": name, "shape": shape, "source_chunks": src_chunks,
                "target_chunks": dst_chunks, "allowed_mem": allowed, "tier": tier or "default",
                "workers": 2, "hosts": len(SLOTS), "ranks": sum(SLOTS), "logical_bytes": logical,
                "source_stored_bytes": stored}
    rb.executor_case(b, args, label, contenders, dsts, strata, src, outputs, "mpi", describe)
    shutil.rmtree(outputs.d, ignore_errors=True)


def main():
    args = parse_args()
    reason = mh.why_no_namespaces()
    if reason:
        sys.exit(f"mpi_hosts.py: cannot simulate hosts here: {reason}")
    # A SIGTERM ends the run through the finally below (namespaces deleted).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    mh.remove_stale_namespaces()
    scratch = os.path.abspath(args.dir)
    os.makedirs(os.path.join(scratch, "cluster"), exist_ok=True)
    cluster = mh.Cluster(os.path.join(scratch, "cluster"))
    try:
        with P.Bench("mpi_hosts", args, scratch=scratch,
                     description="the mpi executor on 3 simulated hosts (network namespaces, "
                                 "TCP, one rank each) against threads (2 workers) on one "
                                 "(issue 20)") as b:
            b.doc["cluster"] = {
                "hosts": cluster.hostnames, "addresses": cluster.addresses,
                "subnet": mh.SUBNET, "ranks_per_host": SLOTS,
                "mpirun": " ".join(cluster.mpirun_argv(SLOTS, "COMMAND",
                                                       mpirun_options=MPIRUN_OPTIONS)),
                "cores": P.NCPU,
                "oversubscribed": sum(SLOTS) > P.NCPU,
                "bridge_bytes": "rx bytes of the hosts' ports on the bridge, over the run "
                                "(every frame a host sent, MPI's control traffic included)"}
            launcher_case(b, cluster)
            for w in args.workloads:
                for tier in [None] + (["memory"] if args.memory_tier else []):
                    run_workload(b, args, cluster, w, tier)
                shutil.rmtree(os.path.join(scratch, w), ignore_errors=True)
    finally:
        cluster.close()
        left = mh.namespaces_of(cluster.tag)
        if left:
            print(f"mpi_hosts.py: namespaces left behind: {left}", file=sys.stderr)
        for w in args.workloads:
            shutil.rmtree(os.path.join(scratch, w), ignore_errors=True)
        shutil.rmtree(os.path.join(scratch, "cluster"), ignore_errors=True)


if __name__ == "__main__":
    main()
