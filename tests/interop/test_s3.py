"""`strata` against a real S3 server (s3rver on 127.0.0.1, started here).

An array goes local -> S3 -> local through `strata copy` and stays equal
(`strata verify`, and zarr-python on the copy that came back); every verb
takes s3:// URLs; wrong credentials, a missing bucket and an unreachable
server each give one clear error line.

The server is scripts/s3_test_server.js (installed by scripts/install-deps.sh).
"""
import json
import os
import socket
import subprocess
import sys

import pytest
import zarr

from conftest import assert_same, synthetic

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from s3_server import S3Server  # noqa: E402

BUCKET = "interop"


@pytest.fixture(scope="module")
def s3():
    server = S3Server([BUCKET])
    yield server
    server.stop()


def one_error_line(proc, *needles):
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("strata: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def test_copy_local_to_s3_and_back(strata, s3, tmp_path):
    env = s3.env()
    src = tmp_path / "src.zarr"
    strata("random", src, "--shape", "37,23", "--chunks", "8,5", "--seed", "7", env=env)
    remote = f"s3://{BUCKET}/roundtrip/a.zarr"
    strata("copy", src, remote, env=env)
    assert "EQUAL" in strata("verify", src, remote, env=env).stdout

    info = json.loads(strata("info", remote, "--json", env=env).stdout)
    assert info["shape"] == [37, 23] and info["chunks"] == [8, 5]
    assert info["chunks_stored"] == info["chunks_total"] == 25
    assert info["path"] == remote

    back = tmp_path / "back.zarr"
    strata("copy", remote, back, env=env)
    strata("verify", src, back, env=env)
    assert_same(zarr.open_array(str(back), mode="r")[...], synthetic((37, 23), "float64", 7))
    # Same stored bytes as the original: chunk for chunk.
    for name in os.listdir(src):
        assert (src / name).read_bytes() == (back / name).read_bytes(), name


def test_every_verb_takes_s3_urls(strata, s3, tmp_path):
    env = s3.env()
    remote = f"s3://{BUCKET}/verbs/r.zarr"
    strata("random", remote, "--shape", "20,30", "--chunks", "7,11", "--dtype", "int32",
           "--seed", "3", "--zarr-format", "3", env=env)
    local = tmp_path / "local.zarr"
    strata("random", local, "--shape", "20,30", "--chunks", "7,11", "--dtype", "int32",
           "--seed", "3", env=env)
    strata("verify", remote, local, env=env)
    # S3 -> S3, re-encoded, into zarr v2; then compare.
    v2 = f"s3://{BUCKET}/verbs/v2.zarr"
    strata("copy", remote, v2, "--codec", "zstd:level=1", "--zarr-format", "2", env=env)
    strata("verify", v2, local, env=env)
    assert "zarr_format:  2" in strata("info", v2, env=env).stdout
    # An existing array is refused without --overwrite, replaced with it.
    proc = strata("copy", local, v2, check=False, env=env)
    one_error_line(proc, f"{v2} already holds a Zarr array")
    strata("copy", local, v2, "--overwrite", env=env)
    strata("verify", v2, local, env=env)


def test_endpoint_and_options_in_the_url(strata, s3, tmp_path):
    env = s3.env()
    del env["AWS_ENDPOINT_URL"]
    src = tmp_path / "src.zarr"
    strata("random", src, "--shape", "10,10", "--chunks", "5,5", env=env)
    remote = f"s3://{BUCKET}/opts/a.zarr?endpoint={s3.endpoint}&region=us-east-1&max_concurrency=2"
    strata("copy", src, remote, env=env)
    strata("verify", remote, src, env=env)


def test_wrong_credentials_are_one_clear_line(strata, s3, tmp_path):
    env = s3.env(AWS_SECRET_ACCESS_KEY="wrong-secret")
    proc = strata("info", f"s3://{BUCKET}/x.zarr", check=False, env=env)
    one_error_line(proc, f"s3://{BUCKET}/x.zarr: GET {s3.endpoint} returned 403 "
                         "SignatureDoesNotMatch")


def test_missing_bucket_is_one_clear_line(strata, s3, tmp_path):
    src = tmp_path / "src.zarr"
    strata("random", src, "--shape", "4,4", "--chunks", "2,2", env=s3.env())
    proc = strata("copy", src, "s3://no-such-bucket/a.zarr", check=False, env=s3.env())
    one_error_line(proc, f"bucket 'no-such-bucket' does not exist at {s3.endpoint}")


def test_unreachable_server_names_the_endpoint(strata, s3, tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    src = tmp_path / "src.zarr"
    strata("random", src, "--shape", "4,4", "--chunks", "2,2", env=s3.env())
    proc = strata("copy", src, f"s3://{BUCKET}/a.zarr?max_retries=2", check=False,
                  env=s3.env(AWS_ENDPOINT_URL=endpoint))
    one_error_line(proc, f"GET {endpoint} failed after 3 attempts", "onnect")


def test_server_stopped_during_a_copy(strata, tmp_path):
    server = S3Server(["stop"])
    try:
        env = server.env()
        src = tmp_path / "src.zarr"
        strata("random", src, "--shape", "400,400", "--chunks", "20,20", env=env)
        proc = subprocess.Popen(
            [strata.path, "copy", src, "s3://stop/a.zarr?max_retries=3", "--workers", "2"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        # Stop the server once some chunks are in.
        chunks = os.path.join(server.dir, "stop", "a.zarr")
        for _ in range(600):
            if os.path.isdir(chunks) and len(os.listdir(chunks)) > 20:
                break
            if proc.poll() is not None:
                break
            __import__("time").sleep(0.05)
        server.stop()
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 1, (out, err)
        lines = [l for l in err.splitlines() if l.strip() and l.startswith("strata: error:")]
        assert len(lines) == 1, err
        assert server.endpoint in lines[0] and "after 4 attempts" in lines[0], lines[0]
    finally:
        server.stop()


def test_rechunk_s3_to_s3_through_the_object_tier(strata, s3, tmp_path):
    """Intermediates forced into the bucket: correct output, none left behind.

    allowed_mem leaves the stages blocks of ~3 kB (a rechunk that fits one
    block of rechunker's max_mem needs no intermediate at all)."""
    env = s3.env()
    src = f"s3://{BUCKET}/rk/src.zarr"
    dst = f"s3://{BUCKET}/rk/dst.zarr"
    strata("random", src, "--shape", "60,40", "--chunks", "60,4", "--seed", "11", env=env)
    out = strata("rechunk", src, dst, "--chunks", "6,40", "--tier", "object",
                 "--tier-object", f"s3://{BUCKET}/rk-tmp", "--allowed-mem", "1.02MB",
                 "--reserved-mem", "1MB", "--work-dir", tmp_path / "work", env=env)
    assert "object tier forced" in out.stdout, out.stdout
    assert "intermediates: 0 B" not in out.stdout, out.stdout  # they did go to the bucket
    want = tmp_path / "want.zarr"
    strata("random", want, "--shape", "60,40", "--chunks", "6,40", "--seed", "11", env=env)
    strata("verify", dst, want, env=env)
    # No intermediate object is left under the tier prefix.
    left = [p for p in _list_keys(s3, "rk-tmp/")]
    assert left == [], left


def _list_keys(s3, prefix):
    """Keys under `prefix` in the bucket, read from s3rver's data directory."""
    root = os.path.join(s3.dir, BUCKET)
    keys = []
    for dirpath, _, files in os.walk(root):
        for f in files:
            rel = os.path.relpath(os.path.join(dirpath, f), root)
            if rel.startswith(prefix.rstrip("/")):
                keys.append(rel)
    return keys
