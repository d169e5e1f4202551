#!/usr/bin/python3
"""Placement in the two-node guest, checked page by page: schedule_loop (a loop with a known access
schedule, tests/guest/schedule_loop.c) runs under libsentinel.so in run mode with each policy at
SENTINEL_FAST_BYTES=20%. For every object the program observes (it asks the kernel where the object's
pages are at the end of each interval) the node must be the one the executed plan gives for that
interval, the fast node must never hold more than the budget of the plan's objects, and the program's
checksum must equal the one of a run without the library.

usage: check_schedule.py [--policies p,q,...] [--budget 20%] [--steps N] [--reps R]
env:   SENTINEL_PRELOAD (libsentinel.so), SENTINEL_BUILD_ROOT (the build tree)
Exit 0 when every check holds, 1 otherwise, 77 when the guest has no second node.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get('SENTINEL_SOURCE_ROOT', os.path.dirname(os.path.dirname(HERE))),
                                'scripts', 'guest'))
import emutime  # noqa: E402

FAST_NODE = 0


def run(cmd, env=None, timeout=600):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def checksum_of(stdout):
    for line in stdout.splitlines():
        if "checksum" in line:
            return line.split("checksum")[-1].strip()
    return None


def check_emulated_trial(tag, trial, counts, skip, stderr):
    """The trial was timed by the emulated clock: the dump says so, and each candidate's mean step lies
    within the laps the counts file holds for the runtime's markers (recomputed here with emutime)."""
    if trial.get("clock") != "emulated":
        return [f"{tag} the trial was timed in {trial.get('clock')} time, not emulated; stderr: {stderr[-600:]}"]
    header, records = emutime.read(counts)
    laps = emutime.runtime_laps(records[skip:], emutime.trial_clock_prices(emutime.slow_ns(header)))[1:]  # the first: since open
    if len(laps) < 4:
        return [f"{tag} {len(laps)} laps of the runtime's emulated clock in the counts file"]
    lo, hi = min(laps), max(laps)
    print(f"{'':12s} emulated clock: {len(laps)} laps, {lo / 1e6:.1f}-{hi / 1e6:.1f} ms")
    out = []
    for name in ("moving_step_ns", "no_moves_step_ns", "replanned_step_ns"):
        v = trial.get(name, 0)
        if v and not lo <= v <= hi:
            out.append(f"{tag} the trial's {name} {v} is outside the clock's laps in the counts file ({lo}-{hi})")
    return out


def share_as_predicted(tag, what, share, predicted):
    """A schedule without moves: nothing moves in the checked steps, nor do births depend on timing, so the
    placement check must measure what the plan predicts (births sent slow for a room the count had not seen
    freed yet showed here as 0.22-0.29 against 0.303)."""
    if share is not None and predicted is not None and abs(share - predicted) > 0.03:
        return [f"{tag} {what}: measured fast-hit share {share} is not the predicted {predicted} (within 0.03)"]
    return []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--policies", default="sentinel,first-touch,all-slow,all-fast,hot")
    ap.add_argument("--budget", default="20%")
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--reps", type=int, default=2, help="schedule_loop's passes over the buffers per interval")
    ap.add_argument("--tail", type=int, default=8, help="steps at the end that are checked (steady state)")
    ap.add_argument("--faults", help="SENTINEL_FAULT_INJECT for the sentinel policy's run (e.g. a migrator "
                    "that slows down in mid-run: move_delay_ms:N,move_delay_from:CALL)")
    ap.add_argument("--expect-watch", help="the bandwidth watch must end in this status (e.g. followed)")
    ap.add_argument("--trial-steps", type=int,
                    help="SENTINEL_TRIAL_STEPS (default: the runtime's); with a trial the sentinel policy's must end "
                         "before the checked steps")
    ap.add_argument("--step-costs", help="SENTINEL_STEP_COSTS (default: the runtime's, auto); off plans by fast-hit "
                                          "bytes, so that the sentinel policy's moving schedule is what runs")
    ap.add_argument("--expect-fit", help="the sentinel policy's slow-cost fit must end with this status (e.g. fitted)")
    ap.add_argument("--trial-clock", choices=("wall", "emulated"), default="wall",
                    help="what times the sentinel policy's step-time trial (SENTINEL_TRIAL_CLOCK): emulated reads the "
                         "slow-tier plugin's counts ($GUEST_COUNTS) at T_emu's prices, and the check recomputes its "
                         "laps from the counts file")
    ap.add_argument("--migrate", choices=("auto", "move_pages", "mbind"),
                    help="SENTINEL_MIGRATE (default: the runtime's, auto: the faster at start)")
    ap.add_argument("--keep", help="copy each policy's dump and observations into this directory")
    ap.add_argument("--thp", choices=("always", "madvise", "never"),
                    help="set transparent huge pages to this mode first (the guest's /sys), and run the loop with "
                         "--huge: objects whose slots may hold huge pages; under always, some must")
    ap.add_argument("--marks", action="store_true",
                    help="the loop marks every step with sentinel_step(): steps given by the program, not found; "
                         "every step must be a marked one")
    args = ap.parse_args()
    build = os.environ["SENTINEL_BUILD_ROOT"]
    lib = os.environ["SENTINEL_PRELOAD"]
    prog = os.path.join(build, "tests", "guest", "schedule_loop")
    view = os.path.join(build, "tools", "sentinel-view")
    if not os.path.exists("/sys/devices/system/node/node1"):
        print("SKIP: no second NUMA node")
        return 77

    counts = os.environ.get("GUEST_COUNTS")
    if args.trial_clock == "emulated" and not counts:
        print("SKIP: --trial-clock emulated needs the slow-tier plugin ($GUEST_COUNTS unset)")
        return 77
    base = [prog, "--steps", str(args.steps), "--reps", str(args.reps)]
    if args.thp:
        with open("/sys/kernel/mm/transparent_hugepage/enabled", "w") as f:
            f.write(args.thp)
        base.append("--huge")
    if args.marks:
        base.append("--marks")
    ref = run(base)
    if ref.returncode or not checksum_of(ref.stdout):
        print(f"FAIL: the loop without the library: status {ref.returncode}: {ref.stderr[-500:]}")
        return 1
    want = checksum_of(ref.stdout)
    failures = []
    shares = {}
    with tempfile.TemporaryDirectory() as tmp:
        for policy in args.policies.split(","):
            dump = os.path.join(tmp, f"{policy}.prof")
            obs = os.path.join(tmp, f"{policy}.obs")
            env = dict(os.environ, LD_PRELOAD=lib, SENTINEL_MODE="run", SENTINEL_POLICY=policy,
                       SENTINEL_FAST_BYTES=args.budget, SENTINEL_DUMP=dump, SENTINEL_LOG="info")
            if args.trial_steps is not None:
                env["SENTINEL_TRIAL_STEPS"] = str(args.trial_steps)
            if args.step_costs is not None:
                env["SENTINEL_STEP_COSTS"] = args.step_costs
            if args.migrate is not None:
                env["SENTINEL_MIGRATE"] = args.migrate
            if args.faults and policy == "sentinel":
                env["SENTINEL_FAULT_INJECT"] = args.faults
            if args.trial_clock == "emulated":
                header, before = emutime.read(counts)
                env["SENTINEL_TRIAL_CLOCK"] = emutime.trial_clock_value(
                    emutime.trial_clock_prices(emutime.slow_ns(header)), counts)
            p = run(base + ["--out", obs], env=env)
            tag = f"{policy}:"
            if p.returncode:
                failures.append(f"{tag} status {p.returncode}: {p.stderr[-800:]}")
                continue
            if checksum_of(p.stdout) != want:
                failures.append(f"{tag} checksum {checksum_of(p.stdout)} differs from {want} without the library")
            if args.thp:
                huge = next((int(x.split()[-2]) for x in p.stderr.splitlines() if "AnonHugePages:" in x), 0)
                print(f"{policy:12s} THP {args.thp}: {huge} kB in huge pages at the end")
                if args.thp == "always" and huge == 0:
                    failures.append(f"{tag} THP always, yet no object was backed by huge pages")
            if args.keep:
                subprocess.run(["cp", dump, obs, args.keep])
            s = json.loads(run([view, "summary", "--json", dump]).stdout)
            if args.marks and s.get("steps_marked") != args.steps:
                failures.append(f"{tag} {s.get('steps_marked')} marked steps, expected {args.steps}")
            plans = s.get("plans") or ([s["plan"]] if s.get("plan") else [])
            if not plans:
                failures.append(f"{tag} no plan in the dump; stderr: {p.stderr[-800:]}")
                continue
            phase = max(plans, key=lambda pl: next((ph["steps"] for ph in s["phases"] if ph["phase"] == pl["phase"]), 0))["phase"]
            pj = run([view, "plan", "--json", "--phase", str(phase), dump])
            if pj.returncode:
                failures.append(f"{tag} sentinel-view plan failed: {pj.stderr.strip()}")
                continue
            plan = json.loads(pj.stdout)
            rec = plan.get("recorded_plan", {})
            if rec.get("compared") and not rec.get("identical"):
                failures.append(f"{tag} the runtime's plan differs from the one recomputed offline: {rec.get('differences')}")
            by_size = {e["size"]: e for e in plan["entries"]}
            budget = plan["fast_budget_bytes"]
            mismatches = settled_mismatches = checked = over_budget = 0
            fast_by_slot = {}
            mismatched = {}  # name: (count, steps seen, wanted fast, sampled pages on node 0 / present)
            first = args.steps - args.tail
            for line in open(obs):
                step, interval, name, size, node, split = line.split()
                step, interval, size, node = int(step), int(interval), int(size), int(node)
                if step < first or node < 0:
                    continue
                e = by_size.get(size)
                if e is None:
                    failures.append(f"{tag} object {name} ({size} bytes) is not in the plan")
                    break
                want_fast = bool((e["fast_mask"] >> interval) & 1)
                checked += 1
                on_fast = node == FAST_NODE
                # Settled: the plan has wanted this node for this and the two intervals before (the
                # object alive in all three), so any move for it had two intervals to finish.
                n = plan["intervals"]
                alive = e.get("alive_mask", (1 << n) - 1)
                back = [(interval - d) % n for d in range(3)]
                settled = all((alive >> b) & 1 and bool((e["fast_mask"] >> b) & 1) == want_fast for b in back)
                if on_fast != want_fast:
                    mismatches += 1
                    n_seen, steps_seen, _, splits = mismatched.get(name, (0, set(), want_fast, set()))
                    mismatched[name] = (n_seen + 1, steps_seen | {step}, want_fast, splits | {split})
                    if settled:
                        settled_mismatches += 1
                if on_fast:
                    fast_by_slot[(step, interval)] = fast_by_slot.get((step, interval), 0) + size
            over_budget = sum(1 for v in fast_by_slot.values() if v > budget)
            share = s.get("fast_hit_share")
            shares[policy] = share
            late = s.get("late_migrations", 0)
            print(f"{policy:12s} budget {budget} B; {checked} observations, {mismatches} not where the plan says "
                  f"({late} late migrations in the run); intervals over budget: {over_budget}; "
                  f"fast-hit share measured {share} predicted {s.get('predicted_hit_share')}; "
                  f"migrated {s.get('migrated_bytes')} B")
            verified = sum(pi.get("verified", 0) for pi in s.get("placement_intervals") or [])
            misplaced = sum(pi.get("misplaced", 0) for pi in s.get("placement_intervals") or [])
            steady_peak = s.get("fast_peak_bytes") or 0
            print(f"{'':12s} at boundaries (the runtime's own check): {misplaced} of {verified} objects misplaced; "
                  f"fast-tier occupancy after each boundary's moves at most {steady_peak} B; moved with "
                  f"{(s.get('tiering') or {}).get('move_method')}")
            # The slow cost fitted to the steady steps (docs/tiering.md, "The fitted slow cost"): with no trial,
            # 24 steps leave the fit's 5 steady steps after the check. All-fast has nothing slow to fit from.
            fit = (s.get("plan") or {}).get("fit")
            print(f"{'':12s} fitted slow cost: {fit}")
            no_trial = args.trial_steps == 0 or not (s.get("plan") or {}).get("trial")
            if no_trial and args.steps >= 24 and not fit:
                failures.append(f"{tag} no slow cost fitted over the steady steps; stderr: {p.stderr[-600:]}")
            if policy == "sentinel" and args.expect_fit and (fit or {}).get("status") != args.expect_fit:
                failures.append(f"{tag} the slow-cost fit is {fit}, not {args.expect_fit}")
            if fit and policy == "all-fast" and fit.get("status") != "little slow":
                failures.append(f"{tag} all-fast fitted a slow cost: {fit}")
            # Policies that never move must be exact. Those that move may lag behind a boundary when the
            # guest's migration bandwidth (or a loaded host) cannot keep up — counted as late — but an
            # object whose planned node has not changed for three intervals must be there (up to 3% of
            # the observations: a host running other work can starve the guest's migrator). hot asks for
            # more moves than the guest's bandwidth allows (it reacts to every interval); it is a
            # baseline, and only its budget and results are checked.
            static = policy in ("all-fast", "all-slow", "first-touch")
            trial = (s.get("plan") or {}).get("trial")
            if policy == "sentinel" and args.step_costs != "off" and not trial and not plan.get("moved_bytes_per_step", 0):
                # Step costs (auto, the default): the plan that models fastest moves nothing, so there is no
                # trial; nothing moves in the checked steps, and the check must measure what it predicts.
                print(f"{'':12s} no step-time trial: the plan of least modeled step time moves nothing "
                      f"(objective {plan.get('objective')}, {plan.get('slow_ns_per_kib')} ns/KiB slow, "
                      f"{plan.get('move_ns_per_kib')} ns/KiB moved)")
                static = True
                failures += share_as_predicted(tag, "the plan without moves", share, s.get("predicted_hit_share"))
            elif policy == "sentinel" and args.trial_steps != 0:
                # The step-time trial: both schedules timed, the faster kept, and it must have ended before
                # the checked steps (it starts right after planning and takes at least 2 + 2 x SENTINEL_TRIAL_STEPS
                # steps, 1 + SENTINEL_TRIAL_STEPS more when the migrator's bandwidth called for a re-plan).
                if not trial or trial.get("state") != "done":
                    failures.append(f"{tag} the step-time trial did not end: {trial}")
                else:
                    print(f"{'':12s} step-time trial: moving {trial['moving_step_ns'] / 1e6:.1f} ms/step "
                          f"(predicted {trial['moving_predicted_hit_share']:.3f}), without moves "
                          f"{trial['no_moves_step_ns'] / 1e6:.1f} ms/step (predicted "
                          f"{trial['no_moves_predicted_hit_share']:.3f}), re-plan {trial.get('replan')} at "
                          f"{trial.get('achieved_bytes_per_s', 0) / 1e6:.1f} MB/s "
                          f"({trial.get('replanned_step_ns', 0) / 1e6:.1f} ms/step, predicted "
                          f"{trial.get('replanned_predicted_hit_share', 0):.3f}): kept {trial['kept']}")
                    if args.trial_clock == "emulated":
                        failures += check_emulated_trial(tag, trial, counts, len(before), p.stderr)
                    # What a moved KiB cost the training thread, fitted to the two schedules (format 1.10): only
                    # in wall time, from 1 MiB moved a step, with a slow cost to price the saved accesses at.
                    moved = trial.get("moving_moved_bytes_per_step", 0)
                    want = ("emulated" if trial.get("clock") == "emulated" else
                            "little moved" if moved < (1 << 20) else
                            "no slow cost" if not plan.get("slow_ns_per_kib") else ("fitted", "free"))
                    print(f"{'':12s} move cost fitted: {trial.get('move_fit')} {trial.get('fit_move_ns_per_kib')} ns/KiB "
                          f"(planned {plan.get('move_ns_per_kib')})")
                    if trial.get("move_fit") not in (want if isinstance(want, tuple) else (want,)):
                        failures.append(f"{tag} the move fit is {trial.get('move_fit')}, not {want}")
                    if trial["kept"] == "no-moves":
                        static = True  # nothing moves in the checked steps: every observation must match
                        failures += share_as_predicted(tag, "the schedule without moves", share,
                                                       s.get("predicted_hit_share"))
                        if plan.get("moved_bytes_per_step", 0):
                            failures.append(f"{tag} the trial kept the schedule without moves, but the dumped plan moves "
                                            f"{plan['moved_bytes_per_step']} B per step")
            # The bandwidth watch (docs/tiering.md, format 1.12): with no trial, a schedule that moves MiBs a step
            # is measured over a window of steps and re-planned where the migrator's bandwidth is 1.5x off the
            # planned one; the re-plan must take effect before the checked steps (they check the dumped plan).
            watch = (s.get("plan") or {}).get("watch")
            if policy == "sentinel" and watch:
                probe = (s.get("tiering") or {}).get("migrate_bytes_per_s", 0)
                print(f"{'':12s} bandwidth watch: {watch['status']} at {watch['bytes_per_s'] / 1e6:.1f} MB/s over "
                      f"{watch['windows']} window(s), the probe's {probe / 1e6:.1f} MB/s"
                      + (f"; re-planned from step {watch['replan_step']} (predicted {watch['predicted_hit_share']:.3f}, "
                         f"{watch['moved_bytes_per_step']} B moved a step)" if watch["replan_step"] else "")
                      + f"; {watch.get('drift_replans', 0)} re-plan(s) for a sustained drift")
                if watch["replan_step"] and watch["replan_step"] >= first - 2:
                    failures.append(f"{tag} the watch re-planned at step {watch['replan_step']}, too late for the checked "
                                    f"steps from {first}")
            if policy == "sentinel" and args.expect_watch and (watch or {}).get("status") != args.expect_watch:
                failures.append(f"{tag} the bandwidth watch ended {watch}, not {args.expect_watch}; "
                                f"stderr: {p.stderr[-600:]}")
            # A migrator slowed in mid-run (--faults move_slow_x): once the watch followed the drift, the placement
            # check runs again on the new schedule, which must measure what it predicts within 0.2 (0.04-0.11 above
            # it in five runs; the schedule planned before the drift, re-planned without the budget in its model,
            # measured 0.145 against 0.488). The followed schedule may still leave some moves unfinished, which its
            # model counts late: page positions are not judged.
            drifted = policy == "sentinel" and "move_slow_x" in (args.faults or "")
            if drifted and (watch or {}).get("status") == "followed":
                steps = json.loads(run([view, "records", "--json", "--only", "STEPS", "--", dump]).stdout)["STEPS"]
                rechecked = [i for i, st in enumerate(steps) if st["flags"] & 0x10 and i > watch["replan_step"]]
                print(f"{'':12s} after the drift re-plan: checked steps {rechecked}, fast-hit share measured {share} "
                      f"predicted {s.get('predicted_hit_share')}; the plan's flags {plan.get('flags', 0):#x}")
                if not rechecked:
                    failures.append(f"{tag} no placement check after the drift re-plan at step {watch['replan_step']}")
                elif share is None or abs(share - s.get("predicted_hit_share", 0)) > 0.2:
                    failures.append(f"{tag} after the drift re-plan the check measured {share} against "
                                    f"{s.get('predicted_hit_share')} predicted")
            moved_planned = (s.get("plan") or {}).get("moved_bytes_per_step", 0)
            if policy == "sentinel" and args.trial_steps == 0 and moved_planned >= (1 << 20) and not watch:
                failures.append(f"{tag} the schedule moves {moved_planned} B a step, and the watch measured no window")
            print(f"{'':12s} {settled_mismatches} of the mismatches where the plan's node had been the same for three intervals")
            if mismatched:  # which objects, so that a failure says where to look
                # Whether a mismatched object is split between the nodes (a move done in part), and what the
                # migrator counted: failed pages, records it corrected, frees that raced a move, promotions
                # the budget held back.
                print(f"{'':12s} mismatched objects: " + ", ".join(
                    f"{name} {n}x in steps {min(st)}-{max(st)} (plan: {'fast' if wf else 'slow'}; sampled pages "
                    f"on node 0: {' '.join(sorted(sp))})"
                    for name, (n, st, wf, sp) in sorted(mismatched.items())))
                stats = s.get("stats") or {}
                print(f"{'':12s} migrator: {s.get('failed_pages')} failed pages, {(s.get('tiering') or {}).get('raced_frees')} "
                      f"raced frees, {stats.get('tier_relabeled')} records corrected by the audit, "
                      f"{stats.get('tier_promotions_deferred')} promotions deferred for the budget")
            if policy != "hot" and not drifted and (settled_mismatches > (0 if static else checked // 33) or
                                                    (static and mismatches)):
                failures.append(f"{tag} {mismatches} of {checked} observations not on the planned node, "
                                f"{settled_mismatches} of them settled")
            # The boundary verify runs in the steps after the check, with every page accessible: the four weights
            # alone are live at every boundary. During the check it saw only pages the interval had touched
            # (41-61 objects over two steps; docs/tiering.md, "Protected pages"). It runs after a pass that
            # a newer boundary did not cut short: counted where nothing moves (a moving schedule's passes are
            # cut short where the migrator trails, 63 objects with move_pages on the KMEM-DAX guest).
            checked_steps = max((pi.get("checked_steps", 0) for pi in s.get("placement_intervals") or []), default=0)
            if static and verified < 2 * plan["intervals"] * checked_steps:
                failures.append(f"{tag} the boundary verify saw {verified} objects in {checked_steps} steps of "
                                f"{plan['intervals']} intervals, fewer than 2 a boundary")
            if policy != "hot" and misplaced > (0 if static else max(1, verified // 20)):
                failures.append(f"{tag} {misplaced} of {verified} objects not on the planned node right after a boundary's moves")
            if policy != "all-fast":
                if steady_peak > budget:
                    # Which boundaries, and what else the migrator counted: the dump of a CI run is not kept.
                    over = [f"{pi['interval']}: {pi['fast_bytes_max']} B in {pi['steps']} passes"
                            for pi in s.get("placement_intervals") or [] if pi.get("fast_bytes_max", 0) > budget]
                    stats = s.get("stats") or {}
                    failures.append(f"{tag} the fast tier held {steady_peak} B after a boundary's moves (budget {budget} B; "
                                    f"intervals {'; '.join(over)}; {stats.get('tier_relabeled')} records corrected by "
                                    f"the audit, {stats.get('tier_promotions_deferred')} promotions deferred)")
                # hot's late demotions (it moves the most) show here on a loaded host; its budget is held
                # by the runtime's own check above, after each boundary's moves.
                if policy != "hot" and over_budget > max(1, len(fast_by_slot) // 10):
                    failures.append(f"{tag} the fast node held more than the budget ({budget} B) in {over_budget} intervals")
            if share is None:
                failures.append(f"{tag} no placement check in the dump")
    if "sentinel" in shares and "first-touch" in shares and None not in (shares["sentinel"], shares["first-touch"]):
        if shares["sentinel"] + 0.02 < shares["first-touch"]:
            failures.append(f"sentinel's measured fast-hit share {shares['sentinel']} is below first-touch's {shares['first-touch']}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
