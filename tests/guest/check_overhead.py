#!/usr/bin/python3
"""Sentinel's own cost in emulated time: a model trained plainly and under Sentinel's all-fast policy, in one
guest, compared in T_emu (docs/guest.md, "Counts, the marker and emulated time").

usage: check_overhead.py --mark-lib LIB [--model mlp] [--size 0.5] [--steps 28] [--measure 8]
                         [--max-ratio 1.03] [--policy all-fast] [--on emu|work]

Runs in the guest with the slow-tier plugin loaded (scripts/guest/run sets $GUEST_COUNTS; `--slow-tier none
--counts FILE` is enough, and SENTINEL_GUEST_PLUGIN_ARGS=mem=0 makes it several times faster: all-fast and
the plain run keep everything on node 0, so without memory callbacks T_emu loses only node-1 charges that
neither has). Trains --model twice with scripts/bench_tiers_worker.py, each step marked: without the
library, then with LD_PRELOAD=$SENTINEL_PRELOAD SENTINEL_MODE=run SENTINEL_POLICY=--policy
SENTINEL_MIN_BYTES=16K. Compares the median T_emu of the last --measure steps (after Sentinel's warm-up): by
default the busiest vCPU's (the step's elapsed time), with --on work the machine's work summed over vCPUs,
which also charges Sentinel's own threads on the other vCPU; prints both and wall time. Exit 0 when the
ratio is at most --max-ratio, 1 when not, 77 without the plugin or the library.
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
    """One training process: {'emu', 'work', 'wall'}, each a list over its last --measure steps, in s (emu:
    None for a step in which the training thread moved between vCPUs, or left the busiest one and came
    back)."""
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
    got = {'emu': [], 'work': [], 'wall': [], 'share': []}
    for i in range(args.steps - args.measure, args.steps):
        b, e = mine[first + 2 * i], mine[first + 2 * i + 1]
        if (b['tag'], e['tag']) != (emutime.MARK_BEGIN, emutime.MARK_END):
            raise RuntimeError(f'{name}: step {i}: markers {b["mark"]}, {e["mark"]} have tags {b["tag"]}, {e["tag"]}')
        s = emutime.summary(e, header, emutime.ns_per_insn_for(args.model), begin=b)
        got['emu'].append(s['t_emu_s'])
        got['share'].append(s['user_share_busiest'])
        got['work'].append(s['t_work_s'])
        got['wall'].append(rec['step_s'][i])
    # as scripts/bench-tiers: a step whose thread left the busiest vCPU and came back is left out too
    shares = [v for v in got['share'] if v is not None]
    if shares:
        low = statistics.median(shares) - 0.1
        got['emu'] = [e if sh is not None and sh >= low else None for e, sh in zip(got['emu'], got['share'])]
    return got


def med(values):
    v = [x for x in values if x is not None]
    return statistics.median(v) if v else float('nan')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--mark-lib', required=True)
    ap.add_argument('--model', default='mlp')
    ap.add_argument('--size', default='0.5')
    ap.add_argument('--steps', type=int, default=28)
    ap.add_argument('--measure', type=int, default=8)
    ap.add_argument('--max-ratio', type=float, default=1.03)
    ap.add_argument('--policy', default='all-fast')
    ap.add_argument('--on', choices=('emu', 'work'), default='emu', help='the measure the bound applies to')
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
    for k, got in (('plain', plain), (args.policy, under)):
        moved = sum(x is None for x in got['emu'])
        print(f'{k:10s} T_emu {med(got["emu"]) * 1e3:8.1f} ms ({moved} step(s) moved)   work '
              f'{med(got["work"]) * 1e3:8.1f} ms   wall {med(got["wall"]) * 1e3:8.0f} ms')
    ratio = {m: med(under[m]) / med(plain[m]) for m in ('emu', 'work', 'wall')}
    ok = ratio[args.on] <= args.max_ratio
    print(f'check_overhead: {args.policy} / plain: T_emu {ratio["emu"]:.4f}, work {ratio["work"]:.4f}, wall '
          f'{ratio["wall"]:.3f}; bound {args.max_ratio} on {"T_emu" if args.on == "emu" else "work"}: '
          f'{"ok" if ok else "FAIL"}')
    return 0 if ok else 1


if __name__ == '__main__':
    try:
        sys.exit(main())
    except (RuntimeError, OSError, ValueError, KeyError, IndexError, emutime.CountsError) as e:
        print(f'check_overhead: FAIL: {type(e).__name__}: {e}')
        sys.exit(1)
