"""`strata rechunk --executor mpi` on three simulated hosts.

Each host is a network namespace with its own hostname (a UTS namespace) and
its own address on a private bridge; mpirun runs in a fourth namespace (the
"login node") and starts one Open MPI daemon per host through a launcher
agent that enters the host's namespaces, as ssh or srun would on a cluster.
Ranks talk over TCP only (`--mca btl tcp,self`: no shared memory between
hosts), on the bridge's subnet only. Nothing outside the namespaces made here
is contacted. The namespaces are made by mpi_hosts_cluster.py, which
bench/mpi_hosts.py shares.

What it shows:
- MPI groups the ranks on 3 hosts (4 ranks: 2 share a host), named by their
  hostnames;
- total_system_mem defaults to the sum of the hosts' memory (3 x one host's);
- a memory-tier rechunk moves its blocks between hosts as MPI messages: the
  bytes Strata counts are > 0, and the bridge carried at least that many;
- nothing is written to disk for intermediates, and the output is byte for
  byte the threads executor's.

Skipped, with the reason, where namespaces cannot be made (not root, no `ip`
or `unshare`, no mpirun, or the kernel refuses).
"""
import json
import os
import re

import pytest

import mpi_hosts_cluster as mh
from conftest import tree_digest


def mpirun(cluster, strata, slots, *args, timeout=300):
    """Runs strata on sum(slots) ranks placed by `slots` per host, from the head."""
    try:
        return cluster.mpirun(slots, strata.path, *args, timeout=timeout)
    except TimeoutError as e:
        pytest.fail(str(e))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    reason = mh.why_no_namespaces()
    if reason:
        pytest.skip(f"multi-host MPI test skipped: {reason}")
    mh.remove_stale_namespaces()
    c = mh.Cluster(str(tmp_path_factory.mktemp("cluster")))
    try:
        yield c
    finally:
        c.close()
        left = mh.namespaces_of(c.tag)
        assert not left, f"namespaces left behind: {left}"


@pytest.fixture(scope="module")
def source(strata, tmp_path_factory):
    src = tmp_path_factory.mktemp("data") / "src.zarr"
    strata("random", src, "--shape", "1200,1200", "--chunks", "1200,40", "--seed", "5")
    return src


# The memory tier, forced: left to choose, the planner reads this blosc
# source in place (each target decodes only its rows), and no block moves.
RECHUNK = ("--chunks", "40,1200", "--allowed-mem", "64MB", "--tier", "memory")
HOSTS_LINE = re.compile(r"^mpi: (\d+) ranks on (\d+) hosts: (.*); hosts' memory sums to .* "
                        r"\((\d+) bytes\); total_system_mem .* \((\d+) bytes, their sum\)$", re.M)
HOST_ENTRY = re.compile(r"(\S+) \[ranks ([\d,]+)\] .* \((\d+) bytes\)")
MOVED = re.compile(r"\((\d+) bytes\) moved between ranks")


def one_host_memory(strata, source):
    """total_system_mem by default on one host (the threads executor's plan)."""
    out = strata("plan", source, *RECHUNK, "--executor", "threads", "--json").stdout
    return json.loads(out)["spec"]["total_system_mem"]


def parse_hosts(stdout):
    m = HOSTS_LINE.search(stdout)
    assert m, f"no hosts line in:\n{stdout}"
    ranks, hosts, entries, sum_bytes, total = m.groups()
    parsed = [HOST_ENTRY.fullmatch(e.strip()) for e in entries.split(";")]
    assert all(parsed), entries
    return (int(ranks), int(hosts),
            [(p.group(1), [int(r) for r in p.group(2).split(",")], int(p.group(3)))
             for p in parsed],
            int(sum_bytes), int(total))


def test_rechunk_on_three_hosts_moves_blocks_over_mpi_and_matches_threads(
        strata, cluster, source, tmp_path):
    before = tree_digest(source)
    bridge_before = cluster.bridge_bytes()
    work = tmp_path / "work"
    work.mkdir()
    proc = mpirun(cluster, strata, [1, 1, 1], "rechunk", source, tmp_path / "mpi.zarr", *RECHUNK,
                          "--executor", "mpi", "--work-dir", work)
    bridge = cluster.bridge_bytes() - bridge_before
    if "has no MPI" in proc.stderr:
        pytest.skip("strata built without MPI")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.count("plan:") == 1, out
    assert "executor mpi x 3" in out, out
    # The source is held in the memory tier (no intermediate on disk).
    assert re.search(r"^array-001\s+from_zarr\s.*\smemory\s", out, re.M), out

    ranks, hosts, entries, sum_bytes, total = parse_hosts(out)
    assert (ranks, hosts) == (3, 3), out
    assert [name for name, _, _ in entries] == cluster.hostnames, out
    assert [r for _, r, _ in entries] == [[0], [1], [2]], out
    one = one_host_memory(strata, source)
    assert [m for _, _, m in entries] == [one] * 3, (out, one)
    assert sum_bytes == total == 3 * one, out

    moved = int(MOVED.search(out).group(1))
    assert moved > 0, out
    # Every rank is on its own host, so each block a rank fetched crossed
    # the bridge: the bridge carried at least those bytes.
    assert bridge >= moved, (bridge, moved)
    assert re.search(r"intermediates: 0 B written to disk", out), out
    assert not os.listdir(work), os.listdir(work)

    strata("rechunk", source, tmp_path / "threads.zarr", *RECHUNK, "--workers", "2", "--quiet")
    assert tree_digest(tmp_path / "mpi.zarr") == tree_digest(tmp_path / "threads.zarr")
    assert tree_digest(source) == before
    print(out)
    print(f"bridge carried {bridge} bytes; Strata counted {moved} bytes between ranks")


def test_four_ranks_are_grouped_on_three_hosts(strata, cluster, source, tmp_path):
    # Two ranks share host 0: grouping is by host, not by rank, and
    # total_system_mem still counts each host once.
    proc = mpirun(cluster, strata, [2, 1, 1], "rechunk", source, tmp_path / "mpi.zarr", *RECHUNK,
                          "--executor", "mpi")
    if "has no MPI" in proc.stderr:
        pytest.skip("strata built without MPI")
    assert proc.returncode == 0, proc.stderr
    ranks, hosts, entries, sum_bytes, total = parse_hosts(proc.stdout)
    assert (ranks, hosts) == (4, 3), proc.stdout
    assert [name for name, _, _ in entries] == cluster.hostnames, proc.stdout
    assert [r for _, r, _ in entries] == [[0, 1], [2], [3]], proc.stdout
    assert sum_bytes == total == 3 * one_host_memory(strata, source), proc.stdout
    strata("rechunk", source, tmp_path / "threads.zarr", *RECHUNK, "--workers", "2", "--quiet")
    assert tree_digest(tmp_path / "mpi.zarr") == tree_digest(tmp_path / "threads.zarr")
