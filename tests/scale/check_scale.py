#!/usr/bin/python3
"""CI check of a realistic model on the host: scripts/scale_models.py gpt --size s, plain and in run mode.

usage: check_scale.py --preload LIBSENTINEL --view SENTINEL_VIEW [--python PY] [--steps N] [--keep DIR]

Passes when the losses are bit-identical (float.hex), the detector found the training step (a phase with
at least N-2 of the N steps), that phase was profiled (2 steps) and planned (a PLAN record: on one NUMA
node a dry run), and `sentinel-view summary` reads the dump. Exits 77 (skipped) when PY is missing or has
no torch (looked up, not imported).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
sys.dont_write_bytecode = True
import sentinel_dump  # noqa: E402

SKIP = 77
STEP_PROFILED = 0x8


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preload", required=True)
    ap.add_argument("--view", required=True)
    ap.add_argument("--python", default=os.path.join(REPO, ".venv-torch", "bin", "python"))
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--keep")
    args = ap.parse_args()
    if not os.path.exists(args.python):
        print(f"skipped: {args.python} not found (a torch 2.x venv: docs/performance.md, 'Realistic models')")
        return SKIP
    probe = subprocess.run([args.python, "-c", "import importlib.util as u, sys; "
                            "sys.exit(0 if u.find_spec('torch') else 1)"])
    if probe.returncode != 0:
        print(f"skipped: {args.python} has no torch")
        return SKIP
    work = args.keep or tempfile.mkdtemp(prefix="check-scale.")
    os.makedirs(work, exist_ok=True)
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SENTINEL_") and k != "LD_PRELOAD"}
        env["PYTHONHASHSEED"] = "0"
        results = {}
        dump = os.path.join(work, "run.prof")
        for config in ("plain", "run"):
            e = dict(env)
            if config == "run":
                e.update(LD_PRELOAD=args.preload, SENTINEL_MODE="run", SENTINEL_DUMP=dump)
            out = os.path.join(work, f"{config}.json")
            t0 = time.monotonic()
            p = subprocess.run([args.python, os.path.join(REPO, "scripts", "scale_models.py"), "gpt", "--size", "s",
                                "--steps", str(args.steps), "--out", out], env=e, capture_output=True, text=True)
            print(f"{config}: {time.monotonic() - t0:.0f} s, exit {p.returncode}")
            for line in p.stderr.splitlines():
                if line.startswith("sentinel: "):
                    print(f"  {line}")
            if p.returncode != 0:
                sys.stderr.write(p.stderr[-4000:])
                print(f"FAIL: the {config} run exited {p.returncode}")
                return 1
            with open(out) as f:
                results[config] = json.load(f)
        failures = []
        if results["plain"]["losses"] != results["run"]["losses"]:
            failures.append(f"losses differ: {results['plain']['losses']} vs {results['run']['losses']}")
        if not results["run"]["sentinel_loaded"]:
            failures.append("libsentinel.so was not loaded in the run-mode process")
        d = sentinel_dump.read(dump, only=["STEPS", "PROFILE", "PLAN"], view=args.view)
        by_phase = {}
        for s in d.get("STEPS", []):
            by_phase.setdefault(s["phase"], []).append(s)
        main = max(by_phase, key=lambda k: len(by_phase[k])) if by_phase else None
        found = len(by_phase.get(main, []))
        print(f"steps found: {found} of {args.steps} (main phase {main}, {len(by_phase)} phases)")
        if found < args.steps - 2:
            failures.append(f"only {found} of {args.steps} steps found in the main phase")
        prof = [p for p in d.get("PROFILE", []) if p["phase"] == main]
        profiled = sum(1 for s in by_phase.get(main, []) if s["flags"] & STEP_PROFILED)
        print(f"profiled: {prof[0]['profiled_steps'] if prof else 0} steps, {prof[0]['faults'] if prof else 0} faults")
        if not prof or prof[0]["profiled_steps"] != 2 or profiled != 2:
            failures.append("the main phase was not profiled for 2 steps")
        if not d.get("PLAN"):
            failures.append("no PLAN record: the profile was not planned")
        s = subprocess.run([args.view, "summary", dump], capture_output=True, text=True)
        if s.returncode != 0:
            failures.append(f"sentinel-view summary failed: {s.stderr.strip()[:500]}")
        for f in failures:
            print(f"FAIL: {f}")
        if not failures:
            print("ok: bit-identical, steps found, profiled and planned")
        return 1 if failures else 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
