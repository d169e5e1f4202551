#!/usr/bin/python3
"""Training runs that end by a signal keep their dump (docs/format.md, "When the dump is written").

usage: signal_end.py --preload LIBSENTINEL --view SENTINEL_VIEW [--python debian|venv|PATH]

A PyTorch MLP (mlp_loop.py) trains until it is stopped, printing each step's loss. Three ways to stop it,
each done to a plain run and to a run under the library (run mode, the default):
  SIGTERM   sent once the run has printed enough steps (a scheduler's stop);
  SIGINT    the same with SIGINT: uncaught, Python ends by re-raising it under the default action;
  timeout   the run is started by `timeout -s TERM S`, which sends SIGTERM after S seconds.
And three ways it crashes by itself once it has made as many steps (CRASH in its environment):
  SIGSEGV   a read of address 8 through ctypes, a fault in the program's own code;
  SIGABRT   os.abort();
  faulthandler  the same fault under `python -X faulthandler` (as pytest runs), whose handler prints the
            Python stack, puts the default action back and raises the signal again.
Each must end with the same status with and without the library, print the same losses for the steps both
runs made, and leave under the library one dump that sentinel-view reads, with the steps made so far and
the PROCESS record naming the signal. Exit status: 0 pass, 1 fail, 77 skip (no torch)."""

import argparse
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.dont_write_bytecode = True
import torch_builds  # noqa: E402

TRAIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mlp_loop.py")  # trains until stopped
MIN_STEPS = 12  # past the lock, the profiled steps and the plan of run mode


class Failure(Exception):
    pass


def env_for(preload, dump_dir, crash=None):
    env = torch_builds.child_env({k: v for k, v in os.environ.items()
                                  if not k.startswith("SENTINEL_") and k not in ("LD_PRELOAD", "PYTHONFAULTHANDLER")})
    if crash:
        env.update(CRASH=crash, CRASH_AT=str(MIN_STEPS))
    if preload:
        env.update(LD_PRELOAD=preload, SENTINEL_DUMP=os.path.join(dump_dir, "sentinel-%e.%p.prof"))
    return env


def default_interrupts():
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def run_until(cmd, env, sig, min_steps, timeout=600, to_group=False, ready=None):
    """Starts cmd; once it printed min_steps steps (and, where given, ready() says yes; it is asked after
    each line from then on) sends sig (None: waits for it to end), to the process or (to_group) to its
    whole process group, DataLoader workers included, as `pkill -f` would. Returns (status, the steps'
    losses, stderr, stdout). snapshot_run.py runs its cases through it too."""
    # SIGINT and SIGQUIT at their default action in the child, as under a terminal: a shell starts a
    # background job with them ignored, and Python then never installs its KeyboardInterrupt handler.
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=default_interrupts, start_new_session=to_group)
    lines, out, deadline = [], [], time.monotonic() + timeout
    for line in p.stdout:
        out.append(line)
        if line.startswith("step "):
            lines.append(line.split()[2])
        if sig is not None and len(lines) >= min_steps and (ready is None or ready()):
            if to_group:
                os.killpg(p.pid, sig)
            else:
                p.send_signal(sig)
            sig = None
        if time.monotonic() > deadline:
            p.kill()
            raise Failure(f"{cmd[0]} ran past {timeout} s")
    p.wait()
    err = p.stderr.read()
    return p.returncode, lines, err, "".join(out)


def check_case(name, args, py, sig, use_timeout, crash=None, py_flags=()):
    with tempfile.TemporaryDirectory(prefix=f"sentinel-signal-{name}.") as tmp:
        results = {}
        for preload in (None, args.preload):
            cmd = [py, *py_flags, TRAIN]
            if use_timeout:
                # long enough for the run under the library to pass its profiled steps on a loaded host
                cmd = ["timeout", "-s", "TERM", str(args.timeout_seconds)] + cmd
            send = None if use_timeout or crash else sig
            status, lines, err, _ = run_until(cmd, env_for(preload, tmp, crash), send, MIN_STEPS)
            results[bool(preload)] = (status, lines, err)
        (s_plain, l_plain, _), (s_lib, l_lib, err_lib) = results[False], results[True]
        print(f"signal_end: {name}: status plain {s_plain}, under the library {s_lib}; steps {len(l_plain)} and "
              f"{len(l_lib)}", flush=True)
        if crash and s_plain != -sig:
            raise Failure(f"{name}: the plain run ended with status {s_plain}, not by signal {sig}: the test is broken")
        if s_plain != s_lib:
            raise Failure(f"{name}: exit status {s_lib} under the library, {s_plain} without it\n{err_lib[-2000:]}")
        common = min(len(l_plain), len(l_lib))
        if l_plain[:common] != l_lib[:common]:
            raise Failure(f"{name}: losses differ within the first {common} steps")
        dumps = glob.glob(os.path.join(tmp, "*.prof"))
        if len(dumps) != 1:
            raise Failure(f"{name}: {len(dumps)} dumps under the library, expected 1\n{err_lib[-2000:]}")
        r = subprocess.run([args.view, "summary", "--json", dumps[0]], capture_output=True, text=True)
        if r.returncode != 0:
            raise Failure(f"{name}: sentinel-view summary exited {r.returncode}: {r.stderr.strip()}")
        j = json.loads(r.stdout)
        if j.get("ended_by_signal") != sig:
            raise Failure(f"{name}: the dump says it ended by signal {j.get('ended_by_signal')}, expected {sig}")
        # A crash taken at an instruction leaves its CRASH record, the stack symbolized; faulthandler raises the
        # signal again itself, so that one was sent, and the record is not written.
        located = crash is not None and "faulthandler" not in py_flags
        got = j.get("crash")
        if located and (not got or got.get("signal") != sig or len(got.get("frames") or []) < 2):
            raise Failure(f"{name}: the dump's crash record is {got}, expected signal {sig} with its stack")
        if not located and got is not None:
            raise Failure(f"{name}: a crash record where none belongs: {got}")
        if got:
            print(f"signal_end: {name}: crash record, stack {got['frames'][:4]}", flush=True)
        if len(l_lib) >= MIN_STEPS and (j.get("steps") or 0) < MIN_STEPS - 3:
            raise Failure(f"{name}: the dump has {j.get('steps')} steps of {len(l_lib)} made")
        print(f"signal_end: {name}: dump read, {j.get('steps')} steps of {len(l_lib)}, ended by signal "
              f"{j.get('ended_by_signal')}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preload", required=True)
    ap.add_argument("--view", required=True)
    ap.add_argument("--python", default="debian",
                    help="debian (/usr/bin/python3), venv (PyTorch 2.x, tests/torch_builds.py) or a path")
    ap.add_argument("--timeout-seconds", type=int, default=20)
    args = ap.parse_args()
    args.python = torch_builds.resolve(args.python)
    why = torch_builds.skip_reason(args.python)
    if why:
        print(f"signal_end: skipped: {why}")
        return 77
    try:
        check_case("SIGTERM", args, args.python, signal.SIGTERM, False)
        check_case("SIGINT", args, args.python, signal.SIGINT, False)
        check_case("timeout", args, args.python, signal.SIGTERM, True)
        check_case("SIGSEGV", args, args.python, signal.SIGSEGV, False, crash="segv")
        check_case("SIGABRT", args, args.python, signal.SIGABRT, False, crash="abort")
        check_case("faulthandler", args, args.python, signal.SIGSEGV, False, crash="segv", py_flags=("-X", "faulthandler"))
    except Failure as e:
        print(f"signal_end: FAIL: {e}")
        return 1
    print("signal_end: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
