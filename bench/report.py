#!/usr/bin/env python3
"""The benchmark tables of docs/benchmarks.md, made from the JSON the bench scripts write.

    .venv/bin/python bench/report.py bench/results/rechunk.json [more.json ...]
        [--draft] [--svg bench/results/rechunk_cliff.svg]
    .venv/bin/python bench/report.py --all          # every bench/results/*.json we know

Prints Markdown: for each document the tables of its benchmark, each with a
line saying how it was measured (reps, load, other CPU, discarded reps,
commit, command). Cells are "median (min–max)" over the kept reps; ratios are
medians of per-rep ratios (bench/README.md). A smoke run, an incomplete run,
fewer than 5 reps, or a run without the disturbance check or with its
threshold above 0.10 cores is refused (exit 2) unless --draft, which marks
every table DRAFT. --svg draws the W5 cliff chart from a rechunk document.
"""
import argparse
import json
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MB, GB = 10**6, 10**9


class Refused(Exception):
    pass


def intermediate_label(plan):
    """Where a W5 run's intermediate went, from the plan strata printed:
    "spill", "RAM", "read in place" (no intermediate: each target decodes
    its parts of the source), or both of the last two when the exchange
    reads in place but is not fused into its store (its blocks go through
    the memory tier)."""
    note = " ".join(plan.get("rechunk_op", []))
    tiers = sorted({t["tier"] for t in plan.get("tiers", {}).values()})
    if "spill" in note:
        return "spill"
    where = "RAM" if tiers == ["memory"] else ",".join(tiers)
    if "read in place" in note:
        return "read in place" + (f", output via {where}" if where else "")
    return where or "?"


# --------------------------------------------------------------------------
# Cells.

def num(v, digits=2):
    if v is None:
        return "–"
    if abs(v) >= 1000:
        return f"{v:.0f}"
    if abs(v) >= 100:
        return f"{v:.1f}" if digits > 1 else f"{v:.0f}"
    return f"{v:.{digits}f}"


def cell(st, scale=1.0, digits=2, spread=True):
    """'median (min–max)' of a stat dict, values divided by scale."""
    if not st or st.get("median") is None:
        return "–"
    m, lo, hi = (st[k] / scale for k in ("median", "min", "max"))
    if not spread or st.get("n", 0) < 2:
        return num(m, digits)
    return f"{num(m, digits)} ({num(lo, digits)}–{num(hi, digits)})"


def size(b):
    if b is None:
        return "–"
    if b == 0:
        return "0"
    if b >= GB:
        return f"{b / GB:.2f} GB"
    if b >= MB:
        return f"{b / MB:.0f} MB"
    return f"{b / 1e3:.0f} kB"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def summary(case, contender, key):
    return case.get("summary", {}).get(contender, {}).get(key)


def median(case, contender, key):
    st = summary(case, contender, key)
    return st["median"] if st else None


def ratio(case, label):
    return case.get("ratios", {}).get(label)


def cases(doc, prefix=""):
    return [c for c in doc.get("cases", []) if c["case"].startswith(prefix)]


def has(case, contender):
    return contender in case.get("contenders", {})


def checks_note(cs):
    bad = [f"{c['case']}: {k}: {v}" for c in cs for k, v in c.get("checks", {}).items()
           if str(v).startswith("FAILED") or "DIFFER" in str(v)]
    if bad:
        return " **Output checks failed:** " + "; ".join(bad) + "."
    if any(c.get("checks") for c in cs):
        return " Every output was checked against a reference (`checks` in the JSON)."
    return ""


def host(doc):
    """The machine a document was measured on: its CPU model and cores."""
    m = doc.get("machine") or {}
    cores = m.get("cpus_usable") or m.get("cpus")
    return (f"host CPU {m.get('cpu_model') or 'unknown'}"
            + (f", {cores} cores" if cores else ""))


def measured_commit(doc):
    """The commit measured, and whether the tree differed from it. Results of
    other benchmarks written in between (bench/results/) are not code and do
    not count."""
    git = doc.get("git", {})
    dirty = [f for f in git.get("dirty_files") or []
             if not f[3:].strip('"').startswith("bench/results/")]
    return (git.get("commit") or "?")[:10] + (" + uncommitted changes" if dirty else "")


def footer(doc, cs):
    """How the table's figures were measured, from the document."""
    if not cs:  # a table of counts (no timed case behind it)
        return (f"_Counted, not timed; commit {measured_commit(doc)}, "
                f"{doc.get('date_start', '?')}; {host(doc)}. `{doc.get('command', '?')}`._")
    runs = [r for c in cs for rep in c.get("reps", []) for r in rep["runs"].values()]
    loads = [r["load_1min_before"] for r in runs if r.get("load_1min_before") is not None]
    other = [r["other_cores"] for r in runs if r.get("other_cores") is not None]
    reps = min((len(c.get("reps", [])) for c in cs), default=0)
    discarded = sum(len(c.get("discarded", [])) for c in cs)
    commit = measured_commit(doc)
    parts = [f"{reps} rep{'s' if reps != 1 else ''}, contenders interleaved in rotated order; cells are median "
             f"(min–max), ratios the median (min–max) of per-rep ratios"]
    if loads:
        parts.append(f"1-min load average before runs {num(statistics.median(loads))} "
                     f"({num(min(loads))}–{num(max(loads))})")
    if other:
        parts.append(f"other processes used at most {num(max(other))} cores during a kept run")
    parts.append(f"{discarded} disturbed rep{'s' if discarded != 1 else ''} discarded and redone")
    parts.append(f"commit {commit}, {doc.get('date_start', '?')}")
    parts.append(host(doc))
    line = "; ".join(parts) + f". `{doc.get('command', '?')}`."
    return "_" + line + checks_note(cs) + "_"


def prepared(doc):
    return doc.get("prepared_variant")


# --------------------------------------------------------------------------
# Tables, one function per benchmark.

def codec_tables(doc):
    [case] = cases(doc, "codec_bench")
    s = case["summary"]["codec_bench"]
    rows = [["memcpy (baseline)", "–", cell(s.get("memcpy|MBps"), digits=0),
             cell(s.get("memcpy|MBps"), digits=0)]]
    for name in case.get("codecs", []):
        dec = cell(s.get(f"{name}|decode_MBps"), digits=0)
        if f"{name}|decode_vs_blosc_native" in s:
            dec += f" (libblosc's own: {num(s[f'{name}|decode_vs_blosc_native']['median'])}×)"
        rows.append([name, num(s[f"{name}|compression_ratio"]["median"]),
                     cell(s.get(f"{name}|encode_MBps"), digits=0), dec])
    ctx = case.get("context") or {}
    title = (f"Codecs on one {size(ctx.get('chunk_bytes'))} float64 chunk "
             f"{tuple(ctx.get('chunk_shape', []))}, MB/s of decoded data (each run: "
             f"codec_bench's median of ≥ {ctx.get('reps')} timings)")
    return [(title, table(["codec", "ratio", "encode MB/s", "decode into destination MB/s"],
                          rows), [case])]


def copy_tables(doc):
    [case] = cases(doc, "copy")
    d = case["describe"]
    labels = d.get("labels", {})
    names = [n for n, c in case["contenders"].items() if c["variant"] == "user"]
    peers = any(n.startswith(("zarr-python", "tensorstore")) for n in names)
    header = ["workload", "median s", "MB/s (logical)", "time vs `cp -r`"]
    if peers:
        header.append("time vs `strata copy zstd`")
    if prepared(doc):
        header += ["page cache dropped: median s", "time vs `cp -r` (dropped)"]
    rows = []
    for n in names:
        t = summary(case, n, "time_s")
        r = ratio(case, f"{n}/cp -r:time_s")
        row = [labels.get(n, n), cell(t), num(d["logical_bytes"] / t["median"] / MB, 0)
               if t and t["median"] else "–", "1.00" if n == "cp -r" else cell(r)]
        if peers:
            row.append("1.00" if n == "strata copy zstd" else
                       cell(ratio(case, f"{n}/strata copy zstd:time_s")))
        if prepared(doc):
            p = f"{n} (prepared)"
            rp = ratio(case, f"{p}/cp -r (prepared):time_s")
            row += [cell(summary(case, p, "time_s")), "1.00" if n == "cp -r" else cell(rp)]
        rows.append(row)
    title = (f"`strata copy` of the {size(d['logical_bytes'])} seed array "
             f"({d['shape'][0]} × {d['shape'][1]} float64, chunks {tuple(d['chunks'])}, "
             f"{size(d['stored_bytes'])} stored), source warm")
    return [(title, table(header, rows), [case])]


def quadratic_tables(doc):
    cs = cases(doc, "t=")
    header = ["t", "strata s", "dask s", "dask / strata time", "strata peak RSS",
              "dask peak RSS", "work_dir bytes"]
    cubed = any(has(c, "cubed") for c in cs)
    if cubed:
        header += ["cubed s", "cubed / strata time", "cubed peak RSS",
                   "cubed's intermediate bytes (peak)"]
    if prepared(doc):
        header += ["prepared: strata s", "prepared: dask s", "prepared: dask / strata"]
    rows = []
    for c in cs:
        row = [c["describe"]["t"], cell(summary(c, "strata", "wall_s")),
               cell(summary(c, "dask", "wall_s")), cell(ratio(c, "dask/strata")),
               size(median(c, "strata", "peak_rss_bytes")),
               size(median(c, "dask", "peak_rss_bytes")),
               size((summary(c, "strata", "work_peak_bytes") or {}).get("max"))]
        if cubed:
            row += [cell(summary(c, "cubed", "wall_s")), cell(ratio(c, "cubed/strata")),
                    size(median(c, "cubed", "peak_rss_bytes")),
                    size(median(c, "cubed", "work_peak_bytes"))]
        if prepared(doc):
            row += [cell(summary(c, "strata (prepared)", "wall_s")),
                    cell(summary(c, "dask (prepared)", "wall_s")),
                    cell(ratio(c, "dask (prepared)/strata (prepared)"))]
        rows.append(row)
    d = cs[0]["describe"] if cs else {}
    title = (f"Quadratic means: u, v float64 (t, {d.get('shape', [0, 0, 0])[1]}, "
             f"{d.get('shape', [0, 0, 0])[2]}), chunks {tuple(d.get('chunks', []))}, "
             f"allowed_mem {d.get('allowed_mem')}, page cache warm; Dask with its defaults"
             + ("; Cubed's processes executor (2 workers) at the same allowed_mem"
                if cubed else ""))
    return [(title, table(header, rows), cs)]


def workload_name(d):
    s, a, b = d["shape"], d["source_chunks"], d["target_chunks"]
    dims = f"{s[0]}²" if len(s) == 2 and s[0] == s[1] else "×".join(map(str, s))
    return (f"{d['workload']}: {dims} f8, ({','.join(map(str, a))}) → "
            f"({','.join(map(str, b))}), {d['allowed_mem']}")


def rechunk_tables(doc):
    out = []
    cs = [c for c in cases(doc, "W") if not c["case"].startswith("W5")]
    if cs:
        rows = []
        for c in cs:
            rows.append([workload_name(c["describe"]), cell(summary(c, "strata", "wall_s")),
                         cell(summary(c, "dask", "wall_s")), cell(ratio(c, "dask/strata")),
                         cell(summary(c, "bound", "wall_s")), cell(ratio(c, "strata/bound")),
                         f"{num(median(c, 'strata', 'peak_rss_bytes') / MB, 0)} / "
                         f"{num(median(c, 'dask', 'peak_rss_bytes') / MB, 0)} MB",
                         size((summary(c, "strata", "intermediate_bytes_written") or {})
                              .get("max"))])
        out.append(("Rechunk against Dask (defaults) and this machine's bound, source warm, "
                    "nothing pre-touched",
                    table(["workload", "strata s", "dask s", "dask / strata", "bound s",
                           "strata / bound", "peak RSS strata / dask", "intermediate bytes "
                           "on disk"], rows), cs))
        if prepared(doc):
            rows = [[workload_name(c["describe"]),
                     cell(summary(c, "strata (prepared)", "wall_s")),
                     cell(summary(c, "dask (prepared)", "wall_s")),
                     cell(ratio(c, "dask (prepared)/strata (prepared)")),
                     cell(summary(c, "bound (prepared)", "wall_s")),
                     cell(ratio(c, "strata (prepared)/bound (prepared)")),
                     cell(ratio(c, "strata/strata (prepared)"))] for c in cs]
            out.append(("Prepared variant (not what a user sees): page cache dropped and "
                        "memory pre-touched before each run",
                        table(["workload", "strata s", "dask s", "dask / strata", "bound s",
                               "strata / bound", "strata user / prepared"], rows), cs))
    peer_cs = [c for c in cs if any(has(c, p) for p, _ in RECHUNK_PEERS[1:])]
    if peer_cs:
        out.append(rechunk_peers_table(doc, peer_cs))
    w5 = cases(doc, "W5")
    if w5:
        rows = []
        dask = any(has(c, "dask") for c in w5)
        for c in w5:
            d = c["describe"]
            plan = c.get("strata_run_plan") or {}
            tier = intermediate_label(plan)
            row = [f"{d['size_over_total_system_mem']:g}", f"{d['size_gb']:.2f}",
                   cell(summary(c, "strata", "s_per_gb")), cell(summary(c, "bound", "s_per_gb")),
                   cell(ratio(c, "strata/bound")),
                   size(median(c, "strata", "intermediate_bytes_written")), tier]
            if dask:
                row.insert(4, cell(summary(c, "dask", "s_per_gb")))
            rows.append(row)
        header = ["size / total_system_mem", "GB", "strata s/GB", "bound s/GB (all in RAM)",
                  "strata / bound", "spilled to disk", "intermediate"]
        if dask:
            header.insert(4, "dask s/GB")
        cl = doc.get("cliff", {})
        out.append((f"The cliff (W5): {cl.get('shape')}, chunks {cl.get('source_chunks')} → "
                    f"{tuple(cl.get('target_chunks', []))}, total_system_mem "
                    f"{cl.get('total_system_mem')}, allowed_mem {cl.get('allowed_mem')}; "
                    "seconds per GB", table(header, rows), w5))
    return out


# The peers of rechunk.py's W1 and W4, as the table names them.
RECHUNK_PEERS = [("dask", "Dask, threaded scheduler"),
                 ("dask-cluster", "Dask, 2-worker LocalCluster"),
                 ("rechunker", "rechunker (Dask threads)"),
                 ("cubed", "Cubed, processes executor")]


def best_peer_ratio(case, peers, key="wall_s"):
    """The fastest peer's figure over strata's within each kept rep (never
    across reps), summarised like the protocol's ratios."""
    per_rep = []
    for rep in case.get("reps", []):
        runs = rep["runs"]
        vals = [runs[p].get(key) for p in peers if p in runs and runs[p].get(key) is not None]
        base = (runs.get("strata") or {}).get(key)
        if vals and base:
            per_rep.append(min(vals) / base)
    if not per_rep:
        return None
    return {"median": statistics.median(per_rep), "min": min(per_rep), "max": max(per_rep),
            "n": len(per_rep)}


def cubed_memory_note(d):
    """Where Cubed ran at another allowed_mem than Strata's (its planner
    refused ours), the row says so, with its refusal."""
    ran = d.get("cubed_allowed_mem")
    m = re.fullmatch(r"([0-9.]+)(MB|GB)", str(d.get("allowed_mem")))
    ours = int(float(m.group(1)) * {"MB": 10**6, "GB": 10**9}[m.group(2)]) if m else None
    if not ran or ran == ours:
        return ""
    refusal = d.get("cubed_refused_ours") or "refused"
    return (f", at allowed_mem {ran / 1e6:.0f} MB: it refuses {d.get('allowed_mem')} "
            f"(\"{refusal.split(' for op')[0]}\")")


def rechunk_peers_table(doc, cs):
    """W1 and W4 against every peer: one row per contender, then the fastest
    peer of each rep against strata."""
    rows = []
    for c in cs:
        peers = [p for p, _ in RECHUNK_PEERS if has(c, p)]
        for name, label in [("strata", "Strata (`strata rechunk`)")] + [
                (p, lbl) for p, lbl in RECHUNK_PEERS if p in peers]:
            rss = summary(c, name, "total_peak_rss_bytes") or summary(c, name, "peak_rss_bytes")
            method = (c.get("reps") or [{}])[0].get("runs", {}).get(name, {}).get(
                "extra", {}).get("rechunk_method")
            if name == "cubed":
                label += cubed_memory_note(c["describe"])
            # the workload named on its first row only
            rows.append([workload_name(c["describe"]) if name == "strata" else "",
                         label + (f" (`{method}`)" if method else ""),
                         cell(summary(c, name, "wall_s")),
                         "1.00" if name == "strata" else cell(ratio(c, f"{name}/strata")),
                         cell(rss, MB, 0) + " MB",
                         size((summary(c, name, "intermediate_bytes_written") or {})
                              .get("max"))])
        rows.append(["", "**best peer of each rep**", "–",
                     cell(best_peer_ratio(c, peers)), "–", "–"])
    versions = (doc.get("peers") or {}).get("versions") or {}
    title = ("Rechunk against the peers, source warm, each as its users run it"
             + (f" ({', '.join(f'{k} {v}' for k, v in versions.items())})" if versions else "")
             + ": the LocalCluster (2 worker processes × 1 thread, Dask's memory limit) is "
               "started before the reps and its start-up is not timed; its peak RSS is the "
               "client's plus every worker's; rechunker's max_mem and Cubed's allowed_mem are "
               "Strata's allowed_mem (unless the row says otherwise), their intermediates "
               "written to local disk")
    return (title, table(["workload", "contender", "s", "time / strata", "peak RSS",
                          "intermediate bytes on disk"], rows), cs)


def processes_tables(doc):
    cs = cases(doc, "W")
    rows = [[workload_name(c["describe"]), cell(summary(c, "threads", "wall_s")),
             cell(summary(c, "processes", "wall_s")), cell(ratio(c, "processes/threads")),
             cell(ratio(c, "processes/threads:compute_s")),
             f"{num(median(c, 'threads', 'peak_rss_bytes') / MB, 0)} / "
             f"{num(median(c, 'processes', 'max_worker_rss_bytes') / MB, 0)} / "
             f"{num(median(c, 'processes', 'tree_rss_sampled_peak_bytes') / MB, 0)} MB",
             size(max((summary(c, e, "intermediate_bytes_written") or {}).get("max") or 0
                      for e in ("threads", "processes")))] for c in cs]
    out = [("Executors: `threads` (2 workers) against `processes` (2 worker processes)",
            table(["workload", "threads s", "processes s", "processes / threads",
                   "(compute time)", "peak RSS threads / one worker / process tree",
                   "intermediate bytes on disk"], rows), cs)]
    if prepared(doc):
        rows = [[workload_name(c["describe"]), cell(summary(c, "threads (prepared)", "wall_s")),
                 cell(summary(c, "processes (prepared)", "wall_s")),
                 cell(ratio(c, "processes (prepared)/threads (prepared)"))] for c in cs]
        out.append(("Prepared variant (not what a user sees): page cache dropped, memory "
                    "pre-touched", table(["workload", "threads s", "processes s",
                                          "processes / threads"], rows), cs))
    return out


def mpi_tables(doc):
    cs = cases(doc, "W")
    rows = [[workload_name(c["describe"]), cell(summary(c, "threads", "wall_s")),
             f"{cell(summary(c, 'mpi', 'wall_s'))} ({cell(summary(c, 'mpi', 'compute_s'))})",
             f"{cell(ratio(c, 'mpi/threads'))} ({cell(ratio(c, 'mpi/threads:compute_s'))})",
             f"{num(median(c, 'threads', 'peak_rss_bytes') / MB, 0)} / "
             f"{num(median(c, 'mpi', 'max_rss_process_bytes') / MB, 0)} / "
             f"{num(median(c, 'mpi', 'tree_rss_sampled_peak_bytes') / MB, 0)} MB",
             size(max((summary(c, e, "intermediate_bytes_written") or {}).get("max") or 0
                      for e in ("threads", "mpi")))] for c in cs]
    launcher = cases(doc, "mpirun")
    title = "Executors: `threads` (2 workers) against `mpi` (`mpirun -np 2 --mca pml ob1`)"
    if launcher:
        title += (f"; `mpirun -np 2 /bin/true` alone takes "
                  f"{cell(summary(launcher[0], 'mpirun', 'wall_s'))} s")
    return [(title, table(["workload", "threads s", "mpi s (compute s)",
                           "mpi / threads (compute)", "peak RSS threads / one rank / job",
                           "intermediate bytes on disk"], rows), cs + launcher)]



def megabytes(*values):
    """'a / b / c MB' of byte counts, '–' for one not measured."""
    return " / ".join("–" if v is None else num(v / MB, 0) for v in values) + " MB"


def mpi_hosts_tables(doc):
    cs = cases(doc, "W")
    rows = []
    for c in cs:
        d = c["describe"]
        ranks = range(d.get("ranks", 0))
        name = workload_name(d) + (f", `--tier {d['tier']}`" if d.get("tier", "default")
                                   != "default" else "")
        rows.append([
            name, cell(summary(c, "threads", "wall_s")),
            f"{cell(summary(c, 'mpi', 'wall_s'))} ({cell(summary(c, 'mpi', 'compute_s'))})",
            f"{cell(ratio(c, 'mpi/threads'))} ({cell(ratio(c, 'mpi/threads:compute_s'))})",
            f"{size(median(c, 'mpi', 'bytes_between_ranks'))} / "
            f"{size(median(c, 'mpi', 'bridge_bytes'))}",
            megabytes(*(median(c, "mpi", f"rank{r}_peak_pool_bytes") for r in ranks)),
            megabytes(median(c, "threads", "peak_rss_bytes"),
                      median(c, "mpi", "max_rss_process_bytes"),
                      median(c, "mpi", "tree_rss_sampled_peak_bytes")),
            size(max((summary(c, e, "intermediate_bytes_written") or {}).get("max") or 0
                     for e in ("threads", "mpi")))])
    launcher = cases(doc, "mpirun")
    cl = doc.get("cluster", {})
    hosts = len(cl.get("hosts", [])) or "?"
    title = (f"Executors across hosts: `threads` (2 workers) on one host against `mpi` on "
             f"{hosts} simulated hosts (network namespaces of this machine, TCP over a "
             f"software bridge, one rank per host"
             + (f": {sum(cl.get('ranks_per_host', []))} ranks oversubscribed on "
                f"{cl.get('cores')} cores" if cl.get("oversubscribed") else "") + ")")
    if launcher:
        title += (f"; mpirun across the hosts running `hostname` alone takes "
                  f"{cell(summary(launcher[0], 'mpirun', 'wall_s'))} s")
    return [(title, table(["workload", "threads s", "mpi s (compute s)",
                           "mpi / threads (compute)", "block bytes between ranks / bytes over "
                           "the bridge", "peak pool per rank (history)",
                           "peak RSS threads / one rank / job", "intermediate bytes on disk"],
                          rows), cs + launcher)]

def s3_tables(doc):
    [case] = cases(doc, "s3")
    d = case["describe"]
    pairs = {"strata up": "strata up/curl PUT", "strata up one PUT": "strata up one PUT/curl PUT",
             "strata down": "strata down/curl GET"}
    rows = []
    for n in case["contenders"]:
        t = summary(case, n, "wall_s")
        rows.append([d["labels"].get(n, n), cell(t),
                     num(d["stored_bytes"] / t["median"] / MB, 0) if t and t["median"] else "–",
                     cell(ratio(case, pairs[n])) if n in pairs else "1.00"])
    title = (f"`strata copy` local → S3 → local of the {size(d['logical_bytes'])} seed array "
             f"({d['files']} files, {size(d['stored_bytes'])} stored) through s3rver on "
             f"127.0.0.1, against curl ({d['workers']} transfers at once); the server's CPU "
             "counts as the workload's")
    return [(title, table(["workload", "median s", "MB/s (stored)", "time vs curl"], rows),
             [case])]


def climate_tables(doc):
    cs = doc.get("cases", [])
    header = ["layout", "op", "strata s", "dask s", "dask / strata time", "strata peak RSS",
              "dask peak RSS", "dask / strata RSS"]
    rows = []
    for c in cs:
        d = c["describe"]
        rows.append([f"{d['layout']} {tuple(d['chunks'])}", d["op"],
                     cell(summary(c, "strata", "wall_s")), cell(summary(c, "dask", "wall_s")),
                     cell(ratio(c, "dask/strata")),
                     size(median(c, "strata", "peak_rss_bytes")),
                     size(median(c, "dask", "peak_rss_bytes")),
                     cell(ratio(c, "dask/strata:peak_rss_bytes"))])
    d = cs[0]["describe"] if cs else {}
    title = (f"Climate operations: (time, lat, lon) float64 {tuple(d.get('shape', []))}, "
             f"{int(100 * d.get('nan_share', 0))}% NaN, along time; allowed_mem "
             f"{d.get('allowed_mem')}, page cache warm; Dask with its defaults")
    return [(title, table(header, rows), cs)]


def sharding_tables(doc):
    cs = [c for c in doc.get("cases", []) if len(c.get("contenders", {})) == 2]
    rows = []
    for c in cs:
        sharded, unsharded = list(c["contenders"])
        rows.append([c["case"], c["contenders"][sharded].get("label", sharded),
                     cell(summary(c, sharded, "wall_s")), cell(summary(c, unsharded, "wall_s")),
                     cell(ratio(c, f"{sharded}/{unsharded}")),
                     f"{size(median(c, sharded, 'peak_rss_bytes'))} / "
                     f"{size(median(c, unsharded, 'peak_rss_bytes'))}"])
    d = cs[0]["describe"] if cs else {}
    title = (f"Sharded Zarr v3 writes: the seed array {tuple(d.get('shape', []))} "
             f"float64 in chunks {tuple(d.get('source_chunks', []))}, into shards "
             f"{tuple(d.get('shards', []))} of inner chunks {tuple(d.get('inner_chunks', []))} "
             "against the unsharded v3 write of the same run; page cache warm. Goal: sharded / "
             "unsharded ≤ 1.2")
    out = [(title, table(["case", "sharded command", "sharded s", "unsharded s",
                          "sharded / unsharded", "peak RSS sharded / unsharded"], rows), cs)]
    pr = doc.get("partial_read")
    if pr:
        rows = [[name, f"{tuple(r['origin'])} + {tuple(r['shape'])}", size(r["bytes_read"]),
                 f"{100 * r['fraction_of_bytes_read']:.2f}%"]
                for name, r in pr.get("regions", {}).items()]
        out.append((f"Partial reads of the sharded array ({size(pr.get('array_stored_bytes'))} "
                    f"stored): a region of {100 * pr.get('region_fraction_of_elements', 0):.0f}% "
                    "of the elements. Goal: ≤ 2% of the bytes", table(
                        ["region", "origin + shape", "bytes read", "of the stored bytes"], rows),
                    []))
    return out


def python_tables(doc):
    work = [c for c in doc.get("cases", []) if c["case"] != "plan"]
    rows = []
    for c in work:
        d = c["describe"]
        what = (f"quadratic means T={d['t']}" if c["case"].startswith("quadratic")
                else f"seed rechunk {tuple(d['shape'])}, {tuple(d['source_chunks'])} → "
                     f"{tuple(d['target_chunks'])}")
        rows.append([f"{what}, allowed_mem {d['allowed_mem']}",
                     cell(summary(c, "cpp", "wall_s")), cell(summary(c, "python", "wall_s")),
                     cell(ratio(c, "python/cpp")), cell(summary(c, "dask", "wall_s")),
                     cell(ratio(c, "dask/python")), cell(summary(c, "numpy", "wall_s")),
                     cell(ratio(c, "numpy/python")),
                     " / ".join(num((median(c, k, "peak_rss_bytes") or 0) / MB, 0)
                                for k in ("cpp", "python", "dask", "numpy")) + " MB"])
    out = []
    if work:
        out.append(("Python against C++: the same workload through `import strata`, "
                    "the C++ API or CLI, Dask and zarr-python + numpy; page cache warm; peers "
                    "with their defaults. Goal: python / C++ ≤ 1.05",
                    table(["workload", "C++ s", "python s", "python / C++", "dask s",
                           "dask / python", "numpy s", "numpy / python",
                           "peak RSS C++ / python / dask / numpy"], rows), work))
    plan = [c for c in doc.get("cases", []) if c["case"] == "plan"]
    for c in plan:
        d = c["describe"]
        tasks = median(c, "cpp", "plan_tasks")
        ms = 1e-3
        rows = [["plan (after the first, median per plan)", cell(summary(c, "cpp", "plan_s"), ms),
                 cell(summary(c, "python", "plan_s"), ms), cell(ratio(c, "python/cpp:plan_s"))],
                ["first plan in the process", cell(summary(c, "cpp", "first_plan_s"), ms),
                 cell(summary(c, "python", "first_plan_s"), ms),
                 cell(ratio(c, "python/cpp:first_plan_s"))]]
        out.append((f"Planning from Python: mean(sqrt(x) * 2 + 1, axis=0) over {d['shape']} in "
                    f"chunks {d['chunks']} ({num(tasks, 0) if tasks else '?'} tasks), "
                    f"{d['plans_per_process']} plans per process. Goal: python / C++ ≤ 1.10",
                    table(["", "C++ ms", "python ms", "python / C++"], rows), [c]))
    return out


def dask_rechunk_tables(doc):
    out = []
    for c in cases(doc, "W4"):
        d = c["describe"]
        threads = sorted(set((d.get("cluster") or {}).get("threads", {}).values())) or ["?"]
        rows = []
        # "dask-tasks": the name of Dask's contender in runs against Dask
        # 2022.12, whose only method was tasks
        dask = "dask" if has(c, "dask") else "dask-tasks"
        methods = sorted({r["runs"][dask]["extra"].get("rechunk_method", "")
                          for r in c.get("reps", []) if dask in r["runs"]} - {""})
        method = "/".join(methods) or ("tasks" if dask == "dask-tasks" else "its default method")
        for name, label in (("strata-dask", 'strata, `executor="dask"`'),
                            (dask, f"dask `rechunk` ({method})")):
            if not has(c, name):
                continue
            spill = max((summary(c, name, k) or {}).get("max") or 0
                        for k in ("dask_local_peak_bytes", "intermediate_bytes_written"))
            rows.append([label, cell(summary(c, name, "wall_s")),
                         cell(ratio(c, f"{dask}/strata-dask")) if name == "strata-dask"
                         else "–",
                         cell(summary(c, name, "helper_cpu_s"), digits=1),
                         cell(summary(c, name, "worker_peak_rss_bytes"), MB, 0) + " MB",
                         size(spill)])
        rss = ratio(c, f"{dask}/strata-dask:worker_peak_rss_bytes")
        out.append((f"The `dask` executor: W4 ({d['shape'][0]}² float64, "
                    f"{tuple(d['source_chunks'])} → {tuple(d['target_chunks'])}, allowed_mem "
                    f"{size(d['allowed_mem'])}, blosc source) on a `LocalCluster` of "
                    f"{len((d.get('cluster') or {}).get('threads', {})) or '?'} worker "
                    f"processes × {'/'.join(map(str, threads))} thread on 127.0.0.1, against "
                    f"Dask's own `rechunk` on the same cluster, with the method Dask picks "
                    f"there by default"
                    + (f"; Dask's worker peak RSS is {cell(rss)}× Strata's" if rss else ""),
                    table(["contender", "s", "dask / strata", "cluster CPU s",
                           "peak RSS per worker", "spilled or intermediate bytes"], rows), [c]))
    return out


def contract_cell(c, contender="strata"):
    """The memory contract of a contender's kept runs: every task measured <=
    projected <= allowed_mem (issue 19), from the runs' extras."""
    runs = [rep["runs"][contender] for rep in c.get("reps", []) if contender in rep["runs"]]
    if not runs or not any("contract_ok" in r.get("extra", {}) for r in runs):
        return "not measured"
    ex = [r["extra"] for r in runs]
    bad = [e for e in ex if not e.get("contract_ok")]
    tasks = sorted({e.get("tasks", 0) for e in ex})
    most = lambda k: max((e.get(k) or 0) for e in ex)  # noqa: E731
    limits = f"max measured {size(most('max_measured_task_mem'))}, max projected " \
             f"{size(most('max_projected_task_mem'))}, allowed {size(ex[0].get('allowed_mem'))}"
    if bad:
        return (f"**violated** in {len(bad)} of {len(runs)} runs "
                f"({most('tasks_over_projection')} tasks over their projection, "
                f"{most('tasks_over_allowed')} projections over allowed_mem; {limits})")
    n = "/".join(str(t) for t in tasks)
    runs_n = f"{len(runs)} run{'s' if len(runs) != 1 else ''}"
    return f"held: all {n} tasks of {runs_n} measured ≤ projected ≤ allowed ({limits})"


def weather_tables(doc):
    out = weather_pipeline_tables(doc)
    cs = [c for c in cases(doc) if c.get("describe", {}).get("steps") == "cubed"]
    if cs:
        rows = []
        for c in cs:
            d = c["describe"]
            rows.append([f"{size(d.get('dataset_bytes'))}: " + " × ".join(
                             f"{k} {v}" for k, v in (d.get("dims") or {}).items()),
                         cell(summary(c, "strata", "wall_s")), cell(summary(c, "dask", "wall_s")),
                         cell(summary(c, "cubed", "wall_s")), cell(ratio(c, "dask/strata")),
                         cell(ratio(c, "cubed/strata")),
                         " / ".join(size(median(c, n, "peak_rss_bytes"))
                                    for n in ("strata", "dask", "cubed")),
                         size(median(c, "cubed", "work_peak_bytes"))])
        title = ("The pipeline's steps Cubed can run through xarray (xarray refuses the "
                 "pointwise sel on any chunked array but Dask's): the same features, wind "
                 "speed and °C, averaged over every grid point of each field, to Zarr; the "
                 "same code for all three, opened with each one's chunk manager; Dask's "
                 "threaded scheduler, Cubed's processes executor (2 workers) at Strata's "
                 f"allowed_mem {cs[0]['describe'].get('allowed_mem')}")
        out.append((title, table(["dataset", "strata s", "dask s", "cubed s", "dask / strata",
                                  "cubed / strata", "peak RSS strata / dask / cubed",
                                  "Cubed's intermediate bytes (peak)"], rows), cs))
    return out


def weather_pipeline_tables(doc):
    cs = [c for c in cases(doc) if c.get("describe", {}).get("steps") != "cubed"]
    if not cs:
        return []
    cluster = any("dask-cluster" in c.get("contenders", {}) for c in cs)
    header = ["dataset", "strata s", "dask s", "dask / strata time", "strata peak RSS",
              "dask peak RSS", "dask / strata RSS", "memory contract (strata)"]
    if cluster:
        header += ["dask-cluster s", "dask-cluster / strata time"]
    if prepared(doc):
        header += ["prepared: strata s", "prepared: dask s", "prepared: dask / strata"]
    rows = []
    for c in cs:
        d = c["describe"]
        dims = d.get("dims") or {}
        row = [f"{size(d.get('dataset_bytes'))}: " + " × ".join(
                   f"{k} {v}" for k, v in dims.items()) + f", {d.get('points')} points",
               cell(summary(c, "strata", "wall_s")), cell(summary(c, "dask", "wall_s")),
               cell(ratio(c, "dask/strata")),
               size(median(c, "strata", "peak_rss_bytes")),
               size(median(c, "dask", "peak_rss_bytes")),
               cell(ratio(c, "dask/strata:peak_rss_bytes")), contract_cell(c)]
        if cluster:
            row += [cell(summary(c, "dask-cluster", "wall_s")),
                    cell(ratio(c, "dask-cluster/strata"))]
        if prepared(doc):
            row += [cell(summary(c, "strata (prepared)", "wall_s")),
                    cell(summary(c, "dask (prepared)", "wall_s")),
                    cell(ratio(c, "dask (prepared)/strata (prepared)"))]
        rows.append(row)
    d = cs[0]["describe"] if cs else {}
    ds = doc.get("dataset") or {}
    title = (f"Weather-features pipeline (`examples/weather_pipeline.py`, verbatim "
             f"through xarray's API): u10, v10, t2m float32, one field per chunk; nearest points "
             f"with a country label, wind speed and °C, mean by country over the points, to "
             f"{d.get('output', 'zarr')}; allowed_mem {d.get('allowed_mem')}, page cache warm, "
             f"dataset "
             f"{'reused from an earlier run' if ds.get('reused') else 'generated before the reps'}"
             f" (untimed); Dask with its defaults (threads"
             + ("; dask-cluster: a 2-worker LocalCluster, peak RSS of the client process only"
                if cluster else "") +
             "). Goal: dask / strata time ≥ 5, strata's peak RSS lower, every task "
             "measured ≤ projected ≤ allowed")
    return [(title, table(header, rows), cs)]


RAY_CONTENDERS = [("threads", "Strata, threads"), ("strata-ray", "Strata, `executor=\"ray\"`"),
                  ("strata-dask", "Strata, `executor=\"dask\"` (LocalCluster)"),
                  ("cubed-ray", "Cubed, Ray executor")]


def ray_tables(doc):
    rows = []
    for c in cases(doc):
        d = c["describe"]
        for i, (name, label) in enumerate(RAY_CONTENDERS):
            if not has(c, name):
                continue
            if name == "cubed-ray" and d.get("cubed_refused_ours"):
                label += f" (at allowed_mem {size(d.get('cubed_allowed_mem'))}: it refuses ours)"
            if name == "strata-ray":
                rel = "1.00"
            elif name == "threads":
                st = ratio(c, "strata-ray/threads")
                # strata-ray/threads inverted: threads' time over strata-ray's
                rel = cell({"median": 1 / st["median"], "min": 1 / st["max"],
                            "max": 1 / st["min"], "n": st.get("n", 2)}) if st else "–"
            else:
                rel = cell(ratio(c, f"{name}/strata-ray"))
            written = median(c, name, "intermediate_bytes_written")
            if written is None:
                written = median(c, name, "work_peak_bytes")
            compute = (cell(summary(c, name, "seconds"))
                       if name != "cubed-ray" and summary(c, name, "seconds") else "–")
            node = median(c, name, "ray_node_peak_pss_bytes")
            node = (size(node + median(c, name, "peak_rss_bytes"))
                    if node is not None and name in ("strata-ray", "cubed-ray") else "–")
            rows.append([workload_name({**d, "workload": c["case"],
                                        "allowed_mem": size(d["allowed_mem"])})
                         if i == 0 else "", label, cell(summary(c, name, "wall_s")), rel,
                         compute, node, size(written)])
    title = ("Strata's ray executor against threads, the dask executor and Cubed's Ray "
             "executor, one local Ray instance (as many CPUs as cores, Ray's default object "
             "store) and one 2-worker LocalCluster started before the reps; source warm. "
             "s: the whole process (connecting to the cluster included); compute s: "
             "Strata's compute alone, as its summary gives it; node peak: the Ray "
             "processes' summed PSS (sampled every 50 ms) plus the driver's peak RSS")
    return [(title, table(["workload", "contender", "s", "time / strata-ray", "compute s",
                           "node peak", "intermediate bytes written"], rows), cases(doc))]


def coordinator_tables(doc):
    cs = cases(doc)
    rows = []
    for c in cs:
        n = c["describe"]["blocks"]
        for name in c.get("contenders", {}):
            rows.append([f"{n:,}", name, cell(summary(c, name, "wall_s")),
                         cell(summary(c, name, "plan_s")),
                         cell(summary(c, name, "us_per_block"), digits=1),
                         size(median(c, name, "peak_rss_bytes")),
                         cell(summary(c, name, "bytes_per_block"), digits=1, spread=False)
                         if name != "dask" else "–",
                         cell(ratio(c, f"dask/{name}")) if name != "dask" and
                         ratio(c, f"dask/{name}") else "–"])
    title = ("The coordinator's cost per block: sum(ones((N,), chunks=(1,))), N blocks of one "
             "float64 (Strata through its C++ API, `bench/coordinator_scale.cc`, 2 workers; "
             "Dask: `da.ones(N, chunks=1).sum().compute()` on its threaded scheduler, up to "
             "10^5 blocks); wall time of the whole process, µs of compute per block, the "
             "process tree's peak RSS and, for Strata, the coordinator's RSS growth per block")
    return [(title, table(["blocks", "contender", "s", "plan s", "compute µs per block",
                           "peak RSS", "RSS bytes per block", "dask / strata time"],
                          rows), cs)] if cs else []


RENDERERS = {"codec_bench": codec_tables, "copy_bench": copy_tables,
             "quadratic_means": quadratic_tables, "rechunk": rechunk_tables,
             "processes": processes_tables, "mpi": mpi_tables, "mpi_hosts": mpi_hosts_tables,
             "s3_copy": s3_tables,
             "climate_ops": climate_tables, "weather_pipeline": weather_tables,
             "python_overhead": python_tables, "sharding": sharding_tables,
             "dask_rechunk": dask_rechunk_tables, "coordinator_scale": coordinator_tables,
             "ray_rechunk": ray_tables}
# rechunk_cliff: the cliff (W5) alone, `bench/rechunk.py --workloads W5 --out
# bench/results/rechunk_cliff.json`, when W1/W4 against the peers and W5 are
# run apart (a rechunk document with W5 cases renders the cliff either way).
ORDER = ["codec_bench", "copy_bench", "quadratic_means", "rechunk", "rechunk_cliff", "processes",
         "mpi", "mpi_hosts",
         "s3_copy", "climate_ops", "weather_pipeline", "sharding", "python_overhead",
         "dask_rechunk", "coordinator_scale", "ray_rechunk"]


def refuse_reason(doc):
    p = doc.get("protocol", {})
    if doc.get("smoke"):
        return "a --smoke run (1 rep, tiny sizes, no disturbance check)"
    if not doc.get("complete"):
        return "an incomplete run"
    if not p.get("check", False):
        return "a run without the disturbance check"
    if (p.get("reps") or 0) < 5:
        return f"{p.get('reps')} reps (the protocol needs at least 5)"
    if (p.get("threshold_cores") or 0) > 0.10 + 1e-9:
        return (f"a disturbance threshold of {p.get('threshold_cores')} cores (the protocol's "
                "is 0.10)")
    return None


def render(doc, draft=False):
    name = doc.get("benchmark")
    if name not in RENDERERS:
        raise Refused(f"no table for benchmark {name!r} (known: {', '.join(ORDER)})")
    why = refuse_reason(doc)
    if why and not draft:
        raise Refused(f"{name}: {why}: not a result for the README (--draft to see it anyway)")
    parts = []
    for title, md, cs in RENDERERS[name](doc):
        head = f"**{title}**" + (f" — DRAFT ({why})" if why else "")
        parts.append(f"{head}\n\n{md}\n\n{footer(doc, cs)}\n")
    return "\n".join(parts)


# --------------------------------------------------------------------------
# The cliff chart.

def cliff_svg(doc, path):
    pts = cases(doc, "W5")
    if not pts:
        raise Refused("no W5 cases in this document")
    cl = doc.get("cliff", {})
    W, H, L, R, T, B = 640, 400, 70, 150, 40, 60
    xs = [p["describe"]["size_over_total_system_mem"] for p in pts]
    series = [("strata", "#1f77b4"), ("bound", "#2ca02c"), ("dask", "#d62728")]
    ys = [summary(p, c, "s_per_gb")["max"] for p in pts for c, _ in series
          if summary(p, c, "s_per_gb")]
    xmax = max(xs) * 1.05
    ymax = max(ys) * 1.15
    sx = lambda x: L + (W - L - R) * x / xmax  # noqa: E731
    sy = lambda y: H - B - (H - T - B) * y / ymax  # noqa: E731
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
         f'font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{L}" y="22" font-size="14">Rechunk cliff (W5): seconds per GB vs array size / '
         f'total_system_mem ({cl.get("total_system_mem")}), allowed_mem '
         f'{cl.get("allowed_mem")}</text>',
         f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/>',
         f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>']
    x = 0.0
    while x <= xmax:
        o.append(f'<line x1="{sx(x):.1f}" y1="{H - B}" x2="{sx(x):.1f}" y2="{H - B + 5}" '
                 f'stroke="black"/><text x="{sx(x):.1f}" y="{H - B + 18}" '
                 f'text-anchor="middle">{x:g}</text>')
        x += 0.5
    ystep = [v for v in (0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50) if ymax / v <= 8][0]
    y = 0.0
    while y <= ymax:
        o.append(f'<line x1="{L - 5}" y1="{sy(y):.1f}" x2="{W - R}" y2="{sy(y):.1f}" '
                 f'stroke="#ddd"/><text x="{L - 8}" y="{sy(y) + 4:.1f}" '
                 f'text-anchor="end">{y:g}</text>')
        y += ystep
    o.append(f'<text x="{(L + W - R) / 2}" y="{H - 8}" text-anchor="middle">array size / '
             f'total_system_mem</text>')
    o.append(f'<text x="{L - 8}" y="{H - B + 30}" text-anchor="end" font-size="9" '
             f'fill="#888">load</text>')
    plan0 = pts[0].get("strata_run_plan") or {}
    ram = re.search(r"([0-9.]+) ([GM])B", plan0.get("ram_for_intermediates", ""))
    tsm = cl.get("total_system_mem_bytes")
    if ram and tsm:  # where the exchange stops fitting in the RAM tier
        xr = float(ram.group(1)) * (GB if ram.group(2) == "G" else MB) / tsm
        o.append(f'<line x1="{sx(xr):.1f}" y1="{T}" x2="{sx(xr):.1f}" y2="{H - B}" '
                 f'stroke="#999" stroke-dasharray="4,3"/><text x="{sx(xr) + 4:.1f}" y="{T + 12}" '
                 f'font-size="10" fill="#666">RAM tier full ({ram.group(0)})</text>')
    o.append(f'<text x="18" y="{(T + H - B) / 2}" text-anchor="middle" '
             f'transform="rotate(-90 18 {(T + H - B) / 2})">wall seconds per GB</text>')
    for i, (c, color) in enumerate(series):
        cp = [(p["describe"]["size_over_total_system_mem"], summary(p, c, "s_per_gb"), p)
              for p in pts if summary(p, c, "s_per_gb")]
        if not cp:
            continue
        o.append('<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>'.format(
            color, " ".join(f"{sx(a):.1f},{sy(s['median']):.1f}" for a, s, _ in cp)))
        for a, s, p in cp:
            o.append(f'<line x1="{sx(a):.1f}" y1="{sy(s["min"]):.1f}" x2="{sx(a):.1f}" '
                     f'y2="{sy(s["max"]):.1f}" stroke="{color}"/>')
            o.append(f'<circle cx="{sx(a):.1f}" cy="{sy(s["median"]):.1f}" r="4" fill="{color}"/>')
            if c == "strata":
                plan = p.get("strata_run_plan") or {}
                tier = intermediate_label(plan)
                o.append(f'<text x="{sx(a):.1f}" y="{sy(s["max"]) - 8 - 11 * (pts.index(p) % 2):.1f}" '
                         f'text-anchor="middle" font-size="10" fill="{color}">{tier}</text>')
                load = median(p, c, "load_1min_before")
                o.append(f'<text x="{sx(a):.1f}" y="{H - B + 30}" text-anchor="middle" '
                         f'font-size="9" fill="#888">{num(load, 1)}</text>')
        ly = T + 20 + 18 * i
        o.append(f'<line x1="{W - R + 15}" y1="{ly}" x2="{W - R + 35}" y2="{ly}" stroke="{color}" '
                 f'stroke-width="2"/><text x="{W - R + 40}" y="{ly + 4}">{c}</text>')
    for k, line in enumerate(["median and min-max", "of the kept reps;", "labels: where the",
                              "exchanged pieces went", "(RAM, or RAM + spill", "to local disk)",
                              "grey: median 1-min", "load avg before runs"]):
        o.append(f'<text x="{W - R + 15}" y="{T + 80 + 13 * k}" font-size="10">{line}</text>')
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--all", action="store_true",
                    help="every bench/results/<name>.json of a known benchmark, in README order")
    ap.add_argument("--draft", action="store_true",
                    help="render smoke, incomplete or under-5-rep runs, marked DRAFT")
    ap.add_argument("--svg", help="draw the W5 cliff chart of the (rechunk) document here")
    args = ap.parse_args(argv)
    files = list(args.files)
    if args.all:
        files += [os.path.join(HERE, "results", f"{n}.json") for n in ORDER
                  if os.path.exists(os.path.join(HERE, "results", f"{n}.json"))]
    if not files:
        ap.error("no JSON files given")
    status = 0
    for f in files:
        with open(f) as fh:
            doc = json.load(fh)
        try:
            print(render(doc, draft=args.draft))
            if args.svg and doc.get("benchmark") == "rechunk" and cases(doc, "W5"):
                cliff_svg(doc, args.svg)
        except Refused as e:
            print(f"report.py: {f}: {e}", file=sys.stderr)
            status = 2
        except KeyError as e:
            print(f"report.py: {f}: not a protocol document ({e} missing); re-run the "
                  "benchmark (bench/README.md)", file=sys.stderr)
            status = 2
    return status


if __name__ == "__main__":
    sys.exit(main())
