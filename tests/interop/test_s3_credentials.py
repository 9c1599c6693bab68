"""`strata` finds S3 credentials as the AWS SDKs do (s3_credentials.h):
environment, shared files and profiles, web identity through STS, instance
metadata; anonymous only with ?anon=true; no credentials is one clear line.

s3rver (scripts/s3_test_server.js) is the bucket; small fake STS and
instance metadata servers run here on 127.0.0.1. The real instance metadata
address is never contacted: every run sets AWS_EC2_METADATA_DISABLED or
points AWS_EC2_METADATA_SERVICE_ENDPOINT at a fake.
"""
import datetime
import http.server
import json
import os
import socket
import sys
import threading
import urllib.parse

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from s3_server import S3Server  # noqa: E402

BUCKET = "creds"
KEY = SECRET = "S3RVER"  # s3rver's account, handed out by the fakes below


@pytest.fixture(scope="module")
def s3():
    server = S3Server([BUCKET])
    yield server
    server.stop()


@pytest.fixture
def env(s3, tmp_path):
    """The environment with no AWS credentials anywhere: no AWS_* variables,
    shared files in tmp_path (absent), instance metadata off; the S3
    endpoint through AWS_ENDPOINT_URL_S3."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    e.update(AWS_ENDPOINT_URL_S3=s3.endpoint, AWS_EC2_METADATA_DISABLED="true",
             AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "credentials"),
             AWS_CONFIG_FILE=str(tmp_path / "config"))
    return e


class FakeServer:
    """An HTTP server on 127.0.0.1 answering with `handler(method, path,
    headers, body) -> (status, body)`; `requests` records what came."""

    def __init__(self, handler):
        self.requests = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def answer(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n).decode()
                outer.requests.append((self.command, self.path, dict(self.headers), body))
                status, text = handler(self.command, self.path, self.headers, body)
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_POST = answer

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def expiration(hours=1):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=hours)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def sts_handler(method, path, headers, body):
    form = urllib.parse.parse_qs(body)
    if method != "POST" or form.get("Action") != ["AssumeRoleWithWebIdentity"]:
        return 400, "<ErrorResponse><Error><Code>InvalidAction</Code></Error></ErrorResponse>"
    if form.get("WebIdentityToken") != ["service-account-token"]:
        return 400, ("<ErrorResponse><Error><Code>InvalidIdentityToken</Code>"
                     "<Message>Incorrect token audience</Message></Error></ErrorResponse>")
    return 200, (
        "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>"
        f"<AccessKeyId>{KEY}</AccessKeyId><SecretAccessKey>{SECRET}</SecretAccessKey>"
        f"<SessionToken>web-session</SessionToken><Expiration>{expiration()}</Expiration>"
        "</Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>")


def imds_handler(method, path, headers, body):
    if method == "PUT" and path == "/latest/api/token":
        return 200, "imds-token"
    if headers.get("x-aws-ec2-metadata-token") != "imds-token":
        return 401, ""
    if path == "/latest/meta-data/iam/security-credentials/":
        return 200, "node-role\n"
    if path == "/latest/meta-data/iam/security-credentials/node-role":
        return 200, (f'{{"Code": "Success", "AccessKeyId": "{KEY}", "SecretAccessKey": '
                     f'"{SECRET}", "Token": "imds-session", "Expiration": "{expiration(6)}"}}')
    return 404, ""


def one_error_line(proc, *needles):
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("strata: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def round_trip(strata, env, tmp_path, remote):
    src = tmp_path / "src.zarr"
    if not src.exists():
        strata("random", src, "--shape", "12,9", "--chunks", "5,4", "--seed", "2", env=env)
    strata("copy", src, remote, "--overwrite", env=env)
    assert "EQUAL" in strata("verify", src, remote, env=env).stdout


def test_no_credentials_is_one_clear_line(strata, env, tmp_path):
    proc = strata("info", f"s3://{BUCKET}/x.zarr", check=False, env=env)
    one_error_line(
        proc, f"s3://{BUCKET}/x.zarr: no AWS credentials found (looked at: environment "
              "(AWS_ACCESS_KEY_ID unset); shared files (profile 'default' in "
              f"{tmp_path}/credentials and {tmp_path}/config: absent); web identity "
              "(AWS_WEB_IDENTITY_TOKEN_FILE unset); container", "instance metadata "
              "(AWS_EC2_METADATA_DISABLED=true)", "add ?anon=true to the s3:// URL")


def test_environment_keys(strata, env, tmp_path):
    round_trip(strata, dict(env, AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET),
               tmp_path, f"s3://{BUCKET}/env/a.zarr")


def test_shared_credentials_file_and_profiles(strata, env, tmp_path):
    (tmp_path / "credentials").write_text(
        f"[default]\naws_access_key_id = NOBODY\naws_secret_access_key = x\n"
        f"[dev]\naws_access_key_id = {KEY}\naws_secret_access_key = {SECRET}\n")
    (tmp_path / "config").write_text("[profile dev]\nregion = us-east-1\n")
    # [default]'s key is not s3rver's: refused, naming the status.
    proc = strata("info", f"s3://{BUCKET}/x.zarr", check=False, env=env)
    one_error_line(proc, "returned 403 InvalidAccessKeyId")
    round_trip(strata, dict(env, AWS_PROFILE="dev"), tmp_path, f"s3://{BUCKET}/prof/a.zarr")
    round_trip(strata, env, tmp_path, f"s3://{BUCKET}/prof/b.zarr?profile=dev")
    proc = strata("info", f"s3://{BUCKET}/x.zarr?profile=nope", check=False, env=env)
    one_error_line(proc, "shared files: profile 'nope' is in neither")


def test_web_identity_through_sts(strata, env, tmp_path):
    sts = FakeServer(sts_handler)
    try:
        token = tmp_path / "token"
        token.write_text("service-account-token\n")
        e = dict(env, AWS_WEB_IDENTITY_TOKEN_FILE=str(token),
                 AWS_ROLE_ARN="arn:aws:iam::123456789012:role/dask-workers",
                 AWS_ROLE_SESSION_NAME="pod-1", AWS_ENDPOINT_URL_STS=sts.endpoint)
        round_trip(strata, e, tmp_path, f"s3://{BUCKET}/web/a.zarr")
        assert sts.requests, "STS was never asked"
        form = urllib.parse.parse_qs(sts.requests[0][3])
        assert form["RoleArn"] == ["arn:aws:iam::123456789012:role/dask-workers"]
        assert form["RoleSessionName"] == ["pod-1"]

        token.write_text("some-other-token")
        proc = strata("info", f"s3://{BUCKET}/web/a.zarr", check=False, env=e)
        one_error_line(proc, f"web identity: STS at {sts.endpoint} answered 400 "
                             "InvalidIdentityToken (Incorrect token audience)")
    finally:
        sts.stop()


def test_dead_sts_is_one_clear_line(strata, env, tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    (tmp_path / "token").write_text("t")
    e = dict(env, AWS_WEB_IDENTITY_TOKEN_FILE=str(tmp_path / "token"),
             AWS_ROLE_ARN="arn:aws:iam::1:role/r", AWS_ENDPOINT_URL_STS=dead)
    proc = strata("info", f"s3://{BUCKET}/x.zarr", check=False, env=e)
    one_error_line(proc, f"web identity: STS at {dead} could not be reached (3 attempts)")


def test_instance_metadata(strata, env, tmp_path):
    imds = FakeServer(imds_handler)
    try:
        e = dict(env, AWS_EC2_METADATA_DISABLED="false",
                 AWS_EC2_METADATA_SERVICE_ENDPOINT=imds.endpoint)
        round_trip(strata, e, tmp_path, f"s3://{BUCKET}/imds/a.zarr")
        paths = [r[1] for r in imds.requests]
        assert paths[:3] == ["/latest/api/token", "/latest/meta-data/iam/security-credentials/",
                             "/latest/meta-data/iam/security-credentials/node-role"], paths
    finally:
        imds.stop()


def test_anonymous_only_when_asked_for(strata, env, tmp_path):
    round_trip(strata, dict(env, AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET),
               tmp_path, f"s3://{BUCKET}/public/a.zarr")
    # s3rver serves unsigned requests: ?anon=true reads without any credentials.
    info = json.loads(strata("info", f"s3://{BUCKET}/public/a.zarr?anon=true", "--json",
                             env=env).stdout)
    assert info["shape"] == [12, 9] and info["chunks_stored"] == 9, info
    proc = strata("info", f"s3://{BUCKET}/public/a.zarr?anon=sometimes", check=False, env=env)
    one_error_line(proc, "s3 URL option anon=sometimes must be true or false")
