"""Interop with the real zarr-python 3 (the .venv's) in Zarr v3, both ways.

Strata reads exactly what zarr-python writes with its defaults (v3: bytes +
zstd; v2: zstd), every codec zarr-python writes by name (blosc, zstd with and
without checksum, gzip, crc32c, transpose, big-endian bytes, the
numcodecs.zarr3 adapters), fill values (NaN, infinities, complex, bool,
uint64's maximum, float16), dimension names and both chunk key encodings;
zarr-python reads every codec Strata writes into v3. The numcodecs adapters
Strata does not read (lzma, jenkins_lookup3, array filters) it refuses by
name. Variable-length strings
(zarr-python's default for str) Strata cannot hold: it refuses them in one
line naming the array and its data type. Sharding: test_sharding.py;
groups and consolidated metadata: test_datasets.py.
"""
import json
import os

import numcodecs
import numcodecs.zarr3
import numpy as np
import pytest
import zarr
import zarr.codecs as zc

from conftest import assert_same, synthetic, tree_digest

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]

SHAPE = (13, 7, 5)   # ragged against CHUNKS
CHUNKS = (4, 3, 5)

LITTLE = {"name": "bytes", "configuration": {"endian": "little"}}


def write_v3(path, data, chunks=CHUNKS, **kwargs):
    """`data` as zarr-python writes it with `kwargs` (create_array's), reopened."""
    z = zarr.create_array(str(path), shape=data.shape, chunks=chunks, dtype=data.dtype,
                          **kwargs)
    z[...] = data
    return zarr.open_array(str(path), mode="r")


def codecs_of(path):
    return json.loads((path / "zarr.json").read_text())["codecs"]


def native(a):
    """`a` in native byte order (Strata keeps a big-endian source's order)."""
    a = np.asarray(a)
    return a.astype(a.dtype.newbyteorder("="))


def check_strata_reads(strata, tmp_path, src, expected):
    """Strata reads `src` (a path): `info`, then `copy` to raw v2 and to v3
    with its own codecs, each read back by zarr-python; `verify` compares."""
    info = json.loads(strata("info", src, "--json").stdout)
    assert info["shape"] == list(expected.shape)
    raw = tmp_path / "raw.zarr"
    strata("copy", src, raw, "--zarr-format", "2", "--codec", "none")
    got = zarr.open_array(str(raw), mode="r")
    assert got.metadata.zarr_format == 2 and got.metadata.compressor is None
    assert_same(native(got[...]), native(expected))
    v3 = tmp_path / "v3.zarr"
    strata("copy", src, v3, "--zarr-format", "3", "--codec", "zstd:level=1+crc32c")
    got = zarr.open_array(str(v3), mode="r")
    assert got.metadata.zarr_format == 3
    assert [c["name"] for c in codecs_of(v3)][-2:] == ["zstd", "crc32c"]
    assert_same(native(got[...]), native(expected))
    strata("verify", src, raw)
    strata("verify", src, v3)


# ------------------------------------------------------------ defaults

@pytest.mark.parametrize("dtype", DTYPES)
def test_strata_reads_zarr_python_v3_defaults(strata, tmp_path, dtype):
    data = synthetic(SHAPE, dtype, seed=3)
    src = tmp_path / "src.zarr"
    write_v3(src, data)
    # What zarr-python 3.1 writes by default: bytes (little-endian), then zstd
    # level 0 without checksum; chunk keys c/i/j/k.
    meta = json.loads((src / "zarr.json").read_text())
    assert meta["codecs"][-1] == {"name": "zstd", "configuration": {"level": 0,
                                                                    "checksum": False}}
    assert meta["codecs"][0]["name"] == "bytes" and len(meta["codecs"]) == 2
    assert meta["chunk_key_encoding"] == {"name": "default", "configuration": {"separator": "/"}}
    assert os.path.isfile(src / "c" / "3" / "2" / "0")
    check_strata_reads(strata, tmp_path, src, data)
    # The copy keeps zarr-python's codecs when none is given.
    same = tmp_path / "same.zarr"
    strata("copy", src, same)
    assert codecs_of(same) == meta["codecs"]
    assert_same(zarr.open_array(str(same), mode="r")[...], data)


@pytest.mark.parametrize("dtype", DTYPES)
def test_strata_reads_zarr_python_v2_defaults(strata, tmp_path, dtype):
    data = synthetic(SHAPE, dtype, seed=4)
    src = tmp_path / "src.zarr"
    z = zarr.create_array(str(src), shape=SHAPE, chunks=CHUNKS, dtype=dtype, zarr_format=2)
    z[...] = data
    meta = json.loads((src / ".zarray").read_text())
    assert meta["compressor"] == {"id": "zstd", "level": 0}
    assert meta["filters"] is None
    check_strata_reads(strata, tmp_path, src, data)
    same = tmp_path / "same.zarr"
    strata("copy", src, same)
    assert zarr.open_array(str(same), mode="r").metadata.compressor == numcodecs.Zstd(level=0)
    assert_same(zarr.open_array(str(same), mode="r")[...], data)


# ------------------------------------------------------- named codecs

# name -> create_array keyword arguments (filters: array -> array;
# serializer: array -> bytes; compressors: bytes -> bytes).
NAMED = {
    "blosc-lz4-shuffle": dict(compressors=zc.BloscCodec(cname="lz4", clevel=5,
                                                        shuffle="shuffle")),
    "blosc-zstd-bitshuffle": dict(compressors=zc.BloscCodec(cname="zstd", clevel=3,
                                                            shuffle="bitshuffle")),
    "blosc-zlib-noshuffle-blocksize": dict(compressors=zc.BloscCodec(
        cname="zlib", clevel=1, shuffle="noshuffle", blocksize=256)),
    "blosc-lz4hc": dict(compressors=zc.BloscCodec(cname="lz4hc", clevel=9)),
    "blosc-blosclz": dict(compressors=zc.BloscCodec(cname="blosclz")),
    "zstd-level-7": dict(compressors=zc.ZstdCodec(level=7)),
    "zstd-checksum": dict(compressors=zc.ZstdCodec(level=3, checksum=True)),
    "zstd-negative-level": dict(compressors=zc.ZstdCodec(level=-3)),
    "gzip": dict(compressors=zc.GzipCodec(level=6)),
    "crc32c": dict(compressors=zc.Crc32cCodec()),
    "gzip+crc32c": dict(compressors=[zc.GzipCodec(level=1), zc.Crc32cCodec()]),
    "none": dict(compressors=None),
    "bytes-big": dict(serializer=zc.BytesCodec(endian="big")),
    "transpose": dict(filters=[zc.TransposeCodec(order=(2, 0, 1))]),
    "transpose+big+blosc": dict(filters=[zc.TransposeCodec(order=(1, 2, 0))],
                                serializer=zc.BytesCodec(endian="big"),
                                compressors=zc.BloscCodec(cname="lz4", shuffle="shuffle")),
    "numcodecs.zlib": dict(compressors=numcodecs.zarr3.Zlib(level=4)),
    "numcodecs.zlib-default": dict(compressors=numcodecs.zarr3.Zlib()),
    "numcodecs.gzip": dict(compressors=numcodecs.zarr3.GZip(level=2)),
    "numcodecs.lz4": dict(compressors=numcodecs.zarr3.LZ4(acceleration=2)),
    "numcodecs.bz2": dict(compressors=numcodecs.zarr3.BZ2(level=3)),
    "numcodecs.zstd": dict(compressors=numcodecs.zarr3.Zstd(level=2)),
    "numcodecs.blosc": dict(compressors=numcodecs.zarr3.Blosc(cname="zstd", clevel=2,
                                                              shuffle=2)),
    "numcodecs.blosc-default": dict(compressors=numcodecs.zarr3.Blosc()),
    "numcodecs.crc32": dict(compressors=numcodecs.zarr3.CRC32()),
    "numcodecs.adler32": dict(compressors=numcodecs.zarr3.Adler32()),
    "numcodecs.crc32c": dict(compressors=numcodecs.zarr3.CRC32C()),
    "numcodecs.fletcher32": dict(compressors=numcodecs.zarr3.Fletcher32()),
    "numcodecs.shuffle+zlib": dict(compressors=[numcodecs.zarr3.Shuffle(elementsize=8),
                                                numcodecs.zarr3.Zlib(level=1)]),
}


@pytest.mark.parametrize("name", sorted(NAMED))
@pytest.mark.parametrize("dtype", ["int16", "float64"])
def test_strata_reads_every_named_codec(strata, tmp_path, name, dtype):
    data = synthetic(SHAPE, dtype, seed=5)
    src = tmp_path / "src.zarr"
    write_v3(src, data, **NAMED[name])
    check_strata_reads(strata, tmp_path, src, data)
    # Copied as it is (no --codec): the same codec chain (the numcodecs
    # adapters of blosc, gzip and zstd, whose bytes are the core codecs',
    # under the core names), values read back.
    same = tmp_path / "same.zarr"
    strata("copy", src, same)
    assert_same(native(zarr.open_array(str(same), mode="r")[...]), data)
    core = {"numcodecs.blosc": "blosc", "numcodecs.gzip": "gzip", "numcodecs.zstd": "zstd"}
    got, want = codecs_of(same), codecs_of(src)
    assert [c["name"] for c in got] == [core.get(c["name"], c["name"]) for c in want]
    assert [c for c in got if c["name"] in ("transpose", "bytes")] == \
        [c for c in want if c["name"] in ("transpose", "bytes")]


# numcodecs.zarr3 adapters zarr-python writes that Strata does not read
# (lzma, a hash, and array -> array filters), and where the message puts them.
REFUSED = {
    "lzma": (dict(compressors=numcodecs.zarr3.LZMA()), "codecs[1]"),
    "jenkins_lookup3": (dict(compressors=numcodecs.zarr3.JenkinsLookup3()), "codecs[1]"),
    "delta": (dict(filters=[numcodecs.zarr3.Delta(dtype="<f8")]), "an array filter: codecs[0]"),
    "fixedscaleoffset": (dict(filters=[numcodecs.zarr3.FixedScaleOffset(
        offset=0, scale=10, dtype="<f8")]), "an array filter: codecs[0]"),
    "bitround": (dict(filters=[numcodecs.zarr3.BitRound(keepbits=10)]),
                 "an array filter: codecs[0]"),
    "quantize": (dict(filters=[numcodecs.zarr3.Quantize(digits=3, dtype="<f8")]),
                 "an array filter: codecs[0]"),
    "astype": (dict(filters=[numcodecs.zarr3.AsType(encode_dtype="<f4", decode_dtype="<f8")]),
               "an array filter: codecs[0]"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_unread_numcodecs_are_refused_by_name(strata, tmp_path, name):
    kwargs, where = REFUSED[name]
    src = tmp_path / "src.zarr"
    data = synthetic((10, 6), "float64", seed=1)
    write_v3(src, data, chunks=(4, 3), **kwargs)
    dst = tmp_path / "dst.zarr"
    for args in (["info", src], ["copy", src, dst], ["verify", src, src]):
        proc = strata(*args, check=False)
        assert proc.returncode == 1, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and str(src) in lines[0], proc.stderr
        assert f"codec 'numcodecs.{name}' is not supported ({where} in zarr.json" in lines[0], \
            lines[0]
    assert not dst.exists()


# Strata's --codec -> the v3 codecs it writes (after bytes), as zarr-python
# names them.
STRATA_CODECS = {
    "none": [],
    "blosc": ["blosc"],
    "blosc:cname=zstd,clevel=3,shuffle=bit": ["blosc"],
    "blosc:cname=lz4hc,shuffle=none": ["blosc"],
    "zstd:level=5": ["zstd"],
    "zstd:level=3,checksum=true": ["zstd"],
    "gzip:level=1": ["gzip"],
    "crc32c": ["crc32c"],
    "zstd+crc32c": ["zstd", "crc32c"],
    "zlib:level=9": ["numcodecs.zlib"],
    "lz4:acceleration=3": ["numcodecs.lz4"],
    "bz2:level=7": ["numcodecs.bz2"],
    "crc32": ["numcodecs.crc32"],
    "adler32": ["numcodecs.adler32"],
    "shuffle:elementsize=4+zlib:level=3": ["numcodecs.shuffle", "numcodecs.zlib"],
}


@pytest.mark.parametrize("codec", sorted(STRATA_CODECS))
def test_zarr_python_reads_every_strata_v3_codec(strata, tmp_path, codec):
    out = tmp_path / "r.zarr"
    strata("random", out, "--shape", "20,9", "--chunks", "6,4", "--dtype", "float32",
           "--seed", "2", "--zarr-format", "3", "--codec", codec)
    codecs = codecs_of(out)
    assert codecs[0] == LITTLE
    assert [c["name"] for c in codecs[1:]] == STRATA_CODECS[codec]
    z = zarr.open_array(str(out), mode="r")
    assert z.metadata.zarr_format == 3
    assert z.chunks == (6, 4) and z.dtype == np.float32
    assert_same(z[...], synthetic((20, 9), "float32", seed=2))


def test_zarr_python_reads_strata_transpose_and_big_endian(strata, tmp_path):
    # A v2 array of order F and big-endian dtype becomes transpose + bytes(big) in v3.
    data = synthetic((9, 7), "int32", seed=6).astype(">i4")
    src = tmp_path / "src.zarr"
    z = zarr.open_array(str(src), mode="w", zarr_format=2, shape=data.shape, chunks=(4, 3),
                        dtype=data.dtype, order="F", compressor=numcodecs.Zlib(level=1))
    z[...] = data
    v3 = tmp_path / "v3.zarr"
    strata("copy", src, v3, "--zarr-format", "3", "--codec", "zstd")
    codecs = codecs_of(v3)
    assert codecs[0] == {"name": "transpose", "configuration": {"order": [1, 0]}}
    assert codecs[1] == {"name": "bytes", "configuration": {"endian": "big"}}
    got = zarr.open_array(str(v3), mode="r")
    assert_same(got[...].astype("<i4"), data.astype("<i4"))
    strata("verify", src, v3)


# ------------------------------------------------------------ fill values

@pytest.mark.parametrize("dtype,fill", [
    ("float64", np.nan), ("float64", np.inf), ("float64", -np.inf), ("float64", -0.0),
    ("float32", np.nan), ("float16", np.nan), ("float16", -np.inf), ("float64", 42.5),
    ("int8", -128), ("int64", -(2**63)), ("uint64", 2**64 - 1), ("bool", True),
    ("complex128", complex(1.5, -2.0)), ("complex64", complex(np.nan, np.inf)),
])
def test_fill_values_both_ways(strata, tmp_path, dtype, fill):
    shape = (9, 4)
    src = tmp_path / "src.zarr"
    z = zarr.create_array(str(src), shape=shape, chunks=(4, 4), dtype=dtype, fill_value=fill)
    z[0:4, :] = synthetic((4, 4), dtype, seed=1)  # chunks 1 and 2 stay missing
    assert sorted(os.listdir(src / "c")) == ["0"]
    expected = z[...]
    want_fill = np.asarray(fill, dtype=dtype)
    assert_same(expected[8, 3], want_fill)
    # zarr-python -> Strata -> zarr-python, in v3 and in v2.
    for fmt in ("3", "2"):
        out = tmp_path / f"out{fmt}.zarr"
        strata("copy", src, out, "--zarr-format", fmt, "--codec", "gzip:level=1")
        got = zarr.open_array(str(out), mode="r")
        assert_same(np.asarray(got.fill_value, dtype=dtype), want_fill)
        assert_same(got[...], expected)
        # Missing chunks stay missing.
        assert not os.path.exists(out / "c" / "1") and not os.path.exists(out / "1.0")
        strata("verify", src, out)
    # The v3 document Strata wrote spells the fill as zarr-python does.
    ours = json.loads((tmp_path / "out3.zarr" / "zarr.json").read_text())["fill_value"]
    theirs = json.loads((src / "zarr.json").read_text())["fill_value"]
    assert ours == theirs or (isinstance(ours, float) and ours == theirs), (ours, theirs)


# ---------------------------------------------------- dimension names, keys

def test_dimension_names_both_ways(strata, tmp_path):
    data = synthetic(SHAPE, "float32", seed=7)
    src = tmp_path / "src.zarr"
    write_v3(src, data, dimension_names=["time", None, "x"], attributes={"units": "K"})
    v3 = tmp_path / "v3.zarr"
    strata("copy", src, v3, "--codec", "blosc")
    got = zarr.open_array(str(v3), mode="r")
    assert got.metadata.dimension_names == ("time", None, "x")
    assert dict(got.attrs) == {"units": "K"}
    assert_same(got[...], data)
    assert "dimensions:   time, null, x" in strata("info", src).stdout
    # Named dimensions from v2's _ARRAY_DIMENSIONS become v3 dimension_names.
    v2 = tmp_path / "v2.zarr"
    z = zarr.open_array(str(v2), mode="w", zarr_format=2, shape=(6, 4), chunks=(3, 4),
                        dtype="i4")
    z[...] = np.arange(24, dtype="i4").reshape(6, 4)
    z.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
    back = tmp_path / "back.zarr"
    strata("copy", v2, back, "--zarr-format", "3")
    got = zarr.open_array(str(back), mode="r")
    assert got.metadata.dimension_names == ("y", "x")
    assert_same(got[...], z[...])


@pytest.mark.parametrize("separator", [".", "/"])
def test_v2_chunk_key_encoding_in_v3(strata, tmp_path, separator):
    data = synthetic((10, 6), "uint16", seed=8)
    src = tmp_path / "src.zarr"
    write_v3(src, data, chunks=(4, 4),
             chunk_key_encoding={"name": "v2", "separator": separator})
    assert os.path.isfile(src / f"2{separator}1")
    check_strata_reads(strata, tmp_path, src, data)
    same = tmp_path / "same.zarr"
    strata("copy", src, same)
    meta = json.loads((same / "zarr.json").read_text())
    assert meta["chunk_key_encoding"] == {"name": "v2", "configuration": {"separator": separator}}
    assert_same(zarr.open_array(str(same), mode="r")[...], data)


def test_zarr_python_reads_strata_v3_attributes_and_empty_arrays(strata, tmp_path):
    src = tmp_path / "src.zarr"
    zarr.create_array(str(src), shape=(0, 5), chunks=(3, 5), dtype="f8",
                      attributes={"nan": "NaN", "list": [1, 2.5, None]})
    out = tmp_path / "out.zarr"
    strata("copy", src, out, "--codec", "none")
    got = zarr.open_array(str(out), mode="r")
    assert got.shape == (0, 5)
    assert dict(got.attrs) == {"nan": "NaN", "list": [1, 2.5, None]}
    scalar = tmp_path / "scalar.zarr"
    z = zarr.create_array(str(scalar), shape=(), dtype="c16", fill_value=1j)
    z[...] = 2.5 - 1j
    out = tmp_path / "scalar-copy.zarr"
    strata("copy", scalar, out)
    assert zarr.open_array(str(out), mode="r")[...] == 2.5 - 1j


# ------------------------------------------------ variable-length strings

def write_strings(path, zarr_format):
    values = np.array(["a", "", "héllo", "\U0001f600", "long string " * 3], dtype=object)
    z = zarr.create_array(str(path), shape=(5,), chunks=(2,), dtype=str,
                          zarr_format=zarr_format)
    z[...] = values
    return values


@pytest.mark.parametrize("zarr_format,dtype_named", [(3, "'string'"), (2, "'|O'")])
def test_variable_length_strings_are_refused_by_name(strata, tmp_path, zarr_format,
                                                     dtype_named):
    """zarr-python's default for str is variable-length UTF-8 (v3 data type
    "string" with the vlen-utf8 codec; v2 dtype "|O" with the vlen-utf8
    filter). Strata holds fixed-size elements only: every verb refuses such
    an array in one line that names it and its data type, and writes
    nothing."""
    src = tmp_path / "strings.zarr"
    values = write_strings(src, zarr_format)
    assert list(zarr.open_array(str(src), mode="r")[...]) == list(values)
    before = tree_digest(src)
    dst = tmp_path / "dst.zarr"
    for args in (["info", src], ["copy", src, dst], ["copy", src, dst, "--zarr-format", "2"],
                 ["rechunk", src, dst, "--chunks", "5"], ["verify", src, src]):
        proc = strata(*args, check=False)
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, proc.stderr
        assert lines[0].startswith("strata: error: "), lines[0]
        assert "strings.zarr" in lines[0], lines[0]
        assert dtype_named in lines[0], lines[0]
        assert "variable-length" in lines[0], lines[0]
        assert not dst.exists(), args
    assert tree_digest(src) == before


def test_fixed_length_strings_are_the_alternative(strata, tmp_path):
    """What Strata does hold: zarr-python's fixed-length types, both ways."""
    src = tmp_path / "src.zarr"
    data = np.array(["a", "", "héllo", "\U0001f600", "xyz"], dtype="<U5")
    write_v3(src, data, chunks=(2,), fill_value="")
    meta = json.loads((src / "zarr.json").read_text())
    assert meta["data_type"] == {"name": "fixed_length_utf32",
                                 "configuration": {"length_bytes": 20}}
    out = tmp_path / "out.zarr"
    strata("copy", src, out, "--codec", "zstd")
    got = zarr.open_array(str(out), mode="r")
    assert got.dtype == np.dtype("<U5")
    assert list(got[...]) == list(data)
    strata("verify", src, out)
    raw = tmp_path / "bytes.zarr"
    bdata = np.array([b"ab", b"", b"xyz"], dtype="|S3")
    write_v3(raw, bdata, chunks=(2,))
    out = tmp_path / "bytes-out.zarr"
    strata("copy", raw, out)
    assert list(zarr.open_array(str(out), mode="r")[...]) == list(bdata)
