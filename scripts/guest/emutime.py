#!/usr/bin/python3
"""Emulated time from the slow-tier plugin's marker records (docs/guest.md, "Counts, the marker and emulated
time").

usage: scripts/guest/emutime.py COUNTS.jsonl [--tags BEGIN,END] [--ns-per-insn NS] [--json]

The plugin (tests/guest/plugin/slow_tier.c, with counts=PATH; scripts/guest/run --counts FILE) writes one
JSON line per marker a guest program executes: the instructions (user, kernel) and line misses per node
(read, stream, write) of the whole machine since the previous marker, each vCPU's, and each vCPU thread's
host CPU time. This module reads them and turns counts into time, per vCPU:

    t = instructions x NS_PER_INSN + sum over kinds of node-1 misses x the preset's delay of that kind
        (+ node-0 misses x FAST_NS, 0 by default)

a model fed by exact counts: the guest's time with the emulation's speed, which depends on the host,
replaced by a constant per workload (NS_PER_INSN_BY_WORKLOAD: the host CPU time one guest instruction of
that code costs the emulation), and the slow node's busy-waits, which the plugin pays per miss, taken as
charged. Of an interval between two markers: T_emu, the busiest vCPU's t (the interval's elapsed time, what
runs on the other vCPUs overlapping it; none when the marking thread moved between vCPUs), and work, the
sum over vCPUs. Without --tags it prints every record; with --tags it pairs each BEGIN record with the END
record that follows and prints one line per interval (bench_tiers_worker.py marks its steps with 1 and 2).
"""
import argparse
import json
import statistics
import sys

# ns of emulation per guest instruction (user and kernel alike). What an instruction costs TCG depends on the
# code: a scalar loop ~2 ns of host CPU, the e2e models' steps 11-65 (vector instructions run as helpers).
# So a workload gets its own constant, measured once: the median host CPU time per instruction of the vCPU
# thread that ran its dram steps, busy-waits excluded (scripts/bench-tiers reports it as "CPU ns per
# instruction"), in the run of docs/performance.md, "Emulated time". NS_PER_INSN is for anything else.
# Measured 2026-12-02 (scripts/bench-tiers --configs dram,slow --models mlp,transformer,cnn,lstm --steps 16,
# sizes mlp 0.5, transformer 0.375, cnn 0.5, lstm 0.5): 11.5, 15.55, 64.35, 14.48.
# The models where memory matters (e2e_models.BENCH_MODELS), measured 2026-12-03 the same way (--configs dram,slow
# --models gpt-adamw@0.5,dlrm@0.25,cnn-act@0.5 --steps 24): 11.13, 12.13, 72.55.
# Measured 2026-12-06 the same way: cnn-deep 24.4 (--configs dram,... --models cnn-deep@0.125 --steps 32), cnn-wide
# 37.8 (under all-fast, no dram run: --configs all-fast,all-slow --models cnn-wide@1 --steps 16).
NS_PER_INSN_BY_WORKLOAD = {'mlp': 11.5, 'transformer': 15.5, 'cnn': 64.0, 'lstm': 14.5,
                           'gpt-adamw': 11.1, 'dlrm': 12.1, 'cnn-act': 72.5, 'cnn-deep': 24.4, 'cnn-wide': 37.8}
NS_PER_INSN = 15.0


def ns_per_insn_for(workload):
    """The constant for a workload (a model name of scripts/bench-tiers, MODEL@SIZE allowed), else NS_PER_INSN."""
    return NS_PER_INSN_BY_WORKLOAD.get(str(workload).partition('@')[0], NS_PER_INSN)
# Node 0's misses cost nothing extra in the emulator: TCG models no cache, so a node-0 miss is one more
# access, which NS_PER_INSN covers. (Set for a model of a real memory system; docs/guest.md.)
FAST_NS = (0.0, 0.0, 0.0)
KINDS = ('read', 'stream', 'write')
MARK_BEGIN, MARK_END = 1, 2

# T_hw, a model of real hardware fed by the same counts (docs/guest.md, "A model of real hardware"): what the
# step would take on the platform of docs/data/tier-models.json (a Xeon 8260 core, DDR4 and Optane PMM; a
# CXL expander for the cxl preset), where T_emu weighs every instruction at the emulator's cost. Needs node
# 0's misses (the plugin's fast0 counting, bench-tiers --count-fast).
# - An instruction: 0.25 ns, 3 GHz at 1.33 instructions a cycle. The guest's code is TCG's x86 without
#   AVX-512, so its instructions do less than a real core's would; a core that runs them faster would only
#   make memory weigh more.
# - A line miss, per kind (read: not the next line after the previous miss; stream: the next line; write: a
#   store to a line not yet stored to), ns: one core keeps 10 line fills in flight (Skylake's fill buffers),
#   so a read costs the latency over 10, random for read, sequential for stream; a write is a read for
#   ownership plus the write back, twice a stream. Node 1's reads cost the preset's target latency ratio,
#   its streams the read bandwidth ratio and its writes the write bandwidth ratio (docs/guest.md, Presets;
#   optane 3.0, 2.8, 4.5 (within 3.1-7.7, near the measured 4.7-6.1); cxl 1.8 for all three).
# - The plugin's 512-line buffer per vCPU (32 KiB) stands for the whole cache hierarchy: a scaled machine
#   for scaled models (the bench models' 10-50 MiB footprints against a real LLC of tens of MiB).
HW_NS_PER_INSN = 0.25
HW_FAST_NS = (101.5 / 10, 81.4 / 10, 2 * 81.4 / 10)  # DDR4 random and sequential read latency (tier-models.json)
HW_SLOW_RATIO = {'optane': (3.0, 2.8, 4.5), 'cxl': (1.8, 1.8, 1.8)}
# The presets by the delays the counts' header holds (read, stream, write; scripts/guest/machine.sh,
# slow_tier_delays).
PRESET_BY_DELAYS = {(300, 170, 450): 'optane', (170, 40, 100): 'cxl'}
PRESET_DELAYS = {preset: delays for delays, preset in PRESET_BY_DELAYS.items()}


class CountsError(Exception):
    pass


def read(path):
    """(header, records) of a counts file; records in file order, the "end" record last when present."""
    header, records = None, []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                doc = json.loads(line)
            except ValueError as e:
                raise CountsError(f'{path}:{n}: not JSON ({e})')
            if 'slow_tier' in doc:
                header = doc
            else:
                records.append(doc)
    if header is None:
        raise CountsError(f'{path}: no header line (is it a slow-tier counts file?)')
    return header, records


def slow_ns(header):
    """The preset's delays per node-1 line miss: (read, stream, write), from the file's header."""
    return (header['read_ns'], header['stream_ns'], header['write_ns'])


def instructions(rec):
    return rec['insn'][0] + rec['insn'][1]


def charged_ns(rec, header):
    """What the plugin busy-waited for node 1's misses in this record (exact, from the counts)."""
    return sum(m * c for m, c in zip(rec['n1'], slow_ns(header)))


def priced_ns(counts, ns_per_insn, fast_ns, slow):
    """Counts in the plugin's per-vCPU layout (user and kernel instructions, node 0's read, stream and write
    misses, node 1's) priced: an instruction at ns_per_insn, each node's misses at its cost per kind."""
    return ((counts[0] + counts[1]) * ns_per_insn + sum(m * c for m, c in zip(counts[2:5], fast_ns))
            + sum(m * c for m, c in zip(counts[5:8], slow)))


def t_work_ns(rec, header, ns_per_insn=NS_PER_INSN, fast_ns=FAST_NS):
    """The model over one record's counts summed over vCPUs: the machine's work in the interval."""
    return priced_ns(rec['insn'] + rec['n0'] + rec['n1'], ns_per_insn, fast_ns, slow_ns(header))


def t_vcpus_ns(rec, header, ns_per_insn=NS_PER_INSN, fast_ns=FAST_NS):
    """The model over each vCPU's counts (a list)."""
    slow = slow_ns(header)
    return [priced_ns(v, ns_per_insn, fast_ns, slow) for v in rec.get('vcpus', [])]


def hw_slow_ns(header):
    """T_hw's cost per node-1 line miss (read, stream, write) for the counts' preset; None for a preset the
    model has no ratios for (custom delays)."""
    return hw_slow_ns_of(slow_ns(header))


def hw_slow_ns_of(delays):
    """hw_slow_ns for the preset of these node-1 delays (read, stream, write)."""
    ratio = HW_SLOW_RATIO.get(PRESET_BY_DELAYS.get(tuple(delays)))
    return None if ratio is None else tuple(f * r for f, r in zip(HW_FAST_NS, ratio))


def t_hw_vcpu_ns(rec, header, i):
    """T_hw of vCPU i's counts in the record: None unless node 0 was counted and the preset is known."""
    slow = hw_slow_ns(header)
    if i is None or slow is None or not rec.get('fast0') or 'vcpus' not in rec:
        return None
    return priced_ns(rec['vcpus'][i], HW_NS_PER_INSN, HW_FAST_NS, slow)


# SENTINEL_TRIAL_CLOCK=emulated (docs/tiering.md, "The step-time trial"): the runtime times its step-time
# trial by these counts, priced as given, so that the model stays here. Its markers' tags are
# RUNTIME_TAG_BASE + (pid & 15).
RUNTIME_TAG_BASE = 0xfe00


def trial_clock_prices(delays, measure='emu', ns_per_insn=NS_PER_INSN):
    """SENTINEL_TRIAL_CLOCK's seven prices, whole ps per count: an instruction, node 0's read, stream and
    write misses, node 1's. `delays`: the preset's node-1 delays (read, stream, write; slow_ns(header), or
    PRESET_DELAYS). measure 'emu': T_emu's (ns_per_insn, FAST_NS, the delays); 'hw': T_hw's (node 0 priced
    too, so the plugin must count its misses; a known preset)."""
    if measure == 'hw':
        slow = hw_slow_ns_of(delays)
        if slow is None:
            raise CountsError(f'T_hw has no ratios for the delays {tuple(delays)} (a custom preset)')
        ns = (HW_NS_PER_INSN, *HW_FAST_NS, *slow)
    elif measure == 'emu':
        ns = (ns_per_insn, *FAST_NS, *delays)
    else:
        raise ValueError(f'unknown measure {measure}')
    return [int(round(x * 1000)) for x in ns]


def trial_clock_value(prices, path):
    """The value of SENTINEL_TRIAL_CLOCK for these prices and the counts file `path`."""
    return 'emulated:' + ','.join(str(p) for p in prices) + ':' + path


def merged(records):
    """One record of the counts of several consecutive ones (the last one's marker, tag, vCPU and times): the
    interval from the marker before the first to the last one's, when other markers fell inside it (the
    runtime's trial clock, RUNTIME_TAG_BASE)."""
    out = dict(records[-1])
    for key in ('insn', 'n0', 'n1', 'cpu_ns'):
        if all(key in r for r in records):
            out[key] = [sum(vals) for vals in zip(*(r[key] for r in records))]
    if all('vcpus' in r for r in records):
        out['vcpus'] = [[sum(vals) for vals in zip(*per)] for per in zip(*(r['vcpus'] for r in records))]
    return out


def runtime_laps(records, prices_ps):
    """What the runtime's emulated clock measured: one lap per marker of the runtime's (tags RUNTIME_TAG_BASE
    to +15), each the busiest vCPU's counts summed over the records since the previous one, priced at
    prices_ps (trial_clock_prices), in ns as the runtime rounds them."""
    laps, since = [], []
    for rec in records:
        since.append(rec)
        if RUNTIME_TAG_BASE <= rec.get('tag', -1) < RUNTIME_TAG_BASE + 16:
            per = merged(since).get('vcpus', [])  # whole ps: priced_ns stays in integers
            laps.append(max((priced_ns(c, prices_ps[0], prices_ps[1:4], prices_ps[4:]) for c in per), default=0) // 1000)
            since = []
    return laps


def busiest(rec, header, begin, ns_per_insn=NS_PER_INSN, fast_ns=FAST_NS):
    """The index of the vCPU with the largest model time in the interval from marker BEGIN to marker REC, or
    None when the two markers ran on different vCPUs (the marking thread moved, its work is split)."""
    if begin is None or begin.get('vcpu') != rec.get('vcpu'):
        return None
    per = t_vcpus_ns(rec, header, ns_per_insn, fast_ns)
    return max(range(len(per)), key=per.__getitem__) if per else None


def t_emu_ns(rec, header, begin, ns_per_insn=NS_PER_INSN, fast_ns=FAST_NS):
    """T_emu of the interval from marker BEGIN to marker REC: the busiest vCPU's, an estimate of the interval's
    elapsed time (what runs on the other vCPUs at the same time overlaps it). None when the two markers ran
    on different vCPUs: the marking thread moved, and its own work is split between them."""
    i = busiest(rec, header, begin, ns_per_insn, fast_ns)
    return None if i is None else t_vcpus_ns(rec, header, ns_per_insn, fast_ns)[i]


def summary(rec, header, ns_per_insn=NS_PER_INSN, begin=None):
    """The figures of one interval (rec: the record of the marker that ends it; begin: the one that starts it)
    that scripts/bench-tiers keeps per step: t_emu_s (the busiest vCPU, t_emu_ns; None where the thread
    moved), t_work_s (summed over vCPUs, t_work_ns), the counts, node 1's charged time, and, when node 0
    was counted, node 0's share of the line misses."""
    n1 = sum(rec['n1'])
    n0 = sum(rec['n0'])
    emu = t_emu_ns(rec, header, begin, ns_per_insn)
    i = busiest(rec, header, begin, ns_per_insn)
    cpu = rec.get('cpu_ns')
    hw = t_hw_vcpu_ns(rec, header, i)
    return {'t_emu_s': None if emu is None else emu / 1e9, 't_work_s': t_work_ns(rec, header, ns_per_insn) / 1e9,
            # T_hw of the same vCPU as T_emu's (the training thread's): None without node 0's counts
            't_hw_s': None if hw is None else hw / 1e9,
            # the host CPU time of the busiest vCPU's thread (emulation and busy-waits, whatever its share of
            # the host), and of all vCPU threads; None from a plugin that did not record it
            'cpu_s': cpu[i] / 1e9 if cpu and i is not None else None, 'cpu_work_s': sum(cpu) / 1e9 if cpu else None,
            'busiest': i, 'insn_busiest': sum(rec['vcpus'][i][:2]) if i is not None and 'vcpus' in rec else None,
            # the busiest vCPU's share of the user instructions: a thread that left the vCPU and came back
            # within the interval shows as a share below its process's usual one
            'user_share_busiest': (rec['vcpus'][i][0] / rec['insn'][0] if i is not None and 'vcpus' in rec
                                   and rec['insn'][0] else None),
            'charged_busiest_s': (sum(m * c for m, c in zip(rec['vcpus'][i][5:8], slow_ns(header))) / 1e9
                                  if i is not None and 'vcpus' in rec else None),
            'vcpu': rec.get('vcpu'), 'moved': None if begin is None else begin.get('vcpu') != rec.get('vcpu'),
            'insn_user': rec['insn'][0], 'insn_kernel': rec['insn'][1], 'n0': rec['n0'], 'n1': rec['n1'],
            'charged_s': charged_ns(rec, header) / 1e9, 'fast0': rec.get('fast0'),
            'fast_miss_share': n0 / (n0 + n1) if rec.get('fast0') and n0 + n1 else None,
            'host_s': None}


def intervals(records, begin=MARK_BEGIN, end=MARK_END):
    """[(begin record, end record)] for each BEGIN marker followed by an END marker (the END record holds the
    interval's counts). Raises CountsError when the tags do not alternate."""
    out, open_rec = [], None
    for rec in records:
        tag = rec.get('tag')
        if tag == begin:
            if open_rec is not None:
                raise CountsError(f'marker {rec["mark"]}: tag {begin} again before tag {end}')
            open_rec = rec
        elif tag == end:
            if open_rec is None:
                raise CountsError(f'marker {rec["mark"]}: tag {end} without tag {begin} before it')
            out.append((open_rec, rec))
            open_rec = None
    return out


def spread(values):
    """median, min, max, and (max - min) / median of a list of numbers (None for an empty list)."""
    if not values:
        return None
    med = statistics.median(values)
    return {'median': med, 'min': min(values), 'max': max(values),
            'range_rel': (max(values) - min(values)) / med if med else None, 'n': len(values)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('counts')
    ap.add_argument('--tags', help='BEGIN,END: one line per interval between the two tags')
    ap.add_argument('--ns-per-insn', type=float, default=NS_PER_INSN,
                    help=f'(default {NS_PER_INSN}; the e2e models: ' +
                    ', '.join(f'{k} {v:g}' for k, v in NS_PER_INSN_BY_WORKLOAD.items()) + ')')
    ap.add_argument('--json', action='store_true', help='one JSON object per line')
    args = ap.parse_args()
    header, records = read(args.counts)
    print(f'# preset: read {header["read_ns"]} ns, stream {header["stream_ns"]} ns, write {header["write_ns"]} ns '
          f'per node-1 line miss; {args.ns_per_insn} ns per instruction', file=sys.stderr)
    if args.tags:
        b, e = (int(x, 0) for x in args.tags.split(','))
        rows = [(end, beg, (end['host_ns'] - beg['host_ns']) / 1e9) for beg, end in intervals(records, b, e)]
    else:
        rows, prev = [], None
        for rec in records:
            rows.append((rec, prev, (rec['host_ns'] - prev['host_ns']) / 1e9 if prev else None))
            prev = rec
    for rec, beg, host_s in rows:
        s = summary(rec, header, args.ns_per_insn, beg)
        s['host_s'] = host_s
        if args.json:
            print(json.dumps(dict(s, mark=rec.get('mark'), tag=rec.get('tag'))))
            continue
        what = f'mark {rec["mark"]:5d} tag {rec["tag"]:#06x}' if 'mark' in rec else f'{"end":>21s}'
        host = f'{host_s * 1e3:10.1f}' if host_s is not None else f'{"":10s}'
        emu = f'{s["t_emu_s"] * 1e3:10.1f}' if s['t_emu_s'] is not None else f'{"(moved)":>10s}'
        hw = f'  T_hw {s["t_hw_s"] * 1e3:9.2f} ms' if s['t_hw_s'] is not None else ''
        cpu = f'{s["cpu_s"] * 1e3:10.1f}' if s['cpu_s'] is not None else f'{"":10s}'
        print(f'{what}  insn {s["insn_user"]:>13d} user {s["insn_kernel"]:>12d} kernel  '
              f'n0 {"/".join(map(str, rec["n0"])):>24s}  n1 {"/".join(map(str, rec["n1"])):>22s}  '
              f'T_emu {emu} ms{hw}  work {s["t_work_s"] * 1e3:10.1f} ms  vCPU CPU {cpu} ms  host {host} ms')
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except (OSError, CountsError, KeyError, ValueError) as e:
        print(f'emutime: {type(e).__name__}: {e}', file=sys.stderr)
        sys.exit(1)
