#!/usr/bin/python3
"""strata copy local -> S3 -> local of the 800 MB seed array, against curl moving
the same bytes to the same server in the same run.

    /usr/bin/python3 bench/s3_copy.py [--strata build/release/bin/strata]
                                      [--dir build/bench-s3] [--reps 3] > s3_copy.json

The server is s3rver (scripts/s3_test_server.js, installed by
scripts/install-deps.sh) on 127.0.0.1, storing objects under --dir, so both
sides pay for the same single-threaded node server and the same disk. The
array is `strata random --shape 10000,10000 --chunks 10000,1000` (10 chunks of
80 MB, about 70 MB each after blosc).

Workloads, each timed --reps times (median reported):
  - strata copy local -> s3://  (default settings: chunks over 64 MiB go up as
    multipart uploads of 16 MiB parts)
  - strata copy local -> s3://?multipart_threshold=1GiB (one PUT per chunk,
    as curl does)
  - strata copy s3:// -> local
  - baseline: curl PUT of every file of the array (same bytes, same
    parallelism as strata's --workers, SigV4-signed like strata's requests)
  - baseline: curl GET of every file back to local files
`strata copy` with an unchanged codec also decodes every chunk once to check
it, which curl does not. The page cache is dropped before every timed run when
we may (root), as in copy_bench.py. Reports medians and ratios, never a
pass/fail.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rechunk import drop_caches  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BUCKET = "bench"


def log(*args):
    print(*args, file=sys.stderr, flush=True)


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
            raise SystemExit(f"s3rver did not start ({line!r}); run scripts/install-deps.sh")
        self.endpoint = "http://" + line.split(" ", 1)[1]

    def clear(self, prefix):
        """Removes the objects under prefix (s3rver keeps no state beyond its files)."""
        shutil.rmtree(os.path.join(self.data_dir, BUCKET, prefix), ignore_errors=True)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", default="build/release/bin/strata")
    ap.add_argument("--dir", default="build/bench-s3")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    load_at_start = round(os.getloadavg()[0], 2)
    src = os.path.join(args.dir, "seed.zarr")
    back = os.path.join(args.dir, "back.zarr")
    curl_back = os.path.join(args.dir, "curl-back")
    log("writing the seed array")
    subprocess.run([args.strata, "random", src, "--shape", "10000,10000", "--chunks", "10000,1000",
                    "--seed", "1", "--overwrite"], check=True, stderr=subprocess.DEVNULL)
    files = sorted(os.listdir(src))
    logical = 10000 * 10000 * 8
    stored = sum(os.path.getsize(os.path.join(src, f)) for f in files)

    server = Server(os.path.join(args.dir, "s3rver"))
    env = dict(os.environ, AWS_ENDPOINT_URL=server.endpoint, AWS_REGION="us-east-1",
               AWS_ACCESS_KEY_ID="S3RVER", AWS_SECRET_ACCESS_KEY="S3RVER")
    env.pop("AWS_ENDPOINT_URL_S3", None)
    curl_auth = ["--aws-sigv4", "aws:amz:us-east-1:s3", "--user", "S3RVER:S3RVER",
                 "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"]
    workers = ["--workers", str(args.workers)]
    remote_prefix = "strata/seed.zarr"
    remote = f"s3://{BUCKET}/{remote_prefix}"

    def curl_cmd(direction):
        cmd = ["curl", "--noproxy", "*", "--silent", "--show-error", "--fail", "--parallel", "--parallel-max",
               str(args.workers), *curl_auth]
        for f in files:
            url = f"{server.endpoint}/{BUCKET}/curl/seed.zarr/{f}"
            if direction == "up":
                cmd += ["-T", os.path.join(src, f), url]
            else:
                cmd += ["-o", os.path.join(curl_back, f), url]
        return cmd

    workloads = [
        # name, direction, command, setup before each rep
        ("strata copy local -> s3 (default: multipart above 64 MiB)", "up",
         [args.strata, "copy", src, remote, *workers], lambda: server.clear("strata")),
        ("strata copy local -> s3 (multipart_threshold=1GiB: one PUT per chunk)", "up",
         [args.strata, "copy", src, remote + "?multipart_threshold=1GiB", *workers],
         lambda: server.clear("strata")),
        ("strata copy s3 -> local", "down", [args.strata, "copy", remote, back, *workers],
         lambda: shutil.rmtree(back, ignore_errors=True)),
        ("baseline: curl PUT of every file", "up", curl_cmd("up"), lambda: server.clear("curl")),
        ("baseline: curl GET of every file", "down", curl_cmd("down"),
         lambda: (shutil.rmtree(curl_back, ignore_errors=True), os.makedirs(curl_back))),
    ]
    rows = []
    try:
        for name, direction, cmd, setup in workloads:
            times = []
            dropped = True
            for rep in range(args.reps):
                setup()
                dropped = drop_caches() and dropped
                log(f"{name}: rep {rep + 1}/{args.reps}")
                t0 = time.perf_counter()
                subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
                times.append(time.perf_counter() - t0)
            med = statistics.median(times)
            rows.append({"workload": name, "direction": direction,
                         "command": " ".join(cmd[:6]) + (" ..." if len(cmd) > 6 else ""),
                         "median_s": round(med, 3), "times_s": [round(t, 3) for t in times],
                         "stored_MBps": round(stored / med / 1e6, 1),
                         "logical_MBps": round(logical / med / 1e6, 1),
                         "page_cache_dropped": dropped})
        # Correctness of what was timed (not timed): the array that came back
        # equals the original, and curl's files equal the original's.
        verify = subprocess.run([args.strata, "verify", src, back], env=env, capture_output=True,
                                text=True)
        same_files = all(open(os.path.join(src, f), "rb").read() ==
                         open(os.path.join(curl_back, f), "rb").read() for f in files)
    finally:
        server.stop()
    baseline = {d: next(r for r in rows if r["workload"].startswith("baseline") and
                        r["direction"] == d) for d in ("up", "down")}
    for r in rows:
        r["time_vs_curl"] = round(r["median_s"] / baseline[r["direction"]]["median_s"], 2)
    up = next(r for r in rows if r["workload"].startswith("strata copy local -> s3 (default"))
    up_single = next(r for r in rows if "one PUT per chunk" in r["workload"])
    down = next(r for r in rows if r["workload"] == "strata copy s3 -> local")
    curl_round_trip = baseline["up"]["median_s"] + baseline["down"]["median_s"]

    def round_trip(upload):
        total = upload["median_s"] + down["median_s"]
        return {"strata_s": round(total, 3), "curl_s": round(curl_round_trip, 3),
                "time_vs_curl": round(total / curl_round_trip, 2)}
    json.dump({
        "array": {"shape": [10000, 10000], "chunks": [10000, 1000], "dtype": "float64",
                  "codec": "blosc lz4 clevel 5 byte shuffle", "files": len(files),
                  "logical_bytes": logical, "stored_bytes": stored},
        "server": "s3rver (@20minutes/s3rver 4.0.4, node, one process) on 127.0.0.1, "
                  "objects on local disk",
        "MB": 1000000, "cores": os.cpu_count(), "workers": args.workers, "reps": args.reps,
        # The machine is shared: a load above the core count means other work
        # competed for the CPU during the run.
        "load_average_1min_at_start_and_end": [load_at_start, round(os.getloadavg()[0], 2)],
        "results": rows,
        "round_trip": round_trip(up),
        "round_trip_one_put_per_chunk": round_trip(up_single),
        "checks": {"strata_round_trip_verify": verify.stdout.strip(),
                   "curl_files_identical": same_files},
    }, sys.stdout, indent=2)
    print()
    shutil.rmtree(os.path.join(args.dir, "s3rver"), ignore_errors=True)
    shutil.rmtree(back, ignore_errors=True)
    shutil.rmtree(curl_back, ignore_errors=True)


if __name__ == "__main__":
    main()
