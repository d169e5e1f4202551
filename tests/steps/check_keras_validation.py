#!/usr/bin/env python3
"""Keras `fit` with validation data counts its real steps exactly, run after run (issue 18).

usage: check_keras_validation.py [RUNS] [STEPS] [--workload keras_val|keras_val_cnn]
                                 [--known-issue validation-passes] [--known-issue step-bags-vary]
       (env: SENTINEL_LIB, SENTINEL_VIEW, TF_PYTHON; SENTINEL_KEEP_DUMP=PREFIX keeps each run's dump and
       truth as PREFIX.N.prof and PREFIX.N.prof.json, for tests/fixtures/record_stream.py --convert)

Runs workloads.py's keras_val (default STEPS 156: 3 epochs of 52 training batches, each followed by a
validation pass over 13 batches, the run of the report) RUNS times (default 5) under the library
(SENTINEL_MODE=profile, no marks), the true starts read through sentinel_get_stats() by live_driver.py.
--workload keras_val_cnn runs a user's CIFAR-sized conv net with Adam and validation_split instead (STEPS
104: 2 epochs of 52 training batches and 13 validation batches of 64), whose thread pools permute the
first steps (docs/step-detection.md, "Permuted steps under an exact lock").

"Counts its real steps" (docs/step-detection.md, "Phases"): in the dump's STEPS record (one step per
start), the training phase (the phase id holding the most starts inside the true training steps) has
exactly as many steps as Keras ran training batches (on_train_batch_begin), the validation phase (the
same for the validation batches, a phase id of its own) exactly as many as it ran validation batches
(on_test_batch_begin), and no other step is counted. Every run must count exactly (but see --known-issue).

--known-issue validation-passes: what the detector does now (docs/testing.md, "Known issues the tests
recognise"): a validation pass (13 steps of 8 allocations, whose batch arrives 0, 1 or 2 at a time) is not
always counted exactly. Recognised in a run as: the training steps exact, no validation batch counted as a
training step, the validation batches in a phase of their own, and each pass counted exactly, not at all
(it never locked: fewer steps in a row with the same bag than a new pattern needs), 1 to 3 short (a lock
on an exact repeat whose walk back stopped at the first permuted step) or 1 long (the lock's rotation
starts the step at the batch, which the pass's last steps lack). A run outside that fails the test. The
issue is intermittent (2 to 4 runs of 5 exact when measured), so runs that are all exact pass too.

--known-issue step-bags-vary (tests/steps/known_issues.py): a run that is not counted exactly, and not in
validation-passes' way, is that issue where its true steps do not hold one bag (optional allocations in
them, measured from its dump); on steps of one bag it fails as always.
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
import check_threaded_steps  # noqa: E402
import known_issues  # noqa: E402
import torch_builds  # noqa: E402
import workloads  # noqa: E402


def in_label(seq, truth, label):
    """Whether allocation seq falls in a true step labelled `label`."""
    starts, labels = truth["starts"], truth["phases"]
    bounds = starts + [truth["end"] + 1]
    return any(labels[k] == label and bounds[k] <= seq < bounds[k + 1] for k in range(len(starts)))


def passes(steps, truth, phase):
    """The steps of `phase` that start in each run of consecutive validation batches (a pass)."""
    starts, labels = truth["starts"], truth["phases"]
    bounds = starts + [truth["end"] + 1]
    out, k = [], 0
    while k < len(labels):
        j = k
        while j < len(labels) and labels[j] == labels[k]:
            j += 1
        if labels[k] == "eval":
            out.append((j - k, sum(1 for s in steps if s[2] == phase and bounds[k] <= s[0] < bounds[j])))
        k = j
    return out


def counts(steps, truth):
    """{label: (real steps, detected steps of that label's phase, phase id)} and the steps of no label's
    phase. steps: (start_seq, allocations, phase, flags), one per start."""
    starts, labels = truth["starts"], truth["phases"]
    bounds = starts + [truth["end"] + 1]
    inside = {}  # (label, phase id) -> detected starts inside true steps of that label
    for s in steps:
        for k in range(len(starts)):
            if bounds[k] <= s[0] < bounds[k + 1]:
                inside[(labels[k], s[2])] = inside.get((labels[k], s[2]), 0) + 1
                break
    out, used = {}, set()
    for label in dict.fromkeys(labels):
        cands = {ph: n for (lb, ph), n in inside.items() if lb == label and ph not in used}
        ph = max(cands, key=cands.get) if cands else None
        used.add(ph)
        out[label] = (labels.count(label), sum(1 for s in steps if s[2] == ph) if ph is not None else 0, ph)
    others = sum(1 for s in steps if s[2] not in used)
    return out, others


def main():
    argv = sys.argv[1:]
    issues = []
    while "--known-issue" in argv:
        i = argv.index("--known-issue")
        issues.append(argv[i + 1])
        del argv[i:i + 2]
    unknown = [i for i in issues if i != "validation-passes" and i not in known_issues.ISSUES]
    if unknown:
        print(f"FAIL: unknown issue {unknown[0]}")
        return 1
    workload = "keras_val"
    if "--workload" in argv:
        i = argv.index("--workload")
        workload = argv[i + 1] if i + 1 < len(argv) else ""
        del argv[i:i + 2]
        if workload not in ("keras_val", "keras_val_cnn"):
            print(f"FAIL: --workload must be keras_val or keras_val_cnn, not {workload!r}")
            return 1
    runs = int(argv[0]) if argv else 5
    nsteps = int(argv[1]) if len(argv) > 1 else 156
    python, why = torch_builds.tensorflow_python()
    if why:
        print(f"skip: {why}", file=sys.stderr)
        return 77
    env = check_threaded_steps.child_base_env()
    keep = os.environ.get("SENTINEL_KEEP_DUMP")
    exact, known, varied, errors = 0, 0, 0, []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(runs):
            dump = os.path.join(tmp, f"run{r}.prof")
            run_env = dict(env, LD_PRELOAD=os.environ["SENTINEL_LIB"], SENTINEL_MODE="profile", SENTINEL_DUMP=dump)
            truth = check_threaded_steps.run(python, workload, nsteps, run_env, dump + ".json")
            if truth["phases"] != workloads.phases_of(workload, nsteps):
                errors.append(f"run {r + 1}: Keras ran {len(truth['phases'])} batches, not the expected ones")
            _decoded, steps = check_threaded_steps.read_dump(dump)
            if keep:
                import shutil
                shutil.copy(dump, f"{keep}.{r + 1}.prof")
                shutil.copy(dump + ".json", f"{keep}.{r + 1}.prof.json")
            c, others = counts(steps, truth)
            line = ", ".join(f"{label} {det} of {real} (phase {ph})" for label, (real, det, ph) in c.items())
            print(f"run {r + 1}: {line}, {others} steps of other phases, {len(steps)} in all")
            ok = all(real == det for real, det, _ph in c.values()) and others == 0 and \
                c["train"][2] != c["eval"][2]
            exact += ok
            if not ok:
                errors.append(f"run {r + 1}: {line}, {others} of other phases")
                train_in_eval = sum(1 for s in steps if s[2] == c["train"][2] and in_label(s[0], truth, "eval"))
                per_pass = passes(steps, truth, c["eval"][2])
                print(f"run {r + 1}: validation passes counted {', '.join(f'{n} of {real}' for real, n in per_pass)}")
                if (c["train"][0] == c["train"][1] and train_in_eval == 0 and others == 0
                        and c["eval"][2] not in (None, c["train"][2])
                        and all(n == 0 or real - 3 <= n <= real + 1 for real, n in per_pass)):
                    known += 1
                elif "step-bags-vary" in issues:
                    recognise, _intermittent = known_issues.RECOGNISERS["step-bags-vary"]
                    what = recognise(os.environ.get("SENTINEL_VIEW"), dump, truth, [s[0] for s in steps])
                    if what:
                        print(f"run {r + 1}: KNOWN ISSUE step-bags-vary (tests/steps/known_issues.py): {what}")
                        varied += 1
    print(f"{workload}: {exact} of {runs} runs counted exactly")
    if varied and varied + (known if "validation-passes" in issues else 0) == len(errors):
        print(f"KNOWN ISSUES: {varied} of {runs} runs on steps that do not hold one bag (step-bags-vary), "
              f"{known} with a validation pass counted not at all, short or long (validation-passes)")
        return 0
    if "validation-passes" in issues:
        if exact == runs:
            print("known issue validation-passes (tests/steps/check_keras_validation.py) did not occur in these "
                  f"{runs} runs (it is intermittent)")
        elif known == len(errors):
            print(f"KNOWN ISSUE validation-passes (tests/steps/check_keras_validation.py): {len(errors)} of {runs} "
                  "runs counted a validation pass not at all, short or long; training exact in every run")
            return 0
    for e in errors:
        print("FAIL:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
