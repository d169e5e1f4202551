#!/usr/bin/env bash
# Profiling in passes (SENTINEL_PROFILE_PASSES): the weight re-read throughout an interval has a higher
# access intensity (sentinel_touch.passes_x256) than the one read once in it; without passes every touch
# says "not profiled in passes" (0). The program's output is the same under the library. sentinel-view plan
# reports the access-weighted share of a profile with passes, and --no-intensity plans it by touched bytes.
set -euo pipefail
loop=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
plain=$("$loop")
for passes in 1 4; do
  out=$(SENTINEL_MODE=profile SENTINEL_INTERVALS=4 SENTINEL_PROFILE_PASSES=$passes \
        SENTINEL_DUMP="$dir/intensity-$passes.prof" LD_PRELOAD="$SENTINEL_LIB" "$loop")
  [[ "$out" == "$plain" ]] || { echo "output differs under the library: '$out' vs '$plain'"; exit 1; }
  "$SENTINEL_VIEW" records "$dir/intensity-$passes.prof" > "$dir/records-$passes.json"
done
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
def weights(passes):
    r = json.load(open(f'{d}/records-{passes}.json'))
    ids = {i['id']: i['size'] for i in r['IDENTITIES']}
    per = {}  # size -> [bytes, bytes x passes_x256] over the touches of the interval that reads both
    touches = [t for t in r['TOUCHES'] if ids.get(t['identity']) in (3 << 20, 2 << 20)]
    assert touches, f'passes={passes}: no touch of the two weights'
    for t in touches:
        s = per.setdefault(ids[t['identity']], [0, 0, set()])
        s[0] += t['bytes']
        s[1] += t['bytes'] * t['passes_x256']
        s[2].add(t['passes_x256'])
    return per
off = weights(1)
for size, (b, w, seen) in off.items():
    assert seen == {0}, f'without passes: passes_x256 {sorted(seen)} for the {size >> 20} MiB weight'
on = weights(4)
hot, cold = on[3 << 20][1] / on[3 << 20][0] / 256, on[2 << 20][1] / on[2 << 20][0] / 256
print(f'access intensity: hot weight {hot:.2f} passes, cold weight {cold:.2f}')
assert hot >= 3, f'the weight re-read for 30 ms has {hot:.2f} passes (expected 3 or more)'
assert cold <= 2 and hot >= 2 * cold, f'the weight read once has {cold:.2f} passes against {hot:.2f}'
PY
# Outputs are read whole before grep: with pipefail, grep -q ending early fails the pipeline (SIGPIPE).
summary_on=$("$SENTINEL_VIEW" summary "$dir/intensity-4.prof")
summary_off=$("$SENTINEL_VIEW" summary "$dir/intensity-1.prof")
grep -q 'access intensity [0-9.]* passes a touched byte' <<<"$summary_on" ||
  { echo "summary: no access intensity on the profile line"; exit 1; }
if grep -q 'access intensity' <<<"$summary_off"; then
  echo "summary of a profile without passes: an access intensity"; exit 1
fi
plan_on=$("$SENTINEL_VIEW" plan --fast-bytes 4M "$dir/intensity-4.prof")
plan_flat=$("$SENTINEL_VIEW" plan --fast-bytes 4M --no-intensity "$dir/intensity-4.prof")
plan_off=$("$SENTINEL_VIEW" plan --fast-bytes 4M "$dir/intensity-1.prof")
grep -q '^access intensity ' <<<"$plan_on" || { echo "plan: no access intensity line"; exit 1; }
if grep -q '^access intensity ' <<<"$plan_flat"; then
  echo "plan --no-intensity: an access intensity line"; exit 1
fi
if grep -q '^access intensity ' <<<"$plan_off"; then
  echo "plan of a profile without passes: an access intensity line"; exit 1
fi
python3 - "$dir" "$SENTINEL_VIEW" <<'PY'
import json, subprocess, sys
d, view = sys.argv[1], sys.argv[2]
def plan(*args):
    return json.loads(subprocess.run([view, 'plan', '--json', '--fast-bytes', '4M', *args], check=True,
                                     capture_output=True, text=True).stdout)
on, off = plan(f'{d}/intensity-4.prof'), plan('--no-intensity', f'{d}/intensity-4.prof')
assert on['intensity'] and not off['intensity'], (on['intensity'], off['intensity'])
assert on['weighted_bytes_per_step'] > on['touched_bytes_per_step'], on
assert off['weighted_bytes_per_step'] == off['touched_bytes_per_step'], off
print(f"plan: {on['predicted_weighted_hit_ppm'] / 1e4:.1f}% of the access-weighted bytes fast with intensity, "
      f"{off['predicted_weighted_hit_ppm'] / 1e4:.1f}% of the touched ones without")
PY
