#!/usr/bin/env bash
# Runs the synthetic loop plainly and under profiling (every granularity must give the exact pattern
# at 64 KiB-multiple sizes), compares the program's output, and checks the profile.
set -euo pipefail
loop=$1 check=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
plain=$("$loop")
for g in 4K 8K 64K; do
  out=$(SENTINEL_MODE=profile SENTINEL_INTERVALS=16 SENTINEL_PROFILE_GRANULARITY=$g \
        SENTINEL_DUMP="$dir/synthetic-$g.prof" LD_PRELOAD="$SENTINEL_LIB" "$loop")
  [[ "$out" == "$plain" ]] || { echo "output differs under the library: '$out' vs '$plain'"; exit 1; }
  "$check" "$dir/synthetic-$g.prof"
done
