#!/usr/bin/python3
"""PyTorch 2.x training features under the library: bit-identical results and the steps found.

usage: run_torch2_cases.py CASE --preload LIBSENTINEL --view SENTINEL_VIEW [--python PY]
                           [--modes track,profile,run] [--steps N] [--keep DIR] [--exact-count]
                           [--env NAME=VALUE ...]

Runs torch2_cases.py CASE (compile, adamw-foreach, adamw-fused, checkpoint, autocast-bf16) with PY
(`venv`, the default: PyTorch 2.x from scripts/setup; `debian`; or a path; tests/torch_builds.py) once
without the library, then once under LD_PRELOAD=LIBSENTINEL per mode, no steps marked. For every mode:
  - the per-step losses and the hash of the final parameters and optimizer state are identical to the
    run without the library;
  - the step detector found the steps: every true step start from the fourth on is a detected start
    (exactly: one thread allocates), no detected start after the third is not a true one, and
    between N-3 and N steps were detected (what tests/steps/check_live_steps.py asks of the e2e models),
    or exactly N with --exact-count (the first steps counted too: compile's compiling iteration);
  - profile and run: at least one step was profiled; run: the phase was planned (a dry run where the
    host has one NUMA node), as run_e2e.py --mode run checks.
  - the dump directory holds exactly one dump, the training process's: no child process (compile: g++,
    cc1plus, as, ld, Inductor's helpers, which inherit LD_PRELOAD) wrote one.
--env NAME=VALUE (repeatable) sets a variable of the runs under the library, e.g.
SENTINEL_PROFILE_PASSES=4; with passes above 1, profile and run mode also check that the profile has its
access intensity (`sentinel-view summary`: a phase's mean passes above 0).
compile: every run gets an Inductor cache of its own (TORCHINDUCTOR_CACHE_DIR), so the run without the
library and the track run each generate and compile their C++ (with g++, itself started under the
library in the track run); profile and run mode reuse the track run's cache (compiling costs 25-40 s
here, and step 1, where it happens, is never profiled).
Exit status: 0 pass, 1 fail, 77 skip (the interpreter, torch, or the feature missing, said on stderr).
"""
import argparse
import glob
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "steps"))
import known_issues  # noqa: E402
import torch_builds  # noqa: E402
from check_live_steps import read_steps  # noqa: E402
from run_e2e import Failure, check_run_mode, checked_in_tmp, run, summary  # noqa: E402

SKIP = 77
FLAG_PROFILED = 8
WARMUP = 3  # true steps before the first one whose start must be detected (as check_live_steps.py)


def log(msg):
    print(f"run_torch2_cases: {msg}", flush=True)


def check_steps(mode, truth, dump_steps, nsteps, view, dump, issue, exact_count=False):
    """Errors of the step check (none: passed), with --known-issue applied."""
    detected = sorted({s[0] for s in dump_steps})
    errors = []
    for k, t in enumerate(truth[WARMUP:], start=WARMUP + 1):
        if t not in detected:
            errors.append(f"step {k} starts at allocation {t}; detected starts near it: "
                          f"{[d for d in detected if abs(d - t) < 50]}")
    truth_set = set(truth)
    spurious = [d for d in detected if d >= truth[WARMUP] and d not in truth_set]
    if spurious:
        errors.append(f"detected step starts that are not real ones: {spurious[:10]}")
    if not (nsteps if exact_count else nsteps - WARMUP) <= len(detected) <= nsteps:
        errors.append(f"{len(detected)} steps detected for a {nsteps}-step loop (true starts {truth[:8]}..., "
                      f"detected {detected[:8]}...)")
    known = known_issues.check(issue, view, dump, truth, detected, not errors, lambda m: log(f"{mode}: {m}"))
    if known is not None:
        errors = known
    profiled = sum(1 for s in dump_steps if s[3] & FLAG_PROFILED)
    if mode in ("profile", "run") and profiled < 1:
        errors.append("no step was profiled")
    periods = sorted({s[1] for s in dump_steps})
    if not errors:
        log(f"{mode}: {len(detected)} steps detected for {nsteps}, every start from step {WARMUP + 1} on "
            f"{'exact' if issue is None else 'as ' + issue + ' has them'}; allocations per step {periods[:4]}; "
            f"{profiled} profiled")
    return [f"{mode}: {e}" for e in errors]


def passes_asked(env):
    """SENTINEL_PROFILE_PASSES among --env's NAME=VALUE (1 when not given)."""
    values = [kv.split("=", 1)[1] for kv in env if kv.split("=", 1)[0] == "SENTINEL_PROFILE_PASSES"]
    return int(values[-1]) if values else 1


def check_case(args, modes, python, tmp):
    """The plain run, then one run per mode, each checked; results and dumps in tmp. Raises Failure
    (every mode's failures together)."""
    base_env = torch_builds.child_env({k: v for k, v in os.environ.items()
                                       if not k.startswith("SENTINEL_") and k != "LD_PRELOAD"})
    base_env["PYTHONHASHSEED"] = "0"
    base_env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"  # compile in the process, not in a worker pool
    script = [python, os.path.join(HERE, "torch2_cases.py"), args.case, "--steps", str(args.steps)]

    def one(label, mode):
        env = dict(base_env, TORCHINDUCTOR_CACHE_DIR=os.path.join(tmp, "inductor-" + (
            "plain" if mode is None else "sentinel")))
        dump_dir = os.path.join(tmp, f"dump-{label}")
        if mode is not None:
            os.mkdir(dump_dir)
            env.update(LD_PRELOAD=os.path.abspath(args.preload), SENTINEL_MODE=mode,
                       SENTINEL_DUMP=os.path.join(dump_dir, "sentinel-%e.%p.prof"))
            if mode == "run":
                env["SENTINEL_FAST_BYTES"] = "20%"  # as run_e2e.py --mode run
            env.update(kv.split("=", 1) for kv in args.env)
        out = os.path.join(tmp, f"{label}.json")
        run(script + ["--out", out], env, label, args.timeout, log)
        with open(out) as f:
            result = json.load(f)
        return result, dump_dir

    failures = []
    plain, _ = one("plain", None)
    if plain["sentinel_loaded"]:
        raise Failure("the plain run found sentinel_get_stats(): the environment preloads the library")
    log(f"{args.case}: torch {plain['torch_version']}, {args.steps} steps, final loss "
        f"{float.fromhex(plain['losses'][-1]):.6f}")
    for mode in modes:
        got, dump_dir = one(mode, mode)
        if not got["sentinel_loaded"]:
            raise Failure(f"{mode}: libsentinel.so was not loaded in the preloaded run")
        for key in ("losses", "params_sha256"):
            if got[key] != plain[key]:
                if key == "losses":
                    i = next(i for i, (a, b) in enumerate(zip(plain[key], got[key])) if a != b)
                    raise Failure(f"{mode}: losses differ first at step {i + 1}: plain {plain[key][i]} vs "
                                  f"sentinel {got[key][i]}")
                raise Failure(f"{mode}: final parameters differ: plain {plain[key][:16]}... vs sentinel "
                              f"{got[key][:16]}...")
        dumps = glob.glob(os.path.join(dump_dir, f"*.{got['pid']}.prof"))
        if len(dumps) != 1:
            raise Failure(f"{mode}: expected the training process's dump (pid {got['pid']}) in {dump_dir}, "
                          f"found {os.listdir(dump_dir)}")
        # One dump per training process: torch.compile's compilers, linkers and helper processes
        # inherit LD_PRELOAD and must stay quiet (docs/config.md, "Which processes write a dump").
        others = sorted(set(os.listdir(dump_dir)) - {os.path.basename(dumps[0])})
        if others:
            failures.append(f"{mode}: {len(others)} dumps of other processes besides the training "
                            f"process's: {others[:8]}")
        log(f"{mode}: losses and parameters identical")
        failures += check_steps(mode, got["starts"], read_steps(dumps[0]), args.steps, args.view, dumps[0],
                                args.known_issue, args.exact_count)
        if mode == "run":
            try:
                check_run_mode(summary(args.view, dumps[0]))
            except Failure as e:
                failures.append(f"run: {e}")
        if mode in ("profile", "run") and passes_asked(args.env) > 1:
            passes = [ph.get("mean_passes", 0) for ph in summary(args.view, dumps[0])["phases"]]
            if not any(p > 0 for p in passes):
                failures.append(f"{mode}: SENTINEL_PROFILE_PASSES above 1, but no phase has an access "
                                f"intensity (mean passes {passes})")
            else:
                log(f"{mode}: access intensity, mean passes a touched byte {max(passes):.2f}")
    if failures:  # every mode was run and checked: all their failures are reported
        raise Failure("\n  ".join([""] + failures))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("case")
    ap.add_argument("--preload", required=True)
    ap.add_argument("--view", required=True)
    ap.add_argument("--python", default="venv")
    ap.add_argument("--modes", default="track,profile,run")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--timeout", type=int, default=400, help="seconds per training run")
    ap.add_argument("--keep", help="keep results and dumps in this directory")
    ap.add_argument("--exact-count", action="store_true",
                    help="every step counted, the first ones included (else the first WARMUP may be missed)")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="a variable for the runs under the library (repeatable)")
    ap.add_argument("--known-issue", choices=known_issues.ISSUES,
                    help="the step starts are expected to be wrong in exactly this known way (known_issues.py)")
    args = ap.parse_args()
    modes = args.modes.split(",")
    if any("=" not in kv or not kv.split("=", 1)[0] for kv in args.env):
        ap.error(f"--env: not NAME=VALUE: {args.env}")
    if any(m not in ("track", "profile", "run") for m in modes):
        ap.error(f"bad --modes {args.modes!r}")
    python = torch_builds.resolve(args.python)
    why = torch_builds.skip_reason(python)
    if why:
        print(f"run_torch2_cases: {why}", file=sys.stderr)
        return SKIP

    t0 = time.monotonic()
    if checked_in_tmp("run_torch2_cases", args.case, f"sentinel-torch2-{args.case}-", args.keep,
                      lambda tmp: check_case(args, modes, python, tmp)):
        log(f"PASS ({args.case}, modes {','.join(modes)}) in {time.monotonic() - t0:.1f} s")
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())
