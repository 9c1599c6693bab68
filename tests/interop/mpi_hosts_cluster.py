"""Three simulated hosts for Open MPI: network and UTS namespaces on a bridge.

Shared by tests/interop/test_mpi_hosts.py (correctness) and
bench/mpi_hosts.py (timing); neither is a pytest module, so this file has no
tests of its own.

Each host is a network namespace with its own address on a private bridge
and, for every process the launcher agent starts there, its own hostname (a
UTS namespace). mpirun runs in a fourth namespace (the "login node", which
holds the bridge) and starts one Open MPI daemon per host through the agent,
as ssh or srun would on a cluster. Ranks talk over TCP only (`--mca btl
tcp,self`: no shared memory between hosts), on the bridge's subnet only.
Nothing outside the namespaces made here is contacted, and nothing is added
to the machine's own network: each veth pair is made straight into two of
them.

Lifecycle: why_no_namespaces() says whether this machine can make them (root,
iproute2, util-linux, mpirun, a kernel that allows it);
remove_stale_namespaces() deletes what an earlier, killed run left behind;
Cluster(workdir) makes them; Cluster.close() kills what runs in them and
deletes them (the bridge and veth pairs go with them). close() is
idempotent and also runs at interpreter exit. Names carry PREFIX and the pid
of the process that made them, so that two runs at once do not collide and
stale ones are known by their dead pid. Not thread-safe.
"""
import atexit
import json
import os
import re
import shutil
import signal
import subprocess
import textwrap

MPIRUN = shutil.which("mpirun")
IP = shutil.which("ip")
UNSHARE = shutil.which("unshare")
SUBNET = "10.213.0.0/24"
HEAD_ADDRESS = "10.213.0.254"
HOSTS = 3
# Names carry this prefix and the pid of the process that made them.
PREFIX = "stmh"
# Open MPI refuses to run as root without these.
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


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


def remove_stale_namespaces():
    """Namespaces an earlier run left behind when it was killed (its pid is gone)."""
    listed = _run(IP, "netns", "list", check=False).stdout.split()
    for name in listed:
        m = re.fullmatch(rf"{PREFIX}(\d+)-\w+", name)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            _kill_namespace_processes(name)
            _run(IP, "netns", "del", name, check=False)


def namespaces_of(tag):
    """The namespaces whose names start with tag (to check none are left)."""
    return [n for n in _run(IP, "netns", "list").stdout.split() if n.startswith(tag)]


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
                # Open MPI's plm_rsh_agent for the simulated hosts of mpi_hosts_cluster.py.
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

    def mpirun_argv(self, slots, *command, mpirun_options=()):
        """The command that runs `command` on sum(slots) ranks placed by
        `slots` per host, from the head; run it with env()."""
        return [
            IP, "netns", "exec", self.head, UNSHARE, "--uts", "sh", "-c",
            'hostname "$0" && exec "$@"', f"{self.tag}-head",
            MPIRUN, "-np", str(sum(slots)), "--oversubscribe",
            "--hostfile", self.hostfile(slots),
            "--mca", "plm_rsh_agent", self.agent,
            "--mca", "plm_rsh_no_tree_spawn", "1",
            "--mca", "btl", "tcp,self",
            "--mca", "btl_tcp_if_include", SUBNET,
            "--mca", "oob_tcp_if_include", SUBNET,
            *mpirun_options, *map(str, command)]

    @staticmethod
    def env():
        """What mpirun_argv's command adds to the environment."""
        return dict(MPI_ENV, ASAN_OPTIONS="detect_leaks=0")

    def mpirun(self, slots, *command, timeout=300):
        """Runs mpirun_argv(slots, *command) and returns its CompletedProcess
        (text); raises TimeoutError, after killing it, past `timeout` s."""
        argv = self.mpirun_argv(slots, *command)
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=dict(os.environ, **self.env()),
                                start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            raise TimeoutError(f"mpirun across hosts did not finish in {timeout} s: {stderr}")
        return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)

    def close(self):
        for ns in reversed(self.made):
            _kill_namespace_processes(ns)
        for ns in reversed(self.made):
            _run(IP, "netns", "del", ns, check=False)
        self.made = []
