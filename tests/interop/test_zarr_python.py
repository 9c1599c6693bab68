"""Interop with the real zarr-python 3 (the .venv's), both ways, Zarr v2.

Strata reads the v2 arrays zarr-python writes (every dtype, every
compressor, order C and F, both dimension separators, NaN and other fill
values, ragged edges, missing chunks) and zarr-python reads what Strata
writes. Zarr v3 (zarr-python's default format, its default and named codecs,
fill values, dimension names): test_zarr_python_v3.py.
"""
import os

import numcodecs
import numpy as np
import pytest
import zarr

from conftest import assert_same, synthetic, zarr_v2

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "complex64", "complex128"]

COMPRESSORS = {
    "none": None,
    "blosc-lz4-shuffle": numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE),
    "blosc-lz4-noshuffle": numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.NOSHUFFLE),
    "blosc-zstd-bitshuffle": numcodecs.Blosc(cname="zstd", clevel=3,
                                             shuffle=numcodecs.Blosc.BITSHUFFLE),
    "blosc-lz4hc": numcodecs.Blosc(cname="lz4hc", clevel=9, shuffle=numcodecs.Blosc.SHUFFLE),
    "blosc-blosclz": numcodecs.Blosc(cname="blosclz", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE),
    "blosc-zlib-blocksize": numcodecs.Blosc(cname="zlib", clevel=1, shuffle=numcodecs.Blosc.SHUFFLE,
                                            blocksize=256),
    "blosc-autoshuffle": numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.AUTOSHUFFLE),
    "zstd": numcodecs.Zstd(level=3),
    "zlib": numcodecs.Zlib(level=6),
    "gzip": numcodecs.GZip(level=5),
    "lz4": numcodecs.LZ4(acceleration=1),
}

SHAPE = (13, 7, 5)   # ragged against every chunking below
CHUNKS = (4, 3, 5)


def write_with_zarr(path, data, compressor, order="C", separator=".", fill_value=0,
                    chunks=CHUNKS, drop_chunks=()):
    zarr_v2(path, data, chunks=chunks, compressor=compressor, order=order,
            fill_value=fill_value, dimension_separator=separator)
    for key in drop_chunks:
        os.remove(os.path.join(str(path), key.replace(".", separator)))
    return zarr.open_array(str(path), mode="r")


def check_strata_reads(strata, tmp_path, src):
    """`strata copy` to raw and to blosc, then zarr-python reads both: same values."""
    expected = src[...]
    raw = tmp_path / "raw.zarr"
    strata("copy", src.store.root, raw, "--codec", "none")
    assert_same(zarr.open_array(str(raw), mode="r")[...], expected)
    meta = zarr.open_array(str(raw), mode="r").metadata
    assert meta.zarr_format == 2
    assert meta.compressor is None and not meta.filters
    packed = tmp_path / "packed.zarr"
    strata("copy", src.store.root, packed, "--codec", "zstd:level=1")
    assert zarr.open_array(str(packed), mode="r").metadata.compressor == numcodecs.Zstd(level=1)
    assert_same(zarr.open_array(str(packed), mode="r")[...], expected)
    strata("verify", src.store.root, packed)


@pytest.mark.parametrize("dtype", DTYPES)
def test_strata_reads_every_dtype(strata, tmp_path, dtype):
    data = synthetic(SHAPE, dtype, seed=3)
    src = write_with_zarr(tmp_path / "src.zarr", data, COMPRESSORS["blosc-lz4-shuffle"])
    check_strata_reads(strata, tmp_path, src)


@pytest.mark.parametrize("name", sorted(COMPRESSORS))
@pytest.mark.parametrize("dtype", ["int16", "float64"])
def test_strata_reads_every_compressor(strata, tmp_path, name, dtype):
    data = synthetic(SHAPE, dtype, seed=4)
    src = write_with_zarr(tmp_path / "src.zarr", data, COMPRESSORS[name])
    check_strata_reads(strata, tmp_path, src)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("separator", [".", "/"])
@pytest.mark.parametrize("dtype", [">f8", "<i4", ">c8", "<u2"])
def test_strata_reads_order_separator_endianness(strata, tmp_path, order, separator, dtype):
    data = synthetic(SHAPE, np.dtype(dtype).newbyteorder("="), seed=5).astype(dtype)
    src = write_with_zarr(tmp_path / "src.zarr", data, COMPRESSORS["zlib"], order=order,
                          separator=separator)
    check_strata_reads(strata, tmp_path, src)


@pytest.mark.parametrize("fill", [np.nan, np.inf, -np.inf, 42.5, None])
def test_missing_chunks_read_as_fill_value(strata, tmp_path, fill):
    data = synthetic(SHAPE, "float64", seed=6)
    src = write_with_zarr(tmp_path / "src.zarr", data, COMPRESSORS["blosc-lz4-shuffle"],
                          fill_value=fill, drop_chunks=["0.0.0", "3.2.0", "1.1.0"])
    expected = src[...]
    raw = tmp_path / "raw.zarr"
    strata("copy", src.store.root, raw, "--codec", "none")
    got = zarr.open_array(str(raw), mode="r")[...]
    if fill is None:
        # zarr-python 3 reads missing chunks of a null fill value as zeros,
        # as Strata defines them: the missing regions are all 0.
        for region in [np.s_[0:4, 0:3, :], np.s_[12:13, 6:7, :], np.s_[4:8, 3:6, :]]:
            assert not expected[region].any() and not got[region].any()
        assert zarr.open_array(str(raw), mode="r").metadata.fill_value is None
        # A v3 copy (no null fill in v3) holds the same values.
        v3 = tmp_path / "v3.zarr"
        strata("copy", src.store.root, v3, "--zarr-format", "3", "--codec", "none")
        strata("verify", raw, v3)
        assert_same(zarr.open_array(str(v3), mode="r")[...], expected)
    else:
        assert_same(np.asarray(zarr.open_array(str(raw), mode="r").fill_value),
                    np.asarray(fill, dtype="f8"))
    assert_same(got, expected)
    # Missing chunks stay missing in the copy.
    assert not os.path.exists(raw / "0.0.0")


def test_partial_and_bool_and_complex_fill_values(strata, tmp_path):
    for dtype, fill in [("bool", True), ("complex128", 1.5 - 2j), ("int32", -7),
                        ("uint64", 2**64 - 1)]:
        path = tmp_path / f"src-{dtype}.zarr"
        z = zarr.open_array(str(path), mode="w", shape=(9, 4), chunks=(4, 4), dtype=dtype,
                            fill_value=fill, zarr_format=2)
        z[0:4, :] = synthetic((4, 4), dtype, seed=1)  # only the first chunk is written
        out = tmp_path / f"copy-{dtype}.zarr"
        strata("copy", path, out, "--codec", "none")
        assert_same(zarr.open_array(str(out), mode="r")[...], z[...])


@pytest.mark.parametrize("dtype", DTYPES)
def test_zarr_python_reads_strata_random(strata, tmp_path, dtype):
    shape, chunks = (11, 6, 3), (4, 4, 2)
    out = tmp_path / "r.zarr"
    strata("random", out, "--shape", ",".join(map(str, shape)), "--chunks",
           ",".join(map(str, chunks)), "--dtype", dtype, "--seed", "9")
    z = zarr.open_array(str(out), mode="r")
    assert z.chunks == chunks
    assert z.dtype == np.dtype(dtype)
    assert_same(z[...], synthetic(shape, dtype, seed=9))


@pytest.mark.parametrize("codec", ["none", "blosc", "blosc:cname=zstd,clevel=3,shuffle=bit",
                                   "blosc:cname=lz4hc,shuffle=none", "zstd:level=5", "zlib:level=9",
                                   "gzip:level=1", "lz4:acceleration=3"])
def test_zarr_python_reads_every_strata_codec(strata, tmp_path, codec):
    out = tmp_path / "r.zarr"
    strata("random", out, "--shape", "20,9", "--chunks", "6,4", "--dtype", "float32",
           "--seed", "2", "--codec", codec)
    assert_same(zarr.open_array(str(out), mode="r")[...], synthetic((20, 9), "float32", seed=2))


@pytest.mark.parametrize("codec,dtype", [("blosc", "float64"),
                                         ("blosc:cname=zstd,clevel=3,shuffle=bit", "float32"),
                                         ("blosc:shuffle=none", "uint64")])
def test_zarr_python_reads_large_blosc_chunks_strata_streamed(strata, tmp_path, codec, dtype):
    # Chunks of 16 MiB or more are blosc-encoded segment by segment into the
    # file (uint64 noise unshuffled: streams stored as they are, in a frame
    # libblosc itself would have stored uncompressed). numcodecs decodes them.
    size = np.dtype(dtype).itemsize
    rows = (16 << 20) // (2048 * size)
    shape, chunks = (2 * rows + 77, 2048), (rows, 2048)
    out = tmp_path / "big.zarr"
    strata("random", out, "--shape", ",".join(map(str, shape)), "--chunks",
           ",".join(map(str, chunks)), "--dtype", dtype, "--seed", "4", "--codec", codec)
    z = zarr.open_array(str(out), mode="r")
    assert z.chunks == chunks
    assert_same(z[...], synthetic(shape, dtype, seed=4))
    blosc = numcodecs.Blosc()
    raw = (out / "0.0").read_bytes()
    assert np.array_equal(np.frombuffer(blosc.decode(raw), dtype=dtype),
                          synthetic(shape, dtype, seed=4)[:rows].ravel())


def test_strata_copy_preserves_order_f_and_separator(strata, tmp_path):
    data = synthetic((8, 6), "float64", seed=8)
    src = write_with_zarr(tmp_path / "src.zarr", data, COMPRESSORS["gzip"], order="F",
                          separator="/", chunks=(3, 4))
    out = tmp_path / "out.zarr"
    strata("copy", src.store.root, out)  # same codec, order and separator
    z = zarr.open_array(str(out), mode="r")
    assert z.metadata.order == "F"
    assert z.metadata.dimension_separator == "/"
    assert z.metadata.compressor == numcodecs.GZip(level=5)
    assert sorted(os.listdir(out / "2")) == ["0", "1"]  # chunk 2/1 is a nested key
    assert_same(z[...], data)


def test_zero_size_and_rank_zero_arrays(strata, tmp_path):
    empty = tmp_path / "empty.zarr"
    strata("random", empty, "--shape", "0,5", "--chunks", "3,5")
    assert zarr.open_array(str(empty), mode="r").shape == (0, 5)
    scalar = tmp_path / "scalar.zarr"
    z = zarr.open_array(str(scalar), mode="w", shape=(), dtype="f8", zarr_format=2)
    z[...] = 3.25
    out = tmp_path / "scalar-copy.zarr"
    strata("copy", scalar, out, "--codec", "none")
    assert zarr.open_array(str(out), mode="r")[...] == 3.25


def test_attributes_survive_copy(strata, tmp_path):
    src = write_with_zarr(tmp_path / "src.zarr", synthetic((4, 4), "int8", 1), None, chunks=(2, 2))
    zarr.open_array(str(tmp_path / "src.zarr"), mode="r+").attrs.update(
        {"units": "K", "long_name": "air temperature", "scale": [1, 2.5]})
    out = tmp_path / "out.zarr"
    strata("copy", tmp_path / "src.zarr", out, "--codec", "gzip")
    assert dict(zarr.open_array(str(out), mode="r").attrs) == {
        "units": "K", "long_name": "air temperature", "scale": [1, 2.5]}


def test_verify_reports_differences(strata, tmp_path):
    a = write_with_zarr(tmp_path / "a.zarr", synthetic((10, 10), "float64", 1), None, chunks=(5, 5))
    data = synthetic((10, 10), "float64", 1)
    data[3, 4] = np.nan
    data[9, 9] = -1
    write_with_zarr(tmp_path / "b.zarr", data, COMPRESSORS["zlib"], chunks=(3, 7))
    proc = strata("verify", tmp_path / "a.zarr", tmp_path / "b.zarr", check=False)
    assert proc.returncode == 1
    assert "NOT EQUAL: 2 of 100 elements differ" in proc.stdout
    assert "at (3, 4)" in proc.stdout and "at (9, 9)" in proc.stdout
    same = strata("verify", tmp_path / "a.zarr", tmp_path / "a.zarr")
    assert "EQUAL" in same.stdout
