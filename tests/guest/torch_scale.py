#!/usr/bin/python3
"""A model of a real size trained under the sentinel policy in the two-node guest (issue 15, item 3).

Runs one of scripts/scale_models.py's models (a training script as users write it: no Sentinel API, no
step marks, a new random batch every step) twice, side by side, on the interpreter that runs this script:
once without the library (the reference) and once under libsentinel.so in run mode, with the sentinel
policy and a fast tier of --budget (default 20%) of the tracked peak. No step-time trial
(SENTINEL_TRIAL_STEPS=0): the moving schedule itself is carried out, as in torch_policies.py (under TCG a
trial would time two schedules of an emulator; scripts/bench-tiers runs it on the slow-tier guest).

Checks:
  - losses bit-identical to the reference, step by step;
  - every step found, the main phase profiled, planned and checked page by page after the boundaries'
    moves (the runtime's placement check: move_pages(2) queries of the touched pages);
  - the fast tier after each boundary's moves within the budget;
  - the measured fast-hit share within --tolerance (0.02) of the plan's prediction (measured within 0.0005
    since the fixes of 2026-12-03; the two bugs they fixed made it 0.025-0.05 short, docs/performance.md);
  - no page that failed to move, no object on the other node than the plan wants at a boundary
    (misplaced) beyond --max-misplaced (0).
Prints the figures docs/performance.md quotes (one line each, `torch-scale:`), and with --json writes them.

usage: torch_scale.py [--model dlrm] [--size s] [--batch B] [--steps 16] [--budget 20%] [--ids hashed|ranked] [--chunk SIZE]
                      [--jobs 2] [--json OUT] [--keep DIR]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
import sentinel_dump  # noqa: E402  (tests/lib)

MODELS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts", "scale_models.py")
MiB = 1 << 20


def run_config(tmp, label, args, extra_env):
    out = os.path.join(tmp, f"{label}.json")
    env = dict(os.environ, **extra_env)
    t0 = time.monotonic()
    cmd = [sys.executable, MODELS, args.model, "--size", args.size, "--steps", str(args.steps), "--out", out]
    if args.model == "dlrm":
        cmd += ["--ids", args.ids]
    if args.batch:
        cmd += ["--batch", str(args.batch)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
    wall = time.monotonic() - t0
    if p.returncode:
        # The tail holds a crash's report (its frames as module+offset, docs/profiling.md).
        return None, f"{label}: status {p.returncode} after {wall:.0f} s: {p.stderr[-4000:]}"
    result = json.load(open(out))
    result["wall_s"] = wall
    result["stderr"] = p.stderr
    return result, None


def steady_ms(result, first):
    tail = result["step_ns"][first:] or result["step_ns"]
    return statistics.median(tail) / 1e6


def check(args, ref, got, summary):
    """The failures, and the figures to print."""
    failures = []
    if got["losses"] != ref["losses"]:
        first = next(i for i, (a, b) in enumerate(zip(got["losses"], ref["losses"])) if a != b) \
            if len(got["losses"]) == len(ref["losses"]) else "count"
        failures.append(f"losses differ from the run without the library (first at step {first})")
    main = [ph for ph in summary["phases"] if ph.get("main")]
    if not main:
        return failures + ["no main phase in the dump"], {}
    ph = main[0]
    t = summary.get("tiering") or {}
    if t.get("dry_run") or t.get("slow_node", -1) < 0:
        failures.append("the runtime saw no slow node: a dry run")
    if ph.get("steps") != args.steps:
        failures.append(f"{ph.get('steps')} steps found in the main phase, {args.steps} trained")
    for what in ("profiled", "planned", "checked"):
        if not ph.get(what):
            failures.append(f"the main phase was not {what}")
    budget = ph.get("fast_budget_bytes") or 0
    peak = ph.get("fast_peak_bytes") or 0
    if budget and peak > budget:
        failures.append(f"the fast tier held {peak / MiB:.1f} MiB after a boundary's moves, above the "
                        f"{budget / MiB:.1f} MiB budget")
    measured, predicted = ph.get("fast_hit_share"), ph.get("predicted_hit_share")
    if measured is None or predicted is None:
        failures.append("no measured or no predicted fast-hit share")
    elif abs(measured - predicted) > args.tolerance:
        failures.append(f"measured fast-hit share {measured:.3f} is {measured - predicted:+.3f} from the predicted "
                        f"{predicted:.3f} (tolerance {args.tolerance})")
    if summary.get("failed_pages"):
        failures.append(f"{summary['failed_pages']} pages failed to move")
    if (ph.get("misplaced_objects") or 0) > args.max_misplaced:
        failures.append(f"{ph['misplaced_objects']} of {ph.get('verified_objects')} verified objects were on the "
                        f"other node than the plan's at a boundary")
    warm = ph.get("warmup") or {}
    steady_from = warm.get("steady_from") or args.steps // 2
    moved_steps = ph.get("migrated_steps") or 0
    figures = {
        "model": args.model, "size": args.size, "batch": (got.get("config") or {}).get("batch"), "steps": args.steps,
        "torch": got.get("torch_version"),
        "ids": args.ids if args.model == "dlrm" else None, "chunk_bytes": args.chunk or "2M (default)",
        "plan_entries": ph.get("plan_entries"), "identities": ph.get("identities"),
        "peak_rss_reference_bytes": ref["maxrss_bytes"], "peak_rss_sentinel_bytes": got["maxrss_bytes"],
        "tracked_peak_bytes": ph.get("footprint_peak_bytes"), "fast_budget_bytes": budget,
        "fast_peak_bytes": peak, "planned_moved_bytes_per_step": ph.get("planned_moved_bytes_per_step"),
        "migrated_bytes": ph.get("migrated_bytes"), "migrated_steps": moved_steps,
        "migrated_bytes_per_step": (ph.get("migrated_bytes") or 0) / moved_steps if moved_steps else 0,
        "late_migrations": ph.get("late_migrations"), "failed_pages": summary.get("failed_pages"),
        "migrator_bytes_per_s": summary.get("migrator_bytes_per_s"),
        "fast_hit_share": measured, "predicted_hit_share": predicted, "checked_steps": ph.get("checked_steps"),
        "misplaced_objects": ph.get("misplaced_objects"), "verified_objects": ph.get("verified_objects"),
        "steps_found": ph.get("steps"), "lock_step": warm.get("lock_step"), "steady_from": steady_from,
        "profiled_faults": (ph.get("profile") or {}).get("faults"),
        "steady_step_ms_reference": steady_ms(ref, steady_from), "steady_step_ms_sentinel": steady_ms(got, steady_from),
        "wall_s_reference": ref["wall_s"], "wall_s_sentinel": got["wall_s"],
        "losses_identical": got["losses"] == ref["losses"],
    }
    return failures, figures


def timeline(dump, phase, view):
    """Where the plan's take-over and the placement check fell, from the dump's STEPS and MIGRATION_LOG: the
    main phase's first planned step, the step of its last move before the check, the checked steps and what
    moved during them (a check that overlaps the take-over measures pages still on their way)."""
    d = sentinel_dump.read(dump, only=["STEPS", "MIGRATION_LOG"], view=view)
    all_steps = d.get("STEPS") or []
    steps = [(i, s) for i, s in enumerate(all_steps) if s["phase"] == phase]
    profiled = [i for i, s in steps if s["flags"] & sentinel_dump.STEP_PROFILED]
    checked = [i for i, s in steps if s["flags"] & sentinel_dump.STEP_CHECKED]
    if not profiled or not checked:
        return None
    starts = [(s["start_ns"], i) for i, s in steps if s["start_ns"]]

    def step_at(ns):
        at = None
        for start, i in starts:
            if start <= ns:
                at = i
        return at
    first_checked = all_steps[checked[0]]["start_ns"]
    after = [s["start_ns"] for i, s in steps if i > checked[-1] and s["start_ns"]]
    check_end = after[0] if after else float("inf")
    moves = [m for m in d.get("MIGRATION_LOG") or [] if m["phase"] == phase]
    before = [m for m in moves if m["end_ns"] <= first_checked]
    during = sum(m["bytes"] for m in moves if m["start_ns"] < check_end and m["end_ns"] > first_checked)
    return {"planned_from": profiled[-1] + 1, "checked_steps": checked,
            "moved_before_check_bytes": sum(m["bytes"] for m in before),
            "last_move_before_check_step": step_at(before[-1]["end_ns"]) if before else None,
            "moved_during_check_bytes": during}


def report(f):
    print(f"torch-scale: {f['model']} {f['size']} (batch {f['batch']}), torch {f['torch']}, {f['steps']} steps: peak RSS "
          f"{f['peak_rss_reference_bytes'] / MiB:.0f} MiB without the library, {f['peak_rss_sentinel_bytes'] / MiB:.0f} "
          f"MiB under it; tracked peak {f['tracked_peak_bytes'] / MiB:.0f} MiB")
    print(f"torch-scale: budget {f['fast_budget_bytes'] / MiB:.1f} MiB, fast tier at most {f['fast_peak_bytes'] / MiB:.1f} "
          f"MiB after a boundary's moves; fast-hit share measured {f['fast_hit_share']}, predicted "
          f"{f['predicted_hit_share']} ({f['checked_steps']} checked steps; misplaced {f['misplaced_objects']} of "
          f"{f['verified_objects']} verified objects)")
    print(f"torch-scale: moves planned {f['planned_moved_bytes_per_step'] / MiB:.1f} MiB a step, done "
          f"{f['migrated_bytes_per_step'] / MiB:.1f} MiB a step over {f['migrated_steps']} steps "
          f"({f['migrated_bytes'] / MiB:.0f} MiB), {f['late_migrations']} late, {f['failed_pages']} pages failed; "
          f"migrator {(f['migrator_bytes_per_s'] or 0) / MiB:.0f} MiB/s")
    print(f"torch-scale: steps found {f['steps_found']}, locked at step {f['lock_step']}, steady from {f['steady_from']}, "
          f"{f['profiled_faults']} profiling faults; steady step (TCG, not a speed figure) "
          f"{f['steady_step_ms_reference']:.0f} ms without, {f['steady_step_ms_sentinel']:.0f} ms under the library; "
          f"wall {f['wall_s_reference']:.0f} / {f['wall_s_sentinel']:.0f} s; losses "
          f"{'identical' if f['losses_identical'] else 'DIFFER'}")
    t = f.get("timeline")
    if t:
        print(f"torch-scale: planned from step {t['planned_from']}, {t['moved_before_check_bytes'] / MiB:.0f} MiB moved "
              f"before the check (the last in step {t['last_move_before_check_step']}), checked steps "
              f"{t['checked_steps'][0]}-{t['checked_steps'][-1]}, {t['moved_during_check_bytes'] / MiB:.1f} MiB moved "
              f"during them")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="dlrm", choices=("dlrm", "gpt", "resnet"))
    ap.add_argument("--size", default="s")
    ap.add_argument("--batch", type=int, help="the batch instead of the size's (scale_models.py --batch)")
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--budget", default="20%")
    ap.add_argument("--ids", default="hashed", choices=("hashed", "ranked"),
                    help="dlrm: hot rows scattered through the tables (hashed) or at their start (ranked)")
    ap.add_argument("--chunk", help="SENTINEL_CHUNK_BYTES for the sentinel run (default: the library's, 2M; "
                                    "0: every object planned whole)")
    ap.add_argument("--jobs", type=int, default=2, help="the two runs side by side (2) or one after the other (1)")
    ap.add_argument("--tolerance", type=float, default=0.02, help="measured against predicted fast-hit share")
    ap.add_argument("--max-misplaced", type=int, default=0)
    ap.add_argument("--timeout", type=int, default=1500, help="seconds per run")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--keep", help="copy the dump here (a directory shared with the host)")
    args = ap.parse_args()
    if not os.path.exists("/sys/devices/system/node/node1"):
        print("SKIP: no second NUMA node")
        return 77
    lib = os.environ["SENTINEL_PRELOAD"]
    view = os.path.join(os.environ["SENTINEL_BUILD_ROOT"], "tools", "sentinel-view")
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "sentinel.prof")
        configs = [("reference", {}),
                   ("sentinel", {"LD_PRELOAD": lib, "SENTINEL_MODE": "run", "SENTINEL_POLICY": "sentinel",
                                 "SENTINEL_FAST_BYTES": args.budget, "SENTINEL_TRIAL_STEPS": "0",
                                 "SENTINEL_DUMP": dump, **({"SENTINEL_CHUNK_BYTES": args.chunk} if args.chunk else {})})]
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            runs = list(pool.map(lambda c: run_config(tmp, c[0], args, c[1]), configs))
        errors = [e for _, e in runs if e]
        if errors:
            for e in errors:
                print("FAIL:", e)
            return 1
        ref, got = runs[0][0], runs[1][0]
        try:
            summary = sentinel_dump.summary(dump, view)
        except sentinel_dump.DumpError as e:
            print(f"FAIL: sentinel-view summary: {e}")
            return 1
        failures, figures = check(args, ref, got, summary)
        if figures:  # check() found the main phase
            main_phase = next(ph for ph in summary["phases"] if ph.get("main"))
            try:
                figures["timeline"] = timeline(dump, main_phase.get("phase"), view)
            except sentinel_dump.DumpError as e:
                print(f"torch-scale: no timeline: {e}")
            report(figures)
        if args.json and figures:
            with open(args.json, "w") as f:
                json.dump(figures, f, indent=1)
        if args.keep:
            import shutil
            shutil.copy(dump, os.path.join(args.keep, f"torch-scale-{args.model}-{args.size}.prof"))
        if failures:
            print(sentinel_dump.failure_context("the sentinel run", got["stderr"], dump, view))
        for f in failures:
            print("FAIL:", f)
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
