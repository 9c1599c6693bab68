"""s3rver on 127.0.0.1 for the tests that need an S3 server
(tests/interop/test_s3.py, tests/python/test_s3.py).

The server is scripts/s3_test_server.js (installed by scripts/install-deps.sh);
it listens on a free port of 127.0.0.1 only and exits with its stdin.
"""
import os
import shutil
import subprocess
import tempfile

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SERVER = os.path.join(ROOT, "scripts", "s3_test_server.js")


class S3Server:
    """s3rver on 127.0.0.1 with a temporary data directory."""

    def __init__(self, buckets):
        if not os.path.exists(os.path.join(ROOT, ".deps", "s3rver", "node_modules")):
            pytest.fail("s3rver is not installed: run scripts/install-deps.sh")
        self.dir = tempfile.mkdtemp(prefix="strata-s3rver-")
        args = ["node", "--openssl-legacy-provider", SERVER, "--dir", self.dir, "--port", "0",
                "--exit-on-stdin-eof"]
        for b in buckets:
            args += ["--bucket", b]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline().strip()
        assert line.startswith("listening 127.0.0.1:"), line
        self.endpoint = "http://" + line.split(" ", 1)[1]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)

    def env(self, **overrides):
        env = dict(os.environ)
        for k in ("AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
            env.pop(k, None)
        env.update(AWS_ENDPOINT_URL=self.endpoint, AWS_REGION="us-east-1",
                   AWS_ACCESS_KEY_ID="S3RVER", AWS_SECRET_ACCESS_KEY="S3RVER")
        env.update(overrides)
        return env
