#!/usr/bin/env python3
"""Live step detection on thread pools: runs a workload of workloads.py (pools not pinned) without and
with the library (SENTINEL_MODE=profile, no marks) and checks what the dump says against the truth.

usage: check_threaded_steps.py WORKLOAD [STEPS] [--python debian|venv|PATH] [--known-issue NAME]
       (env: SENTINEL_LIB, SENTINEL_VIEW; TF_PYTHON for the keras_* ones; SENTINEL_KEEP_DUMP=FILE keeps the
       dump there)
--python: the PyTorch build for the torch_* workloads (tests/torch_builds.py; default debian, 1.13).

Checks:
  - the results (a digest of the final parameters and the losses) are bit-identical with and without
    the library;
  - the steps in the dump's STEPS record: as many within 2 as the real steps after the first three,
    and, for a workload with phases, as many within 2 in each phase;
  - at least one profiled step;
  - identities: the identities the runtime gave the main phase's profiled steps (its IDENTITIES records)
    recur in each of them for at least 95% of the bytes that do recur there: the bytes of identities
    (not born outside a step) with an instance in every profiled step, over the bytes of the (site,
    size) pairs that every one of the profiled steps' ranges of allocations [start_seq, start_seq +
    allocations) holds (OBJECTS, STEPS; a pair held twice in each counts twice). An allocation the
    detector could not place gets an identity of its own (OUTSIDE), and an identity that came in one
    step only recurs in none: both count against the share. An allocation that the program makes in
    one of those steps only (an Eigen contraction's thread-local block on some CPUs) recurs in none,
    whatever the identities, and counts in neither.

--known-issue step-bags-vary (tests/steps/known_issues.py): where the true steps do not hold one bag
(optional allocations in them, measured from the dump and the true starts), the detection checks above
(steps, profiled step, identities) may fail: the test then says KNOWN ISSUE and checks the results only.
Where the steps hold one bag, every check stands.

The dump is read with sentinel-view (tests/lib/sentinel_dump.py).
Step starts are also compared with the true ones (within 2 allocations: a prefetch thread's batch can
land on either side of the true boundary) and the worst distance is printed, not checked: it depends on
the run's interleaving.
"""
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
import known_issues  # noqa: E402
import sentinel_dump  # noqa: E402  (tests/lib)
import torch_builds  # noqa: E402
import workloads  # noqa: E402

FLAG_PROFILED = sentinel_dump.STEP_PROFILED


def read_dump(path, view=None):
    """(the decoded dump, steps as (start_seq, allocations, phase, flags), one per start). view: the
    sentinel-view to decode with (default: $SENTINEL_VIEW, else the build tree's)."""
    d = sentinel_dump.read(path, only=["OBJECTS", "STEPS", "PROFILE", "IDENTITIES"], view=view)
    steps = [(s["start_seq"], s["allocations"], s["phase"], s["flags"]) for s in d["STEPS"]]
    # One entry per start: an inferred step and the live one can both name the same start.
    by_start = {}
    for s in steps:
        if s[0] not in by_start or s[1] > by_start[s[0]][1]:
            by_start[s[0]] = s
    return d, sorted(by_start.values())


def identity_share(d, steps):
    """(share, profiled steps, main phase): the bytes of the main phase's identities that recur in every
    one of its profiled steps, over the bytes of the (site, size) pairs born in every one of those steps
    (see the module's docstring)."""
    counts = {}
    for s in steps:
        counts[s[2]] = counts.get(s[2], 0) + 1
    if not counts:
        return 0.0, 0, None
    main = max(counts, key=counts.get)
    profiled = [p["profiled_steps"] for p in d["PROFILE"] if p["phase"] == main]
    if not profiled:
        return 0.0, 0, main
    n = profiled[0]
    ranges = [(s[0], s[0] + s[1]) for s in steps if s[2] == main and s[3] & FLAG_PROFILED]
    bags = [Counter((o["site"], o["size"]) for o in d["OBJECTS"] if a <= o["birth_seq"] < b) for a, b in ranges]
    common = bags[0] if bags else Counter()
    for bag in bags[1:]:
        common &= bag
    recurs = sum(size * count for (_, size), count in common.items()) * len(bags)
    recurring = sum(i["size"] * n for i in d["IDENTITIES"] if i["phase"] == main and i["instances"] >= n
                    and not i["flags"] & sentinel_dump.IDENTITY_OUTSIDE)
    return (min(1.0, recurring / recurs) if recurs else 0.0), n, main


SLACK = 2  # allocations a detected start may be from a true one: a prefetch thread's batch races it


def step_count_errors(starts, live):
    """What is wrong with the number of detected starts (after the third true step, and in each phase)."""
    truth, phases = live["starts"], live["phases"]
    errors = []
    after = [d for d in starts if d >= truth[3] - SLACK]
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
            lo = truth[a + 1] - SLACK if a + 1 < len(truth) else truth[a]
            hi = truth[b] - SLACK if b < len(truth) else live["end"] + 1
            n = sum(1 for d in starts if lo <= d < hi)
            if abs(n - (b - a - 1)) > 2:
                errors.append(f"phase {phases[a]} (steps {a + 1}-{b}): {n} steps detected, {b - a - 1} real")
    return errors


def run(python, workload, steps, env, truth):
    p = subprocess.run([python, os.path.join(HERE, "live_driver.py"), workload, str(steps), truth],
                       env=env, capture_output=True, text=True, timeout=300)
    if p.returncode:
        print(p.stderr[-3000:])
        raise SystemExit(1)
    return json.load(open(truth))


def child_base_env():
    """The environment of a workload's run, before the library's settings: none of the suite's own."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    for name in ("SENTINEL_VIEW", "SENTINEL_RUN", "SENTINEL_LIB", "LD_PRELOAD"):
        env.pop(name, None)
    return torch_builds.child_env(env)


def main():
    argv = sys.argv[1:]
    build, issue = known_issues.take_options(argv)
    workload = argv[0]
    nsteps = int(argv[1]) if len(argv) > 1 else 64
    python = torch_builds.resolve(build)
    if workload not in workloads.TF_WORKLOADS:
        why = torch_builds.skip_reason(python)
        if why:
            print(f"skip: {why}", file=sys.stderr)
            return 77
    if workload in workloads.TF_WORKLOADS:
        python, why = torch_builds.tensorflow_python()
        if why:
            print(f"skip: {why}", file=sys.stderr)
            return 77
    base_env = child_base_env()
    with tempfile.TemporaryDirectory() as tmp:
        plain = run(python, workload, nsteps, base_env, os.path.join(tmp, "plain.json"))
        dump = os.path.join(tmp, "run.prof")
        env = dict(base_env, LD_PRELOAD=os.environ["SENTINEL_LIB"], SENTINEL_MODE="profile", SENTINEL_DUMP=dump)
        live = run(python, workload, nsteps, env, os.path.join(tmp, "live.json"))
        decoded, steps = read_dump(dump)
        if os.environ.get("SENTINEL_KEEP_DUMP"):
            import shutil
            shutil.copy(dump, os.environ["SENTINEL_KEEP_DUMP"])
            json.dump(live, open(os.environ["SENTINEL_KEEP_DUMP"] + ".json", "w"))
        starts = sorted({s[0] for s in steps})
        errors = step_count_errors(starts, live)
        profiled = sum(1 for s in steps if s[3] & FLAG_PROFILED)
        if profiled < 1:
            errors.append("no profiled step")
        share, window, main = identity_share(decoded, steps)
        if share < 0.95:
            errors.append(f"identities recurring in every profiled step hold {share:.3f} of the bytes that recur "
                          f"there (< 0.95)")
        known = known_issues.check(issue, os.environ.get("SENTINEL_VIEW"), dump, live, starts, not errors, print)
        if known is not None:
            errors = known
    if not starts:
        errors.append("no step detected")
    if plain["digest"] != live["digest"]:
        errors.append(f"results differ with the library: {plain['digest'][:16]} vs {live['digest'][:16]}")
    truth = live["starts"]
    after = [d for d in starts if d >= truth[3] - SLACK]
    worst = max((min(abs(d - t) for d in starts) for t in truth[3:]), default=0) if starts else None
    periods = sorted({s[1] for s in steps if s[2] == main})
    print(f"{workload}: {len(after)} steps detected after the third of {len(truth) - 3}, "
          f"worst start {worst} allocations from a true one, {profiled} profiled, identity share {share:.4f} "
          f"(over {window} profiled steps), main phase {main}, step lengths {periods[:6]}, "
          f"results {'identical' if plain['digest'] == live['digest'] else 'DIFFERENT'}")
    for e in errors:
        print("FAIL:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
