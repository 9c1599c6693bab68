"""How many public Zarr arrays Strata reads: a report, not a test.

    .venv/bin/python tests/interop/corpus_report.py [--strata BIN] [--json OUT] ROOT...

Walks every ROOT (checkouts of other implementations' repositories, e.g. the
mirrors of zarr-developers/zarr-python, LDeakin/zarrs, manzt/zarrita.js,
gzuidhof/zarr.js, google/tensorstore, zarr-developers/zarr_implementations)
for Zarr arrays (a directory with `.zarray`, or `zarr.json` whose node_type is
"array"), and for each one runs `strata copy ARRAY TMP --codec none`, which
decodes every chunk. An array counts as read when that succeeds; for v2 arrays
that zarr-python 3 also reads, the values of Strata's copy must equal
zarr-python's reading of the original. Prints the counts per format and the
reason for each refusal (grouped), and writes the details as JSON.
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np


def find_arrays(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        if ".zarray" in filenames:
            yield dirpath, 2
        elif "zarr.json" in filenames:
            try:
                with open(os.path.join(dirpath, "zarr.json")) as f:
                    meta = json.load(f)
            except Exception:
                continue
            if isinstance(meta, dict) and meta.get("node_type") == "array":
                yield dirpath, 3


def zarr_python_read(path):
    try:
        import zarr
        z = zarr.open_array(path, mode="r")
        return z[...], None
    except Exception as e:  # noqa: BLE001 - a report of whatever goes wrong
        return None, f"{type(e).__name__}: {e}"


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("roots", nargs="+")
    parser.add_argument("--strata", default=os.environ.get("STRATA_BIN", "build/release/bin/strata"))
    parser.add_argument("--json", help="write the details here")
    args = parser.parse_args()
    results = []
    scratch = tempfile.mkdtemp(prefix="strata-corpus-")
    try:
        for root in args.roots:
            for path, fmt in sorted(find_arrays(root)):
                out = os.path.join(scratch, "out.zarr")
                shutil.rmtree(out, ignore_errors=True)
                # To plain v2, which every zarr-python reads.
                proc = subprocess.run([args.strata, "copy", path, out, "--codec", "none",
                                       "--zarr-format", "2", "--workers", "1"],
                                      capture_output=True, text=True, timeout=300)
                entry = {"path": path, "zarr_format": fmt, "strata_ok": proc.returncode == 0,
                         "error": proc.stderr.strip().splitlines()[-1] if proc.returncode else ""}
                if fmt == 2:
                    expected, zerr = zarr_python_read(path)
                    entry["zarr_python_ok"] = zerr is None
                    if zerr is None and entry["strata_ok"]:
                        got, gerr = zarr_python_read(out)
                        entry["values_equal"] = gerr is None and same(got, expected)
                results.append(entry)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    summary = {}
    for fmt in (2, 3):
        rows = [r for r in results if r["zarr_format"] == fmt]
        summary[f"v{fmt}"] = {
            "arrays": len(rows),
            "strata_reads": sum(r["strata_ok"] for r in rows),
        }
        if fmt == 2:
            summary["v2"]["zarr_python_reads"] = sum(r.get("zarr_python_ok", False) for r in rows)
            summary["v2"]["zarr_python_reads_strata_refuses"] = sum(
                r.get("zarr_python_ok", False) and not r["strata_ok"] for r in rows)
            summary["v2"]["values_differ"] = [r["path"] for r in rows
                                              if r.get("values_equal") is False]
    print(json.dumps(summary, indent=2))
    reasons = collections.Counter()
    for r in results:
        if not r["strata_ok"]:
            text = r["error"].replace(r["path"], "<array>")
            reasons[text[:160]] += 1
    for text, n in reasons.most_common():
        print(f"{n:4d}  {text}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "arrays": results}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
