"""Unit tests of bench/report.py on documents made by the protocol with a fake
machine (protocol_test's): the cells come from the JSON, ratios are per rep,
and results that are not results are refused.

    .venv/bin/python -m pytest -q bench/report_test.py
"""
import argparse
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol as P  # noqa: E402
import protocol_test as PT  # noqa: E402
import report  # noqa: E402

MB = 10**6


def fake_bench(tmp_path, name, walls, smoke=False, reps=5):
    proto, m, r = PT.make(walls, reps=reps, check=not smoke, smoke=smoke)
    args = argparse.Namespace(reps=reps, max_redos=2, threshold_cores=0.1, quiet_wait=0.0,
                              prepared=False, smoke=smoke, out=str(tmp_path / f"{name}.json"))
    return P.Bench(name, args, scratch=str(tmp_path), protocol=proto)


def with_extra(name, **extra):
    return P.Contender(name, ["true"], finish=lambda run, done: run["extra"].update(extra))


def rechunk_doc(tmp_path, **kw):
    with fake_bench(tmp_path, "rechunk", {"bound": 0.8, "strata": 0.6, "dask": 3.0}, **kw) as b:
        b.case("W1", [with_extra("bound"), with_extra("strata", intermediate_bytes_written=0),
                      with_extra("dask")],
               ratios=[("dask", "strata"), ("strata", "bound")],
               describe={"workload": "W1", "shape": [10000, 10000],
                         "source_chunks": [10000, 1000], "target_chunks": [1000, 10000],
                         "allowed_mem": "400MB"})
        b.doc["cliff"] = {"shape": "(R, 20000) float64", "source_chunks": "(R, 500)",
                          "target_chunks": [500, 20000], "total_system_mem": "2GB",
                          "allowed_mem": "400MB", "total_system_mem_bytes": 2 * 10**9}
        for frac in (0.5, 1.0):
            b.case(f"W5 {frac:g}x", [with_extra("bound", s_per_gb=0.5),
                                     with_extra("strata", s_per_gb=0.6 * frac,
                                                intermediate_bytes_written=int(frac * 1e9))],
                   ratios=[("strata", "bound")],
                   describe={"workload": "W5", "size_over_total_system_mem": frac,
                             "size_gb": 2 * frac})
    return json.load(open(b.out))


def test_rechunk_table_cells_come_from_the_json(tmp_path):
    doc = rechunk_doc(tmp_path)
    md = report.render(doc)
    w1 = next(l for l in md.splitlines() if l.startswith("| W1"))
    cells = [c.strip() for c in w1.strip("|").split("|")]
    assert cells[0] == "W1: 10000² f8, (10000,1000) → (1000,10000), 400MB"
    assert cells[1] == "0.60 (0.60–0.60)"    # strata s
    assert cells[2] == "3.00 (3.00–3.00)"    # dask s
    assert cells[3] == "5.00 (5.00–5.00)"    # dask / strata, per rep
    assert cells[5] == "0.75 (0.75–0.75)"    # strata / bound
    assert cells[7] == "0"                   # intermediate bytes
    assert "5 reps, contenders interleaved in rotated order" in md
    assert "0 disturbed reps discarded" in md
    assert "The cliff (W5)" in md
    row = next(l for l in md.splitlines() if l.startswith("| 1 |"))
    assert "1.00 GB" in row


def rechunk_peers_doc(tmp_path):
    walls = {"bound": 0.8, "strata": 0.6, "dask": 3.0, "dask-cluster": 2.4, "rechunker": 1.8,
             "cubed": 4.2}
    with fake_bench(tmp_path, "rechunk", walls) as b:
        b.case("W4", [with_extra("bound"),
                      with_extra("strata", intermediate_bytes_written=0),
                      with_extra("dask"),
                      with_extra("dask-cluster", rechunk_method="p2p",
                                 total_peak_rss_bytes=900 * MB),
                      with_extra("rechunker", intermediate_bytes_written=3 * 10**9),
                      with_extra("cubed", intermediate_bytes_written=int(3.2e9))],
               ratios=[("dask", "strata"), ("strata", "bound"), ("dask-cluster", "strata"),
                       ("rechunker", "strata"), ("cubed", "strata")],
               describe={"workload": "W4", "shape": [20000, 20000],
                         "source_chunks": [20000, 500], "target_chunks": [500, 20000],
                         "allowed_mem": "1GB"})
        b.doc["peers"] = {"versions": {"cubed": "0.27.0", "rechunker": "0.5.4"}}
    doc = json.load(open(b.out))
    doc["machine"]["cpu_model"] = "Intel(R) Xeon(R) Test CPU @ 2.00GHz"
    return doc


def test_rechunk_peers_table_has_a_row_per_contender(tmp_path):
    md = report.render(rechunk_peers_doc(tmp_path))
    title = next(l for l in md.splitlines() if l.startswith("**Rechunk against the peers"))
    assert "cubed 0.27.0" in title and "start-up is not timed" in title
    rows = {l.split("|")[2].strip(): [c.strip() for c in l.strip("|").split("|")]
            for l in md.splitlines()[md.splitlines().index(title):] if l.startswith("| ")}
    assert rows["Strata (`strata rechunk`)"][2:4] == ["0.60 (0.60–0.60)", "1.00"]
    assert rows["Dask, 2-worker LocalCluster (`p2p`)"][3] == "4.00 (4.00–4.00)"
    assert rows["Dask, 2-worker LocalCluster (`p2p`)"][4] == "900 (900–900) MB"
    assert rows["rechunker (Dask threads)"][3] == "3.00 (3.00–3.00)"
    assert rows["rechunker (Dask threads)"][5] == "3.00 GB"
    assert rows["Cubed, processes executor"][3] == "7.00 (7.00–7.00)"
    # the fastest peer of each rep (rechunker, 1.8 s) over strata's 0.6 s
    assert rows["**best peer of each rep**"][3] == "3.00 (3.00–3.00)"


def test_cubed_at_another_allowed_mem_is_said_on_its_row(tmp_path):
    doc = rechunk_peers_doc(tmp_path)
    d = doc["cases"][0]["describe"]
    d["cubed_allowed_mem"] = 10**9          # ours: no note
    assert "it refuses" not in report.render(doc)
    d["cubed_allowed_mem"] = 1_250_000_000
    d["cubed_refused_ours"] = ("Projected blockwise memory (1.0 GB) exceeds allowed_mem "
                               "(1.0 GB), including reserved_mem (0 bytes) for op-003")
    row = next(l for l in report.render(doc).splitlines() if "Cubed, processes" in l)
    assert "at allowed_mem 1250 MB: it refuses 1GB" in row
    assert "exceeds allowed_mem (1.0 GB)" in row and "op-003" not in row


def test_every_caption_names_the_host_cpu(tmp_path):
    md = report.render(rechunk_peers_doc(tmp_path))
    captions = [l for l in md.splitlines() if l.startswith("_")]
    assert captions and all("host CPU Intel(R) Xeon(R) Test CPU @ 2.00GHz" in l
                            for l in captions)


def test_only_code_changes_make_a_run_uncommitted():
    def doc(*dirty):
        return {"git": {"commit": "0123456789abcdef", "dirty_files": list(dirty)}}
    assert report.measured_commit(doc()) == "0123456789"
    # Another benchmark's results written before this one started.
    assert report.measured_commit(doc(" M bench/results/mpi.json",
                                      "?? bench/results/new.json")) == "0123456789"
    assert report.measured_commit(doc(" M bench/results/mpi.json", " M src/strata/x.cc")) == (
        "0123456789 + uncommitted changes")


def test_no_peers_no_peers_table(tmp_path):
    assert "Rechunk against the peers" not in report.render(rechunk_doc(tmp_path))


def test_smoke_and_short_runs_are_refused_unless_draft(tmp_path):
    doc = rechunk_doc(tmp_path, smoke=True, reps=1)
    with pytest.raises(report.Refused, match="smoke"):
        report.render(doc)
    md = report.render(doc, draft=True)
    assert "DRAFT" in md
    doc = rechunk_doc(tmp_path, reps=3)
    with pytest.raises(report.Refused, match="3 reps"):
        report.render(doc)
    doc = rechunk_doc(tmp_path)
    doc["protocol"]["threshold_cores"] = 100.0
    with pytest.raises(report.Refused, match="threshold of 100.0 cores"):
        report.render(doc)


def test_an_old_document_is_refused_with_a_clear_message(tmp_path, capsys):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"benchmark": "rechunk (issue 4)", "workloads": []}))
    assert report.main([str(path)]) == 2
    assert "no table for benchmark 'rechunk (issue 4)'" in capsys.readouterr().err


def test_failed_checks_are_in_the_table(tmp_path):
    doc = rechunk_doc(tmp_path)
    doc["cases"][0]["checks"] = {"dask": "FAILED: 3 differences"}
    assert "**Output checks failed:** W1: dask: FAILED: 3 differences" in report.render(doc)


def test_cliff_svg(tmp_path):
    doc = rechunk_doc(tmp_path)
    out = tmp_path / "cliff.svg"
    report.cliff_svg(doc, str(out))
    text = out.read_text()
    assert text.startswith("<svg") and "polyline" in text and "strata" in text


def test_cell_formats():
    assert report.cell({"median": 1.234, "min": 1.0, "max": 2.0, "n": 5}) == "1.23 (1.00–2.00)"
    assert report.cell({"median": 1.234, "min": 1.234, "max": 1.234, "n": 1}) == "1.23"
    assert report.cell(None) == "–"
    assert report.cell({"median": 15806.0, "min": 15000.0, "max": 16000.0, "n": 5},
                       digits=0) == "15806 (15000–16000)"
    assert report.size(3768 * 10**6) == "3.77 GB"


def climate_doc(tmp_path, **kw):
    with fake_bench(tmp_path, "climate_ops", {"strata": 0.5, "dask": 2.0}, **kw) as b:
        for op in ("nanmean", "cumsum"):
            b.case(f"map {op}", [with_extra("strata"), with_extra("dask")],
                   ratios=[("dask", "strata")], ratio_keys=("wall_s", "peak_rss_bytes"),
                   describe={"op": op, "layout": "map", "shape": [481, 721, 1440],
                             "chunks": [24, 721, 1440], "nan_share": 0.1,
                             "allowed_mem": "2GB"})
    return json.load(open(b.out))


def test_climate_table_cells_come_from_the_json(tmp_path):
    md = report.render(climate_doc(tmp_path))
    row = next(l for l in md.splitlines() if l.startswith("| map (24, 721, 1440) | nanmean"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == "0.50 (0.50–0.50)"   # strata s
    assert cells[3] == "2.00 (2.00–2.00)"   # dask s
    assert cells[4] == "4.00 (4.00–4.00)"   # dask / strata, per rep
    assert cells[5] == "100 MB" and cells[6] == "100 MB"   # peak RSS of each
    assert cells[7] == "1.00 (1.00–1.00)"   # dask / strata RSS, per rep
    assert "10% NaN" in md and "| map (24, 721, 1440) | cumsum" in md
    assert "(481, 721, 1440)" in md and "allowed_mem 2GB" in md


def test_a_climate_smoke_run_is_refused_unless_draft(tmp_path):
    doc = climate_doc(tmp_path, smoke=True, reps=1)
    with pytest.raises(report.Refused, match="smoke"):
        report.render(doc)
    assert "DRAFT" in report.render(doc, draft=True)


def weather_contender(name, rss, **extra):
    def finish(run, done):
        run["peak_rss_bytes"] = rss
        run["extra"].update(extra)
    return P.Contender(name, ["true"], finish=finish)


def weather_doc(tmp_path, strata_extra=None, **kw):
    contract = dict(contract_ok=True, tasks=1920, tasks_over_projection=0, tasks_over_allowed=0,
                    max_measured_task_mem=310 * 10**6, max_projected_task_mem=420 * 10**6,
                    allowed_mem=2 * 10**9)
    contract.update(strata_extra or {})
    with fake_bench(tmp_path, "weather_pipeline", {"strata": 20.0, "dask": 90.0}, **kw) as b:
        b.doc["dataset"] = {"reused": True}
        b.case("8GB 5000 points",
               [weather_contender("strata", 900 * 10**6, **contract),
                weather_contender("dask", 3 * 10**9)],
               ratios=[("dask", "strata")], ratio_keys=("wall_s", "peak_rss_bytes"),
               describe={"size": "8GB", "dataset_bytes": 7_970_000_000, "points": 5000,
                         "dims": {"init_time": 80, "valid_time": 8, "lat": 721, "lon": 1440},
                         "allowed_mem": "2GB"})
    return json.load(open(b.out))


def test_weather_table_cells_come_from_the_json(tmp_path):
    md = report.render(weather_doc(tmp_path))
    row = next(l for l in md.splitlines() if l.startswith("| 7.97 GB"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[0] == "7.97 GB: init_time 80 × valid_time 8 × lat 721 × lon 1440, 5000 points"
    assert cells[1] == "20.00 (20.00–20.00)"   # strata s
    assert cells[2] == "90.00 (90.00–90.00)"   # dask s
    assert cells[3] == "4.50 (4.50–4.50)"      # dask / strata, per rep
    assert cells[4] == "900 MB" and cells[5] == "3.00 GB"
    assert cells[6] == "3.33 (3.33–3.33)"      # dask / strata RSS, per rep
    assert cells[7] == ("held: all 1920 tasks of 5 runs measured ≤ projected ≤ allowed (max "
                        "measured 310 MB, max projected 420 MB, allowed 2.00 GB)")
    assert "allowed_mem 2GB" in md and "reused from an earlier run" in md
    assert "dask / strata time ≥ 5" in md
    assert "dask-cluster" not in md   # no cluster contender, no cluster columns


def test_the_cluster_contender_has_its_columns(tmp_path):
    with fake_bench(tmp_path, "weather_pipeline",
                    {"strata": 20.0, "dask": 90.0, "dask-cluster": 120.0}) as b:
        b.doc["dataset"] = {"reused": False}
        b.case("x", [weather_contender("strata", 900 * 10**6),
                     weather_contender("dask", 3 * 10**9),
                     weather_contender("dask-cluster", 10**9)],
               ratios=[("dask", "strata"), ("dask-cluster", "strata")],
               describe={"dims": {"lat": 721}, "points": 10, "output": "parquet"})
    md = report.render(json.load(open(b.out)))
    header = next(l for l in md.splitlines() if l.startswith("| dataset"))
    row = next(l for l in md.splitlines() if l.startswith("| ") and "10 points" in l)
    cells = dict(zip([c.strip() for c in header.strip("|").split("|")],
                     [c.strip() for c in row.strip("|").split("|")]))
    assert cells["dask-cluster s"] == "120.0 (120.0–120.0)"
    assert cells["dask-cluster / strata time"] == "6.00 (6.00–6.00)"
    assert "to parquet" in md


def test_a_broken_memory_contract_is_in_the_weather_table(tmp_path):
    doc = weather_doc(tmp_path, {"contract_ok": False, "tasks_over_projection": 3,
                                 "max_measured_task_mem": 500 * 10**6})
    md = report.render(doc)
    assert ("**violated** in 5 of 5 runs (3 tasks over their projection, 0 projections over "
            "allowed_mem; max measured 500 MB") in md


def test_weather_without_contract_figures_says_so(tmp_path):
    with fake_bench(tmp_path, "weather_pipeline", {"strata": 2.0, "dask": 9.0}) as b:
        b.case("x", [with_extra("strata"), with_extra("dask")], ratios=[("dask", "strata")],
               describe={"dims": {}, "points": 10})
    assert "| not measured |" in report.render(json.load(open(b.out)))


def test_a_weather_smoke_run_is_refused_unless_draft(tmp_path):
    doc = weather_doc(tmp_path, smoke=True, reps=1)
    with pytest.raises(report.Refused, match="smoke"):
        report.render(doc)
    assert "DRAFT" in report.render(doc, draft=True)


def test_the_steps_cubed_can_run_are_a_table_of_their_own(tmp_path):
    with fake_bench(tmp_path, "weather_pipeline",
                    {"strata": 5.0, "dask": 12.5, "cubed": 35.0}) as b:
        b.doc["dataset"] = {"reused": False}
        b.case("8GB points", [weather_contender("strata", 900 * 10**6),
                              weather_contender("dask", 3 * 10**9)],
               ratios=[("dask", "strata")], describe={"dims": {"lat": 721}, "points": 10})
        b.case("8GB field means", [weather_contender("strata", 260 * 10**6),
                                   weather_contender("dask", 340 * 10**6),
                                   weather_contender("cubed", 550 * 10**6,
                                                     work_peak_bytes=4.6e9)],
               ratios=[("dask", "strata"), ("cubed", "strata")],
               describe={"dims": {"lat": 721}, "steps": "cubed", "allowed_mem": "2GB",
                         "dataset_bytes": 7_970_000_000})
    md = report.render(json.load(open(b.out)))
    assert md.count("| dataset") == 2
    row = next(l for l in md.splitlines() if l.startswith("| 7.97 GB"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:6] == ["5.00 (5.00–5.00)", "12.50 (12.50–12.50)", "35.00 (35.00–35.00)",
                          "2.50 (2.50–2.50)", "7.00 (7.00–7.00)"]
    assert cells[6] == "260 MB / 340 MB / 550 MB" and cells[7] == "4.60 GB"
    # the pipeline's table holds the pipeline's case only
    assert sum(1 for l in md.splitlines() if l.startswith("| ") and "10 points" in l) == 1


def test_coordinator_table_cells_come_from_the_json(tmp_path):
    with fake_bench(tmp_path, "coordinator_scale", {"strata threads": 0.2, "dask": 34.0}) as b:
        b.case("100000 blocks",
               [with_extra("strata threads", us_per_block=1.8, plan_s=0.004,
                           bytes_per_block=52.7),
                with_extra("dask", us_per_block=323.0, plan_s=0.31)],
               ratios=[("dask", "strata threads")], describe={"blocks": 100000})
    md = report.render(json.load(open(b.out)))
    rows = [[c.strip() for c in l.strip("|").split("|")] for l in md.splitlines()
            if l.startswith("| 100,000")]
    assert rows[0][1:] == ["strata threads", "0.20 (0.20–0.20)", "0.00 (0.00–0.00)",
                           "1.8 (1.8–1.8)", rows[0][5], "52.7", "170.0 (170.0–170.0)"]
    assert rows[1][1] == "dask" and rows[1][6:] == ["–", "–"]


def test_ray_table_inverts_the_threads_ratio(tmp_path):
    with fake_bench(tmp_path, "ray_rechunk",
                    {"threads": 1.0, "strata-ray": 4.0, "cubed-ray": 12.0}) as b:
        b.case("W1", [with_extra("threads", intermediate_bytes_written=0),
                      with_extra("strata-ray", intermediate_bytes_written=0, seconds=3.5,
                                 ray_node_peak_pss_bytes=500 * MB),
                      with_extra("cubed-ray", intermediate_bytes_written=1.5e9)],
               ratios=[("strata-ray", "threads"), ("cubed-ray", "strata-ray")],
               describe={"shape": [10000, 10000], "source_chunks": [10000, 1000],
                         "target_chunks": [1000, 10000], "allowed_mem": 400 * MB,
                         "cubed_allowed_mem": 500 * MB, "cubed_refused_ours": "too small"})
    md = report.render(json.load(open(b.out)))
    rows = {c[1]: c for c in ([x.strip() for x in l.strip("|").split("|")]
                              for l in md.splitlines() if l.startswith("| "))}
    assert rows["Strata, threads"][3] == "0.25 (0.25–0.25)"
    assert rows["Strata, `executor=\"ray\"`"][3] == "1.00"
    cubed = next(v for k, v in rows.items() if k.startswith("Cubed"))
    assert "it refuses ours" in cubed[1] and cubed[3] == "3.00 (3.00–3.00)"
    assert cubed[6] == "1.50 GB" and cubed[4] == "–"
    ray = rows["Strata, `executor=\"ray\"`"]
    # compute s from the summary; the node: Ray's PSS plus the driver's RSS
    value, unit = ray[5].split()
    assert ray[4] == "3.50 (3.50–3.50)" and (float(value) > 500 if unit == "MB" else unit == "GB")
    assert rows["Strata, threads"][5] == "–"


def mpi_hosts_contender(name, **fields):
    """A contender whose run has the process-tree figures of a real one."""
    measured = ("max_rss_process_bytes", "tree_rss_sampled_peak_bytes", "peak_rss_bytes")

    def finish(run, done):
        for k, v in fields.items():
            (run if k in measured else run["extra"])[k] = v
    return P.Contender(name, ["true"], finish=finish)


def test_mpi_hosts_table_cells_come_from_the_json(tmp_path):
    walls = {"threads": 2.5, "mpi": 5.0, "mpirun": 1.0}
    with fake_bench(tmp_path, "mpi_hosts", walls) as b:
        b.doc["cluster"] = {"hosts": ["h0", "h1", "h2"], "ranks_per_host": [1, 1, 1],
                            "cores": 2, "oversubscribed": True}
        b.case("mpirun 3 hosts hostname", [P.Contender("mpirun", ["true"])])
        for tier, moved in (("default", 0), ("memory", 2_133_000_000)):
            threads = dict(peak_rss_bytes=364 * MB, compute_s=2.25,
                           intermediate_bytes_written=0)
            mpi = dict(max_rss_process_bytes=199 * MB, tree_rss_sampled_peak_bytes=620 * MB,
                       compute_s=4.5, intermediate_bytes_written=0, bytes_between_ranks=moved,
                       bridge_bytes=moved + 91_000, rank0_peak_pool_bytes=107 * MB,
                       rank1_peak_pool_bytes=106 * MB, rank2_peak_pool_bytes=107 * MB)
            b.case("W4" + ("" if tier == "default" else " memory tier"),
                   [mpi_hosts_contender("threads", **threads),
                    mpi_hosts_contender("mpi", **mpi)],
                   ratios=[("mpi", "threads")], ratio_keys=("wall_s", "compute_s"),
                   describe={"workload": "W4", "shape": [20000, 20000],
                             "source_chunks": [20000, 500], "target_chunks": [500, 20000],
                             "allowed_mem": "1GB", "tier": tier, "ranks": 3})
    md = report.render(json.load(open(b.out)))
    rows = [l for l in md.splitlines() if l.startswith("| W4")]
    cells = [[c.strip() for c in r.strip("|").split("|")] for r in rows]
    assert cells[0][0] == "W4: 20000² f8, (20000,500) → (500,20000), 1GB"
    assert cells[1][0] == "W4: 20000² f8, (20000,500) → (500,20000), 1GB, `--tier memory`"
    assert cells[0][1] == "2.50 (2.50–2.50)"                        # threads s
    assert cells[0][2] == "5.00 (5.00–5.00) (4.50 (4.50–4.50))"     # mpi s (compute s)
    assert cells[0][3] == "2.00 (2.00–2.00) (2.00 (2.00–2.00))"     # per-rep ratios
    assert cells[0][4] == "0 / 91 kB"                               # between ranks / bridge
    assert cells[1][4] == "2.13 GB / 2.13 GB"
    assert cells[0][5] == "107 / 106 / 107 MB"                      # pool peak per rank
    assert cells[0][6] == "364 / 199 / 620 MB"                      # RSS threads / rank / job
    assert cells[0][7] == "0"
    assert "on 3 simulated hosts" in md and "3 ranks oversubscribed on 2 cores" in md
    assert "running `hostname` alone takes 1.00 (1.00–1.00) s" in md
    assert "5 reps, contenders interleaved in rotated order" in md

def test_python_overhead_tables_come_from_the_json(tmp_path):
    walls = {"cpp": 1.0, "python": 1.02, "dask": 2.04, "numpy": 3.06}
    with fake_bench(tmp_path, "python_overhead", walls) as b:
        b.case("quadratic_means t=20", [P.Contender(n, ["true"]) for n in walls],
               ratios=[("python", "cpp"), ("dask", "python"), ("numpy", "python")],
               describe={"t": 20, "shape": [20, 987, 1920], "chunks": [10, 987, 1920],
                         "allowed_mem": "2GB"})
        b.case("plan", [with_extra("cpp", plan_tasks=107124, plan_s=1e-4, first_plan_s=5e-4),
                        with_extra("python", plan_tasks=107124, plan_s=2e-4,
                                   first_plan_s=6e-4)],
               ratios=[("python", "cpp")], ratio_keys=("plan_s", "first_plan_s"),
               describe={"shape": "3160,3160", "chunks": "10,10", "plans_per_process": 5})
    md = report.render(json.load(open(b.out)))
    row = next(l for l in md.splitlines() if l.startswith("| quadratic means T=20"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:5] == ["1.00 (1.00–1.00)", "1.02 (1.02–1.02)", "1.02 (1.02–1.02)",
                          "2.04 (2.04–2.04)"]
    assert cells[5] == "2.00 (2.00–2.00)"   # dask / python, per rep
    plan = next(l for l in md.splitlines() if l.startswith("| plan (after the first"))
    assert [c.strip() for c in plan.strip("|").split("|")][1:] == [
        "0.10 (0.10–0.10)", "0.20 (0.20–0.20)", "2.00 (2.00–2.00)"]
    assert "(107124 tasks)" in md


def test_sharding_tables_come_from_the_json(tmp_path):
    walls = {"copy sharded": 1.5, "copy unsharded": 0.5}
    with fake_bench(tmp_path, "sharding", walls) as b:
        b.case("copy", [P.Contender(n, ["true"]) for n in walls],
               ratios=[("copy sharded", "copy unsharded")],
               describe={"shape": [10000, 10000], "source_chunks": [10000, 1000],
                         "shards": [10000, 10000], "inner_chunks": [1000, 1000]})
        b.doc["partial_read"] = {"regions": {"aligned": {
            "origin": [4000, 4000], "shape": [1000, 1000], "bytes_read": 7008406,
            "fraction_of_bytes_read": 0.0100022}}, "region_fraction_of_elements": 0.01,
            "array_stored_bytes": 700687227}
    md = report.render(json.load(open(b.out)))
    row = next(l for l in md.splitlines() if l.startswith("| copy"))
    assert "| 1.50 (1.50–1.50) | 0.50 (0.50–0.50) | 3.00 (3.00–3.00) |" in row
    assert "| aligned | (4000, 4000) + (1000, 1000) | 7 MB | 1.00% |" in md
    assert "_Counted, not timed;" in md


def test_smoke_data_go_to_a_directory_of_their_own():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="build/bench/x")
    P.add_arguments(ap)
    assert ap.parse_args([]).dir == "build/bench/x"
    assert ap.parse_args(["--smoke"]).dir == "build/bench/x-smoke"
    assert ap.parse_args(["--smoke"]).smoke and not ap.parse_args([]).smoke
    assert ap.parse_args(["--dir", "d", "--smoke"]).dir == "d"
    assert ap.parse_args(["--smoke", "--dir", "d"]).dir == "d"


def test_cliff_intermediate_names_where_the_exchange_went():
    def plan(note, tiers=()):
        return {"rechunk_op": [note], "tiers": {f"a{i}": {"tier": t} for i, t in enumerate(tiers)}}
    assert report.intermediate_label(plan("fused; read in place: each target ...")) == "read in place"
    assert (report.intermediate_label(plan("read in place: ...", ["memory"]))
            == "read in place, output via RAM")
    assert report.intermediate_label(plan("one-stage exchange spilling per block", ["memory"])) == "spill"
    assert report.intermediate_label(plan("2.0 GB fits in RAM", ["memory"])) == "RAM"
    assert report.intermediate_label(plan("multistage on the disk tier", ["disk"])) == "disk"
    assert report.intermediate_label({}) == "?"
