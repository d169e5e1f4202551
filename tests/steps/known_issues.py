"""Known runtime issues that a step test recognises exactly, so that it keeps checking everything else.

A test given `--known-issue NAME` (in meson.build, with a comment) expects the issue: where its step
check fails in exactly the issue's way, the test reports "KNOWN ISSUE" and goes on; where the check
passes, the test fails and says to remove the flag (the issue is fixed, or no longer reached); any other
failure fails as always. docs/testing.md lists the issues.

None is open. Fixed, and their recognisers removed (docs/testing.md says how each was found):
- step1-buffers (a library's one-time buffers in the first step, MKL's sgemm workspace or oneDNN's
  primitives, turned the lock's rotation) and autocast-rotation (1.13's bf16 autocast, rotation off by 9
  of 13): steps now begin where the bytes live are least (docs/step-detection.md, "Where a step starts");
- compile-step1 (torch.compile: a phase of period 1 on 478 equal PyBytes allocations inside the first
  step, and steps 2-7 not found): no step of one allocation is locked on, and warm-up steps with the
  step's sizes at other sites are counted (docs/step-detection.md, "Warm-up at other sites").
"""

# Each entry: NAME -> recogniser(view, dump, truth, detected) returning a description of the match, or None.
RECOGNISERS = {}
ISSUES = tuple(RECOGNISERS)


def check(issue, view, dump, truth, detected, passed, log):
    """Applies `--known-issue issue` to a step check that `passed` or not. Returns the errors to report
    instead of the check's own ([] when the issue occurred exactly as known), or None: the check's own
    verdict stands."""
    if issue is None:
        return None
    if passed:
        return [f"the known issue {issue} did not occur: the step starts are exact; remove --known-issue "
                f"{issue} from meson.build (and its entry in docs/testing.md)"]
    what = RECOGNISERS[issue](view, dump, truth, detected)
    if what is None:
        return None
    log(f"KNOWN ISSUE {issue} (tests/steps/known_issues.py): {what}")
    return []
