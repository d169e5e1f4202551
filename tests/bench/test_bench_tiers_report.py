#!/usr/bin/python3
"""scripts/bench-tiers' budget sweep (sweep()) on hand-built summaries: the reference it picks, the budget each
policy needs, when Sentinel counts as slower than first-touch or the slow node, and the penalty removed."""
import importlib.machinery
import importlib.util
import os
import sys

sys.dont_write_bytecode = True
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
loader = importlib.machinery.SourceFileLoader('bench_tiers', os.path.join(REPO, 'scripts', 'bench-tiers'))
spec = importlib.util.spec_from_loader('bench_tiers', loader)
bt = importlib.util.module_from_spec(spec)
loader.exec_module(bt)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f'FAIL: {what}', file=sys.stderr)


def fig(t_emu, step_spread=0.01, t_wall=None):
    """One configuration's summary entry as summarize() writes it, with the fields sweep() reads."""
    return {'median_t_emu_s': t_emu, 'median_t_hw_s': None, 'median_step_s': t_wall or t_emu * 3,
            'repeat_spread': {'wall': None, 't_emu': None, 't_hw': None},
            'step_spread': {'wall': 0.05, 't_emu': step_spread, 't_hw': None}}


def model(**times):
    return {name.replace('_', '-'): fig(t) if not isinstance(t, dict) else t for name, t in times.items()}


# dram 1.00, all-fast 0.95 (the reference: faster), all-slow 2.00, slow 2.10.
base = dict(dram=1.00, all_fast=0.95, all_slow=2.00, slow=2.10)
m = model(**base,
          sentinel_10=1.30, sentinel_20=1.04, sentinel_30=1.02, sentinel_50=0.96,
          first_touch_10=1.20, first_touch_20=1.50, first_touch_30=1.30, first_touch_50=1.00,
          interleave_10=1.80, interleave_20=1.70, interleave_30=1.60, interleave_50=1.40)
lines, doc = bt.sweep({'net': m}, ['net'])
d = doc['net']['T_emu']
check(d['reference'] == 'all-fast', f'the reference is all-fast: {d["reference"]}')
check(d['policies']['sentinel']['needs_percent'] == 20, f'sentinel needs 20%: {d["policies"]["sentinel"]}')
check(d['policies']['first-touch']['needs_percent'] == 50, 'first-touch needs 50% (30% is 1.37x)')
check(d['policies']['interleave']['needs_percent'] == 100, 'interleave is within at no budget run: 100%')
check(d['sentinel_needs_least'], 'sentinel needs the least')
check(len(d['sentinel_slower']) == 1 and d['sentinel_slower'][0].startswith('10%: '),
      f'sentinel-10 is slower than first-touch-10 beyond 1%: {d["sentinel_slower"]}')
check(d['penalty_slow_end'] == 'all-slow', 'the penalty is taken from all-slow, like for like')
check(abs(d['penalty_removed_20']['sentinel'] - (2.00 - 1.04) / (2.00 - 0.95)) < 1e-9, 'sentinel penalty removed')
check(any('MISSED at 10%' in ln for ln in lines), f'the text names the miss: {lines}')
check('wall' not in doc['net'], 'wall time is not judged where there are counts')

# A dram faster than all-fast: the reference stays all-fast (like for like), dram's ratio beside it.
m5 = dict(m, dram=fig(0.90))
lines, doc = bt.sweep({'net': m5}, ['net'])
check(doc['net']['T_emu']['reference'] == 'all-fast' and 'against all-fast 950.0 ms, dram 0.95x' in lines[0],
      f'all-fast is the reference even where dram is faster: {lines[:1]}')

# Within the spread: sentinel-10 1.30 against first-touch-10 1.20 with 10% spread is no miss.
m['first-touch-10'] = fig(1.20, step_spread=0.10)
_, doc = bt.sweep({'net': m}, ['net'])
check(doc['net']['T_emu']['sentinel_slower'] == [], 'a difference inside the spread is not a miss')

# A budget that comes back out of 1.10x after one within: needs the budget from which it stays within.
m2 = model(**base, sentinel_10=1.00, sentinel_20=1.20, sentinel_30=1.03, sentinel_50=0.96)
_, doc = bt.sweep({'net': m2}, ['net'])
check(doc['net']['T_emu']['policies']['sentinel']['needs_percent'] == 30, 'needs: from 30% on, not 10%')

# Without all-slow the penalty is taken from slow; without sentinel runs there is no sweep.
m3 = model(dram=1.0, slow=2.0, sentinel_20=1.5)
_, doc = bt.sweep({'net': m3}, ['net'])
check(doc['net']['T_emu']['penalty_slow_end'] == 'slow', 'slow stands in for all-slow')
check(abs(doc['net']['T_emu']['penalty_removed_20']['sentinel'] - 0.5) < 1e-9, 'penalty 0.5 against dram')
lines, doc = bt.sweep({'net': model(dram=1.0, slow=2.0, first_touch_20=1.5)}, ['net'])
check(lines == [] and doc == {}, 'no sentinel configuration: no sweep')

# No counts: judged in wall time.
m4 = {k: dict(v, median_t_emu_s=None) for k, v in m3.items()}
_, doc = bt.sweep({'net': m4}, ['net'])
check(list(doc['net']) == ['wall'], f'wall time where there are no counts: {list(doc["net"])}')

# The planner's modeled sweep (sentinel-view whatif on sentinel-20's dump) beside the measured one.
whatif = {'slow_ns_per_kib': 300, 'move_ns_per_kib': 900, 'all_fast_step_ns': 100, 'all_slow_step_ns': 150,
          'needs_percent': {'sentinel': 20, 'first-touch': None},
          'budgets': [{'percent': b, 'policies': {'sentinel': {'ratio': r}, 'first-touch': {'ratio': 1.3}}}
                      for b, r in ((10, 1.2), (20, 1.05), (100, 1.0))]}
raw = [{'config': 'sentinel-20', 'dump': {'models': {'net': {'whatif': whatif, 'whatif_fitted': None}}}}]
lines, doc = bt.sweep({'net': m}, ['net'], raw)
mod = [ln for ln in lines if 'modeled from' in ln]
check(len(mod) == 1 and 'planned costs, 300 ns/KiB slow, 900 moved' in mod[0]
      and f'sentinel 10% 1.20x ({1.30 * 3 / (0.95 * 3):.2f}x) 20% 1.05x ({1.04 / 0.95:.2f}x) -> needs 20%' in mod[0]
      and 'first-touch 10% 1.30x' in mod[0] and '-> needs >50%' in mod[0] and mod[0].endswith(f'all-slow 1.50x ({2.00 / 0.95:.2f}x)'),
      f'the modeled line, measured ratios in brackets: {mod}')
check(doc['net']['modeled'][0]['whatif'] is whatif, 'the modeled sweep in the JSON')

# The model priced on the measure itself (whatif --calibrate, given all-fast's and all-slow's figures) and judged
# against it: within 10% counts, beyond it is named; all-fast and all-slow are the calibration, not judged.
asked = []


def calibrate(key, fast_s, slow_s):
    asked.append((key, fast_s, slow_s))
    return {'clock': {'slow_ns_per_kib': 40, 'move_ns_per_kib': 120},
            'budgets': [{'percent': b, 'policies': {'sentinel': {'ratio': r}, 'first-touch': {'ratio': 1.9},
                                                    'hot': {'ratio': 3.0}}}
                        for b, r in ((10, 1.30 * 1.08 / 0.95), (20, 1.04 * 1.2 / 0.95), (100, 1.0))]}


lines, doc = bt.sweep({'net': m}, ['net'], [], calibrate)
on = [ln for ln in lines if 'modeled on T_emu' in ln]
judged = doc['net']['T_emu'].get('model') or {}
check(asked == [('net', 0.95, 2.00)], f'calibrated by all-fast and all-slow of the measure: {asked}')
check(judged.get('judged') == 4 and judged.get('within') == 1, f'4 judged (sentinel and first-touch at 10 and 20%), 1 within: {judged}')
check(abs(judged['errors']['sentinel-10'] - 0.08) < 1e-9 and abs(judged['errors']['sentinel-20'] - 0.2) < 1e-9,
      f'the error is modeled / measured - 1: {judged.get("errors")}')
check(len(on) == 1 and 'sentinel 10% 1.48x (1.37x, +8%)' in on[0] and '40 ns/KiB slow, 120 moved' in on[0]
      and 'within 10%: 1 of 4 (MISSED: first-touch-10 +50%, sentinel-20 +20%, first-touch-20 +20%)' in on[0] and 'hot' not in on[0],
      f'the calibrated line names what it misses: {on}')
# No all-slow in the measure (nothing to calibrate by), or no calibration asked: no such line.
asked.clear()
lines, doc = bt.sweep({'net': m3}, ['net'], [], calibrate)
check(asked == [] and not any('modeled on' in ln for ln in lines), 'without all-slow and all-fast: not calibrated')
lines, _ = bt.sweep({'net': m}, ['net'], [], lambda *a: None)
check(not any('modeled on' in ln for ln in lines), 'no whatif: no line')

print(f'{len(failures)} failure(s)')
sys.exit(1 if failures else 0)
