#!/usr/bin/env bash
# CPython regression slice under Sentinel.
#
# Usage: run_slice.sh LIBSENTINEL_SO
#
# Runs Debian's CPython test suite (package libpython3.11-testsuite) for /usr/bin/python3 on a slice that
# stresses memory, threads, signals, fork and subprocesses, twice: once plainly and once with
# LD_PRELOAD=LIBSENTINEL_SO SENTINEL_MODE=track SENTINEL_MIN_BYTES=4096 (so that many objects are tracked),
# dumps going to a temporary directory (subprocesses started by the tests write theirs there too).
# Passes iff every test module and every test case has the same outcome (pass / fail / error / skip,
# module crash / timeout) in both runs, leaving out the names in flaky.txt, the library did track
# something (at least one dump was written) and a sample of the dumps reads back with sentinel-view
# (when SENTINEL_VIEW is set, as meson does). Exit 77 (skip) if the test suite is not installed.
#
# Knobs (environment):
#   CPYTHON_SLICE_TESTS     space-separated module list (default: the slice below)
#   CPYTHON_SLICE_JOBS      regrtest -j value per pass (default 4; the tests mostly sleep or wait on children)
#   CPYTHON_SLICE_SERIAL=1  run the two passes one after the other instead of at the same time
#   CPYTHON_SLICE_KEEP=1    keep the work directory (logs, JUnit XML, dumps) instead of deleting it on success
#   SENTINEL_CPYTHON        interpreter (default /usr/bin/python3)
#   SENTINEL_VIEW           sentinel-view of the build: if set, a sample of the dumps is read back with it
set -u

lib=${1:-}
here=$(cd "$(dirname "$0")" && pwd)
py=${SENTINEL_CPYTHON:-/usr/bin/python3}
jobs=${CPYTHON_SLICE_JOBS:-4}
# memory: mmap io gc tracemalloc zlib bytes memoryview array ctypes sys; threads: thread threading
# threading_local threadsignals queue; signals: signal faulthandler eintr; fork/exec/wait: subprocess os fork1
# wait4 posix resource select pty atexit.
default_tests="test_mmap test_signal test_faulthandler test_subprocess test_io test_gc test_os test_thread
  test_threading test_fork1 test_wait4 test_posix test_resource test_threadsignals test_tracemalloc test_select
  test_pty test_eintr test_zlib test_bytes test_memoryview test_array test_ctypes test_queue test_threading_local
  test_sys test_atexit"
read -r -a tests <<<"$(echo ${CPYTHON_SLICE_TESTS:-$default_tests})"

if [[ -z "$lib" ]]; then
  echo "usage: $0 LIBSENTINEL_SO" >&2
  exit 2
fi
lib=$(realpath "$lib")
if [[ ! -f "$lib" ]]; then
  echo "run_slice: no library at $lib" >&2
  exit 1
fi
if [[ ! -x "$py" ]]; then
  echo "run_slice: skip: $py not found" >&2
  exit 77
fi
missing=$("$py" - "${tests[@]}" <<'EOF'
import importlib.util, sys
try:
    import test.libregrtest  # noqa: F401
except ImportError:
    print('test.libregrtest'); sys.exit(0)
print(' '.join(t for t in sys.argv[1:] if importlib.util.find_spec('test.' + t) is None))
EOF
)
if [[ -n "$missing" ]]; then
  echo "run_slice: skip: CPython test modules missing ($missing): install Debian package libpython3.11-testsuite" >&2
  exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/sentinel-cpython.XXXXXX")
mkdir -p "$work/plain/tmp" "$work/preload/tmp" "$work/dumps"
# Tests that run children as another user (subprocess user=/group=) must be able to write their dumps too.
chmod 755 "$work" && chmod 1777 "$work/dumps"

# Both passes start from an environment without LD_PRELOAD and without any SENTINEL_* variable (meson's test
# environment has SENTINEL_VIEW etc. for the tools; the runtime would warn about them in every process).
unset_env=(-u LD_PRELOAD)
while IFS= read -r name; do unset_env+=(-u "$name"); done < <(compgen -e | grep '^SENTINEL_')

# Runs one pass: run_pass LABEL [VAR=VALUE...]; regrtest runs in LABEL/ with its own TMPDIR.
run_pass() {
  local label=$1; shift
  local dir=$work/$label
  local start=$SECONDS
  (
    cd "$dir" || exit 1
    # SIGINT back to its default first: a shell that started us in the background ignores it, children
    # inherit that, and then CPython's KeyboardInterrupt tests (test_signal, test_threading) fail.
    env "${unset_env[@]}" TMPDIR="$dir/tmp" "$@" \
      "$py" -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
      "$py" -m test -j"$jobs" --timeout 600 --junit-xml "$dir/junit.xml" "${tests[@]}" >"$dir/regrtest.log" 2>&1
    echo $? >"$dir/rc"
  )
  echo $((SECONDS - start)) >"$dir/seconds"
}

echo "run_slice: $py -m test -j$jobs ${tests[*]}"
echo "run_slice: library $lib; work dir $work"
t0=$SECONDS
preload_env=(LD_PRELOAD="$lib" SENTINEL_MODE=track SENTINEL_MIN_BYTES=4096
             SENTINEL_DUMP="$work/dumps/sentinel-%e.%p.prof")
if [[ "${CPYTHON_SLICE_SERIAL:-0}" == 1 ]]; then
  run_pass plain
  run_pass preload "${preload_env[@]}"
else
  run_pass plain &
  plain_pid=$!
  run_pass preload "${preload_env[@]}" &
  preload_pid=$!
  wait "$plain_pid"
  wait "$preload_pid"
fi
total=$((SECONDS - t0))

for label in plain preload; do
  echo "run_slice: $label: regrtest exit $(cat "$work/$label/rc" 2>/dev/null || echo '?')," \
       "$(cat "$work/$label/seconds") s; $(grep -E '^(Tests result|Total duration)' "$work/$label/regrtest.log" | tr '\n' ' ')"
done
echo "run_slice: wall time of both passes: ${total} s"

status=0
"$py" "$here/compare.py" "$work/plain" "$work/preload" --flaky "$here/flaky.txt" \
  --modules "$(IFS=,; echo "${tests[*]}")" || status=1

ndumps=$(find "$work/dumps" -name '*.prof' -type f | wc -l)
dump_bytes=$(du -sk "$work/dumps" | cut -f1)
echo "run_slice: $ndumps dump(s) written by processes under the library ($dump_bytes KiB)"
if ((ndumps == 0)); then
  echo "run_slice: FAIL: no dump written: the library tracked nothing (was it preloaded?)"
  status=1
fi
# The dumps must be readable: sentinel-view (SENTINEL_VIEW, set by meson) reads the 10 largest and 20 others.
view=${SENTINEL_VIEW:-}
if ((ndumps > 0)) && [[ -n "$view" && -x "$view" ]]; then
  nbad=0
  mapfile -t sample < <( (find "$work/dumps" -name '*.prof' -type f -printf '%s %p\n' | sort -rn | head -10 | cut -d' ' -f2-
                           find "$work/dumps" -name '*.prof' -type f | sort | awk 'NR % 29 == 1' | head -20) | sort -u)
  for f in "${sample[@]}"; do
    if ! err=$("$view" summary "$f" 2>&1 >/dev/null); then
      echo "run_slice: FAIL: sentinel-view cannot read $f: $err"
      nbad=$((nbad + 1))
    fi
  done
  echo "run_slice: sentinel-view read ${#sample[@]} of the dumps, $nbad unreadable"
  ((nbad == 0)) || status=1
fi
# Runtime messages are single lines starting 'sentinel: ' on stderr; regrtest shows a test's output when it fails.
nmsg=$(grep -c '^sentinel: ' "$work/preload/regrtest.log")
if ((nmsg > 0)); then
  echo "run_slice: $nmsg runtime message line(s) in the preload log, first ones:"
  grep '^sentinel: ' "$work/preload/regrtest.log" | sort | uniq -c | sort -rn | head -10
fi

if ((status != 0)); then
  echo "run_slice: FAIL; logs kept in $work (plain/regrtest.log, preload/regrtest.log, */junit.xml, dumps/)"
  for label in plain preload; do
    echo "---- $label: failing tests in regrtest summary ----"
    sed -n '/^== Tests result/,$p' "$work/$label/regrtest.log" | head -40
  done
elif [[ "${CPYTHON_SLICE_KEEP:-0}" == 1 ]]; then
  echo "run_slice: PASS; work dir kept: $work"
else
  rm -rf "$work"
  echo "run_slice: PASS"
fi
exit $status
