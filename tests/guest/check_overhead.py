#!/usr/bin/python3
"""Sentinel's own cost in emulated time: a model trained plainly and under Sentinel's all-fast policy, in one
guest, compared in T_emu (docs/guest.md, "Counts, the marker and emulated time").

usage: check_overhead.py --mark-lib LIB [--model mlp] [--size 0.5] [--steps 24] [--measure 6]
                         [--max-ratio 1.03] [--policy all-fast]

Runs in the guest with the slow-tier plugin loaded (scripts/guest/run sets $GUEST_COUNTS; `--slow-tier none
--counts FILE` is enough, and SENTINEL_GUEST_PLUGIN_ARGS=mem=0 makes it several times faster: all-fast and
the plain run keep everything on node 0, so without memory callbacks T_emu loses only node-1 charges that
neither has). Trains --model twice with scripts/bench_tiers_worker.py, each step marked: without the
library, then with LD_PRELOAD=$SENTINEL_PRELOAD SENTINEL_MODE=run SENTINEL_POLICY=--policy
SENTINEL_MIN_BYTES=16K. Compares the median T_emu of the last --measure steps (after Sentinel's warm-up),
the machine's work summed over vCPUs, and prints the busiest vCPU's alone and wall time beside it. Exit 0 when the ratio is at most --max-ratio, 1 when not, 77 without the
plugin or the library.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get('SENTINEL_SOURCE_ROOT', os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, 'scripts', 'guest'))
import emutime  # noqa: E402

WORKER = os.path.join(ROOT, 'scripts', 'bench_tiers_worker.py')


def mark_records(path):
    header, recs = emutime.read(path)
    return header, [r for r in recs if 'mark' in r]


def run_one(name, env_extra, args, tmp):
    """One training process; per-step T_emu, T_emu of the busiest vCPU (None where the training thread moved
    between vCPUs in the step) and wall time, in s, of its last --measure steps."""
    header, before = mark_records(args.counts)
    out = os.path.join(tmp, f'{name}.json')
    env = {k: v for k, v in os.environ.items() if k != 'LD_PRELOAD' and not k.startswith('SENTINEL_')}
    env.update(env_extra)
    cmd = [sys.executable, WORKER, '--out', out, '--models', args.model, '--size', str(args.size),
           '--steps', str(args.steps), '--measure', str(args.measure), '--sample-steps', '0',
           '--min-bytes', str(16 << 10), '--mark-lib', args.mark_lib]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stdout.write(r.stdout + r.stderr)
        raise RuntimeError(f'{name}: the worker exited {r.returncode}')
    rec = json.load(open(out))['models'][args.model]
    _, after = mark_records(args.counts)
    mine = after[len(before):]
    first = rec['mark_first'] - 1
    emu, one, wall = [], [], []
    for i in range(args.steps - args.measure, args.steps):
        b, e = mine[first + 2 * i], mine[first + 2 * i + 1]
        if (b['tag'], e['tag']) != (emutime.MARK_BEGIN, emutime.MARK_END):
            raise RuntimeError(f'{name}: step {i}: markers {b["mark"]}, {e["mark"]} have tags {b["tag"]}, {e["tag"]}')
        s = emutime.summary(e, header, begin=b)
        emu.append(s['t_emu_s'])
        one.append(s['t_emu_1cpu_s'])
        wall.append(rec['step_s'][i])
    return emu, one, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--mark-lib', required=True)
    ap.add_argument('--model', default='mlp')
    ap.add_argument('--size', default='0.5')
    ap.add_argument('--steps', type=int, default=24)
    ap.add_argument('--measure', type=int, default=6)
    ap.add_argument('--max-ratio', type=float, default=1.03)
    ap.add_argument('--policy', default='all-fast')
    args = ap.parse_args()
    args.counts = os.environ.get('GUEST_COUNTS')
    lib = os.environ.get('SENTINEL_PRELOAD')
    if not args.counts or not lib:
        print('check_overhead: SKIP: needs the slow-tier plugin ($GUEST_COUNTS) and $SENTINEL_PRELOAD')
        return 77
    if args.measure < 1 or args.measure > args.steps:
        ap.error('--measure must be between 1 and --steps')
    with tempfile.TemporaryDirectory() as tmp:
        plain = run_one('plain', {}, args, tmp)
        under = run_one(args.policy, {'LD_PRELOAD': lib, 'SENTINEL_MODE': 'run', 'SENTINEL_POLICY': args.policy,
                                      'SENTINEL_MIN_BYTES': str(16 << 10), 'SENTINEL_DUMP': 'none'}, args, tmp)
    def med(v):
        v = [x for x in v if x is not None]
        return statistics.median(v) if v else float('nan')
    runs = {'plain': plain, args.policy: under}
    for k, (emu, one, wall) in runs.items():
        print(f'{k:10s} T_emu {med(emu) * 1e3:9.1f} ms (steps {min(emu) * 1e3:.1f}-{max(emu) * 1e3:.1f}); '
              f'busiest vCPU {med(one) * 1e3:9.1f} ms; wall {med(wall) * 1e3:8.0f} ms')
    ratio = med(under[0]) / med(plain[0])
    one_ratio = med(under[1]) / med(plain[1])
    wall_ratio = med(under[2]) / med(plain[2])
    ok = ratio <= args.max_ratio
    print(f'check_overhead: {args.policy} / plain = {ratio:.4f} in T_emu (the busiest vCPU alone {one_ratio:.4f}; '
          f'wall {wall_ratio:.3f}); bound {args.max_ratio} on T_emu: {"ok" if ok else "FAIL"}')
    return 0 if ok else 1


if __name__ == '__main__':
    try:
        sys.exit(main())
    except (RuntimeError, OSError, ValueError, KeyError, IndexError, emutime.CountsError) as e:
        print(f'check_overhead: FAIL: {type(e).__name__}: {e}')
        sys.exit(1)
