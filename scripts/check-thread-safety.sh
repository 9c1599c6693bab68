#!/usr/bin/env bash
# Clang's thread-safety analysis over every library source (not tests, fuzz
# targets, benchmarks or examples): `clang++ -fsyntax-only -Wthread-safety
# -Werror=thread-safety` with each file's defines and include paths taken from
# the build's compile_commands.json, two files at a time. Exits non-zero if any
# file reads or writes a STRATA_GUARDED_BY field without its mutex, calls a
# STRATA_REQUIRES function without the lock, or leaves a lock held
# (src/strata/base/thread_annotations.h).
#
#   scripts/check-thread-safety.sh [BUILD_DIR]   # default build/ci
#   scripts/check-thread-safety.sh --self-test [BUILD_DIR]
#
# --self-test proves the check can fail: it must accept
# tests/thread_safety/guarded_ok.cc and reject tests/thread_safety/unguarded_write.cc
# with clang's message for the unguarded write. ctest runs both
# (check.thread_safety, check.thread_safety_self_test).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

self_test=0
if [[ "${1:-}" == "--self-test" ]]; then
  self_test=1
  shift
fi
build_dir="${1:-$root/build/ci}"
clang="${STRATA_CLANG:-clang++}"
compile_commands="$build_dir/compile_commands.json"

if ! command -v "$clang" >/dev/null; then
  echo "check-thread-safety.sh: $clang not found (scripts/install-deps.sh installs clang)" >&2
  exit 2
fi
if [[ ! -f "$compile_commands" ]]; then
  echo "check-thread-safety.sh: no $compile_commands (configure first: cmake --preset ci)" >&2
  exit 2
fi

# One line per library source: the flags clang needs to parse it (-D, -I,
# -isystem, -std; the build's other flags are GCC's business), then the file.
# In a unity build (the ci preset) the files compiled are CMake's Unity/*.cxx
# batches, each #including several sources: those batches are checked, and
# every library source under src/ must be in one of them or compiled alone,
# or the check fails (a check that saw nothing must not pass).
sources="$(python3 - "$compile_commands" "$root" <<'PY'
import json, pathlib, re, shlex, sys
entries = json.load(open(sys.argv[1]))
src = sys.argv[2] + "/src/"
not_library = re.compile(r"(_test|_test_util|_fuzz)\.cc$")
not_library_batch = re.compile(r"_test\.dir/|/(bench|examples|fuzz)/")
included = re.compile(r'^#include "(/[^"]+)"$', re.MULTILINE)
library = {str(p) for p in pathlib.Path(src).rglob("*.cc") if not not_library.search(p.name)}
seen, covered = set(), set()
for e in entries:
    f = e["file"]
    if "/Unity/" in f and not not_library_batch.search(f):
        members = included.findall(pathlib.Path(f).read_text())
    elif f.startswith(src) and not not_library.search(f):
        members = [f]
    else:
        continue
    if f in seen:
        continue
    seen.add(f)
    covered.update(members)
    args = e.get("arguments") or shlex.split(e["command"])
    keep, i = [], 0
    while i < len(args):
        a = args[i]
        if a == "-include" and args[i + 1].endswith("cmake_pch.hxx"):
            i += 2; continue  # GCC's precompiled header; the file includes it anyway
        if a in ("-isystem", "-I", "-D", "-include"):
            keep += [a, args[i + 1]]; i += 2; continue
        if a.startswith(("-D", "-I", "-std=")):
            keep.append(a)
        i += 1
    print(shlex.join(keep + [f]))
missing = sorted(library - covered)
if missing:
    sys.exit(f"check-thread-safety.sh: library sources in no compile command: {' '.join(missing)}")
PY
)"
if [[ -z "$sources" ]]; then
  echo "check-thread-safety.sh: no library sources in $compile_commands" >&2
  exit 2
fi

# Only the analysis' warnings are wanted, and all of them are errors.
clang_flags=(-fsyntax-only -Wno-everything -Wthread-safety -Werror=thread-safety)

if (( self_test )); then
  flags="$(head -n1 <<<"$sources" | python3 -c 'import shlex,sys; print(shlex.join(shlex.split(sys.stdin.read())[:-1]))')"
  eval "set -- $flags"
  if ! "$clang" "${clang_flags[@]}" "$@" "$root/tests/thread_safety/guarded_ok.cc"; then
    echo "check-thread-safety.sh --self-test: the check rejected correctly locked code" >&2
    exit 1
  fi
  if out="$("$clang" "${clang_flags[@]}" "$@" "$root/tests/thread_safety/unguarded_write.cc" 2>&1)"; then
    echo "check-thread-safety.sh --self-test: the check accepted an unguarded write" >&2
    exit 1
  fi
  if ! grep -q "writing variable 'count_' requires holding mutex 'mu_'" <<<"$out"; then
    echo "check-thread-safety.sh --self-test: rejected for another reason than the unguarded write:" >&2
    echo "$out" >&2
    exit 1
  fi
  echo "check-thread-safety.sh --self-test: accepts guarded_ok.cc, rejects unguarded_write.cc"
  exit 0
fi

count="$(wc -l <<<"$sources")"
# xargs runs `clang++ FLAGS... FILE` for each line; exit 123 if any failed.
if ! xargs -P 2 -L 1 "$clang" "${clang_flags[@]}" <<<"$sources"; then
  echo "check-thread-safety.sh: thread-safety violations (see above) in the $count library sources" >&2
  exit 1
fi
echo "check-thread-safety.sh: $count library sources clean"
