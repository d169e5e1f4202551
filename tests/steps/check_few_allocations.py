#!/usr/bin/env python3
"""A step of few, large tensors is profiled and planned: tests/steps/embedding_sgd.py (about 5 tracked
allocations a step, a 51 MB embedding table) for 30 steps in run mode (a dry run on one node). A period
below 8 locks on an exact run of 32 allocations and is confirmed on 64 verified (docs/step-detection.md):
on 2026-12-04 the lock came at step #8 and the profile at #9-#10 (docs/profiling.md).
Checks:
- the losses are bit-identical to the run without the library;
- the main phase has a PROFILE and a PLAN, and its first profiled step is within 16 steps of the lock.

usage: check_few_allocations.py [--python debian|venv|PATH]   (env: SENTINEL_LIB, SENTINEL_VIEW)
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import torch_builds  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
import sentinel_dump  # noqa: E402  (tests/lib)

STEPS = 30


def run(python, env):
    return torch_builds.run_or_exit([python, os.path.join(HERE, "embedding_sgd.py"), str(STEPS)], env, 600)


def main():
    python, lib, view = torch_builds.checker_setup(sys.argv[1:])
    plain_env = torch_builds.plain_env()
    plain = run(python, plain_env)
    failures = []
    with tempfile.TemporaryDirectory(prefix="sentinel-few.") as tmp:
        dump = os.path.join(tmp, "run.prof")
        got = run(python, dict(plain_env, LD_PRELOAD=lib, SENTINEL_MODE="run", SENTINEL_DUMP=dump))
        if got.stdout != plain.stdout:
            failures.append("the losses differ from the run without the library")
        d = sentinel_dump.read(dump, only=["STEPS", "PROFILE", "PLAN"], view=view)
        steps = sorted(d["STEPS"], key=lambda s: s["start_seq"])
        counts = {}
        for s in steps:
            counts[s["phase"]] = counts.get(s["phase"], 0) + 1
        if not counts:
            raise SystemExit("FAIL: no step was found")
        main_phase = max(counts, key=counts.get)
        mine = [s for s in steps if s["phase"] == main_phase]
        period = max(s["allocations"] for s in mine)
        live = [i for i, s in enumerate(mine) if not s["flags"] & sentinel_dump.STEP_INFERRED]
        profiled = [i for i, s in enumerate(mine) if s["flags"] & sentinel_dump.STEP_PROFILED]
        print(f"phase {main_phase}: {len(mine)} steps of up to {period} allocations, live from step "
              f"#{live[0] if live else None}, profiled {profiled}, PROFILE phases "
              f"{[p['phase'] for p in d.get('PROFILE', [])]}, PLAN phases "
              f"{[p['header']['phase'] for p in d.get('PLAN', [])]}")
        if not profiled:
            failures.append("the main phase was never profiled")
        elif live and profiled[0] - live[0] > 16:
            failures.append(f"profiling started {profiled[0] - live[0]} steps after the lock (at most 16)")
        if main_phase not in [p["header"]["phase"] for p in d.get("PLAN", [])]:
            failures.append("the main phase was not planned")
    return torch_builds.report(failures, "profiled and planned soon after the lock, losses identical")


if __name__ == "__main__":
    sys.exit(main())
