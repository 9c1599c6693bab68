#!/usr/bin/env python3
"""Prints, for each test that failed in the last ctest run of a build tree,
the lines that say why: pytest's FAILED/ERROR summary lines and its last
line, or else the output's last lines. A few lines per test, for the end of
a long CI log.

    scripts/failed_tests.py BUILD_DIR [--lines N]
"""
import argparse
import pathlib
import re
import sys


def outputs(log_text):
    """Maps each test's name to its output in ctest's LastTest.log."""
    found = {}
    pattern = re.compile(r"^\d+/\d+ Testing: (.+?)\n(.*?)^<end of output>$",
                         re.MULTILINE | re.DOTALL)
    for m in pattern.finditer(log_text):
        body = m.group(2)
        start = body.find("Output:\n")
        if start >= 0:
            body = body[start + len("Output:\n"):]
            body = body.split("\n", 1)[1] if body.startswith("---") else body
        found[m.group(1).strip()] = body
    return found


def why(output, lines):
    rows = output.rstrip().splitlines()
    marked = [r for r in rows if r.startswith(("FAILED ", "ERROR "))]
    if marked:
        return marked[:lines] + rows[-1:]
    return rows[-lines:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir")
    parser.add_argument("--lines", type=int, default=6)
    args = parser.parse_args()
    temp = pathlib.Path(args.build_dir) / "Testing" / "Temporary"
    failed_log = temp / "LastTestsFailed.log"
    if not failed_log.exists():
        print(f"failed_tests: no {failed_log}", file=sys.stderr)
        return 1
    names = [line.split(":", 1)[1].strip()
             for line in failed_log.read_text().splitlines() if ":" in line]
    log = temp / "LastTest.log"
    texts = outputs(log.read_text(errors="replace")) if log.exists() else {}
    print(f"failed: {len(names)} test(s); why, from {log}:")
    for name in names:
        print(f"[{name}]")
        for row in why(texts.get(name, "(no output recorded)"), args.lines):
            print(f"  {row[:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
