"""The package's promises beyond the functions: laziness, zero-copy in and
out, the GIL released while the engine runs, Python map_blocks, callbacks
and tqdm, visualize, the Array API surface, and bad input."""
import gc
import io
import os
import sys
import threading
import time

import numpy as np
import pytest
import zarr  # zarr-python 3, from the lock (requirements/dev.txt)

import strata
from conftest import assert_eq


# ----------------------------------------------------------------- laziness

def write_zarr(path, a, chunks):
    z = zarr.open(str(path), mode="w", shape=a.shape, chunks=chunks, dtype=a.dtype)
    z[...] = a
    return z


def test_nothing_is_read_or_written_before_compute(tmp_path, spec):
    a = np.arange(400.0).reshape(20, 20)
    src = tmp_path / "src.zarr"
    write_zarr(src, a, (5, 5))
    # Corrupt every chunk: building, planning and visualizing must still work
    # because they read only metadata; the compute is the first to read one.
    # zarr 3 keeps the chunks under c/; zarr.json is the metadata.
    chunks = [p for p in src.rglob("*") if p.is_file() and p.name != "zarr.json"]
    assert len(chunks) == 16
    for p in chunks:
        p.write_bytes(b"not a chunk")
    x = strata.from_zarr(str(src), spec=spec)
    y = strata.mean(x * 2 + 1, axis=0)
    out = tmp_path / "out.zarr"
    handle = strata.to_zarr(y, str(out), compute=False)
    p = strata.plan(handle)
    assert p.num_tasks > 0
    strata.visualize(handle, filename=str(tmp_path / "plan"))
    assert not out.exists()
    assert not (tmp_path / "work").exists() or not os.listdir(tmp_path / "work")
    with pytest.raises(OSError, match="chunk"):
        strata.compute(handle)


def test_to_zarr_round_trip_with_zarr_python(tmp_path, spec):
    a = np.random.default_rng(0).random((13, 7))
    x = strata.asarray(a, chunks=(4, 3), spec=spec)
    strata.to_zarr(x * 3, str(tmp_path / "o.zarr"))
    z = zarr.open(str(tmp_path / "o.zarr"), mode="r")
    assert z.chunks == (4, 3)
    np.testing.assert_allclose(z[...], a * 3)
    back = strata.from_zarr(str(tmp_path / "o.zarr"), spec=spec)
    assert back.chunksize == (4, 3)
    assert_eq(back, a * 3)
    # zarr-python objects are accepted as stores: an array (its LocalStore's
    # root), one inside a group (root and its path), a LocalStore.
    assert_eq(strata.from_zarr(z), a * 3)
    g = zarr.open_group(str(tmp_path / "g.zarr"), mode="w")
    inner = g.create_array("sub/x", shape=a.shape, chunks=(5, 5), dtype=a.dtype)
    inner[...] = a
    assert_eq(strata.from_zarr(inner), a)
    assert_eq(strata.from_zarr(zarr.storage.LocalStore(str(tmp_path / "g.zarr")), "sub/x"), a)
    with pytest.raises(TypeError, match="from_zarr: expected a path.*got MemoryStore"):
        strata.from_zarr(zarr.storage.MemoryStore())
    strata.to_zarr(x, str(tmp_path / "v3.zarr"), zarr_format=3, codec="zstd:level=3")
    assert_eq(strata.from_zarr(str(tmp_path / "v3.zarr")), a)
    with pytest.raises(FileExistsError):
        strata.to_zarr(x, str(tmp_path / "o.zarr"))
    strata.to_zarr(x, str(tmp_path / "o.zarr"), overwrite=True)
    assert_eq(strata.from_zarr(str(tmp_path / "o.zarr")), a)
    # store: several targets in one compute.
    strata.store([x, x + 1], [str(tmp_path / "s1.zarr"), str(tmp_path / "s2.zarr")])
    np.testing.assert_allclose(zarr.open(str(tmp_path / "s2.zarr"))[...], a + 1)


def test_compute_shares_common_inputs(spec):
    cb = strata.HistoryCallback()
    x = strata.random.random((40, 40), chunks=(10, 10), seed=3, spec=spec)
    y = x * 2  # a non-fusable common input: materialized once
    r1, r2 = strata.compute(strata.sum(y, axis=0), strata.mean(y, axis=1), callbacks=[cb])
    a = x.compute() * 2
    np.testing.assert_allclose(r1, a.sum(axis=0))
    np.testing.assert_allclose(r2, a.mean(axis=1))
    # One plan for both: every op appears once.
    names = [o["array"] for o in cb.plan["ops"]]
    assert len(names) == len(set(names))


# ---------------------------------------------------------------- zero-copy

def test_asarray_shares_numpy_memory():
    a = np.arange(12.0).reshape(3, 4)
    x = strata.asarray(a, chunks=2)
    a[0, 0] = 100.0  # visible through x: no copy was made
    assert x.compute()[0, 0] == 100.0
    # Non-contiguous or foreign-endian input is copied (and still right).
    assert_eq(strata.asarray(a[:, ::2]), a[:, ::2])
    big_endian = a.astype(">f8")
    assert_eq(strata.asarray(big_endian), a)
    with pytest.raises(ValueError, match="copy=False"):
        strata.asarray(a[:, ::2], copy=False)
    c = strata.asarray(a, copy=True)
    a[0, 0] = -1.0
    assert c.compute()[0, 0] == 100.0


def test_asarray_keeps_the_numpy_array_alive():
    x = strata.asarray(np.arange(1000.0))
    gc.collect()
    assert x.compute()[999] == 999.0


def test_results_own_the_engine_buffer():
    x = strata.ones((1000, 100), chunks=(100, 100))
    r = (x + 1).compute()
    assert type(r.base).__name__ == "PyCapsule"
    assert not r.flags.owndata and r.flags.writeable and r.flags.c_contiguous
    del x
    gc.collect()
    assert r.sum() == 200000.0
    # __dlpack__ of a result, and numpy conversion.
    assert_eq(np.from_dlpack(strata.arange(5)), np.arange(5))
    assert np.asarray(strata.arange(3)).tolist() == [0, 1, 2]


def test_result_is_not_copied():
    # 400 MB of results: the process grows by about that much, not twice.
    import resource
    n = 50_000_000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    r = strata.full((n,), 2.0, chunks=(n // 8,)).compute()
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    assert r[-1] == 2.0
    assert after - before < 1.5 * r.nbytes, (after - before, r.nbytes)


# --------------------------------------------------------------------- GIL

def test_gil_is_released_during_compute():
    x = strata.random.random((3000, 3000), chunks=(300, 3000), seed=1,
                             spec=strata.Spec(workers=2))
    y = strata.sum(strata.sqrt(x) * 2 + strata.exp(x), axis=0)
    counter = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            counter[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    time.sleep(0.05)
    start_count = counter[0]
    t0 = time.perf_counter()
    y.compute()
    elapsed = time.perf_counter() - t0
    during = counter[0] - start_count
    stop.set()
    t.join()
    # A Python thread holding the GIL would have been starved for the whole
    # compute; here it ran (thousands of loop iterations per 10 ms).
    assert during > 1000 * elapsed, (during, elapsed)


def test_processes_executor_from_python():
    # Worker processes are forked by the compute's own thread; they run C++
    # tasks only (Python functions are refused on this executor).
    procs = strata.Spec(executor="processes", workers=2)
    a = np.arange(1000.0).reshape(100, 10)
    x = strata.asarray(a, chunks=(10, 10), spec=procs)
    assert_eq(strata.sum(x * 2, axis=0), (a * 2).sum(axis=0))


def test_compute_from_another_thread():
    results = []
    x = strata.ones((100, 100), chunks=10)

    def work():
        results.append(strata.sum(x).compute())

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [float(r) for r in results] == [10000.0] * 3


# --------------------------------------------------------------- map_blocks

def test_map_blocks_runs_python_on_worker_threads(spec):
    a = np.arange(60.0).reshape(6, 10)
    x = strata.asarray(a, chunks=(2, 5), spec=spec)
    main = threading.get_ident()
    seen = set()

    def f(block, block_id=None, offset=0):
        assert not block.flags.writeable
        seen.add((threading.get_ident(), block_id))
        return block * 10 + offset + block_id[0]

    y = strata.map_blocks(f, x, offset=1)
    expected = a * 10 + 1 + (np.arange(6) // 2)[:, None]
    assert_eq(y, expected)
    assert {b for _, b in seen} == {(i, j) for i in range(3) for j in range(2)}
    assert main not in {t for t, _ in seen}
    # Two inputs, broadcast, and a custom dtype; as a method.
    z = x.map_blocks(lambda u, v: (u + v).astype(np.float32), x, dtype="float32")
    assert_eq(z, (a + a).astype(np.float32))
    # Custom output chunks: same number of blocks.
    w = strata.map_blocks(lambda b: b[:1, :1], x, chunks=(1, 1))
    assert_eq(w, a[::2, ::5])


def test_map_blocks_errors(spec):
    x = strata.ones((4, 4), chunks=2, spec=spec)

    def boom(b):
        raise ZeroDivisionError("no luck")

    with pytest.raises(ZeroDivisionError, match="no luck") as info:
        strata.map_blocks(boom, x).compute()
    assert any("block" in n for n in getattr(info.value, "__notes__", []))
    with pytest.raises(ValueError, match="shape"):
        strata.map_blocks(lambda b: b[:1], x).compute()
    kept = []
    with pytest.raises(ValueError, match="kept a reference"):
        strata.map_blocks(lambda b: kept.append(b) or b, x).compute()
    with pytest.raises(TypeError, match="callable"):
        strata.map_blocks(3, x)
    procs = strata.Spec(executor="processes", workers=2)
    with pytest.raises(ValueError, match="processes executor"):
        strata.map_blocks(lambda b: b, strata.ones(4, spec=procs))


# ---------------------------------------------------------------- callbacks

class Recorder(strata.Callback):
    def __init__(self):
        self.events = []

    def on_compute_start(self, event):
        self.events.append(("start", event))

    def on_operation_start(self, event):
        self.events.append(("op_start", event))

    def on_task_end(self, event):
        self.events.append(("task", event))

    def on_operation_end(self, event):
        self.events.append(("op_end", event))

    def on_compute_end(self, event):
        self.events.append(("end", event))


def test_callbacks(spec):
    x = strata.random.random((100, 100), chunks=(25, 25), seed=1, spec=spec)
    y = strata.sum(x + 1, axis=0)
    rec = Recorder()
    hist = strata.HistoryCallback()
    y.compute(callbacks=[rec, hist])
    kinds = [k for k, _ in rec.events]
    assert kinds[0] == "start" and kinds[-1] == "end"
    start = rec.events[0][1]
    tasks = [e for k, e in rec.events if k == "task"]
    assert len(tasks) == start.num_tasks == sum(o.num_tasks for o in start.ops)
    assert isinstance(start.plan, dict) and start.plan["total_tasks"] == start.num_tasks
    assert rec.events[-1][1].ok
    assert kinds.count("op_start") == kinds.count("op_end") == len(start.ops)
    allowed = start.plan["spec"]["allowed_mem"]
    for t in hist.tasks:
        assert 0 < t["measured_peak_mem"] <= t["projected_mem"] <= allowed, t
    assert set(hist.ops) == {o.name for o in start.ops}
    assert hist.history["summary"]["tasks"] == start.num_tasks


def test_callback_exception_cancels_and_is_raised(spec):
    class Bad(strata.Callback):
        def on_task_end(self, event):
            raise RuntimeError("callback failed")

    with pytest.raises(RuntimeError, match="callback failed"):
        strata.ones((10, 10), chunks=2, spec=spec).__add__(1).compute(callbacks=[Bad()])
    with pytest.raises(TypeError, match="callback methods"):
        strata.ones(3).compute(callbacks=[object()])


def test_tqdm_progress_bar(spec):
    out = io.StringIO()
    x = strata.random.random((40, 40), chunks=(10, 10), seed=2, spec=spec)
    y = strata.mean(x * 2, axis=0)
    p = strata.plan(y).to_dict()
    ops = [o for o in p["ops"] if o["materialized"]]
    y.compute(callbacks=[strata.TqdmProgressBar(file=out, mininterval=0)])
    text = out.getvalue()
    for o in ops:
        assert o["array"] in text
        assert f"{o['tasks']}/{o['tasks']}" in text


# ---------------------------------------------------------------- visualize

def test_visualize(tmp_path, spec):
    x = strata.ones((10, 10), chunks=5, spec=spec)
    y = strata.sum(x * 2, axis=1)
    path = strata.visualize(y, filename=str(tmp_path / "graph"))
    assert path.endswith("graph.svg")
    import html
    svg = html.unescape(open(path).read())
    assert "<svg" in svg
    assert y.name in svg and "tasks" in svg
    dot = y.visualize(filename=str(tmp_path / "g.dot"))
    assert open(dot).read().startswith("digraph")
    with pytest.raises(ValueError, match="format"):
        strata.visualize(y, filename=str(tmp_path / "g"), format="gif")


def test_plan_as_dict(spec):
    y = strata.ones((10, 10), chunks=5, spec=spec) + 1
    d = y.plan().to_dict()
    assert d["total_tasks"] == 4
    assert d["spec"]["allowed_mem"] == 100_000_000
    assert "add" in y.plan().to_text()


# ---------------------------------------------------------- the Array API

def test_namespace_and_attributes():
    x = strata.ones((2, 3), dtype=strata.float32, chunks=2)
    assert x.__array_namespace__() is strata
    assert strata.__array_api_version__ == "2024.12"
    assert x.dtype == strata.float32 == np.float32
    assert (x.shape, x.ndim, x.size, x.device) == ((2, 3), 2, 6, "cpu")
    assert x.chunks == ((2,), (2, 1)) and x.chunksize == (2, 2) and x.numblocks == (1, 2)
    assert x.to_device("cpu") is x
    assert (strata.e, strata.pi, strata.newaxis) == (np.e, np.pi, None)
    assert strata.isnan(strata.asarray(strata.nan)).compute()
    assert bool(strata.asarray(True)) is True
    assert int(strata.asarray(7)) == 7 and float(strata.asarray(2.5)) == 2.5
    assert complex(strata.asarray(1 + 2j)) == 1 + 2j
    assert [0, 1, 2][strata.asarray(1)] == 1
    assert len(x) == 2 and [r.shape for r in x] == [(3,), (3,)]
    assert "array-" in repr(x)


def test_data_type_functions():
    f32, f64, i8, u8, u64, i64 = (strata.float32, strata.float64, strata.int8, strata.uint8,
                                  strata.uint64, strata.int64)
    fi = strata.finfo(f32)
    assert (fi.bits, fi.eps, fi.dtype) == (32, float(np.finfo(np.float32).eps), f32)
    assert type(fi.max) is float and fi.min == -fi.max
    assert fi.smallest_normal == float(np.finfo(np.float32).smallest_normal)
    assert strata.finfo(strata.complex128).dtype == f64
    assert strata.finfo(strata.ones(2, dtype=f64)).bits == 64
    ii = strata.iinfo(u64)
    assert (ii.bits, ii.min, ii.max, ii.dtype) == (64, 0, 2**64 - 1, u64)
    assert type(ii.max) is int and strata.iinfo(i8).min == -128
    # result_type is the dtype the ops produce (mixed kinds: int + float32 is
    # float32, as the standard says, where numpy gives float64).
    x8, xf = strata.ones(3, dtype=i8), strata.ones(3, dtype=f32)
    assert strata.result_type(x8, xf) == (x8 + xf).dtype == f32
    assert strata.result_type(i8, u8) == strata.int16
    assert strata.result_type(f32, strata.complex64, f64) == strata.complex128
    assert strata.result_type(x8, 1) == i8 and strata.result_type(x8, 1.5) == f64
    assert strata.result_type(strata.bool, 1) == i64
    assert strata.can_cast(i8, strata.int16) and not strata.can_cast(strata.int16, i8)
    assert strata.can_cast(u8, i64) and not strata.can_cast(u64, i64)
    assert not strata.can_cast(f64, f32) and strata.can_cast(x8, f32)
    assert strata.isdtype(i8, "signed integer") and not strata.isdtype(u8, "signed integer")
    assert strata.isdtype(f32, ("integral", "real floating"))
    assert strata.isdtype(strata.complex64, "numeric") and not strata.isdtype(strata.bool, "numeric")
    assert strata.isdtype(f64, f64) and not strata.isdtype(f64, f32)
    with pytest.raises(TypeError, match="not a floating-point dtype"):
        strata.finfo(i8)
    with pytest.raises(TypeError, match="not an integer dtype"):
        strata.iinfo(f32)
    with pytest.raises(ValueError, match="at least one"):
        strata.result_type()
    with pytest.raises(ValueError, match="uint64"):
        strata.result_type(u64, i64)
    with pytest.raises(ValueError, match="unknown kind"):
        strata.isdtype(f32, "floating")
    with pytest.raises(TypeError, match="not a dtype"):
        strata.finfo("nope")


def test_setitem_and_inplace_operators(rng):
    a = rng.random((7, 5))
    x = strata.asarray(a.copy(), chunks=(3, 2))
    derived = x * 1
    x[1:6:2, -1] = -1.0
    a2 = a.copy()
    a2[1:6:2, -1] = -1.0
    assert_eq(x, a2)
    x[..., 0] = strata.arange(7, dtype="float64")
    a2[..., 0] = np.arange(7.0)
    assert_eq(x, a2)
    x[x > 0.5] = 0.0
    a2[a2 > 0.5] = 0.0
    assert_eq(x, a2)
    assert_eq(derived, a)  # no views: arrays derived before keep their values
    y = x
    y += 1
    assert y is x
    assert_eq(x, a2 + 1)
    i = strata.ones(3, dtype="int32")
    i *= 2
    assert i.dtype == np.int32
    assert_eq(i, np.full(3, 2, np.int32))
    # asarray(copy=True) is a new object: updating it leaves the original.
    j = strata.asarray(i, copy=True)
    assert j is not i and strata.asarray(i) is i
    j //= 2
    assert_eq(j, np.ones(3, np.int32))
    assert_eq(i, np.full(3, 2, np.int32))
    with pytest.raises(TypeError, match="change x's dtype"):
        i += 1.5
    with pytest.raises(ValueError, match="change x's shape"):
        i += strata.ones((2, 3), dtype="int32")
    with pytest.raises(ValueError, match="broadcast"):
        x[0] = strata.ones(4)
    with pytest.raises(IndexError):
        x[9] = 1.0


# ---------------------------------------------------------------- bad input

def test_bad_input_raises_clear_exceptions(tmp_path):
    x = strata.ones((4, 4), chunks=2)
    with pytest.raises(TypeError, match="asarray"):
        strata.asarray(object())
    with pytest.raises(TypeError, match="not a dtype Strata supports"):
        strata.asarray(np.ones(2, np.float16))
    with pytest.raises(TypeError, match="not a dtype Strata supports"):
        strata.zeros(3, dtype="U3")
    with pytest.raises(TypeError, match="shape"):
        strata.zeros("abc")
    with pytest.raises(TypeError, match="shape"):
        strata.ones((2, 2.5))
    with pytest.raises(TypeError):
        x + "s"
    with pytest.raises(TypeError, match="strata.Array"):
        strata.sum([1, 2])
    with pytest.raises(TypeError, match="axis"):
        strata.sum(x, axis="a")
    with pytest.raises(ValueError, match="out of range"):
        strata.sum(x, axis=5)
    with pytest.raises(ValueError, match="broadcast"):
        x + strata.ones(3)
    with pytest.raises(IndexError, match="out of bounds"):
        x[7]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(ValueError, match="allowed_mem"):
        strata.Spec(allowed_mem="lots")
    with pytest.raises(ValueError, match="unknown executor"):
        strata.Spec(executor="nope")
    with pytest.raises(TypeError, match="executor"):
        strata.Spec(executor=3)
    with pytest.raises(TypeError, match="spec"):
        strata.ones(3, spec={"allowed_mem": "1GB"})
    with pytest.raises(FileNotFoundError):
        strata.from_zarr(str(tmp_path / "missing.zarr"))
    with pytest.raises(TypeError, match="path"):
        strata.from_zarr(42)
    with pytest.raises(TypeError, match="strata.Array"):
        strata.compute(np.ones(3))
    with pytest.raises(ValueError, match="no arrays"):
        strata.compute()
    # A Python int past int64 is numpy 2's OverflowError beside integers
    # (a float array takes it as a float, as numpy 2 does).
    with pytest.raises(OverflowError, match=f"Python integer {2 ** 70} out of bounds for int64"):
        x.astype(strata.int64) + 2 ** 70
    assert_eq(x + 2 ** 70, np.ones((4, 4)) + 2 ** 70)


def test_plan_over_allowed_mem_is_a_plan_error(tmp_path):
    tight = strata.Spec(allowed_mem="10MB", reserved_mem="1MB")
    big = strata.random.random((2000, 2000), chunks=(2000, 2000), spec=tight, seed=0)
    with pytest.raises(strata.PlanError, match="over allowed_mem") as info:
        (big + 1).compute()
    assert isinstance(info.value, MemoryError) and isinstance(info.value, ValueError)
    with pytest.raises(strata.PlanError):
        strata.plan(big + 1)


def test_one_fusion_switch():
    """compute/plan(optimize_graph=False) is Spec(fuse=False) for one call:
    neither fusion pass runs (planner.h, PlanOptions::fuse)."""
    def graph(spec):
        x = strata.ones((40, 30), chunks=(10, 10), spec=spec)
        # A chain (fuse) and two siblings of one source (fuse_siblings).
        return (x + 1) * 2, x.sum(axis=0), x.max(axis=0)

    fused = strata.plan(*graph(strata.Spec())).to_dict()
    assert {"fuse", "fuse_siblings"} <= set(fused["passes"])
    off = strata.Spec(fuse=False)
    by_spec = strata.plan(*graph(off)).to_dict()
    by_call = strata.plan(*graph(strata.Spec()), optimize_graph=False).to_dict()
    assert by_spec["passes"] == by_call["passes"]
    assert not {"fuse", "fuse_siblings"} & set(by_call["passes"])
    def tasks_run(p):
        return sum(1 for o in p["ops"] if o["materialized"])

    assert tasks_run(by_call) == tasks_run(by_spec) > tasks_run(fused)
    a, b, c = graph(strata.Spec())
    want = strata.compute(a, b, c)
    for got, expected in zip(strata.compute(a, b, c, optimize_graph=False), want):
        np.testing.assert_array_equal(got, expected)


def test_spec():
    s = strata.Spec(work_dir="/tmp/x", allowed_mem="1GB", reserved_mem=10_000_000, workers=3)
    assert s.allowed_mem == 1_000_000_000 and s.reserved_mem == 10_000_000
    assert s.workers == 3 and s.executor == "threads" and s.work_dir == "/tmp/x"
    assert strata.Spec(executor="inline").workers == 1
    x = strata.ones(3, spec=s)
    assert x.spec.allowed_mem == 1_000_000_000
    assert "allowed_mem=1000000000" in repr(s)
