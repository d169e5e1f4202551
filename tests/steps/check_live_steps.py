#!/usr/bin/env python3
"""Live step detection: runs live_driver.py under the library (profile mode, no marks) and checks that
the detector's steps match the real ones for every step after the third.

usage: check_live_steps.py MODEL [STEPS] [--python debian|venv|PATH] [--known-issue NAME] [--exact]
       (env: SENTINEL_LIB, SENTINEL_VIEW; TF_PYTHON for keras)
--python: the PyTorch build for the PyTorch models (tests/torch_builds.py; default debian, Debian's 1.13).
--known-issue: the step starts are expected to be wrong in exactly that known way (known_issues.py);
everything else is checked as always, and the test fails if the starts come out exact.
Reads the dump's STEPS records (sentinel-view, through tests/lib/sentinel_dump.py) and compares start
seqs with the driver's truth. Keras: tf.data's prefetch thread may allocate the next batch while the callback runs, so a
step start is only defined to within one allocation there (docs/step-detection.md); every other model
must match exactly. Also checks the count of steps (between steps-3 and steps).
--exact: every step from the first on, as a user counts them: each true start detected, no other start,
and exactly STEPS steps.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import torch_builds  # noqa: E402
import known_issues  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
import sentinel_dump  # noqa: E402  (tests/lib)

FLAG_INFERRED, FLAG_PROFILED = sentinel_dump.STEP_INFERRED, sentinel_dump.STEP_PROFILED


def read_steps(path):
    return [(s["start_seq"], s["allocations"], s["phase"], s["flags"])
            for s in sentinel_dump.read(path, only=["STEPS"])["STEPS"]]


def main():
    argv = sys.argv[1:]
    exact = "--exact" in argv
    if exact:
        argv.remove("--exact")
    build, issue = known_issues.take_options(argv)
    model = argv[0]
    nsteps = int(argv[1]) if len(argv) > 1 else 16
    python = torch_builds.resolve(build)
    if model != "keras":
        why = torch_builds.skip_reason(python)
        if why:
            print(f"skip: {why}", file=sys.stderr)
            return 77
    if model == "keras":
        python, why = torch_builds.tensorflow_python()
        if why:
            print(f"skip: {why}", file=sys.stderr)
            return 77
    with tempfile.TemporaryDirectory() as tmp:
        truth_path, dump = os.path.join(tmp, "truth.json"), os.path.join(tmp, "run.prof")
        env = dict(os.environ, LD_PRELOAD=os.environ["SENTINEL_LIB"], SENTINEL_MODE="profile", SENTINEL_DUMP=dump)
        for name in ("SENTINEL_VIEW", "SENTINEL_RUN", "SENTINEL_LIB"):
            env.pop(name, None)
        env = torch_builds.child_env(env)
        p = subprocess.run([python, os.path.join(HERE, "live_driver.py"), model, str(nsteps), truth_path],
                           env=env, capture_output=True, text=True, timeout=600)
        if p.returncode:
            print(p.stderr[-3000:])
            return 1
        truth = json.load(open(truth_path))["starts"]
        steps = read_steps(dump)
        detected = sorted({s[0] for s in steps})
        # loader_phases: a batch fetched by the loop's own `for` comes just before the step's first
        # allocation, so a start is one allocation either side of it; and the evaluation's first step may
        # also take in the batch the training loop fetched before its `break` (the same site and size,
        # still live: a prefetched surplus to the bag walk), 2 before the truth. The count stays exact.
        # epochs: the same `for` over a DataLoader; on 1.13 the steps found begin at its batch, one before.
        slack = {"keras": 1, "loader_phases": 2, "loader_phases_late_zero": 2, "epochs": 1, "accum": 1}.get(model, 0)
        errors = []
        checked_from = 0 if exact else 3
        for k, t in enumerate(truth[checked_from:], start=checked_from + 1):
            if not any(abs(d - t) <= slack for d in detected):
                errors.append(f"step {k} starts at allocation {t}; detected starts near it: "
                              f"{[d for d in detected if abs(d - t) < 50]}")
        spurious = [d for d in detected
                    if d >= truth[checked_from] and not any(abs(d - t) <= slack for t in truth)]
        if exact:
            spurious += [d for d in detected if d < truth[0] - slack]
        if spurious:
            errors.append(f"detected step starts that are not real ones: {spurious[:10]}")
        known = known_issues.check(issue, os.environ.get("SENTINEL_VIEW"), dump, truth, detected, not errors,
                                   print)
        if known is not None:
            errors = known
    if not (nsteps if exact else nsteps - 3) <= len(detected) <= nsteps:
        errors.append(f"{len(detected)} steps detected for a {nsteps}-step loop")
    profiled = [s for s in steps if s[3] & FLAG_PROFILED]
    print(f"{model}: {len(detected)} steps detected of {nsteps}, period(s) "
          f"{sorted({s[1] for s in steps if not s[3] & FLAG_INFERRED})[:5]}, {len(profiled)} profiled")
    for e in errors:
        print("FAIL:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
