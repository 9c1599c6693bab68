"""`strata rechunk --executor mpi` on three simulated hosts.

Each host is a network namespace with its own hostname (a UTS namespace) and
its own address on a private bridge; mpirun runs in a fourth namespace (the
"login node") and starts one Open MPI daemon per host through a launcher
agent that enters the host's namespaces, as ssh or srun would on a cluster.
Ranks talk over TCP only (`--mca btl tcp,self`: no shared memory between
hosts), on the bridge's subnet only. Nothing outside the namespaces made here
is contacted.

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
import atexit
import json
import os
import re
import shutil
import signal
import subprocess
import textwrap

import pytest

from conftest import tree_digest

MPIRUN = shutil.which("mpirun")
IP = shutil.which("ip")
UNSHARE = shutil.which("unshare")
SUBNET = "10.213.0.0/24"
HEAD_ADDRESS = "10.213.0.254"
HOSTS = 3
# Names carry this prefix and the pid of the pytest that made them.
PREFIX = "stmh"


def _run(*args, check=True):
    proc = subprocess.run(list(args), capture_output=True, text=True, timeout=60)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc


def why_no_namespaces():
    """None when this machine can make the namespaces, else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for name, path in (("ip (iproute2)", IP), ("unshare (util-linux)", UNSHARE),
                       ("mpirun (openmpi-bin)", MPIRUN)):
        if path is None:
            return f"{name} not installed"
    probe = f"{PREFIX}{os.getpid()}-probe"
    made = _run(IP, "netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"cannot make a network namespace: {made.stderr.strip()}"
    try:
        uts = _run(IP, "netns", "exec", probe, UNSHARE, "--uts", "hostname", "probe", check=False)
        if uts.returncode != 0:
            return f"cannot make a UTS namespace: {uts.stderr.strip()}"
    finally:
        _run(IP, "netns", "del", probe, check=False)
    return None


def _remove_stale_namespaces():
    """Namespaces an earlier run left behind when it was killed (its pid is gone)."""
    listed = _run(IP, "netns", "list", check=False).stdout.split()
    for name in listed:
        m = re.fullmatch(rf"{PREFIX}(\d+)-\w+", name)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            _kill_namespace_processes(name)
            _run(IP, "netns", "del", name, check=False)


def _kill_namespace_processes(ns):
    pids = _run(IP, "netns", "pids", ns, check=False).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (OSError, ValueError):
            pass


class Cluster:
    """A head namespace holding a bridge, and HOSTS host namespaces on it.

    Host i has address 10.213.0.(i+1) and, for every process the agent starts
    there, the hostname `<tag>-host<i>`. close() kills what runs in them and
    deletes them (the bridge and veth pairs go with them); it runs at exit
    too, and is idempotent.
    """

    def __init__(self, workdir):
        self.tag = f"{PREFIX}{os.getpid()}"
        self.head = f"{self.tag}-head"
        self.hosts = [f"{self.tag}-h{i}" for i in range(HOSTS)]
        self.addresses = [f"10.213.0.{i + 1}" for i in range(HOSTS)]
        self.hostnames = [f"{self.tag}-host{i}" for i in range(HOSTS)]
        self.bridge = f"{self.tag}br"
        self.ports = [f"{self.tag}v{i}" for i in range(HOSTS)]
        self.made = []
        self.workdir = workdir
        atexit.register(self.close)
        try:
            self._make()
        except Exception:
            self.close()
            raise

    def _make(self):
        ip = IP
        _run(ip, "netns", "add", self.head)
        self.made.append(self.head)
        _run(ip, "-n", self.head, "link", "set", "lo", "up")
        _run(ip, "-n", self.head, "link", "add", self.bridge, "type", "bridge")
        _run(ip, "-n", self.head, "addr", "add", f"{HEAD_ADDRESS}/24", "dev", self.bridge)
        _run(ip, "-n", self.head, "link", "set", self.bridge, "up")
        for ns, port, address in zip(self.hosts, self.ports, self.addresses):
            _run(ip, "netns", "add", ns)
            self.made.append(ns)
            _run(ip, "-n", ns, "link", "set", "lo", "up")
            # The pair is made straight into the two namespaces: nothing is
            # added to the machine's own network.
            _run(ip, "link", "add", port, "netns", self.head, "type", "veth",
                 "peer", "name", "eth0", "netns", ns)
            _run(ip, "-n", self.head, "link", "set", port, "master", self.bridge, "up")
            _run(ip, "-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
            _run(ip, "-n", ns, "link", "set", "eth0", "up")
        # The launcher agent: `agent HOST COMMAND...` as ssh takes it (the
        # words joined and run by a shell), but "connecting" means entering
        # the host's network namespace with a UTS namespace of its hostname.
        cases = "\n".join(f"  {a}) ns={ns}; name={name} ;;"
                          for a, ns, name in zip(self.addresses, self.hosts, self.hostnames))
        self.agent = os.path.join(self.workdir, "agent.sh")
        with open(self.agent, "w") as f:
            f.write(textwrap.dedent("""\
                #!/bin/sh
                # Open MPI's plm_rsh_agent for the simulated hosts of test_mpi_hosts.py.
                while [ "${1#-}" != "$1" ]; do shift; done  # ssh-style options
                host=$1; shift
                case $host in
                """) + cases + textwrap.dedent(f"""
                  *) echo "agent: no simulated host $host" >&2; exit 255 ;;
                esac
                exec {IP} netns exec "$ns" {UNSHARE} --uts sh -c \\
                  'hostname "$0" && exec sh -c "$1"' "$name" "$*"
                """))
        os.chmod(self.agent, 0o755)

    def hostfile(self, slots):
        path = os.path.join(self.workdir, "hostfile")
        with open(path, "w") as f:
            for address, n in zip(self.addresses, slots):
                f.write(f"{address} slots={n}\n")
        return path

    def bridge_bytes(self):
        """Bytes the hosts have sent into the bridge (each port's rx counter)."""
        total = 0
        for port in self.ports:
            out = _run(IP, "-n", self.head, "-s", "-j", "link", "show", port).stdout
            total += json.loads(out)[0]["stats64"]["rx"]["bytes"]
        return total

    def mpirun(self, strata, slots, *args, timeout=300):
        """Runs strata on sum(slots) ranks placed by `slots` per host, from the head."""
        env = dict(os.environ)
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   ASAN_OPTIONS="detect_leaks=0")
        command = [
            IP, "netns", "exec", self.head, UNSHARE, "--uts", "sh", "-c",
            'hostname "$0" && exec "$@"', f"{self.tag}-head",
            MPIRUN, "-np", str(sum(slots)), "--oversubscribe",
            "--hostfile", self.hostfile(slots),
            "--mca", "plm_rsh_agent", self.agent,
            "--mca", "plm_rsh_no_tree_spawn", "1",
            "--mca", "btl", "tcp,self",
            "--mca", "btl_tcp_if_include", SUBNET,
            "--mca", "oob_tcp_if_include", SUBNET,
            strata.path, *map(str, args)]
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env, start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            pytest.fail(f"mpirun across hosts did not finish in {timeout} s: {stderr}")
        return subprocess.CompletedProcess(command, proc.returncode, stdout, stderr)

    def close(self):
        for ns in reversed(self.made):
            _kill_namespace_processes(ns)
        for ns in reversed(self.made):
            _run(IP, "netns", "del", ns, check=False)
        self.made = []


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    reason = why_no_namespaces()
    if reason:
        pytest.skip(f"multi-host MPI test skipped: {reason}")
    _remove_stale_namespaces()
    c = Cluster(str(tmp_path_factory.mktemp("cluster")))
    try:
        yield c
    finally:
        c.close()
        left = [n for n in _run(IP, "netns", "list").stdout.split() if n.startswith(c.tag)]
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
    proc = cluster.mpirun(strata, [1, 1, 1], "rechunk", source, tmp_path / "mpi.zarr", *RECHUNK,
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
    proc = cluster.mpirun(strata, [2, 1, 1], "rechunk", source, tmp_path / "mpi.zarr", *RECHUNK,
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
