#!/usr/bin/env python3
"""Peak PSS of a process tree: runs a command and samples the proportional
set size of it and all its descendants from /proc/<pid>/smaps_rollup.

PSS splits every shared page between the processes that map it, so the sum
over a tree counts shared memory (the processes executor's ShmStore, the
binary's pages, the libraries) once, and is what the tree takes from the
machine. Sampling misses peaks shorter than the period (20 ms by default).

    .venv/bin/python bench/pss_tree.py [--period 0.02] -- strata rechunk ...

prints one JSON object: the command's exit code, the peak of the sum, and at
that peak each process's Pss with its anonymous, file and shmem parts (MB =
10^6 bytes), plus how many samples were taken. Also importable: `run(argv)`.

Under AddressSanitizer, `--asan-shadow` reads /proc/<pid>/smaps instead and
leaves out the pages mapped in ASan's shadow address range (x86-64: from
0x7fff8000 to 0x10007fff8000, one byte per 8 of application memory, written
as allocations are poisoned and unpoisoned, and not given back when a
buffer is freed): the sanitizer's memory, not the program's. Each process's
shadow is reported as pss_asan_shadow; pss and pss_anon are without it.
"""
import argparse
import json
import os
import subprocess
import sys
import time

FIELDS = ("Pss", "Pss_Anon", "Pss_File", "Pss_Shmem")
# AddressSanitizer's shadow memory on x86-64 (LowShadow to HighShadow).
ASAN_SHADOW = (0x7fff8000, 0x10007fff8000)


def children_of(pid):
    """Direct children of `pid` (from every thread's children file)."""
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    out.extend(int(c) for c in f.read().split())
            except OSError:
                pass
    except OSError:
        pass
    return out


def tree(pid):
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        todo.extend(children_of(p))
    return pids


def rollup(pid):
    """{field: bytes} of /proc/pid/smaps_rollup, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            text = f.read()
    except OSError:
        return None
    values = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].rstrip(":") in FIELDS:
            values[parts[0].rstrip(":")] = int(parts[1]) * 1024
    return values if "Pss" in values else None


def asan_shadow_pss(pid):
    """Bytes of Pss mapped in ASan's shadow range, from /proc/pid/smaps; None
    if the process is gone or maps no shadow (it is exiting: its smaps is
    read after its smaps_rollup, and an ASan process always maps some)."""
    try:
        with open(f"/proc/{pid}/smaps") as f:
            text = f.read()
    except OSError:
        return None
    total, shadow, seen = 0, False, False
    for line in text.splitlines():
        head = line.split(None, 2)
        if not head:
            continue
        if not head[0].endswith(":"):  # a mapping's first line: "lo-hi perms ..."
            lo = int(head[0].split("-", 1)[0], 16)
            shadow = ASAN_SHADOW[0] <= lo < ASAN_SHADOW[1]
            seen = seen or shadow
        elif shadow and head[0] == "Pss:":
            total += int(head[1]) * 1024
    return total if seen else None


def without_asan_shadow(pid):
    """rollup() less ASan's shadow (anonymous memory), which is returned as
    Pss_Asan_Shadow; None if the process is gone (or going: the sample would
    count its shadow as its own memory)."""
    values = rollup(pid)
    if values is None:
        return None
    shadow = asan_shadow_pss(pid)
    if shadow is None:
        return None
    values["Pss"] -= shadow
    values["Pss_Anon"] = values.get("Pss_Anon", 0) - shadow
    values["Pss_Asan_Shadow"] = shadow
    return values


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def run(argv, period=0.02, env=None, timeout=None, asan_shadow=False):
    """Runs argv; returns (exit code, report dict, stdout, stderr). With
    `asan_shadow`, PSS is measured without ASan's shadow memory (above)."""
    sample = without_asan_shadow if asan_shadow else rollup
    fields = FIELDS + ("Pss_Asan_Shadow",) if asan_shadow else FIELDS
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            text=True)
    # Drain the pipes on threads so that the child never blocks on them.
    import threading
    out, err = [], []
    t1 = threading.Thread(target=lambda: out.append(proc.stdout.read()))
    t2 = threading.Thread(target=lambda: err.append(proc.stderr.read()))
    t1.start()
    t2.start()
    peak, peak_detail, samples = 0, [], 0
    start = time.monotonic()
    while proc.poll() is None:
        detail = []
        total = 0
        for p in tree(proc.pid):
            r = sample(p)
            if r is None:
                continue
            total += r["Pss"]
            detail.append({"pid": p, "comm": comm(p),
                           **{k.lower(): round(r.get(k, 0) / 1e6, 1) for k in fields}})
        samples += 1
        if total > peak:
            peak, peak_detail = total, detail
        if timeout is not None and time.monotonic() - start > timeout:
            proc.kill()
            break
        time.sleep(period)
    proc.wait()
    t1.join()
    t2.join()
    report = {"exit_code": proc.returncode, "peak_pss_bytes": peak,
              "peak_pss_mb": round(peak / 1e6, 1), "samples": samples,
              "asan_shadow_excluded": asan_shadow, "processes_at_peak": peak_detail}
    return proc.returncode, report, "".join(out), "".join(err)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--period", type=float, default=0.02)
    parser.add_argument("--asan-shadow", action="store_true",
                        help="leave out AddressSanitizer's shadow memory")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command")
    code, report, out, err = run(command, period=args.period, asan_shadow=args.asan_shadow)
    sys.stderr.write(err)
    report["command"] = command
    print(json.dumps(report, indent=1))
    sys.exit(code)


if __name__ == "__main__":
    main()
