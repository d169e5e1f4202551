"""Known runtime issues that a step test recognises exactly, so that it keeps checking everything else.

A test given `--known-issue NAME` (in meson.build, with a comment) expects the issue: where its step
check fails in exactly the issue's way, the test reports "KNOWN ISSUE" and goes on; where the check
passes, the test fails and says to remove the flag (the issue is fixed, or no longer reached); any other
failure fails as always. docs/testing.md lists the issues.

Fixed, and their recognisers removed: step1-buffers (a library's one-time buffers in the first step, MKL's
sgemm workspace or oneDNN's primitives, turned the lock's rotation) and autocast-rotation (1.13's bf16
autocast, rotation off by 9 of 13). Steps now begin where the bytes live are least
(docs/step-detection.md, "Where a step starts").

compile-step1: torch.compile's first step (TorchDynamo and Inductor at work, g++ run as a child) holds
  runs of equal Python allocations: 478 PyBytes of 1048609 bytes in a row (a file read in 1 MiB chunks),
  then shorter runs of 3 and 4 sizes (_PyBytes_Resize of a child's output). The detector locks a phase
  of period 1 on the first: 478 "steps" of one allocation each, inside the first true step, which is
  the dump's main phase (the most steps). The training phase (6 allocations a step, all at one site of
  the generated code) locks late: its first detected step is the eighth true one, and no step before
  it is inferred, so steps 2-7 are not found. Recognised as: every detected start before the second
  true step lies inside the first true step, at least 32 of them; the true starts from the fourth step
  on that were not detected are a prefix ending before step 10; from there on every true start is
  detected and nothing else is.
"""

ISSUES = ("compile-step1",)


def compile_step1(truth, detected, warmup=3):
    """A description of the match if the detected starts show compile-step1, else None (module doc)."""
    if len(truth) < 12:
        return None
    inside = [d for d in detected if d < truth[1]]
    if len(inside) < 32 or any(d < truth[0] for d in inside):
        return None
    det = set(detected)
    missing = [k for k in range(warmup, len(truth)) if truth[k] not in det]
    if missing != list(range(warmup, warmup + len(missing))) or warmup + len(missing) >= 9:
        return None
    first = warmup + len(missing)
    if {d for d in detected if d >= truth[1]} != set(truth[first:]):
        return None
    return (f"{len(inside)} steps detected inside the first true step (a phase of period "
            f"{inside[1] - inside[0] if len(inside) > 1 else '?'}); the training steps found from step "
            f"{first + 1} on, exactly, steps {warmup + 1}-{first} not found")


def check(issue, view, dump, truth, detected, passed, log):
    """Applies `--known-issue issue` to a step check that `passed` or not. Returns the errors to report
    instead of the check's own ([] when the issue occurred exactly as known), or None: the check's own
    verdict stands."""
    if issue is None:
        return None
    if passed:
        return [f"the known issue {issue} did not occur: the step starts are exact; remove --known-issue "
                f"{issue} from meson.build (and its entry in docs/testing.md)"]
    what = {"compile-step1": lambda: compile_step1(truth, detected)}[issue]()
    if what is None:
        return None
    log(f"KNOWN ISSUE {issue} (tests/steps/known_issues.py): {what}")
    return []
