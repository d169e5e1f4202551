#!/usr/bin/env bash
# compare.sh LIB PROGRAM [ARGS...]
#
# Runs PROGRAM twice: once plainly, once with LD_PRELOAD=LIB (SENTINEL_MODE=track, SENTINEL_MIN_BYTES=4096,
# SENTINEL_DUMP=<fresh temp dir>/sentinel-%e.%p.prof). Both runs start in their own fresh, empty working
# directory. Fails, with a diff, when stdout, the exit status (128+N for a terminating signal N) or stderr
# (with the preloaded run's `sentinel:` lines removed) differ.
#
# Optional environment, set per test:
#   COMPARE_ENV            extra NAME=VALUE words for the preloaded run (after the defaults, so they override them)
#   EXPECT_STATUS=N        status both runs must end with (default 0; 128+N for signal N)
#   EXPECT_SENTINEL=ERE    the preloaded stderr must hold a `sentinel:` line matching ERE (case-insensitive);
#                          such lines are allowed
#   EXPECT_SENTINEL_LINES=N  exactly N stderr lines starting `sentinel:` in the preloaded run
#   EXPECT_DUMP=1          at least one dump must be written in the temp dir, starting with the magic SNTLDUMP
#   EXPECT_DUMP_COUNT=N    exactly N dumps
#   EXPECT_DUMP_NAME=ERE   at least one dump whose file name matches ERE
#   EXPECT_NO_DUMP=1       no dump in the temp dir nor in either working directory, nor at a SENTINEL_DUMP path
#                          given in COMPARE_ENV
#   DUMP_CHECK="CMD ..."   run as `CMD ... DUMPFILE` for every dump written; must exit 0
#   COMPARE_STDERR=0       do not compare stderr
#   COMPARE_TIMEOUT=S      seconds allowed to each run (default 120)
#   COMPARE_DEFAULT_LOG=1  leave SENTINEL_LOG unset (the runtime's default level) instead of error; lines that
#                          EXPECT_SENTINEL does not match are then tolerated, as with a raised SENTINEL_LOG
#   KEEP_TMP=1             keep the temp dir (its path is printed)
#
# Runtime messages carry no level tag, so the preloaded run gets SENTINEL_LOG=error unless COMPARE_ENV sets
# SENTINEL_LOG: then every `sentinel:` line is at error level, and any that EXPECT_SENTINEL does not match fails
# the test. When a test raises SENTINEL_LOG, lines EXPECT_SENTINEL does not match are listed but tolerated
# (bound them with EXPECT_SENTINEL_LINES). Inherited SENTINEL_*, LD_PRELOAD, MALLOC_PERTURB_ and MALLOC_CHECK_
# are removed from both runs.
set -u

if [ $# -lt 2 ]; then
  echo "usage: $0 LIB PROGRAM [ARGS...]" >&2
  exit 2
fi
lib=$1
shift
if [ ! -f "$lib" ]; then
  echo "compare.sh: preload library $lib does not exist" >&2
  exit 1
fi

# The runs start in fresh directories: make relative paths (meson passes targets relative to the build dir)
# absolute.
abspath() {
  case $1 in
    /*) printf '%s' "$1" ;;
    *) printf '%s/%s' "$PWD" "$1" ;;
  esac
}
lib=$(abspath "$lib")
cmd=()
for a in "$@"; do
  if [ ${#cmd[@]} -eq 0 ]; then
    case $a in */*) a=$(abspath "$a") ;; esac
  elif [ -e "$a" ] && [[ $a == */* ]]; then
    a=$(abspath "$a")
  fi
  cmd+=("$a")
done
set -- "${cmd[@]}"

timeout_s=${COMPARE_TIMEOUT:-120}
expect_status=${EXPECT_STATUS:-0}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sentinel-compare.XXXXXX") || exit 1
if [ "${KEEP_TMP:-0}" = 1 ]; then
  echo "compare.sh: keeping $tmp"
else
  trap 'rm -rf "$tmp"' EXIT
fi
trap 'exit 143' TERM INT
mkdir -p "$tmp/plain" "$tmp/preload" "$tmp/dumps"

ulimit -c 0 2>/dev/null

# Inherited SENTINEL_* variables and LD_PRELOAD are removed from both runs.
# So are glibc's malloc debugging knobs: meson sets MALLOC_PERTURB_, which makes glibc write every block it hands
# out (every page of a 1 GiB block) in the plain run but not for blocks the runtime serves.
unset_args=(-u LD_PRELOAD -u MALLOC_PERTURB_ -u MALLOC_CHECK_)
for v in $(compgen -e); do
  case $v in SENTINEL_*) unset_args+=(-u "$v") ;; esac
done

# Environment of the preloaded run.
penv=(LD_PRELOAD="$lib" SENTINEL_MODE=track SENTINEL_MIN_BYTES=4096 "SENTINEL_DUMP=$tmp/dumps/sentinel-%e.%p.prof")
extra_dump_path=
strict_lines=1
[ "${COMPARE_DEFAULT_LOG:-0}" = 1 ] && strict_lines=0
if [ -n "${COMPARE_ENV:-}" ]; then
  read -r -a extra <<<"$COMPARE_ENV"
  for kv in "${extra[@]}"; do
    case $kv in
      SENTINEL_DUMP=*) extra_dump_path=${kv#SENTINEL_DUMP=} ;;
      SENTINEL_LOG=*) strict_lines=0 ;;
    esac
  done
fi
if [ $strict_lines = 1 ]; then
  penv+=(SENTINEL_LOG=error)
fi
if [ -n "${COMPARE_ENV:-}" ]; then
  penv+=("${extra[@]}")
fi

signame() {
  local st=$1
  if [ "$st" -eq 124 ]; then
    echo "$st (timed out after ${timeout_s}s)"
  elif [ "$st" -gt 128 ] && [ "$st" -lt 160 ]; then
    echo "$st (signal SIG$(kill -l $((st - 128)) 2>/dev/null || echo $((st - 128))))"
  else
    echo "$st"
  fi
}

fail=0
problem() {
  echo "FAIL: $*"
  fail=1
}

# Plain run: nothing of ours in the environment.
(cd "$tmp/plain" && exec env "${unset_args[@]}" \
  timeout -k 5 "$timeout_s" "$@" >"$tmp/plain.out" 2>"$tmp/plain.err" </dev/null)
st_plain=$?
# Preloaded run.
# (timeout itself must not run under the library: the variables are set by the inner env.)
(cd "$tmp/preload" && exec env "${unset_args[@]}" \
  timeout -k 5 "$timeout_s" env "${penv[@]}" "$@" >"$tmp/preload.out" 2>"$tmp/preload.err" </dev/null)
st_pre=$?

echo "program:   $*"
echo "preloaded: ${penv[*]}"
echo "status:    plain $(signame $st_plain), preloaded $(signame $st_pre)"

grep -a '^sentinel:' "$tmp/preload.err" >"$tmp/sentinel.lines"
grep -av '^sentinel:' "$tmp/preload.err" >"$tmp/preload.err.filtered"
nlines=$(wc -l <"$tmp/sentinel.lines")
if [ "$nlines" -gt 0 ]; then
  echo "runtime messages ($nlines):"
  sed 's/^/  | /' "$tmp/sentinel.lines" | head -40
fi

if [ "$st_plain" != "$expect_status" ]; then
  problem "plain run ended with $(signame $st_plain), expected $expect_status (the test itself is broken here)"
  echo "--- plain stdout (tail)"; tail -20 "$tmp/plain.out"
  echo "--- plain stderr (tail)"; tail -20 "$tmp/plain.err"
fi
if [ "$st_pre" != "$st_plain" ]; then
  problem "exit status differs: plain $(signame $st_plain), preloaded $(signame $st_pre)"
fi

if ! cmp -s "$tmp/plain.out" "$tmp/preload.out"; then
  problem "stdout differs (plain $(wc -l <"$tmp/plain.out") lines, preloaded $(wc -l <"$tmp/preload.out") lines)"
  diff -u --label plain --label preloaded "$tmp/plain.out" "$tmp/preload.out" | head -80
fi

if [ "${COMPARE_STDERR:-1}" != 0 ] && ! cmp -s "$tmp/plain.err" "$tmp/preload.err.filtered"; then
  problem "stderr differs (runtime lines removed)"
  diff -u --label plain --label preloaded "$tmp/plain.err" "$tmp/preload.err.filtered" | head -60
fi

# Runtime messages.
if [ -n "${EXPECT_SENTINEL:-}" ]; then
  if ! grep -aqiE -- "$EXPECT_SENTINEL" "$tmp/sentinel.lines"; then
    problem "expected a 'sentinel:' line matching /$EXPECT_SENTINEL/ in the preloaded stderr, none found"
  fi
  grep -aviE -- "$EXPECT_SENTINEL" "$tmp/sentinel.lines" >"$tmp/sentinel.unexpected"
else
  cp "$tmp/sentinel.lines" "$tmp/sentinel.unexpected"
fi
if [ -s "$tmp/sentinel.unexpected" ]; then
  if [ $strict_lines = 1 ]; then
    problem "unexpected runtime message(s) at error level (SENTINEL_LOG=error) in the preloaded stderr:"
    head -10 "$tmp/sentinel.unexpected" | sed 's/^/  | /'
  else
    echo "note: runtime message(s) not matched by EXPECT_SENTINEL (tolerated at this log level):"
    head -10 "$tmp/sentinel.unexpected" | sed 's/^/  | /'
  fi
fi
if [ -n "${EXPECT_SENTINEL_LINES:-}" ] && [ "$nlines" != "$EXPECT_SENTINEL_LINES" ]; then
  problem "expected exactly $EXPECT_SENTINEL_LINES 'sentinel:' line(s) in the preloaded stderr, found $nlines"
fi

# Dumps.
shopt -s nullglob
dumps=("$tmp"/dumps/*)
echo "dumps:     ${#dumps[@]}$( [ ${#dumps[@]} -gt 0 ] && printf ' (%s)' "$(cd "$tmp/dumps" && ls | tr '\n' ' ')")"
if [ "${EXPECT_DUMP:-0}" = 1 ] && [ ${#dumps[@]} -eq 0 ]; then
  problem "expected a dump in $tmp/dumps, none written"
fi
if [ -n "${EXPECT_DUMP_COUNT:-}" ] && [ ${#dumps[@]} != "$EXPECT_DUMP_COUNT" ]; then
  problem "expected exactly $EXPECT_DUMP_COUNT dump(s), found ${#dumps[@]}"
fi
if [ -n "${EXPECT_DUMP_NAME:-}" ] && ! (cd "$tmp/dumps" && ls) | grep -qE -- "$EXPECT_DUMP_NAME"; then
  problem "expected a dump whose name matches /$EXPECT_DUMP_NAME/"
fi
for d in "${dumps[@]}"; do
  magic=$(head -c 8 "$d" 2>/dev/null)
  if [ "$magic" != SNTLDUMP ]; then
    problem "dump $(basename "$d") does not start with SNTLDUMP ($(stat -c %s "$d") bytes)"
  fi
done
if [ "${EXPECT_NO_DUMP:-0}" = 1 ]; then
  stray=("$tmp"/dumps/* "$tmp"/preload/*.prof "$tmp"/plain/*.prof)
  if [ ${#stray[@]} -gt 0 ]; then
    problem "expected no dump, found: ${stray[*]}"
  fi
  if [ -n "$extra_dump_path" ] && [ -e "$extra_dump_path" ]; then
    problem "expected no dump, found $extra_dump_path"
  fi
fi
if [ -n "${DUMP_CHECK:-}" ] && [ ${#dumps[@]} -gt 0 ]; then
  read -r -a check <<<"$DUMP_CHECK"
  for d in "${dumps[@]}"; do
    echo "dump check: ${check[*]} $(basename "$d")"
    "${check[@]}" "$d" >"$tmp/check.out" 2>&1
    cst=$?
    sed 's/^/  | /' "$tmp/check.out"
    if [ $cst != 0 ]; then
      problem "dump check exited $cst on $(basename "$d")"
    fi
  done
fi

if [ $fail != 0 ]; then
  echo "--- preloaded stderr (tail)"
  tail -30 "$tmp/preload.err"
  exit 1
fi
echo "OK: $(wc -l <"$tmp/plain.out") stdout lines identical"
exit 0
