"""Writes the seed corpora of the fuzz targets into fuzz/corpus/<target>/.

Run with the project's .venv (zarr-python 3, numcodecs):
    .venv/bin/python fuzz/make_corpus.py
The seeds are small valid inputs (what zarr-python writes, the S3 responses
Strata parses) and a few broken ones; libFuzzer mutates from there.
"""
import json
import os
import struct
import tempfile

import numcodecs
import numpy as np
import zarr
import zarr.codecs

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# --- Zarr v2: what zarr-python 3 writes (zarr_format=2), for several dtypes and compressors.
with tempfile.TemporaryDirectory() as tmp:
    cases = [("f8", numcodecs.Blosc()), ("<i4", numcodecs.Zstd(level=3)), (">u2", numcodecs.Zlib()),
             ("|b1", None), ("<c16", numcodecs.GZip()), ("<f4", numcodecs.LZ4())]
    for i, (dtype, comp) in enumerate(cases):
        path = os.path.join(tmp, f"a{i}.zarr")
        z = zarr.open_array(path, mode="w", shape=(10, 6), chunks=(4, 3), dtype=dtype,
                            compressor=comp, fill_value=0, order="F" if i % 2 else "C",
                            zarr_format=2)
        z.attrs["units"] = "K"
        zarray = open(os.path.join(path, ".zarray")).read()
        zattrs = open(os.path.join(path, ".zattrs")).read()
        put("fuzz_zarr_v2_metadata", f"zarray-{i}", zarray + "\0" + zattrs)
    put("fuzz_zarr_v2_metadata", "zgroup", '{"zarr_format": 2}')
    put("fuzz_zarr_v2_metadata", "nan-fill",
        json.dumps({"zarr_format": 2, "shape": [5], "chunks": [5], "dtype": "<f8",
                    "compressor": None, "fill_value": "NaN", "filters": None, "order": "C",
                    "dimension_separator": "/"}))

# --- Zarr v3: arrays and groups as zarr-python 3 writes them.
v3 = {"zarr_format": 3, "node_type": "array", "shape": [10, 6], "data_type": "float64",
      "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 3]}},
      "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
      "fill_value": "NaN",
      "codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}},
                 {"name": "bytes", "configuration": {"endian": "little"}},
                 {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 3,
                                                     "shuffle": "shuffle", "typesize": 8,
                                                     "blocksize": 0}},
                 {"name": "crc32c"}],
      "attributes": {"units": "m"}, "dimension_names": ["t", None]}
put("fuzz_zarr_v3_metadata", "array", json.dumps(v3, indent=2))
v3b = dict(v3, data_type="int16", fill_value=-1,
           codecs=[{"name": "bytes", "configuration": {"endian": "big"}},
                   {"name": "gzip", "configuration": {"level": 1}}])
v3b.pop("dimension_names")
put("fuzz_zarr_v3_metadata", "array-int", json.dumps(v3b))
v3c = dict(v3, data_type="complex64", fill_value=[1.0, "-Infinity"],
           chunk_key_encoding={"name": "v2", "configuration": {"separator": "."}},
           codecs=[{"name": "bytes"}, {"name": "zstd", "configuration": {"level": 0,
                                                                          "checksum": False}}])
put("fuzz_zarr_v3_metadata", "array-complex", json.dumps(v3c))
put("fuzz_zarr_v3_metadata", "group",
    json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {"a": [1, {"b": None}]},
                "consolidated_metadata": None}))

# --- Zarr v3 as zarr-python 3 itself writes it: its defaults, sharding,
# variable-length strings, and a group with inline consolidated metadata.
with tempfile.TemporaryDirectory() as tmp:
    made = {
        "zp3-default": dict(shape=(10, 6), chunks=(4, 3), dtype="f8"),
        "zp3-sharded": dict(shape=(20, 6), chunks=(4, 3), shards=(8, 6), dtype="<i2",
                            fill_value=-1, dimension_names=["y", "x"]),
        "zp3-strings": dict(shape=(5,), chunks=(2,), dtype=str),
        "zp3-blosc-transpose": dict(shape=(10, 6), chunks=(4, 3), dtype=">u4",
                                    filters=[zarr.codecs.TransposeCodec(order=(1, 0))],
                                    serializer=zarr.codecs.BytesCodec(endian="big"),
                                    compressors=zarr.codecs.BloscCodec(cname="zstd")),
    }
    for name, kwargs in made.items():
        path = os.path.join(tmp, f"{name}.zarr")
        zarr.create_array(path, **kwargs)
        put("fuzz_zarr_v3_metadata", name, open(os.path.join(path, "zarr.json")).read())
    path = os.path.join(tmp, "group.zarr")
    root = zarr.open_group(path, mode="w", attributes={"title": "t"})
    root.create_array("a", shape=(4,), chunks=(2,), dtype="f4", fill_value=float("nan"))
    root.create_group("sub").create_array("b", shape=(3, 3), chunks=(3, 3), dtype="c8")
    zarr.consolidate_metadata(path)
    put("fuzz_zarr_v3_metadata", "zp3-consolidated-group",
        open(os.path.join(path, "zarr.json")).read())

# --- Codecs: numcodecs' encodings of a small float64 array, plus a truncation.
data = np.arange(512, dtype="<f8") * 0.5
raw = data.tobytes()
for name, codec in [("blosc", numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1)),
                    ("zstd", numcodecs.Zstd(level=1)), ("zlib", numcodecs.Zlib(level=1)),
                    ("gzip", numcodecs.GZip(level=1)), ("lz4", numcodecs.LZ4())]:
    enc = bytes(codec.encode(raw))
    put(f"fuzz_codec_{name}", "seed", enc)
    put(f"fuzz_codec_{name}", "truncated", enc[: len(enc) // 2])
    small = bytes(codec.encode(b"abcdefgh" * 3))
    put(f"fuzz_codec_{name}", "small", small)
put("fuzz_codec_blosc", "zstd-bitshuffle",
    bytes(numcodecs.Blosc(cname="zstd", clevel=3, shuffle=2).encode(raw)))


def crc32c(b):
    crc = 0xFFFFFFFF
    for byte in b:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


for i, payload in enumerate([raw[:256], b"", b"x"]):
    put("fuzz_codec_crc32c", f"seed-{i}", payload + struct.pack("<I", crc32c(payload)))

# --- S3 responses.
put("fuzz_s3_xml", "list",
    '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/'
    'doc/2006-03-01/"><Name>b</Name><Prefix>a.zarr/</Prefix><KeyCount>2</KeyCount>'
    '<MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated><NextContinuationToken>'
    'tok&amp;en</NextContinuationToken><Contents><Key>a.zarr/.zarray</Key><Size>312</Size>'
    '</Contents><Contents><Key>a.zarr/0.0&#x2F;x</Key><Size>8</Size></Contents>'
    '</ListBucketResult>')
put("fuzz_s3_xml", "error",
    '<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please '
    'reduce your request rate &lt;now&gt;.</Message><RequestId>1</RequestId></Error>')
put("fuzz_s3_xml", "multipart",
    '<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>u-1%2B</UploadId>'
    '</InitiateMultipartUploadResult>')
