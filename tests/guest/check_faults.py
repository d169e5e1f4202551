#!/usr/bin/python3
"""Fault injection in the two-node guest (SENTINEL_FAULT_INJECT, docs/config.md): schedule_loop runs in
run mode while a share of the move calls fail, while the fast node behaves as full, while objects are
freed in the middle of their migration, while the process forks with migrations under way (the child
allocating too), and while the main thread ends with pthread_exit during a migration batch. Every
run must end normally with the checksum of a run without the library, and the dump must count what was
injected.

usage: check_faults.py        env: SENTINEL_PRELOAD, SENTINEL_BUILD_ROOT
"""
import json
import os
import subprocess
import sys
import tempfile


def main():
    if not os.path.exists("/sys/devices/system/node/node1"):
        print("SKIP: no second NUMA node")
        return 77
    build = os.environ["SENTINEL_BUILD_ROOT"]
    prog = os.path.join(build, "tests", "guest", "schedule_loop")
    view = os.path.join(build, "tools", "sentinel-view")
    lib = os.environ["SENTINEL_PRELOAD"]
    steps = ["--steps", "18"]

    def checksum(args, env=None):
        try:
            p = subprocess.run([prog] + steps + args, env=env, capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(args, 124, "", "did not end within 300 s"), None
        line = [l for l in p.stdout.splitlines() if "checksum" in l]
        return p, (line[0].split("checksum")[-1].strip() if line else None)

    cases = [
        # name, fault injection, program arguments, (dump counter, minimum)
        ("move-fail", "move_fail:30", [], ("failed_pages", 1)),
        ("fast-full", "fast_full", [], ("arena_binding_failures", 1)),
        ("free-mid-migration", "move_delay_ms:30", ["--free-early"], None),
        ("fork-mid-migration", "move_delay_ms:200", ["--fork-at", "12"], None),
        # The main thread ends with pthread_exit while a batch is under way: Sentinel's threads must end
        # too (else the process never exits: the timeout below fails the case).
        ("pthread-exit-mid-migration", "move_delay_ms:200", ["--pthread-exit"], None),
    ]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, inject, extra, counter in cases:
            ref, want = checksum(extra)
            if ref.returncode or not want:
                failures.append(f"{name}: the loop without the library failed: {ref.stderr[-400:]}")
                continue
            dump = os.path.join(tmp, name + ".prof")
            # SENTINEL_TRIAL_STEPS=0: the moving schedule from the plan on, so that the faults hit moves at
            # the steps the cases aim at (the step-time trial would run the schedule without moves first).
            # SENTINEL_STEP_COSTS=off: with step costs (the default) the plan moves nothing under TCG, where a
            # move costs ~10x a slow access, and only the plan's first steps move (21 MB in one run, whose
            # 30% of failed calls were all made good by their second call: failed_pages 0).
            env = dict(os.environ, LD_PRELOAD=lib, SENTINEL_MODE="run", SENTINEL_FAST_BYTES="20%",
                       SENTINEL_FAULT_INJECT=inject, SENTINEL_DUMP=dump, SENTINEL_TRIAL_STEPS="0",
                       SENTINEL_STEP_COSTS="off")
            p, got = checksum(extra, env)
            if p.returncode:
                failures.append(f"{name}: status {p.returncode}: {p.stderr[-800:]}")
                continue
            if got != want:
                failures.append(f"{name}: checksum {got} differs from {want} without the library")
            s = json.loads(subprocess.run([view, "summary", "--json", dump], capture_output=True, text=True).stdout)
            stats = s.get("stats", {})
            t = s.get("tiering") or {}
            flags = t.get("flags", 0)
            seen = {k: (t.get(k) if k in t else s.get(k, stats.get(k))) for k in
                    ("failed_pages", "raced_frees", "late_migrations", "migrated_bytes", "arena_binding_failures",
                     "tier_births_guarded")}
            print(f"{name:20s} {inject:18s} checksum ok={got == want}; " +
                  ", ".join(f"{k} {v}" for k, v in seen.items()))
            if not flags & 8:
                failures.append(f"{name}: the dump does not flag fault injection (TIERING flags {flags})")
            if counter and (seen.get(counter[0]) or 0) < counter[1]:
                failures.append(f"{name}: {counter[0]} is {seen.get(counter[0])}, expected at least {counter[1]}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
