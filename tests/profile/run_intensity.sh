#!/usr/bin/env bash
# Profiling in passes (SENTINEL_PROFILE_PASSES): the weight re-read throughout an interval has a higher
# access intensity (sentinel_touch.passes_x256) than the one read once in it; without passes every touch
# says "not profiled in passes" (0). The program's output is the same under the library. sentinel-view plan
# reports the access-weighted share of a profile with passes, and --no-intensity plans it by touched bytes.
# Passes that cost (the hot weight re-read in a scattered order, a fixed amount of work, so every pass
# re-faults each page and lengthens the step) are throttled by SENTINEL_PROFILE_PASS_COST: at the default
# the period doubles and the passes fault far less than without a limit, and the hot weight still has the
# higher intensity.
set -euo pipefail
loop=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
plain=$("$loop")
# 4 is the default of SENTINEL_PROFILE_PASSES: that run leaves it unset.
for passes in 1 4; do
  setting=(SENTINEL_PROFILE_PASSES=$passes)
  [[ $passes == 4 ]] && setting=(-u SENTINEL_PROFILE_PASSES)
  out=$(env "${setting[@]}" SENTINEL_MODE=profile SENTINEL_INTERVALS=4 \
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

# SENTINEL_PROFILE_PASS_COST: unlimited (100000) against the default (100), the scattered re-reads. The
# plain run measures how many re-reads fit in 30 ms; both runs under the library do that many.
plain=$("$loop" scattered 2>"$dir/calibration")
rereads=$(sed -n 's/^rereads \([0-9]*\)$/\1/p' "$dir/calibration")
[[ -n "$rereads" ]] || { echo "scattered: no re-read count from the plain run"; exit 1; }
for cost in 100000 default; do
  setting=(SENTINEL_PROFILE_PASS_COST=$cost)
  [[ $cost == default ]] && setting=(-u SENTINEL_PROFILE_PASS_COST)
  out=$(env "${setting[@]}" SENTINEL_MODE=profile SENTINEL_INTERVALS=4 SENTINEL_LOG=info \
        SENTINEL_DUMP="$dir/cost-$cost.prof" LD_PRELOAD="$SENTINEL_LIB" "$loop" scattered "$rereads" \
        2>"$dir/cost-$cost.log")
  [[ "$out" == "$plain" ]] || { echo "scattered: output differs under the library: '$out' vs '$plain'"; exit 1; }
  "$SENTINEL_VIEW" records "$dir/cost-$cost.prof" > "$dir/cost-$cost.json"
done
log=$(cat "$dir/cost-default.log")
grep -q 'their period doubled [0-9]* time(s) to keep them within 100% of the plain time' <<<"$log" ||
  { echo "scattered at the default cost: no doubling on the profiling line"; echo "$log"; exit 1; }
python3 - "$dir" <<'PY'
import json, statistics, sys
d = sys.argv[1]
def run(cost):
    r = json.load(open(f'{d}/cost-{cost}.json'))
    stats = {s['name']: s['value'] for s in r['STATS']}
    steps = r['STEPS']
    ms = [(steps[i + 1]['start_ns'] - steps[i]['start_ns']) / 1e6 for i in range(len(steps) - 1)]
    profiled = [t for t, s in zip(ms, steps) if s['flags'] & 8]
    plain = statistics.median(t for t, s in zip(ms[-20:], steps[-21:]) if not s['flags'] & 8)
    ids = {i['id']: i['size'] for i in r['IDENTITIES']}
    w = {}
    for t in r['TOUCHES']:
        if ids.get(t['identity']) in (3 << 20, 2 << 20):
            e = w.setdefault(ids[t['identity']], [0, 0])
            e[0] += t['bytes']
            e[1] += t['bytes'] * t['passes_x256'] / 256
    return stats, sum(profiled) / (len(profiled) * plain), {k: v[1] / v[0] for k, v in w.items()}
free, free_ratio, free_w = run('100000')
held, held_ratio, held_w = run('default')
print(f"scattered re-reads: pass faults {free['profile_pass_faults']} unlimited, {held['profile_pass_faults']} at "
      f"the default (doubled {held['profile_pass_slowdowns']} times); profiled step {free_ratio:.2f}x and "
      f"{held_ratio:.2f}x a plain one; hot/cold weight passes {free_w[3 << 20]:.1f}/{free_w[2 << 20]:.1f} and "
      f"{held_w[3 << 20]:.1f}/{held_w[2 << 20]:.1f}")
assert free['profile_pass_slowdowns'] == 0, free
assert held['profile_pass_slowdowns'] >= 1, held
assert held['profile_pass_faults'] * 2 < free['profile_pass_faults'], (held, free)
assert held_w[3 << 20] >= 2 * held_w[2 << 20], held_w
PY
