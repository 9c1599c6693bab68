"""Bad input gives one clear line on stderr, a non-zero exit, and loses nothing.

Each case damages something (metadata, a chunk, an argument, the destination)
and checks: exit code (2 for usage, 1 otherwise), a single 'strata: error:'
line naming the problem, the source tree byte-for-byte unchanged, and no
destination that zarr-python could open as a finished array.
"""
import json
import os
import shutil
import stat

import numcodecs
import numpy as np
import pytest
import zarr

from conftest import synthetic, tree_digest


def make_source(path, compressor=numcodecs.Blosc(), dtype="float64"):
    z = zarr.open_array(str(path), mode="w", shape=(10, 6), chunks=(4, 3), dtype=dtype,
                        compressor=compressor, zarr_format=2)
    z[...] = synthetic((10, 6), dtype, seed=1)
    return path


def assert_clean_failure(proc, code, *needles):
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("strata: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def assert_no_finished_output(path):
    if not os.path.exists(path):
        return
    with pytest.raises(Exception):
        zarr.open_array(str(path), mode="r")


def run_copy_expecting(strata, src, dst, code, *needles, extra=()):
    before = tree_digest(src)
    proc = strata("copy", src, dst, *extra, check=False)
    assert_clean_failure(proc, code, *needles)
    assert tree_digest(src) == before
    assert_no_finished_output(dst)
    return proc


def test_malformed_json(strata, tmp_path):
    src = make_source(tmp_path / "src.zarr")
    (src / ".zarray").write_text('{"zarr_format": 2, "shape": [10, 6], ')
    run_copy_expecting(strata, src, tmp_path / "dst.zarr", 1, ".zarray", "JSON")


def test_unknown_codec(strata, tmp_path):
    src = make_source(tmp_path / "src.zarr")
    meta = json.loads((src / ".zarray").read_text())
    meta["compressor"] = {"id": "snappy9000"}
    (src / ".zarray").write_text(json.dumps(meta))
    run_copy_expecting(strata, src, tmp_path / "dst.zarr", 1, "snappy9000")


def test_unsupported_filter(strata, tmp_path):
    src = make_source(tmp_path / "src.zarr")
    meta = json.loads((src / ".zarray").read_text())
    meta["filters"] = [{"id": "delta", "dtype": "<f8"}]
    (src / ".zarray").write_text(json.dumps(meta))
    run_copy_expecting(strata, src, tmp_path / "dst.zarr", 1, "delta")


# Codecs Strata does not read, in metadata-only arrays made by hand as
# zarr-python 2 (v2) and 3 (v3, numcodecs.* names in their stage) write them:
# refused by name in one line, not with an error about something else.
V3_REFUSED_CODECS = {
    "pcodec": [{"name": "numcodecs.pcodec", "configuration": {
        "level": 8, "mode_spec": "auto", "delta_spec": "auto",
        "paging_spec": "equal_pages_up_to", "delta_encoding_order": None,
        "equal_pages_up_to": 262144}}],
    "zfpy": [{"name": "numcodecs.zfpy", "configuration": {
        "mode": 4, "tolerance": 0.01, "rate": -1, "precision": -1}}],
    "lzma": [{"name": "bytes", "configuration": {"endian": "little"}},
             {"name": "numcodecs.lzma", "configuration": {"format": 1, "check": -1,
                                                          "preset": None, "filters": None}}],
    "delta": [{"name": "numcodecs.delta", "configuration": {"dtype": "<f8"}},
              {"name": "bytes", "configuration": {"endian": "little"}}],
    "fixedscaleoffset": [{"name": "numcodecs.fixedscaleoffset",
                          "configuration": {"offset": 0, "scale": 10, "dtype": "<f8"}},
                         {"name": "bytes", "configuration": {"endian": "little"}}],
    "bitround": [{"name": "numcodecs.bitround", "configuration": {"keepbits": 4}},
                 {"name": "bytes", "configuration": {"endian": "little"}}],
}
V2_REFUSED_CODECS = {
    "pcodec": ("compressor", {"id": "pcodec", "level": 8}),
    "zfpy": ("compressor", {"id": "zfpy", "mode": 4, "tolerance": 0.01}),
    "lzma": ("compressor", {"id": "lzma", "format": 1, "check": -1, "preset": None,
                            "filters": None}),
    "delta": ("filters", [{"id": "delta", "dtype": "<f8"}]),
    "fixedscaleoffset": ("filters", [{"id": "fixedscaleoffset", "offset": 0, "scale": 10,
                                      "dtype": "<f8"}]),
    "bitround": ("filters", [{"id": "bitround", "keepbits": 4}]),
}


@pytest.mark.parametrize("codec", sorted(V2_REFUSED_CODECS))
def test_refused_codec_v2(strata, tmp_path, codec):
    src = tmp_path / "src.zarr"
    src.mkdir()
    field, value = V2_REFUSED_CODECS[codec]
    meta = {"zarr_format": 2, "shape": [10, 6], "chunks": [4, 3], "dtype": "<f8",
            "compressor": None, "filters": None, "fill_value": 0.0, "order": "C"}
    meta[field] = value
    (src / ".zarray").write_text(json.dumps(meta))
    for verb in ("info", "copy"):
        args = (verb, src) if verb == "info" else (verb, src, tmp_path / "dst.zarr")
        proc = strata(*args, check=False)
        assert_clean_failure(proc, 1, f"codec '{codec}' is not supported")
    assert_no_finished_output(tmp_path / "dst.zarr")


@pytest.mark.parametrize("codec", sorted(V3_REFUSED_CODECS))
def test_refused_codec_v3(strata, tmp_path, codec):
    src = tmp_path / "src.zarr"
    src.mkdir()
    meta = {"zarr_format": 3, "node_type": "array", "shape": [10, 6], "data_type": "float64",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 3]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0.0,
            "codecs": V3_REFUSED_CODECS[codec]}
    (src / "zarr.json").write_text(json.dumps(meta))
    for verb in ("info", "copy"):
        args = (verb, src) if verb == "info" else (verb, src, tmp_path / "dst.zarr")
        proc = strata(*args, check=False)
        assert_clean_failure(proc, 1, f"codec 'numcodecs.{codec}' is not supported")
        assert "must come after" not in proc.stderr
    assert_no_finished_output(tmp_path / "dst.zarr")


def test_truncated_compressed_chunk(strata, tmp_path):
    src = make_source(tmp_path / "src.zarr")
    chunk = src / "1.1"
    chunk.write_bytes(chunk.read_bytes()[:20])
    run_copy_expecting(strata, src, tmp_path / "dst.zarr", 1, "chunk 1.1")


def test_garbage_chunk(strata, tmp_path):
    src = make_source(tmp_path / "src.zarr", compressor=numcodecs.Zstd())
    (src / "2.0").write_bytes(os.urandom(100))
    run_copy_expecting(strata, src, tmp_path / "dst.zarr", 1, "chunk 2.0")


def test_uncompressed_chunk_of_wrong_size(strata, tmp_path):
    src = make_source(tmp_path / "src.zarr", compressor=None)
    chunk = src / "0.1"
    chunk.write_bytes(chunk.read_bytes() + b"extra")
    run_copy_expecting(strata, src, tmp_path / "dst.zarr", 1, "chunk 0.1", "expected 96")


@pytest.mark.parametrize("size", [9601, 10600, 19200])
def test_rechunk_refuses_an_uncompressed_chunk_of_wrong_size(strata, tmp_path, size):
    # Chunks of 40 x 30 float64 (9,600 bytes); the target chunks cut across
    # them, so the rechunk reads parts of chunk 1.0 (ranged reads), which
    # once used its first bytes whatever its length. copy refused it already.
    src = tmp_path / "src.zarr"
    z = zarr.open_array(str(src), mode="w", shape=(100, 60), chunks=(40, 30), dtype="float64",
                        compressor=None, zarr_format=2)
    z[...] = synthetic((100, 60), "float64", seed=1)
    chunk = src / "1.0"
    good = chunk.read_bytes()
    assert len(good) == 9600
    chunk.write_bytes((good * 2)[:size])
    before = tree_digest(src)
    for args in (("--chunks", "25,60"), ("--chunks", "7,13", "--executor", "processes")):
        dst = tmp_path / "dst.zarr"
        proc = strata("rechunk", src, dst, *args, check=False)
        assert_clean_failure(proc, 1, "chunk 1.0", f"{size} bytes, expected 9600")
        assert tree_digest(src) == before
        assert_no_finished_output(dst)
        shutil.rmtree(dst, ignore_errors=True)


def test_dtype_mismatch_between_metadata_and_chunks(strata, tmp_path):
    # The metadata says float32 but the chunks hold float64: wrong decoded size.
    src = make_source(tmp_path / "src.zarr", compressor=numcodecs.LZ4())
    meta = json.loads((src / ".zarray").read_text())
    meta["dtype"] = "<f4"
    (src / ".zarray").write_text(json.dumps(meta))
    run_copy_expecting(strata, src, tmp_path / "dst.zarr", 1, "chunk 0.0")


def test_missing_array(strata, tmp_path):
    proc = strata("copy", tmp_path / "nope.zarr", tmp_path / "dst.zarr", check=False)
    assert_clean_failure(proc, 1, "nope.zarr")
    assert not os.path.exists(tmp_path / "dst.zarr")
    proc = strata("info", tmp_path / "nope.zarr", check=False)
    assert_clean_failure(proc, 1, "nope.zarr")


def test_empty_directory_is_not_an_array(strata, tmp_path):
    (tmp_path / "empty.zarr").mkdir()
    proc = strata("info", tmp_path / "empty.zarr", check=False)
    assert_clean_failure(proc, 1, "no Zarr array or group")


def test_group_is_not_an_array(strata, tmp_path):
    # A group is copied whole (test_datasets.py), but --shards is per array.
    for fmt in (2, 3):
        g = tmp_path / f"g{fmt}.zarr"
        zarr.open_group(str(g), mode="w", zarr_format=fmt)
        proc = strata("copy", g, tmp_path / "dst.zarr", "--shards", "10", check=False)
        assert_clean_failure(proc, 1, "group")
        info = strata("info", g)
        assert "group" in info.stdout
        assert not (tmp_path / "dst.zarr").exists()


def test_unwritable_destination(strata, tmp_path):
    src = make_source(tmp_path / "src.zarr")
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    run_copy_expecting(strata, src, blocker / "dst.zarr", 1, "dst.zarr")
    run_copy_expecting(strata, src, "/proc/strata-dst.zarr", 1, "/proc/strata-dst.zarr")


def test_destination_exists(strata, tmp_path):
    src = make_source(tmp_path / "src.zarr")
    dst = make_source(tmp_path / "dst.zarr", dtype="int8")
    before = tree_digest(dst)
    proc = strata("copy", src, dst, check=False)
    assert_clean_failure(proc, 1, "already holds", "--overwrite")
    assert tree_digest(dst) == before
    strata("copy", src, dst, "--overwrite")
    assert zarr.open_array(str(dst), mode="r").dtype == np.float64


def test_refuses_directory_of_other_files(strata, tmp_path):
    src = make_source(tmp_path / "src.zarr")
    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.tex").write_text("precious")
    proc = strata("copy", src, home, "--overwrite", check=False)
    assert_clean_failure(proc, 1, "not empty")
    assert (home / "thesis.tex").read_text() == "precious"


def test_copy_onto_itself(strata, tmp_path):
    src = make_source(tmp_path / "src.zarr")
    before = tree_digest(src)
    proc = strata("copy", src, src, "--overwrite", check=False)
    assert_clean_failure(proc, 2, "same location")
    assert tree_digest(src) == before


@pytest.mark.parametrize("args,needle", [
    (["random", "X", "--shape", "10,abc", "--chunks", "5,5"], "--shape"),
    (["random", "X", "--shape", "10,10", "--chunks", "5"], "--chunks"),
    (["random", "X", "--shape", "10,10", "--chunks", "0,5"], "(0, 5)"),
    (["random", "X", "--shape", "10", "--chunks", "5", "--dtype", "float128"], "float128"),
    (["random", "X", "--shape", "10", "--chunks", "5", "--codec", "snappy"], "snappy"),
    (["random", "X", "--shape", "10", "--chunks", "5", "--codec", "blosc:cname=nope"], "nope"),
    (["random", "X", "--shape", "10", "--chunks", "5", "--zarr-format", "4"], "--zarr-format"),
    (["random", "X", "--shape", "10", "--chunks", "5", "--workers", "0"], "--workers"),
    (["copy", "A"], "DST"),
    # -1 was the "not given" value: "needs exactly one of --at and --append-dim".
    (["write-region", "A", "B", "--append-dim", "-1"],
     "--append-dim -1: an axis of DST is 0 or more"),
    (["write-region", "A", "B", "--append-dim", "0", "--at", "0,0"],
     "needs exactly one of --at and --append-dim"),
    (["write-region", "A", "B"], "needs exactly one of --at and --append-dim"),
    (["frobnicate"], "frobnicate"),
    ([], "subcommand"),
])
def test_usage_errors(strata, tmp_path, args, needle):
    args = [str(tmp_path / a) if a == "X" else a for a in args]
    proc = strata(*args, check=False)
    assert proc.returncode in (1, 2), proc
    assert_clean_failure(proc, proc.returncode, needle)
    assert not os.path.exists(tmp_path / "X") or not os.path.exists(tmp_path / "X" / ".zarray")


def test_interrupted_output_is_clearly_incomplete(strata, tmp_path):
    # A copy that fails half way (a corrupt chunk late in the array) leaves
    # a destination that neither zarr-python nor strata treats as finished.
    src = make_source(tmp_path / "src.zarr", compressor=numcodecs.Zlib())
    (src / "2.1").write_bytes(b"\x00" * 7)
    dst = tmp_path / "dst.zarr"
    proc = strata("copy", src, dst, "--workers", "1", check=False)
    assert proc.returncode == 1
    assert os.path.exists(dst / ".strata-incomplete")
    assert not os.path.exists(dst / ".zarray")
    assert_no_finished_output(dst)
    info = strata("info", dst)
    assert "INCOMPLETE" in info.stdout
    opened = strata("verify", src, dst, check=False)
    assert_clean_failure(opened, 1, "incomplete")
    # Repair the source and re-run: the same command finishes the job.
    os.remove(src / "2.1")
    z = zarr.open_array(str(src), mode="r+")
    z[8:10, 3:6] = synthetic((10, 6), "float64", seed=1)[8:10, 3:6]
    strata("copy", src, dst, "--workers", "1")
    assert not os.path.exists(dst / ".strata-incomplete")
    np.testing.assert_array_equal(zarr.open_array(str(dst), mode="r")[...], z[...])


@pytest.mark.parametrize("option,value", [("--tier", "bogus"), ("--executor", "bogus")])
def test_rechunk_unknown_choice_is_a_usage_error(strata, tmp_path, option, value):
    # Caught before SRC is even opened: exit 2, like every usage error.
    proc = strata("rechunk", tmp_path / "A", tmp_path / "B", "--chunks", "5", option, value,
                  check=False)
    assert_clean_failure(proc, 2, value)
    assert not os.path.exists(tmp_path / "B")
