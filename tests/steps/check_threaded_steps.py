#!/usr/bin/env python3
"""Live step detection on thread pools: runs a workload of workloads.py (pools not pinned) without and
with the library (SENTINEL_MODE=profile, no marks) and checks what the dump says against the truth.

usage: check_threaded_steps.py WORKLOAD [STEPS] [--python debian|venv|PATH]
       (env: SENTINEL_LIB; TF_PYTHON for the keras_* ones; SENTINEL_KEEP_DUMP=FILE keeps the dump there)
--python: the PyTorch build for the torch_* workloads (tests/torch_builds.py; default debian, 1.13).

Checks:
  - the results (a digest of the final parameters and the losses) are bit-identical with and without
    the library;
  - the steps in the dump's STEPS record: as many within 2 as the real steps after the first three,
    and, for a workload with phases, as many within 2 in each phase;
  - at least one profiled step;
  - identities: consecutive steps of the main phase, from the fourth on, share (site, size, k) identities
    for at least 95% of a step's tracked bytes on average over the steps (each step's share is its bytes
    whose identity the next step has too), computed from the dump's OBJECTS and STEPS alone.

What the identity check assumes of the dump (so that it does not depend on which identity the runtime
writes in IDENTITIES): a step is the range of tracked allocations [start_seq, next step's start_seq), or
[start_seq, start_seq + allocations) when that is shorter (the last step of a lock ends where the
pattern ended: the unlock's seq); an object belongs to the step whose range holds its
birth_seq; its k is its rank among the objects of the same (site, size) born in that range, in birth_seq
order. An allocation the detector gave to the previous step (kFedLate: a racing thread's tensor that
came after the next step began) is counted in the later range here; the 95% leaves room for those.
Step starts are also compared with the true ones (within 2 allocations: a prefetch thread's batch can
land on either side of the true boundary) and the worst distance is printed, not checked: it depends on
the run's interleaving.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import torch_builds  # noqa: E402
import workloads  # noqa: E402

REC_OBJECTS, REC_STEPS, REC_END = 6, 9, 0xFFFF
FLAG_PROFILED = 8


def read_dump(path):
    """(objects as (birth_seq, site, size), steps as (start_seq, allocations, phase, flags))."""
    data = open(path, "rb").read()
    assert data[:8] == b"SNTLDUMP", "not a dump"
    pos, objects, steps = 24, [], []
    while pos + 16 <= len(data):
        rtype, _crc, length = struct.unpack_from("<IIQ", data, pos)
        payload = data[pos + 16: pos + 16 + length]
        pos += 16 + length
        if rtype == REC_OBJECTS:
            count, esize = struct.unpack_from("<II", payload, 0)
            for i in range(count):
                base = 8 + i * esize
                size, = struct.unpack_from("<Q", payload, base + 8)
                birth_seq, = struct.unpack_from("<Q", payload, base + 32)
                site, = struct.unpack_from("<I", payload, base + 48)
                objects.append((birth_seq, site, size))
        elif rtype == REC_STEPS:
            count, esize = struct.unpack_from("<II", payload, 0)
            for i in range(count):
                start_seq, _ns, allocs, phase, flags = struct.unpack_from("<QQIII", payload, 8 + i * esize)
                steps.append((start_seq, allocs, phase, flags))
        elif rtype == REC_END:
            break
    objects.sort()
    # One entry per start: an inferred step and the live one can both name the same start.
    by_start = {}
    for s in steps:
        if s[0] not in by_start or s[1] > by_start[s[0]][1]:
            by_start[s[0]] = s
    return objects, sorted(by_start.values())


def identity_share(objects, steps, first):
    """Shared identity bytes of consecutive steps of the main phase that start at or after `first` (the
    fourth true step: the first ones hold the framework's set-up, tracing, gradient creation)."""
    if len(steps) < 3:
        return 0.0, 0.0, 0
    counts = {}
    for s in steps:
        counts[s[2]] = counts.get(s[2], 0) + 1
    main = max(counts, key=counts.get)
    seqs = [o[0] for o in objects]
    import bisect
    ids = []
    for i, (start, allocs, phase, _flags) in enumerate(steps):
        end = steps[i + 1][0] if i + 1 < len(steps) else start + allocs
        if 0 < allocs < end - start:  # the step ended where the pattern did (the lock was lost there)
            end = start + allocs
        seen, step_ids = {}, {}
        for j in range(bisect.bisect_left(seqs, start), bisect.bisect_left(seqs, end)):
            _b, site, size = objects[j]
            k = seen.get((site, size), 0)
            seen[(site, size)] = k + 1
            step_ids[(site, size, k)] = size
        ids.append((phase, step_ids))
    shares = []
    for i, ((pa, a), (pb, b)) in enumerate(zip(ids[:-2], ids[1:-1])):  # the last step runs into the end
        if pa != main or pb != main or steps[i][0] < first:
            continue
        ta = sum(a.values())
        if ta:
            shares.append(sum(v for k, v in a.items() if k in b) / ta)
    # Per step, then the mean over steps: one step with a one-off 16 MB buffer must not outweigh 60 others.
    return (sum(shares) / len(shares) if shares else 0.0), min(shares, default=0.0), main


def run(python, workload, steps, env, truth):
    p = subprocess.run([python, os.path.join(HERE, "live_driver.py"), workload, str(steps), truth],
                       env=env, capture_output=True, text=True, timeout=300)
    if p.returncode:
        print(p.stderr[-3000:])
        raise SystemExit(1)
    return json.load(open(truth))


def main():
    argv = sys.argv[1:]
    build = "debian"
    if "--python" in argv:
        i = argv.index("--python")
        build = argv[i + 1]
        del argv[i:i + 2]
    workload = argv[0]
    nsteps = int(argv[1]) if len(argv) > 1 else 64
    python = torch_builds.resolve(build)
    if workload not in workloads.TF_WORKLOADS:
        why = torch_builds.skip_reason(python)
        if why:
            print(f"skip: {why}", file=sys.stderr)
            return 77
    if workload in workloads.TF_WORKLOADS:
        python = os.environ.get("TF_PYTHON", "")
        if (not python or not os.path.exists(python)
                or subprocess.run([python, "-c", "import tensorflow"], capture_output=True).returncode):
            print("skip: TensorFlow venv not available (run scripts/setup)", file=sys.stderr)
            return 77
    base_env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    for name in ("SENTINEL_VIEW", "SENTINEL_RUN", "SENTINEL_LIB", "LD_PRELOAD"):
        base_env.pop(name, None)
    base_env = torch_builds.child_env(base_env)
    with tempfile.TemporaryDirectory() as tmp:
        plain = run(python, workload, nsteps, base_env, os.path.join(tmp, "plain.json"))
        dump = os.path.join(tmp, "run.prof")
        env = dict(base_env, LD_PRELOAD=os.environ["SENTINEL_LIB"], SENTINEL_MODE="profile", SENTINEL_DUMP=dump)
        live = run(python, workload, nsteps, env, os.path.join(tmp, "live.json"))
        objects, steps = read_dump(dump)
        if os.environ.get("SENTINEL_KEEP_DUMP"):
            import shutil
            shutil.copy(dump, os.environ["SENTINEL_KEEP_DUMP"])
            json.dump(live, open(os.environ["SENTINEL_KEEP_DUMP"] + ".json", "w"))
    errors = []
    if plain["digest"] != live["digest"]:
        errors.append(f"results differ with the library: {plain['digest'][:16]} vs {live['digest'][:16]}")
    truth, phases = live["starts"], live["phases"]
    starts = sorted({s[0] for s in steps})
    slack = 2
    after = [d for d in starts if d >= truth[3] - slack]
    if abs(len(after) - (len(truth) - 3)) > 2:
        errors.append(f"{len(after)} steps detected after the third, {len(truth) - 3} real")
    # Each phase (a run of equal labels) finds its steps, its first one aside (it may hold a retrace).
    segs, k = [], 0
    while k < len(phases):
        j = k
        while j < len(phases) and phases[j] == phases[k]:
            j += 1
        segs.append((k, j))
        k = j
    if len(segs) > 1:
        for a, b in segs:
            lo = truth[a + 1] - slack if a + 1 < len(truth) else truth[a]
            hi = truth[b] - slack if b < len(truth) else live["end"] + 1
            n = sum(1 for d in starts if lo <= d < hi)
            if abs(n - (b - a - 1)) > 2:
                errors.append(f"phase {phases[a]} (steps {a + 1}-{b}): {n} steps detected, {b - a - 1} real")
    worst = max((min(abs(d - t) for d in starts) for t in truth[3:]), default=0) if starts else None
    profiled = sum(1 for s in steps if s[3] & FLAG_PROFILED)
    if profiled < 1:
        errors.append("no profiled step")
    share, pair, main = identity_share(objects, steps, truth[3] - slack)
    if share < 0.95:
        errors.append(f"consecutive steps share {share:.3f} of their identity bytes (< 0.95)")
    periods = sorted({s[1] for s in steps if s[2] == main})
    print(f"{workload}: {len(after)} steps detected after the third of {len(truth) - 3}, "
          f"worst start {worst} allocations from a true one, {profiled} profiled, identity share {share:.4f} "
          f"(worst pair {pair:.3f}), main phase {main}, step lengths {periods[:6]}, "
          f"results {'identical' if plain['digest'] == live['digest'] else 'DIFFERENT'}")
    for e in errors:
        print("FAIL:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
