#!/usr/bin/env python3
"""Set-up loops (docs/step-detection.md, "Set-up loops"): a model built block by block repeats like a step,
and the detector locks on it, but its steps keep every byte they allocate: there is no working set to
place. Such a phase must be marked and never profiled or planned, while the training loop after it is.

Runs tests/steps/set_up_loop.py (48 blocks, then 12 training steps) in run mode (a dry run on one node) and
checks:
- the losses are bit-identical to the run without the library;
- the dump's DETECTION marks a phase as a set-up loop (else the workload no longer exercises the case), and
  that phase has no PROFILE or PLAN record;
- the training phase (the summary's main phase) is profiled and planned, and counts all 12 steps: the
  first, whose first gradients and momentum buffers are allocated block by block, too;
- no other phase has steps: the first iteration's loops over the blocks are part of its step;
- `sentinel-view summary` calls the set-up phase a set-up loop, and `summary --json` flags it.

usage: check_set_up_loop.py [--python debian|venv|PATH]   (env: SENTINEL_LIB, SENTINEL_VIEW)
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import torch_builds  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
import sentinel_dump  # noqa: E402  (tests/lib)

BLOCKS, STEPS = 48, 12
SET_UP = 0x8  # SENTINEL_DETECT_SET_UP


def run(python, env):
    return torch_builds.run_or_exit([python, os.path.join(HERE, "set_up_loop.py"), str(BLOCKS), str(STEPS)], env,
                                    600)


def main():
    python, lib, view = torch_builds.checker_setup(sys.argv[1:])
    plain_env = torch_builds.plain_env()
    plain = run(python, plain_env)
    failures = []
    with tempfile.TemporaryDirectory(prefix="sentinel-set-up.") as tmp:
        dump = os.path.join(tmp, "run.prof")
        env = dict(plain_env, LD_PRELOAD=lib, SENTINEL_MODE="run", SENTINEL_DUMP=dump, SENTINEL_LOG="info")
        lib_run = run(python, env)
        if lib_run.stdout != plain.stdout:
            failures.append("the losses differ from the run without the library")
        print("\n".join(x for x in lib_run.stderr.splitlines() if "set-up" in x or "planned" in x))
        d = sentinel_dump.read(dump, only=["STEPS", "PROFILE", "PLAN", "DETECTION"], view=view)
        set_up = {r["phase"] for r in d.get("DETECTION", []) if r["phase"] and r["flags"] & SET_UP}
        profiled = {p["phase"] for p in d.get("PROFILE", [])}
        planned = {p["header"]["phase"] for p in d.get("PLAN", [])}
        steps = {}
        for s in d["STEPS"]:
            steps[s["phase"]] = steps.get(s["phase"], 0) + 1
        print(f"steps per phase {steps}, set-up loops {sorted(set_up)}, profiled {sorted(profiled)}, "
              f"planned {sorted(planned)}")
        if not set_up:
            failures.append("no phase was marked a set-up loop: the workload no longer exercises the case")
        if set_up & (profiled | planned):
            failures.append(f"set-up loops profiled or planned: {sorted(set_up & (profiled | planned))}")
        js = sentinel_dump.summary(dump, view=view)
        main_phase = js.get("main_phase")
        if {ph["phase"] for ph in js.get("phases", []) if ph.get("set_up_loop")} != set_up:
            failures.append("summary --json's set_up_loop phases differ from DETECTION's")
        if main_phase in set_up or main_phase not in profiled or main_phase not in planned:
            failures.append(f"the main phase {main_phase} is a set-up loop, or not profiled and planned")
        elif steps.get(main_phase, 0) != STEPS:
            failures.append(f"the main phase counts {steps.get(main_phase)} steps, the loop ran {STEPS}")
        # The first iteration allocates the momentum buffers and the first gradients, block by block: its
        # forward, backward and buffers repeat at the block and are locked on before the whole step is
        # seen twice. They are the first step (docs/step-detection.md, "A first iteration in pieces"), not
        # phases: every phase with steps is the training loop or a set-up loop.
        stray = set(steps) - set_up - {main_phase}
        if stray:
            failures.append(f"phases {sorted(stray)} are neither the training loop nor set-up loops "
                            f"(steps per phase {steps})")
        s = subprocess.run([view, "summary", dump], capture_output=True, text=True, timeout=300)
        if s.returncode != 0 or "a set-up loop" not in s.stdout:
            failures.append(f"summary (status {s.returncode}) does not call the set-up phase a set-up loop")
    return torch_builds.report(failures, "the set-up loop was marked and left alone; the training loop was planned")


if __name__ == "__main__":
    sys.exit(main())
