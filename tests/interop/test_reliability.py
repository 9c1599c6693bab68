"""Never lose the user's data, never crash, never hang, never leave litter.

The cases of issue 13, each as the hostile user ran it: aliased paths, lost
attributes, metadata that crashed or exhausted memory, FIFOs and devices where
files should be, malformed sizes, a total_system_mem the machine lacks,
chunks equal to the fill value. Every case checks the exit code (2 for usage,
1 otherwise), a single 'strata: error:' line, and that the source is intact.
(Kill -9 and rerun: test_kill.py. S3: test_s3_reliability.py.)
"""
import json
import os
import subprocess
import time

import numpy as np
import pytest
import zarr

from conftest import synthetic, tree_digest
from test_bad_input import assert_clean_failure, make_source


def v3_source(strata, path, attributes=None, dimension_names=None):
    strata("random", path, "--shape", "10,6", "--chunks", "4,3", "--zarr-format", "3",
           "--seed", "1")
    meta = json.loads((path / "zarr.json").read_text())
    if attributes is not None:
        meta["attributes"] = attributes
    if dimension_names is not None:
        meta["dimension_names"] = dimension_names
    (path / "zarr.json").write_text(json.dumps(meta))
    return path


# --------------------------------------------------------------- 1. aliasing

def alias_spellings(tmp_path, src):
    link = tmp_path / "link.zarr"
    if not link.exists():
        os.symlink(src, link)
    (tmp_path / "x").mkdir(exist_ok=True)
    return [str(src), str(src) + "/", str(src) + "//", str(tmp_path) + "//" + src.name,
            str(tmp_path / "x" / ".." / src.name), str(tmp_path / "." / src.name), str(link)]


@pytest.mark.parametrize("verb", ["rechunk", "copy"])
@pytest.mark.parametrize("fmt", ["2", "3"])
def test_same_array_is_refused_in_every_spelling(strata, tmp_path, verb, fmt):
    src = tmp_path / "a.zarr"
    strata("random", src, "--shape", "10,6", "--chunks", "4,3", "--zarr-format", fmt)
    before = tree_digest(src)
    extra = ["--chunks", "5,2"] if verb == "rechunk" else []
    for dst in alias_spellings(tmp_path, src):
        proc = strata(verb, src, dst, *extra, "--overwrite", check=False)
        assert_clean_failure(proc, 2, "same location")
        assert tree_digest(src) == before, dst
    # ./a.zarr from the parent, and ". ." from inside it.
    for cwd, a, b in [(tmp_path, "./a.zarr", "a.zarr"), (src, ".", ".")]:
        proc = subprocess.run([strata.path, verb, a, b, *extra, "--overwrite"], cwd=cwd,
                              capture_output=True, text=True, timeout=120)
        assert_clean_failure(proc, 2, "same location")
        assert tree_digest(src) == before


@pytest.mark.parametrize("verb", ["rechunk", "copy"])
def test_nested_locations_are_refused(strata, tmp_path, verb):
    g = tmp_path / "g.zarr"
    root = zarr.open_group(str(g), mode="w", zarr_format=2)
    for name in ("x", "y"):
        root.create_array(name, data=synthetic((10, 6), "float64", seed=1), chunks=(4, 3))
    (g / "outer.zarr").mkdir()
    make_source(g / "outer.zarr" / "inner.zarr")
    before = tree_digest(g)
    extra = ["--chunks", "5,2"] if verb == "rechunk" else []
    for src, dst in [(g / "x", g), (g / "outer.zarr" / "inner.zarr", g / "outer.zarr"),
                     (g / "x", g / "x" / "inner.zarr")]:
        proc = strata(verb, src, dst, *extra, "--overwrite", check=False)
        assert_clean_failure(proc, 2, "lies inside")
        assert tree_digest(g) == before, (src, dst)


def test_work_dir_inside_source_is_refused(strata, tmp_path):
    src = make_source(tmp_path / "a.zarr")
    before = tree_digest(src)
    proc = strata("rechunk", src, tmp_path / "b.zarr", "--chunks", "5,2", "--tier", "disk",
                  "--work-dir", src / "tmp", check=False)
    assert_clean_failure(proc, 2, "--work-dir")
    assert tree_digest(src) == before


def test_overwrite_replaces_only_the_node(strata, tmp_path):
    g = tmp_path / "g.zarr"
    root = zarr.open_group(str(g), mode="w", zarr_format=2)
    root.attrs["title"] = "keep me"
    for name in ("x", "y"):
        root.create_array(name, data=synthetic((10, 6), "float64", seed=1), chunks=(4, 3))
    (g / "x" / "README").write_text("not Zarr's")
    src = make_source(tmp_path / "new.zarr", dtype="int16")
    keep = {k: v for k, v in tree_digest(g).items() if not k.startswith("x/")}
    strata("copy", src, g / "x", "--overwrite")
    after = tree_digest(g)
    assert {k: v for k, v in after.items() if not k.startswith("x/")} == keep
    assert (g / "x" / "README").read_text() == "not Zarr's"
    assert zarr.open_array(str(g / "x"), mode="r").dtype == np.int16
    assert zarr.open_group(str(g), mode="r").attrs["title"] == "keep me"


# ------------------------------------------------------------- 2. attributes

ATTRS = {"units": "K", "long_name": "air temperature", "standard_name": "air_temperature",
         "_ARRAY_DIMENSIONS": ["time", "station"], "scale_factor": 0.01,
         "nested": {"history": ["a", "b"]}}


def test_rechunk_keeps_v2_attributes(strata, tmp_path):
    src = make_source(tmp_path / "a.zarr")
    zarr.open_array(str(src), mode="r+").attrs.update(ATTRS)
    strata("rechunk", src, tmp_path / "b.zarr", "--chunks", "5,2")
    assert dict(zarr.open_array(str(tmp_path / "b.zarr"), mode="r").attrs) == ATTRS
    # Into v3: attributes kept, and _ARRAY_DIMENSIONS becomes dimension_names.
    strata("rechunk", src, tmp_path / "c.zarr", "--chunks", "5,2", "--zarr-format", "3")
    meta = json.loads((tmp_path / "c.zarr" / "zarr.json").read_text())
    assert meta["attributes"] == ATTRS
    assert meta["dimension_names"] == ["time", "station"]


def test_rechunk_keeps_v3_attributes_and_dimension_names(strata, tmp_path):
    attrs = {"units": "m s-1", "coordinates": "lat lon"}
    src = v3_source(strata, tmp_path / "a.zarr", attrs, ["time", "x"])
    strata("rechunk", src, tmp_path / "b.zarr", "--chunks", "5,2")
    meta = json.loads((tmp_path / "b.zarr" / "zarr.json").read_text())
    assert meta["attributes"] == attrs
    assert meta["dimension_names"] == ["time", "x"]
    # Into v2: the names become _ARRAY_DIMENSIONS, as xarray reads them.
    strata("rechunk", src, tmp_path / "c.zarr", "--chunks", "5,2", "--zarr-format", "2")
    got = dict(zarr.open_array(str(tmp_path / "c.zarr"), mode="r").attrs)
    assert got == {**attrs, "_ARRAY_DIMENSIONS": ["time", "x"]}


# ------------------------------------------------- 3. metadata: no crash, no runaway

def deep(n):
    return "[" * n + "]" * n


VERBS = [
    lambda s, src, t: s("info", src, check=False),
    lambda s, src, t: s("copy", src, t / "out1.zarr", check=False),
    lambda s, src, t: s("verify", src, src, check=False),
    lambda s, src, t: s("rechunk", src, t / "out2.zarr", "--chunks", "5,2", check=False),
    lambda s, src, t: s("plan", src, "--chunks", "5,2", check=False),
]


@pytest.mark.parametrize("verb", range(len(VERBS)))
def test_deeply_nested_zarray(strata, tmp_path, verb):
    src = make_source(tmp_path / "a.zarr")
    meta = json.loads((src / ".zarray").read_text())
    text = json.dumps(meta)[:-1] + ', "x": ' + deep(50000) + "}"
    (src / ".zarray").write_text(text)
    proc = VERBS[verb](strata, src, tmp_path)
    assert_clean_failure(proc, 1, ".zarray", "deeper than")


def test_deeply_nested_zattrs_is_refused_quickly(strata, tmp_path):
    src = make_source(tmp_path / "a.zarr")
    for depth in (10000, 50000):
        (src / ".zattrs").write_text('{"a": ' + deep(depth) + "}")
        proc = strata("copy", src, tmp_path / f"out{depth}.zarr", check=False)
        assert_clean_failure(proc, 1, ".zattrs", "deeper than")
        assert not os.path.exists(tmp_path / f"out{depth}.zarr" / ".zattrs")


@pytest.mark.parametrize("node_type", [None, 1, [], {"a": 1}])
def test_node_type_of_the_wrong_type(strata, tmp_path, node_type):
    src = v3_source(strata, tmp_path / "a.zarr")
    meta = json.loads((src / "zarr.json").read_text())
    meta["node_type"] = node_type
    (src / "zarr.json").write_text(json.dumps(meta))
    for verb in range(len(VERBS)):
        proc = VERBS[verb](strata, src, tmp_path)
        assert_clean_failure(proc, 1, "node_type")


def write_metadata_only(path, shape, chunks, dtype="<f8"):
    path.mkdir()
    (path / ".zarray").write_text(json.dumps({
        "zarr_format": 2, "shape": shape, "chunks": chunks, "dtype": dtype,
        "compressor": None, "fill_value": 0, "filters": None, "order": "C"}))
    return path


def test_huge_grids_are_refused_with_a_limit(strata, tmp_path):
    # 2^62 elements of 8 bytes do not fit in int64 bytes: refused on open.
    big = write_metadata_only(tmp_path / "big.zarr", [2**31, 2**31], [1, 1])
    for verb in range(len(VERBS)):
        assert_clean_failure(VERBS[verb](strata, big, tmp_path), 1, "int64")
    # 2^62 one-byte elements do fit: info reports them honestly, a plan is refused.
    u8 = write_metadata_only(tmp_path / "u8.zarr", [2**31, 2**31], [1, 1], dtype="|u1")
    info = json.loads(strata("info", u8, "--json").stdout)
    assert info["bytes_logical"] == 2**62
    assert info["chunks_total"] == 2**62
    assert info["chunks_stored"] == 0
    proc = strata("plan", u8, "--chunks", "1024,1024", check=False)
    assert_clean_failure(proc, 1, "blocks, more than")
    # 2^32 chunks of a 32-dimensional array: refused by the same limit.
    d32 = write_metadata_only(tmp_path / "d32.zarr", [2] * 32, [1] * 32)
    proc = strata("plan", d32, "--chunks", ",".join(["2"] * 32), check=False)
    assert_clean_failure(proc, 1, "blocks, more than")
    d33 = write_metadata_only(tmp_path / "d33.zarr", [1] * 33, [1] * 33)
    assert_clean_failure(strata("info", d33, check=False), 1, "rank 33")


# -------------------------------------------------- 5. FIFOs and devices

def test_fifo_chunk_and_metadata_do_not_hang(strata, tmp_path):
    src = make_source(tmp_path / "a.zarr")
    os.remove(src / "1.1")
    os.mkfifo(src / "1.1")
    start = time.monotonic()
    proc = strata("copy", src, tmp_path / "out.zarr", check=False)
    assert_clean_failure(proc, 1, "1.1", "FIFO")
    src2 = make_source(tmp_path / "b.zarr")
    os.remove(src2 / ".zarray")
    os.mkfifo(src2 / ".zarray")
    assert_clean_failure(strata("info", src2, check=False), 1, ".zarray", "FIFO")
    assert time.monotonic() - start < 60


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_chunk_symlinked_to_a_device_is_an_error(strata, tmp_path, device):
    src = make_source(tmp_path / "a.zarr")
    os.remove(src / "0.1")
    os.symlink(device, src / "0.1")
    proc = strata("copy", src, tmp_path / "out.zarr", check=False)
    assert_clean_failure(proc, 1, "0.1", "character device", device)


# ------------------------------------------------------------- 8. sizes

BAD_SIZES = ["abc", "-1", "", "1e30", "1.5.5GB", "nan", "inf", "0x100",
             "99999999999999999999999TB", "-5GB"]


@pytest.mark.parametrize("option", ["--allowed-mem", "--reserved-mem", "--total-system-mem"])
@pytest.mark.parametrize("value", BAD_SIZES)
def test_malformed_sizes_are_usage_errors(strata, tmp_path, option, value):
    src = make_source(tmp_path / "a.zarr")
    for args in (["rechunk", src, tmp_path / "b.zarr"], ["plan", src]):
        proc = strata(*args, "--chunks", "5,2", f"{option}={value}", check=False)
        assert_clean_failure(proc, 2, option)
    assert not os.path.exists(tmp_path / "b.zarr")


# ------------------------------------------- 7. more memory than the machine has

def test_total_system_mem_beyond_the_machine_is_lowered_with_a_warning(strata, tmp_path):
    src = make_source(tmp_path / "a.zarr")
    proc = strata("plan", src, "--chunks", "5,2", "--total-system-mem", "100TB", "--json")
    assert "strata: warning: total_system_mem 100 TB is more than this machine has" in proc.stderr
    plan = json.loads(proc.stdout)
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert 0 < plan["spec"]["total_system_mem"] <= ram


# -------------------------------------------------------- 10. fill chunks

def test_chunks_of_fill_value_are_not_written(strata, tmp_path):
    src = tmp_path / "sparse.zarr"
    z = zarr.open_array(str(src), mode="w", shape=(400, 400), chunks=(10, 10), dtype="f8",
                        fill_value=-1.0, zarr_format=2)
    z[0:10, 0:10] = 1.0
    z[390:400, 200:210] = 2.0
    assert len([f for f in os.listdir(src) if not f.startswith(".")]) == 2
    dst = tmp_path / "out.zarr"
    strata("rechunk", src, dst, "--chunks", "40,40")
    stored = [f for f in os.listdir(dst) if not f.startswith(".")]
    assert sorted(stored) == ["0.0", "9.5"]
    np.testing.assert_array_equal(zarr.open_array(str(dst), mode="r")[...], z[...])
    info = json.loads(strata("info", dst, "--json").stdout)
    assert (info["chunks_stored"], info["chunks_total"]) == (2, 100)
    strata("copy", src, tmp_path / "copy.zarr", "--codec", "zstd")
    assert len([f for f in os.listdir(tmp_path / "copy.zarr") if not f.startswith(".")]) == 2
    assert strata("verify", src, dst).returncode == 0


# ------------------------------------------------------- 9. concurrent rewrite

def test_source_rewritten_during_the_run_is_detected(strata, tmp_path):
    # A copy reads while `random --overwrite` rewrites the source with other
    # data: it either finishes with one version whole, or fails saying why;
    # never old data mixed with new (or with fill for chunks deleted mid-read).
    shape = (1000, 1000)
    src = tmp_path / "a.zarr"
    make = ["random", src, "--shape", "1000,1000", "--chunks", "10,1000", "--codec", "zlib",
            "--workers", "1"]
    strata(*make, "--seed", "1")
    versions = [synthetic(shape, "float64", 1), synthetic(shape, "float64", 2)]
    outcomes = set()
    for attempt, verb in enumerate(["copy", "rechunk", "copy", "rechunk"]):
        dst = tmp_path / f"out{attempt}.zarr"
        extra = ["--chunks", "100,100"] if verb == "rechunk" else ["--codec", "zstd"]
        reader = subprocess.Popen([strata.path, verb, str(src), str(dst), "--workers", "1",
                                   *extra], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True)
        time.sleep(0.1 * attempt)
        strata(*make, "--seed", str(2 - attempt % 2), "--overwrite")
        _, err = reader.communicate(timeout=600)
        if reader.returncode == 0:
            got = zarr.open_array(str(dst), mode="r")[...]
            assert any(np.array_equal(got, v) for v in versions), verb
            outcomes.add("finished")
        else:
            assert any(s in err for s in ("while this run read it", "no Zarr array",
                                          "is incomplete")), err
            assert not os.path.exists(dst / ".zarray")
            outcomes.add("refused")
