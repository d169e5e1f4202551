#!/usr/bin/env python3
"""Phases that are not phases: an inner loop (LBFGS's closure, an LSTM cell's time steps) can lock,
be confirmed and be profiled before the step around it has repeated twice; when the longer step's
period is verified, the detector absorbs the inner loop's steps (docs/step-detection.md, "Locks that
overlap"). Such a phase must leave nothing behind: no PROFILE, no PLAN, no phase in the summary.

Runs tests/steps/lbfgs_sequence.py in run mode (a dry run on one node) and checks:
- the losses are bit-identical to the run without the library;
- stderr says the inner loop's plan was dropped (else the workload no longer exercises the case), and
  names every phase that stays planned on a line of its own;
- every PROFILE and PLAN record of the dump belongs to a phase with steps in STEPS;
- `sentinel-view summary` lists no phase without steps.

usage: check_phases_have_steps.py [--python debian|venv|PATH]   (env: SENTINEL_LIB, SENTINEL_VIEW)
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import torch_builds  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
import sentinel_dump  # noqa: E402  (tests/lib)

# 3 optimizer steps over sequences of 40: the inner loop still locks, is profiled and is dropped (4 over 60 took
# 115 s of the suite; these take 46 s, 2026-12-07).
STEPS, LENGTH = 3, 40


def run(python, env):
    return torch_builds.run_or_exit([python, os.path.join(HERE, "lbfgs_sequence.py"), str(STEPS), str(LENGTH)],
                                    env, 900)


def main():
    python, lib, view = torch_builds.checker_setup(sys.argv[1:])
    plain_env = torch_builds.plain_env()
    plain = run(python, plain_env)
    failures = []
    with tempfile.TemporaryDirectory(prefix="sentinel-phases.") as tmp:
        dump = os.path.join(tmp, "run.prof")
        env = dict(plain_env, LD_PRELOAD=lib, SENTINEL_MODE="run", SENTINEL_DUMP=dump)
        lib_run = run(python, env)
        if lib_run.stdout != plain.stdout:
            failures.append("the losses differ from the run without the library")
        lines = [x for x in lib_run.stderr.splitlines() if x.startswith("sentinel: ")]
        print("\n".join(lines))
        dropped = {int(m.group(1)) for x in lines if (m := re.search(r"phase (\d+) was not a step after all", x))}
        announced = {int(m.group(1)) for x in lines if (m := re.search(r"phase (\d+) planned:", x))}
        if not dropped:
            failures.append("no inner loop was planned and dropped: the workload no longer exercises the case")
        d = sentinel_dump.read(dump, only=["STEPS", "PROFILE", "PLAN"], view=view)
        with_steps = {s["phase"] for s in d["STEPS"]}
        profiled = {p["phase"] for p in d.get("PROFILE", [])}
        planned = {p["header"]["phase"] for p in d.get("PLAN", [])}
        print(f"phases with steps {sorted(with_steps)}, profiled {sorted(profiled)}, planned {sorted(planned)}, "
              f"dropped {sorted(dropped)}")
        if profiled - with_steps or planned - with_steps:
            failures.append(f"profiled or planned without a step: {sorted((profiled | planned) - with_steps)}")
        if not planned:
            failures.append("no phase was planned")
        if announced - dropped != planned:
            failures.append(f"stderr named the plans of phases {sorted(announced - dropped)}, the dump has "
                            f"{sorted(planned)}")
        s = subprocess.run([view, "summary", dump], capture_output=True, text=True, timeout=300)
        phase_lines = [x for x in s.stdout.splitlines() if re.match(r"  phase \d+", x)]
        if s.returncode != 0 or any("no steps" in x for x in phase_lines) or not phase_lines:
            failures.append(f"summary (status {s.returncode}) lists phases {phase_lines}")
    return torch_builds.report(failures, "the inner loop's profile and plan were dropped; every phase left has steps")


if __name__ == "__main__":
    sys.exit(main())
