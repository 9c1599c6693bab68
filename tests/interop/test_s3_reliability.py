"""S3 cases of issue 13: aliased URLs, stalled servers, the object tier's litter.

Stalled servers are fakes on 127.0.0.1 in this file: one accepts and never
answers, one answers a listing and then stalls in the middle of a body. A
request's whole budget of time without progress is `?timeout=SECONDS`
(default 30 s), after which the error names the timeout.
"""
import os
import socket
import threading
import time

import pytest

from conftest import tree_digest
from test_bad_input import assert_clean_failure
from test_s3 import BUCKET, S3Server


@pytest.fixture(scope="module")
def s3():
    server = S3Server([BUCKET])
    yield server
    server.stop()


def s3_digest(s3):
    return tree_digest(s3.dir)


@pytest.mark.parametrize("verb", ["copy", "rechunk"])
def test_same_s3_location_is_refused(strata, s3, tmp_path, verb):
    env = s3.env()
    name = f"same-{verb}.zarr"
    src = f"s3://{BUCKET}/{name}"
    strata("random", src, "--shape", "10,6", "--chunks", "4,3", env=env)
    before = s3_digest(s3)
    extra = ["--chunks", "5,2"] if verb == "rechunk" else []
    for dst in [src, src + "/", f"s3://{BUCKET}//{name}", f"s3://{BUCKET}/{name}//",
                f"{src}?max_retries=1"]:
        proc = strata(verb, src, dst, *extra, "--overwrite", check=False, env=env)
        assert_clean_failure(proc, 2, "same location")
        assert s3_digest(s3) == before, dst
    for dst, needle in [(f"s3://{BUCKET}", "lies inside"),
                        (f"{src}/inner.zarr", "lies inside")]:
        proc = strata(verb, src, dst, *extra, "--overwrite", check=False, env=env)
        assert_clean_failure(proc, 2, needle)
        assert s3_digest(s3) == before, dst


# ------------------------------------------------------------ stalled servers

class FakeServer:
    """A TCP server on 127.0.0.1 whose connections are handled by `handler`."""

    def __init__(self, handler):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.handler = handler
        self.conns = []
        self.stopped = False
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self.handler, args=(conn,), daemon=True).start()

    def stop(self):
        self.stopped = True
        self.sock.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass

    def env(self):
        env = dict(os.environ)
        for k in ("AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
            env.pop(k, None)
        env.update(AWS_ENDPOINT_URL=f"http://127.0.0.1:{self.port}", AWS_REGION="us-east-1",
                   AWS_ACCESS_KEY_ID="K", AWS_SECRET_ACCESS_KEY="S")
        return env


def never_answer(conn):
    try:
        while conn.recv(65536):
            pass
    except OSError:
        pass


LISTING = (b'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult>'
           b"<Name>b</Name><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated>"
           b"</ListBucketResult>")


def stall_mid_body(conn):
    """Answers listings; every GET of an object gets half its body, then nothing."""
    try:
        buf = b""
        while True:
            data = conn.recv(65536)
            if not data:
                return
            buf += data
            while b"\r\n\r\n" in buf:
                head, buf = buf.split(b"\r\n\r\n", 1)
                line = head.split(b"\r\n", 1)[0]
                if b"list-type=2" in line:
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\n"
                                 b"Content-Length: %d\r\n\r\n" % len(LISTING) + LISTING)
                else:
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{\"zarr_fo")
                    while conn.recv(65536):
                        pass
                    return
    except OSError:
        pass


@pytest.mark.parametrize("handler,what", [(never_answer, "never answers"),
                                          (stall_mid_body, "stalls mid-body")])
def test_stalled_server_fails_within_the_timeout(strata, tmp_path, handler, what):
    server = FakeServer(handler)
    try:
        start = time.monotonic()
        proc = strata("info", f"s3://b/a.zarr?timeout=3", check=False, env=server.env())
        elapsed = time.monotonic() - start
        assert_clean_failure(proc, 1, "timed out", "timeout=3")
        assert elapsed < 20, (what, elapsed)
    finally:
        server.stop()


def test_default_timeout_is_well_under_a_minute(strata, tmp_path):
    # The default budget (30 s), as a user without ?timeout= gets it.
    server = FakeServer(never_answer)
    try:
        start = time.monotonic()
        proc = strata("copy", "s3://b/a.zarr", tmp_path / "out.zarr", check=False,
                      env=server.env())
        elapsed = time.monotonic() - start
        assert_clean_failure(proc, 1, "timed out", "timeout=30")
        assert elapsed < 50, elapsed
    finally:
        server.stop()


def test_bad_timeout_option(strata, tmp_path):
    for value in ("0", "-1", "abc", ""):
        proc = strata("info", f"s3://b/a.zarr?timeout={value}", check=False)
        assert_clean_failure(proc, 1, "timeout")
