#!/usr/bin/env python3
"""strata copy local -> S3 -> local of the 800 MB seed array, against curl
moving the same bytes to the same server in the same reps, under the protocol
of bench/README.md.

    .venv/bin/python bench/s3_copy.py [--reps 5] [--strata build/release/bin/strata]
        [--dir build/bench/s3] [--out bench/results/s3_copy.json]
    .venv/bin/python bench/s3_copy.py --smoke

The server is s3rver (scripts/s3_test_server.js, installed by
scripts/install-deps.sh) on 127.0.0.1, storing objects under --dir, so both
sides pay for the same single-threaded node server and the same disk. Its CPU
is part of the workload: the protocol counts it with the contender's, not as
disturbance. The array is `strata random --shape 10000,10000 --chunks
10000,1000` (10 chunks of 80 MB, about 70 MB each after blosc); it is uploaded
once, untimed, as the source of every download.

Contenders, interleaved in rotated order within each rep (strata with its
default workers, the available cores; curl with as many transfers at once):
  - strata copy local -> s3://  (default settings: chunks over 64 MiB go up as
    multipart uploads of 16 MiB parts)
  - strata copy local -> s3://?multipart_threshold=1GiB (one PUT per chunk,
    as curl does)
  - strata copy s3:// -> local
  - baseline: curl PUT of every file of the array (same bytes, SigV4-signed
    like strata's requests)
  - baseline: curl GET of every file back to local files
`strata copy` with an unchanged codec also decodes every chunk once to check
it, which curl does not. Before each run its target is removed and the local
source read once (warm). After the first kept rep the arrays that came back
are checked (`strata verify`; curl's files byte for byte). Reports medians
with min-max and per-rep ratios to curl in the same direction; never pass/fail.
--smoke: a 1000 x 1000 array.
"""
import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol as P  # noqa: E402

ROOT = P.REPO
BUCKET = "bench"


class Server:
    def __init__(self, data_dir):
        self.data_dir = data_dir
        shutil.rmtree(data_dir, ignore_errors=True)
        os.makedirs(data_dir)
        self.proc = subprocess.Popen(
            ["node", "--openssl-legacy-provider", os.path.join(ROOT, "scripts", "s3_test_server.js"),
             "--dir", data_dir, "--port", "0", "--bucket", BUCKET, "--exit-on-stdin-eof"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if not line.startswith("listening 127.0.0.1:"):
            self.stop()
            raise SystemExit(f"s3rver did not start ({line!r}); run scripts/install-deps.sh")
        self.endpoint = "http://" + line.split(" ", 1)[1]

    def clear(self, prefix):
        """Removes the objects under prefix (s3rver keeps no state beyond its files)."""
        shutil.rmtree(os.path.join(self.data_dir, BUCKET, prefix), ignore_errors=True)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.terminate()
            self.proc.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--strata", default="build/release/bin/strata")
    ap.add_argument("--dir", default="build/bench/s3")
    P.add_arguments(ap)
    args = ap.parse_args()
    n = 1000 if args.smoke else 10000
    d = os.path.abspath(args.dir)
    with P.Bench("s3_copy", args, scratch=d,
                 description="strata copy local -> S3 -> local through s3rver, against curl") as b:
        src = os.path.join(d, "seed.zarr")
        back = os.path.join(d, "back.zarr")
        curl_back = os.path.join(d, "curl-back")
        P.log("writing the seed array")
        subprocess.run([args.strata, "random", src, "--shape", f"{n},{n}", "--chunks",
                        f"{n},{n // 10}", "--seed", "1", "--overwrite"], check=True,
                       stderr=subprocess.DEVNULL)
        files = sorted(os.listdir(src))
        logical = n * n * 8
        stored = P.tree_bytes(src)
        workers = os.cpu_count()
        server = Server(os.path.join(d, "s3rver"))
        try:
            env = {"AWS_ENDPOINT_URL": server.endpoint, "AWS_REGION": "us-east-1",
                   "AWS_ACCESS_KEY_ID": "S3RVER", "AWS_SECRET_ACCESS_KEY": "S3RVER",
                   "AWS_ENDPOINT_URL_S3": server.endpoint}
            curl_auth = ["--aws-sigv4", "aws:amz:us-east-1:s3", "--user", "S3RVER:S3RVER",
                         "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"]
            source = f"s3://{BUCKET}/source/seed.zarr"

            def curl_cmd(direction, prefix):
                cmd = ["curl", "--noproxy", "*", "--silent", "--show-error", "--fail",
                       "--parallel", "--parallel-max", str(workers), *curl_auth]
                for f in files:
                    if direction == "up":
                        cmd += ["-T", os.path.join(src, f),
                                f"{server.endpoint}/{BUCKET}/{prefix}/seed.zarr/{f}"]
                    else:
                        cmd += ["-o", os.path.join(curl_back, f),
                                f"{server.endpoint}/{BUCKET}/{prefix}/seed.zarr/{f}"]
                return cmd

            # The source of every download: the local files as they are, untimed.
            subprocess.run(curl_cmd("up", "source"), check=True)

            def make_dir(p):
                shutil.rmtree(p, ignore_errors=True)
                os.makedirs(p)

            workloads = [
                # name, direction, label, argv, target cleared before each run
                ("strata up", "up", "strata copy local -> S3 (default: multipart above 64 MiB)",
                 [args.strata, "copy", src, f"s3://{BUCKET}/strata/seed.zarr"],
                 lambda: server.clear("strata")),
                ("strata up one PUT", "up",
                 "strata copy local -> S3, ?multipart_threshold=1GiB (one PUT per chunk)",
                 [args.strata, "copy", src, f"s3://{BUCKET}/strata1/seed.zarr"
                  "?multipart_threshold=1GiB"], lambda: server.clear("strata1")),
                ("strata down", "down", "strata copy S3 -> local",
                 [args.strata, "copy", source, back], lambda: shutil.rmtree(back, True)),
                ("curl PUT", "up", "baseline: curl PUT of every file", curl_cmd("up", "curl"),
                 lambda: server.clear("curl")),
                ("curl GET", "down", "baseline: curl GET of every file", curl_cmd("down", "source"),
                 lambda: make_dir(curl_back)),
            ]
            contenders = []
            for name, direction, label, argv, clear in workloads:
                def setup(clear=clear):
                    clear()
                    P.warm(src)
                contenders.append(P.Contender(name, argv, env=env, setup=setup, label=label))
            checks = {}
            state = {"checked": False}

            def after_rep(slot, rep):
                if state["checked"]:
                    return
                r = subprocess.run([args.strata, "verify", src, back], capture_output=True,
                                   text=True, env=dict(os.environ, **env))
                checks["strata down"] = (r.stdout.strip().splitlines() or [""])[0] \
                    if r.returncode == 0 else f"FAILED: {r.stdout.strip()[:300]}"
                for name, prefix in (("strata up", "strata"), ("strata up one PUT", "strata1")):
                    r = subprocess.run([args.strata, "verify", src,
                                        f"s3://{BUCKET}/{prefix}/seed.zarr"],
                                       capture_output=True, text=True,
                                       env=dict(os.environ, **env))
                    checks[name] = (r.stdout.strip().splitlines() or [""])[0] \
                        if r.returncode == 0 else f"FAILED: {r.stdout.strip()[:300]}"
                same = all(open(os.path.join(src, f), "rb").read() ==
                           open(os.path.join(curl_back, f), "rb").read() for f in files)
                checks["curl GET"] = ("files identical to the source" if same
                                      else "FAILED: files differ")
                P.log(f"  checks: {checks}")
                state["checked"] = True

            ratios = [("strata up", "curl PUT"), ("strata up one PUT", "curl PUT"),
                      ("strata down", "curl GET")]
            case = b.case("s3 round trip", contenders, ratios=ratios, after_rep=after_rep,
                          helper_pids=[server.proc.pid], describe={
                              "shape": [n, n], "chunks": [n, n // 10], "dtype": "float64",
                              "codec": "blosc lz4 clevel 5 byte shuffle", "files": len(files),
                              "logical_bytes": logical, "stored_bytes": stored,
                              "workers": workers,
                              "directions": {w[0]: w[1] for w in workloads},
                              "labels": {w[0]: w[2] for w in workloads},
                              "server": "s3rver (@20minutes/s3rver, node, one process) on "
                                        "127.0.0.1, objects on local disk; its CPU counts as "
                                        "the workload's"})
            case["checks"] = checks
        finally:
            server.stop()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
