"""Sharded Zarr v3 arrays against zarr-python 3 and an independent reader.

zarr-python 3 (the .venv's) writes and reads sharding_indexed itself: Strata
reads its shards (index at the start or the end, its default and named inner
codecs, missing inner chunks, ragged edges) and zarr-python reads Strata's
(`random --shards`, `copy --shards`, `rechunk --shards`). Beside it, this
file carries a small implementation of the format written from the v3 and
sharding specifications (docs/v3/codecs/sharding-indexed in
zarr-developers/zarr-specs): `write_sharded` makes shards zarr-python would
not (inner chunks stored back to front, no index checksum, damaged
indexes), `read_sharded` checks the byte layout of Strata's.
"""
import json
import os
import struct

import numcodecs
import numcodecs.zarr3
import numpy as np
import pytest
import zarr

import zarr.codecs as zc

from conftest import assert_same, synthetic

MISSING = 2**64 - 1


def _crc32c_table():
    table = []
    for b in range(256):
        c = b
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for byte in data:
        c = (c >> 8) ^ _TABLE[(c ^ byte) & 0xFF]
    return c ^ 0xFFFFFFFF


def inner_codec(spec):
    """numcodecs codec for a v3 bytes -> bytes codec entry, or None."""
    name, conf = spec["name"], spec.get("configuration", {})
    if name == "gzip":
        return numcodecs.GZip(level=conf["level"])
    if name == "zstd":
        return numcodecs.Zstd(level=conf["level"])
    if name == "blosc":
        shuffle = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}[conf["shuffle"]]
        return numcodecs.Blosc(cname=conf["cname"], clevel=conf["clevel"], shuffle=shuffle,
                               blocksize=conf.get("blocksize", 0))
    if name.startswith("numcodecs."):
        return numcodecs.get_codec({"id": name[len("numcodecs."):], **conf})
    raise AssertionError(name)


def encode_inner(chunk, codecs):
    data = chunk.astype(chunk.dtype.newbyteorder("<")).tobytes()
    for spec in codecs[1:]:
        if spec["name"] == "crc32c":
            data += struct.pack("<I", crc32c(data))
        else:
            data = bytes(inner_codec(spec).encode(data))
    return data


def decode_inner(data, codecs, dtype, shape):
    for spec in reversed(codecs[1:]):
        if spec["name"] == "crc32c":
            assert struct.unpack("<I", data[-4:])[0] == crc32c(data[:-4])
            data = data[:-4]
        else:
            data = bytes(inner_codec(spec).decode(data))
    return np.frombuffer(data, dtype=np.dtype(dtype).newbyteorder("<")).reshape(shape)


def write_sharded(path, data, shard, inner, codecs=None, index_location="end", crc=True,
                  skip=(), fill_value=0, order="sorted"):
    """Writes `data` as a sharded array; inner chunks in `skip` (global inner
    chunk coordinates) are left missing; `order` "reverse" stores them back to front."""
    codecs = codecs or [{"name": "bytes", "configuration": {"endian": "little"}}]
    os.makedirs(path, exist_ok=True)
    dtype = data.dtype
    index_codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if crc:
        index_codecs.append({"name": "crc32c"})
    meta = {
        "zarr_format": 3, "node_type": "array", "shape": list(data.shape),
        "data_type": dtype.name,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(shard)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill_value,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": list(inner), "codecs": codecs, "index_codecs": index_codecs,
            "index_location": index_location}}],
        "attributes": {},
    }
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump(meta, f)
    per = [s // i for s, i in zip(shard, inner)]
    grid = [-(-n // s) for n, s in zip(data.shape, shard)]
    n_inner = int(np.prod(per))
    index_size = 16 * n_inner + (4 if crc else 0)
    for sblock in np.ndindex(*grid):
        entries = [(MISSING, MISSING)] * n_inner
        body = b""
        base = index_size if index_location == "start" else 0
        inner_ids = list(np.ndindex(*per))
        if order == "reverse":
            inner_ids = inner_ids[::-1]
        for iblock in inner_ids:
            g = tuple(s * p + i for s, p, i in zip(sblock, per, iblock))
            if g in skip:
                continue
            lo = [gi * n for gi, n in zip(g, inner)]
            if any(l >= n for l, n in zip(lo, data.shape)):
                continue  # entirely outside the array
            chunk = np.full(inner, fill_value, dtype=dtype)
            part = data[tuple(slice(l, l + n) for l, n in zip(lo, inner))]
            chunk[tuple(slice(0, s) for s in part.shape)] = part
            enc = encode_inner(chunk, codecs)
            entries[int(np.ravel_multi_index(iblock, per))] = (base + len(body), len(enc))
            body += enc
        table = b"".join(struct.pack("<QQ", o, n) for o, n in entries)
        if crc:
            table += struct.pack("<I", crc32c(table))
        blob = table + body if index_location == "start" else body + table
        key = os.path.join(path, "c", *map(str, sblock))
        os.makedirs(os.path.dirname(key), exist_ok=True)
        with open(key, "wb") as f:
            f.write(blob)


def read_sharded(path):
    """Reads a sharded array from the spec, checking its index."""
    with open(os.path.join(path, "zarr.json")) as f:
        meta = json.load(f)
    shape = meta["shape"]
    shard = meta["chunk_grid"]["configuration"]["chunk_shape"]
    (codec,) = meta["codecs"]
    assert codec["name"] == "sharding_indexed"
    conf = codec["configuration"]
    inner = conf["chunk_shape"]
    dtype = np.dtype(meta["data_type"])
    crc = any(c["name"] == "crc32c" for c in conf["index_codecs"])
    at_end = conf.get("index_location", "end") == "end"
    per = [s // i for s, i in zip(shard, inner)]
    n_inner = int(np.prod(per))
    index_size = 16 * n_inner + (4 if crc else 0)
    out = np.full(shape, meta["fill_value"], dtype=dtype)
    grid = [-(-n // s) for n, s in zip(shape, shard)]
    shards_found = 0
    for sblock in np.ndindex(*grid):
        key = os.path.join(path, "c", *map(str, sblock))
        if not os.path.exists(key):
            continue
        shards_found += 1
        with open(key, "rb") as f:
            blob = f.read()
        table = blob[-index_size:] if at_end else blob[:index_size]
        if crc:
            assert struct.unpack("<I", table[-4:])[0] == crc32c(table[:-4])
        for k, iblock in enumerate(np.ndindex(*per)):
            offset, nbytes = struct.unpack_from("<QQ", table, 16 * k)
            if offset == MISSING and nbytes == MISSING:
                continue
            chunk = decode_inner(blob[offset:offset + nbytes], conf["codecs"], dtype, inner)
            lo = [(s * p + i) * n for s, p, i, n in zip(sblock, per, iblock, inner)]
            region = tuple(slice(l, min(l + n, dim)) for l, n, dim in zip(lo, inner, shape))
            out[region] = chunk[tuple(slice(0, r.stop - r.start) for r in region)]
    return out, shards_found


INNER_CODECS = {
    "raw": [{"name": "bytes", "configuration": {"endian": "little"}}],
    "gzip+crc32c": [{"name": "bytes", "configuration": {"endian": "little"}},
                    {"name": "gzip", "configuration": {"level": 1}}, {"name": "crc32c"}],
    "zstd": [{"name": "bytes", "configuration": {"endian": "little"}},
             {"name": "zstd", "configuration": {"level": 3, "checksum": False}}],
    "blosc": [{"name": "bytes", "configuration": {"endian": "little"}},
              {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                                                  "shuffle": "shuffle", "typesize": 8,
                                                  "blocksize": 0}}],
    "numcodecs.zlib": [{"name": "bytes", "configuration": {"endian": "little"}},
                       {"name": "numcodecs.zlib", "configuration": {"level": 1}}],
}


@pytest.mark.parametrize("codecs", sorted(INNER_CODECS))
@pytest.mark.parametrize("index_location", ["start", "end"])
@pytest.mark.parametrize("crc", [True, False])
def test_strata_reads_spec_shards(strata, tmp_path, codecs, index_location, crc):
    data = synthetic((21, 17), "float64", seed=3)
    src = tmp_path / "src.zarr"
    write_sharded(src, data, shard=(10, 8), inner=(5, 4), codecs=INNER_CODECS[codecs],
                  index_location=index_location, crc=crc, skip={(1, 1), (4, 4)},
                  fill_value=-1.5, order="reverse")
    expected = data.copy()
    expected[5:10, 4:8] = -1.5
    expected[20:21, 16:17] = -1.5
    out = tmp_path / "out.zarr"
    strata("copy", src, out, "--zarr-format", "2", "--codec", "none")
    assert_same(zarr.open_array(str(out), mode="r")[...], expected)
    info = json.loads(strata("info", src, "--json").stdout)
    assert info["inner_chunks"] == [5, 4]
    assert info["chunks"] == [10, 8]


def test_zarr_python_spec_reader_reads_strata_random(strata, tmp_path):
    out = tmp_path / "r.zarr"
    strata("random", out, "--shape", "25,19", "--chunks", "4,5", "--shards", "8,10",
           "--zarr-format", "3", "--dtype", "int32", "--seed", "6", "--codec", "zstd+crc32c")
    got, shards = read_sharded(out)
    assert shards == 4 * 2
    assert_same(got, synthetic((25, 19), "int32", seed=6))
    strata("verify", out, out)
    z = zarr.open_array(str(out), mode="r")
    assert z.shards == (8, 10) and z.chunks == (4, 5)
    assert_same(z[...], synthetic((25, 19), "int32", seed=6))


@pytest.mark.parametrize("command", ["copy", "rechunk"])
def test_copy_and_rechunk_into_shards(strata, tmp_path, command):
    src = tmp_path / "src.zarr"
    strata("random", src, "--shape", "40,30", "--chunks", "40,6", "--seed", "8")
    out = tmp_path / "out.zarr"
    args = ["--shards", "20,30"]
    if command == "rechunk":
        args += ["--chunks", "5,10"]
    else:
        args += ["--chunks", "5,10"]
    strata(command, src, out, *args, "--codec", "blosc")
    meta = json.loads((out / "zarr.json").read_text())
    assert meta["codecs"][0]["name"] == "sharding_indexed"
    assert meta["codecs"][0]["configuration"]["chunk_shape"] == [5, 10]
    assert meta["chunk_grid"]["configuration"]["chunk_shape"] == [20, 30]
    got, shards = read_sharded(out)
    assert shards == 2
    assert_same(got, synthetic((40, 30), "float64", seed=8))
    assert_same(zarr.open_array(str(out), mode="r")[...], synthetic((40, 30), "float64", seed=8))
    strata("verify", src, out)
    # Two objects for 24 inner chunks.
    assert sorted(os.listdir(out / "c")) == ["0", "1"]


def test_sharded_to_sharded_with_new_geometry_and_back(strata, tmp_path):
    data = synthetic((30, 30), "float32", seed=2)
    src = tmp_path / "src.zarr"
    write_sharded(src, data, shard=(15, 15), inner=(5, 5), codecs=INNER_CODECS["zstd"])
    out = tmp_path / "out.zarr"
    strata("rechunk", src, out, "--chunks", "10,3", "--shards", "30,6")
    assert_same(read_sharded(out)[0], data)
    assert_same(zarr.open_array(str(out), mode="r")[...], data)
    flat = tmp_path / "flat.zarr"
    strata("copy", out, flat, "--zarr-format", "2")
    z = zarr.open_array(str(flat), mode="r")
    assert z.chunks == (10, 3)  # v2: the inner chunks become the chunks
    assert_same(z[...], data)


def test_empty_shards_are_not_written(strata, tmp_path):
    src = tmp_path / "zeros.zarr"
    z = zarr.open_array(str(src), mode="w", shape=(20, 20), chunks=(10, 10), dtype="i4",
                        fill_value=0, zarr_format=2)
    z[0:5, 0:5] = 7
    out = tmp_path / "out.zarr"
    strata("copy", src, out, "--shards", "10,20", "--chunks", "5,5")
    assert sorted(os.listdir(out / "c")) == ["0"]
    got, shards = read_sharded(out)
    assert shards == 1
    assert_same(got, z[...])
    assert_same(zarr.open_array(str(out), mode="r")[...], z[...])


@pytest.mark.parametrize("damage,message", [
    ("crc", "shard index checksum mismatch"),
    ("past_end", "reaches past the end of the shard"),
    ("overlap", "overlap"),
])
def test_bad_shard_index_is_a_clear_error(strata, tmp_path, damage, message):
    data = synthetic((8, 8), "int16", seed=1)
    src = tmp_path / "src.zarr"
    write_sharded(src, data, shard=(8, 8), inner=(4, 4))
    key = src / "c" / "0" / "0"
    blob = bytearray(key.read_bytes())
    table_at = len(blob) - 68
    if damage == "crc":
        blob[table_at] ^= 1
    else:
        offset = 10_000 if damage == "past_end" else 2
        blob[table_at + 16:table_at + 24] = struct.pack("<Q", offset)
        blob[-4:] = struct.pack("<I", crc32c(bytes(blob[table_at:-4])))
    key.write_bytes(bytes(blob))
    proc = strata("copy", src, tmp_path / "out.zarr", "--codec", "none", check=False)
    assert proc.returncode == 1
    assert "shard c/0/0 of" in proc.stderr and message in proc.stderr, proc.stderr


# ------------------------------------------------ zarr-python 3's sharding

# Inner codecs (create_array's compressors, after its bytes serializer).
ZARR_INNER = {
    "default": "auto",                       # zstd level 0
    "none": None,
    "blosc": zc.BloscCodec(cname="lz4", clevel=5, shuffle="shuffle"),
    "gzip+crc32c": [zc.GzipCodec(level=1), zc.Crc32cCodec()],
    "numcodecs.zlib": numcodecs.zarr3.Zlib(level=1),
}


@pytest.mark.parametrize("inner", sorted(ZARR_INNER))
@pytest.mark.parametrize("index_location", ["start", "end"])
def test_strata_reads_zarr_python_shards(strata, tmp_path, inner, index_location):
    data = synthetic((21, 17), "float64", seed=3)
    src = tmp_path / "src.zarr"
    z = zarr.create_array(str(src), shape=data.shape, dtype=data.dtype, chunks=(5, 4),
                          shards={"shape": (10, 8), "index_location": index_location},
                          compressors=ZARR_INNER[inner], fill_value=-1.5)
    # Inner chunks equal to the fill value are not stored (zarr-python's
    # write_empty_chunks=False); the last shard row is ragged.
    expected = data.copy()
    expected[5:10, 4:8] = -1.5
    expected[0:5, 8:16] = -1.5
    z[...] = expected
    (codec,) = json.loads((src / "zarr.json").read_text())["codecs"]
    assert codec["name"] == "sharding_indexed"
    assert codec["configuration"]["index_location"] == index_location
    assert [c["name"] for c in codec["configuration"]["index_codecs"]] == ["bytes", "crc32c"]
    info = json.loads(strata("info", src, "--json").stdout)
    assert info["inner_chunks"] == [5, 4] and info["chunks"] == [10, 8]
    # To plain v2 (zarr-python reads it) and to Strata's own shards.
    flat = tmp_path / "flat.zarr"
    strata("copy", src, flat, "--zarr-format", "2", "--codec", "none")
    assert_same(zarr.open_array(str(flat), mode="r")[...], expected)
    resharded = tmp_path / "resharded.zarr"
    strata("rechunk", src, resharded, "--chunks", "7,3", "--shards", "14,9", "--codec", "zstd")
    got = zarr.open_array(str(resharded), mode="r")
    assert (got.shards, got.chunks) == ((14, 9), (7, 3))
    assert_same(got[...], expected)
    assert_same(read_sharded(resharded)[0], expected)
    strata("verify", src, flat)
    # Unchanged geometry and codecs: zarr-python reads Strata's copy.
    same = tmp_path / "same.zarr"
    strata("copy", src, same)
    assert_same(zarr.open_array(str(same), mode="r")[...], expected)


@pytest.mark.parametrize("codec", ["none", "blosc", "zstd+crc32c", "gzip:level=4", "zlib"])
@pytest.mark.parametrize("dtype", ["int16", "float32", "complex128", "bool"])
def test_zarr_python_reads_strata_shards(strata, tmp_path, codec, dtype):
    out = tmp_path / "r.zarr"
    strata("random", out, "--shape", "23,17", "--chunks", "4,5", "--shards", "8,10",
           "--zarr-format", "3", "--dtype", dtype, "--seed", "6", "--codec", codec)
    z = zarr.open_array(str(out), mode="r")
    assert (z.shards, z.chunks) == ((8, 10), (4, 5))
    assert_same(z[...], synthetic((23, 17), dtype, seed=6))
    # zarr-python reads a region across shards the same way.
    assert_same(z[3:19, 6:13], synthetic((23, 17), dtype, seed=6)[3:19, 6:13])


def test_zarr_python_writes_into_strata_shards(strata, tmp_path):
    """Strata's shards are ordinary ones: zarr-python updates one inner chunk,
    and Strata reads the result."""
    out = tmp_path / "r.zarr"
    strata("random", out, "--shape", "16,16", "--chunks", "4,4", "--shards", "8,8",
           "--zarr-format", "3", "--seed", "2", "--codec", "zstd")
    z = zarr.open_array(str(out), mode="r+")
    z[4:8, 0:4] = -7.0
    expected = synthetic((16, 16), "float64", seed=2)
    expected[4:8, 0:4] = -7.0
    flat = tmp_path / "flat.zarr"
    strata("copy", out, flat, "--zarr-format", "2", "--codec", "none")
    assert_same(zarr.open_array(str(flat), mode="r")[...], expected)
