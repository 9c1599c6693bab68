"""Codecs and dtypes as other tools write them, against zarr-python 3.

bz2, numcodecs' checksums and shuffle as compressors and as v2 filters,
float16, fixed-length bytes and unicode ("|S", "<U", ">U"), both ways; and
`strata copy --zarr-format 3` of zlib/lz4 data, which writes zarr-python 3's
"numcodecs.*" codec names (zarr-python reads them back).
"""
import json

import numcodecs
import numpy as np
import pytest
import zarr

from conftest import assert_same, codec_chain, synthetic, zarr_v2

SHAPE = (13, 7)
CHUNKS = (4, 3)

# (compressor, filters) pairs zarr-python writes into v2 arrays.
V2_CODECS = {
    "bz2": (numcodecs.BZ2(level=9), None),
    "bz2-level1": (numcodecs.BZ2(level=1), None),
    "crc32": (numcodecs.CRC32(), None),
    "adler32": (numcodecs.Adler32(), None),
    "shuffle+zlib": (numcodecs.Zlib(level=5), [numcodecs.Shuffle(elementsize=8)]),
    "crc32+bz2": (numcodecs.BZ2(level=3), [numcodecs.CRC32()]),
    "shuffle+adler32+blosc": (numcodecs.Blosc(cname="lz4", clevel=5, shuffle=0),
                              [numcodecs.Shuffle(elementsize=8), numcodecs.Adler32()]),
    "filters only": (None, [numcodecs.Shuffle(elementsize=8), numcodecs.Zlib(level=1)]),
}


def write_v2(path, data, compressor=None, filters=None, fill_value=0, chunks=CHUNKS):
    return zarr_v2(path, data, chunks=chunks, compressor=compressor, filters=filters,
                   fill_value=fill_value)


@pytest.mark.parametrize("name", sorted(V2_CODECS))
def test_strata_reads_zarr_python_codecs_and_filters(strata, tmp_path, name):
    compressor, filters = V2_CODECS[name]
    data = synthetic(SHAPE, "float64", seed=11)
    src = write_v2(tmp_path / "src.zarr", data, compressor, filters)
    # Same encoding: chunks moved as they are (after a checked decode).
    same = tmp_path / "same.zarr"
    strata("copy", src.store.root, same)
    z = zarr.open_array(str(same), mode="r")
    # The same codecs in the same order (a last filter may become the compressor).
    assert codec_chain(z) == codec_chain(src)
    assert_same(z[...], data)
    # Re-encoded both ways.
    raw = tmp_path / "raw.zarr"
    strata("copy", src.store.root, raw, "--codec", "none")
    assert_same(zarr.open_array(str(raw), mode="r")[...], data)
    strata("verify", src.store.root, raw)


@pytest.mark.parametrize("codec,compressor,filters", [
    ("bz2:level=7", numcodecs.BZ2(level=7), None),
    ("crc32", numcodecs.CRC32(), None),
    ("adler32", numcodecs.Adler32(), None),
    ("shuffle:elementsize=4+zlib:level=3", numcodecs.Zlib(level=3), [numcodecs.Shuffle(4)]),
    ("crc32+bz2", numcodecs.BZ2(level=1), [numcodecs.CRC32()]),
])
def test_zarr_python_reads_strata_codecs(strata, tmp_path, codec, compressor, filters):
    out = tmp_path / "r.zarr"
    strata("random", out, "--shape", "20,9", "--chunks", "6,4", "--dtype", "float32",
           "--seed", "2", "--codec", codec)
    z = zarr.open_array(str(out), mode="r")
    assert z.metadata.compressor == compressor
    assert z.metadata.filters == (tuple(filters) if filters else None)
    assert_same(z[...], synthetic((20, 9), "float32", seed=2))


def test_corrupt_checksum_is_reported_naming_the_chunk(strata, tmp_path):
    data = synthetic(SHAPE, "int32", seed=1)
    src = write_v2(tmp_path / "src.zarr", data, numcodecs.CRC32())
    chunk = tmp_path / "src.zarr" / "1.1"
    raw = bytearray(chunk.read_bytes())
    raw[10] ^= 0xFF
    chunk.write_bytes(bytes(raw))
    proc = strata("copy", src.store.root, tmp_path / "out.zarr", "--codec", "none", check=False)
    assert proc.returncode == 1
    assert "chunk 1.1" in proc.stderr and "crc32: checksum mismatch" in proc.stderr, proc.stderr


@pytest.mark.parametrize("dtype", ["<f2", ">f2"])
def test_float16_both_ways(strata, tmp_path, dtype):
    data = synthetic(SHAPE, "float16", seed=4).astype(dtype)
    data[0, 0] = np.nan
    data[1, 1] = np.inf
    src = write_v2(tmp_path / "src.zarr", data, numcodecs.Zstd(level=1), fill_value=np.nan)
    out = tmp_path / "out.zarr"
    strata("copy", src.store.root, out, "--codec", "blosc")
    z = zarr.open_array(str(out), mode="r")
    assert z.dtype == np.dtype(dtype)
    assert np.isnan(z.fill_value)
    assert_same(z[...], data)
    # v3 and back keeps every value.
    v3 = tmp_path / "v3.zarr"
    strata("copy", src.store.root, v3, "--zarr-format", "3")
    meta = json.loads((v3 / "zarr.json").read_text())
    assert meta["data_type"] == "float16"
    assert_same(zarr.open_array(str(v3), mode="r")[...], data.astype("<f2"))
    back = tmp_path / "back.zarr"
    strata("copy", v3, back, "--zarr-format", "2")
    assert_same(zarr.open_array(str(back), mode="r")[...], data)
    strata("verify", src.store.root, v3)


def test_strata_random_float16(strata, tmp_path):
    out = tmp_path / "h.zarr"
    strata("random", out, "--shape", "9,5", "--chunks", "4,4", "--dtype", "float16", "--seed", "3")
    z = zarr.open_array(str(out), mode="r")
    assert z.dtype == np.float16
    assert_same(z[...], synthetic((9, 5), "float16", seed=3))


def words(seed, n, width):
    rng = np.random.default_rng(seed)
    alphabet = list("abcdefghij KLMNOP") + ["\u00e9", "\u4e2d", "\U0001f600"]
    return ["".join(rng.choice(alphabet, size=rng.integers(0, width + 1))) for _ in range(n)]


@pytest.mark.parametrize("dtype", ["<U6", ">U6", "|S5"])
@pytest.mark.parametrize("fill", ["", "xy"])
def test_fixed_length_strings_both_ways(strata, tmp_path, dtype, fill):
    n = 23
    if dtype.endswith("S5"):
        values = [w.encode("utf-8")[:5] for w in words(1, n, 5)]
        fill = fill.encode()
    else:
        values = words(2, n, 6)
    data = np.array(values, dtype=dtype).reshape(n)
    src = tmp_path / "src.zarr"
    z = zarr.open_array(str(src), mode="w", shape=(n,), chunks=(5,), dtype=dtype,
                        fill_value=fill, compressor=numcodecs.Zlib(level=1), zarr_format=2)
    z[:17] = data[:17]  # the last chunks stay missing: they read as the fill value
    expected = z[...]
    out = tmp_path / "out.zarr"
    strata("copy", src, out, "--codec", "bz2")
    got = zarr.open_array(str(out), mode="r")
    assert got.dtype == np.dtype(dtype)
    assert got.fill_value == z.fill_value
    assert_same(got[...], expected)
    strata("verify", src, out)
    # Through v3 (zarr-python 3's fixed_length_utf32 / null_terminated_bytes) and back.
    v3 = tmp_path / "v3.zarr"
    strata("copy", src, v3, "--zarr-format", "3")
    meta = json.loads((v3 / "zarr.json").read_text())
    name = "null_terminated_bytes" if "S" in dtype else "fixed_length_utf32"
    assert meta["data_type"]["name"] == name
    from_v3 = zarr.open_array(str(v3), mode="r")  # zarr-python reads Strata's v3 strings
    assert from_v3.fill_value == z.fill_value
    assert list(from_v3[...]) == list(expected)
    back = tmp_path / "back.zarr"
    strata("copy", v3, back, "--zarr-format", "2")
    assert_same(zarr.open_array(str(back), mode="r")[...], expected)
    info = strata("info", v3).stdout
    assert "fixed_length_utf32" in info or "null_terminated_bytes" in info


def test_verify_reports_string_differences(strata, tmp_path):
    a = write_v2(tmp_path / "a.zarr", np.array(["ab", "cd", "ef"], dtype="<U2"), chunks=(2,))
    b = write_v2(tmp_path / "b.zarr", np.array(["ab", "cx", "ef"], dtype="<U2"), chunks=(2,))
    proc = strata("verify", a.store.root, b.store.root, check=False)
    assert proc.returncode == 1
    assert "1 of 3 elements differ" in proc.stdout
    assert "'cd' vs 'cx'" in proc.stdout, proc.stdout


@pytest.mark.parametrize("codec", [numcodecs.Zlib(level=4), numcodecs.LZ4(acceleration=2),
                                   numcodecs.BZ2(level=2)])
def test_copy_to_v3_writes_numcodecs_names(strata, tmp_path, codec):
    data = synthetic(SHAPE, "int32", seed=5)
    src = write_v2(tmp_path / "src.zarr", data, codec)
    v3 = tmp_path / "v3.zarr"
    strata("copy", src.store.root, v3, "--zarr-format", "3")
    meta = json.loads((v3 / "zarr.json").read_text())
    config = codec.get_config()
    expected = {"name": f"numcodecs.{config.pop('id')}", "configuration": config}
    assert meta["codecs"][-1] == expected
    assert_same(zarr.open_array(str(v3), mode="r")[...], data)  # zarr-python reads the names
    back = tmp_path / "back.zarr"
    strata("copy", v3, back, "--zarr-format", "2")
    z = zarr.open_array(str(back), mode="r")
    assert z.metadata.compressor == codec
    assert_same(z[...], data)


def test_arithmetic_on_strings_is_refused(strata, tmp_path):
    src = write_v2(tmp_path / "s.zarr", np.array(["a", "b"], dtype="<U1"), chunks=(1,))
    proc = strata("rechunk", src.store.root, tmp_path / "r.zarr", "--chunks", "2", check=False)
    assert proc.returncode == 0, proc.stderr  # moving strings is fine
    z = zarr.open_array(str(tmp_path / "r.zarr"), mode="r")
    assert z.chunks == (2,) and list(z[...]) == ["a", "b"]
