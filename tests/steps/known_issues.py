"""Known runtime issues that a step test recognises exactly, so that it keeps checking everything else.

A test given `--known-issue NAME` (in meson.build, with a comment) expects the issue: where its step
check fails in exactly the issue's way, the test reports "KNOWN ISSUE" and goes on; where the check
passes, the test fails and says to remove the flag (the issue is fixed, or no longer reached); any other
failure fails as always. docs/testing.md lists the issues.

Open:
- step-bags-vary (host-dependent, intermittent): the true steps do not all hold the same bag of
  allocations. On CPUs without AVX-512 (the AMD EPYC hosts of CI), TensorFlow's Eigen contractions
  allocate their thread-local packing blocks (2-3 MiB) on demand, when a pool thread that has none
  runs a task: 0 to 2 such allocations in a step, by the run's timing. The automatic detector's lock
  needs steps of one bag (docs/step-detection.md), so it locks late, or on two steps at a time. The
  recogniser measures the optional allocations in the true steps (optional_allocations below); a
  failed step count on steps that vary so is this issue, the same check on steps of one bag fails as
  always, and a run that counts right passes.

Fixed, and their recognisers removed (docs/testing.md says how each was found):
- step1-buffers (a library's one-time buffers in the first step, MKL's sgemm workspace or oneDNN's
  primitives, turned the lock's rotation) and autocast-rotation (1.13's bf16 autocast, rotation off by 9
  of 13): steps now begin where the bytes live are least (docs/step-detection.md, "Where a step starts");
- compile-step1 (torch.compile: a phase of period 1 on 478 equal PyBytes allocations inside the first
  step, and steps 2-7 not found): no step of one allocation is locked on, and warm-up steps with the
  step's sizes at other sites are counted (docs/step-detection.md, "Warm-up at other sites").
"""

import os
import sys
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import sentinel_dump  # noqa: E402  (tests/lib)

# Optional allocations a step from which steps count as not holding one bag: a step in five with one.
OPTIONAL_PER_STEP = 0.2


def optional_allocations(objects, starts, end, labels=None, skip=3):
    """(optional allocations a step, [(site, size, mean count a step)]) in the stretch of true steps
    that varies most: the (site, size) pairs whose count a step is not a whole number on average, by at
    least 0.1. An allocation that another thread makes across a step boundary moves between two steps and
    keeps its mean whole; one that only some steps make does not. The first count is the sum of those
    means' distances to the whole number below. Stretches: the steps of the label most steps have
    (training; an evaluation pass's batches come in bursts), in runs, split where a step
    shares less than half its (site, size) pairs with the step before (a new batch size, a new model);
    the first `skip` steps of the run and the first step of every later stretch (a retrace) are left
    out, and a stretch needs 4 steps."""
    bounds = list(starts) + [end + 1]
    labels = labels or ["train"] * len(starts)
    births = sorted((o["birth_seq"], (o["site"], o["size"])) for o in objects)
    bags, i = [], 0
    for k in range(len(starts)):
        while i < len(births) and births[i][0] < bounds[k]:
            i += 1
        bag = Counter()
        while i < len(births) and births[i][0] < bounds[k + 1]:
            bag[births[i][1]] += 1
            i += 1
        bags.append(bag)
    main = max(set(labels), key=labels.count)
    stretches, current = [], []
    for k in range(len(starts)):
        if labels[k] != main:  # an evaluation pass's batches arrive in bursts: only the main label's steps
            if current:
                stretches.append(current)
                current = []
            continue
        if current and len(bags[k].keys() & bags[k - 1].keys()) * 2 < len(bags[k].keys() | bags[k - 1].keys()):
            stretches.append(current)
            current = []
        current.append(k)
    if current:
        stretches.append(current)
    best = (0.0, [])
    for n, stretch in enumerate(stretches):
        steps = stretch[skip:] if n == 0 else stretch[1:]
        if len(steps) < 4:
            continue
        totals = Counter()
        for k in steps:
            totals.update(bags[k])
        means = {tok: c / len(steps) for tok, c in totals.items()}
        optional = [(tok[0], tok[1], m) for tok, m in means.items() if 0.1 <= m - int(m) <= 0.9]
        per_step = sum(m - int(m) for _, _, m in optional)
        if per_step > best[0]:
            best = (per_step, sorted(optional, key=lambda t: -t[2]))
    return best


def _step_bags_vary(view, dump, truth, detected):
    """The step-bags-vary recogniser: truth is the driver's JSON (starts, phases, end) or the true starts."""
    objects = sentinel_dump.read(dump, only=["OBJECTS"], view=view)["OBJECTS"]
    if isinstance(truth, dict):
        starts, end, labels = truth["starts"], truth["end"], truth.get("phases")
    else:
        starts, end, labels = truth, max((o["birth_seq"] for o in objects), default=0), None
    per_step, optional = optional_allocations(objects, starts, end, labels)
    if per_step < OPTIONAL_PER_STEP:
        return None
    tokens = ", ".join(f"site {s} {size} B x{m:.2f}" for s, size, m in optional[:4])
    return (f"the true steps hold {per_step:.2f} optional allocations each ({tokens} a step), so their bags "
            f"differ and the lock comes late or on two steps; {len(detected)} steps detected")


# Each entry: NAME -> (recogniser(view, dump, truth, detected) returning a description of the match, or
# None; intermittent: whether a run without the issue passes instead of asking to remove the flag).
RECOGNISERS = {"step-bags-vary": (_step_bags_vary, True)}
ISSUES = tuple(RECOGNISERS)


def take_options(argv):
    """(--python's value, default debian; --known-issue's, default None), both taken out of argv: the
    options of the step checks that run a workload and may expect a known issue. An issue that is not
    one of ISSUES ends the script with status 2."""
    opts = {"--python": "debian", "--known-issue": None}
    for name in opts:
        if name in argv:
            i = argv.index(name)
            opts[name] = argv[i + 1]
            del argv[i:i + 2]
    issue = opts["--known-issue"]
    if issue is not None and issue not in ISSUES:
        print(f"unknown --known-issue {issue!r}; one of {', '.join(ISSUES)}", file=sys.stderr)
        raise SystemExit(2)
    return opts["--python"], issue


def check(issue, view, dump, truth, detected, passed, log):
    """Applies `--known-issue issue` to a step check that `passed` or not. Returns the errors to report
    instead of the check's own ([] when the issue occurred exactly as known), or None: the check's own
    verdict stands."""
    if issue is None:
        return None
    recognise, intermittent = RECOGNISERS[issue]
    if passed:
        if intermittent:
            log(f"known issue {issue} (tests/steps/known_issues.py) did not occur in this run")
            return []
        return [f"the known issue {issue} did not occur: the step starts are exact; remove --known-issue "
                f"{issue} from meson.build (and its entry in docs/testing.md)"]
    what = recognise(view, dump, truth, detected)
    if what is None:
        return None
    log(f"KNOWN ISSUE {issue} (tests/steps/known_issues.py): {what}")
    return []
