#!/usr/bin/env bash
# Fuzzes the dump reader for a bounded time: run-fuzz.sh BUILD_DIR SECONDS [TARGET]
# TARGET is fuzz-format-reader (default), fuzz-view-model (the viewer's models over parsed dumps),
# fuzz-planner (plan_source and make_plan over parsed dumps) or fuzz-step-detector (the step detector
# on streams made like training loops; its corpus starts empty: the dumps are no inputs of its kind).
# BUILD_DIR is a build configured with CC=clang CXX=clang++ meson setup BUILD_DIR -Dfuzz=true.
# The committed seeds are copied into a scratch corpus under BUILD_DIR (the source tree is never
# written). Exits non-zero when the fuzzer finds a crash, a sanitizer report, a leak, a timeout or
# an out-of-memory input; the reproducer is left in BUILD_DIR/fuzz-artifacts/.
set -euo pipefail

if [[ $# -lt 2 || $# -gt 3 || ! $2 =~ ^[0-9]+$ ]]; then
  echo "usage: $0 BUILD_DIR SECONDS [fuzz-format-reader|fuzz-view-model|fuzz-planner|fuzz-step-detector]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
seconds=$2
here=$(cd "$(dirname "$0")" && pwd)
target=${3:-fuzz-format-reader}
fuzzer=$build/tests/fuzz/$target
if [[ ! -x $fuzzer ]]; then
  echo "run-fuzz.sh: $fuzzer not built (configure with CC=clang CXX=clang++ -Dfuzz=true)" >&2
  exit 2
fi

corpus=$build/fuzz-corpus
[[ $target == fuzz-format-reader ]] || corpus=$build/fuzz-corpus-$target
artifacts=$build/fuzz-artifacts
mkdir -p "$corpus" "$artifacts"
[[ $target == fuzz-step-detector ]] || cp -n "$here"/seeds/*.prof "$corpus"/ 2>/dev/null || true

jobs=${FUZZ_JOBS:-1}
echo "run-fuzz.sh: fuzzing $fuzzer for ${seconds}s (corpus $corpus)"
set +e
"$fuzzer" "$corpus" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 \
  -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts/" \
  ${FUZZ_EXTRA_ARGS:-} 2>"$build/fuzz-log-$target.txt"
rc=$?
set -e
tail -n 25 "$build/fuzz-log-$target.txt"
if [[ $rc -ne 0 ]]; then
  echo "run-fuzz.sh: FAILED (exit $rc); reproducers in $artifacts:" >&2
  ls -l "$artifacts" >&2 || true
  exit 1
fi
echo "run-fuzz.sh: no crash in ${seconds}s"
